"""A catastrophic search never stops a sidecar answering: its pattern runs in a worker the sidecar ends at the bound.

The grep is held by the test stall hook just after its pattern was handed to
the worker (``grep:searching``), so the worker is backtracking while the
test asks the sidecar something else; every wait is on an event (a FIFO
line, a process exit), bounded so that a hang fails the test.
"""

from __future__ import annotations

import os
import subprocess
import threading

import psutil
from helpers import JCLI, run_cli
from nbformat.v4 import new_code_cell, new_output
from notebook_world import write_nb

BOUND = 60
EVIL = "a" * 34 + "!"


def _line(fifo: str) -> str:
    got: list[str] = []
    done = threading.Event()

    def reader():
        with open(fifo, encoding="utf-8") as fh:
            got.append(fh.readline())
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    assert done.wait(BOUND), "the search never reached its worker"
    return got[0]


def test_the_sidecar_answers_while_a_bad_search_runs_and_ends_it_at_the_bound(tmp_path, sidecar_on, monkeypatch):
    write_nb(tmp_path / "nb.ipynb", [new_code_cell(EVIL, outputs=[new_output("stream", name="stdout", text="fine\n")])])
    fifo = str(tmp_path / "stall.fifo")
    os.mkfifo(fifo)
    env = {"JCLI_SIDECAR_TEST_STALL_FIFO": fifo, "JCLI_SIDECAR_TEST_STALL_AT": "grep:searching", "JCLI_GREP_SEARCH_SECONDS": "1"}
    started = run_cli("-j", "sidecar", "start", cwd=tmp_path, env={**os.environ, **env})
    assert started.returncode == 0, started.stderr
    pid = started.json()["pid"]
    read = ("-j", "notebook", "output", "nb.ipynb", "--cell", "0", "--output", "0")
    with subprocess.Popen(
        [JCLI, "-j", "notebook", "grep", "(a+)+$", "nb.ipynb"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as bad:
        try:
            assert _line(fifo) == "stalled grep:searching\n"
            workers = [p for p in psutil.Process(pid).children() if any("linematch" in part for part in p.cmdline())]
            assert len(workers) == 1  # the worker has the pattern and backtracks now
            before = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()
            answered = run_cli(*read, cwd=tmp_path)  # another request, while the search runs
            assert answered.returncode == 0 and answered.json()["stream"]["data"] == "fine\n"
            after = run_cli("-j", "sidecar", "status", cwd=tmp_path).json()
            assert after["pid"] == pid and after["requests_served"] > before["requests_served"]  # the sidecar answered it
            assert after["requests_in_flight"] >= 1  # the grep, still in its worker
            assert bad.poll() is None and workers[0].is_running()
        finally:
            with open(fifo, "w", encoding="utf-8"):
                pass  # let the search go on to its bound
        out, err = bad.communicate(timeout=BOUND)
    assert bad.returncode == 1 and b'"code":"SEARCH_TOO_COSTLY"' in err and not out
    assert not workers[0].is_running() or workers[0].status() == psutil.STATUS_ZOMBIE
    status = run_cli("-j", "sidecar", "status", cwd=tmp_path)
    assert status.returncode == 0 and status.json()["pid"] == pid  # alive, not retired
    again = run_cli("-j", "notebook", "grep", "fine", "nb.ipynb", cwd=tmp_path)
    assert again.returncode == 0 and again.json()["hits"][0]["output"] == 0
