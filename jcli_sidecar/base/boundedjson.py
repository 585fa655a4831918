"""JSON with bounded nesting: :func:`loads` refuses a document nested deeper than :data:`MAX_DEPTH`.

The depth is checked first, without parsing (:func:`check_depth`: C-speed
searches for brackets and strings), so no later step (a parse, a dump, the
msgpack wire) ever meets a value too deep for it. The walk that finds a
notebook's cells and outputs without building them is the offset index's
(:mod:`jcli_sidecar.ipynb.nbindex`); :class:`Bail` is how it, and the
splice, give up on the unexpected and parse the whole document instead.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["Bail", "MAX_DEPTH", "TooDeep", "check_depth", "loads"]

#: The deepest nesting of arrays and objects j-cli reads (a notebook, a
#: manifest, a request). Far above real data, far below Python's recursion
#: limit and msgpack's nesting limit (511), which a deeper value would hit.
MAX_DEPTH = 256

_STRUCT = re.compile(rb'["\[\]{}]')
_QUOTE, _BACKSLASH = 0x22, 0x5C
_OPEN = (0x5B, 0x7B)  # [ {


class Bail(Exception):
    """The walk met something unexpected; parse the whole document instead."""


class TooDeep(ValueError):
    """JSON nested deeper than :data:`MAX_DEPTH`: refused, not parsed."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")


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
        jcli_sidecar.base.boundedjson.TooDeep: JSON nested deeper than 2 levels
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
