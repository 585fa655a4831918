"""Which programs a shell command line runs, read the way the shell reads it.

The agent guards ask one question of a command line: which programs will it
start, with which arguments, in which directory? This module answers it with
a real shell parser (``bashlex``), not patterns over the text:

- every simple command anywhere in the line: lists (``&&``, ``||``, ``;``,
  ``&``), pipelines, subshells and braces, ``if``/``for``/``while`` bodies,
  functions, and command substitutions (``$(…)`` and backticks) inside
  words and assignments;
- nested shells (``bash -c "…"``, ``sh -lc '…'``, ``eval "…"``) are parsed
  again, in the directory they start in;
- wrappers that run another program are peeled off (:data:`WRAPPERS`):
  ``env``, ``sudo``, ``nohup``, ``time``, ``nice``, ``timeout``, ``xargs``,
  ``uv``/``pixi``/``conda``/``poetry`` ``run`` and the like, ``find -exec``,
  and leading ``VAR=x`` assignments;
- the directory is tracked: a relative path is resolved against the
  payload's cwd and every ``cd DIR`` before it in the same list (a subshell's
  ``cd`` stays inside it); ``env -C``, ``conda run --cwd`` and ``uv run
  --directory`` move the command they run.

A line the parser cannot read (``[[ … ]]``, ``$((…))``, an unbalanced quote)
is read by a conservative token scan instead (:func:`_scan`): the text is cut
at the shell's control operators and each piece is read as a simple command,
with the same wrappers and ``cd`` tracking. It may see a program where the
shell would not (inside a string the parser would have kept whole), never
the other way round: for a guard that denies only named tools, a false
"runs papermill" costs one denied call with a reason, a missed one costs
the protection.
"""

from __future__ import annotations

import os
import shlex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["Command", "RUNNERS", "SHELLS", "WRAPPERS", "commands"]

#: Shells whose ``-c SCRIPT`` is parsed again.
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"})

#: Programs that run the command after their own options: ``name -> (options taking a value, options moving the cwd)``.
WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "env": (frozenset({"-u", "--unset", "-S", "--split-string"}), frozenset({"-C", "--chdir"})),
    "sudo": (
        frozenset(
            {
                "-u",
                "--user",
                "-g",
                "--group",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-r",
                "--role",
                "-t",
                "--type",
                "-U",
                "--other-user",
                "-C",
                "--close-from",
                "-T",
                "--command-timeout",
            }
        ),
        frozenset({"-D", "--chdir"}),
    ),
    "doas": (frozenset({"-u", "-C"}), frozenset()),
    "nohup": (frozenset(), frozenset()),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), frozenset()),
    "nice": (frozenset({"-n", "--adjustment"}), frozenset()),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid"}), frozenset()),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), frozenset()),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), frozenset()),
    "xargs": (
        frozenset(
            {
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-e",
                "-I",
                "-i",
                "-L",
                "-l",
                "-n",
                "--max-args",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
                "--process-slot-var",
            }
        ),
        frozenset(),
    ),
    "exec": (frozenset({"-a"}), frozenset()),
    "command": (frozenset(), frozenset()),
    "builtin": (frozenset(), frozenset()),
    "chronic": (frozenset(), frozenset()),
    "caffeinate": (frozenset({"-t", "-w"}), frozenset()),
    "setsid": (frozenset(), frozenset()),
    "strace": (frozenset({"-e", "-o", "-p", "-s", "-u", "-E"}), frozenset()),
    "watch": (frozenset({"-n", "--interval", "-d"}), frozenset()),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), frozenset()),
}
#: ``timeout DURATION cmd``, ``flock FILE cmd``: one positional before the command.
_ONE_POSITIONAL = frozenset({"timeout", "flock"})

#: ``TOOL run [options] cmd``: ``tool -> (options taking a value, options moving the cwd)``.
RUNNERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "uv": (
        frozenset(
            {
                "--with",
                "--with-editable",
                "--with-requirements",
                "-p",
                "--python",
                "--project",
                "--package",
                "--env-file",
                "--extra",
                "--group",
                "--only-group",
                "--no-group",
                "--index",
                "--default-index",
                "--index-url",
                "--extra-index-url",
                "-f",
                "--find-links",
                "--index-strategy",
                "--keyring-provider",
                "--config-file",
                "--cache-dir",
                "--color",
                "--no-extra",
                "-C",
                "--config-setting",
                "--exclude-newer",
                "--prerelease",
                "--resolution",
                "--link-mode",
                "--refresh-package",
                "--reinstall-package",
                "--upgrade-package",
                "-P",
                "--no-binary-package",
                "--no-build-package",
            }
        ),
        frozenset({"--directory"}),
    ),
    "uvx": (frozenset({"--with", "--from", "-p", "--python", "--index", "--index-url", "--extra-index-url"}), frozenset()),
    "pixi": (frozenset({"-e", "--environment", "--manifest-path", "--color"}), frozenset()),
    "conda": (frozenset({"-n", "--name", "-p", "--prefix"}), frozenset({"--cwd"})),
    "mamba": (frozenset({"-n", "--name", "-p", "--prefix"}), frozenset({"--cwd"})),
    "micromamba": (frozenset({"-n", "--name", "-p", "--prefix", "-r", "--root-prefix"}), frozenset({"--cwd"})),
    "poetry": (frozenset({"-P", "--project", "-C", "--directory"}), frozenset()),
    "pipenv": (frozenset(), frozenset()),
    "pdm": (frozenset({"-p", "--project"}), frozenset()),
    "hatch": (frozenset({"-e", "--env"}), frozenset()),
    "rye": (frozenset(), frozenset()),
}

_CONTROL = frozenset(
    {
        "&&",
        "||",
        ";",
        ";;",
        "|",
        "|&",
        "&",
        "(",
        ")",
        "{",
        "}",
        "\n",
        "!",
        "then",
        "do",
        "else",
        "elif",
        "if",
        "while",
        "until",
        "fi",
        "done",
    }
)
_MAX_DEPTH = 8  # nested shells and substitutions followed at most this deep


class Command:
    """One program a command line runs: ``argv`` (wrappers peeled off) and the directory it runs in."""

    __slots__ = ("argv", "cwd")

    def __init__(self, argv: list[str], cwd: str) -> None:
        self.argv = argv
        self.cwd = cwd

    def __repr__(self) -> str:
        return f"Command({self.argv!r}, cwd={self.cwd!r})"

    def path(self, word: str) -> str:
        """``word`` as an absolute path, resolved against this command's directory."""
        return os.path.normpath(os.path.join(self.cwd, os.path.expanduser(word)))


def commands(text: str, cwd: str) -> list[Command]:
    """Every program ``text`` would run, in order, with its directory.

    Example:
        >>> [c.argv for c in commands('cd sub && sudo -u x python -W ignore ../a.py', '/w')]
        [['cd', 'sub'], ['sudo', '-u', 'x', 'python', '-W', 'ignore', '../a.py'], ['python', '-W', 'ignore', '../a.py']]
        >>> commands('cd sub && python ../a.py', '/w')[1].path('../a.py')
        '/w/a.py'
        >>> [c.argv for c in commands('x=$(bash -c "papermill a.ipynb b.ipynb")', '/w')]
        [['bash', '-c', 'papermill a.ipynb b.ipynb'], ['papermill', 'a.ipynb', 'b.ipynb']]
    """
    out: list[Command] = []
    _read(text, cwd, out, 0)
    return out


def _read(text: str, cwd: str, out: list[Command], depth: int) -> str:
    if depth > _MAX_DEPTH or not text.strip():
        return cwd
    try:
        import bashlex

        trees = bashlex.parse(text)
    except Exception:  # bashlex raises its own errors and NotImplementedError; anything: scan instead
        return _scan(text, cwd, out, depth)
    for tree in trees:
        cwd = _node(tree, cwd, out, depth)
    return cwd


def _node(node: Any, cwd: str, out: list[Command], depth: int) -> str:
    """Visit ``node``; returns the directory after it (changed by a ``cd`` at this level)."""
    kind = node.kind
    if kind == "command":
        return _command(node, cwd, out, depth)
    if kind == "list":
        for part in node.parts:
            cwd = _node(part, cwd, out, depth)
        return cwd
    if kind == "pipeline":
        for part in node.parts:
            _node(part, cwd, out, depth)  # each side runs in its own subshell
        return cwd
    if kind == "compound":
        inner = cwd
        for part in node.list:
            inner = _node(part, inner, out, depth)
        subshell = bool(node.list) and getattr(node.list[0], "word", None) == "("
        return cwd if subshell else inner
    if kind in ("if", "for", "while", "until", "function"):
        inner = cwd
        for part in node.parts:
            inner = _node(part, inner, out, depth)
        return cwd
    if kind in ("word", "assignment", "redirect"):
        _substitutions(node, cwd, out, depth)
    return cwd


def _substitutions(node: Any, cwd: str, out: list[Command], depth: int) -> None:
    """Commands inside ``$(…)``, backticks and ``<(…)`` anywhere under ``node``."""
    for child in _children(node):
        if child.kind in ("commandsubstitution", "processsubstitution"):
            _node(child.command, cwd, out, depth + 1)
        else:
            _substitutions(child, cwd, out, depth)


def _children(node: Any) -> list[Any]:
    found = list(getattr(node, "parts", None) or [])
    for name in ("output", "heredoc"):
        child = getattr(node, name, None)
        if child is not None and hasattr(child, "kind"):
            found.append(child)
    return found


def _command(node: Any, cwd: str, out: list[Command], depth: int) -> str:
    words: list[str] = []
    for part in node.parts:
        _substitutions(part, cwd, out, depth)
        if part.kind == "word":
            words.append(part.word)
    return _simple(words, cwd, out, depth)


def _simple(words: list[str], cwd: str, out: list[Command], depth: int) -> str:
    """Record the program ``words`` run (wrappers peeled off); a ``cd`` returns the new directory."""
    words = _skip_assignments(words)
    for argv, where in _unwrap(words, cwd):
        out.append(Command(argv, where))
        name = os.path.basename(argv[0])
        if name == "cd":
            target = next((w for w in argv[1:] if not w.startswith("-")), "~")
            return os.path.normpath(os.path.join(where, os.path.expanduser(target)))
        script = _shell_script(argv)
        if script is not None:
            _read(script, where, out, depth + 1)
        elif name == "eval":
            _read(" ".join(argv[1:]), where, out, depth + 1)
    return cwd


def _skip_assignments(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and "=" in words[i] and words[i].split("=", 1)[0].isidentifier():
        i += 1
    return words[i:]


def _unwrap(words: list[str], cwd: str) -> Iterator[tuple[list[str], str]]:
    """The command itself, then each program it runs through a wrapper (``sudo x`` gives ``sudo x`` and ``x``)."""
    seen = 0
    while words and seen < 16:
        seen += 1
        yield words, cwd
        name = os.path.basename(words[0])
        if name in WRAPPERS:
            words, cwd = _after_options(words[1:], *WRAPPERS[name], cwd, name in _ONE_POSITIONAL)
            if name == "env":
                words = _skip_assignments(words)
        elif name in RUNNERS and len(words) > 1:
            rest = words[1:]
            values, moves = RUNNERS[name]
            rest, cwd = _leading_options(rest, values, moves, cwd)  # `uv --directory d run x`
            if not rest or rest[0] not in ("run", "exec", "x", "tool"):
                return
            if name == "uvx" or rest[0] == "tool":
                rest = rest[1:] if rest[:1] == ["tool"] and rest[1:2] == ["run"] else rest
            words, cwd = _after_options(rest[1:], values, moves, cwd, False)
        elif name == "uvx":
            words, cwd = _after_options(words[1:], *RUNNERS["uvx"], cwd, False)
        elif name in ("find", "fd") and ("-exec" in words or "-execdir" in words or "-x" in words or "--exec" in words):
            flag = next(w for w in words if w in ("-exec", "-execdir", "-x", "--exec"))
            rest = words[words.index(flag) + 1 :]
            words = rest[: next((i for i, w in enumerate(rest) if w in (";", "+", "\\;")), len(rest))]
        else:
            return


def _leading_options(words: list[str], values: frozenset[str], moves: frozenset[str], cwd: str) -> tuple[list[str], str]:
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        flag, eq, value = words[i].partition("=")
        if flag in values or flag in moves:
            if not eq:
                i += 1
                value = words[i] if i < len(words) else ""
            if flag in moves and value:
                cwd = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
        i += 1
    return words[i:], cwd


def _after_options(
    words: list[str], values: frozenset[str], moves: frozenset[str], cwd: str, one_positional: bool
) -> tuple[list[str], str]:
    """Skip a wrapper's options (``--`` ends them) and, for ``timeout``/``flock``, its one positional."""
    words, cwd = _leading_options(words, values, moves, cwd)
    if words[:1] == ["--"]:
        words = words[1:]
    if one_positional and words:
        words = words[1:]
    return words, cwd


def _shell_script(argv: list[str]) -> str | None:
    """The script of ``sh -c SCRIPT`` (``-c`` alone or in a cluster such as ``-lc``), else None."""
    name = os.path.basename(argv[0])
    if name not in SHELLS:
        return None
    args = argv[2:] if name == "busybox" and len(argv) > 1 and argv[1] in SHELLS else argv[1:]
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[i + 1] if i + 1 < len(args) else None
        if not arg.startswith("-") and not arg.startswith("+"):
            return None  # `bash script.sh`: a file, not a command line
    return None


def _scan(text: str, cwd: str, out: list[Command], depth: int) -> str:
    """The fallback for a line the parser refuses: cut at control operators, read each piece as a simple command."""
    for mark in ("`", "$(", "<(", ">("):
        text = text.replace(mark, " ; ")  # a substitution's command is a piece of its own
    piece: list[str] = []
    for word in [*_tokens(text), ";"]:
        if word in _CONTROL or set(word) <= set(";&|()<>"):
            if piece:
                cwd = _simple(piece, cwd, out, depth)
                piece = []
            continue
        piece.append(word)
    return cwd


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: words as the whitespace gives them
        return text.replace("\n", " ; ").split()
