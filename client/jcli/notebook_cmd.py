"""``j-cli notebook summary|show|map``: a notebook's cells at a glance, their sources, its pair.

Thin: each command calls one core function (:mod:`jcli_sidecar.read.notebook_summary`,
:mod:`jcli_sidecar.read.pair_map`) and prints its document (``-j``) or a compact
text made here. Only reads.
"""

from __future__ import annotations

import os

import click

from .grep_run import clean_text as _clean
from .outcome import attempt, finish
from .upstream_fields import with_map, with_summary

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NOTEBOOK_COMMANDS"]

_SNIPPET = 60
_HUMAN_NAMES = 5  # names per list in human mode (-j gives up to cell_analysis.NAME_LIMIT)


def _shown(path: str) -> str:
    """A path as the user would type it from here (relative when that is shorter)."""
    try:
        rel = os.path.relpath(path)
    except (OSError, ValueError):  # the cwd is gone
        rel = path
    return _clean(rel if len(rel) < len(path) else path)


def _snippet(text: str) -> str:
    first = text.split("\n", 1)[0]
    more = len(first) > _SNIPPET or "\n" in text
    return _clean(first[:_SNIPPET]) + (" …" if more else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _span(row: dict[str, Any]) -> str:
    start, end = row.get("source_start_line"), row.get("source_end_line")
    return f"L{start}-{end}" if start is not None else ""


def _run(row: dict[str, Any]) -> str:
    if row.get("cell_type") != "code" or row.get("outputs") is None:
        return ""
    count, outputs = row.get("execution_count"), row["outputs"]
    if count is None and outputs == 0:
        return "not run"
    text = f"[{count if count is not None else ' '}] {_plural(outputs, 'output')}"
    return text + (f", error {_clean(row['error'])}" if row.get("error") else "")


def _names(row: dict[str, Any]) -> str:
    parts = []
    cut = set(row.get("names_truncated") or ())
    for key in ("imports", "defines", "writes", "calls", "magics"):
        names = row.get(key) or []
        if names:
            more = key in cut or len(names) > _HUMAN_NAMES
            parts.append(f"{key} {_clean(', '.join(names[:_HUMAN_NAMES]))}" + (", …" if more else ""))
    if row.get("parse_error"):
        parts.append(f"does not parse: {_clean(row['parse_error'])}")
    return " · ".join(parts)


def _pair_line(doc: dict[str, Any]) -> str:
    if doc.get("paired"):
        other = doc["notebook_path"] if doc.get("kind") == "py" else doc["py_path"]
        return f"paired with {_shown(other)}"
    return doc.get("pair_note") or "no pair"


def _summary_text(doc: dict[str, Any]) -> str:
    kernel = f", kernel {doc['kernel']}" if doc.get("kernel") else ""
    lines = [f"{_clean(doc['path'])}: {_plural(doc['cell_count'], 'cell')} ({_pair_line(doc)}{kernel})"]
    for row in doc["cells"]:
        change = row.get("pair_change")
        tag = f" ({change.replace('_', ' ')})" if change not in (None, "equal") else ""
        head = [
            f"{row['cell_index']:>4}",
            f"{row.get('cell_type') or '?':<8}",
            f"{_plural(row['line_count'], 'line'):<9}",
            f"{_span(row):<11}",
        ]
        run = _run(row)
        stale = "  STALE" if row.get("stale") else ""
        lines.append("  ".join(head) + (f"  {run}" if run else "") + stale + f"  {_snippet(row['preview'])}{tag}".rstrip())
        detail = row.get("problem") or _names(row)
        if detail:
            lines.append(" " * 8 + detail)
        if row.get("stale") and row.get("stale_cause") not in ("never_ran", "no_record", None):
            lines.append(" " * 8 + f"stale: {_clean(row['stale_reason'])}")
    if doc.get("next_cells"):
        lines.append(f"… {_plural(doc['cells_omitted'], 'more cell')}: add --cell {doc['next_cells']}")
    if doc.get("stale_cells"):
        lines.append(f"stale: cells {', '.join(map(str, doc['stale_cells']))} (j-cli exec SESSION -f FILE --stale runs them)")
    return "\n".join(lines)


def _show_text(doc: dict[str, Any]) -> str:
    parts = []
    for row in doc["cells"]:
        label = [f"cell {row['cell_index']}", row.get("cell_type") or "?"]
        if _span(row):
            label.append(_span(row))
        if row.get("cell_id"):
            label.append(f"id={_clean(row['cell_id'])}")
        if row.get("source_sha"):
            label.append(f"sha={row['source_sha']}")
        parts.append(f"--- {' '.join(label)} ---")
        source = row.get("source")
        parts.append(_clean(source) if source is not None else f"({row.get('problem')})")
    return "\n".join(parts)


def _map_row(row: dict[str, Any]) -> str:
    def index(value: int | None) -> str:
        return "-" if value is None else str(value)

    side = f" ({row['changed_on']})" if row.get("changed_on") not in (None, "unknown") else ""
    span = _span(row)
    return f"{index(row['py_index']):>4} {index(row['notebook_index']):>4}  {row.get('cell_type') or '?':<8}  {span:<11}  {row.get('match') or '-':<8}  {row['change'].replace('_', ' ')}{side}"


def _runs_of_equal(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Rows grouped: consecutive equal rows matched the same way (both indexes stepping by one) share a group."""
    groups: list[list[dict[str, Any]]] = []
    for row in rows:
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and row["change"] == last["change"] == "equal"
            and row["match"] == last["match"]
            and row["py_index"] == last["py_index"] + 1
            and row["notebook_index"] == last["notebook_index"] + 1
        ):
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def _map_text(doc: dict[str, Any]) -> str:
    if not doc["paired"]:
        return f"{_clean(doc['path'])}: not paired: {doc.get('pair_note')}"
    py, nb = _shown(doc["py_path"]), _shown(doc["notebook_path"])
    lines = [f"{py} <-> {nb}: {'in sync' if doc['in_sync'] else 'not in sync'}"]
    since = doc.get("since_last_sync")
    if since is None:
        lines.append("since the last sync: no sync recorded")
    else:
        changed = [name for name, key in (("the .py", "py_changed"), ("the notebook", "notebook_changed")) if since[key]]
        lines.append(f"since the last sync: {' and '.join(changed) + ' changed' if changed else 'nothing changed'}")
    sync = doc["sync"]
    counts = ", ".join(
        f"{verb} {sync[key]}" for verb, key in (("keep", "kept"), ("edit", "edited"), ("add", "added"), ("remove", "removed"))
    )
    refused = sync.get("refused")
    verdict = f"; it would refuse ({refused['code']}, {refused['reason']})" if refused else ""
    lines.append(f"exec -f of the .py would {counts}{verdict}")
    lines.append("  py   nb  type      lines        match     change")
    for group in _runs_of_equal(doc["cells"]):
        if len(group) >= 4:
            first, last = group[0], group[-1]
            lines.append(
                f"{first['py_index']:>4}-{last['py_index']} <-> {first['notebook_index']}-{last['notebook_index']}: "
                f"{len(group)} cells equal (by {first['match']})"
            )
        else:
            lines.extend(_map_row(row) for row in group)
    return "\n".join(lines)


@click.command("summary")
@click.argument("file_path", metavar="FILE")
@click.option("--cell", "cell_spec", metavar="SPEC", help="Only these cells: N, A:B (B excluded), A: or :B.")
@click.pass_context
def summary(ctx: click.Context, file_path: str, cell_spec: str | None) -> None:
    """Per cell: type, lines, .py span, preview, names used, and how it last ran.

    FILE is an .ipynb or a py:percent .py; its pair (same stem) adds line
    spans or run facts. At most 100 cells per call (the rest: --cell).
    """
    doc = attempt(ctx, lambda: _look(file_path, "summary", cell_spec), "read")
    finish(ctx, with_summary(doc), _summary_text(doc))


@click.command("show")
@click.argument("file_path", metavar="FILE")
@click.option("--cell", "cell_spec", metavar="SPEC", required=True, help="Cells: N, A:B (B excluded), A: or :B.")
@click.pass_context
def show(ctx: click.Context, file_path: str, cell_spec: str) -> None:
    """Print the whole source of the chosen cells (a spec outside the file is an error)."""
    doc = attempt(ctx, lambda: _look(file_path, "show", cell_spec), "read")
    finish(ctx, doc, _show_text(doc))


def _look(file_path: str, what: str, cell_spec: str | None) -> dict[str, Any]:
    """``notebook summary`` or ``show``: through the workspace's sidecar, which answers from a collaboration room's shared
    document while one of its jobs holds the notebook's room (``live: true``), else here, from the file."""
    import os

    from jcli_sidecar.read import show_cells, summarise
    from jcli_sidecar.sidecar import NOTEBOOK_LOOK

    from .transport import ask

    def here() -> dict[str, Any]:
        return summarise(file_path, cell_spec) if what == "summary" else show_cells(file_path, cell_spec or "")

    request = {"file_path": os.path.abspath(file_path), "what": what, "cells": cell_spec}
    doc = ask(NOTEBOOK_LOOK, {k: v for k, v in request.items() if v is not None}, here=here)
    if doc.get("live"):
        doc["path"] = file_path  # as the user named it (the sidecar was given the absolute path)
    return doc


@click.command("map")
@click.argument("file_path", metavar="FILE")
@click.pass_context
def map_command(ctx: click.Context, file_path: str) -> None:
    """Which .py cell is which notebook cell, what differs, and what exec -f would do."""
    from jcli_sidecar.read import map_pair

    doc = attempt(ctx, lambda: map_pair(file_path), "read")
    finish(ctx, with_map(doc), _map_text(doc))


#: The commands this module adds to ``j-cli notebook``.
NOTEBOOK_COMMANDS = (summary, show, map_command)
