"""A read for a model that takes no image input (``text_only``): an image is told as text, never sent.

Every client gets the same answer: the CLI (in-process and through the
sidecar), the MCP server started with ``--text-only`` (driven by the MCP
SDK's own client), and a run read.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os

import pytest
from helpers import JCLI, run_cli
from mcp import ClientSession, StdioServerParameters, stdio_client

NOTEBOOK = "kernel_v4.5.ipynb"  # cell 2 output 0: a 150x100 PNG with a text/plain form
WHY = "the model takes no image input"


def _png(fixture_dir) -> bytes:
    cell = json.loads((fixture_dir / NOTEBOOK).read_text(encoding="utf-8"))["cells"][2]
    data = cell["outputs"][0]["data"]["image/png"]
    return base64.b64decode("".join(data) if isinstance(data, list) else data)


def _no_base64_of(data: bytes, text: str) -> bool:
    encoded = base64.b64encode(data).decode()
    return all(encoded[i : i + 40] not in text for i in range(0, len(encoded) - 40, 500))


def test_an_image_read_text_only_carries_what_it_is_why_and_its_text_form_and_no_data(fixture_dir):
    done = run_cli("-j", "notebook", "output", NOTEBOOK, "--cell", "2", "--output", "0", "--text-only", "--agent-text", cwd=fixture_dir)
    assert done.returncode == 0, done.stderr
    doc = done.json()
    assert doc["selected"] == {
        "mime_type": "image/png",
        "encoding": "none",
        "bytes": len(_png(fixture_dir)),
        "width": 150,
        "height": 100,
        "withheld": WHY,
        "text_forms": [{"mime_type": "text/plain", "bytes": 35}],
    }
    caption = doc["agent_text"]["caption"]
    assert caption == (
        f"[image/png from {fixture_dir / NOTEBOOK} cell 2 output 0; {len(_png(fixture_dir))} bytes, 150x100 px; "
        f"not sent: {WHY}; its text forms: text/plain (35 bytes); read one with mime_type='text/plain']"
    )
    assert _no_base64_of(_png(fixture_dir), done.stdout.decode())


def test_human_mode_prints_the_caption_as_the_body_and_nothing_else(fixture_dir):
    done = run_cli("notebook", "output", NOTEBOOK, "--cell", "2", "--output", "0", "--text-only", cwd=fixture_dir)
    assert done.returncode == 0
    assert done.stdout.decode().startswith("[image/png from ") and "not sent: the model takes no image input" in done.stdout.decode()
    assert done.stderr == b""


def test_the_text_form_it_names_reads_as_text(fixture_dir):
    done = run_cli(
        "-j", "notebook", "output", NOTEBOOK, "--cell", "2", "--output", "0", "--text-only", "--mime", "text/plain", cwd=fixture_dir
    )
    assert done.returncode == 0, done.stderr
    assert done.json()["selected"]["mime_type"] == "text/plain" and done.json()["selected"]["data"].startswith("<")


def test_asking_for_the_image_by_type_or_for_a_converted_view_still_sends_no_image(fixture_dir):
    for extra in (["--mime", "image/png"], ["--as", "image/jpeg"], ["--host", "claude", "--max-edge", "10"]):
        done = run_cli("-j", "notebook", "output", NOTEBOOK, "--cell", "2", "--output", "0", "--text-only", *extra, cwd=fixture_dir)
        assert done.returncode == 0, (extra, done.stderr)
        selected = done.json()["selected"]
        assert selected["encoding"] == "none" and selected["mime_type"] == "image/png" and "data" not in selected, extra
        assert selected["width"] == 150, extra  # the stored image, not a view of it


def test_an_image_with_no_text_form_says_how_to_get_one(tmp_path, fixture_dir):
    png = _png(fixture_dir)
    output = {"output_type": "display_data", "metadata": {}, "data": {"image/png": base64.b64encode(png).decode()}}
    cell = {"cell_type": "code", "id": "c0", "metadata": {}, "execution_count": 1, "source": "plot()", "outputs": [output]}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
    (tmp_path / "only.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    done = run_cli("-j", "notebook", "output", "only.ipynb", "--cell", "0", "--output", "0", "--text-only", "--agent-text", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.json()["selected"]["text_forms"] == []
    assert done.json()["agent_text"]["caption"].endswith("it has no text form: have the kernel print what the image shows (j-cli exec)]")


def test_text_html_and_streams_are_unchanged_by_text_only(fixture_dir):
    for cell, output in ((2, None), (3, 0), (1, 0)):
        args = ["-j", "notebook", "output", NOTEBOOK, "--cell", str(cell)]
        if output is not None:
            args += ["--output", str(output)]
        plain, told = run_cli(*args, cwd=fixture_dir), run_cli(*args, "--text-only", cwd=fixture_dir)
        assert plain.returncode == told.returncode == 0
        if plain.json().get("selected", {}).get("encoding") != "base64":
            assert plain.json() == told.json(), (cell, output)


def test_a_non_boolean_text_only_is_a_usage_error(fixture_dir):
    request = json.dumps({"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0, "text_only": "yes"}).encode()
    done = run_cli("-j", "notebook", "output", "--request", "-", cwd=fixture_dir, stdin=request)
    assert done.returncode == 2 and done.error()["code"] == "USAGE_ERROR"
    assert "text_only must be a JSON boolean" in done.error()["message"]


def test_through_the_sidecar_the_answer_is_the_same(fixture_dir, sidecar_on):
    args = ["-j", "notebook", "output", NOTEBOOK, "--cell", "2", "--output", "0", "--text-only", "--agent-text"]
    direct = run_cli(*args, cwd=fixture_dir, env={**os.environ, "JCLI_SIDECAR": "off"})
    first, warm = run_cli(*args, cwd=fixture_dir), run_cli(*args, cwd=fixture_dir)
    assert direct.returncode == first.returncode == warm.returncode == 0
    assert direct.json() == first.json() == warm.json()


def test_a_run_read_text_only_tells_the_image(tmp_path, fixture_dir):
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
    from jcli_sidecar.runs.store import publish_run, stage_run

    png = _png(fixture_dir)
    output = {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"},
    }
    staged = stage_run(str(tmp_path), [output], source={}, status="ok", created_ns=1)
    publish_run(ensure_outputs_dir(str(tmp_path)), staged.run_id)
    done = run_cli("-j", "output", "show", staged.run_id, "--output", "0", "--text-only", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    selected = done.json()["selected"]
    assert selected["encoding"] == "none" and selected["bytes"] == len(png) and selected["withheld"] == WHY
    assert selected["text_forms"] == [{"mime_type": "text/plain", "bytes": 8}]


def _mcp(root, arguments: dict, serve_args: list[str]):
    async def main():
        params = StdioServerParameters(command=JCLI, args=["mcp", "serve", "--root", str(root), *serve_args], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("read_notebook_output", arguments)

    return asyncio.run(main())


@pytest.mark.parametrize("serve_args", [["--text-only"], ["--text-only", "--host", "codex"]])
def test_mcp_serve_text_only_answers_one_text_part_and_no_image(fixture_dir, serve_args):
    result = _mcp(fixture_dir, {"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0}, serve_args)
    assert not result.is_error
    assert [part.type for part in result.content] == ["text"]
    text = result.content[0].text
    assert text.startswith("[image/png from ") and f"not sent: {WHY}" in text and "150x100 px" in text
    assert _no_base64_of(_png(fixture_dir), text)


def test_mcp_serve_text_only_cannot_be_undone_by_the_model(fixture_dir):
    arguments = {"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0, "text_only": False}
    result = _mcp(fixture_dir, arguments, ["--text-only"])
    assert not result.is_error and [part.type for part in result.content] == ["text"]


def test_mcp_serve_without_text_only_still_sends_the_image(fixture_dir):
    result = _mcp(fixture_dir, {"file_path": NOTEBOOK, "cell_index": 2, "output_index": 0}, [])
    assert [part.type for part in result.content] == ["image", "text"]
    assert base64.b64decode(result.content[0].data) == _png(fixture_dir)
