"""The sidecar process: ``jcli-sidecar serve`` from start to exit.

:func:`serve` takes the workspace's lifetime lock (a second sidecar exits at
once), binds the socket (or takes systemd's), writes the pid file, releases
the spawn lock its spawner handed over, then runs a
:class:`~jcli_sidecar.sidecar.server.Sidecar` on an asyncio loop until it stops. On
the way out it removes only the files that are still its own, and if a
worker thread is still stuck in a request (threads cannot be cancelled) it
exits at once rather than wait for it: SIGTERM always ends the process
within the server's stop grace.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import socket

from ..base import SETTINGS, SPAWN_LOCK_FD_ENV, JcliError, SidecarPaths, ensure_runtime_dir, os_reason
from ..base import STALL_AT_ENV as EXEC_STALL_AT_ENV
from ..base import STALL_FIFO_ENV as EXEC_STALL_FIFO_ENV
from .memory import limit_arenas
from .pidfile import unlink_pid_file_if_ours, write_pid_file
from .server import LISTEN_BACKLOG, Sidecar

__all__ = ["DEFAULT_IDLE_SECONDS", "serve"]

log = logging.getLogger("jcli_sidecar")

DEFAULT_IDLE_SECONDS = SETTINGS["JCLI_SIDECAR_IDLE_SECONDS"].default


def _systemd_listener() -> socket.socket | None:
    """The socket systemd passed (``LISTEN_FDS``/``LISTEN_PID``), if any."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()):
        return None
    if int(os.environ.get("LISTEN_FDS", "0") or 0) < 1:
        return None
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)  # not for our children
    listener = socket.socket(fileno=3)
    os.set_inheritable(3, False)
    return listener


def _idle_seconds() -> float:
    from ..base import setting

    return setting("JCLI_SIDECAR_IDLE_SECONDS")


def _release_spawn_lock() -> None:
    raw = os.environ.pop(SPAWN_LOCK_FD_ENV, None)
    if raw and raw.isdigit():
        try:
            os.close(int(raw))
        except OSError:  # already closed: the lock is released either way
            pass


def serve(workspace: str | None = None, instance: str | None = None) -> int:
    """Run a sidecar for ``workspace`` (or, socket-activated, for ``instance``).

    Returns:
        0 when it served and stopped, or when another sidecar already
        serves the workspace; 1 when it cannot start.
    """
    limit_arenas()  # before any thread: freed memory is shared, not stranded per worker
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(levelname)s %(message)s")
    for name in (EXEC_STALL_FIFO_ENV, EXEC_STALL_AT_ENV):  # the exec client's test hooks stall that client, never a run in here
        os.environ.pop(name, None)
    listener = _systemd_listener()
    try:
        directory = ensure_runtime_dir(create=True)
    except (OSError, JcliError) as exc:
        log.error("runtime dir unusable: %s", getattr(exc, "message", exc))
        _release_spawn_lock()
        return 1
    paths = SidecarPaths(workspace, directory) if workspace else SidecarPaths.for_instance(instance, directory)
    if listener is None and not paths.socket_fits():
        try:
            paths.check_socket()
        except JcliError as exc:
            log.error("%s", exc.message)
        _release_spawn_lock()
        return 1
    lock_fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    bound_inode = None
    sidecar: Sidecar | None = None
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("another sidecar already serves %s", paths.socket)
            return 0
        if listener is None:
            # We hold the lifetime lock, so a socket file left here is stale.
            try:
                os.unlink(paths.socket)
            except FileNotFoundError:
                pass
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old_umask = os.umask(0o177)
            try:
                listener.bind(paths.socket)
            except OSError as exc:
                log.error("cannot listen on %s: %s", paths.socket, os_reason(exc))
                listener.close()
                return 1
            finally:
                os.umask(old_umask)
            listener.listen(LISTEN_BACKLOG)
            bound_inode = os.stat(paths.socket).st_ino
        if workspace:
            os.chdir(workspace)
        write_pid_file(paths, workspace)
        if workspace:
            _settle_lost_jobs(workspace)
        # logged before the lock goes: whoever wakes on it may read the log at once
        log.info("serving %s on %s (pid %d)", workspace or f"instance {instance}", paths.socket, os.getpid())
        _release_spawn_lock()
        sidecar = Sidecar(paths, workspace, _idle_seconds())
        asyncio.run(sidecar.run(listener))
        return 0
    finally:
        _release_spawn_lock()
        if bound_inode is not None:
            _unlink_if(paths.socket, lambda st: st.st_ino == bound_inode)
        unlink_pid_file_if_ours(paths.pid)
        os.close(lock_fd)
        if sidecar is not None and sidecar.busy:
            _exit_now()


def _settle_lost_jobs(workspace: str) -> None:
    """End the jobs a dead sidecar of this workspace left running, and clear their notebooks' running marks.

    Before the spawn lock goes, so the call that started this sidecar finds
    them settled. Best effort: a failure is logged, never stops the sidecar.
    """
    from ..runs import settle_lost_jobs

    try:
        for done in settle_lost_jobs(workspace):
            log.info("settled lost job %s (running marks cleared: %s)", done["job_id"], done["marks_cleared"])
    except (JcliError, OSError) as exc:
        log.warning("could not settle lost jobs: %s", exc)


def _exit_now() -> None:
    """Exit without joining the worker threads (one is stuck in a request)."""
    logging.shutdown()
    os._exit(0)


def _unlink_if(path: str, test) -> None:
    try:
        if test(os.stat(path)):
            os.unlink(path)
    except OSError:  # already gone, or not ours to look at: nothing to remove
        pass
