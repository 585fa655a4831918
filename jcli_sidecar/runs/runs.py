"""Reading inline runs back: ``j-cli output list`` and ``j-cli output show``.

A run is named by its id (a directory in ``<cwd>/.j-cli/outputs``) or by a
path to its ``manifest.json`` (or its directory). Payload files are joined
onto the run directory by a helper that refuses any escape, so a manifest
can never make a read leave its run. Manifests and payloads are read like
notebooks: regular files only, never blocking, capped
(:func:`jcli_sidecar.base.readfile.read_regular`). Reads write nothing.

A run is served only when nobody but this user (or root) could have written
it (:mod:`jcli_sidecar.base.trust`): ``.j-cli`` and ``outputs`` above it,
the run directory, its manifest and every payload are checked, top down,
before they are used; otherwise ``WORKSPACE_UNSAFE``.
"""

from __future__ import annotations

import os

from ..base import (
    JCLI_DIR,
    OUTPUTS_DIR,
    SCHEMA_VERSION,
    FileTooLarge,
    JcliError,
    OutputDataInvalid,
    Outputs,
    PathNotAllowed,
    RunNotFound,
    UsageError,
    check_file_name,
    check_stat,
    manifest_path,
    os_error,
    parse_manifest,
    read_regular,
    trusted_stat,
)
from ..read import DEFAULT_QUERY, OutputQuery, catalog_envelope, fit_response, kind_of_manifest_ref, output_envelope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["join_within", "list_runs", "read_run", "resolve_run"]


def join_within(base: str, name: str) -> str:
    """``base/name``, refusing absolute names and anything that leaves ``base``.

    Raises:
        OutputDataInvalid: the name escapes.

    Example:
        >>> join_within("/runs/r1", "output-0001-0.png")
        '/runs/r1/output-0001-0.png'
    """
    if not isinstance(name, str) or not name or os.path.isabs(name) or "\x00" in name:
        raise OutputDataInvalid(f"manifest names an invalid file {name!r}")
    base = os.path.realpath(base)
    joined = os.path.realpath(os.path.join(base, name))
    if os.path.commonpath([base, joined]) != base or joined == base:
        raise OutputDataInvalid(f"manifest file {name!r} points outside its run")
    return joined


def _trusted_parents(run_dir: str) -> None:
    """Refuse a run whose ``outputs`` or ``.j-cli`` (the real ones above ``run_dir``) another user owns or can write.

    Raises:
        WorkspaceUnsafe: see :func:`jcli_sidecar.base.trust.check_stat`.
    """
    outputs = os.path.dirname(run_dir)
    jcli = os.path.dirname(outputs)
    if os.path.basename(outputs) != OUTPUTS_DIR or os.path.basename(jcli) != JCLI_DIR:
        return  # a run copied elsewhere: only its own directory and files are judged
    for path, what in ((jcli, ".j-cli"), (outputs, "outputs")):
        try:
            trusted_stat(path, what)
        except OSError:
            continue  # gone meanwhile: the reads below say so


def _load_manifest(path: str) -> dict[str, Any]:
    """The manifest at ``path``; it and its directory must pass the trust rule.

    Raises:
        RunNotFound, OutputDataInvalid, WorkspaceUnsafe.
    """
    try:
        trusted_stat(os.path.dirname(path), "run directory")
        raw, info = read_regular(path)
    except (FileNotFoundError, NotADirectoryError):
        raise RunNotFound(f"{path}: no such run; it may have been cleaned", path=path) from None
    except OSError as exc:  # a directory, a FIFO or device, too large, no permission
        raise os_error(exc, "run", path, path=path) from None
    check_stat(info, path, "run manifest")
    try:
        manifest = parse_manifest(raw)
    except ValueError as exc:
        raise OutputDataInvalid(f"{path}: {exc}") from None
    if not isinstance(manifest.get("outputs"), list):
        raise OutputDataInvalid(f"{path}: the manifest has no output list")
    return manifest


def resolve_run(cwd: str, ref: str) -> tuple[str, dict[str, Any]]:
    """``(run_dir, manifest)`` for a run id, a manifest path or a run directory.

    ``run_dir`` is the real directory (links on the way resolved); payloads
    are read only from inside it (:func:`join_within`), and a manifest that
    is itself a symlink is refused.

    Raises:
        RunNotFound: no such run (it may have been cleaned).
        OutputDataInvalid: the manifest is broken.
    """
    if not isinstance(ref, str) or not ref:
        raise UsageError("give a run id or a manifest path")
    check_file_name(ref, "run")
    if os.sep in ref or ref.endswith(".json"):
        path = os.path.abspath(ref)
        if os.path.isdir(path):
            path = manifest_path(path)
    else:
        if not Outputs.is_run_name(ref):
            raise RunNotFound(f"{ref!r} is not a run id")
        path = manifest_path(Outputs.of_workspace(cwd).run_dir(ref))
    if not os.path.isfile(path):
        raise RunNotFound(f"run {ref} not found; it may have been cleaned (see j-cli output list)", run=ref)
    if os.path.islink(path):  # j-cli never writes one: a manifest may not lead elsewhere
        raise RunNotFound(f"{path} is a symlink, not a run manifest j-cli wrote", path=path)
    run_dir = os.path.realpath(os.path.dirname(path))
    _trusted_parents(run_dir)
    return run_dir, _load_manifest(path)


def _materialise(run_dir: str, entry: Any, index: int) -> dict[str, Any]:
    """The nbformat-shaped output of one manifest entry, payload files loaded."""
    if not isinstance(entry, dict):
        raise OutputDataInvalid(f"manifest output {index} is not an object", output_index=index)
    kind = entry.get("output_type")
    if kind == "stream":
        return {"output_type": "stream", "name": entry.get("name"), "text": _value(run_dir, entry.get("text"), index)}
    if kind == "error":
        return {k: entry.get(k) for k in ("output_type", "ename", "evalue", "traceback")}
    data = entry.get("data")
    if not isinstance(data, dict):
        raise OutputDataInvalid(f"manifest output {index} has no data", output_index=index)
    out = {
        "output_type": kind,
        "metadata": entry.get("metadata") or {},
        "data": {mime: _value(run_dir, ref, index) for mime, ref in data.items()},
    }
    if kind == "execute_result":
        out["execution_count"] = entry.get("execution_count")
    return out


def _value(run_dir: str, ref: Any, index: int) -> Any:
    if not isinstance(ref, dict):
        raise OutputDataInvalid(f"manifest output {index} has a malformed value", output_index=index)
    if "inline" in ref:
        return ref["inline"]
    path = join_within(run_dir, ref.get("file"))
    try:
        raw, info = read_regular(path)
    except (FileNotFoundError, NotADirectoryError):
        raise RunNotFound(f"{path}: payload missing; the run may have been cleaned", path=path) from None
    except FileTooLarge as exc:
        raise os_error(exc, "payload-size", path, output_index=index) from None
    except OSError as exc:  # a directory, a FIFO or device, no permission
        raise os_error(exc, "payload", path, output_index=index) from None
    check_stat(info, path, "run payload")
    try:
        return kind_of_manifest_ref(ref, path).load(raw)
    except ValueError as exc:  # not UTF-8, not JSON, nested too deeply
        raise OutputDataInvalid(f"{path}: the payload is damaged ({type(exc).__name__})", output_index=index) from None


def _source(run_dir: str, manifest: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "run",
        "run_id": manifest.get("run_id"),
        "manifest": manifest_path(run_dir),
        "execution_count": (manifest.get("source") or {}).get("execution_count"),
        "created_ns": manifest.get("created_ns"),
    }


def read_run(
    cwd: str, ref: str, output_index: int | None = None, query: OutputQuery = DEFAULT_QUERY, *, roots: list[str] | None = None
) -> dict[str, Any]:
    """The catalog of a run, or one of its outputs: the notebook envelope with ``source.kind = "run"``.

    ``query`` is what :func:`jcli_sidecar.read.reader.read_output` takes (a
    view converts the selected image there too). With ``roots`` (real
    paths), the run's real directory, and so its manifest and every payload,
    must lie under one of them.

    Raises:
        RunNotFound, OutputNotFound, MimeNotFound, InvalidWindow,
        OutputDataInvalid, OutputTooLarge, UsageError, PathNotAllowed.
    """
    from ..base import OutputNotFound

    run_dir, manifest = resolve_run(cwd, ref)
    if roots is not None and not any(os.path.commonpath([root, run_dir]) == root for root in roots):
        raise PathNotAllowed(f"run {ref} lies outside the allowed roots (its directory is {run_dir})", roots=roots)
    entries = manifest["outputs"]
    source = _source(run_dir, manifest)
    if output_index is None:
        outputs = [_materialise(run_dir, entry, i) for i, entry in enumerate(entries)]
        return fit_response(catalog_envelope(outputs, source), query)
    if not isinstance(output_index, int) or isinstance(output_index, bool) or output_index < 0:
        raise UsageError(f"output index must be an integer >= 0, got {output_index!r}")
    if output_index >= len(entries):
        raise OutputNotFound(
            f"run {manifest.get('run_id')} has no output {output_index} (it has {len(entries)})", output_count=len(entries)
        )
    source["output_index"] = output_index
    raw = _materialise(run_dir, entries[output_index], output_index)
    return fit_response(output_envelope(raw, output_index, source, query), query)


def list_runs(cwd: str) -> dict[str, Any]:
    """Every published run in ``<cwd>/.j-cli/outputs``, newest first. Writes nothing.

    A run that fails (an unsafe one among them) is listed with its ``error``.

    Raises:
        WorkspaceUnsafe: ``.j-cli`` or ``outputs`` is owned or writable by another user.
    """
    root = Outputs.of_workspace(cwd).root
    runs: list[dict[str, Any]] = []
    try:
        trusted_stat(os.path.dirname(root), ".j-cli")
        trusted_stat(root, "outputs")
        names = sorted(os.listdir(root), reverse=True)
    except (FileNotFoundError, NotADirectoryError):
        names = []
    for name in names:
        if not Outputs.is_run_name(name):
            continue
        path = manifest_path(os.path.join(root, name))
        try:
            manifest = _load_manifest(path)
        except JcliError as exc:
            runs.append({"run_id": name, "error": {"code": exc.code, "message": exc.message}})
            continue
        runs.append(
            {
                "run_id": manifest.get("run_id"),
                "status": manifest.get("status"),
                "created_ns": manifest.get("created_ns"),
                "completed_ns": manifest.get("completed_ns"),
                "outputs": len(manifest["outputs"]),
                "files": len(manifest.get("files") or []),
                "manifest": path,
            }
        )
    return {"schema_version": SCHEMA_VERSION, "status": "ok", "outputs_dir": root, "runs": runs}
