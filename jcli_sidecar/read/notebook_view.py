"""A notebook as ``notebook summary|show|map`` see it: the file named and its pair, read once.

The file is an ``.ipynb`` or a py:percent ``.py``; its pair is the file with
the same stem and the other suffix, when that exists. Both are read through
the capped, non-blocking readers (:mod:`jcli_sidecar.ipynb.notebook`), so a FIFO,
a directory, an oversize file or broken JSON is a coded error. When both
exist, :func:`jcli_sidecar.pair.pairsync.plan_sync` (the matcher ``exec -f`` syncs
with) says which cell is which. Reads only; writes nothing.
"""

from __future__ import annotations

import os

from ..base import CellNotFound, FileNotFound, NotebookReadFailed, OutputDataInvalid, check_file_name, os_error
from ..ipynb import join_text, load_notebook, read_text_file
from ..pair import normalize_source, paired_notebook_path, paired_py_path, percent_cells

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..pair import PercentCell, SyncPlan

__all__ = ["NotebookView", "cell_source", "open_view", "select_cells"]


class NotebookView:
    """The file named (``kind`` ``"py"`` or ``"notebook"``), its pair if any, and how their cells match.

    Attributes:
        path: the path as requested.
        py_path, notebook_path: the real paths of the two sides (None for a missing side).
        py_cells: the ``.py``'s cells, or None.
        nb: the notebook (a v4 dict), or None.
        plan: the match of the two sides (both exist), else None.
        pair_note: why there is no pair, or None.
    """

    __slots__ = ("path", "kind", "py_path", "notebook_path", "py_cells", "nb", "plan", "pair_note", "live", "_shared")

    def __init__(self, path: str, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.py_path: str | None = None
        self.notebook_path: str | None = None
        self.py_cells: list[PercentCell] | None = None
        self.nb: dict[str, Any] | None = None
        self.plan: SyncPlan | None = None
        self.pair_note: str | None = None
        #: True when the notebook was read from a collaboration room's shared document, not the file.
        self.live = False
        self._shared: tuple[dict[str, list[int]], dict[str, list[int]]] | None = None

    @property
    def cell_count(self) -> int:
        """How many cells the file named holds."""
        if self.kind == "py":
            return len(self.py_cells or [])
        return len(self.nb["cells"]) if self.nb is not None else 0

    def kernel(self) -> str | None:
        """The notebook's ``metadata.kernelspec.name``, if it names one."""
        meta = self.nb.get("metadata") if self.nb is not None else None
        spec = meta.get("kernelspec") if isinstance(meta, dict) else None
        name = spec.get("name") if isinstance(spec, dict) else None
        return name if isinstance(name, str) else None

    def notebook_index(self, py_index: int) -> int | None:
        """The notebook cell that ``.py`` cell ``py_index`` is (None: none, or no pair)."""
        return self.plan.match[py_index] if self.plan is not None else None

    def py_index(self, nb_index: int) -> int | None:
        """The ``.py`` cell that notebook cell ``nb_index`` is (None: none, or no pair)."""
        if self.plan is None:
            return None
        for k, i in enumerate(self.plan.match):
            if i == nb_index:
                return k
        return None

    def shared_ids(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """``(ids the .py's markers repeat, ids several notebook cells carry)``, each with its cells; read once."""
        if self._shared is None:
            from ..pair import duplicate_ids

            py = duplicate_ids(self.py_cells) if self.py_cells else {}
            found: dict[str, list[int]] = {}
            for i, cell in enumerate(self.nb.get("cells", []) if self.nb is not None else []):
                meta = cell.get("metadata") if isinstance(cell, dict) else None
                carried = {cell.get("id"), meta.get("id") if isinstance(meta, dict) else None} if isinstance(cell, dict) else set()
                for cell_id in carried:  # its id, or the metadata.id jupytext keeps a marker's id in (as the sync matches)
                    if isinstance(cell_id, str):
                        found.setdefault(cell_id, []).append(i)
            self._shared = py, {cell_id: cells for cell_id, cells in found.items() if len(cells) > 1}
        return self._shared

    def id_problem(self, kind: str, index: int) -> str | None:
        """What is wrong with the id of cell ``index`` of the ``kind`` side (``"py"`` or ``"notebook"``): one several cells share."""
        py_shared, nb_shared = self.shared_ids()
        if kind == "py":
            pc = self.py_cells[index] if self.py_cells is not None else None
            copies = py_shared.get(pc.cell_id) if pc is not None and pc.cell_id else None
            if not copies or self.py_cells is None:
                return None
            lines = ", ".join(str(self.py_cells[k].start_line) for k in copies)
            return (
                f'its marker\'s id="{pc.cell_id}" is repeated on .py cells {", ".join(map(str, copies))} (lines {lines}): '
                "exec refuses the file (CELL_ID_DUPLICATE) until the copied id is deleted"
            )
        cells = self.nb.get("cells", []) if self.nb is not None else []
        cell = cells[index] if index < len(cells) else None
        cell_id = next((cell_id for cell_id, sharing in nb_shared.items() if index in sharing), None)
        if cell_id is None or not isinstance(cell, dict):
            return None
        sharing = nb_shared[cell_id]
        return (
            f'its id "{cell_id}" is shared by notebook cells {", ".join(map(str, sharing))}: it maps no .py cell, and '
            "j-cli gives the later copies fresh ids when it writes the notebook"
        )

    def pair_change(self, py_index: int | None, nb_index: int | None) -> str | None:
        """``"equal"``, ``"edited"``, ``"only_py"`` or ``"only_notebook"`` (None without a pair)."""
        if self.plan is None:
            return None
        if py_index is None:
            return "only_notebook"
        if nb_index is None:
            return "only_py"
        return "edited" if py_index in self.plan.edited else "equal"


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except OSError as exc:  # a relative path while the cwd has been deleted
        raise os_error(exc, "resolve", path, path=path) from None


def _read_percent(py_path: str) -> list[PercentCell] | None:
    """The cells of a py:percent file; None for a plain script (no ``# %%`` marker)."""
    return percent_cells(read_text_file(py_path))


def open_view(
    path: str | os.PathLike[str], with_pair: bool = True, notebook_of: Callable[[str], dict[str, Any] | None] | None = None
) -> NotebookView:
    """Read the file ``path`` names and its pair, and match their cells.

    A ``.py`` must be py:percent; any other name is read as a notebook.
    The pair is best effort: one that does not exist or cannot be read
    (a FIFO, broken JSON) is no error, ``pair_note`` says why it is missing.
    Without ``with_pair`` only the file named is read. ``notebook_of`` gives
    a notebook (by real path) as a collaboration room holds it now, or None:
    the file is read then (``view.live`` says which).

    Raises:
        FileNotFound, NotebookReadFailed, UsageError: as the readers
            (:func:`jcli_sidecar.ipynb.notebook.read_file_bytes`).
    """
    requested = check_file_name(os.fspath(path), "file_path")
    real = _real(requested)
    if requested.endswith(".py"):
        view = NotebookView(requested, "py")
        view.py_path = real
        view.py_cells = _read_percent(real)
        if view.py_cells is None:
            raise NotebookReadFailed(f"{requested}: a plain script (no '# %%' cell markers), not a notebook", path=requested)
        nb_path = paired_notebook_path(real)
        if not with_pair:
            return view
        try:
            view.nb = _notebook(view, nb_path, notebook_of)
            view.notebook_path = nb_path
        except FileNotFound:
            view.pair_note = f"no paired notebook ({os.path.basename(nb_path)} does not exist)"
        except NotebookReadFailed as err:
            view.pair_note = f"the paired notebook cannot be read: {err.message}"
    else:
        view = NotebookView(requested, "notebook")
        view.notebook_path = real
        view.nb = _notebook(view, real, notebook_of)
        if not with_pair:
            return view
        py_path = paired_py_path(real)
        try:
            view.py_cells = _read_percent(py_path)
            view.py_path = py_path if view.py_cells is not None else None
            if view.py_cells is None:
                view.pair_note = f"no paired .py ({os.path.basename(py_path)} has no '# %%' cell markers)"
        except FileNotFound:
            view.pair_note = f"no paired .py ({os.path.basename(py_path)} does not exist)"
        except NotebookReadFailed as err:
            view.pair_note = f"the paired .py cannot be read: {err.message}"
    if view.py_cells is not None and view.nb is not None:
        from ..pair import plan_sync

        view.plan = plan_sync(view.py_cells, view.nb)
    return view


def _notebook(view: NotebookView, path: str, notebook_of: Callable[[str], dict[str, Any] | None] | None) -> dict[str, Any]:
    """The notebook at real path ``path``: a room's shared document when ``notebook_of`` has it (``view.live``), else the file."""
    shared = None if notebook_of is None else notebook_of(path)
    if shared is not None:
        view.live = True
        return shared
    return load_notebook(path)


def cell_source(cell: Any) -> str | None:
    """A notebook cell's source, blank ends dropped as in a ``.py``; None when it is not text."""
    if not isinstance(cell, dict):
        return None
    try:
        return normalize_source(join_text(cell.get("source", ""), "source"))
    except OutputDataInvalid:  # a malformed cell is reported, never fatal
        return None


def select_cells(view: NotebookView, spec: str | None) -> list[int]:
    """The cell indexes ``spec`` names in the file (the grammar of ``exec --cell``), never clamped.

    Raises:
        UsageError: not ``N``, ``A:B``, ``A:`` or ``:B``.
        CellNotFound: any part of it outside the file, or no cell at all.
    """
    from ..ipynb import parse_cell_spec

    count = view.cell_count
    try:
        return parse_cell_spec(spec, count, strict=True)
    except CellNotFound as err:
        raise CellNotFound(err.message.replace("the file", view.path, 1), **err.details) from None
