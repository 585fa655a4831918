"""Files read and written safely: only regular files read, bounded; writes through symlinks, keeping hard links and the mode.

A write given the key of the file it read (``expect``) never destroys a file
another program saved meanwhile (:mod:`jcli_sidecar.base.swap`): theirs stays,
the new text is kept aside under a visible name, and the write raises
:class:`~jcli_sidecar.base.errors.NotebookChanged` naming both. Temp files
carry their writer's pid (:mod:`jcli_sidecar.base.tempnames`).
"""

from __future__ import annotations

import errno
import os
import stat

from .errors import NotebookChanged
from .os_errors import os_reason
from .readfile import FileTooLarge, NotARegularFile, read_regular
from .stall import stall_point
from .swap import file_key, replace_checked
from .tempnames import temp_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .swap import Key

__all__ = ["FileTooLarge", "NotARegularFile", "kept_path", "read_text_or_none", "write_pieces_atomic", "write_text_atomic"]


def write_text_atomic(path: str, text: str, *, expect: Key | None = None, stall: str | None = None) -> os.stat_result:
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
    - With ``expect`` (the :func:`~jcli_sidecar.base.swap.file_key` of the
      file that was read), the file is replaced only while it is still
      that file; else the new text is kept at :func:`kept_path`.
    - ``stall`` names the test stall point (:mod:`jcli_sidecar.base.stall`)
      between the temp copy and the swap.

    Raises:
        OSError: the directory or the file cannot be written.
        UnicodeEncodeError: ``text`` holds lone surrogates.
        NotebookChanged: another program wrote or removed the file since it was read (``expect``).

    Returns:
        The ``stat`` of the file written, taken once it is in place.
    """
    return write_pieces_atomic(path, [text.encode("utf-8")], expect=expect, stall=stall)


def write_pieces_atomic(
    path: str,
    pieces: Iterable[bytes | tuple[int, int]],
    source_fd: int | None = None,
    *,
    expect: Key | None = None,
    stall: str | None = None,
) -> os.stat_result:
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
        NotebookChanged: as :func:`write_text_atomic`.
    """
    target = os.path.realpath(path)
    try:
        info = os.stat(target)
        mode, links = stat.S_IMODE(info.st_mode), info.st_nlink
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode, links = 0o666 & ~umask, 1
    tmp = temp_path(target, "tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
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
            if expect is None:
                if stall is not None:
                    stall_point(stall)
                os.replace(tmp, target)
            elif not replace_checked(tmp, target, expect, stall):
                _changed(path, target, tmp)
            return os.stat(target)
        if stall is not None:
            stall_point(stall)
        rewrite = temp_path(target, "rewrite")  # from here on it is the only full copy: the cleaner keeps it
        os.rename(tmp, rewrite)
        tmp = rewrite
    except NotebookChanged:
        raise
    except BaseException:
        _unlink_quietly(tmp)
        raise
    try:
        if not _rewrite_in_place(target, tmp, expect):
            _changed(path, target, tmp)
    except OSError as exc:  # the file may be half rewritten: the full text stays in tmp
        raise OSError(exc.errno, f"{os_reason(exc)}; the full new text is kept in {tmp}", target) from None
    os.unlink(tmp)
    return os.stat(target)


def kept_path(target: str) -> str:
    """Where a write that lost to another program's save keeps its text: ``<stem>.jcli-conflict-<time><suffix>`` beside it."""
    import time

    folder, base = os.path.split(target)
    stem, suffix = os.path.splitext(base)
    return os.path.join(folder, f"{stem}.jcli-conflict-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}{suffix}")


def _keep(tmp: str, target: str) -> str:
    """Give the new text at ``tmp`` its :func:`kept_path` (``-2``, ``-3``... when taken: never over another file); its path."""
    first = kept_path(target)
    stem, suffix = os.path.splitext(first)
    for number in range(1, 100):
        kept = first if number == 1 else f"{stem}-{number}{suffix}"
        try:
            os.link(tmp, kept)
        except FileExistsError:
            continue
        except OSError:  # no hard links here: a rename, where the name is free
            if os.path.lexists(kept):
                continue
            os.rename(tmp, kept)
            return kept
        os.unlink(tmp)
        return kept
    return tmp


def _changed(path: str, target: str, tmp: str) -> None:
    """Keep the new text aside (a visible name) and raise :class:`NotebookChanged` naming both files."""
    kept = _keep(tmp, target) if os.path.lexists(tmp) else None
    state = "was saved by another program" if os.path.lexists(target) else "was deleted by another program"
    where = f"j-cli's version is kept in {kept}" if kept else "j-cli's version was overwritten by a later save"
    raise NotebookChanged(f"{path} {state} while j-cli wrote it back; that version stays, and {where}", notebook=path, kept=kept)


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


def _rewrite_in_place(path: str, source: str, expect: Key | None) -> bool:
    """Overwrite the file (its inode, which every hard link shares) with the file ``source``.

    False (nothing written) when ``expect`` is given and the file is no longer that one.
    """
    src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        size = os.fstat(src).st_size
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            if expect is None:
                raise
            return False
        try:
            if expect is not None and file_key(os.fstat(fd)) != expect:
                return False
            _copy_range(src, 0, size, fd)
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        os.close(src)
    return True


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
