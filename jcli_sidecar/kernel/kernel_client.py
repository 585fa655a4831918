"""Run code in a kernel over the Jupyter Server websocket, speaking the real protocol.

One focused client: :func:`execute` sends an ``execute_request`` and folds
the kernel's messages into nbformat-style outputs until the kernel is idle
and the reply has arrived:

- ``stream`` (consecutive chunks of one stream are coalesced);
- ``display_data`` and ``execute_result``;
- ``update_display_data`` (replaces every earlier output with that
  ``display_id``);
- ``clear_output`` (``wait=True`` clears only when the next output comes);
- ``error``;
- ``input_request``: j-cli has no stdin; the request is refused clearly;
- the kernel dying, or the connection dropping;
- a timeout: interrupt the kernel, wait for idle, then ``TIMEOUT``;
- a stop request (:class:`StopSwitch`, tripped by SIGINT or SIGTERM):
  interrupt the kernel, wait for idle, then ``INTERRUPTED``;
- the server's IOPub rate-limit notice: not an output, but a note, and the
  result says output was dropped.

``on_output`` (a named hook, called with keyword arguments) lets callers
stream outputs live or checkpoint them; its ``event`` is one of
:data:`OUTPUT_EVENTS`.

Once the request went out (``ExecutionResult.sent``), the caller's
``result`` holds everything captured so far, whatever is raised: a
``TIMEOUT``, ``KERNEL_DIED`` or ``INTERRUPTED`` carries the outputs the
code printed before it stopped.
"""

from __future__ import annotations

import json
import math
import os
import time

from ..base.errors import Interrupted, JcliError, KernelDied, Timeout, UsageError
from ..base.settings import SETTINGS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    from .jupyter_api import JupyterServer

    OutputEvent = Literal["append", "stream", "update", "clear"]

__all__ = [
    "ExecutionResult",
    "IDLE_AFTER_INTERRUPT",
    "KernelConnection",
    "MAX_TIMEOUT",
    "OUTPUT_EVENTS",
    "RATE_LIMIT_NOTE",
    "STALL_AT_ENV",
    "STALL_FIFO_ENV",
    "StopRequested",
    "StopSwitch",
    "check_timeout",
    "execute",
    "stall_point",
]

#: What ``on_output`` is told: an output was appended, text was added to the
#: last stream output, a display was updated in place, or the outputs were cleared.
OUTPUT_EVENTS = ("append", "stream", "update", "clear")

#: After a timeout's interrupt, how long to wait for the kernel to go idle.
IDLE_AFTER_INTERRUPT = 15.0
STDIN_HINT = "j-cli exec has no stdin: input() cannot be answered; pass the data in the code instead"
ABORTED_NOTE = "the kernel aborted this request without running it (it was still discarding requests after an error); run it again"

#: The longest ``timeout`` a run takes, in seconds (30 days); no timeout waits forever.
MAX_TIMEOUT = SETTINGS["JCLI_EXEC_TIMEOUT"].maximum

#: What the Jupyter Server sends (a stderr stream) when it starts dropping a run's output.
_RATE_LIMIT_NOTICES = ("IOPub data rate exceeded.", "IOPub message rate exceeded.")
RATE_LIMIT_NOTE = (
    "the Jupyter Server dropped some of this run's output (its IOPub rate limit); "
    "print less, or raise ZMQChannelsWebsocketConnection.iopub_data_rate_limit / iopub_msg_rate_limit on that server"
)


#: Test hook: a FIFO path. At the step named by :data:`STALL_AT_ENV` an exec
#: writes ``stalled <step>`` to it, then reads it until the test closes it,
#: so a test can land a signal at a known step. Steps: ``prepared`` (a
#: notebook run, nothing sent yet), ``output`` (the first output of the
#: process has arrived), ``write-back:checkpoint`` and
#: ``write-back:final`` (a cell's write-back, under the lock),
#: ``inline:finished`` (inline code finished, its outputs not yet kept).
STALL_FIFO_ENV = "JCLI_EXEC_TEST_STALL_FIFO"
STALL_AT_ENV = "JCLI_EXEC_TEST_STALL_AT"
_STALLED: set[str] = set()


def stall_point(step: str) -> None:
    """The env-gated stall of :data:`STALL_FIFO_ENV` (once per step and process); inert when unset."""
    fifo = os.environ.get(STALL_FIFO_ENV)
    if not fifo or os.environ.get(STALL_AT_ENV) != step or step in _STALLED:
        return
    _STALLED.add(step)
    with open(fifo, "w", encoding="utf-8") as out:
        out.write(f"stalled {step}\n")
    with open(fifo, encoding="utf-8") as back:
        back.read()


def check_timeout(value: float | None) -> float | None:
    """``value`` if it is a usable timeout (finite, > 0, at most :data:`MAX_TIMEOUT`); None is no timeout.

    Raises:
        UsageError: anything else (zero, negative, NaN, infinity, too large).

    Example:
        >>> check_timeout(30), check_timeout(None)
        (30, None)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
        raise UsageError(
            f"--timeout must be a number of seconds > 0 and at most {MAX_TIMEOUT:.0f} (30 days), or 0 or none for no limit; got {value!r}"
        )
    return value


class ExecutionResult:
    """What one execution produced.

    ``partial`` marks a snapshot taken while the code still runs (a
    checkpoint): the outputs so far, no execution count yet. ``sent`` is
    true once the request went to the kernel: from then on the code may have
    run, and these are the outputs captured so far. ``dropped`` is the first
    line of the notice the server sent when it dropped output (its IOPub
    rate limit: ``"IOPub data rate exceeded."``), else None. ``user_expressions``
    is the reply's evaluation of the request's ``user_expressions``.
    """

    __slots__ = ("status", "execution_count", "outputs", "error", "notes", "partial", "sent", "dropped", "user_expressions")

    def __init__(self, outputs: list[dict[str, Any]] | None = None, *, partial: bool = False) -> None:
        self.status = "ok"
        self.execution_count: int | None = None
        self.outputs: list[dict[str, Any]] = [] if outputs is None else outputs
        self.error: dict[str, Any] | None = None
        self.notes: list[str] = []
        self.partial = partial
        self.sent = False
        self.dropped: str | None = None
        self.user_expressions: dict[str, Any] | None = None


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
        except OSError:
            pass

    def close(self) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass

    def interrupted(self, message: str, *, executed: bool) -> Interrupted:
        """The ``INTERRUPTED`` error for the recorded signal."""
        return Interrupted(f"stopped by {self.signal_name}: {message}", signal=self.signal_name, executed=executed)


class _Collector:
    """Folds iopub messages into nbformat outputs."""

    def __init__(self, on_output: Callable[..., None] | None, result: ExecutionResult | None = None) -> None:
        self.result = ExecutionResult() if result is None else result
        self.by_display: dict[str, list[int]] = {}
        self.clear_pending = False
        self.on_output = on_output

    def _clear(self) -> None:
        self.result.outputs.clear()
        self.by_display.clear()
        self.clear_pending = False

    def _append(self, output: dict[str, Any], display_id: str | None = None) -> None:
        if self.clear_pending:
            self._clear()
        outputs = self.result.outputs
        if output["output_type"] == "stream" and outputs:
            last = outputs[-1]
            if last["output_type"] == "stream" and last["name"] == output["name"]:
                last["text"] += output["text"]
                self._emit("stream", last, len(outputs) - 1, output["text"])
                return
        outputs.append(output)
        if display_id:
            self.by_display.setdefault(display_id, []).append(len(outputs) - 1)
        self._emit("append", output, len(outputs) - 1, output.get("text") if output["output_type"] == "stream" else None)

    def _emit(self, event: OutputEvent, output: dict[str, Any], index: int, chunk: str | None = None) -> None:
        if self.on_output is not None:
            self.on_output(event=event, output=output, index=index, outputs=self.result.outputs, chunk=chunk)

    def _server_dropped(self, notice: str) -> None:
        first_line = notice.split("\n", 1)[0].strip()
        dropped = self.result.dropped
        if dropped is None:
            self.result.dropped = first_line
        elif first_line not in dropped.split("; "):
            self.result.dropped = f"{dropped}; {first_line}"  # the data and the message limit both
        if RATE_LIMIT_NOTE not in self.result.notes:
            self.result.notes.append(RATE_LIMIT_NOTE)

    def handle(self, msg_type: str, content: dict[str, Any]) -> None:
        transient = content.get("transient") or {}
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if msg_type == "stream":
            text = content.get("text", "")
            if content.get("name") == "stderr" and isinstance(text, str) and text.startswith(_RATE_LIMIT_NOTICES):
                self._server_dropped(text)  # the server's notice, not the code's output
                return
            self._append({"output_type": "stream", "name": content.get("name", "stdout"), "text": text})
        elif msg_type in ("display_data", "execute_result"):
            output = {"output_type": msg_type, "data": content.get("data", {}), "metadata": content.get("metadata", {})}
            if msg_type == "execute_result":
                output["execution_count"] = content.get("execution_count")
            self._append(output, display_id)
        elif msg_type == "update_display_data":
            for index in self.by_display.get(display_id or "", []):
                if index < len(self.result.outputs):
                    target = self.result.outputs[index]
                    target["data"] = content.get("data", {})
                    target["metadata"] = content.get("metadata", {})
                    self._emit("update", target, index)
        elif msg_type == "clear_output":
            if content.get("wait"):
                self.clear_pending = True
            else:
                self._clear()
                self._emit("clear", {}, -1)
        elif msg_type == "error":
            error = {
                "output_type": "error",
                "ename": content.get("ename", ""),
                "evalue": content.get("evalue", ""),
                "traceback": content.get("traceback", []),
            }
            self._append(error)
            self.result.error = {k: error[k] for k in ("ename", "evalue", "traceback")}
        elif msg_type == "execute_input":
            self.result.execution_count = content.get("execution_count")


def _message(msg_type: str, content: dict[str, Any], session: str, channel: str) -> tuple[str, str]:
    msg_id = os.urandom(16).hex()
    header = {
        "msg_id": msg_id,
        "msg_type": msg_type,
        "username": "j-cli",
        "session": session,
        "version": "5.3",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
    }
    msg = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": channel, "buffers": []}
    return msg_id, json.dumps(msg)


class KernelConnection:
    """One open websocket to a kernel; run any number of executions over it.

    Opening costs a websocket handshake plus the server wiring up its kernel
    channels; holding the connection pays that once (notebook runs do).

    Example:
        >>> with KernelConnection(server, kernel_id) as kernel:  # doctest: +SKIP
        ...     kernel.execute("x = 1"); kernel.execute("x + 1").outputs
    """

    def __init__(self, server: JupyterServer, kernel_id: str) -> None:
        self.server = server
        self.kernel_id = kernel_id
        self.session = os.urandom(16).hex()
        self.ws = server.channels(kernel_id, self.session)

    def __enter__(self) -> KernelConnection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close without waiting for the server's answer."""
        self.ws.close()

    def drain_idle(self, partial_seconds: float = 1.0) -> bool:
        """Read (and drop) what arrived while nobody ran anything here: other clients' broadcasts.

        For a connection held between runs (the sidecar's). Returns False
        when it is no longer worth using: the kernel died, restarted or was
        shut down, or the connection broke or closed. Never waits for a message that has
        not begun to arrive; one that has gets ``partial_seconds`` to finish.
        """
        import select

        try:
            while self.ws.buffered() or select.select([self.ws.fileno()], [], [], 0)[0]:
                raw = self.ws.recv(partial_seconds)
                msg = json.loads(raw) if isinstance(raw, str) else _binary_message(raw)
                state = ((msg or {}).get("content") or {}).get("execution_state")
                kind = ((msg or {}).get("header") or {}).get("msg_type")
                if (msg or {}).get("channel") == "iopub" and (state in ("dead", "restarting") or kind == "shutdown_reply"):
                    return False
        except (TimeoutError, OSError, ValueError):
            return False
        return not self.ws.closed

    def request(self, msg_type: str, content: dict[str, Any], *, channel: str = "shell", timeout: float) -> dict[str, Any]:
        """Send one request and return its reply's content; every other message is skipped.

        Nothing is interrupted when no reply comes: a request that waits
        behind the user's running code must never stop that code.

        Raises:
            Timeout: no reply within ``timeout`` seconds.
            KernelDied: the kernel died or restarted, or the connection dropped.
        """
        from .wire import WireError  # here, not at the top: a sidecar's client imports this module without the wire

        msg_id, text = _message(msg_type, content, self.session, channel)
        try:
            self.ws.send_text(text)
        except WireError as exc:
            raise KernelDied(f"the kernel connection dropped ({exc})") from None
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                raw = self.ws.recv(remaining)
            except TimeoutError:
                break
            except WireError as exc:
                raise KernelDied(f"the kernel connection dropped ({exc})") from None
            msg = json.loads(raw) if isinstance(raw, str) else _binary_message(raw)
            if msg is None:
                continue
            reply = msg.get("content") or {}
            if msg.get("channel") == "iopub" and reply.get("execution_state") in ("dead", "restarting"):
                raise KernelDied(f"the kernel {reply['execution_state']} while j-cli waited for it")
            if msg.get("channel") == channel and (msg.get("parent_header") or {}).get("msg_id") == msg_id:
                return reply
        raise Timeout(f"the kernel did not answer {msg_type} within {timeout:g} s")

    def execute(
        self,
        code: str,
        *,
        timeout: float | None = None,
        on_output: Callable[..., None] | None = None,
        stop: StopSwitch | None = None,
        result: ExecutionResult | None = None,
        silent: bool = False,
        user_expressions: dict[str, str] | None = None,
        on_send: Callable[[], None] | None = None,
    ) -> ExecutionResult:
        """Run ``code`` and collect what it produced (see :func:`execute`).

        ``silent`` runs it without a trace: no history, no execution count,
        no outputs broadcast. ``user_expressions`` (name to expression) are
        evaluated after the code; the reply's answers are in
        ``result.user_expressions``. ``on_send`` is called once every check
        passed, just before the request goes out (a sidecar tells its client
        that from now on the code may run); if it raises, nothing is sent.
        """
        timeout = check_timeout(timeout)
        collector = _Collector(on_output, result)
        msg_id, text = _message(
            "execute_request",
            {
                "code": code,
                "silent": silent,
                "store_history": not silent,
                "user_expressions": user_expressions or {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
            self.session,
            "shell",
        )
        if stop is not None:
            stop.defer()
            if stop.count:
                raise stop.interrupted("stopped before the code was sent", executed=False)
        if on_send is not None:
            on_send()
        from .wire import WireError

        try:
            self.ws.send_text(text)
        except WireError as exc:
            raise KernelDied(f"the kernel connection dropped before the run ({exc})") from None
        collector.result.sent = True
        deadline = None if timeout is None else time.monotonic() + timeout
        pump = _Pump(self, msg_id, collector, stop)
        try:
            pump.run(deadline)
        except (Timeout, KernelDied, Interrupted):
            raise  # the kernel was interrupted already, or is gone
        except BaseException:
            if not pump.idle:  # a failure of our own while the code may still run: never leave the kernel busy
                _interrupt_quietly(self.server, self.kernel_id)
                pump.settle()
            raise
        return collector.result


def execute(
    server: JupyterServer,
    kernel_id: str,
    code: str,
    *,
    timeout: float | None = None,
    on_output: Callable[..., None] | None = None,
    stop: StopSwitch | None = None,
    result: ExecutionResult | None = None,
) -> ExecutionResult:
    """Run ``code`` in kernel ``kernel_id`` over a fresh connection.

    Args:
        timeout: seconds for the whole execution (:func:`check_timeout`);
            None waits forever.
        on_output: called as ``on_output(event=, output=, index=, outputs=,
            chunk=)`` for every change (``append``, ``stream`` for text added
            to the last stream, ``update``, ``clear``); ``chunk`` is the new
            stream text, else None.
        stop: a :class:`StopSwitch` whose signal interrupts the run.
        result: filled in place (a fresh one when None), so a caller keeps
            what was captured whatever is raised; ``result.sent`` says
            whether the code went to the kernel.

    Returns:
        The result; ``status`` is ``"error"`` when the code raised (that is a
        result, not a failure of j-cli).

    Raises:
        UsageError: a bad ``timeout`` (before anything is sent).
        Timeout: the code ran past ``timeout``; the kernel was interrupted.
        Interrupted: ``stop`` was tripped; the kernel was interrupted.
        KernelDied: the kernel died or restarted during the run.
        ServerUnavailable: the connection to the server failed.
    """
    timeout = check_timeout(timeout)
    with KernelConnection(server, kernel_id) as kernel:
        return kernel.execute(code, timeout=timeout, on_output=on_output, stop=stop, result=result)


def _interrupt_quietly(server: JupyterServer, kernel_id: str) -> str | None:
    """Interrupt the kernel; None when that worked, else why not."""
    try:
        server.interrupt(kernel_id)
    except (JcliError, OSError) as exc:
        return getattr(exc, "message", None) or str(exc)
    return None


class _Pump:
    """Reads the kernel's messages for one request until it is idle and replied.

    When the deadline passes or the stop switch trips, the kernel is
    interrupted and the pump keeps reading (up to :data:`IDLE_AFTER_INTERRUPT`)
    so the outputs printed until then are kept; then it raises.
    """

    __slots__ = ("ws", "msg_id", "collector", "server", "kernel_id", "stop", "seen", "cause", "idle")

    def __init__(self, kernel: KernelConnection, msg_id: str, collector: _Collector, stop: StopSwitch | None) -> None:
        self.ws = kernel.ws
        self.msg_id = msg_id
        self.collector = collector
        self.server = kernel.server
        self.kernel_id = kernel.kernel_id
        self.stop = stop
        self.seen = 0 if stop is None else stop.count
        self.cause: str | None = None  # "timeout" or "signal" once the kernel was interrupted
        self.idle = False  # the kernel is done with this request

    def _outputs(self) -> int:
        return len(self.collector.result.outputs)

    def _stopped(self) -> JcliError:
        """The error for a run cut short (the kernel was interrupted and went idle, or not)."""
        if self.cause == "signal" and self.stop is not None:
            err: JcliError = self.stop.interrupted("the kernel was interrupted", executed=True)
        else:
            err = Timeout("the code ran past its timeout; the kernel was interrupted", executed=True)
        err.details["outputs"] = self._outputs()
        return err

    def _on_signal(self, deadline: float | None) -> float | None:
        """A new signal: interrupt the kernel, or, when it already was, stop waiting for it."""
        assert self.stop is not None
        self.stop.drain()
        self.seen = self.stop.count
        if self.cause is not None:
            err = self.stop.interrupted("stopped waiting for the interrupted kernel", executed=True)
            err.details["outputs"] = self._outputs()
            raise err
        self.cause = "signal"
        why = _interrupt_quietly(self.server, self.kernel_id)
        if why is not None:
            err = self.stop.interrupted(f"the kernel could not be interrupted ({why})", executed=True)
            err.details["outputs"] = self._outputs()
            raise err
        return time.monotonic() + IDLE_AFTER_INTERRUPT

    def _wait(self, remaining: float | None) -> bool:
        """Wait for the websocket or the stop switch; True when a message may be read."""
        if self.stop is None or self.ws.buffered():
            return True
        import select

        sock = self.ws.fileno()
        readable, _, _ = select.select([sock, self.stop.fileno()], [], [], remaining)
        return sock in readable

    def settle(self) -> None:
        """After a failure of our own (the kernel was interrupted): read until it is idle, keeping nothing.

        A request sent while the kernel still ends the interrupted one would
        be aborted unrun, so the next exec waits for nothing. Bounded by
        :data:`IDLE_AFTER_INTERRUPT`; a new signal or a broken connection ends it.
        """
        deadline = time.monotonic() + IDLE_AFTER_INTERRUPT
        try:
            while not self.idle and (remaining := deadline - time.monotonic()) > 0:
                if self.stop is not None and self.stop.count > self.seen:
                    return
                if not self._wait(remaining):
                    continue
                raw = self.ws.recv(remaining)
                msg = json.loads(raw) if isinstance(raw, str) else _binary_message(raw)
                if msg and msg.get("channel") == "iopub" and (msg.get("parent_header") or {}).get("msg_id") == self.msg_id:
                    header = msg.get("header") or {}
                    self.idle = header.get("msg_type") == "status" and (msg.get("content") or {}).get("execution_state") == "idle"
        except (TimeoutError, OSError, ValueError):  # nothing more to wait for on this connection
            return

    def run(self, deadline: float | None) -> None:
        from .wire import WireError

        replied = False
        result = self.collector.result
        while not (self.idle and replied):
            if self.stop is not None and self.stop.count > self.seen:
                deadline = self._on_signal(deadline)
                continue
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                if self.cause is not None:
                    err = self._stopped()
                    err.message = f"{err.message}, and did not go idle within {IDLE_AFTER_INTERRUPT:g} s"
                    raise err
                self.server.interrupt(self.kernel_id)
                self.cause = "timeout"
                deadline = time.monotonic() + IDLE_AFTER_INTERRUPT
                continue
            if not self._wait(remaining):
                continue
            try:
                raw = self.ws.recv(remaining)
            except TimeoutError:
                continue
            except WireError as exc:
                raise KernelDied(f"the kernel connection dropped during the run ({exc})", executed=True) from None
            msg = json.loads(raw) if isinstance(raw, str) else _binary_message(raw)
            if msg is None:
                continue
            header = msg.get("header") or {}
            msg_type = header.get("msg_type") or msg.get("msg_type")
            content = msg.get("content") or {}
            parent = (msg.get("parent_header") or {}).get("msg_id")
            if msg_type == "status" and content.get("execution_state") in ("dead", "restarting"):
                raise KernelDied(f"the kernel {content['execution_state']} during the run", executed=True, outputs=self._outputs())
            if parent != self.msg_id:
                continue
            channel = msg.get("channel")
            if channel == "iopub":
                if msg_type == "status":
                    self.idle = content.get("execution_state") == "idle"
                else:
                    self.collector.handle(msg_type, content)
                    if result.outputs:
                        stall_point("output")
            elif channel == "shell" and msg_type == "execute_reply":
                replied = True
                result.status = content.get("status", "ok")
                if result.status == "aborted":  # the kernel dropped the request unrun: no result to pass off as ok
                    result.status = "error"
                    result.notes.append(ABORTED_NOTE)
                if content.get("execution_count") is not None:
                    result.execution_count = content["execution_count"]
                if isinstance(content.get("user_expressions"), dict):
                    result.user_expressions = content["user_expressions"]
                if result.status == "error" and result.error is None:
                    result.error = {k: content.get(k) for k in ("ename", "evalue", "traceback")}
            elif channel == "stdin" and msg_type == "input_request":
                result.notes.append(STDIN_HINT)
                self.server.interrupt(self.kernel_id)
        if self.cause is not None:
            raise self._stopped()
        if result.error and result.error.get("ename") == "StdinNotImplementedError":
            result.notes.append(STDIN_HINT)


def _binary_message(raw: bytes) -> dict[str, Any] | None:
    """Messages with binary buffers arrive as the server's binary framing; decode the JSON part."""
    try:
        count = int.from_bytes(raw[:4], "little")
        offsets = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "little") for i in range(count)]
        return json.loads(raw[offsets[0] : offsets[1] if count > 1 else len(raw)])
    except (ValueError, IndexError):
        return None
