"""Walk a JSON document's structure without building its values.

A notebook is mostly large strings (base64 images) that a read of one cell
never needs. These helpers find the byte span of each member or element
using C-speed searches (``bytes.find`` and one small regex), so only the
requested parts are ever decoded with :func:`json.loads`.

Every helper raises :class:`Bail` at anything it does not expect. Callers
then fall back to a full :func:`json.loads`, which is always right and
reports errors precisely; the walk only ever makes reads faster.
"""

from __future__ import annotations

import json
import re

__all__ = ["Bail", "elements", "members", "skip_value", "skip_ws"]

_WS = re.compile(rb"[ \t\n\r]*")
_STRUCT = re.compile(rb'["\[\]{}]')
_SCALAR_END = re.compile(rb"[,\]}]")
_QUOTE, _BACKSLASH = 0x22, 0x5C
_OPEN = (0x5B, 0x7B)  # [ {
_CLOSE = (0x5D, 0x7D)  # ] }


class Bail(Exception):
    """The walk met something unexpected; parse the whole document instead."""


def skip_ws(buf: bytes, i: int) -> int:
    return _WS.match(buf, i).end()


def _skip_string(buf: bytes, i: int) -> int:
    """``buf[i]`` is an opening quote; return the index after the closing one."""
    k = i + 1
    while True:
        q = buf.find(b'"', k)
        if q < 0:
            raise Bail("unterminated string")
        b = q - 1
        while buf[b] == _BACKSLASH:
            b -= 1
        if (q - 1 - b) % 2 == 0:  # an even run of backslashes: a real quote
            return q + 1
        k = q + 1


def skip_value(buf: bytes, i: int) -> int:
    """Return the index just after the JSON value that starts at ``buf[i]``."""
    if i >= len(buf):
        raise Bail("unexpected end")
    c = buf[i]
    if c == _QUOTE:
        return _skip_string(buf, i)
    if c not in _OPEN:
        m = _SCALAR_END.search(buf, i)
        if m is None:
            raise Bail("unterminated scalar")
        end = m.start()
        while end > i and buf[end - 1] in b" \t\n\r":
            end -= 1
        if end == i:
            raise Bail("empty value")
        return end
    depth = 0
    while True:
        m = _STRUCT.search(buf, i)
        if m is None:
            raise Bail("unbalanced brackets")
        j = m.start()
        c = buf[j]
        if c == _QUOTE:
            i = _skip_string(buf, j)
            continue
        depth += 1 if c in _OPEN else -1
        i = j + 1
        if depth == 0:
            return i
        if depth < 0:
            raise Bail("unbalanced brackets")


def _expect(buf: bytes, i: int, char: bytes) -> int:
    i = skip_ws(buf, i)
    if buf[i : i + 1] != char:
        raise Bail(f"expected {char!r}")
    return i + 1


def members(buf: bytes, i: int) -> tuple[dict[str, tuple[int, int]], int]:
    """The object at ``buf[i]``: ``({key: (value_start, value_end)}, end)``.

    Duplicate keys bail (their meaning would depend on the parser).
    """
    i = _expect(buf, i, b"{")
    found: dict[str, tuple[int, int]] = {}
    i = skip_ws(buf, i)
    if buf[i : i + 1] == b"}":
        return found, i + 1
    while True:
        i = skip_ws(buf, i)
        if buf[i : i + 1] != b'"':
            raise Bail("expected a key")
        key_end = _skip_string(buf, i)
        try:
            key = json.loads(buf[i:key_end])
        except ValueError:
            raise Bail("bad key") from None
        if key in found:
            raise Bail("duplicate key")
        i = skip_ws(buf, _expect(buf, key_end, b":"))
        end = skip_value(buf, i)
        found[key] = (i, end)
        i = skip_ws(buf, end)
        if buf[i : i + 1] == b",":
            i += 1
            continue
        if buf[i : i + 1] == b"}":
            return found, i + 1
        raise Bail("expected , or }")


def elements(buf: bytes, i: int) -> tuple[list[tuple[int, int]], int]:
    """The array at ``buf[i]``: ``([(start, end), ...], end)``."""
    i = _expect(buf, i, b"[")
    spans: list[tuple[int, int]] = []
    i = skip_ws(buf, i)
    if buf[i : i + 1] == b"]":
        return spans, i + 1
    while True:
        i = skip_ws(buf, i)
        end = skip_value(buf, i)
        spans.append((i, end))
        i = skip_ws(buf, end)
        if buf[i : i + 1] == b",":
            i += 1
            continue
        if buf[i : i + 1] == b"]":
            return spans, i + 1
        raise Bail("expected , or ]")
