"""``notebook summary`` and ``notebook show``: a notebook's cells at a glance, and their sources.

A summary row tells, per cell, what the cell is (index, id, type, lines,
its span in the ``.py``, a short preview), what its code does
(:func:`jcli_sidecar.read.cell_analysis.analyse_code`) and how it last ran
(execution count, outputs, error), the run facts coming from the notebook
(the paired one, for a ``.py``). Everything is bounded so that a summary of
a notebook with thousands of cells stays small: at most
:data:`SUMMARY_CELL_LIMIT` cells per call (``next_cells`` names the rest),
previews of :data:`PREVIEW_LINES` lines and :data:`PREVIEW_CHARS`
characters, short name lists. ``show`` gives whole sources of the cells a
spec names. Reads only; writes nothing.
"""

from __future__ import annotations

from ..base import SCHEMA_VERSION, OutputDataInvalid, UsageError
from ..ipynb import join_text
from .cell_analysis import analyse_code
from .notebook_view import cell_source, open_view, select_cells
from .staleness import StaleInput, cell_key, skips_execution, source_digest, stale_states

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from typing import Any

    from .notebook_view import NotebookView

    #: A notebook (by real path) as a collaboration room holds it now, or None.
    NotebookOf = Callable[[str], dict[str, Any] | None]

__all__ = ["ERROR_CHARS", "PREVIEW_CHARS", "PREVIEW_LINES", "SUMMARY_CELL_LIMIT", "handle_look", "show_cells", "summarise"]

#: At most this many cells per summary; ``next_cells`` is the spec for the rest.
SUMMARY_CELL_LIMIT = 100
#: A preview holds at most this many lines of the source ...
PREVIEW_LINES = 3
#: ... and at most this many characters.
PREVIEW_CHARS = 160
#: An error output is told as ``ename: evalue``, cut to this many characters.
ERROR_CHARS = 120


def _preview(source: str) -> tuple[str, bool]:
    lines = source.split("\n")
    text = "\n".join(lines[:PREVIEW_LINES])
    cut = len(lines) > PREVIEW_LINES
    if len(text) > PREVIEW_CHARS:
        text, cut = text[:PREVIEW_CHARS], True
    return text, cut


def _line(text: Any) -> str:
    first = str(text).strip().split("\n", 1)[0]
    return first if len(first) <= ERROR_CHARS else first[: ERROR_CHARS - 1] + "…"


def _run_facts(cell: Any) -> dict[str, Any]:
    """How a notebook code cell last ran; all None when there is no notebook cell."""
    if not isinstance(cell, dict):
        return {"execution_count": None, "outputs": None, "error": None}
    count = cell.get("execution_count")
    outputs = cell.get("outputs")
    outputs = outputs if isinstance(outputs, list) else []
    error = None
    for output in outputs:
        if isinstance(output, dict) and output.get("output_type") == "error":
            error = _line(f"{output.get('ename', '')}: {output.get('evalue', '')}")
            break
    return {
        "execution_count": count if isinstance(count, int) and not isinstance(count, bool) else None,
        "outputs": len(outputs),
        "error": error,
    }


def _stale_input(view: NotebookView, index: int) -> StaleInput | None:
    """Cell ``index`` of the file named as staleness sees it (a ``.py`` cell with its notebook cell's record); None when not code."""
    nb_cells = view.nb["cells"] if view.nb is not None else []
    if view.kind == "py":
        pc = view.py_cells[index]
        nb_index = view.notebook_index(index)
        cell = nb_cells[nb_index] if nb_index is not None else None
        if pc.cell_type != "code":
            return None
        source, cell_id = pc.source, (cell.get("id") if isinstance(cell, dict) else None) or pc.cell_id
    else:
        cell = nb_cells[index]
        source = cell_source(cell) if isinstance(cell, dict) and cell.get("cell_type") == "code" else None
        if source is None:
            return None
        cell_id = cell.get("id")
    if not isinstance(cell, dict):
        return StaleInput(source, cell_key(cell_id, index))
    if skips_execution(cell.get("metadata")):
        return None  # no run runs it
    ran = cell.get("execution_count") is not None or bool(cell.get("outputs"))
    return StaleInput(source, cell_key(cell_id, index), cell.get("metadata"), ran)


def _staleness(view: NotebookView) -> list[dict[str, Any] | None]:
    """Each cell's stale state (None for a cell that is not code), over the whole file: providers come before."""
    return stale_states([_stale_input(view, index) for index in range(view.cell_count)])


def _summary_row(view: NotebookView, index: int, stale: dict[str, Any] | None = None) -> dict[str, Any]:
    problem = None
    if view.kind == "py":
        pc = view.py_cells[index]
        py_index, nb_index = index, view.notebook_index(index)
        cell = view.nb["cells"][nb_index] if nb_index is not None else None
        cell_type, source, cell_id = pc.cell_type, pc.source, pc.cell_id
        if cell_id is None and isinstance(cell, dict) and isinstance(cell.get("id"), str):
            cell_id = cell["id"]
    else:
        cell = view.nb["cells"][index]
        nb_index, py_index = index, view.py_index(index)
        cell_type = cell.get("cell_type") if isinstance(cell, dict) and isinstance(cell.get("cell_type"), str) else None
        cell_id = cell.get("id") if isinstance(cell, dict) and isinstance(cell.get("id"), str) else None
        source = cell_source(cell)
        if cell_type is None:
            problem = "not a notebook cell (no cell_type)"
        elif source is None:
            problem = "its source is neither a string nor a list of strings"
    pc = view.py_cells[py_index] if py_index is not None else None
    text = source or ""
    preview, cut = _preview(text)
    row: dict[str, Any] = {
        "cell_index": index,
        "cell_id": cell_id,
        "cell_type": cell_type,
        "line_count": len(text.split("\n")) if text else 0,
        "source_start_line": pc.start_line if pc is not None else None,
        "source_end_line": pc.end_line if pc is not None else None,
        "preview": preview,
        "preview_truncated": cut,
        "source_sha": source_digest(source) if source is not None else None,
    }
    if view.plan is not None:
        row["pair_change"] = view.pair_change(py_index, nb_index)
        row["notebook_cell_index" if view.kind == "py" else "py_cell_index"] = nb_index if view.kind == "py" else py_index
    problem = problem or view.id_problem(view.kind, index)
    if problem is not None:
        row["problem"] = problem
    if cell_type == "code":
        row.update(_run_facts(cell))
        if source is not None:
            row.update(analyse_code(source))
        if stale is not None:
            row.update(stale)
    return row


def _header(view: NotebookView) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "path": view.path,
        "kind": view.kind,
        "py_path": view.py_path,
        "notebook_path": view.notebook_path,
        "paired": view.plan is not None,
        "pair_note": view.pair_note,
        "kernel": view.kernel(),
        "cell_count": view.cell_count,
    }


def summarise(
    path: str | os.PathLike[str], spec: str | None = None, limit: int = SUMMARY_CELL_LIMIT, *, notebook_of: NotebookOf | None = None
) -> dict[str, Any]:
    """The summary document of ``path`` (an ``.ipynb`` or a py:percent ``.py``).

    Args:
        path: the file; its pair (same stem) adds line spans or run facts.
        spec: which cells (``N``, ``A:B``, ``A:``, ``:B``); None is all.
        limit: at most this many cells (the rest are named by ``next_cells``).
        notebook_of: a notebook as a collaboration room holds it (:func:`~jcli_sidecar.read.notebook_view.open_view`);
            the document then says ``live: true``.

    Returns:
        ``{schema_version, status, path, kind, py_path, notebook_path,
        paired, pair_note, kernel, cell_count, cells, cells_omitted,
        next_cells, stale_cells}`` (``stale_cells``: the stale code cells of
        the whole file, at most :data:`SUMMARY_CELL_LIMIT`); see
        docs/notebook-runs.md for a row's fields (a code cell's ``stale``,
        ``stale_reason`` and the rest, :func:`~jcli_sidecar.read.staleness.stale_states`).

    Raises:
        FileNotFound, NotebookReadFailed, UsageError, CellNotFound.

    Example:
        >>> doc = summarise("examples/demo.ipynb", "1")
        >>> doc["cell_count"], doc["cells"][0]["cell_type"], doc["cells_omitted"]
        (15, 'code', 0)
    """
    view = open_view(path, notebook_of=notebook_of)
    chosen = select_cells(view, spec)
    shown, rest = chosen[:limit], chosen[limit:]
    doc = _header(view)
    states = _staleness(view)
    doc["cells"] = [_summary_row(view, index, states[index]) for index in shown]
    doc["stale_cells"] = [index for index, state in enumerate(states) if state is not None and state["stale"]][:SUMMARY_CELL_LIMIT]
    doc["cells_omitted"] = len(rest)
    doc["next_cells"] = f"{rest[0]}:{rest[-1] + 1}" if rest else None
    if view.live:
        doc["live"] = True
    return doc


def _show_row(view: NotebookView, index: int) -> dict[str, Any]:
    if view.kind == "py":
        pc = view.py_cells[index]
        shown: dict[str, Any] = {
            "cell_index": index,
            "cell_id": pc.cell_id,
            "cell_type": pc.cell_type,
            "source_start_line": pc.start_line,
            "source_end_line": pc.end_line,
            "source": pc.source,
            "source_sha": source_digest(pc.source),
        }
        problem = view.id_problem("py", index)
        return shown if problem is None else {**shown, "problem": problem}
    cell = view.nb["cells"][index]
    if not isinstance(cell, dict):
        return {"cell_index": index, "cell_id": None, "cell_type": None, "source": None, "problem": "not a notebook cell"}
    row: dict[str, Any] = {
        "cell_index": index,
        "cell_id": cell.get("id") if isinstance(cell.get("id"), str) else None,
        "cell_type": cell.get("cell_type") if isinstance(cell.get("cell_type"), str) else None,
    }
    try:
        row["source"] = join_text(cell.get("source", ""), "source")
        row["source_sha"] = source_digest(row["source"])
    except OutputDataInvalid:
        row["source"] = None
        row["source_sha"] = None
        row["problem"] = "its source is neither a string nor a list of strings"
    problem = view.id_problem("notebook", index)
    if problem is not None and "problem" not in row:
        row["problem"] = problem
    return row


def show_cells(path: str | os.PathLike[str], spec: str, *, notebook_of: NotebookOf | None = None) -> dict[str, Any]:
    """The whole sources of the cells ``spec`` names in ``path``.

    An ``.ipynb``'s sources are given as stored; a ``.py``'s as its cells
    read (with their line spans).

    Returns:
        ``{schema_version, status, path, kind, cell_count, cells}``.

    Raises:
        FileNotFound, NotebookReadFailed, UsageError, CellNotFound (any
        part of ``spec`` outside the file: never clamped).

    Example:
        >>> doc = show_cells("examples/demo.ipynb", "4")
        >>> doc["cells"][0]["cell_type"]
        'markdown'
    """
    view = open_view(path, with_pair=False, notebook_of=notebook_of)
    chosen = select_cells(view, spec)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "path": view.path,
        "kind": view.kind,
        "cell_count": view.cell_count,
        "cells": [_show_row(view, index) for index in chosen],
    }
    if view.live:
        doc["live"] = True
    return doc


def handle_look(args: dict[str, Any], *, notebook_of: NotebookOf | None = None) -> dict[str, Any]:
    """A ``notebook.look`` request (:data:`~jcli_sidecar.read.request_spec.LOOK_SPEC`): :func:`summarise` or :func:`show_cells`.

    Raises:
        UsageError: ``show`` without ``cells``; and what the view raises.
    """
    if args["what"] == "summary":
        return summarise(args["file_path"], args.get("cells"), notebook_of=notebook_of)
    if args.get("cells") is None:
        raise UsageError("notebook show needs the cells to show (--cell SPEC)")
    return show_cells(args["file_path"], args["cells"], notebook_of=notebook_of)
