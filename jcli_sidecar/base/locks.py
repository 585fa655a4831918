"""The cross-process locks, all ``fcntl.flock``, shared by the sidecar and clients.

- The outputs lock, ``<cwd>/.j-cli/outputs/.lock``: held while a run is
  published and while retention cleans.
- The notebook write-back lock, ``<runtime dir>/locks/<hash of the notebook's
  real path>``: never beside the user's notebook.
- A server's session-name lock, ``<hash>.names.lock`` in the runtime dir:
  held while the names j-cli remembers for that server change
  (:func:`private_lock`, never through a link).
- The sidecar's lifetime and spawn locks (``<hash>.lock``, ``<hash>.spawn.lock``
  in the runtime dir): :func:`wait_for_lock` waits for their holder to go.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from .runtime import workspace_hash

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .nofollow import Dir

__all__ = ["notebook_lock", "notebook_lock_path", "outputs_lock", "private_lock", "wait_for_lock"]


@contextlib.contextmanager
def _held(fd: int):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _flock(path: str):
    return _held(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))


def outputs_lock(outputs: Dir):
    """Hold the outputs lock, ``.lock`` in the open outputs directory (blocking); never through a link.

    Raises:
        LinkRefused: ``.lock`` is a symlink.
        OSError: the lock file cannot be created (e.g. a read-only workspace).
    """
    from .layout import LOCK_FILE

    return _held(outputs.open_fd(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600))


def private_lock(path: str):
    """Hold the lock file ``path`` in the runtime dir (blocking), created 0600; never through a link.

    Raises:
        OSError: ``path`` is a symlink (``ELOOP``), not a regular file of this
            user (``EINVAL``), or cannot be opened or created.
    """
    import errno
    import stat

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file of this user", path)
    return _held(fd)


def notebook_lock_path(runtime_dir: str, notebook: str) -> str:
    """Where the write-back lock of ``notebook`` lives (created on demand)."""
    locks = os.path.join(runtime_dir, "locks")
    os.makedirs(locks, mode=0o700, exist_ok=True)
    return os.path.join(locks, workspace_hash(os.path.realpath(notebook)))


def notebook_lock(runtime_dir: str, notebook: str):
    """Hold the write-back lock of ``notebook`` (blocking)."""
    return _flock(notebook_lock_path(runtime_dir, notebook))


def wait_for_lock(path: str, timeout: float) -> bool:
    """Block until the flock on ``path`` is free (or ``timeout`` passes).

    This waits on the event itself (the holder releasing or dying), not on
    a polling loop. Returns False on timeout.
    """
    import threading

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    done = threading.Event()

    def take() -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            done.set()

    waiter = threading.Thread(target=take, daemon=True)
    waiter.start()
    got = done.wait(timeout)
    if got:
        os.close(fd)
    return got
