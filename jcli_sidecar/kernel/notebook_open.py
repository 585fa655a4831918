"""What a notebook run opens before any code is sent: the notebook, its cells, a pair's sync, ids and the kernel.

:func:`open_notebook` is :meth:`~jcli_sidecar.kernel.notebook_run.NotebookRun.prepare`'s
first step. For an ``.ipynb`` it reads the cells (without outputs) and
repairs ids several cells share (later copies get fresh ids, nbformat's
repair, written under the notebook's lock); for a py:percent ``.py`` it
refuses markers that repeat an id (``CELL_ID_DUPLICATE``) and syncs the
pair (:meth:`~jcli_sidecar.pair.pairing.Pair.sync`). Either way the kernel
the file asks for is held to the session's first
(:func:`~jcli_sidecar.kernel.kernel_request.check_session_kernel`), and a
notebook created for a ``.py`` records the kernel its header names, else
the session's.
"""

from __future__ import annotations

import os

from ..base import NotebookReadFailed
from ..pair import Pair, parse_percent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .live_notebook import LiveNotebook
    from .run_options import RunOptions

__all__ = ["Opened", "heads", "open_live", "open_notebook", "read_heads"]


class Opened:
    """What :func:`open_notebook` found: the notebook, its cells without outputs, a pair's mapping and sync, ids renewed, notes.

    ``py_tags`` are a pair's ``.py`` cells' tags (``tags=[...]`` on a marker), by ``.py`` cell; None for an ``.ipynb``.
    """

    __slots__ = ("nb_path", "cells", "py_to_nb", "report", "renewed", "notes", "py_tags")

    def __init__(self, nb_path: str, cells: list[Any]) -> None:
        self.nb_path = nb_path
        self.cells = cells
        self.py_to_nb: list[int] | None = None
        self.report: dict[str, int] | None = None
        self.renewed: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.py_tags: list[list[str]] | None = None


def open_notebook(file_path: str, options: RunOptions) -> Opened:
    """The notebook a run writes into, its cells without outputs; a pair's notebook is written first.

    An ``.ipynb`` is read through its offset index: only the cells' sources
    and metadata are decoded, never their outputs. So is a pair's notebook
    when the sync changes nothing; a sync that changes cells reads the whole
    notebook, once per run. Before anything is written, the file's kernel
    is held to the session's.

    Raises:
        CellIdDuplicate: a ``.py``'s markers repeat an id; nothing is written.
        KernelMismatch: the file asks for another kernel; nothing is written.
        PairConflict: the sync is not clearly meant (and not ``py_wins``); nothing is written.
    """
    from ..ipynb import format_changes, metadata_tags, read_file_bytes
    from ..pair import check_py_ids
    from .kernel_request import asked_kernel, check_session_kernel

    path = os.path.abspath(file_path)
    if path.endswith(".ipynb"):
        metadata, heads, format_notes = _notebook_heads(path)
        note = check_session_kernel(asked_kernel(metadata), path, options.kernel_name, options.session_language, allow=options.any_kernel)
        opened = Opened(path, heads)
        opened.notes.extend(format_notes)
        opened.renewed = _renew_ids(path, heads)
        if opened.renewed:
            opened.cells = _notebook_heads(path)[1]
            opened.notes.append(_renewed_note(path, opened.renewed))
        opened.notes.extend([note] if note else [])
        return opened
    real = os.path.realpath(path)  # the pair sits beside the real .py, where readers look for it
    text = read_file_bytes(real).decode("utf-8", "replace")
    py_cells = parse_percent(text)
    check_py_ids(py_cells, path)
    pair = Pair.of_py(real)
    format_notes = format_changes(pair.notebook) if os.path.exists(pair.notebook) else []
    asked, kernel, where = _py_kernel(text, real, pair.notebook)
    note = check_session_kernel(asked, where, options.kernel_name, options.session_language, allow=options.any_kernel)
    if kernel is None and options.kernel_name:  # a new notebook of a file that names no kernel: the session's
        kernel = {"name": options.kernel_name, "display_name": options.kernel_name, "language": options.session_language()}
    # A sync that changes nothing needs no outputs (heads_only): the whole notebook is never read.
    done = pair.sync(py_cells, kernel_name=kernel, check=not options.py_wins, executed=False, heads_only=True)
    opened = Opened(pair.notebook, [_head(cell) for cell in done.notebook["cells"]])
    opened.py_to_nb, opened.report, opened.renewed = done.py_to_nb, done.report, done.plan.renewed
    opened.py_tags = [metadata_tags(cell.metadata) for cell in py_cells]
    opened.notes.extend(format_notes)
    if opened.renewed:
        opened.notes.append(_renewed_note(pair.notebook, opened.renewed))
    opened.notes.extend([note] if note else [])
    return opened


def open_live(live: LiveNotebook, file_path: str, options: RunOptions) -> Opened:
    """As :func:`open_notebook`, for a notebook open in a room: read from the shared document, changed through it.

    The cells are the shared document's (what the person sees, their
    unsaved edits included), every cell with its id; ids several cells
    share are renewed, and a pair's ``.py`` is synced into the document
    cell by cell (:meth:`LiveNotebook.edit`: only what the sync changes is
    made), so the person's edits elsewhere stay. Nothing is written to
    the file: the server saves the document.

    Raises:
        CellIdDuplicate, KernelMismatch, PairConflict: as :func:`open_notebook`; nothing is changed.
        RoomLost: the room was lost (the caller opens the file instead).
    """
    from ..ipynb import metadata_tags
    from ..pair import check_py_ids
    from .kernel_request import asked_kernel, check_session_kernel

    path = os.path.abspath(file_path)
    if path.endswith(".ipynb"):
        nb = live.document()
        note = check_session_kernel(
            asked_kernel(nb.get("metadata")), path, options.kernel_name, options.session_language, allow=options.any_kernel
        )
        opened = Opened(path, heads(nb["cells"]))
        ids = [cell.get("id") for cell in nb["cells"]]
        if len(ids) != len(set(ids)):
            opened.renewed = live.edit(_renew_in)
            opened.cells = heads(live.document()["cells"])
            opened.notes.append(_renewed_note(path, opened.renewed))
        opened.notes.extend([note] if note else [])
        return opened
    from ..ipynb import read_file_bytes
    from ..pair import Pair, check_sync, keep_notebook_edits, record_agreement, sync_cells

    real = os.path.realpath(path)
    text = read_file_bytes(real).decode("utf-8", "replace")
    py_cells = parse_percent(text)
    check_py_ids(py_cells, path)
    pair = Pair.of_py(real)
    asked, _kernel, where = _py_kernel(text, real, pair.notebook)
    note = check_session_kernel(asked, where, options.kernel_name, options.session_language, allow=options.any_kernel)

    kept: list[int] = []

    def sync(nb: dict[str, Any]) -> Any:
        merged = None if options.py_wins else keep_notebook_edits(py_cells, nb)  # the person's edits stay, cell by cell
        check = None if options.py_wins or merged is not None else (lambda plan: check_sync(plan, real, pair.notebook))
        done = sync_cells(py_cells if merged is None else merged[0], nb, check=check, py_path=path)
        if merged is not None and merged[1]:
            kept[:] = merged[1]
            done.notebook = record_agreement(done.notebook, py_cells)  # the .py's: those cells stay the person's at the next run too
        nb.clear()
        nb.update(done.notebook)
        return done

    done = live.edit(sync)
    if kept:
        opened_note = (
            f".py cells {', '.join(map(str, kept))} keep the edits made to them in the shared document "
            f"(the .py does not have them; edit the .py's cell to replace them)"
        )
    opened = Opened(pair.notebook, [_head(cell) for cell in done.notebook["cells"]])
    opened.py_to_nb, opened.report, opened.renewed = done.py_to_nb, done.report, done.plan.renewed
    opened.py_tags = [metadata_tags(cell.metadata) for cell in py_cells]
    if opened.renewed:
        opened.notes.append(_renewed_note(pair.notebook, opened.renewed))
    if kept:
        opened.notes.append(opened_note)
    opened.notes.extend([note] if note else [])
    return opened


def _renew_in(nb: dict[str, Any]) -> list[dict[str, Any]]:
    from ..pair import renew_duplicate_ids

    return renew_duplicate_ids(nb["cells"])


def _py_kernel(text: str, py_path: str, nb_path: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """``(what the .py asks for, the kernelspec a new notebook records, who says so)``.

    The jupytext header speaks first (a new notebook records what it names);
    without one, an existing paired notebook speaks for the ``.py``.
    """
    from ..base import JcliError
    from ..pair import read_header
    from .kernel_request import asked_kernel

    try:
        asked = asked_kernel(read_header(text, py_path))
    except JcliError:  # a header that is not YAML names no kernel (the codec reads the cells all the same)
        asked = None
    if asked is not None:
        return asked, {k: v for k, v in asked.items() if v}, f"{py_path} (its jupytext header)"
    if not os.path.exists(nb_path):
        return None, None, py_path
    try:
        metadata = _notebook_heads(nb_path)[0]
    except JcliError:  # the sync reports an unreadable notebook
        return None, None, py_path
    return asked_kernel(metadata), {}, f"{nb_path} (the notebook paired with {os.path.basename(py_path)})"


def _renewed_note(nb_path: str, renewed: list[dict[str, Any]]) -> str:
    cells = ", ".join(f"{r['cell_index']} (was {r['id']!r})" for r in renewed[:20])
    more = f" and {len(renewed) - 20} more" if len(renewed) > 20 else ""
    return f"{nb_path}: cells shared an id; later copies got fresh ids: cells {cells}{more}"


def _renew_ids(path: str, heads: list[Any]) -> list[dict[str, Any]]:
    """Give the cells of the notebook at ``path`` that repeat an earlier cell's id fresh ids, under its lock (nbformat's repair).

    Raises:
        OutputSaveFailed: the notebook cannot be written (``executed: false``).
    """
    from ..base import os_error
    from ..ipynb import read_for_update, write_notebook
    from ..pair import notebook_write_lock, renew_duplicate_ids

    ids = [cell.get("id") for cell in heads if isinstance(cell, dict) and isinstance(cell.get("id"), str)]
    if len(ids) == len(set(ids)):
        return []
    with notebook_write_lock(path, executed=False):
        nb = read_for_update(path)
        cells = nb.get("cells")
        renewed = renew_duplicate_ids(cells) if isinstance(cells, list) else []
        if renewed:
            try:
                write_notebook(path, nb)
            except OSError as exc:
                raise os_error(exc, "write", path, executed=False) from None
    return renewed


def heads(cells: list[Any]) -> list[Any]:
    """What a run keeps of each cell: everything but its outputs."""
    return [_head(cell) for cell in cells]


def _head(cell: Any) -> Any:
    """What a run keeps of a cell: everything but its outputs."""
    if isinstance(cell, dict):
        return {key: value for key, value in cell.items() if key in ("cell_type", "id", "metadata", "source")}
    return cell


def read_heads(path: str) -> list[Any]:
    """The cells of the notebook at ``path`` without their outputs (read again after a change of j-cli's own)."""
    return _notebook_heads(path)[1]


def _notebook_heads(path: str) -> tuple[Any, list[Any], list[str]]:
    """The notebook's metadata, its cells without their outputs, and its format notes.

    The cells are read through the offset index, or whole when the file
    cannot be indexed; only such a file can be in an older nbformat or start
    with a byte order mark, so only then are the format notes
    (:func:`~jcli_sidecar.ipynb.nbsplice.format_changes`) looked for.

    Raises:
        FileNotFound, NotebookReadFailed, UsageError: the notebook cannot be read.
    """
    from ..ipynb import format_changes, load_notebook, notebook_heads

    notes: list[str] = []
    top = notebook_heads(path)
    if top is None:  # no cells, or JSON the walk does not take: read it whole
        top = load_notebook(path)
        notes = format_changes(path)
    cells = top.get("cells") if isinstance(top, dict) else None
    if not isinstance(cells, list):
        raise NotebookReadFailed(f"{path}: not a notebook (no cells list)", path=path)
    return top.get("metadata"), [_head(cell) for cell in cells], notes
