"""Putting a new file in place of the one that was read, never over a file someone else put there meanwhile.

A plain rename replaces whatever holds the name when it happens: if another
program saved the file after j-cli read it (JupyterLab writes a temp file
and renames it over the notebook), that save is gone. :func:`replace_checked`
cannot destroy a file it did not read:

- On Linux it swaps the two names in one step (``renameat2`` with
  ``RENAME_EXCHANGE``), then checks that what came out is the file that
  was read (its :func:`file_key`, checked whole just before the swap;
  after it the change time is the swap's own, so identity, size and
  modification time are compared). If it is not, it swaps back, so the
  other program's file holds the name again, and says so.
- Where names cannot be swapped (a C library without ``renameat2``:
  macOS, the BSDs, an old glibc; or a file system that refuses it), it
  moves the file in place aside (a ``.old`` temp file named by its writer,
  :mod:`jcli_sidecar.base.tempnames`), checks it, and links the new file
  in (a link never replaces a file). For that moment the name is missing;
  a reader retries (j-cli's readers do), a save that lands then stays,
  and a writer killed then leaves the ``.old`` file that the next write
  puts back in place.

Which way is taken depends only on whether the C library has the call
(looked up once; tests make the lookup find nothing to run the other
branch here).
"""

from __future__ import annotations

import errno
import os

from .stall import stall_point
from .tempnames import temp_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["can_exchange", "exchange", "file_key", "replace_checked"]

#: A file's identity and version: ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)``.
Key = tuple[int, int, int, int, int]
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_CALL: list[Any] = []  # renameat2 from libc, once looked up (None: not there)
#: Errnos that mean "names cannot be swapped here" (no such call, or not on this file system).
_UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})


def file_key(info: os.stat_result) -> Key:
    """A file's identity and version, as :func:`jcli_sidecar.ipynb.nbindex.stat_key` computes it."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _moved_key(info: os.stat_result) -> tuple[int, int, int, int]:
    """:func:`file_key` without the change time, which the move itself sets."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _renameat2() -> Any:
    """``renameat2`` from the C library, or None where it has none (macOS, the BSDs, a glibc before 2.28)."""
    if not _CALL:
        try:
            import ctypes

            call = ctypes.CDLL(None, use_errno=True).renameat2
            call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            call.restype = ctypes.c_int
        except (ImportError, AttributeError, OSError):  # no such call in this C library, or no ctypes
            call = None
        _CALL.append(call)
    return _CALL[0]


def can_exchange() -> bool:
    """Whether this system offers the atomic swap of two names (a file system may still refuse it)."""
    return _renameat2() is not None


def exchange(one: str, other: str) -> bool:
    """Swap the names ``one`` and ``other`` atomically; False when this system or file system cannot.

    Raises:
        FileNotFoundError: either name is missing (nothing moved).
        OSError: the swap was refused otherwise.
    """
    call = _renameat2()
    if call is None:
        return False
    import ctypes

    if call(_AT_FDCWD, os.fsencode(one), _AT_FDCWD, os.fsencode(other), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), other)


def replace_checked(new: str, target: str, expect: Key, stall: str | None = None) -> bool:
    """Put the file ``new`` at ``target`` if ``target`` is still the file ``expect`` describes.

    ``stall`` names the test stall point (:mod:`jcli_sidecar.base.stall`)
    between the last look at ``target`` and the swap.

    Returns:
        True when ``new`` is in place (and its name gone). False when
        ``target`` was another file (or none): that stays at ``target``, and
        ``new`` still holds the new text, unless yet another save destroyed
        it in between (then ``new`` no longer exists).

    Raises:
        OSError: the names could not be moved.
    """
    mine = os.lstat(new)
    try:
        if file_key(os.stat(target)) != expect:
            return False  # changed already: nothing moves
        if stall is not None:
            stall_point(stall)
        swapped = exchange(new, target)
    except FileNotFoundError:
        return False  # the file was deleted: it stays deleted
    if swapped:
        if _moved_key(os.lstat(new)) == expect[:4]:
            os.unlink(new)  # the file that was read, now replaced
            return True
        _swap_back(new, target, mine)
        return False
    return _replace_aside(new, target, expect, stall)


def _swap_back(new: str, target: str, mine: os.stat_result) -> None:
    """Undo a swap that brought out a file j-cli did not read; ``new`` ends holding j-cli's file if it still exists."""
    try:
        exchange(new, target)
    except FileNotFoundError:  # someone removed a name in between: what is left at ``new`` goes back
        os.rename(new, target)
        return
    came_out = os.lstat(new)
    if (came_out.st_dev, came_out.st_ino) != (mine.st_dev, mine.st_ino):
        # Another save replaced j-cli's file in between: the newest save goes back in place; the
        # one it superseded (now at ``new``) is dropped, as that save meant.
        exchange(new, target)
        os.unlink(new)


def _replace_aside(new: str, target: str, expect: Key, stall: str | None = None) -> bool:
    """:func:`replace_checked` where names cannot be swapped: move aside, check, link in.

    ``stall`` + ``":aside"`` names the test stall point of the moment the name is free.
    """
    aside = temp_path(target, "old")
    try:
        os.rename(target, aside)
    except FileNotFoundError:
        return False
    if stall is not None:
        stall_point(f"{stall}:aside")
    if _moved_key(os.lstat(aside)) != expect[:4]:
        _put_back(aside, target)
        return False
    try:
        os.link(new, target)
    except FileExistsError:  # a save landed in the moment the name was free: it stays
        os.unlink(aside)
        return False
    except OSError:  # no hard links here: a rename, over nothing but a save of that very moment
        os.rename(new, target)
    else:
        os.unlink(new)
    os.unlink(aside)
    return True


def _put_back(aside: str, target: str) -> None:
    try:
        os.link(aside, target)
    except FileExistsError:  # yet another save took the name: it is newer
        pass
    except OSError:  # the link failed for another reason: the name is put back by rename if still free
        if not os.path.lexists(target):
            os.rename(aside, target)
            return
    os.unlink(aside)
