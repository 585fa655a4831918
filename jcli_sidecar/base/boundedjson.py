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

__all__ = ["Bail", "MAX_DEPTH", "NotUtf8", "TooDeep", "check_depth", "json_encoding", "loads"]

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


class NotUtf8(ValueError):
    """JSON bytes in another encoding than UTF-8 (``encoding`` names it): refused, not guessed."""

    def __init__(self, encoding: str) -> None:
        super().__init__(f"{encoding} text, not UTF-8")
        self.encoding = encoding


_ENCODING_NAMES = {
    "utf-16": "UTF-16 (with a byte order mark)",
    "utf-16-le": "UTF-16-LE",
    "utf-16-be": "UTF-16-BE",
    "utf-32": "UTF-32 (with a byte order mark)",
    "utf-32-le": "UTF-32-LE",
    "utf-32-be": "UTF-32-BE",
}


def json_encoding(raw: bytes) -> str | None:
    """The encoding ``json.loads`` would guess for ``raw`` when it is not UTF-8 (a UTF-8 byte order mark counts as UTF-8), else None.

    JSON exchanged between systems is UTF-8 (RFC 8259), and nbformat
    writes and reads notebooks as UTF-8 only; ``json.loads`` would decode
    UTF-16 and UTF-32 too, guessed from the first four bytes, while every
    byte-level walk here (the depth check, the offset index) reads UTF-8.

    Example:
        >>> json_encoding(b'{"a": 1}'), json_encoding("{}".encode("utf-16")), json_encoding('{"a":1}'.encode("utf-32-be"))
        (None, 'UTF-16 (with a byte order mark)', 'UTF-32-BE')
    """
    guessed = json.detect_encoding(raw[:4])
    return None if guessed in ("utf-8", "utf-8-sig") else _ENCODING_NAMES.get(guessed, guessed)


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
        NotUtf8: bytes in UTF-16 or UTF-32 (checked first: the depth check reads UTF-8).
        ValueError: not JSON (``json.JSONDecodeError``, ``UnicodeDecodeError``).

    Example:
        >>> loads(b'{"a": [1, 2]}')
        {'a': [1, 2]}
    """
    if isinstance(raw, (bytes, bytearray)) and (encoding := json_encoding(raw)) is not None:
        raise NotUtf8(encoding)
    check_depth(raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass"), limit)
    try:
        return json.loads(raw, parse_float=parse_float)
    except RecursionError:
        raise TooDeep(limit) from None
