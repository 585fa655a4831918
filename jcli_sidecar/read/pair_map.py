"""``notebook map``: which ``.py`` cell is which notebook cell, and what differs on each side.

The alignment is the one ``exec -f`` syncs by
(:func:`jcli_sidecar.pair.pairsync.plan_sync`): a cell matched by the id on its
marker, by identical type and source, or in place as an edit; anything
else is only on one side. Whether a difference comes from the ``.py`` or
the notebook is told from the record of the last sync
(:func:`jcli_sidecar.pair.pairguard.changes_since_agreement`), and the map says
what the next ``exec -f`` of the ``.py`` would do, or why it would refuse
(:func:`jcli_sidecar.pair.pairguard.check_sync`). Reads only; writes nothing.
"""

from __future__ import annotations

from ..base import SCHEMA_VERSION, PairConflict
from .notebook_view import cell_source, open_view

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from typing import Any

    from .notebook_view import NotebookView

__all__ = ["map_pair"]


def _match_kind(view: NotebookView, k: int) -> str | None:
    plan = view.plan
    assert plan is not None
    i = plan.match[k]
    if i is None:
        return None
    pc = plan.py_cells[k]
    py_shared, nb_shared = view.shared_ids()
    if pc.cell_id and plan.old[i].get("id") == pc.cell_id and pc.cell_id not in py_shared and pc.cell_id not in nb_shared:
        return "id"
    return "position" if k in plan.edited else "content"


def _changed_on(change: str, since: tuple[bool, bool] | None) -> str | None:
    """Which side made a cell differ: known only from a sync record where exactly one side changed since."""
    if change == "equal":
        return None
    if since == (True, False):
        return "py"
    if since == (False, True):
        return "notebook"
    return "unknown"


def _py_row(view: NotebookView, k: int, since: tuple[bool, bool] | None) -> dict[str, Any]:
    plan = view.plan
    pc = plan.py_cells[k]
    i = plan.match[k]
    nb_id = plan.old[i].get("id") if i is not None else None
    change = view.pair_change(k, i)
    return {
        "py_index": k,
        "notebook_index": i,
        "cell_type": pc.cell_type,
        "cell_id": pc.cell_id,
        "notebook_cell_id": nb_id if isinstance(nb_id, str) else None,
        "source_start_line": pc.start_line,
        "source_end_line": pc.end_line,
        "match": _match_kind(view, k),
        "change": change,
        "changed_on": _changed_on(change, since),
        **_problem(view.id_problem("py", k) or (view.id_problem("notebook", i) if i is not None else None)),
    }


def _problem(text: str | None) -> dict[str, Any]:
    return {} if text is None else {"problem": text}


def _notebook_row(view: NotebookView, i: int, since: tuple[bool, bool] | None) -> dict[str, Any]:
    cell = view.plan.old[i]
    kind, cell_id = cell.get("cell_type"), cell.get("id")
    row = {
        "py_index": None,
        "notebook_index": i,
        "cell_type": kind if isinstance(kind, str) else None,
        "cell_id": None,
        "notebook_cell_id": cell_id if isinstance(cell_id, str) else None,
        "source_start_line": None,
        "source_end_line": None,
        "match": None,
        "change": "only_notebook",
        "changed_on": _changed_on("only_notebook", since),
    }
    if cell_source(cell) is None:
        row["problem"] = "not a readable notebook cell"
    row.update(_problem(None if "problem" in row else view.id_problem("notebook", i)))
    return row


def _rows(view: NotebookView, since: tuple[bool, bool] | None) -> list[dict[str, Any]]:
    """One row per cell: ``.py`` order, each notebook-only cell after the notebook cell it followed."""
    plan = view.plan
    pending = sorted(plan.removed)
    rows = []
    for k in range(len(plan.py_cells)):
        i = plan.match[k]
        while pending and i is not None and pending[0] < i:
            rows.append(_notebook_row(view, pending.pop(0), since))
        rows.append(_py_row(view, k, since))
    rows.extend(_notebook_row(view, i, since) for i in pending)
    return rows


def _next_sync(view: NotebookView) -> dict[str, Any]:
    """What ``exec -f`` of the ``.py`` would do to the notebook, or why it would refuse."""
    from ..pair import check_sync, duplicate_ids

    plan = view.plan
    added = sum(1 for i in plan.match if i is None)
    out: dict[str, Any] = {
        "kept": len(plan.match) - added - len(plan.edited),
        "edited": len(plan.edited),
        "added": added,
        "removed": len(plan.removed),
        "refused": None,
    }
    copies = duplicate_ids(plan.py_cells)
    if copies:
        out["refused"] = {
            "code": "CELL_ID_DUPLICATE",
            "reason": "duplicate_id",
            "cells": [],
            "py_cells": sorted(k for ks in copies.values() for k in ks),
        }
        return out
    try:
        check_sync(plan, view.py_path, view.notebook_path)
    except PairConflict as err:
        out["refused"] = {"code": err.code, "reason": err.details.get("reason"), "cells": err.details.get("cells", [])}
    except OSError:  # a file vanished between the read and the check: nothing to predict
        pass
    return out


def map_pair(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The map of ``path`` (a py:percent ``.py`` or an ``.ipynb``) and its pair.

    Returns:
        ``{schema_version, status, path, py_path, notebook_path, paired,
        pair_note, in_sync, since_last_sync, sync, cells}``. Without a
        pair, ``paired`` is false, ``pair_note`` says why and ``cells`` is
        empty. ``since_last_sync`` is ``{py_changed, notebook_changed}``
        (None when no sync was recorded); ``sync`` counts what the next
        ``exec -f`` of the ``.py`` would keep, edit, add and remove, and
        ``refused`` is its ``PAIR_CONFLICT`` (reason and cells), its
        ``CELL_ID_DUPLICATE`` (``py_cells``: the cells whose markers repeat an
        id), or None. A row whose id several cells share says so in ``problem``.

    Raises:
        FileNotFound, NotebookReadFailed, UsageError: the file named.

    Example:
        >>> doc = map_pair("examples/demo.ipynb")
        >>> doc["paired"], doc["cells"]
        (False, [])
    """
    view = open_view(path)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "path": view.path,
        "py_path": view.py_path,
        "notebook_path": view.notebook_path,
        "paired": view.plan is not None,
        "pair_note": view.pair_note,
        "in_sync": None,
        "since_last_sync": None,
        "sync": None,
        "cells": [],
    }
    if view.plan is None:
        return doc
    from ..pair import changes_since_agreement

    since = changes_since_agreement(view.nb, view.py_cells)
    plan = view.plan
    doc["in_sync"] = not plan.edited and not plan.removed and plan.match == list(range(len(plan.old)))
    if since is not None:
        doc["since_last_sync"] = {"py_changed": since[0], "notebook_changed": since[1]}
    doc["sync"] = _next_sync(view)
    doc["cells"] = _rows(view, since)
    return doc
