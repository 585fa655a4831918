"""The sidecar's notebook cache: fast, bounded, and never the source of truth.

Entries are :class:`NotebookFile` objects keyed by real path: an offset
index (kilobytes per notebook, see :mod:`jcli_sidecar.ipynb.nbindex`) plus the
cells, outputs and images already decoded, so a notebook of any size stays
warm and big payloads stay only within the budget. Concurrent requests for
a notebook being indexed wait for that one build (single flight). Every request
re-validates its entry against ``(st_dev, st_ino, st_size, st_mtime_ns,
st_ctime_ns)`` taken from the ``fstat`` of the file that was read, so a
notebook rewritten in place, replaced by rename, or deleted is never
served stale. The check opens the file (without blocking) and ``fstat``s
it, which makes an NFS client revalidate (close-to-open). The ctime is
what makes it sound: every write, ``utime``, ``chmod`` or link sets it to
"now", and no user can set it back, so a rewrite that restores the old
mtime still changes the key. File timestamps are coarse (a kernel tick),
so an entry whose mtime or ctime is within the racy window of the moment
it was read is not trusted until it is re-read later (git's "racy
timestamp" rule). The window is :data:`RACY_NS` for whole-second
timestamps, and :data:`FINE_RACY_NS` when the file system keeps finer ones
(a few kernel ticks): a just-written notebook costs one extra load, not
one per request for a second. watchfiles evicts changed entries early (see
:class:`CacheWatcher`), and an LRU keeps the total under a byte budget.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict

from ..base import SETTINGS, stat_regular
from ..ipynb import NotebookFile, stat_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "CacheWatcher",
    "DEFAULT_BUDGET_MB",
    "FINE_RACY_NS",
    "FLIGHT_SIZE_ENV",
    "NotebookCache",
    "RACY_NS",
    "budget_from_env",
    "flight_size_from_env",
    "racy_from_env",
    "racy_window",
]

DEFAULT_BUDGET_MB = SETTINGS["JCLI_SIDECAR_CACHE_MB"].default
#: Timestamps closer than this to the read are not trusted (1 s, generous
#: next to a 4-10 ms kernel tick; ``JCLI_SIDECAR_RACY_MS`` changes it).
RACY_NS = int(SETTINGS["JCLI_SIDECAR_RACY_MS"].default * 1_000_000)
#: The window for timestamps with a sub-second part: file systems that keep
#: them stamp from the kernel's coarse clock (one tick, 1-10 ms), so 20 ms
#: is two ticks or more.
FINE_RACY_NS = 20_000_000


def budget_from_env() -> int:
    """``JCLI_SIDECAR_CACHE_MB`` in bytes (default 256 MiB; 0 disables caching; a bad value means the default)."""
    from ..base import setting

    return int(setting("JCLI_SIDECAR_CACHE_MB") * 1024 * 1024)


def racy_from_env() -> int:
    """``JCLI_SIDECAR_RACY_MS`` in ns (default :data:`RACY_NS`).

    Raise it on a file system with coarser timestamps (FAT keeps 2 s); 0
    trusts every entry at once, which only a test should want.
    """
    from ..base import setting

    return int(setting("JCLI_SIDECAR_RACY_MS") * 1_000_000)


_key = stat_key


def racy_window(key: tuple[int, int, int, int, int], racy_ns: int) -> int:
    """How long after its timestamps a file's key can still hide a change.

    Timestamps in whole seconds (an old or coarse file system, FAT) get the
    whole ``racy_ns``; finer ones get :data:`FINE_RACY_NS` (never more than
    ``racy_ns``, so 0 still trusts at once).
    """
    second = 1_000_000_000
    if key[3] % second == 0 and key[4] % second == 0:
        return racy_ns
    return min(racy_ns, FINE_RACY_NS)


class _Entry:
    __slots__ = ("key", "notebook", "size", "trusted")

    def __init__(self, notebook: NotebookFile, loaded_ns: int, racy_ns: int) -> None:
        key = notebook.key
        self.key = key
        self.notebook = notebook
        self.size = notebook.approx_bytes
        #: Whether the file's timestamps were safely older than the read: only
        #: then can an unchanged key prove unchanged content.
        self.trusted = max(key[3], key[4]) < loaded_ns - racy_window(key, racy_ns)


#: Test hook: an index build waits until this many requests share it
#: (``JCLI_SIDECAR_TEST_FLIGHT_SIZE``), so a test sees single flight without timing.
FLIGHT_SIZE_ENV = "JCLI_SIDECAR_TEST_FLIGHT_SIZE"


def flight_size_from_env() -> int:
    """:data:`FLIGHT_SIZE_ENV` as an int (0, the default, holds nothing)."""
    raw = os.environ.get(FLIGHT_SIZE_ENV, "")
    return int(raw) if raw.isdigit() else 0


class _Flight:
    """One index build that concurrent requests for the same file wait on."""

    __slots__ = ("key", "done", "notebook", "joined", "riders")

    def __init__(self, key) -> None:
        self.key = key
        self.done = threading.Event()
        self.notebook: NotebookFile | None = None
        self.joined = threading.Condition()
        self.riders = 0

    def join(self) -> None:
        with self.joined:
            self.riders += 1
            self.joined.notify_all()


class NotebookCache:
    """Parsed notebooks by real path, validated on every :meth:`load`.

    Thread-safe: the sidecar loads from worker threads.

    Example:
        >>> cache = NotebookCache(budget_bytes=64 * 1024 * 1024)
        >>> import os; path = os.path.realpath("examples/demo.ipynb")
        >>> cache.load(path) is cache.load(path)
        True
    """

    def __init__(
        self,
        budget_bytes: int,
        on_insert: Callable[[str], None] | None = None,
        racy_ns: int = RACY_NS,
        flight_size: int = 0,
    ) -> None:
        self.budget = budget_bytes
        self.flight_size = flight_size
        self.on_insert = on_insert
        self.racy_ns = racy_ns
        self.hits = 0
        self.misses = 0
        #: Index builds (full loads) done; requests that waited on another's build count as hits of it.
        self.builds = 0
        self.shared = 0
        self.bytes = 0
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._flights: dict[str, _Flight] = {}
        self._lock = threading.Lock()

    def load(self, path: str) -> NotebookFile:
        """The notebook at real path ``path``, from cache when still valid.

        Raises:
            FileNotFound, NotebookReadFailed: as :meth:`NotebookFile.load`.
        """
        key = self._probe(path)
        if key is None:
            self.evict(path)
        else:
            with self._lock:
                entry = self._entries.get(path)
                if entry is not None and entry.key == key and entry.trusted:
                    self._entries.move_to_end(path)
                    self.hits += 1
                    self._account(entry)
                    return entry.notebook
        with self._lock:
            flight = self._flights.get(path)
            leader = flight is None or key is None or flight.key != key
            if leader:
                flight = _Flight(key)
                self._flights[path] = flight
        assert flight is not None
        if not leader:
            flight.join()
            flight.done.wait()
            shared = flight.notebook
            if shared is not None and shared.key == key:
                with self._lock:
                    self.shared += 1
                return shared
            return self._build(path, None)  # the build failed or saw another file: on our own
        return self._build(path, flight)

    def _build(self, path: str, flight: _Flight | None) -> NotebookFile:
        """Index ``path`` and keep it; ``flight`` (if ours) is finished either way."""
        try:
            if flight is not None and self.flight_size > 1:
                with flight.joined:  # the test hook: wait for the others to board
                    flight.joined.wait_for(lambda: flight.riders >= self.flight_size - 1, timeout=30)
            loaded_ns = time.time_ns()
            with self._lock:
                self.builds += 1
            notebook = NotebookFile.load(path)  # the coded error, when the probe failed
            notebook.memo = {}  # decoded cells, outputs and images live as long as the entry
            self._store(path, _Entry(notebook, loaded_ns, self.racy_ns))
            if flight is not None:
                flight.notebook = notebook
            return notebook
        finally:
            if flight is not None:
                with self._lock:
                    if self._flights.get(path) is flight:
                        del self._flights[path]
                flight.done.set()

    @staticmethod
    def _probe(path: str) -> tuple[int, int, int, int, int] | None:
        """The key of the regular file at ``path`` now (open, fstat, close), or None."""
        try:
            return _key(stat_regular(path))
        except (OSError, ValueError):  # gone, or not a regular file: None (documented)
            return None

    def is_fresh(self, path: str) -> bool:
        """True when ``path`` is cached and still valid (one open and fstat, no read)."""
        with self._lock:
            entry = self._entries.get(path)
            if entry is None or not entry.trusted:
                return False
        return self._probe(path) == entry.key

    def _account(self, entry: _Entry) -> None:
        """Follow an entry's growth (its memo) and keep the total in budget. Lock held.

        Other notebooks go first, oldest first; when this one alone is over
        the budget, its oldest decoded values go (its index stays).
        """
        size = entry.notebook.approx_bytes
        self.bytes += size - entry.size
        entry.size = size
        while self.bytes > self.budget and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            if self._entries[oldest] is entry:
                break
            self.bytes -= self._entries.pop(oldest).size
        if self.bytes > self.budget:
            entry.notebook.shrink_memo(max(0, self.budget - (self.bytes - entry.size)))
            size = entry.notebook.approx_bytes
            self.bytes += size - entry.size
            entry.size = size

    def settle(self) -> None:
        """Count what requests decoded since their load (entries grow after it) and bring the total back within budget."""
        with self._lock:
            for entry in list(self._entries.values()):
                if entry.notebook.approx_bytes != entry.size and self._entries.get(entry.notebook.path) is entry:
                    self._account(entry)

    def _store(self, path: str, entry: _Entry) -> None:
        with self._lock:
            self.misses += 1
            old = self._entries.pop(path, None)
            if old is not None:
                self.bytes -= old.size
            if entry.size > self.budget:
                return  # bigger than the whole budget: serve it, keep nothing
            self._entries[path] = entry
            self.bytes += entry.size
            while self.bytes > self.budget:
                _, dropped = self._entries.popitem(last=False)
                self.bytes -= dropped.size
        if self.on_insert is not None:
            self.on_insert(path)

    def evict(self, path: str) -> bool:
        """Forget ``path``; True when it was cached."""
        with self._lock:
            entry = self._entries.pop(path, None)
            if entry is not None:
                self.bytes -= entry.size
            return entry is not None

    def evict_directory(self, directory: str) -> int:
        """Forget every notebook in ``directory``; returns how many."""
        with self._lock:
            doomed = [p for p in self._entries if os.path.dirname(p) == directory]
        return sum(self.evict(p) for p in doomed)

    def directories(self) -> set[str]:
        """The directories holding cached notebooks (what the watcher watches)."""
        with self._lock:
            return {os.path.dirname(p) for p in self._entries}

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "entries": len(self._entries),
                "bytes": self.bytes,
                "budget_bytes": self.budget,
                "hits": self.hits,
                "misses": self.misses,
                "builds": self.builds,
                "shared_builds": self.shared,
            }


class CacheWatcher:
    """Evicts cached notebooks as soon as watchfiles sees their files change.

    Purely an early eviction: correctness comes from the per-request stat.
    The watched set follows the cache; a new directory restarts the watch.
    """

    def __init__(self, cache: NotebookCache) -> None:
        self.cache = cache
        self.evicted = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._restart: asyncio.Event | None = None
        self._watched: set[str] = set()

    def notice(self, path: str) -> None:
        """Called (from any thread) when ``path`` enters the cache."""
        if self._loop is None or os.path.dirname(path) in self._watched:
            return
        self._loop.call_soon_threadsafe(self._restart.set)

    async def run(self) -> None:
        import asyncio
        import logging

        from watchfiles import awatch

        log = logging.getLogger("jcli_sidecar")
        self._loop = asyncio.get_running_loop()
        self._restart = asyncio.Event()
        while True:
            self._restart.clear()
            self._watched = {d for d in self.cache.directories() if os.path.isdir(d)}
            if not self._watched:
                await self._restart.wait()
                continue
            try:
                async for changes in awatch(*sorted(self._watched), stop_event=self._restart, recursive=False, debounce=50, step=20):
                    for _change, changed in changes:
                        if self.cache.evict(os.path.realpath(changed)):
                            self.evicted += 1
            except (FileNotFoundError, OSError) as exc:  # a watched directory went away
                log.info("watch restarted: %s", exc)
                for directory in list(self._watched):
                    if not os.path.isdir(directory):
                        self.evicted += self.cache.evict_directory(directory)
