"""The DataFrame view: a cell's DataFrame result described for the model, and the text of a description.

:func:`~jcli_sidecar.kernel.vars_rules.describe_frame` describes a pandas
or polars DataFrame or Series inside the kernel (columns with dtypes and
null counts, the index, a bounded head and tail). ``vars`` shows it for a
variable; for a cell, :func:`frame_expressions` is one more
``user_expressions`` entry on the run's ``execute_request``: after the code,
the kernel describes the cell's result (IPython's
``last_execution_result.result``, the value its ``execute_result`` shows)
when it is one of those. The entry runs nothing unless pandas or polars is
imported and the result's type is (or derives from) one of theirs; it names
nothing in the user's namespace, and its failure is the kernel's answer to
it alone (the cell's reply and outputs are untouched; ipykernel evaluates
user expressions only after a cell that did not raise). The exec result's
item for that ``execute_result`` carries :func:`frame_text` as ``frame``;
``text/plain`` and the saved outputs stay as the kernel gave them.

Why not a MIME type of our own (``text/x-jcli-frame``) in the output: it
would need a formatter registered in the user's kernel, and it would be
saved into notebooks and runs; beside the item it changes nothing the kernel
or the notebook holds, and costs one expression evaluated after the cell.
"""

from __future__ import annotations

import functools
import json

from . import vars_rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FRAME_CHARS", "FRAME_KEY", "frame_expressions", "frame_text", "read_frame"]

#: Characters of a cell result's description (its JSON, in the kernel) and of its text.
FRAME_CHARS = 4000
#: The ``user_expressions`` key of the description.
FRAME_KEY = "jcli_frame"


def frame_expressions() -> dict[str, str]:
    """The ``user_expressions`` entry that describes a cell's DataFrame result (see the module's doc)."""
    return {FRAME_KEY: _expression()}


@functools.cache
def _expression() -> str:
    from pathlib import Path

    source = Path(vars_rules.__file__).read_text(encoding="utf-8")
    describe = f"(lambda g: __import__('builtins').exec({source!r}, g) or g['result_frame']({FRAME_CHARS}))({{'__name__': 'jcli_frame'}})"
    gate = (
        "(lambda m, r: r is not None and (m.get('pandas') is not None or m.get('polars') is not None)"
        " and any(str(c.__module__).partition('.')[0] in ('pandas', 'polars') for c in type(r).__mro__))"
        "(__import__('sys').modules, getattr(__import__('IPython').get_ipython().last_execution_result, 'result', None))"
    )
    return f"({describe}) if {gate} else None"


def read_frame(user_expressions: Any) -> dict[str, Any] | None:
    """The description in a reply's ``user_expressions``, or None (no DataFrame result, or an answer that is not one)."""
    import ast

    if not isinstance(user_expressions, dict):
        return None
    answer = user_expressions.get(FRAME_KEY)
    if not isinstance(answer, dict) or answer.get("status") != "ok":
        return None
    text = (answer.get("data") or {}).get("text/plain") if isinstance(answer.get("data"), dict) else None
    if not isinstance(text, str) or len(text) > 4 * FRAME_CHARS or text == "None":
        return None
    try:
        found = json.loads(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return found if isinstance(found, dict) and found.get("library") in ("pandas", "polars") else None


def _join(cells: Any) -> str:
    return " | ".join(str(cell) for cell in cells) if isinstance(cells, list) else str(cells)


def frame_text(frame: dict[str, Any], cap: int = FRAME_CHARS) -> str:
    """A description as lines the model reads, cut to ``cap`` characters.

    Example:
        >>> print(frame_text({"library": "polars", "kind": "DataFrame", "rows": 2, "columns_total": 1,
        ...                   "columns": [{"name": "a", "dtype": "Int64", "nulls": 1}], "head": [["1"], ["None"]], "tail": []}))
        polars DataFrame: 2 rows x 1 column
        columns (name: dtype, nulls):
          a: Int64, 1 null
        head (2 rows):
          a
          1
          None
    """
    rows, total = frame.get("rows"), frame.get("columns_total")
    kind = frame.get("kind", "DataFrame")
    if frame.get("error"):
        return f"{frame.get('library')} {kind}: not described ({frame['error']})"[:cap]
    size = f"{rows} rows" if kind == "Series" else f"{rows} rows x {total} column{'' if total == 1 else 's'}"
    lines = [f"{frame.get('library')} {kind}: {size}"]
    index = frame.get("index")
    if isinstance(index, dict):
        lines.append(f"index: {_index_text(index)}")
    columns = frame.get("columns") or []
    full = any("nulls" in column for column in columns)
    lines.append("columns (name: dtype, nulls):" if full else "columns (name: dtype):")
    for column in columns:
        nulls = column.get("nulls", "")
        if full:
            nulls = ", nulls not counted (a long column)" if nulls is None else f", {nulls} null{'' if nulls == 1 else 's'}"
        lines.append(f"  {column.get('name')}: {column.get('dtype')}{nulls}")
    if isinstance(total, int) and total > len(columns):
        lines.append(f"  … {total - len(columns)} more column(s) not described")
    header = ["(index)"] if isinstance(index, dict) else []
    header += [str(column.get("name")) for column in columns]
    for key in ("head", "tail"):
        part = frame.get(key) or []
        if part:
            width = len(part[0]) if isinstance(part[0], list) else 1
            lines.append(f"{key} ({len(part)} row{'' if len(part) == 1 else 's'}):")
            lines.append("  " + _join(header[:width]))
            lines += ["  " + _join(row) for row in part]
    text = "\n".join(lines)
    return text if len(text) <= cap else text[: cap - 1] + "…"


def _index_text(index: dict[str, Any]) -> str:
    kind = index.get("type", "Index")
    if isinstance(index.get("range"), list) and len(index["range"]) == 3:
        start, stop, step = index["range"]
        return f"{kind} {start}..{stop} step {step}"
    names = index.get("names") or []
    dtypes = index.get("dtypes") or []
    levels = ", ".join(f"{name}: {dtype}" for name, dtype in zip(names, dtypes, strict=False))
    return f"{kind} ({levels})"
