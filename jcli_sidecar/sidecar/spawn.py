"""Starting processes detached, and a workspace's sidecar lazily in the background.

Spawning is lazy and single-flight. The spawner takes ``<hash>.spawn.lock``
without blocking (losers simply skip), starts the sidecar detached in a new
session with its stdio going to ``<hash>.log``, and hands the locked file
descriptor to the child. The child releases it once it is listening, so
anyone who blocks on that lock is woken exactly when the sidecar is ready
(or dead). The sidecar's own lifetime lock makes a second sidecar for the
same workspace exit at once, whatever started it.

Nothing here waits for the sidecar or talks to it: ``start``, ``stop`` and
``status`` are in :mod:`jcli_sidecar.sidecar.control`, and the sidecar process
itself in :mod:`jcli_sidecar.sidecar.daemon`.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import threading

from ..base import SPAWN_LOCK_FD_ENV, SidecarPaths
from .peercred import can_check

__all__ = ["is_listening", "launch_detached", "spawn_detached"]


def is_listening(path: str) -> bool:
    """True when something accepts connections on the Unix socket ``path``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(path)
        return True
    except OSError:  # nothing accepts there: False
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
    this call started one; never starts one whose socket path is too long
    to bind (it could only crash), nor one on a system that cannot tell who
    connects to it (it could serve no one).
    """
    if not paths.socket_fits() or not can_check():
        return False
    fd = os.open(paths.spawn_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # someone else is starting it right now
        if is_listening(paths.socket):
            return False
        launch_detached(
            # -P: the workspace (its cwd) never shadows an installed package
            [sys.executable, "-P", "-m", "jcli_sidecar", "serve", "--workspace", paths.workspace],
            cwd=paths.workspace,
            env=dict(os.environ, **{SPAWN_LOCK_FD_ENV: str(fd)}),
            log_path=paths.log,
            pass_fds=(fd,),
        )
        return True
    finally:
        os.close(fd)  # the child keeps the lock until it listens
