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

from ..base.boundedjson import MAX_DEPTH, Bail
from .jsonscan import JsonWindow

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CellSpan", "Changed", "NotebookIndex", "build_index", "pread_span", "stat_key"]


class Changed(Exception):
    """The file changed while it was indexed or read: start again."""


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


def build_index(fd: int, info: os.stat_result) -> NotebookIndex:
    """Index the open regular file ``fd`` (``info`` is its ``fstat``) in one bounded pass.

    Raises:
        Bail: not a plain nbformat-4 notebook as the walk expects it.
        TooDeep: nested deeper than :data:`~jcli_sidecar.base.boundedjson.MAX_DEPTH`.
        Changed: the file changed during the pass.
    """
    window = JsonWindow(fd, info.st_size)

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

    def cells(pos: int, limit: int) -> tuple[list[CellSpan], int]:
        return window.elements(pos, limit, cell)

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
    key = stat_key(info)
    if stat_key(os.fstat(fd)) != key:
        raise Changed()
    return NotebookIndex(key, top["cells"])
