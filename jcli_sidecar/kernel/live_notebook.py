"""The seam between a notebook run and a live document: what a run writes through when the notebook is open in a room.

A run (:class:`~jcli_sidecar.kernel.notebook_run.NotebookRun`) knows
nothing of collaboration rooms (they are a concern above it,
:mod:`jcli_sidecar.room`). When its caller joined the notebook's room, it
hands the run an object of this shape, and the run reads the notebook, makes
its edits before the first cell (a pair's sync, ids, parameters) and
writes each output through it instead of the file. Every method may raise
:class:`~jcli_sidecar.base.RoomLost`: the run then goes on by the file and
says why.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

__all__ = ["LiveNotebook"]

T = TypeVar("T")


class LiveNotebook(Protocol):
    """A notebook open in a room, as a run uses it (see :class:`~jcli_sidecar.room.live_run.LiveRoom`)."""

    #: Why the run writes through it: "joined the collaboration room of … as j-cli (…)".
    reason: str

    def document(self) -> dict[str, Any]:
        """The shared notebook now, an nbformat dict, every cell with its id."""
        ...

    def edit(self, change: Any) -> Any:
        """``change(notebook dict)`` made in the shared notebook, only what it changed; returns what ``change`` returns."""
        ...

    def cell_started(self, cell_id: str) -> None:
        """The cell starts: its outputs cleared, no execution count, JupyterLab's running mark set."""
        ...

    def outputs(self, cell_id: str, outputs: list[dict[str, Any]]) -> None:
        """The running cell's outputs are now ``outputs`` (only what changed is sent)."""
        ...

    def checkpoint(self) -> None:
        """The document saved soon, as it stands (a long cell's checkpoint: its outputs so far reach the file)."""
        ...

    def finish_cell(self, cell_id: str, change: Any) -> Any:
        """``change(cell dict)`` made in cell ``cell_id`` (its final outputs, count, metadata), the running mark cleared."""
        ...

    def end(self) -> dict[str, Any]:
        """Every write applied and the document saved by the server; the summary's fields (``saved``)."""
        ...
