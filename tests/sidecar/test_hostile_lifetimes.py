"""Nothing hangs: a stuck request never keeps a sidecar or the MCP server alive.

A worker thread stuck in a request (here: the sidecar's env-gated stall
hook, which blocks a worker for ever at a chosen point) cannot be
cancelled. The sidecar still exits on SIGTERM/SIGINT within its stop grace,
a request that outlives ``JCLI_SIDECAR_REQUEST_SECONDS`` is answered
``TIMEOUT`` and the sidecar retires, and ``j-cli mcp serve`` exits when its
client closes stdin, with a tool call in flight. Every wait is on an event
(a FIFO line, a process exit), bounded so that a hang fails the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading

import psutil
import pytest
from helpers import JCLI, run_cli

from jcli_sidecar.base.runtime import SidecarPaths

READ = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0"]
BOUND = 30


def _stalled_sidecar(workspace, monkeypatch, tmp_path, **env) -> tuple[dict, str]:
    """A sidecar whose next notebook request blocks its worker for ever (the test stall hook)."""
    fifo = str(tmp_path / "stall.fifo")
    os.mkfifo(fifo)
    monkeypatch.setenv("JCLI_SIDECAR_TEST_STALL_FIFO", fifo)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    started = run_cli("-j", "sidecar", "start", cwd=workspace)
    assert started.returncode == 0, started.stderr
    monkeypatch.delenv("JCLI_SIDECAR_TEST_STALL_FIFO")
    for name in env:
        monkeypatch.delenv(name)
    return started.json(), fifo


def _first_line(fifo: str) -> str:
    """The stall hook's line: the request is inside a worker now."""
    got: list[str] = []
    done = threading.Event()

    def reader():
        with open(fifo, encoding="utf-8") as fh:
            got.append(fh.readline())
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    assert done.wait(BOUND), "the request never reached the stall"
    return got[0]


def _gone(pid: int) -> None:
    try:
        psutil.Process(pid).wait(BOUND)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired:
        pytest.fail(f"the sidecar {pid} is still running with a stuck worker")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_the_sidecar_even_while_a_worker_is_stuck(fixture_dir, sidecar_on, monkeypatch, tmp_path, sig):
    doc, fifo = _stalled_sidecar(fixture_dir, monkeypatch, tmp_path)
    expected = run_cli(*READ, cwd=fixture_dir, env={**os.environ, "JCLI_SIDECAR": "off"}).stdout
    with subprocess.Popen([JCLI, *READ], cwd=fixture_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as client:
        try:
            assert _first_line(fifo).startswith("stalled request:notebook.read")
            os.kill(doc["pid"], sig)
            _gone(doc["pid"])
            out, err = client.communicate(timeout=BOUND)
        finally:
            if client.poll() is None:
                client.kill()
    assert client.returncode == 0 and out == expected, err  # the client fell back in-process
    paths = SidecarPaths(os.path.realpath(fixture_dir))
    with open(paths.log, encoding="utf-8") as fh:
        log = fh.read()
    assert "still running" in log and "exiting without them" in log
    if os.path.exists(paths.pid):  # only a sidecar the client started afterwards may own it
        with open(paths.pid, encoding="utf-8") as fh:
            assert json.load(fh)["pid"] != doc["pid"]


@pytest.mark.slow
def test_a_request_past_its_deadline_is_a_timeout_and_the_sidecar_retires(fixture_dir, sidecar_on, monkeypatch, tmp_path):
    doc, fifo = _stalled_sidecar(fixture_dir, monkeypatch, tmp_path, JCLI_SIDECAR_REQUEST_SECONDS="1")
    with subprocess.Popen([JCLI, *READ], cwd=fixture_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as client:
        try:
            _first_line(fifo)
            _out, err = client.communicate(timeout=BOUND)
        finally:
            if client.poll() is None:
                client.kill()
    error = json.loads(err)
    assert client.returncode == 1 and error["code"] == "TIMEOUT", error
    assert "JCLI_SIDECAR_REQUEST_SECONDS" in error["message"] and error["seconds"] == 1
    _gone(doc["pid"])  # retired: the stuck worker pins nothing any more
    again = run_cli(*READ, cwd=fixture_dir)
    assert again.returncode == 0, again.stderr


def test_a_bad_request_deadline_setting_means_the_default(fixture_dir, sidecar_on, monkeypatch):
    monkeypatch.setenv("JCLI_SIDECAR_REQUEST_SECONDS", "inf")
    assert run_cli("-j", "sidecar", "start", cwd=fixture_dir).returncode == 0
    assert run_cli(*READ, cwd=fixture_dir).returncode == 0
    with open(SidecarPaths(os.path.realpath(fixture_dir)).log, encoding="utf-8") as fh:
        assert "ignoring JCLI_SIDECAR_REQUEST_SECONDS" in fh.read()


def _send(proc, message) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def test_the_mcp_server_exits_when_its_client_goes_away_mid_call(fixture_dir, sidecar_on, monkeypatch, tmp_path):
    doc, fifo = _stalled_sidecar(fixture_dir, monkeypatch, tmp_path)
    monkeypatch.setenv("JCLI_MCP_DRAIN_SECONDS", "1")  # the stuck call is answered TIMEOUT after 1 s, then it exits
    server = subprocess.Popen(
        [JCLI, "mcp", "serve", "--root", str(fixture_dir)], cwd=fixture_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    with server:
        _mcp_call_then_leave(server, fifo, doc)


def _mcp_call_then_leave(server, fifo, doc) -> None:
    try:
        _send(
            server,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
            },
        )
        assert json.loads(server.stdout.readline())["id"] == 1
        _send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        arguments = {"file_path": "kernel_v4.5.ipynb", "cell_index": 2, "output_index": 0}
        _send(
            server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_notebook_output", "arguments": arguments}}
        )
        _first_line(fifo)  # the call is in flight, stuck inside the sidecar
        server.stdin.close()  # the client goes away
        try:
            assert server.wait(BOUND) == 0
        except subprocess.TimeoutExpired:
            pytest.fail("j-cli mcp serve kept running after its client closed stdin")
    finally:
        if server.poll() is None:
            server.kill()
        os.kill(doc["pid"], signal.SIGKILL)
