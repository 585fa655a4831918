"""Run code in a kernel over the Jupyter Server websocket, speaking the real protocol.

One focused client: :meth:`KernelConnection.execute` sends an
``execute_request`` and folds the kernel's messages into nbformat-style
outputs (:mod:`~jcli_sidecar.kernel.output_collector`) until the kernel is
idle and the reply has arrived. Beyond the outputs it handles:

- ``input_request``: j-cli has no stdin; the request is refused clearly;
- the kernel dying, restarting (an iopub ``shutdown_reply``, a ``status``
  of ``dead``, ``restarting`` or ``starting``: a restart through ``j-cli
  kernel restart`` or the server's REST API), or the connection dropping;
- a timeout: interrupt the kernel, wait for idle, then ``TIMEOUT``;
- a stop request (:class:`~jcli_sidecar.kernel.stop_switch.StopSwitch`,
  tripped by SIGINT or SIGTERM): interrupt the kernel, wait for idle, then
  ``INTERRUPTED``.

``on_output`` (a named hook, called with keyword arguments) lets callers
stream outputs live or checkpoint them; its ``event`` is one of
:data:`~jcli_sidecar.kernel.output_collector.OUTPUT_EVENTS`.

Once the request went out (``ExecutionResult.sent``), the caller's
``result`` holds everything captured so far, whatever is raised: a
``TIMEOUT``, ``KERNEL_DIED`` or ``INTERRUPTED`` carries the outputs the
code printed before it stopped.
"""

from __future__ import annotations

import json
import os
import struct
import time

from ..base import INTERRUPT_FAILED_ALIASES, Interrupted, JcliError, KernelDied, ServerMessageInvalid, Timeout, TooDeep, loads, stall_point
from .cell_timing import message_time
from .exec_result import ExecutionResult
from .exec_timeout import check_timeout
from .output_collector import OutputCollector
from .stop_switch import IDLE_AFTER_INTERRUPT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .jupyter_api import JupyterServer
    from .output_collector import DisplayIds
    from .stop_switch import StopSwitch

__all__ = ["KernelConnection", "decode_message", "execute"]

STDIN_HINT = "j-cli exec has no stdin: input() cannot be answered; pass the data in the code instead"
ABORTED_NOTE = "the kernel aborted this request without running it (it was still discarding requests after an error); run it again"


def _kernel_gone(msg: dict[str, Any], *, ran: bool, served_by: str | None = None) -> str | None:
    """What an iopub message says of the kernel, when it says the one running our code is gone; None otherwise.

    ``dead`` and ``restarting`` always say so. A ``shutdown_reply`` (the
    kernel answering the server's shutdown: a restart starts with it) and a
    ``starting`` status (a new kernel process on the same channels) count only
    once ``ran``: the kernel had begun our request. Before that they are the
    tail of an earlier restart, and the request goes to the new kernel.

    ``served_by`` is the ``header.session`` of the kernel process that began
    our request (each process has its own). A ``starting`` from that very
    process is its own start-up, arriving late: its iopub can lag behind
    its shell reply on a loaded machine. A ``shutdown_reply`` from another
    process is an earlier kernel's. Unknown senders count as gone.

    Example:
        >>> starting = {"channel": "iopub", "header": {"msg_type": "status", "session": "k2"}, "content": {"execution_state": "starting"}}
        >>> _kernel_gone(starting, ran=True), _kernel_gone(starting, ran=False), _kernel_gone(starting, ran=True, served_by="k2")
        ('restarted', None, None)
    """
    if msg.get("channel") != "iopub":
        return None
    header = msg.get("header") or {}
    kind = header.get("msg_type") or msg.get("msg_type")
    state = (msg.get("content") or {}).get("execution_state") if kind == "status" else None
    if state in ("dead", "restarting"):
        return "died" if state == "dead" else "restarting"
    if not ran:
        return None
    sender = header.get("session")
    ours = served_by is not None and sender == served_by
    other = served_by is not None and sender is not None and sender != served_by
    if kind == "shutdown_reply" and not other:
        return "was shut down (restarted?)"
    if state == "starting" and not ours:
        return "restarted"
    return None


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
                if _kernel_gone(decode_message(raw), ran=True) is not None:
                    return False
        except (TimeoutError, OSError, ServerMessageInvalid):  # broke, or spoke garbage: not worth using any more, False (documented)
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
            msg = self._decoded(raw)
            reply = msg["content"]
            if (gone := _kernel_gone(msg, ran=False)) is not None:
                raise KernelDied(f"the kernel {gone} while j-cli waited for it")
            if msg.get("channel") == channel and (msg.get("parent_header") or {}).get("msg_id") == msg_id:
                return reply
        raise Timeout(f"the kernel did not answer {msg_type} within {timeout:g} s")

    def _decoded(self, raw: str | bytes, **details: Any) -> dict[str, Any]:
        """:func:`decode_message`; a bad message drops the connection (nothing after it can be trusted), then raises."""
        try:
            return decode_message(raw)
        except ServerMessageInvalid as exc:
            self.close()
            exc.details.update(details)
            raise

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
        stop_on_error: bool = True,
        displays: DisplayIds | None = None,
        owner: Any = None,
        describe_result: bool = False,
    ) -> ExecutionResult:
        """Run ``code`` and collect what it produced (see :func:`execute`).

        ``silent`` runs it without a trace: no history, no execution count,
        no outputs broadcast. ``user_expressions`` (name to expression) are
        evaluated after the code; the reply's answers are in
        ``result.user_expressions``. ``on_send`` is called once every check
        passed, just before the request goes out (a sidecar tells its client
        that from now on the code may run); if it raises, nothing is sent.
        ``stop_on_error`` False asks the kernel not to discard the requests
        queued behind this one if it raises (nbclient's request for a cell
        allowed to fail). ``result.timing`` gets the kernel's times of the
        run (:mod:`~jcli_sidecar.kernel.cell_timing`). ``displays`` is the
        display ids shown so far in a notebook run, which this execution's
        display updates reach too, and ``owner`` its cell's key in it
        (:class:`~jcli_sidecar.kernel.output_collector.DisplayIds`).
        ``describe_result`` asks the kernel to describe the code's result when
        it is a DataFrame (:mod:`~jcli_sidecar.kernel.frame_view`): ``result.frame``.
        """
        timeout = check_timeout(timeout)
        if describe_result:
            from .frame_view import frame_expressions

            user_expressions = {**(user_expressions or {}), **frame_expressions()}
        collector = OutputCollector(on_output, result, displays, owner)
        msg_id, text = _message(
            "execute_request",
            {
                "code": code,
                "silent": silent,
                "store_history": not silent,
                "user_expressions": user_expressions or {},
                "allow_stdin": False,
                "stop_on_error": stop_on_error,
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
        except ServerMessageInvalid:
            if not pump.idle:  # the connection is dropped, the code may still run: never leave the kernel busy
                _interrupt_quietly(self.server, self.kernel_id)
            raise
        except (Timeout, KernelDied, Interrupted):
            raise  # the kernel was interrupted already, or is gone
        except BaseException:
            if not pump.idle:  # a failure of our own while the code may still run: never leave the kernel busy
                _interrupt_quietly(self.server, self.kernel_id)
                pump.settle()
            raise
        if describe_result:
            from .frame_view import read_frame

            collector.result.frame = read_frame(collector.result.user_expressions)
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

    __slots__ = ("kernel", "ws", "msg_id", "collector", "server", "kernel_id", "stop", "seen", "cause", "idle", "ran", "served_by")

    def __init__(self, kernel: KernelConnection, msg_id: str, collector: OutputCollector, stop: StopSwitch | None) -> None:
        self.kernel = kernel
        self.ws = kernel.ws
        self.msg_id = msg_id
        self.collector = collector
        self.server = kernel.server
        self.kernel_id = kernel.kernel_id
        self.stop = stop
        self.seen = 0 if stop is None else stop.count
        self.cause: str | None = None  # "timeout" or "signal" once the kernel was interrupted
        self.idle = False  # the kernel is done with this request
        self.ran = False  # the kernel began this request (a message answered it)
        self.served_by: str | None = None  # the header.session of the kernel process that began it (see _kernel_gone)

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
            err.code_aliases = INTERRUPT_FAILED_ALIASES
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
                msg = decode_message(raw)
                if msg["channel"] == "iopub" and (msg.get("parent_header") or {}).get("msg_id") == self.msg_id:
                    header = msg.get("header") or {}
                    self.idle = header.get("msg_type") == "status" and (msg.get("content") or {}).get("execution_state") == "idle"
        except (TimeoutError, OSError, ServerMessageInvalid):  # nothing more to wait for on this connection
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
            msg = self.kernel._decoded(raw, executed=True, outputs=self._outputs())
            header = msg["header"]
            msg_type = header.get("msg_type") or msg.get("msg_type")
            content = msg.get("content") or {}
            parent = (msg.get("parent_header") or {}).get("msg_id")
            if (gone := _kernel_gone(msg, ran=self.ran, served_by=self.served_by)) is not None:
                raise KernelDied(f"the kernel {gone} during the run", executed=True, outputs=self._outputs())
            if parent != self.msg_id:
                continue
            if not self.ran:
                self.ran = True
                self.served_by = header.get("session")
            channel = msg.get("channel")
            if channel == "iopub":
                if msg_type == "status":
                    state = content.get("execution_state")
                    self.idle = state == "idle"
                    if state in ("busy", "idle"):
                        result.timing[f"iopub.status.{state}"] = message_time(msg)
                else:
                    if msg_type == "execute_input":
                        result.timing["iopub.execute_input"] = message_time(msg)
                    self.collector.handle(msg_type, content)
                    if result.outputs:
                        stall_point("output")
            elif channel == "shell" and msg_type == "execute_reply":
                replied = True
                result.timing["shell.execute_reply"] = message_time(msg)
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


#: The fields every kernel message carries, each a JSON object but ``channel``, a string.
_MESSAGE_FIELDS = (("header", dict), ("parent_header", dict), ("content", dict), ("channel", str))
_COUNT = struct.Struct("!I")


def decode_message(raw: str | bytes) -> dict[str, Any]:
    """One websocket message from the server as a kernel message: a text frame's JSON, or a binary frame's JSON part.

    A binary frame is the server's framing (``serialize_binary_message``):
    a count of parts, then one offset per part, big-endian 32-bit, from the
    frame's start; the first part is the message's JSON, the others its
    buffers (dropped: nothing j-cli reads is in them). Everything is checked
    against the frame before use, so a frame costs time and memory in
    proportion to its own length, whatever it claims.

    Raises:
        ServerMessageInvalid: the frame's offsets do not fit it, or its JSON is not an object
            with a kernel message's fields, or is nested too deeply (never a ``RecursionError``).

    Example:
        >>> decode_message('{"header": {}, "parent_header": {}, "content": {}, "channel": "iopub"}')["channel"]
        'iopub'
        >>> decode_message(b"\\xff\\xff\\xff\\xff" + bytes(8))
        Traceback (most recent call last):
        ...
        jcli_sidecar.base.errors.ServerMessageInvalid: the server sent a binary kernel message of 12 bytes that claims 4294967295 parts
    """
    if isinstance(raw, str):
        body: str | bytes = raw
        where = "text"
    else:
        body = _json_part(raw)
        where = "binary"
    try:
        msg = loads(body)
    except TooDeep as exc:
        raise ServerMessageInvalid(f"the server sent a {where} kernel message {exc}") from None
    except ValueError:
        raise ServerMessageInvalid(f"the server sent a {where} kernel message that is not JSON") from None
    if not isinstance(msg, dict):
        raise ServerMessageInvalid(f"the server sent a {where} kernel message that is a JSON {_kind(msg)}, not an object")
    for field, kind in _MESSAGE_FIELDS:
        if not isinstance(msg.get(field), kind):
            raise ServerMessageInvalid(f"the server sent a {where} kernel message whose {field} is not {_kind(kind())}")
    return msg


def _json_part(raw: bytes) -> bytes:
    """The JSON part of a binary frame, every offset checked against the frame's length first."""
    size = len(raw)
    if size < 8:
        raise ServerMessageInvalid(f"the server sent a binary kernel message of {size} bytes, too short for its framing")
    (count,) = _COUNT.unpack_from(raw)
    head = 4 * (count + 1)
    if count == 0 or head > size:
        raise ServerMessageInvalid(f"the server sent a binary kernel message of {size} bytes that claims {count} parts")
    offsets = struct.unpack_from(f"!{count}I", raw, 4)  # count <= size / 4: bounded by the frame
    if offsets[0] != head or any(b < a for a, b in zip(offsets, offsets[1:], strict=False)) or offsets[-1] > size:
        raise ServerMessageInvalid(f"the server sent a binary kernel message of {size} bytes whose part offsets do not fit it")
    return raw[head : offsets[1] if count > 1 else size]


def _kind(value: Any) -> str:
    kinds: dict[type, str] = {dict: "object", list: "array", str: "string"}
    return kinds.get(type(value), "number" if isinstance(value, (int, float)) else "value")
