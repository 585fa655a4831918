"""The rules of ``j-cli vars``: which names are shown, what a row says, how values are bounded.

This module's source is also what j-cli runs inside the kernel
(:mod:`jcli_sidecar.kernel.kernel_vars` sends it as one silent user expression,
executed in a private namespace), so the rows from the kernel and the rows
from its debugger are filtered and bounded by the same code. Hence it
imports only the standard library, names nothing in the user's namespace,
and :func:`run` is the kernel's entry point (:func:`result_frame` too, for
the DataFrame a cell returned).

DataFrames and Series of pandas and polars are described by
:func:`describe_frame`: columns with dtypes, null counts, the index
(pandas), and a bounded head and tail. A library is looked up in
``sys.modules`` only: one the user has not imported is never imported here.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HIDDEN_NAMES", "bounded", "describe", "describe_frame", "frame_library", "is_hidden", "result_frame", "run", "select"]

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
    frame = describe_frame(value, cap, full=cap > _LISTING_CAP) if kind == "value" else None
    if frame is not None:
        row["frame"] = frame
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


# -- DataFrames -----------------------------------------------------------------

#: Columns described (name, dtype, nulls); a listing's row lists only as many as fit its cap.
FRAME_COLUMNS = 50
#: Rows of the head and of the tail, and the columns those rows show.
FRAME_ROWS = 5
FRAME_ROW_COLUMNS = 8
#: Characters of each value, label and dtype shown.
FRAME_CELL_CHARS = 40
#: pandas null counts scan whole columns: at most this many cells per frame (an object or string cell
#: counts 10: about 0.1 s); the columns past it say ``nulls: null``. polars keeps its null counts.
NULL_SCAN_CELLS = 20_000_000
#: The modules whose values show by their str (numpy's scalars, pandas' timestamps, dates, decimals).
_SCALAR_MODULES = frozenset({"numpy", "pandas", "datetime", "decimal"})
#: A cap up to this is a listing's (dtypes only); above it, the full view.
_LISTING_CAP = 1000


def frame_library(value: Any) -> str | None:
    """``"pandas"`` or ``"polars"`` for one of their DataFrames or Series, else None; never imports either."""
    import sys

    kind = type(value)
    for library in ("pandas", "polars"):
        module = sys.modules.get(library)
        if module is None:
            continue
        try:
            if issubclass(kind, (module.DataFrame, module.Series)):
                return library
        except Exception:  # a half-imported or stand-in module
            continue
    return None


def _cell(value: Any) -> str:
    """One value, label or dtype as bounded text: a string as it is, anything else by its repr, cut."""
    cap = FRAME_CELL_CHARS
    try:
        if isinstance(value, str):
            text = value[: cap + 1]
        elif isinstance(value, tuple):  # a MultiIndex label
            text = "(" + ", ".join(_cell(part) for part in value[:4]) + (", …)" if len(value) > 4 else ")")
        elif isinstance(value, (int, float, complex)) or type(value).__module__.partition(".")[0] in _SCALAR_MODULES:
            text = str(value)[: cap + 1]  # 1.5, nan, 2024-01-01 00:00:00+00:00: as the libraries print them
        else:
            import reprlib

            shorten = reprlib.Repr()
            shorten.maxstring = shorten.maxother = cap
            shorten.maxlist = shorten.maxtuple = shorten.maxdict = shorten.maxset = 4
            text = shorten.repr(value)
    except Exception as exc:  # a user's __repr__ may raise anything
        return f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= cap else text[: cap - 1] + "…"


def describe_frame(value: Any, cap: int, *, full: bool) -> dict[str, Any] | None:
    """A pandas or polars DataFrame or Series by its schema, its JSON within ``cap`` characters; None for anything else.

    ``{library, kind, rows, columns_total, columns: [{name, dtype}]}``; ``full``
    adds each column's ``nulls`` (None where not counted), ``index`` (pandas),
    and ``head`` and ``tail``: rows of text, the index label first (pandas),
    over the first :data:`FRAME_ROW_COLUMNS` columns. What does not fit is
    left out, the tail's rows first, then the head's, then columns. A frame
    that raises while described is ``{library, kind, error}``.
    """
    library = frame_library(value)
    if library is None:
        return None
    import sys

    module = sys.modules[library]
    head: dict[str, Any] = {"library": library, "kind": "Series" if issubclass(type(value), module.Series) else "DataFrame"}
    try:
        view = (_pandas_frame if library == "pandas" else _polars_frame)(value, module, full)
    except Exception as exc:
        return {**head, "error": f"{type(exc).__name__} while describing it"}
    return _fit({**head, **view}, cap)


def _columns(series_at: Any, total: int, rows: int, full: bool, nulls: Any) -> list[dict[str, Any]]:
    columns = []
    for i in range(min(total, FRAME_COLUMNS)):
        name, series = series_at(i)
        entry: dict[str, Any] = {"name": _cell(name), "dtype": _cell(str(series.dtype))}
        if full:
            entry["nulls"] = nulls(series)
        columns.append(entry)
    return columns


def _pandas_frame(value: Any, pd: Any, full: bool) -> dict[str, Any]:
    series = isinstance(value, pd.Series)
    rows = len(value.index)
    total = 1 if series else len(value.columns)

    def series_at(i: int) -> tuple[Any, Any]:
        return (value.name, value) if series else (value.columns[i], value.iloc[:, i])

    budget = [NULL_SCAN_CELLS]

    def nulls(column: Any) -> int | None:
        cost = rows * (10 if column.dtype.kind == "O" else 1)
        if cost > budget[0]:
            return None
        budget[0] -= cost
        return int(column.isna().sum())

    view: dict[str, Any] = {"rows": rows, "columns_total": total, "columns": _columns(series_at, total, rows, full, nulls)}
    if not full:
        return view
    index = value.index
    levels = index.nlevels
    view["index"] = {
        "type": type(index).__name__,
        "names": [_cell(n) for n in list(index.names)[:FRAME_ROW_COLUMNS]],
        "dtypes": [_cell(str(index.levels[k].dtype if levels > 1 else index.dtype)) for k in range(min(levels, FRAME_ROW_COLUMNS))],
    }
    if isinstance(index, pd.RangeIndex):
        view["index"]["range"] = [int(index.start), int(index.stop), int(index.step)]
    shown = min(total, FRAME_ROW_COLUMNS)

    def rows_of(part: Any) -> list[list[str]]:
        labels = part.index
        if series:
            return [[_cell(labels[r]), _cell(part.iat[r])] for r in range(len(labels))]
        return [[_cell(labels[r]), *(_cell(part.iat[r, c]) for c in range(shown))] for r in range(len(labels))]

    start = max(FRAME_ROWS, rows - FRAME_ROWS)
    view["head"] = rows_of(value.iloc[:FRAME_ROWS] if series else value.iloc[:FRAME_ROWS, :shown])
    view["tail"] = rows_of(value.iloc[start:] if series else value.iloc[start:, :shown])
    return view


def _polars_frame(value: Any, pl: Any, full: bool) -> dict[str, Any]:
    series = isinstance(value, pl.Series)
    rows = len(value) if series else value.height
    total = 1 if series else value.width

    def series_at(i: int) -> tuple[Any, Any]:
        column = value if series else value.to_series(i)
        return column.name, column

    view: dict[str, Any] = {
        "rows": rows,
        "columns_total": total,
        "columns": _columns(series_at, total, rows, full, lambda column: int(column.null_count())),
    }
    if not full:
        return view

    def values(part: Any) -> list[Any]:
        if part.dtype == pl.String:  # a huge string is cut before it becomes a Python one
            part = part.str.slice(0, FRAME_CELL_CHARS + 1)
        elif isinstance(part.dtype, pl.List):
            part = part.list.head(5)
        return part.to_list()

    shown = [series_at(c)[1] for c in range(min(total, FRAME_ROW_COLUMNS))]
    for key, part in (("head", lambda s: s.head(FRAME_ROWS)), ("tail", lambda s: s.slice(max(FRAME_ROWS, rows - FRAME_ROWS)))):
        cells = [values(part(column)) for column in shown]
        view[key] = [[_cell(column[r]) for column in cells] for r in range(len(cells[0]) if cells else 0)]
    return view


def _fit(view: dict[str, Any], cap: int) -> dict[str, Any]:
    """``view`` cut until its JSON fits ``cap``: the tail's rows, the head's, then half the columns at a time."""
    import json

    while len(json.dumps(view)) > cap:
        if view.get("tail"):
            view["tail"].pop()
        elif view.get("head"):
            view["head"].pop()
        elif view.get("columns"):
            view["columns"] = view["columns"][: len(view["columns"]) // 2]
        else:
            view.pop("index", None)
            view.pop("head", None)
            view.pop("tail", None)
            break
    return view


def result_frame(cap: int) -> str | None:
    """In the kernel, after a cell: the JSON of :func:`describe_frame` for the cell's result (``Out``'s value), or None."""
    import json

    from IPython import get_ipython

    last = get_ipython().last_execution_result
    frame = describe_frame(getattr(last, "result", None), cap, full=True)
    return None if frame is None else json.dumps(frame)


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
