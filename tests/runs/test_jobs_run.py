"""Background jobs end to end: ``exec --background`` held by a real sidecar, on real kernels.

Timing is driven from the kernel side, never by sleeps: a cell says it got
somewhere by closing a FIFO the test reads (``ready``), and waits until the
test opens and closes another (``go``). The shell that started a job is
killed, the sidecar is killed with SIGKILL, the kernel is restarted, for real.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from helpers import JCLI, run_cli

from jcli_sidecar.base.process_record import wait_for_exit


def png() -> bytes:
    """A real 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


class Barrier:
    """A point in a cell: the cell closes ``ready`` (the test sees it got there), then waits on ``go``."""

    def __init__(self, folder: Path, name: str) -> None:
        self.ready = folder / f"{name}-ready"
        self.go = folder / f"{name}-go"
        os.mkfifo(self.ready)
        os.mkfifo(self.go)

    def code(self) -> str:
        return f"open({str(self.ready)!r}, 'w').close()\nopen({str(self.go)!r}).read()\n"

    def reached(self) -> None:
        with open(self.ready):
            pass

    def release(self) -> None:
        with open(self.go, "w"):
            pass


@pytest.fixture
def ws(tmp_path, use_jupyter, sidecar_on):
    work = tmp_path / "ws"
    work.mkdir()
    return work


@pytest.fixture(scope="module")
def other_session(jupyter):
    env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": jupyter["url"], "JCLI_JUPYTER_SERVER_TOKEN": jupyter["token"]}
    name = f"other-{os.urandom(3).hex()}"
    assert run_cli("session", "create", "-n", name, env=env).returncode == 0
    yield name
    run_cli("session", "kill", name, env=env)


def start(ws: Path, *args: str, env=None) -> dict:
    started = run_cli("-j", "exec", *args, "--background", cwd=ws, env=env)
    assert started.returncode == 0, started.stderr
    doc = started.json()
    assert doc["status"] == "running"
    return doc


def jcli(ws: Path, *args: str):
    return run_cli("-j", *args, cwd=ws)


def status(ws: Path, job_id: str) -> dict:
    result = jcli(ws, "job", "status", job_id)
    assert result.returncode == 0, result.stderr
    return result.json()


def wait(ws: Path, *args: str) -> dict:
    result = jcli(ws, "job", "wait", *args)
    assert result.returncode == 0, result.stderr
    return result.json()


def sidecar_pid(ws: Path) -> int:
    doc = jcli(ws, "sidecar", "status").json()
    assert doc["running"], doc
    return doc["pid"]


def test_a_background_inline_run_outlives_the_shell_that_started_it_and_keeps_its_run(ws, kernel_session, tmp_path):
    barrier = Barrier(tmp_path, "loop")
    script = ws / "loop.py"
    script.write_text(
        "from IPython.display import Image, display\n"
        "for i in range(5):\n    print('line', i, flush=True)\n"
        f"display(Image(data={png()!r}))\n" + barrier.code() + "for i in range(5, 10):\n    print('line', i, flush=True)\n"
    )
    shell = subprocess.Popen(
        ["sh", "-c", f'"{JCLI}" -j exec {kernel_session} -f loop.py --background; exec cat'],
        cwd=ws,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    doc = json.loads(shell.stdout.readline())
    assert doc["kind"] == "inline" and doc["session"] == kernel_session and doc["cells"] == 1
    barrier.reached()
    os.killpg(shell.pid, signal.SIGKILL)  # the agent's shell call is gone
    shell.wait()
    shell.stdin.close()
    shell.stdout.close()
    assert status(ws, doc["job_id"])["state"] == "running"
    barrier.release()
    answer = wait(ws, doc["job_id"][:20])  # a unique prefix names the job
    job = answer["jobs"][0]
    assert job["state"] == "ok" and answer["timed_out"] is False and job["executed"] is True
    assert [f"line {i}" for i in range(10)] == [line for line in job["result"]["text"].splitlines() if line.startswith("line")]
    run_dir = Path(job["result"]["run"]["manifest"]).parent
    assert any(item["type"] == "image" and Path(item["path"]).read_bytes() == png() for item in job["result"]["outputs"])
    assert run_dir.parent == ws / ".j-cli" / "outputs"
    text = jcli(ws, "job", "output", doc["job_id"]).json()
    assert text["text"].startswith("line 0\n") and "line 9" in text["text"]


def test_a_background_notebook_run_writes_each_cell_back_as_it_ends(ws, kernel_session, tmp_path):
    first, second = Barrier(tmp_path, "c1"), Barrier(tmp_path, "c2")
    (ws / "three.py").write_text("# %%\nprint('c0')\n# %%\n" + first.code() + "print('c1')\n# %%\n" + second.code() + "print('c2')\n")
    doc = start(ws, kernel_session, "-f", "three.py", env={**os.environ, "JCLI_WRITEBACK_PACE": "0"})
    assert doc["kind"] == "notebook" and doc["cells"] == 3 and doc["file"] == str(ws / "three.py")

    def cell_text(index: int) -> str:
        cell = json.loads((ws / "three.ipynb").read_text())["cells"][index]
        assert "jcli" not in cell.get("metadata", {})  # no running mark
        return "".join("".join(o.get("text", "")) for o in cell["outputs"])

    first.reached()
    assert cell_text(0) == "c0\n"
    now = status(ws, doc["job_id"])
    assert (now["state"], now["cells_done"], now["running_cell"], now["written_back"]) == ("running", 1, 1, [0])
    first.release()
    second.reached()
    assert cell_text(1) == "c1\n"
    assert status(ws, doc["job_id"])["cells_done"] == 2
    second.release()
    job = wait(ws, doc["job_id"])["jobs"][0]
    assert job["state"] == "ok" and job["cells_done"] == 3 and job["result"]["cells_run"] == 3
    assert cell_text(2) == "c2\n"
    assert jcli(ws, "job", "output", doc["job_id"]).json()["text"] == "c0\nc1\nc2\n"


def test_wait_times_out_fast_returns_the_first_of_two_and_all_returns_early_on_a_failure(ws, kernel_session, other_session, tmp_path):
    barrier = Barrier(tmp_path, "slow")
    slow = start(ws, kernel_session, "-c", "print('slow')\n" + barrier.code())
    barrier.reached()
    snap = wait(ws, slow["job_id"], "--timeout", "1")
    assert snap["timed_out"] is True and snap["jobs"][0]["state"] == "running" and snap["pending"] == [slow["job_id"]]
    fast = start(ws, other_session, "-c", "1 + 1")
    first = wait(ws, slow["job_id"], fast["job_id"])
    assert first["ended"] == [fast["job_id"]] and first["pending"] == [slow["job_id"]]
    assert first["jobs"][1]["result"]["text"].strip() == "2"
    failing = start(ws, other_session, "-c", "raise ValueError('boom')")
    both = wait(ws, "--all", slow["job_id"], failing["job_id"])
    assert both["failed"] == failing["job_id"] and both["pending"] == [slow["job_id"]]
    assert both["jobs"][1]["state"] == "error" and both["jobs"][1]["result"]["error"]["ename"] == "ValueError"
    barrier.release()
    assert wait(ws, slow["job_id"])["jobs"][0]["state"] == "ok"


def test_cancel_interrupts_the_kernel_keeps_its_state_and_ends_cancelled(ws, kernel_session, tmp_path):
    ready = tmp_path / "sleeping"
    os.mkfifo(ready)
    doc = start(ws, kernel_session, "-c", f"kept = 42\nopen({str(ready)!r}, 'w').close()\nimport time\ntime.sleep(60)")
    with open(ready):
        pass
    cancelled = jcli(ws, "job", "cancel", doc["job_id"])
    assert cancelled.returncode == 0, cancelled.stderr
    answer = cancelled.json()
    assert answer["cancelled"] is True and answer["state"] == "cancelled" and answer["error"]["code"] == "INTERRUPTED"
    assert "KeyboardInterrupt" in json.dumps(answer["result"])
    kept = run_cli("-j", "exec", kernel_session, "-c", "kept", cwd=ws)
    assert kept.returncode == 0 and kept.json()["text"].strip() == "42"
    again = jcli(ws, "job", "cancel", doc["job_id"]).json()
    assert again["cancelled"] is False and "already ended" in again["note"]


def test_a_killed_sidecar_leaves_a_lost_job_a_consistent_notebook_and_a_new_sidecar_lists_it(ws, kernel_session, tmp_path):
    barrier = Barrier(tmp_path, "hold")
    (ws / "kill.py").write_text("# %%\nprint('kept')\n# %%\n" + barrier.code() + "print('never saved')\n")
    doc = start(ws, kernel_session, "-f", "kill.py", env={**os.environ, "JCLI_WRITEBACK_PACE": "0"})
    barrier.reached()
    pid = sidecar_pid(ws)
    os.kill(pid, signal.SIGKILL)
    import psutil

    assert wait_for_exit(psutil.Process(pid), 10) if psutil.pid_exists(pid) else True
    lost = status(ws, doc["job_id"])
    assert lost["state"] == "lost" and lost["kernel_may_be_running"] is True
    assert lost["cells_done"] == 1 and lost["written_back"] == [0] and isinstance(lost["lost"]["last_update_ns"], int)
    cells = json.loads((ws / "kill.ipynb").read_text())["cells"]
    assert "".join(cells[0]["outputs"][0]["text"]) == "kept\n" and cells[1]["outputs"] == []
    assert all("jcli" not in cell.get("metadata", {}) for cell in cells)
    assert jcli(ws, "sidecar", "start").returncode == 0
    listed = jcli(ws, "job", "list").json()["jobs"]
    assert [(j["job_id"], j["state"]) for j in listed] == [(doc["job_id"], "lost")]
    barrier.release()  # the kernel was left running the cell: let it finish
    assert run_cli("-j", "exec", kernel_session, "-c", "'free'", cwd=ws).json()["text"].strip() == "'free'"


def test_a_kernel_busy_with_a_job_refuses_other_runs_unless_queued(ws, kernel_session, tmp_path):
    barrier = Barrier(tmp_path, "busy")
    held = start(ws, kernel_session, "-c", barrier.code())
    barrier.reached()
    foreground = run_cli("-j", "exec", kernel_session, "-c", "1", cwd=ws)
    assert foreground.returncode == 1
    refused = json.loads(foreground.stderr)
    assert refused["code"] == "KERNEL_BUSY" and refused["job_id"] == held["job_id"] and refused["executed"] is False
    second = run_cli("-j", "exec", kernel_session, "-c", "1", "--background", cwd=ws)
    assert json.loads(second.stderr)["code"] == "KERNEL_BUSY"
    queued = start(ws, kernel_session, "-c", "print('after')", "--queue")
    assert queued["queued_behind"] == held["job_id"]
    assert status(ws, queued["job_id"])["state"] == "running"
    barrier.release()
    both = wait(ws, "--all", held["job_id"], queued["job_id"])
    assert [j["state"] for j in both["jobs"]] == ["ok", "ok"]
    assert both["jobs"][1]["result"]["text"] == "after\n"
    assert both["jobs"][1]["started_ns"] >= both["jobs"][0]["finished_ns"] - 10**9  # it ran after


def test_a_kernel_that_dies_during_a_job_ends_it_kernel_died_with_what_was_captured(ws, tmp_path):
    name = f"dies-{os.urandom(3).hex()}"
    assert run_cli("session", "create", "-n", name, cwd=ws).returncode == 0
    try:
        barrier = Barrier(tmp_path, "dies")
        pid_file = tmp_path / "kernel.pid"
        code = f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\nprint('before', flush=True)\n" + barrier.code()
        doc = start(ws, name, "-c", code)
        barrier.reached()
        # the kernel's send of 'before' may still be in flight when it reaches the barrier: kill it only once j-cli holds the text
        for _ in range(200):
            if "before" in json.loads(jcli(ws, "job", "output", doc["job_id"]).stdout)["text"]:
                break
        else:
            pytest.fail("the job's output never showed 'before'")
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        job = wait(ws, doc["job_id"])["jobs"][0]
        assert job["state"] == "kernel_died" and job["executed"] is True
        assert job["error"]["code"] == "KERNEL_DIED" and "before" in job["result"]["text"]
    finally:
        run_cli("session", "kill", name, cwd=ws)
