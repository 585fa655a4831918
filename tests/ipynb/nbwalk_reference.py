"""The offset-index walker as it was before the C-speed scanner: the reference the scanner must equal.

A verbatim copy of the earlier token-by-token walk (one Python call per JSON
token), kept only so tests can build an index both ways and compare them.
"""

from __future__ import annotations

import json
import os
import re

from jcli_sidecar.base.boundedjson import MAX_DEPTH, Bail, TooDeep
from jcli_sidecar.ipynb.nbindex import CellSpan, Changed, NotebookIndex, stat_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: How much of the file the walk holds at once (a value it skips is never held whole).
CHUNK = 1 << 20
#: Values up to this size are skipped by the C JSON decoder (first tried on
#: :data:`FAST_FIRST` bytes); bigger ones are walked, one chunk at a time.
FAST_FIRST = 4 << 10
FAST_MAX = 2 << 20
_DECODER = json.JSONDecoder()
_STR_ONLY = {str}

_WS = re.compile(rb"[ \t\n\r]*")
_STRUCT = re.compile(rb'["\[\]{}]')
_SCALAR_END = re.compile(rb"[,\]}]")
_QUOTE, _BACKSLASH = 0x22, 0x5C
_OPEN = (0x5B, 0x7B)  # [ {
_SPACE = b" \t\n\r"


class _Window:
    """A bounded view of the file: the bytes from ``base`` on, refilled by ``pread``."""

    __slots__ = ("fd", "size", "base", "buf")

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self.base = 0
        self.buf = b""

    def at(self, pos: int, need: int = 1) -> tuple[bytes, int]:
        """The buffer and the index of ``pos`` in it, with ``need`` bytes from there when the file has them."""
        rel = pos - self.base
        if 0 <= rel and rel + need <= len(self.buf):
            return self.buf, rel
        # Read afresh from pos: what is kept of the old window is small, and
        # joining it to the new one would copy the whole chunk again.
        target = min(max(need, CHUNK), max(self.size - pos, 0))
        buf = os.pread(self.fd, target, pos) if target else b""
        while len(buf) < target:  # a short read: rare on a regular file
            more = os.pread(self.fd, target - len(buf), pos + len(buf))
            if not more:
                break
            buf += more
        self.buf = buf
        self.base = pos
        return buf, 0

    def at_end(self, pos: int) -> bool:
        return pos >= self.size

    def byte(self, pos: int) -> int:
        rel = pos - self.base
        if 0 <= rel < len(self.buf):
            return self.buf[rel]
        if pos >= self.size:
            raise Bail("unexpected end")
        buf, rel = self.at(pos)
        if rel >= len(buf):
            raise Bail("unexpected end")
        return buf[rel]

    def read(self, start: int, end: int) -> bytes:
        buf, rel = self.at(start, end - start)
        if rel + (end - start) > len(buf):
            raise Bail("unexpected end")
        return buf[rel : rel + end - start]

    def skip_ws(self, pos: int) -> int:
        rel = pos - self.base
        buf = self.buf
        if 0 <= rel < len(buf):
            if buf[rel] not in _SPACE:
                return pos
            end = _WS.match(buf, rel).end()
            if end < len(buf):
                return self.base + end
        while True:
            buf, rel = self.at(pos)
            end = _WS.match(buf, rel).end()
            pos = self.base + end
            if end < len(buf) or self.at_end(pos):
                return pos

    def skip_string(self, pos: int) -> int:
        """``pos`` is an opening quote; the position after the closing one."""
        rel = pos - self.base
        buf = self.buf
        if 0 <= rel < len(buf):  # the usual case: the closing quote is in the window, no backslash before it
            q = buf.find(b'"', rel + 1)
            if q == rel + 1 or (q > rel + 1 and buf[q - 1] != _BACKSLASH):
                return self.base + q + 1
        k = pos + 1
        carried = 0  # backslashes just before k, seen in an earlier window
        while True:
            if self.at_end(k):
                raise Bail("unterminated string")
            buf, rel = self.at(k)
            q = buf.find(b'"', rel)
            if q < 0:
                j = len(buf) - 1
                while j >= rel and buf[j] == _BACKSLASH:
                    j -= 1
                run = len(buf) - 1 - j
                carried = carried + run if j < rel else run
                k = self.base + len(buf)
                continue
            j = q - 1
            while j >= rel and buf[j] == _BACKSLASH:
                j -= 1
            run = q - 1 - j + (carried if j < rel else 0)
            if run % 2 == 0:  # an even run of backslashes: a real quote
                return self.base + q + 1
            k = self.base + q + 1
            carried = 0

    def skip_value(self, pos: int, limit: int) -> int:
        """The position just after the JSON value at ``pos``.

        A value that fits :data:`FAST_MAX` is passed over by the C decoder
        (:meth:`_decoded_end`); anything else, or anything it refuses, is
        walked quote by quote and bracket by bracket, which holds one chunk.
        """
        if self.byte(pos) == 0x5B:
            end = self._decoded_end(pos, limit)
            if end is not None:
                return end
        return self._walk_value(pos, limit)

    def _decoded_end(self, pos: int, limit: int) -> int | None:
        """The end of the array at ``pos`` found by ``json``'s C scanner, or None (too big, not JSON, maybe too deep).

        Arrays are what a notebook holds many short strings in (text as
        lines), which the C scanner passes far faster than a walk; a big
        string (an image) is faster to walk (one ``find``).
        """
        size = FAST_FIRST
        while size <= FAST_MAX:
            buf, rel = self.at(pos, size)
            piece = buf[rel : rel + size]
            whole = self.base + rel + len(piece) >= self.size
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError as exc:
                if whole or exc.start < len(piece) - 3:
                    return None
                try:  # a character cut at the end of the window
                    text = piece[: exc.start].decode("utf-8")
                except UnicodeDecodeError:
                    return None
            try:
                value, end = _DECODER.raw_decode(text)
            except ValueError:
                if whole:
                    return None
                size *= 8
                continue
            except RecursionError:
                return None
            if end == len(text) and not whole and text[-1:].isdigit():
                size *= 8  # a number may go on past the window
                continue
            size = end if piece.isascii() else len(text[:end].encode("utf-8"))
            span = piece[:size]
            flat = type(value) is list and set(map(type, value)) <= _STR_ONLY  # text as lines: one level
            if not flat and span.count(b"[") + span.count(b"{") > limit and _deeper(value, limit):
                return None  # nested too deep: the walk says so
            return pos + size
        return None

    def _walk_value(self, pos: int, limit: int) -> int:
        c = self.byte(pos)
        if c == _QUOTE:
            return self.skip_string(pos)
        if c not in _OPEN:
            need = 64
            while True:
                buf, rel = self.at(pos, need)
                m = _SCALAR_END.search(buf, rel)
                if m is not None:
                    end = m.start()
                    break
                if self.at_end(self.base + len(buf)):
                    raise Bail("unterminated scalar")
                need *= 2
            while end > rel and buf[end - 1] in _SPACE:
                end -= 1
            if end == rel:
                raise Bail("empty value")
            return self.base + end
        depth = 0
        i = pos
        while True:
            if self.at_end(i):
                raise Bail("unbalanced brackets")
            buf, rel = self.at(i)
            m = _STRUCT.search(buf, rel)
            if m is None:
                i = self.base + len(buf)
                continue
            j = self.base + m.start()
            c = buf[m.start()]
            if c == _QUOTE:
                i = self.skip_string(j)
                continue
            if c == 0x5B and depth > 0:
                end = self._decoded_end(j, limit - depth)
                if end is not None:
                    i = end
                    continue
            depth += 1 if c in _OPEN else -1
            i = j + 1
            if depth == 0:
                return i
            if depth < 0:
                raise Bail("unbalanced brackets")
            if depth > limit:
                raise TooDeep()

    def expect(self, pos: int, char: int) -> int:
        rel = pos - self.base
        if 0 <= rel < len(self.buf) and self.buf[rel] == char:
            return pos + 1
        pos = self.skip_ws(pos)
        if self.at_end(pos) or self.byte(pos) != char:
            raise Bail(f"expected {chr(char)!r}")
        return pos + 1

    def members(self, pos: int, limit: int, descend: dict[str, Callable[[int, int], tuple[Any, int]]]) -> tuple[dict[str, Any], int]:
        """The object at ``pos``: ``{key: (start, end)}`` (or what ``descend[key]`` made of it), and its end."""
        i = self.skip_ws(self.expect(pos, 0x7B))
        found: dict[str, Any] = {}
        if self.byte(i) == 0x7D:
            return found, i + 1
        while True:
            i = self.skip_ws(i)
            if self.byte(i) != _QUOTE:
                raise Bail("expected a key")
            key_end = self.skip_string(i)
            key = _key_text(self.read(i, key_end))
            if key in found:
                raise Bail("duplicate key")
            i = self.skip_ws(self.expect(key_end, 0x3A))
            walk = descend.get(key)
            if walk is None:
                end = self.skip_value(i, limit - 1)
                found[key] = (i, end)
            else:
                found[key], end = walk(i, limit - 1)
            i = self.skip_ws(end)
            c = self.byte(i)
            if c == 0x2C:
                i += 1
                continue
            if c == 0x7D:
                return found, i + 1
            raise Bail("expected , or }")

    def elements(self, pos: int, limit: int, each: Callable[[int, int], tuple[Any, int]] | None = None) -> tuple[list[Any], int]:
        """The array at ``pos``: the ``(start, end)`` of each element (or what ``each`` made of it), and its end."""
        i = self.skip_ws(self.expect(pos, 0x5B))
        items: list[Any] = []
        if self.byte(i) == 0x5D:
            return items, i + 1
        while True:
            i = self.skip_ws(i)
            if each is None:
                end = self.skip_value(i, limit - 1)
                items.append((i, end))
            else:
                item, end = each(i, limit - 1)
                items.append(item)
            i = self.skip_ws(end)
            c = self.byte(i)
            if c == 0x2C:
                i += 1
                continue
            if c == 0x5D:
                return items, i + 1
            raise Bail("expected , or ]")


def _deeper(value: Any, limit: int) -> bool:
    """True when ``value`` nests more than ``limit`` arrays and objects."""
    if limit < 1:
        return isinstance(value, (list, dict))
    if isinstance(value, list):
        return any(_deeper(item, limit - 1) for item in value if type(item) is not str)
    if isinstance(value, dict):
        return any(_deeper(item, limit - 1) for item in value.values() if type(item) is not str)
    return False


def _key_text(raw: bytes) -> str:
    try:
        if b"\\" not in raw:
            return raw[1:-1].decode("utf-8")
        key = json.loads(raw)
    except ValueError:
        raise Bail("bad key") from None
    return key


def reference_build_index(fd: int, info: os.stat_result) -> NotebookIndex:
    """Index the open regular file ``fd`` (``info`` is its ``fstat``) in one bounded pass.

    Raises:
        Bail: not a plain nbformat-4 notebook as the walk expects it.
        TooDeep: nested deeper than :data:`~jcli_sidecar.base.boundedjson.MAX_DEPTH`.
        Changed: the file changed during the pass.
    """
    window = _Window(fd, info.st_size)

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
