"""How ``j-cli mcp serve`` ends: every call already received is answered, in bounded time.

When the client closes stdin, the calls it already sent are still owed an
answer (the SDK, told of the end of input, would cancel them and answer
"Connection closed"): so the end is held back from the SDK while the server
waits for them (at most ``JCLI_MCP_DRAIN_SECONDS``, default 10); then the
calls still running are answered with a ``TIMEOUT`` tool error, and the
process exits. A worker thread cannot be stopped, so the process exits
without joining one that is stuck (a hung file system, a stalled sidecar).
When stdout is gone, nobody can be answered: it exits at once, even while
stdin is open (its reader thread, blocked, is not waited for either).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LAST_WRITE_SECONDS", "answer_calls_received", "drain_seconds", "exit_if_threads_remain"]

#: How long the answers to abandoned calls may take to be written before the input's end is passed on anyway
#: (a client that reads nothing any more cannot hold the process).
LAST_WRITE_SECONDS = 2.0

_POLL = 0.01  # seconds between looks at the requests still owed an answer


def drain_seconds() -> float:
    """``JCLI_MCP_DRAIN_SECONDS``: how long calls may still run once stdin closed."""
    from jcli_sidecar.base import setting

    return float(setting("JCLI_MCP_DRAIN_SECONDS"))


async def answer_calls_received(pending: set[Any], drain_over: Any) -> None:
    """stdin closed: wait (at most the drain time) until ``pending`` (the requests not yet answered) is empty.

    Then set ``drain_over`` (an ``anyio.Event``): the calls still running answer
    ``TIMEOUT``, which may take at most ``LAST_WRITE_SECONDS``.
    """
    import anyio

    with anyio.move_on_after(drain_seconds()):
        while pending:
            await anyio.sleep(_POLL)
    if not pending:
        return
    drain_over.set()
    with anyio.move_on_after(LAST_WRITE_SECONDS):
        while pending:
            await anyio.sleep(_POLL)


def exit_if_threads_remain(session: Any) -> None:
    """Exit now if a call's worker thread still runs (its call abandoned, or its client gone), or stdin's reader.

    A call stuck on a hung file system or a stalled sidecar, or a read of
    an stdin the client keeps open after it stopped reading, would
    otherwise keep the process alive with nobody to answer.
    """
    if not session.threads_remain():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: the process exits all the same
            pass
    os._exit(0)
