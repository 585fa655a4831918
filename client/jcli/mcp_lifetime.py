"""How ``j-cli mcp serve`` ends: every call already received is answered, in bounded time.

When the client closes stdin, the calls it already sent are still owed an
answer: the server waits for them (at most ``JCLI_MCP_DRAIN_SECONDS``,
default 10), answers those still running then with a ``TIMEOUT`` tool
error, and exits. A worker thread cannot be stopped, so the process exits
without joining one that is stuck (a hung file system, a stalled sidecar).
When stdout is gone too, nobody can be answered: it exits at once.
"""

from __future__ import annotations

import os
import sys
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["LAST_WRITE_SECONDS", "answer_calls_in_flight", "exit_if_calls_remain"]

#: How long the answers to abandoned calls may take to be written before the process exits anyway
#: (a client that reads nothing any more cannot hold it).
LAST_WRITE_SECONDS = 2.0


def answer_calls_in_flight(session: Any, error_result: Callable[[str], dict[str, Any]]) -> None:
    """stdin closed: wait (at most ``JCLI_MCP_DRAIN_SECONDS``) for ``session``'s calls to answer; answer the rest ``TIMEOUT``."""
    import time

    from jcli_sidecar.base import setting

    seconds = setting("JCLI_MCP_DRAIN_SECONDS")
    deadline = time.monotonic() + seconds
    for worker in session.workers():
        worker.join(max(0.0, deadline - time.monotonic()))
    late = session.abandon_calls()
    if not late:
        return
    result = error_result(
        f"TIMEOUT: the client closed its input and this call was still running {seconds:g} s later "
        "(JCLI_MCP_DRAIN_SECONDS); it was abandoned"
    )
    writer = threading.Thread(target=session.answer_all, args=(late, result), name="mcp-abandoned", daemon=True)
    writer.start()
    writer.join(LAST_WRITE_SECONDS)


def exit_if_calls_remain(session: Any) -> None:
    """Exit now if a worker thread still runs (its call abandoned, or its client gone).

    A call stuck on a hung file system or a stalled sidecar would
    otherwise keep the process alive with nobody to answer.
    """
    if not session.calls_in_flight():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)
