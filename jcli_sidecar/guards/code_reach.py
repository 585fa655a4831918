"""What reaches a Python interpreter from one command, and which files that code may come from.

A shell command hands code to an interpreter in more ways than
``python x.py``: a script file (also a glob, a ``$(…)``, ``./x.py`` through
its ``#!`` line, ``uv run x.py``), a module (``python -m x``, a local
``x.py`` wins), inline code (``-c``, ``ipython -c "%run x.py"``), its
standard input (a pipe, ``< x.py``, a here-string or here-document), and
the names ``xargs``, ``parallel`` or ``find -exec`` add. :func:`python_sources`
and :func:`notebook_sources` list, for one
:class:`~jcli_sidecar.guards.shell_commands.Command`, each such way as a
:class:`Source`: the files it may bring in, and a sentence saying how.

Where the shell's meaning cannot be known before it runs (a variable, a
substitution, a feed of names), the files are those its text names or its
glob matches: the guards deny only when one of them is a paired py:percent
file or a notebook.
"""

from __future__ import annotations

import os
import re

from .shell_words import GLOB_LIMIT, glob_matches, has_glob, path_tokens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from .shell_commands import Command, Feed

__all__ = ["Source", "interpreter_kind", "notebook_sources", "python_args", "python_sources"]

_STDIN_FILES = ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
#: Programs (and ``python -m`` modules) that run the script or module they are given: debuggers, profilers, coverage.
_SCRIPT_RUNNERS = frozenset({"pdb", "ipdb", "ipdb3", "cProfile", "profile", "trace", "pyinstrument", "scalene", "viztracer"})
_SUBCOMMAND_RUNNERS = {"coverage": "run", "memray": "run", "jupyter-run": ""}
# The patterns below are compiled where inline code is read (``re``'s own cache keeps
# them), not at import: a guard that meets no inline code, the usual case, never pays.
#: Inline code that runs a file it names.
_RUNS_FILE = (
    r"\bexec(?:file)?\s*\(|exec_module|runpy|run_path|run_module|%run|\bsystem\b|subprocess|popen|spawn|import_module|__import__|"
    r"spec_from_file_location|SourceFileLoader|get_ipython|^\s*!"
)
#: Inline code that runs a notebook it names.
_RUNS_NOTEBOOK = (
    r"nbclient|NotebookClient|ExecutePreprocessor|execute_notebook|papermill|testbook|%run|\bexec(?:file)?\s*\(|runpy|\bsystem\b|"
    r"subprocess|popen|spawn|run_notebook|--execute|get_ipython|^\s*!"
)
_IMPORTS = (
    r"(?:^|[;:\s(\"'])(?:from\s+([\w.]+)\s+import\s+\(?\s*([\w, ]+)|import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*))"
    r"|(?:import_module|__import__|run_module)\(\s*['\"]([\w.]+)['\"]|%run\s+-m\s+([\w.]+)"
)


class Source:
    """One way code may reach an interpreter: the files it may come from, and how (a sentence, or "" for a plain script)."""

    __slots__ = ("paths", "how")

    def __init__(self, paths: list[str], how: str = "") -> None:
        self.paths = paths
        self.how = how

    def __repr__(self) -> str:
        return f"Source({self.paths!r}, {self.how!r})"


def interpreter_kind(name: str) -> str | None:
    """``python`` for any CPython or PyPy name (``python3.11``, ``pypy3``, ``py``), ``ipython``, else None.

    Example:
        >>> interpreter_kind("python3.11"), interpreter_kind("ipython3"), interpreter_kind("pytest")
        ('python', 'ipython', None)
    """
    if name.endswith(".exe"):
        name = name[:-4]
    for prefix, kind in (("ipython", "ipython"), ("python", "python"), ("pypy", "python")):
        rest = name[len(prefix) :] if name.startswith(prefix) else None
        if rest is not None and all(ch.isdigit() or ch == "." for ch in rest.removesuffix("-dbg").rstrip("mw")):
            return kind
    return "python" if name == "py" else None


def python_sources(cmd: Command) -> Iterator[Source]:
    """Each way ``cmd`` may hand a ``.py`` file (or the module of one) to an interpreter as code."""
    argv = cmd.argv
    first = argv[0]
    name = os.path.basename(first)
    if getattr(first, "glob", None):
        found = [p for p in glob_matches(first.glob, cmd.cwd) if p.endswith(".py")]  # type: ignore[attr-defined]
        yield Source(found, f"`{first.raw}` runs the file it matches through its #! line.")  # type: ignore[attr-defined]
        return
    if name.endswith(".py") and not getattr(first, "dynamic", False):
        yield Source([cmd.path(first)])  # ./x.py through its #! line, or `uv run x.py`
        return
    kind = "python" if getattr(first, "dynamic", False) else interpreter_kind(name)
    args = argv[1:]
    if name in ("jupyter", "jupyter.exe") and args and not args[0].startswith("-"):
        name, args = f"jupyter-{args[0]}", args[1:]  # `jupyter run x.py` runs x.py in a new kernel
    if kind is None and name in _SUBCOMMAND_RUNNERS:
        sub = _SUBCOMMAND_RUNNERS[name]
        if not sub or args[:1] == [sub]:
            yield from _runner_sources(cmd, args[1:] if sub else args, name)
        return
    if kind is None and name in _SCRIPT_RUNNERS:
        yield from _runner_sources(cmd, args, name)
        return
    if kind is None:
        return
    unknown = getattr(first, "dynamic", False)
    prefix = f"`{first.raw}` is known only when the shell runs it; if it is an interpreter, " if unknown else ""  # type: ignore[attr-defined]
    role, value, rest = python_args(args, kind == "ipython")
    if role == "module":
        yield from _module_sources(cmd, value, rest, prefix)
    elif role == "code":
        yield from _code_sources(value, cmd.cwd, (".py",), _RUNS_FILE, prefix)
    elif role == "script" and value not in _STDIN_FILES:
        yield from _word_sources(cmd, value, (".py",), prefix)
    else:
        yield from _stdin_sources(cmd, (".py",), _RUNS_FILE, prefix)


def notebook_sources(cmd: Command) -> Iterator[Source]:
    """Each way ``cmd`` may hand a notebook to an interpreter as code: inline code that runs one it names, a
    feed that names one, an IPython given one by a glob, a substitution or ``xargs``."""
    argv = cmd.argv
    first = argv[0]
    unknown = bool(getattr(first, "dynamic", False))
    kind = "python" if unknown else interpreter_kind(os.path.basename(first))
    if kind is None:
        return
    prefix = f"`{first.raw}` is known only when the shell runs it; if it runs notebooks, " if unknown else ""  # type: ignore[attr-defined]
    role, value, rest = python_args(argv[1:], kind == "ipython")
    if unknown:  # `$(which papermill) a.ipynb o.ipynb`: any notebook among its words
        for word in argv[1:]:
            yield from _word_sources(cmd, word, (".ipynb",), prefix)
    if role == "code":
        yield from _code_sources(value, cmd.cwd, (".ipynb",), _RUNS_NOTEBOOK, prefix)
    elif role == "script" and value not in _STDIN_FILES:
        if kind == "ipython" and not unknown:
            yield from _word_sources(cmd, value, (".ipynb",), prefix)
    elif role != "module":
        yield from _stdin_sources(cmd, (".ipynb",), _RUNS_NOTEBOOK, prefix)


def python_args(args: list[str], ipython: bool) -> tuple[str, str, list[str]]:
    """``(role, value, rest)`` of an interpreter's arguments: ``script``/``module``/``code`` with its word, or ``stdin``.

    Example:
        >>> python_args(["-W", "ignore", "-c", "print(1)", "x"], False)
        ('code', 'print(1)', ['x'])
    """
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return ("script", args[i + 1], args[i + 2 :]) if i + 1 < len(args) else ("stdin", "", [])
        if arg == "-":
            return "stdin", "", args[i + 1 :]
        if not arg.startswith("-"):
            return "script", arg, args[i + 1 :]
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            if ipython and eq and key.endswith(("code_to_run", "exec_lines")):
                return "code", value, args[i + 1 :]
            if ipython and eq and key.endswith(("file_to_run", "exec_files")):
                return "script", value.strip("[]'\" "), args[i + 1 :]
            i += 2 if arg in ("--check-hash-based-pycs", "--profile", "--ipython-dir", "--log-level", "--config") else 1
            continue
        for k, flag in enumerate(arg[1:], 1):
            if flag in "WXcm":
                attached = arg[k + 1 :]
                value = attached if attached else (args[i + 1] if i + 1 < len(args) else "")
                if attached:
                    from .shell_words import Word

                    value = Word(attached, getattr(arg, "raw", arg), dynamic=bool(getattr(arg, "dynamic", False)))
                i += 1 if attached else 2
                if flag in "cm":
                    return ("code" if flag == "c" else "module"), value, args[i:]
                break
        else:
            i += 1
    return "stdin", "", []


def _word_sources(cmd: Command, word: str, suffixes: tuple[str, ...], prefix: str) -> Iterator[Source]:
    """The files one word may name: itself, its glob's matches, the files its unknowable text names, or a feed's names."""
    feed = cmd.arg_feed()
    mark = _replace_string(cmd) if feed is not None else None
    if feed is not None and mark and mark in word:
        found = _fed_files(cmd, feed, suffixes)  # the names themselves, and each put in place of the mark
        found += _mentioned(
            [(word.replace(mark, token), wcwd) for text, wcwd in feed.words[:64] for token in str(text).split()[:64]], suffixes
        )
        yield Source(found, f"{prefix}`{cmd.via}` fills `{word}` with names from {feed.origin}. ")
        return
    raw = getattr(word, "raw", word)
    if getattr(word, "dynamic", False):
        found = _mentioned([(raw, cmd.cwd)], suffixes)
        yield Source(found, f"{prefix}`{raw}` is known only when the shell runs it, and it names {_names(found, cmd.cwd)}. ")
    elif getattr(word, "glob", None):
        found = [p for p in glob_matches(word.glob, cmd.cwd) if p.endswith(suffixes)]  # type: ignore[attr-defined]
        yield Source(found, f"{prefix}the shell expands `{raw}` to {_names(found, cmd.cwd)}. ")
    elif word.endswith(suffixes):
        yield Source([cmd.path(word)], prefix)


def _replace_string(cmd: Command) -> str | None:
    """What ``find -exec``, ``parallel`` or ``xargs -I X`` / ``-i`` replace with each name (``{}`` unless told)."""
    if cmd.via in ("find", "fd", "parallel"):
        return "{}"
    if cmd.via != "xargs" or cmd.wrapper is None:
        return None
    argv = cmd.wrapper.argv
    for i, opt in enumerate(argv[1:], 1):
        if opt == "-I" and i + 1 < len(argv):
            return str(argv[i + 1])
        if opt.startswith("-I") and len(opt) > 2:
            return opt[2:]
        if opt.startswith(("-i", "--replace")):
            value = opt.split("=", 1)[1] if "=" in opt else opt[2:] if opt.startswith("-i") else ""
            return value or "{}"
    return None


def _module_sources(cmd: Command, module: str, rest: list[str], prefix: str) -> Iterator[Source]:
    if module in _SCRIPT_RUNNERS:
        yield from _runner_sources(cmd, rest, f"python -m {module}")
        return
    if module == "runpy" and rest:
        module = rest[0]
    if module == "IPython":
        role, value, _ = python_args(rest, True)
        if role == "script":
            yield from _word_sources(cmd, value, (".py",), prefix)
        elif role == "code":
            yield from _code_sources(value, cmd.cwd, (".py",), _RUNS_FILE, prefix)
        return
    found = _module_files(module, cmd.cwd)
    yield Source(found, f"{prefix}`python -m {module}` runs {_names(found, cmd.cwd)} (the working directory comes first on its path). ")


def _runner_sources(cmd: Command, args: list[str], runner: str) -> Iterator[Source]:
    """A debugger, profiler or coverage run: each positional ``.py`` it is given (or its ``-m MODULE``)."""
    for i, arg in enumerate(args):
        if arg == "-m" and i + 1 < len(args):
            found = _module_files(args[i + 1], cmd.cwd)
            yield Source(found, f"`{runner}` runs the module `{args[i + 1]}`. ")
            return
        if not arg.startswith("-"):
            yield from _word_sources(cmd, arg, (".py",), f"`{runner}` runs the script it is given; ")


def _module_files(module: str, cwd: str) -> list[str]:
    """The local files ``import module`` runs from ``cwd``: ``a/b.py``, or a package's ``__init__.py`` and ``__main__.py``."""
    if not module or not all(part.isidentifier() for part in module.split(".")):
        return []
    base = os.path.join(cwd, *module.split("."))
    return [base + ".py", os.path.join(base, "__main__.py"), os.path.join(base, "__init__.py")]


def _code_sources(code: str, cwd: str, suffixes: tuple[str, ...], runs: str, prefix: str) -> Iterator[Source]:
    """Inline code (``-c``, a here-document): files it names and runs, and local modules it imports."""
    raw = getattr(code, "raw", code)
    if getattr(code, "dynamic", False):
        found = _mentioned([(raw, cwd)], suffixes)
        yield Source(found, f"{prefix}its code comes from `{_clip(raw)}`, which names {_names(found, cwd)}. ")
        return
    found = _mentioned([(code, cwd)], suffixes)
    if found and re.search(runs, code, re.IGNORECASE | re.MULTILINE):
        yield Source(found, f"{prefix}its inline code `{_clip(code)}` runs {_names(found, cwd)}. ")
    if suffixes == (".py",):
        yield from _import_sources(code, cwd, prefix)


def _import_sources(code: str, cwd: str, prefix: str) -> Iterator[Source]:
    """Local modules ``code`` imports (``import x``, ``from pkg import x``, ``import_module('x')``, ``%run -m x``)."""
    for match in re.finditer(_IMPORTS, code, re.MULTILINE):
        if match.group(1):  # `from pkg import mod, other`: the package, and each name that may be a module of it
            modules = [match.group(1)] + [f"{match.group(1)}.{m.split(' as ')[0].strip()}" for m in match.group(2).split(",")]
        elif match.group(3):
            modules = [m.split(" as ")[0].strip() for m in match.group(3).split(",")]
        else:
            modules = [match.group(4) or match.group(5) or ""]
        for module in modules:
            found = _module_files(module, cwd)
            yield Source(found, f"{prefix}its code imports `{module}`, which runs {_names(found, cwd)}. ")


def _stdin_sources(cmd: Command, suffixes: tuple[str, ...], runs: str, prefix: str) -> Iterator[Source]:
    """No script named: the code is read from stdin, or ``xargs``/``find -exec`` add the script's name."""
    feed = cmd.arg_feed()
    if feed is not None:
        found = _fed_files(cmd, feed, suffixes)
        yield Source(found, f"{prefix}`{cmd.via}` gives it the names from {feed.origin}, which name {_names(found, cmd.cwd)}. ")
        return
    feed = cmd.stdin()
    if feed is None:
        return
    found = _mentioned(feed.words, suffixes)
    yield Source(found, f"{prefix}it reads its code from stdin, fed by {feed.origin}, which names {_names(found, cmd.cwd)}. ")
    if suffixes == (".py",):  # `echo "import x" | python`: what a feeding command writes may be code
        for text, cwd in feed.words[:64]:
            for source in _import_sources(str(text), cwd, prefix):
                source.how = source.how.replace("its code", f"the code {feed.origin} feeds it")
                yield source
    for text, cwd in feed.code:
        for source in _code_sources(text, cwd, suffixes, runs, prefix):
            source.how = source.how.replace("its inline code", f"the code {feed.origin} feeds it").replace("its code", f"{feed.origin}")
            yield source


def _fed_files(cmd: Command, feed: Feed, suffixes: tuple[str, ...]) -> list[str]:
    found = _mentioned(feed.words + feed.code, suffixes)  # a here-string or here-document given to xargs is names
    wrapper = cmd.wrapper
    if wrapper is not None and cmd.via in ("find", "fd"):
        found += _found_by(wrapper.argv, wrapper.cwd, suffixes)
    return found


def _found_by(argv: list[str], cwd: str, suffixes: tuple[str, ...]) -> list[str]:
    """The files (ending in ``suffixes``) ``find DIR… -name PAT`` / ``fd PAT DIR`` would give, from a bounded walk."""
    import fnmatch

    name = os.path.basename(argv[0])
    args = [str(a) for a in argv[1:]]
    stop = next((i for i, a in enumerate(args) if a.startswith("-")), len(args))
    starts = args[:stop] if name == "find" else args[1:stop]
    pats = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-name", "-iname", "-path", "-wholename", "-ipath")]
    if name == "fd" and stop:
        pats = [f"*{args[0]}*"]
    found: list[str] = []
    seen = 0
    for start in starts or ["."]:
        for root, dirs, files in os.walk(os.path.join(cwd, os.path.expanduser(start))):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
            seen += len(files) + len(dirs)
            for file in files:
                path = os.path.normpath(os.path.join(root, file))
                if file.endswith(suffixes) and (not pats or any(fnmatch.fnmatch(file, p) or fnmatch.fnmatch(path, p) for p in pats)):
                    found.append(path)
            if seen > GLOB_LIMIT:
                return found
    return found


def _mentioned(items: list[tuple[str, str]], suffixes: tuple[str, ...]) -> list[str]:
    """The files ending in ``suffixes`` that ``(text, cwd)`` items name, literally or as a glob."""
    found: list[str] = []
    for text, cwd in items:
        pattern = getattr(text, "glob", None)
        tokens = [pattern] if pattern else list(path_tokens(str(text), suffixes))
        for token in tokens[:64]:
            if has_glob(token):
                found += [p for p in glob_matches(token, cwd) if p.endswith(suffixes)]
            elif token.endswith(suffixes):
                found.append(os.path.normpath(os.path.join(cwd, os.path.expanduser(token))))
    return list(dict.fromkeys(found))


def _names(paths: list[str], cwd: str) -> str:
    paths = [p for p in paths if os.path.lexists(p)]
    shown = [os.path.relpath(p, cwd) if not os.path.relpath(p, cwd).startswith("..") else p for p in paths[:3]]
    return ", ".join(shown) + (", …" if len(paths) > 3 else "") if shown else "no file"


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
