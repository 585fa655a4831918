"""``j-cli output list|show``: inline runs kept in ``<cwd>/.j-cli/outputs``.

``show`` returns the same envelope as ``notebook output``, with
``source.kind = "run"``. Both only read.
"""

from __future__ import annotations

import click

from jcli_sidecar.errors import JcliError

from . import emit
from .click_options import table_options
from .outcome import attempt, fail, finish, translate
from .read_options import VIEW_OPTIONS

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

    doc = attempt(ctx, lambda: list_runs(workspace_of()), "output")
    lines = [
        f"{r['run_id']}  {r.get('status', '?')}  {r.get('outputs', '?')} output(s), {r.get('files', '?')} file(s)" for r in doc["runs"]
    ]
    finish(ctx, doc, "\n".join(lines) or f"no runs in {doc['outputs_dir']}")


@output.command("show")
@click.argument("ref", metavar="RUN_ID|MANIFEST")
@click.option("--output", "output_index", type=int, metavar="K", help="0-based output index; omit for the catalog.")
@click.option("--mime", "mime_type", metavar="MIME", help="Return exactly this MIME representation.")
@click.option("--offset", type=int, default=0, metavar="O", help="Text window start, in characters.")
@click.option("--limit", type=int, metavar="L", help="Text window length, in characters.")
@click.option("--max-response-bytes", type=int, metavar="B", help="Refuse responses larger than this (default 32 MiB).")
@click.pass_context
def output_show(ctx: click.Context, ref: str, output_index, mime_type, offset, limit, max_response_bytes, **view) -> None:
    """Show a run's catalog, or one of its outputs."""
    from jcli_sidecar.envelope import OutputQuery
    from jcli_sidecar.requests import view_of
    from jcli_sidecar.runs import read_run
    from jcli_sidecar.runtime import workspace_of

    def show() -> dict:
        spec = view_of({k: v for k, v in view.items() if v is not None})
        query = OutputQuery(mime_type, offset, limit, max_response_bytes, view=spec)
        return read_run(workspace_of(), ref, output_index, query)

    finish(ctx, attempt(ctx, show, "output"))


output_show.params.extend(table_options(VIEW_OPTIONS))  # --host, --as, --max-*: the read commands' own


@output.command("clean")
@click.option("--dry-run", is_flag=True, help="Only report what would be deleted; change nothing.")
@click.option(
    "--max-age-days", type=int, metavar="N", help="Delete completed runs older than N days (env JCLI_OUTPUT_MAX_AGE_DAYS; default 7)."
)
@click.option("--max-runs", type=int, metavar="N", help="Keep at most N completed runs (env JCLI_OUTPUT_MAX_RUNS; default 50).")
@click.pass_context
def output_clean(ctx: click.Context, dry_run: bool, max_age_days, max_runs) -> None:
    """Delete old runs by age and count, under the outputs lock (whole runs only)."""
    from jcli_sidecar.retention import clean, resolve_policy
    from jcli_sidecar.runtime import workspace_of
    from jcli_sidecar.store import outputs_dir

    outputs = None
    try:
        policy = resolve_policy(max_age_days, max_runs)
        outputs = outputs_dir(workspace_of())
        report = _locked_clean(outputs, policy, dry_run, clean)
    except PermissionError as exc:
        from jcli_sidecar.errors import PathNotAllowed

        fail(ctx, PathNotAllowed(f"cannot take the outputs lock in {outputs} ({exc.strerror}); nothing was deleted"))
    except JcliError as err:
        fail(ctx, err)
    except OSError as exc:
        fail(ctx, translate(exc, "output"))
    verb = "would delete" if dry_run else "deleted"
    lines = [f"{verb} {d['run_id']} ({d['reason']})" for d in report["deleted"]]
    lines += [f"kept {k['run_id']} ({k['reason']})" for k in report["kept"]]
    lines += [f"failed {e['run_id']}: {e['error']}" for e in report["errors"]]
    totals = report["totals"]
    lines.append(f"{totals['deleted']} run(s) {verb}, {totals['bytes_freed']} bytes; {totals['runs']} run(s) were there")
    finish(ctx, report, "\n".join(lines), emit.EXIT_OK if report["status"] == "ok" else emit.EXIT_FAILURE)


def _locked_clean(outputs: str, policy, dry_run: bool, clean):
    """Clean under the outputs lock; a dry run takes the lock only if it exists (it creates nothing)."""
    import os

    from jcli_sidecar.layout import Outputs
    from jcli_sidecar.locks import outputs_lock

    lock_path = Outputs(outputs).lock
    if dry_run and not os.path.exists(lock_path):
        return clean(outputs, policy, dry_run=True)
    with outputs_lock(outputs):
        return clean(outputs, policy, dry_run=dry_run)
