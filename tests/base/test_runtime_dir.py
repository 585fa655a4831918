"""A runtime dir j-cli cannot use is one coded error that names it, and reads never need it.

Two real problems: a runtime dir the user cannot create or write (root
ignores modes, so those commands run as ``nobody``; or ``XDG_RUNTIME_DIR``
names a missing directory or a file), and one so long that the sidecar's
socket path would pass the 107 bytes a Unix socket path may have. Either
way each command that needs it says ``RUNTIME_DIR_UNUSABLE`` once, with the
path, the reason and the fix; reads still answer (in-process) and start no
sidecar that could only crash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import msgpack
import psutil
import pytest
from helpers import DROP, FIXTURES, nobody_interpreter, run_cli, sidecars_under

import jcli
import jcli_sidecar

READ = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0"]
NEED_IT = [
    ["server", "status"],
    ["server", "start"],
    ["session", "list"],
    ["session", "create", "-n", "x"],
    ["exec", "x", "-c", "1"],
    ["sidecar", "start"],
]
#: The same, told to use a server of their own (nothing listens on port 9: it is refused at once).
EXPLICIT = [["-s", "http://127.0.0.1:9", "session", "list"], ["-s", "http://127.0.0.1:9", "exec", "x", "-c", "1"]]


def unusable(result, path: str) -> dict:
    """The one coded error: exit 1, the path, the fix, no traceback."""
    assert b"Traceback" not in result.stderr and b'File "' not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    error = json.loads(result.stderr)
    assert error["code"] == "RUNTIME_DIR_UNUSABLE", error
    assert error["path"] == path and error["reason"], error
    assert path in error["message"] and "XDG_RUNTIME_DIR" in error["message"], error
    return error


# -- a runtime dir that cannot be made or written ---------------------------------------------


@pytest.fixture(scope="module")
def nobody_python():
    """(interpreter, PYTHONPATH) that ``nobody`` can run, with what a read through the sidecar imports; proven by an import."""
    yield from nobody_interpreter(
        [jcli_sidecar, jcli, click, msgpack, psutil], "jcli_sidecar.sidecar.client, jcli.fastpath, msgpack, psutil", "jcli-nobody-rt-"
    )


@pytest.fixture
def unwritable(tmp_path_factory):
    """``(workspace, XDG_RUNTIME_DIR)``: a workspace nobody may read, and a runtime base nobody may not write."""
    base = Path(tempfile.mkdtemp(prefix="jcli-rt-", dir="/tmp"))
    try:
        ws, xdg = base / "ws", base / "xdg"
        ws.mkdir()
        xdg.mkdir()
        shutil.copy(FIXTURES / "kernel_v4.5.ipynb", ws / "kernel_v4.5.ipynb")
        for path in (base, ws, xdg):
            path.chmod(0o755)
        (ws / "kernel_v4.5.ipynb").chmod(0o644)
        yield ws, xdg
    finally:
        shutil.rmtree(base, ignore_errors=True)


def as_nobody(nobody_python, cwd, xdg, *args, sidecar: bool = True):
    python, libs = nobody_python
    env = {"PYTHONPATH": libs, "PATH": os.environ["PATH"], "HOME": "/nonexistent", "XDG_RUNTIME_DIR": str(xdg)}
    if not sidecar:
        env["JCLI_SIDECAR"] = "off"
    return subprocess.run([*DROP, python, "-m", "jcli", *args], cwd=cwd, env=env, capture_output=True, timeout=120)


@pytest.mark.parametrize("args", NEED_IT, ids=" ".join)
def test_a_command_that_needs_an_unwritable_runtime_dir_names_it_once(nobody_python, unwritable, args):
    ws, xdg = unwritable
    error = unusable(as_nobody(nobody_python, ws, xdg, "-j", *args), str(xdg / "jcli"))
    assert "Permission denied" in error["reason"]
    assert not (xdg / "jcli").exists()


def test_with_an_unwritable_runtime_dir_only_what_needs_it_fails(nobody_python, unwritable):
    ws, xdg = unwritable
    unusable(as_nobody(nobody_python, ws, xdg, "-j", "server", "status"), str(xdg / "jcli"))
    for args in EXPLICIT:  # a server of their own: they get as far as that server
        result = as_nobody(nobody_python, ws, xdg, "-j", *args)
        assert result.returncode == 1 and b"Traceback" not in result.stderr, result.stderr
        assert json.loads(result.stderr)["code"] == "SERVER_UNAVAILABLE", result.stderr
    for sidecar in (True, False):  # reads answer in-process, with or without the sidecar allowed
        for args in (READ, ["-j", "notebook", "outputs", "kernel_v4.5.ipynb", "--cell", "2"], READ):
            result = as_nobody(nobody_python, ws, xdg, *args, sidecar=sidecar)
            assert result.returncode == 0, result.stderr
    assert not (xdg / "jcli").exists()


def test_sidecar_status_and_stop_with_no_runtime_dir_say_none_runs(nobody_python, unwritable):
    ws, xdg = unwritable
    status = as_nobody(nobody_python, ws, xdg, "-j", "sidecar", "status")
    assert status.returncode == 0 and json.loads(status.stdout)["running"] is False, status.stderr
    stop = as_nobody(nobody_python, ws, xdg, "-j", "sidecar", "stop")
    assert stop.returncode == 0 and json.loads(stop.stdout)["stopped"] is False, stop.stderr


@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_a_runtime_base_that_is_missing_or_a_file_is_named(tmp_path, kind, monkeypatch):
    base = tmp_path / "xdg"
    if kind == "a file":
        base.write_text("not a directory")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    ws = tmp_path / "ws"
    ws.mkdir()
    for args in (["server", "status"], ["session", "list"], ["exec", "x", "-c", "1"]):
        unusable(run_cli("-j", *args, cwd=ws), str(base / "jcli"))


# -- a runtime dir too long for the socket ------------------------------------------------------


@pytest.fixture
def long_runtime(tmp_path, monkeypatch, sidecar_on):
    """``(workspace, runtime dir)`` with XDG_RUNTIME_DIR so long that the socket path passes 107 bytes."""
    base = tmp_path / ("x" * max(1, 110 - len(str(tmp_path))))
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(FIXTURES / "kernel_v4.5.ipynb", ws / "kernel_v4.5.ipynb")
    yield ws, base / "jcli"
    assert not sidecars_under(base), "a sidecar was started where it cannot bind"


def test_sidecar_start_with_a_runtime_dir_too_long_for_its_socket_is_one_coded_error(long_runtime):
    ws, runtime = long_runtime
    error = unusable(run_cli("-j", "sidecar", "start", cwd=ws), str(runtime))
    assert "107" in error["reason"]
    for args in (["sidecar", "status"], ["sidecar", "stop"]):
        unusable(run_cli("-j", *args, cwd=ws), str(runtime))
    human = run_cli("sidecar", "start", cwd=ws)
    assert human.returncode == 1 and b"Traceback" not in human.stderr and b"XDG_RUNTIME_DIR" in human.stderr


def test_reads_with_a_runtime_dir_too_long_for_the_socket_start_no_sidecar(long_runtime):
    ws, runtime = long_runtime
    expected = run_cli(*READ, cwd=ws, env={**os.environ, "JCLI_SIDECAR": "off"}).stdout
    for _ in range(3):
        result = run_cli(*READ, cwd=ws)
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected
    logs = [name for name in os.listdir(runtime) if name.endswith(".log")] if runtime.exists() else []
    assert not logs, "a sidecar was spawned (and crashed) where it cannot bind"


def test_a_sidecar_started_by_hand_there_exits_with_one_line_in_its_log(long_runtime):
    ws, runtime = long_runtime
    runtime.mkdir(mode=0o700)
    log = runtime / "by-hand.log"
    with open(log, "wb") as out:
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "jcli_sidecar", "serve", "--workspace", str(ws)], stdout=out, stderr=out, timeout=60
        )
    assert proc.returncode == 1
    text = log.read_text(encoding="utf-8")
    assert "Traceback" not in text and "XDG_RUNTIME_DIR" in text
    assert len(text.splitlines()) == 1, text
