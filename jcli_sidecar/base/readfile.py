"""Reading a file a user names: regular files only, never blocking, capped.

Every read of such a file (a notebook, a ``.py`` pair, a run's manifest and
payloads, a config) goes through :func:`read_regular`: it refuses FIFOs,
devices, sockets and directories without blocking on them, and never takes
in more than :func:`read_limit` bytes. Imports nothing heavy: every read
imports it.
"""

from __future__ import annotations

import errno
import os
import stat

from .settings import SETTINGS, setting

__all__ = [
    "DEFAULT_READ_LIMIT_MB",
    "FileTooLarge",
    "NotARegularFile",
    "check_size",
    "open_regular",
    "read_limit",
    "read_open",
    "read_regular",
    "stat_regular",
]

#: The largest file j-cli reads, in MiB, unless ``JCLI_MAX_FILE_MB`` says otherwise.
DEFAULT_READ_LIMIT_MB = SETTINGS["JCLI_MAX_FILE_MB"].default
_CHUNK = 1 << 20


class NotARegularFile(OSError):
    """The path names a FIFO, a device or a socket: nothing j-cli reads."""


class FileTooLarge(OSError):
    """The file is larger than the read limit (:func:`read_limit`)."""


def read_limit() -> int:
    """``JCLI_MAX_FILE_MB`` in bytes (default 512 MiB; a bad value means the default, with a warning).

    Example:
        >>> read_limit() == 512 * 1024 * 1024 or "JCLI_MAX_FILE_MB" in __import__("os").environ
        True
    """
    return max(1, int(setting("JCLI_MAX_FILE_MB") * 1024 * 1024))


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_regular(info: os.stat_result, path: str) -> None:
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    raise NotARegularFile(errno.EINVAL, f"not a regular file ({kind})", path)


def open_regular(path: str) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading without ever blocking, and prove it is a regular file.

    The path is checked before the open (so a device is never opened) and
    the open file again after it (so nothing swapped in between is read).
    ``O_NONBLOCK`` keeps the open of a FIFO from waiting for a writer.
    Returns the descriptor (close it) and its ``fstat``.

    Raises:
        FileNotFoundError, NotADirectoryError, PermissionError, OSError: as ``open``.
        IsADirectoryError: a directory.
        NotARegularFile: a FIFO, a device or a socket.
        ValueError: a path no file can have (a NUL byte, an unencodable character).
    """
    _check_regular(os.stat(path), path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        info = os.fstat(fd)
        _check_regular(info, path)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def stat_regular(path: str) -> os.stat_result:
    """The ``fstat`` of a fresh open of ``path``, a regular file.

    Opening (rather than ``stat``) makes an NFS client revalidate the
    file's attributes (close-to-open consistency).

    Raises:
        OSError, ValueError: as :func:`open_regular`.
    """
    fd, info = open_regular(path)
    os.close(fd)
    return info


def read_regular(path: str, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` and the ``fstat`` of the very file read.

    At most ``limit`` bytes (default :func:`read_limit`) are ever read: a
    larger file, or one that grows past the limit while it is read, is
    refused.

    Raises:
        FileTooLarge: over the limit.
        OSError, ValueError: as :func:`open_regular`.
    """
    fd, info = open_regular(path)
    try:
        return read_open(fd, info, path, limit), info
    finally:
        os.close(fd)


def read_open(fd: int, info: os.stat_result, path: str, limit: int | None = None) -> bytes:
    """The bytes of an open file already proven regular (``info`` is its ``fstat``), capped like :func:`read_regular`.

    ``path`` is for messages only. The caller closes ``fd``.

    Raises:
        NotARegularFile, IsADirectoryError: ``info`` is not a regular file.
        FileTooLarge: over the limit.
    """
    _check_regular(info, path)
    cap = check_size(info, path, limit)
    parts: list[bytes] = []
    total = 0
    want = info.st_size + 1  # one byte more than expected, to see growth
    while True:
        chunk = os.read(fd, max(1, min(want - total, cap + 1 - total)))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        if total > cap:
            raise FileTooLarge(errno.EFBIG, f"grew past the {_mib(cap)} read limit (JCLI_MAX_FILE_MB) while being read", path)
        if total >= want:
            want = total + _CHUNK
    return parts[0] if len(parts) == 1 else b"".join(parts)


def check_size(info: os.stat_result, path: str, limit: int | None = None) -> int:
    """Refuse a file over ``limit`` (default :func:`read_limit`); returns the limit.

    Raises:
        FileTooLarge: over the limit.
    """
    cap = read_limit() if limit is None else limit
    if info.st_size > cap:
        raise FileTooLarge(errno.EFBIG, f"{info.st_size} bytes, over the {_mib(cap)} read limit (JCLI_MAX_FILE_MB)", path)
    return cap


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"
