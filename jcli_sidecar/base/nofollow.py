"""Directories reached without following links, for everything that writes, locks or deletes.

Inside a workspace's ``.j-cli`` every name is opened relative to an open
directory (``openat``-style ``dir_fd``) with ``O_NOFOLLOW``: a symlink
anywhere on the way (``.j-cli``, ``outputs``, ``.staging``, a run dir, the
``.lock``, a manifest, a payload) is refused, never followed, and a name
cannot be swapped for a link between a check and its use.

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

__all__ = ["Dir", "LinkRefused"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefused(OSError):
    """A symlink, or something that is not a directory, where a directory of ours belongs."""


def _refused(path: str) -> LinkRefused:
    return LinkRefused(errno.ELOOP, "a symlink or not a directory; j-cli never follows links here", path)


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

    def sub(self, name: str, *, create: bool = False, mode: int = 0o777) -> Dir:
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
                raise _refused(self.join(name)) from None
            raise

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
                raise _refused(self.join(name)) from None
            raise

    def write_new(self, name: str, data: bytes, mode: int = 0o666) -> None:
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

    def mkdir(self, name: str, mode: int = 0o777) -> None:
        os.mkdir(name, mode, dir_fd=self.fd)

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
