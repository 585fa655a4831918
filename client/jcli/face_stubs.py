"""The typed stubs of the core's faces (``jcli_sidecar/*/__init__.pyi``), written from each face's one table.

A face (``jcli_sidecar/read/__init__.py``) declares its names once, in the
table it hands to ``lazy_face``: module by module, the names other concerns
use. It looks them up on first use through a module ``__getattr__``, which a
type checker can only type as ``object``; so the stub beside it says the same
table as plain re-exports (``from .requests import answer_read as answer_read``)
and mypy checks every caller against the names' real types, and refuses a
name the face does not export. ``make docs`` (``python -m jcli.face_stubs
jcli_sidecar``) rewrites the stubs, ``--check`` only compares (a test does the
same). The stubs are for the type checker alone: nothing imports them.

Example:
    >>> print(face_stub('from .face import lazy_face\\n__all__, __getattr__ = lazy_face(__name__, {"errors": ("JcliError",)})\\n'), end="")
    \"\"\"Written by `make docs` (jcli.face_stubs) from the table in __init__.py: the face's names with their types.\"\"\"
    <BLANKLINE>
    from .errors import JcliError as JcliError
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

__all__ = ["face_stub", "face_table", "main", "stale_stubs", "write_stubs"]

HEADER = '"""Written by `make docs` (jcli.face_stubs) from the table in __init__.py: the face\'s names with their types."""\n'


def face_table(source: str) -> dict[str, tuple[str, ...]]:
    """The table a face's source hands to ``lazy_face``: each module and the names it exports.

    Raises:
        ValueError: the source calls ``lazy_face`` with no literal table.
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy_face" and len(node.args) == 2:
            return ast.literal_eval(node.args[1])
    raise ValueError("no lazy_face(__name__, {...}) call with a literal table")


def face_stub(source: str) -> str:
    """The stub of the face whose ``__init__.py`` is ``source``: one re-export per name, as ruff orders them."""
    table = face_table(source)
    lines = [f"from .{module} import {name} as {name}" for module in sorted(table) for name in sorted(table[module], key=_isort_key)]
    return HEADER + "\n" + "\n".join(lines) + "\n" if lines else HEADER  # a face no other concern uses yet: the header alone


def _isort_key(name: str) -> tuple[int, str]:
    """isort's order by type: constants, then classes, then the rest, each alphabetically."""
    if name.isupper() and len(name) > 1:
        return 0, name
    return (1 if name[:1].isupper() else 2), name.lower()


def _faces(core: Path) -> list[Path]:
    return sorted(path for path in core.glob("*/__init__.py") if "lazy_face(" in path.read_text(encoding="utf-8"))


def stale_stubs(core: Path) -> list[Path]:
    """The stubs under ``core`` (the ``jcli_sidecar`` source dir) that differ from their face's table, or are missing."""
    stale = []
    for init in _faces(core):
        stub = init.with_suffix(".pyi")
        if not stub.is_file() or stub.read_text(encoding="utf-8") != face_stub(init.read_text(encoding="utf-8")):
            stale.append(stub)
    return stale


def write_stubs(core: Path) -> list[Path]:
    """Rewrite the stale stubs under ``core``; the ones written."""
    stale = stale_stubs(core)
    for stub in stale:
        stub.write_text(face_stub(stub.with_suffix(".py").read_text(encoding="utf-8")), encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    """``python -m jcli.face_stubs CORE_DIR [--check]``: 1 when a stub is (or was) stale under ``--check``."""
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    paths = [arg for arg in args if arg != "--check"]
    if len(paths) != 1:
        print("usage: python -m jcli.face_stubs CORE_DIR [--check]", file=sys.stderr)
        return 2
    core = Path(paths[0])
    found = stale_stubs(core) if check else write_stubs(core)
    for stub in found:
        print(f"{'stale' if check else 'wrote'} {stub}")
    return 1 if check and found else 0


if __name__ == "__main__":
    sys.exit(main())
