"""What a code cell imports, defines, assigns and calls, read from its syntax tree.

A cell is parsed as Python with :mod:`ast`. A cell that is not plain Python
because it holds IPython syntax (``!ls``, ``%time f()``, ``%%bash``,
``x?``) is first turned into Python by IPython's own input transformer
(imported only then), so magics never hide the rest of a cell; the magics
themselves are listed. A cell that still does not parse says why instead
of failing. Every list is bounded (:data:`NAME_LIMIT` names of at most
:data:`NAME_CHARS` characters). Nothing here runs code.
"""

from __future__ import annotations

import ast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ANALYSE_MAX_CHARS", "NAME_CHARS", "NAME_LIMIT", "analyse_code"]

#: At most this many names per list (imports, defines, writes, calls, magics).
NAME_LIMIT = 10
#: A longer name is cut to this many characters (ending in "…").
NAME_CHARS = 60
#: A cell with a longer source is not parsed (``parsed`` is None).
ANALYSE_MAX_CHARS = 200_000

_LISTS = ("imports", "defines", "writes", "calls", "magics")
_MAGIC_CALLS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}
_HELP_MAGICS = {"pinfo": "?", "pinfo2": "??", "psearch": "?"}


class _Names:
    """Names in first-seen order, unique, bounded."""

    __slots__ = ("items", "cut")

    def __init__(self) -> None:
        self.items: list[str] = []
        self.cut = False

    def add(self, name: str) -> None:
        if len(name) > NAME_CHARS:
            name = name[: NAME_CHARS - 1] + "…"
        if name in self.items:
            return
        if len(self.items) >= NAME_LIMIT:
            self.cut = True
            return
        self.items.append(name)


def _parse(source: str) -> tuple[ast.Module | None, str | None]:
    try:
        return ast.parse(source), None
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        return None, f"{exc.msg}{where}"
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return None, type(exc).__name__


def _ipython_to_python(source: str) -> str | None:
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # IPython comes with ipykernel; without it magics stay unparsed
        return None
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # the transformer's own failure is one more reason the cell does not parse
        return None


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _magic(call: ast.Call) -> str | None:
    """``%name``, ``%%name``, ``!`` or ``?`` for a call the IPython transformer wrote, else None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in _MAGIC_CALLS):
        return None
    owner = func.value
    if not (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "get_ipython"):
        return None
    if func.attr in ("system", "getoutput"):
        return "!"
    name = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
    if not isinstance(name, str):
        return None
    if func.attr == "run_line_magic":
        return _HELP_MAGICS.get(name, f"%{name}")
    return f"%%{name}"


def _targets(node: ast.AST, out: _Names) -> None:
    if isinstance(node, ast.Name):
        out.add(node.id)
    elif isinstance(node, (ast.Tuple, ast.List)):
        for item in node.elts:
            _targets(item, out)
    elif isinstance(node, ast.Starred):
        _targets(node.value, out)


def _top_level(body: list[ast.stmt], defines: _Names, writes: _Names) -> None:
    """Names a cell binds in its namespace (not inside functions or classes)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defines.add(stmt.name)
            continue
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                _targets(target, writes)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            _targets(stmt.target, writes)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            _targets(stmt.target, writes)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    _targets(item.optional_vars, writes)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                _top_level(inner, defines, writes)
        for handler in getattr(stmt, "handlers", ()):
            _top_level(handler.body, defines, writes)


def _import_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name + (f" as {alias.asname}" if alias.asname else "") for alias in node.names]
    module = "." * node.level + (node.module or "")
    joiner = "" if module.endswith(".") or not module else "."
    return [f"{module}{joiner}{alias.name}" + (f" as {alias.asname}" if alias.asname else "") for alias in node.names]


def analyse_code(source: str) -> dict[str, Any]:
    """The names a code cell's source imports, defines, writes and calls, and its magics.

    Returns:
        ``parsed`` (True, False, or None for a source over
        :data:`ANALYSE_MAX_CHARS`), ``parse_error`` (why not, or None), the
        lists ``imports``, ``defines`` (top-level functions and classes),
        ``writes`` (top-level assigned names), ``calls`` (dotted names
        called), ``magics`` (``%name``, ``%%name``, ``!``, ``?``), and
        ``names_truncated`` (the lists cut at :data:`NAME_LIMIT`).

    Example:
        >>> info = analyse_code("!pip list\\nimport numpy as np\\nx = np.zeros(3)")
        >>> info["parsed"], info["imports"], info["writes"], info["calls"], info["magics"]
        (True, ['numpy as np'], ['x'], ['np.zeros'], ['!'])
        >>> analyse_code("def f(:\\n  pass")["parse_error"]
        'invalid syntax (line 1)'
    """
    lists = {name: _Names() for name in _LISTS}
    info: dict[str, Any] = {"parsed": None, "parse_error": None}
    if len(source) > ANALYSE_MAX_CHARS:
        info["parse_error"] = f"not analysed: over {ANALYSE_MAX_CHARS} characters"
    else:
        tree, error = _parse(source)
        if tree is None:
            python = _ipython_to_python(source)
            if python is not None and python != source:
                tree, error = _parse(python)
        info["parsed"] = tree is not None
        info["parse_error"] = error if tree is None else None
        if tree is not None:
            _collect(tree, lists)
    for name in _LISTS:
        info[name] = lists[name].items
    info["names_truncated"] = [name for name in _LISTS if lists[name].cut]
    return info


def _collect(tree: ast.Module, lists: dict[str, _Names]) -> None:
    _top_level(tree.body, lists["defines"], lists["writes"])
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom, ast.Call))]
    for node in sorted(found, key=lambda n: (n.lineno, n.col_offset)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _import_names(node):
                lists["imports"].add(name)
        elif isinstance(node, ast.Call):
            magic = _magic(node)
            if magic is not None:
                lists["magics"].add(magic)
                continue
            name = _dotted(node.func)
            if name is not None and name != "get_ipython":
                lists["calls"].add(name)
