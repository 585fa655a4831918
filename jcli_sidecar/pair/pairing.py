"""py:percent files and their paired notebooks.

A ``.py`` with at least one ``# %%`` marker is a py:percent file; its pair is
the ``.ipynb`` with the same stem. The file is read and written by the one
codec, :mod:`jcli_sidecar.pair.percent` (jupytext's rules; its names are
re-exported here).

A ``.py`` cell index maps to a notebook cell by the ``id="..."`` on its
marker (matching the cell's id, or the ``metadata.id`` jupytext keeps it
in), else by a unique exact match of cell type and source, else the mapping
is refused (:class:`CellMappingUnreliable`). Nothing here guesses.
"""

from __future__ import annotations

import os
import posixpath

from ..base.errors import CellMappingUnreliable, CellNotFound, OutputDataInvalid, UsageError
from ..ipynb.multiline import join_text
from .percent import PercentCell, is_percent, normalize_source, parse_percent, write_percent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "PercentCell",
    "carries_id",
    "is_percent",
    "map_cell",
    "normalize_source",
    "pair_paths",
    "paired_notebook_path",
    "paired_py_path",
    "parse_percent",
    "write_percent",
]


def paired_notebook_path(py_path: str) -> str:
    """The ``.ipynb`` with the same stem as ``py_path``: the one rule for a pair's notebook."""
    return os.path.splitext(py_path)[0] + ".ipynb"


def paired_py_path(notebook_path: str) -> str:
    """The ``.py`` with the same stem as ``notebook_path``: the one rule for a pair's script."""
    return os.path.splitext(notebook_path)[0] + ".py"


def pair_paths(path: str, *, posix: bool = False) -> tuple[str, str] | None:
    """``(py, ipynb)`` of the pair a ``.py`` or an ``.ipynb`` path names (same stem), else None.

    ``posix``: the path is git's (``/`` always), not the platform's.

    Example:
        >>> pair_paths("a/b.ipynb"), pair_paths("a/b.py"), pair_paths("a/b.txt")
        (('a/b.py', 'a/b.ipynb'), ('a/b.py', 'a/b.ipynb'), None)
    """
    stem, ext = (posixpath if posix else os.path).splitext(path)
    return (stem + ".py", stem + ".ipynb") if ext in (".py", ".ipynb") else None


def carries_id(cell: Any, cell_id: str) -> bool:
    """Does notebook ``cell`` carry ``cell_id``, as its id or (as jupytext writes it) as ``metadata.id``?"""
    if cell.get("id") == cell_id:
        return True
    metadata = cell.get("metadata")
    return isinstance(metadata, dict) and metadata.get("id") == cell_id


def map_cell(py_cells: list[PercentCell], py_index: int, nb_cells: list[Any], py_path: str) -> tuple[int, str]:
    """Find the notebook cell for ``.py`` cell ``py_index``.

    ``nb_cells`` are the notebook's cells; only ``cell_type``, ``id``,
    ``metadata.id`` and ``source`` are looked at.

    Returns:
        ``(notebook_cell_index, mapping)``, where mapping is ``"id"`` or
        ``"content"``.

    Raises:
        CellNotFound: ``py_index`` is outside the ``.py`` file.
        CellMappingUnreliable: no id match and no unique content match.
    """
    if not isinstance(py_index, int) or isinstance(py_index, bool) or py_index < 0:
        raise UsageError(f"cell index must be a non-negative integer, got {py_index!r}")
    if py_index >= len(py_cells):
        raise CellNotFound(
            f"cell {py_index} is outside {py_path} ({len(py_cells)} cells)",
            cell_count=len(py_cells),
        )
    wanted = py_cells[py_index]
    nb_cells = [c if isinstance(c, dict) else {} for c in nb_cells]
    if wanted.cell_id:
        for i, cell in enumerate(nb_cells):
            if carries_id(cell, wanted.cell_id):
                return i, "id"
    matches = []
    for i, cell in enumerate(nb_cells):
        if cell.get("cell_type") != wanted.cell_type:
            continue
        try:
            source = join_text(cell.get("source", ""), "source")
        except OutputDataInvalid:
            continue
        if normalize_source(source) == wanted.source:
            matches.append(i)
    if len(matches) == 1:
        return matches[0], "content"
    reason = "no notebook cell has" if not matches else f"{len(matches)} notebook cells have"
    raise CellMappingUnreliable(
        f"cell {py_index} of {py_path} cannot be mapped reliably: {reason} the same type and "
        "source, and its marker carries no matching id. Run the file (or the cell) to sync "
        "the notebook, or read the .ipynb by its own cell index.",
        candidates=matches,
    )
