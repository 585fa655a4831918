"""``j-cli output list|show``: inline runs kept in ``<cwd>/.j-cli/outputs``.

``show`` returns the same envelope as ``notebook output``, with
``source.kind = "run"``. Both only read.
"""

from __future__ import annotations

import click

from jcli_sidecar.base import JcliError, os_error

from . import emit
from .click_options import table_options
from .outcome import attempt, fail, finish
from .read_options import RUN_SHOW_OPTIONS

__all__ = ["output"]


@click.group()
def output() -> None:
    """Outputs of inline exec runs (a scratch area, cleaned by age and count)."""


@output.command("list")
@click.pass_context
def output_list(ctx: click.Context) -> None:
    """List the runs kept for this directory, newest first."""
    from jcli_sidecar.base import workspace_of
    from jcli_sidecar.runs import list_runs

    doc = attempt(ctx, lambda: list_runs(workspace_of()), "outputs")
    lines = [
        f"{r['run_id']}  {r.get('status', '?')}  {r.get('outputs', '?')} output(s), {r.get('files', '?')} file(s)" for r in doc["runs"]
    ]
    finish(ctx, doc, "\n".join(lines) or f"no runs in {doc['outputs_dir']}")


@output.command("show")
@click.argument("ref", metavar="RUN_ID|MANIFEST")
@click.pass_context
def output_show(ctx: click.Context, ref: str, **fields) -> None:
    """Show a run's catalog, or one of its outputs."""
    from jcli_sidecar.base import workspace_of
    from jcli_sidecar.read import RUN_SPEC, check_request, query_of
    from jcli_sidecar.runs import read_run

    def show() -> dict:
        args = check_request({"run": ref, **fields}, RUN_SPEC)
        return read_run(workspace_of(), ref, args.get("output_index"), query_of(args))

    finish(ctx, attempt(ctx, show, "outputs"))


output_show.params.extend(table_options(RUN_SHOW_OPTIONS))  # the run request's fields, as flags


@output.command("clean")
@click.option("--dry-run", is_flag=True, help="Only report what would be deleted; change nothing.")
@click.option(
    "--max-age-days", type=int, metavar="N", help="Delete completed runs older than N days (env JCLI_OUTPUT_MAX_AGE_DAYS; default 7)."
)
@click.option("--max-runs", type=int, metavar="N", help="Keep at most N completed runs (env JCLI_OUTPUT_MAX_RUNS; default 50).")
@click.option("--days", "days", type=int, hidden=True)  # upstream jupyter-jcli's name for --max-age-days
@click.pass_context
def output_clean(ctx: click.Context, dry_run: bool, max_age_days, max_runs, days) -> None:
    """Delete old runs by age and count, under the outputs lock (whole runs only)."""
    from jcli_sidecar.base import Outputs, workspace_of
    from jcli_sidecar.runs import clean_workspace, resolve_policy

    if days is not None:
        if max_age_days is not None and max_age_days != days:
            raise click.UsageError("--days is another name for --max-age-days; give one")
        max_age_days = days
    cwd = workspace_of()
    try:
        report = clean_workspace(cwd, resolve_policy(max_age_days, max_runs), dry_run=dry_run)
    except PermissionError as exc:
        fail(ctx, os_error(exc, "outputs-lock", Outputs.of_workspace(cwd).root))
    except JcliError as err:
        fail(ctx, err)
    except OSError as exc:
        fail(ctx, os_error(exc, "outputs"))
    verb = "would delete" if dry_run else "deleted"
    lines = [f"{verb} {d['run_id']} ({d['reason']})" for d in report["deleted"]]
    lines += [f"kept {k['run_id']} ({k['reason']})" for k in report["kept"]]
    lines += [f"failed {e['run_id']}: {e['error']}" for e in report["errors"]]
    totals = report["totals"]
    lines.append(f"{totals['deleted']} run(s) {verb}, {totals['bytes_freed']} bytes; {totals['runs']} run(s) were there")
    finish(ctx, report, "\n".join(lines), emit.EXIT_OK if report["status"] == "ok" else emit.EXIT_FAILURE)
