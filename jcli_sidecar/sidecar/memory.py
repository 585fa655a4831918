"""The sidecar's memory after a burst: back to its cache budget plus a fixed base.

A burst of concurrent reads makes many response frames at once (each as
big as the output it carries), on the event loop and on worker threads.
When the burst is over, those are free, but the C allocator keeps what
it freed inside its heaps: by default one arena per thread (up to eight
per core), each holding on to its own high-water mark. So the sidecar:

- allows at most :data:`ARENAS` malloc arenas (``mallopt(M_ARENA_MAX)`` at
  start, before any worker thread exists), so freed memory is shared
  instead of stranded in a worker's arena;
- gives the free pages back to the system (``malloc_trim(0)``) when a
  burst ends: no request is in flight any more and at least
  :data:`TRIM_AFTER_BYTES` of answers went out since the last trim.

Both are glibc's, used only where the C library has them (looked up by
name); elsewhere (macOS, musl) they do nothing and the allocator keeps
what it keeps. :func:`rss_bytes` reads the resident set from ``/proc``, or
from psutil where there is none, as ``stats`` reports it.
"""

from __future__ import annotations

import os

from ..base import proc_root

__all__ = ["ARENAS", "TRIM_AFTER_BYTES", "Trimmer", "limit_arenas", "rss_bytes", "trim"]

#: The most malloc arenas the sidecar uses (glibc's default is eight per core).
ARENAS = 2
#: Answers written since the last trim before the end of a burst trims again:
#: an ordinary request or two never pays for a trim.
TRIM_AFTER_BYTES = 16 * 1024 * 1024

_M_ARENA_MAX = -8  # glibc's mallopt parameter
_libc = None


def _glibc():
    """glibc through ctypes, or None (another C library, or no ctypes)."""
    global _libc
    if _libc is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None)
            _libc = libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else False
        except (ImportError, OSError):  # no C library to trim with: memory is simply not trimmed
            _libc = False
    return _libc or None


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap malloc arenas at ``arenas`` (call before starting threads); True when glibc took it."""
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(_M_ARENA_MAX, arenas))


def trim() -> bool:
    """Give the free heap pages back to the system; True when some were."""
    libc = _glibc()
    return bool(libc is not None and libc.malloc_trim(0))


def rss_bytes() -> int | None:
    """This process's resident set in bytes (``VmRSS``; psutil's where there is no ``/proc``), or None where neither says."""
    proc = proc_root()
    if proc is None:
        import psutil

        try:
            return psutil.Process().memory_info().rss
        except psutil.Error:  # the system would not say: None (documented)
            return None
    try:
        with open(f"{proc}/{os.getpid()}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):  # no /proc, or it reads oddly: None (documented)
        return None
    return None


class Trimmer:
    """Counts the answers written and trims once a burst of them is over (the event loop's thread only)."""

    def __init__(self) -> None:
        self.sent_since_trim = 0
        self.trims = 0

    def sent(self, size: int) -> None:
        """A frame of ``size`` bytes was written."""
        self.sent_since_trim += size

    def idle(self) -> None:
        """Nothing is in flight: trim if at least :data:`TRIM_AFTER_BYTES` went out since the last trim."""
        if self.sent_since_trim >= TRIM_AFTER_BYTES:
            self.sent_since_trim = 0
            trim()
            self.trims += 1

    def stats(self) -> dict[str, int | None]:
        """``{rss_bytes, trims}`` for the sidecar's ``stats``."""
        return {"rss_bytes": rss_bytes(), "trims": self.trims}
