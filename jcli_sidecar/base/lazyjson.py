"""Walk a JSON document's structure without building its values.

A notebook is mostly large strings (base64 images) that a read of one cell
never needs. These helpers find the byte span of each member or element
using C-speed searches (``bytes.find`` and one small regex), so only the
requested parts are ever decoded with :func:`json.loads`.

Every helper raises :class:`Bail` at anything it does not expect. Callers
then fall back to a full :func:`json.loads`, which is always right and
reports errors precisely; the walk only ever makes reads faster.

Nesting is bounded: JSON deeper than :data:`MAX_DEPTH` is refused
(:class:`TooDeep`) by the walk and by :func:`loads`, so no later step (a
parse, a dump, the msgpack wire) ever meets a value too deep for it.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["Bail", "MAX_DEPTH", "TooDeep", "check_depth", "elements", "loads", "members", "skip_value", "skip_ws"]

#: The deepest nesting of arrays and objects j-cli reads (a notebook, a
#: manifest, a request). Far above real data, far below Python's recursion
#: limit and msgpack's nesting limit (511), which a deeper value would hit.
MAX_DEPTH = 256

_WS = re.compile(rb"[ \t\n\r]*")
_STRUCT = re.compile(rb'["\[\]{}]')
_SCALAR_END = re.compile(rb"[,\]}]")
_QUOTE, _BACKSLASH = 0x22, 0x5C
_OPEN = (0x5B, 0x7B)  # [ {
_CLOSE = (0x5D, 0x7D)  # ] }


class Bail(Exception):
    """The walk met something unexpected; parse the whole document instead."""


class TooDeep(ValueError):
    """JSON nested deeper than :data:`MAX_DEPTH`: refused, not parsed."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")


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


def skip_value(buf: bytes, i: int, limit: int = MAX_DEPTH) -> int:
    """Return the index just after the JSON value that starts at ``buf[i]``.

    Raises:
        Bail: not a JSON value.
        TooDeep: nested deeper than ``limit``.
    """
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
        if depth > limit:
            raise TooDeep()  # the document's limit, whatever level this value starts at


def _expect(buf: bytes, i: int, char: bytes) -> int:
    i = skip_ws(buf, i)
    if buf[i : i + 1] != char:
        raise Bail(f"expected {char!r}")
    return i + 1


def members(buf: bytes, i: int, limit: int = MAX_DEPTH) -> tuple[dict[str, tuple[int, int]], int]:
    """The object at ``buf[i]``: ``({key: (value_start, value_end)}, end)``.

    Duplicate keys bail (their meaning would depend on the parser). The
    object counts as one level of ``limit``.
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
        end = skip_value(buf, i, limit - 1)
        found[key] = (i, end)
        i = skip_ws(buf, end)
        if buf[i : i + 1] == b",":
            i += 1
            continue
        if buf[i : i + 1] == b"}":
            return found, i + 1
        raise Bail("expected , or }")


def elements(buf: bytes, i: int, limit: int = MAX_DEPTH) -> tuple[list[tuple[int, int]], int]:
    """The array at ``buf[i]``: ``([(start, end), ...], end)``; the array counts as one level of ``limit``."""
    i = _expect(buf, i, b"[")
    spans: list[tuple[int, int]] = []
    i = skip_ws(buf, i)
    if buf[i : i + 1] == b"]":
        return spans, i + 1
    while True:
        i = skip_ws(buf, i)
        end = skip_value(buf, i, limit - 1)
        spans.append((i, end))
        i = skip_ws(buf, end)
        if buf[i : i + 1] == b",":
            i += 1
            continue
        if buf[i : i + 1] == b"]":
            return spans, i + 1
        raise Bail("expected , or ]")


def check_depth(buf: bytes, limit: int = MAX_DEPTH) -> None:
    """Refuse a document nested deeper than ``limit``, without parsing it.

    Malformed input is left to the parser, which reports it precisely.

    Raises:
        TooDeep: nested deeper than ``limit``.

    Example:
        >>> check_depth(b'[[1], {"a": "[[[["}]', limit=2)
        >>> check_depth(b"[[[]]]", limit=2)
        Traceback (most recent call last):
        ...
        jcli_sidecar.base.lazyjson.TooDeep: JSON nested deeper than 2 levels
    """
    depth = 0
    i = 0
    search = _STRUCT.search
    while True:
        m = search(buf, i)
        if m is None:
            return
        j = m.start()
        c = buf[j]
        if c == _QUOTE:
            try:
                i = _skip_string(buf, j)
            except Bail:
                return
            continue
        if c in _OPEN:
            depth += 1
            if depth > limit:
                raise TooDeep(limit)
        else:
            depth -= 1
        i = j + 1


def loads(raw: bytes | str, limit: int = MAX_DEPTH, parse_float: Callable[[str], Any] | None = None) -> Any:
    """``json.loads``, but nesting deeper than ``limit`` is a :class:`TooDeep` (a ``ValueError``).

    ``parse_float`` is passed to ``json.loads`` (None: plain floats).

    Raises:
        TooDeep: nested too deeply (never a ``RecursionError``).
        ValueError: not JSON (``json.JSONDecodeError``, ``UnicodeDecodeError``).

    Example:
        >>> loads(b'{"a": [1, 2]}')
        {'a': [1, 2]}
    """
    check_depth(raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass"), limit)
    try:
        return json.loads(raw, parse_float=parse_float)
    except RecursionError:
        raise TooDeep(limit) from None
