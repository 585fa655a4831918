"""Replacing a file atomically, keeping its mode."""

from __future__ import annotations

import os
import stat
import tempfile

__all__ = ["read_text_or_none", "write_text_atomic"]


def write_text_atomic(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) through a temp file and a rename.

    The file keeps its mode; a new file gets the usual ``0666 & ~umask``.
    A reader never sees half a file.

    Raises:
        OSError: the directory cannot be written.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def read_text_or_none(path: str) -> str | None:
    """The file's text exactly as stored (newlines untranslated), or None if it does not exist."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
