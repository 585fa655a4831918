"""The MCP Inspector CLI (pinned in tests/hosts) as a second, independent MCP client.

``mcp-inspector --cli <j-cli> mcp serve --root <dir> --method ...`` starts the
server over stdio, makes one request, prints the result and exits by itself
(``--format json``: one ``{"result": ...}`` object on stdout; a tool result
with ``isError`` exits 5). It runs offline against a temporary HOME.

The Inspector starts the server with a minimal environment of its own, so the
test's isolation (its runtime dir, the sidecar off) is handed to the server
with ``-e``; without it a read would start a sidecar in ``/tmp/jcli-<uid>``.

``--tool-arg key=value`` JSON-parses each value (``cell_index=2`` is the
number 2; a path is not JSON, so it stays a string), then coerces any string
left over to the type the tool's input schema declares. j-cli itself refuses
a string ``cell_index`` (``USAGE_ERROR: cell_index must be a JSON integer``),
so every successful read below also proves the index arrived as an integer.

Ad-hoc Inspector runs speak the legacy protocol by default; ``--protocol-era
modern`` negotiates the newer one (as Claude Code does): the image read runs
in both.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess

import psutil
import pytest
from helpers import FIXTURES, JCLI, load_cases
from hostbins import host_env

CASES = {c["name"]: c for c in load_cases()}


@pytest.fixture
def root(tmp_path):
    """A private copy of the fixture notebooks (the originals are never touched)."""
    target = tmp_path / "root"
    target.mkdir()
    for nb in FIXTURES.glob("*.ipynb"):
        shutil.copy(nb, target / nb.name)
    return target


def inspector(bin_dir, tmp_path, root, *args, era=None):
    """Run the Inspector CLI once against ``j-cli mcp serve --root root``; returns (returncode, parsed stdout, stderr)."""
    home = tmp_path / "inspector-home"
    home.mkdir(exist_ok=True)
    era_args = ["--protocol-era", era] if era else []
    isolation = [f"{key}={os.environ[key]}" for key in ("XDG_RUNTIME_DIR", "JCLI_SIDECAR")]
    proc = subprocess.run(
        [
            str(bin_dir / "mcp-inspector"),
            "--cli",
            "--format",
            "json",
            *era_args,
            *[arg for pair in isolation for arg in ("-e", pair)],
            JCLI,
            "mcp",
            "serve",
            "--root",
            str(root),
            *args,
        ],
        cwd=tmp_path,
        env=host_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    # the server it started goes away with it (waited for, bounded: no sleep)
    servers = [p for p in psutil.process_iter(["cmdline"]) if str(root) in " ".join(p.info["cmdline"] or [])]
    _, alive = psutil.wait_procs(servers, timeout=10)
    for survivor in alive:
        survivor.kill()
    assert not alive, [p.pid for p in alive]
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def read(bin_dir, tmp_path, root, file_name, cell_index, output_index=None, era=None):
    args = [
        "--method",
        "tools/call",
        "--tool-name",
        "read_notebook_output",
        "--tool-arg",
        f"file_path={root / file_name}",
        "--tool-arg",
        f"cell_index={cell_index}",
    ]
    if output_index is not None:
        args += ["--tool-arg", f"output_index={output_index}"]
    return inspector(bin_dir, tmp_path, root, *args, era=era)


def test_the_inspector_lists_every_tool_with_its_required_arguments(host_bin, tmp_path, root):
    # --strict: exit 6 on any error-severity schema portability problem (warnings are allowed)
    code, out, err = inspector(host_bin, tmp_path, root, "--method", "tools/list", "--strict")
    assert code == 0, err
    tools = {t["name"]: t for t in out["result"]["tools"]}
    assert set(tools) == {"read_notebook_output", "read_run_output", "notebook_grep", "job_status", "job_wait"}
    schema = tools["read_notebook_output"]["inputSchema"]
    assert set(schema["required"]) == {"file_path", "cell_index"}
    assert schema["properties"]["file_path"]["type"] == "string"
    assert schema["properties"]["cell_index"]["type"] == "integer"
    assert tools["read_run_output"]["inputSchema"]["required"] == ["run"]
    assert tools["notebook_grep"]["inputSchema"]["required"] == ["pattern"]
    assert tools["job_wait"]["inputSchema"]["required"] == ["job_id"]
    assert all(t["annotations"]["readOnlyHint"] is True for t in tools.values())


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("case", ["png", "png_wrapped"])
def test_a_png_arrives_as_one_image_item_with_the_notebooks_exact_bytes(host_bin, tmp_path, root, case, era):
    request = CASES[case]["request"]
    cell, index = request["cell_index"], request["output_index"]
    notebook = json.loads((root / request["file_path"]).read_text(encoding="utf-8"))
    stored = notebook["cells"][cell]["outputs"][index]["data"]["image/png"]
    stored = "".join(stored) if isinstance(stored, list) else stored
    expected = base64.b64decode("".join(stored.split()), validate=True)

    code, out, err = read(host_bin, tmp_path, root, request["file_path"], cell, index, era=era)
    assert code == 0, err
    result = out["result"]
    assert "structuredContent" not in result  # hosts drop images that come with one
    assert result.get("isError") is not True
    images = [item for item in result["content"] if item["type"] == "image"]
    assert len(images) == 1, result["content"]
    assert images[0]["mimeType"] == "image/png"
    assert base64.b64decode(images[0]["data"], validate=True) == expected
    assert [item["type"] for item in result["content"]] == ["image", "text"]
    assert f"cell {cell} output {index}" in result["content"][1]["text"]  # the index arrived as an integer


def test_an_html_output_comes_back_verbatim_as_text(host_bin, tmp_path, root):
    case = CASES["html"]
    request, selected = case["request"], case["expect"]["envelope"]["selected"]
    code, out, err = read(host_bin, tmp_path, root, request["file_path"], request["cell_index"], request["output_index"])
    assert code == 0, err
    content = out["result"]["content"]
    assert content[0] == {"type": "text", "text": selected["data"]}
    assert all(item["type"] == "text" for item in content)


def test_a_missing_cell_is_an_error_result_with_its_code(host_bin, tmp_path, root):
    case = CASES["err_cell_not_found"]
    request = case["request"]
    code, out, err = read(host_bin, tmp_path, root, request["file_path"], request["cell_index"])
    assert code == 5, err  # the Inspector's exit code for a tool result with isError
    result = out["result"]
    assert result["isError"] is True
    assert result["content"][0]["type"] == "text"
    assert result["content"][0]["text"].startswith(case["expect"]["error"]["code"] + ":")
