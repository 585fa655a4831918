"""bashlex without its import tax: its LR parse tables, built once and shipped.

``import bashlex`` rebuilds the LALR tables of its bash grammar every time
(about 80 ms here), and a guard imports it for every shell line that
mentions a notebook and is more than plain words. :func:`import_bashlex` imports it with the tables of
:mod:`jcli_sidecar.guards._bashlex_lr` instead, when those were built from
exactly the grammar installed (bashlex's own grammar signature: start
symbol, precedence, tokens and every rule's text). Any
other bashlex (another version, a patched grammar) is built the usual way:
slower, never wrong.

The tables are regenerated with::

    python -m jcli_sidecar.guards.shell_tables > jcli_sidecar/guards/_bashlex_lr.py

and ``tests/guards/test_guards.py`` checks that the shipped tables match the
installed grammar and parse the guard corpus exactly as bashlex's own do.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

__all__ = ["grammar_signature", "import_bashlex", "table_source"]


class _Production:
    """One grammar rule as the LR parser reduces it: its name, length and action."""

    __slots__ = ("str", "name", "len", "func", "callable")

    def __init__(self, text: str, name: str, length: int, func: str | None) -> None:
        self.str = text
        self.name = name
        self.len = length
        self.func = func
        self.callable = None

    def __str__(self) -> str:
        return self.str

    def bind(self, pdict: dict[str, Any]) -> None:
        if self.func:
            self.callable = pdict[self.func]


class _Tables:
    """What bashlex's ``LRParser`` reads of a table: action, goto, productions."""

    def __init__(self, action: dict, goto: dict, productions: list[_Production]) -> None:
        self.lr_action = action
        self.lr_goto = goto
        self.lr_productions = productions


def grammar_signature(reflect: Any) -> str:
    """A grammar's signature, as PLY computes it (``yacc.ParserReflect``, after ``get_all()``).

    Compared as it is: hashing it would cost more (loading OpenSSL) than the comparison.
    """
    return reflect.signature()


def _shipped_parser(yacc: Any, original: Any):
    """A stand-in for ``yacc.yacc`` that builds bashlex's parser from the shipped tables."""

    def build(*args: Any, **kwargs: Any):
        module = sys.modules["bashlex.parser"]  # being executed: its rules are defined by now
        pdict = vars(module)
        reflect = yacc.ParserReflect(pdict, log=yacc.NullLogger())
        reflect.get_all()
        from . import _bashlex_lr as shipped

        if reflect.error or grammar_signature(reflect) != shipped.GRAMMAR_SIGNATURE:
            return original(*args, module=module, **kwargs)
        productions = [_Production(*row) for row in shipped.PRODUCTIONS]
        for production in productions:
            production.bind(pdict)
        parser = yacc.LRParser(_Tables(shipped.ACTION, shipped.GOTO, productions), reflect.error_func)
        yacc.parse = parser.parse
        return parser

    return build


class _ShippedTablesFinder:
    """Finds ``bashlex.yacc`` as usual, and once it has run, swaps its ``yacc`` for :func:`_shipped_parser`.

    ``bashlex/__init__`` imports its parser, whose body builds the tables,
    before anyone else can reach ``bashlex.yacc``: the swap happens between
    the two, inside the import.
    """

    def __init__(self) -> None:
        self.originals: list[tuple[Any, Any]] = []

    def find_spec(self, name: str, path: Any, target: Any = None):
        if name != "bashlex.yacc":
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            self.originals.append((module, module.yacc))
            module.yacc = _shipped_parser(module, module.yacc)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def import_bashlex() -> ModuleType:
    """``bashlex``, imported with the shipped tables when they fit the installed grammar."""
    if "bashlex" in sys.modules:
        import bashlex

        return bashlex
    finder = _ShippedTablesFinder()
    sys.meta_path.insert(0, finder)
    try:
        import bashlex
    finally:
        sys.meta_path.remove(finder)
        for module, original in finder.originals:
            module.yacc = original  # later users of bashlex.yacc get PLY's own
    return bashlex


def table_source() -> str:
    """The source of ``_bashlex_lr.py``: the installed bashlex's tables, as its own import builds them."""
    import bashlex.parser
    from bashlex import yacc

    reflect = yacc.ParserReflect(vars(bashlex.parser), log=yacc.NullLogger())
    reflect.get_all()
    parser = bashlex.parser.yaccparser
    rows = [(str(p), p.name, p.len, p.func) for p in parser.productions]
    return (
        '"""bashlex\'s LR tables, generated by ``python -m jcli_sidecar.guards.shell_tables``; do not edit."""\n\n'
        "# fmt: off\n"
        "__all__ = []  # type: list[str]  # read by shell_tables only\n"
        f"GRAMMAR_SIGNATURE = {grammar_signature(reflect)!r}\n"
        f"ACTION = {dict(parser.action)!r}\n"
        f"GOTO = {dict(parser.goto)!r}\n"
        f"PRODUCTIONS = {rows!r}\n"
    )


if __name__ == "__main__":
    sys.stdout.write(table_source())
