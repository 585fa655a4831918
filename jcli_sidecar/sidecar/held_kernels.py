"""``kernel.exec`` in the sidecar: kernel connections held between runs, and one run streamed back.

:class:`HeldKernels` keeps the websockets of the kernels a workspace uses,
keyed by server URL, token, proxy route and kernel id, so a run pays neither the
websocket handshake nor the server wiring up the kernel's channels. A held
connection is used by one run at a time: two runs on the same kernel at
once each get a connection of their own (and route the kernel's messages
by their own ``msg_id``), and at most :data:`MAX_IDLE` connections are kept
between runs. One is dropped when its kernel died or restarted (seen in
what arrived while it was idle), when its run did not end cleanly, or after
:data:`IDLE_SECONDS` unused.

Background jobs claim a kernel through its queue (:meth:`HeldKernels.enqueue`
when the job is submitted, :meth:`HeldKernels.claim` on the job's thread):
first in, first out, the head runs; a run that is no job is refused while
any job runs or waits there, or while the workspace's records show one that
another sidecar holds (:attr:`HeldKernels.foreign`).

:func:`run_streamed` is the run: the core's
:func:`~jcli_sidecar.kernel.inline_run.run_inline`, the one the in-process
path calls, over a held connection, with every output change and the
moment before the code goes out sent to the client as events. A client's signal reaches the run's
:class:`~jcli_sidecar.kernel.stop_switch.StopSwitch` through ``kernel.stop``.
"""

from __future__ import annotations

import contextlib
import threading
import time

from ..base import KernelBusy, ProtocolError
from ..kernel import ExecutionResult, KernelConnection, StopSwitch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ..kernel import JupyterServer

__all__ = ["HeldKernels", "IDLE_SECONDS", "MAX_IDLE", "proxy_variables", "run_streamed"]

#: A held connection unused for this long is closed.
IDLE_SECONDS = 300.0
#: At most this many connections are held between runs (all kernels together).
MAX_IDLE = 8

_Key = tuple[tuple[str, str, str], str]  # (JupyterServer.key, kernel id)


class HeldKernels:
    """The sidecar's kernel connections, and the stop switches of the runs in flight (thread-safe)."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS, max_idle: int = MAX_IDLE) -> None:
        self.idle_seconds = idle_seconds
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: dict[_Key, list[tuple[KernelConnection, float]]] = {}
        self._servers: dict[tuple[str, str, tuple[tuple[str, str], ...]], JupyterServer] = {}
        self._runs: dict[str, StopSwitch] = {}
        #: kernel id -> its background jobs, first in first out: the head runs (or is about to), the others wait
        self._queues: dict[str, list[str]] = {}
        #: job id -> the job directly ahead of it when it was queued (kept true when that one is cancelled while waiting)
        self._ahead: dict[str, str | None] = {}
        self._running: set[str] = set()  # the jobs that claimed their kernel (heads that run)
        self._freed = threading.Condition(self._lock)
        #: ``foreign(kernel_id)``: the ids of the running jobs the workspace's records show on the
        #: kernel that this sidecar does not hold, oldest first (another sidecar of the same
        #: directory, reached by another path). Set by the sidecar; None: no records are read.
        self.foreign: Callable[[str], list[str]] | None = None
        self.opened = 0
        self.reused = 0

    def server(self, url: str, token: str, proxy_env: dict[str, str] | None = None) -> JupyterServer:
        """One :class:`JupyterServer` per URL, token and proxy variables (its probe is asked once).

        ``proxy_env`` is the client's proxy variables
        (:func:`~jcli_sidecar.kernel.proxy_route.proxy_environment`): the
        route is decided from them, never from this process's environment,
        which is that of whichever client started the sidecar.
        """
        from ..kernel import JupyterServer

        env = dict(proxy_env or {})
        key = (url, token, tuple(sorted(env.items())))
        with self._lock:
            found = self._servers.get(key)
        if found is None:
            found = JupyterServer(url, token, proxy_env=env)  # raises UsageError on a malformed URL, token or proxy
            with self._lock:
                found = self._servers.setdefault(key, found)
        return found

    def server_of(self, server_args: dict[str, Any]) -> JupyterServer:
        """:meth:`server` of a request's checked ``server`` map ``{url, token, proxy_env?}``.

        Raises:
            ProtocolError: ``proxy_env`` is not a map of text to text.
        """
        return self.server(server_args["url"], server_args["token"], proxy_variables(server_args))

    def take(self, server: JupyterServer, kernel_id: str) -> KernelConnection:
        """A connection to ``kernel_id`` for one run: a held one that is still good, else a new one."""
        key = (server.key, kernel_id)
        while True:
            with self._lock:
                held = self._idle.get(key)
                kernel = held.pop()[0] if held else None
                if held == []:
                    del self._idle[key]
            if kernel is None:
                break
            if kernel.drain_idle():
                self.reused += 1
                return kernel
            kernel.close()
        self.opened += 1
        return KernelConnection(server, kernel_id)

    def enqueue(self, kernel_id: str, job_id: str, *, queue: bool, foreign: list[str] | tuple[str, ...] = ()) -> str | None:
        """Put job ``job_id`` in ``kernel_id``'s queue at once (its place is kept first in, first out); returns the job directly ahead (or None).

        ``foreign`` are the jobs the records show on the kernel that another
        sidecar holds, oldest first: they count as ahead too.

        Raises:
            KernelBusy: a job runs or waits on the kernel (the head is named) and ``queue`` is false.
        """
        with self._lock:
            line = self._queues.get(kernel_id, [])
            if (line or foreign) and not queue:
                busy = min(line[:1] + list(foreign[:1]))  # the oldest: the one running (job ids sort by creation time)
                raise _busy(busy, "cancel it, or pass --queue to run after it")
            ahead = max(line[-1:] + list(foreign[-1:]), default=None)  # job ids sort by creation time
            self._queues.setdefault(kernel_id, []).append(job_id)
            self._ahead[job_id] = ahead
        return ahead

    def claim(
        self,
        kernel_id: str,
        job_id: str,
        *,
        cancelled: Callable[[], bool] | None = None,
        foreign: list[str] | tuple[str, ...] = (),
        ended: Callable[[str], bool] | None = None,
        on_ahead: Callable[[str | None], None] | None = None,
    ) -> bool:
        """Wait until job ``job_id`` (put there by :meth:`enqueue`) heads ``kernel_id``'s queue and ``foreign`` jobs have ``ended``; whether it may run.

        False: ``cancelled()`` turned true while it waited; it left the queue
        (the job behind it now waits behind the one ahead of it). ``on_ahead``
        is called, on this thread, with the new job directly ahead when the
        one it waited behind left the queue that way.
        """
        waiting = list(foreign)
        with self._lock:
            seen = self._ahead.get(job_id)
            while True:
                if cancelled is not None and cancelled():
                    self._leave(kernel_id, job_id)
                    return False
                line = self._queues.get(kernel_id, [])
                if self._ahead.get(job_id) != seen and on_ahead is not None:
                    seen = self._ahead.get(job_id)
                    self._lock.release()
                    try:
                        on_ahead(seen)
                    finally:
                        self._lock.acquire()
                    continue
                if line[:1] == [job_id]:
                    if ended is not None:
                        waiting = [other for other in waiting if not ended(other)]
                    if not waiting:
                        self._running.add(job_id)
                        return True
                self._freed.wait(0.25 if waiting else None)

    def _leave(self, kernel_id: str, job_id: str) -> None:
        """``job_id`` leaves the queue (under the lock); when it never ran, the job behind it is now behind the one ahead of it."""
        line = self._queues.get(kernel_id, [])
        if job_id in line:
            at = line.index(job_id)
            if at + 1 < len(line) and job_id not in self._running:
                self._ahead[line[at + 1]] = self._ahead.get(job_id)
            line.remove(job_id)
        if not line:
            self._queues.pop(kernel_id, None)
        self._ahead.pop(job_id, None)
        self._running.discard(job_id)
        self._freed.notify_all()

    def wake(self) -> None:
        """Let every waiting job look again (one of them was cancelled)."""
        with self._lock:
            self._freed.notify_all()

    def release(self, kernel_id: str, job_id: str) -> None:
        """Job ``job_id`` no longer runs on ``kernel_id`` (or never will): the next queued job may start."""
        with self._lock:
            self._leave(kernel_id, job_id)

    def job_on(self, kernel_id: str) -> str | None:
        """The background job at the head of ``kernel_id``'s queue (running or about to), if any."""
        with self._lock:
            line = self._queues.get(kernel_id)
            return line[0] if line else None

    def busy_with(self, kernel_id: str) -> str | None:
        """The job that makes ``kernel_id`` busy for a run that is not a job: the head of its queue, else one the records show."""
        with self._lock:
            line = self._queues.get(kernel_id, [])
            head = line[0] if line else None
            if head is not None and head in self._running:
                return head
        found = self.foreign(kernel_id) if self.foreign is not None else []
        return min(([head] if head is not None else []) + found[:1], default=None)

    @contextlib.contextmanager
    def holding(self, server: JupyterServer, kernel_id: str, *, job_id: str | None = None) -> Iterator[KernelConnection]:
        """A connection for one run (:meth:`take`): kept afterwards when the run ended cleanly, else closed.

        A kernel that runs a background job other than ``job_id`` is refused
        (``KERNEL_BUSY``, before any code goes out).
        """
        busy = self.job_on(kernel_id) if job_id is not None else self.busy_with(kernel_id)
        if busy is not None and busy != job_id:
            raise _busy(busy, "cancel it, or pass --queue to run after it")
        kernel = self.take(server, kernel_id)
        try:
            yield kernel
        except BaseException:
            kernel.close()
            raise
        self.give_back(kernel)

    def give_back(self, kernel: KernelConnection) -> None:
        """Keep a connection whose run ended cleanly, for the next run (or close it when enough are kept)."""
        key = (kernel.server.key, kernel.kernel_id)
        with self._lock:
            if sum(len(v) for v in self._idle.values()) < self.max_idle:
                self._idle.setdefault(key, []).append((kernel, time.monotonic()))
                return
        kernel.close()

    def prune(self) -> int:
        """Close connections idle longer than :attr:`idle_seconds`, or whose kernel died, restarted or went away.

        The others are drained of what arrived meanwhile (other clients'
        broadcasts), so neither side buffers it for long, and kept. Returns
        how many were closed. Blocking (a partly arrived message gets a
        second): call it off the event loop.
        """
        cutoff = time.monotonic() - self.idle_seconds
        with self._lock:
            taken = [(key, kernel, used) for key, held in self._idle.items() for kernel, used in held]
            self._idle.clear()
        closed = 0
        for key, kernel, used in taken:
            if used < cutoff or not kernel.drain_idle():
                kernel.close()
                closed += 1
                continue
            with self._lock:
                self._idle.setdefault(key, []).append((kernel, used))
        return closed

    def held(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._idle.values())

    def register(self, run_id: str, stop: StopSwitch) -> None:
        with self._lock:
            if run_id in self._runs:
                raise ProtocolError("kernel.exec: this run id is in use")
            self._runs[run_id] = stop

    def unregister(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    def stop_run(self, run_id: str, signum: int) -> bool:
        """Pass a client's signal to its run (as if it arrived in-process); False when no such run."""
        with self._lock:  # held while signalling, so the run cannot close its switch meanwhile
            stop = self._runs.get(run_id)
            if stop is None:
                return False
            stop.handle(signum)
            return True

    def close(self, signum: int) -> None:
        """The sidecar is stopping: every run in flight is stopped by ``signum``, every held connection closed."""
        with self._lock:
            for stop in self._runs.values():
                stop.handle(signum)
            idle = [k for held in self._idle.values() for k, _ in held]
            self._idle.clear()
        for kernel in idle:
            kernel.close()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            running = len(self._runs)
        return {"held": self.held(), "opened": self.opened, "reused": self.reused, "running": running}


def run_streamed(kernels: HeldKernels, args: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run one ``kernel.exec`` request; ``send`` delivers each event to the client before this goes on.

    The run is the core's :func:`~jcli_sidecar.kernel.inline_run.run_inline`
    over a held connection; here the request is checked and the run's
    output changes become events.

    Args:
        args: ``{run_id, server: {url, token, proxy_env?}, session, code, timeout?,
            display_mode?}``, checked against its spec (``EXEC_SPEC``) by the server.
        send: delivers one event map (``sending``, ``output``) to the client.

    Returns:
        ``{session, status, execution_count, error, notes, dropped, frame,
        failure}`` once the code was sent: ``failure`` is the coded error that
        cut the run short (``executed: true``), else None.

    Raises:
        JcliError: anything before the code was sent (nothing ran); ``executed: false``.
    """
    from ..kernel import check_timeout, run_inline

    run_id, code, key, mode = args["run_id"], args["code"], args["session"], args.get("display_mode")
    timeout = check_timeout(args.get("timeout"))
    server = kernels.server_of(args["server"])
    stop = StopSwitch()
    stop.defer()  # a client's signal is recorded from the start; execute() checks it before sending
    kernels.register(run_id, stop)
    result = ExecutionResult()
    try:
        session, failure = run_inline(
            server,
            key,
            code,
            timeout=timeout,
            display_mode=mode,
            result=result,
            stop=stop,
            on_output=_events_to(send),
            on_send=lambda session: send({"event": "sending", "session": session}),
            open_kernel=kernels.holding,
        )
    finally:
        kernels.unregister(run_id)
        stop.close()
    return {
        "session": session,
        "status": result.status,
        "execution_count": result.execution_count,
        "error": result.error,
        "notes": result.notes,
        "dropped": result.dropped,
        "frame": result.frame,
        "failure": None if failure is None else failure.to_dict(),
    }


def _busy(job_id: str, then: str) -> KernelBusy:
    return KernelBusy(f"the kernel runs background job {job_id}; wait for it (j-cli job wait {job_id}), {then}", job_id=job_id)


def proxy_variables(server_args: dict[str, Any]) -> dict[str, str]:
    """The client's proxy variables from a request's ``server`` map (``proxy_env``; none when absent).

    Raises:
        ProtocolError: ``proxy_env`` is not a map of text to text.
    """
    env = server_args.get("proxy_env")
    if env is None:
        return {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ProtocolError("server.proxy_env must map variable names to text")
    return env


def _events_to(send: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    """The output hook of a streamed run: each change of the outputs becomes one ``output`` event."""

    def forward(*, event: str, output: dict[str, Any], index: int, outputs: list, chunk: str | None = None) -> None:
        if event == "append":
            send({"event": "output", "kind": "append", "index": index, "output": output})
        elif event == "stream":
            send({"event": "output", "kind": "stream", "index": index, "chunk": chunk})
        elif event == "update":
            send({"event": "output", "kind": "update", "index": index, "output": output})
        else:
            send({"event": "output", "kind": "clear"})

    return forward
