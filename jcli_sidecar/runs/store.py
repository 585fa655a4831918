"""Inline runs: ``<cwd>/.j-cli/outputs/<run-id>/manifest.json`` plus payload files.

Writing a run has two halves, so that the sidecar never writes where the
calling agent could not:

1. :func:`stage_run` (always the client): create
   ``.j-cli/outputs/.staging/<run-id>/``, record its writer (this process's
   ``ProcessRecord``, in ``.writer.json``) before anything else, write every
   payload file, then the manifest last (temp file plus rename), then drop
   the writer record (the manifest's ``owner`` says the same). A stage that
   fails removes its own directory (best effort; the error says when it
   could not); one whose writer was killed is removed by the next clean
   (:mod:`jcli_sidecar.runs.retention`).
2. :func:`publish_run` (the sidecar, or the client in-process): under the
   outputs lock, rename the staged directory into place. An existing
   ``<run-id>/manifest.json`` means it is already published.

Nothing half-written is ever visible as a run. ``.j-cli/`` itself comes
from :mod:`jcli_sidecar.base.workspace_dir`.
"""

from __future__ import annotations

import os
import time

from ..base import (
    MANAGED_BY,
    MANIFEST,
    MANIFEST_TMP,
    SCHEMA_VERSION,
    WRITER_RECORD,
    Dir,
    LinkRefused,
    OutputDataInvalid,
    Outputs,
    OutputSaveFailed,
    check_dir,
    encode_manifest,
    manifest_path,
    open_outputs_root,
    open_staging,
    opened_for_writing,
    os_error,
    os_reason,
    outputs_lock,
)
from ..ipynb import join_text
from ..read import JSON_KIND, TEXT_KIND, kind_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "INLINE_TEXT_LIMIT",
    "StagedRun",
    "new_run_id",
    "publish_run",
    "stage_run",
]

#: Text up to this many characters stays inside the manifest.
INLINE_TEXT_LIMIT = 2048


def new_run_id(now_ns: int | None = None) -> str:
    """A run id that sorts by creation time: UTC to the nanosecond, then random bits.

    Example:
        >>> new_run_id(1_700_000_000_123_456_789)[:26]
        '20231114T221320.123456789Z'
    """
    now_ns = time.time_ns() if now_ns is None else now_ns
    seconds, nanos = divmod(now_ns, 1_000_000_000)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(seconds))
    return f"{stamp}.{nanos:09d}Z-{os.urandom(4).hex()}"


class StagedRun:
    """A run written into ``.staging``, ready to publish."""

    __slots__ = ("run_id", "outputs_dir", "staging", "final", "manifest", "items", "files", "dir")

    def __init__(self, run_id: str, outputs: str, manifest: dict[str, Any], items: list[dict[str, Any]]) -> None:
        self.run_id = run_id
        self.outputs_dir = outputs
        layout = Outputs(outputs)
        self.staging = layout.staged_dir(run_id)
        self.final = layout.run_dir(run_id)
        self.manifest = manifest
        self.items = items
        self.files: list[str] = []
        #: The open staging directory of this run, while it is being written.
        self.dir: Dir | None = None

    @property
    def manifest_path(self) -> str:
        return manifest_path(self.final)


def _owner() -> dict[str, Any]:
    from ..base import ProcessRecord

    return ProcessRecord.current().to_dict()


def stage_run(
    cwd: str,
    outputs: list[dict[str, Any]],
    *,
    source: dict[str, Any],
    status: str,
    created_ns: int,
    run_id: str | None = None,
    completed_ns: int | None = None,
    stall: Callable[[str], None] | None = None,
) -> StagedRun:
    """Record the writer, write every payload, then the manifest, into ``.staging/<run-id>/``.

    Binary data lives only in real files, never also as base64 in the manifest.
    Returns the staged run with one item per stored payload (paths point at
    where the files will be once published). ``stall`` (tests) is called
    with ``"inline:staging"`` once the writer record and the first payload
    are on disk.

    Raises:
        OutputSaveFailed: anything could not be written; the staged directory
            was removed, or ``staging_left`` names it when even that failed.
        WorkspaceUnsafe: ``.j-cli``, ``outputs`` or ``.staging`` is owned or
            writable by another user (nothing was written).
    """
    outputs_path = Outputs.of_workspace(cwd).root
    run_id = run_id or new_run_id(created_ns)
    staged = StagedRun(run_id, outputs_path, {}, [])
    with opened_for_writing(cwd) as outputs_dir:
        try:
            staging = open_staging(outputs_dir)
        except LinkRefused as exc:
            raise OutputSaveFailed(f"{exc.describe()}; refusing to stage a run there", path=exc.filename) from None
        except OSError as exc:
            raise os_error(exc, "write", f"the run under {outputs_path}", path=outputs_path) from None
        created = False
        with staging:
            try:
                staging.mkdir(run_id)
                created = True
                with staging.sub(run_id) as run_dir:
                    staged.dir = check_dir(run_dir, "staged run directory")
                    run_dir.write_new(WRITER_RECORD, encode_manifest({"managed_by": MANAGED_BY, "writer": _owner()}))
                    entries = []
                    for index, output in enumerate(outputs):
                        entries.append(_stage_output(staged, index, output))
                        if stall is not None and len(entries) == 1:
                            stall("inline:staging")
                    staged.manifest = {
                        "managed_by": MANAGED_BY,
                        "schema_version": SCHEMA_VERSION,
                        "run_id": run_id,
                        "created_ns": created_ns,
                        "completed_ns": time.time_ns() if completed_ns is None else completed_ns,
                        "status": status,
                        "owner": _owner(),
                        "cwd": cwd,
                        "source": source,
                        "outputs": entries,
                        "files": sorted(staged.files),
                    }
                    run_dir.write_new(MANIFEST_TMP, encode_manifest(staged.manifest))
                    run_dir.rename(MANIFEST_TMP, run_dir, MANIFEST)
                    _drop_writer_record(run_dir)
            except OSError as exc:
                error = os_error(exc, "write", f"the run under {outputs_path}", path=outputs_path)
                if created:
                    _remove_failed_stage(staging, run_id, error)
                raise error from None
            except BaseException:
                if created:
                    _remove_failed_stage(staging, run_id, None)
                raise
            finally:
                staged.dir = None
    return staged


def _drop_writer_record(run_dir: Dir) -> None:
    """The manifest (with its ``owner``) is in place: the writer record has done its job.

    Best effort: a record left behind is harmless (retention counts it as
    part of the run).
    """
    try:
        run_dir.unlink(WRITER_RECORD)
    except OSError:  # best effort (above): a record left behind is harmless
        pass


def _remove_failed_stage(staging: Dir, run_id: str, error: Any) -> None:
    """Remove this stage's own directory after a failure; say so on ``error`` when it cannot be removed."""
    try:
        staging.remove_tree(run_id)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if error is not None:
            left = staging.join(run_id)
            error.details["staging_left"] = left
            error.message += f"; its partial files could not be removed from {left} ({os_reason(exc)}): j-cli output clean removes them"
            error.args = (error.message,)


def _write(staged: StagedRun, name: str, data: bytes) -> str:
    assert staged.dir is not None  # only while staging
    staged.dir.write_new(name, data)
    staged.files.append(name)
    return os.path.join(staged.final, name)


def _stage_output(staged: StagedRun, index: int, output: dict[str, Any]) -> dict[str, Any]:
    kind = output.get("output_type")
    entry: dict[str, Any] = {"output_type": kind}
    if kind == "stream":
        text = join_text(output.get("text", ""), "stream text")
        entry["name"] = output.get("name")
        if len(text) > INLINE_TEXT_LIMIT:
            name = f"output-{index:04d}-{entry['name']}.txt"
            data = text.encode("utf-8", "surrogatepass")
            path = _write(staged, name, data)
            entry["text"] = {"file": name, "bytes": len(data)}
            staged.items.append(
                {"type": "stream", "output_index": index, "mime": "text/plain", "path": path, "bytes": entry["text"]["bytes"]}
            )
        else:
            entry["text"] = {"inline": text}
        return entry
    if kind == "error":
        entry.update({k: output.get(k) for k in ("ename", "evalue", "traceback")})
        return entry
    entry["metadata"] = output.get("metadata") or {}
    if kind == "execute_result":
        entry["execution_count"] = output.get("execution_count")
    bundle = {}
    for number, (mime, value) in enumerate((output.get("data") or {}).items()):
        bundle[mime] = _stage_value(staged, index, number, mime, value)
    entry["data"] = bundle
    return entry


def _stage_value(staged: StagedRun, index: int, number: int, mime: str, value: Any) -> dict[str, Any]:
    kind = kind_of(mime, value)
    try:
        data = kind.payload(mime, value)
    except OutputDataInvalid:
        return {"inline": value, "invalid": True}  # kept as the kernel sent it
    if kind is JSON_KIND and len(data) <= INLINE_TEXT_LIMIT:
        return {"inline": value}
    if kind is TEXT_KIND and mime == "text/plain":
        text = join_text(value, mime)
        if len(text) <= INLINE_TEXT_LIMIT:  # characters, as the kernel sent them
            return {"inline": text}
    name = f"output-{index:04d}-{number}.{kind.extension(mime)}"
    path = _write(staged, name, data)
    staged.items.append({"type": kind.item_type(mime), "output_index": index, "mime": mime, "path": path, "bytes": len(data)})
    ref = {"file": name, "bytes": len(data)}
    if kind.manifest_encoding is not None:
        ref["encoding"] = kind.manifest_encoding
    return ref


def _has_manifest(parent: Dir, run_id: str) -> bool:
    """``<run_id>/manifest.json`` in ``parent`` is a real file in a real directory (links refused)."""
    try:
        with parent.sub(run_id) as run_dir:
            return run_dir.is_file(MANIFEST)
    except FileNotFoundError:
        return False
    except LinkRefused as exc:
        raise OutputSaveFailed(f"{exc.describe()}; refusing to publish over it", run_id=run_id) from None


def publish_run(outputs: str, run_id: str, policy: Any = None, *, now_ns: int | None = None) -> dict[str, Any]:
    """Move a staged run into place under the outputs lock, then apply retention.

    Idempotent: a run whose manifest is already in place counts as
    published (a sidecar may have finished it before dying). Retention runs
    under the same lock and never deletes this run; if it fails, the publish
    still succeeds, with a bounded warning.

    Returns:
        ``{"manifest": path, "warnings": [...], "cleaned": n}``.

    Raises:
        OutputSaveFailed: it is neither staged nor published, or the rename failed.
        PermissionError: the directory cannot be written by this process.
    """
    if "/" in run_id or run_id in ("", ".", "..") or run_id.startswith("."):
        raise OutputSaveFailed(f"{run_id!r} is not a run id")
    manifest = manifest_path(Outputs(outputs).run_dir(run_id))
    result: dict[str, Any] = {"manifest": manifest, "warnings": [], "cleaned": 0}
    try:
        outputs_dir = open_outputs_root(outputs)
    except LinkRefused as exc:
        raise OutputSaveFailed(f"{exc.describe()}; refusing to publish", path=exc.filename) from None
    with outputs_dir:
        try:
            lock = outputs_lock(outputs_dir)
        except LinkRefused as exc:
            raise OutputSaveFailed(f"{exc.filename} is a symlink; refusing to lock through it", path=exc.filename) from None
        with lock:
            _move_into_place(outputs_dir, run_id)
            if policy is not None:
                _auto_clean(outputs_dir, run_id, policy, now_ns, result)
    return result


def _move_into_place(outputs_dir: Dir, run_id: str) -> None:
    """Rename the staged run into ``outputs`` unless it is already there (the caller holds the lock)."""
    if _has_manifest(outputs_dir, run_id):
        return
    try:
        staging = open_staging(outputs_dir)
    except LinkRefused as exc:
        raise OutputSaveFailed(f"{exc.describe()}; refusing to publish from it", run_id=run_id) from None
    with staging:
        if not _has_manifest(staging, run_id):
            raise OutputSaveFailed(f"run {run_id} is not staged (no manifest in .staging)", run_id=run_id)
        staging.rename(run_id, outputs_dir, run_id)


def _auto_clean(outputs_dir: Dir, run_id: str, policy: Any, now_ns: int | None, result: dict[str, Any]) -> None:
    """Retention after a publish, under the same lock; it never fails the publish."""
    from .retention import clean_in

    try:
        report = clean_in(outputs_dir, policy, keep={run_id}, now_ns=now_ns)
        result["cleaned"] = report["totals"]["deleted"]
        if report["errors"]:
            result["warnings"].append(f"automatic cleaning left {len(report['errors'])} run(s) it could not delete")
    except Exception as exc:  # a failed auto-clean never fails the publish
        result["warnings"].append(f"automatic cleaning failed: {type(exc).__name__}: {str(exc)[:200]}")
