"""``j-cli convert``: a notebook to py:percent and back, and cell ids for a notebook.

All three go through the one py:percent codec (:mod:`jcli_sidecar.pair.percent`)
and the pair sync (:mod:`jcli_sidecar.pair.pairsync`), so a converted file means
what ``exec -f`` and the reads mean.

Files:

- The input is only read (through the capped, never-blocking reader); it is
  never rewritten, and an output that is the input (the same file under any
  name) is refused. ``assign-ids`` is the one command that writes its input,
  by design.
- ``ipynb-to-py`` writes ``OUT`` (default: the notebook's stem + ``.py``)
  and refuses to replace an existing file unless ``force``: a ``.py`` is
  source someone edits.
- ``py-to-ipynb`` writes ``OUT`` (default: the ``.py``'s stem + ``.ipynb``).
  An existing notebook is updated, the ``.py`` winning for cells (matched by
  id, then content, then as edits in place, as ``exec -f`` syncs), and
  refused as ``exec -f`` refuses (``PAIR_CONFLICT``: notebook-side edits,
  cells or outputs the ``.py`` never knew about) unless ``py_wins``; its
  outputs follow ``outputs``: ``clear-edited`` (default) keeps the outputs
  of unchanged cells only, ``preserve`` also keeps those of edited cells
  (which may no longer match their code), ``clear-all`` keeps none.
- Every write is atomic; a notebook is written under its write-back lock
  (:func:`jcli_sidecar.pair.pairing.notebook_write_lock`), ``py-to-ipynb``
  by the one pair sync (:meth:`jcli_sidecar.pair.pairing.Pair.sync`).

Cell ids (nbformat 4.5): a notebook written here always has one valid,
unique id per cell. A marker's ``id`` is used when it is a valid nbformat
id; a missing or invalid id gets a fresh one, and the result counts them.
A ``.py`` whose markers repeat an id is refused (``CELL_ID_DUPLICATE``,
:mod:`jcli_sidecar.pair.cell_ids`); ``ipynb-to-py`` of a notebook whose
cells share an id writes it on the first cell's marker only (the others
are matched by content) and lists them in ``ids_left_off``.
"""

from __future__ import annotations

import os
import re

from ..base import NotebookReadFailed, UsageError, os_error
from .pairing import Pair, notebook_write_lock, paired_notebook_path, paired_py_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .pairsync import SyncPlan

__all__ = ["OUTPUT_POLICIES", "assign_ids", "ipynb_to_py", "py_to_ipynb"]

#: What ``py-to-ipynb`` does with the outputs of an existing notebook.
OUTPUT_POLICIES = ("clear-edited", "preserve", "clear-all")

_VALID_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # either path is missing: not the same file
        return False


def _check_output(source: str, out: str) -> None:
    if _same_file(source, out):
        raise UsageError(f"{out} is the input file; convert never rewrites its input (give another -o)")
    if os.path.isdir(out):
        raise UsageError(f"{out} is a directory; give a file name with -o")


def _read_notebook(path: str) -> dict[str, Any]:
    from ..ipynb import read_for_update

    nb = read_for_update(path)
    if not isinstance(nb.get("cells"), list):
        raise NotebookReadFailed(f"{path}: not a notebook (no cells list)", path=path)
    return nb


def _read_py(path: str) -> tuple[Any, str]:
    from ..ipynb import read_text_file
    from .pairing import is_percent
    from .percent import read_percent

    text = read_text_file(path)
    if not is_percent(text):
        raise NotebookReadFailed(f"{path}: a plain script (no '# %%' cell markers), not a py:percent notebook", path=path)
    return read_percent(text, path), text


def _write(path: str, text: str) -> None:
    from ..base import write_text_atomic

    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise os_error(exc, "write", path) from None


def ipynb_to_py(nb_path: str, out: str | None = None, force: bool = False) -> dict[str, Any]:
    """Write the notebook's cells as py:percent (ids on the markers, magics commented, a header with its kernelspec).

    Raises:
        FileNotFound, NotebookReadFailed: the notebook cannot be read.
        UsageError: ``out`` is the input, exists (without ``force``), or a
            cell cannot be written so that it reads back the same.
        OutputSaveFailed: ``out`` cannot be written.
    """
    from .percent_write import write_percent

    nb_path = os.path.abspath(nb_path)
    out = os.path.abspath(out or paired_py_path(nb_path))
    _check_output(nb_path, out)
    nb = _read_notebook(nb_path)
    replaced = os.path.lexists(out)
    if replaced and not force:
        raise UsageError(f"{out} exists; convert replaces a .py only with --force")
    metadata = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    cells, left_off = _first_ids_only(nb["cells"])
    text = write_percent(cells, metadata)
    _write(out, text)
    with_id = sum(1 for c in cells if isinstance(c, dict) and isinstance(c.get("id"), str))
    return {
        "status": "ok",
        "input": nb_path,
        "output": out,
        "cells": len(cells),
        "cells_with_ids": with_id,
        "ids_left_off": left_off,
        "replaced": replaced,
    }


def _first_ids_only(cells: list[Any]) -> tuple[list[Any], list[int]]:
    """The cells with an id several share left on the first only: a ``.py`` never repeats an id (its markers would be refused)."""
    seen: set[str] = set()
    out, left_off = [], []
    for i, cell in enumerate(cells):
        cell_id = cell.get("id") if isinstance(cell, dict) else None
        if isinstance(cell_id, str) and cell_id in seen:
            cell = {k: v for k, v in cell.items() if k != "id"}
            left_off.append(i)
        elif isinstance(cell_id, str):
            seen.add(cell_id)
        out.append(cell)
    return out, left_off


def _fresh(taken: set[str]) -> str:
    while True:
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            taken.add(candidate)
            return candidate


def _settle_ids(cells: list[dict[str, Any]]) -> dict[str, int]:
    """Give every cell one valid, unique id (in place); count what changed."""
    taken: set[str] = set()
    counts = {"missing": 0, "invalid": 0, "duplicate": 0}
    for cell in cells:
        cell_id = cell.get("id")
        if not isinstance(cell_id, str):
            counts["missing"] += 1
        elif not _VALID_ID.match(cell_id):
            counts["invalid"] += 1
        elif cell_id in taken:
            counts["duplicate"] += 1
        else:
            taken.add(cell_id)
            continue
        cell["id"] = _fresh(taken | {c.get("id") for c in cells if isinstance(c.get("id"), str)})
    return counts


class _Update:
    """What ``py-to-ipynb`` does under the notebook's lock besides the sync: how it reads the notebook, and the policy's outputs.

    After :meth:`adjust`, ``kept`` and ``cleared`` count the code cells whose
    outputs the policy kept or cleared, ``assigned`` the ids given.
    """

    __slots__ = ("doc", "outputs", "existed", "kept", "cleared", "assigned")

    def __init__(self, doc: Any, outputs: str) -> None:
        self.doc = doc
        self.outputs = outputs
        self.existed = False
        self.kept = self.cleared = self.assigned = 0

    def read(self, path: str) -> dict[str, Any] | None:
        """The notebook as it is (None when there is none), marked nbformat 4.5 at least."""
        self.existed = os.path.lexists(path)
        current = _read_notebook(path) if self.existed else None
        if current is not None and (current.get("nbformat") != 4 or current.get("nbformat_minor", 0) < 5):
            current = dict(current, nbformat=4, nbformat_minor=5)
        return current

    def adjust(self, plan: SyncPlan, nb: dict[str, Any]) -> None:
        """The synced notebook's outputs as the policy says, the ``.py`` header's metadata, and one valid id per cell.

        The markers' metadata came with the sync itself (``pairsync.carry_marker_metadata``), as for every sync.
        """
        doc, outputs = self.doc, self.outputs
        for k, cell in enumerate(nb["cells"]):
            if cell.get("cell_type") != "code":
                continue
            old = plan.match[k]
            if outputs == "preserve" and old is not None and k in plan.edited:
                cell["outputs"] = plan.old[old].get("outputs", [])
                cell["execution_count"] = plan.old[old].get("execution_count")
            elif outputs == "clear-all" and (cell.get("outputs") or cell.get("execution_count") is not None):
                cell["outputs"], cell["execution_count"] = [], None
            if cell.get("outputs"):
                self.kept += 1
            elif old is not None and plan.old[old].get("outputs"):
                self.cleared += 1
        given = [doc.cells[k].cell_id if plan.match[k] is None else plan.old[plan.match[k]].get("id") for k in range(len(doc.cells))]
        metadata = dict(nb.get("metadata") or {})
        for key, value in doc.metadata.items():
            if key != "jupytext":
                metadata[key] = value
        nb["metadata"] = metadata
        _settle_ids(nb["cells"])
        self.assigned = sum(1 for cell, came in zip(nb["cells"], given, strict=True) if cell["id"] != came)


def py_to_ipynb(py_path: str, out: str | None = None, outputs: str = "clear-edited", *, py_wins: bool = False) -> dict[str, Any]:
    """Write the ``.py``'s cells as a notebook; an existing notebook keeps what the policy keeps.

    The one pair sync (:meth:`jcli_sidecar.pair.pairing.Pair.sync`), with the
    policy's outputs applied before the agreement is recorded. It refuses
    what ``exec -f`` refuses (:func:`jcli_sidecar.pair.pairguard.check_sync`:
    notebook-side edits, cells or outputs the ``.py`` never knew about)
    unless ``py_wins``.

    Raises:
        CellIdDuplicate: the ``.py``'s markers repeat an id; nothing is written.
        PairConflict: the update would drop notebook-side work (not ``py_wins``); nothing is written.
        FileNotFound, NotebookReadFailed: an input cannot be read (or the
            ``.py`` has no markers).
        UsageError: ``out`` is the input, or ``outputs`` is not a policy.
        OutputSaveFailed: ``out`` cannot be written.
    """
    if outputs not in OUTPUT_POLICIES:
        raise UsageError(f"--outputs must be one of {', '.join(OUTPUT_POLICIES)}, got {outputs!r}")
    py_path = os.path.abspath(py_path)
    out = os.path.abspath(out or paired_notebook_path(py_path))
    _check_output(py_path, out)
    doc, _ = _read_py(py_path)
    update = _Update(doc, outputs)
    done = Pair(py_path, out).sync(doc.cells, check=not py_wins, read=update.read, adjust=update.adjust)
    return {
        "status": "ok",
        "input": py_path,
        "output": out,
        "created": not update.existed,
        "cells": len(done.notebook["cells"]),
        "sync": done.report,
        "outputs_policy": outputs,
        "cells_with_outputs_kept": update.kept,
        "cells_with_outputs_cleared": update.cleared,
        "ids_assigned": update.assigned,
        "ids_renewed": done.plan.renewed,
    }


def assign_ids(nb_path: str) -> dict[str, Any]:
    """Give every cell of the notebook a valid, unique id (nbformat 4.5), in place and atomically.

    Cells without an id, with an id nbformat does not allow, or repeating an
    earlier cell's id get a fresh one; a notebook older than 4.5 is marked
    4.5. A notebook that needs nothing is not written.

    Raises:
        FileNotFound, NotebookReadFailed: the notebook cannot be read.
        OutputSaveFailed: it cannot be written.
    """
    from ..ipynb import write_notebook

    nb_path = os.path.abspath(nb_path)
    if nb_path.endswith(".py"):
        raise UsageError(
            f"{nb_path}: assign-ids gives ids to a notebook's cells; a .py gets its ids from its notebook (convert py-to-ipynb)"
        )
    with notebook_write_lock(nb_path):
        nb = _read_notebook(nb_path)
        cells = [c for c in nb["cells"] if isinstance(c, dict)]
        before = nb.get("nbformat_minor", 0)
        upgraded = nb.get("nbformat") == 4 and isinstance(before, int) and before < 5
        if upgraded:
            nb["nbformat_minor"] = 5
        ids = _settle_ids(cells)
        changed = upgraded or any(ids.values())
        if changed:
            try:
                write_notebook(nb_path, nb)
            except OSError as exc:
                raise os_error(exc, "write", nb_path) from None
    return {
        "status": "ok",
        "path": nb_path,
        "cells": len(nb["cells"]),
        "ids_assigned": sum(ids.values()),
        "ids_missing": ids["missing"],
        "ids_invalid": ids["invalid"],
        "ids_duplicate": ids["duplicate"],
        "nbformat_minor": {"before": before, "after": nb.get("nbformat_minor")},
        "written": changed,
    }
