"""The collaboration rooms a sidecar holds while its jobs run through them, so reads see what the person sees.

A background job whose notebook is open in a room writes each output into
the shared document (:mod:`jcli_sidecar.room.live_run`); the server saves
the document a moment later. While the job holds its room, a read of that
notebook through this sidecar (``notebook output``, ``summary``, the MCP
and plugin reads) is answered from the shared document itself, so an
output written a moment ago is readable before the server's next save.
The read's ``source`` says so (``live: true``).
"""

from __future__ import annotations

import os
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..ipynb import NotebookFile

__all__ = ["LiveRooms"]


class LiveRooms:
    """The rooms held now, by the real path of their notebook; one per notebook (a second holder shares the first's)."""

    __slots__ = ("_lock", "_held")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, list[Any]] = {}  # real path -> the rooms holding it, the first answering reads

    def hold(self, nb_path: str, room: Any) -> None:
        """``room`` (a :class:`~jcli_sidecar.room.live_run.LiveRoom`) is the notebook ``nb_path``'s while a job runs through it."""
        with self._lock:
            self._held.setdefault(os.path.realpath(nb_path), []).append(room)

    def release(self, nb_path: str, room: Any) -> None:
        with self._lock:
            rooms = self._held.get(os.path.realpath(nb_path), [])
            if room in rooms:
                rooms.remove(room)
            if not rooms:
                self._held.pop(os.path.realpath(nb_path), None)

    def notebook(self, path: str) -> NotebookFile | None:
        """The shared document of the notebook at real path ``path`` as a readable notebook, when a held room has it and holds."""
        from ..ipynb import NotebookFile

        shared = self.document(path)
        return None if shared is None else NotebookFile.of_document(path, shared)

    def document(self, path: str) -> dict[str, Any] | None:
        """The shared document (an nbformat dict, as the server would save it) of the notebook at real path ``path``, or None."""
        with self._lock:
            rooms = [room for room in self._held.get(path, []) if room.room.live]
        if not rooms:
            return None
        from ..base import RoomLost

        try:
            return rooms[0].room.read()
        except RoomLost:  # lost just now: the file it is
            return None

    def holds_for(self, file_path: str) -> bool:
        """Whether a room is held for the notebook ``file_path`` names (an ``.ipynb``, or a ``.py``'s paired notebook)."""
        from ..pair import paired_notebook_path

        real = os.path.realpath(file_path)
        with self._lock:
            return bool(self._held) and (real in self._held or paired_notebook_path(real) in self._held)

    def count(self) -> int:
        with self._lock:
            return sum(len(rooms) for rooms in self._held.values())
