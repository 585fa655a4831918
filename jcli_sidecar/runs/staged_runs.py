"""Half-written runs in ``.j-cli/outputs/.staging``: who wrote each, and whether cleaning removes it.

A stage records its writer (a :class:`~jcli_sidecar.base.process_record.ProcessRecord`
in ``.writer.json``) before it writes anything else, and drops the record
once its manifest (whose ``owner`` is the same record) is in place. So a
staged run is judged by its writer:

========================  ==========================  ========================
the writer                what cleaning does          reported as
========================  ==========================  ========================
alive                     keeps it, however old       kept ``active_writer``
provably gone (this       removes it at once          deleted ``writer_gone``
host; pid dead, or now
another process)
cannot be checked (no     keeps it for the policy's   kept ``unknown_writer``,
record, unreadable or     ``staging_grace_seconds``   then deleted
forged record, another    after its last change,      ``grace_expired``
host, a directory or      then removes it
record another user
could write)
========================  ==========================  ========================

An entry of ``.staging`` that is not a directory (a symlink, a file) is
never j-cli's: it is kept and reported. Removal never follows a link: links,
FIFOs and devices inside a staged run are unlinked as names
(:meth:`jcli_sidecar.base.nofollow.Dir.remove_tree`).
"""

from __future__ import annotations

import stat

from ..base import MANIFEST, WRITER_RECORD, Dir, os_reason, parse_manifest, untrusted_reason

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .retention_policy import Policy

__all__ = ["judge_staging", "writer_of"]

_RECORD_CAP = 64 * 1024  # a writer record is a few dozen bytes
_DEPTH = 8  # j-cli writes no subdirectory in a staged run; anything deeper is not ours to walk


def writer_of(run_dir: Dir) -> tuple[str, str]:
    """``(state, why)`` of a staged run's writer: ``alive``, ``gone`` or ``unknown``, and in what words.

    The writer record wins; without one, the manifest's ``owner`` (a stage
    that finished writing). A record or manifest that is not a regular file
    this user (or root) alone can write is not believed.
    """
    from ..base import ALIVE, GONE, ProcessRecord

    for name, field in ((WRITER_RECORD, "writer"), (MANIFEST, "owner")):
        try:
            info = run_dir.lstat(name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return "unknown", f"{name} cannot be looked at ({os_reason(exc)})"
        if not stat.S_ISREG(info.st_mode):
            return "unknown", f"{name} is not a regular file"
        if name == WRITER_RECORD and info.st_size > _RECORD_CAP:
            return "unknown", f"{name} is too large to be a writer record"
        if untrusted_reason(info) is not None:
            return "unknown", f"{name} is {untrusted_reason(info)}"
        try:
            record = ProcessRecord.from_dict(parse_manifest(run_dir.read_bytes(name)).get(field))
        except (OSError, ValueError):  # an unreadable or garbled record: the writer is unknown (judged below)
            record = None
        if record is None:
            return "unknown", f"{name} holds no readable writer record"
        state = record.state()
        if state == ALIVE:
            return "alive", f"pid {record.pid} still runs"
        if state == GONE:
            return "gone", f"pid {record.pid} of this host has ended"
        return "unknown", f"pid {record.pid} cannot be checked from here (host {record.host!r})"
    return "unknown", "no writer record"


def _last_change_ns(parent: Dir, name: str, info: Any) -> int:
    """The newest ``mtime`` of a staged run and its entries (a writer elsewhere still touches them)."""
    newest = info.st_mtime_ns
    try:
        with parent.sub(name) as run_dir:
            for entry in run_dir.names():
                try:
                    newest = max(newest, run_dir.lstat(entry).st_mtime_ns)
                except OSError:  # vanished since it was listed: judged by the times seen
                    continue
    except OSError:  # the stage vanished or cannot be listed: judged by the times seen
        pass
    return newest


def _tree_bytes(parent: Dir, name: str, depth: int = _DEPTH) -> int:
    """What removing ``name`` would free (regular files' sizes), never following a link."""
    info = parent.lstat(name)
    if not stat.S_ISDIR(info.st_mode):
        return info.st_size if stat.S_ISREG(info.st_mode) else 0
    if depth <= 0:
        return 0
    with parent.sub(name) as inner:
        return sum(_tree_bytes(inner, entry, depth - 1) for entry in inner.names())


def judge_staging(staging: Dir, policy: Policy, now_ns: int, dry_run: bool) -> tuple[list, list, list]:
    """Apply the writer rule (module docstring) to every staged run; the caller holds the outputs lock.

    Returns:
        ``(kept, deleted, errors)`` entries for the clean report, each
        marked ``staging: true``; a kept or deleted one says why in ``writer``.
    """
    kept: list[dict[str, Any]] = []
    deleted: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    grace_ns = policy.staging_grace_seconds * 1_000_000_000
    for name in sorted(staging.names()):
        try:
            info = staging.lstat(name)
        except OSError:
            continue  # gone meanwhile
        if not stat.S_ISDIR(info.st_mode):
            kept.append({"run_id": name, "reason": "symlink" if stat.S_ISLNK(info.st_mode) else "unlisted_files", "staging": True})
            continue
        if untrusted_reason(info) is not None:
            state, why = "unknown", f"the directory is {untrusted_reason(info)}"
        else:
            try:
                with staging.sub(name) as run_dir:
                    state, why = writer_of(run_dir)
            except OSError as exc:
                state, why = "unknown", f"it cannot be opened ({os_reason(exc)})"
        if state == "alive":
            kept.append({"run_id": name, "reason": "active_writer", "staging": True, "writer": why})
            continue
        if state == "unknown" and now_ns - _last_change_ns(staging, name, info) <= grace_ns:
            kept.append({"run_id": name, "reason": "unknown_writer", "staging": True, "writer": why})
            continue
        reason = "writer_gone" if state == "gone" else "grace_expired"
        try:
            size = _tree_bytes(staging, name) if dry_run else staging.remove_tree(name, depth=_DEPTH)
            deleted.append({"run_id": name, "reason": reason, "bytes": size, "staging": True, "writer": why})
        except OSError as exc:
            errors.append({"run_id": name, "error": os_reason(exc), "staging": True})
    return kept, deleted, errors
