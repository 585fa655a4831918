"""Folding a kernel's IOPub messages into nbformat outputs, as they arrive.

- ``stream`` (consecutive chunks of one stream are coalesced);
- ``display_data`` and ``execute_result``;
- ``update_display_data`` (replaces every earlier output with that
  ``display_id``);
- ``clear_output`` (``wait=True`` clears only when the next output comes);
- ``error``;
- the server's IOPub rate-limit notice: not an output, but a note, and the
  result says output was dropped.

Each change is reported to ``on_output`` (a named hook, called with keyword
arguments) as one of :data:`OUTPUT_EVENTS`.
"""

from __future__ import annotations

from .exec_result import ExecutionResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    OutputEvent = Literal["append", "stream", "update", "clear"]

__all__ = ["OUTPUT_EVENTS", "OutputCollector", "RATE_LIMIT_NOTE"]

#: What ``on_output`` is told: an output was appended, text was added to the
#: last stream output, a display was updated in place, or the outputs were cleared.
OUTPUT_EVENTS = ("append", "stream", "update", "clear")

#: What the Jupyter Server sends (a stderr stream) when it starts dropping a run's output.
_RATE_LIMIT_NOTICES = ("IOPub data rate exceeded.", "IOPub message rate exceeded.")
RATE_LIMIT_NOTE = (
    "the Jupyter Server dropped some of this run's output (its IOPub rate limit); "
    "print less, or raise ZMQChannelsWebsocketConnection.iopub_data_rate_limit / iopub_msg_rate_limit on that server"
)


class OutputCollector:
    """Folds iopub messages into nbformat outputs, in ``result``, telling ``on_output`` of each change."""

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
