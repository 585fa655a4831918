"""One inline exec (``j-cli exec -c``), composed once: find the session, run the code, build its result, keep its outputs.

Every way an inline exec runs goes through here: in-process (``j-cli exec``
with no sidecar, or when the sidecar cannot be used) and in the sidecar
(``kernel.exec``, over a connection it holds). What differs is only how a
connection is opened and where output events go; the order of the steps,
what counts as "the code ran", and the error that says so are defined here.

- :func:`run_inline`: session → connection → display mode → execute.
  Before the code is sent a failure is raised (nothing ran); after, it is
  returned, coded and marked ``executed: true``, and ``result`` holds what
  the code printed until then.
- :func:`finish_inline`: after the send, the result document; rich or long
  outputs are staged in ``<cwd>/.j-cli/outputs`` and published (by the
  caller's ``publish``, which may go through a sidecar); a save that failed,
  a signal that came late, or a bug of ours still returns what ran.
"""

from __future__ import annotations

from ..base import JcliError, internal_error, stall_point
from .exec_result import build_result, needs_store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Any

    from .exec_result import ExecutionResult
    from .jupyter_api import JupyterServer
    from .kernel_client import KernelConnection
    from .stop_switch import StopSwitch

    #: Opens the connection one run uses: ``open_kernel(server, kernel_id)``. It sees the
    #: exception that ends a run badly (so a held connection is closed, not kept).
    OpenKernel = Callable[[JupyterServer, str], AbstractContextManager[KernelConnection]]
    #: Publishes a staged run: ``publish(cwd, run_id, policy) -> {manifest, warnings, ...}``.
    Publish = Callable[[str, str, Any], dict[str, Any]]

__all__ = ["finish_inline", "run_inline"]


def run_inline(
    server: JupyterServer,
    session_key: str,
    code: str,
    *,
    timeout: float | None,
    display_mode: str | None,
    result: ExecutionResult,
    stop: StopSwitch,
    on_output: Callable[..., None] | None = None,
    on_send: Callable[[dict[str, Any]], None] | None = None,
    open_kernel: OpenKernel | None = None,
) -> tuple[dict[str, Any], JcliError | None]:
    """Run ``code`` in the kernel of the session named ``session_key``.

    Args:
        timeout: seconds before the kernel is interrupted (already checked); None: no limit.
        display_mode: ``--display-mode`` (already checked), or None for the kernel's own.
        result: filled in place; ``result.sent`` says whether the code went out.
        stop: the run's stop switch (a signal interrupts the kernel).
        on_output: the kernel client's output hook (live printing, or events to a sidecar's client).
        on_send: called with the session just before the code goes out; if it raises, nothing is sent.
        open_kernel: how the connection is opened (None: a fresh
            :class:`~jcli_sidecar.kernel.kernel_client.KernelConnection`).

    Returns:
        ``(session, failure)``: the session summary, and None when the run
        ended cleanly, else the coded error that cut it short, with ``executed: true``.

    Raises:
        JcliError: anything before the code was sent (nothing ran), e.g. ``SESSION_NOT_FOUND``.
    """
    # here, not at the top: the client of a sidecar's run imports this module
    # for finish_inline, and needs neither the websocket nor the REST API
    from .display_mode import in_display_mode
    from .kernel_client import KernelConnection
    from .session_lookup import find_session

    session = find_session(server, session_key)
    sending = None if on_send is None else (lambda: on_send(session))
    try:
        with (
            (open_kernel or KernelConnection)(server, session["kernel_id"]) as kernel,
            in_display_mode(kernel, display_mode, notes=result.notes, stop=stop, timeout=timeout),
        ):
            kernel.execute(code, timeout=timeout, on_output=on_output, stop=stop, result=result, on_send=sending, describe_result=True)
    except Exception as exc:
        if not result.sent:
            raise
        failure = exc if isinstance(exc, JcliError) else internal_error(exc)
        failure.details["executed"] = True
        return session, failure
    return session, None


def finish_inline(
    result: ExecutionResult,
    failure: JcliError | None,
    session: dict[str, Any],
    code: str,
    *,
    started_ns: int,
    policy: Any,
    publish: Publish,
    stop: StopSwitch,
) -> tuple[dict[str, Any], JcliError | None]:
    """After the send: ``(document, failure)``; a failure carries the document as ``result`` (``executed: true``).

    ``policy`` is the retention policy applied when a run is published
    (resolved before the code ran); ``started_ns`` dates the run.
    """
    try:
        stall_point("inline:finished")
        doc = build_result(result, session_id=session["id"], kernel_id=session["kernel_id"], partial=failure is not None)
        try:
            doc = _keep_outputs(result, doc, session, code, started_ns, policy, publish)
        except Exception as exc:  # the code ran; only keeping its outputs failed: say both
            save_error = exc if isinstance(exc, JcliError) else internal_error(exc)
            if failure is None:
                failure = save_error
            else:
                failure.details["save_error"] = {"code": save_error.code, "message": save_error.message}
        if failure is None and stop.count:  # a signal while the result was being kept: it is complete
            failure = stop.interrupted("arrived after the code finished; its result is complete", executed=True)
    except Exception as exc:  # a bug after the code ran: still say that it ran, and what it printed
        failure = internal_error(exc)
        doc = build_result(result, session_id=session["id"], kernel_id=session["kernel_id"], partial=True)
    if failure is not None:
        failure.details.update(executed=True, result=doc)
    return doc, failure


def _keep_outputs(
    result: ExecutionResult, doc: dict[str, Any], session: dict[str, Any], code: str, started_ns: int, policy: Any, publish: Publish
) -> dict[str, Any]:
    """Keep rich (or long) outputs in ``<cwd>/.j-cli/outputs/<run-id>/``; short text keeps nothing.

    This process stages the files (a failed stage removes what it wrote);
    ``publish`` renames them into place and applies ``policy``. A run cut short is kept the same way (its manifest
    says ``status: "error"``).
    """
    if not needs_store(result.outputs):
        return doc
    from ..base import workspace_of
    from ..runs import stage_run

    cwd = workspace_of()
    source = {
        "kind": "inline",
        "session_id": session["id"],
        "kernel_id": session["kernel_id"],
        "execution_count": result.execution_count,
        "code": code,
    }
    staged = stage_run(cwd, result.outputs, source=source, status=doc["status"], created_ns=started_ns, stall=stall_point)
    published = publish(cwd, staged.run_id, policy)
    run = {"run_id": staged.run_id, "manifest": published["manifest"]}
    kept = build_result(
        result,
        session_id=session["id"],
        kernel_id=session["kernel_id"],
        stored=staged.items,
        run=run,
        partial=bool(doc.get("partial")),
    )
    if published.get("warnings"):
        kept["warnings"] = list(published["warnings"])[:5]
    return kept
