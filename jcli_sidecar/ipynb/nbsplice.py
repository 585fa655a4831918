"""Writing one cell back into a notebook: the new cell's bytes spliced between the file's own.

A run writes each cell as it finishes. Parsing and rewriting the whole
notebook for that costs time and memory in the size of the file, so a full
re-run of a big notebook would be quadratic. :class:`CellWriter` instead
keeps the file's offset index (:mod:`jcli_sidecar.ipynb.nbindex`): a write-back
decodes the target cell without its outputs, lets the caller check and
change it, and writes a new file made of the bytes before the cell (copied
by the kernel), the cell as :func:`~jcli_sidecar.ipynb.nbwrite.dumps_cell` lays it
out, and the bytes after it. Memory and encoding follow the cell; only the
kernel's copy follows the file.

Byte compatibility: a spliced cell is exactly what nbformat's writer gives
for it in that place, so a notebook in nbformat's layout stays byte for
byte what nbformat would write. Splicing needs that layout around the cell
(the file's start and end, the separators between cells, and the cell
itself apart from its outputs); when any of it differs (a notebook written
with ``indent=2``, minified, or by hand), the write lays the whole file out
as nbformat does, once, one cell at a time (memory follows the biggest
cell): the next write finds the layout and splices. Only a file the walk
cannot index (old formats, odd JSON) is parsed whole and rewritten. Cells a
splice does not write keep their bytes.

The index belongs to the file whose ``fstat`` key (:func:`~jcli_sidecar.ipynb.nbindex.stat_key`)
the writer saw after its own last write. Any other key means someone else
wrote the file: it is indexed again, and the cell is found again by its id
(else its place) and checked by the caller, as a full parse would.
"""

from __future__ import annotations

import os

from ..base import Bail, JcliError, NotebookChanged, TooDeep, check_size, loads, open_regular, read_open, write_pieces_atomic
from .nbindex import CellSpan, Changed, NotebookIndex, adopt, adopted, build_index, cell_span, pread_span, stable_read, stat_key
from .nbwrite import dumps_cell_parts, dumps_notebook, write_notebook
from .notebook import coded_read_error, exact_float, parse_notebook, read_file_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    #: Checks the cell found (None: no cell there) and changes it in place; raises to write nothing.
    Edit = Callable[[Any], None]
    #: One cell to write: ``(position, cell_id, edit)``.
    Change = tuple[int, str | None, Edit]

__all__ = ["CellWriter", "format_changes", "notebook_heads"]

#: A cell's place: ``(start, end, outputs)``, ``outputs`` the ``(start, end)`` of its array or None.
_Span = tuple[int, int, "tuple[int, int] | None"]
#: What separates two cells in nbformat's layout.
_BETWEEN = b",\n  "


class CellWriter:
    """Writes cells back into one notebook, each a splice of the current file.

    Example:
        >>> writer = CellWriter("report.ipynb")  # doctest: +SKIP
        >>> writer.update_cell(3, "a1b2", edit)  # doctest: +SKIP
    """

    __slots__ = ("path", "key", "_spans", "_ids", "_layout", "_items", "full_rewrites", "_stall")

    def __init__(self, path: str) -> None:
        self.path = path
        #: The ``fstat`` key of the file the index describes (None: not indexed yet).
        self.key: tuple[int, int, int, int, int] | None = None
        self._spans: list[_Span] | None = None
        self._ids: list[Any] = []
        self._layout = False
        #: Each cell's output spans, counted from the cell's first byte (None: unknown), for :meth:`index`.
        self._items: list[tuple[tuple[int, int], ...] | None] = []
        #: How many writes rewrote the whole notebook (its layout was not nbformat's).
        self.full_rewrites = 0
        self._stall: str | None = None

    def update_cell(self, position: int, cell_id: str | None, edit: Edit) -> None:
        """Find the cell (by ``cell_id`` when given, else at ``position``), ``edit`` it, write it back.

        ``edit`` gets the cell without its ``outputs`` (None when no cell
        matches) and sets what the cell becomes, outputs included.

        Raises:
            Whatever ``edit`` raises (nothing is written then).
            FileNotFound, NotebookReadFailed: the notebook cannot be read.
            OSError: the new file cannot be written.
            ValueError, RecursionError: the cell cannot be encoded.
        """
        refused = self.update_cells([(position, cell_id, edit)])[0]
        if refused is not None:
            raise refused

    def update_cells(self, changes: list[Change], stall: str | None = None) -> list[JcliError | None]:
        """Several cells at once, in one new file: each ``(position, cell_id, edit)`` as :meth:`update_cell`.

        A coded error an ``edit`` raises refuses that cell only: the others
        are written, and its place in the answer holds the error (None for
        a cell written). The new file replaces only the file that was read
        (:func:`~jcli_sidecar.base.fileio.write_pieces_atomic` with ``expect``);
        ``stall`` names the test stall point before the swap.

        Raises:
            FileNotFound, NotebookReadFailed: the notebook cannot be read.
            NotebookChanged: another program saved or deleted it while the new file was written (no cell is).
            OSError: the new file cannot be written (no cell is).
            ValueError, RecursionError: a cell cannot be encoded (no cell is).
        """
        self._stall = stall
        try:
            return self._update(changes)
        except NotebookChanged:
            self.key = None  # the file is another program's now
            raise

    def _update(self, changes: list[Change]) -> list[JcliError | None]:
        return stable_read(lambda: self._update_once(changes), self.path, doing="written back")

    def _update_once(self, changes: list[Change]) -> list[JcliError | None]:
        try:
            fd, info = open_regular(self.path)
        except OSError as exc:
            raise coded_read_error(exc, self.path) from None
        try:
            check_size(info, self.path)
            if stat_key(info) != self.key:
                self._load(fd, info)
            if self._spans is not None:
                try:
                    return self._splice(fd, info, changes)
                except Bail:  # a cell or the frame is not JSON after all: the full parse says why
                    pass
            return self._rewrite(fd, info, changes)
        except Changed:
            self.key = None  # the next attempt indexes it again
            raise
        finally:
            os.close(fd)

    def _load(self, fd: int, info: os.stat_result) -> None:
        """Index the open file; no index (the whole file is parsed at the write) when the walk cannot."""
        self.key, self._spans, self._ids, self._layout = None, None, [], False
        index = adopted(stat_key(info))  # written by j-cli just before (a sync, a full rewrite): not read again
        if index is None:
            try:
                index = build_index(fd, info)
            except (Bail, TooDeep):
                return
        spans: list[_Span] = [(c.start, c.end, c.outputs) for c in index.cells]
        self._items = [_relative(c) for c in index.cells]
        ids = []
        for number in range(len(spans)):
            head = _decode(_head_bytes(fd, spans[number]))
            if head is None:
                return
            ids.append(head.get("id") if isinstance(head, dict) else None)
        self.key, self._spans, self._ids = index.key, spans, ids
        self._layout = _in_layout(fd, info.st_size, spans)

    def _find(self, position: int, cell_id: str | None) -> int:
        if cell_id is not None:
            found = [number for number, known in enumerate(self._ids) if known == cell_id]
            return found[0] if len(found) == 1 else -1
        return position

    def _splice(self, fd: int, info: os.stat_result, changes: list[Change]) -> list[JcliError | None]:
        assert self._spans is not None
        spans = self._spans
        found: list[tuple[int, bytes, Any]] = []
        for position, cell_id, _edit in changes:
            number = self._find(position, cell_id)
            if 0 <= number < len(spans):
                raw = _head_bytes(fd, spans[number])
                found.append((number, raw, _decode(raw)))
            else:
                found.append((-1, b"", None))
        if any(number >= 0 and not isinstance(cell, dict) for number, _raw, cell in found):
            raise Bail("a cell that is not JSON")  # the full parse says what is wrong
        in_layout = self._layout and all(
            number < 0 or raw == "".join(dumps_cell_parts(cell)).encode("utf-8") for number, raw, cell in found
        )
        edited: dict[int, dict[str, Any]] = {}
        answers = []
        for (number, _raw, cell), (_position, _cell_id, edit) in zip(found, changes, strict=True):
            if cell is not None:
                cell.pop("outputs", None)
            answers.append(_apply(edit, cell))
            if answers[-1] is None and cell is not None:
                edited[number] = cell
        if not edited:
            return answers
        if not in_layout:
            self._relayout(fd, info, edited)
            return answers
        pieces: list[bytes | tuple[int, int]] = []
        at = 0
        placed: list[tuple[int, int, int, tuple[int, int] | None]] = []  # number, new start, new end, outputs
        shift = 0
        for number in sorted(edited):
            start, end, _outputs = spans[number]
            before, outputs, after = (part.encode("utf-8") for part in dumps_cell_parts(edited[number]))
            pieces += [(at, start), before, outputs, after]
            new_start = start + shift
            size = len(before) + len(outputs) + len(after)
            placed.append(
                (
                    number,
                    new_start,
                    new_start + size,
                    (new_start + len(before), new_start + len(before) + len(outputs)) if outputs else None,
                )
            )
            shift += size - (end - start)
            at = end
        pieces.append((at, info.st_size))
        if stat_key(os.fstat(fd)) != self.key:
            raise Changed()
        written = write_pieces_atomic(self.path, pieces, source_fd=fd, expect=self.key, stall=self._stall)
        self._move(placed)
        for number in edited:
            self._ids[number] = edited[number].get("id")
            self._items[number] = _written_items(pieces, number, placed)
        self.key = stat_key(written) if written.st_size == info.st_size + shift else None
        return answers

    def _move(self, placed: list[tuple[int, int, int, tuple[int, int] | None]]) -> None:
        """Record the new places of the cells written, and shift every cell after each."""
        assert self._spans is not None
        spans = self._spans
        shift = 0
        ahead = iter(placed)
        upcoming = next(ahead, None)
        for number in range(len(spans)):
            start, end, outputs = spans[number]
            if upcoming is not None and upcoming[0] == number:
                spans[number] = (upcoming[1], upcoming[2], upcoming[3])
                shift = upcoming[2] - end
                upcoming = next(ahead, None)
            elif shift:
                spans[number] = (start + shift, end + shift, (outputs[0] + shift, outputs[1] + shift) if outputs is not None else None)

    def index(self) -> NotebookIndex | None:
        """The offset index of the file as this writer last wrote it, as :func:`~jcli_sidecar.ipynb.nbindex.build_index` would find it; None when unknown.

        Known after a splice (the cells written are indexed from the bytes
        laid out, the others keep their spans, moved); a full rewrite leaves
        it unknown until the next write indexes the file again.
        """
        if self.key is None or self._spans is None or len(self._items) != len(self._spans):
            return None
        cells = []
        for (start, end, outputs), items in zip(self._spans, self._items, strict=True):
            if outputs is None:
                cells.append(CellSpan(start, end, None, None))
            elif items is None:
                return None
            else:
                cells.append(CellSpan(start, end, outputs, tuple((start + a, start + b) for a, b in items)))
        return NotebookIndex(self.key, cells)

    def hand_over(self) -> NotebookIndex | None:
        """Give :meth:`index` to this process's next reads and its sidecar (:func:`~jcli_sidecar.ipynb.nbindex.adopt`), and return it.

        The first read after a run then finds the notebook indexed; any
        other write since changes the file's key, and the read indexes it
        again. Cheap next to the run (a few tuples per cell): call it when
        a run's writing is done, not at every write.
        """
        index = self.index()
        if index is not None:
            adopt(index, self.path)
        return index

    def _relayout(self, fd: int, info: os.stat_result, edited: dict[int, dict[str, Any]]) -> None:
        """Write the whole file in nbformat's layout, the ``edited`` cells as they are, one cell at a time."""
        assert self._spans is not None
        spans = self._spans
        frame = _frame(fd, info.st_size, spans)
        if frame is None:
            raise Bail("the notebook around its cells is not JSON")

        def pieces() -> Iterator[bytes]:
            yield frame[0]
            for at, span in enumerate(spans):
                if at:
                    yield _BETWEEN
                cell = edited[at] if at in edited else _decode(pread_span(fd, span[0], span[1]))
                if cell is None:
                    raise Bail("a cell that is not JSON")
                yield "".join(dumps_cell_parts(cell)).encode("utf-8")
            yield frame[1]

        if stat_key(os.fstat(fd)) != self.key:
            raise Changed()
        write_pieces_atomic(self.path, pieces(), source_fd=fd, expect=self.key, stall=self._stall)
        self.full_rewrites += 1
        self.key = None  # indexed again at the next write, now in nbformat's layout

    def _rewrite(self, fd: int, info: os.stat_result, changes: list[Change]) -> list[JcliError | None]:
        """Parse the whole notebook, edit the cells, write it all in nbformat's layout."""
        nb = parse_notebook(read_open(fd, info, self.path), self.path, exact_numbers=True)
        cells = nb["cells"]
        answers = []
        for position, cell_id, edit in changes:
            if cell_id is not None:
                found = [n for n, c in enumerate(cells) if isinstance(c, dict) and c.get("id") == cell_id]
                number = found[0] if len(found) == 1 else -1
            else:
                number = position
            cell = cells[number] if 0 <= number < len(cells) and isinstance(cells[number], dict) else None
            kept = cell.pop("outputs", None) if cell is not None else None
            answers.append(_apply(edit, cell))
            if answers[-1] is not None and cell is not None and kept is not None:
                cell["outputs"] = kept  # refused: the cell stays as it was
        if any(answer is None for answer in answers):
            write_notebook(self.path, nb, expect=stat_key(info), stall=self._stall)
            self.full_rewrites += 1
        self.key = None  # indexed again at the next write, now in nbformat's layout
        return answers


def _relative(span: CellSpan) -> tuple[tuple[int, int], ...] | None:
    """A cell's output spans counted from its first byte: they hold while the cell's bytes do, wherever it moves."""
    if span.items is None:
        return None
    return tuple((a - span.start, b - span.start) for a, b in span.items)


def _written_items(
    pieces: list[bytes | tuple[int, int]], number: int, placed: list[tuple[int, int, int, tuple[int, int] | None]]
) -> tuple[tuple[int, int], ...] | None:
    """The output spans of cell ``number`` as just written (from its bytes in ``pieces``), or None when the pass would not index them so."""
    at = next(k for k, place in enumerate(placed) if place[0] == number)
    before, outputs, after = pieces[4 * at + 1 : 4 * at + 4]
    assert isinstance(before, bytes) and isinstance(outputs, bytes) and isinstance(after, bytes)
    try:
        span = cell_span(before + outputs + after)
    except (Bail, TooDeep):
        return None
    expected = (len(before), len(before) + len(outputs)) if outputs else None
    if span.outputs != expected:
        return None
    return span.items


def _apply(edit: Edit, cell: Any) -> JcliError | None:
    """Run ``edit`` on ``cell``; the coded error it raises, or None."""
    try:
        edit(cell)
    except JcliError as err:
        return err
    return None


def notebook_heads(path: str) -> dict[str, Any] | None:
    """The notebook with each cell's ``outputs`` read as ``[]``, from its offset index; None when the walk cannot index it.

    Enough to tell whether a pair's sync would change anything: only when it
    does is the whole notebook read (numbers exact, as a rewrite needs them).

    Raises:
        FileNotFound, NotebookReadFailed, UsageError: the file cannot be read.
    """
    return stable_read(lambda: _heads_once(path), path, otherwise=lambda: None)


def _heads_once(path: str) -> dict[str, Any] | None:
    """One attempt of :func:`notebook_heads`.

    Raises:
        Changed: the file changed while it was read.
    """
    try:
        fd, info = open_regular(path)
    except OSError as exc:
        raise coded_read_error(exc, path) from None
    try:
        check_size(info, path)
        index = build_index(fd, info)
        spans: list[_Span] = [(c.start, c.end, c.outputs) for c in index.cells]
        if not spans:
            return None
        top = _decode(pread_span(fd, 0, spans[0][0]) + pread_span(fd, spans[-1][1], info.st_size))
        cells = [_decode(_head_bytes(fd, span)) for span in spans]
        if not isinstance(top, dict) or any(not isinstance(cell, dict) for cell in cells):
            return None
        if stat_key(os.fstat(fd)) != index.key:
            raise Changed()
        top["cells"] = cells
        return top
    except (Bail, TooDeep):
        return None
    finally:
        os.close(fd)


def _head_bytes(fd: int, span: _Span) -> bytes:
    """The cell's bytes, its ``outputs`` array read as ``[]`` (the whole cell when its place is unknown)."""
    start, end, outputs = span
    if outputs is None:
        return pread_span(fd, start, end)
    return pread_span(fd, start, outputs[0]) + b"[]" + pread_span(fd, outputs[1], end)


def _decode(raw: bytes) -> Any:
    """The cell the bytes hold, numbers exact; None when they are not JSON."""
    try:
        return loads(raw, parse_float=exact_float)
    except ValueError:
        return None


def _frame(fd: int, size: int, spans: list[_Span]) -> tuple[bytes, bytes] | None:
    """What nbformat writes before the first cell and after the last, from the file's own; None if not JSON."""
    try:
        rest = loads(pread_span(fd, 0, spans[0][0]) + pread_span(fd, spans[-1][1], size), parse_float=exact_float)
    except ValueError:
        return None
    if not isinstance(rest, dict):
        return None
    text = dumps_notebook({**rest, "cells": [{}]})
    cut = text.find("\n  {}\n")
    return text[: cut + 3].encode("utf-8"), text[cut + 5 :].encode("utf-8")


def _in_layout(fd: int, size: int, spans: list[_Span]) -> bool:
    """Whether everything around the cells is laid out as nbformat writes it."""
    if not spans:
        return False
    for (_, end, _o), (start, _, _p) in zip(spans, spans[1:], strict=False):
        if start - end != len(_BETWEEN) or pread_span(fd, end, start) != _BETWEEN:
            return False
    frame = _frame(fd, size, spans)
    return frame is not None and frame == (pread_span(fd, 0, spans[0][0]), pread_span(fd, spans[-1][1], size))


def format_changes(path: str) -> list[str]:
    """What writing ``path`` back changes besides its cells, one sentence each (none for a plain nbformat-4 file).

    j-cli writes nbformat 4 in nbformat's layout, as UTF-8 without a byte
    order mark: an older notebook (nbformat 3 or before) is written back as
    nbformat 4, and a leading mark is not kept. A run says so in its
    summary's ``notes`` rather than changing the file without a word.

    Reading costs what a run's own read costs: the mark is in the first three
    bytes, and the version comes from the offset index's top level; only a
    file the index cannot take (an older format has no top-level ``cells``)
    is read whole.
    """
    from ..base import loads

    try:
        fd, _info = open_regular(path)
        try:
            head = os.pread(fd, 3, 0)
        finally:
            os.close(fd)
        top = notebook_heads(path)
        if top is None:
            top = loads(read_file_bytes(path))
    except Exception:  # the run's own read says what is wrong
        return []
    name = os.path.basename(path)
    notes = []
    if head == b"\xef\xbb\xbf":
        notes.append(f"{name} starts with a UTF-8 byte order mark; j-cli writes it back without one")
    major = top.get("nbformat") if isinstance(top, dict) else None
    if isinstance(major, int) and not isinstance(major, bool) and major < 4:
        notes.append(f"{name} is nbformat {major}; j-cli writes it back as nbformat 4")
    return notes
