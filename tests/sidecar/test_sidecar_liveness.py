"""A sidecar that runs but does not answer (stopped with SIGSTOP, or stuck) costs one short hello, once.

The sidecar here is real and really stopped (``kill -STOP``); every test
continues and stops it in its teardown. Nothing is timed: a call that
fell back is seen in its result, and a call that did not connect is seen
in the listening socket's accept queue (``ss``), which a stopped sidecar
never empties: each connection made to it stays there, counted.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import psutil
import pytest
from helpers import run_cli

from jcli_sidecar.base.process_record import ProcessRecord, wait_for_exit
from jcli_sidecar.base.runtime import SidecarPaths

READ = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0"]
CATALOG = ["-j", "notebook", "outputs", "kernel_v4.5.ipynb", "--cell", "2"]


def paths_for(workspace) -> SidecarPaths:
    return SidecarPaths(os.path.realpath(workspace))


def queued(workspace) -> int:
    """Connections waiting in the sidecar's accept queue (a stopped sidecar accepts none)."""
    if shutil.which("ss") is None:
        pytest.fail("ss (iproute2) is needed to count the connections a stopped sidecar was sent")
    line = subprocess.run(["ss", "-xlH", "src", paths_for(workspace).socket], capture_output=True, text=True, check=True).stdout.split()
    assert line and line[1] == "LISTEN", line
    return int(line[2])


def in_process(args, workspace):
    return run_cli(*args, cwd=workspace, env={**os.environ, "JCLI_SIDECAR": "off"})


def patient() -> dict:
    """The environment with a long hello deadline: for calls to a sidecar that runs, so a loaded machine cannot make it miss one."""
    return {**os.environ, "JCLI_SIDECAR_HELLO_SECONDS": "30"}


def marker(workspace) -> dict | None:
    try:
        with open(paths_for(workspace).unresponsive, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None


@pytest.fixture
def stopped(fixture_dir, sidecar_on):
    """A real sidecar serving ``fixture_dir``, stopped with SIGSTOP; continued and stopped after the test."""
    started = run_cli("-j", "sidecar", "start", cwd=fixture_dir)
    assert started.returncode == 0, started.stderr
    proc = psutil.Process(started.json()["pid"])
    proc.send_signal(signal.SIGSTOP)
    try:
        yield proc
    finally:
        if proc.is_running():
            proc.send_signal(signal.SIGCONT)
        run_cli("sidecar", "stop", cwd=fixture_dir)
        wait_for_exit(proc, 10)


def test_a_stopped_sidecar_gets_one_connection_and_every_read_falls_back_in_process(fixture_dir, stopped):
    expected = in_process(READ, fixture_dir)
    first = run_cli(*READ, cwd=fixture_dir)
    assert first.returncode == 0, first.stderr
    assert first.stdout == expected.stdout
    record = marker(fixture_dir)
    assert record is not None and record["pid"] == stopped.pid and record["state"] == "stopped", record
    assert record["create_time"] == ProcessRecord.of_pid(stopped.pid).create_time
    assert queued(fixture_dir) == 1  # the first read's connection: it missed its hello
    for args in (READ, CATALOG, READ):
        again = run_cli(*args, cwd=fixture_dir)
        assert again.returncode == 0, again.stderr
        assert again.stdout == in_process(args, fixture_dir).stdout
    assert queued(fixture_dir) == 1, "a later read connected to the stopped sidecar (or started a sidecar beside it)"
    assert stopped.status() == psutil.STATUS_STOPPED


def test_a_continued_sidecar_is_asked_again_at_once_and_its_record_dropped(fixture_dir, stopped):
    assert run_cli(*READ, cwd=fixture_dir).returncode == 0
    assert marker(fixture_dir) is not None
    stopped.send_signal(signal.SIGCONT)
    again = run_cli(*READ, cwd=fixture_dir, env=patient())
    assert again.returncode == 0, again.stderr
    assert marker(fixture_dir) is None  # only an answered hello drops it
    status = run_cli("-j", "sidecar", "status", cwd=fixture_dir).json()
    assert status["running"] and status["pid"] == stopped.pid


def test_status_reports_a_stopped_sidecar_and_stop_ends_it_cleanly(fixture_dir, stopped):
    status = run_cli("-j", "sidecar", "status", cwd=fixture_dir)
    assert status.returncode == 0, status.stderr
    doc = status.json()
    assert doc["running"] is False and doc["unresponsive"]["pid"] == stopped.pid and doc["unresponsive"]["stopped"] is True, doc
    human = run_cli("sidecar", "status", cwd=fixture_dir)
    assert f"sidecar pid {stopped.pid} is stopped" in human.stdout.decode() and "sidecar stop" in human.stdout.decode()
    assert queued(fixture_dir) == 1  # the first status asked; the second did not
    start = run_cli("-j", "sidecar", "start", cwd=fixture_dir)
    assert start.returncode == 1 and start.error()["code"] == "SIDECAR_UNAVAILABLE" and "stopped" in start.error()["message"]
    stop = run_cli("-j", "sidecar", "stop", cwd=fixture_dir)
    assert stop.returncode == 0, stop.stderr
    assert stop.json()["stopped"] is True and stop.json()["was_stopped"] is True, stop.json()
    assert wait_for_exit(stopped, 10)
    paths = paths_for(fixture_dir)
    # SIGTERM then SIGCONT: it acted on the TERM and removed its own files on the way out
    assert not os.path.exists(paths.socket) and not os.path.exists(paths.pid) and marker(fixture_dir) is None
    fresh = run_cli(*READ, cwd=fixture_dir, env=patient())
    assert fresh.returncode == 0, fresh.stderr


def test_a_sidecar_stopped_again_after_answering_is_recorded_again(fixture_dir, stopped):
    assert run_cli(*READ, cwd=fixture_dir).returncode == 0
    since = marker(fixture_dir)["since"]
    stopped.send_signal(signal.SIGCONT)
    assert run_cli(*READ, cwd=fixture_dir, env=patient()).returncode == 0
    assert marker(fixture_dir) is None
    stopped.send_signal(signal.SIGSTOP)
    assert run_cli(*CATALOG, cwd=fixture_dir).returncode == 0
    record = marker(fixture_dir)
    assert record is not None and record["state"] == "stopped" and record["since"] >= since
    assert queued(fixture_dir) == 1


# -- a listener that accepts and never answers, while it runs -----------------------------

SILENT = r"""
import socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[1])
server.listen(64)
print("listening", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def silent_sidecar(fixture_dir, sidecar_on):
    """A process of ours on the workspace's socket, recorded in its pid file, that never accepts: a sidecar stuck while running."""
    paths = paths_for(fixture_dir)
    os.makedirs(paths.dir, mode=0o700, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", SILENT, paths.socket], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"listening\n"
        record = {**ProcessRecord.of_pid(proc.pid).to_dict(), "workspace": paths.workspace, "socket": paths.socket}
        with open(paths.pid, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        yield proc
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def test_a_sidecar_stuck_while_running_is_asked_again_only_after_its_retry_time(fixture_dir, silent_sidecar):
    first = run_cli(*READ, cwd=fixture_dir)
    assert first.returncode == 0, first.stderr
    record = marker(fixture_dir)
    assert record["pid"] == silent_sidecar.pid and record["state"] == "running", record
    assert queued(fixture_dir) == 1
    assert run_cli(*READ, cwd=fixture_dir).returncode == 0
    assert queued(fixture_dir) == 1, "asked again within its retry time"
    from jcli_sidecar.sidecar.liveness import RETRY_SECONDS

    record["checked"] -= RETRY_SECONDS + 1  # its retry time has passed (the record says when it was last asked)
    with open(paths_for(fixture_dir).unresponsive, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    assert run_cli(*READ, cwd=fixture_dir).returncode == 0
    assert queued(fixture_dir) == 2  # one call asked it again, and found it still stuck
    assert run_cli(*READ, cwd=fixture_dir).returncode == 0
    assert queued(fixture_dir) == 2


def test_a_record_about_another_process_is_ignored_and_dropped(fixture_dir, sidecar_on):
    started = run_cli("-j", "sidecar", "start", cwd=fixture_dir).json()
    paths = paths_for(fixture_dir)
    stranger = {**ProcessRecord.current().to_dict(), "state": "stopped", "since": 0, "checked": 0}
    with open(paths.unresponsive, "w", encoding="utf-8") as fh:
        json.dump(stranger, fh)  # names this test process, not the pid file's sidecar
    assert run_cli(*READ, cwd=fixture_dir, env=patient()).returncode == 0
    assert marker(fixture_dir) is None
    # sidecar start's own status call, the read (through it), and this status call
    assert run_cli("-j", "sidecar", "status", cwd=fixture_dir).json()["requests_served"] == 3
    assert started["running"]


def test_the_hello_deadline_is_a_setting(fixture_dir, stopped, monkeypatch):
    monkeypatch.setenv("JCLI_SIDECAR_HELLO_SECONDS", "0.05")
    result = run_cli(*READ, cwd=fixture_dir)
    assert result.returncode == 0, result.stderr
    assert marker(fixture_dir)["pid"] == stopped.pid


def test_a_direct_client_call_says_why_it_did_not_connect(fixture_dir, stopped):
    from jcli_sidecar.base.errors import SidecarUnavailable
    from jcli_sidecar.sidecar.client import call

    paths = paths_for(fixture_dir)
    with pytest.raises(SidecarUnavailable) as missed:
        call(paths, "ping", {})
    assert "did not answer its hello" in missed.value.message and missed.value.details["unresponsive"] is True
    with pytest.raises(SidecarUnavailable) as skipped:
        call(paths, "ping", {})
    assert "is stopped" in skipped.value.message and "sidecar stop" in skipped.value.message
    assert queued(fixture_dir) == 1


# -- exec ------------------------------------------------------------------------------------


def test_an_exec_with_a_stopped_sidecar_runs_in_process_and_leaves_it_alone(tmp_path, use_jupyter, kernel_session, sidecar_on):
    ws = tmp_path / "ws"
    ws.mkdir()
    started = run_cli("-j", "sidecar", "start", cwd=ws)
    assert started.returncode == 0, started.stderr
    proc = psutil.Process(started.json()["pid"])
    proc.send_signal(signal.SIGSTOP)
    try:
        for n in (1, 2):
            result = run_cli("-j", "exec", kernel_session, "-c", f"print('ran {n}')", cwd=ws)
            assert result.returncode == 0, result.stderr
            assert result.json()["text"] == f"ran {n}\n"
        assert marker(ws)["pid"] == proc.pid
        assert queued(ws) == 1
    finally:
        proc.send_signal(signal.SIGCONT)
        run_cli("sidecar", "stop", cwd=ws)
        wait_for_exit(proc, 10)
