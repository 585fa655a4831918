"""Files read and written safely: only regular files read, bounded; writes through symlinks, keeping hard links and the mode."""

from __future__ import annotations

import errno
import os
import stat
import tempfile

from .os_errors import os_reason
from .readfile import FileTooLarge, NotARegularFile, read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["FileTooLarge", "NotARegularFile", "read_text_or_none", "write_pieces_atomic", "write_text_atomic"]


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
    write_pieces_atomic(path, [text.encode("utf-8")])


def write_pieces_atomic(path: str, pieces: Iterable[bytes | tuple[int, int]], source_fd: int | None = None) -> os.stat_result:
    """Replace ``path`` with ``pieces`` joined, with the guarantees of :func:`write_text_atomic`.

    A piece is bytes, or a ``(start, end)`` byte range of the open file
    ``source_fd`` (usually the file being replaced), copied by the kernel
    without passing through this process, so splicing one cell into a big
    notebook holds that cell only. ``pieces`` may be a generator: each is
    written as it comes, and one that raises leaves the file as it was.

    Returns:
        The ``stat`` of the file written, taken once it is in place.

    Raises:
        OSError: the directory or the file cannot be written, or
            ``source_fd`` is shorter than a range says.
    """
    target = os.path.realpath(path)
    try:
        info = os.stat(target)
        mode, links = stat.S_IMODE(info.st_mode), info.st_nlink
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode, links = 0o666 & ~umask, 1
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=os.path.dirname(target))
    try:
        try:
            for piece in pieces:
                if isinstance(piece, tuple):
                    assert source_fd is not None, "a byte range needs a source file"
                    _copy_range(source_fd, piece[0], piece[1], fd)
                else:
                    _write_all(fd, piece)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        if links == 1:
            os.replace(tmp, target)
            return os.stat(target)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    try:
        _rewrite_in_place(target, tmp)
    except OSError as exc:  # the file may be half rewritten: the full text stays in tmp
        raise OSError(exc.errno, f"{os_reason(exc)}; the full new text is kept in {tmp}", target) from None
    os.unlink(tmp)
    return os.stat(target)


#: How much a byte range copy moves at once when the kernel cannot copy it.
_COPY_CHUNK = 1 << 20


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _copy_range(source: int, start: int, end: int, dest: int) -> None:
    """Append bytes ``start:end`` of ``source`` to ``dest`` (at its position), in the kernel where it can."""
    at = start
    while at < end:
        try:
            copied = os.copy_file_range(source, dest, end - at, at)
        except (AttributeError, OSError):  # no such call here, or not between these files
            copied = -1
        if copied < 0:
            chunk = os.pread(source, min(end - at, _COPY_CHUNK), at)
            if chunk:
                _write_all(dest, chunk)
            copied = len(chunk)
        if copied == 0:
            raise OSError(errno.EIO, "the file being copied ended early")
        at += copied


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _rewrite_in_place(path: str, source: str) -> None:
    """Overwrite the file (its inode, which every hard link shares) with the file ``source``."""
    src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        size = os.fstat(src).st_size
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            _copy_range(src, 0, size, fd)
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        os.close(src)


def read_text_or_none(path: str, max_bytes: int | None = None) -> str | None:
    """The file's text exactly as stored (newlines untranslated), or None if it does not exist.

    Read like every file a user names (:func:`jcli_sidecar.base.readfile.read_regular`):
    never blocking on a FIFO, refusing what is not a regular file, at most
    ``max_bytes`` (default: the read limit).

    Raises:
        NotARegularFile, FileTooLarge, OSError: as :func:`~jcli_sidecar.base.readfile.read_regular`.
        UnicodeDecodeError: not UTF-8.
    """
    try:
        raw, _ = read_regular(path, max_bytes)
    except FileNotFoundError:
        return None
    return raw.decode("utf-8")
