"""A bounded window over a JSON file, and the C-speed ways through it the offset index takes.

:class:`JsonWindow` holds at most a chunk of the file (:data:`CHUNK`, read
with ``pread``) and moves through it by byte offsets. It knows two ways past
a value:

* the exact walk (:meth:`JsonWindow.walk_value`): strings skipped by their
  quotes (an even run of backslashes before a quote ends a string),
  containers by balanced brackets, one Python step per quote or bracket;
* the fast ways, tried first: a string is one ``bytes.find``; an array (text
  stored as lines, many short strings) goes through ``json``'s C decoder on a
  bounded window; an object is passed member by member with compiled
  patterns that take a key and its colon, or a short scalar, in one match,
  so the Python steps follow the members, not the bytes of their values.

Where the package was built with its C walk (:data:`native`, from
``_nbwalk.c``), every value is passed by it first, a window at a time, and the
offset index reads whole windows of cells through it; the ways above are
what runs without it, and what decides whenever the C walk hands a value back.

A fast way answers only for plain JSON, where it ends exactly where the walk
would; anything else (an escaped key, odd spacing, a value deeper than the
limit, a token cut by the window's end that a re-read cannot help) makes it
give up, and the walk decides, with the same result and the same
:class:`~jcli_sidecar.base.boundedjson.Bail` or
:class:`~jcli_sidecar.base.boundedjson.TooDeep` as before. Nothing is ever
decoded but arrays of up to :data:`FAST_MAX` bytes (the C decoder) and keys.
"""

from __future__ import annotations

import json
import os
import re

from ..base.boundedjson import Bail, TooDeep

try:  # the walk in C, built with the package where a compiler is at hand
    from . import _nbwalk as native
except ImportError:  # pragma: no cover - the Python ways alone
    native = None

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["CHUNK", "FAST_FIRST", "FAST_MAX", "JsonWindow", "NATIVE_MAX", "key_text"]

#: How much of the file the window holds at once (a value it skips is never held whole).
CHUNK = 1 << 20
#: Arrays up to :data:`FAST_MAX` bytes are skipped by the C JSON decoder,
#: first tried on :data:`FAST_FIRST` bytes; bigger ones are walked.
FAST_FIRST = 4 << 10
FAST_MAX = 2 << 20
#: The biggest window the C walk (:data:`native`) is given for one value or
#: cell; a longer one is walked in Python, a chunk at a time.
NATIVE_MAX = 16 << 20
#: The longest token a fast pattern matches (whitespace runs, keys and
#: scalars are capped well below it): the window holds this much past a
#: position before a pattern runs there, so no match is cut by its end.
LOOK = 1024
_DECODER = json.JSONDecoder()
_STR_ONLY = {str}

_WS = re.compile(rb"[ \t\n\r]*")
_STRUCT = re.compile(rb'["\[\]{}]')
_SCALAR_END = re.compile(rb"[,\]}]")
# The fast patterns: spacing, keys and scalars each capped so a match fits in LOOK.
_KEY = re.compile(rb'[ \t\n\r]{0,128}+"([^"\\]{0,256}+)"[ \t\n\r]{0,128}+:[ \t\n\r]{0,128}+')
_SCALAR = re.compile(rb"[-+.0-9A-Za-z]{1,64}+")
_AFTER_MEMBER = re.compile(rb"[ \t\n\r]{0,128}+([,}])")
_OBJECT_END = re.compile(rb"[ \t\n\r]{0,128}+}")
# A short array of short strings (a cell's source, a ``text/plain`` repr), all in one match.
_STR = rb'"[^"\\]{0,128}+(?:\\.[^"\\]{0,128}+){0,16}+"'
_SMALL_ARRAY = re.compile(
    rb"\[[ \t\n\r]{0,128}+(?:\]|" + _STR + rb"[ \t\n\r]{0,128}+(?:,[ \t\n\r]{0,128}+" + _STR + rb"[ \t\n\r]{0,128}+){0,15}+\])", re.S
)
_QUOTE, _BACKSLASH, _COMMA = 0x22, 0x5C, 0x2C
_OPEN = (0x5B, 0x7B)  # [ {
_SPACE = b" \t\n\r"


class JsonWindow:
    """A bounded view of the file: the bytes from ``base`` on, refilled by ``pread``."""

    __slots__ = ("fd", "size", "base", "buf")

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self.base = 0
        self.buf = b""

    @classmethod
    def over(cls, data: bytes) -> JsonWindow:
        """A window over bytes in memory (a cell just written): all of them, nothing read."""
        window = cls(-1, len(data))
        window.buf = data
        return window

    def at(self, pos: int, need: int = 1) -> tuple[bytes, int]:
        """The buffer and the index of ``pos`` in it, with ``need`` bytes from there when the file has them."""
        rel = pos - self.base
        if 0 <= rel and rel + need <= len(self.buf) or self.fd < 0:
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

    def look(self, pos: int) -> tuple[bytes, int]:
        """Like :meth:`at`, with :data:`LOOK` bytes from ``pos`` (or all the file has): room for any fast match."""
        rel = pos - self.base
        buf = self.buf
        if 0 <= rel and (rel + LOOK <= len(buf) or self.base + len(buf) >= self.size):
            return buf, rel
        return self.at(pos, LOOK)

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
        k = pos + 1
        carried = 0  # backslashes just before k, seen in an earlier window
        if 0 <= rel < len(buf):  # the usual case: the closing quote is in the window, no backslash before it
            q = buf.find(b'"', rel + 1)
            if q == rel + 1 or (q > rel + 1 and buf[q - 1] != _BACKSLASH):
                return self.base + q + 1
            if q < 0:  # not in this window: go on from its end
                j = len(buf) - 1
                while j > rel and buf[j] == _BACKSLASH:
                    j -= 1
                carried = len(buf) - 1 - j
                k = self.base + len(buf)
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
        """The position just after the JSON value at ``pos``, nested at most ``limit`` deep.

        A string is one ``find``, an array up to :data:`FAST_MAX` goes
        through the C decoder (:meth:`decoded_end`), an object member by
        member (:meth:`fast_object`); whatever they refuse is walked
        (:meth:`walk_value`), which holds one chunk.

        Raises:
            Bail: not a value the walk can pass.
            TooDeep: nested deeper than ``limit``.
        """
        if native is not None:
            end = self.native_end(pos, limit)
            return self.walk_value(pos, limit) if end is None else end
        c = self.byte(pos)
        if c == _QUOTE:
            return self.skip_string(pos)
        if c == 0x5B:
            end = self.decoded_end(pos, limit)
            if end is not None:
                return end
        elif c == 0x7B:
            end = self.fast_object(pos, limit)
            if end is not None:
                return end
        return self.walk_value(pos, limit)

    def native_end(self, pos: int, limit: int) -> int | None:
        """The end of the value at ``pos`` found by the C walk, or None (the Python walk decides).

        The C walk stops where the walk would; a value that runs past the
        window is tried again on a longer one read from ``pos``, up to
        :data:`NATIVE_MAX`.
        """
        need = 1
        while True:
            buf, rel = self.at(pos, need)
            end = native.value_end(buf, rel, limit)
            if end >= 0:
                return self.base + end
            have = len(buf) - rel
            if end < -1 or self.base + len(buf) >= self.size or have >= NATIVE_MAX:
                return None
            need = min(have + 1 if have < CHUNK else have * 4, NATIVE_MAX)

    def fast_object(self, pos: int, limit: int) -> int | None:
        """The end of the object at ``pos`` passed member by member, or None (the walk decides).

        Only plain JSON passes: keys without escapes, scalars that are one
        short token, capped spacing, nesting within ``limit``. On such text
        the walk meets the same quotes and brackets, so it would end at the
        same place.
        """
        if limit < 1:
            return None
        buf, rel = self.look(pos + 1)
        m = _KEY.match(buf, rel)
        if m is None:
            m = _OBJECT_END.match(buf, rel)
            return None if m is None else self.base + m.end()
        while True:
            at = m.end()
            if at >= len(buf):
                return None
            c = buf[at]
            value = self.base + at
            if c == _QUOTE:
                end = self.skip_string(value)
            elif c == 0x5B:
                end = self.decoded_end(value, limit - 1)
            elif c == 0x7B:
                end = self.fast_object(value, limit - 1)
            else:
                s = _SCALAR.match(buf, at)
                end = None if s is None else self.base + s.end()
            if end is None:
                return None
            buf, rel = self.look(end)
            c = buf[rel] if rel < len(buf) else -1
            if c == _COMMA:
                rel += 1
            elif c == 0x7D:
                return end + 1
            else:
                m = _AFTER_MEMBER.match(buf, rel)
                if m is None:
                    return None
                rel = m.end()
                if buf[rel - 1] != _COMMA:
                    return self.base + rel
            m = _KEY.match(buf, rel)
            if m is None:
                return None

    def decoded_end(self, pos: int, limit: int) -> int | None:
        """The end of the array at ``pos`` found by ``json``'s C scanner, or None (too big, not JSON, maybe too deep).

        Arrays are what a notebook holds many short strings in (text as
        lines), which the C scanner passes far faster than a walk; a big
        string (an image) is faster to walk (one ``find``).
        """
        if limit >= 1:  # flat: within any limit the walk could have
            buf, rel = self.at(pos)  # a match is whole (it has its closing bracket); a miss cut by the window's end costs a decode
            m = _SMALL_ARRAY.match(buf, rel)
            if m is not None:
                return self.base + m.end()
        guess = self.lines_guess(pos)
        size = guess if guess is not None and guess <= FAST_MAX else FAST_FIRST
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

    def lines_guess(self, pos: int) -> int | None:
        """How long the array at ``pos`` likely is when it holds text as lines, or None.

        Jupyter writes such an array one string a line, each one space
        deeper than the line the array opens on, and its closing bracket at
        that line's depth: one ``find`` for a line break, that many spaces
        and the bracket.
        """
        buf, rel = self.at(pos)
        line = buf.rfind(b"\n", 0, rel) + 1
        if line == 0 and self.base > 0:
            return None  # the line starts before the window
        indent = rel - line - len(buf[line:rel].lstrip(b" "))
        end = buf.find(b"\n" + b" " * indent + b"]", rel, rel + FAST_MAX)
        return None if end < 0 else end - rel + indent + 2

    def walk_value(self, pos: int, limit: int) -> int:
        """The exact walk past the value at ``pos``: quote by quote and bracket by bracket."""
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
                end = self.decoded_end(j, limit - depth)
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

    def key(self, pos: int) -> tuple[str, int]:
        """The key that starts at (or after spacing from) ``pos``, and where its value starts."""
        buf, rel = self.look(pos)
        m = _KEY.match(buf, rel)
        if m is not None and m.end() < len(buf) and buf[m.end()] not in _SPACE:
            try:
                return m.group(1).decode("utf-8"), self.base + m.end()
            except UnicodeDecodeError:
                raise Bail("bad key") from None
        i = self.skip_ws(pos)
        if self.byte(i) != _QUOTE:
            raise Bail("expected a key")
        key_end = self.skip_string(i)
        key = key_text(self.read(i, key_end))
        return key, self.skip_ws(self.expect(key_end, 0x3A))

    def members(self, pos: int, limit: int, descend: dict[str, Callable[[int, int], tuple[Any, int]]]) -> tuple[dict[str, Any], int]:
        """The object at ``pos``: ``{key: (start, end)}`` (or what ``descend[key]`` made of it), and its end."""
        i = self.skip_ws(self.expect(pos, 0x7B))
        found: dict[str, Any] = {}
        if self.byte(i) == 0x7D:
            return found, i + 1
        while True:
            key, i = self.key(i)
            if key in found:
                raise Bail("duplicate key")
            walk = descend.get(key)
            if walk is None:
                end = self.skip_value(i, limit - 1)
                found[key] = (i, end)
            else:
                found[key], end = walk(i, limit - 1)
            i = self.after(end, 0x7D)
            if i < 0:
                return found, -i

    def after(self, end: int, close: int) -> int:
        """Past the spacing and comma after an item: where the next one starts, or minus the position after ``close``."""
        rel = end - self.base
        buf = self.buf
        if 0 <= rel < len(buf) - 1:  # the usual case: the separator right there
            c = buf[rel]
            if c == _COMMA:
                return end + 1
            if c == close:
                return -(end + 1)
        i = self.skip_ws(end)
        c = self.byte(i)
        if c == _COMMA:
            return i + 1
        if c == close:
            return -(i + 1)
        raise Bail(f"expected , or {chr(close)}")

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
            i = self.after(end, 0x5D)
            if i < 0:
                return items, -i


def _deeper(value: Any, limit: int) -> bool:
    """True when ``value`` nests more than ``limit`` arrays and objects."""
    if limit < 1:
        return isinstance(value, (list, dict))
    if isinstance(value, list):
        return any(_deeper(item, limit - 1) for item in value if type(item) is not str)
    if isinstance(value, dict):
        return any(_deeper(item, limit - 1) for item in value.values() if type(item) is not str)
    return False


def key_text(raw: bytes) -> str:
    """The text of a key's raw bytes, quotes included.

    Raises:
        Bail: not a JSON string (a bad escape, not UTF-8).
    """
    try:
        if b"\\" not in raw:
            return raw[1:-1].decode("utf-8")
        key = json.loads(raw)
    except ValueError:
        raise Bail("bad key") from None
    return key
