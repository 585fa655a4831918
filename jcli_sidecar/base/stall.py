"""A test hook: an exec stalls at a named step until the test lets it go (inert unless set).

It lives in the base so that a file write (``write-back:swap:*``, between
the temp copy and the swap) can stall too, besides the run's own steps.

Tests land a signal, a kill or a concurrent writer at a known moment of a
run without sleeping: the run writes ``stalled <step>`` to a FIFO and waits
until the test closes it.
"""

from __future__ import annotations

import os

__all__ = ["STALL_AT_ENV", "STALL_FIFO_ENV", "stall_point"]

#: Test hook: a FIFO path. At the step named by :data:`STALL_AT_ENV` an exec
#: writes ``stalled <step>`` to it, then reads it until the test closes it,
#: so a test can land a signal at a known step. Steps: ``prepared`` (a
#: notebook run, nothing sent yet), ``output`` (the first output of the
#: process has arrived), ``write-back:checkpoint`` and
#: ``write-back:final`` (a cell's write-back, under the lock),
#: ``inline:finished`` (inline code finished, its outputs not yet kept),
#: ``inline:staging`` (its run's writer record and first payload staged),
#: ``write-back:swap:checkpoint``, ``write-back:swap:final`` and
#: ``pair-sync:swap`` (the new notebook is written beside the old one and
#: is about to take its place; where names cannot be swapped, each has an
#: ``:aside`` step too: the file read is moved aside and the name is free),
#: ``job-wait:sleeping`` (``job wait``, its signal handlers in place, is
#: about to sleep between looks), and ``grep:searching`` (a grep's pattern
#: search was handed to its worker process; this one is set with the
#: sidecar's variables, the grep runs there).
STALL_FIFO_ENV = "JCLI_EXEC_TEST_STALL_FIFO"
STALL_AT_ENV = "JCLI_EXEC_TEST_STALL_AT"
_STALLED: set[str] = set()


def stall_point(step: str, fifo_env: str = STALL_FIFO_ENV, at_env: str = STALL_AT_ENV) -> None:
    """The env-gated stall of :data:`STALL_FIFO_ENV` (once per step and process); inert when unset.

    A step that runs in the sidecar too names the sidecar's hook variables
    (``JCLI_SIDECAR_TEST_STALL_FIFO``, ``..._AT``) as ``fifo_env`` and ``at_env``.
    """
    fifo = os.environ.get(fifo_env)
    if not fifo or os.environ.get(at_env) != step or step in _STALLED:
        return
    _STALLED.add(step)
    with open(fifo, "w", encoding="utf-8") as out:
        out.write(f"stalled {step}\n")
    with open(fifo, encoding="utf-8") as back:
        back.read()
