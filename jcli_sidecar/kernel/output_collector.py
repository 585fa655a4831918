"""Folding a kernel's IOPub messages into nbformat outputs, as they arrive.

- ``stream`` (consecutive chunks of one stream are coalesced);
- ``display_data`` and ``execute_result``;
- ``update_display_data`` (replaces every earlier output with that
  ``display_id``); a new ``display_data`` or ``execute_result`` with a
  display id already shown refreshes the earlier outputs with that id too,
  then is appended: nbclient's rule. Where each id was shown is kept in a
  :class:`DisplayIds`, which a notebook run shares across its cells, so a
  later cell's update reaches an earlier cell's outputs;
- ``clear_output`` (``wait=True`` clears only when the next output comes;
  the cleared outputs are no longer updated by their display ids);
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

__all__ = ["DisplayIds", "OUTPUT_EVENTS", "OutputCollector", "RATE_LIMIT_NOTE"]

#: What ``on_output`` is told: an output was appended, text was added to the
#: last stream output, a display was updated in place, or the outputs were cleared.
OUTPUT_EVENTS = ("append", "stream", "update", "clear")

#: What the Jupyter Server sends (a stderr stream) when it starts dropping a run's output.
_RATE_LIMIT_NOTICES = ("IOPub data rate exceeded.", "IOPub message rate exceeded.")
RATE_LIMIT_NOTE = (
    "the Jupyter Server dropped some of this run's output (its IOPub rate limit); "
    "print less, or raise ZMQChannelsWebsocketConnection.iopub_data_rate_limit / iopub_msg_rate_limit on that server"
)


class DisplayIds:
    """Where each display id was shown, in one run: nbclient's display-id map (``_display_id_map``).

    For each id, the outputs lists (one per cell, named by an ``owner`` key)
    and the indexes in each that show it. :meth:`update` sets the data and
    metadata of every one of them; the owners other than the running one it
    changed are added to ``changed`` (a notebook run writes those cells
    again). An ``owner`` of None is an execution of its own (``exec -c``).
    """

    __slots__ = ("where", "outputs", "changed")

    def __init__(self) -> None:
        self.where: dict[str, dict[Any, list[int]]] = {}
        self.outputs: dict[Any, list[dict[str, Any]]] = {}
        #: The owners, other than the one running, whose outputs an update changed since this was last emptied.
        self.changed: set[Any] = set()

    def shown(self, owner: Any, outputs: list[dict[str, Any]], display_id: str, index: int) -> None:
        """``outputs[index]`` (of ``owner``'s cell) shows ``display_id``."""
        self.outputs[owner] = outputs
        self.where.setdefault(display_id, {}).setdefault(owner, []).append(index)

    def update(self, display_id: str, data: Any, metadata: Any, running: Any) -> list[int]:
        """Set the data and metadata of every output shown with ``display_id``; the indexes changed in ``running``'s own outputs."""
        own: list[int] = []
        for owner, indexes in self.where.get(display_id, {}).items():
            outputs = self.outputs[owner]
            for index in indexes:
                if index < len(outputs):
                    outputs[index]["data"] = data
                    outputs[index]["metadata"] = metadata
                    if owner == running:
                        own.append(index)
                    else:
                        self.changed.add(owner)
        return own

    def forget(self, owner: Any) -> None:
        """``owner``'s outputs were cleared: its earlier outputs are no longer updated (nbclient's ``clear_display_id_mapping``)."""
        for cells in self.where.values():
            if owner in cells:
                cells[owner] = []


class OutputCollector:
    """Folds iopub messages into nbformat outputs, in ``result``, telling ``on_output`` of each change.

    ``displays`` is the run's :class:`DisplayIds` (a new one when not
    given), and ``owner`` this cell's key in it.
    """

    def __init__(
        self,
        on_output: Callable[..., None] | None,
        result: ExecutionResult | None = None,
        displays: DisplayIds | None = None,
        owner: Any = None,
    ) -> None:
        self.result = ExecutionResult() if result is None else result
        self.displays = DisplayIds() if displays is None else displays
        self.owner = owner
        self.clear_pending = False
        self.on_output = on_output

    def _clear(self) -> None:
        self.result.outputs.clear()
        self.displays.forget(self.owner)
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
            self.displays.shown(self.owner, outputs, display_id, len(outputs) - 1)
        self._emit("append", output, len(outputs) - 1, output.get("text") if output["output_type"] == "stream" else None)

    def _update(self, display_id: str, content: dict[str, Any]) -> None:
        """Every output shown with ``display_id`` takes ``content``'s data and metadata; this cell's are reported as updates."""
        outputs = self.result.outputs
        for index in self.displays.update(display_id, content.get("data", {}), content.get("metadata", {}), self.owner):
            self._emit("update", outputs[index], index)

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
            if display_id:  # an id already shown: those outputs show this too (before a pending clear, as nbclient does)
                self._update(display_id, content)
            self._append(output, display_id)
        elif msg_type == "update_display_data":
            if display_id:
                self._update(display_id, content)
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
