"""The embedded default server: started on demand, found from subdirectories,
private, and replaced when it dies."""

from __future__ import annotations

import os
import signal
import stat

import psutil
from helpers import run_cli


def test_start_status_nearest_ancestor_and_stop(tmp_path, isolated_runtime, starts_jupyter):
    top = tmp_path / "project"
    sub = top / "analysis" / "deep"
    sub.mkdir(parents=True)
    started = run_cli("-j", "server", "start", cwd=top)
    assert started.returncode == 0, started.stderr
    state = started.json()
    try:
        assert state["url"].startswith("http://127.0.0.1:") and state["workspace"] == str(top.resolve())
        proc = psutil.Process(state["pid"])
        assert state["token"] not in " ".join(proc.cmdline())  # the token travels in the environment
        listening = [c.laddr.ip for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert listening and set(listening) == {"127.0.0.1"}
        state_files = list((isolated_runtime / "jcli").glob("*.server.json"))
        assert len(state_files) == 1 and stat.S_IMODE(state_files[0].stat().st_mode) == 0o600
        # A subdirectory uses the nearest ancestor's live server.
        nested = run_cli("-j", "server", "status", cwd=sub).json()
        assert nested["running"] and nested["pid"] == state["pid"]
        assert run_cli("-j", "healthcheck", cwd=sub).json()["server"] == state["url"]
        assert run_cli("-j", "server", "start", cwd=sub).json()["pid"] == state["pid"]
        # A session made from the subdirectory runs its kernel there.
        assert run_cli("session", "create", "-n", "deep", cwd=sub).returncode == 0
        where = run_cli("-j", "exec", "deep", "-c", "import os; print(os.getcwd())", cwd=sub).json()
        assert where["text"] == f"{sub.resolve()}\n"
        # Stopping from the subdirectory stops nothing: the server is the parent's.
        assert run_cli("-j", "server", "stop", cwd=sub).json()["stopped"] is False
    finally:
        stopped = run_cli("-j", "server", "stop", cwd=top)
    assert stopped.json()["stopped"] is True
    assert not psutil.pid_exists(state["pid"]) or psutil.Process(state["pid"]).status() == psutil.STATUS_ZOMBIE
    assert run_cli("-j", "server", "status", cwd=top).json()["running"] is False


def test_a_dead_server_is_detected_and_replaced(tmp_path, starts_jupyter):
    first = run_cli("-j", "server", "start", cwd=tmp_path).json()
    os.kill(first["pid"], signal.SIGKILL)
    psutil.Process(first["pid"]).wait(30)
    try:
        health = run_cli("-j", "healthcheck", cwd=tmp_path)
        assert health.returncode == 0, health.stderr
        second = run_cli("-j", "server", "status", cwd=tmp_path).json()
        assert second["running"] and second["pid"] != first["pid"] and second["url"] == health.json()["server"]
        session = run_cli("-j", "session", "create", "-n", "fresh", cwd=tmp_path)
        assert session.returncode == 0
        result = run_cli("-j", "exec", "fresh", "-c", "import os; print(os.getcwd())", cwd=tmp_path)
        assert result.json()["text"] == f"{tmp_path.resolve()}\n"  # the kernel runs in our cwd
    finally:
        run_cli("server", "stop", cwd=tmp_path)


def test_without_a_server_status_says_so(tmp_path):
    result = run_cli("-j", "server", "status", cwd=tmp_path)
    assert result.returncode == 0 and result.json() == {"running": False, "workspace": str(tmp_path.resolve())}


def test_the_server_process_starts_without_the_iri_grammar_and_still_checks_the_formats_its_schemas_use():
    """jsonschema's optional ``iri`` check (rfc3987_syntax) costs about 1 s at import; the embedded server skips it."""
    import subprocess
    import sys

    probe = """
import sys
from jcli.embedded_server import skip_unused_imports
skip_unused_imports()
import jupyter_server.serverapp, jsonschema
from jupyter_events.validators import draft7_format_checker
assert sys.modules["rfc3987_syntax"] is None
assert "uri" in draft7_format_checker.checkers and "iri" not in draft7_format_checker.checkers
assert not draft7_format_checker.conforms("no scheme", "uri") and draft7_format_checker.conforms("https://x.test/a", "uri")
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr[-2000:]


def test_the_embedded_servers_ipython_kernels_keep_their_history_in_memory_unless_their_spec_names_a_file():
    from jcli.embedded_kernels import HISTORY_IN_MEMORY, HistoryInMemoryKernelManager, runs_ipykernel

    manager = HistoryInMemoryKernelManager(kernel_name="python3")
    assert manager.format_kernel_cmd()[-1] == HISTORY_IN_MEMORY
    named = manager.format_kernel_cmd(["--HistoryManager.hist_file=/somewhere/history.sqlite"])
    assert HISTORY_IN_MEMORY not in named and named[-1] == "--HistoryManager.hist_file=/somewhere/history.sqlite"
    assert runs_ipykernel("my-env", ["/env/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"])
    assert not runs_ipykernel("ir", ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"])
