"""Which notebook cell a read means: ``(path, cell_index)`` pinned to one cell.

An ``.ipynb`` is read directly; a py:percent ``.py`` is mapped onto its
paired notebook's cell (by id or by content, never by position alone).
Reads only; writes nothing.
"""

from __future__ import annotations

import os

from ..base import FileNotFound, NotebookReadFailed, UsageError, check_file_name, os_error
from ..ipynb import NotebookFile, cell_at, read_text_file
from ..pair import is_percent, map_cell, paired_notebook_path, parse_percent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Loader = Callable[[str], NotebookFile]

__all__ = ["ResolvedCell", "resolve_cell"]


class ResolvedCell:
    """A requested ``(path, cell_index)`` pinned to one notebook cell."""

    __slots__ = (
        "notebook_path",
        "cell_index",
        "cell",
        "requested_path",
        "requested_cell_index",
        "mapping",
        "py_lines",
        "notebook",
    )

    def __init__(
        self,
        notebook_path: str,
        cell_index: int,
        cell: dict[str, Any],
        requested_path: str,
        requested_cell_index: int,
        mapping: str,
        py_lines: tuple[int, int] | None = None,
        notebook: NotebookFile | None = None,
    ) -> None:
        self.notebook_path = notebook_path
        self.cell_index = cell_index
        self.cell = cell
        self.requested_path = requested_path
        self.requested_cell_index = requested_cell_index
        self.mapping = mapping
        self.py_lines = py_lines
        self.notebook = notebook

    def source(self) -> dict[str, Any]:
        """The ``source`` block of every envelope."""
        cell_id = self.cell.get("id")
        count = self.cell.get("execution_count")
        out: dict[str, Any] = {
            "kind": "notebook",
            "path": self.notebook_path,
            "cell_index": self.cell_index,
            "requested_path": self.requested_path,
            "requested_cell_index": self.requested_cell_index,
            "mapping": self.mapping,
            "cell_id": cell_id if isinstance(cell_id, str) else None,
            "cell_type": self.cell["cell_type"],
        }
        if self.py_lines is not None:
            out["source_start_line"], out["source_end_line"] = self.py_lines
        out["execution_count"] = count if isinstance(count, int) else None
        if self.notebook is not None and self.notebook.live:  # read from the collaboration room's shared document
            out["live"] = True
        return out


def resolve_cell(path: str | os.PathLike[str], cell_index: int, load: Loader | None = None) -> ResolvedCell:
    """Pin ``(path, cell_index)`` to a notebook cell.

    An ``.ipynb`` (or any non-``.py`` file) is read as a notebook and the
    index is used as is (mapping ``"direct"``). A py:percent ``.py`` is mapped
    onto its paired ``.ipynb`` (mapping ``"id"`` or ``"content"``).
    ``path`` in the result is the notebook's real path. ``load`` opens a
    notebook by real path (default :meth:`NotebookFile.load`; the sidecar
    passes its cache).

    Raises:
        FileNotFound, NotebookReadFailed, CellNotFound,
        CellMappingUnreliable, UsageError (also for a path no file can
        have: a NUL byte, a lone surrogate).
    """
    requested = check_file_name(os.fspath(path), "file_path")
    load = load or NotebookFile.load
    if requested.endswith(".py"):
        return _resolve_percent(requested, cell_index, load)
    nb_path = _real(requested)
    if not isinstance(cell_index, int) or isinstance(cell_index, bool) or cell_index < 0:
        raise UsageError(f"cell index must be a non-negative integer, got {cell_index!r}")
    nb = load(nb_path)
    cell = cell_at(nb, cell_index)
    return ResolvedCell(nb_path, cell_index, cell, requested, cell_index, "direct", None, nb)


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except OSError as exc:  # e.g. a relative path while the cwd has been deleted
        raise os_error(exc, "resolve", path, path=path) from None


def _resolve_percent(requested: str, cell_index: int, load: Loader) -> ResolvedCell:
    py_path = _real(requested)
    text = read_text_file(py_path)
    if not is_percent(text):
        raise NotebookReadFailed(
            f"{py_path}: a plain script (no '# %%' cell markers), so it has no paired notebook",
            path=py_path,
        )
    nb_path = paired_notebook_path(py_path)
    try:
        nb = load(nb_path)
    except FileNotFound:
        raise FileNotFound(
            f"{py_path}: its paired notebook {nb_path} does not exist; run the file with j-cli exec to create it",
            path=nb_path,
        ) from None
    py_cells = parse_percent(text)
    heads = [nb.cell_head(i) for i in range(nb.cell_count)]
    nb_index, mapping = map_cell(py_cells, cell_index, heads, py_path)
    cell = cell_at(nb, nb_index)
    lines = (py_cells[cell_index].start_line, py_cells[cell_index].end_line)
    return ResolvedCell(nb_path, nb_index, cell, requested, cell_index, mapping, lines, nb)
