"""A notebook run's whole budget (``--run-timeout``), beside each cell's own (``--timeout``).

Upstream jupyter-jcli's ``--timeout`` bounded a whole run; j-cli's bounds
each cell (:mod:`~jcli_sidecar.kernel.exec_timeout`). :class:`RunBudget`
is the whole run's: its clock starts with the run's first cell, each cell
gets the smaller of its own timeout and what is left, and a cell cut short
because the budget ran out is a ``TIMEOUT`` like any other, saying so
(:meth:`RunBudget.explain`); no later cell starts (:meth:`RunBudget.spent`).
:func:`per_cell_note` is the note a run of several cells gets when its
caller named ``--timeout`` and no budget.
"""

from __future__ import annotations

import time

from ..base import Timeout

__all__ = ["RunBudget", "per_cell_note"]


def per_cell_note(timeout: float | None, cells: int) -> str:
    """The note of a run of ``cells`` cells given ``--timeout`` (and no ``--run-timeout``).

    Example:
        >>> per_cell_note(30, 4)
        '--timeout 30 applies to each cell (4 cells here, up to 120 s in all); --run-timeout S bounds the whole run'
    """
    limit = "no limit" if timeout is None else f"{timeout:g}"
    most = "" if timeout is None else f", up to {timeout * cells:g} s in all"
    return f"--timeout {limit} applies to each cell ({cells} cells here{most}); --run-timeout S bounds the whole run"


class RunBudget:
    """The seconds a whole run may take, counted from :meth:`start` with ``time.monotonic()``; None: no budget.

    Example:
        >>> budget = RunBudget(None).start()
        >>> budget.cell_timeout(600), budget.spent()
        ((600, False), False)
    """

    __slots__ = ("seconds", "deadline")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.deadline: float | None = None

    def start(self) -> RunBudget:
        """Start the clock (the run's first cell is about to be sent)."""
        if self.seconds is not None:
            self.deadline = time.monotonic() + self.seconds
        return self

    def left(self) -> float | None:
        """Seconds left, never below 0; None without a budget."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.monotonic(), 0.0)

    def spent(self) -> bool:
        """True once nothing is left: no further cell starts."""
        left = self.left()
        return left is not None and left <= 0

    def cell_timeout(self, per_cell: float | None) -> tuple[float | None, bool]:
        """``(the next cell's timeout, whether the budget sets it)``: its own, or what is left when that is less."""
        left = self.left()
        if left is None or (per_cell is not None and per_cell <= left):
            return per_cell, False
        return max(left, 0.001), True

    def explain(self, err: Timeout, cell_index: int) -> Timeout:
        """Say in ``err`` (a cell's ``TIMEOUT``) that the run's budget ran out, not the cell's own time."""
        err.message = f"the run's budget ran out (--run-timeout {self.seconds:g} s) in cell {cell_index}: {err.message}"
        err.details["run_timeout"] = self.seconds
        return err

    def exhausted(self, cell_index: int) -> Timeout:
        """The ``TIMEOUT`` of a run whose budget ran out between cells, before cell ``cell_index`` started."""
        return Timeout(
            f"the run's budget ran out (--run-timeout {self.seconds:g} s) before cell {cell_index} started", run_timeout=self.seconds
        )
