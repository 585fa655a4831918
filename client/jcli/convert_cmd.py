"""``j-cli convert ipynb-to-py|py-to-ipynb|assign-ids``: thin wrappers over :mod:`jcli_sidecar.pair.convert`."""

from __future__ import annotations

import click

from .outcome import attempt, finish

__all__ = ["convert"]


@click.group()
def convert() -> None:
    """Convert between .ipynb and py:percent .py (jupytext's format), and give cells ids."""


def _one_output(option: str | None, positional: str | None) -> str | None:
    """OUT from ``-o OUT`` or a second positional (upstream's spelling), not both."""
    if option is not None and positional is not None and option != positional:
        raise click.UsageError(f"two outputs given: -o {option} and {positional}; give one")
    return option if option is not None else positional


@convert.command("ipynb-to-py")
@click.argument("notebook", metavar="NB")
@click.argument("out_arg", metavar="[OUT]", required=False)
@click.option("-o", "--output", "out", metavar="OUT", help="Where to write (default: NB's name with .py); also NB OUT.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists (never the input).")
@click.pass_context
def ipynb_to_py_cmd(ctx: click.Context, notebook: str, out_arg: str | None, out: str | None, force: bool) -> None:
    """Write a notebook's cells as a py:percent .py (ids on the markers, magics commented as jupytext does)."""
    from jcli_sidecar.pair import ipynb_to_py

    out = _one_output(out, out_arg)

    doc = attempt(ctx, lambda: ipynb_to_py(notebook, out, force), "write")
    verb = "Replaced" if doc["replaced"] else "Wrote"
    finish(ctx, doc, f"{verb} {doc['output']} ({doc['cells']} cells)")


@convert.command("py-to-ipynb")
@click.argument("py", metavar="PY")
@click.argument("out_arg", metavar="[OUT]", required=False)
@click.option("-o", "--output", "out", metavar="OUT", help="Where to write (default: PY's name with .ipynb); also PY OUT.")
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
@click.option("--allow-mixed-cell-ids", "allow_mixed", is_flag=True, hidden=True)  # upstream's: mixed ids are always allowed here
@click.pass_context
def py_to_ipynb_cmd(
    ctx: click.Context, py: str, out_arg: str | None, out: str | None, outputs: str, py_wins: bool, allow_mixed: bool
) -> None:
    """Write a py:percent .py as a notebook; an existing notebook is updated, the .py winning for the cells it changed.

    Notebook-side work the .py never knew about (a cell added or edited in
    JupyterLab, with its outputs) stops it with PAIR_CONFLICT, naming the
    cells, as exec -f does; --py-wins lets the .py win.
    """
    from jcli_sidecar.pair import py_to_ipynb

    out = _one_output(out, out_arg)
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
@click.argument("notebook", metavar="NB|PY")
@click.pass_context
def assign_ids_cmd(ctx: click.Context, notebook: str) -> None:
    """Give every cell of NB a valid, unique id (nbformat 4.5); rewrites NB atomically, only if needed.

    For a py:percent PY: writes id="..." on each marker that has none.
    """
    from jcli_sidecar.pair import assign_ids, assign_py_ids

    if notebook.endswith(".py"):
        doc = attempt(ctx, lambda: assign_py_ids(notebook), "write")
        if doc["written"]:
            human = f"{doc['path']}: assigned {doc['ids_assigned']} ids (cells {', '.join(map(str, doc['assigned_cells']))})"
        else:
            human = f"{doc['path']}: all {doc['cells']} cells already have ids; nothing written"
        finish(ctx, doc, human)
        return
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
