"""Retention of job records: ``.j-cli/jobs`` cleaned by age, and only once read.

Jobs do not count with runs: ``JCLI_OUTPUT_MAX_RUNS`` (``--max-runs``) is
the number of inline runs kept and removes no job record, however many jobs
ended. An ended job's record is removed only when both hold:

- it was **read**: a command gave someone its end (``job status``, ``job
  wait``, ``job output`` or ``job cancel`` once it ended, the MCP server's
  ``job_status`` and ``job_wait``), which leaves a ``read`` mark in the job's
  directory (:func:`~jcli_sidecar.runs.jobs.note_read`; ``job list`` does not);
- it is past its **age limit**: ``max_age_days`` (``JCLI_OUTPUT_MAX_AGE_DAYS``)
  since the later of its end (a ``lost`` one: its last update) and its
  first read, so a result read late still stays that long.

An ended job never read is kept (reported ``unread`` once past its age);
a ``running`` job (its holder alive) is never deleted. Nothing is followed
through a link: a symlinked ``.j-cli`` or ``jobs`` is refused, and a link, a
damaged record or anything that is not a job directory under ``jobs`` is
kept and reported, never entered.
"""

from __future__ import annotations

import stat
import time

from ..base import JobNotFound, OutputDataInvalid, UsageError, os_reason
from .jobs import _open_jobs, _read_record, is_job_id, job_view, read_mark_ns

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .retention_policy import Policy

__all__ = ["clean_jobs"]

DAY_NS = 86_400 * 1_000_000_000


def clean_jobs(cwd: str, policy: Policy, *, dry_run: bool = False, now_ns: int | None = None, alive: Any = None) -> dict[str, Any]:
    """Apply ``policy`` to ``<cwd>/.j-cli/jobs``.

    Args:
        now_ns: the clock (injectable). alive: as :func:`~jcli_sidecar.runs.jobs.job_view`.

    Returns:
        ``{deleted[{job_id, reason}], kept[{job_id, reason}], errors[{job_id, error}]}``.

    Raises:
        UsageError: ``.j-cli`` or ``jobs`` is a link (refused).
        WorkspaceUnsafe: another user owns or can write it.
    """
    now_ns = time.time_ns() if now_ns is None else now_ns
    report: dict[str, Any] = {"deleted": [], "kept": [], "errors": []}
    jobs = _open_jobs(cwd)
    if jobs is None:
        return report
    with jobs:
        doomed: list[tuple[str, str]] = []
        for name in sorted(jobs.names()):
            if not is_job_id(name):
                continue
            try:
                mode = jobs.lstat(name).st_mode
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(mode):
                report["kept"].append({"job_id": name, "reason": "symlink" if stat.S_ISLNK(mode) else "not_a_directory"})
                continue
            try:
                view = job_view(_read_record(jobs, name), alive=alive)
            except (JobNotFound, UsageError, OutputDataInvalid, OSError):  # kept and reported as unreadable: never deleted on a guess
                report["kept"].append({"job_id": name, "reason": "unreadable"})
                continue
            if view.get("state") == "running":
                report["kept"].append({"job_id": name, "reason": "running"})
                continue
            when = view.get("finished_ns") if isinstance(view.get("finished_ns"), int) else view.get("updated_ns")
            when = when if isinstance(when, int) else 0
            read_ns = read_mark_ns(jobs, name)
            if now_ns - max(when, read_ns or 0) <= policy.max_age_days * DAY_NS:
                continue
            if read_ns is None:
                report["kept"].append({"job_id": name, "reason": "unread"})
                continue
            doomed.append((name, "expired"))
        for name, reason in doomed:
            try:
                if not dry_run:
                    jobs.remove_tree(name, depth=2)
                report["deleted"].append({"job_id": name, "reason": reason})
            except OSError as exc:
                report["errors"].append({"job_id": name, "error": os_reason(exc)})
    return report
