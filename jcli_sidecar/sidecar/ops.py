"""The sidecar's operations: one handler each, registered with :func:`op` under its declaration.

Each op is declared once in :mod:`.op_table` (its name, request spec, core
function, whether it blocks or streams, and what happens without a
sidecar); here is what the sidecar does for it. A handler is a plain
function ``handler(sidecar, args) -> result``, given a request the server
has already checked against the op's spec. Blocking ones (file reads,
parsing) run off the event loop. A streaming one (``kernel.exec``) is
called as ``handler(sidecar, args, send)`` on a thread of its own, with no
deadline (a run lasts as long as its own timeout allows); ``send(event)``
delivers an event frame to the client, waiting until it is written. The
handshake (``hello``) belongs to the connection and lives in the server.
"""

from __future__ import annotations

import os
import signal

from ..base import ProtocolError, os_error
from ..read import answer_read, check_list_request
from . import op_table
from .op_table import OPS as DECLARED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    from .held_jobs import HeldJobs
    from .held_kernels import HeldKernels
    from .live_rooms import LiveRooms
    from .op_table import Op

    class Sidecar(Protocol):
        """What a handler may use of the running sidecar (``server.Sidecar``).

        Spelled out here, so that this module needs nothing from the server
        that imports it.
        """

        workspace: str | None
        kernels: HeldKernels
        jobs: HeldJobs
        rooms: LiveRooms

        def load(self, path: str) -> Any: ...
        def forget(self, path: str) -> None: ...
        def stats(self) -> dict[str, Any]: ...
        def request_stop(self, reason: str) -> None: ...
        def stall(self, point: str) -> None: ...

    Handler = Callable[..., Any]

__all__ = ["HANDLERS", "op"]

#: op name -> handler: ``handler(sidecar, args)``, or ``handler(sidecar, args, send)`` for a streaming op.
HANDLERS: dict[str, Handler] = {}


def op(declared: Op) -> Callable[[Handler], Handler]:
    """Register ``handler`` as what the sidecar does for the declared op."""

    def register(handler: Handler) -> Handler:
        if DECLARED.get(declared.name) is not declared:
            raise ValueError(f"op {declared.name!r} is not declared in op_table")
        if declared.name in HANDLERS:
            raise ValueError(f"op {declared.name!r} is registered twice")
        HANDLERS[declared.name] = handler
        return handler

    return register


@op(op_table.PING)
def ping(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Liveness: ``{"pong": true}``."""
    return {"pong": True}


@op(op_table.STATS)
def stats(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """pid, uptime, requests served, connections, and the cache counters."""
    return sidecar.stats()


@op(op_table.NOTEBOOK_LIST)
def notebook_list(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """The catalog of one cell (a read request without ``output_index``)."""
    return answer_read(check_list_request(args), binary=True, load=sidecar.load)


@op(op_table.NOTEBOOK_READ)
def notebook_read(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """One output (or the catalog), with image bytes as msgpack ``bin``."""
    return answer_read(args, binary=True, load=sidecar.load)


@op(op_table.NOTEBOOK_GREP)
def notebook_grep(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Lines of notebook sources and text outputs that match, through the cached offset indexes.

    A search that would outlast half the request deadline stops and answers
    ``{"grep_budget": true}`` (the client then searches in-process), so a
    big tree never makes the sidecar retire. (Not an error: a ``TIMEOUT``
    raised here would read as the deadline itself.)
    """
    from ..base import Timeout, setting
    from ..read import handle_grep

    try:
        return handle_grep(args, load=sidecar.load, budget=setting("JCLI_SIDECAR_REQUEST_SECONDS") / 2)
    except Timeout as exc:
        if not exc.details.get("grep_budget"):
            raise
        return {"grep_budget": True}


@op(op_table.NOTEBOOK_LOOK)
def notebook_look(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """``notebook summary`` or ``show`` of a notebook whose room a job of this sidecar holds: the shared document, as the
    person sees it; ``{here: true}`` for any other (the client reads the file itself, as fast as without a sidecar)."""
    from ..read import handle_look

    if not sidecar.rooms.holds_for(args["file_path"]):
        return {"here": True}
    return handle_look(args, notebook_of=sidecar.rooms.document)


@op(op_table.NOTEBOOK_ADOPT)
def notebook_adopt(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """A j-cli writer's offset index of a notebook it has just written: ``{adopted}``.

    Kept (:func:`~jcli_sidecar.ipynb.nbindex.adopt`) only when it is well
    formed (spans in order, each within the one holding it and the file)
    and the file at ``file_path`` is, right now, the very version the index
    names (its ``fstat`` key); the next read of that version then builds
    nothing. Any other write changes the key, and the index is never used.
    """
    from ..base import stat_regular
    from ..ipynb import adopt, index_from_wire, stat_key

    path = args["file_path"]
    if not os.path.isabs(path):
        raise ProtocolError("notebook.adopt needs an absolute file_path")
    try:
        index = index_from_wire(args.get("index"))
    except ValueError:
        return {"adopted": False}  # not an index: the next read builds one
    real = os.path.realpath(path)
    try:
        current = stat_key(stat_regular(real))
    except (OSError, ValueError):  # gone, or not a regular file: not adopted, the next read builds its own index
        return {"adopted": False}
    if current != index.key:
        return {"adopted": False}
    adopt(index)
    sidecar.forget(real)
    return {"adopted": True}


@op(op_table.RUN_PUBLISH)
def run_publish(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Publish a run the client staged: rename it into place under the outputs lock,
    then apply the retention policy the client sent.

    The sidecar writes nothing itself; a permission problem is reported as
    such, so the client finishes in-process with its own rights.
    """
    from ..base import Outputs
    from ..runs import Policy, publish_run

    cwd, run_id = args["cwd"], args["run_id"]
    policy = Policy.from_wire(args.get("policy"))  # the client's, never this process's environment
    if os.path.realpath(cwd) != sidecar.workspace:
        raise ProtocolError("run.publish is only for this sidecar's workspace")
    sidecar.stall("run.publish:before-rename")
    try:
        result = publish_run(Outputs.of_workspace(cwd).root, run_id, policy)
    except PermissionError as exc:
        raise os_error(exc, "sidecar-publish", permission=True) from None
    sidecar.stall("run.publish:after-rename")
    return result


@op(op_table.KERNEL_EXEC)
def kernel_exec(sidecar: Sidecar, args: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run code in a session's kernel over a held connection; outputs stream back as events."""
    from .held_kernels import run_streamed

    return run_streamed(sidecar.kernels, args, send)


@op(op_table.KERNEL_STOP)
def kernel_stop(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """A client's SIGINT or SIGTERM for its run ``{run_id, signal}``: ``{stopped}`` (false: no such run)."""
    run_id, signum = args["run_id"], args["signal"]
    if signum not in (signal.SIGINT, signal.SIGTERM):
        raise ProtocolError("kernel.stop needs run_id and signal (SIGINT or SIGTERM, as a number)")
    return {"stopped": sidecar.kernels.stop_run(run_id, signum)}


@op(op_table.JOB_START)
def job_start(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Start a background job (``exec --background``): ``{job_id, status, session, kind, file, cells}`` at once.

    The run goes on on a thread of this sidecar, whatever becomes of the
    client; its record is ``.j-cli/jobs/<job-id>/`` (see docs/jobs.md).
    """
    return sidecar.jobs.start(args, sidecar.workspace)


@op(op_table.JOB_CANCEL)
def job_cancel(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Interrupt a job this sidecar holds: ``{job_id, cancelling}`` (false: it holds no such job)."""
    return sidecar.jobs.cancel(args["job_id"])


@op(op_table.SHUTDOWN)
def shutdown(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Stop after answering; in-flight requests are abandoned."""
    sidecar.request_stop("shutdown requested")
    return {"stopping": True}


_missing = sorted(set(DECLARED) - set(HANDLERS))
if _missing:
    raise ValueError(f"declared op(s) without a handler: {', '.join(_missing)}")
