"""Stopping a run from a signal without losing what it captured.

:class:`StopSwitch` is what SIGINT and SIGTERM trip while code runs;
:func:`signals_to` installs it as their handler for the duration of one
command. Before any code is sent a signal raises :class:`StopRequested`
(nothing ran); after, it is recorded and the run interrupts the kernel,
collects what the code printed, and ends ``INTERRUPTED``.
"""

from __future__ import annotations

import contextlib
import os

from ..base import Interrupted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["IDLE_AFTER_INTERRUPT", "StopRequested", "StopSwitch", "signals_to"]

#: After an interrupt (a timeout's or a signal's), how long to wait for the kernel to go idle.
IDLE_AFTER_INTERRUPT = 15.0


class StopRequested(BaseException):
    """A signal arrived before any code was sent: nothing ran, nothing to save.

    A ``BaseException``, so no ``except Exception`` on the way swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class StopSwitch:
    """Stops a run from a signal handler without losing what it captured.

    Install :meth:`handle` as the SIGINT and SIGTERM handler. Until code is
    about to be sent (:meth:`defer`, which :meth:`KernelConnection.execute`
    calls), a signal raises :class:`StopRequested` at once. After that it only
    records the signal and wakes the run (a pipe the run waits on beside the
    websocket): the run interrupts the kernel, collects what the code printed
    until the kernel is idle, and raises ``INTERRUPTED``. A second signal
    stops that wait. Writes in progress (a notebook write-back, a stored run)
    are never cut in half.

    Example:
        >>> stop = StopSwitch(); stop.defer(); stop.handle(2)
        >>> stop.count, stop.signal_name
        (1, 'SIGINT')
        >>> stop.close()
    """

    __slots__ = ("deferring", "count", "signum", "_read", "_write")

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self.deferring = False
        self.count = 0
        self.signum: int | None = None

    def handle(self, signum: int, frame: Any = None) -> None:
        """The signal handler."""
        if self.signum is None:
            self.signum = signum
        if not self.deferring:
            raise StopRequested(signum)
        self.count += 1
        try:
            os.write(self._write, b"\0")
        except OSError:  # the pipe is full: the run is awake already
            pass

    def defer(self) -> None:
        """From now on a signal is recorded, not raised: code is about to run."""
        self.deferring = True

    @property
    def signal_name(self) -> str:
        import signal

        return signal.Signals(self.signum).name if self.signum is not None else "SIGINT"

    def fileno(self) -> int:
        """Readable once a signal was recorded (for ``select``)."""
        return self._read

    def drain(self) -> None:
        """Empty the wake pipe (the count keeps what happened)."""
        try:
            while os.read(self._read, 4096):
                pass
        except OSError:  # EAGAIN: the pipe is empty
            pass

    def close(self) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:  # closing at the end: nothing is left to lose
                pass

    def interrupted(self, message: str, *, executed: bool) -> Interrupted:
        """The ``INTERRUPTED`` error for the recorded signal."""
        return Interrupted(f"stopped by {self.signal_name}: {message}", signal=self.signal_name, executed=executed)


@contextlib.contextmanager
def signals_to(stop: StopSwitch) -> Iterator[StopSwitch]:
    """SIGINT and SIGTERM go to ``stop`` for the duration (main thread only; elsewhere nothing changes)."""
    import signal

    saved = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            saved[signum] = signal.signal(signum, stop.handle)
    except ValueError:  # not the main thread: signals are not ours to take
        pass
    try:
        yield stop
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
