"""The sidecar's operations: one handler each, registered with :func:`op`.

A handler is a plain function ``handler(sidecar, args) -> result``. Slow
ones (file reads, parsing) are marked ``blocking`` and run off the event
loop. A ``streaming`` one (``kernel.exec``) is called as
``handler(sidecar, args, send)`` on a thread of its own, with no deadline
(a run lasts as long as its own timeout allows); ``send(event)`` delivers
an event frame to the client, waiting until it is written. The handshake (``hello``) belongs to the connection and lives in the
server; everything else is here, so a new op is one handler plus its test.
"""

from __future__ import annotations

import os
import signal

from ..base.errors import ProtocolError
from ..base.os_errors import os_error
from ..read.requests import handle_list, handle_read

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    from .held_jobs import HeldJobs
    from .held_kernels import HeldKernels

    class Sidecar(Protocol):
        """What a handler may use of the running sidecar (``server.Sidecar``).

        Spelled out here, so that this module needs nothing from the server
        that imports it.
        """

        workspace: str | None
        kernels: HeldKernels
        jobs: HeldJobs

        def load(self, path: str) -> Any: ...
        def forget(self, path: str) -> None: ...
        def stats(self) -> dict[str, Any]: ...
        def request_stop(self, reason: str) -> None: ...
        def stall(self, point: str) -> None: ...

    Handler = Callable[[Sidecar, dict[str, Any]], Any]

__all__ = ["OPS", "STREAMING_OPS", "op", "streaming_op"]

#: op name -> (handler, blocking)
OPS: dict[str, tuple[Handler, bool]] = {}
#: Streaming ops: op name -> handler(sidecar, args, send)
STREAMING_OPS: dict[str, Callable[..., Any]] = {}


def op(name: str, *, blocking: bool = False) -> Callable[[Handler], Handler]:
    """Register ``handler`` as the sidecar op ``name``."""

    def register(handler: Handler) -> Handler:
        if name in OPS or name in STREAMING_OPS:
            raise ValueError(f"op {name!r} is registered twice")
        OPS[name] = (handler, blocking)
        return handler

    return register


def streaming_op(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``handler(sidecar, args, send)`` as the streaming op ``name``."""

    def register(handler: Callable[..., Any]) -> Callable[..., Any]:
        if name in OPS or name in STREAMING_OPS:
            raise ValueError(f"op {name!r} is registered twice")
        STREAMING_OPS[name] = handler
        return handler

    return register


@op("ping")
def ping(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Liveness: ``{"pong": true}``."""
    return {"pong": True}


@op("stats")
def stats(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """pid, uptime, requests served, connections, and the cache counters."""
    return sidecar.stats()


@op("notebook.list", blocking=True)
def notebook_list(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """The catalog of one cell (a read request without ``output_index``)."""
    return handle_list(args, binary=True, load=sidecar.load)


@op("notebook.read", blocking=True)
def notebook_read(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """One output (or the catalog), with image bytes as msgpack ``bin``."""
    return handle_read(args, binary=True, load=sidecar.load)


@op("notebook.grep", blocking=True)
def notebook_grep(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Lines of notebook sources and text outputs that match, through the cached offset indexes.

    A search that would outlast half the request deadline stops and answers
    ``{"grep_budget": true}`` (the client then searches in-process), so a
    big tree never makes the sidecar retire. (Not an error: a ``TIMEOUT``
    raised here would read as the deadline itself.)
    """
    from ..base.errors import Timeout
    from ..base.settings import setting
    from ..read.nbgrep import handle_grep

    try:
        return handle_grep(args, load=sidecar.load, budget=setting("JCLI_SIDECAR_REQUEST_SECONDS") / 2)
    except Timeout as exc:
        if not exc.details.get("grep_budget"):
            raise
        return {"grep_budget": True}


@op("notebook.adopt", blocking=True)
def notebook_adopt(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """A j-cli writer's offset index of a notebook it has just written: ``{adopted}``.

    Kept (:func:`~jcli_sidecar.ipynb.nbindex.adopt`) only when it is well
    formed (spans in order, each within the one holding it and the file)
    and the file at ``file_path`` is, right now, the very version the index
    names (its ``fstat`` key); the next read of that version then builds
    nothing. Any other write changes the key, and the index is never used.
    """
    from ..base.readfile import stat_regular
    from ..ipynb.nbindex import adopt, index_from_wire, stat_key

    path = args.get("file_path")
    if not isinstance(path, str) or not os.path.isabs(path):
        raise ProtocolError("notebook.adopt needs an absolute file_path")
    try:
        index = index_from_wire(args.get("index"))
    except ValueError:
        return {"adopted": False}  # not an index: the next read builds one
    real = os.path.realpath(path)
    try:
        current = stat_key(stat_regular(real))
    except (OSError, ValueError):
        return {"adopted": False}
    if current != index.key:
        return {"adopted": False}
    adopt(index)
    sidecar.forget(real)
    return {"adopted": True}


@op("run.publish", blocking=True)
def run_publish(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Publish a run the client staged: rename it into place under the outputs lock,
    then apply the retention policy the client sent.

    The sidecar writes nothing itself; a permission problem is reported as
    such, so the client finishes in-process with its own rights.
    """
    from ..base.layout import Outputs
    from ..runs.retention import Policy
    from ..runs.store import publish_run

    cwd, run_id = args.get("cwd"), args.get("run_id")
    policy = Policy.from_wire(args.get("policy"))  # the client's, never this process's environment
    if not isinstance(cwd, str) or not isinstance(run_id, str):
        raise ProtocolError("run.publish needs cwd and run_id")
    if os.path.realpath(cwd) != sidecar.workspace:
        raise ProtocolError("run.publish is only for this sidecar's workspace")
    sidecar.stall("run.publish:before-rename")
    try:
        result = publish_run(Outputs.of_workspace(cwd).root, run_id, policy)
    except PermissionError as exc:
        raise os_error(exc, "sidecar-publish", permission=True) from None
    sidecar.stall("run.publish:after-rename")
    return result


@streaming_op("kernel.exec")
def kernel_exec(sidecar: Sidecar, args: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run code in a session's kernel over a held connection; outputs stream back as events."""
    from .held_kernels import run_streamed

    return run_streamed(sidecar.kernels, args, send)


@op("kernel.stop")
def kernel_stop(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """A client's SIGINT or SIGTERM for its run ``{run_id, signal}``: ``{stopped}`` (false: no such run)."""
    run_id, signum = args.get("run_id"), args.get("signal")
    if not isinstance(run_id, str) or signum not in (signal.SIGINT, signal.SIGTERM):
        raise ProtocolError("kernel.stop needs run_id and signal (SIGINT or SIGTERM, as a number)")
    return {"stopped": sidecar.kernels.stop_run(run_id, signum)}


@op("job.start", blocking=True)
def job_start(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Start a background job (``exec --background``): ``{job_id, status, session, kind, file, cells}`` at once.

    The run goes on on a thread of this sidecar, whatever becomes of the
    client; its record is ``.j-cli/jobs/<job-id>/`` (see docs/jobs.md).
    """
    return sidecar.jobs.start(args, sidecar.workspace)


@op("job.cancel")
def job_cancel(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Interrupt a job this sidecar holds: ``{job_id, cancelling}`` (false: it holds no such job)."""
    job_id = args.get("job_id")
    if not isinstance(job_id, str):
        raise ProtocolError("job.cancel needs job_id")
    return sidecar.jobs.cancel(job_id)


@op("shutdown")
def shutdown(sidecar: Sidecar, args: dict[str, Any]) -> dict[str, Any]:
    """Stop after answering; in-flight requests are abandoned."""
    sidecar.request_stop("shutdown requested")
    return {"stopping": True}
