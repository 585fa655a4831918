"""Waiting on jobs (``j-cli job wait``): return when a job ends, or when the wait's own timeout passes.

The wait only reads records (:mod:`jcli_sidecar.runs.jobs`), so stopping it
never touches a job. It polls; the interval grows with the job's age
(:func:`poll_interval`: a tenth of it, between 0.25 s and 1 s), so a young
job is seen to end quickly and no end is seen more than a second late.

- Several jobs: it returns on the first to end; with ``every`` it waits for
  all of them, but returns at once when one ends other than ``ok`` (the
  conjunction is already false).
- A job whose record disappears while waited on (cleaned) is ``removed``.
- At the timeout it returns the current snapshot with ``timed_out: true``,
  so the caller simply calls again.
"""

from __future__ import annotations

import time

from ..base import JobNotFound
from .jobs import ENDED_STATES, read_job

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["DEFAULT_WAIT_SECONDS", "poll_interval", "wait_jobs"]

#: ``job wait``'s default timeout: below the shell caps of agent hosts (Claude Code's Bash: 120 s).
DEFAULT_WAIT_SECONDS = 100.0


def poll_interval(age_seconds: float) -> float:
    """How long to sleep between looks at a job ``age_seconds`` old.

    Example:
        >>> poll_interval(0.5), poll_interval(5), poll_interval(3600)
        (0.25, 0.5, 1.0)
    """
    return min(1.0, max(0.25, age_seconds * 0.1))


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def _snapshot(cwd: str, job_id: str) -> dict[str, Any]:
    try:
        return read_job(cwd, job_id)
    except JobNotFound:
        return {"job_id": job_id, "state": "removed", "note": "the job's record was removed while it was waited on"}


def _ended(view: dict[str, Any]) -> bool:
    return view.get("state") in ENDED_STATES or view.get("state") == "removed"


def wait_jobs(
    cwd: str,
    job_ids: list[str],
    *,
    timeout: float | None,
    every: bool = False,
    sleep: Callable[[float], bool] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Wait on ``job_ids`` (full ids, known to exist) in ``cwd``.

    Args:
        timeout: seconds; None or 0 waits until the condition holds.
        every: wait for every job (returning early on the first that ends other than ``ok``).
        sleep: ``sleep(seconds) -> stopped``; returns True when the wait was
            asked to stop (a signal). Default: :func:`time.sleep`, never stopped.

    Returns:
        ``{timed_out, stopped, waited_seconds, jobs[view], ended[id],
        pending[id], failed}``: ``jobs`` holds each job's view (as ``job
        status`` shows it) in the order asked; ``failed`` is the id of a job
        that ended other than ``ok`` (with ``every``), else None.
    """
    sleep = sleep or _sleep
    started = clock()
    deadline = None if not timeout else started + timeout
    stopped = False
    while True:
        views = [_snapshot(cwd, job_id) for job_id in job_ids]
        ended = [v["job_id"] for v in views if _ended(v)]
        failed = next((v["job_id"] for v in views if _ended(v) and v.get("state") != "ok"), None)
        done = (len(ended) == len(views) or failed is not None) if every else bool(ended)
        now = clock()
        timed_out = not done and deadline is not None and now >= deadline
        if done or timed_out or stopped:
            return {
                "timed_out": timed_out,
                "stopped": stopped,
                "waited_seconds": round(now - started, 3),
                "jobs": views,
                "ended": ended,
                "pending": [v["job_id"] for v in views if not _ended(v)],
                "failed": failed if every else None,
            }
        ages = [time.time() - v["created_ns"] / 1e9 for v in views if isinstance(v.get("created_ns"), int)]
        interval = poll_interval(min(ages) if ages else 0.0)
        if deadline is not None:
            interval = max(0.0, min(interval, deadline - now))
        stopped = sleep(interval)
