"""The sidecar's protocol: one asyncio server per workspace, on a Unix socket.

:class:`Sidecar` accepts connections on a listening socket it is handed and
answers them until ``shutdown``, SIGTERM/SIGINT, or the idle timeout. Each
connection is checked by its peer's uid (same uid only: ``SO_PEERCRED``, or
what the system offers instead, :mod:`jcli_sidecar.sidecar.peercred`), must start
with ``hello``, and then runs its requests concurrently, each checked against its
op's declaration (:mod:`jcli_sidecar.sidecar.op_table`) and run by its
handler in :mod:`jcli_sidecar.sidecar.ops`. Bad frames get a coded error or a closed
connection; they never stop the server.

Blocking handlers run on a pool of worker threads, each within a deadline
(``JCLI_SIDECAR_REQUEST_SECONDS``, default 60 s). A thread cannot be
cancelled, so a request that overruns is answered ``TIMEOUT`` and the
sidecar retires: it stops taking work and exits, and the next client
starts a fresh one. Stopping never waits on a worker for more than
:data:`STOP_GRACE_SECONDS`; :mod:`jcli_sidecar.sidecar.daemon` then exits anyway.

The process around it (the lifetime lock, the socket, the pid file, the
spawn lock) is :mod:`jcli_sidecar.sidecar.daemon`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .. import __version__
from ..base import (
    MAX_REQUEST_FRAME,
    PROTOCOL_VERSION,
    SETTINGS,
    InternalError,
    JcliError,
    PeerRefused,
    ProtocolError,
    Timeout,
    os_error,
    os_reason,
    pack_frame,
    read_frame_async,
    unpack_payload,
    workspace_hash,
)
from .cache import CacheWatcher, NotebookCache, budget_from_env, flight_size_from_env, racy_from_env
from .held_jobs import HeldJobs
from .held_kernels import HeldKernels
from .live_rooms import LiveRooms
from .memory import Trimmer
from .op_table import OPS
from .ops import HANDLERS
from .peercred import peer_uid
from .pidfile import write_pid_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

    from ..base import SidecarPaths

__all__ = ["DEFAULT_REQUEST_SECONDS", "LISTEN_BACKLOG", "STOP_GRACE_SECONDS", "Sidecar", "request_seconds_from_env"]

log = logging.getLogger("jcli_sidecar")

#: How long one blocking request may run (``JCLI_SIDECAR_REQUEST_SECONDS``).
#: Less than the client's own wait, so the client gets the coded answer.
DEFAULT_REQUEST_SECONDS = SETTINGS["JCLI_SIDECAR_REQUEST_SECONDS"].default
#: How long a stopping sidecar waits for requests still running on workers.
STOP_GRACE_SECONDS = 2.0
#: Connections the kernel queues before the sidecar accepts them: 4096, the
#: system's ``SOMAXCONN`` on current Linux (``net.core.somaxconn`` caps it), so a
#: burst of clients waits to be accepted instead of being refused at connect.
LISTEN_BACKLOG = max(socket.SOMAXCONN, 4096)
#: How often held kernel connections are drained and the stale ones closed.
KERNEL_PRUNE_SECONDS = 10.0

#: Test hook: a FIFO path. At the chosen point (``JCLI_SIDECAR_TEST_STALL_AT``;
#: default: the start of any notebook request) the sidecar writes one line
#: to it, then blocks forever, so a test can kill -9 it at a known step.
STALL_FIFO_ENV = "JCLI_SIDECAR_TEST_STALL_FIFO"
STALL_AT_ENV = "JCLI_SIDECAR_TEST_STALL_AT"


def request_seconds_from_env() -> float:
    """``JCLI_SIDECAR_REQUEST_SECONDS`` (default 60; a bad value means the default, with a warning in the log)."""
    from ..base import setting

    return setting("JCLI_SIDECAR_REQUEST_SECONDS")


class _StallHook:
    """The env-gated stall of :data:`STALL_FIFO_ENV`; inert when unset.

    Points are ``"request:<op>"`` (before an op runs) and the named steps
    ops report, e.g. ``"run.publish:before-rename"``.
    """

    def __init__(self, fifo: str | None, at: str | None) -> None:
        self.fifo = fifo
        self.at = at
        self._lock = threading.Lock()
        self._out: TextIO | None = None

    def __call__(self, point: str) -> None:
        if not self.fifo:
            return
        wanted = self.at or "request:notebook."
        if not point.startswith(wanted):
            return
        with self._lock:
            if self._out is None:
                self._out = open(self.fifo, "w", buffering=1)  # noqa: SIM115 - kept open for life
            self._out.write(f"stalled {point}\n")
        threading.Event().wait()


class Sidecar:
    """The state of one running sidecar; the ops call back into it."""

    def __init__(self, paths: SidecarPaths, workspace: str | None, idle_seconds: float) -> None:
        self.paths = paths
        self.workspace = workspace
        self.idle_seconds = idle_seconds
        self.started = time.monotonic()
        self.last_active = self.started
        self.requests = 0
        self.inflight = 0
        #: Answers being written (their requests no longer count as in flight).
        self.sending = 0
        self.memory = Trimmer()
        self.connections = 0
        self.stop_reason: str | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.stall = _StallHook(os.environ.get(STALL_FIFO_ENV), os.environ.get(STALL_AT_ENV))
        self.request_seconds = request_seconds_from_env()
        #: Worker threads running a handler right now (a stuck one stays counted).
        self.busy = 0
        self._busy_lock = threading.Lock()
        self._workers_idle: asyncio.Event | None = None
        self._retiring: str | None = None
        self._pool = ThreadPoolExecutor(max_workers=min(32, (os.cpu_count() or 1) + 4), thread_name_prefix="jcli-op")
        self.cache = NotebookCache(budget_from_env(), racy_ns=racy_from_env(), flight_size=flight_size_from_env())
        self.watcher = CacheWatcher(self.cache)
        self.cache.on_insert = self.watcher.notice
        self.kernels = HeldKernels()
        self.rooms = LiveRooms()
        self.jobs = HeldJobs(self.kernels, self.rooms)
        self.kernels.foreign = lambda kernel_id: self.jobs.foreign(self.workspace, kernel_id) if self.workspace else []

    # -- what the ops use ----------------------------------------------------

    def load(self, path: str):
        """Open a notebook by real path: the shared document of a room a job holds for it, else the file through the cache."""
        return self.rooms.notebook(path) or self.cache.load(path)

    def forget(self, path: str) -> None:
        """Drop a notebook's cache entry (its writer handed over the index of its new version)."""
        self.cache.evict(path)

    def stats(self) -> dict[str, Any]:
        from ..ipynb import adopted_uses

        return {
            "pid": os.getpid(),
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "workspace": self.workspace,
            "socket": self.paths.socket,
            "uptime_seconds": round(time.monotonic() - self.started, 3),
            "requests_served": self.requests,
            "requests_in_flight": self.inflight,
            "connections": self.connections,
            "idle_seconds": self.idle_seconds,
            "cache": {**self.cache.stats(), "watch_evictions": self.watcher.evicted, "adopted_loads": adopted_uses()},
            "kernels": self.kernels.stats(),
            "jobs": self.jobs.running(),
            "memory": self.memory.stats(),
        }

    def request_stop(self, reason: str) -> None:
        """Stop soon (thread-safe)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    # -- serving -------------------------------------------------------------

    async def run(self, listener: socket.socket) -> None:
        """Serve on ``listener`` until asked to stop.

        Returns within :data:`STOP_GRACE_SECONDS` of the stop, whatever the
        workers are doing; :attr:`busy` then says how many never finished.
        """
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._workers_idle = asyncio.Event()
        self._workers_idle.set()
        if self.stop_reason is not None:
            self._stop.set()
        signals = (signal.SIGTERM, signal.SIGINT)
        for sig in signals:
            self._loop.add_signal_handler(sig, self.request_stop, signal.Signals(sig).name)
        server = await asyncio.start_unix_server(self._connection, sock=listener, limit=MAX_REQUEST_FRAME, backlog=LISTEN_BACKLOG)
        background = [
            asyncio.create_task(self._idle_watch()),
            asyncio.create_task(self._watch()),
            asyncio.create_task(self._prune_kernels()),
        ]
        try:
            await self._stop.wait()
        finally:
            for task in background:
                task.cancel()
            server.close()
            for writer in list(self._writers):
                writer.close()
            for sig in signals:
                self._loop.remove_signal_handler(sig)
            self._pool.shutdown(wait=False, cancel_futures=True)
            self.kernels.close(signal.SIGTERM)  # runs in flight interrupt their kernels, as a client's SIGTERM would
            self.jobs.close(signal.SIGTERM)  # so do background jobs (they end interrupted, their records written)
        log.info("stopping: %s", self.stop_reason)
        try:
            await asyncio.wait_for(self._workers_idle.wait(), STOP_GRACE_SECONDS)
        except TimeoutError:
            log.warning("%d request(s) still running after %g s; exiting without them", self.busy, STOP_GRACE_SECONDS)

    async def _watch(self) -> None:
        try:
            await self.watcher.run()
        except asyncio.CancelledError:
            raise
        except Exception:  # early eviction is an optimisation; stat checks stay
            log.exception("file watching stopped")

    async def _prune_kernels(self) -> None:
        """Every :data:`KERNEL_PRUNE_SECONDS`, drain the held kernel connections, closing stale ones (on a worker)."""
        while True:
            await asyncio.sleep(KERNEL_PRUNE_SECONDS)
            try:
                await asyncio.wrap_future(self._pool.submit(self.kernels.prune))
            except RuntimeError:  # the pool is shut down: the sidecar is stopping
                return

    async def _idle_watch(self) -> None:
        while True:
            if self.jobs.running() or self.jobs.unsaved():  # never idle while it holds a job (or an end it could not save yet)
                self.last_active = time.monotonic()
            remaining = self.idle_seconds - (time.monotonic() - self.last_active)
            if remaining <= 0 and self.inflight == 0:
                self.request_stop(f"idle for {self.idle_seconds:g} s")
                return
            await asyncio.sleep(max(remaining, 0.05))

    def _hello(self, args: Any) -> dict[str, Any]:
        if not isinstance(args, dict) or not isinstance(args.get("workspace"), str):
            raise ProtocolError("hello must carry the client's workspace")
        workspace = args["workspace"]
        if self.workspace is None:  # socket-activated: learn it, and check it
            if workspace_hash(workspace) != self.paths.hash:
                raise ProtocolError("this socket belongs to another workspace")
            self.workspace = workspace
            os.chdir(workspace)
            write_pid_file(self.paths, workspace)
            log.info("workspace %s", workspace)
        elif workspace != self.workspace:
            raise ProtocolError("this sidecar serves another workspace")
        return {"protocol": PROTOCOL_VERSION, "version": __version__, "pid": os.getpid(), "workspace": self.workspace}

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        lock = asyncio.Lock()
        if peer_uid(sock) != os.geteuid():  # another user's, or one this system cannot name (None)
            err = PeerRefused("only the user who owns this sidecar may use it")
            await _refuse(reader, writer, _error_frame(None, err))
            return
        self.connections += 1
        self._writers.add(writer)
        tasks: set[asyncio.Task] = set()
        try:
            await self._serve_connection(reader, writer, lock, tasks)
        except asyncio.CancelledError:
            pass  # the sidecar is stopping; the client falls back or retries
        finally:
            for task in tasks:
                task.cancel()
            self._writers.discard(writer)
            self.connections -= 1
            await _close(writer)

    async def _serve_connection(self, reader, writer, lock, tasks: set) -> None:
        """Read frames until the client goes: hello first, then concurrent requests."""
        greeted = False
        while True:
            try:
                payload = await read_frame_async(reader, MAX_REQUEST_FRAME)
            except ProtocolError as exc:  # oversized: the stream cannot be resynced
                await self._send(writer, lock, _error_frame(None, exc))
                return
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if payload is None:
                return
            try:
                message = unpack_payload(payload)
            except ProtocolError as exc:  # garbage inside a well-framed payload
                await self._send(writer, lock, _error_frame(None, exc))
                continue
            rid, name, args = message.get("id"), message.get("op"), message.get("args", {})
            if not greeted:
                try:
                    if name != "hello":
                        raise ProtocolError("the first request must be hello")
                    frame = pack_frame({"id": rid, "ok": True, "result": self._hello(args)})
                    greeted = True
                except JcliError as exc:
                    frame = _error_frame(rid, exc)
                if not greeted:
                    await _refuse(reader, writer, frame)
                    return
                await self._send(writer, lock, frame)
                continue
            task = asyncio.create_task(self._dispatch(writer, lock, rid, name, args))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def _dispatch(self, writer, lock, rid: Any, name: Any, args: Any) -> None:
        self.requests += 1
        self.inflight += 1
        self.last_active = time.monotonic()
        try:
            declared = OPS.get(name) if isinstance(name, str) else None
            if declared is None:
                raise ProtocolError(f"unknown op {name!r}")
            if not isinstance(args, dict):
                raise ProtocolError("args must be a map")
            args = declared.check(args)  # every request, against its op's spec, here and only here
            handler = HANDLERS[name]
            if declared.streaming:
                result = await self._on_thread(handler, name, args, writer, lock, rid)
            elif declared.blocking and not self._answers_from_memory(args):
                result = await self._on_worker(handler, name, args)
            else:
                result = handler(self, args)
            frame = pack_frame({"id": rid, "ok": True, "result": result})
        except JcliError as exc:
            frame = _error_frame(rid, exc)
        except OSError as exc:  # the system refused something (no fd left, a disk error): coded by the one table
            log.warning("op %r failed: %s", name, os_reason(exc))
            frame = _error_frame(rid, os_error(exc, "sidecar-op", repr(name)))
        except Exception:  # a bug: report it coded, keep serving
            log.exception("op %r failed", name)
            frame = _error_frame(rid, InternalError(f"the sidecar failed on {name!r}; see its log"))
        finally:
            self.inflight -= 1
            self.last_active = time.monotonic()
        self.sending += 1
        sending = self._send(writer, lock, frame)
        del frame  # the send holds the only reference, and drops it once written (a burst holds each answer once)
        try:
            await sending
        finally:
            self.sending -= 1
        if self._retiring is not None:  # after the answer is out, so the client gets it
            self.request_stop(self._retiring)
        if self.inflight == 0 and self.sending == 0:  # a burst is over
            self.cache.settle()  # what the requests decoded, counted against the budget
            self.memory.idle()

    def _answers_from_memory(self, args: dict[str, Any]) -> bool:
        """A read of a cached, unchanged notebook is quick: run it on the loop.

        Anything else (a cold read, a .py pair, a read with ``as_mime_type``, the test stall) goes to a
        worker thread so that the loop keeps serving.
        """
        path = args.get("file_path")
        if self.stall.fifo or not isinstance(path, str) or not path.endswith(".ipynb"):
            return False
        if args.get("as_mime_type") is not None:  # a conversion or a chart render may take seconds: never on the loop
            return False
        try:
            return self.cache.is_fresh(os.path.realpath(path))
        except (OSError, ValueError):  # gone, or not a regular file: not fresh, and the worker thread reports it
            return False

    async def _on_worker(self, handler, name: str, args: dict[str, Any]) -> Any:
        """Run a blocking handler on a worker thread, within the request deadline.

        Raises:
            Timeout: the deadline passed; the sidecar retires (the thread
                cannot be stopped, so it must not stay pinned).
        """
        future = asyncio.wrap_future(self._pool.submit(self._run_blocking, handler, name, args))
        try:
            return await asyncio.wait_for(future, self.request_seconds)
        except TimeoutError:
            seconds = self.request_seconds
            self._retiring = f"{name} ran past its {seconds:g} s deadline; retiring so that no worker stays pinned"
            raise Timeout(
                f"the sidecar gave up on {name} after {seconds:g} s (JCLI_SIDECAR_REQUEST_SECONDS); "
                "is the file system hung? The next call starts a fresh sidecar",
                seconds=seconds,
            ) from None

    async def _on_thread(self, handler, name: str, args: dict[str, Any], writer, lock: asyncio.Lock, rid: Any) -> Any:
        """Run a streaming handler on a thread of its own (no deadline: a run is bounded by its own timeout).

        Its ``send(event)`` packs the event on that thread (the run's outputs
        change afterwards) and waits until the frame is written, so a slow
        client slows the run rather than filling this process's memory.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future = loop.create_future()

        def send(event: dict[str, Any]) -> None:
            frame = pack_frame({"id": rid, **event})
            asyncio.run_coroutine_threadsafe(self._send(writer, lock, frame), loop).result()

        def settle(value: Any, exc: BaseException | None) -> None:
            if done.cancelled():
                return
            if exc is None:
                done.set_result(value)
            else:
                done.set_exception(exc)

        def work() -> None:
            self._worker_started()  # counted as busy, so a stopping sidecar gives it the grace period too
            try:
                value, exc = handler(self, args, send), None
            except BaseException as caught:  # handed to the loop, which answers it coded
                value, exc = None, caught
            finally:
                self._worker_done()
            try:
                loop.call_soon_threadsafe(settle, value, exc)
            except RuntimeError:  # the loop is closed: nobody waits for this answer
                pass

        threading.Thread(target=work, name=f"jcli-{name}", daemon=True).start()
        return await done

    def _run_blocking(self, handler, name: str, args: dict[str, Any]) -> Any:
        self._worker_started()
        try:
            self.stall(f"request:{name}")
            return handler(self, args)
        finally:
            self._worker_done()

    def _worker_started(self) -> None:
        with self._busy_lock:
            self.busy += 1
            if self.busy == 1:
                self._tell_loop(self._workers_idle.clear)

    def _worker_done(self) -> None:
        with self._busy_lock:
            self.busy -= 1
            if self.busy == 0:
                self._tell_loop(self._workers_idle.set)

    def _tell_loop(self, callback) -> None:
        try:
            self._loop.call_soon_threadsafe(callback)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    async def _send(self, writer: asyncio.StreamWriter, lock: asyncio.Lock, frame: bytes) -> None:
        async with lock:
            if writer.is_closing():
                return
            writer.write(frame)
            self.memory.sent(len(frame))
            del frame  # what was not sent at once is in the transport's buffer now
            try:
                await writer.drain()
            except ConnectionError:
                pass


def _error_frame(rid: Any, exc: JcliError) -> bytes:
    return pack_frame({"id": rid, "ok": False, "error": exc.to_dict()})


async def _refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, frame: bytes) -> None:
    """Send a last error frame and close without losing it.

    Closing a socket with unread input makes the kernel send a reset, which
    can destroy the frame before the peer reads it; so half-close first and
    let the peer finish (bounded in bytes and time).
    """
    try:
        writer.write(frame)
        await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.wait_for(reader.read(MAX_REQUEST_FRAME), timeout=5)
    except (
        TimeoutError,
        OSError,
        asyncio.IncompleteReadError,
    ):  # the client is gone: the frame cannot reach it, and the connection closes below
        pass
    await _close(writer)


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    try:
        await writer.wait_closed()
    except (ConnectionError, OSError):  # the connection is already down
        pass
