"""Retention of inline runs: expire by age, trim by count, never eat what is needed.

The policy (``max_age_days``, ``max_runs``) is resolved by the client — flag,
then ``JCLI_OUTPUT_MAX_AGE_DAYS`` / ``JCLI_OUTPUT_MAX_RUNS``, then the
defaults 7 and 50 — and sent with every store or clean request; the sidecar
never reads its own environment for it. :func:`clean` runs under the outputs
lock, after each publish and for ``j-cli output clean``.

Only whole runs are deleted, and only a run whose directory holds exactly its
manifest and the files the manifest lists (no symlinks, nothing extra).
Never deleted: the run just published; the newest run of a live owner
process; a run still being staged by a live writer; anything that cannot be
vouched for (it is kept and reported); anything outside ``.j-cli/outputs``.

A staged run (``.staging/<run-id>``) is judged by its writer, recorded
before anything else was written (``.writer.json``, else the manifest's
``owner``): a writer that is provably gone (same host, and its pid is dead
or now another process) leaves a directory nobody will finish, removed at
once (``writer_gone``); a live writer's is kept (``active_writer``); one
whose writer cannot be checked (no record, an unreadable record, another
host, a directory another user could write) is kept for the policy's
``staging_grace_seconds`` after its last change (``unknown_writer``), then
removed (``grace_expired``).

Every name is reached through an open directory without following links
(:mod:`jcli_sidecar.base.nofollow`), so a symlinked ``.j-cli``, ``outputs`` or run
directory can never lead a deletion elsewhere; ``.j-cli``, ``outputs`` and
``.staging`` must pass the trust rule (:mod:`jcli_sidecar.base.trust`), and a
run directory or manifest another user owns or can write is kept (``unsafe``).
"""

from __future__ import annotations

import os
import stat
import time

from ..base import (
    LOCK_FILE,
    MANIFEST,
    SCHEMA_VERSION,
    WRITER_RECORD,
    Dir,
    LinkRefused,
    Outputs,
    UsageError,
    open_outputs_root,
    open_staging,
    os_reason,
    outputs_lock,
    parse_manifest,
    untrusted_reason,
)
from .retention_policy import DEFAULT_MAX_AGE_DAYS, DEFAULT_MAX_RUNS, Policy, resolve_policy
from .staged_runs import judge_staging

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "DEFAULT_MAX_AGE_DAYS",
    "DEFAULT_MAX_RUNS",
    "Policy",
    "clean",
    "clean_in",
    "clean_workspace",
    "owner_alive",
    "resolve_policy",
]

DAY_NS = 86_400 * 1_000_000_000
#: Reasons a run is deleted, and reasons one is kept without being vouched for.
DELETE_REASONS = ("expired", "over_count", "writer_gone", "grace_expired")
KEEP_REASONS = ("unlisted_files", "symlink", "incomplete", "active_writer", "unknown_writer", "live_owner", "unreadable_manifest", "unsafe")


def owner_alive(owner: Any) -> bool:
    """Is the process that wrote a run still running? When in doubt: yes.

    An owner on another host, or without a readable record, counts as alive.
    """
    from ..base import GONE, ProcessRecord

    record = ProcessRecord.from_dict(owner)
    return record is None or record.state() != GONE


class _Run:
    __slots__ = ("run_id", "path", "manifest", "reason", "completed_ns", "bytes", "files")

    def __init__(self, run_id: str, path: str) -> None:
        self.run_id = run_id
        self.path = path
        self.manifest: dict[str, Any] | None = None
        self.reason: str | None = None  # why it cannot be vouched for
        self.completed_ns = 0
        self.bytes = 0
        self.files: list[str] = []


def _read_manifest(run_dir: Dir) -> dict[str, Any]:
    """The run's manifest, read without following a link.

    Raises:
        FileNotFoundError: none yet. OSError, ValueError: unreadable or not ours.
    """
    return parse_manifest(run_dir.read_bytes(MANIFEST))


def _listing(run_dir: Dir) -> tuple[str | None, list[str], int]:
    """``(reason or None, names, bytes)``: only regular files may be in a run directory."""
    names, size = [], 0
    for name in run_dir.names():
        info = run_dir.lstat(name)
        if stat.S_ISLNK(info.st_mode):
            return "symlink", [], 0
        if not stat.S_ISREG(info.st_mode):
            return "unlisted_files", [], 0
        names.append(name)
        size += info.st_size
    return None, sorted(names), size


def _inspect(run_id: str, outputs: Dir) -> _Run:
    """Read a run and decide whether it can be vouched for (nothing is changed)."""
    run = _Run(run_id, outputs.join(run_id))
    try:
        run_dir = outputs.sub(run_id)
    except LinkRefused:
        run.reason = "symlink" if _is_link(outputs, run_id) else "unlisted_files"
        return run
    except OSError:  # vanished or cannot be opened: kept, reported as incomplete
        run.reason = "incomplete"
        return run
    with run_dir:
        if untrusted_reason(os.fstat(run_dir.fd)) is not None:
            run.reason = "unsafe"
            return run
        try:
            if not run_dir.is_file(MANIFEST) or untrusted_reason(run_dir.lstat(MANIFEST)) is not None:
                raise _Unsafe
            manifest = _read_manifest(run_dir)
            listed = manifest.get("files")
            if not isinstance(listed, list) or not all(isinstance(f, str) for f in listed):
                raise ValueError
            completed = manifest.get("completed_ns")
            if not isinstance(completed, int):
                raise ValueError
        except _Unsafe:
            run.reason = _manifest_problem(run_dir)
            return run
        except FileNotFoundError:
            run.reason = "incomplete"
            return run
        except LinkRefused:
            run.reason = "symlink"
            return run
        except (OSError, ValueError, UnicodeDecodeError):  # kept, reported as unreadable_manifest
            run.reason = "unreadable_manifest"
            return run
        run.manifest = manifest
        run.completed_ns = completed
        try:
            reason, present, run.bytes = _listing(run_dir)
        except OSError:  # vanished or cannot be listed: kept, reported as incomplete
            run.reason = "incomplete"
            return run
    expected = set(listed) | {MANIFEST, WRITER_RECORD}  # a writer record left behind is the run's
    if reason is not None:
        run.reason = reason
    elif set(present) - expected:
        run.reason = "unlisted_files"
    elif expected - set(present) - {WRITER_RECORD}:
        run.reason = "incomplete"
    run.files = present
    return run


class _Unsafe(Exception):
    """The manifest is not a regular file this user (or root) alone can write."""


def _manifest_problem(run_dir: Dir) -> str:
    """Why a manifest that is not plainly ours was not read: absent, a link, another kind of file, or unsafe."""
    try:
        info = run_dir.lstat(MANIFEST)
    except FileNotFoundError:
        return "incomplete"
    except OSError:  # kept, reported as unreadable_manifest
        return "unreadable_manifest"
    if stat.S_ISLNK(info.st_mode):
        return "symlink"
    if not stat.S_ISREG(info.st_mode):
        return "unreadable_manifest"
    return "unsafe"


def _is_link(parent: Dir, name: str) -> bool:
    try:
        return stat.S_ISLNK(parent.lstat(name).st_mode)
    except OSError:  # gone or unreadable: not a link
        return False


def _delete(run: _Run, outputs: Dir) -> None:
    """Remove exactly the vouched-for files, then the directory. Never follows links."""
    again = _inspect(run.run_id, outputs)  # re-checked under the lock, right before
    if again.reason is not None:
        raise OSError(f"run changed before deletion ({again.reason})")
    with outputs.sub(run.run_id) as run_dir:
        for name in again.files:
            run_dir.unlink(name)
    outputs.rmdir(run.run_id)


def _open_staging(outputs: Dir) -> Dir | None:
    """``.staging`` when it is a real directory; None when absent or a link (nothing of ours to clean).

    Raises:
        WorkspaceUnsafe: another user owns or can write it.
    """
    try:
        return open_staging(outputs)
    except OSError:  # absent or not a directory: nothing of ours to clean (documented)
        return None


def _open(outputs_dir: str) -> Dir | None:
    """The outputs directory opened without following links; None when there is none.

    Raises:
        UsageError: it, or the ``.j-cli`` above it, is a symlink, a file, a FIFO, ... (named).
        WorkspaceUnsafe: it, or the ``.j-cli`` above it, is owned or writable by another user.
    """
    try:
        return open_outputs_root(outputs_dir)
    except FileNotFoundError:
        return None
    except LinkRefused as exc:
        raise UsageError(f"{exc.describe()}; refusing to clean {outputs_dir}", path=exc.filename, kind=exc.kind) from None


def clean_workspace(cwd: str, policy: Policy, *, dry_run: bool = False) -> dict[str, Any]:
    """``j-cli output clean``: take the outputs lock of ``cwd`` and apply ``policy``, then clean ended jobs (``jobs``).

    A dry run takes the lock only if its file exists (it creates nothing).

    Raises:
        UsageError: a symlinked ``.j-cli``, ``outputs`` or ``.lock``.
        OSError: the lock cannot be taken (e.g. a read-only workspace).
    """
    from .job_retention import clean_jobs

    report = _clean_outputs(cwd, policy, dry_run)
    report["jobs"] = clean_jobs(cwd, policy, dry_run=dry_run)  # ended job records age like runs
    return report


def _clean_outputs(cwd: str, policy: Policy, dry_run: bool) -> dict[str, Any]:
    outputs_dir = Outputs.of_workspace(cwd).root
    outputs = _open(outputs_dir)
    if outputs is None:
        return _report(outputs_dir, policy, dry_run, empty=True)
    with outputs:
        if dry_run and not outputs.is_file(LOCK_FILE):
            return clean_in(outputs, policy, dry_run=True)
        try:
            lock = outputs_lock(outputs)
        except LinkRefused as exc:
            raise UsageError(f"{exc.filename} is a symlink; refusing to lock through it") from None
        with lock:
            return clean_in(outputs, policy, dry_run=dry_run)


def clean(
    outputs_dir: str,
    policy: Policy,
    *,
    dry_run: bool = False,
    keep: frozenset[str] | set[str] = frozenset(),
    now_ns: int | None = None,
    alive: Callable[[Any], bool] = owner_alive,
) -> dict[str, Any]:
    """Apply ``policy`` to ``outputs_dir`` (the caller holds the outputs lock); see :func:`clean_in`.

    Raises:
        UsageError: ``outputs_dir`` or the ``.j-cli`` above it is a symlink (refused).
    """
    outputs = _open(outputs_dir)
    if outputs is None:
        return _report(outputs_dir, policy, dry_run, empty=True)
    with outputs:
        return clean_in(outputs, policy, dry_run=dry_run, keep=keep, now_ns=now_ns, alive=alive)


def _report(outputs_dir: str, policy: Policy, dry_run: bool, *, empty: bool = False) -> dict[str, Any]:
    """The report's frame; ``empty``: there is no outputs directory at all."""
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": "ok",
        "dry_run": dry_run,
        "policy": policy.to_wire(),
        "outputs_dir": outputs_dir,
        "deleted": [],
        "kept": [],
        "errors": [],
    }
    if empty:
        report["totals"] = {"runs": 0, "deleted": 0, "kept": 0, "bytes_freed": 0}
    return report


def clean_in(
    outputs: Dir,
    policy: Policy,
    *,
    dry_run: bool = False,
    keep: frozenset[str] | set[str] = frozenset(),
    now_ns: int | None = None,
    alive: Callable[[Any], bool] = owner_alive,
) -> dict[str, Any]:
    """Apply ``policy`` to the open outputs directory (the caller holds the outputs lock).

    Args:
        keep: run ids never to delete (the run just published).
        now_ns: the clock (injectable; default: now).
        alive: whether an owner record names a live process (injectable).

    Returns:
        ``{status, dry_run, policy, outputs_dir, deleted[{run_id, reason,
        bytes}], kept[{run_id, reason}], errors[], totals}``; ``status`` is
        ``"partial"`` when a deletion failed.
    """
    now_ns = time.time_ns() if now_ns is None else now_ns
    report = _report(outputs.path, policy, dry_run)
    staging = _open_staging(outputs)  # refused (WorkspaceUnsafe) before anything is deleted
    try:
        return _clean_open(outputs, staging, policy, dry_run, keep, now_ns, alive, report)
    finally:
        if staging is not None:
            staging.close()


def _clean_open(
    outputs: Dir,
    staging: Dir | None,
    policy: Policy,
    dry_run: bool,
    keep: frozenset[str] | set[str],
    now_ns: int,
    alive: Callable[[Any], bool],
    report: dict[str, Any],
) -> dict[str, Any]:
    runs = [_inspect(name, outputs) for name in sorted(outputs.names()) if Outputs.is_run_name(name)]
    vouched = [r for r in runs if r.reason is None]
    for run in runs:
        if run.reason is not None:
            report["kept"].append({"run_id": run.run_id, "reason": run.reason})
    # The newest run of every live owner is protected, as is the run just published.
    newest_by_owner: dict[tuple, _Run] = {}
    for run in vouched:
        owner = run.manifest.get("owner") or {}
        key = (owner.get("host"), owner.get("pid"), owner.get("create_time"))
        best = newest_by_owner.get(key)
        if best is None or (run.completed_ns, run.run_id) > (best.completed_ns, best.run_id):
            newest_by_owner[key] = run
    protected = {r.run_id for r in newest_by_owner.values() if alive(r.manifest.get("owner"))}
    protected |= set(keep)
    doomed: list[tuple[_Run, str]] = []
    survivors = []
    for run in vouched:
        if now_ns - run.completed_ns > policy.max_age_days * DAY_NS:
            doomed.append((run, "expired"))
        else:
            survivors.append(run)
    survivors.sort(key=lambda r: (r.completed_ns, r.run_id), reverse=True)
    doomed.extend((run, "over_count") for run in survivors[policy.max_runs :])
    freed = 0
    for run, reason in doomed:
        if run.run_id in protected:
            report["kept"].append({"run_id": run.run_id, "reason": "live_owner" if run.run_id not in keep else "active_writer"})
            continue
        try:
            if not dry_run:
                _delete(run, outputs)
            report["deleted"].append({"run_id": run.run_id, "reason": reason, "bytes": run.bytes})
            freed += run.bytes
        except OSError as exc:
            report["errors"].append({"run_id": run.run_id, "error": os_reason(exc)})
    kept, deleted, errors = ([], [], []) if staging is None else judge_staging(staging, policy, now_ns, dry_run)
    report["kept"].extend(kept)
    report["deleted"].extend(deleted)
    report["errors"].extend(errors)
    freed += sum(d["bytes"] for d in deleted)
    if report["errors"]:
        report["status"] = "partial"
    report["totals"] = {
        "runs": len(runs),
        "deleted": len(report["deleted"]),
        "kept": len(runs) - sum(1 for d in report["deleted"] if not d.get("staging")),
        "bytes_freed": freed,
    }
    return report
