"""Bring a paired ``.ipynb`` in line with its py:percent ``.py`` before a run.

The ``.py`` is the truth for inputs. Cells are matched by the ``id`` on their
marker (an id several cells carry matches nothing), then by exact type and source; a matched cell keeps its outputs. An
unmatched ``.py`` cell that sits where an unmatched notebook cell of the
same type sat (between the same matched neighbours) and still resembles it
(:data:`EDIT_SIMILARITY`) is that cell, edited: it keeps its id and
metadata, gets the new source and loses its stale outputs (and their run
times, ``metadata.execution``). Everything else
is added or removed. Whatever the pairing, an edited or new cell never keeps
an output, so no output can end up under the wrong code. The synced notebook
has one id per cell: a repeated id stays with the cell whose marker names it
(else the first) and the others get fresh ones (``SyncPlan.renewed``). j-cli
never rewrites the ``.py``.

A cell tagged ``injected-parameters`` (:data:`INJECTED_TAG`) is j-cli's own:
a run with parameters writes it into the notebook only. A sync never matches
it to a ``.py`` cell nor counts it as a notebook edit; it drops it, and a run
with parameters writes it anew after the sync.
"""

from __future__ import annotations

import copy
import difflib
import os

from ..base import OutputDataInvalid
from ..ipynb import join_text, metadata_tags, new_cell, new_notebook
from .percent import PercentCell, normalize_source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "EDIT_SIMILARITY",
    "INJECTED_TAG",
    "SyncPlan",
    "apply_plan",
    "carry_marker_metadata",
    "is_injected",
    "plan_sync",
    "sync_notebook",
]

#: How alike (difflib ratio) an unmatched cell must be to count as an edit.
EDIT_SIMILARITY = 0.5
#: The tag of the cell a run's parameters are written into (papermill's): the notebook's only, never the ``.py``'s.
INJECTED_TAG = "injected-parameters"


def is_injected(cell: Any) -> bool:
    """Whether a notebook cell is tagged ``injected-parameters`` (j-cli's own: see the module).

    Example:
        >>> is_injected({"metadata": {"tags": ["injected-parameters"]}}), is_injected({"metadata": {}})
        (True, False)
    """
    return INJECTED_TAG in metadata_tags(cell.get("metadata") if isinstance(cell, dict) else None)


def _source(cell: Any) -> str:
    try:
        return normalize_source(join_text(cell.get("source", ""), "source"))
    except OutputDataInvalid:  # a malformed cell never matches
        return "\0unreadable"


def _ids(cells: list[dict[str, Any]], py_cells: list[PercentCell]) -> dict[str, int]:
    """Where each id is: the cells' own ids, then the ``metadata.id`` a jupytext-made notebook keeps a marker's id in.

    An id several cells carry (on either side) is left out: it maps nothing (:mod:`jcli_sidecar.pair.cell_ids`).
    """
    from .cell_ids import ambiguous_ids, duplicate_ids

    found: dict[str, int] = {cell_id: -1 for cell_id in ambiguous_ids(cells) | set(duplicate_ids(py_cells))}
    for i, cell in enumerate(cells):
        if isinstance(cell.get("id"), str):
            found.setdefault(cell["id"], i)
    for i, cell in enumerate(cells):
        meta = cell.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("id"), str):
            found.setdefault(meta["id"], i)
    return {cell_id: i for cell_id, i in found.items() if i >= 0}


def _fresh_id(taken: set[str]) -> str:
    while True:
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            taken.add(candidate)
            return candidate


class SyncPlan:
    """How the ``.py``'s cells map onto the notebook's, before anything changes.

    Attributes:
        match: per ``.py`` cell, the old notebook index it continues, or None (new).
        edited: ``.py`` indexes whose matched cell gets a new source.
        removed: old notebook indexes no ``.py`` cell continues.
        renewed: after :func:`apply_plan`, the synced cells that repeated an
            earlier cell's id and got a fresh one (``{cell_index, id, new_id}``).
    """

    __slots__ = ("py_cells", "nb", "old", "match", "edited", "removed", "renewed", "injected")

    def __init__(
        self, py_cells: list[PercentCell], nb: dict[str, Any], old: list[dict[str, Any]], match: list[int | None], edited: set[int]
    ):
        self.py_cells = py_cells
        self.nb = nb
        self.old = old
        self.match = match
        self.edited = {k for k, i in enumerate(match) if i is not None and (k in edited or _source(old[i]) != py_cells[k].source)}
        used = {i for i in match if i is not None}
        #: Old notebook indexes of the cells tagged ``injected-parameters``: dropped, neither matched nor removed.
        self.injected = [i for i, cell in enumerate(old) if is_injected(cell)]
        self.removed = [i for i in range(len(old)) if i not in used and i not in self.injected]
        self.renewed: list[dict[str, Any]] = []

    def edited_notebook_cells(self) -> list[int]:
        """Old notebook indexes whose source the sync replaces."""
        return sorted(self.match[k] for k in self.edited)

    def changes_anything(self) -> bool:
        return bool(self.edited or self.removed or self.injected) or len(self.py_cells) != len(self.old)


def plan_sync(py_cells: list[PercentCell], nb: dict[str, Any] | None, kernel_name: str | dict[str, Any] | None = None) -> SyncPlan:
    """Match the ``.py``'s cells to the notebook's (by id, then by source, then as edits in place)."""
    if nb is None:
        nb = new_notebook([], kernel_name)
    old = [c if isinstance(c, dict) else {} for c in nb.get("cells", [])]
    match: list[int | None] = [None] * len(py_cells)
    used: set[int] = {i for i, cell in enumerate(old) if is_injected(cell)}  # j-cli's own: never a .py cell
    by_id = _ids(old, py_cells)
    for k, pc in enumerate(py_cells):
        i = by_id.get(pc.cell_id) if pc.cell_id else None
        if i is not None and i not in used:
            match[k] = i
            used.add(i)
    for k, pc in enumerate(py_cells):
        if match[k] is not None:
            continue
        for i, cell in enumerate(old):
            if i not in used and cell.get("cell_type") == pc.cell_type and _source(cell) == pc.source:
                match[k] = i
                used.add(i)
                break
    edited: set[int] = set()
    for k, pc in enumerate(py_cells):
        if match[k] is not None:
            continue
        before = max((match[j] for j in range(k) if match[j] is not None), default=-1)
        after = min((match[j] for j in range(k + 1, len(py_cells)) if match[j] is not None), default=len(old))
        best, best_ratio = None, EDIT_SIMILARITY
        for i in range(before + 1, after):
            if i not in used and old[i].get("cell_type") == pc.cell_type:
                ratio = difflib.SequenceMatcher(None, _source(old[i]), pc.source).ratio()
                if ratio >= best_ratio:
                    best, best_ratio = i, ratio
        if best is not None:
            match[k] = best
            used.add(best)
            edited.add(k)
    return SyncPlan(py_cells, nb, old, match, edited)


def carry_marker_metadata(cells: list[dict[str, Any]], py_cells: list[PercentCell]) -> None:
    """The ``.py`` wins for the metadata its markers carry (``# %% tags=["parameters"]``): merged into each synced cell's."""
    for cell, pc in zip(cells, py_cells, strict=True):
        if pc.metadata:
            cell["metadata"] = {**(cell.get("metadata") or {}), **copy.deepcopy(pc.metadata)}


def apply_plan(plan: SyncPlan) -> tuple[dict[str, Any], list[int], dict[str, int]]:
    """The synced notebook, where each ``.py`` cell went, and the counts (see :func:`sync_notebook`)."""
    nb, old, py_cells = plan.nb, plan.old, plan.py_cells
    with_ids = nb.get("nbformat", 4) == 4 and nb.get("nbformat_minor", 0) >= 5
    taken = {c["id"] for c in old if isinstance(c.get("id"), str)} | {pc.cell_id for pc in py_cells if pc.cell_id}
    cells, report = [], {"kept": 0, "edited": 0, "added": 0, "removed": len(plan.removed)}
    for k, pc in enumerate(py_cells):
        i = plan.match[k]
        if i is None:
            cell_id = (pc.cell_id or _fresh_id(taken)) if with_ids else None
            cells.append(new_cell(pc.cell_type, pc.source, cell_id))
            report["added"] += 1
            continue
        cell = copy.deepcopy(old[i])
        if k in plan.edited:
            cell["source"] = pc.source
            if cell.get("cell_type") == "code":
                cell["outputs"] = []
                cell["execution_count"] = None
                if isinstance(cell.get("metadata"), dict):  # the old code's run times go with its outputs
                    cell["metadata"].pop("execution", None)
            report["edited"] += 1
        else:
            report["kept"] += 1
        if with_ids and not isinstance(cell.get("id"), str):
            cell["id"] = _fresh_id(taken)
        cells.append(cell)
    carry_marker_metadata(cells, py_cells)
    if with_ids:  # one id per cell: a repeated id goes to the cell whose marker names it, else the first
        from .cell_ids import renew_duplicate_ids

        plan.renewed = renew_duplicate_ids(cells, {k: pc.cell_id for k, pc in enumerate(py_cells) if pc.cell_id})
        if plan.renewed:
            report["ids_renewed"] = len(plan.renewed)
    synced = dict(nb)
    synced["cells"] = cells
    if plan.injected:  # the parameters went with their cell
        _drop_parameters(synced)
        report["injected_dropped"] = len(plan.injected)
    return synced, list(range(len(cells))), report


def _drop_parameters(nb: dict[str, Any]) -> None:
    """``metadata.papermill.parameters`` out of ``nb`` (a copy of the metadata is changed, never the plan's)."""
    metadata = nb.get("metadata")
    papermill = metadata.get("papermill") if isinstance(metadata, dict) else None
    if isinstance(papermill, dict) and "parameters" in papermill:
        nb["metadata"] = {**metadata, "papermill": {k: v for k, v in papermill.items() if k != "parameters"}}


def sync_notebook(
    py_cells: list[PercentCell], nb: dict[str, Any] | None, kernel_name: str | dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[int], dict[str, int]]:
    """The notebook with the ``.py``'s cells, and where each ``.py`` cell went.

    Returns:
        ``(notebook, py_to_nb, report)``: ``py_to_nb[k]`` is the notebook index
        of ``.py`` cell ``k``; ``report`` counts kept, edited, added and
        removed cells.

    Example:
        >>> nb, where, report = sync_notebook([PercentCell("code", "x = 1")], None)
        >>> where, report["added"], nb["nbformat_minor"]
        ([0], 1, 5)
    """
    return apply_plan(plan_sync(py_cells, nb, kernel_name))
