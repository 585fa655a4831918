"""py:percent files and their paired notebooks.

A ``.py`` with at least one ``# %%`` marker is a py:percent file; its pair is
the ``.ipynb`` with the same stem. Markdown and raw cells count as cells,
non-empty code before the first marker is a cell, and a leading
jupytext-style ``# ---`` header is metadata, not a cell.

A ``.py`` cell index maps to a notebook cell by the ``id="..."`` on its
marker, else by a unique exact match of cell type and source, else the
mapping is refused (:class:`CellMappingUnreliable`). Nothing here guesses.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

from .errors import CellMappingUnreliable, CellNotFound, OutputDataInvalid, UsageError
from .notebook import join_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "PercentCell",
    "is_percent",
    "map_cell",
    "normalize_source",
    "paired_notebook_path",
    "parse_percent",
    "write_percent",
]

_MARKER = re.compile(r"^#[ \t]*%%(?=[ \t]|$)(?P<rest>.*)$")
_CELL_TYPE = re.compile(r"\[(?P<kind>markdown|md|raw)\]")
_CELL_ID = re.compile(r"""(?:^|[ \t])id=(?P<q>["'])(?P<id>[^"']*)(?P=q)""")
_HEADER_FENCE = "# ---"


class PercentCell(namedtuple("PercentCell", "cell_type source cell_id start_line end_line", defaults=(None, 1, 1))):
    """One cell of a py:percent file: ``(cell_type, source, cell_id, start_line, end_line)``.

    ``source`` is normalised (see :func:`normalize_source`); markdown and raw
    sources are uncommented. ``start_line`` is the 1-based line of the
    marker (or of the first line, for code before any marker) and
    ``end_line`` the last non-blank line of the cell.
    """

    __slots__ = ()


def is_percent(text: str) -> bool:
    """True when ``text`` holds at least one ``# %%`` cell marker."""
    return any(_MARKER.match(line) for line in text.splitlines())


def normalize_source(source: str) -> str:
    """Drop blank lines at both ends; the rest is compared exactly.

    Example:
        >>> normalize_source("\\n\\nx = 1\\n\\n")
        'x = 1'
    """
    lines = source.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _uncomment(line: str) -> str:
    if line.startswith("# "):
        return line[2:]
    if line.startswith("#"):
        return line[1:]
    return line


def _skip_header(lines: list[str]) -> int:
    if not lines or lines[0].rstrip() != _HEADER_FENCE:
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() == _HEADER_FENCE:
            return i + 1
        if not lines[i].startswith("#"):
            return 0
    return 0


def parse_percent(text: str) -> list[PercentCell]:
    """Split py:percent text into cells.

    Example:
        >>> cells = parse_percent('# %% id="a1"\\nx = 1\\n\\n# %% [markdown]\\n# Hi\\n')
        >>> [(c.cell_type, c.source, c.cell_id) for c in cells]
        [('code', 'x = 1', 'a1'), ('markdown', 'Hi', None)]
    """
    lines = text.replace("\r\n", "\n").split("\n")
    start = _skip_header(lines)
    cells: list[PercentCell] = []
    body: list[str] = []
    kind, cell_id, first, last = "code", None, start + 1, start + 1
    seen_marker = False

    def close() -> None:
        source = normalize_source("\n".join(body))
        if seen_marker or source:
            cells.append(PercentCell(kind, source, cell_id, first, max(first, last)))

    for number, line in enumerate(lines[start:], start=start + 1):
        match = _MARKER.match(line)
        if match is None:
            body.append(line if kind == "code" else _uncomment(line))
            if line.strip():
                last = number
            continue
        close()
        rest = match.group("rest")
        type_match = _CELL_TYPE.search(rest)
        kind = "code" if type_match is None else ("raw" if type_match["kind"] == "raw" else "markdown")
        id_match = _CELL_ID.search(rest)
        cell_id = id_match["id"] if id_match else None
        first, last, body, seen_marker = number, number, [], True
    close()
    return cells


def write_percent(cells: list[dict[str, Any]] | list[PercentCell] | list[Any]) -> str:
    """Write cells as py:percent text that :func:`parse_percent` reads back.

    Each cell is a :class:`PercentCell` or a notebook-style dict with
    ``cell_type``, ``source`` and an optional ``id``.

    Raises:
        UsageError: a source line that would read back as a cell marker.

    Example:
        >>> print(write_percent([PercentCell("markdown", "# Title", "m1")]), end="")
        # %% [markdown] id="m1"
        # # Title
    """
    chunks: list[str] = []
    for index, cell in enumerate(cells):
        if isinstance(cell, PercentCell):
            kind, source, cell_id = cell.cell_type, cell.source, cell.cell_id
        else:
            kind = cell.get("cell_type", "code")
            source = join_text(cell.get("source", ""), f"cell {index} source")
            cell_id = cell.get("id")
        source = normalize_source(source)
        marker = "# %%" + ("" if kind == "code" else f" [{kind}]")
        if cell_id:
            if '"' in cell_id or "'" in cell_id:
                raise UsageError(f"cell {index} id holds a quote and cannot be written as py:percent")
            marker += f' id="{cell_id}"'
        body = source.split("\n") if source else []
        if kind != "code":
            body = [("# " + line) if line else "#" for line in body]
        for line in body:
            if _MARKER.match(line):
                raise UsageError(f"cell {index} has a line that reads as a '# %%' marker; it cannot be written as py:percent")
        chunks.append("\n".join([marker, *body]) + "\n")
    return "\n".join(chunks)


def paired_notebook_path(py_path: str) -> str:
    """The ``.ipynb`` beside a ``.py`` with the same stem."""
    return os.path.splitext(py_path)[0] + ".ipynb"


def map_cell(py_cells: list[PercentCell], py_index: int, nb_cells: list[Any], py_path: str) -> tuple[int, str]:
    """Find the notebook cell for ``.py`` cell ``py_index``.

    ``nb_cells`` are the notebook's cells; only ``cell_type``, ``id`` and
    ``source`` are looked at.

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
            if cell.get("id") == wanted.cell_id:
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
