"""How a thin client reaches the core: the workspace sidecar, or in-process.

The policy, in one place (:func:`ask`, for every op of
``jcli_sidecar.sidecar.op_table``):

1. ``JCLI_SIDECAR=off``: never the sidecar.
2. A sidecar answers: use it.
3. Otherwise do as the op declares (``Op.without_sidecar``): in-process
   now, and for a read or a run start a sidecar in the background for the
   next call, but only if the runtime dir is (or can be made) ours and
   private, and short enough for its socket. That spawn is the only side
   effect a read may have, and it happens outside the workspace. An op only
   a sidecar can do starts one now, or is refused with its code; a best
   effort one is skipped.
4. A sidecar that runs but missed its hello (stopped, stuck) is left alone:
   work in-process at once, start none beside it, and do not ask it again
   until it proves alive (``jcli_sidecar.sidecar.liveness``).
5. A permission error from the sidecar (it may not write where this process
   may) means: do it in-process.

Both paths give the same document; the sidecar's carries image bytes as
``bytes``, which ``emit`` prints as the same base64.
"""

from __future__ import annotations

import os

from jcli_sidecar.base import JcliError, SidecarPaths, SidecarUnavailable, disabled, ensure_runtime_dir, os_error, workspace_of
from jcli_sidecar.sidecar import (
    IN_PROCESS,
    JOB_START,
    KERNEL_EXEC,
    NOTEBOOK_ADOPT,
    NOTEBOOK_READ,
    OPS,
    RUN_PUBLISH,
    SKIP,
    START,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from jcli_sidecar.sidecar import Op

__all__ = ["ask", "exec_inline", "hand_over", "publish", "read", "sidecar_for"]


def ask(
    op: Op,
    args: dict[str, Any],
    *,
    here: Callable[[], Any] | None = None,
    through: Callable[[SidecarPaths], Any] | None = None,
    paths: SidecarPaths | None = None,
    timeout: float | None = None,
) -> Any:
    """Do ``op``: through the workspace's sidecar when one answers, else as the op declares (see the module's policy).

    Args:
        op: the declaration (``jcli_sidecar.sidecar.op_table``).
        args: the request.
        here: the in-process work (default: the op's core function, given ``args``).
        through: the sidecar call (default: one request, one answer).
        paths: the sidecar to use (default: the workspace's; a :data:`START` op's from :func:`sidecar_for`).
        timeout: seconds to wait for the answer (default: the client's request timeout).

    Raises:
        JcliError: a coded error about the request; the op's refusal (:data:`START`);
            ``SIDECAR_UNAVAILABLE`` (:data:`REFUSE`).
    """
    if through is None:
        through = _one_call(op, args, timeout)
    if op.without_sidecar == START:
        return _started(op, paths or sidecar_for(op), through)
    if paths is None:
        paths = None if disabled() else _sidecar_paths()
    if paths is None:
        return _without(op, args, here, None)
    if op.without_sidecar == IN_PROCESS and not os.path.lexists(paths.socket):  # none runs: no client loaded, no connect
        return _without(op, args, here, paths)
    try:
        answer = through(paths)
    except SidecarUnavailable as exc:
        return _without(op, args, here, None if exc.details.get("unresponsive") else paths, exc)  # unresponsive: none beside it
    except JcliError as exc:
        if op.without_sidecar != IN_PROCESS or not exc.details.get("permission"):
            raise
        return _here(op, args, here)  # the sidecar may not write where this process may
    if op.here_when is not None and isinstance(answer, dict) and answer.get(op.here_when):
        return _here(op, args, here)  # e.g. a search longer than the sidecar's budget: here, without a deadline
    return answer


def _one_call(op: Op, args: dict[str, Any], timeout: float | None) -> Callable[[SidecarPaths], Any]:
    def through(paths: SidecarPaths) -> Any:
        from jcli_sidecar.sidecar import call

        return call(paths, op.name, args) if timeout is None else call(paths, op.name, args, timeout=timeout)

    return through


def _here(op: Op, args: dict[str, Any], here: Callable[[], Any] | None) -> Any:
    return op.core_function()(args) if here is None else here()


def _without(op: Op, args: dict[str, Any], here, spawn: SidecarPaths | None, why: SidecarUnavailable | None = None) -> Any:
    """``op`` with no sidecar answering: in-process (a sidecar started for next time when ``spawn``), skipped or refused."""
    if op.without_sidecar == SKIP:
        return None
    if op.without_sidecar != IN_PROCESS:
        raise why or SidecarUnavailable(
            f"{op.name} needs the workspace's sidecar, and none may run here (JCLI_SIDECAR=off, or the runtime dir)"
        )
    try:
        return _here(op, args, here)
    finally:
        if spawn is not None and op.spawn:
            _spawn_for_next_time(spawn)


def sidecar_for(op: Op) -> SidecarPaths:
    """The workspace's sidecar paths for an op only a sidecar can do (:data:`START`), before anything is done.

    Raises:
        JcliError: the op's refusal (``op.refuse``): the sidecar is off, or cannot live in the runtime dir.
    """
    from jcli_sidecar.base import error_from_code

    if disabled():
        raise error_from_code(
            op.refuse,
            f"{op.needed_by} needs the workspace's sidecar, and JCLI_SIDECAR=off disables it; unset JCLI_SIDECAR, or run without {op.needed_by}",
            reason="disabled",
        )
    try:
        paths = SidecarPaths(workspace_of(), ensure_runtime_dir(create=True))
        paths.check_socket()
    except (JcliError, OSError) as exc:
        why = exc.message if isinstance(exc, JcliError) else str(exc)
        raise error_from_code(
            op.refuse, f"{op.needed_by} needs the workspace's sidecar, which cannot run here: {why}", reason="runtime_dir"
        ) from None
    return paths


def _started(op: Op, paths: SidecarPaths, through: Callable[[SidecarPaths], Any]) -> Any:
    """``through(paths)``, starting the sidecar first when none answers.

    Raises:
        JcliError: the op's refusal: the sidecar did not start, or did not take the request.
    """
    from jcli_sidecar.base import error_from_code
    from jcli_sidecar.sidecar import start_sidecar

    try:
        return through(paths)
    except SidecarUnavailable:
        pass
    try:
        start_sidecar(paths)
    except JcliError as exc:
        raise error_from_code(
            op.refuse, f"{op.needed_by} needs the workspace's sidecar, which did not start: {exc.message}", reason="start"
        ) from None
    try:
        return through(paths)
    except SidecarUnavailable as exc:
        raise error_from_code(op.refuse, f"the workspace's sidecar did not take {op.name}: {exc.message}", reason="unavailable") from None


def read(request: dict[str, Any], op: Op | str = NOTEBOOK_READ) -> dict[str, Any]:
    """Answer a read request (see ``jcli_sidecar.read.requests``): :func:`ask` with the read op (or its name).

    Args:
        request: the read request map.
        op: ``NOTEBOOK_READ``, ``NOTEBOOK_LIST`` for a catalog, or ``NOTEBOOK_GREP``.

    Raises:
        jcli_sidecar.base.errors.JcliError: a coded error about the request.
    """
    return ask(OPS[op] if isinstance(op, str) else op, request)


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


def _spawn_for_next_time(paths: SidecarPaths) -> None:
    try:
        ensure_runtime_dir(create=True)
        from jcli_sidecar.sidecar import spawn_detached

        spawn_detached(paths)
    except (OSError, JcliError):
        pass  # no sidecar this time; the work itself already succeeded or failed on its own


def exec_inline(request: dict[str, Any], *, result, on_output, stop, direct):
    """Run inline code: through the sidecar, which holds the kernel connection, else in-process.

    ``direct()`` is the in-process run. It is used when the sidecar is off,
    cannot be used, or failed before the code went to the kernel (a sidecar
    is then started for the next call); never after, so code never runs
    twice. Both return ``(session, failure)`` with ``result`` filled in
    (see :func:`jcli_sidecar.sidecar.exec_client.exec_through`).
    """

    def through(paths: SidecarPaths):
        from jcli_sidecar.sidecar import exec_through

        return exec_through(paths, request, result=result, on_output=on_output, stop=stop)

    return ask(KERNEL_EXEC, request, here=direct, through=through)


def hand_over(path: str, index) -> bool:
    """Offer the workspace's sidecar the offset index a run's write-back left (``notebook.adopt``); True when it took it.

    Best effort and never a start: no sidecar, a busy or refusing one, or
    any trouble is False, and its next read of the notebook indexes it.
    """
    if index is None:
        return False
    from jcli_sidecar.ipynb import index_to_wire

    try:
        answer = ask(NOTEBOOK_ADOPT, {"file_path": os.path.realpath(path), "index": index_to_wire(index)}, timeout=10.0)
    except (JcliError, OSError):  # best effort (documented): False, and the next read indexes it
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

    def here() -> dict:
        from jcli_sidecar.base import Outputs
        from jcli_sidecar.runs import publish_run

        try:
            return publish_run(Outputs.of_workspace(cwd).root, run_id, policy)
        except OSError as exc:
            raise os_error(exc, "publish", run_id, run_id=run_id) from None

    return ask(RUN_PUBLISH, {"cwd": cwd, "run_id": run_id, "policy": policy.to_wire()}, here=here)


def start_job(args: dict[str, Any], paths: SidecarPaths) -> dict[str, Any]:
    """Hand a background run to the sidecar at ``paths`` (:func:`sidecar_for`), starting it if needed: ``job.start``'s answer.

    Raises:
        BackgroundUnavailable: the sidecar did not start, or did not take the job.
    """
    return ask(JOB_START, args, paths=paths)
