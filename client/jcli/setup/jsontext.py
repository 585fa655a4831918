"""Editing JSON as text: one member in, one member out, every other byte kept.

JSON has no comments, so j-cli cannot mark what it added the way it marks
a block in TOML or YAML. Instead it edits the text surgically: adding a
member inserts it after the object's last member (or inside an empty
object), in the object's own style (one line, or its indentation), and
removing it cuts exactly that text back out, so ``setup`` then ``--remove``
gives the same bytes back.

A container setup had to create (an ``mcpServers`` key, a project entry, the
file itself) is written in the compact one-line form ``json.dumps`` gives
(``{"mcpServers": {"jcli": {...}}}``), which neither a pretty-printer nor an
insertion into an existing object ever produces; that form, holding nothing
but j-cli's entry, is how removal knows the container was j-cli's and takes
it out whole. Anything else (a file Claude Code rewrote since, say) keeps
its containers: only j-cli's member goes.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Arr",
    "Member",
    "Obj",
    "compact",
    "cut_element",
    "cut_member",
    "insert_element",
    "insert_member",
    "is_compact",
    "replace_value",
    "scan_array",
    "scan_object",
    "top_object",
]

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()
_INDENT = re.compile(r"\n([ \t]+)\S")


def compact(value: Any) -> str:
    """The one-line form setup writes for what it creates."""
    return json.dumps(value, ensure_ascii=False)


class Member:
    """One ``"key": value`` of an object, by position in the text."""

    __slots__ = ("key", "key_start", "value_end", "value_start")

    def __init__(self, key: str, key_start: int, value_start: int, value_end: int) -> None:
        self.key = key
        self.key_start = key_start
        self.value_start = value_start
        self.value_end = value_end


class Obj:
    """An object in the text: ``{`` at ``start``, just past ``}`` at ``end``, its members in order."""

    __slots__ = ("end", "members", "start")

    def __init__(self, start: int, end: int, members: list[Member]) -> None:
        self.start = start
        self.end = end
        self.members = members

    def get(self, key: str) -> Member | None:
        """The member named ``key`` (the last one, as JSON parsers take it)."""
        found = None
        for member in self.members:
            if member.key == key:
                found = member
        return found


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def scan_object(text: str, start: int) -> Obj:
    """The object whose ``{`` is at ``start`` in ``text`` (valid JSON, already parsed once)."""
    members: list[Member] = []
    i = _skip(text, start + 1)
    if text[i] == "}":
        return Obj(start, i + 1, members)
    while True:
        key, j = scanstring(text, i + 1)
        j = _skip(text, _skip(text, j) + 1)  # past the colon
        end = _DECODER.raw_decode(text, j)[1]
        members.append(Member(key, i, j, end))
        k = _skip(text, end)
        if text[k] == "}":
            return Obj(start, k + 1, members)
        i = _skip(text, k + 1)  # past the comma


def top_object(text: str) -> Obj:
    return scan_object(text, _skip(text, 0))


def is_compact(text: str, member: Member) -> bool:
    """Whether the member is written exactly in the compact form setup uses for what it creates."""
    value = json.loads(text[member.value_start : member.value_end])
    return text[member.key_start : member.value_end] == compact(member.key) + ": " + compact(value)


def _line_indent(text: str, pos: int) -> str:
    line = text.rfind("\n", 0, pos) + 1
    end = line
    while end < pos and text[end] in " \t":
        end += 1
    return text[line:end]


def _unit(text: str) -> str:
    match = _INDENT.search(text)
    return match.group(1) if match else "  "


def render_member(text: str, key: str, value: Any, indent: str | None, created: bool = False) -> str:
    """``"key": value`` for a place whose members sit at ``indent`` (None: on one line)."""
    if created or indent is None:
        return compact(key) + ": " + compact(value)
    return compact(key) + ": " + json.dumps(value, indent=_unit(text), ensure_ascii=False).replace("\n", "\n" + indent)


def insert_member(text: str, obj: Obj, key: str, value: Any, created: bool) -> str:
    """``text`` with ``"key": value`` added as ``obj``'s last member.

    ``created``: the value is a container setup creates, so it is written compact.
    """
    if obj.members:
        last = obj.members[-1]
        before = obj.members[-2].value_end if len(obj.members) > 1 else obj.start + 1
        gap = text[before : last.key_start]
        gap = gap[gap.index(",") + 1 :] if "," in gap else gap
        indent = gap[gap.rfind("\n") + 1 :] if "\n" in gap else None
        member = render_member(text, key, value, indent, created)
        return text[: last.value_end] + "," + gap + member + text[last.value_end :]
    outer = _line_indent(text, obj.start)
    inner = outer + _unit(text)
    member = render_member(text, key, value, inner, created)
    # Whatever stood between the braces stays first, so removal can give it back.
    return text[: obj.end - 1] + "\n" + inner + member + "\n" + outer + "}" + text[obj.end :]


def cut_member(text: str, obj: Obj, member: Member) -> str:
    """``text`` without ``member``, undoing :func:`insert_member` exactly."""
    index = obj.members.index(member)
    if len(obj.members) == 1:
        gap = text[obj.start + 1 : member.key_start]
        kept = gap[: gap.rfind("\n")] if "\n" in gap else ""
        return text[: obj.start + 1] + kept + "}" + text[obj.end :]
    if index == len(obj.members) - 1:
        return text[: obj.members[index - 1].value_end] + text[member.value_end :]
    return text[: member.key_start] + text[obj.members[index + 1].key_start :]


def replace_value(text: str, member: Member, value: Any) -> str:
    """``text`` with ``member``'s value replaced, in the style of the old one."""
    old = text[member.value_start : member.value_end]
    if "\n" not in old:
        new = compact(value)
    else:
        new = json.dumps(value, indent=_unit(text), ensure_ascii=False).replace("\n", "\n" + _line_indent(text, member.key_start))
    return text[: member.value_start] + new + text[member.value_end :]


class Arr:
    """An array in the text: ``[`` at ``start``, just past ``]`` at ``end``, its elements' ``(start, end)``."""

    __slots__ = ("elements", "end", "start")

    def __init__(self, start: int, end: int, elements: list[tuple[int, int]]) -> None:
        self.start = start
        self.end = end
        self.elements = elements


def scan_array(text: str, start: int) -> Arr:
    """The array whose ``[`` is at ``start`` in ``text`` (valid JSON, already parsed once)."""
    elements: list[tuple[int, int]] = []
    i = _skip(text, start + 1)
    if text[i] == "]":
        return Arr(start, i + 1, elements)
    while True:
        end = _DECODER.raw_decode(text, i)[1]
        elements.append((i, end))
        k = _skip(text, end)
        if text[k] == "]":
            return Arr(start, k + 1, elements)
        i = _skip(text, k + 1)  # past the comma


def insert_element(text: str, arr: Arr, value: Any) -> str:
    """``text`` with ``value`` added as ``arr``'s last element, in the array's style."""
    if arr.elements:
        last_start, last_end = arr.elements[-1]
        before = arr.elements[-2][1] if len(arr.elements) > 1 else arr.start + 1
        gap = text[before:last_start]
        gap = gap[gap.index(",") + 1 :] if "," in gap else gap
        indent = gap[gap.rfind("\n") + 1 :] if "\n" in gap else None
        return text[:last_end] + "," + gap + _render_value(text, value, indent) + text[last_end:]
    outer = _line_indent(text, arr.start)
    inner = outer + _unit(text)
    return text[: arr.end - 1] + "\n" + inner + _render_value(text, value, inner) + "\n" + outer + "]" + text[arr.end :]


def _render_value(text: str, value: Any, indent: str | None) -> str:
    if indent is None:
        return compact(value)
    return json.dumps(value, indent=_unit(text), ensure_ascii=False).replace("\n", "\n" + indent)


def cut_element(text: str, arr: Arr, index: int) -> str:
    """``text`` without ``arr``'s element ``index``, undoing :func:`insert_element` exactly."""
    start, end = arr.elements[index]
    if len(arr.elements) == 1:
        gap = text[arr.start + 1 : start]
        kept = gap[: gap.rfind("\n")] if "\n" in gap else ""
        return text[: arr.start + 1] + kept + "]" + text[arr.end :]
    if index == len(arr.elements) - 1:
        return text[: arr.elements[index - 1][1]] + text[end:]
    return text[:start] + text[arr.elements[index + 1][0] :]
