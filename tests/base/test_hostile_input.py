"""Small hostile inputs: each a coded error (never INTERNAL_ERROR), or a faithful, valid answer.

- a NUL byte or a lone surrogate in a path (``--request``, MCP, the Python API);
- JSON nested ~1000 deep (a notebook, either parse path; ``--request``; a manifest);
- ``{"image/png": null}`` and other bundle values of the wrong type;
- file names that are not UTF-8, which must come out as valid JSON that keeps
  their exact bytes.

MCP requests are written as raw JSON-RPC lines, because the SDK's own client
cannot even send a lone surrogate.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess

import pytest
from helpers import FIXTURES, JCLI, run_cli

from jcli_sidecar.base.boundedjson import MAX_DEPTH
from jcli_sidecar.base.errors import JcliError, OutputDataInvalid, UsageError

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


# -- NUL bytes and lone surrogates in paths -----------------------------------------------


@pytest.mark.parametrize("name", ["a\u0000b.ipynb", "a\ud800b.ipynb", "\udfff.py"], ids=["nul", "high-surrogate", "low-surrogate"])
@pytest.mark.parametrize("sidecar", [False, True], ids=["in-process", "sidecar"])
def test_a_path_no_file_can_have_is_a_usage_error_in_a_request(tmp_path, request, name, sidecar):
    if sidecar:
        request.getfixturevalue("sidecar_on")
        assert run_cli("sidecar", "start", cwd=tmp_path).returncode == 0
    request = json.dumps({"file_path": name, "cell_index": 0}).encode()  # \u escapes: valid JSON
    for command in ("outputs", "output"):
        error = coded(run_cli("-j", "notebook", command, "--request", "-", stdin=request, cwd=tmp_path), "USAGE_ERROR", 2)
        assert "file_path" in error["message"]


def test_the_python_api_refuses_such_paths_with_a_usage_error(tmp_path):
    from jcli_sidecar.read.reader import list_outputs, read_output
    from jcli_sidecar.runs.runs import read_run

    for name in ("a\x00b.ipynb", "a\ud800.ipynb", "a\x00.py"):
        with pytest.raises(UsageError):
            list_outputs(name, 0)
        with pytest.raises(UsageError):
            read_output(name, 0, 0)
        with pytest.raises(UsageError):
            read_run(str(tmp_path), name)


class RawMcp:
    """``j-cli mcp serve`` spoken to in raw JSON-RPC lines (any JSON text, lone surrogates included)."""

    def __init__(self, root, roots=None):
        args = [JCLI, "mcp", "serve"] + (["--root", str(root)] if roots is None else [])
        self.roots = roots
        self.proc = subprocess.Popen(args, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 1
        capabilities = {"roots": {}} if roots is not None else {}
        self.request(
            "initialize", {"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "0"}}
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params=None, raw_params: str | None = None):
        rid = self.next_id
        self.next_id += 1
        if raw_params is not None:
            self.send(f'{{"jsonrpc":"2.0","id":{rid},"method":"{method}","params":{raw_params}}}')
        else:
            self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        while True:
            line = self.proc.stdout.readline()
            assert line, f"the MCP server closed its stdout: {self.proc.stderr.read()[-2000:]!r}"
            message = strict_json(line)  # every line the server writes is strict UTF-8 JSON
            if message.get("method") == "roots/list":
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"roots": self.roots}})
                continue
            if message.get("id") == rid:
                return message

    def call(self, name: str, arguments_json: str):
        """A tools/call whose arguments are given as JSON text (so they may hold any escape)."""
        reply = self.request("tools/call", raw_params=f'{{"name":"{name}","arguments":{arguments_json}}}')
        return reply["result"]

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(BOUND)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.stdout.close()
            self.proc.stderr.close()


@pytest.fixture
def mcp(fixture_dir):
    server = RawMcp(fixture_dir)
    yield server
    server.close()


# A lone surrogate escape never reaches j-cli over MCP: the SDK's JSON parser
# rejects the whole message. A NUL byte does reach it.


@pytest.mark.parametrize(
    "arguments",
    ['{"file_path": "a\\u0000b.ipynb", "cell_index": 0}', '{"file_path": "/x\\u0000/../kernel_v4.5.ipynb", "cell_index": 0}'],
    ids=["nul", "nul-in-a-dir"],
)
def test_mcp_refuses_a_path_no_file_can_have(mcp, arguments):
    result = mcp.call("read_notebook_output", arguments)
    assert result["isError"] and result["content"][0]["text"].startswith("USAGE_ERROR:"), result
    assert not mcp.call("read_notebook_output", '{"file_path": "kernel_v4.5.ipynb", "cell_index": 0}').get("isError")


@pytest.mark.parametrize("run", ["a\\u0000b", "/w/a\\u0000/manifest.json"])
def test_mcp_refuses_a_run_no_file_can_have(mcp, run):
    result = mcp.call("read_run_output", f'{{"run": "{run}"}}')
    assert result["isError"] and result["content"][0]["text"].startswith("USAGE_ERROR:"), result


def test_mcp_client_roots_with_a_nul_or_non_utf8_bytes_are_handled(fixture_dir):
    quoted = "".join(c if c.isalnum() or c in "/-_." else f"%{ord(c):02X}" for c in str(fixture_dir))
    server = RawMcp(fixture_dir, roots=[{"uri": "file:///nowhere%00x"}, {"uri": "file:///%FF%FE"}, {"uri": "file://" + quoted}])
    try:
        absolute = json.dumps(str(fixture_dir / "kernel_v4.5.ipynb"))
        result = server.call("read_notebook_output", f'{{"file_path": {absolute}, "cell_index": 0}}')
        assert not result.get("isError"), result
    finally:
        server.close()


# -- JSON nested too deeply ------------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 600, 1000, 100_000])
@pytest.mark.parametrize("where", ["cell-metadata", "output-data", "notebook-metadata", "full-parse"])
def test_a_notebook_nested_too_deeply_is_notebook_read_failed(tmp_path, depth, where):
    """Forked warm (the same ``main``, the same interpreter limits): the refusal is the reader's code."""
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


def test_json_just_inside_the_limit_reads_the_same_in_process_and_through_the_sidecar(tmp_path, request):
    depth = MAX_DEPTH - 8  # the notebook, its cell, outputs, output, data take the rest
    doc = notebook_with([{"output_type": "display_data", "metadata": {}, "data": {"application/json": json.loads(deep(5))}}])
    text = json.dumps(doc).replace(deep(5), deep(depth), 1)
    path = write_notebook(tmp_path / "ok.ipynb", text=text)
    args = ["-j", "notebook", "output", path, "--cell", "0", "--output", "0"]
    direct = run_cli(*args)
    assert direct.returncode == 0, direct.stderr
    request.getfixturevalue("sidecar_on")
    assert run_cli("sidecar", "start", cwd=tmp_path).returncode == 0
    assert run_cli(*args, cwd=tmp_path).stdout == direct.stdout


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 100_000])
def test_a_request_nested_too_deeply_is_a_usage_error(depth):
    request = ('{"file_path": "a.ipynb", "cell_index": 0, "mime_type": ' + deep(depth) + "}").encode()
    for command in ("outputs", "output"):
        error = coded(run_cli("-j", "notebook", command, "--request", "-", stdin=request), "USAGE_ERROR", 2)
        assert "nested deeper" in error["message"]


def test_a_run_manifest_nested_too_deeply_is_coded(tmp_path):
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
    from jcli_sidecar.runs.store import publish_run, stage_run

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
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
    from jcli_sidecar.runs.store import publish_run, stage_run

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


# -- bundle values of the wrong type ------------------------------------------------------------


BAD_VALUES = [
    ("image/png", None),
    ("image/png", 5),
    ("image/png", {"a": 1}),
    ("image/png", ["iVBOR", 1]),
    ("text/html", None),
    ("text/html", True),
    ("text/plain", {"a": 1}),
    ("text/markdown", 1.5),
    ("image/svg+xml", [None]),
]


@pytest.mark.parametrize("mime, value", BAD_VALUES, ids=[f"{m}={json.dumps(v)}" for m, v in BAD_VALUES])
def test_a_bundle_value_of_the_wrong_type_is_output_data_invalid(tmp_path, mime, value):
    data = {mime: value, "text/x-fine": "fine"}
    path = write_notebook(tmp_path / "nb.ipynb", notebook_with([{"output_type": "display_data", "metadata": {}, "data": data}]))
    catalog = run_cli("-j", "notebook", "outputs", path, "--cell", "0").json()
    assert catalog["outputs"][0]["bytes"] == {mime: None, "text/x-fine": 4}  # listed, and marked unreadable
    error = coded(run_cli("-j", "notebook", "output", path, "--cell", "0", "--output", "0", "--mime", mime), "OUTPUT_DATA_INVALID")
    assert mime in error["message"]
    coded(run_cli("-j", "notebook", "output", path, "--cell", "0", "--output", "0"), "OUTPUT_DATA_INVALID")  # chosen by auto order
    fine = run_cli("-j", "notebook", "output", path, "--cell", "0", "--output", "0", "--mime", "text/x-fine")
    assert fine.returncode == 0 and fine.json()["selected"]["data"] == "fine"


@pytest.mark.parametrize("value", [None, 5, "text", ["a", 1], {"k": [None]}])
def test_any_json_value_is_fine_under_a_json_mime(tmp_path, value):
    data = {"application/json": value, "application/vnd.x+json": value}
    path = write_notebook(tmp_path / "nb.ipynb", notebook_with([{"output_type": "display_data", "metadata": {}, "data": data}]))
    for mime in data:
        result = run_cli("-j", "notebook", "output", path, "--cell", "0", "--output", "0", "--mime", mime)
        assert result.returncode == 0 and result.json()["selected"]["data"] == value


def test_a_run_holding_a_null_image_is_output_data_invalid(tmp_path):
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir
    from jcli_sidecar.runs.runs import read_run
    from jcli_sidecar.runs.store import publish_run, stage_run

    outputs = [{"output_type": "display_data", "metadata": {}, "data": {"image/png": None, "text/plain": "x"}}]
    staged = stage_run(str(tmp_path), outputs, source={}, status="ok", created_ns=1)
    publish_run(ensure_outputs_dir(str(tmp_path)), staged.run_id)
    with pytest.raises(OutputDataInvalid):
        read_run(str(tmp_path), staged.run_id, 0)
    coded(run_cli("-j", "output", "show", staged.run_id, "--output", "0", cwd=tmp_path), "OUTPUT_DATA_INVALID")


# -- file names that are not UTF-8 -------------------------------------------------------------------


def _bytes_of(field: dict, key: str) -> bytes:
    return base64.b64decode(field[key + "_bytes"])


@pytest.fixture
def odd_names(tmp_path):
    """A notebook whose name is not UTF-8, and the real path of its folder."""
    folder = os.fsencode(str(tmp_path))
    shutil.copy(FIXTURES / "kernel_v4.5.ipynb", os.fsdecode(folder + b"/caf\xe9.ipynb"))
    return os.path.realpath(folder)


@pytest.mark.parametrize("sidecar", [False, True], ids=["in-process", "sidecar"])
def test_a_non_utf8_name_comes_out_as_valid_json_with_its_exact_bytes(odd_names, request, sidecar):
    if sidecar:
        request.getfixturevalue("sidecar_on")
        assert run_cli("sidecar", "start", cwd=os.fsdecode(odd_names)).returncode == 0
    name = os.fsdecode(b"caf\xe9.ipynb")
    result = run_cli("-j", "notebook", "output", name, "--cell", "1", "--output", "1", cwd=os.fsdecode(odd_names))
    assert result.returncode == 0, result.stderr
    doc = strict_json(result.stdout)
    source = doc["source"]
    assert source["path"].endswith("/caf" + REPLACEMENT + ".ipynb") and REPLACEMENT in source["label"]
    assert _bytes_of(source, "path") == odd_names + b"/caf\xe9.ipynb"
    assert _bytes_of(source, "requested_path") == b"caf\xe9.ipynb"
    assert doc["stream"]["data"] == "warned\n"
    missing = run_cli("-j", "notebook", "outputs", os.fsdecode(b"gone\xff.ipynb"), "--cell", "0", cwd=os.fsdecode(odd_names))
    error = coded(missing, "FILE_NOT_FOUND")
    assert REPLACEMENT in error["message"] and _bytes_of(error, "path") == odd_names + b"/gone\xff.ipynb"


def test_a_utf8_name_is_unchanged_and_has_no_bytes_field(tmp_path):
    shutil.copy(FIXTURES / "kernel_v4.5.ipynb", tmp_path / "café.ipynb")
    doc = strict_json(run_cli("-j", "notebook", "outputs", "café.ipynb", "--cell", "0", cwd=tmp_path).stdout)
    assert doc["source"]["requested_path"] == "café.ipynb" and "requested_path_bytes" not in doc["source"]


def test_notebook_text_with_a_lone_surrogate_keeps_its_escape(tmp_path):
    # The notebook's own JSON holds "\ud800": the envelope returns exactly that escape (faithful to the file).
    text = json.dumps(notebook_with([{"output_type": "stream", "name": "stdout", "text": "a\ud800b"}]))
    path = write_notebook(tmp_path / "nb.ipynb", text=text)
    result = run_cli("-j", "notebook", "output", path, "--cell", "0", "--output", "0")
    assert result.returncode == 0 and b"a\\ud800b" in result.stdout
    assert json.loads(result.stdout)["stream"]["data"] == "a\ud800b"


def test_output_list_names_a_run_directory_that_is_not_utf8_validly(tmp_path):
    outputs = tmp_path / ".j-cli" / "outputs"
    os.makedirs(os.fsencode(str(outputs)) + b"/run-\xff")
    listed = run_cli("-j", "output", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (run,) = strict_json(listed.stdout)["runs"]
    assert run["run_id"] == "run-" + REPLACEMENT and _bytes_of(run, "run_id") == b"run-\xff"
    assert run["error"]["code"] == "RUN_NOT_FOUND" and REPLACEMENT in run["error"]["message"]


def test_mcp_answers_non_utf8_names_and_lone_surrogates_validly(tmp_path):
    root = os.fsencode(str(tmp_path)) + b"/r\xe9"  # a root whose name is not UTF-8
    os.mkdir(root)
    shutil.copy(FIXTURES / "kernel_v4.5.ipynb", os.fsdecode(root + b"/kernel_v4.5.ipynb"))
    text = json.dumps(notebook_with([{"output_type": "stream", "name": "stdout", "text": "a\ud800b"}]))
    write_notebook(os.fsdecode(root + b"/sur.ipynb"), text=text)
    mcp = RawMcp(os.fsdecode(root))
    try:
        result = mcp.call("read_notebook_output", '{"file_path": "kernel_v4.5.ipynb", "cell_index": 1, "output_index": 1}')
        assert not result.get("isError"), result
        assert result["content"][0]["text"] == "warned\n" and "/r" + REPLACEMENT + "/" in result["content"][1]["text"]
        catalog = mcp.call("read_notebook_output", '{"file_path": "kernel_v4.5.ipynb", "cell_index": 1}')
        source = json.loads(catalog["content"][0]["text"])["source"]
        assert _bytes_of(source, "path") == os.path.realpath(root) + b"/kernel_v4.5.ipynb"
        surrogate = mcp.call("read_notebook_output", '{"file_path": "sur.ipynb", "cell_index": 0, "output_index": 0}')
        assert surrogate["content"][0]["text"] == "a" + REPLACEMENT + "b"  # no JSON-RPC message can carry the lone surrogate
        missing = mcp.call("read_notebook_output", '{"file_path": "gone.ipynb", "cell_index": 0}')
        assert missing["isError"] and missing["content"][0]["text"].startswith("FILE_NOT_FOUND:")
        assert REPLACEMENT in missing["content"][0]["text"]
        # and the server is still answering
        assert not mcp.call("read_notebook_output", '{"file_path": "kernel_v4.5.ipynb", "cell_index": 0}').get("isError")
    finally:
        mcp.close()


def test_no_read_error_is_ever_an_internal_error_for_these_inputs(tmp_path):
    from jcli_sidecar.read.requests import handle_read

    path = write_notebook(
        tmp_path / "nb.ipynb", notebook_with([{"output_type": "display_data", "metadata": {}, "data": {"image/png": None}}])
    )
    requests = [
        {"file_path": "a\x00b", "cell_index": 0},
        {"file_path": "a\ud800", "cell_index": 0},
        {"file_path": path, "cell_index": 0, "output_index": 0},
        {"file_path": path, "cell_index": 0, "mime_type": json.loads(deep(50))},
        {"file_path": path, "cell_index": "0\u0661"},
    ]
    for request in requests:
        with pytest.raises(JcliError) as info:
            handle_read(request)
        assert info.value.code != "INTERNAL_ERROR"
