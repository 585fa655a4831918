"""Which names a code cell reads and writes, for stale cells: static, and conservative where it cannot know.

:func:`cell_uses` reads a cell's source with :mod:`ast` (IPython syntax
first turned into Python by IPython's own transformer, as
:mod:`~jcli_sidecar.read.cell_analysis` does) and tells:

- ``reads``: the global names the cell may read: every name loaded at its
  top level, in its functions, lambdas, classes and comprehensions, less
  the names each of those binds itself, and less the names the cell has
  already bound for certain (by a plain top-level statement) before the
  statement that loads them;
- ``writes``: the names it binds at its top level (assignments, ``for``,
  ``with``, ``except … as``, ``del``, imports, ``def``, ``class``, the
  walrus, ``match`` captures) and the names its functions declare ``global``;
- ``mutates``: names it may change without binding them: the base of an
  attribute or item it assigns or deletes (``df["a"] = …``, ``obj.x += 1``)
  and the receiver of a method it calls (``items.append(…)``);
- ``imported``: the names its imports bind (a method call on a module is
  no change of the module's value);
- ``opaque``: why the names it uses cannot be known, or None: it calls
  ``exec``, ``eval``, ``globals``, ``locals``, ``vars`` or ``get_ipython()``
  beyond the magics below, star-imports, runs a magic that runs code
  (``%run``, ``%time``, ``%%capture``, …: anything but the magics in
  :data:`QUIET_MAGICS`), interpolates names into a shell or magic line
  (``!echo {x}``, ``$x``), or does not parse. Such a cell depends on every
  cell before it, and may write anything.

Nothing here runs code. Results for short sources are cached (a sidecar
running jobs asks again for every run).
"""

from __future__ import annotations

import ast
import functools
import re

from .cell_analysis import ANALYSE_MAX_CHARS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["CellUses", "OPAQUE_CALLS", "QUIET_MAGICS", "cell_uses"]

#: Calling one of these makes a cell's names unknowable.
OPAQUE_CALLS = frozenset({"exec", "eval", "globals", "locals", "vars"})
#: Magics that run no Python code in the user's namespace (line and cell magics, without ``%``).
QUIET_MAGICS = frozenset(
    {
        "matplotlib",
        "config",
        "pip",
        "conda",
        "mamba",
        "uv",
        "cd",
        "pwd",
        "env",
        "ls",
        "who",
        "whos",
        "who_ls",
        "precision",
        "xmode",
        "colors",
        "load_ext",
        "reload_ext",
        "unload_ext",
        "bash",
        "sh",
        "html",
        "HTML",
        "markdown",
        "javascript",
        "js",
        "latex",
        "svg",
        "writefile",
        "pinfo",
        "pinfo2",
        "psearch",
    }
)
_MAGIC_CALLS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


class CellUses:
    """What :func:`cell_uses` found in one cell (frozen sets of names; ``opaque`` a reason or None)."""

    __slots__ = ("reads", "writes", "mutates", "imported", "opaque")

    def __init__(
        self,
        reads: Iterable[str] = (),
        writes: Iterable[str] = (),
        mutates: Iterable[str] = (),
        imported: Iterable[str] = (),
        opaque: str | None = None,
    ) -> None:
        self.reads = frozenset(reads)
        self.writes = frozenset(writes)
        self.mutates = frozenset(mutates)
        self.imported = frozenset(imported)
        self.opaque = opaque

    def __repr__(self) -> str:
        names = ", ".join(f"{k}={sorted(getattr(self, k))!r}" for k in ("reads", "writes", "mutates", "imported"))
        return f"CellUses({names}, opaque={self.opaque!r})"


def _parse(source: str) -> tuple[ast.Module | None, str | None]:
    try:
        return ast.parse(source), None
    except SyntaxError as exc:
        return None, f"it does not parse ({exc.msg})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"it does not parse ({type(exc).__name__})"


#: Sources up to this many characters are cached (at most :data:`_CACHED` of them): the cache stays a few MB.
_CACHE_CHARS = 4096
_CACHED = 2048


def cell_uses(source: str) -> CellUses:
    """The names a code cell's ``source`` reads, writes and mutates, or why they cannot be known.

    Example:
        >>> uses = cell_uses("import numpy as np\\ny = np.sum(x) + len(z)\\nz.append(y)")
        >>> sorted(uses.reads), sorted(uses.writes), sorted(uses.mutates), sorted(uses.imported)
        (['len', 'x', 'z'], ['np', 'y'], ['np', 'z'], ['np'])
        >>> cell_uses("exec(code)").opaque
        'it calls exec()'
        >>> cell_uses("%time f()").opaque
        'it runs the magic %time'
    """
    return _cached_uses(source) if len(source) <= _CACHE_CHARS else _uses(source)


@functools.lru_cache(maxsize=_CACHED)
def _cached_uses(source: str) -> CellUses:
    return _uses(source)


def _uses(source: str) -> CellUses:
    if not source.strip():
        return CellUses()
    if len(source) > ANALYSE_MAX_CHARS:
        return CellUses(opaque=f"it is not analysed (over {ANALYSE_MAX_CHARS} characters)")
    tree, error = _parse(source)
    if tree is None:  # magics and shell lines: the common ones here, IPython's transformer (slow to import) for the rest
        tree = _parse(_quick_ipython(source))[0]
    if tree is None:
        from .cell_analysis import _ipython_to_python

        python = _ipython_to_python(source)
        if python is not None and python != source:
            tree, error = _parse(python)
    if tree is None:
        return CellUses(opaque=error)
    try:
        return _Walk().module(tree)
    except RecursionError:
        return CellUses(opaque="it is nested too deeply to analyse")


_ASSIGNED_MAGIC = re.compile(r"^(\s*)([\w\s,]+?)\s*=\s*([!%])(.*)$")


def _line_magic(text: str) -> str:
    """The call IPython writes for ``!cmd`` or ``%name args`` (``text`` without its indentation)."""
    if text.startswith("!"):
        return f"get_ipython().system({text[1:]!r})"
    name, _, args = text[1:].partition(" ")
    return f"get_ipython().run_line_magic({name!r}, {args!r})"


def _quick_ipython(source: str) -> str:
    """A cell's plain magics and shell lines as the calls IPython's transformer writes for them.

    A cell magic (``%%name line`` first) becomes one ``run_cell_magic`` call;
    a line starting with ``!`` or ``%`` (indented or not), or assigning one
    (``files = !ls``), becomes its call. Anything else is left as it is: what
    still does not parse goes to IPython's own transformer.
    """
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    if lines[first].startswith("%%"):
        name, _, line = lines[first][2:].partition(" ")
        return f"get_ipython().run_cell_magic({name!r}, {line!r}, {chr(10).join(lines[first + 1 :])!r})\n"
    out = []
    for line in lines:
        text = line.lstrip()
        indent = line[: len(line) - len(text)]
        if text.startswith(("!", "%")):
            out.append(indent + _line_magic(text))
            continue
        assigned = _ASSIGNED_MAGIC.match(line)
        if assigned is not None:
            indent, target, kind, rest = assigned.groups()
            call = f"get_ipython().getoutput({rest!r})" if kind == "!" else _line_magic("%" + rest)
            out.append(f"{indent}{target} = {call}")
            continue
        out.append(line)
    return "\n".join(out)


class _Opaque(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _base(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _magic_name(call: ast.Call) -> str | None:
    """``%name``, ``%%name`` or ``!`` for a call IPython's transformer wrote (``get_ipython().run_line_magic(...)``), else None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)):
        return None
    owner = func.value.func
    if not (isinstance(owner, ast.Name) and owner.id == "get_ipython"):
        return None
    if func.attr in ("system", "getoutput"):
        return "!"
    if func.attr in ("run_line_magic", "run_cell_magic") and call.args and isinstance(call.args[0], ast.Constant):
        name = call.args[0].value
        if isinstance(name, str):
            return ("%" if func.attr == "run_line_magic" else "%%") + name
    return None


def _interpolates(call: ast.Call, magic: str) -> bool:
    """Whether a shell line or a magic's line expands names (``{x}``, ``$x``), or a cell magic's options may bind one
    (``%%bash --out x``); a cell magic's body is not expanded."""
    line = call.args[0] if magic == "!" and call.args else call.args[1] if len(call.args) > 1 else None
    if line is None:
        return False
    if not (isinstance(line, ast.Constant) and isinstance(line.value, str)):
        return True
    return "{" in line.value or "$" in line.value or (magic.startswith("%%") and "--" in line.value)


class _Walk:
    """One cell's walk; scopes are tracked only as far as bound names go (closures count as local)."""

    def __init__(self) -> None:
        self.reads: set[str] = set()
        self.writes: set[str] = set()
        self.mutates: set[str] = set()
        self.imported: set[str] = set()

    def module(self, tree: ast.Module) -> CellUses:
        bound: set[str] = set()  # bound for certain by a plain top-level statement before this one
        try:
            for stmt in tree.body:
                self._statement(stmt, bound)
                self._binds(stmt, self.writes, top=True)
                bound |= _certain_binds(stmt)
        except _Opaque as why:
            return CellUses(opaque=why.reason)
        return CellUses(self.reads, self.writes, self.mutates, self.imported)

    def _statement(self, stmt: ast.stmt, bound: set[str]) -> None:
        """A top-level statement's loads; a ``for`` or ``with`` body sees its targets bound (and so on, nested)."""
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._loads(stmt.iter, frozenset(), bound)
            self._loads(stmt.target, frozenset(), bound)
            inner = bound | _target_names(stmt.target)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            inner = set(bound)
            for item in stmt.items:
                self._loads(item.context_expr, frozenset(), inner)
                if item.optional_vars is not None:
                    self._loads(item.optional_vars, frozenset(), inner)
                    inner |= _target_names(item.optional_vars)
        else:
            self._loads(stmt, frozenset(), bound)
            return
        for part in stmt.body:
            self._statement(part, inner)
            inner = inner | _certain_binds(part)
        for part in getattr(stmt, "orelse", ()):
            self._statement(part, bound)

    def _binds(self, node: ast.AST, out: set[str], top: bool) -> None:
        """Names ``node`` binds in the scope it is in (not inside nested scopes, but their names)."""
        for child in _same_scope(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                out.add(child.id)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(child.name)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for alias in child.names:
                    if alias.name == "*":
                        raise _Opaque("it star-imports")
                    name = alias.asname or alias.name.split(".")[0]
                    out.add(name)
                    if top:
                        self.imported.add(name)
            elif isinstance(child, ast.ExceptHandler) and child.name:
                out.add(child.name)
            elif isinstance(child, (ast.MatchAs, ast.MatchStar)) and child.name:
                out.add(child.name)
            elif isinstance(child, ast.MatchMapping) and child.rest:
                out.add(child.rest)
            elif isinstance(child, ast.NamedExpr) and isinstance(child.target, ast.Name):
                out.add(child.target.id)

    def _loads(self, node: ast.AST, local: frozenset[str], bound: set[str]) -> None:
        """Record the reads, mutations and opaque calls in ``node``; ``local`` are names of the enclosing function scopes."""
        stack: list[tuple[ast.AST, frozenset[str]]] = [(node, local)]
        while stack:
            item, names = stack.pop()
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.extend((n, names) for n in _outer_parts(item))
                stack.extend((n, self._scope(item, names)) for n in _body(item))
                continue
            if isinstance(item, ast.ClassDef):
                stack.extend((n, names) for n in [*item.decorator_list, *item.bases, *(k.value for k in item.keywords)])
                stack.extend((n, names) for n in item.body)
                continue
            if isinstance(item, _COMPREHENSIONS):
                first, rest = item.generators[0], item.generators[1:]
                stack.append((first.iter, names))
                inner: set[str] = set(names)
                for gen in item.generators:
                    self._binds(gen.target, inner, top=False)
                scope = frozenset(inner)
                stack.append((first.target, scope))
                stack.extend((n, scope) for n in first.ifs)
                for gen in rest:
                    stack.extend((n, scope) for n in (gen.target, gen.iter, *gen.ifs))
                parts = [item.key, item.value] if isinstance(item, ast.DictComp) else [item.elt]
                stack.extend((n, scope) for n in parts)
                continue
            if isinstance(item, ast.Name):
                if item.id == "get_ipython" and item.id not in names:
                    raise _Opaque("it uses get_ipython() beyond magics")
                if isinstance(item.ctx, ast.Load) and item.id not in names and item.id not in bound:
                    self.reads.add(item.id)
                continue
            if isinstance(item, (ast.Attribute, ast.Subscript)) and isinstance(item.ctx, (ast.Store, ast.Del)):
                base = _base(item)
                if base is not None and base not in names:
                    self.mutates.add(base)
                    if base not in bound:
                        self.reads.add(base)
            elif isinstance(item, ast.AugAssign):
                base = _base(item.target)
                if base is not None and base not in names and base not in bound:
                    self.reads.add(base)  # ``x += 1`` reads x first
            elif isinstance(item, ast.Call):
                called = self._call(item, names)
                if called is not None:
                    stack.extend((child, names) for child in called)
                    continue
            elif isinstance(item, ast.Global):
                self.writes.update(item.names)
            stack.extend((child, names) for child in ast.iter_child_nodes(item))

    def _call(self, call: ast.Call, names: frozenset[str]) -> list[ast.AST] | None:
        """Check one call; the parts still to walk, or None for all of them."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in OPAQUE_CALLS and func.id not in names:
            raise _Opaque(f"it calls {func.id}()")
        magic = _magic_name(call)
        if magic is not None:
            if magic != "!" and magic.lstrip("%") not in QUIET_MAGICS:
                raise _Opaque(f"it runs the magic {magic}")
            if _interpolates(call, magic):
                raise _Opaque("its magic or shell line expands or binds names")
            return [*call.args, *call.keywords]  # not get_ipython() itself: that is fine here
        if isinstance(func, ast.Attribute):
            base = _base(func)
            if base is not None and base not in names:
                self.mutates.add(base)
        return None

    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, enclosing: frozenset[str]) -> frozenset[str]:
        """The names local to a function: its parameters and what its body binds, less what it declares global."""
        local: set[str] = set(enclosing)
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                local.add(arg.arg)
        declared: set[str] = set()
        for part in _body(node):
            self._binds(part, local, top=False)
            for child in _same_scope(part):
                if isinstance(child, ast.Global):
                    declared.update(child.names)
        return frozenset(local - declared)


def _body(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.AST]:
    return [node.body] if isinstance(node, ast.Lambda) else list(node.body)


def _outer_parts(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.AST]:
    """What a function's definition evaluates where it is defined: decorators, defaults, annotations."""
    args = node.args
    parts: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    if not isinstance(node, ast.Lambda):
        parts.extend(node.decorator_list)
        if node.returns is not None:
            parts.append(node.returns)
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None and arg.annotation is not None:
                parts.append(arg.annotation)
    return parts


def _same_scope(node: ast.AST) -> list[ast.AST]:
    """``node`` and its descendants in the same scope (a nested function's or class's own node, not its inside)."""
    found: list[ast.AST] = []
    stack = [node]
    while stack:
        item = stack.pop()
        found.append(item)
        if isinstance(item, _SCOPES) and item is not node:
            continue
        if isinstance(item, _COMPREHENSIONS):  # only a walrus inside reaches out; its loop names stay inside
            stack.extend(n for n in ast.walk(item) if isinstance(n, ast.NamedExpr))
            continue
        if item is node and isinstance(item, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(item))
    return found


def _target_names(target: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}


def _certain_binds(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds whenever it completes (plain assignment, import, def, class)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {alias.asname or alias.name.split(".")[0] for alias in stmt.names}
    names: set[str] = set()
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value else []
    for target in targets:
        names |= _target_names(target)
    return names
