"""Directories reached without following links, for everything that writes, locks or deletes.

Inside a workspace's ``.j-cli`` every name is opened relative to an open
directory (``openat``-style ``dir_fd``) with ``O_NOFOLLOW``: a symlink
anywhere on the way (``.j-cli``, ``outputs``, ``.staging``, a run dir, the
``.lock``, a manifest, a payload) is refused, never followed, and a name
cannot be swapped for a link between a check and its use. What is refused
is named for what it is (a symlink, a regular file, a FIFO, ...), never
guessed. Directories are made ``0755`` and files ``0644`` (less the umask),
so nothing j-cli makes there is writable by another user
(:mod:`jcli_sidecar.base.trust`).

Example:
    >>> import tempfile
    >>> with Dir.open(tempfile.mkdtemp()) as top, top.sub("a", create=True) as a:
    ...     a.write_new("f", b"x"); sorted(a.names())
    ['f']
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Dir", "LinkRefused", "describe_kind"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


_KINDS = (
    (stat.S_ISLNK, "a symlink"),
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def describe_kind(mode: int) -> str:
    """What a file of ``st_mode`` is, in words.

    Example:
        >>> import stat
        >>> describe_kind(stat.S_IFIFO | 0o644), describe_kind(stat.S_IFLNK | 0o777)
        ('a FIFO', 'a symlink')
    """
    return next((words for test, words in _KINDS if test(mode)), "not a regular file or directory")


class LinkRefused(OSError):
    """A symlink, or something that is not a directory, where a directory of ours belongs.

    ``kind`` says what is there (``a symlink``, ``a regular file``, ``a
    FIFO``, ...; ``gone`` when it vanished before it could be looked at).
    """

    kind = "a symlink or not a directory"

    def describe(self) -> str:
        """``PATH is KIND, not a directory`` (a symlink: ``PATH is a symlink``)."""
        if self.kind == "a symlink":
            return f"{self.filename} is a symlink; j-cli never follows links here"
        return f"{self.filename} is {self.kind}, not a directory"


def _refused(path: str, kind: str | None = None) -> LinkRefused:
    exc = LinkRefused(errno.ELOOP, "a symlink or not a directory; j-cli never follows links here", path)
    if kind is not None:
        exc.kind = kind
    return exc


class Dir:
    """One open directory; names inside it are used without following links."""

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        #: For messages only; every operation goes through ``fd``.
        self.path = path

    @classmethod
    def open(cls, path: str) -> Dir:
        """Open the workspace itself (the user's directory: a link to it is fine)."""
        return cls(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), path)

    @classmethod
    def walk(cls, top: str, *names: str) -> Dir:
        """Open ``top`` and then each of ``names`` below it, refusing a link at every step.

        Raises:
            LinkRefused: a step is a symlink or not a directory.
            FileNotFoundError: a step does not exist.
        """
        current = cls.open(top)
        for name in names:
            try:
                nxt = current.sub(name)
            finally:
                current.close()
            current = nxt
        return current

    def join(self, name: str) -> str:
        return os.path.join(self.path, name)

    def sub(self, name: str, *, create: bool = False, mode: int = 0o755) -> Dir:
        """The directory ``name`` in this one (made first when ``create``).

        Raises:
            LinkRefused: ``name`` is a symlink or not a directory.
            FileNotFoundError: it does not exist (and ``create`` is false).
        """
        if create:
            try:
                os.mkdir(name, mode, dir_fd=self.fd)
            except FileExistsError:
                pass
        try:
            return Dir(os.open(name, _DIR_FLAGS, dir_fd=self.fd), self.join(name))
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _refused(self.join(name), self._kind(name)) from None
            raise

    def _kind(self, name: str) -> str:
        try:
            return describe_kind(self.lstat(name).st_mode)
        except OSError:  # vanished, or not ours to look at: the refusal calls it gone
            return "gone"

    def lstat(self, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def is_dir(self, name: str) -> bool:
        """A real directory (not a link to one); False when absent."""
        try:
            return stat.S_ISDIR(self.lstat(name).st_mode)
        except FileNotFoundError:
            return False

    def is_file(self, name: str) -> bool:
        """A regular file (not a link to one); False when absent."""
        try:
            return stat.S_ISREG(self.lstat(name).st_mode)
        except FileNotFoundError:
            return False

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def open_fd(self, name: str, flags: int, mode: int = 0o666) -> int:
        """``os.open`` of ``name`` here, never through a link.

        Raises:
            LinkRefused: ``name`` is a symlink.
        """
        try:
            return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refused(self.join(name), "a symlink") from None
            raise

    def write_new(self, name: str, data: bytes, mode: int = 0o644) -> None:
        """Create ``name`` (it must not exist) holding ``data``."""
        fd = self.open_fd(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)

    def read_bytes(self, name: str) -> bytes:
        """The bytes of the regular file ``name``, read like every file (:func:`jcli_sidecar.base.readfile.read_open`).

        Opened without following a link and without blocking on a FIFO;
        capped by the one read limit.

        Raises:
            LinkRefused: a symlink. NotARegularFile, IsADirectoryError,
            FileTooLarge, OSError: as :func:`~jcli_sidecar.base.readfile.read_open`.
        """
        from .readfile import read_open

        fd = self.open_fd(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            return read_open(fd, os.fstat(fd), self.join(name))
        finally:
            os.close(fd)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def rmdir(self, name: str) -> None:
        os.rmdir(name, dir_fd=self.fd)

    def mkdir(self, name: str, mode: int = 0o755) -> None:
        os.mkdir(name, mode, dir_fd=self.fd)

    def remove_tree(self, name: str, *, depth: int = 8) -> int:
        """Delete ``name`` here and everything under it, never following a link; returns the bytes freed.

        Links, FIFOs and devices are unlinked as names (never opened);
        directories are entered through :meth:`sub` (a link in place of one
        is refused), at most ``depth`` levels down.

        Raises:
            LinkRefused: a directory became a link on the way. OSError: a
            deletion failed, or the tree is deeper than ``depth``.
        """
        info = self.lstat(name)
        if not stat.S_ISDIR(info.st_mode):
            self.unlink(name)
            return info.st_size if stat.S_ISREG(info.st_mode) else 0
        if depth <= 0:
            raise OSError(errno.ELOOP, "too deep to remove", self.join(name))
        freed = 0
        with self.sub(name) as inner:
            for entry in inner.names():
                freed += inner.remove_tree(entry, depth=depth - 1)
        self.rmdir(name)
        return freed

    def rename(self, name: str, to: Dir, new_name: str) -> None:
        """Rename ``name`` here to ``new_name`` in ``to`` (links are moved, never followed)."""
        os.rename(name, new_name, src_dir_fd=self.fd, dst_dir_fd=to.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Dir:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
