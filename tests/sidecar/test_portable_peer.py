"""The sidecar's peer check and lifetime on a system that is not Linux, run here with the Linux facilities turned off.

macOS has no ``SO_PEERCRED`` (the peer's uid comes from ``LOCAL_PEERCRED``
or ``getpeereid``), no ``/proc``, no pidfds, no ``renameat2`` and no
glibc ``malloc_trim``. These tests turn those facilities off (the one kind
of fault they fake, and each says so): in this process with monkeypatch,
and in the real ``j-cli`` and sidecar processes with a ``sitecustomize``
on ``PYTHONPATH`` that removes them at start (each such process leaves a
mark, so a test knows the branch really ran). ``getpeereid`` is the real
call (glibc lacks it; libbsd's asks the kernel the same way macOS's
does); the other user is real (``nobody``, through setpriv).
"""

from __future__ import annotations

import os
import pwd
import socket
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers import DROP, run_cli, sidecars_under, start_sidecar_by_hand
from test_sidecar import NOBODY_CLIENT, READ, direct, paths_for

from jcli_sidecar import __version__
from jcli_sidecar.base import procfs
from jcli_sidecar.base.framing import HEADER, pack_frame, read_frame, unpack_payload
from jcli_sidecar.sidecar import memory, peercred

#: Turns the Linux facilities off in a process at its start (the faked fault), and marks the process as changed.
NOT_LINUX = """
import os, socket
del socket.SO_PEERCRED
if hasattr(os, "pidfd_open"):
    del os.pidfd_open
from jcli_sidecar.base import procfs, swap
procfs.PROC_ROOT = "/nonexistent-proc"
swap._CALL[:] = [None]
from jcli_sidecar.sidecar import memory, peercred
memory._libc = False
if os.environ.get("JCLI_TEST_NO_PEER_CHECK"):
    peercred._GETPEEREID[:] = [None]
open(os.path.join(os.path.dirname(__file__), f"ran-{os.getpid()}"), "w").close()
"""


@pytest.fixture
def not_linux(tmp_path):
    """``(env, marks)``: an environment whose Python processes run without the Linux facilities, and where they mark that they did."""
    site = tmp_path / "not-linux"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NOT_LINUX)
    return dict(os.environ, PYTHONPATH=str(site)), site


def _ran_there(site: Path, pid: int) -> bool:
    return (site / f"ran-{pid}").exists()


@pytest.fixture
def ws(fixture_dir, sidecar_on):
    return fixture_dir


# -- peer_uid, in this process ----------------------------------------------------


def test_without_so_peercred_the_peer_s_uid_comes_from_getpeereid(monkeypatch):
    """``SO_PEERCRED`` is hidden (the faked fault); the lookup is fresh and finds the real getpeereid."""
    monkeypatch.delattr(socket, "SO_PEERCRED")
    monkeypatch.setattr(peercred, "_GETPEEREID", [])
    one, other = socket.socketpair(socket.AF_UNIX)
    with one, other:
        assert peercred.peer_uid(one) == os.geteuid()
    assert peercred._GETPEEREID[0] is not None  # the branch ran the C call, not a default


def test_without_any_peer_check_the_peer_is_unknown_and_a_socket_that_is_not_unix_too(monkeypatch):
    """``SO_PEERCRED`` is hidden and getpeereid's lookup finds nothing (the faked faults): no uid, never a guess."""
    with socket.socket() as tcp:  # the kernel refuses to name a TCP socket's peer: unknown, not an exception
        assert peercred.peer_uid(tcp) is None
    monkeypatch.delattr(socket, "SO_PEERCRED")
    monkeypatch.setattr(peercred, "_GETPEEREID", [None])
    one, other = socket.socketpair(socket.AF_UNIX)
    with one, other:
        assert peercred.peer_uid(one) is None


def test_an_xucred_gives_its_uid_only_in_the_version_known():
    """``LOCAL_PEERCRED`` exists only on macOS and FreeBSD: its struct is read from bytes laid out as their kernels write them."""
    groups = [20, 12, 61] + [0] * 13
    assert peercred.xucred_uid(struct.pack("=IIh2x16I", 0, 501, 3, *groups)) == 501
    assert peercred.xucred_uid(struct.pack("=IIh2x16I", 0, 0, 1, *groups)) == 0
    assert peercred.xucred_uid(struct.pack("=IIh2x16I", 1, 501, 3, *groups)) is None  # another version: not read as ours
    assert peercred.xucred_uid(b"\0\0\0\0\xf5\x01") is None  # short: nothing
    assert peercred.xucred_uid(b"") is None


def test_without_glibc_s_calls_nothing_is_trimmed_and_memory_is_still_reported(monkeypatch, tmp_path):
    """The C library has no malloc_trim nor mallopt (macOS, musl: the faked fault is their lookup finding none), and no /proc."""
    monkeypatch.setattr(memory, "_libc", False)
    assert memory.trim() is False and memory.limit_arenas() is False
    trimmer = memory.Trimmer()
    trimmer.sent(memory.TRIM_AFTER_BYTES)
    trimmer.idle()  # the end of a burst: the trim is asked, does nothing, and is counted as asked
    assert trimmer.trims == 1 and trimmer.sent_since_trim == 0
    with open(f"/proc/{os.getpid()}/status", "rb") as fh:  # the real figure, read here to compare
        vm_rss = next(int(line.split()[1]) * 1024 for line in fh if line.startswith(b"VmRSS:"))
    monkeypatch.setattr(procfs, "PROC_ROOT", str(tmp_path))
    rss = trimmer.stats()["rss_bytes"]  # psutil's
    assert isinstance(rss, int) and abs(rss - vm_rss) < vm_rss // 4


NOBODY_CONNECTS = """
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
sock.recv(1)
"""


def test_without_so_peercred_another_user_is_named_by_getpeereid(monkeypatch):
    """``SO_PEERCRED`` is hidden (the faked fault); ``nobody`` really connects, through setpriv."""
    monkeypatch.delattr(socket, "SO_PEERCRED")
    folder = Path(tempfile.mkdtemp(prefix="jcli-peer-", dir="/tmp"))  # a path nobody can reach
    try:
        folder.chmod(0o755)
        path = str(folder / "s")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            os.chmod(path, 0o777)
            listener.listen()
            listener.settimeout(60)
            client = subprocess.Popen([*DROP, "/usr/bin/python3", "-c", NOBODY_CONNECTS, path], stderr=subprocess.PIPE)
            try:
                conn, _ = listener.accept()
                with conn:
                    assert peercred.peer_uid(conn) == pwd.getpwnam("nobody").pw_uid
            finally:
                _, err = client.communicate(timeout=60)
            assert client.returncode == 0, err
    finally:
        for name in os.listdir(folder):
            os.unlink(folder / name)
        folder.rmdir()


# -- a real sidecar and j-cli without the Linux facilities ---------------------------


def _nobody_hello(paths) -> dict:
    """``nobody``'s hello on the sidecar's socket (the doors before the peer check opened), and the sidecar's answer."""
    temp_root = Path(tempfile.gettempdir())
    runtime = Path(paths.dir).parent
    ancestors = [d for d in runtime.parents if d != temp_root and temp_root in d.parents]
    for directory in (*ancestors, runtime, Path(paths.dir)):
        os.chmod(directory, 0o755)
    os.chmod(paths.socket, 0o777)
    try:
        greeting = pack_frame({"id": 0, "op": "hello", "args": {"protocol": 1, "version": __version__, "workspace": paths.workspace}})
        proc = subprocess.run(
            [*DROP, "/usr/bin/python3", "-c", NOBODY_CLIENT, paths.socket, greeting.hex()], capture_output=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        raw = bytes.fromhex(proc.stdout.decode())
        return unpack_payload(raw[HEADER.size :])
    finally:
        os.chmod(paths.dir, 0o700)


def test_a_sidecar_without_the_linux_facilities_serves_its_owner_refuses_nobody_and_stops(ws, not_linux):
    """The sidecar and every j-cli here run without SO_PEERCRED, /proc, pidfds, renameat2 and malloc_trim (the faked faults)."""
    env, site = not_linux
    started = run_cli("-j", "sidecar", "start", cwd=ws, env=env)
    assert started.returncode == 0, started.stderr
    pid = started.json()["pid"]
    assert _ran_there(site, pid)  # the sidecar itself runs the other branches
    served = run_cli("-j", "sidecar", "status", cwd=ws, env=env).json()["requests_served"]
    warm = run_cli(*READ, cwd=ws, env=env)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == direct(READ, ws).stdout
    status = run_cli("-j", "sidecar", "status", cwd=ws, env=env).json()
    assert status["pid"] == pid and status["requests_served"] >= served + 2  # the read went to the sidecar: its owner passed
    assert isinstance(status["memory"]["rss_bytes"], int) and status["memory"]["rss_bytes"] > 0  # psutil's, without /proc
    reply = _nobody_hello(paths_for(ws))
    assert reply["ok"] is False and reply["error"]["code"] == "PEER_REFUSED"
    assert run_cli("-j", "sidecar", "status", cwd=ws, env=env).json()["pid"] == pid  # and it keeps serving its owner
    stopped = run_cli("-j", "sidecar", "stop", cwd=ws, env=env)
    assert stopped.returncode == 0 and stopped.json()["stopped"] is True
    assert run_cli("-j", "sidecar", "status", cwd=ws, env=env).json()["running"] is False


def test_where_no_peer_check_exists_no_one_is_served_unchecked_and_every_read_is_still_answered(ws, not_linux, sidecar_on):
    """No SO_PEERCRED, LOCAL_PEERCRED nor getpeereid (the faked faults): no sidecar starts, a client trusts none, one refuses all."""
    env, site = not_linux
    blind = dict(env, JCLI_TEST_NO_PEER_CHECK="1")
    expected = direct(READ, ws).stdout
    refused = run_cli("-j", "sidecar", "start", cwd=ws, env=blind)
    assert refused.returncode == 1 and refused.error()["code"] == "SIDECAR_UNAVAILABLE"
    assert "no way to tell who connects" in refused.error()["message"]
    read = run_cli(*READ, cwd=ws, env=blind)  # a cold read: in-process, and no sidecar spawned for the next one
    assert read.returncode == 0 and read.stdout == expected, read.stderr
    assert sidecars_under(sidecar_on) == []
    started = run_cli("-j", "sidecar", "start", cwd=ws)  # a sidecar that can check (Linux's) ...
    assert started.returncode == 0, started.stderr
    before = run_cli("-j", "sidecar", "status", cwd=ws).json()["requests_served"]
    read = run_cli(*READ, cwd=ws, env=blind)  # ... and a client that cannot check who serves it
    assert read.returncode == 0 and read.stdout == expected, read.stderr
    assert run_cli("-j", "sidecar", "status", cwd=ws).json()["requests_served"] == before + 1  # only the status: never asked
    assert run_cli("-j", "sidecar", "stop", cwd=ws).json()["stopped"] is True
    blind_sidecar = start_sidecar_by_hand(str(ws), env=blind)  # a sidecar that cannot check its peers (started by hand: spawn would not)
    try:
        assert _ran_there(site, blind_sidecar.pid)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # its owner, checked on this side
            sock.settimeout(30)
            sock.connect(paths_for(ws).socket)
            args = {"protocol": 1, "version": __version__, "workspace": paths_for(ws).workspace}
            sock.sendall(pack_frame({"id": 0, "op": "hello", "args": args}))
            reply = read_frame(sock)
        assert reply["ok"] is False and reply["error"]["code"] == "PEER_REFUSED"
        read = run_cli(*READ, cwd=ws)
        assert read.returncode == 0 and read.stdout == expected, read.stderr
    finally:
        blind_sidecar.terminate()
        blind_sidecar.wait(30)
