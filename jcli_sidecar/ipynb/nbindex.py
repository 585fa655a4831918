"""The offset index of a notebook: where each cell and each output lies in the file.

One streaming pass reads the file in bounded chunks (:data:`~jcli_sidecar.ipynb.jsonscan.CHUNK`) and
records byte offsets only: the span of every cell, and in each cell the
span of its ``outputs`` array and of every output in it. Nothing is
decoded but object keys and the ``nbformat`` number. A read then seeks to
the bytes it needs and decodes them with :func:`json.loads`, so memory
follows what is read, never the size of the file (an ``mmap`` would not do:
a full scan through one touches, and keeps resident, every page).

This is j-cli's one walk over JSON without building it; the window it reads
through and its ways past values are :mod:`jcli_sidecar.ipynb.jsonscan`'s.
Strings are skipped by their quotes (an even run of backslashes before a
quote ends a string), containers by balanced brackets, in C where the
value is plain JSON (``bytes.find``, compiled patterns, the C JSON decoder),
so the Python steps follow the cells and outputs, not the bytes. Nesting
deeper than :data:`~jcli_sidecar.base.boundedjson.MAX_DEPTH` is
:class:`~jcli_sidecar.base.boundedjson.TooDeep`, and anything unexpected is
:class:`~jcli_sidecar.base.boundedjson.Bail` (the caller then parses the whole
file, which reports errors precisely). The ``fstat`` of the file is taken
again after the pass; a file that changed meanwhile is :class:`Changed`,
never a mixed index.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict

from ..base import MAX_DEPTH, Bail
from . import jsonscan
from .jsonscan import JsonWindow

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = [
    "ADOPTED_MAX",
    "CellSpan",
    "Changed",
    "MemberReader",
    "NotebookIndex",
    "adopt",
    "adopted",
    "adopted_uses",
    "build_index",
    "cell_span",
    "index_bytes",
    "index_from_wire",
    "index_to_wire",
    "pread_span",
    "stable_read",
    "stat_key",
    "take_offers",
]


class Changed(Exception):
    """The file changed while it was indexed or read: start again."""


#: How often a read starts again when the file changes under it.
STABLE_ATTEMPTS = 3


def stable_read(read: Callable[[], T], path: Any, *, doing: str = "read", otherwise: Callable[[], T] | None = None) -> T:
    """``read()``, started again from scratch while it raises :class:`Changed` (the file changed under it), at most :data:`STABLE_ATTEMPTS` times.

    Args:
        read: one whole attempt: opens, reads and checks the file (raising :class:`Changed`), and closes it.
        path: the file, as its errors name it.
        doing: what the error says it was being ("read", "written back").
        otherwise: the answer when it never held still (default: the error).

    Raises:
        NotebookReadFailed: it kept changing (no ``otherwise``).
    """
    for _attempt in range(STABLE_ATTEMPTS):
        try:
            return read()
        except Changed:
            continue
    if otherwise is not None:
        return otherwise()
    from ..base import NotebookReadFailed

    name = os.fspath(path)
    raise NotebookReadFailed(f"{name}: kept changing while it was being {doing}; try again", path=name)


def stat_key(info: os.stat_result) -> tuple[int, int, int, int, int]:
    """A file's identity and version: ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)``."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def pread_span(fd: int, start: int, end: int) -> bytes:
    """Bytes ``start:end`` of the open file ``fd``, whatever the reads return in pieces.

    Raises:
        Changed: the file ends before ``end`` (it was cut short since it was indexed).
    """
    parts = []
    at = start
    while at < end:
        chunk = os.pread(fd, end - at, at)
        if not chunk:
            raise Changed()
        parts.append(chunk)
        at += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class CellSpan:
    """Where one cell lies: ``start``/``end``, and its ``outputs`` array and elements.

    ``outputs`` is the array's ``(start, end)`` and ``items`` the span of
    each output, or both None when the cell has no ``outputs`` key or its
    value is not an array (the caller decodes the whole cell to say so).
    """

    __slots__ = ("start", "end", "outputs", "items")

    def __init__(self, start: int, end: int, outputs: tuple[int, int] | None, items: tuple[tuple[int, int], ...] | None) -> None:
        self.start = start
        self.end = end
        self.outputs = outputs
        self.items = items


class NotebookIndex:
    """The offsets of a plain nbformat-4 notebook, and the ``fstat`` key of the file they describe."""

    __slots__ = ("key", "cells")

    def __init__(self, key: tuple[int, int, int, int, int], cells: list[CellSpan]) -> None:
        self.key = key
        self.cells = cells

    @property
    def approx_bytes(self) -> int:
        """Memory held, roughly (a few hundred bytes per cell)."""
        return 200 + sum(120 + 72 * len(c.items or ()) for c in self.cells)


def _cell_walk(window: JsonWindow) -> Callable[[int, int], tuple[CellSpan, int]]:
    """How the pass reads one cell: its span, and its ``outputs`` array and elements."""

    def outputs(pos: int, limit: int) -> tuple[Any, int]:
        if window.byte(pos) != 0x5B:
            return None, window.skip_value(pos, limit)
        items, end = window.elements(pos, limit)
        return ((pos, end), tuple(items)), end

    def cell(pos: int, limit: int) -> tuple[CellSpan, int]:
        if window.byte(pos) != 0x7B:
            raise Bail("a cell that is not an object")  # the full parse says which
        found, end = window.members(pos, limit, {"outputs": outputs})
        walked = found.get("outputs")
        if walked is None:
            return CellSpan(pos, end, None, None), end
        return CellSpan(pos, end, walked[0], walked[1]), end

    return cell


#: The depth limit a cell is read with: under the top object and the ``cells`` array.
_CELL_LIMIT = MAX_DEPTH - 2


def build_index(fd: int, info: os.stat_result) -> NotebookIndex:
    """Index the open regular file ``fd`` (``info`` is its ``fstat``) in one bounded pass.

    Raises:
        Bail: not a plain nbformat-4 notebook as the walk expects it.
        TooDeep: nested deeper than :data:`~jcli_sidecar.base.boundedjson.MAX_DEPTH`.
        Changed: the file changed during the pass.
    """
    cells = _index_cells(JsonWindow(fd, info.st_size))
    key = stat_key(info)
    if stat_key(os.fstat(fd)) != key:
        raise Changed()
    return NotebookIndex(key, cells)


def index_bytes(data: bytes, key: tuple[int, int, int, int, int]) -> NotebookIndex:
    """The index :func:`build_index` would make of a file holding ``data``, for the file whose key is ``key``.

    What a writer uses for a whole notebook it has just written from memory.

    Raises:
        Bail, TooDeep: as :func:`build_index`.
    """
    return NotebookIndex(key, _index_cells(JsonWindow.over(data)))


def _index_cells(window: JsonWindow) -> list[CellSpan]:
    cell = _cell_walk(window)

    def cells(pos: int, limit: int) -> tuple[list[CellSpan], int]:
        if jsonscan.native is None:
            return window.elements(pos, limit, cell)
        return _native_cells(window, cell, pos, limit)

    top, end = window.members(window.skip_ws(0), MAX_DEPTH, {"cells": cells})
    if not window.at_end(window.skip_ws(end)) or "nbformat" not in top or "cells" not in top:
        raise Bail("not a plain v4 notebook")
    start, stop = top["nbformat"]
    if stop - start > 64:
        raise Bail("odd nbformat")
    try:
        major = json.loads(window.read(start, stop))
    except ValueError:
        raise Bail("odd nbformat") from None
    if not isinstance(major, int) or isinstance(major, bool) or major != 4:
        raise Bail("not nbformat 4")  # the full parse explains or upgrades
    return top["cells"]


def _native_cells(window: JsonWindow, cell: Callable[[int, int], tuple[CellSpan, int]], pos: int, limit: int) -> tuple[list[CellSpan], int]:
    """The ``cells`` array at ``pos`` as :meth:`JsonWindow.elements` reads it with ``cell``, whole windows of cells in C.

    A cell the C walk hands back (anything not plain), or one longer than
    :data:`~jcli_sidecar.ipynb.jsonscan.CHUNK`, is read by ``cell``: its
    members one by one, each value passed by the C walk a window at a time.
    Each byte is looked at a bounded number of times, whatever the cells' sizes.
    """
    i = window.skip_ws(window.expect(pos, 0x5B))
    found: list[CellSpan] = []
    if window.byte(i) == 0x5D:
        return found, i + 1
    i = window.skip_ws(i)
    need = 1
    while True:
        buf, rel = window.at(i, need)
        spans, stop, closed = jsonscan.native.cells(buf, rel, limit - 1, window.base)  # type: ignore[union-attr]
        window.scanned += len(buf) - rel
        for start, end, outputs in spans:
            found.append(CellSpan(start, end, None, None) if outputs is None else CellSpan(start, end, outputs[0], outputs[1]))
        if closed:
            return found, stop
        have = window.base + len(buf) - stop
        if closed is None or not spans and (have >= jsonscan.CHUNK or window.base + len(buf) >= window.size):
            # A cell longer than a chunk, or one the C walk hands back: read key by key (each value
            # passed by the C walk, across windows), and the Python walk says what is wrong, if anything.
            span, end = cell(stop, limit - 1)
            found.append(span)
            after = window.after(end, 0x5D)
            if after < 0:
                return found, -after
            i, need = window.skip_ws(after), 1
            continue
        i, need = stop, have + 1  # the cell at stop runs past the window: read again from there


def cell_span(raw: bytes) -> CellSpan:
    """The spans :func:`build_index` finds in a cell whose bytes are ``raw``, counted from its first byte.

    What a writer uses to index a cell it has just laid out, without reading the file again.

    Raises:
        Bail, TooDeep: as :func:`build_index` would for the file holding it.
    """
    window = JsonWindow.over(raw)
    span, end = _cell_walk(window)(0, _CELL_LIMIT)
    if end != len(raw):
        raise Bail("more than one cell")
    return span


# -- indexes handed over by the program that wrote the file --------------------------------

#: How many handed-over indexes a process keeps (the newest).
ADOPTED_MAX = 8
_adopted: OrderedDict[tuple[int, int, int, int, int], NotebookIndex] = OrderedDict()
_adopted_lock = threading.Lock()
_adopted_used = [0]


_offers: OrderedDict[str, NotebookIndex] = OrderedDict()


def adopt(index: NotebookIndex, path: str | None = None) -> None:
    """Keep ``index``, which a j-cli writer made of the file it has just written, for this process's next reads.

    It is found by the file's ``fstat`` key alone (:func:`adopted`), so any
    other write since, which changes the key, leaves it unused: the file is
    indexed again. The key is the writer's own, taken after its write; like
    the writer's next splice, it takes a change that keeps size and both
    timestamps (a same-size rewrite within the same clock tick) for none.

    With the file's ``path``, the index is also kept for the workspace's
    sidecar (:func:`take_offers`), the newest per path.
    """
    with _adopted_lock:
        _adopted[index.key] = index
        _adopted.move_to_end(index.key)
        while len(_adopted) > ADOPTED_MAX:
            _adopted.popitem(last=False)
        if path is not None:
            _offers[path] = index
            _offers.move_to_end(path)
            while len(_offers) > ADOPTED_MAX:
                _offers.popitem(last=False)


def take_offers() -> list[tuple[str, NotebookIndex]]:
    """The ``(path, index)`` of each notebook this process wrote since the last call: what to offer the sidecar (``notebook.adopt``)."""
    with _adopted_lock:
        offers = list(_offers.items())
        _offers.clear()
    return offers


def adopted(key: tuple[int, int, int, int, int]) -> NotebookIndex | None:
    """The handed-over index of the file whose ``fstat`` key is ``key``, or None."""
    with _adopted_lock:
        index = _adopted.get(key)
        if index is not None:
            _adopted_used[0] += 1
        return index


def adopted_uses() -> int:
    """How many loads in this process took a handed-over index instead of building one."""
    return _adopted_used[0]


def index_to_wire(index: NotebookIndex) -> list[Any]:
    """``index`` as msgpack-able lists: ``[key, [[start, end] or [start, end, out_start, out_end, item_starts_and_ends], ...]]``."""
    cells: list[Any] = []
    for c in index.cells:
        if c.outputs is None or c.items is None:
            cells.append([c.start, c.end])
        else:
            cells.append([c.start, c.end, c.outputs[0], c.outputs[1], [n for item in c.items for n in item]])
    return [list(index.key), cells]


def index_from_wire(wire: Any) -> NotebookIndex:
    """The index :func:`index_to_wire` sent, checked: ints in order, each span within the one holding it.

    Raises:
        ValueError: anything else.
    """
    try:
        raw_key, raw_cells = wire
        key = tuple(raw_key)
        if len(key) != 5 or not all(type(n) is int for n in key):
            raise ValueError("bad key")
        cells: list[CellSpan] = []
        at = 0
        for raw in raw_cells:
            if not all(type(n) is int for n in raw[:4]) or not at <= raw[0] < raw[1] <= key[2]:
                raise ValueError("bad cell span")
            if len(raw) == 2:
                cells.append(CellSpan(raw[0], raw[1], None, None))
            else:
                start, end, out_start, out_end, flat = raw
                if not start < out_start < out_end < end or len(flat) % 2 or not all(type(n) is int for n in flat):
                    raise ValueError("bad outputs span")
                items = tuple(zip(flat[0::2], flat[1::2], strict=True))
                edge = out_start
                for a, b in items:
                    if not edge < a < b < out_end:
                        raise ValueError("bad output span")
                    edge = b
                cells.append(CellSpan(start, end, (out_start, out_end), items))
            at = raw[1]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not an index: {exc}") from None
    return NotebookIndex(key, cells)  # type: ignore[arg-type]


class MemberReader:
    """The members of objects in an open file, found by the same bounded walk, one window reused.

    Reads that go forward through the file (a cell, then its outputs) reuse
    the window; a value is passed over, never decoded, unless it is read.

    Raises (from :meth:`members`):
        Bail: not an object, or not JSON as the walk expects it.
        TooDeep: nested deeper than the walk allows.
    """

    __slots__ = ("_window",)

    def __init__(self, fd: int, size: int) -> None:
        self._window = JsonWindow(fd, size)

    def members(self, pos: int, nested: tuple[str, ...] = (), known: dict[str, int] | None = None) -> dict[str, Any]:
        """``{key: (start, end)}`` of the object at ``pos``; a key in ``nested`` maps to its own object's members.

        ``known`` gives the end of a value that starts where the walk
        meets it (an ``outputs`` array the index already spans), so it is
        not walked again.
        """
        window = self._window

        def inner(at: int, limit: int) -> tuple[Any, int]:
            if window.byte(at) != 0x7B:
                raise Bail("not an object")
            return window.members(at, limit, {})

        def spanned(end: int) -> Callable[[int, int], tuple[Any, int]]:
            return lambda at, limit: ((at, end), end)

        descend: dict[str, Callable[[int, int], tuple[Any, int]]] = {key: inner for key in nested}
        descend.update({key: spanned(end) for key, end in (known or {}).items()})
        pos = window.skip_ws(pos)
        if window.byte(pos) != 0x7B:
            raise Bail("not an object")
        return window.members(pos, MAX_DEPTH - 4, descend)[0]

    def read(self, start: int, end: int) -> bytes:
        """The bytes ``start:end`` (a value :meth:`members` spanned)."""
        return pread_span(self._window.fd, start, end)
