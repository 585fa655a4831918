"""The shared notebook as JupyterLab's collaboration keeps it: cells found by id, outputs written as its front end writes them.

A :class:`~jupyter_ydoc.YNotebook` holds the notebook as Y types: an array
of cell maps, each with its ``source`` (a Y text), ``outputs`` (a Y array of
maps, a stream's ``text`` a Y text), ``execution_count`` and
``execution_state`` (``running`` while a cell runs: JupyterLab's running
mark). The functions here change those in place, so the person's edits to
any other part of the document merge with j-cli's (the CRDT does it); they
never replace a cell, which would cost the person their cursor and undo
history in it. They run under the room's lock, inside one transaction each.
"""

from __future__ import annotations

from ..base import CellNotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jupyter_ydoc import YNotebook
    from pycrdt import Map

__all__ = ["append_output", "cell_of", "clear_outputs", "find_cell", "set_execution_count", "set_running"]


def find_cell(notebook: YNotebook, cell_id: str) -> Map:
    """The cell map whose id is ``cell_id`` (the first, as the server's own reading keeps the first of a repeated id).

    Raises:
        CellNotFound: no cell has that id.
    """
    for ycell in notebook.ycells:
        if ycell.get("id") == cell_id:
            return ycell
    raise CellNotFound(f"no cell of the shared notebook has the id {cell_id!r}", cell_id=cell_id)


def cell_of(notebook: YNotebook, cell_id: str) -> dict[str, Any]:
    """The cell ``cell_id`` as an nbformat dict (as the server would save it)."""
    ycell = find_cell(notebook, cell_id)
    return notebook._cell_to_py(ycell)


def _outputs(ycell: Map) -> Any:
    from pycrdt import Array

    outputs = ycell.get("outputs")
    if not isinstance(outputs, Array):
        if ycell.get("cell_type") != "code":
            raise CellNotFound(f"cell {ycell.get('id')!r} is not a code cell: it has no outputs", cell_id=ycell.get("id"))
        outputs = ycell["outputs"] = Array()
    return outputs


def append_output(notebook: YNotebook, cell_id: str, output: dict[str, Any]) -> None:
    """Append ``output`` (an nbformat output) to cell ``cell_id``.

    A stream output whose stream is the last output's goes on that output's
    text, as JupyterLab's output area joins them; any other is a new output
    map (a stream's text a Y text, as jupyter-ydoc builds it).
    """
    from pycrdt import Map, Text

    outputs = _outputs(find_cell(notebook, cell_id))
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        if len(outputs):
            last = outputs[len(outputs) - 1]
            if isinstance(last, Map) and last.get("output_type") == "stream" and last.get("name") == output.get("name"):
                last_text = last.get("text")
                if isinstance(last_text, Text):
                    last_text += text
                    return
        outputs.append(Map({**output, "text": Text(text)}))
        return
    outputs.append(Map(dict(output)))


def clear_outputs(notebook: YNotebook, cell_id: str) -> None:
    """Remove every output of cell ``cell_id``."""
    outputs = _outputs(find_cell(notebook, cell_id))
    outputs.clear()


def set_execution_count(notebook: YNotebook, cell_id: str, count: int | None) -> None:
    """Set cell ``cell_id``'s execution count (None: not run)."""
    find_cell(notebook, cell_id)["execution_count"] = count


def set_running(notebook: YNotebook, cell_id: str, running: bool) -> None:
    """Set or clear JupyterLab's running mark on cell ``cell_id`` (its ``execution_state``)."""
    find_cell(notebook, cell_id)["execution_state"] = "running" if running else "idle"
