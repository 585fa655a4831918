"""The base's branches for systems that are not Linux, run here with the Linux facility turned off.

macOS and the BSDs have no ``/proc`` and no ``renameat2``; there the
process checks ask psutil and a checked write moves the old file aside,
checks it and links the new one in. Those branches cannot be reached on
Linux for real, so each test here turns the one Linux facility off (the one
kind of fault these tests fake, and each says so): ``/proc`` through its
single seam (:data:`jcli_sidecar.base.procfs.PROC_ROOT` pointed at a
directory without ``self/stat``), ``renameat2`` by making its lookup find
nothing, pidfds by hiding ``os.pidfd_open``. Everything else is real:
processes started, stopped, killed and reaped, files saved over by another
writer at a stall point, a writer killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from jcli_sidecar.base import procfs, tempnames
from jcli_sidecar.base import stall as stall_module
from jcli_sidecar.base import swap as swap_module
from jcli_sidecar.base.errors import NotebookChanged
from jcli_sidecar.base.fileio import write_text_atomic
from jcli_sidecar.base.process_record import ALIVE, GONE, ProcessRecord, wait_for_exit
from jcli_sidecar.base.tempnames import clean_dead_temps, temp_path


@pytest.fixture
def no_proc(monkeypatch, tmp_path):
    """A system without ``/proc`` (macOS, the BSDs): the faked fault is ``PROC_ROOT`` pointed at an empty directory."""
    empty = tmp_path / "no-proc"
    empty.mkdir()
    monkeypatch.setattr(procfs, "PROC_ROOT", str(empty))
    assert procfs.proc_root() is None
    return empty


@pytest.fixture
def no_renameat2(monkeypatch):
    """A C library without ``renameat2`` (macOS, the BSDs, an old glibc): the faked fault is its lookup finding nothing."""
    monkeypatch.setattr(swap_module, "_CALL", [None])
    assert not swap_module.can_exchange()


@pytest.fixture
def stranger():
    """A live process of ours that waits on its stdin (closing it ends the process; nobody reaps it until the test does)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.stdin.close()
    proc.wait(10)


def _proc_ticks(pid: int) -> int:
    """The start ticks ``/proc`` gives (read here directly, to compare the two branches)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        stat = fh.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[19])


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(done.stdout)


# -- is this still the process we recorded? ----------------------------------------


def test_without_proc_a_live_record_is_alive_and_a_reused_dead_or_foreign_one_is_gone(no_proc, stranger):
    """/proc is turned off (the faked fault): psutil answers alone, and answers as /proc does."""
    me = ProcessRecord.current()
    assert ProcessRecord.from_dict(json.loads(json.dumps(me.to_dict()))).state() == ALIVE
    assert me.process().pid == os.getpid()
    real = ProcessRecord.of_pid(stranger.pid).to_dict()
    assert ProcessRecord.from_dict(real).state() == ALIVE
    assert ProcessRecord.from_dict(dict(real, create_time=real["create_time"] - 100)).state() == GONE  # the pid reused
    assert ProcessRecord.from_dict(dict(real, create_time=real["create_time"] + 0.5)).state() == GONE  # reused by a later one
    assert ProcessRecord.from_dict(dict(real, uid=real["uid"] + 1)).state() == GONE  # another user's process now
    assert ProcessRecord.from_dict(dict(real, pid=_dead_pid())).state() == GONE
    assert ProcessRecord.from_dict(dict(real, pid=_dead_pid())).process() is None


def test_without_proc_a_stopped_process_is_stopped_and_one_that_exited_unreaped_is_gone(no_proc, stranger):
    """/proc is turned off (the faked fault): SIGSTOP reads as stopped, SIGCONT as running, a zombie as gone."""
    record = ProcessRecord.of_pid(stranger.pid)
    assert not record.stopped()
    os.kill(stranger.pid, signal.SIGSTOP)
    try:
        _, status = os.waitpid(stranger.pid, os.WUNTRACED)  # returns once the kernel has stopped it
        assert os.WIFSTOPPED(status)
        assert record.state() == ALIVE and record.stopped()
    finally:
        os.kill(stranger.pid, signal.SIGCONT)
    _, status = os.waitpid(stranger.pid, os.WCONTINUED)
    assert os.WIFCONTINUED(status) and not record.stopped()
    stranger.stdin.close()  # it exits; nobody reaps it yet
    os.waitid(os.P_PID, stranger.pid, os.WEXITED | os.WNOWAIT)  # returns once it has exited, leaving it unreaped
    assert psutil.Process(stranger.pid).status() == psutil.STATUS_ZOMBIE
    assert record.state() == GONE and not record.stopped() and record.process() is None


def test_without_proc_only_the_process_holding_a_listener_passes_for_it(no_proc, stranger):
    """/proc is turned off (the faked fault): psutil's socket list decides, for IPv4 and the wildcard."""
    me = ProcessRecord.current()
    for address in ("127.0.0.1", "0.0.0.0"):
        with socket.socket() as sock:
            sock.bind((address, 0))
            sock.listen()
            port = sock.getsockname()[1]
            assert me.listens_on("127.0.0.1", port)
            assert not ProcessRecord.of_pid(stranger.pid).listens_on("127.0.0.1", port)  # alive, but not the listener
        assert not me.listens_on("127.0.0.1", port)  # closed: nobody listens there now
    with socket.socket(socket.AF_INET6) as sock:  # a dual-stack wildcard listener
        sock.bind(("::", 0))
        sock.listen()
        assert me.listens_on("127.0.0.1", sock.getsockname()[1])
    reused = ProcessRecord.from_dict(dict(me.to_dict(), create_time=me.create_time - 100))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert not reused.listens_on("127.0.0.1", sock.getsockname()[1])  # the pid listens, but is not the recorded process


#: A parent that never reaps its child until told: a line on stdin ends the child, a second one reaps it.
UNREAPING_PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
print(child.pid, flush=True)
sys.stdin.readline()
child.stdin.close()
sys.stdin.readline()
child.wait()
"""


@pytest.mark.parametrize("facility", ["linux", "no-proc-no-pidfd"])
def test_a_wait_for_exit_ends_when_the_process_exits_not_when_it_is_reaped(request, monkeypatch, facility):
    """Without pidfds (macOS: the faked fault is ``os.pidfd_open`` hidden, and /proc off) the state is polled; it ends as soon.

    The process is another's child (an unreaping parent), as the detached
    sidecar and server are init's: this wait can never reap it.
    """
    if facility == "no-proc-no-pidfd":
        request.getfixturevalue("no_proc")
        monkeypatch.delattr(os, "pidfd_open")
    parent = subprocess.Popen([sys.executable, "-c", UNREAPING_PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        assert not wait_for_exit(child, 0.05)  # alive: the wait runs out
        parent.stdin.write("end\n")
        parent.stdin.flush()
        assert wait_for_exit(child, 3600)  # returns at the exit: a wait that ran to its timeout would end the test at the suite's
        assert child.status() == psutil.STATUS_ZOMBIE  # ended, not reaped: the wait did not wait for that
        parent.stdin.write("reap\n")
        parent.stdin.flush()
        assert parent.wait(30) == 0
        assert wait_for_exit(child, 60)  # reaped and gone: at once
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.communicate(timeout=10)  # closes its pipes


# -- temp files named by their writer --------------------------------------------


def test_without_proc_a_writer_s_start_is_the_number_proc_gives(no_proc, stranger):
    """/proc is turned off (the faked fault) for the code; the test reads the real /proc to compare: the two branches name a writer alike."""
    for pid in (os.getpid(), stranger.pid):
        assert tempnames._start_ticks(pid) == _proc_ticks(pid)
    assert tempnames._start_ticks(_dead_pid()) is None


def test_without_proc_only_temp_files_of_writers_that_are_gone_are_cleaned(no_proc, tmp_path, stranger):
    """/proc is turned off (the faked fault): dead and reused writers' files go, a live writer's and a stranger's stay."""
    nb = tmp_path / "nb.ipynb"
    nb.write_text("the notebook")
    live, dead = stranger.pid, _dead_pid()
    ticks = _proc_ticks(live)
    files = {
        "mine": Path(temp_path(str(nb), "tmp")),
        "live": tmp_path / f".nb.ipynb.jcli-{live}-{ticks}-0123abcd.tmp",
        "live-unknown-start": tmp_path / f".nb.ipynb.jcli-{live}-0-0123abcd.tmp",
        "dead": tmp_path / f".nb.ipynb.jcli-{dead}-{ticks}-0123abcd.tmp",
        "reused-earlier": tmp_path / f".nb.ipynb.jcli-{live}-{ticks - 500}-0123abcd.tmp",
        "reused-later": tmp_path / f".nb.ipynb.jcli-{live}-{ticks + 500}-0123abcd.rewrite",
        "another-file": tmp_path / f".other.ipynb.jcli-{dead}-{ticks}-0123abcd.tmp",
        "another-user": tmp_path / f".nb.ipynb.jcli-{dead}-{ticks}-4567cdef.tmp",
    }
    for path in files.values():
        path.write_text("the notebook" if path.suffix == ".rewrite" else "x")
    os.chown(files["another-user"], pwd.getpwnam("nobody").pw_uid, -1)
    gone = {"dead", "reused-earlier", "reused-later"}
    assert sorted(clean_dead_temps(str(nb))) == sorted(files[name].name for name in gone)
    assert {name for name, path in files.items() if not path.exists()} == gone
    assert nb.read_text() == "the notebook"


def test_without_proc_a_dead_writer_s_moved_aside_notebook_goes_back_and_never_over_a_newer_save(no_proc, tmp_path):
    """/proc is turned off (the faked fault): the ``.old`` file of a dead writer is linked back only where the name is free."""
    nb = tmp_path / "nb.ipynb"
    dead = _dead_pid()
    aside = tmp_path / f".nb.ipynb.jcli-{dead}-1-0123abcd.old"
    aside.write_text("the notebook")
    assert clean_dead_temps(str(nb)) == [aside.name]
    assert nb.read_text() == "the notebook" and not aside.exists()
    aside.write_text("an older copy")
    assert clean_dead_temps(str(nb)) == [aside.name]  # the notebook holds the name: the newer save stays
    assert nb.read_text() == "the notebook" and not aside.exists()


# -- the checked write without renameat2 -------------------------------------------


def _notebook(path: Path, source: str) -> bytes:
    data = json.dumps({"cells": [{"cell_type": "code", "source": source}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    path.write_bytes(data)
    return data


def _key(path: Path):
    return swap_module.file_key(os.stat(path))


def _at_stall(monkeypatch, tmp_path, step: str, action):
    """Run ``action`` (on a helper thread) while the write stands at ``step``; the stall hook, a FIFO, no sleep."""
    fifo = tmp_path / "stall.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv(stall_module.STALL_FIFO_ENV, str(fifo))
    monkeypatch.setenv(stall_module.STALL_AT_ENV, step)
    monkeypatch.setattr(stall_module, "_STALLED", set())
    failures: list[BaseException] = []

    def act() -> None:
        try:
            with open(fifo, encoding="utf-8") as stalled:
                assert stalled.readline() == f"stalled {step}\n"
            action()
        except BaseException as exc:  # handed to the test, which fails on it
            failures.append(exc)
        finally:
            with open(fifo, "w", encoding="utf-8"):
                pass

    helper = threading.Thread(target=act, daemon=True)
    helper.start()
    return helper, failures


def _temps(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if ".jcli-" in name and name.startswith("."))


def test_without_renameat2_an_unchanged_notebook_is_replaced_and_nothing_is_left_beside_it(no_renameat2, tmp_path):
    """``renameat2`` is turned off (the faked fault): move aside, check, link in; a hard link and the mode are kept."""
    nb = tmp_path / "nb.ipynb"
    _notebook(nb, "x = 1")
    nb.chmod(0o640)
    write_text_atomic(str(nb), "OURS", expect=_key(nb))
    assert nb.read_text() == "OURS" and (nb.stat().st_mode & 0o777) == 0o640 and _temps(tmp_path) == []
    os.link(nb, tmp_path / "twin.ipynb")
    write_text_atomic(str(nb), "NEWER", expect=_key(nb))
    assert (tmp_path / "twin.ipynb").read_text() == "NEWER" and _temps(tmp_path) == []


@pytest.mark.parametrize("how", ["renamed-over", "created", "hard-linked"])
def test_without_renameat2_a_save_landing_while_the_name_is_free_stays_and_ours_is_kept(monkeypatch, no_renameat2, tmp_path, how):
    """``renameat2`` is turned off (the faked fault); the other program's save lands in the moment the old file is aside."""
    nb = tmp_path / "nb.ipynb"
    _notebook(nb, "x = 1")
    theirs = json.dumps({"saved": "by someone else"}).encode()

    def save() -> None:
        if how == "renamed-over":  # JupyterLab's way: a temp file renamed onto the name
            (tmp_path / ".~nb.ipynb").write_bytes(theirs)
            os.rename(tmp_path / ".~nb.ipynb", nb)
        elif how == "created":
            nb.write_bytes(theirs)
        else:
            (tmp_path / "elsewhere.ipynb").write_bytes(theirs)
            os.link(tmp_path / "elsewhere.ipynb", nb)

    helper, failures = _at_stall(monkeypatch, tmp_path, "test:swap:aside", save)
    with pytest.raises(NotebookChanged) as caught:
        write_text_atomic(str(nb), "OURS", expect=_key(nb), stall="test:swap")
    helper.join(60)
    assert failures == []
    kept = Path(caught.value.details["kept"])
    assert nb.read_bytes() == theirs  # their save, byte for byte
    assert kept.read_text() == "OURS" and kept.parent == tmp_path  # ours, beside it
    assert _temps(tmp_path) == []


def test_without_renameat2_a_save_landing_before_the_move_is_put_back(monkeypatch, no_renameat2, tmp_path):
    """``renameat2`` is turned off (the faked fault); the save lands after the last look and before the move aside."""
    nb = tmp_path / "nb.ipynb"
    _notebook(nb, "x = 1")
    theirs = _notebook(tmp_path / "theirs.ipynb", "edited")
    helper, failures = _at_stall(monkeypatch, tmp_path, "test:swap", lambda: os.rename(tmp_path / "theirs.ipynb", nb))
    with pytest.raises(NotebookChanged) as caught:
        write_text_atomic(str(nb), "OURS", expect=_key(nb), stall="test:swap")
    helper.join(60)
    assert failures == []
    assert nb.read_bytes() == theirs and Path(caught.value.details["kept"]).read_text() == "OURS"
    assert _temps(tmp_path) == []


KILLED_WRITER = """
import sys
from jcli_sidecar.base import swap
from jcli_sidecar.base.fileio import write_text_atomic
swap._CALL[:] = [None]  # renameat2 turned off, as on macOS (the faked fault)
write_text_atomic(sys.argv[1], "OURS", expect=swap.file_key(__import__("os").stat(sys.argv[1])), stall="test:swap")
"""


def test_without_renameat2_a_writer_killed_while_the_name_is_free_loses_nothing(no_proc, tmp_path):
    """``renameat2`` is turned off in the writer (the faked fault), ``/proc`` in the cleaner; the kill is a real SIGKILL.

    The notebook is aside under the writer's name for that moment; the next
    write of the notebook (its cleaner) puts it back, byte for byte.
    """
    nb = tmp_path / "nb.ipynb"
    before = _notebook(nb, "x = 1")
    fifo = tmp_path / "stall.fifo"
    os.mkfifo(fifo)
    env = dict(os.environ, **{stall_module.STALL_FIFO_ENV: str(fifo), stall_module.STALL_AT_ENV: "test:swap:aside"})
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(nb)], env=env, stderr=subprocess.PIPE)
    try:
        with open(fifo, encoding="utf-8") as stalled:
            assert stalled.readline() == "stalled test:swap:aside\n", writer.stderr
        writer.kill()
        writer.wait(30)
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.stderr.close()
    assert not nb.exists()  # the name was free when the writer died
    left = _temps(tmp_path)
    assert sorted(name.rsplit(".", 1)[1] for name in left) == ["old", "tmp"]
    assert sorted(clean_dead_temps(str(nb))) == left
    assert nb.read_bytes() == before and _temps(tmp_path) == []


# -- the socket path's limit ---------------------------------------------------------


def test_with_macos_s_shorter_socket_paths_a_runtime_dir_too_long_for_them_is_refused_before_binding(monkeypatch, tmp_path):
    """The limit is macOS's (104 bytes in ``sun_path``; the faked fault is the constant set to it): 105 bytes are refused, 103 pass."""
    from jcli_sidecar.base import runtime
    from jcli_sidecar.base.errors import RuntimeDirUnusable

    monkeypatch.setattr(runtime, "MAX_SOCKET_PATH", 103)
    for size, fits in ((103, True), (104, False), (105, False)):
        paths = runtime.SidecarPaths(str(tmp_path))
        suffix = len(os.fsencode(paths.socket)) - len(os.fsencode(paths.dir))
        folder = tmp_path / ("d" * (size - suffix - len(os.fsencode(str(tmp_path))) - 1))
        paths = runtime.SidecarPaths(str(tmp_path), str(folder))
        assert len(os.fsencode(paths.socket)) == size
        assert paths.socket_fits() is fits
        if fits:
            paths.check_socket()
        else:
            with pytest.raises(RuntimeDirUnusable, match=f"{size} bytes, over the 103"):
                paths.check_socket()


# -- a byte range copied without copy_file_range -------------------------------------


@pytest.mark.parametrize("facility", ["copy_file_range", "none"])
def test_a_splice_of_byte_ranges_writes_the_same_bytes_without_copy_file_range(monkeypatch, no_renameat2, tmp_path, facility):
    """``os.copy_file_range`` is Linux's (the faked fault: it is hidden, as on macOS); the ranges are then read and written here."""
    from jcli_sidecar.base import fileio

    if facility == "none":
        monkeypatch.delattr(os, "copy_file_range")
    monkeypatch.setattr(fileio, "_COPY_CHUNK", 4096)  # several chunks per range, so the loop is what is tested
    nb = tmp_path / "nb.ipynb"
    original = bytes(range(256)) * 200  # 51,200 bytes
    nb.write_bytes(original)
    fd = os.open(nb, os.O_RDONLY)
    try:
        fileio.write_pieces_atomic(str(nb), [(0, 10_000), b"<CELL>", (30_000, 51_200)], source_fd=fd, expect=_key(nb))
    finally:
        os.close(fd)
    assert nb.read_bytes() == original[:10_000] + b"<CELL>" + original[30_000:]
    assert _temps(tmp_path) == []
