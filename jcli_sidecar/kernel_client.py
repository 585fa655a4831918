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
- a timeout: interrupt the kernel, wait for idle, then ``TIMEOUT``.

``on_output`` (a named hook, called with keyword arguments) lets callers
stream outputs live or checkpoint them; its ``event`` is one of
:data:`OUTPUT_EVENTS`.
"""

from __future__ import annotations

import json
import os
import time

from .errors import KernelDied, Timeout
from .wire import WireError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    from .jupyter_api import JupyterServer

    OutputEvent = Literal["append", "stream", "update", "clear"]

__all__ = ["ExecutionResult", "IDLE_AFTER_INTERRUPT", "KernelConnection", "OUTPUT_EVENTS", "execute"]

#: What ``on_output`` is told: an output was appended, text was added to the
#: last stream output, a display was updated in place, or the outputs were cleared.
OUTPUT_EVENTS = ("append", "stream", "update", "clear")

#: After a timeout's interrupt, how long to wait for the kernel to go idle.
IDLE_AFTER_INTERRUPT = 15.0
STDIN_HINT = "j-cli exec has no stdin: input() cannot be answered; pass the data in the code instead"


class ExecutionResult:
    """What one execution produced.

    ``partial`` marks a snapshot taken while the code still runs (a
    checkpoint): the outputs so far, no execution count yet.
    """

    __slots__ = ("status", "execution_count", "outputs", "error", "notes", "partial")

    def __init__(self, outputs: list[dict[str, Any]] | None = None, *, partial: bool = False) -> None:
        self.status = "ok"
        self.execution_count: int | None = None
        self.outputs: list[dict[str, Any]] = [] if outputs is None else outputs
        self.error: dict[str, Any] | None = None
        self.notes: list[str] = []
        self.partial = partial


class _Collector:
    """Folds iopub messages into nbformat outputs."""

    def __init__(self, on_output: Callable[..., None] | None) -> None:
        self.result = ExecutionResult()
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

    def handle(self, msg_type: str, content: dict[str, Any]) -> None:
        transient = content.get("transient") or {}
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if msg_type == "stream":
            self._append({"output_type": "stream", "name": content.get("name", "stdout"), "text": content.get("text", "")})
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

    def execute(self, code: str, *, timeout: float | None = None, on_output: Callable[..., None] | None = None) -> ExecutionResult:
        """Run ``code`` and collect what it produced (see :func:`execute`)."""
        collector = _Collector(on_output)
        msg_id, text = _message(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
            self.session,
            "shell",
        )
        try:
            self.ws.send_text(text)
        except WireError as exc:
            raise KernelDied(f"the kernel connection dropped before the run ({exc})") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        _pump(self.ws, msg_id, collector, deadline, self.server, self.kernel_id, self.session)
        return collector.result


def execute(
    server: JupyterServer,
    kernel_id: str,
    code: str,
    *,
    timeout: float | None = None,
    on_output: Callable[..., None] | None = None,
) -> ExecutionResult:
    """Run ``code`` in kernel ``kernel_id`` over a fresh connection.

    Args:
        timeout: seconds for the whole execution; None waits forever.
        on_output: called as ``on_output(event=, output=, index=, outputs=,
            chunk=)`` for every change (``append``, ``stream`` for text added
            to the last stream, ``update``, ``clear``); ``chunk`` is the new
            stream text, else None.

    Returns:
        The result; ``status`` is ``"error"`` when the code raised (that is a
        result, not a failure of j-cli).

    Raises:
        Timeout: the code ran past ``timeout``; the kernel was interrupted.
        KernelDied: the kernel died or restarted during the run.
        ServerUnavailable: the connection to the server failed.
    """
    with KernelConnection(server, kernel_id) as kernel:
        return kernel.execute(code, timeout=timeout, on_output=on_output)


def _pump(ws, msg_id, collector: _Collector, deadline, server, kernel_id, session) -> None:
    idle = replied = False
    interrupted = False
    while not (idle and replied):
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            if interrupted:
                raise Timeout("the kernel did not go idle after the interrupt", outputs=len(collector.result.outputs))
            server.interrupt(kernel_id)
            interrupted = True
            deadline = time.monotonic() + IDLE_AFTER_INTERRUPT
            continue
        try:
            raw = ws.recv(remaining)
        except TimeoutError:
            continue
        except WireError as exc:
            raise KernelDied(f"the kernel connection dropped during the run ({exc})") from None
        msg = json.loads(raw) if isinstance(raw, str) else _binary_message(raw)
        if msg is None:
            continue
        header = msg.get("header") or {}
        msg_type = header.get("msg_type") or msg.get("msg_type")
        content = msg.get("content") or {}
        parent = (msg.get("parent_header") or {}).get("msg_id")
        if msg_type == "status" and content.get("execution_state") in ("dead", "restarting"):
            raise KernelDied(f"the kernel {content['execution_state']} during the run")
        if parent != msg_id:
            continue
        channel = msg.get("channel")
        if channel == "iopub":
            if msg_type == "status":
                idle = content.get("execution_state") == "idle"
            else:
                collector.handle(msg_type, content)
        elif channel == "shell" and msg_type == "execute_reply":
            replied = True
            result = collector.result
            result.status = content.get("status", "ok")
            if content.get("execution_count") is not None:
                result.execution_count = content["execution_count"]
            if result.status == "error" and result.error is None:
                result.error = {k: content.get(k) for k in ("ename", "evalue", "traceback")}
        elif channel == "stdin" and msg_type == "input_request":
            collector.result.notes.append(STDIN_HINT)
            server.interrupt(kernel_id)
    if interrupted:
        raise Timeout(
            "the code ran past its timeout; the kernel was interrupted",
            outputs=len(collector.result.outputs),
        )
    if collector.result.error and collector.result.error.get("ename") == "StdinNotImplementedError":
        collector.result.notes.append(STDIN_HINT)


def _binary_message(raw: bytes) -> dict[str, Any] | None:
    """Messages with binary buffers arrive as the server's binary framing; decode the JSON part."""
    try:
        count = int.from_bytes(raw[:4], "little")
        offsets = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "little") for i in range(count)]
        return json.loads(raw[offsets[0] : offsets[1] if count > 1 else len(raw)])
    except (ValueError, IndexError):
        return None
