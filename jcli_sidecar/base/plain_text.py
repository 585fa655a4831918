"""Text for a reader without a terminal: escapes out of what j-cli prints or returns, and sizes as people read them.

A kernel's error output carries ANSI colour codes (``\\x1b[31m``) meant for a
terminal; to a reader without one (an agent, a script, a JSON parser) they
are noise that costs tokens on every error. Every traceback j-cli prints or
returns goes through :func:`strip_ansi`; the notebook keeps the raw output.
"""

from __future__ import annotations

import re

__all__ = ["human_size", "strip_ansi", "strip_ansi_lines"]

# CSI sequences (colours, cursor moves), OSC sequences (titles, links) ended by BEL or ST, and two-byte escapes.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences.

    Example:
        >>> strip_ansi("\\x1b[31mZeroDivisionError\\x1b[39m: division by zero")
        'ZeroDivisionError: division by zero'
    """
    return _ESCAPES.sub("", text) if "\x1b" in text else text


def strip_ansi_lines(lines: object) -> list[str]:
    """A traceback's lines without escapes; a value that is not a list is an empty traceback.

    Example:
        >>> strip_ansi_lines(["\\x1b[36mCell\\x1b[39m In[1]", 7])
        ['Cell In[1]', '7']
    """
    if not isinstance(lines, list):
        return []
    return [strip_ansi(line if isinstance(line, str) else str(line)) for line in lines]


def human_size(size: int) -> str:
    """A byte count as a person reads it: ``B``, ``KiB`` or ``MiB`` with one decimal.

    Example:
        >>> human_size(900), human_size(10_957), human_size(3 << 20)
        ('900 B', '10.7 KiB', '3.0 MiB')
    """
    if size < 1024:
        return f"{size} B"
    if size < 1 << 20:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1 << 20):.1f} MiB"
