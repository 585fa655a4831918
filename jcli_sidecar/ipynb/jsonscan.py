"""A bounded window over a JSON file, and the two walks through it the offset index takes.

:class:`JsonWindow` holds at most a chunk of the file (:data:`CHUNK`, read
with ``pread``) and moves through it by byte offsets. It passes a value in
one of two ways, each linear in the bytes it passes:

* the C walk (:data:`native`, from ``_nbwalk.c``, where the package was built
  with a compiler): every value is passed by it first, and the offset index
  reads whole windows of cells through it; a string or container longer than
  the window is walked on one window after another, its state carried over
  (:meth:`JsonWindow.native_end`), so no value is left to Python for its size;
* the Python walk (:meth:`JsonWindow.walk_value`): containers by balanced
  brackets, one Python step per bracket, with everything between two
  brackets (short strings included) passed by one possessive pattern; a
  long string (one ``bytes.find``), or one the window cuts, by its quotes
  (an even run of backslashes before a quote ends a string). It runs without the C walk, and decides whenever the C walk hands
  a value back (anything not plain, or a scalar longer than :data:`NATIVE_MAX`), with
  the same result and the same :class:`~jcli_sidecar.base.boundedjson.Bail`
  or :class:`~jcli_sidecar.base.boundedjson.TooDeep`.

Nothing is ever decoded but keys and the ``nbformat`` number.
"""

from __future__ import annotations

import json
import os
import re

from ..base import Bail, TooDeep

try:  # the walk in C, built with the package where a compiler is at hand
    from . import _nbwalk as native
except ImportError:  # pragma: no cover - the Python walk alone
    native = None

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["CHUNK", "JsonWindow", "NATIVE_MAX", "key_text"]

#: How much of the file the window holds at once (a value it skips is never held whole).
CHUNK = 1 << 20
#: The biggest window the C walk (:data:`native`) is given for one scalar
#: (strings and containers are walked across windows); a longer one is walked in Python.
NATIVE_MAX = 16 << 20
_WS = re.compile(rb"[ \t\n\r]*")
# Everything up to the next bracket in one possessive match (linear, C-speed), short strings included: at
# most 512 bytes between escapes, 32 escapes (an escape is a backslash and any byte, as skip_string counts
# them). It stops before a longer string, and before one the window cuts: skip_string passes those.
_PAST_STRINGS = re.compile(rb'(?:[^"\[\]{}]++|"[^"\\]{0,512}+(?:\\.[^"\\]{0,512}+){0,32}+")*+', re.S)
_SCALAR_END = re.compile(rb"[,\]}]")
_QUOTE, _BACKSLASH, _COMMA = 0x22, 0x5C, 0x2C
_OPEN = (0x5B, 0x7B)  # [ {
_CARRIED = (0x22, 0x5B, 0x7B)  # " [ {: the values the C walk carries from one window to the next
_SPACE = b" \t\n\r"


class JsonWindow:
    """A bounded view of the file: the bytes from ``base`` on, refilled by ``pread``."""

    __slots__ = ("fd", "size", "base", "buf", "scanned", "steps", "fetched")

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self.base = 0
        self.buf = b""
        #: The walk's work, for tests: bytes handed to the C walk, steps of the Python walk, bytes read.
        self.scanned = 0
        self.steps = 0
        self.fetched = 0

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
        self.fetched += len(buf)
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
            self.steps += 1
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

        The C walk passes it where it can (:meth:`native_end`); the Python
        walk (:meth:`walk_value`) decides otherwise, holding one chunk.

        Raises:
            Bail: not a value the walk can pass.
            TooDeep: nested deeper than ``limit``.
        """
        if native is not None:
            end = self.native_end(pos, limit)
            if end is not None:
                return end
        return self.walk_value(pos, limit)

    def native_end(self, pos: int, limit: int) -> int | None:
        """The end of the value at ``pos`` found by the C walk, or None (the Python walk decides).

        The C walk stops where the walk would. A string or container that
        runs past the window is walked on from where the window ends, a
        window at a time, with the walk's state carried over (``resume``):
        one pass, whatever the value's size. A scalar that runs past it is
        tried again on a longer window read from ``pos``, up to
        :data:`NATIVE_MAX`.
        """
        buf, rel = self.at(pos)
        end = native.value_end(buf, rel, limit)
        self.scanned += (end if end >= 0 else len(buf)) - rel
        if end >= 0:
            return self.base + end
        if end < -1 or self.base + len(buf) >= self.size:
            return None
        if buf[rel] in _CARRIED:
            return self._resumed_end(pos, limit)
        need = len(buf) - rel + 1
        while True:
            buf, rel = self.at(pos, need)
            end = native.value_end(buf, rel, limit)
            self.scanned += (end if end >= 0 else len(buf)) - rel
            if end >= 0:
                return self.base + end
            have = len(buf) - rel
            if end < -1 or self.base + len(buf) >= self.size or have >= NATIVE_MAX:
                return None
            need = min(have + 1 if have < CHUNK else have * 4, NATIVE_MAX)

    def _resumed_end(self, pos: int, limit: int) -> int | None:
        """The end of the string or container at ``pos``, walked in C one window after another."""
        depth = state = 0
        i = pos
        while True:
            buf, rel = self.at(i)
            self.scanned += len(buf) - rel
            end, depth, state = native.resume(buf, rel, limit, depth, state)
            if end >= 0:
                return self.base + end
            i = self.base + len(buf)
            if end < -1 or i >= self.size:
                return None  # the Python walk says what is wrong

    def walk_value(self, pos: int, limit: int) -> int:
        """The exact walk past the value at ``pos``: string by string and bracket by bracket."""
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
            self.steps += 1
            if self.at_end(i):
                raise Bail("unbalanced brackets")
            buf, rel = self.at(i)
            at = _PAST_STRINGS.match(buf, rel).end()  # always matches, maybe nothing
            if at == len(buf):
                i = self.base + at
                continue
            j = self.base + at
            c = buf[at]
            if c == _QUOTE:  # a long string, or one the window cuts: passed by its quotes
                i = self.skip_string(j)
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
