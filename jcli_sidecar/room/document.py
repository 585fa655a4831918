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

__all__ = [
    "append_output",
    "apply_cell",
    "apply_notebook",
    "cell_dict",
    "cell_of",
    "clear_outputs",
    "find_cell",
    "notebook_dict",
    "set_execution_count",
    "set_outputs",
    "set_running",
    "set_text",
]


def find_cell(notebook: YNotebook, cell_id: str, places: dict[str, int] | None = None) -> Map:
    """The cell map whose id is ``cell_id`` (the first, as the server's own reading keeps the first of a repeated id).

    ``places`` (cell id -> index where it was last found) is tried first:
    a run writes the same cell many times, and a look at one cell costs far
    less than a walk of a long notebook; a cell that moved (the person
    inserted or removed one before it) is looked for again from the start.

    Raises:
        CellNotFound: no cell has that id.
    """
    ycells = notebook.ycells
    if places is not None:
        hint = places.get(cell_id)
        if hint is not None and hint < len(ycells):
            ycell = ycells[hint]
            if ycell.get("id") == cell_id:  # a run's cells have one id each (prepare renews repeated ones)
                return ycell
    for index, ycell in enumerate(ycells):
        if ycell.get("id") == cell_id:
            if places is not None:
                places[cell_id] = index
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
        text = _stream_text(output)
        if len(outputs):
            last = outputs[len(outputs) - 1]
            if isinstance(last, Map) and last.get("output_type") == "stream" and last.get("name") == output.get("name"):
                last_text = last.get("text")
                if isinstance(last_text, Text):
                    last_text += text
                    return
    outputs.append(_youtput(output))


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


# -- whole-document reads and three-way edits ---------------------------------


def notebook_dict(notebook: YNotebook) -> dict[str, Any]:
    """The shared notebook as an nbformat dict, every cell with the id the room gives it (even in an nbformat 4.4 notebook,
    whose cells the server saves without ids: j-cli addresses cells by these while it writes through the room)."""
    from jupyter_ydoc.utils import cast_all
    from pycrdt import Map

    meta = notebook.ydoc.get("meta", type=Map).to_py() or {}
    cast_all(meta, float, int)
    cells = [cell_dict(ycell) for ycell in notebook.ycells]
    return {
        "cells": cells,
        "metadata": meta.get("metadata", {}),
        "nbformat": int(meta.get("nbformat", 4)),
        "nbformat_minor": int(meta.get("nbformat_minor", 5)),
    }


def cell_dict(ycell: Map) -> dict[str, Any]:
    """One cell map as an nbformat dict, its id kept (JupyterLab's running mark, ``execution_state``, left out)."""
    from jupyter_ydoc.utils import cast_all

    cell = ycell.to_py() or {}
    cell.pop("execution_state", None)
    cast_all(cell, float, int)  # numbers that came through Yjs are floats
    return cell


def apply_notebook(notebook: YNotebook, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Make the shared notebook, which read as ``before``, read as ``after``, by the smallest changes of its parts.

    Cells are matched by id: a cell in both has only what differs changed in
    place (:func:`apply_cell`: its source by a text edit, so the person's
    cursor in it survives); a cell only in ``before`` is removed, one only
    in ``after`` inserted where it goes, one whose place changed removed and
    inserted again (as JupyterLab moves a cell). The notebook's metadata
    changes key by key. Whatever the person changed meanwhile in parts
    ``before`` and ``after`` agree on is left as it is.
    """
    from pycrdt import Map

    ymeta = notebook.ydoc.get("meta", type=Map)
    for key in ("nbformat", "nbformat_minor"):
        if after.get(key) != before.get(key) and after.get(key) is not None:
            ymeta[key] = after[key]
    _apply_map(ymeta, "metadata", before.get("metadata") or {}, after.get("metadata") or {})
    old = [_key(cell, k, before["cells"]) for k, cell in enumerate(before["cells"])]
    new = [_key(cell, k, after["cells"]) for k, cell in enumerate(after["cells"])]
    ycells = notebook.ycells
    place = {key: i for i, key in enumerate(new)}
    kept = [key for key in old if key in place]
    staying = _increasing(kept, place)  # the most cells that keep their order stay; the others move
    for k in range(len(old) - 1, -1, -1):  # gone and moving cells out first, from the end
        if old[k] not in staying:
            del ycells[k]
    current = [key for key in old if key in staying]
    olds = {key: before["cells"][k] for k, key in enumerate(old)}
    for i, key in enumerate(new):
        cell = after["cells"][i]
        if i < len(current) and current[i] == key:
            if cell.get("cell_type") != olds[key].get("cell_type"):
                ycells[i] = notebook.create_ycell(cell)
            else:
                apply_cell(ycells[i], olds[key], cell)
            continue
        ycells.insert(i, notebook.create_ycell(_with_id(cell)))  # new, or moved here (as JupyterLab moves a cell)
        current.insert(i, key)


def _increasing(kept: list[str], place: dict[str, int]) -> set[str]:
    """The longest run of ``kept`` whose places in the new order increase (patience sorting): the cells that need not move."""
    import bisect

    tails: list[int] = []  # tails[n]: the index in kept of the smallest last place of an increasing run of n + 1
    tail_places: list[int] = []  # their places
    back: list[int] = [-1] * len(kept)
    for k, key in enumerate(kept):
        n = bisect.bisect_left(tail_places, place[key])
        back[k] = tails[n - 1] if n else -1
        if n == len(tails):
            tails.append(k)
            tail_places.append(place[key])
        else:
            tails[n] = k
            tail_places[n] = place[key]
    staying: set[str] = set()
    k = tails[-1] if tails else -1
    while k >= 0:
        staying.add(kept[k])
        k = back[k]
    return staying


def _key(cell: dict[str, Any], index: int, cells: list[dict[str, Any]]) -> str:
    """How a cell is matched: its id (a repeated id's later copies by their rank among that id's cells)."""
    cell_id = cell.get("id")
    if not isinstance(cell_id, str) or not cell_id:
        return f"#{index}"
    rank = sum(1 for other in cells[:index] if other.get("id") == cell_id)
    return cell_id if rank == 0 else f"{cell_id}#{rank}"


def _with_id(cell: dict[str, Any]) -> dict[str, Any]:
    if isinstance(cell.get("id"), str) and cell["id"]:
        return cell
    import uuid

    return {**cell, "id": str(uuid.uuid4())}


def apply_cell(ycell: Map, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Make one cell map, which read as ``before``, read as ``after``: each field that differs, and only those.

    The source changes by one text edit (what lies between the common start
    and end is replaced); metadata key by key; outputs one by one (a stream
    that only grew gets the new text appended, as it arrived); any other
    field is set.
    """
    for key in after.keys() | before.keys():
        if key in ("metadata", "source", "outputs", "execution_state"):
            continue
        if key not in after:
            del ycell[key]
        elif after[key] != before.get(key):
            ycell[key] = after[key]
    source = after.get("source", "")
    source = "".join(source) if isinstance(source, list) else source
    if source != before.get("source", ""):
        set_text(ycell["source"], source)
    _apply_map(ycell, "metadata", before.get("metadata") or {}, after.get("metadata") or {})
    if after.get("cell_type") == "code" and "outputs" in after:
        set_outputs(ycell, before.get("outputs") or [], after["outputs"])


def _apply_map(parent: Map, key: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    """``parent[key]`` (a map, or a plain value a peer left) made to read as ``after``, key by key."""
    from pycrdt import Map

    ymap = parent.get(key)
    if not isinstance(ymap, Map):
        parent[key] = Map(dict(after))
        return
    for name in before.keys() - after.keys():
        if name in ymap:
            del ymap[name]
    for name, value in after.items():
        if before.get(name, _ABSENT) != value or name not in ymap:
            ymap[name] = value


_ABSENT = object()


def set_text(ytext: Any, value: str) -> None:
    """Make a Y text read ``value`` by one edit: the part between the common start and the common end is replaced."""
    old = str(ytext)
    if old == value:
        return
    start = 0
    limit = min(len(old), len(value))
    while start < limit and old[start] == value[start]:
        start += 1
    end = 0
    while end < limit - start and old[len(old) - 1 - end] == value[len(value) - 1 - end]:
        end += 1
    if len(old) - end > start:
        del ytext[start : len(old) - end]
    if len(value) - end > start:
        ytext.insert(start, value[start : len(value) - end])


def set_outputs(ycell: Map, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    """Make a code cell's outputs, which read as ``before``, read as ``after``: unchanged ones stay, a stream that
    grew has the new text appended, a changed one is replaced, extra ones are removed, new ones appended."""
    from pycrdt import Array, Map, Text

    youtputs = ycell.get("outputs")
    if not isinstance(youtputs, Array) or len(youtputs) != len(before):  # not what we read: all of it again
        ycell["outputs"] = youtputs = Array()
        before = []
    for i, output in enumerate(after):
        if i < len(before):
            old = before[i]
            if old == output:
                continue
            yout = youtputs[i]
            if (
                output.get("output_type") == "stream" == old.get("output_type")
                and output.get("name") == old.get("name")
                and isinstance(yout, Map)
                and isinstance(yout.get("text"), Text)
            ):
                old_text, text = _stream_text(old), _stream_text(output)
                if text.startswith(old_text):
                    ytext = yout["text"]
                    ytext += text[len(old_text) :]
                    continue
            youtputs[i] = _youtput(output)
        else:
            youtputs.append(_youtput(output))
    if len(youtputs) > len(after):
        del youtputs[len(after) :]


def _stream_text(output: dict[str, Any]) -> str:
    text = output.get("text", "")
    return "".join(text) if isinstance(text, list) else str(text)


def _youtput(output: dict[str, Any]) -> Map:
    """One output as the map jupyter-ydoc builds (a stream's text a Y text)."""
    from pycrdt import Map, Text

    if output.get("output_type") == "stream":
        return Map({**output, "text": Text(_stream_text(output))})
    return Map(dict(output))
