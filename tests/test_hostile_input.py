"""Small hostile inputs: each a coded error (never INTERNAL_ERROR), or a faithful, valid answer.

- JSON nested ~1000 deep (a notebook, either parse path; ``--request``; a manifest);
"""

from __future__ import annotations

import json
import os

import pytest
from helpers import run_cli

from jcli_sidecar.lazyjson import MAX_DEPTH

BOUND = 30
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"


def strict_json(raw: bytes):
    """Parse as a strict reader would: UTF-8 only, and no lone surrogate in any string."""
    doc = json.loads(raw.decode("utf-8"))

    def walk(value):
        if isinstance(value, str):
            value.encode("utf-8")  # raises on a lone surrogate
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)

    walk(doc)
    return doc


def coded(result, code: str, exit_code: int = 1) -> dict:
    assert b"Traceback" not in result.stderr
    error = strict_json(result.stderr)
    assert (result.returncode, error["code"]) == (exit_code, code), error
    return error


def notebook_with(outputs=(), cell_metadata=None, top_metadata=None) -> dict:
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": top_metadata or {},
        "cells": [
            {
                "cell_type": "code",
                "id": "c0",
                "source": "x",
                "metadata": cell_metadata or {},
                "execution_count": 1,
                "outputs": list(outputs),
            }
        ],
    }


def write_notebook(path, doc=None, text=None):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text if text is not None else json.dumps(doc))
    return str(path)


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- JSON nested too deeply ------------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 600, 1000, 100_000])
@pytest.mark.parametrize("where", ["cell-metadata", "output-data", "notebook-metadata", "full-parse"])
def test_a_notebook_nested_too_deeply_is_notebook_read_failed(tmp_path, depth, where):
    value = json.loads(deep(min(depth, 5)))  # placeholder, replaced as text below
    if where == "cell-metadata":
        doc = notebook_with(cell_metadata={"deep": value})
    elif where == "output-data":
        doc = notebook_with([{"output_type": "display_data", "metadata": {}, "data": {"application/json": value}}])
    else:
        doc = notebook_with(top_metadata={"deep": value})
    text = json.dumps(doc).replace(deep(min(depth, 5)), deep(depth), 1)
    if where == "full-parse":  # a duplicate key makes the lazy index give up: the full parse must refuse it too
        text = text.replace('"nbformat": 4,', '"nbformat": 4, "nbformat": 4,', 1)
    path = write_notebook(tmp_path / "deep.ipynb", text=text)
    for args in (["outputs", path, "--cell", "0"], ["output", path, "--cell", "0", "--output", "0"]):
        error = coded(run_cli("-j", "notebook", *args), "NOTEBOOK_READ_FAILED")
        assert f"nested deeper than {MAX_DEPTH}" in error["message"]


def test_json_just_inside_the_limit_reads_the_same_in_process_and_through_the_sidecar(tmp_path, monkeypatch, isolated_runtime):
    depth = MAX_DEPTH - 8  # the notebook, its cell, outputs, output, data take the rest
    doc = notebook_with([{"output_type": "display_data", "metadata": {}, "data": {"application/json": json.loads(deep(5))}}])
    text = json.dumps(doc).replace(deep(5), deep(depth), 1)
    path = write_notebook(tmp_path / "ok.ipynb", text=text)
    args = ["-j", "notebook", "output", path, "--cell", "0", "--output", "0"]
    direct = run_cli(*args)
    assert direct.returncode == 0, direct.stderr
    monkeypatch.delenv("JCLI_SIDECAR")
    assert run_cli("sidecar", "start", cwd=tmp_path).returncode == 0
    assert run_cli(*args, cwd=tmp_path).stdout == direct.stdout
    run_cli("sidecar", "stop", cwd=tmp_path)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 100_000])
def test_a_request_nested_too_deeply_is_a_usage_error(depth):
    request = ('{"file_path": "a.ipynb", "cell_index": 0, "mime_type": ' + deep(depth) + "}").encode()
    for command in ("outputs", "output"):
        error = coded(run_cli("-j", "notebook", command, "--request", "-", stdin=request), "USAGE_ERROR", 2)
        assert "nested deeper" in error["message"]


def test_a_run_manifest_nested_too_deeply_is_coded(tmp_path):
    from jcli_sidecar.store import publish_run, stage_run
    from jcli_sidecar.workspace_dir import ensure_outputs_dir

    staged = stage_run(str(tmp_path), [{"output_type": "stream", "name": "stdout", "text": "x"}], source={}, status="ok", created_ns=1)
    manifest = publish_run(ensure_outputs_dir(str(tmp_path)), staged.run_id)["manifest"]
    with open(manifest, encoding="utf-8") as fh:
        text = fh.read()
    with open(manifest, "w", encoding="utf-8") as fh:
        fh.write(
            text.replace('"source":{}', '"source":{"deep":' + deep(5000) + "}", 1).replace(
                '"source": {}', '"source": {"deep": ' + deep(5000) + "}", 1
            )
        )
    coded(run_cli("-j", "output", "show", staged.run_id, cwd=tmp_path), "OUTPUT_DATA_INVALID")
    listed = run_cli("-j", "output", "list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.json()["runs"][0]["error"]["code"] == "OUTPUT_DATA_INVALID"


def _published_run(workspace, outputs) -> str:
    from jcli_sidecar.store import publish_run, stage_run
    from jcli_sidecar.workspace_dir import ensure_outputs_dir

    staged = stage_run(str(workspace), outputs, source={}, status="ok", created_ns=1)
    return os.path.dirname(publish_run(ensure_outputs_dir(str(workspace)), staged.run_id)["manifest"])


def test_a_damaged_payload_is_output_data_invalid_not_an_internal_error(tmp_path):
    run_dir = _published_run(
        tmp_path,
        [
            {"output_type": "display_data", "metadata": {}, "data": {"application/json": {"k": "v" * 5000}}},
            {"output_type": "display_data", "metadata": {}, "data": {"text/html": "<b>" + "x" * 5000}},
        ],
    )
    with open(os.path.join(run_dir, "manifest.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    json_file = os.path.join(run_dir, manifest["outputs"][0]["data"]["application/json"]["file"])
    html_file = os.path.join(run_dir, manifest["outputs"][1]["data"]["text/html"]["file"])
    with open(json_file, "wb") as fh:
        fh.write(b"[" * 5000)  # not JSON, and deeper than anything parses
    with open(html_file, "wb") as fh:
        fh.write(b"\xff\xfe not utf-8")
    for index in ("0", "1"):
        coded(run_cli("-j", "output", "show", os.path.basename(run_dir), "--output", index, cwd=tmp_path), "OUTPUT_DATA_INVALID")
