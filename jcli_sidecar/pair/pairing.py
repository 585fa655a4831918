"""A py:percent pair: its two files, whether a path or a text is one, its notebook's write lock, and its sync.

A ``.py`` with at least one ``# %%`` marker is a py:percent file
(:func:`is_percent`: the one rule, for a text; :func:`is_percent_file`, for a
file); its pair is the ``.ipynb`` with the same stem (:func:`pair_paths`,
:func:`paired_notebook_path`, :func:`paired_py_path`). The file is read and
written by the one codec, :mod:`jcli_sidecar.pair.percent` (jupytext's rules;
its names are re-exported here).

:class:`Pair` holds the two paths and is the one way to write the notebook
from the ``.py``. :meth:`Pair.sync` is the whole sequence: take the
notebook's write-back lock (:func:`notebook_write_lock`, the lock every
write of a notebook takes, a run's write-backs and ``convert`` included),
read the notebook, plan the sync (:mod:`jcli_sidecar.pair.pairsync`), check
that it is meant (:mod:`jcli_sidecar.pair.pairguard`), apply it, record the
agreement, and write the notebook when it changed. A caller that must look
at the notebook under that same lock first (the pair-drift guard, which may
merge instead) holds :meth:`Pair.write_lock` and syncs through the
:class:`LockedPair` it yields; :func:`sync_cells` is the same sequence in
memory, for a notebook that is not the file on disk.

A ``.py`` cell index maps to a notebook cell by the ``id="..."`` on its
marker (matching the cell's id, or the ``metadata.id`` jupytext keeps it
in; an id several cells carry, on either side, maps nothing:
:mod:`jcli_sidecar.pair.cell_ids`), else by a unique exact match of cell
type and source, else the mapping is refused
(:class:`CellMappingUnreliable`). Nothing here guesses.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from collections import namedtuple

from ..base import (
    CellMappingUnreliable,
    CellNotFound,
    JcliError,
    NotebookChanged,
    OutputDataInvalid,
    OutputSaveFailed,
    UsageError,
    os_error,
)
from ..ipynb import join_text
from .percent import PercentCell, normalize_source, parse_percent
from .percent_write import write_percent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from .pairsync import SyncPlan

    #: A step between apply and record: changes the synced notebook in place (``convert``'s output policy).
    Adjust = Callable[[SyncPlan, dict[str, Any]], None]
    #: The kernel a new notebook records: a kernelspec name, the kernelspec itself, or None.
    Kernel = str | dict[str, Any] | None

__all__ = [
    "LockedPair",
    "Pair",
    "PairSync",
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
    "sync_cells",
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
    from ..base import read_regular

    try:
        raw, _ = read_regular(path, limit)
    except (OSError, ValueError):  # not a readable regular file within the limit: not py:percent (documented)
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
    from ..base import ensure_runtime_dir, notebook_lock

    try:
        held = notebook_lock(ensure_runtime_dir(create=True), notebook)
        held.__enter__()
    except JcliError as err:
        if executed is not None:
            err.details.setdefault("executed", executed)
        raise
    except OSError as exc:
        raise os_error(exc, "write-lock", notebook, **_said(executed)) from None
    try:
        yield
    finally:
        held.__exit__(None, None, None)


def _said(executed: bool | None) -> dict[str, Any]:
    return {} if executed is None else {"executed": executed}


class PairSync:
    """What a sync made of the notebook.

    Attributes:
        plan: how the ``.py``'s cells mapped onto the notebook's (:class:`jcli_sidecar.pair.pairsync.SyncPlan`).
        notebook: the notebook in line with the ``.py``, the agreement recorded.
        py_to_nb: per ``.py`` cell, its index in ``notebook``.
        report: the counts of kept, edited, added and removed cells.
        written: whether ``notebook`` was written (only a locked sync writes, and only a change).
    """

    __slots__ = ("plan", "notebook", "py_to_nb", "report", "written")

    def __init__(self, plan: SyncPlan, notebook: dict[str, Any], py_to_nb: list[int], report: dict[str, int]) -> None:
        self.plan = plan
        self.notebook = notebook
        self.py_to_nb = py_to_nb
        self.report = report
        self.written = False


def sync_cells(
    py_cells: list[PercentCell],
    current: dict[str, Any] | None,
    *,
    kernel_name: Kernel = None,
    check: Callable[[SyncPlan], None] | None = None,
    adjust: Adjust | None = None,
    py_path: str = "the .py",
) -> PairSync:
    """The sync in memory: plan, ``check`` the plan, apply it, ``adjust`` the result, record the agreement.

    Nothing is read or written; ``current`` (None: no notebook yet) is not
    changed. A new notebook gets ``kernel_name``'s kernelspec (a name, or the
    kernelspec itself). Cells get one id each (a repeated id in ``current`` is
    renewed, ``PairSync.plan.renewed``).

    Raises:
        CellIdDuplicate: the ``.py``'s markers repeat an id (``py_path`` names it); nothing is planned.

    Example:
        >>> done = sync_cells([PercentCell("code", "x = 1")], None)
        >>> done.py_to_nb, done.report["added"], "pair" in done.notebook["metadata"]["jcli"]
        ([0], 1, True)
    """
    from .cell_ids import check_py_ids
    from .pairguard import record_agreement
    from .pairsync import apply_plan, plan_sync

    check_py_ids(py_cells, py_path)
    plan = plan_sync(py_cells, current, kernel_name)
    if check is not None:
        check(plan)
    synced, py_to_nb, report = apply_plan(plan)
    if adjust is not None:
        adjust(plan, synced)
    return PairSync(plan, record_agreement(synced, py_cells), py_to_nb, report)


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

    @contextlib.contextmanager
    def write_lock(self, *, executed: bool | None = None) -> Iterator[LockedPair]:
        """Hold the notebook's write-back lock (:func:`notebook_write_lock`); the :class:`LockedPair` may write it."""
        with notebook_write_lock(self.notebook, executed=executed):
            yield LockedPair(self, executed)

    def sync(
        self,
        py_cells: list[PercentCell],
        *,
        kernel_name: Kernel = None,
        check: bool = True,
        executed: bool | None = None,
        read: Callable[[str], dict[str, Any] | None] | None = None,
        adjust: Adjust | None = None,
        heads_only: bool = False,
    ) -> PairSync:
        """Bring the notebook in line with ``py_cells`` under its lock: read, plan, check, apply, record, write.

        Args:
            py_cells: the ``.py``'s cells (the ``.py`` wins for inputs).
            kernel_name: the kernelspec (or its name) of a notebook that does not exist yet.
            check: refuse a sync that is not clearly meant (``PAIR_CONFLICT``,
                :func:`jcli_sidecar.pair.pairguard.check_sync`); False lets the ``.py`` win.
            executed: carried by the coded errors (see :func:`notebook_write_lock`).
            read: how the notebook is read under the lock (None when there is
                none); default :meth:`LockedPair.read`.
            adjust: a change to the synced notebook before the agreement is recorded.
            heads_only: the caller needs the cells without their outputs: when the
                sync changes nothing, the notebook is read through its offset
                index only (outputs read as ``[]``) and never whole.

        Raises:
            CellIdDuplicate: the ``.py``'s markers repeat an id; nothing is read or written.
            PairConflict: the sync is not clearly meant; nothing is written.
            OutputSaveFailed, RuntimeDirUnsafe: the lock cannot be taken or the notebook written.
            FileNotFound, NotebookReadFailed, UsageError: the notebook cannot be read.
        """
        from .cell_ids import check_py_ids

        check_py_ids(py_cells, self.py)  # before the lock: a .py that repeats an id is refused as it is
        with self.write_lock(executed=executed) as held:
            if heads_only and read is None and adjust is None:
                unchanged = held.unchanged(py_cells, kernel_name)
                if unchanged is not None:
                    return unchanged
            current = held.read() if read is None else read(self.notebook)
            return held.sync(py_cells, current, kernel_name=kernel_name, check=check, adjust=adjust)


class LockedPair:
    """A pair whose notebook's write-back lock is held (:meth:`Pair.write_lock`): the only way its notebook is synced or written."""

    __slots__ = ("pair", "executed", "key")

    def __init__(self, pair: Pair, executed: bool | None) -> None:
        self.pair = pair
        self.executed = executed
        #: The ``stat`` key of the notebook :meth:`read` read: only that file is replaced by :meth:`write`.
        self.key: tuple[int, int, int, int, int] | None = None

    def read(self) -> dict[str, Any] | None:
        """The notebook, read whole (numbers exact, as a rewrite needs them); None when there is none.

        Raises:
            FileNotFound, NotebookReadFailed, UsageError: it cannot be read.
        """
        from ..base import file_key
        from ..ipynb import read_for_update

        path = self.pair.notebook
        if not os.path.exists(path):
            return None
        before = file_key(os.stat(path))
        nb = read_for_update(path)
        self.key = before  # changed during the read: the write finds it changed
        return nb

    def unchanged(self, py_cells: list[PercentCell], kernel_name: Kernel = None) -> PairSync | None:
        """The sync when it would change nothing, seen through the notebook's offset index (outputs read as ``[]``); else None."""
        from ..ipynb import notebook_heads

        heads = notebook_heads(self.pair.notebook) if os.path.exists(self.pair.notebook) else None
        if heads is None:
            return None
        done = sync_cells(py_cells, heads, kernel_name=kernel_name, py_path=self.pair.py)
        return done if not done.plan.changes_anything() and done.notebook == heads else None

    def sync(
        self,
        py_cells: list[PercentCell],
        current: dict[str, Any] | None,
        *,
        kernel_name: Kernel = None,
        check: bool = True,
        adjust: Adjust | None = None,
    ) -> PairSync:
        """Sync ``current`` (the notebook as read under this lock) with ``py_cells`` and write it when it changed.

        Raises:
            CellIdDuplicate: the ``.py``'s markers repeat an id; nothing is written.
            PairConflict: ``check`` and the sync is not clearly meant; nothing is written.
            OutputSaveFailed: the notebook cannot be written.
        """
        done = sync_cells(
            py_cells, current, kernel_name=kernel_name, check=self._check if check else None, adjust=adjust, py_path=self.pair.py
        )
        if current is None or done.notebook != current:
            self.write(done.notebook)
            done.written = True
        return done

    def _check(self, plan: SyncPlan) -> None:
        from .pairguard import check_sync

        check_sync(plan, os.path.realpath(self.pair.py), self.pair.notebook)

    def write(self, nb: dict[str, Any]) -> None:
        """Replace the notebook with ``nb``, atomically.

        Raises:
            OutputSaveFailed: it cannot be written (with ``executed``, when the lock was taken with it).
        """
        from ..ipynb import write_notebook

        path = self.pair.notebook
        try:
            write_notebook(path, nb, expect=self.key, stall="pair-sync:swap")
        except NotebookChanged as err:
            err.details.update(_said(self.executed))
            raise
        except OSError as exc:
            raise os_error(exc, "write", path, **_said(self.executed)) from None
        except (ValueError, RecursionError) as exc:  # something in the notebook the writer cannot write
            after = "; nothing was run" if self.executed is False else ""
            raise OutputSaveFailed(f"cannot write {path} ({type(exc).__name__}){after}", **_said(self.executed)) from None


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
    from .cell_ids import ambiguous_ids, duplicate_ids

    wanted = py_cells[py_index]
    nb_cells = [c if isinstance(c, dict) else {} for c in nb_cells]
    ambiguous = ""
    if wanted.cell_id and wanted.cell_id in duplicate_ids(py_cells):
        copies = duplicate_ids(py_cells)[wanted.cell_id]
        ambiguous = (
            f'; its marker\'s id="{wanted.cell_id}" is repeated on .py cells {", ".join(map(str, copies))} '
            f"(lines {', '.join(str(py_cells[k].start_line) for k in copies)}), so it maps nothing: "
            "delete the copied id from the marker"
        )
    elif wanted.cell_id and wanted.cell_id in ambiguous_ids(nb_cells):
        ambiguous = (
            f'; its marker\'s id="{wanted.cell_id}" is carried by several notebook cells, so it maps nothing '
            "(running the file gives the notebook's later copies fresh ids)"
        )
    elif wanted.cell_id:
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
    why = ambiguous or ", and its marker carries no matching id"
    raise CellMappingUnreliable(
        f"cell {py_index} of {py_path} cannot be mapped reliably: {reason} the same type and "
        f"source{why}. Run the file (or the cell) to sync the notebook, or read the .ipynb by its own cell index.",
        candidates=matches,
        **({"reason": "duplicate_id", "cell_id": wanted.cell_id} if ambiguous else {}),
    )
