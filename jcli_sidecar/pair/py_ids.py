"""``j-cli convert assign-ids x.py``: give a py:percent file's cells ids on their markers.

Each cell whose marker has no ``id="…"`` gets a fresh one, appended to its
marker line (``# %% [markdown]`` becomes ``# %% [markdown] id="…"``); code
before the first marker gets a marker of its own. Nothing else in the file
changes. The result is read back with the one py:percent codec before it is
written: when the cells it reads are not the same cells with the new ids (a
marker whose options are a JSON object, ``# In[3]:``, ``# <codecell>``), the
file is left alone with a usage error naming the cell. A ``.py`` paired with
a notebook keeps working: the pair sync matches a cell whose id the notebook
does not know by its content.
"""

from __future__ import annotations

import os
import re

from ..base import UsageError, os_error

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["assign_py_ids"]

_PLAIN_MARKER = re.compile(r"^\s*#\s*%%(?:%*)(?:\s.*)?$")


def assign_py_ids(py_path: str) -> dict[str, Any]:
    """Write a fresh id on the marker of each cell of ``py_path`` that has none; atomically, only if needed.

    Raises:
        NotebookReadFailed: not a py:percent file, or it cannot be read.
        CellIdDuplicate: its markers repeat an id.
        UsageError: a marker that cannot carry an appended id.
        OutputSaveFailed: it cannot be written.
    """
    from ..base import write_text_atomic
    from .cell_ids import check_py_ids, fresh_cell_id
    from .convert import _read_py
    from .percent import read_percent

    py_path = os.path.abspath(py_path)
    doc, text = _read_py(py_path)
    cells = doc.cells
    check_py_ids(cells, py_path)
    lines = text.split("\n")
    taken = {c.cell_id for c in cells if c.cell_id}
    given: list[tuple[int, str]] = []
    inserts: list[tuple[int, str]] = []
    for index, cell in enumerate(cells):
        if cell.cell_id:
            continue
        new_id = fresh_cell_id(taken)
        given.append((index, new_id))
        row = cell.start_line - 1
        line = lines[row] if row < len(lines) else ""
        if _PLAIN_MARKER.match(line) and not line.rstrip().endswith("}"):
            lines[row] = f'{line.rstrip()} id="{new_id}"'
        elif index == 0 and not line.lstrip().startswith("#"):
            inserts.append((row, f'# %% id="{new_id}"'))
        else:
            raise UsageError(
                f"{py_path}:{cell.start_line}: this marker cannot carry an id (write it as '# %% id=\"{new_id}\"')",
                path=py_path,
            )
    for row, marker in reversed(inserts):
        lines.insert(row, marker)
    new_text = "\n".join(lines)
    if given:
        check = read_percent(new_text, py_path).cells
        expected = {index: new_id for index, new_id in given}
        same = len(check) == len(cells) and all(
            (a.cell_type, a.source, a.cell_id or expected.get(k)) == (b.cell_type, b.source, b.cell_id)
            for k, (a, b) in enumerate(zip(cells, check, strict=False))
        )
        if not same:
            raise UsageError(f"{py_path}: adding ids would change how its cells read; write them on the markers by hand", path=py_path)
        try:
            write_text_atomic(py_path, new_text)
        except OSError as exc:
            raise os_error(exc, "write", py_path) from None
    return {
        "status": "ok",
        "path": py_path,
        "cells": len(cells),
        "ids_assigned": len(given),
        "assigned_cells": [index for index, _ in given],
        "written": bool(given),
    }
