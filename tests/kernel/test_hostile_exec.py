"""``j-cli exec`` under hostile conditions: nothing it ran is lost, nothing runs that cannot be saved.

- A run cut short (``TIMEOUT``, ``KERNEL_DIED``, ``INTERRUPTED``) returns
  what the code printed until then, and a notebook cell gets exactly those
  outputs (issue 14, item 5).
- Everything that can fail is checked before code goes to the kernel; once
  it went, every failure says ``executed: true`` and carries the captured
  result (item 6).
- SIGINT and SIGTERM interrupt the kernel, write back what finished, clear
  every marker and exit 130 or 143 with a coded error, no traceback (item 7).
- Output the server drops (its IOPub rate limit) is reported; the embedded
  server does not drop ours (item 14).

Signals land at a chosen step by waiting for an event: the live output in
human mode, or the exec stall hook (``JCLI_EXEC_TEST_STALL_*``), never a sleep.
The kernels are real (the shared Jupyter Server with ipykernel).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from helpers import JCLI, jupyter_server_process, run_cli
from test_readonly import DROP, nobody_python  # noqa: F401 - the fixture, shared

from jcli_sidecar.kernel.exec_result import TEXT_BUDGET

#: Code that prints, then blocks until interrupted.
BLOCKS = 'import time\nprint("progress", flush=True)\ntime.sleep(3600)'
#: For runs a signal or a killed kernel ends: a bound, so a j-cli that never reaches the step ends too.
BOUND = ["--timeout", "300"]
#: A traceback of j-cli itself (the kernel's own tracebacks are ANSI-coloured and never look like this).
PY_TRACEBACK = re.compile(rb"Traceback \(most recent call last\):\n  File ")
OLD = {"output_type": "stream", "name": "stdout", "text": "OLD\n"}


@pytest.fixture
def ws(tmp_path, use_jupyter, exec_path):
    work = tmp_path / "ws"
    work.mkdir()
    exec_path(work)  # in-process; a test marked transport runs through a sidecar too
    return work


def write_notebook(path: Path, sources: list[str], *, old: bool = True) -> None:
    """A notebook of code cells, each holding an output of an earlier run (``OLD``)."""
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "metadata": {},
            "source": source,
            "execution_count": 7 if old else None,
            "outputs": [dict(OLD)] if old else [],
        }
        for i, source in enumerate(sources)
    ]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def cells_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text_of(cell: dict) -> str:
    return "".join("".join(o["text"]) if o["output_type"] == "stream" else o.get("ename", "") for o in cell["outputs"])


def json_lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


class Exec:
    """One ``j-cli`` process, started with the exec stall hook at ``step`` (or none)."""

    #: Every process started and not yet finished: a test that fails between start and finish leaves one.
    live: list[Exec] = []

    def __init__(self, args: list[str], cwd: Path, *, step: str | None = None, env: dict | None = None) -> None:
        self.fifo = cwd.parent / f"stall-{os.urandom(3).hex()}"
        full = {**os.environ, **(env or {})}
        if step is not None:
            os.mkfifo(self.fifo)
            full.update(JCLI_EXEC_TEST_STALL_FIFO=str(self.fifo), JCLI_EXEC_TEST_STALL_AT=step)
        self.step = step
        self.proc = subprocess.Popen([JCLI, *args], cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        Exec.live.append(self)

    def stalled(self) -> None:
        """Return once the process stalls at its step; fail if it ends first (both are events: no polling)."""
        import select

        reader = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)  # j-cli's open for writing goes through at once
        exited = os.pidfd_open(self.proc.pid)
        line = b""
        try:
            while not line.endswith(b"\n"):
                ready, _, _ = select.select([reader, exited], [], [])
                chunk = os.read(reader, 4096) if reader in ready else b""
                line += chunk
                if not chunk and exited in ready:
                    out, err = self.proc.communicate()
                    pytest.fail(f"j-cli ended without stalling at {self.step}: {out[-500:]!r} {err[-500:]!r}")
        finally:
            os.close(reader)
            os.close(exited)
        assert line == f"stalled {self.step}\n".encode()

    def _release(self) -> None:
        try:
            self.fifo.write_text("go")
        except BrokenPipeError:  # j-cli opened its end, then ended on the signal before reading: nothing to release
            pass

    def finish(self, signum: int | None = None) -> tuple[int, bytes, bytes]:
        """Send ``signum`` (if any), let the stalled step go on, and wait for the end."""
        if signum is not None:
            self.proc.send_signal(signum)
        releaser = None
        if self.step is not None:
            releaser = threading.Thread(target=self._release, daemon=True)
            releaser.start()
        out, err = self.proc.communicate(timeout=180)
        Exec.live.remove(self)
        if releaser is not None:  # if j-cli left without reading, a reader lets the releaser finish
            fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
            releaser.join(30)
            os.close(fd)
        return self.proc.returncode, out, err


@pytest.fixture(autouse=True)
def no_exec_left_running():
    """After each test, kill and reap any j-cli it started and did not finish (a failed assertion in between)."""
    yield
    while Exec.live:
        left = Exec.live.pop()
        if left.proc.poll() is None:
            left.proc.kill()
        left.proc.communicate()


def assert_no_traceback(stderr: bytes) -> None:
    assert not PY_TRACEBACK.search(stderr), stderr.decode(errors="replace")[-2000:]


def assert_next_exec_runs_at_once(session: str, cwd: Path) -> None:
    """The kernel is free: a short run finishes well inside a timeout a still-busy kernel would hit."""
    after = run_cli("-j", "exec", session, "-c", "'next'", "--timeout", "60", cwd=cwd)
    assert after.returncode == 0, after.stderr
    assert after.json()["text"] == "'next'\n"


def pid_then_block(ws: Path) -> str:
    """Code that leaves its kernel's pid in ``ws/kernel.pid``, prints, then blocks."""
    return (
        f'import os, time\nopen({str(ws / "kernel.pid")!r}, "w").write(str(os.getpid()))\nprint("progress", flush=True)\ntime.sleep(3600)'
    )


# -- item 5: a run cut short keeps what it printed ---------------------------------


@pytest.mark.transport
def test_a_timeout_returns_the_bounded_partial_result(ws, kernel_session):
    result = run_cli("-j", "exec", kernel_session, "--timeout", "2", "-c", BLOCKS, cwd=ws)
    assert result.returncode == 1 and result.stdout == b""
    err = result.error()
    assert err["code"] == "TIMEOUT" and err["executed"] is True
    partial = err["result"]
    assert partial["status"] == "error" and partial["partial"] is True
    assert partial["text"].startswith("progress\n") and partial["outputs"][0]["text"] == "progress\n"
    assert partial["error"]["ename"] == "KeyboardInterrupt"  # what the interrupt did, as Jupyter shows it
    assert_next_exec_runs_at_once(kernel_session, ws)


@pytest.mark.transport
def test_a_timed_out_rich_or_long_run_is_kept_and_bounded_like_a_normal_one(ws, kernel_session):
    code = (
        "from IPython.display import HTML, display\n"
        "print('x' * 10000, flush=True)\n"
        "display(HTML('<b>partial</b>'))\n"
        "import time; time.sleep(3600)"
    )
    result = run_cli("-j", "exec", kernel_session, "--timeout", "3", "-c", code, cwd=ws)
    err = result.error()
    assert err["code"] == "TIMEOUT" and err["executed"] is True
    partial = err["result"]
    assert len(partial["text"]) == 4000 and partial["truncated"] and "j-cli output show" in partial["truncation_notice"]
    manifest = Path(partial["run"]["manifest"])
    assert manifest.is_file() and json.loads(manifest.read_text())["status"] == "error"
    html = [item for item in partial["outputs"] if item.get("mime") == "text/html"]
    assert html and Path(html[0]["path"]).read_text() == "<b>partial</b>"


def test_a_notebook_cell_that_times_out_gets_its_partial_outputs_not_stale_ones(ws, kernel_session):
    nb = ws / "slow.ipynb"
    write_notebook(nb, ["x = 1", BLOCKS, "print('never')"])
    result = run_cli(
        "-j", "exec", kernel_session, "-f", "slow.ipynb", "--timeout", "3", cwd=ws, env={**os.environ, "JCLI_CHECKPOINT_SECONDS": "0"}
    )
    assert result.returncode == 1
    *lines, summary = json_lines(result.stdout)
    assert lines[-1]["code"] == "TIMEOUT" and lines[-1]["executed"] is True
    assert lines[-1]["result"]["text"].startswith("progress\n") and lines[-1]["result"]["partial"] is True
    assert summary["status"] == "error" and summary["code"] == "TIMEOUT" and summary["stopped_at"] == 1
    cells = cells_of(nb)
    assert cells[0]["outputs"] == []  # it ran: its OLD output is gone
    assert text_of(cells[1]) == "progress\nKeyboardInterrupt" and "jcli" not in cells[1]["metadata"]
    assert cells[1]["execution_count"] == lines[-1]["result"]["execution_count"]
    assert text_of(cells[2]) == "OLD\n"  # never started: untouched


# -- item 6: validate before the send; after it, every failure says executed -------


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "-1", "2592001"])  # 0 and none mean no limit
@pytest.mark.parametrize("mode", ["inline", "notebook"])
def test_a_bad_timeout_is_refused_before_anything_runs(ws, kernel_session, mode, value):
    marker = ws / "ran"
    code = f"open({str(marker)!r}, 'w').close()"
    if mode == "inline":
        args = ["-c", code]
    else:
        write_notebook(ws / "nb.ipynb", [code])
        args = ["-f", "nb.ipynb"]
    before = {p.name: p.read_bytes() for p in ws.iterdir()}
    result = run_cli("-j", "exec", kernel_session, *args, f"--timeout={value}", cwd=ws)
    assert result.returncode == 2, result.stderr
    err = result.error()
    assert err["code"] == "USAGE_ERROR" and err["executed"] is False and "30 days" in err["message"]
    assert not marker.exists() and {p.name: p.read_bytes() for p in ws.iterdir()} == before


@pytest.mark.transport
def test_the_longest_allowed_timeout_runs(ws, kernel_session):
    result = run_cli("-j", "exec", kernel_session, "--timeout", "2592000", "-c", "6 * 7", cwd=ws)
    assert result.returncode == 0 and result.json()["text"] == "42\n"


def test_a_lone_surrogate_elsewhere_in_the_notebook_is_written_back_intact(ws, kernel_session):
    nb = ws / "odd.ipynb"
    cells = [
        {"cell_type": "code", "id": "a", "metadata": {}, "source": "print('ran')", "execution_count": None, "outputs": []},
        {"cell_type": "markdown", "id": "b", "metadata": {"note": "lone \ud800 here"}, "source": "odd \udfff text"},
    ]
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))  # ASCII: \ud800 escapes
    result = run_cli("-j", "exec", kernel_session, "-f", "odd.ipynb", cwd=ws)
    assert result.returncode == 0, result.stderr
    raw = nb.read_bytes()
    raw.decode("utf-8")  # valid UTF-8, the surrogates kept as JSON escapes
    written = json.loads(raw)["cells"]
    assert written[0]["outputs"][0]["text"] == ["ran\n"]
    assert written[1]["metadata"]["note"] == "lone \ud800 here" and "".join(written[1]["source"]) == "odd \udfff text"


def _squat(runtime: Path, how: str) -> None:
    jcli_dir = runtime / "jcli"
    jcli_dir.mkdir(mode=0o700, exist_ok=True)
    if how == "world-writable":
        jcli_dir.chmod(0o777)
    elif how == "foreign-owner":
        os.chown(jcli_dir, 65534, 65534)
    elif how == "locks-is-a-file":
        (jcli_dir / "locks").write_text("squatted")
    elif how == "runtime-is-a-link":
        shutil.rmtree(jcli_dir)  # empty, or a stopped sidecar's files (the exec_path fixture's)
        elsewhere = runtime / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        jcli_dir.symlink_to(elsewhere)


@pytest.mark.parametrize(
    ("how", "code"),
    [
        ("world-writable", "RUNTIME_DIR_UNSAFE"),
        ("foreign-owner", "RUNTIME_DIR_UNSAFE"),
        ("runtime-is-a-link", "RUNTIME_DIR_UNSAFE"),
        ("locks-is-a-file", "OUTPUT_SAVE_FAILED"),
    ],
)
@pytest.mark.parametrize("kind", ["ipynb", "pair"])
def test_an_unusable_runtime_dir_is_refused_before_the_cell_runs(ws, kernel_session, isolated_runtime, how, code, kind):
    marker = ws / "ran"
    source = f"open({str(marker)!r}, 'w').close()"
    if kind == "ipynb":
        write_notebook(ws / "nb.ipynb", [source])
        target = "nb.ipynb"
    else:
        (ws / "nb.py").write_text(f"# %%\n{source}\n")
        target = "nb.py"
    before = {p.name: p.read_bytes() for p in ws.iterdir()}
    run_cli("sidecar", "stop", cwd=ws)  # the exec_path fixture's sidecar, if any: its dir is about to be squatted
    _squat(isolated_runtime, how)
    result = run_cli("-j", "exec", kernel_session, "-f", target, cwd=ws)
    assert result.returncode == 1, result.stderr
    err = result.error()
    assert err["code"] == code and err["executed"] is False
    assert not marker.exists() and {p.name: p.read_bytes() for p in ws.iterdir()} == before


def test_a_notebook_too_deep_to_write_back_is_refused_before_the_cell_runs(ws, kernel_session):
    marker = ws / "ran"
    nb = ws / "deep.ipynb"
    cell = {
        "cell_type": "code",
        "id": "a",
        "metadata": {},
        "source": f"open({str(marker)!r}, 'w').close()",
        "execution_count": None,
        "outputs": [],
    }
    deep = "1"
    for _ in range(500):  # parses, but a write-back would recurse too deep
        deep = '{"a":' + deep + "}"
    text = json.dumps({"cells": [cell], "metadata": {"deep": 0}, "nbformat": 4, "nbformat_minor": 5}).replace(
        '{"deep": 0}', '{"deep": ' + deep + "}"
    )
    nb.write_text(text)
    result = run_cli("-j", "exec", kernel_session, "-f", "deep.ipynb", cwd=ws)
    assert result.returncode == 1
    err = result.error()
    assert err["code"] in ("OUTPUT_SAVE_FAILED", "NOTEBOOK_READ_FAILED") and err["executed"] is False
    assert not marker.exists() and nb.read_text() == text


def test_a_notebook_whose_folder_cannot_be_written_is_refused_before_the_cell_runs(nobody_python, jupyter, kernel_session):  # noqa: F811
    python, libs = nobody_python
    base = Path(tempfile.mkdtemp(prefix="jcli-nbro-"))
    try:
        folder, runtime = base / "ws", base / "runtime"
        folder.mkdir()
        marker = folder / "ran"  # the kernel runs as root: it could create this
        write_notebook(folder / "nb.ipynb", [f"open({str(marker)!r}, 'w').close()"])
        for path in (base, folder):
            path.chmod(0o755)
        (folder / "nb.ipynb").chmod(0o644)
        runtime.mkdir(mode=0o700)
        os.chown(runtime, 65534, 65534)
        before = (folder / "nb.ipynb").read_bytes()
        env = {
            "PYTHONPATH": libs,
            "PATH": os.environ["PATH"],
            "HOME": "/nonexistent",
            "XDG_RUNTIME_DIR": str(runtime),
            "JCLI_SIDECAR": "off",
            "JCLI_JUPYTER_SERVER_URL": jupyter["url"],
            "JCLI_JUPYTER_SERVER_TOKEN": jupyter["token"],
        }
        proc = subprocess.run(
            [*DROP, python, "-m", "jcli", "-j", "exec", kernel_session, "-f", "nb.ipynb"],
            cwd=folder,
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr
        err = json.loads(proc.stderr)
        assert err["code"] == "OUTPUT_SAVE_FAILED" and err["executed"] is False
        assert not marker.exists() and (folder / "nb.ipynb").read_bytes() == before
    finally:
        shutil.rmtree(base, ignore_errors=True)


# The walk: every way a run can fail once its code was sent. Each case returns
# the error document (the envelope, or a notebook run's cell line).


def _inline_timeout(session, ws):
    return run_cli("-j", "exec", session, "--timeout", "2", "-c", BLOCKS, cwd=ws).error()


def _kill_kernel_at_first_output(args, session, ws):
    run = Exec(["-j", "exec", session, *args, *BOUND], ws, step="output")
    run.stalled()
    os.kill(int((ws / "kernel.pid").read_text()), signal.SIGKILL)
    code, out, err = run.finish()
    assert code == 1 and not PY_TRACEBACK.search(err)
    return out, err


def _inline_kernel_died(session, ws):
    _, err = _kill_kernel_at_first_output(["-c", pid_then_block(ws)], session, ws)
    return json.loads(err)


def _inline_signal(signum):
    def case(session, ws):
        run = Exec(["-j", "exec", session, "-c", BLOCKS, *BOUND], ws, step="output")
        run.stalled()
        code, out, err = run.finish(signum)
        assert code == 128 + signum and out == b"" and not PY_TRACEBACK.search(err)
        return json.loads(err)

    return case


def _inline_save_failed(session, ws):
    (ws / ".j-cli").write_text("not a directory")
    code = "from IPython.display import HTML, display\nprint('progress')\ndisplay(HTML('<b>x</b>'))"
    return run_cli("-j", "exec", session, "-c", code, cwd=ws).error()


def _inline_internal(session, ws, monkeypatch, capfdbinary):
    """A bug of our own while the code runs (a fault we cannot cause for real, so injected)."""
    from jcli.__main__ import main
    from jcli_sidecar.kernel import output_collector

    handle = output_collector.OutputCollector.handle

    def failing(self, msg_type, content):
        handle(self, msg_type, content)
        if self.result.outputs:
            raise RuntimeError("injected")

    monkeypatch.setattr(output_collector.OutputCollector, "handle", failing)  # in this process only
    monkeypatch.setenv("JCLI_SIDECAR", "off")  # so the run is this process's own, where the fault is
    monkeypatch.chdir(ws)
    assert main(["-j", "exec", session, "-c", BLOCKS]) == 1
    err = json.loads(capfdbinary.readouterr().err)
    assert err["code"] == "INTERNAL_ERROR"
    return err


def _nb(ws, sources=("x = 1", BLOCKS, "print('never')")):
    write_notebook(ws / "nb.ipynb", list(sources))


def _nb_line(out: bytes, code: str) -> dict:
    *lines, summary = json_lines(out)
    assert summary["status"] == "error" and summary["code"] == code
    return lines[-1]


def _nb_timeout(session, ws):
    _nb(ws)
    result = run_cli("-j", "exec", session, "-f", "nb.ipynb", "--timeout", "3", cwd=ws)
    return _nb_line(result.stdout, "TIMEOUT")


def _nb_kernel_died(session, ws):
    _nb(ws, ("x = 1", pid_then_block(ws)))
    out, _ = _kill_kernel_at_first_output(["-f", "nb.ipynb"], session, ws)
    return _nb_line(out, "KERNEL_DIED")


def _nb_signal(signum):
    def case(session, ws):
        _nb(ws)
        run = Exec(["-j", "exec", session, "-f", "nb.ipynb", *BOUND], ws, step="output")
        run.stalled()
        code, out, err = run.finish(signum)
        assert code == 128 + signum and not PY_TRACEBACK.search(err)
        return _nb_line(out, "INTERRUPTED")

    return case


def _nb_changed_while_running(change):
    def case(session, ws):
        gate = ws.parent / f"gate-{os.urandom(3).hex()}"
        os.mkfifo(gate)
        _nb(ws, ("x = 1", f"print('progress', flush=True)\nopen({str(gate)!r}).read()"))
        run = Exec(["-j", "exec", session, "-f", "nb.ipynb"], ws)
        with open(gate, "w") as opened:  # opens once the kernel is inside the cell
            change(ws / "nb.ipynb")
            opened.write("go")
        code, out, err = run.finish()
        assert code == 1 and not PY_TRACEBACK.search(err)
        return json_lines(out)[-2]

    return case


def _edit_cell(path: Path) -> None:
    nb = json.loads(path.read_text())
    nb["cells"][1]["source"] = "print('edited by a person meanwhile')"
    path.write_text(json.dumps(nb))


def _nb_internal(session, ws, monkeypatch, capfdbinary):
    """A bug of our own in the write-back (injected: we cannot cause one for real)."""
    from jcli.__main__ import main
    from jcli_sidecar.kernel import notebook_run

    def failing(writer, cells):
        raise RuntimeError("injected")

    _nb(ws, ("print('progress')",))
    monkeypatch.setattr(notebook_run, "write_back_all", failing)  # in this process only
    monkeypatch.chdir(ws)
    assert main(["-j", "exec", session, "-f", "nb.ipynb"]) == 1
    out = capfdbinary.readouterr().out
    return _nb_line(out, "INTERNAL_ERROR")


AFTER_SEND = {
    "inline-timeout": ("TIMEOUT", True, _inline_timeout),
    "inline-kernel-died": ("KERNEL_DIED", True, _inline_kernel_died),
    "inline-sigint": ("INTERRUPTED", True, _inline_signal(signal.SIGINT)),
    "inline-sigterm": ("INTERRUPTED", True, _inline_signal(signal.SIGTERM)),
    "inline-save-failed": ("OUTPUT_SAVE_FAILED", False, _inline_save_failed),
    "inline-internal": ("INTERNAL_ERROR", True, _inline_internal),
    "notebook-timeout": ("TIMEOUT", True, _nb_timeout),
    "notebook-kernel-died": ("KERNEL_DIED", True, _nb_kernel_died),
    "notebook-sigint": ("INTERRUPTED", True, _nb_signal(signal.SIGINT)),
    "notebook-sigterm": ("INTERRUPTED", True, _nb_signal(signal.SIGTERM)),
    "notebook-out-of-sync": ("NOTEBOOK_OUT_OF_SYNC", False, _nb_changed_while_running(_edit_cell)),
    "notebook-unreadable": ("NOTEBOOK_READ_FAILED", False, _nb_changed_while_running(lambda p: p.write_text("{not json"))),
    "notebook-internal": ("INTERNAL_ERROR", False, _nb_internal),
}


@pytest.mark.transport
@pytest.mark.parametrize("case", sorted(case for case in AFTER_SEND if case.startswith("inline")))
def test_every_inline_failure_after_the_send_says_executed_and_carries_what_was_captured(
    case, ws, use_jupyter, kernel_session, monkeypatch, capfdbinary
):
    _after_the_send(case, ws, kernel_session, monkeypatch, capfdbinary)


@pytest.mark.parametrize("case", sorted(case for case in AFTER_SEND if case.startswith("notebook")))
def test_every_notebook_failure_after_the_send_says_executed_and_carries_what_was_captured(
    case, ws, use_jupyter, kernel_session, monkeypatch, capfdbinary
):
    _after_the_send(case, ws, kernel_session, monkeypatch, capfdbinary)


def _after_the_send(case, ws, shared, monkeypatch, capfdbinary):
    code, cut_short, action = AFTER_SEND[case]
    # A case that kills its kernel gets one of its own; every other one leaves the
    # module's kernel free (it asserts so below), so it runs there.
    private = code == "KERNEL_DIED"
    name = f"walk-{os.urandom(3).hex()}" if private else shared
    if private:
        assert run_cli("session", "create", "-n", name).returncode == 0
    try:
        extra = (monkeypatch, capfdbinary) if case.endswith("internal") else ()
        doc = action(name, ws, *extra)
        assert doc["code"] == code and doc["executed"] is True, doc
        result = doc["result"]
        assert result["text"].startswith("progress\n"), result
        assert result["status"] == "error" if cut_short else result["status"] == "ok"
        assert result.get("partial", False) is cut_short
        assert len(result["text"]) <= 4000 and len(result["outputs"]) <= 20
        if case.startswith("notebook") and code != "NOTEBOOK_OUT_OF_SYNC" and code != "NOTEBOOK_READ_FAILED":
            cell = cells_of(ws / "nb.ipynb")[doc["notebook_cell_index"]]
            if code == "INTERNAL_ERROR":  # the write-back itself failed: nothing could be written
                assert text_of(cell) == "OLD\n"
            else:  # the cell shows what it printed, no older outputs and no running mark
                assert text_of(cell).startswith("progress\n") and "OLD" not in text_of(cell)
                assert "jcli" not in cell["metadata"]
        if not private:
            assert_next_exec_runs_at_once(name, ws)
    finally:
        if private:
            run_cli("session", "kill", name)


# -- item 7: signals --------------------------------------------------------------


@pytest.mark.transport
def test_ctrl_c_in_human_mode_interrupts_the_kernel_without_a_traceback(ws, kernel_session):
    run = Exec(["exec", kernel_session, "-c", BLOCKS, *BOUND], ws)
    assert run.proc.stdout.readline() == b"progress\n"  # shown live: the code is running
    code, _, err = run.finish(signal.SIGINT)
    assert code == 130
    assert b"j-cli: error [INTERRUPTED]: stopped by SIGINT" in err
    assert_no_traceback(err)
    assert_next_exec_runs_at_once(kernel_session, ws)


@pytest.mark.transport
def test_a_second_signal_stops_waiting_for_a_kernel_that_ignores_the_interrupt(ws, use_jupyter):
    name = f"stubborn-{os.urandom(3).hex()}"  # its kernel stays busy: it gets killed afterwards
    assert run_cli("session", "create", "-n", name).returncode == 0
    try:
        # 'progress' is printed inside the try: the interrupt, sent once it was read, may reach
        # the kernel before its next line runs, and must still be caught.
        code = (
            "import time\ntry:\n    print('progress', flush=True)\n    time.sleep(3600)\n"
            "except KeyboardInterrupt:\n    print('ignored', flush=True)\nwhile True:\n    time.sleep(3600)"
        )
        run = Exec(["exec", name, "-c", code, *BOUND], ws)
        assert run.proc.stdout.readline() == b"progress\n"
        run.proc.send_signal(signal.SIGINT)
        assert run.proc.stdout.readline() == b"ignored\n"  # the kernel was interrupted, and carries on
        status, _, err = run.finish(signal.SIGINT)
        assert status == 130 and b"stopped waiting for the interrupted kernel" in err
        assert_no_traceback(err)
    finally:
        run_cli("session", "kill", name)


@pytest.mark.transport
def test_a_signal_after_the_code_finished_still_reports_the_whole_result(ws, kernel_session):
    run = Exec(["-j", "exec", kernel_session, "-c", "print('progress')"], ws, step="inline:finished")
    run.stalled()
    code, out, err = run.finish(signal.SIGTERM)
    assert code == 143 and out == b""
    doc = json.loads(err)
    assert doc["code"] == "INTERRUPTED" and doc["signal"] == "SIGTERM" and doc["executed"] is True
    assert doc["result"]["status"] == "ok" and doc["result"]["text"] == "progress\n" and "partial" not in doc["result"]


@pytest.mark.transport
def test_a_signal_before_any_code_was_sent_runs_nothing(ws, kernel_session):
    marker = ws / "ran"
    write_notebook(ws / "nb.ipynb", [f"open({str(marker)!r}, 'w').close()"])
    before = (ws / "nb.ipynb").read_bytes()
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.ipynb"], ws, step="prepared")
    run.stalled()
    code, out, err = run.finish(signal.SIGINT)
    assert code == 130 and out == b""
    assert_no_traceback(err)
    doc = json.loads(err)
    assert doc["code"] == "INTERRUPTED" and doc["executed"] is False and "result" not in doc
    assert not marker.exists() and (ws / "nb.ipynb").read_bytes() == before


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_a_cell_runs_writes_back_what_finished_and_clears_the_mark(ws, kernel_session, signum):
    nb = ws / "nb.ipynb"
    write_notebook(nb, ["x = 1", BLOCKS, "print('never')"])
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.ipynb", *BOUND], ws, step="output", env={"JCLI_CHECKPOINT_SECONDS": "0"})
    run.stalled()
    assert cells_of(nb)[1]["metadata"]["jcli"] == {"running": True}  # the checkpoint marked it
    code, out, err = run.finish(signum)
    assert code == 128 + signum
    assert_no_traceback(err)
    first, line, summary = json_lines(out)
    assert first["cell_index"] == 0 and first["status"] == "ok"
    assert line["code"] == "INTERRUPTED" and line["executed"] is True and line["result"]["text"].startswith("progress\n")
    assert summary["code"] == "INTERRUPTED" and summary["signal"] == signal.Signals(signum).name and summary["stopped_at"] == 1
    cells = cells_of(nb)
    assert cells[0]["outputs"] == [] and cells[0]["execution_count"] == first["execution_count"]
    assert text_of(cells[1]) == "progress\nKeyboardInterrupt" and "jcli" not in cells[1]["metadata"]
    assert text_of(cells[2]) == "OLD\n"
    assert_next_exec_runs_at_once(kernel_session, ws)


def test_a_signal_during_a_write_back_lets_it_finish_and_starts_no_other_cell(ws, kernel_session):
    nb = ws / "nb.ipynb"
    marker = ws / "ran"
    write_notebook(nb, ["print('first')", f"open({str(marker)!r}, 'w').close()"])
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.ipynb"], ws, step="write-back:final")
    run.stalled()
    code, out, err = run.finish(signal.SIGINT)
    assert code == 130
    assert_no_traceback(err)
    first, summary = json_lines(out)
    assert first["cell_index"] == 0 and first["text"] == "first\n"
    assert summary["code"] == "INTERRUPTED" and summary["stopped_at"] == 1 and summary["cells_run"] == 1
    cells = cells_of(nb)
    assert text_of(cells[0]) == "first\n" and text_of(cells[1]) == "OLD\n" and not marker.exists()


def test_a_signal_during_a_checkpoint_interrupts_the_cell_and_clears_the_mark(ws, kernel_session):
    nb = ws / "nb.ipynb"
    write_notebook(nb, [BLOCKS])
    run = Exec(
        ["-j", "exec", kernel_session, "-f", "nb.ipynb", *BOUND], ws, step="write-back:checkpoint", env={"JCLI_CHECKPOINT_SECONDS": "0"}
    )
    run.stalled()
    code, out, err = run.finish(signal.SIGTERM)
    assert code == 143
    assert_no_traceback(err)
    line, summary = json_lines(out)
    assert line["code"] == "INTERRUPTED" and summary["signal"] == "SIGTERM"
    cell = cells_of(nb)[0]
    assert text_of(cell) == "progress\nKeyboardInterrupt" and "jcli" not in cell["metadata"]
    assert_next_exec_runs_at_once(kernel_session, ws)


# -- item 14: the server's IOPub rate limit -----------------------------------------


@pytest.mark.transport
def test_the_embedded_server_does_not_drop_a_large_output(ws, kernel_session):
    """The shared test server is started by j-cli's embedded-server code."""
    size = 10_000_000  # far over the default limit of 1 MB/s across a 3 s window, in one message
    result = run_cli("-j", "exec", kernel_session, "-c", f"print('x' * {size})", cwd=ws)
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert "notes" not in doc and "dropped" not in doc and "IOPub" not in doc["text"]
    stored = [item for item in doc["outputs"] if item.get("path")]
    assert len(stored) == 1 and stored[0]["bytes"] == size + 1
    with open(stored[0]["path"], "rb") as kept:
        assert kept.read() == b"x" * size + b"\n"  # whole in the run's record
    assert doc["text"] == "x" * TEXT_BUDGET and doc["truncated"] is True  # the returned text stays bounded
    assert "more characters of text" in doc["truncation_notice"] and "IOPub" not in doc["truncation_notice"]
    human = run_cli("exec", kernel_session, "-c", f"print('x' * {size})", cwd=ws)
    assert human.returncode == 0 and b"IOPub" not in human.stderr
    assert human.stdout.count(b"x") == size


@contextlib.contextmanager
def _server_with_limits(root, *limits):
    """A real Jupyter Server started here with the IOPub limits given, and a session "limited" on it."""
    with jupyter_server_process(root, *limits) as (port, token):
        url = f"http://127.0.0.1:{port}"
        created = run_cli("-j", "-s", url, "-t", token, "session", "create", "-n", "limited", cwd=root)
        assert created.returncode == 0, created.stderr
        yield url, token, root


@pytest.fixture(scope="module")
def limited_server(tmp_path_factory, starts_jupyter):
    """A real Jupyter Server with tiny IOPub limits, as a stranger's server might have."""
    limits = ("--ZMQChannelsWebsocketConnection.iopub_data_rate_limit=1000", "--ZMQChannelsWebsocketConnection.iopub_msg_rate_limit=2")
    with _server_with_limits(tmp_path_factory.mktemp("limited"), *limits) as server:
        yield server


@pytest.fixture(scope="module")
def default_limited_server(tmp_path_factory, starts_jupyter):
    """A real Jupyter Server with Jupyter's default IOPub data limit, spelled out (not left to the default)."""
    limits = (
        "--ZMQChannelsWebsocketConnection.limit_rate=True",
        "--ZMQChannelsWebsocketConnection.iopub_data_rate_limit=1000000",
        "--ZMQChannelsWebsocketConnection.rate_limit_window=3",
    )
    with _server_with_limits(tmp_path_factory.mktemp("default-limited"), *limits) as server:
        yield server


@pytest.mark.parametrize(
    "code, notice",
    [
        ("print('x' * 10000)", "IOPub data rate exceeded."),
        ("from IPython.display import display\nfor i in range(40): display(i)", "IOPub message rate exceeded."),
    ],
    ids=["data-rate", "message-rate"],
)
def test_output_the_server_dropped_is_reported_not_passed_off_as_complete(limited_server, code, notice):
    url, token, root = limited_server
    result = run_cli("-j", "-s", url, "-t", token, "exec", "limited", "-c", code, cwd=root)
    doc = result.json()
    assert doc["truncated"] is True and "IOPub rate limit" in doc["truncation_notice"]
    assert notice in doc["dropped"].split("; ")  # the server's own notice, its first line
    assert any("IOPub rate limit" in note for note in doc["notes"])
    assert "IOPub" not in doc["text"] and all(item.get("name") != "stderr" for item in doc["outputs"])  # the notice is no output


def test_ten_mb_on_a_server_with_the_default_limit_is_reported_dropped(default_limited_server):
    url, token, root = default_limited_server
    code = "print('x' * 10_000_000)"
    result = run_cli("-j", "-s", url, "-t", token, "exec", "limited", "-c", code, cwd=root)
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert doc["truncated"] is True and doc["dropped"] == "IOPub data rate exceeded."
    assert "IOPub rate limit" in doc["truncation_notice"] and "x" not in doc["text"]
    human = run_cli("-s", url, "-t", token, "exec", "limited", "-c", code, cwd=root)
    assert human.returncode == 0 and b"x" not in human.stdout
    assert b"note: the Jupyter Server dropped some of this run's output" in human.stderr


@pytest.mark.slow
def test_ctrl_c_before_a_command_takes_its_signals_is_coded_too(monkeypatch, capfdbinary):
    """Ctrl-C while j-cli still starts (imports, parsing): a window too short to land a real signal in."""
    from jcli import __main__, fastpath

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(fastpath, "try_run", interrupted)
    assert __main__.main(["-j", "notebook", "outputs", "x.ipynb"]) == 130
    captured = capfdbinary.readouterr()
    assert json.loads(captured.err)["code"] == "INTERRUPTED" and not PY_TRACEBACK.search(captured.err)
