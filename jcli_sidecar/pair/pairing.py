"""A py:percent pair: its two files, whether a path or a text is one, and its notebook's write lock.

A ``.py`` with at least one ``# %%`` marker is a py:percent file
(:func:`is_percent`: the one rule, for a text; :func:`is_percent_file`, for a
file); its pair is the ``.ipynb`` with the same stem (:class:`Pair`,
:func:`pair_paths`, :func:`paired_notebook_path`, :func:`paired_py_path`).
The file is read and written by the one codec, :mod:`jcli_sidecar.pair.percent`
(jupytext's rules; its names are re-exported here). Every write of a
notebook's file, a pair's sync, a run's write-backs and ``convert`` alike,
holds the notebook's write-back lock, :func:`notebook_write_lock`.

A ``.py`` cell index maps to a notebook cell by the ``id="..."`` on its
marker (matching the cell's id, or the ``metadata.id`` jupytext keeps it
in), else by a unique exact match of cell type and source, else the mapping
is refused (:class:`CellMappingUnreliable`). Nothing here guesses.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from collections import namedtuple

from ..base.errors import CellMappingUnreliable, CellNotFound, JcliError, OutputDataInvalid, OutputSaveFailed, UsageError
from ..ipynb.multiline import join_text
from .percent import PercentCell, normalize_source, parse_percent, write_percent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = [
    "Pair",
    "PercentCell",
    "carries_id",
    "is_percent",
    "is_percent_file",
    "map_cell",
    "normalize_source",
    "notebook_write_lock",
    "pair_paths",
    "paired_notebook_path",
    "paired_py_path",
    "parse_percent",
    "percent_cells",
    "write_percent",
]

_DOUBLE_PERCENT = re.compile(r"^\s*#\s*%%(?:\s|$)")


def is_percent(text: str) -> bool:
    """True when ``text`` holds at least one ``# %%`` cell marker: the one rule for "is this ``.py`` py:percent".

    Example:
        >>> is_percent("x = 1\\n# %% [markdown]\\n"), is_percent("# In[1]:\\nx = 1\\n")
        (True, False)
    """
    return any(_DOUBLE_PERCENT.match(line) for line in text.splitlines())


def is_percent_file(path: str, limit: int | None = None) -> bool:
    """Is the file ``path`` py:percent (:func:`is_percent`, whatever its name)? False when it cannot be read.

    The file is read without ever blocking (a FIFO or a device is no) and
    only when it holds at most ``limit`` bytes (default: the read limit); a
    larger one is no as well.
    """
    from ..base.readfile import read_regular

    try:
        raw, _ = read_regular(path, limit)
    except (OSError, ValueError):
        return False
    return is_percent(raw.decode("utf-8", "replace"))


def percent_cells(text: str) -> list[PercentCell] | None:
    """The cells of py:percent ``text``; None for a plain script (no ``# %%`` marker).

    Example:
        >>> [c.source for c in percent_cells("# %%\\nx = 1\\n")], percent_cells("x = 1\\n")
        (['x = 1'], None)
    """
    return parse_percent(text) if is_percent(text) else None


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


@contextlib.contextmanager
def notebook_write_lock(notebook: str, *, executed: bool | None = None) -> Iterator[None]:
    """Hold the write-back lock of ``notebook`` (blocking: a second taker waits until it is released).

    The one lock every write of a notebook's file takes: a pair's sync, a
    run's write-backs, ``convert``. It lives in the runtime dir, named by the
    notebook's real path (:func:`jcli_sidecar.base.locks.notebook_lock`), so
    every name of the file takes the same lock and nothing is created beside it.

    ``executed``: when given, the coded errors say so (whether a run's code ran).

    Raises:
        RuntimeDirUnsafe: the runtime dir is unsafe.
        OutputSaveFailed: the lock cannot be created or taken.
    """
    from ..base.locks import notebook_lock
    from ..base.runtime import ensure_runtime_dir

    try:
        held = notebook_lock(ensure_runtime_dir(create=True), notebook)
        held.__enter__()
    except JcliError as err:
        if executed is not None:
            err.details.setdefault("executed", executed)
        raise
    except OSError as exc:
        raise OutputSaveFailed(f"cannot take the write-back lock of {notebook}: {exc.strerror or exc}", **_said(executed)) from None
    try:
        yield
    finally:
        held.__exit__(None, None, None)


def _said(executed: bool | None) -> dict[str, bool]:
    return {} if executed is None else {"executed": executed}


class Pair(namedtuple("Pair", "py notebook")):
    """A py:percent ``.py`` and the notebook it syncs into: ``(py, notebook)``.

    :meth:`of` and :meth:`of_py` give the pair a name implies (the same
    stem), :meth:`on_disk` the pair a path is part of on disk; ``convert``
    pairs a ``.py`` with whichever notebook it is told to write.

    Example:
        >>> Pair.of("a/b.ipynb"), Pair.of("a/b.txt")
        (Pair(py='a/b.py', notebook='a/b.ipynb'), None)
    """

    __slots__ = ()

    @classmethod
    def of(cls, path: str, *, posix: bool = False) -> Pair | None:
        """The pair a ``.py`` or an ``.ipynb`` path names (:func:`pair_paths`), else None. No file is read."""
        found = pair_paths(path, posix=posix)
        return None if found is None else cls(*found)

    @classmethod
    def of_py(cls, py_path: str) -> Pair:
        """``py_path`` and the notebook beside it (:func:`paired_notebook_path`)."""
        return cls(py_path, paired_notebook_path(py_path))

    @classmethod
    def on_disk(cls, path: str, limit: int | None = None) -> Pair | None:
        """The pair ``path`` (a ``.py`` or an ``.ipynb``) is part of, when it is one on disk; else None.

        On disk: the ``.py`` is py:percent (:func:`is_percent_file`, read up to
        ``limit``) and its notebook is a file beside the real ``.py``. The
        pair's paths are spelt as ``path`` is.
        """
        found = cls.of(path)
        if found is None:
            return None
        real = os.path.realpath(found.py)
        if not os.path.isfile(paired_notebook_path(real)) or not is_percent_file(real, limit):
            return None
        return found


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
