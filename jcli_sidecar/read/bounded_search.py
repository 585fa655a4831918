"""A regular-expression search whose cost is bounded: it runs in a child process that can be ended.

Python's ``re`` holds the interpreter for the whole of one match, and some
patterns backtrack for ever (``(a+)+$`` over a line of 34 ``a``): no deadline
in the process that runs it can fire, and a sidecar running it stops
answering every other request. So the search itself runs in a small worker
process (``python -I -S``, the same interpreter, so the very same ``re``:
patterns, flags and matches are exactly those of an in-process search),
which a search waits for without holding the interpreter, up to its bound
(:data:`SEARCH_SECONDS_ENV`). Past it the worker is killed and the search is
a :class:`~jcli_sidecar.base.errors.SearchTooCostly`; a worker that answered
is kept for the next search (a few at most, idle), so a search pays for one
process start only when none is idle.

The worker is :mod:`jcli_sidecar.read.linematch` run as a script; its protocol is ``marshal``
(our own child, the same interpreter; it keeps lone surrogates a notebook's JSON may hold).
"""

from __future__ import annotations

import atexit
import marshal
import os
import select
import subprocess
import sys
import threading
import time

from ..base import SearchTooCostly, internal_error, setting, stall_point

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

__all__ = ["IDLE_MAX", "SEARCH_SECONDS_ENV", "Searcher", "search_lines", "workers_started"]

#: The setting that bounds one grep's regular-expression work, in seconds.
SEARCH_SECONDS_ENV = "JCLI_GREP_SEARCH_SECONDS"
# The test hook's variables: the sidecar's, where a search runs (see jcli_sidecar.base.stall).
_STALL_FIFO_ENV, _STALL_AT_ENV = "JCLI_SIDECAR_TEST_STALL_FIFO", "JCLI_SIDECAR_TEST_STALL_AT"
#: Idle workers kept for later searches.
IDLE_MAX = 2

_idle: list[_Worker] = []
_lock = threading.Lock()
_started = [0]


def workers_started() -> int:
    """How many search workers this process has started (tests: a search reuses an idle one)."""
    return _started[0]


class _Worker:
    __slots__ = ("proc", "parent")

    def __init__(self) -> None:
        from . import linematch

        with _lock:
            _started[0] += 1
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", linematch.__file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            env={},  # it needs nothing of ours (and is no sidecar of this runtime dir)
        )
        self.parent = os.getpid()  # a forked copy of this process does not own it

    def ask(self, body: bytes, deadline: float) -> bytes | None:
        """The reply to ``body``, or None when ``deadline`` (``time.monotonic``) passed first or the worker died."""
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(len(body).to_bytes(8, "little") + body)
            proc.stdin.flush()
        except (BrokenPipeError, OSError):  # the worker is gone: no answer, and the caller ends it and says why
            return None
        stall_point("grep:searching", _STALL_FIFO_ENV, _STALL_AT_ENV)  # tests: the worker has the request; the search runs
        fd = proc.stdout.fileno()
        head = self._read(fd, 8, deadline)
        if head is None:
            return None
        return self._read(fd, int.from_bytes(head, "little"), deadline)

    @staticmethod
    def _read(fd: int, size: int, deadline: float) -> bytes | None:
        parts: list[bytes] = []
        have = 0
        poller = select.poll()  # not select(): a sidecar's descriptors may pass FD_SETSIZE
        poller.register(fd, select.POLLIN)
        while have < size:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(max(1, int(left * 1000 + 0.999))):
                return None
            chunk = os.read(fd, min(size - have, 1 << 20))
            if not chunk:
                return None
            parts.append(chunk)
            have += len(chunk)
        return b"".join(parts)

    def end(self) -> None:
        """Kill the worker and reap it."""
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # a pipe to a killed worker: nothing left to flush
                    pass


class Searcher:
    """The searches of one grep, in one worker, bounded together by ``seconds`` (default: the setting).

    Use as a context manager; :meth:`hits` searches one text.
    """

    __slots__ = ("seconds", "left", "_worker")

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = setting(SEARCH_SECONDS_ENV) if seconds is None else seconds
        #: What is left of the bound: only the time spent waiting for the worker counts.
        self.left = self.seconds
        self._worker: _Worker | None = None

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def hits(self, regex: re.Pattern[str], text: str, want: int, width: int, until: float | None = None) -> list[tuple[int, int, str]]:
        """``(line number, column, clipped line)`` of up to ``want`` lines of ``text`` that ``regex`` matches.

        The time spent waiting counts against the grep's bound. ``until`` (``time.monotonic``) is a
        deadline of the caller's own: past it first, the worker is ended too and :class:`TimeoutError`
        is raised, for the caller to say what it means.

        Raises:
            SearchTooCostly: the search ran past this grep's bound.
            TimeoutError: it ran past ``until`` (earlier than the bound).
        """
        self.start()
        assert self._worker is not None
        body = marshal.dumps((regex.pattern, regex.flags, text, want, width, self.left))
        began = time.monotonic()
        bound = began + self.left
        reply = self._worker.ask(body, bound if until is None else min(until, bound))
        self.left -= time.monotonic() - began
        if reply is None:
            self._worker.end()
            self._worker = None
            now = time.monotonic()
            if until is not None and until < bound and now >= until:
                raise TimeoutError()
            if now < bound:  # it ended of itself (killed from outside, out of memory): no answer to give
                raise internal_error(RuntimeError("the search worker ended"))
            raise SearchTooCostly(
                f"the pattern {regex.pattern!r} took longer than {self.seconds:g} s to search ({SEARCH_SECONDS_ENV}); "
                "a pattern that can backtrack without end (a nested repeat such as (a+)+) is the usual cause: simplify it, or use -F",
                seconds=self.seconds,
            )
        return [tuple(hit) for hit in marshal.loads(reply)]  # type: ignore[misc]

    def start(self) -> None:
        """Take an idle worker, or start one: its start then overlaps whatever the caller does before its first search."""
        if self._worker is None:
            with _lock:
                self._worker = _idle.pop() if _idle else None
            if self._worker is None:
                self._worker = _Worker()

    def close(self) -> None:
        """Give the worker back for the next search (a few kept idle; the rest ended)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        with _lock:
            if len(_idle) < IDLE_MAX and worker.proc.poll() is None:
                _idle.append(worker)
                return
        worker.end()


@atexit.register
def _end_idle_workers() -> None:
    """At this process's exit, end and reap the idle workers (each would end at its stdin's close, unreaped until then)."""
    with _lock:
        idle = _idle[:]
        _idle.clear()
    for worker in idle:
        if worker.parent == os.getpid():
            worker.end()


def search_lines(regex: re.Pattern[str], text: str, want: int, width: int, seconds: float | None = None) -> list[tuple[int, int, str]]:
    """One bounded search of ``text`` (see :meth:`Searcher.hits`)."""
    with Searcher(seconds) as searcher:
        return searcher.hits(regex, text, want, width)
