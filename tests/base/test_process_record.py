"""One answer to "is this still the process we recorded?", for every record j-cli keeps."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import run_cli

from jcli_sidecar.base.process_record import ALIVE, GONE, UNKNOWN, ProcessRecord


@pytest.fixture
def stranger():
    """A live process that is not ours (it names jupyter_server on its command line, as a real one would)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "jupyter_server"], stdin=subprocess.PIPE)
    yield proc
    proc.stdin.close()
    proc.wait(10)


def test_a_record_of_a_live_process_is_alive_and_round_trips():
    me = ProcessRecord.current()
    again = ProcessRecord.from_dict(json.loads(json.dumps(me.to_dict())))
    assert again.state() == ALIVE and again.process().pid == os.getpid()


def test_a_reused_pid_a_dead_pid_and_another_uid_are_gone(stranger):
    real = ProcessRecord.of_pid(stranger.pid).to_dict()
    assert ProcessRecord.from_dict(dict(real, create_time=real["create_time"] - 100)).state() == GONE
    assert ProcessRecord.from_dict(dict(real, uid=real["uid"] + 1)).state() == GONE
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert ProcessRecord.from_dict(dict(real, pid=int(done.stdout))).state() == GONE


def test_another_host_is_unknown_and_malformed_maps_are_no_record():
    assert ProcessRecord.from_dict(dict(ProcessRecord.current().to_dict(), host="elsewhere")).state() == UNKNOWN
    for bad in (
        None,
        [],
        {},
        {"pid": "1", "create_time": 1.0},
        {"pid": 1},
        {"pid": True, "create_time": 1.0},
        {"pid": 1, "create_time": "x"},
        {"pid": -5, "create_time": 1.0},
        {"pid": 1, "create_time": 1.0, "uid": "0"},
    ):
        assert ProcessRecord.from_dict(bad) is None, bad


def test_server_stop_never_signals_a_process_that_reused_the_recorded_pid(tmp_path, isolated_runtime, stranger):
    from jcli.embedded import EmbeddedServer
    from jcli_sidecar.base.runtime import ensure_runtime_dir

    workspace = os.path.realpath(tmp_path)
    embedded = EmbeddedServer(workspace, ensure_runtime_dir(create=True))
    record = ProcessRecord.of_pid(stranger.pid).to_dict()
    state = {"url": "http://127.0.0.1:9", "token": "t", **record, "create_time": record["create_time"] - 100, "workspace": workspace}
    with open(embedded.state_path, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    os.chmod(embedded.state_path, 0o600)
    stopped = run_cli("-j", "server", "stop", cwd=tmp_path)
    assert stopped.returncode == 0 and stopped.json()["stopped"] is False
    assert stranger.poll() is None  # still running: it was never signalled
    assert not os.path.exists(embedded.state_path)  # the stale record is gone


def test_waiting_for_exit_counts_an_unreaped_zombie_as_ended(stranger):
    """A detached process is reaped by init, maybe seconds later: a wait must end when it exits, not when it is reaped."""
    import psutil

    from jcli_sidecar.base.process_record import wait_for_exit

    proc = psutil.Process(stranger.pid)
    assert not wait_for_exit(proc, 0.2)  # alive: the wait runs out
    stranger.stdin.close()  # it exits; nobody reaps it yet, so it stays a zombie
    assert wait_for_exit(proc, 30)
    assert proc.status() == psutil.STATUS_ZOMBIE
    stranger.wait(10)
    assert wait_for_exit(proc, 30)  # reaped and gone: at once


def test_sidecar_stop_returns_once_the_sidecar_has_exited(tmp_path, sidecar_on):
    """`sidecar stop` waits for the sidecar's exit, not for init to reap it."""
    import psutil

    from jcli_sidecar.base.process_record import wait_for_exit

    started = run_cli("-j", "sidecar", "start", cwd=tmp_path).json()
    sidecar = psutil.Process(started["pid"])
    stopped = run_cli("-j", "sidecar", "stop", cwd=tmp_path)
    assert stopped.returncode == 0 and stopped.json()["stopped"]
    assert wait_for_exit(sidecar, 0)  # already ended (a zombie at most) when stop returned
