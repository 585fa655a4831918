"""One cell edit of a notebook, as a pure change of its nbformat dict: no file, no room, no I/O.

``j-cli notebook cell insert|replace|delete|move|clear`` and any other
caller describe the edit as a :class:`CellEdit`; :func:`apply_cell_edit`
makes it in a notebook dict, which the caller got from the file (under its
write lock) or from the shared document of a collaboration room, and
writes back as it writes.

- **Cells are named by id**; an index is resolved to the cell's id once,
  before the edit (:meth:`CellEdit.pinned`), so a cell the person inserted
  meanwhile above it does not shift the edit onto another cell. A notebook
  without cell ids (nbformat < 4.5) is addressed by index only.
- **A precondition** (``if_source``): the source digest j-cli showed
  (:func:`~jcli_sidecar.read.staleness.source_digest`, ``source_sha`` in
  ``notebook show`` and ``summary``). When the cell's source no longer has
  that digest, nothing is changed and :class:`~jcli_sidecar.base.CellChanged`
  carries the cell's current source and digest.
- **What an op does.** ``insert``: a new cell (a fresh id) before or
  after a cell, at an index, or at the end. ``replace``: the source; a
  code cell loses its outputs, execution count and run record
  (``metadata.jcli_ran``), so it reads stale. ``delete``. ``move``: before
  or after a cell, or to an index. ``clear``: one code cell's outputs,
  execution count and run record, or every code cell's.
"""

from __future__ import annotations

from ..base import CellChanged, CellNotFound, NotebookReadFailed, OutputDataInvalid, UsageError
from ..ipynb import join_text
from .staleness import RAN_KEY, source_digest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CELL_OPS", "CELL_TYPES", "CellEdit", "apply_cell_edit", "has_ids", "parse_cell_ref"]

#: The ops, in the order the CLI lists them.
CELL_OPS = ("insert", "replace", "delete", "move", "clear")
#: The cell types an inserted cell may have.
CELL_TYPES = ("code", "markdown", "raw")


def parse_cell_ref(text: str) -> str | int:
    """A cell as the user named it: a whole number is an index (a negative one counts from the end), anything else an id
    (``id:X`` is always the id ``X``, for an id that is a number).

    Example:
        >>> parse_cell_ref("3"), parse_cell_ref("-1"), parse_cell_ref("a1b2"), parse_cell_ref("id:7")
        (3, -1, 'a1b2', '7')
    """
    if text.startswith("id:"):
        return text[3:]
    stripped = text.strip()
    body = stripped[1:] if stripped.startswith("-") else stripped
    if body.isdigit() and body.isascii():
        return int(stripped)
    return text


def has_ids(nb: dict[str, Any]) -> bool:
    """Whether the notebook's cells carry ids (nbformat 4.5 or later)."""
    minor = nb.get("nbformat_minor")
    return nb.get("nbformat") == 4 and isinstance(minor, int) and not isinstance(minor, bool) and minor >= 5


class CellEdit:
    """One edit: ``op`` (:data:`CELL_OPS`) on ``cell`` (an id or an index; None for ``insert``, and for ``clear`` with ``all_cells``).

    ``if_source``: the digest the cell's source must still have. ``source``:
    the new source (``insert``, ``replace``). ``cell_type``: an inserted
    cell's type. ``before``/``after`` (a cell) or ``at`` (an index): where
    ``insert`` and ``move`` put the cell.

    Raises:
        UsageError: flags that do not go together (checked when it is made, before anything is read).
    """

    __slots__ = ("op", "cell", "if_source", "source", "cell_type", "before", "after", "at", "all_cells")

    def __init__(
        self,
        op: str,
        cell: str | int | None = None,
        *,
        if_source: str | None = None,
        source: str | None = None,
        cell_type: str = "code",
        before: str | int | None = None,
        after: str | int | None = None,
        at: int | None = None,
        all_cells: bool = False,
    ) -> None:
        self.op = op
        self.cell = cell
        self.if_source = if_source.strip().lower() if isinstance(if_source, str) else if_source
        self.source = source
        self.cell_type = cell_type
        self.before = before
        self.after = after
        self.at = at
        self.all_cells = all_cells
        self._check()

    def _check(self) -> None:
        op = self.op
        if op not in CELL_OPS:
            raise UsageError(f"unknown cell op {op!r} (one of {', '.join(CELL_OPS)})")
        places = [name for name, value in (("--before", self.before), ("--after", self.after), ("--at/--to", self.at)) if value is not None]
        if len(places) > 1:
            raise UsageError(f"give one of --before, --after or --at/--to, not {' and '.join(places)}")
        if places and op not in ("insert", "move"):
            raise UsageError(f"{places[0]} is for insert and move, not {op}")
        if op == "move" and not places:
            raise UsageError("move needs where to: --before CELL, --after CELL or --to N")
        if op == "insert":
            if self.cell is not None:
                raise UsageError("insert names no cell: say where with --before CELL, --after CELL or --at N")
            if self.if_source is not None:
                raise UsageError("insert takes no --if-source (no cell's source is replaced)")
            if self.cell_type not in CELL_TYPES:
                raise UsageError(f"--type must be one of {', '.join(CELL_TYPES)}, not {self.cell_type!r}")
        elif op == "clear" and self.all_cells:
            if self.cell is not None:
                raise UsageError("clear --all names no cell")
            if self.if_source is not None:
                raise UsageError("clear --all takes no --if-source")
        elif self.cell is None:
            raise UsageError(f"{op} needs the cell: its id (notebook show gives it) or its index")
        if self.all_cells and op != "clear":
            raise UsageError("--all is for clear")
        if op in ("insert", "replace"):
            if self.source is None:
                raise UsageError(f"{op} needs the source: --source TEXT, or --source-file PATH (- reads stdin)")
        elif self.source is not None:
            raise UsageError(f"{op} takes no source")
        if self.if_source is not None and not _is_digest(self.if_source):
            raise UsageError(f"--if-source takes the 16-hex source_sha notebook show gives, not {self.if_source!r}")

    def pinned(self, nb: dict[str, Any]) -> CellEdit:
        """This edit with every index resolved to its cell's id in ``nb`` (once, before the edit); unchanged in a notebook without ids.

        Raises:
            CellNotFound: a cell the notebook does not have.
            NotebookReadFailed: ``nb`` has no cells list.
        """
        cells = _cells(nb)
        if not has_ids(nb):
            return self
        pin = {key: _pin(cells, getattr(self, key), nb) for key in ("cell", "before", "after")}
        return CellEdit(
            self.op,
            pin["cell"],
            if_source=self.if_source,
            source=self.source,
            cell_type=self.cell_type,
            before=pin["before"],
            after=pin["after"],
            at=self.at,
            all_cells=self.all_cells,
        )


def _is_digest(text: str) -> bool:
    return len(text) == 16 and all(ch in "0123456789abcdef" for ch in text)


def _pin(cells: list[Any], ref: str | int | None, nb: dict[str, Any]) -> str | int | None:
    if not isinstance(ref, int):
        return ref
    index = _find(cells, ref, nb)
    cell_id = cells[index].get("id")
    return cell_id if isinstance(cell_id, str) and cell_id else ref


def _cells(nb: dict[str, Any]) -> list[Any]:
    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise NotebookReadFailed("not a notebook (no cells list)")
    return cells


def _find(cells: list[Any], ref: str | int, nb: dict[str, Any]) -> int:
    """The index of the cell ``ref`` names.

    Raises:
        CellNotFound: no such cell; an id in a notebook without ids (say so); an index outside the notebook.
    """
    if isinstance(ref, int):
        index = ref + len(cells) if ref < 0 else ref
        named = [k for k, cell in enumerate(cells) if isinstance(cell, dict) and cell.get("id") == str(ref)]
        if not 0 <= index < len(cells) or not isinstance(cells[index], dict):
            if named and has_ids(nb):  # an id made only of digits (a fresh id can be), and no index it could be
                return named[0]
            raise CellNotFound(f"cell {ref} is outside the notebook ({len(cells)} cells)", cell_index=ref, cells=len(cells))
        if named and named[0] != index:
            raise UsageError(
                f"{ref} is both cell {index}'s index and cell {named[0]}'s id: write id:{ref} for the cell with that id, or a negative index for the other",
                cell_index=index,
            )
        return index
    if not has_ids(nb):
        raise CellNotFound(
            f"this notebook has no cell ids (nbformat {nb.get('nbformat')}.{nb.get('nbformat_minor')}, before 4.5): name cells by index",
            cell_id=ref,
        )
    found = [k for k, cell in enumerate(cells) if isinstance(cell, dict) and cell.get("id") == ref]
    if not found:
        raise CellNotFound(f"no cell has the id {ref!r} (it may have been deleted; notebook show lists the ids)", cell_id=ref)
    return found[0]


def _source(cell: dict[str, Any]) -> str:
    try:
        return join_text(cell.get("source", ""), "source")
    except OutputDataInvalid:
        raise OutputDataInvalid(f"cell {cell.get('id')!r}: its source is neither a string nor a list of strings") from None


def _check_source(cell: dict[str, Any], index: int, expected: str | None, with_ids: bool) -> None:
    if expected is None:
        return
    source = _source(cell)
    now = source_digest(source)
    if now != expected:
        raise CellChanged(
            f"cell {index} changed since its source_sha was {expected}: it is now {now}; nothing was changed "
            "(details carry its current source: decide again from it)",
            cell_id=cell.get("id") if isinstance(cell.get("id"), str) and with_ids else None,
            cell_index=index,
            expected_sha=expected,
            source_sha=now,
            source=source,
        )


def _clear(cell: dict[str, Any]) -> None:
    """A code cell's outputs, execution count and run record gone (its other metadata kept)."""
    cell["outputs"] = []
    cell["execution_count"] = None
    metadata = cell.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop(RAN_KEY, None)


def _fresh_id(cells: list[Any]) -> str:
    from ..pair import fresh_cell_id

    return fresh_cell_id({cell.get("id") for cell in cells if isinstance(cell, dict) and isinstance(cell.get("id"), str)})


def _new_cell(cell_type: str, source: str, cell_id: str | None) -> dict[str, Any]:
    from ..ipynb import new_cell

    return new_cell(cell_type, source, cell_id)


def _place(cells: list[Any], edit: CellEdit, nb: dict[str, Any], moving: int | None) -> int:
    """Where ``insert`` or ``move`` puts the cell: its index once the edit is made (``moving``: the moved cell's index now)."""
    anchor_ref = edit.before if edit.before is not None else edit.after
    if anchor_ref is not None:
        anchor = _find(cells, anchor_ref, nb)
        if moving is not None:
            if anchor == moving:
                raise UsageError("a cell cannot be moved before or after itself")
            anchor -= anchor > moving
        return anchor if edit.before is not None else anchor + 1
    size = len(cells) if moving is not None else len(cells) + 1  # the places the cell can take
    if edit.at is None:
        return size - 1
    at = edit.at + size if edit.at < 0 else edit.at
    if not 0 <= at < size:
        raise CellNotFound(f"index {edit.at} is outside the places the cell can go (0 to {size - 1})", cell_index=edit.at, cells=len(cells))
    return at


def apply_cell_edit(nb: dict[str, Any], edit: CellEdit) -> dict[str, Any]:
    """Make ``edit`` in ``nb`` (in place); what it did, for the result.

    Everything is checked before anything changes: an error leaves ``nb`` as it was.

    Returns:
        ``{op, cell_id, cell_index, cell_type, source_sha, cell_count}`` of the
        cell edited (``source_sha`` None for a deleted one; its index is where
        it was); ``clear --all`` gives ``cleared`` (the indexes) instead of one cell.

    Raises:
        CellNotFound: a cell or place the notebook does not have.
        CellChanged: the cell's source no longer has the digest ``if_source`` gave.
        UsageError: ``clear`` of a cell that is not code; a move onto itself.
        NotebookReadFailed: ``nb`` has no cells list.

    Example:
        >>> nb = {"nbformat": 4, "nbformat_minor": 5, "cells": [{"cell_type": "code", "id": "a", "metadata": {},
        ...       "source": "x = 1", "execution_count": 3, "outputs": [{"output_type": "stream", "name": "stdout", "text": "1"}]}]}
        >>> done = apply_cell_edit(nb, CellEdit("replace", "a", source="x = 2"))
        >>> done["cell_index"], nb["cells"][0]["source"], nb["cells"][0]["outputs"], done["source_sha"] == source_digest("x = 2")
        (0, 'x = 2', [], True)
    """
    cells = _cells(nb)
    with_ids = has_ids(nb)
    op = edit.op
    if op == "insert":
        assert edit.source is not None
        at = _place(cells, edit, nb, None)
        cell = _new_cell(edit.cell_type, edit.source, _fresh_id(cells) if with_ids else None)
        cells.insert(at, cell)
        return _done(op, cell, at, cells, with_ids)
    if op == "clear" and edit.all_cells:
        cleared = [k for k, cell in enumerate(cells) if isinstance(cell, dict) and cell.get("cell_type") == "code"]
        for k in cleared:
            _clear(cells[k])
        return {"op": op, "cleared": cleared, "cell_count": len(cells)}
    assert edit.cell is not None
    index = _find(cells, edit.cell, nb)
    cell = cells[index]
    _check_source(cell, index, edit.if_source, with_ids)
    if op == "replace":
        assert edit.source is not None
        cell["source"] = edit.source
        if cell.get("cell_type") == "code":
            _clear(cell)
        return _done(op, cell, index, cells, with_ids)
    if op == "delete":
        del cells[index]
        return {**_done(op, cell, index, cells, with_ids), "source_sha": None}
    if op == "move":
        at = _place(cells, edit, nb, index)
        rest = cells[:index] + cells[index + 1 :]
        rest.insert(at, cell)
        cells[:] = rest
        return _done(op, cell, at, cells, with_ids)
    # clear
    if cell.get("cell_type") != "code":
        raise UsageError(f"cell {index} is a {cell.get('cell_type')} cell: only code cells have outputs to clear", cell_index=index)
    _clear(cell)
    return _done(op, cell, index, cells, with_ids)


def _done(op: str, cell: dict[str, Any], index: int, cells: list[Any], with_ids: bool) -> dict[str, Any]:
    """The result of an edit of one cell; a notebook without ids reports none (a room's own ids are not the file's)."""
    cell_id = cell.get("id")
    return {
        "op": op,
        "cell_id": cell_id if isinstance(cell_id, str) and with_ids else None,
        "cell_index": index,
        "cell_type": cell.get("cell_type"),
        "source_sha": source_digest(_source(cell)),
        "cell_count": len(cells),
    }
