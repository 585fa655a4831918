"""The workspace sidecar with real processes: spawn, answers, fallback, lifecycle.

Every wait here is on an event (a lock being released, a FIFO line), never
a sleep.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from helpers import load_cases, run_cli, sidecars_under, start_old_sidecar

from jcli_sidecar import __version__
from jcli_sidecar.base.framing import HEADER, pack_frame, read_frame
from jcli_sidecar.base.locks import wait_for_lock
from jcli_sidecar.base.protocol import PROTOCOL_VERSION
from jcli_sidecar.base.runtime import SidecarPaths

READ = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "2", "--output", "0"]


@pytest.fixture
def ws(fixture_dir, sidecar_on):
    """A workspace (a copy of the protocol fixtures) with the sidecar enabled."""
    return fixture_dir


def paths_for(workspace) -> SidecarPaths:
    return SidecarPaths(os.path.realpath(workspace))


def start(workspace) -> dict:
    result = run_cli("-j", "sidecar", "start", cwd=workspace)
    assert result.returncode == 0, result.stderr
    return result.json()


def stats(workspace) -> dict:
    return run_cli("-j", "sidecar", "status", cwd=workspace).json()


def direct(args, workspace):
    return run_cli(*args, cwd=workspace, env={**os.environ, "JCLI_SIDECAR": "off"})


def log_lines(workspace) -> list[str]:
    with open(paths_for(workspace).log, encoding="utf-8") as fh:
        return fh.read().splitlines()


def raw_connection(workspace) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(paths_for(workspace).socket)
    return sock


def hello(sock, workspace) -> dict:
    args = {"protocol": PROTOCOL_VERSION, "version": __version__, "workspace": os.path.realpath(workspace)}
    sock.sendall(pack_frame({"id": 0, "op": "hello", "args": args}))
    return read_frame(sock)


# -- the basic loop -----------------------------------------------------------


def test_a_cold_read_falls_back_then_the_next_read_uses_the_spawned_sidecar(ws):
    expected = direct(READ, ws)
    cold = run_cli(*READ, cwd=ws)
    assert (cold.returncode, cold.stdout, cold.stderr) == (expected.returncode, expected.stdout, expected.stderr)
    assert wait_for_lock(paths_for(ws).spawn_lock, 30)  # the sidecar is listening (or dead)
    before = stats(ws)
    assert before["running"] and before["workspace"] == os.path.realpath(ws)
    warm = run_cli(*READ, cwd=ws)
    assert warm.stdout == expected.stdout
    assert stats(ws)["requests_served"] == before["requests_served"] + 2  # the read, then this status


def test_the_spawned_sidecar_is_detached_from_the_client(ws):
    assert run_cli(*READ, cwd=ws).returncode == 0  # returns: the sidecar kept no pipe of ours
    assert wait_for_lock(paths_for(ws).spawn_lock, 30)
    pid = stats(ws)["pid"]
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    assert os.readlink(f"/proc/{pid}/fd/1") == paths_for(ws).log
    assert os.readlink(f"/proc/{pid}/fd/2") == paths_for(ws).log
    assert os.getsid(pid) == pid  # its own session: no terminal, no signals from ours
    assert os.path.realpath(f"/proc/{pid}/cwd") == os.path.realpath(ws)


@pytest.mark.slow
def test_every_fixture_case_prints_the_same_through_the_sidecar(ws):
    start(ws)
    served_before = stats(ws)["requests_served"]
    cases = load_cases()
    for case in cases:
        request = json.dumps(case["request"]).encode()
        args = ["-j", "notebook", "output", "--request", "-"]
        via_sidecar = run_cli(*args, cwd=ws, stdin=request)
        in_process = run_cli(*args, cwd=ws, stdin=request, env={**os.environ, "JCLI_SIDECAR": "off"})
        assert (via_sidecar.returncode, via_sidecar.stdout, via_sidecar.stderr) == (
            in_process.returncode,
            in_process.stdout,
            in_process.stderr,
        ), case["name"]
    assert stats(ws)["requests_served"] >= served_before + len(cases)


def test_notebook_outputs_goes_through_notebook_list(ws):
    start(ws)
    result = run_cli("-j", "notebook", "outputs", "kernel_v4.5.ipynb", "--cell", "9", cwd=ws)
    assert result.stdout == direct(["-j", "notebook", "outputs", "kernel_v4.5.ipynb", "--cell", "9"], ws).stdout
    refused = run_cli(
        "-j",
        "notebook",
        "outputs",
        "--request",
        "-",
        cwd=ws,
        stdin=b'{"file_path": "kernel_v4.5.ipynb", "cell_index": 1, "output_index": 0}',
    )
    assert refused.returncode == 2 and refused.error()["code"] == "USAGE_ERROR"


def test_sidecar_off_never_spawns(fixture_dir, isolated_runtime):
    assert run_cli(*READ, cwd=fixture_dir).returncode == 0
    assert list(isolated_runtime.iterdir()) == []


@pytest.mark.parametrize("problem", ["group-readable", "symlink"])
def test_an_unsafe_runtime_dir_is_refused_and_reads_still_work(ws, isolated_runtime, problem, tmp_path):
    runtime = isolated_runtime / "jcli"
    if problem == "group-readable":
        runtime.mkdir(mode=0o750)
        runtime.chmod(0o750)
    else:
        target = tmp_path / "elsewhere"
        target.mkdir(mode=0o700)
        runtime.symlink_to(target)
    assert run_cli(*READ, cwd=ws).returncode == 0
    assert not any(runtime.iterdir())  # nothing spawned into it
    refused = run_cli("-j", "sidecar", "start", cwd=ws)
    assert refused.returncode == 1 and refused.error()["code"] == "RUNTIME_DIR_UNSAFE"


def test_the_socket_and_runtime_dir_are_private(ws, isolated_runtime):
    start(ws)
    paths = paths_for(ws)
    assert os.stat(paths.dir).st_mode & 0o777 == 0o700
    assert os.stat(paths.socket).st_mode & 0o777 == 0o600
    assert os.stat(paths.pid).st_mode & 0o777 == 0o600


def test_stop_and_status(ws):
    doc = start(ws)
    proc = psutil.Process(doc["pid"])
    stopped = run_cli("-j", "sidecar", "stop", cwd=ws)
    assert stopped.returncode == 0 and stopped.json()["stopped"] is True
    proc.wait(10)
    status = stats(ws)
    assert status["running"] is False
    assert not os.path.exists(paths_for(ws).socket) and not os.path.exists(paths_for(ws).pid)
    unit = run_cli("-j", "sidecar", "unit-name", cwd=ws).json()
    assert unit["socket_unit"] == f"jcli-sidecar@{paths_for(ws).hash}.socket"


def test_idle_timeout_stops_the_sidecar(ws, monkeypatch):
    monkeypatch.setenv("JCLI_SIDECAR_IDLE_SECONDS", "0.5")
    proc = psutil.Process(start(ws)["pid"])
    assert wait_for_lock(paths_for(ws).lock, 30)  # released as the process exits
    proc.wait(30)
    assert any("idle for 0.5 s" in line for line in log_lines(ws))


# -- concurrency, races and failures -------------------------------------------


def test_twenty_racing_cold_clients_start_exactly_one_sidecar(ws):
    expected = direct(READ, ws).stdout
    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda _: run_cli(*READ, cwd=ws), range(20)))
    assert all(r.returncode == 0 and r.stdout == expected for r in results)
    assert wait_for_lock(paths_for(ws).spawn_lock, 30)
    lines = log_lines(ws)
    assert sum("serving" in line for line in lines) == 1, lines
    assert not any("already serves" in line for line in lines), lines
    assert len(sidecars_under(os.environ["XDG_RUNTIME_DIR"])) == 1


def _stalled_sidecar(ws, monkeypatch, tmp_path):
    fifo = tmp_path / "stall.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("JCLI_SIDECAR_TEST_STALL_FIFO", str(fifo))
    doc = start(ws)
    monkeypatch.delenv("JCLI_SIDECAR_TEST_STALL_FIFO")
    return doc, fifo


def _read_lines(path, count: int, timeout: float = 30) -> list[str]:
    got: list[str] = []
    done = threading.Event()

    def reader():
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                got.append(line)
                if len(got) == count:
                    break
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    assert done.wait(timeout), f"only {len(got)} of {count} requests reached the stall"
    return got


@pytest.mark.slow
def test_kill_9_mid_request_every_client_still_answers_and_the_next_call_respawns(ws, monkeypatch, tmp_path):
    doc, fifo = _stalled_sidecar(ws, monkeypatch, tmp_path)
    expected = direct(READ, ws).stdout
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(run_cli, *READ, cwd=ws) for _ in range(4)]
        assert len(_read_lines(fifo, 4)) == 4  # all four are inside the sidecar now
        os.kill(doc["pid"], signal.SIGKILL)
        results = [f.result() for f in futures]
    assert all(r.returncode == 0 and r.stdout == expected for r in results)
    assert wait_for_lock(paths_for(ws).spawn_lock, 30)
    again = stats(ws)
    assert again["running"] and again["pid"] != doc["pid"]


def test_requests_on_one_connection_run_concurrently(ws, monkeypatch, tmp_path):
    doc, fifo = _stalled_sidecar(ws, monkeypatch, tmp_path)
    sock = raw_connection(ws)
    try:
        assert hello(sock, ws)["ok"]
        request = {"file_path": "kernel_v4.5.ipynb", "cell_index": 1}
        sock.sendall(pack_frame({"id": 1, "op": "notebook.read", "args": request}))
        _read_lines(fifo, 1)  # the read is stuck inside the sidecar
        sock.sendall(pack_frame({"id": 2, "op": "ping", "args": {}}))
        assert read_frame(sock) == {"id": 2, "ok": True, "result": {"pong": True}}
        other = raw_connection(ws)
        assert hello(other, ws)["ok"]
        other.close()
    finally:
        sock.close()
        os.kill(doc["pid"], signal.SIGKILL)


def test_stale_socket_and_pid_files_are_replaced(ws, isolated_runtime):
    paths = paths_for(ws)
    os.mkdir(paths.dir, 0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(paths.socket)  # a socket file nobody listens on
    dead.close()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with open(paths.pid, "w") as fh:
        json.dump({"pid": gone.pid, "create_time": 1.0, "workspace": paths.workspace}, fh)
    stale = run_cli("-j", "sidecar", "status", cwd=ws).json()
    assert stale["running"] is False and set(stale["stale_files"]) == {paths.socket, paths.pid}
    assert run_cli(*READ, cwd=ws).stdout == direct(READ, ws).stdout
    assert wait_for_lock(paths.spawn_lock, 30)
    fresh = stats(ws)
    assert fresh["running"]
    with open(paths.pid) as fh:
        assert json.load(fh)["pid"] == fresh["pid"]


def test_asking_an_old_sidecar_to_exit_reads_every_answer_before_closing(ws):
    """A socket closed with unread answers resets the connection, and a reset that reaches the
    sidecar before it read the ``shutdown`` loses it: the old sidecar then never exits."""
    from jcli_sidecar.sidecar.client import _ask_to_exit

    paths = paths_for(ws)
    old = start_old_sidecar(paths.workspace)
    try:
        sock = raw_connection(ws)
        try:
            sock.sendall(
                pack_frame(
                    {"id": 0, "op": "hello", "args": {"protocol": PROTOCOL_VERSION, "version": __version__, "workspace": paths.workspace}}
                )
            )
            sock.sendall(pack_frame({"id": 1, "op": "stats", "args": {}}))  # its answer is pending, as call()'s request is
            assert read_frame(sock)["result"]["version"] == "0.0.0-old"
            _ask_to_exit(sock)
            try:
                left = sock.recv(1, socket.MSG_DONTWAIT)
            except BlockingIOError:
                left = b""
            assert left == b""  # nothing left unread (the sidecar may have closed already)
        finally:
            sock.close()
        assert old.wait(30) == 0
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


def test_an_old_sidecar_that_never_answers_its_shutdown_holds_the_caller_only_for_the_connect_bound():
    """Asking another version to exit waits for its answer at most CONNECT_TIMEOUT, never a request's whole timeout."""
    from jcli_sidecar.sidecar.client import CONNECT_TIMEOUT, REQUEST_TIMEOUT, _ask_to_exit

    ours, old = socket.socketpair()
    try:
        ours.settimeout(REQUEST_TIMEOUT)  # as call() leaves it
        _ask_to_exit(ours)  # the old end reads nothing and answers nothing
        assert ours.gettimeout() == CONNECT_TIMEOUT
        old.settimeout(5)
        assert read_frame(old)["op"] == "shutdown"  # it was asked all the same
    finally:
        ours.close()
        old.close()


def test_a_sidecar_of_another_version_is_asked_to_exit_and_the_client_still_answers(ws):
    paths = paths_for(ws)
    old = start_old_sidecar(paths.workspace)
    try:
        with open(paths.pid) as fh:
            assert json.load(fh)["version"] == "0.0.0-old"
        result = run_cli(*READ, cwd=ws)
        assert result.returncode == 0 and result.stdout == direct(READ, ws).stdout
        assert old.wait(30) == 0  # the old one exited when asked
        assert wait_for_lock(paths.spawn_lock, 30)
        assert stats(ws)["version"] == __version__
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


# -- bad frames and strangers ---------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [HEADER.pack(5) + b"\xc1\xc1\xc1\xc1\xc1", HEADER.pack(2**31) + b"x", HEADER.pack(100) + b"short"],
    ids=["garbage", "huge-length", "closed-mid-frame"],
)
@pytest.mark.slow
def test_bad_frames_never_stop_the_server(ws, bad):
    start(ws)
    sock = raw_connection(ws)
    try:
        assert hello(sock, ws)["ok"]
        sock.sendall(bad)
        if bad.startswith(HEADER.pack(100)):
            sock.shutdown(socket.SHUT_WR)  # the peer goes away mid-frame
        else:
            reply = read_frame(sock)
            assert reply["ok"] is False and reply["error"]["code"] == "PROTOCOL_ERROR"
    finally:
        sock.close()
    assert run_cli(*READ, cwd=ws).stdout == direct(READ, ws).stdout
    assert stats(ws)["running"]


def test_the_first_frame_must_be_hello(ws):
    start(ws)
    sock = raw_connection(ws)
    try:
        sock.sendall(pack_frame({"id": 7, "op": "ping", "args": {}}))
        reply = read_frame(sock)
        assert reply["id"] == 7 and reply["error"]["code"] == "PROTOCOL_ERROR"
        assert sock.recv(1) == b""  # and the connection is closed
    finally:
        sock.close()


def test_unknown_ops_and_wrong_workspaces_get_coded_errors(ws, tmp_path):
    start(ws)
    sock = raw_connection(ws)
    try:
        args = {"protocol": PROTOCOL_VERSION, "version": __version__, "workspace": str(tmp_path)}
        sock.sendall(pack_frame({"id": 0, "op": "hello", "args": args}))
        assert read_frame(sock)["error"]["code"] == "PROTOCOL_ERROR"
    finally:
        sock.close()
    sock = raw_connection(ws)
    try:
        assert hello(sock, ws)["ok"]
        sock.sendall(pack_frame({"id": 3, "op": "notebook.delete_everything", "args": {}}))
        assert read_frame(sock)["error"]["code"] == "PROTOCOL_ERROR"
    finally:
        sock.close()


NOBODY_CLIENT = """
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(30)
sock.connect(sys.argv[1])
sock.sendall(bytes.fromhex(sys.argv[2]))
data = b""
while True:
    chunk = sock.recv(65536)
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.hex())
"""


def test_another_uid_is_refused_by_the_peer_check(ws, isolated_runtime):
    start(ws)
    paths = paths_for(ws)
    # Open the doors that would stop nobody earlier, so only SO_PEERCRED remains.
    temp_root = Path(tempfile.gettempdir())
    ancestors = [
        d for d in isolated_runtime.parents if d != temp_root and temp_root in d.parents
    ]  # pytest's dirs (one more per xdist worker)
    for directory in (*ancestors, isolated_runtime, paths.dir):
        os.chmod(directory, 0o755)
    os.chmod(paths.socket, 0o777)
    greeting = pack_frame({"id": 0, "op": "hello", "args": {"protocol": 1, "version": __version__, "workspace": paths.workspace}})
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--",
            "/usr/bin/python3",
            "-c",
            NOBODY_CLIENT,
            paths.socket,
            greeting.hex(),
        ],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    raw = bytes.fromhex(proc.stdout.decode())
    from jcli_sidecar.base.framing import unpack_payload

    reply = unpack_payload(raw[HEADER.size :])
    assert reply["ok"] is False and reply["error"]["code"] == "PEER_REFUSED"
    loose = run_cli("-j", "sidecar", "status", cwd=ws)  # our client refuses a loosened dir too
    assert loose.returncode == 1 and loose.error()["code"] == "RUNTIME_DIR_UNSAFE"
    os.chmod(paths.dir, 0o700)
    assert stats(ws)["running"]  # and it keeps serving its owner


# -- the warm path ---------------------------------------------------------------

IMPORT_PROBE = """
import sys
from jcli.__main__ import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    fh.write("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""


def test_a_warm_read_imports_nothing_heavy_and_not_the_reader(ws, tmp_path):
    start(ws)
    listing = tmp_path / "modules.txt"
    proc = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(listing), *READ], cwd=ws, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == direct(READ, ws).stdout
    loaded = set(listing.read_text().split())
    roots = {name.split(".")[0] for name in loaded}
    assert not roots & {"click", "nbformat", "psutil", "watchfiles", "mcp", "asyncio", "subprocess"}
    assert "jcli_sidecar.read.reader" not in loaded  # the answer came from the sidecar
    assert "jcli_sidecar.sidecar.client" in loaded


# -- the cache, end to end ---------------------------------------------------------


@pytest.mark.parametrize("atomic", [False, True], ids=["in-place", "rename"])
def test_a_notebook_changed_between_reads_is_read_fresh(ws, atomic):
    start(ws)
    args = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "1", "--output", "1"]
    assert run_cli(*args, cwd=ws).json()["stream"]["data"] == "warned\n"
    path = str(ws / "kernel_v4.5.ipynb")
    with open(path, "rb") as fh:
        data = fh.read().replace(b'"warned\\n"', b'"CHANGED\\n"')
    if atomic:
        with open(path + ".new", "wb") as fh:
            fh.write(data)
        os.replace(path + ".new", path)
    else:
        with open(path, "r+b") as fh:
            fh.write(data)
            fh.truncate()
    assert run_cli(*args, cwd=ws).json()["stream"]["data"] == "CHANGED\n"
    os.unlink(path)
    gone = run_cli(*args, cwd=ws)
    assert gone.returncode == 1 and gone.error()["code"] == "FILE_NOT_FOUND"


def test_repeated_reads_hit_the_cache(ws, monkeypatch):
    path = ws / "kernel_v4.5.ipynb"
    monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", "0")  # a just-copied file: trusted at once, no waiting
    start(ws)
    for _ in range(3):
        assert run_cli(*READ, cwd=ws).returncode == 0
    cache = stats(ws)["cache"]
    assert cache["entries"] == 1 and cache["misses"] == 1 and cache["hits"] == 2 and cache["builds"] == 1
    assert 0 < cache["bytes"] <= cache["budget_bytes"]
    assert path.stat().st_size > 0


def test_a_read_from_a_deleted_cwd_is_a_coded_error(ws, tmp_path):
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    script = "import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); from jcli.__main__ import main; sys.exit(main(sys.argv[2:]))"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(doomed), "-j", "notebook", "output", "nb.ipynb", "--cell", "0"],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert json.loads(proc.stderr)["code"] == "FILE_NOT_FOUND"
