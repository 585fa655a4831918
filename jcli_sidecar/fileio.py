"""Files read and written safely: only regular files read, bounded; writes through symlinks, keeping hard links and the mode."""

from __future__ import annotations

import os
import stat
import tempfile

from .readfile import FileTooLarge, NotARegularFile, read_regular

__all__ = ["FileTooLarge", "NotARegularFile", "read_text_or_none", "write_text_atomic"]


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


def read_text_or_none(path: str, max_bytes: int | None = None) -> str | None:
    """The file's text exactly as stored (newlines untranslated), or None if it does not exist.

    Read like every file a user names (:func:`jcli_sidecar.readfile.read_regular`):
    never blocking on a FIFO, refusing what is not a regular file, at most
    ``max_bytes`` (default: the read limit).

    Raises:
        NotARegularFile, FileTooLarge, OSError: as :func:`~jcli_sidecar.readfile.read_regular`.
        UnicodeDecodeError: not UTF-8.
    """
    try:
        raw, _ = read_regular(path, max_bytes)
    except FileNotFoundError:
        return None
    return raw.decode("utf-8")
