"""``j-cli job list|status|wait|output|cancel``: background runs (``exec --background``) of this workspace.

A job is named by its id or a unique prefix of it. Every command but
``cancel`` only reads the job records (``.j-cli/jobs``); ``wait`` polls them
and stopping it (Ctrl-C, SIGTERM, a host's timeout) never stops the job.
"""

from __future__ import annotations

import os
import select
import signal

import click

from jcli_sidecar.base import Interrupted, JcliError

from . import emit
from .outcome import attempt, fail, finish

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["job"]

#: How long ``cancel`` waits for the interrupted job to end before saying the kernel did not stop.
CANCEL_WAIT_SECONDS = 25.0
#: What ``list`` shows of each job.
_BRIEF = ("job_id", "state", "kind", "session", "file", "cells", "cells_done", "running_cell", "created_ns", "finished_ns")


def _cwd() -> str:
    from jcli_sidecar.base import workspace_of

    return workspace_of()


def _resolve(ctx: click.Context, name: str) -> str:
    from jcli_sidecar.runs import resolve_job

    return attempt(ctx, lambda: resolve_job(_cwd(), name), "read")


def _line(view: dict[str, Any]) -> str:
    """One job in a line, for people."""
    what = view.get("file") or "inline code"
    progress = f"{view.get('cells_done', 0)}/{view.get('cells', '?')} cell(s)"
    running = f", running cell {view['running_cell']}" if view.get("running_cell") is not None else ""
    return f"{view.get('job_id')}  {view.get('state')}  {what}  {progress}{running}"


@click.group()
def job() -> None:
    """Background runs (exec --background): list, status, wait, output, cancel (docs/jobs.md)."""


@job.command("list")
@click.pass_context
def job_list(ctx: click.Context) -> None:
    """List this workspace's jobs, oldest first."""
    from jcli_sidecar.runs import list_jobs

    jobs = attempt(ctx, lambda: list_jobs(_cwd()), "read")
    doc = {"schema_version": 1, "jobs": [{k: j.get(k) for k in (*_BRIEF, "reason") if k in j} for j in jobs]}
    finish(ctx, doc, "\n".join(_line(j) for j in jobs) or "no jobs in this workspace")


@job.command("status")
@click.argument("job_id", metavar="ID")
@click.pass_context
def job_status(ctx: click.Context, job_id: str) -> None:
    """A job's state, progress and, once it ended, its result document."""
    from jcli_sidecar.runs import note_read, read_job

    full = _resolve(ctx, job_id)
    view = attempt(ctx, lambda: read_job(_cwd(), full), "read")
    note_read(_cwd(), [view])  # its end was given: retention may age it from now
    finish(ctx, {"schema_version": 1, **view}, _human_status(view))


def _human_status(view: dict[str, Any]) -> str:
    lines = [_line(view)]
    if view.get("error"):
        lines.append(f"error [{view['error'].get('code')}]: {view['error'].get('message')}")
    if view.get("lost"):
        lines.append(view["lost"]["note"])
    if view.get("state") != "running":
        lines.append(f"its text: j-cli job output {view['job_id']}")
    return "\n".join(lines)


class _Stop:
    """SIGINT and SIGTERM stop the wait (never the job): a pipe the wait's sleep watches."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        self.signum: int | None = None
        self.saved: dict[int, Any] = {}

    def handle(self, signum: int, frame: Any = None) -> None:
        self.signum = self.signum or signum
        try:
            os.write(self.write, b"\0")
        except OSError:  # the wake pipe is full or closed: the signal is already recorded in signum
            pass

    def sleep(self, seconds: float) -> bool:
        from jcli_sidecar.base import stall_point

        stall_point("job-wait:sleeping")  # tests: a signal lands while the wait waits
        if self.signum is not None:
            return True
        readable, _, _ = select.select([self.read], [], [], seconds)
        return bool(readable) or self.signum is not None

    def __enter__(self) -> _Stop:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.saved[sig] = signal.signal(sig, self.handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        os.close(self.read)
        os.close(self.write)


@job.command("wait")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@click.option(
    "--timeout",
    type=float,
    default=None,
    metavar="S",
    help="Return after S seconds with timed_out: true and the jobs as they stand (default 100, below the shell "
    "timeouts of agent hosts; 0: no limit). Then simply wait again.",
)
@click.option("--all", "every", is_flag=True, help="Wait for every job (returning early when one ends other than ok).")
@click.pass_context
def job_wait(ctx: click.Context, job_ids: tuple[str, ...], timeout: float | None, every: bool) -> None:
    """Wait until a job ends (the first of several, or --all), or --timeout passes."""
    from jcli_sidecar.base import UsageError
    from jcli_sidecar.runs import DEFAULT_WAIT_SECONDS, note_read, wait_jobs

    if timeout is not None and (timeout < 0 or timeout != timeout or timeout == float("inf")):
        fail(ctx, UsageError(f"--timeout must be a number of seconds >= 0, got {timeout!r}"))
    ids = list(dict.fromkeys(_resolve(ctx, name) for name in job_ids))  # an unknown id fails at once
    cwd = _cwd()
    with _Stop() as stop:
        doc = attempt(
            ctx,
            lambda: wait_jobs(cwd, ids, timeout=DEFAULT_WAIT_SECONDS if timeout is None else timeout, every=every, sleep=stop.sleep),
            "read",
        )
        signum = stop.signum
    note_read(cwd, doc["jobs"])
    doc = {"schema_version": 1, **doc}
    if doc["stopped"]:
        name = signal.Signals(signum).name if signum else "SIGINT"
        err = Interrupted(f"{name} stopped the wait; the job(s) run on: wait again with j-cli job wait", signal=name, **doc)
        ctx.exit(emit.error(err, bool(ctx.find_root().obj["json"])))
    human = "\n".join(_line(v) for v in doc["jobs"])
    if doc["timed_out"]:
        human += f"\nstill running after {doc['waited_seconds']:g} s: wait again"
    finish(ctx, doc, human)


@job.command("output")
@click.argument("job_id", metavar="ID")
@click.option("--offset", type=int, default=0, show_default=True, metavar="N", help="First byte of the window (of all the job printed).")
@click.option("--limit", type=int, default=None, metavar="N", help="At most N bytes, cut on whole characters (default 4000).")
@click.pass_context
def job_output(ctx: click.Context, job_id: str, offset: int, limit: int | None) -> None:
    """The text a job printed so far, as a window by byte offset (images and rich outputs: the notebook or the job's run).

    Only the window is read. A job keeps the newest JCLI_JOB_OUTPUT_MAX_BYTES
    of its text: an offset in what was dropped starts at the first byte kept,
    and the answer says how many bytes were dropped.
    """
    from jcli_sidecar.read import check_window
    from jcli_sidecar.runs import note_read, read_job, read_job_output

    limit = 4000 if limit is None else limit
    attempt(ctx, lambda: check_window(offset, limit), "read")
    full = _resolve(ctx, job_id)
    cut, info = attempt(ctx, lambda: read_job_output(_cwd(), full, offset, limit), "read")
    try:
        note_read(_cwd(), [read_job(_cwd(), full)])  # the text of an ended job was given
    except (JcliError, OSError):  # the mark is best effort: the text was read all the same
        pass
    doc: dict[str, Any] = {"schema_version": 1, "job_id": full, "text": cut, **info}
    human = cut
    if info["dropped_bytes"] and info["offset"] == info["dropped_bytes"]:
        doc["note"] = (
            f"{info['dropped_bytes']} bytes dropped: the job printed {info['total_bytes']} bytes and only the newest "
            f"{info['total_bytes'] - info['dropped_bytes']} are kept (JCLI_JOB_OUTPUT_MAX_BYTES)"
        )
        human = f"[{doc['note']}]\n{cut}"
    if info.get("next_offset") is not None:
        human = f"{human}\n[more: --offset {info['next_offset']}]"
    finish(ctx, doc, human)


@job.command("cancel")
@click.argument("job_id", metavar="ID")
@click.pass_context
def job_cancel(ctx: click.Context, job_id: str) -> None:
    """Interrupt a running job: what finished is kept (written back, or its run kept), and it ends cancelled."""
    from jcli_sidecar.runs import note_read, read_job, wait_jobs

    full = _resolve(ctx, job_id)
    cwd = _cwd()
    view = attempt(ctx, lambda: read_job(cwd, full), "read")
    note_read(cwd, [view])
    if view.get("state") != "running":
        finish(ctx, {"schema_version": 1, "cancelled": False, "note": f"the job already ended ({view.get('state')})", **view}, _line(view))
    attempt(ctx, lambda: _ask_cancel(full), "sidecar")
    doc = attempt(ctx, lambda: wait_jobs(cwd, [full], timeout=CANCEL_WAIT_SECONDS), "read")
    view = doc["jobs"][0]
    note_read(cwd, [view])
    out: dict[str, Any] = {"schema_version": 1, "cancelled": view.get("state") == "cancelled", **view}
    if view.get("state") == "running":
        out["note"] = f"the kernel did not stop within {CANCEL_WAIT_SECONDS:g} s of the interrupt; the job still runs"
        out["kernel_did_not_stop"] = True
    finish(ctx, out, _line(view) + (f"\n{out['note']}" if "note" in out else ""))


def _ask_cancel(job_id: str) -> None:
    """Ask the sidecar holding the job to interrupt it.

    Raises:
        SidecarUnavailable: no sidecar answers (the job then reads as lost).
        JobNotFound: the sidecar does not hold it.
    """
    from jcli_sidecar.base import JobNotFound
    from jcli_sidecar.sidecar import JOB_CANCEL

    from .transport import ask

    answer = ask(JOB_CANCEL, {"job_id": job_id})
    if not answer.get("cancelling"):
        raise JobNotFound(f"job {job_id} is not held by this workspace's sidecar (it just ended, or its holder died)", job_id=job_id)
