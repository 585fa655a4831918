"""Where a workspace's sidecar lives, and whether it may.

The workspace is the real path of the effective cwd. Its sidecar files sit
in the runtime dir, named by a short hash of the workspace (Unix socket
paths are limited to about 107 bytes):

    $XDG_RUNTIME_DIR/jcli/   (or /tmp/jcli-<uid>/ without it), mode 0700
      <hash>.sock            the socket
      <hash>.pid             {pid, create_time, workspace, version, ...}
      <hash>.lock            held by the live sidecar for its whole life
      <hash>.spawn.lock      held while one sidecar is being started
      <hash>.log             the sidecar's stdout and stderr
      <hash>.unresponsive    the sidecar (a ProcessRecord) that missed a hello, and when
      <hash>.server.json     the embedded Jupyter Server: {url, token, pid, ...}, 0600
      <hash>.server.lock     held while it is being started
      <hash>.server.log      its output
      <hash>.jupyter/        its Jupyter runtime dir
      locks/<hash>           notebook write-back locks (see jcli_sidecar.base.locks)

and, per Jupyter server that does not list its sessions, named by a short
hash of its base URL (never its token):

      <hash>.names.json      the names of the sessions j-cli created there, 0600
      <hash>.names.lock      held while that file is changed

The runtime dir is never output storage. This module imports nothing heavy:
clients on the warm path use it.

A runtime dir that cannot be created or written, or one so long that the
socket's path would pass :data:`MAX_SOCKET_PATH`, is ``RUNTIME_DIR_UNUSABLE``,
naming the path, the reason and the fix (a short directory the user can
write in ``XDG_RUNTIME_DIR``). Reads never need it: they read in-process.
"""

from __future__ import annotations

import os
import stat
import sys

from .errors import RuntimeDirUnsafe, RuntimeDirUnusable

try:  # the C module directly: importing hashlib would load OpenSSL
    from _sha2 import sha256  # Python 3.12 and later
except ImportError:  # pragma: no cover - which one exists depends on the Python
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:
        from hashlib import sha256

__all__ = [
    "MAX_SOCKET_PATH",
    "RUNTIME_FILES",
    "SERVER_FILES",
    "SPAWN_LOCK_FD_ENV",
    "SidecarPaths",
    "disabled",
    "ensure_runtime_dir",
    "runtime_dir",
    "workspace_hash",
    "workspace_of",
]

#: What each of a workspace's runtime files is called: ``<hash><suffix>``.
RUNTIME_FILES = {
    "socket": ".sock",
    "pid": ".pid",
    "lock": ".lock",
    "spawn_lock": ".spawn.lock",
    "log": ".log",
    "server_state": ".server.json",
    "server_lock": ".server.lock",
    "server_log": ".server.log",
    "jupyter_runtime": ".jupyter",
    "unresponsive": ".unresponsive",
}

#: What each of a server's runtime files is called: ``<hash of its base URL><suffix>``.
SERVER_FILES = {
    "names": ".names.json",
    "names_lock": ".names.lock",
}

#: The longest path a Unix socket may be bound to, in bytes: ``sun_path`` holds 108 on Linux and 104 on
#: macOS and the BSDs, the last a NUL (no module says which; the system's name does).
MAX_SOCKET_PATH = 107 if sys.platform.startswith("linux") else 103

#: The spawner hands the held spawn lock to its child in this variable (an fd
#: number); the sidecar releases it once it listens.
SPAWN_LOCK_FD_ENV = "JCLI_SIDECAR_SPAWN_LOCK_FD"


def disabled() -> bool:
    """True when ``JCLI_SIDECAR=off`` (or 0/false/no)."""
    from .settings import setting

    return not setting("JCLI_SIDECAR")


def workspace_of(cwd: str | None = None) -> str:
    """The workspace: the real path of ``cwd`` (default: the process cwd)."""
    return os.path.realpath(cwd if cwd is not None else os.getcwd())


def workspace_hash(workspace: str) -> str:
    """16 hex characters naming a workspace's sidecar (and its systemd instance).

    The first 8 bytes of the SHA-256 of the path's bytes; the plugins compute
    the same with Node's ``crypto`` (client/plugins/sidecar-client.mjs).

    Example:
        >>> len(workspace_hash("/home/me/project"))
        16
    """
    return sha256(workspace.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def runtime_dir() -> str:
    """``$XDG_RUNTIME_DIR/jcli`` when that is set, else ``/tmp/jcli-<uid>``."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base:
        return os.path.join(base, "jcli")
    return f"/tmp/jcli-{os.getuid()}"


def _check(path: str) -> None:
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise RuntimeDirUnsafe(f"{path} is not a directory (a symlink or a file)", path=path)
    if info.st_uid != os.geteuid():
        raise RuntimeDirUnsafe(f"{path} is owned by uid {info.st_uid}, not by this user", path=path)
    if info.st_mode & 0o077:
        raise RuntimeDirUnsafe(f"{path} has mode {stat.S_IMODE(info.st_mode):o}; it must be 0700", path=path)


def ensure_runtime_dir(create: bool) -> str:
    """The verified runtime dir: owned by this user, mode 0700, not a symlink.

    Args:
        create: make it (mode 0700) when missing, and require that it can be written.

    Raises:
        RuntimeDirUnsafe: wrong owner or mode, or not a directory.
        RuntimeDirUnusable: ``create`` and it cannot be made or written
            (a read-only file system, a parent this user cannot write).
        FileNotFoundError: missing and ``create`` is false.
    """
    path = runtime_dir()
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            from .os_errors import os_error, os_reason

            raise os_error(exc, "runtime-dir", path, path=path, reason=os_reason(exc)) from None
    _check(path)
    if create and not os.access(path, os.W_OK | os.X_OK):
        from .os_errors import RUNTIME_DIR_FIX

        reason = "it cannot be written (a read-only file system?)"
        raise RuntimeDirUnusable(f"the runtime dir {path} cannot be used: {reason}; {RUNTIME_DIR_FIX}", path=path, reason=reason)
    return path


class SidecarPaths:
    """The sidecar files of one workspace (see the module docstring)."""

    __slots__ = ("workspace", "hash", "dir", "socket", "pid", "lock", "spawn_lock", "log", "unresponsive")

    def __init__(self, workspace: str, directory: str | None = None) -> None:
        self.workspace = workspace
        self.hash = workspace_hash(workspace)
        self.dir = directory if directory is not None else runtime_dir()
        self._name_files()

    def _name_files(self) -> None:
        base = os.path.join(self.dir, self.hash)
        self.socket = base + RUNTIME_FILES["socket"]
        self.pid = base + RUNTIME_FILES["pid"]
        self.lock = base + RUNTIME_FILES["lock"]
        self.spawn_lock = base + RUNTIME_FILES["spawn_lock"]
        self.log = base + RUNTIME_FILES["log"]
        self.unresponsive = base + RUNTIME_FILES["unresponsive"]

    def check_socket(self) -> None:
        """Refuse a socket path a Unix socket cannot be bound to (over :data:`MAX_SOCKET_PATH` bytes).

        Raises:
            RuntimeDirUnusable: the runtime dir is too long for the socket.
        """
        size = len(os.fsencode(self.socket))
        if size > MAX_SOCKET_PATH:
            from .os_errors import RUNTIME_DIR_FIX

            reason = f"the sidecar's socket path would be {size} bytes, over the {MAX_SOCKET_PATH} a Unix socket path may have"
            raise RuntimeDirUnusable(
                f"the runtime dir {self.dir} cannot be used: {reason}; {RUNTIME_DIR_FIX}", path=self.dir, reason=reason
            )

    def socket_fits(self) -> bool:
        """True when the socket path can be bound (see :meth:`check_socket`)."""
        return len(os.fsencode(self.socket)) <= MAX_SOCKET_PATH

    @classmethod
    def for_instance(cls, instance: str, directory: str | None = None) -> SidecarPaths:
        """Paths for a systemd instance name (the hash) before the workspace is known."""
        paths = cls("", directory)
        paths.hash = instance
        paths._name_files()
        return paths
