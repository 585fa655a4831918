"""One word of a shell command, and what the shell still does to it before a program sees it.

The parser hands over words with their quotes removed. What reaches the
program can still differ from that text, and a guard must know when:

- **a glob** (``*.py``, ``analy?is.py``, ``[a]nalysis.py``): an unquoted
  ``*``, ``?`` or ``[…]`` is expanded against the directory the command runs
  in (:func:`glob_matches`, hidden files only when the pattern names them, as
  bash does);
- **braces** (``analysis.{py,txt}``): expanded into several words
  (:func:`expand_braces`) before anything else;
- **dynamic** (``$VAR``, ``$(…)``, backticks, ``<(…)``): its value is not
  known before the shell runs; a guard looks at the text it was written
  with (:attr:`Word.raw`) and the files that text names (:func:`path_tokens`).

A :class:`Word` is a ``str`` (its value after quote removal) carrying that
knowledge, so the wrappers that slice argv lists keep it.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["GLOB_LIMIT", "Word", "expand_braces", "glob_matches", "has_glob", "path_tokens"]

#: At most this many names are looked at when a glob is expanded.
GLOB_LIMIT = 2000
_GLOB = re.compile(r"[*?]|\[[^\]]+\]")
#: A path-like token in free text: a quote, a bracket of code or a shell operator ends it.
_TOKEN = re.compile(r"""[^\s'"`()<>|;&=,:{}\\$]+""")
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")


class Word(str):
    """A word's value (quotes removed), with ``raw`` (as written), ``glob`` (the pattern, or None) and ``dynamic``."""

    raw: str
    glob: str | None
    dynamic: bool

    def __new__(cls, value: str, raw: str | None = None, *, dynamic: bool = False, quoted_glob: bool = False) -> Word:
        word = super().__new__(cls, value)
        word.raw = value if raw is None else raw
        word.dynamic = dynamic
        word.glob = None if dynamic else _pattern(word.raw, value, quoted_glob)
        return word


def has_glob(text: str) -> bool:
    """Does ``text`` hold a glob character (``*``, ``?``, or a ``[…]`` class)?

    Example:
        >>> has_glob("*.py"), has_glob("[a]nalysis.py"), has_glob("["), has_glob("a.py")
        (True, True, False, False)
    """
    return bool(_GLOB.search(text))


def _pattern(raw: str, value: str, quoted_glob: bool) -> str | None:
    """The glob pattern of an unquoted glob in ``raw`` (quoted parts escaped), or None when nothing would expand."""
    if quoted_glob:  # a word from a token scan: its quoting is lost, so a glob counts as live
        return value if has_glob(value) else None
    if not has_glob(raw):
        return None
    import glob as globmod

    out: list[str] = []
    live = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            out.append(globmod.escape(raw[i + 1]))
            i += 2
        elif ch in "'\"":
            end = raw.find(ch, i + 1)
            end = len(raw) if end < 0 else end
            out.append(globmod.escape(raw[i + 1 : end]))
            i = end + 1
        else:
            live = live or ch in "*?["
            out.append(ch)
            i += 1
    pattern = "".join(out)
    return pattern if live and has_glob(pattern) else None


def expand_braces(word: str) -> list[str]:
    """``a.{py,txt}`` as bash expands it (comma lists, innermost first); a word without one is itself.

    Example:
        >>> expand_braces("analysis.{py,txt}"), expand_braces("x{a,b}{1,2}"), expand_braces("{x}")
        (['analysis.py', 'analysis.txt'], ['xa1', 'xa2', 'xb1', 'xb2'], ['{x}'])
    """
    match = _BRACE.search(word)
    if match is None:
        return [word]
    head, tail = word[: match.start()], word[match.end() :]
    out: list[str] = []
    for choice in match.group(1).split(","):
        out.extend(expand_braces(head + choice + tail))
        if len(out) > 64:
            break
    return out[:64]


def glob_matches(pattern: str, cwd: str, limit: int = GLOB_LIMIT) -> list[str]:
    """The absolute paths ``pattern`` matches from ``cwd`` (sorted; at most ``limit`` names looked at).

    ``*`` and ``?`` do not match a leading dot (bash's default); a missing
    directory or one that cannot be read matches nothing.
    """
    import glob as globmod
    import itertools

    pattern = os.path.expanduser(pattern)
    base = None if os.path.isabs(pattern) else cwd
    try:
        found = list(itertools.islice(globmod.iglob(pattern, root_dir=base), limit))
    except (OSError, ValueError):  # an unreadable directory or a bad pattern: the glob matches nothing, as the shell's would
        return []
    return sorted(os.path.normpath(os.path.join(cwd, name)) for name in found)


def path_tokens(text: str, suffixes: tuple[str, ...]) -> Iterator[str]:
    """Tokens of free text (code, a substitution's text) that name a file ending in ``suffixes``, or a glob with a name in it.

    Example:
        >>> list(path_tokens("exec(open('sub/a.py').read()); $(cat *.ipynb)", (".py", ".ipynb")))
        ['sub/a.py', '*.ipynb']
    """
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token.endswith(suffixes) or (has_glob(token) and any(ch.isalpha() for ch in token)):
            yield token  # a bare `*` or `2*3` in code is arithmetic, not a file
