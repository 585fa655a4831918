"""IPython magics in a py:percent file: which lines are magics, commented in the file and uncommented in the notebook.

jupytext's rules (see :mod:`jcli_sidecar.pair.percent` and
``docs/py-percent.md``): in a code cell a line that reads as a magic is
commented in the ``.py`` and uncommented in the notebook; a comment that
already looks like one gains one more ``# `` (and loses it when read);
continuation lines follow their magic; lines inside triple-quoted strings
(:class:`PythonStrings`) are left alone.
"""

from __future__ import annotations

import re

__all__ = ["PythonStrings", "comment_magics", "is_magic", "uncomment_lines", "uncomment_magics", "unescape_code_start"]

_CONTINUED = re.compile(r".*\\\s*$")


class PythonStrings:
    """Whether the next line of Python starts inside a string literal.

    jupytext's rule, which decides where markers and magics count: a line
    that is a comment (outside any string) is skipped; otherwise quotes are
    followed from left to right, a quote preceded by a backslash does not
    count, a ``#`` outside any string ends the line, single-quoted strings
    end with their line and triple-quoted ones carry over.
    """

    __slots__ = ("single", "triple")

    def __init__(self) -> None:
        self.single: str | None = None
        self.triple: str | None = None

    def inside(self) -> bool:
        return self.single is not None or self.triple is not None

    def feed(self, line: str) -> None:
        if not self.inside() and line.lstrip().startswith("#"):
            return
        last_triple = -1  # where the last triple quote of this line ended
        for i, char in enumerate(line):
            if char == "#" and not self.inside():
                break
            if char not in "\"'" or line[i - 1 : i] == "\\":
                continue
            if self.single is not None:
                if self.single == char:
                    self.single = None
                continue
            if line[i - 2 : i + 1] == char * 3 and i >= last_triple + 3:
                if self.triple is None:
                    self.triple, last_triple = char, i
                elif self.triple == char:
                    self.triple, last_triple = None, i
                continue
            if self.triple is None:
                self.single = char
        self.single = None


# --- magics --------------------------------------------------------------

# A (possibly commented) line magic, cell magic or %%% metakernel magic.


_MAGIC = re.compile(r"^\s*(?:# |#)*%{1,3}[a-zA-Z]")
_FORCE_ESCAPE = re.compile(r"^\s*(?:# |#)*%{1,3}[a-zA-Z].*#\s*escape")
_NO_ESCAPE = re.compile(r"^\s*(?:# |#)*%{1,3}[a-zA-Z].*#\s*noescape")
# '!cmd' and '?name' / '??name'.
_BANG_OR_HELP = re.compile(r"^\s*(?:(?:# |#)+\s*)?[?!]\s*[A-Za-z.~$\\/{}]")
# 'x = !ls', 'y = %who_ls'.
_MAGIC_ASSIGN = re.compile(r"^(?:# |#)*\s*[a-zA-Z_][a-zA-Z_$0-9]*\s*=\s*(?:%{1,3}|!)[a-zA-Z]")
# 'name?' and 'name??' (only in an explicit code cell, which every percent cell is).
_HELP_SUFFIX = re.compile(r"^\s*(?:# )*\S*\?\s*$")
# Shell commands IPython runs without '!' (automagic), unless followed by '=', ',' or '('.
_SHELL_WORDS = ("cat", "cd", "cp", "mv", "rm", "rmdir", "mkdir", "copy", "ddir", "echo", "ls", "ldir", "ren")
_SHELL_COMMAND = re.compile(r"^(?:# |#)*(?:" + "|".join(_SHELL_WORDS) + r")(?:$|\s$|\s[^=,])")


def is_magic(line: str, escape: bool = True) -> bool:
    """Does ``line`` read as an IPython magic (commented or not) that the file comments out?

    ``escape`` False is the header's ``comment_magics: false``: then only a
    magic marked ``# escape`` counts.

    Example:
        >>> [is_magic(x) for x in ["%time f()", "# !ls", "x?", "x = 1", "ls -l", "ls = 3"]]
        [True, True, True, False, True, False]
    """
    if _FORCE_ESCAPE.match(line):
        return True
    if not escape or _NO_ESCAPE.match(line):
        return False
    return bool(
        _MAGIC.match(line)
        or _BANG_OR_HELP.match(line)
        or _MAGIC_ASSIGN.match(line)
        or _HELP_SUFFIX.match(line)
        or _SHELL_COMMAND.match(line)
    )


def _magic_lines(lines: list[str], escape: bool) -> list[tuple[bool, bool]]:
    """Per line, outside strings: ``(is a magic or continues one, continues the magic before it)``."""
    strings, out, continued = PythonStrings(), [], False
    for line in lines:
        hit = not strings.inside() and (continued or is_magic(line, escape))
        out.append((hit, hit and continued))
        continued = bool(hit and _CONTINUED.match(line))
        strings.feed(line)
    return out


def comment_magics(lines: list[str], escape: bool = True) -> list[str]:
    """The notebook's code lines as the file writes them: each magic commented once.

    Example:
        >>> comment_magics(["!echo hi", "# %time x", "x = 1"])
        ['# !echo hi', '# # %time x', 'x = 1']
    """
    out = []
    for line, (hit, continuation) in zip(lines, _magic_lines(lines, escape), strict=True):
        if not hit:
            out.append(line)
        elif continuation:  # the next line of a magic ending in '\\': commented in front of its indentation
            out.append("# " + line)
        else:
            body = line.lstrip()
            out.append(line[: len(line) - len(body)] + "# " + body)
    return out


def _uncomment_once(line: str) -> str:
    body = line.lstrip()
    indent = line[: len(line) - len(body)]
    if body.startswith("# "):
        return indent + body[2:]
    if body.startswith("#"):
        return indent + body[1:]
    return line


def uncomment_magics(lines: list[str], escape: bool = True) -> list[str]:
    """The file's code lines as the notebook holds them: each magic uncommented once.

    Example:
        >>> uncomment_magics(["# !echo hi", "# # %time x", "x = 1  # %not"])
        ['!echo hi', '# %time x', 'x = 1  # %not']
    """
    return [_uncomment_once(line) if hit else line for line, (hit, _) in zip(lines, _magic_lines(lines, escape), strict=True)]


_CODE_START = re.compile(r"^(?:# |#)*(?:#|# )\+")  # jupytext's light-format '# +', escaped in code


def unescape_code_start(lines: list[str]) -> list[str]:
    strings, out = PythonStrings(), []
    for line in lines:
        if not strings.inside() and _CODE_START.match(line) and _CODE_START.match(_uncomment_once(line)):
            out.append(_uncomment_once(line))
        else:
            out.append(line)
        strings.feed(line)
    return out


def uncomment_lines(lines: list[str]) -> list[str]:
    return [line[2:] if line.startswith("# ") else line[1:] if line.startswith("#") else line for line in lines]


# --- marker options ------------------------------------------------------
