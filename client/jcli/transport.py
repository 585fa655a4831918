"""How a thin client reaches the core: the workspace sidecar, or in-process.

The policy, in one place:

1. ``JCLI_SIDECAR=off``: always in-process.
2. A sidecar answers: use it.
3. Otherwise read in-process now, and start a sidecar in the background for
   the next call, but only if the runtime dir is (or can be made) ours and
   private, and short enough for its socket. That spawn is the only side
   effect a read may have, and it happens outside the workspace.
4. A sidecar that runs but missed its hello (stopped, stuck) is left alone:
   read in-process at once, start none beside it, and do not ask it again
   until it proves alive (``jcli_sidecar.sidecar.liveness``).

Both paths give the same document; the sidecar's carries image bytes as
``bytes``, which ``emit`` prints as the same base64.
"""

from __future__ import annotations

import os

from jcli_sidecar.base import JcliError, SidecarPaths, SidecarUnavailable, disabled, ensure_runtime_dir, os_error, workspace_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["exec_inline", "publish", "read"]


def read(request: dict[str, Any], op: str = "notebook.read") -> dict[str, Any]:
    """Answer a read request (see ``jcli_sidecar.read.requests``).

    Args:
        request: the read request map.
        op: ``"notebook.read"``, or ``"notebook.list"`` for a catalog.

    Raises:
        jcli_sidecar.base.errors.JcliError: a coded error about the request.
    """
    if disabled():
        return _direct(request, op)
    paths = _sidecar_paths()
    if paths is None:
        return _direct(request, op)
    from jcli_sidecar.sidecar import call

    try:
        answer = call(paths, op, request)
        if isinstance(answer, dict) and answer.get("grep_budget"):
            return _direct(request, op)  # a search longer than the sidecar's budget: here, without a deadline
        return answer
    except SidecarUnavailable as exc:
        if exc.details.get("unresponsive"):
            return _direct(request, op)  # one runs, but does not answer: none is started beside it
    try:
        return _direct(request, op)
    finally:
        _spawn_for_next_time(paths)


def _sidecar_paths() -> SidecarPaths | None:
    """The workspace's sidecar paths, or None when no sidecar may be used."""
    try:
        workspace = workspace_of()
    except OSError:
        return None  # the cwd is gone; the in-process read reports what is missing
    try:
        directory = ensure_runtime_dir(create=False)
    except FileNotFoundError:
        directory = None  # nothing has run yet; a spawn may create it
    except (OSError, JcliError):
        return None  # not ours, or not private: never used
    paths = SidecarPaths(workspace, directory)
    return paths if paths.socket_fits() else None  # a sidecar could not bind there: never started, never asked


def _direct(request: dict[str, Any], op: str) -> dict[str, Any]:
    from jcli_sidecar.read import HANDLERS

    return HANDLERS[op](request)


def _spawn_for_next_time(paths: SidecarPaths) -> None:
    try:
        ensure_runtime_dir(create=True)
        from jcli_sidecar.sidecar import spawn_detached

        spawn_detached(paths)
    except (OSError, JcliError):
        pass  # no sidecar this time; the read itself already succeeded or failed on its own


def exec_inline(request: dict[str, Any], *, result, on_output, stop, direct):
    """Run inline code: through the sidecar, which holds the kernel connection, else in-process.

    ``direct()`` is the in-process run. It is used when the sidecar is off,
    cannot be used, or failed before the code went to the kernel (a sidecar
    is then started for the next call); never after, so code never runs
    twice. Both return ``(session, failure)`` with ``result`` filled in
    (see :func:`jcli_sidecar.sidecar.exec_client.exec_through`).
    """
    if disabled():
        return direct()
    paths = _sidecar_paths()
    if paths is None:
        return direct()
    from jcli_sidecar.sidecar import exec_through

    try:
        return exec_through(paths, request, result=result, on_output=on_output, stop=stop)
    except SidecarUnavailable as exc:
        if exc.details.get("unresponsive"):
            return direct()  # one runs, but does not answer: none is started beside it
    try:
        return direct()
    finally:
        _spawn_for_next_time(paths)


def hand_over(path: str, index) -> bool:
    """Offer the workspace's sidecar the offset index a run's write-back left (``notebook.adopt``); True when it took it.

    Best effort and never a start: no sidecar, a busy or refusing one, or
    any trouble is False, and its next read of the notebook indexes it.
    """
    if index is None or disabled():
        return False
    paths = _sidecar_paths()
    if paths is None:
        return False
    from jcli_sidecar.ipynb import index_to_wire
    from jcli_sidecar.sidecar import call

    try:
        answer = call(paths, "notebook.adopt", {"file_path": os.path.realpath(path), "index": index_to_wire(index)}, timeout=10.0)
    except (JcliError, OSError):
        return False
    return bool(isinstance(answer, dict) and answer.get("adopted"))


def publish(cwd: str, run_id: str, policy) -> dict:
    """Publish a staged run and apply ``policy``; returns ``{manifest, warnings, cleaned}``.

    Through the sidecar when one answers (it holds the outputs lock and
    renames); in-process otherwise, or when the sidecar died mid-way or may
    not write here. The result on disk is the same either way.

    Raises:
        OutputSaveFailed: the run could not be published.
    """
    from jcli_sidecar.base import Outputs, OutputSaveFailed
    from jcli_sidecar.runs import publish_run

    paths = None if disabled() else _sidecar_paths()
    if paths is not None:
        from jcli_sidecar.sidecar import call

        try:
            return call(paths, "run.publish", {"cwd": cwd, "run_id": run_id, "policy": policy.to_wire()})
        except SidecarUnavailable:
            pass
        except OutputSaveFailed as exc:
            if not exc.details.get("permission"):
                raise
    try:
        return publish_run(Outputs.of_workspace(cwd).root, run_id, policy)
    except OSError as exc:
        raise os_error(exc, "publish", run_id, run_id=run_id) from None
