"""``exec`` options against a real Jupyter Server and ipykernel: --display-mode, --no-stream, the default timeout.

Waiting is on events (the exec stall hook, a pty's end of file), never on sleeps.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, JCLI, run_cli
from test_hostile_exec import Exec, assert_no_traceback, no_exec_left_running  # noqa: F401 (an autouse fixture)

from jcli_sidecar.kernel.exec_timeout import DEFAULT_TIMEOUT, TIMEOUT_ENV, resolve_timeout

MODE_CODE = "a = 5\n10\nfor i in range(2):\n    i\n20"


@pytest.fixture
def ws(tmp_path, use_jupyter, exec_path):
    work = tmp_path / "ws"
    work.mkdir()
    exec_path(work)  # in-process; a test marked transport runs through a sidecar too
    return work


def exec_json(session, ws, *args, env=None):
    result = run_cli("-j", "exec", session, *args, cwd=ws, env=env)
    return result, (result.json() if result.stdout else result.error())  # code that raised is a document too


def kernel_mode(session, ws) -> tuple[str, int]:
    """The kernel's ``ast_node_interactivity`` and the execution count of asking."""
    _, doc = exec_json(session, ws, "-c", "get_ipython().ast_node_interactivity")
    return doc["text"].strip(), doc["execution_count"]


@pytest.fixture
def own_mode(kernel_session, ws):
    """The kernel's mode set by a preceding exec to one that is not IPython's default; put back after."""
    run_cli("exec", kernel_session, "-c", "get_ipython().ast_node_interactivity = 'last_expr_or_assign'", cwd=ws)
    yield "'last_expr_or_assign'"
    run_cli("exec", kernel_session, "-c", "get_ipython().ast_node_interactivity = 'last_expr'", cwd=ws)


# -- --display-mode -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "code", "shown"),
    [
        ("all", MODE_CODE, ["10", "0", "1", "20"]),
        ("last_expr", MODE_CODE, ["20"]),
        ("last_expr_or_assign", "10\nb = 7", ["7"]),
        ("last", "10\nfor i in range(2):\n    i", ["0", "1"]),
        ("none", MODE_CODE, []),
    ],
)
def test_each_display_mode_shows_what_ipython_shows_and_leaves_no_trace(kernel_session, ws, own_mode, mode, code, shown):
    before, count = kernel_mode(kernel_session, ws)
    assert before == own_mode
    _, history = exec_json(kernel_session, ws, "-c", "len(In)")
    result, doc = exec_json(kernel_session, ws, "--display-mode", mode, "-c", code)
    assert result.returncode == 0, result.stderr
    assert [item["text"] for item in doc["outputs"]] == shown
    assert doc["execution_count"] == count + 2  # setting and restoring the mode counted nothing
    after, next_count = kernel_mode(kernel_session, ws)
    assert after == own_mode and next_count == count + 3
    _, later = exec_json(kernel_session, ws, "-c", "len(In)")
    assert int(later["text"]) == int(history["text"]) + 3  # only the three execs of ours entered the history


@pytest.mark.transport
def test_display_mode_in_human_mode(kernel_session, ws, own_mode):
    shown = run_cli("exec", kernel_session, "--display-mode", "all", "-c", "1\n2", cwd=ws)
    assert shown.returncode == 0 and shown.stdout == b"1\n2\n"
    hidden = run_cli("exec", kernel_session, "--display-mode", "none", "-c", "print('p')\n3", cwd=ws)
    assert hidden.returncode == 0 and hidden.stdout == b"p\n"
    assert kernel_mode(kernel_session, ws)[0] == own_mode


def test_the_mode_is_restored_after_an_error_and_a_timeout(kernel_session, ws, own_mode):
    raised, doc = exec_json(kernel_session, ws, "--display-mode", "all", "-c", "1\n1/0")
    assert raised.returncode == 1 and doc["status"] == "error" and doc["outputs"][0]["text"] == "1"
    assert kernel_mode(kernel_session, ws)[0] == own_mode
    timed_out = run_cli("exec", kernel_session, "--display-mode", "none", "--timeout", "1", "-c", "import time; time.sleep(600)", cwd=ws)
    assert timed_out.returncode == 1 and b"[TIMEOUT]" in timed_out.stderr
    assert kernel_mode(kernel_session, ws)[0] == own_mode


@pytest.mark.transport
def test_the_mode_is_restored_after_an_interrupt(kernel_session, ws, own_mode):
    code = "print('progress', flush=True)\nimport time\ntime.sleep(3600)"
    run = Exec(["-j", "exec", kernel_session, "--display-mode", "all", "-c", code, "--timeout", "300"], ws, step="output")
    run.stalled()
    status, _, err = run.finish(signal.SIGINT)
    assert status == 130 and json.loads(err)["code"] == "INTERRUPTED"
    assert_no_traceback(err)
    assert kernel_mode(kernel_session, ws)[0] == own_mode


def test_display_mode_in_a_notebook_run(kernel_session, ws, own_mode):
    (ws / "nb.py").write_text("# %%\n1\n2\n\n# %%\n3\n4\n\n# %%\nraise ValueError('stop')\n")
    result = run_cli("-j", "exec", kernel_session, "-f", "nb.py", "--display-mode", "all", cwd=ws)
    assert result.returncode == 1
    *cells, summary = [json.loads(line) for line in result.stdout.splitlines()]
    assert [[o["text"] for o in c["outputs"]] for c in cells[:2]] == [["1", "2"], ["3", "4"]]
    assert summary["status"] == "error" and summary["stopped_at"] == 2
    nb = json.loads((ws / "nb.ipynb").read_text())
    assert ["".join(o["data"]["text/plain"]) for o in nb["cells"][1]["outputs"]] == ["3", "4"]
    assert kernel_mode(kernel_session, ws)[0] == own_mode
    human = run_cli("exec", kernel_session, "-f", "nb.py", "--cell", "0:2", "--display-mode", "none", cwd=ws)
    assert human.returncode == 0 and human.stdout == b"[cell 0] 1/2\n[cell 1] 2/2\n"
    assert kernel_mode(kernel_session, ws)[0] == own_mode


def test_a_bad_display_mode_is_a_usage_error_before_anything_runs(kernel_session, ws):
    marker = ws / "ran"
    for args in (["-j"], []):
        result = run_cli(*args, "exec", kernel_session, "--display-mode", "everything", "-c", f"open({str(marker)!r}, 'w')", cwd=ws)
        assert result.returncode == 2 and b"USAGE_ERROR" in result.stderr and b"last_expr" in result.stderr
    assert not marker.exists()


@pytest.fixture(scope="module")
def echo_server(tmp_path_factory, starts_jupyter):
    """A real Jupyter Server of its own whose kernelspecs include ``echo``, a kernel that is not IPython."""
    from helpers import embedded_server_with_kernels

    argv = [sys.executable, str(FIXTURES.parent / "echo_kernel.py"), "-f", "{connection_file}"]
    yield from embedded_server_with_kernels(tmp_path_factory, {"echo": {"argv": argv, "display_name": "Echo", "language": "echo"}})


def test_display_mode_on_a_kernel_that_is_not_ipython_is_a_usage_error(echo_server, tmp_path, monkeypatch):
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_URL", echo_server["url"])
    monkeypatch.setenv("JCLI_JUPYTER_SERVER_TOKEN", echo_server["token"])
    created = run_cli("-j", "session", "create", "-n", "echo", "-k", "echo", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    try:
        plain = run_cli("exec", "echo", "-c", "said", cwd=tmp_path)
        assert plain.returncode == 0 and plain.stdout == b"said"  # the kernel works; only the mode cannot be set
        result = run_cli("-j", "exec", "echo", "--display-mode", "all", "-c", "never", cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == b""
        error = result.error()
        assert error["code"] == "USAGE_ERROR" and error["executed"] is False and "IPython" in error["message"]
        (tmp_path / "nb.py").write_text("# %%\nnever\n")
        human = run_cli("exec", "echo", "-f", "nb.py", "--display-mode", "none", cwd=tmp_path)
        assert human.returncode == 2 and human.stdout == b"" and b"[USAGE_ERROR]" in human.stderr and b"IPython" in human.stderr
        assert_no_traceback(human.stderr)
    finally:
        run_cli("session", "kill", "echo", cwd=tmp_path)


# -- --no-stream --------------------------------------------------------------------------


def nothing_to_read(stream) -> bool:
    return not select.select([stream], [], [], 0)[0]


@pytest.mark.transport
def test_no_stream_prints_inline_outputs_only_at_the_end(kernel_session, ws):
    code = "print('early', flush=True)\nprint('late')"
    live = Exec(["exec", kernel_session, "-c", code], ws, step="output")
    live.stalled()
    assert live.proc.stdout.readline() == b"early\n"  # without the flag: shown before the run ends
    assert live.finish()[:2] == (0, b"late\n")
    held = Exec(["exec", kernel_session, "--no-stream", "-c", code], ws, step="output")
    held.stalled()
    assert nothing_to_read(held.proc.stdout)  # the output arrived; nothing was printed yet
    assert held.finish()[:2] == (0, b"early\nlate\n")


def test_no_stream_in_json_mode_is_the_same_document(kernel_session, ws):
    _, streamed = exec_json(kernel_session, ws, "-c", "print('x')")
    _, held = exec_json(kernel_session, ws, "--no-stream", "-c", "print('x')")
    assert held["text"] == streamed["text"] == "x\n" and held["outputs"] == streamed["outputs"]


@pytest.mark.parametrize("no_stream", [False, True], ids=["stream", "no-stream"])
def test_no_stream_skips_the_partial_saves_of_a_notebook_run(kernel_session, ws, no_stream):
    # one write: print('a', flush=True) writes 'a' and the newline apart, and the kernel may send them apart
    (ws / "nb.py").write_text("# %%\nimport sys\nsys.stdout.write('a\\n'); sys.stdout.flush()\nprint('b')\n\n# %%\nprint('c')\n")
    flag = ["--no-stream"] if no_stream else []
    run = Exec(["-j", "exec", kernel_session, "-f", "nb.py", *flag], ws, step="output", env={"JCLI_CHECKPOINT_SECONDS": "0"})
    run.stalled()
    cell = json.loads((ws / "nb.ipynb").read_text())["cells"][0]
    if no_stream:
        assert cell["outputs"] == [] and "jcli" not in cell["metadata"]  # no checkpoint was saved
    else:
        assert cell["metadata"]["jcli"] == {"running": True} and cell["outputs"][0]["text"] == ["a\n"]
    status, out, _ = run.finish()
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and [line.get("text") for line in lines] == ["a\nb\n", "c\n", None]
    cells = json.loads((ws / "nb.ipynb").read_text())["cells"]
    assert ["".join(c["outputs"][0]["text"]) for c in cells] == ["a\nb\n", "c\n"]  # the final write-backs happen either way


def test_no_stream_prints_each_cell_when_it_finishes(kernel_session, ws):
    (ws / "nb.py").write_text("# %%\nprint('a', flush=True)\nprint('b')\n\n# %%\nprint('c')\n\n# %%\n1/0\n")
    run = Exec(["exec", kernel_session, "-f", "nb.py", "--no-stream"], ws, step="output")
    run.stalled()
    assert nothing_to_read(run.proc.stdout)
    status, out, err = run.finish()
    assert status == 1 and out == b"[cell 0] 1/3\na\nb\n[cell 1] 2/3\nc\n[cell 2] 3/3\n"
    assert b"ZeroDivisionError" in err
    assert_no_traceback(err)


# -- the default timeout ----------------------------------------------------------------------


def test_the_timeout_setting_order():
    assert resolve_timeout(None, {}) == DEFAULT_TIMEOUT == 600.0
    assert resolve_timeout(None, {TIMEOUT_ENV: "2.5"}) == 2.5
    assert resolve_timeout(None, {TIMEOUT_ENV: "none"}) is None and resolve_timeout(None, {TIMEOUT_ENV: "0"}) is None
    assert resolve_timeout(7, {TIMEOUT_ENV: "2.5"}) == 7 and resolve_timeout(0, {TIMEOUT_ENV: "2.5"}) is None


@pytest.mark.transport
def test_the_environment_sets_the_default_timeout(kernel_session, ws):
    env = {**os.environ, TIMEOUT_ENV: "1"}
    result, error = exec_json(kernel_session, ws, "-c", "print('p', flush=True)\nimport time\ntime.sleep(600)", env=env)
    assert result.returncode == 1 and error["code"] == "TIMEOUT" and error["executed"] is True
    assert error["result"]["text"].startswith("p\n")
    human = run_cli("exec", kernel_session, "-c", "import time; time.sleep(600)", cwd=ws, env=env)
    assert human.returncode == 1 and b"[TIMEOUT]" in human.stderr


def test_the_flag_wins_over_the_environment(kernel_session, ws):
    env = {**os.environ, TIMEOUT_ENV: "1"}
    code = "import time; time.sleep(2); print('done')"
    for flag in ("none", "0", "120"):
        result, doc = exec_json(kernel_session, ws, "--timeout", flag, "-c", code, env=env)
        assert result.returncode == 0 and doc["text"] == "done\n", (flag, result.stderr)
    human = run_cli("exec", kernel_session, "--timeout=none", "-c", code, cwd=ws, env=env)
    assert human.returncode == 0 and human.stdout == b"done\n"


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "1e9", "1_0"])
def test_a_bad_timeout_variable_is_a_usage_error_naming_it(kernel_session, ws, value):
    marker = ws / "ran"
    env = {**os.environ, TIMEOUT_ENV: value}
    result, error = exec_json(kernel_session, ws, "-c", f"open({str(marker)!r}, 'w')", env=env)
    assert result.returncode == 2 and error["code"] == "USAGE_ERROR" and error["executed"] is False
    assert TIMEOUT_ENV in error["message"] and error["variable"] == TIMEOUT_ENV
    human = run_cli("exec", kernel_session, "-f", "x.ipynb", cwd=ws, env=env)
    assert human.returncode == 2 and TIMEOUT_ENV.encode() in human.stderr
    assert not marker.exists()


def test_a_bad_timeout_flag_is_a_usage_error(kernel_session, ws):
    for flag in ("soon", "-1"):
        result, error = exec_json(kernel_session, ws, "--timeout", flag, "-c", "1")
        assert result.returncode == 2 and error["code"] == "USAGE_ERROR" and "--timeout" in error["message"]


# -- progress on a terminal ------------------------------------------------------------------


def run_on_pty(args: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    """Run j-cli with stderr on a real pseudo-terminal (stdout piped); returns (status, stdout, terminal)."""
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([JCLI, *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower)
    finally:
        os.close(follower)
    seen = b""
    try:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    out, _ = proc.communicate(timeout=120)
    return proc.returncode, out, seen


PROGRESS_NB = "# %% [markdown]\n# title\n\n# %%\nprint('one')\n\n# %%\nprint('two')\n\n# %%\nprint('three')\n"


def test_every_cell_run_prints_its_header_on_a_terminal_and_through_a_pipe(kernel_session, ws):
    (ws / "nb.py").write_text(PROGRESS_NB)
    expected = b"[cell 1] 1/3\none\n[cell 2] 2/3\ntwo\n[cell 3] 3/3\nthree\n"
    status, out, terminal = run_on_pty(["exec", kernel_session, "-f", "nb.py"], ws)
    assert status == 0 and out == expected
    piped = run_cli("exec", kernel_session, "-f", "nb.py", cwd=ws)
    assert piped.returncode == 0 and piped.stdout == expected and b"[cell " not in piped.stderr
    some = run_cli("exec", kernel_session, "-f", "nb.py", "--cell", "2:", cwd=ws)
    assert some.returncode == 0 and some.stdout == b"[cell 2] 1/2\ntwo\n[cell 3] 2/2\nthree\n"


def test_json_mode_shows_no_headers(kernel_session, ws):
    (ws / "nb.py").write_text(PROGRESS_NB)
    status, out, terminal = run_on_pty(["-j", "exec", kernel_session, "-f", "nb.py"], ws)
    assert status == 0 and b"[cell " not in terminal + out
    assert [json.loads(line).get("cell_index") for line in out.splitlines()] == [1, 2, 3, None]
