"""The client side of ``kernel.exec``: inline code run by the workspace sidecar, outputs streamed back.

The sidecar holds the kernel connection (:mod:`jcli_sidecar.sidecar.held_kernels`);
this process mirrors the run's outputs from its events, so the caller gets
the same :class:`~jcli_sidecar.kernel.exec_result.ExecutionResult` (and the same
live ``on_output`` calls) as from an in-process run, and keeps doing what it
does with it (storing runs, the result document, exit codes).

Never twice: the sidecar says ``sending`` just before the code goes to the
kernel. Until then any failure of the sidecar path is
:class:`~jcli_sidecar.base.errors.SidecarUnavailable` (run it in-process); from
then on a failure is reported with ``executed: true``, never retried.

Signals: the caller's :class:`~jcli_sidecar.kernel.stop_switch.StopSwitch`
records SIGINT and SIGTERM from the moment the request may leave; each one
is passed on (``kernel.stop``) to the run's own switch in the sidecar, which
then does exactly what an in-process run does (interrupt, collect until
idle, ``INTERRUPTED``; a second signal stops that wait).
"""

from __future__ import annotations

import os
import select
import socket
import time

from ..base import JcliError, ProtocolError, SidecarError, SidecarUnavailable, os_error, pack_frame, read_frame, stall_point
from ..kernel import IDLE_AFTER_INTERRUPT
from .client import error_of, greeted, transport_failed
from .op_table import KERNEL_EXEC, KERNEL_STOP

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..base import SidecarPaths
    from ..kernel import ExecutionResult, StopSwitch

__all__ = ["MAX_RUN_FRAME", "STOP_GRACE", "exec_through"]

#: After passing a signal on, how long to wait for the sidecar's answer beyond its own wait for idle.
STOP_GRACE = 5.0
#: The largest frame of a run: one output, as big as the largest kernel message the wire reads (256 MiB), and then some.
MAX_RUN_FRAME = 512 * 1024 * 1024
_RUN = 1  # the request id of the run on its connection


def exec_through(
    paths: SidecarPaths,
    request: dict[str, Any],
    *,
    result: ExecutionResult,
    on_output: Callable[..., None] | None,
    stop: StopSwitch,
) -> tuple[dict[str, Any], JcliError | None]:
    """Run ``request`` (``{server, session, code, timeout, display_mode}``) through the sidecar.

    Returns:
        ``(session, failure)`` once the code was sent: the session it ran in
        (a summary), and the coded error that cut the run short, or None.
        ``result`` holds the outputs and status either way.

    Raises:
        SidecarUnavailable: nothing was sent to the kernel: run it in-process.
        JcliError: the request itself failed before the code was sent
            (nothing ran), e.g. ``SESSION_NOT_FOUND``.
    """
    sock = greeted(paths)
    try:
        stop.defer()  # from here on the request may reach the kernel: a signal is passed on, not raised
        run_id = os.urandom(8).hex()
        try:
            sock.settimeout(None)
            sock.sendall(pack_frame({"id": _RUN, "op": KERNEL_EXEC.name, "args": {**request, "run_id": run_id}}))
        except OSError as exc:
            raise os_error(exc, "sidecar-connect") from None
        return _Follow(sock, run_id, result, on_output, stop).run()
    finally:
        sock.close()


class _Follow:
    """Reads one run's frames: events into ``result``, signals out to the sidecar, until its answer."""

    def __init__(self, sock: socket.socket, run_id: str, result: ExecutionResult, on_output, stop: StopSwitch) -> None:
        self.sock = sock
        self.run_id = run_id
        self.result = result
        self.on_output = on_output
        self.stop = stop
        self.seen = stop.count
        self.session: dict[str, Any] | None = None
        self.next_id = _RUN + 1

    def run(self) -> tuple[dict[str, Any], JcliError | None]:
        give_up_at: float | None = None
        while True:
            if self.stop.count > self.seen:
                give_up_at = self._pass_signals()
            wait = None if give_up_at is None else give_up_at - time.monotonic()
            if wait is not None and wait <= 0:
                return self._gave_up()
            readable, _, _ = select.select([self.sock.fileno(), self.stop.fileno()], [], [], wait)
            if self.sock.fileno() not in readable:
                continue
            try:
                frame = read_frame(self.sock, MAX_RUN_FRAME)
                answer = self._take(frame)
            except (SidecarUnavailable, ProtocolError) as exc:
                return self._lost(exc)
            if answer is not None:
                return answer

    def _pass_signals(self) -> float:
        """Pass every new signal on; the sidecar's answer is awaited (bounded) from now on."""
        self.stop.drain()
        new, self.seen = self.stop.count - self.seen, self.stop.count
        for _ in range(new):
            frame = pack_frame({"id": self.next_id, "op": KERNEL_STOP.name, "args": {"run_id": self.run_id, "signal": self.stop.signum}})
            self.next_id += 1
            try:
                self.sock.sendall(frame)
            except OSError:
                break  # the answer (or the lost connection) is read next
        return time.monotonic() + IDLE_AFTER_INTERRUPT + STOP_GRACE

    def _take(self, frame: dict[str, Any]) -> tuple[dict[str, Any], JcliError | None] | None:
        if frame.get("id") != _RUN:
            return None  # the answer to a kernel.stop
        event = frame.get("event")
        if event == "sending":
            session = frame.get("session")
            if not isinstance(session, dict):
                raise ProtocolError("kernel.exec: sending without its session")
            self.session = session
            self.result.sent = True
            return None
        if event == "output":
            _apply(self.result.outputs, frame, self.on_output)
            if self.result.outputs:
                stall_point("output")
            return None
        if event is not None:
            return None  # an event of a newer sidecar: nothing to do with it
        if frame.get("ok") is True:
            return self._finished(frame.get("result"))
        err = error_of(frame.get("error"), executed=self.session is not None)
        if self.session is None:
            raise transport_failed(err) or err
        return self.session, err

    def _finished(self, answer: Any) -> tuple[dict[str, Any], JcliError | None]:
        if not isinstance(answer, dict) or not isinstance(answer.get("session"), dict):
            raise ProtocolError("kernel.exec: a malformed answer")
        result = self.result
        result.sent = True
        result.status = answer.get("status") or "ok"
        result.execution_count = answer.get("execution_count")
        result.error = answer.get("error")
        result.notes[:] = list(answer.get("notes") or [])
        result.dropped = answer.get("dropped")
        result.frame = answer.get("frame") if isinstance(answer.get("frame"), dict) else None
        failure = answer.get("failure")
        return answer["session"], error_of(failure, executed=True) if isinstance(failure, dict) else None

    def _lost(self, exc: JcliError) -> tuple[dict[str, Any], JcliError | None]:
        if self.session is None:
            raise SidecarUnavailable(f"sidecar call failed ({exc.message})")
        err = SidecarError(
            f"the sidecar stopped answering after the code was sent ({exc.message}); "
            "it was not run again, and what it printed until then is kept",
            executed=True,
            outputs=len(self.result.outputs),
        )
        return self.session, err

    def _gave_up(self) -> tuple[dict[str, Any], JcliError | None]:
        err = self.stop.interrupted("the sidecar did not finish the interrupted run in time", executed=self.session is not None)
        err.details["outputs"] = len(self.result.outputs)
        if self.session is None:
            raise err
        return self.session, err


def _apply(outputs: list[dict[str, Any]], frame: dict[str, Any], on_output: Callable[..., None] | None) -> None:
    """Mirror one output change (as :class:`~jcli_sidecar.kernel.exec_result.ExecutionResult` holds it in the sidecar)."""
    kind, index = frame.get("kind"), frame.get("index")
    if kind == "clear":
        outputs.clear()
        if on_output is not None:
            on_output(event="clear", output={}, index=-1, outputs=outputs, chunk=None)
        return
    if not isinstance(index, int) or not 0 <= index <= len(outputs) or (kind != "append" and index == len(outputs)):
        raise ProtocolError(f"kernel.exec: an output event out of place ({kind} at {index!r})")
    if kind == "append":
        output = frame.get("output")
        if not isinstance(output, dict):
            raise ProtocolError("kernel.exec: an output event without its output")
        del outputs[index:]  # a clear_output(wait=True) that waited for this output
        outputs.append(output)
        chunk = output.get("text") if output.get("output_type") == "stream" else None
        if on_output is not None:
            on_output(event="append", output=output, index=index, outputs=outputs, chunk=chunk)
    elif kind == "stream":
        chunk = frame.get("chunk")
        target = outputs[index]
        if not isinstance(chunk, str) or not isinstance(target.get("text"), str):
            raise ProtocolError("kernel.exec: a stream event without text")
        target["text"] += chunk
        if on_output is not None:
            on_output(event="stream", output=target, index=index, outputs=outputs, chunk=chunk)
    elif kind == "update":
        output = frame.get("output")
        if not isinstance(output, dict):
            raise ProtocolError("kernel.exec: an update event without its output")
        target = outputs[index]
        target["data"] = output.get("data", {})
        target["metadata"] = output.get("metadata", {})
        if on_output is not None:
            on_output(event="update", output=target, index=index, outputs=outputs, chunk=None)
