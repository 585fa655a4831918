"""When may running a ``.py`` change its paired ``.ipynb``? Only when that is clearly meant.

Every sync j-cli writes records what the two files agreed on: a fingerprint
of the cells' types and sources, in the notebook's ``metadata.jcli.pair``
(it travels with the file, like jupytext's own pairing metadata). Before the
next sync the notebook's current cells are compared with that record, not
file times alone:

- the notebook still holds what was agreed: the ``.py`` changed since, and
  its changes are what the user means; the sync goes ahead, removals
  included;
- the notebook's cells changed since (someone edited it in JupyterLab):
  refused, whether or not the ``.py`` changed too;
- no record (a notebook j-cli never synced, such as a VS Code script with
  ``# %%`` beside an unrelated notebook): refused when the notebook was
  modified after the ``.py``, and otherwise whenever the sync would remove a
  cell or drop outputs the ``.py`` never knew about.

A refusal is ``PAIR_CONFLICT``, names the notebook cells at stake and writes
nothing; ``exec --py-wins`` lets the ``.py`` win.
"""

from __future__ import annotations

import hashlib
import json
import os

from ..base import PairConflict
from ..ipynb import join_text
from .percent import normalize_source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .pairsync import SyncPlan
    from .percent import PercentCell

__all__ = [
    "agreed_cells",
    "cell_digests",
    "changes_since_agreement",
    "check_sync",
    "fingerprint",
    "keep_notebook_edits",
    "notebook_cells",
    "notebook_fingerprint",
    "record_agreement",
]

_KEY = "jcli"


def fingerprint(cells: list[tuple[str, str]]) -> str:
    """A digest of ``(cell_type, normalised source)`` pairs, in order.

    Example:
        >>> fingerprint([("code", "x = 1")]) == fingerprint([("code", "\\nx = 1\\n")])
        True
    """
    canonical = json.dumps([[kind, normalize_source(source)] for kind, source in cells], ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def cell_digests(cells: list[tuple[str, str]]) -> list[str]:
    """One short digest per ``(cell_type, source)``, in order: what each cell held when a sync was recorded.

    Example:
        >>> cell_digests([("code", "x = 1\\n")]) == cell_digests([("code", "x = 1")])
        True
    """
    return [
        hashlib.sha256(json.dumps([kind, normalize_source(source)], ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        for kind, source in cells
    ]


def agreed_cells(nb: dict[str, Any]) -> list[str] | None:
    """The per-cell digests of the last recorded sync (:func:`cell_digests`), or None (no record, or an older one)."""
    meta = nb.get("metadata")
    record = meta.get(_KEY) if isinstance(meta, dict) else None
    pair = record.get("pair") if isinstance(record, dict) else None
    value = pair.get("cells") if isinstance(pair, dict) else None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def notebook_cells(nb: dict[str, Any]) -> list[tuple[str, str]]:
    """``(cell_type, source)`` of each notebook cell, as the record compares them."""
    return _notebook_cells(nb)


def _notebook_cells(nb: dict[str, Any]) -> list[tuple[str, str]]:
    from .pairsync import is_injected

    out = []
    for cell in nb.get("cells", []):
        if is_injected(cell):  # j-cli's own (a run's parameters): never the .py's, never an edit
            continue
        if not isinstance(cell, dict):
            out.append(("?", ""))
            continue
        try:
            source = join_text(cell.get("source", ""), "source")
        except Exception:
            source = "\0unreadable"
        out.append((str(cell.get("cell_type")), source))
    return out


def notebook_fingerprint(nb: dict[str, Any]) -> str:
    """The :func:`fingerprint` of a notebook's cells (a malformed cell counts as one that matches nothing)."""
    return fingerprint(_notebook_cells(nb))


def _agreed(nb: dict[str, Any]) -> str | None:
    meta = nb.get("metadata")
    record = meta.get(_KEY) if isinstance(meta, dict) else None
    pair = record.get("pair") if isinstance(record, dict) else None
    value = pair.get("sources") if isinstance(pair, dict) else None
    return value if isinstance(value, str) else None


def _cells(indexes: list[int]) -> str:
    shown = ", ".join(map(str, indexes[:20]))
    return shown + (f" and {len(indexes) - 20} more" if len(indexes) > 20 else "")


def check_sync(plan: SyncPlan, py_path: str, nb_path: str) -> None:
    """Refuse a sync of ``nb_path`` from ``py_path`` that is not clearly meant (see the module).

    Raises:
        PairConflict: with ``cells`` (notebook indexes at stake) and ``reason``.
    """
    current = plan.nb
    if not os.path.exists(nb_path) or not plan.changes_anything():
        return
    agreed = _agreed(current)
    now = fingerprint(_notebook_cells(current))
    hint = "nothing was written; edit the .py to match, or pass --py-wins to let the .py win"
    if agreed is not None:
        if now == agreed:
            return
        changed = sorted(set(plan.edited_notebook_cells() + plan.removed))
        added = [k for k, i in enumerate(plan.match) if i is None]
        what = f"overwrite notebook cells {_cells(changed)}" if changed else ""
        if added:
            what += (" and " if what else "") + f"add .py cells {_cells(added)} (which the notebook may have deleted)"
        raise PairConflict(
            f"{nb_path} was edited since j-cli last synced it from {py_path}; syncing would {what or 'change it'}; {hint}",
            cells=changed,
            py_cells=added,
            reason="notebook_edited",
        )
    if os.stat(nb_path).st_mtime_ns > os.stat(py_path).st_mtime_ns:
        changed = sorted(set(plan.edited_notebook_cells() + plan.removed))
        raise PairConflict(
            f"{nb_path} is newer than {py_path} and j-cli never synced the two; syncing would change notebook cells "
            f"{_cells(changed)}; {hint}",
            cells=changed,
            reason="notebook_newer",
        )
    lost = sorted(set(plan.removed) | {i for i in plan.edited_notebook_cells() if _has_outputs(plan.old[i])})
    if lost:
        raise PairConflict(
            f"syncing {nb_path} from {py_path} would remove cells or drop outputs the .py never knew about "
            f"(notebook cells {_cells(lost)}); {hint}",
            cells=lost,
            reason="would_lose_cells",
        )


def changes_since_agreement(nb: dict[str, Any], py_cells: list[PercentCell]) -> tuple[bool, bool] | None:
    """Whether each side changed since j-cli last synced them: ``(py_changed, notebook_changed)``.

    None when the notebook holds no record of a sync (see the module).
    """
    agreed = _agreed(nb)
    if agreed is None:
        return None
    py_now = fingerprint([(pc.cell_type, pc.source) for pc in py_cells])
    return py_now != agreed, fingerprint(_notebook_cells(nb)) != agreed


def _has_outputs(cell: dict[str, Any]) -> bool:
    outputs = cell.get("outputs")
    return isinstance(outputs, list) and len(outputs) > 0


def keep_notebook_edits(py_cells: list[PercentCell], nb: dict[str, Any]) -> tuple[list[PercentCell], list[int]] | None:
    """For a sync into a shared document (a collaboration room, where a person types while the agent edits the ``.py``):
    the ``.py``'s cells with the notebook's own edits kept, cell by cell; None when that cannot be told apart.

    Against the per-cell record of the last sync (:func:`agreed_cells`): a
    cell only the notebook changed keeps the notebook's source (its index is
    in the second list); a cell only the ``.py`` changed takes the ``.py``'s;
    a cell both changed alike is the same either way. None, and the
    whole-file rule of :func:`check_sync` decides, when there is no per-cell
    record, when either side added, removed or retyped a cell, or when both
    changed one cell differently.

    Example:
        >>> from .percent import PercentCell
        >>> nb = record_agreement({"cells": [], "metadata": {}}, [PercentCell("code", "a = 1"), PercentCell("code", "b = 2")])
        >>> nb["cells"] = [{"cell_type": "code", "source": "a = 1"}, {"cell_type": "code", "source": "b = 2  # Ada"}]
        >>> cells, kept = keep_notebook_edits([PercentCell("code", "a = 10"), PercentCell("code", "b = 2")], nb)
        >>> [c.source for c in cells], kept
        (['a = 10', 'b = 2  # Ada'], [1])
    """
    agreed = agreed_cells(nb)
    ours = _notebook_cells(nb)
    theirs = [(pc.cell_type, pc.source) for pc in py_cells]
    if agreed is None or not (len(agreed) == len(ours) == len(theirs)):
        return None
    merged, kept = list(py_cells), []
    for index, (was, now, py) in enumerate(zip(agreed, cell_digests(ours), cell_digests(theirs), strict=True)):
        if now == was or now == py:
            continue  # the notebook did not change it, or changed it as the .py did
        if py != was or ours[index][0] != theirs[index][0]:
            return None  # both sides changed it differently
        merged[index] = py_cells[index]._replace(source=normalize_source(ours[index][1]))
        kept.append(index)
    return merged, kept


def record_agreement(nb: dict[str, Any], py_cells: list[PercentCell]) -> dict[str, Any]:
    """``nb`` with ``metadata.jcli.pair`` naming the cells it now shares with the ``.py``.

    The record holds the fingerprint of all cells (``sources``) and one digest
    per cell (``cells``), so a later merge can tell which side changed which cell.
    """
    meta = dict(nb.get("metadata") or {})
    record = dict(meta.get(_KEY) or {}) if isinstance(meta.get(_KEY), dict) else {}
    cells = [(pc.cell_type, pc.source) for pc in py_cells]
    record["pair"] = {"sources": fingerprint(cells), "cells": cell_digests(cells)}
    meta[_KEY] = record
    out = dict(nb)
    out["metadata"] = meta
    return out
