"""``j-cli mcp serve`` at the protocol level: raw JSON-RPC lines over its real stdio.

tests/mcp/test_mcp.py proves, with the MCP SDK's own client, that the server
speaks MCP; here each frame is written by hand, so what no SDK client would
send (bad JSON, batches, huge lines, unknown methods, a call abandoned
mid-flight) is sent too. Every line the server writes must be strict UTF-8
JSON. tools/list must list the two read tools byte for byte as the fixtures
hold them (tests/fixtures/mcp/, captured from an SDK-based server), the tools
added since after them.

A test whose exchange leaves the server as it found it (one bad line or
request, one answer, still serving) speaks to the module's one initialized
server (:func:`shared`), with request ids no other test uses; a test about
initialize, the protocol era, the server's memory or its lifetime starts
its own (:func:`server`, :class:`Server`).
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import subprocess
import sys

import pytest
from helpers import FIXTURES, JCLI, run_cli
from test_hostile_lifetimes import _first_line, _stalled_sidecar

from jcli_sidecar import __version__

MCP_FIXTURES = FIXTURES.parent / "mcp"
BOUND = 30  # seconds: any wait longer than this is a hang, and fails
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
MIB = 1024 * 1024
READ = {"file_path": "kernel_v4.5.ipynb", "cell_index": 2, "output_index": 0}


class Server:
    """One ``j-cli mcp serve`` process, spoken to in raw lines."""

    def __init__(self, cwd, *args: str, python_args: tuple[str, ...] = (), stderr=None) -> None:
        """``stderr``: an open file for the server's log instead of a pipe (for a server that outlives one test)."""
        argv = [sys.executable, *python_args, "-m", "jcli"] if python_args else [JCLI]
        self.proc = subprocess.Popen(
            [*argv, "mcp", "serve", *args],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.PIPE,
        )

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def line(self) -> bytes:
        ready, _, _ = select.select([self.proc.stdout], [], [], BOUND)
        assert ready, "the server did not answer"
        raw = self.proc.stdout.readline()
        assert raw.endswith(b"\n"), f"the server closed its stdout: {self.proc.stderr.read()[-2000:] if self.proc.stderr else b''!r}"
        return raw

    def receive(self) -> dict:
        raw = self.line()
        return json.loads(raw.decode("utf-8", "strict"))  # strict UTF-8 JSON, or the test fails

    def request(self, request_id, method, params=None) -> dict:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.receive()

    def initialize(self, **params) -> dict:
        reply = self.request(1, "initialize", {**INITIALIZE, **params})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self) -> int:
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(BOUND)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.stdout.close()
            if self.proc.stderr:
                self.proc.stderr.close()


@pytest.fixture
def server(fixture_dir):
    started = Server(fixture_dir, "--root", str(fixture_dir))
    yield started
    assert started.close() == 0


_ids = itertools.count()


def fresh_id() -> str:
    """A request id no other request in this process uses: a shared server's answer is matched to its test."""
    return f"t{next(_ids)}"


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """One server for the module, initialized as :meth:`Server.initialize` does, with ``--root`` on a copy of the fixtures."""
    base = tmp_path_factory.mktemp("mcp-protocol-shared")
    root = base / "protocol"
    shutil.copytree(FIXTURES, root)
    with open(base / "server.log", "wb") as log:
        started = Server(root, "--root", str(root), stderr=log)
        try:
            started.initialize()
            yield started
        finally:
            assert started.close() == 0, (base / "server.log").read_bytes()[-2000:]


@pytest.fixture
def shared(shared_server):
    """The shared server, for a test whose exchange leaves it as it found it: afterwards it must answer a ping next."""
    yield shared_server
    request_id = f"after-{fresh_id()}"
    shared_server.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    left = []  # read up to the ping's answer, so that a test that fails here leaves the next one a clean line
    while (reply := shared_server.receive()).get("id") != request_id:
        left.append(reply)
    assert not left and reply == {"jsonrpc": "2.0", "id": request_id, "result": {}}, f"the test left lines unread: {left}"


def error_of(reply: dict, request_id, code: int) -> dict:
    assert reply["id"] == request_id and "result" not in reply, reply
    assert reply["error"]["code"] == code, reply
    return reply["error"]


def assert_still_serving(server: Server) -> None:
    request_id = f"still-there-{fresh_id()}"
    assert server.request(request_id, "ping") == {"jsonrpc": "2.0", "id": request_id, "result": {}}


# -- tools/list, exactly as before ------------------------------------------------------


def _listed_as_before(line: bytes, expected: bytes) -> None:
    """The two read tools are listed byte for byte as the fixture has them, the tools added after them."""
    cut = expected.rindex(b'"name":"read_run_output"}]') + len(b'"name":"read_run_output"}')
    assert line.startswith(expected[:cut] + b',{"annotations":'), line[:200]
    assert line.endswith(expected[cut:]), line[-300:]


def test_tools_list_is_byte_identical_to_the_sdk_servers(server):
    server.initialize(protocolVersion="2025-11-25")
    server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    _listed_as_before(server.line(), (MCP_FIXTURES / "tools_list.jsonl").read_bytes())


def test_tools_list_in_the_2026_era_is_byte_identical_to_the_sdk_servers(server):
    discovered = server.request("probe", "server/discover", {"_meta": ENVELOPE})
    assert discovered["result"]["supportedVersions"] == ["2026-07-28"]
    server.send({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": ENVELOPE}})
    expected = (MCP_FIXTURES / "tools_list_modern.jsonl").read_bytes()
    _listed_as_before(server.line(), expected.replace(b'"version":"0.1.0"', f'"version":"{__version__}"'.encode()))


def test_each_tool_tells_a_scripting_model_to_pass_the_image_to_image_and_a_text_only_server_says_images_come_as_text(fixture_dir):
    from jcli.mcp_tools import CODE_MODE_IMAGE, TEXT_ONLY_IMAGE

    for args, ending in (((), CODE_MODE_IMAGE), (("--text-only",), TEXT_ONLY_IMAGE)):
        server = Server(fixture_dir, "--root", str(fixture_dir), *args)
        server.initialize(protocolVersion="2025-11-25")
        tools = server.request(2, "tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == ["read_notebook_output", "read_run_output", "notebook_grep", "job_status", "job_wait"]
        assert all(t["annotations"]["readOnlyHint"] is True for t in tools), tools
        reads = tools[:2]  # the tools that may answer an image
        assert all(t["description"].endswith(" " + ending) for t in reads), reads
        assert all("image()" not in t["description"] for t in reads) == bool(args)
        assert server.close() == 0


# -- protocol versions ------------------------------------------------------------------


@pytest.mark.parametrize(
    "asked, granted",
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
        ("not-a-version", "2025-11-25"),
    ],
)
def test_an_older_supported_version_is_granted_and_an_unknown_one_gets_our_latest(server, asked, granted):
    result = server.initialize(protocolVersion=asked)["result"]
    assert result["protocolVersion"] == granted
    assert result["serverInfo"] == {"name": "j-cli", "version": __version__}
    assert result["capabilities"] == {"tools": {"listChanged": False}}


def test_a_2026_connection_refuses_initialize_and_requests_without_their_envelope(server):
    assert server.request(1, "server/discover", {"_meta": ENVELOPE})["result"]["resultType"] == "complete"
    refused = error_of(server.request(2, "initialize", INITIALIZE), 2, -32022)
    assert refused["data"] == {"supported": ["2026-07-28"], "requested": "2025-06-18"}
    error_of(server.request(3, "tools/list", {}), 3, -32602)
    later = {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    assert error_of(server.request(4, "tools/list", {"_meta": later}), 4, -32022)["data"]["requested"] == "2099-01-01"
    called = server.request(
        5,
        "tools/call",
        {"name": "read_notebook_output", "arguments": {"file_path": "kernel_v4.5.ipynb", "cell_index": 99}, "_meta": ENVELOPE},
    )["result"]
    assert called["isError"] is True and called["content"][0]["text"].startswith("CELL_NOT_FOUND:")
    assert called["_meta"] == {"io.modelcontextprotocol/serverInfo": {"name": "j-cli", "version": __version__}}


def test_a_handshake_connection_refuses_a_2026_envelope(shared):
    refused, listed = fresh_id(), fresh_id()
    error_of(shared.request(refused, "tools/list", {"_meta": ENVELOPE}), refused, -32600)
    assert "tools" in shared.request(listed, "tools/list")["result"]


# -- bad input: a coded JSON-RPC error, and nothing lost ---------------------------------


@pytest.mark.parametrize(
    "line, code",
    [
        (b"this is not JSON", -32700),
        (b'{"jsonrpc":"2.0","id":7,"method":"ping"', -32700),  # cut short
        (b'{"jsonrpc":"2.0","id":7,"method":"\xff\xfe"}', -32700),  # not UTF-8
        (b"[" * 100_000, -32700),  # nested too deeply to parse
        (b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]', -32600),  # a batch
        (b'{"jsonrpc":"1.0","id":7,"method":"ping"}', -32600),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600),
        (b"42", -32600),
    ],
    ids=["text", "cut-short", "not-utf8", "too-deep", "batch", "jsonrpc-1.0", "null-id", "float-id", "number"],
)
def test_a_line_that_is_no_request_gets_an_error_without_an_id(shared, line, code):
    shared.send_raw(line + b"\n")
    error_of(shared.receive(), None, code)
    assert_still_serving(shared)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "x"},
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
        {"jsonrpc": "2.0", "id": [1], "result": {}},
        {"jsonrpc": "2.0", "id": 12345, "result": {"roots": []}},
    ],
    ids=["cancel-odd-id", "cancel-odd-params", "unknown-notification", "response-odd-id", "response-unasked"],
)
def test_notifications_and_responses_nobody_expects_are_ignored(shared, message):
    shared.send(message)
    assert_still_serving(shared)  # and nothing was written before the ping's answer


def test_an_unknown_method_is_method_not_found(shared):
    request_id = fresh_id()
    error = error_of(shared.request(request_id, "resources/list"), request_id, -32601)
    assert error["data"] == "resources/list"
    assert_still_serving(shared)


@pytest.mark.parametrize(
    "params",
    [
        [1, 2],
        {"arguments": {}},
        {"name": 3, "arguments": {}},
        {"name": "read_notebook_output", "arguments": [1]},
        {"name": "read_notebook_output", "arguments": "file_path=a.ipynb"},
        {"name": "write_notebook", "arguments": {}},
    ],
    ids=["params-not-object", "no-name", "name-not-string", "arguments-array", "arguments-string", "unknown-tool"],
)
def test_a_malformed_tools_call_is_invalid_params(shared, params):
    request_id = fresh_id()
    error_of(shared.request(request_id, "tools/call", params), request_id, -32602)
    assert_still_serving(shared)


@pytest.mark.parametrize(
    "arguments, code",
    [
        ({"file_path": "kernel_v4.5.ipynb", "cell_index": "two"}, "USAGE_ERROR"),
        ({"file_path": "kernel_v4.5.ipynb"}, "USAGE_ERROR"),
        ({"file_path": "kernel_v4.5.ipynb", "cell_index": 0, "bogus": 1}, "USAGE_ERROR"),
        ({"file_path": "/etc/hostname", "cell_index": 0}, "PATH_NOT_ALLOWED"),
    ],
)
def test_arguments_the_tool_refuses_are_a_tool_error_the_model_can_read(shared, arguments, code):
    request_id = fresh_id()
    reply = shared.request(request_id, "tools/call", {"name": "read_notebook_output", "arguments": arguments})
    assert reply["id"] == request_id, reply
    result = reply["result"]
    assert result["isError"] is True and result["content"][0]["text"].startswith(f"{code}:"), result


def test_a_huge_line_is_refused_without_being_held(server):
    server.initialize()
    status = f"/proc/{server.proc.pid}/status"

    def peak_kib() -> int:
        with open(status, encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))

    before = peak_kib()
    chunk = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"' + b"x" * MIB
    for _ in range(64):  # 64 MiB in one line, sixteen times the limit
        server.send_raw(chunk)
    server.send_raw(b'"}}\n')
    error = error_of(server.receive(), None, -32600)
    assert "longer than" in error["message"]
    assert_still_serving(server)
    assert peak_kib() - before < 16 * 1024, "the server held the huge line"


# -- lifetime: cancelled calls, a client that goes away -----------------------------------


def test_a_closed_stdin_ends_the_server_with_a_call_in_flight(fixture_dir, sidecar_on, monkeypatch, tmp_path):
    doc, fifo = _stalled_sidecar(fixture_dir, monkeypatch, tmp_path)
    monkeypatch.setenv("JCLI_MCP_DRAIN_SECONDS", "1")
    server = Server(fixture_dir, "--root", str(fixture_dir))
    try:
        server.initialize()
        server.send(
            {"jsonrpc": "2.0", "id": "stuck", "method": "tools/call", "params": {"name": "read_notebook_output", "arguments": READ}}
        )
        _first_line(fifo)  # the call is in flight, stuck inside the sidecar
        assert_still_serving(server)  # reading goes on while a call runs
        server.proc.stdin.close()  # the client goes away
        assert server.proc.wait(BOUND) == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        server.proc.stdout.close()
        server.proc.stderr.close()
        os.kill(doc["pid"], 9)


def test_a_client_that_stops_reading_ends_the_server_though_its_stdin_stays_open(fixture_dir):
    server = Server(fixture_dir, "--root", str(fixture_dir))
    try:
        server.initialize()
        server.proc.stdout.close()  # nobody reads the answers any more
        server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})  # its answer finds the pipe broken
        assert server.proc.wait(BOUND) == 0  # stdin is still open
    finally:
        server.close()


def _call(request_id, arguments, tool="read_notebook_output") -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def _answers_after_close(server: Server) -> dict:
    """Close stdin, wait for the server to exit 0, and return every answer it wrote, by id."""
    out, _ = server.proc.communicate(timeout=BOUND)  # closes stdin first
    assert server.proc.returncode == 0
    answers = [json.loads(line) for line in out.splitlines()]
    by_id = {answer["id"]: answer for answer in answers}
    assert len(by_id) == len(answers), "a call was answered twice"
    return by_id


@pytest.mark.parametrize("sidecar", ["off", "on"])
def test_every_call_received_before_stdin_closes_is_answered(fixture_dir, sidecar, request):
    if sidecar == "on":
        request.getfixturevalue("sidecar_on")  # the first read starts one; later reads may use it
    cases = [
        READ,
        {"file_path": "kernel_v4.5.ipynb", "cell_index": 99, "output_index": 0},  # CELL_NOT_FOUND
        {"file_path": "kernel_v4.5.ipynb", "cell_index": 2},  # the catalog
        {"file_path": "missing.ipynb", "cell_index": 0, "output_index": 0},  # FILE_NOT_FOUND
    ]
    server = Server(fixture_dir, "--root", str(fixture_dir))
    try:
        server.initialize()
        calls = [_call(100 + i, cases[i % len(cases)]) for i in range(24)]
        calls.append(_call("run", {"run_id": "20990101T000000Z-nope", "output_index": 0}, tool="read_run_output"))
        server.send_raw(b"".join(json.dumps(call).encode() + b"\n" for call in calls))  # all at once, then the client leaves
        answers = _answers_after_close(server)
    finally:
        server.close()
    assert set(answers) == {call["id"] for call in calls}
    for call in calls:
        answer = answers[call["id"]]
        assert "result" in answer, answer
        text = answer["result"]["content"][0].get("text", "")
        assert "TIMEOUT" not in text, answer
    assert answers[100]["result"]["content"][0]["type"] == "image"
    assert answers[101]["result"]["isError"] and "CELL_NOT_FOUND" in answers[101]["result"]["content"][0]["text"]


def test_a_call_still_stuck_after_the_drain_time_is_answered_timeout_and_the_rest_as_usual(fixture_dir, sidecar_on, monkeypatch, tmp_path):
    doc, fifo = _stalled_sidecar(fixture_dir, monkeypatch, tmp_path)
    monkeypatch.setenv("JCLI_MCP_DRAIN_SECONDS", "0.5")
    server = Server(fixture_dir, "--root", str(fixture_dir))
    try:
        server.initialize()
        server.send(_call("stuck", READ))
        _first_line(fifo)  # inside the sidecar's worker, for ever
        server.send(_call("quick", {"run_id": "20990101T000000Z-nope", "output_index": 0}, tool="read_run_output"))
        quick = server.receive()
        assert quick["id"] == "quick" and quick["result"]["isError"], quick
        server.send(_call("late", {"run_id": "20990101T000000Z-nope", "output_index": 1}, tool="read_run_output"))
        answers = _answers_after_close(server)
    finally:
        server.close()
        os.kill(doc["pid"], 9)
    assert set(answers) == {"stuck", "late"}
    stuck = answers["stuck"]["result"]
    assert (
        stuck["isError"] and stuck["content"][0]["text"].startswith("TIMEOUT: ") and "JCLI_MCP_DRAIN_SECONDS" in stuck["content"][0]["text"]
    )
    late = answers["late"]["result"]
    assert late["isError"] and not late["content"][0]["text"].startswith("TIMEOUT"), late  # answered as usual


def test_a_cancelled_call_is_never_answered(fixture_dir):
    server = Server(fixture_dir)  # no --root: the first call waits for the client's roots
    try:
        server.initialize(capabilities={"roots": {}})
        server.send({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "read_notebook_output", "arguments": READ}})
        asked = server.receive()
        assert asked["method"] == "roots/list", asked
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c", "reason": "user"}})
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": f"file://{fixture_dir}"}]}})
        again = server.request(2, "tools/call", {"name": "read_notebook_output", "arguments": READ})  # the same read, not cancelled
        assert again["id"] == 2 and again["result"]["content"][0]["type"] == "image", again
        assert_still_serving(server)
        server.proc.stdin.close()
        assert server.proc.wait(BOUND) == 0
        assert server.proc.stdout.read() == b""  # nothing more: no answer for "c"
    finally:
        server.close()


# -- roots ------------------------------------------------------------------------------


def test_client_roots_are_asked_again_after_they_change(fixture_dir, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "copy.ipynb").write_bytes((fixture_dir / "kernel_v4.5.ipynb").read_bytes())
    elsewhere = tmp_path / "elsewhere"  # the launch cwd, which holds nothing: only the client's roots allow a read
    elsewhere.mkdir()
    server = Server(elsewhere)
    try:
        server.initialize(capabilities={"roots": {"listChanged": True}})

        def call(request_id, path, root, changed_meanwhile=False):
            server.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": "read_notebook_output", "arguments": {"file_path": str(path), "cell_index": 1}},
                }
            )
            asked = server.receive()
            assert asked["method"] == "roots/list" and "id" in asked, asked
            if changed_meanwhile:  # the reader must not wait for the call that waits for it
                server.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
            server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": f"file://{root}"}]}})
            return server.receive()["result"]

        assert not call(2, fixture_dir / "kernel_v4.5.ipynb", fixture_dir).get("isError")
        denied = server.request(
            3, "tools/call", {"name": "read_notebook_output", "arguments": {"file_path": str(other / "copy.ipynb"), "cell_index": 1}}
        )
        assert denied["result"]["content"][0]["text"].startswith("PATH_NOT_ALLOWED:")  # asked once: no second roots/list
        server.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        assert not call(4, other / "copy.ipynb", other, changed_meanwhile=True).get("isError")
        assert not call(5, other / "copy.ipynb", other).get("isError")  # the change sent mid-wait: asked once more
        again = server.request(
            6,
            "tools/call",
            {"name": "read_notebook_output", "arguments": {"file_path": str(fixture_dir / "kernel_v4.5.ipynb"), "cell_index": 1}},
        )
        assert again["result"]["content"][0]["text"].startswith("PATH_NOT_ALLOWED:")
    finally:
        assert server.close() == 0


def test_an_unknown_host_is_a_usage_error_in_both_modes(tmp_path):
    human = run_cli("mcp", "serve", "--host", "nosuch", cwd=tmp_path)
    assert human.returncode == 2 and human.stdout == b"" and b"USAGE_ERROR" in human.stderr and b"unknown host 'nosuch'" in human.stderr
    coded = run_cli("-j", "mcp", "serve", "--host", "nosuch", cwd=tmp_path)
    assert coded.returncode == 2 and coded.stdout == b""
    assert coded.error()["code"] == "USAGE_ERROR" and "nosuch" in coded.error()["message"]


# -- start-up: only what serving needs ------------------------------------------------------


def test_serving_imports_the_mcp_sdk_and_nothing_a_read_does_not_need(fixture_dir):
    server = Server(fixture_dir, "--root", str(fixture_dir), python_args=("-X", "importtime"))
    server.initialize()
    assert len(server.request(2, "tools/list")["result"]["tools"]) == 5
    read = server.request(
        3,
        "tools/call",
        {"name": "read_notebook_output", "arguments": {"file_path": "kernel_v4.5.ipynb", "cell_index": 2, "output_index": 0}},
    )
    assert read["result"]["content"][0]["type"] == "image"
    server.proc.stdin.close()
    assert server.proc.wait(BOUND) == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in server.proc.stderr.read().decode().splitlines() if "|" in line}
    server.proc.stdout.close()
    server.proc.stderr.close()
    assert "jcli" in imported  # the listing is real
    assert {"mcp", "mcp_types", "anyio"} <= imported  # the server is the SDK's
    assert not imported & {"nbformat", "psutil"}
