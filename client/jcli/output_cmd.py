"""``j-cli output list|show``: inline runs kept in ``<cwd>/.j-cli/outputs``.

``show`` returns the same envelope as ``notebook output``, with
``source.kind = "run"``. Both only read.
"""

from __future__ import annotations

import click

from jcli_sidecar.errors import JcliError

from . import emit

__all__ = ["output"]


@click.group()
def output() -> None:
    """Outputs of inline exec runs (a scratch area, cleaned by age and count)."""


@output.command("list")
@click.pass_context
def output_list(ctx: click.Context) -> None:
    """List the runs kept for this directory, newest first."""
    from jcli_sidecar.runs import list_runs
    from jcli_sidecar.runtime import workspace_of

    json_mode = ctx.find_root().obj["json"]
    try:
        doc = list_runs(workspace_of())
    except (JcliError, OSError) as exc:
        ctx.exit(emit.error(_coded(exc), json_mode))
    if json_mode:
        ctx.exit(emit.document(doc, True))
    lines = [f"{r['run_id']}  {r.get('status', '?')}  {r.get('outputs', '?')} output(s), {r.get('files', '?')} file(s)" for r in doc["runs"]]
    click.echo("\n".join(lines) or f"no runs in {doc['outputs_dir']}")
    ctx.exit(emit.EXIT_OK)


@output.command("show")
@click.argument("ref", metavar="RUN_ID|MANIFEST")
@click.option("--output", "output_index", type=int, metavar="K", help="0-based output index; omit for the catalog.")
@click.option("--mime", "mime_type", metavar="MIME", help="Return exactly this MIME representation.")
@click.option("--offset", type=int, default=0, metavar="O", help="Text window start, in characters.")
@click.option("--limit", type=int, metavar="L", help="Text window length, in characters.")
@click.option("--max-response-bytes", type=int, metavar="B", help="Refuse responses larger than this (default 32 MiB).")
@click.pass_context
def output_show(ctx: click.Context, ref: str, output_index, mime_type, offset, limit, max_response_bytes) -> None:
    """Show a run's catalog, or one of its outputs."""
    from jcli_sidecar.runs import read_run
    from jcli_sidecar.runtime import workspace_of

    json_mode = ctx.find_root().obj["json"]
    try:
        doc = read_run(workspace_of(), ref, output_index, mime_type, offset, limit, max_response_bytes)
    except (JcliError, OSError) as exc:
        ctx.exit(emit.error(_coded(exc), json_mode))
    ctx.exit(emit.document(doc, json_mode))


def _coded(exc: Exception) -> JcliError:
    if isinstance(exc, JcliError):
        return exc
    from jcli_sidecar.errors import RunNotFound

    return RunNotFound(f"the outputs directory cannot be read: {getattr(exc, 'strerror', exc)}")
