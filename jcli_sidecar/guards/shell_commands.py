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
- wrappers that run another program are peeled off
  (:func:`~jcli_sidecar.guards.shell_wrappers.unwrap`): ``env`` (``-S``
  too), ``sudo``, ``nohup``, ``time``, ``nice``, ``timeout``, ``xargs``,
  ``parallel``, ``uv``/``pixi``/``conda``/``poetry`` ``run`` and the like,
  ``find -exec``, and leading ``VAR=x`` assignments;
- what reaches a command's stdin (:class:`Feed`): the commands before it in
  a pipeline, ``< FILE``, a here-string or here-document; and where the
  names ``xargs``/``find -exec`` add come from (:meth:`Command.arg_feed`);
- words keep what the shell still does to them
  (:class:`~jcli_sidecar.guards.shell_words.Word`: globs, braces,
  substitutions), and a variable given in the line (``f=x.py``, ``for f in
  *.py``, a nested shell's ``$1``) keeps the text it was given;
- the directory is tracked: a relative path is resolved against the
  payload's cwd and every ``cd DIR``, ``cd -``, ``pushd``, ``popd`` before it
  in the same list (a subshell's ``cd`` stays inside it); ``env -C``,
  ``conda run --cwd`` and ``uv run --directory`` move the command they run.

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
import re
import shlex

from .shell_words import Word, expand_braces
from .shell_wrappers import skip_assignments, unwrap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Command", "Feed", "SHELLS", "commands"]

#: Shells whose ``-c SCRIPT`` is parsed again.
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"})

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


class Feed:
    """What reaches a command's standard input from the command line itself.

    Attributes:
        origin: how it is shown in a reason (``cat x.py |``, ``< x.py``, ``a here-document``).
        words: ``(text, cwd)`` naming what is fed: a redirected file, a feeding command's words, a
            substitution's text; a guard looks for the files they name.
        code: ``(text, cwd)`` of literal text fed (a here-document's body, a here-string).
    """

    __slots__ = ("origin", "words", "code")

    def __init__(self, origin: str, words: list[tuple[str, str]], code: list[tuple[str, str]] | None = None) -> None:
        self.origin = origin
        self.words = words
        self.code = code or []

    def __repr__(self) -> str:
        return f"Feed({self.origin!r})"


class Command:
    """One program a command line runs: ``argv`` (wrappers peeled off) and the directory it runs in.

    ``wrapper`` is the command it was peeled from (``sudo x`` gives ``x`` whose
    wrapper is ``sudo x``); ``redirect`` what the command line feeds its
    standard input (a pipe, ``<``, a here-document or here-string), when it does.
    """

    __slots__ = ("argv", "cwd", "wrapper", "redirect")

    def __init__(self, argv: list[str], cwd: str, wrapper: Command | None = None, redirect: Feed | None = None) -> None:
        self.argv = argv
        self.cwd = cwd
        self.wrapper = wrapper
        self.redirect = redirect

    def __repr__(self) -> str:
        return f"Command({self.argv!r}, cwd={self.cwd!r})"

    def path(self, word: str) -> str:
        """``word`` as an absolute path, resolved against this command's directory."""
        return os.path.normpath(os.path.join(self.cwd, os.path.expanduser(word)))

    @property
    def via(self) -> str | None:
        """The name of the wrapper that ran this program (``xargs``, ``find``, ``sudo`` …), or None."""
        return os.path.basename(self.wrapper.argv[0]) if self.wrapper is not None else None

    def stdin(self) -> Feed | None:
        """What the command line feeds this program's standard input (inherited through wrappers other than
        ``xargs``, ``find`` and ``parallel``, whose programs read arguments from it), or None."""
        if self.redirect is not None:
            return self.redirect
        if self.wrapper is None or self.via in _ARG_FEEDERS:
            return None
        return self.wrapper.stdin()

    def arg_feed(self) -> Feed | None:
        """Where the arguments ``xargs``, ``parallel`` or ``find -exec`` add to this program come from, or None."""
        wrapper, via = self.wrapper, self.via
        if wrapper is None or via not in _ARG_FEEDERS:
            return None
        argv = wrapper.argv
        if via in ("find", "fd"):
            return Feed(f"`{_shown(argv)}`", [(w, wrapper.cwd) for w in argv[1:]])
        files = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in ("-a", "--arg-file", "::::")]
        files += [w.split("=", 1)[1] for w in argv if w.startswith("--arg-file=")]
        if via == "parallel" and ":::" in argv:
            return Feed(f"`{_shown(argv)}`", [(w, wrapper.cwd) for w in argv[argv.index(":::") + 1 :]])
        if files:
            return Feed(f"`{via} -a {files[0]}`", [(f, wrapper.cwd) for f in files])
        return wrapper.stdin()


#: Wrappers whose program takes arguments from a feed instead of reading it.
_ARG_FEEDERS = frozenset({"xargs", "parallel", "find", "fd"})
_FEED_WORDS = 4096  # a feed keeps at most this many words
_HEREDOC_QUOTED = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\(\w+))")


def _shown(argv: list[str], limit: int = 60) -> str:
    text = shlex.join(str(w) for w in argv)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def commands(text: str, cwd: str) -> list[Command]:
    """Every program ``text`` would run, in order, with its directory.

    Example:
        >>> [c.argv for c in commands('cd sub && sudo -u x python -W ignore ../a.py', '/w')]
        [['cd', 'sub'], ['sudo', '-u', 'x', 'python', '-W', 'ignore', '../a.py'], ['python', '-W', 'ignore', '../a.py']]
        >>> commands('cd sub && python ../a.py', '/w')[1].path('../a.py')
        '/w/a.py'
        >>> [c.argv for c in commands('x=$(bash -c "papermill a.ipynb b.ipynb")', '/w')]
        [['bash', '-c', 'papermill a.ipynb b.ipynb'], ['papermill', 'a.ipynb', 'b.ipynb']]
        >>> commands('cat x.py | python', '/w')[1].stdin()
        Feed('`cat x.py |`')
    """
    out: list[Command] = []
    _read(text, (cwd, cwd), out, 0)
    return out


Dirs = tuple  # (cwd, OLDPWD, *pushd stack): what `cd`, `cd -`, `pushd` and `popd` move


#: A line of plain words: nothing the shell would expand, quote, redirect, join or read as a keyword.
_PLAIN_LINE = re.compile(r"[A-Za-z0-9_./:,+@%=\- \t]*")
#: Words that open a compound command or change how the next one is read.
_RESERVED = frozenset(
    {"!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in"}
    | {"select", "then", "time", "until", "while"}
)


def _plain_words(text: str) -> list[str] | None:
    """The words of ``text`` when it is one simple command of plain words (what the parser would make of it), else None.

    Example:
        >>> _plain_words("uv run papermill a.ipynb out.ipynb -p alpha=0.1")
        ['uv', 'run', 'papermill', 'a.ipynb', 'out.ipynb', '-p', 'alpha=0.1']
        >>> _plain_words("x=1 python a.py") is None, _plain_words("python *.py") is None
        (True, True)
    """
    if _PLAIN_LINE.fullmatch(text) is None:
        return None
    words = text.split()
    if not words or "=" in words[0] or words[0] in _RESERVED:
        return None
    return words


def _read(text: str, dirs: Dirs, out: list[Command], depth: int, values: dict[str, str] | None = None) -> Dirs:
    if depth > _MAX_DEPTH or not text.strip():
        return dirs
    plain = _plain_words(text)
    if plain is not None:  # the parser's answer without loading the parser (the usual shell line)
        return _simple([Word(w, w) for w in plain], dirs, out, depth)
    literal = {m.group(2) or m.group(3) or m.group(4) for m in _HEREDOC_QUOTED.finditer(text)}
    if literal:  # the parser refuses a quoted delimiter; the body is literal either way (remembered here)
        text = _HEREDOC_QUOTED.sub(lambda m: f"<<{m.group(1)}{m.group(2) or m.group(3) or m.group(4)}", text)
    try:
        from .shell_tables import import_bashlex

        trees = import_bashlex().parse(text)
    except Exception:  # bashlex raises its own errors and NotImplementedError; anything: scan instead
        return _scan(text, dirs, out, depth)
    walk = _Walk(text, out, depth, literal)
    walk.values.update(values or {})
    for tree in trees:
        dirs = walk.node(tree, dirs)
    return dirs


class _Walk:
    """One parsed text: its source (for raw words), the list commands go to, the depth, literal here-documents."""

    def __init__(self, text: str, out: list[Command], depth: int, literal: set[str]) -> None:
        self.text, self.out, self.depth, self.literal = text, out, depth, literal
        self.values: dict[str, str] = {}  # what a variable was given (`f=x.py`, `for f in *.py`), as written

    def node(self, node: Any, dirs: Dirs) -> Dirs:
        """Visit ``node``; returns the directories after it (changed by a ``cd`` at this level)."""
        kind = node.kind
        if kind == "command":
            return self.command(node, dirs)
        if kind == "list":
            for part in node.parts:
                dirs = self.node(part, dirs)
            return dirs
        if kind == "pipeline":
            self.pipeline(node, dirs)
            return dirs
        if kind == "compound":
            inner = dirs
            for part in node.list:
                inner = self.node(part, inner)
            subshell = bool(node.list) and getattr(node.list[0], "word", None) == "("
            return dirs if subshell else inner
        if kind == "for" and len(node.parts) > 2 and getattr(node.parts[2], "word", None) == "in":
            listed = [p for p in node.parts[3:] if p.kind == "word"]
            listed = listed[: next((i for i, p in enumerate(node.parts[3:]) if p.kind != "word"), len(listed))]
            self.values[node.parts[1].word] = " ".join(self.text[p.pos[0] : p.pos[1]] for p in listed)
        if kind in ("if", "for", "while", "until", "function"):
            inner = dirs
            for part in node.parts:
                inner = self.node(part, inner)
            return dirs
        if kind in ("word", "assignment", "redirect"):
            self.substitutions(node, dirs)
        return dirs

    def pipeline(self, node: Any, dirs: Dirs) -> None:
        """Each side runs in its own subshell; what the sides before write reaches the stdin of the ones after."""
        fed: list[tuple[str, str]] = []  # the words of every command before, and what their own redirects feed them
        feed: Feed | None = None
        start_text = None
        for part in node.parts:
            if part.kind == "pipe":
                continue
            start = len(self.out)
            self.node(part, dirs)
            if feed is not None:
                for c in self.out[start:]:
                    if c.wrapper is None and c.redirect is None:
                        c.redirect = feed
            start_text = part.pos[0] if start_text is None else start_text
            for c in self.out[start:]:
                if len(fed) < _FEED_WORDS:
                    fed += [(str(getattr(w, "raw", w)), c.cwd) for w in c.argv]
                    if c.redirect is not None and c.redirect is not feed:
                        fed += c.redirect.words + c.redirect.code
            origin = self.text[start_text : part.pos[1]].strip()
            feed = Feed(f"`{origin if len(origin) <= 60 else origin[:59] + '…'} |`", fed[:_FEED_WORDS])

    def substitutions(self, node: Any, dirs: Dirs) -> None:
        """Commands inside ``$(…)``, backticks and ``<(…)`` anywhere under ``node``."""
        for child in _children(node):
            if child.kind in ("commandsubstitution", "processsubstitution"):
                self.depth += 1
                self.node(child.command, dirs)
                self.depth -= 1
            else:
                self.substitutions(child, dirs)

    def word(self, node: Any) -> list[str]:
        raw = self.text[node.pos[0] : node.pos[1]]
        dynamic = any(_dynamic(child) for child in _children(node))
        if dynamic:  # `$f` after `f=x.py` or in `for f in *.py`: the text it was given is part of what it names
            given = [f"{name}={self.values[name]}" for name in _parameters(node) if name in self.values]
            raw = f"{raw} ({'; '.join(given)})" if given else raw
        if not dynamic and "{" in raw and "'" not in raw and '"' not in raw:
            return [Word(w, w) for w in expand_braces(node.word)]
        return [Word(node.word, raw, dynamic=dynamic)]

    def command(self, node: Any, dirs: Dirs) -> Dirs:
        words: list[str] = []
        feed: Feed | None = None
        for part in node.parts:
            self.substitutions(part, dirs)
            if part.kind == "word":
                words.extend(self.word(part))
            elif part.kind == "assignment" and not words:
                name, _, value = self.text[part.pos[0] : part.pos[1]].partition("=")
                self.values[name] = value
            elif part.kind == "redirect":
                feed = self.redirect(part, dirs[0]) or feed
        return _simple(words, dirs, self.out, self.depth, feed)

    def redirect(self, node: Any, cwd: str) -> Feed | None:
        """The feed of an input redirect (``<``, ``<<<``, ``<<``), or None."""
        if node.type not in ("<", "<<<", "<<", "<<-") or getattr(node, "input", None) not in (None, 0):
            return None
        target = node.output
        if not hasattr(target, "kind"):
            return None
        word = self.word(target)[0]
        raw = getattr(word, "raw", word)
        if node.type == "<":
            return Feed(f"`< {raw}`", [(raw, cwd)])
        if node.type == "<<<":
            return Feed("a here-string", [(raw, cwd)] if getattr(word, "dynamic", False) else [], [(str(word), cwd)])
        body = getattr(getattr(node, "heredoc", None), "value", "") or ""
        lines = body.split("\n")
        if lines and lines[-1].strip() == str(word):
            lines = lines[:-1]
        body = "\n".join(lines)
        dynamic = str(word) not in self.literal and ("$" in body or "`" in body)
        return Feed("a here-document", [(body, cwd)] if dynamic else [], [(body, cwd)])


def _dynamic(node: Any) -> bool:
    return node.kind in ("parameter", "commandsubstitution", "processsubstitution") or any(_dynamic(c) for c in _children(node))


def _parameters(node: Any) -> list[str]:
    found = [node.value] if node.kind == "parameter" else []
    for child in _children(node):
        found += _parameters(child)
    return found


def _children(node: Any) -> list[Any]:
    found = list(getattr(node, "parts", None) or [])
    for name in ("output", "heredoc"):
        child = getattr(node, name, None)
        if child is not None and hasattr(child, "kind"):
            found.append(child)
    return found


def _simple(words: list[str], dirs: Dirs, out: list[Command], depth: int, feed: Feed | None = None) -> Dirs:
    """Record the program ``words`` run (wrappers peeled off); ``cd``, ``pushd`` and ``popd`` return the new directories."""
    words = skip_assignments(words)
    outer: Command | None = None
    for argv, where, _via in unwrap(words, dirs[0]):
        cmd = Command(argv, where, outer, feed if outer is None else None)
        out.append(cmd)
        outer = cmd
        name = os.path.basename(argv[0])
        if name in ("cd", "pushd", "popd"):
            return _moved(name, argv[1:], dirs, where)
        script = _shell_script(argv)
        if script is not None:  # `sh -c 'python "$1"' _ x.py`: the words after the script are $0, $1 …
            params = argv[argv.index(script) + 1 :] if script in argv else []
            values = {str(i): getattr(w, "raw", w) for i, w in enumerate(params[:10])}
            values["@"] = values["*"] = " ".join(getattr(w, "raw", w) for w in params[1:])
            _read(script, (where, where), out, depth + 1, values)
        elif name == "eval":
            _read(" ".join(argv[1:]), (where, where), out, depth + 1)
    return dirs


def _moved(name: str, args: list[str], dirs: Dirs, where: str) -> Dirs:
    """The directories after ``cd``/``pushd``/``popd`` ``args`` (a target that is a variable stays where it was)."""
    cwd, old, stack = dirs[0], dirs[1], dirs[2:]
    targets = [a for a in args if not a.startswith(("-", "+")) or a == "-"]
    if name == "popd":
        return (stack[0], cwd, *stack[1:]) if stack and not targets and not args else dirs
    if name == "pushd" and not targets:
        return (stack[0], cwd, cwd, *stack[1:]) if stack else dirs
    target = targets[0] if targets else "~"
    if target == "-":
        new = old
    else:
        new = _target(target, where)
        if new is None:
            return dirs
    return (new, cwd, cwd, *stack) if name == "pushd" else (new, cwd, *stack)


def _target(word: str, where: str) -> str | None:
    raw = getattr(word, "raw", word)
    if getattr(word, "dynamic", False):
        value = str(word)
        for home in ("$HOME", "${HOME}"):
            if value.startswith(home) and "$" not in value[len(home) :] and "`" not in raw:
                return os.path.normpath(os.path.expanduser("~") + value[len(home) :])
        return None  # unknowable: the commands after it are read in the last known directory
    pattern = getattr(word, "glob", None)
    if pattern:
        from .shell_words import glob_matches

        found = [p for p in glob_matches(pattern, where, 64) if os.path.isdir(p)]
        return found[0] if found else None
    return os.path.normpath(os.path.join(where, os.path.expanduser(word)))


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


def _scan(text: str, dirs: Dirs, out: list[Command], depth: int) -> Dirs:
    """The fallback for a line the parser refuses: cut at control operators, read each piece as a simple command.

    A ``|`` feeds the pieces before it to the next one, ``< FILE`` and ``<<< WORD`` feed it too, and an
    output redirect's target is skipped (it names a file written, not a program).
    """
    for mark in ("`", "$(", "<(", ">("):
        text = text.replace(mark, " ; ")  # a substitution's command is a piece of its own
    piece: list[str] = []
    feed: Feed | None = None
    fed: list[Command] = []
    tokens = [*_tokens(text), ";"]
    i = 0
    while i < len(tokens):
        word = tokens[i]
        i += 1
        if word in ("<", "<<<") and i < len(tokens):
            target = tokens[i]
            feed = Feed(f"`{word} {target}`", [(target, dirs[0])], [(target, dirs[0])] if word == "<<<" else [])
            i += 1
        elif set(word) <= set("<>&") and word not in ("&", "&&") and ">" in word or word in ("<<", "<<-", "<>"):
            i += 1  # `> out.py`, `>> log`, `<< EOF`: the next word is a target, not a command
        elif word in _CONTROL or set(word) <= set(";&|()<>"):
            if piece:
                start = len(out)
                dirs = _simple(piece, dirs, out, depth, feed)
                fed.extend(out[start:])
                piece = []
            feed = None
            if word in ("|", "|&") and fed:
                feed = Feed("a pipe", [(w, c.cwd) for c in fed for w in c.argv])
            else:
                fed = []
        else:
            piece.append(Word(word, word, dynamic="$" in word, quoted_glob=True))
    return dirs


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: words as the whitespace gives them
        return text.replace("\n", " ; ").split()
