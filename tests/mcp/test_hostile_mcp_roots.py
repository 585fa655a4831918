"""MCP roots hold for inline runs too: no link leads a read_run_output outside every root.

The secret run lives in another directory, outside the MCP server's root;
each test plants one link from inside the root towards it, and the secret's
text must never come back.
"""

from __future__ import annotations

import os

import pytest
from test_mcp import call, tool

from jcli_sidecar.runs.store import publish_run, stage_run

SECRET = "the-secret-output " * 200  # long enough to be stored in a payload file


def make_run(ws):
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {"text/plain": SECRET, "text/html": f"<p>{SECRET}</p>"}}]
    staged = stage_run(str(ws), outputs, source={}, status="ok", created_ns=1, completed_ns=1)
    publish_run(staged.outputs_dir, staged.run_id)
    return staged.run_id


@pytest.fixture
def places(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    return root, outside, make_run(outside)


def read(root, **args):
    result = call(["--root", str(root)], tool("read_run_output", output_index=0, **args))
    text = " ".join(getattr(part, "text", "") for part in result.content)
    assert "the-secret-output" not in text, "data from outside every root came back"
    return result, text


def test_a_symlinked_j_cli_dir(places):
    root, outside, run_id = places
    (root / ".j-cli").symlink_to(outside / ".j-cli")
    result, text = read(root, run=run_id)
    assert result.is_error and text.startswith("PATH_NOT_ALLOWED:")


def test_a_symlinked_run_dir(places):
    root, outside, run_id = places
    make_run(root)
    (root / ".j-cli" / "outputs" / run_id).symlink_to(outside / ".j-cli" / "outputs" / run_id)
    result, text = read(root, run=run_id)
    assert result.is_error and text.startswith("PATH_NOT_ALLOWED:")


def test_a_manifest_that_links_outside(places):
    root, outside, run_id = places
    mine = make_run(root)
    manifest = root / ".j-cli" / "outputs" / mine / "manifest.json"
    manifest.unlink()
    manifest.symlink_to(outside / ".j-cli" / "outputs" / run_id / "manifest.json")
    result, text = read(root, run=mine)
    assert result.is_error and text.startswith("RUN_NOT_FOUND:")


def test_a_payload_that_links_outside(places):
    root, outside, run_id = places
    mine = make_run(root)
    run_dir = root / ".j-cli" / "outputs" / mine
    theirs = outside / ".j-cli" / "outputs" / run_id
    for name in os.listdir(run_dir):
        if name.endswith(".html"):
            (run_dir / name).unlink()
            (run_dir / name).symlink_to(theirs / name)
    result, text = read(root, run=mine, mime_type="text/html")
    assert result.is_error and text.startswith("OUTPUT_DATA_INVALID:")


def test_a_manifest_path_through_a_symlinked_directory(places):
    root, outside, run_id = places
    (root / "door").symlink_to(outside)
    result, text = read(root, run=str(root / "door" / ".j-cli" / "outputs" / run_id / "manifest.json"))
    assert result.is_error and text.startswith("PATH_NOT_ALLOWED:")


def test_the_same_run_inside_the_root_still_reads(places):
    root, _outside, _run_id = places
    mine = make_run(root)
    result = call(["--root", str(root)], tool("read_run_output", run=mine, output_index=0, mime_type="text/plain"))
    assert not result.is_error and result.content[0].text == SECRET
