"""Files read and written safely: only regular files read, bounded; writes through symlinks, keeping hard links and the mode."""

from __future__ import annotations

import errno
import os
import stat
import tempfile

__all__ = ["DEFAULT_MAX_TEXT_BYTES", "FileTooLarge", "NotRegularFile", "read_text_or_none", "write_text_atomic"]

#: What :func:`read_text_or_none` reads at most unless told otherwise.
DEFAULT_MAX_TEXT_BYTES = 64 * 1024 * 1024


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a directory, not a regular file."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EINVAL, "not a regular file", path)


class FileTooLarge(OSError):
    """The file holds more than the reader's cap."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes", path)
        self.limit = limit


def write_text_atomic(path: str, text: str) -> None:
    """Replace the contents of ``path`` with ``text`` (UTF-8), never leaving half a file behind.

    - The new text is written to a temp file beside the file and synced first.
    - A symlink is written through: its target gets the text, the link stays a
      link (a notebook or config kept in a dotfiles repo).
    - A file with one name is replaced by a rename, so a reader sees the old
      or the new file, never a mix.
    - A file with several hard links is rewritten in place, so every name
      shows the new text; the synced temp copy is removed only once the
      rewrite is complete, so a crash in between leaves the full text on disk.
    - The file keeps its mode; a new file gets the usual ``0666 & ~umask``.

    Raises:
        OSError: the directory or the file cannot be written.
        UnicodeEncodeError: ``text`` holds lone surrogates.
    """
    target = os.path.realpath(path)
    data = text.encode("utf-8")
    try:
        info = os.stat(target)
        mode, links = stat.S_IMODE(info.st_mode), info.st_nlink
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode, links = 0o666 & ~umask, 1
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if links == 1:
            os.replace(tmp, target)
            return
    except BaseException:
        _unlink_quietly(tmp)
        raise
    try:
        _rewrite_in_place(target, data)
    except OSError as exc:  # the file may be half rewritten: the full text stays in tmp
        raise OSError(exc.errno, f"{exc.strerror}; the full new text is kept in {tmp}", target) from None
    os.unlink(tmp)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _rewrite_in_place(path: str, data: bytes) -> None:
    """Overwrite the file (its inode, which every hard link shares) with ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def read_text_or_none(path: str, max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> str | None:
    """The file's text exactly as stored (newlines untranslated), or None if it does not exist.

    The file is opened without blocking (``O_NONBLOCK``), so a FIFO never
    hangs the caller, and ``fstat`` must show a regular file before anything
    is read; at most ``max_bytes`` are read.

    Raises:
        NotRegularFile: a FIFO, device, socket or directory (a dangling
            symlink counts as absent).
        FileTooLarge: more than ``max_bytes``.
        UnicodeDecodeError: the bytes are not UTF-8.
        OSError: any other failure to open or read (permissions, a symlink loop).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket, or a device with no driver
            raise NotRegularFile(path) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise FileTooLarge(path, max_bytes)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")
