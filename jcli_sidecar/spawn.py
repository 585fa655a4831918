"""Starting, finding and stopping a workspace's sidecar.

Spawning is lazy and single-flight. The spawner takes ``<hash>.spawn.lock``
without blocking (losers simply skip), starts the sidecar detached in a new
session with its stdio going to ``<hash>.log``, and hands the locked file
descriptor to the child. The child releases it once it is listening, so
anyone who blocks on that lock is woken exactly when the sidecar is ready
(or dead). The sidecar's own lifetime lock makes a second sidecar for the
same workspace exit at once, whatever started it.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import threading

from .locks import wait_for_lock
from .runtime import SPAWN_LOCK_FD_ENV, SidecarPaths

__all__ = [
    "is_listening",
    "launch_detached",
    "spawn_detached",
    "start",
    "status",
    "stop",
]


def is_listening(path: str) -> bool:
    """True when something accepts connections on the Unix socket ``path``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(path)
        return True
    except OSError:
        return False
    finally:
        sock.close()


def launch_detached(cmd: list[str], *, cwd: str, env: dict[str, str], log_path: str, pass_fds=()):
    """Start ``cmd`` in its own session with stdio on ``log_path``; never on ours.

    A daemon thread reaps it when it ends, so a long-lived caller collects
    no zombies and a short-lived one is not held up. Returns the Popen.
    """
    import subprocess

    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=cwd,
            env=env,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
        )
    finally:
        os.close(log)
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc


def spawn_detached(paths: SidecarPaths) -> bool:
    """Start a sidecar for ``paths.workspace`` unless one runs or is starting.

    The runtime dir must already exist and be verified. Returns True when
    this call started one.
    """
    fd = os.open(paths.spawn_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # someone else is starting it right now
        if is_listening(paths.socket):
            return False
        launch_detached(
            [sys.executable, "-m", "jcli_sidecar", "serve", "--workspace", paths.workspace],
            cwd=paths.workspace,
            env=dict(os.environ, **{SPAWN_LOCK_FD_ENV: str(fd)}),
            log_path=paths.log,
            pass_fds=(fd,),
        )
        return True
    finally:
        os.close(fd)  # the child keeps the lock until it listens


# -- start / stop / status, for `j-cli sidecar ...` ---------------------------


def status(paths: SidecarPaths) -> dict:
    """What is known about the workspace's sidecar, live or not."""
    from .client import call
    from .errors import JcliError

    out: dict = {"workspace": paths.workspace, "socket": paths.socket, "instance": paths.hash}
    try:
        stats = call(paths, "stats", {}, timeout=5.0)
    except JcliError as exc:
        out["running"] = False
        out["reason"] = exc.message
        leftovers = [p for p in (paths.socket, paths.pid) if os.path.exists(p)]
        if leftovers:
            out["stale_files"] = leftovers
        return out
    out["running"] = True
    out.update(stats)
    return out


def start(paths: SidecarPaths, timeout: float = 30.0) -> dict:
    """Start the sidecar if needed and wait until it answers.

    Raises:
        SidecarUnavailable: it did not come up (the log tail says why).
    """
    from .errors import SidecarUnavailable

    spawn_detached(paths)
    if not wait_for_lock(paths.spawn_lock, timeout):
        raise SidecarUnavailable(f"the sidecar did not start within {timeout:g} s; see {paths.log}")
    result = status(paths)
    if not result["running"]:
        raise SidecarUnavailable(f"the sidecar did not start: {_log_tail(paths)}", log=paths.log)
    return result


def stop(paths: SidecarPaths, timeout: float = 10.0) -> dict:
    """Ask the sidecar to exit and wait for its lifetime lock to be released.

    An unresponsive sidecar is terminated, but only if the pid file still
    names it (pid plus create time).
    """
    import psutil

    from .client import request_shutdown
    from .pidfile import recorded_process

    proc = recorded_process(paths)  # before asking: the pid file goes away with it
    asked = request_shutdown(paths)
    if wait_for_lock(paths.lock, timeout):
        if proc is not None:
            try:
                proc.wait(timeout)  # the lock is released just before the process ends
            except psutil.Error:
                pass
        return {"stopped": asked, "workspace": paths.workspace}
    proc = proc or recorded_process(paths)
    if proc is not None:
        proc.kill()
        proc.wait(timeout)
    return {"stopped": True, "killed": proc is not None, "workspace": paths.workspace}


def _log_tail(paths: SidecarPaths, lines: int = 5) -> str:
    try:
        with open(paths.log, encoding="utf-8", errors="replace") as fh:
            return " | ".join(fh.read().splitlines()[-lines:]) or "(empty log)"
    except OSError:
        return "(no log)"
