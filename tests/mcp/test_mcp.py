"""The read-only MCP server, driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil

import nbformat
import pytest
from helpers import JCLI, load_cases, requires_svg_extra
from mcp import ClientSession, StdioServerParameters, stdio_client

CASES = load_cases()


def call(root_args, calls, cwd=None, env=None):
    """Start ``j-cli mcp serve``, run ``calls(session)``, return its result."""

    async def main():
        params = StdioServerParameters(
            command=JCLI, args=["mcp", "serve", *root_args], cwd=str(cwd) if cwd else None, env=env or dict(os.environ)
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await calls(session)

    return asyncio.run(main())


def tool(name, **arguments):
    async def run(session):
        return await session.call_tool(name, arguments)

    return run


def test_the_tools_are_listed_read_only(fixture_dir):
    tools = call(["--root", str(fixture_dir)], lambda s: s.list_tools()).tools
    assert {t.name for t in tools} == {"read_notebook_output", "read_run_output", "notebook_grep", "job_status", "job_wait"}
    assert all(t.annotations.read_only_hint for t in tools)
    assert all(t.annotations.destructive_hint is False and t.annotations.open_world_hint is False for t in tools)


@pytest.mark.parametrize("case", [c for c in CASES if "envelope" in c["expect"]], ids=lambda c: c["name"])
def test_every_fixture_reads_the_same_through_mcp(fixture_dir, case):
    request = dict(case["request"])
    result = call(["--root", str(fixture_dir)], tool("read_notebook_output", **request))
    assert not result.is_error, result.content
    expected = case["expect"]["envelope"]
    if "outputs" in expected:
        catalog = json.loads(result.content[0].text)
        assert catalog["outputs"] == expected["outputs"]
        return
    first = result.content[0]
    if "stream" in expected:
        assert first.text == expected["stream"]["data"]
    elif "error" in expected:
        block = expected["error"]
        assert first.text == (block["data"] if "data" in block else json.dumps(block, indent=2, ensure_ascii=False))
    elif expected["selected"]["encoding"] == "base64":
        assert first.type == "image" and first.mime_type == expected["selected"]["mime_type"]
        assert first.data == expected["selected"]["data"]
        assert result.structured_content is None  # hosts drop images that come with one
    elif expected["selected"]["encoding"] == "json":
        assert json.loads(first.text) == expected["selected"]["data"]
    else:
        assert first.text == expected["selected"]["data"]  # verbatim
    assert result.content[-1].type == "text" and result.content[-1].text.startswith("[")


def test_a_png_arrives_as_the_notebooks_own_bytes(fixture_dir):
    result = call(["--root", str(fixture_dir)], tool("read_notebook_output", file_path="kernel_v4.5.ipynb", cell_index=2, output_index=0))
    stored = nbformat.read(str(fixture_dir / "kernel_v4.5.ipynb"), 4).cells[2].outputs[0].data["image/png"]
    assert base64.b64decode(result.content[0].data) == base64.b64decode(stored)
    assert "iVBOR" not in result.content[1].text  # no base64 outside image content


@pytest.mark.parametrize(
    "arguments, code",
    [
        ({"file_path": "kernel_v4.5.ipynb", "cell_index": 99}, "CELL_NOT_FOUND"),
        ({"file_path": "kernel_v4.5.ipynb", "cell_index": 5, "output_index": 0, "mime_type": "image/png"}, "MIME_NOT_FOUND"),
        ({"file_path": "/etc/hostname", "cell_index": 0}, "PATH_NOT_ALLOWED"),
        ({"file_path": "escape.ipynb", "cell_index": 0}, "PATH_NOT_ALLOWED"),
        ({"file_path": "kernel_v4.5.ipynb", "cell_index": 0, "bogus": 1}, "USAGE_ERROR"),
    ],
)
def test_errors_are_tool_results_with_is_error(fixture_dir, tmp_path, arguments, code):
    outside = tmp_path / "outside.ipynb"
    shutil.copy(fixture_dir / "kernel_v4.5.ipynb", outside)
    (fixture_dir / "escape.ipynb").symlink_to(outside)
    result = call(["--root", str(fixture_dir)], tool("read_notebook_output", **arguments))
    assert result.is_error and result.content[0].text.startswith(f"{code}:")


def test_relative_paths_need_a_single_root(fixture_dir, tmp_path):
    result = call(
        ["--root", str(fixture_dir), "--root", str(tmp_path)], tool("read_notebook_output", file_path="kernel_v4.5.ipynb", cell_index=1)
    )
    assert result.is_error and result.content[0].text.startswith("PATH_AMBIGUOUS:")
    absolute = call(
        ["--root", str(fixture_dir), "--root", str(tmp_path)],
        tool("read_notebook_output", file_path=str(fixture_dir / "kernel_v4.5.ipynb"), cell_index=1),
    )
    assert not absolute.is_error


def test_without_roots_only_the_launch_cwd_is_allowed(fixture_dir, tmp_path):
    inside = call([], tool("read_notebook_output", file_path="kernel_v4.5.ipynb", cell_index=1), cwd=fixture_dir)
    assert not inside.is_error
    other = tmp_path / "other"
    other.mkdir()
    outside = call([], tool("read_notebook_output", file_path=str(fixture_dir / "kernel_v4.5.ipynb"), cell_index=1), cwd=other)
    assert outside.is_error and outside.content[0].text.startswith("PATH_NOT_ALLOWED:")


def test_twenty_parallel_calls_all_answer(fixture_dir):
    async def many(session):
        return await asyncio.gather(
            *(
                session.call_tool("read_notebook_output", {"file_path": "kernel_v4.5.ipynb", "cell_index": 2 + i % 2, "output_index": 0})
                for i in range(20)
            )
        )

    results = call(["--root", str(fixture_dir)], many)
    assert len(results) == 20 and all(not r.is_error and r.content[0].type == "image" for r in results)


def test_reads_change_nothing_in_the_workspace(fixture_dir):
    def snapshot():
        return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in fixture_dir.iterdir()}

    before = snapshot()
    call(["--root", str(fixture_dir)], tool("read_notebook_output", file_path="pair_ids.py", cell_index=1, output_index=0))
    assert snapshot() == before and not (fixture_dir / ".j-cli").exists()


def test_repeated_calls_hit_the_sidecar_and_it_never_owns_our_stdout(fixture_dir, sidecar_on, monkeypatch):
    from helpers import run_cli

    monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", "0")  # a just-copied file: trusted at once, no waiting
    assert run_cli("sidecar", "start", cwd=fixture_dir).returncode == 0

    async def repeated(session):
        return [
            await session.call_tool("read_notebook_output", {"file_path": "kernel_v4.5.ipynb", "cell_index": 2, "output_index": 0})
            for _ in range(5)
        ]

    results = call(["--root", str(fixture_dir)], repeated, cwd=fixture_dir)
    assert all(not r.is_error for r in results)
    status = run_cli("-j", "sidecar", "status", cwd=fixture_dir).json()
    assert status["cache"]["hits"] >= 4
    assert os.readlink(f"/proc/{status['pid']}/fd/1").endswith(".log")


def test_read_run_output_by_id_and_manifest(tmp_path):
    from jcli_sidecar.runs.store import publish_run, stage_run

    png = nbformat.read(str(__import__("helpers").FIXTURES / "kernel_v4.5.ipynb"), 4).cells[2].outputs[0].data["image/png"]
    staged = stage_run(
        str(tmp_path),
        [{"output_type": "display_data", "metadata": {}, "data": {"image/png": png, "text/html": "<i>x</i>"}}],
        source={},
        status="ok",
        created_ns=1,
    )
    manifest = publish_run(staged.outputs_dir, staged.run_id)["manifest"]
    by_id = call(["--root", str(tmp_path)], tool("read_run_output", run=staged.run_id, output_index=0))
    assert by_id.content[0].type == "image" and base64.b64decode(by_id.content[0].data) == base64.b64decode(png)
    html = call(["--root", str(tmp_path)], tool("read_run_output", run=manifest, output_index=0, mime_type="text/html"))
    assert html.content[0].text == "<i>x</i>"
    gone = call(["--root", str(tmp_path)], tool("read_run_output", run="20200101T000000.000000000Z-00000000"))
    assert gone.is_error and gone.content[0].text.startswith("RUN_NOT_FOUND:")


def test_without_root_flags_the_clients_roots_are_used(fixture_dir, tmp_path):
    import warnings

    import mcp_types as types

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{fixture_dir}", name="fixtures")])

    async def main():
        params = StdioServerParameters(command=JCLI, args=["mcp", "serve"], cwd=str(elsewhere), env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the roots capability is deprecated in newer protocol revisions
                session = ClientSession(read, write, list_roots_callback=roots)
            async with session:
                await session.initialize()
                inside = await session.call_tool("read_notebook_output", {"file_path": "kernel_v4.5.ipynb", "cell_index": 1})
                outside = await session.call_tool("read_notebook_output", {"file_path": str(elsewhere / "x.ipynb"), "cell_index": 0})
                return inside, outside

    inside, outside = asyncio.run(main())
    assert not inside.is_error  # relative to the client's single root, not the launch cwd
    assert outside.is_error and outside.content[0].text.startswith("PATH_NOT_ALLOWED:")


@requires_svg_extra
def test_a_host_flag_fits_images_and_svg_renders_through_mcp(tmp_path):
    import io

    from PIL import Image

    big = io.BytesIO()
    Image.new("RGB", (5000, 1000), (10, 200, 30)).save(big, "PNG")
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="#ff0000"/></svg>'
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(big.getvalue()).decode()}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": svg, "text/plain": "<svg>"}),
    ]
    nb.cells = [cell]
    path = tmp_path / "plots.ipynb"
    nbformat.write(nb, str(path))
    before = path.read_bytes()
    root = ["--root", str(tmp_path), "--host", "codex"]
    fitted = call(root, tool("read_notebook_output", file_path=str(path), cell_index=0, output_index=0))
    image = Image.open(io.BytesIO(base64.b64decode(fitted.content[0].data)))
    assert image.size == (2048, 409) and "fitted from 5000x1000" in fitted.content[1].text
    rendered = call(
        root,
        tool(
            "read_notebook_output", file_path=str(path), cell_index=0, output_index=1, mime_type="image/svg+xml", as_mime_type="image/png"
        ),
    )
    assert not rendered.is_error and rendered.content[0].type == "image" and rendered.content[0].mime_type == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(rendered.content[0].data))).convert("RGB").getpixel((5, 5)) == (255, 0, 0)
    assert "rendered from image/svg+xml" in rendered.content[1].text
    assert path.read_bytes() == before


def test_an_mcp_read_never_maps_by_an_id_the_py_repeats(tmp_path):
    """The pasted cell's marker keeps the original's id: the MCP read refuses as the CLI does, it never answers by that id."""
    cells = [nbformat.v4.new_code_cell('print("original")', id="a1"), nbformat.v4.new_code_cell('print("other")', id="b2")]
    for cell, text in zip(cells, ("original\n", "other\n"), strict=True):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    (tmp_path / "p.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook(cells=cells)))
    (tmp_path / "p.py").write_text('# %% id="a1"\nprint("original")\n\n# %% id="a1"\nprint("pasted")\n\n# %% id="b2"\nprint("other")\n')
    pasted = call(["--root", str(tmp_path)], tool("read_notebook_output", file_path="p.py", cell_index=1, output_index=0))
    assert pasted.is_error and pasted.content[0].text.startswith("CELL_MAPPING_UNRELIABLE:") and 'id="a1"' in pasted.content[0].text
    original = call(["--root", str(tmp_path)], tool("read_notebook_output", file_path="p.py", cell_index=0, output_index=0))
    assert not original.is_error and original.content[0].text == "original\n"
