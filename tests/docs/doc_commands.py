"""Every ``j-cli`` command the README, ``docs/`` and the skill show, as runnable argument lists.

Used by ``tests/docs/test_doc_commands.py``. What counts as a shown command:

- in a fenced shell code block (no language, ``sh``, ``bash``, ...), every line (``\\`` continuations joined,
  a ``$ `` prompt and ``# comments`` dropped) whose command, after
  ``VAR=value`` assignments, is ``j-cli``; lines are split on ``;``, ``&&``
  and ``|``, and ``echo TEXT | j-cli ...`` gives TEXT on stdin;
- outside code blocks, every inline code span whose text starts with
  ``j-cli`` (a span may run across a line break; in a table ``\\|`` is a
  ``|``). Spans use a little notation: ``[X]`` is optional and ``a|b`` an
  alternative (``start|stop|status``, ``[--local|--user]``); each is
  expanded into every variant, and ``X...`` (repeatable) means one ``X``.

Placeholders (``RUN_ID``, ``FILE``, ``N``, ...) stay in the argument lists;
the test maps them to fixture values.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass, field

__all__ = ["SHELL_LANGUAGES", "Shown", "expand_notation", "extract", "shell_commands"]


@dataclass(frozen=True)
class Shown:
    """One command as a document shows it, and the invocations it stands for."""

    doc: str
    line: int
    kind: str  # "block" (a fenced code block line) or "inline" (a code span)
    text: str
    argv: tuple[str, ...]  # the arguments after ``j-cli``
    env: tuple[tuple[str, str], ...] = ()
    stdin: str | None = None
    variant_of: str | None = field(default=None, compare=False)  # the span's text, for expanded notation

    def label(self) -> str:
        return f"{self.doc}:{self.line}: j-cli {shlex.join(self.argv)}"


#: Fenced blocks whose lines are shell commands (others, such as json or python, are data).
SHELL_LANGUAGES = ("", "sh", "shell", "bash", "console", "zsh")
_FENCE = re.compile(r"^\s*(```+|~~~+)")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def extract(doc: str, text: str) -> list[Shown]:
    """Every j-cli command shown in the Markdown ``text`` of ``doc``, in document order."""
    found: list[Shown] = []
    lines = text.splitlines()
    prose: list[tuple[int, str]] = []  # (line number, line) outside code blocks
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        marker = fence.group(1)
        language = lines[i].strip()[len(marker) :].strip().split(" ")[0]
        start = i + 1
        i += 1
        block: list[tuple[int, str]] = []
        while i < len(lines) and not lines[i].lstrip().startswith(marker):
            block.append((i + 1, lines[i]))
            i += 1
        i += 1  # the closing fence
        if language in SHELL_LANGUAGES:
            found.extend(_from_block(doc, block))
        prose.append((start, ""))  # a block ends a paragraph
    found.extend(_from_prose(doc, prose))
    return sorted(found, key=lambda s: s.line)


def _from_block(doc: str, block: list[tuple[int, str]]) -> list[Shown]:
    out: list[Shown] = []
    k = 0
    while k < len(block):
        number, line = block[k]
        while line.rstrip().endswith("\\") and k + 1 < len(block):
            k += 1
            line = line.rstrip()[:-1] + " " + block[k][1].strip()
        k += 1
        stripped = line.strip()
        if stripped.startswith("$ "):
            stripped = stripped[2:]
        if "j-cli" not in stripped:
            continue
        for env, argv, stdin in shell_commands(stripped):
            out.append(Shown(doc, number, "block", stripped, tuple(argv), tuple(env), stdin))
    return out


def shell_commands(line: str) -> list[tuple[list[tuple[str, str]], list[str], str | None]]:
    """The ``j-cli`` commands of one shell line: ``(env assignments, arguments after j-cli, stdin)``.

    >>> shell_commands("JCLI_SIDECAR=off j-cli sidecar status ; j-cli sidecar stop  # two")
    [([('JCLI_SIDECAR', 'off')], ['sidecar', 'status'], None), ([], ['sidecar', 'stop'], None)]
    >>> shell_commands("echo '{\\"a\\": 1}' | j-cli -j notebook output --request -")
    [([], ['-j', 'notebook', 'output', '--request', '-'], '{"a": 1}\\n')]
    """
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    segments: list[tuple[str, list[str]]] = []  # (the operator before it, words)
    words: list[str] = []
    before = ""
    for token in lexer:
        if token in (";", "&&", "|", "||"):
            segments.append((before, words))
            before, words = token, []
        else:
            words.append(token)
    segments.append((before, words))
    commands = []
    for n, (op, seg) in enumerate(segments):
        env = []
        while seg and _ASSIGNMENT.match(seg[0]):
            name, _, value = seg[0].partition("=")
            env.append((name, value))
            seg = seg[1:]
        if not seg or seg[0] != "j-cli":
            continue
        stdin = None
        if op == "|":
            producer = segments[n - 1][1]
            if producer[:1] != ["echo"]:
                raise ValueError(f"only `echo TEXT | j-cli ...` is understood: {line!r}")
            stdin = " ".join(producer[1:]) + "\n"
        commands.append((env, seg[1:], stdin))
    return commands


def _from_prose(doc: str, prose: list[tuple[int, str]]) -> list[Shown]:
    out: list[Shown] = []
    # Paragraphs: spans never cross a blank line or a code block.
    for _blank, group in itertools.groupby(prose, key=lambda nl: not nl[1].strip()):
        rows = list(group)
        if _blank:
            continue
        text = "\n".join(line for _, line in rows)
        starts = [0]
        for _, line in rows:
            starts.append(starts[-1] + len(line) + 1)
        for match in _SPAN.finditer(text):
            content = " ".join(match.group(2).split())
            if not content.startswith("j-cli "):  # `j-cli` alone names the program
                continue
            line_no = rows[max(k for k, s in enumerate(starts[:-1]) if s <= match.start())][0]
            in_table = text[: match.start()].rsplit("\n", 1)[-1].lstrip().startswith("|")
            if in_table:
                content = content.replace("\\|", "|")
            for variant in expand_notation(content):
                argv = shlex.split(variant)[1:]
                out.append(Shown(doc, line_no, "inline", content, tuple(argv), variant_of=content))
    return out


def expand_notation(span: str) -> list[str]:
    """Every command a span's notation stands for: ``[X]`` optional, ``a|b`` alternatives, ``X...`` one X.

    >>> expand_notation("j-cli server start|stop|status")
    ['j-cli server start', 'j-cli server stop', 'j-cli server status']
    >>> expand_notation("j-cli setup claude [--local|--user]")
    ['j-cli setup claude', 'j-cli setup claude --local', 'j-cli setup claude --user']
    >>> expand_notation("j-cli mcp serve [--root DIR]... [--host NAME]")[-1]
    'j-cli mcp serve --root DIR --host NAME'
    """
    parts = re.split(r"(\[[^\]]*\](?:\.\.\.)?)", span)
    choices: list[list[str]] = []
    for part in parts:
        if part.startswith("["):
            inner = part.rstrip(".")[1:-1]
            choices.append(["", *inner.split("|")])
        else:
            words = [w.split("|") if "|" in w and not w.startswith("'") else [w] for w in part.split(" ")]
            for options in words:
                choices.append(options)
    variants = [" ".join(w for w in combo if w) for combo in itertools.product(*choices)]
    return list(dict.fromkeys(" ".join(v.split()) for v in variants))
