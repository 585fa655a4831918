"""A notebook run through its collaboration room: the room as a run's live document (:class:`~jcli_sidecar.kernel.live_notebook.LiveNotebook`).

:func:`open_live_run` finds and joins the room of the notebook a run writes
into (a ``.py``'s paired notebook), as j-cli with the session's name; no
room is a reason, never an error. :class:`LiveRoom` gives the run what it
writes through: the shared document, three-way edits, the running mark,
each output change as it comes (only what changed is sent: a stream's new
text appended, a display update replacing the one output it changed) and
the end (every write applied, then the server's save, as JupyterLab's save
asks for it, so the file holds the run when the command returns).
"""

from __future__ import annotations

import copy
import os

from ..base import RoomLost, setting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    from ..kernel import JupyterServer
    from .connection import Room

    T = TypeVar("T")

__all__ = ["LiveRoom", "open_live_run"]


def open_live_run(
    server: JupyterServer, file_path: str, *, session: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[LiveRoom | None, str]:
    """``(the room to run through, why)`` for a run of ``file_path`` (an ``.ipynb``, or a ``.py`` whose paired notebook
    exists), or ``(None, why not)``: no collaboration, a notebook the server does not serve, ``JCLI_LIVE=off``, …"""
    from ..pair import paired_notebook_path
    from .join import join_notebook_room

    path = os.path.realpath(os.path.abspath(file_path))
    nb_path = path if path.endswith(".ipynb") else paired_notebook_path(path)
    if not os.path.isfile(nb_path):
        return None, f"{os.path.basename(nb_path)} does not exist yet: j-cli creates it as a file"
    joined = join_notebook_room(server, nb_path, session=session, env=env)
    if joined.room is None:
        return None, joined.reason
    return LiveRoom(joined.room, joined.reason, nb_path, env=env), joined.reason


class LiveRoom:
    """A joined room as a run's live document; :meth:`close` leaves the room (the run's caller does, after the run)."""

    __slots__ = ("room", "reason", "nb_path", "_shown", "_save_seconds", "_places")

    def __init__(self, room: Room, reason: str, nb_path: str, *, env: Mapping[str, str] | None = None) -> None:
        self.room = room
        self.reason = reason
        self.nb_path = nb_path  # the notebook's real path here
        self._shown: dict[str, list[dict[str, Any]]] = {}  # each running cell's outputs as last sent, by cell id
        self._save_seconds = float(setting("JCLI_ROOM_SECONDS", env))
        self._places: dict[str, int] = {}  # where each cell was last found (find_cell's hint)

    def document(self) -> dict[str, Any]:
        doc = self.room.document()
        self._places = {cell["id"]: index for index, cell in enumerate(doc["cells"]) if isinstance(cell.get("id"), str)}
        return doc

    def edit(self, change: Callable[[dict[str, Any]], T]) -> T:
        return self.room.edit(change)

    def cell_started(self, cell_id: str) -> None:
        from .document import find_cell

        def start(notebook: Any) -> None:
            ycell = find_cell(notebook, cell_id, self._places)
            outputs = ycell.get("outputs")
            if outputs is not None and len(outputs):
                outputs.clear()
            ycell["execution_count"] = None
            ycell["execution_state"] = "running"

        self.room.write(start)
        self._shown[cell_id] = []

    def outputs(self, cell_id: str, outputs: list[dict[str, Any]]) -> None:
        from .document import find_cell, set_outputs

        shown = self._shown.get(cell_id, [])
        now = [_copy(output) for output in outputs]
        if now == shown:
            return

        def change(notebook: Any) -> None:
            set_outputs(find_cell(notebook, cell_id, self._places), shown, now)

        self.room.write(change)
        self._shown[cell_id] = now

    def checkpoint(self) -> None:
        """The server asked to save the document now (a long cell's outputs so far reach the file), not waited for."""
        self.room.request_save()

    def finish_cell(self, cell_id: str, change: Callable[[dict[str, Any]], T]) -> T:
        """``change(cell)`` on a copy of cell ``cell_id`` and the running mark cleared, in one transaction (one update sent)."""
        from .document import apply_cell, cell_dict, find_cell

        answer: list[T] = []

        def finish(notebook: Any) -> None:
            ycell = find_cell(notebook, cell_id, self._places)
            before = cell_dict(ycell)
            after = {**before, "metadata": copy.deepcopy(before.get("metadata") or {})}  # change replaces outputs, edits metadata
            answer.append(change(after))
            apply_cell(ycell, before, after)
            ycell["execution_state"] = "idle"

        self.room.write(finish)
        self._shown.pop(cell_id, None)
        return answer[0]

    def end(self) -> dict[str, Any]:
        """Every write applied in the room and the document saved by the server: ``{"saved": ...}`` (the server's answer)."""
        saved = self.room.save(self._save_seconds)
        if saved not in ("success", "skipped"):
            raise RoomLost(f"the server did not save {self.room.path} ({saved})", path=self.room.path, reason=f"its save was {saved}")
        return {"saved": saved == "success"}

    def close(self) -> None:
        self.room.close()


def _copy(output: dict[str, Any]) -> dict[str, Any]:
    """What is kept of an output as sent: its own dict and its data's (the collector changes both in place)."""
    copied = dict(output)
    for key in ("data", "metadata"):
        if isinstance(copied.get(key), dict):
            copied[key] = dict(copied[key])
    return copied
