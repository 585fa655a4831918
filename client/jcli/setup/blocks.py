"""Marked, managed blocks in text files: add once, replace, remove exactly.

A block is::

    # >>> j-cli: <purpose> (managed by `j-cli setup`; edits here are replaced)[ flags]
    ...lines...
    # <<< j-cli

Adding appends it at the end, or puts it at a line boundary the caller
chooses (before a YAML ``...``, say); adding again replaces the block's
body in place; removing restores the file exactly. What removal needs is
recorded in the header:

- ``[+newline]``: the file lacked its last newline, which the block added;
- ``[+file]``: the file did not exist: setup created it, so ``--remove``
  deletes it once nothing but the block was in it (a file that existed
  empty stays, empty);
- ``[+N dirs]``: setup created the file's directory and N-1 of its parents;
- ``(in place of the lines below)``: the block stands where some of the
  file's own lines were (a line j-cli had to edit, such as an inline table
  or a flow sequence); they are kept in the block as ``# replaced line:``
  comments and put back by removal. (Blocks from earlier versions say
  ``(in place of an empty [])``.)
"""

from __future__ import annotations

import re

from .files import dirs_mark, dirs_recorded

__all__ = ["Block", "END", "find_block", "has_block", "put_block", "remove_block"]

END = "# <<< j-cli"
_BEGIN = re.compile(r"^# >>> j-cli: .*$", re.M)
_NOTE = " (managed by `j-cli setup`; edits here are replaced)"
_ADDED_NEWLINE = " [+newline]"
_CREATED = " [+file]"
_IN_PLACE = " (in place of"
_IN_PLACE_NOW = " (in place of the lines below)"
_REPLACED = "# replaced line: "


class Block:
    """A block found in a text: its span and what its header records."""

    __slots__ = ("added_newline", "created", "dirs", "replaced", "start", "stop")

    def __init__(self, text: str, start: int, stop: int) -> None:
        self.start = start
        self.stop = stop
        header_end = text.index("\n", start)
        header = text[start:header_end]
        self.added_newline = _ADDED_NEWLINE in header
        self.created = _CREATED in header
        self.dirs = dirs_recorded(header) or 0
        #: The file's own lines the block stands in place of (each without its newline).
        self.replaced: list[str] = []
        if _IN_PLACE in header:
            for line in text[header_end + 1 : stop].split("\n"):
                if not line.startswith(_REPLACED):
                    break
                self.replaced.append(line[len(_REPLACED) :])


def find_block(text: str) -> Block | None:
    """The first j-cli block in ``text``, if there is one."""
    match = _BEGIN.search(text)
    if match is None:
        return None
    end = text.find("\n" + END, match.end())
    if end < 0:
        return None
    stop = end + 1 + len(END)
    if text[stop : stop + 1] == "\n":
        stop += 1
    return Block(text, match.start(), stop)


def has_block(text: str) -> bool:
    return find_block(text) is not None


def put_block(
    text: str,
    purpose: str,
    body: str,
    *,
    at: int | None = None,
    replacing: int = 0,
    created: bool = False,
    dirs: int = 0,
) -> str:
    """``text`` with the j-cli block holding ``body`` (added or replaced).

    A block already in ``text`` keeps its place and its header's records;
    only its body changes. Otherwise the new block goes at the end, or at
    ``at`` (a line start) in place of the ``replacing`` characters there
    (whole lines, the last maybe without its newline at the end of the
    text), which it records; ``created`` and ``dirs`` are recorded too.

    Example:
        >>> print(put_block("a = 1", "demo", "b = 2"), end="")
        a = 1
        # >>> j-cli: demo (managed by `j-cli setup`; edits here are replaced) [+newline]
        b = 2
        # <<< j-cli
    """
    block = find_block(text)
    if block is not None:
        replaced = [_REPLACED + line for line in block.replaced]
        return text[: block.start] + _render(purpose, replaced, body, _flags(block)) + text[block.stop :]
    flags = (_CREATED if created else "") + dirs_mark(dirs)
    if at is None:
        at = len(text)
        if text and not text.endswith("\n"):
            text += "\n"
            at += 1
            flags = _ADDED_NEWLINE + flags
    old = text[at : at + replacing]
    lines = old.split("\n")
    if old.endswith("\n"):
        lines.pop()
    elif old:
        flags = _ADDED_NEWLINE + flags  # the replaced lines ended the text without a newline
    replaced = [_REPLACED + line for line in lines] if old else []
    return text[:at] + _render(purpose, replaced, body, flags) + text[at + replacing :]


def _flags(block: Block) -> str:
    return (_ADDED_NEWLINE if block.added_newline else "") + (_CREATED if block.created else "") + dirs_mark(block.dirs)


def _render(purpose: str, replaced: list[str], body: str, flags: str) -> str:
    in_place = _IN_PLACE_NOW if replaced else ""
    lines = [f"# >>> j-cli: {purpose}{in_place}{_NOTE}{flags}", *replaced, body.rstrip("\n"), END]
    return "\n".join(lines) + "\n"


def remove_block(text: str) -> str:
    """``text`` without the j-cli block, exactly as it was before it was added."""
    block = find_block(text)
    if block is None:
        return text
    restored = "".join(line + "\n" for line in block.replaced)
    out = text[: block.start] + restored + text[block.stop :]
    if block.added_newline and block.stop >= len(text) and out.endswith("\n"):
        out = out[:-1]
    return out
