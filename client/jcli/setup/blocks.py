"""Marked, managed blocks in text files: add once, replace, remove exactly.

A block is::

    # >>> j-cli: <purpose> (managed by `j-cli setup ...`; edits here are replaced)
    ...lines...
    # <<< j-cli

Adding appends it at the end (with a newline first when the file lacks its
last one, remembered in the marker so removal restores the exact bytes);
adding again replaces the block in place; removing restores the file.
"""

from __future__ import annotations

import re

__all__ = ["END", "has_block", "put_block", "remove_block"]

END = "# <<< j-cli"
_BEGIN = re.compile(r"^# >>> j-cli: .*$", re.M)
_ADDED_NEWLINE = " [+newline]"


def _span(text: str) -> tuple[int, int] | None:
    match = _BEGIN.search(text)
    if match is None:
        return None
    end = text.find("\n" + END, match.end())
    if end < 0:
        return None
    stop = end + 1 + len(END)
    if text[stop : stop + 1] == "\n":
        stop += 1
    return match.start(), stop


def has_block(text: str) -> bool:
    return _span(text) is not None


def put_block(text: str, purpose: str, body: str) -> str:
    """``text`` with the j-cli block holding ``body`` (added or replaced).

    Example:
        >>> print(put_block("a = 1", "demo", "b = 2"), end="")
        a = 1
        # >>> j-cli: demo (managed by `j-cli setup`; edits here are replaced) [+newline]
        b = 2
        # <<< j-cli
    """
    span = _span(text)
    if span is not None:
        start, stop = span
        flag = _ADDED_NEWLINE if _ADDED_NEWLINE in text[start : text.index("\n", start)] else ""
        return text[:start] + _render(purpose, body, flag) + text[stop:]
    flag = ""
    if text and not text.endswith("\n"):
        text += "\n"
        flag = _ADDED_NEWLINE
    return text + _render(purpose, body, flag)


def _render(purpose: str, body: str, flag: str) -> str:
    return f"# >>> j-cli: {purpose} (managed by `j-cli setup`; edits here are replaced){flag}\n{body.rstrip(chr(10))}\n{END}\n"


def remove_block(text: str) -> str:
    """``text`` without the j-cli block, exactly as it was before it was added."""
    span = _span(text)
    if span is None:
        return text
    start, stop = span
    header = text[start : text.index("\n", start)]
    out = text[:start] + text[stop:]
    if _ADDED_NEWLINE in header and out.endswith("\n") and stop >= len(text):
        out = out[:-1]
    return out
