"""``j-cli exec`` through the workspace sidecar, which holds the kernel connection.

The same runs through the sidecar and in-process give the same documents;
the sidecar reuses its connection; two clients on one kernel each get
their own outputs; a sidecar that fails before the code was sent is a
fallback, one that fails after it is a reported failure (the code never
runs twice). Signals and timeouts are covered in both modes by
tests/kernel/test_hostile_exec.py, test_exec_options.py and test_kernel.py (the
``exec_path`` fixture). Real kernels, real sidecars; waits are on events.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from helpers import JCLI, run_cli, start_old_sidecar

from jcli_sidecar.base.runtime import SidecarPaths

#: Code that prints, then waits until the test writes to the FIFO ``{fifo}``.
WAITS = 'print("{tag}-start", flush=True)\nopen({fifo!r}).read()\nprint("{tag}-end", flush=True)'


@pytest.fixture
def ws(tmp_path, use_jupyter, sidecar_on):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def start_sidecar(ws: Path) -> None:
    started = run_cli("-j", "sidecar", "start", cwd=ws)
    assert started.returncode == 0, started.stderr


def kernels(ws: Path) -> dict:
    status = run_cli("-j", "sidecar", "status", cwd=ws).json()
    assert status["running"], status
    return status["kernels"]


def in_process(*args: str, cwd: Path):
    return run_cli(*args, cwd=cwd, env={**os.environ, "JCLI_SIDECAR": "off"})


def comparable(doc: dict) -> dict:
    """A result document without what differs from run to run (counts, run ids, their paths)."""
    text = json.dumps(doc)
    text = re.sub(r'"execution_count": \d+', '"execution_count": 0', text)
    text = re.sub(r"\d{8}T\d{6}[^/\"]*", "RUN", text)  # run ids, in ids and paths
    text = re.sub(r"In\[\d+\]", "In[N]", text)  # a traceback's cell number
    return json.loads(text)


CASES = {
    "expression": "1 + 1",
    "streams": "import sys\nprint('out', flush=True)\nprint('err', file=sys.stderr, flush=True)\nprint('out again')",  # flushed: the kernel's own order
    "error": "print('before')\nraise ValueError('boom')",
    "rich": "from IPython.display import HTML, display\ndisplay(HTML('<b>rich</b>'))\n'done'",
    "long": "print('x' * 9000)",
    "update": (
        "from IPython.display import display\nh = display('first', display_id=True)\nh.update('second')\n"
        "from IPython.display import clear_output\nprint('gone')\nclear_output(wait=True)\nprint('kept')"
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_run_gives_the_same_document_through_the_sidecar_and_in_process(ws, kernel_session, case):
    start_sidecar(ws)
    code = CASES[case]
    through = run_cli("-j", "exec", kernel_session, "-c", code, cwd=ws)
    direct = in_process("-j", "exec", kernel_session, "-c", code, cwd=ws)
    assert through.returncode == direct.returncode, (through.stderr, direct.stderr)
    assert through.stderr == direct.stderr == b""
    assert comparable(through.json()) == comparable(direct.json())
    human_through = run_cli("exec", kernel_session, "-c", code, cwd=ws)
    human_direct = in_process("exec", kernel_session, "-c", code, cwd=ws)
    assert human_through.returncode == human_direct.returncode
    scrub = re.compile(rb"\d{8}T\d{6}[^/\]\n]*|In\[\d+\]")
    assert scrub.sub(b"", human_through.stdout) == scrub.sub(b"", human_direct.stdout)  # a stored output's line names its run
    assert scrub.sub(b"", human_through.stderr) == scrub.sub(b"", human_direct.stderr)
    assert kernels(ws)["opened"] == 1  # every run through the sidecar used its one connection


def test_the_sidecar_holds_the_connection_between_runs(ws, kernel_session):
    start_sidecar(ws)
    for n in range(3):
        result = run_cli("-j", "exec", kernel_session, "-c", f"{n} * 2", cwd=ws)
        assert result.returncode == 0 and result.json()["text"] == f"{n * 2}\n"
    held = kernels(ws)
    assert held == {"held": 1, "opened": 1, "reused": 2, "running": 0}


def test_a_timeout_through_the_sidecar_interrupts_and_drops_the_connection(ws, kernel_session):
    start_sidecar(ws)
    result = run_cli("-j", "exec", kernel_session, "--timeout", "2", "-c", "import time\nprint('p', flush=True)\ntime.sleep(3600)", cwd=ws)
    err = result.error()
    assert result.returncode == 1 and err["code"] == "TIMEOUT" and err["executed"] is True
    assert err["result"]["text"].startswith("p\n") and err["result"]["partial"] is True
    assert kernels(ws)["held"] == 0  # a run that did not end cleanly leaves no connection behind
    again = run_cli("-j", "exec", kernel_session, "-c", "'free'", cwd=ws)
    assert again.json()["text"] == "'free'\n"


def test_two_clients_on_one_kernel_each_get_their_own_outputs(ws, kernel_session, tmp_path):
    start_sidecar(ws)
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    first = subprocess.Popen(
        [JCLI, "exec", kernel_session, "-c", WAITS.format(tag="A", fifo=str(fifo))], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert first.stdout.readline() == b"A-start\n"  # shown live: A runs, holding the sidecar's connection
    second = subprocess.Popen(
        [JCLI, "-j", "exec", kernel_session, "-c", "print('B')"], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    for _ in range(600):  # each check is a real request; B's run is registered within a few
        if kernels(ws)["running"] == 2 or second.poll() is not None:
            break
    fifo.write_text("go")
    out_a, err_a = first.communicate(timeout=120)
    out_b, err_b = second.communicate(timeout=120)
    assert first.returncode == 0 and second.returncode == 0, (err_a, err_b)
    assert out_a == b"A-end\n"  # after the live A-start: nothing of B's
    assert json.loads(out_b)["text"] == "B\n"
    assert kernels(ws)["opened"] == 2  # B could not share A's connection: it got its own


def test_a_sidecar_killed_mid_run_is_reported_and_the_code_not_run_again(ws, kernel_session, tmp_path):
    start_sidecar(ws)
    fifo, counter = tmp_path / "release", tmp_path / "runs"
    os.mkfifo(fifo)
    code = f"open({str(counter)!r}, 'a').write('ran\\n')\n" + WAITS.format(tag="A", fifo=str(fifo))
    run = subprocess.Popen([JCLI, "exec", kernel_session, "-c", code], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert run.stdout.readline() == b"A-start\n"
    pid = run_cli("-j", "sidecar", "status", cwd=ws).json()["pid"]
    os.kill(pid, signal.SIGKILL)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1 and out == b""
    assert b"j-cli: error [SIDECAR_ERROR]: the sidecar stopped answering after the code was sent" in err
    assert b"Traceback (most recent call last):\n  File " not in err
    fifo.write_text("go")  # the kernel finishes the run the sidecar left
    after = run_cli("-j", "exec", kernel_session, "-c", "'next'", cwd=ws)  # in-process, and starts a new sidecar
    assert after.json()["text"] == "'next'\n"
    assert counter.read_text() == "ran\n"  # once: the failure was reported, not retried


def test_a_sidecar_killed_mid_run_in_json_mode_says_executed_with_what_was_printed(ws, kernel_session, tmp_path):
    start_sidecar(ws)
    fifo, stall = tmp_path / "release", tmp_path / "stall"
    os.mkfifo(fifo)
    os.mkfifo(stall)
    run = subprocess.Popen(
        [JCLI, "-j", "exec", kernel_session, "-c", WAITS.format(tag="A", fifo=str(fifo))],
        cwd=ws,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "JCLI_EXEC_TEST_STALL_FIFO": str(stall), "JCLI_EXEC_TEST_STALL_AT": "output"},
    )
    with open(stall) as stalled:  # the client stalls at its first output: A-start arrived
        assert stalled.readline() == "stalled output\n"
    os.kill(run_cli("-j", "sidecar", "status", cwd=ws).json()["pid"], signal.SIGKILL)
    releaser = threading.Thread(target=lambda: stall.write_text("go"), daemon=True)
    releaser.start()  # the client reads the FIFO until this writer closes it, then goes on
    out, err = run.communicate(timeout=120)
    releaser.join(30)
    doc = json.loads(err)
    assert run.returncode == 1 and out == b""
    assert doc["code"] == "SIDECAR_ERROR" and doc["executed"] is True
    assert doc["result"]["text"] == "A-start\n" and doc["result"]["partial"] is True
    fifo.write_text("go")


def test_another_version_of_the_sidecar_is_never_sent_the_code(ws, kernel_session, tmp_path):
    """It is asked to exit, the run happens in-process (once), and the next exec starts a current sidecar."""
    old = start_old_sidecar(os.path.realpath(ws))
    try:
        counter = tmp_path / "runs"
        result = run_cli("-j", "exec", kernel_session, "-c", f"open({str(counter)!r}, 'a').write('ran\\n')\n'ok'", cwd=ws)
        assert result.returncode == 0 and result.json()["text"] == "'ok'\n"
        assert counter.read_text() == "ran\n"
        assert old.wait(30) == 0  # the old one exited when asked, without running anything
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


def test_with_the_sidecar_off_exec_runs_in_process_and_starts_none(tmp_path, use_jupyter, kernel_session):
    result = run_cli("-j", "exec", kernel_session, "-c", "21 * 2", cwd=tmp_path)  # JCLI_SIDECAR=off (conftest)
    assert result.returncode == 0 and result.json()["text"] == "42\n"
    status = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()
    assert status["running"] is False


def test_without_a_running_sidecar_exec_runs_in_process_and_starts_one_for_next_time(ws, kernel_session):
    first = run_cli("-j", "exec", kernel_session, "-c", "'first'", cwd=ws)
    assert first.json()["text"] == "'first'\n"
    start_sidecar(ws)  # waits for the one the exec started (single flight), or starts it
    second = run_cli("-j", "exec", kernel_session, "-c", "'second'", cwd=ws)
    assert second.json()["text"] == "'second'\n"
    assert kernels(ws)["opened"] == 1


def test_the_sidecar_refuses_a_malformed_exec_request_with_a_coded_error(ws):
    import socket

    from jcli_sidecar import __version__
    from jcli_sidecar.base.framing import pack_frame, read_frame
    from jcli_sidecar.base.protocol import PROTOCOL_VERSION

    start_sidecar(ws)
    paths = SidecarPaths(os.path.realpath(ws))
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(30)
        sock.connect(paths.socket)
        hello = {"protocol": PROTOCOL_VERSION, "version": __version__, "workspace": paths.workspace}
        sock.sendall(pack_frame({"id": 0, "op": "hello", "args": hello}))
        assert read_frame(sock)["ok"] is True
        sock.sendall(pack_frame({"id": 1, "op": "kernel.exec", "args": {"run_id": "x", "code": 5}}))
        reply = read_frame(sock)
        assert reply["id"] == 1 and reply["ok"] is False and reply["error"]["code"] == "PROTOCOL_ERROR"
        sock.sendall(pack_frame({"id": 2, "op": "kernel.stop", "args": {"run_id": "none", "signal": 2}}))
        assert read_frame(sock) == {"id": 2, "ok": True, "result": {"stopped": False}}


def test_an_exec_through_the_sidecar_loads_neither_the_rest_client_nor_the_websocket_nor_the_run_store(ws, kernel_session):
    """The sidecar speaks to the server; the client only frames (its start-up is most of a warm exec's time)."""
    from test_kernel import modules_of_exec

    start_sidecar(ws)
    modules = modules_of_exec(kernel_session, ws)
    assert "jcli_sidecar.sidecar.exec_client" in modules  # it went through the sidecar
    assert not modules & {
        "jcli_sidecar.kernel.wire",
        "jcli_sidecar.kernel.jupyter_api",
        "websocket",
        "http.client",
        "jcli_sidecar.kernel.session_lookup",
        "urllib.parse",
        "ast",
        "click",
    }
    # short text keeps nothing on disk: neither the run store, the cleaner nor the notebook reader is loaded
    assert not modules & {
        "jcli_sidecar.runs.store",
        "jcli_sidecar.runs.retention",
        "jcli_sidecar.ipynb.notebook",
        "jcli_sidecar.read.representations",
    }
    assert kernels(ws)["opened"] == 1


def test_held_connections_are_drained_kept_and_dropped_when_idle_too_long_or_their_kernel_goes(use_jupyter, tmp_path):
    import select

    from jcli_sidecar.sidecar.held_kernels import HeldKernels

    name = f"held-{os.urandom(3).hex()}"
    created = run_cli("-j", "session", "create", "-n", name, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    kernel_id = created.json()["kernel_id"]
    held = HeldKernels(idle_seconds=3600)
    try:
        server = held.server(use_jupyter["url"], use_jupyter["token"])
        kernel = held.take(server, kernel_id)
        assert kernel.execute("1 + 1", timeout=60).status == "ok"
        held.give_back(kernel)
        other = run_cli("-j", "exec", name, "-c", "print('broadcast to every connection')", cwd=tmp_path)
        assert other.returncode == 0, other.stderr
        assert select.select([kernel.ws.fileno()], [], [], 60)[0]  # the other run's broadcasts reached the held one
        assert held.prune() == 0 and held.stats()["held"] == 1  # drained, and kept
        assert held.take(server, kernel_id) is kernel and held.stats()["reused"] == 1
        assert kernel.execute("2 + 2", timeout=60).outputs[0]["data"]["text/plain"] == "4"  # nothing stale was left in it
        held.give_back(kernel)
        idle = HeldKernels(idle_seconds=0)  # a second holder of the same kernel, before it goes
        try:
            idle.give_back(idle.take(idle.server(use_jupyter["url"], use_jupyter["token"]), kernel_id))
            assert idle.prune() == 1 and idle.stats()["held"] == 0  # idle past its time: closed
        finally:
            idle.close(signal.SIGTERM)
        assert run_cli("session", "kill", name, cwd=tmp_path).returncode == 0
        for _ in range(100):  # each round waits for the next message: the kernel's shutdown, then the server's goodbye
            assert select.select([kernel.ws.fileno()], [], [], 60)[0]
            if held.prune():
                break
        assert held.stats()["held"] == 0
    finally:
        held.close(signal.SIGTERM)
        run_cli("session", "kill", name, cwd=tmp_path)
