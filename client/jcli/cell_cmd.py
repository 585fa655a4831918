"""``j-cli notebook cell insert|replace|delete|move|clear NB ...``: one cell edit, by id, with a precondition.

Thin: the arguments make a :class:`~jcli_sidecar.read.cell_edits.CellEdit`;
:func:`~jcli_sidecar.room.cell_edit.edit_notebook_cell` makes it through
the notebook's collaboration room when its server has one, else in the
file; the result is printed (``-j``) or told in one line. The server is
``-s/-t`` (or the environment), else the workspace's embedded server only
if it already runs: an edit never starts one.
"""

from __future__ import annotations

import click

from .grep_run import clean_text as _clean
from .outcome import attempt, finish

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from jcli_sidecar.kernel import JupyterServer
    from jcli_sidecar.read import CellEdit

__all__ = ["cell_group"]

_CELL_HELP = "CELL is the cell's id (notebook show gives it; id:N for an id that is a number) or its index."
_IF_SOURCE = click.option(
    "--if-source",
    metavar="SHA",
    help="Edit only if the cell's source still has this source_sha (as notebook show gave it); else CELL_CHANGED with its source now.",
)


def _source_options(command):
    command = click.option("--source-file", metavar="PATH", help="The source from a file (- reads stdin).")(command)
    return click.option("--source", "source_text", metavar="TEXT", help="The new source.")(command)


def _source(source_text: str | None, source_file: str | None) -> str:
    """The source the flags give: exactly one of --source and --source-file (``-``: stdin, capped like a file)."""
    from jcli_sidecar.base import UsageError

    if (source_text is None) == (source_file is None):
        raise UsageError("give the source once: --source TEXT or --source-file PATH (- reads stdin)")
    if source_text is not None:
        return source_text
    assert source_file is not None
    from jcli_sidecar.room import read_source_file

    return read_source_file(source_file)


def _ref(text: str | None) -> str | int | None:
    from jcli_sidecar.read import parse_cell_ref

    return None if text is None else parse_cell_ref(text)


def _server(ctx: click.Context) -> tuple[JupyterServer | None, str]:
    """The notebook's server (``-s/-t``, else the running embedded one), or None and why there is none."""
    from jcli_sidecar.base import JcliError, ServerUnavailable, UsageError, setting
    from jcli_sidecar.room import LIVE_OFF

    from .embedded import resolve_server

    if not setting("JCLI_LIVE"):
        return None, LIVE_OFF
    obj = ctx.find_root().obj
    try:
        return resolve_server(obj.get("server_url"), obj.get("token"), start=False), ""
    except UsageError:
        raise
    except ServerUnavailable:
        return None, "no Jupyter Server runs for this directory, and an edit never starts one"
    except JcliError as err:  # the runtime dir that records the embedded server is unusable: no server known
        return None, f"no Jupyter Server is known ({err.code}: {err.message})"


def _run(ctx: click.Context, nb_path: str, make: Any) -> None:
    from jcli_sidecar.room import edit_notebook_cell

    def action() -> dict[str, Any]:
        edit: CellEdit = make()
        server, why = _server(ctx)
        return edit_notebook_cell(nb_path, edit, server=server, no_server=why)

    doc = attempt(ctx, action, "write")
    finish(ctx, doc, _human(doc))


def _human(doc: dict[str, Any]) -> str:
    where = (
        f"live in the collaboration room ({_clean(doc['live_reason'])})" if doc["live"] else f"in the file ({_clean(doc['live_reason'])})"
    )
    if "cleared" in doc:
        return f"{doc['op']}: {len(doc['cleared'])} code cells of {_clean(doc['path'])}, {where}"
    ident = f" id={_clean(doc['cell_id'])}" if doc.get("cell_id") else ""
    sha = f" sha={doc['source_sha']}" if doc.get("source_sha") else ""
    verb = {"insert": "inserted", "replace": "replaced", "delete": "deleted", "move": "moved", "clear": "cleared"}[doc["op"]]
    return f"{verb} cell {doc['cell_index']}{ident}{sha} of {_clean(doc['path'])} ({doc['cell_count']} cells), {where}"


def _edit(op: str, cell: str | None = None, **kwargs: Any):
    def make() -> CellEdit:
        from jcli_sidecar.read import CellEdit

        return CellEdit(op, _ref(cell), **kwargs)

    return make


@click.group("cell")
def cell_group() -> None:
    """Edit one cell of a notebook by id, safely: through its collaboration room when one is open, else the file.

    Each edit may carry --if-source SHA (the source_sha notebook show gives): a
    cell changed since then is refused with CELL_CHANGED and its current source.
    """


@cell_group.command("insert")
@click.argument("nb_path", metavar="NB")
@_source_options
@click.option("--type", "cell_type", type=click.Choice(["code", "markdown", "raw"]), default="code", show_default=True)
@click.option("--before", metavar="CELL", help="Insert before this cell.")
@click.option("--after", metavar="CELL", help="Insert after this cell.")
@click.option("--at", type=int, metavar="N", help="Insert at this index (default: at the end).")
@click.pass_context
def insert(ctx, nb_path, source_text, source_file, cell_type, before, after, at) -> None:
    """Insert a new cell (a fresh id). CELL in --before/--after: an id or an index."""

    def make():
        from jcli_sidecar.read import CellEdit

        return CellEdit(
            "insert", source=_source(source_text, source_file), cell_type=cell_type, before=_ref(before), after=_ref(after), at=at
        )

    _run(ctx, nb_path, make)


@cell_group.command("replace", epilog=_CELL_HELP)
@click.argument("nb_path", metavar="NB")
@click.argument("cell", metavar="CELL")
@_source_options
@_IF_SOURCE
@click.pass_context
def replace(ctx, nb_path, cell, source_text, source_file, if_source) -> None:
    """Replace a cell's source; a code cell's outputs and run record go (it reads stale)."""

    def make():
        from jcli_sidecar.read import CellEdit

        return CellEdit("replace", _ref(cell), source=_source(source_text, source_file), if_source=if_source)

    _run(ctx, nb_path, make)


@cell_group.command("delete", epilog=_CELL_HELP)
@click.argument("nb_path", metavar="NB")
@click.argument("cell", metavar="CELL")
@_IF_SOURCE
@click.pass_context
def delete(ctx, nb_path, cell, if_source) -> None:
    """Delete a cell."""
    _run(ctx, nb_path, _edit("delete", cell, if_source=if_source))


@cell_group.command("move", epilog=_CELL_HELP)
@click.argument("nb_path", metavar="NB")
@click.argument("cell", metavar="CELL")
@click.option("--before", metavar="CELL", help="Move it before this cell.")
@click.option("--after", metavar="CELL", help="Move it after this cell.")
@click.option("--to", "to", type=int, metavar="N", help="Move it to this index.")
@_IF_SOURCE
@click.pass_context
def move(ctx, nb_path, cell, before, after, to, if_source) -> None:
    """Move a cell before or after another, or to an index."""
    _run(ctx, nb_path, _edit("move", cell, before=_ref(before), after=_ref(after), at=to, if_source=if_source))


@cell_group.command("clear", epilog=_CELL_HELP)
@click.argument("nb_path", metavar="NB")
@click.argument("cell", metavar="CELL", required=False)
@click.option("--all", "all_cells", is_flag=True, help="Every code cell.")
@_IF_SOURCE
@click.pass_context
def clear(ctx, nb_path, cell, all_cells, if_source) -> None:
    """Clear a code cell's outputs and execution count (or every code cell's, --all)."""
    _run(ctx, nb_path, _edit("clear", cell, all_cells=all_cells, if_source=if_source))
