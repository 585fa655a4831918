"""Cell ids that repeat: refused in a ``.py``, repaired in a notebook j-cli writes, never a mapping.

One policy for every path (sync, run, read, map, guards, ``convert``, the
pre-commit check):

- A py:percent ``.py`` whose markers carry one ``id="…"`` on several cells
  (a copied cell keeps its marker) is refused before anything runs or is
  written: ``CELL_ID_DUPLICATE`` (:func:`check_py_ids`), naming the cells,
  their lines and the fix (delete the copied ``id="…"``). j-cli never
  rewrites the ``.py``, so it cannot choose which cell keeps the id.
- A notebook whose cells share an id is repaired when j-cli writes it, as
  nbformat's validator repairs it: the first cell keeps the id, later ones
  get fresh ids (:func:`renew_duplicate_ids`); the result says which.
- An id carried by more than one cell, on either side, is never used to map
  a cell (:func:`duplicate_ids`, :func:`ambiguous_ids`): the mapping falls
  back to the unique-content rule, else ``CELL_MAPPING_UNRELIABLE``.
"""

from __future__ import annotations

import os

from ..base import CellIdDuplicate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .percent import PercentCell

__all__ = ["ambiguous_ids", "check_py_ids", "describe_duplicates", "duplicate_ids", "fresh_cell_id", "renew_duplicate_ids"]


def duplicate_ids(py_cells: list[PercentCell]) -> dict[str, list[int]]:
    """The ids the ``.py``'s markers carry on more than one cell, each with its ``.py`` cell indexes.

    Example:
        >>> from jcli_sidecar.pair.percent import parse_percent
        >>> duplicate_ids(parse_percent('# %% id="a"\\nx = 1\\n# %% id="a"\\nx = 2\\n# %% id="b"\\ny = 3\\n'))
        {'a': [0, 1]}
    """
    seen: dict[str, list[int]] = {}
    for k, pc in enumerate(py_cells):
        if pc.cell_id:
            seen.setdefault(pc.cell_id, []).append(k)
    return {cell_id: ks for cell_id, ks in seen.items() if len(ks) > 1}


def _carried(cell: Any) -> set[str]:
    found = set()
    if isinstance(cell, dict):
        if isinstance(cell.get("id"), str):
            found.add(cell["id"])
        meta = cell.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("id"), str):
            found.add(meta["id"])
    return found


def ambiguous_ids(nb_cells: list[Any]) -> set[str]:
    """The ids more than one notebook cell carries (as its ``id`` or, as jupytext keeps it, ``metadata.id``).

    Example:
        >>> sorted(ambiguous_ids([{"id": "a"}, {"id": "a"}, {"id": "b", "metadata": {"id": "c"}}]))
        ['a']
    """
    seen: set[str] = set()
    twice: set[str] = set()
    for cell in nb_cells:
        for cell_id in _carried(cell):
            (twice if cell_id in seen else seen).add(cell_id)
    return twice


def describe_duplicates(py_cells: list[PercentCell], duplicates: dict[str, list[int]]) -> str:
    """``id="a" on cells 1 (line 3) and 4 (line 12)``, for each repeated id."""
    parts = []
    for cell_id, ks in duplicates.items():
        where = [f"{k} (line {py_cells[k].start_line})" for k in ks]
        listed = ", ".join(where[:-1]) + f" and {where[-1]}"
        parts.append(f'id="{cell_id}" on cells {listed}')
    return "; ".join(parts)


def check_py_ids(py_cells: list[PercentCell], py_path: str = "the .py") -> None:
    """Refuse a ``.py`` whose markers repeat an id (see the module); nothing has run or been written yet.

    Raises:
        CellIdDuplicate: with ``duplicates``: ``[{id, cells, lines}]`` (``.py``
            cell indexes and their marker lines).
    """
    duplicates = duplicate_ids(py_cells)
    if not duplicates:
        return
    copies = [(cell_id, k) for cell_id, ks in duplicates.items() for k in ks[1:]]
    fix = ", ".join(f'the id="{cell_id}" on line {py_cells[k].start_line}' for cell_id, k in copies)
    raise CellIdDuplicate(
        f"{py_path}: the cell markers repeat an id ({describe_duplicates(py_cells, duplicates)}), so j-cli cannot "
        f"tell which notebook cell each one is; nothing was run or written. A copied cell keeps its marker's id: "
        f"delete {fix} (a cell without an id is matched by its content and gets a new id in the notebook).",
        duplicates=[{"id": cell_id, "cells": ks, "lines": [py_cells[k].start_line for k in ks]} for cell_id, ks in duplicates.items()],
        path=py_path,
    )


def fresh_cell_id(taken: set[str]) -> str:
    """A random 8-hex-digit id not in ``taken`` (added to it)."""
    while True:
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            taken.add(candidate)
            return candidate


def renew_duplicate_ids(cells: list[Any], claims: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """Give each cell that repeats an earlier cell's ``id`` a fresh one, in place (nbformat's repair).

    ``claims``: cell indexes that keep their id whatever comes first (a
    cell whose ``.py`` marker names that id). Only ``id`` is repaired
    (``metadata.id`` is the user's).

    Returns:
        One ``{cell_index, id, new_id}`` per cell that got a fresh id.

    Example:
        >>> cells = [{"id": "a"}, {"id": "a"}, {"id": "b"}]
        >>> [(r["cell_index"], r["id"]) for r in renew_duplicate_ids(cells)], cells[1]["id"] != "a"
        ([(1, 'a')], True)
    """
    claims = claims or {}
    ids = [cell.get("id") if isinstance(cell, dict) and isinstance(cell.get("id"), str) else None for cell in cells]
    kept = {i: cell_id for i, cell_id in claims.items() if i < len(ids) and ids[i] == cell_id}
    owners = {cell_id: i for i, cell_id in kept.items()}
    taken = {cell_id for cell_id in ids if cell_id is not None}
    renewed = []
    for i, cell_id in enumerate(ids):
        if cell_id is None:
            continue
        owner = owners.setdefault(cell_id, i)
        if owner == i:
            continue
        new_id = fresh_cell_id(taken)
        cells[i]["id"] = new_id
        renewed.append({"cell_index": i, "id": cell_id, "new_id": new_id})
    return renewed
