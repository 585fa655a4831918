"""Which files ``notebook grep`` searches: the notebooks and py:percent files under the paths given.

A path named is searched whatever it is called (a ``.py`` as py:percent,
anything else as a notebook); a directory is walked in name order, and in
it ``*.ipynb`` files and ``*.py`` files are found. The walk skips hidden
files and directories, ``node_modules`` and ``__pycache__`` (``.j-cli``,
``.git`` and ``.ipynb_checkpoints`` are hidden), and anything that is
not a regular file (a FIFO, a device, a socket). It never follows a link to a directory, and
follows a link to a file only when the file lies inside the directory
named (its real path). A notebook and its py:percent pair (same stem,
:func:`jcli_sidecar.pair.pairing.paired_py_path`) searched together split
the work: the ``.py`` gives the sources, the notebook its outputs. Reads
only, and opens nothing but directories (and a ``.py`` beside a notebook,
to see whether it is py:percent).
"""

from __future__ import annotations

import os

from ..base import check_file_name
from ..ipynb import coded_read_error
from ..pair import is_percent_file, paired_py_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SKIPPED_DIRS", "SearchUnit", "search_units"]

#: Directories a walk never enters, beside every hidden one (a name that starts with a dot).
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})


class SearchUnit:
    """One file to search.

    Attributes:
        path: the path as shown (the path given, joined with the name found under it).
        real: its real path.
        kind: ``"notebook"`` or ``"py"``.
        sources, outputs: which parts to search (a notebook whose ``.py`` is searched too: outputs only).
        named: the file was named itself, not found by a walk (a ``.py`` that is a plain script is then a problem).
    """

    __slots__ = ("path", "real", "kind", "sources", "outputs", "named")

    def __init__(self, path: str, real: str, kind: str, named: bool) -> None:
        self.path = path
        self.real = real
        self.kind = kind
        self.sources = True
        self.outputs = kind == "notebook"
        self.named = named


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _walk(shown: str, directory: str, root: str, units: list[SearchUnit], problems: list[dict[str, Any]]) -> None:
    """Add the files under ``directory`` in name order; a stack, not recursion, so no depth is too deep."""
    stack = [(shown, directory)]
    while stack:
        shown, directory = stack.pop()
        try:
            with os.scandir(directory) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            err = coded_read_error(exc, shown)
            problems.append({"path": shown, "code": err.code, "message": err.message})
            continue
        below: list[tuple[str, str]] = []
        for entry in entries:
            unit = _entry(shown, entry, root, below)
            if unit is not None:
                units.append(unit)
        stack.extend(reversed(below))


def _entry(shown: str, entry: os.DirEntry[str], root: str, below: list[tuple[str, str]]) -> SearchUnit | None:
    """The file ``entry`` names, if it is one to search; a directory to enter goes to ``below``."""
    name = entry.name
    if name.startswith("."):
        return None
    path = name if shown in (".", "") else os.path.join(shown, name)
    try:
        if entry.is_dir(follow_symlinks=False):
            if name not in SKIPPED_DIRS:
                below.append((path, entry.path))
            return None
        if not name.endswith((".ipynb", ".py")):
            return None
        real = entry.path
        if entry.is_symlink():
            real = os.path.realpath(entry.path)
            if not _inside(real, root) or not os.path.isfile(real):
                return None  # out of the directory named, or not a file: never followed
        elif not entry.is_file(follow_symlinks=False):
            return None  # a FIFO, a device, a socket
    except OSError:  # vanished since the listing, or its metadata unreadable: not a file to search
        return None
    return SearchUnit(path, os.path.realpath(real), "py" if name.endswith(".py") else "notebook", named=False)


def search_units(paths: list[str]) -> tuple[list[SearchUnit], list[dict[str, Any]]]:
    """The files to search under ``paths``, in order, each once; and the directories that could not be read.

    Raises:
        FileNotFound: a path given does not exist.
        UsageError: a path no file can have.

    Example:
        >>> units, problems = search_units(["examples"])
        >>> [(u.path, u.kind, u.sources, u.outputs) for u in units if u.path.startswith("examples/demo")]
        [('examples/demo.ipynb', 'notebook', True, True), ('examples/demo.py', 'py', True, False)]
    """
    units: list[SearchUnit] = []
    problems: list[dict[str, Any]] = []
    for given in paths:
        check_file_name(given, "path")
        try:
            is_dir = os.path.isdir(given)
            os.stat(given)
            real = os.path.realpath(given)
        except OSError as exc:
            raise coded_read_error(exc, given) from None
        if is_dir:
            _walk(given, given, real, units, problems)
        else:
            units.append(SearchUnit(given, real, "py" if given.endswith(".py") else "notebook", named=True))
    seen: set[str] = set()
    unique = []
    for unit in units:
        if unit.real not in seen:
            seen.add(unit.real)
            unique.append(unit)
    _split_pairs(unique)
    return unique, problems


def _split_pairs(units: list[SearchUnit]) -> None:
    """A notebook whose py:percent pair is searched too gives only its outputs."""
    py = {unit.real: unit for unit in units if unit.kind == "py"}
    for unit in units:
        if unit.kind != "notebook":
            continue
        pair = py.get(paired_py_path(unit.real))
        if pair is not None and is_percent_file(pair.real):
            unit.sources = False
