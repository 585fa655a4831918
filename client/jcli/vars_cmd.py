"""``j-cli vars SESSION``: a kernel's variables (thin: :mod:`jcli_sidecar.kernel.kernel_vars` does the work)."""

from __future__ import annotations

import click

from jcli_sidecar.base import JcliError
from jcli_sidecar.kernel import VARS_TIMEOUT

from .outcome import fail, finish
from .upstream_fields import with_vars

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["vars_command"]

#: Characters of a value in the human table (the -j document carries more).
TABLE_VALUE_CHARS = 70


@click.command("vars")
@click.argument("session_key", metavar="SESSION")
@click.option("-n", "--name", help="Only this variable (modules included), with a longer value.")
@click.option("--rich", is_flag=True, help="With --name: its rich representation too (HTML, ...), bounded.")
@click.option("--modules", is_flag=True, help="List imported modules too (hidden by default).")
@click.option(
    "--timeout",
    type=float,
    default=VARS_TIMEOUT,
    show_default=True,
    metavar="S",
    help="Seconds to wait for the kernel's answer (never interrupts it).",
)
@click.pass_context
def vars_command(ctx: click.Context, session_key: str, name: str | None, rich: bool, modules: bool, timeout: float) -> None:
    """Show a session's variables: name, type, size and a short value, in definition order.

    Functions and classes are listed; IPython's own names (In, Out, _, ...) never.
    Read through a silent request that leaves no trace; while the kernel is busy,
    through its debugger (plain variables only, by name), else KERNEL_BUSY.
    """
    from jcli_sidecar.kernel import find_session, read_variables

    from .embedded import resolve_server

    obj = ctx.find_root().obj
    try:
        srv = resolve_server(obj.get("server_url"), obj.get("token"))
        row = find_session(srv, session_key)
        doc = read_variables(srv, row, name=name, rich=rich, modules=modules, timeout=timeout)
    except JcliError as err:
        fail(ctx, err)
    finish(ctx, with_vars(doc), _human_variable(doc) if name else _human_table(doc))


def _size(row: dict[str, Any]) -> str:
    if "shape" in row:
        return "x".join(str(n) for n in row["shape"])
    return f"len {row['len']}" if "len" in row else ""


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _truncation(row: dict[str, Any]) -> str:
    return f"  [truncated: {len(row['value'])} of {row['repr_length']} chars]" if row.get("truncated") else ""


def _human_table(doc: dict[str, Any]) -> str:
    order = "definition order" if doc["order"] == "definition" else "sorted by name (the debugger's order)"
    tail = [f"{doc['count']} variable(s), {order}; source: {doc['source']}"]
    if doc["modules_hidden"]:
        tail.append(f"{doc['modules_hidden']} module(s) hidden (--modules shows them)")
    tail += [f"note: {note}" for note in doc["notes"]]
    if not doc["variables"]:
        return "\n".join(["no variables", *tail])
    table = [("NAME", "TYPE", "SIZE", "VALUE")]
    for row in doc["variables"]:
        value = _one_line(row["value"], TABLE_VALUE_CHARS)
        if row.get("truncated") and not value.endswith("…"):
            value += "…"
        if isinstance(row.get("frame"), dict):  # a DataFrame by its columns, not the start of its repr
            value = _frame_columns(row["frame"], TABLE_VALUE_CHARS)
        table.append((row["name"], _type(row), _size(row), value))
    widths = [max(len(line[col]) for line in table) for col in range(3)]
    lines = ["  ".join([*(line[col].ljust(widths[col]) for col in range(3)), line[3]]) for line in table]
    return "\n".join([*lines, "", *tail])


def _frame_columns(frame: dict[str, Any], width: int) -> str:
    """``x:int64 y:str …`` (the columns a listing described; ``…`` where there are more)."""
    if frame.get("error"):
        return f"not described: {frame['error']}"
    columns = frame.get("columns") or []
    text = " ".join(f"{column.get('name')}:{column.get('dtype')}" for column in columns)
    more = isinstance(frame.get("columns_total"), int) and frame["columns_total"] > len(columns)
    return _one_line(text + (" …" if more else ""), width)


def _type(row: dict[str, Any]) -> str:
    return row["kind"] if row["kind"] in ("function", "class") else row["type"]


def _human_variable(doc: dict[str, Any]) -> str:
    row = doc["variable"]
    size = _size(row)
    lines = [f"{row['name']}: {_type(row)}" + (f" ({size})" if size else "")]
    if isinstance(row.get("frame"), dict):
        from jcli_sidecar.kernel import frame_text

        lines += [frame_text(row["frame"]), "--- repr:"]
    lines.append(row["value"] + _truncation(row))
    rich = doc.get("rich")
    if rich:
        for mime, value in rich["data"].items():
            cut = " (truncated)" if mime in rich["truncated"] else ""
            lines += [f"--- {mime}: {rich['lengths'][mime]} chars{cut}", value if isinstance(value, str) else str(value)]
        lines += [f"--- {mime}: {rich['lengths'][mime]} chars, left out (over the cap)" for mime in rich["omitted"]]
    lines += [f"note: {note}" for note in doc.get("notes", [])]
    return "\n".join(lines)
