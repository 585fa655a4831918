"""What the agent guards deny, and the j-cli command each denial names instead.

Three rules, each a pure function of a :class:`~jcli_sidecar.guards.hook_payload.ToolCall`
(plus, for two of them, a look at the files it names); each returns None
(allow) or the reason to show the agent:

- :func:`notebook_exec`: a shell command that runs a notebook outside
  j-cli (``jupyter nbconvert --execute``, ``jupyter execute``, ``papermill``,
  ``runipy``, ``ipython x.ipynb``, ``jupytext --execute``, and their
  ``python -m`` forms, behind any wrapper or nested shell).
- :func:`python_run`: ``python x.py`` (any interpreter name, any options
  before the script, or ``./x.py``) where ``x.py`` is a py:percent file with
  a paired ``x.ipynb``.
- :func:`notebook_edit`: a hand edit of a paired ``.ipynb`` (NotebookEdit,
  Edit, Write, MultiEdit, ``apply_patch``). An ``.ipynb`` without a
  py:percent pair is allowed: nothing can drift, and NotebookEdit is the
  host's structured notebook tool.

A shell line is looked at only when its text mentions something that could
matter (:func:`might_run_notebook`: a notebook runner's name for
notebook-exec, ``.py`` for python-run); only then is the shell parser
imported (bashlex, with its parse tables shipped ready:
:mod:`jcli_sidecar.guards.shell_tables`).
"""

from __future__ import annotations

import os
import re

from .hook_payload import fs_spellings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..pair import Pair
    from .hook_payload import ToolCall
    from .shell_commands import Command

__all__ = ["EXEC_HINT", "might_run_notebook", "might_run_script", "notebook_edit", "notebook_exec", "percent_pair_of", "python_run"]

#: Words without which a shell line cannot run a notebook (``python -m nbconvert`` names nbconvert, and so on).
_RUNNER_WORDS = (
    "jupyter",
    "papermill",
    "runipy",
    "ipython",
    "jupytext",
    "nbconvert",
    "nbclient",
    "ipynb",
    "nbmake",
    "nbval",
    "treon",
    "quarto",
)
#: Modules ``python -m`` runs as a notebook runner: module -> the program name it stands for.
_MODULES = {
    "nbconvert": "jupyter-nbconvert",
    "jupyter": "jupyter",
    "papermill": "papermill",
    "runipy": "runipy",
    "jupytext": "jupytext",
    "IPython": "ipython",
    "nbclient": "jupyter-execute",
    "pytest": "pytest",
    "treon": "treon",
}
_PY_VALUE_FLAGS = "WXcm"
_GLOB_OR_BRACE = re.compile(r"[*?]|\[[^\]]+\]|\{[^{}]*,[^{}]*\}")
#: A module a command may run or import: ``-m mod``, ``import mod``, ``from mod import``, ``%run -m mod``, ``run_module('mod')``.
_MODULE_WORD = re.compile(r"(?:-m\s*|\bimport\s+|\bfrom\s+|import_module\(\s*|__import__\(\s*|run_module\(\s*)([A-Za-z_][\w.]*)")
#: Without one of these, a glob cannot reach an interpreter (a python, a runner, an unknown program, a ``#!`` script).
_MAY_START_INTERPRETER = ("py", "pdb", "coverage", "jupyter", "profile", "trace", "scalene", "memray", "$", "`", "./")
_RUNPY = re.compile(r"\brunpy\s+([A-Za-z_][\w.]*)")
_WORD = re.compile(r"[\w./~-]+")
#: Read at most this much of a .py to decide whether it is py:percent.
_PEEK_BYTES = 4 * 1024 * 1024

#: How to run a notebook through j-cli; ``{file}`` is the notebook or paired .py.
EXEC_HINT = (
    "Run it through j-cli instead, in a kernel session (outputs go into the notebook, kernel state is kept):\n"
    "  j-cli session list\n"
    "  j-cli exec SESSION -f {file}\n"
    "(pick SESSION from the list, or start one with `j-cli session create`; `--cell N` or `--cell A:B` runs some cells only;\n"
    " after editing cells, `--stale` runs just the edited cells and those that read what they write)\n"
    "A long run that may outlast this shell call goes to the background (it answers a job id at once and runs on), then wait on it:\n"
    "  j-cli exec SESSION -f {file} --background\n"
    "  j-cli job wait JOB_ID\n"
    "(each wait returns within its --timeout, 100 s by default: call it again while it answers timed_out: true)"
)


def might_run_notebook(text: str, words: tuple[str, ...] = _RUNNER_WORDS) -> bool:
    """Could this shell text run a notebook? False: certainly not, no parsing needed.

    The text is looked at with its quotes and backslashes taken out (``analysis.p''y`` is ``analysis.py``).

    Example:
        >>> might_run_notebook("python -m pytest && git status"), might_run_notebook("uv run papermill a b")
        (False, True)
    """
    lowered = _unquoted(text).lower()
    return any(word in lowered for word in words)


def might_run_script(text: str, cwd: str) -> bool:
    """Could this shell text hand a paired ``.py`` to an interpreter? False: certainly not, no parsing needed.

    True when it names a ``.py`` or ``.ipynb``; holds a glob or a brace list
    and something that may start an interpreter (a word with ``py`` in it, a
    script runner, a variable or substitution, a ``./`` path); or imports or
    runs (``-m``, ``import``, ``%run -m``) a module whose file or package is in
    ``cwd`` or a directory the text names.

    Example:
        >>> might_run_script("python -m pytest -q", "/nonexistent"), might_run_script("python a*", "/w"), might_run_script("ls *.txt", "/w")
        (False, True, False)
    """
    plain = _unquoted(text)
    lowered = plain.lower()
    if ".py" in lowered or ".ipynb" in lowered:
        return True
    if _GLOB_OR_BRACE.search(plain) and any(word in lowered for word in _MAY_START_INTERPRETER):
        return True
    modules = {m.split(".")[0] for m in _MODULE_WORD.findall(plain) + _RUNPY.findall(plain)}
    if not modules:
        return False
    dirs = [cwd] + [os.path.join(cwd, w) for w in list(dict.fromkeys(_WORD.findall(plain)))[:32] if os.path.isdir(os.path.join(cwd, w))]
    return any(os.path.exists(os.path.join(d, m + ".py")) or os.path.isdir(os.path.join(d, m)) for d in dirs for m in modules)


def _unquoted(text: str) -> str:
    return text.replace("'", "").replace('"', "").replace("\\", "")


def _is_python(name: str) -> bool:
    rest = name[6:] if name.startswith("python") else None
    return rest is not None and all(ch.isdigit() or ch == "." for ch in rest)


def _program(argv: list[str]) -> tuple[str, list[str]] | None:
    """``(program, arguments)`` with ``python -m MOD`` and ``jupyter SUB`` spelled as one program name.

    ``("python", [script, ...])`` for a script run; None for ``python -c``,
    a plain interactive interpreter, or a module that runs no notebook.
    """
    name = os.path.basename(argv[0])
    args = argv[1:]
    if _is_python(name):
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--" or not arg.startswith("-") or arg == "-":
                return ("python", args[i + 1 :] if arg == "--" else args[i:]) if arg != "-" else None
            if arg.startswith("--"):
                i += 2 if arg == "--check-hash-based-pycs" else 1
                continue
            for k, flag in enumerate(arg[1:], 1):
                if flag in _PY_VALUE_FLAGS:
                    value = arg[k + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                    i += 1 if arg[k + 1 :] else 2
                    if flag == "c":
                        return None
                    if flag == "m":
                        module = _MODULES.get(value)
                        return _program([module, *args[i:]]) if module else None
                    break
            else:
                i += 1
        return None
    if name in ("jupyter", "jupyter.exe") and args and not args[0].startswith("-"):
        return f"jupyter-{args[0]}", args[1:]
    return name, args


def _positional(args: list[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


def _runs_notebook(program: str, args: list[str]) -> bool:
    if program in ("pytest", "py.test"):  # the nbmake and nbval plugins run every notebook they collect
        return any(a.split("=", 1)[0] in ("--nbmake", "--nbval", "--nbval-lax") for a in args)
    if program == "quarto":
        return args[:1] == ["render"] and "--execute" in args
    if program in ("papermill", "runipy", "jupyter-execute", "treon"):
        return not any(a in ("-h", "--help", "--help-all", "--version") for a in args)  # `xargs papermill` takes its notebooks from stdin
    if program == "jupyter-nbconvert":
        return "--execute" in args or any(a.startswith("--ExecutePreprocessor.enabled") and a.lower().endswith("true") for a in args)
    if program in ("jupytext", "jupyter-jupytext"):
        return "--execute" in args
    if program in ("ipython", "ipython3"):
        from .code_reach import python_args

        role, value, _ = python_args(args, True)
        return role == "script" and value.endswith(".ipynb")
    return False


def _shown(path: str, cwd: str) -> str:
    rel = os.path.relpath(path, cwd)
    return rel if not rel.startswith("..") else path


def notebook_exec(call: ToolCall) -> str | None:
    """The reason to deny a shell command that runs a notebook outside j-cli, or None.

    A notebook runner by name (behind any wrapper), or an interpreter that
    gets a notebook as code: inline code that runs one it names, a feed
    that names one, an IPython given one by a glob or ``xargs``.

    Example:
        >>> from jcli_sidecar.guards.hook_payload import parse_payload
        >>> notebook_exec(parse_payload('{"tool_name": "Bash", "tool_input": {"command": "sudo papermill a.ipynb o.ipynb"}, "cwd": "/w"}')).splitlines()[0]
        '`papermill` runs a notebook outside j-cli (a.ipynb): its outputs and kernel state never reach your j-cli session.'
    """
    if call.kind != "shell" or not call.command or not might_run_notebook(call.command):
        return None
    from .code_reach import notebook_sources

    for cmd in _commands(call):
        found = _program(cmd.argv)
        if found is not None and _runs_notebook(*found):
            program, args = found
            named = _positional(args)
            # papermill's input is its first positional (its output the second); other tools name the notebooks among their options
            first = (
                named[0] if program in ("papermill", "runipy") and named else next((a for a in named if a.endswith((".ipynb", ".py"))), "")
            )
            if program in ("ipython", "ipython3"):
                from .code_reach import python_args

                first = python_args(args, True)[1]
            target = _shown(cmd.path(first), call.cwd) if first.endswith((".ipynb", ".py")) else "NOTEBOOK.ipynb"
            shown = program.replace("jupyter-", "jupyter ")
            return (
                f"`{shown}` runs a notebook outside j-cli ({target}): its outputs and kernel state never reach your j-cli session.\n"
                + EXEC_HINT.format(file=_quote(target))
            )
        for source in notebook_sources(cmd):
            notebook = next((p for p in source.paths if _is_file(p)), None)
            if notebook is None:
                continue
            shown = _shown(notebook, call.cwd)
            return (
                f"`{_clip(cmd)}` hands a notebook to an interpreter outside j-cli: {source.how}"
                f"{shown}'s code would run there, and its outputs and kernel state never reach your j-cli session.\n"
                + EXEC_HINT.format(file=_quote(shown))
            )
    return None


def python_run(call: ToolCall) -> str | None:
    """The reason to deny running a paired py:percent ``.py`` outside j-cli, or None.

    Whatever way the file reaches an interpreter (:func:`~jcli_sidecar.guards.code_reach.python_sources`):
    a script, a glob, a module, inline code, stdin, ``xargs``. A ``.py`` without
    ``# %%`` markers, or without an ``.ipynb`` beside it, is a script like any
    other and is allowed.
    """
    if call.kind != "shell" or not call.command or not might_run_script(call.command, call.cwd):
        return None
    from .code_reach import python_sources

    for cmd in _commands(call):
        for source in python_sources(cmd):
            for path in source.paths:
                pair = percent_pair_of(path)
                if pair is None:
                    continue
                shown = _shown(pair.py, call.cwd)
                route = f"`{_clip(cmd)}`: {source.how}" if source.how else ""
                return (
                    f"{route}{shown} is a py:percent notebook paired with {_shown(pair.notebook, call.cwd)}; running it as a plain script "
                    "loses its outputs and the kernel state, and leaves the notebook behind.\n" + EXEC_HINT.format(file=_quote(shown))
                )
    return None


def _clip(cmd: Command, limit: int = 80) -> str:
    text = " ".join(w.raw if hasattr(w, "raw") else _quote(w) for w in cmd.argv)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_file(path: str) -> bool:
    return any(os.path.isfile(spelling) for spelling in fs_spellings(path))


def notebook_edit(call: ToolCall) -> str | None:
    """The reason to deny a hand edit of a paired ``.ipynb``, or None."""
    if call.kind not in ("edit", "write", "notebook_edit", "patch"):
        return None
    from ..pair import is_percent_file, paired_py_path

    for path in call.paths:
        if not path.endswith(".ipynb"):
            continue
        py = paired_py_path(path)
        if not is_percent_file(py, _PEEK_BYTES):
            continue
        nb, shown_py = _shown(path, call.cwd), _shown(py, call.cwd)
        return (
            f"{nb} is paired with the py:percent {shown_py}; edit {shown_py} instead (the .py is the source of the cells). "
            "j-cli brings the notebook in line after the edit, keeping the outputs of unchanged cells; to do it by hand:\n"
            f"  j-cli convert py-to-ipynb {_quote(shown_py)}\n"
            f"(running it with `j-cli exec SESSION -f {_quote(shown_py)}` syncs it too)"
        )
    return None


def percent_pair_of(path: str) -> Pair | None:
    """The pair ``path`` (a ``.py`` or its ``.ipynb``) is part of on disk (:meth:`Pair.on_disk`), as a guard sees it, else None.

    A guard peeks: a ``.py`` over :data:`_PEEK_BYTES` counts as no py:percent file.
    """
    from ..pair import Pair

    for spelling in fs_spellings(path):
        found = Pair.on_disk(spelling, _PEEK_BYTES)
        if found is not None:
            return found
    return None


def _quote(word: str) -> str:
    """``word`` quoted for the shell; a byte that is not UTF-8 (a ``surrogateescape``) as bash's ``$'\\xNN'``."""
    import shlex

    if not any("\udc80" <= ch <= "\udcff" for ch in word):
        return shlex.quote(word)
    spelt = "".join(f"\\x{ord(ch) - 0xDC00:02x}" if "\udc80" <= ch <= "\udcff" else "\\" + ch if ch in "\\'" else ch for ch in word)
    return f"$'{spelt}'"


def _commands(call: ToolCall) -> list[Command]:
    from .shell_commands import commands

    return commands(call.command or "", call.cwd)
