"""The rules of ``j-cli vars``: which names are shown, what a row says, how values are bounded.

This module's source is also what j-cli runs inside the kernel
(:mod:`jcli_sidecar.kernel.kernel_vars` sends it as one silent user expression,
executed in a private namespace), so the rows from the kernel and the rows
from its debugger are filtered and bounded by the same code. Hence it
imports only the standard library, names nothing in the user's namespace,
and :func:`run` is the kernel's entry point.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HIDDEN_NAMES", "bounded", "describe", "is_hidden", "run", "select"]

#: IPython's own names, never listed (even when rebound), with :data:`_HIDDEN_PATTERN`.
HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "_", "__", "___", "_i", "_ii", "_iii", "_ih", "_oh", "_dh"})
#: The input and output caches (``_i7``, ``_7``) and dunder names (``__name__``, ``__builtins__``).
_HIDDEN_PATTERN = re.compile(r"_i?\d+|__\w*__")


def is_hidden(name: str) -> bool:
    """Whether ``name`` is IPython's or Python's own, not the user's.

    Example:
        >>> [is_hidden(n) for n in ("Out", "_i3", "__name__", "_private", "df")]
        [True, True, True, False, False]
    """
    return name in HIDDEN_NAMES or _HIDDEN_PATTERN.fullmatch(name) is not None


def bounded(text: str, cap: int) -> dict[str, Any]:
    """A value's text cut to ``cap`` characters, saying whether it was and how long it is.

    Example:
        >>> bounded("abcdef", 4)
        {'value': 'abcd', 'truncated': True, 'repr_length': 6}
    """
    return {"value": text[:cap], "truncated": len(text) > cap, "repr_length": len(text)}


def _kind(value: Any) -> str:
    import inspect
    import types

    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, type):
        return "class"
    if inspect.isroutine(value):
        return "function"
    return "value"


def describe(name: str, value: Any, cap: int) -> dict[str, Any]:
    """The row for one live variable: name, type, kind, its bounded repr, and a length or shape where cheap."""
    kind = _kind(value)
    row: dict[str, Any] = {"name": name, "type": type(value).__name__, "kind": kind}
    try:
        text = repr(value)
    except Exception as exc:  # a user's __repr__ may raise anything
        text = f"<repr failed: {type(exc).__name__}>"
    row.update(bounded(text, cap))
    if isinstance(value, (str, bytes, bytearray, list, tuple, dict, set, frozenset)):
        row["len"] = len(value)
    elif kind == "value":
        try:
            shape = value.shape
        except Exception:
            shape = None
        if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
            row["shape"] = list(shape)
    return row


def select(rows: list[dict[str, Any]], *, modules: bool, max_rows: int) -> dict[str, Any]:
    """The rows to show, in the order given: no hidden names, modules only when asked, at most ``max_rows``."""
    visible = [row for row in rows if not is_hidden(row["name"])]
    shown = [row for row in visible if modules or row["kind"] != "module"]
    return {"variables": shown[:max_rows], "total": len(shown), "modules_hidden": len(visible) - len(shown)}


def run(params_json: str) -> str:
    """In the kernel: the user namespace's rows (or one row), in definition order, as JSON.

    ``params``: ``name`` (one variable, or None for all), ``cap`` (value
    characters), ``modules``, ``max_rows``, ``names_only`` (rows without values).
    """
    import json

    from IPython import get_ipython

    params = json.loads(params_json)
    shell = get_ipython()
    hidden_ns = shell.user_ns_hidden
    absent = object()
    entries = [(k, v) for k, v in list(shell.user_ns.items()) if isinstance(k, str) and v is not hidden_ns.get(k, absent)]
    if params["name"] is not None:
        found = [(k, v) for k, v in entries if k == params["name"] and not is_hidden(k)]
        return json.dumps({"variable": describe(found[0][0], found[0][1], params["cap"]) if found else None})
    if params["names_only"]:
        rows = [{"name": k, "kind": _kind(v)} for k, v in entries]
    else:
        rows = [describe(k, v, params["cap"]) for k, v in entries if not is_hidden(k)]
    return json.dumps(select(rows, modules=params["modules"], max_rows=params["max_rows"]))
