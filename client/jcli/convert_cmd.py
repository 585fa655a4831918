"""``j-cli convert ipynb-to-py|py-to-ipynb|assign-ids``: thin wrappers over :mod:`jcli_sidecar.pair.convert`."""

from __future__ import annotations

import click

from .outcome import attempt, finish

__all__ = ["convert"]


@click.group()
def convert() -> None:
    """Convert between .ipynb and py:percent .py (jupytext's format), and give cells ids."""


@convert.command("ipynb-to-py")
@click.argument("notebook", metavar="NB")
@click.option("-o", "--output", "out", metavar="OUT", help="Where to write (default: NB's name with .py).")
@click.option("--force", is_flag=True, help="Replace OUT if it exists (never the input).")
@click.pass_context
def ipynb_to_py_cmd(ctx: click.Context, notebook: str, out: str | None, force: bool) -> None:
    """Write a notebook's cells as a py:percent .py (ids on the markers, magics commented as jupytext does)."""
    from jcli_sidecar.pair import ipynb_to_py

    doc = attempt(ctx, lambda: ipynb_to_py(notebook, out, force), "write")
    verb = "Replaced" if doc["replaced"] else "Wrote"
    finish(ctx, doc, f"{verb} {doc['output']} ({doc['cells']} cells)")


@convert.command("py-to-ipynb")
@click.argument("py", metavar="PY")
@click.option("-o", "--output", "out", metavar="OUT", help="Where to write (default: PY's name with .ipynb).")
@click.option(
    "--outputs",
    type=click.Choice(["clear-edited", "preserve", "clear-all"]),
    default="clear-edited",
    show_default=True,
    help="An existing OUT: keep outputs of unchanged cells only (clear-edited), of edited cells too (preserve), or none (clear-all).",
)
@click.option(
    "--py-wins",
    is_flag=True,
    help="Update OUT even when that overwrites notebook edits, cells or outputs the .py never knew about "
    "(otherwise PAIR_CONFLICT, as exec -f).",
)
@click.pass_context
def py_to_ipynb_cmd(ctx: click.Context, py: str, out: str | None, outputs: str, py_wins: bool) -> None:
    """Write a py:percent .py as a notebook; an existing notebook is updated, the .py winning for the cells it changed.

    Notebook-side work the .py never knew about (a cell added or edited in
    JupyterLab, with its outputs) stops it with PAIR_CONFLICT, naming the
    cells, as exec -f does; --py-wins lets the .py win.
    """
    from jcli_sidecar.pair import py_to_ipynb

    doc = attempt(ctx, lambda: py_to_ipynb(py, out, outputs, py_wins=py_wins), "write")
    sync = doc["sync"]
    what = "Created" if doc["created"] else "Updated"
    human = (
        f"{what} {doc['output']} ({doc['cells']} cells: {sync['kept']} kept, {sync['edited']} edited, "
        f"{sync['added']} added, {sync['removed']} removed; outputs kept in {doc['cells_with_outputs_kept']} cells, "
        f"cleared in {doc['cells_with_outputs_cleared']}; {doc['ids_assigned']} ids assigned)"
    )
    finish(ctx, doc, human)


@convert.command("assign-ids")
@click.argument("notebook", metavar="NB")
@click.pass_context
def assign_ids_cmd(ctx: click.Context, notebook: str) -> None:
    """Give every cell of NB a valid, unique id (nbformat 4.5); rewrites NB atomically, only if needed."""
    from jcli_sidecar.pair import assign_ids

    doc = attempt(ctx, lambda: assign_ids(notebook), "write")
    minor = doc["nbformat_minor"]
    if not doc["written"]:
        human = f"{doc['path']}: all {doc['cells']} cells already have valid, unique ids; nothing written"
    else:
        parts = [f"{doc['ids_missing']} missing", f"{doc['ids_invalid']} invalid", f"{doc['ids_duplicate']} duplicate"]
        human = f"{doc['path']}: assigned {doc['ids_assigned']} ids ({', '.join(parts)})"
        if minor["before"] != minor["after"]:
            human += f"; nbformat 4.{minor['before']} -> 4.{minor['after']}"
    finish(ctx, doc, human)
