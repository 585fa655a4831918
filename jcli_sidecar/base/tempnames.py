"""The temporary files j-cli writes beside a file: names that say whose they are, and cleaning up after a killed writer.

A write puts the new text in a hidden file beside the one it replaces
(:mod:`jcli_sidecar.base.fileio`). A writer killed in the middle leaves it
there, where ``git add .`` would pick it up. So every such file is named
``.<name>.jcli-<pid>-<start>-<random>.<kind>``: the file it belongs to, the
writer's pid and start time (the clock ticks since boot that
``/proc/<pid>/stat`` gives; where there is no ``/proc``, the same count
from psutil's start and boot times; so a reused pid never passes for the
writer, as with :class:`~jcli_sidecar.base.process_record.ProcessRecord`)
and what it holds:

- ``tmp``: the new text being written. A dead writer's is removed.
- ``old``: the file that was in place, moved aside for a moment where the
  system cannot swap two names. A dead writer's goes back in place when
  the file is missing, else it is removed.
- ``rewrite``: the full new text of a file with several hard links being
  rewritten in place. A dead writer's is removed once the file holds
  exactly that text; else it is kept (the file may be half rewritten and
  it is the only full copy).

:func:`clean_dead_temps` does that for one file, and touches only files of
the current user whose writer is provably gone (never a live one's, nor
one it cannot check).
"""

from __future__ import annotations

import os
import re

from .procfs import proc_root

__all__ = ["TEMP_KINDS", "clean_dead_temps", "temp_path"]

#: What a temp file may hold (its suffix).
TEMP_KINDS = ("tmp", "old", "rewrite")
_NAME = re.compile(r"\.(?P<base>.+)\.jcli-(?P<pid>[0-9]{1,10})-(?P<start>[0-9]{1,20})-[0-9a-f]{8}\.(?P<kind>tmp|old|rewrite)\Z", re.DOTALL)
_START: list[int] = []  # this process's start ticks, read once
#: Clock ticks two readings of one start may differ by without ``/proc`` (psutil's times are floats); ``/proc``'s are exact.
_TICK_SLACK = 1


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when it is gone or a zombie.

    Read from ``/proc``, else (macOS, the BSDs) computed from psutil's start
    and boot times, which on Linux gives the very number ``/proc`` holds.
    """
    proc = proc_root()
    if proc is None:
        return _psutil_start_ticks(pid)
    try:
        with open(f"{proc}/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:  # gone: None, as documented
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()  # the name may hold spaces and parentheses
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def _psutil_start_ticks(pid: int) -> int | None:
    """:func:`_start_ticks` where there is no ``/proc``."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return None
        since_boot = process.create_time() - psutil.boot_time()
    except psutil.NoSuchProcess:
        return None
    except psutil.Error as exc:  # alive, but not ours to inspect
        raise PermissionError(f"process {pid} cannot be inspected: {exc}") from None
    return max(0, round(since_boot * os.sysconf("SC_CLK_TCK")))


def temp_path(target: str, kind: str) -> str:
    """A fresh name for a ``kind`` temp file (one of :data:`TEMP_KINDS`) beside ``target``, not yet created."""
    if not _START:
        _START.append(_start_ticks(os.getpid()) or 0)
    folder, base = os.path.split(target)
    return os.path.join(folder, f".{base}.jcli-{os.getpid()}-{_START[0]}-{os.urandom(4).hex()}.{kind}")


def _writer_gone(pid: int, start: int) -> bool:
    """True only when the writer provably runs no more: no such process, or the pid is another process's now."""
    if pid == os.getpid():
        return False
    try:
        ticks = _start_ticks(pid)
    except PermissionError:  # a process we may not inspect: alive, so not provably gone
        return False
    slack = 0 if proc_root() is not None else _TICK_SLACK
    return ticks is None or (start != 0 and abs(ticks - start) > slack)


def clean_dead_temps(target: str) -> list[str]:
    """Remove (or put back, see the module) the temp files dead writers left beside ``target``; the names handled.

    Never raises: a temp file that cannot be handled stays for the next write.
    """
    folder, base = os.path.split(target)
    handled: list[str] = []
    try:
        names = [entry.name for entry in os.scandir(folder or ".") if entry.name.startswith(f".{base}.jcli-")]
    except OSError:  # the folder cannot be listed: nothing handled; this never raises (documented)
        return handled
    for name in names:
        match = _NAME.match(name)
        if match is None or match["base"] != base:
            continue
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
            if info.st_uid != os.getuid() or not _writer_gone(int(match["pid"]), int(match["start"])):
                continue
            if _settle(path, target, match["kind"]):
                handled.append(name)
        except OSError:  # gone, or cannot be settled now: it stays for the next write
            continue
    return handled


def _settle(path: str, target: str, kind: str) -> bool:
    """Handle one dead writer's temp file; True when it is gone from its place."""
    if kind == "old" and not os.path.lexists(target):
        os.link(path, target)  # never over a file that appeared meanwhile
    elif kind == "rewrite" and not _same_bytes(path, target):
        return False
    os.unlink(path)
    return True


def _same_bytes(one: str, other: str) -> bool:
    import filecmp

    try:
        return filecmp.cmp(one, other, shallow=False)
    except OSError:  # either side unreadable: not the same bytes, so the temp file is kept
        return False
