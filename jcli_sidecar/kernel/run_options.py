"""What a notebook run is told: :class:`RunOptions`, the environment's defaults, and which files are notebooks.

The caller resolves everything (its arguments and its environment) into one
:class:`RunOptions`; :class:`~jcli_sidecar.kernel.notebook_run.NotebookRun`
reads nothing else.
"""

from __future__ import annotations

from ..base import SETTINGS, setting
from ..pair import is_percent_file
from .display_mode import check_display_mode
from .exec_timeout import check_timeout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from .parameters import Parameters

__all__ = [
    "DEFAULT_CHECKPOINT_SECONDS",
    "DEFAULT_WRITEBACK_PACE",
    "RunOptions",
    "checkpoint_seconds_from_env",
    "is_notebook_file",
    "writeback_pace_from_env",
]

DEFAULT_CHECKPOINT_SECONDS = SETTINGS["JCLI_CHECKPOINT_SECONDS"].default
DEFAULT_WRITEBACK_PACE = SETTINGS["JCLI_WRITEBACK_PACE"].default


def is_notebook_file(path: str) -> bool:
    """An ``.ipynb``, or a ``.py`` with ``# %%`` markers (a pair; the file is never read blocking)."""
    return path.endswith(".ipynb") or (path.endswith(".py") and is_percent_file(path))


def writeback_pace_from_env(env: Mapping[str, str] | None = None) -> float:
    """``JCLI_WRITEBACK_PACE`` (default 4): how long finished cells may wait to be written, in last write-backs.

    A bad or negative value is the default; 0 writes every cell as it finishes.

    Example:
        >>> writeback_pace_from_env({"JCLI_WRITEBACK_PACE": "0"}), writeback_pace_from_env({"JCLI_WRITEBACK_PACE": "x"})
        (0.0, 4.0)
    """
    return setting("JCLI_WRITEBACK_PACE", env)


def checkpoint_seconds_from_env(env: Mapping[str, str] | None = None) -> float:
    """``JCLI_CHECKPOINT_SECONDS`` (default 10): how often a long cell's partial outputs are saved.

    The caller's environment decides; a bad or negative value is the default.

    Example:
        >>> checkpoint_seconds_from_env({"JCLI_CHECKPOINT_SECONDS": "0"}), checkpoint_seconds_from_env({})
        (0.0, 10.0)
    """
    return setting("JCLI_CHECKPOINT_SECONDS", env)


class RunOptions:
    """How a notebook run goes, resolved by the caller (its arguments and environment).

    Attributes:
        cells: the cells to run, as ``N``, ``A:B`` (B excluded), ``A:`` or
            ``:B`` (:func:`parse_cell_spec`); None runs every cell.
        timeout: seconds per cell before the kernel is interrupted
            (``TIMEOUT``); None waits forever. Checked at once
            (``exec_timeout.check_timeout``).
        checkpoint_seconds: how often a running cell's partial outputs are
            saved into the notebook; 0 saves on every output, None never
            (``--no-stream``: only each cell's final write-back).
        kernel_name: the session's kernel: a file that asks for another is
            refused (``KERNEL_MISMATCH``, see
            :func:`~jcli_sidecar.kernel.kernel_request.check_session_kernel`);
            a notebook created for a pair whose ``.py`` names no kernel records it.
        kernel_language: the session kernel's language, or a function that
            returns it (None: unknown); asked only when a file names another
            kernel or a new notebook records the session's.
        any_kernel: run a file that asks for another kernel anyway (a note says so).
        py_wins: sync a pair's notebook from the ``.py`` even when that is
            not clearly meant (see :mod:`jcli_sidecar.pair.pairguard`).
        display_mode: IPython's display mode for the run's cells (one of
            ``display_mode.DISPLAY_MODES``), the kernel's own restored
            afterwards; None leaves the kernel's setting alone.
        writeback_pace: finished cells are queued while less than this
            many times the last write-back's duration has passed since it
            (:class:`WritebackPacer`); 0 writes every cell at once.
        allow_errors: a cell whose code raises does not stop the run (its
            error stays in the notebook; the summary lists it in
            ``failed_cells`` and says ``status: "error"``). A cell tagged
            ``raises-exception`` may raise without it, and then is no failure.
        run_timeout: seconds for the whole run, counted from its first cell:
            when they run out, the running cell is interrupted as on its own
            timeout (``TIMEOUT``) and no later cell starts; None: no budget.
            Checked at once.
        timeout_given: the caller named ``timeout`` itself (its flag), so a
            run of several cells notes that it applies per cell.
        parameters: papermill's parameters for the run
            (:class:`~jcli_sidecar.kernel.parameters.Parameters`): written into
            the cell tagged ``injected-parameters`` before the run; None: none.
        stale: run exactly the stale cells, in order (``--stale``, see
            :mod:`jcli_sidecar.read.staleness`); refused with ``cells``.

    Example:
        >>> RunOptions(cells="1:3", timeout=30)
        RunOptions(cells='1:3', timeout=30, checkpoint_seconds=10.0, kernel_name=None, py_wins=False, display_mode=None, writeback_pace=4.0, kernel_language=None, any_kernel=False, allow_errors=False, run_timeout=None, timeout_given=False, parameters=None, stale=False)
    """

    __slots__ = (
        "cells",
        "timeout",
        "checkpoint_seconds",
        "kernel_name",
        "py_wins",
        "display_mode",
        "writeback_pace",
        "kernel_language",
        "any_kernel",
        "allow_errors",
        "run_timeout",
        "timeout_given",
        "parameters",
        "stale",
    )

    def __init__(
        self,
        *,
        cells: str | None = None,
        timeout: float | None = None,
        checkpoint_seconds: float | None = DEFAULT_CHECKPOINT_SECONDS,
        kernel_name: str | None = None,
        py_wins: bool = False,
        display_mode: str | None = None,
        writeback_pace: float = DEFAULT_WRITEBACK_PACE,
        kernel_language: str | Callable[[], str | None] | None = None,
        any_kernel: bool = False,
        allow_errors: bool = False,
        run_timeout: float | None = None,
        timeout_given: bool = False,
        parameters: Parameters | None = None,
        stale: bool = False,
    ) -> None:
        self.cells = cells
        self.timeout = check_timeout(timeout)
        self.checkpoint_seconds = checkpoint_seconds
        self.kernel_name = kernel_name
        self.py_wins = py_wins
        self.display_mode = check_display_mode(display_mode)
        self.writeback_pace = writeback_pace
        self.kernel_language = kernel_language
        self.any_kernel = any_kernel
        self.allow_errors = allow_errors
        self.run_timeout = check_timeout(run_timeout, "--run-timeout")
        self.timeout_given = timeout_given
        self.parameters = parameters
        self.stale = stale

    def session_language(self) -> str | None:
        """The session kernel's language (:attr:`kernel_language`, asked once), None when unknown."""
        if callable(self.kernel_language):
            self.kernel_language = self.kernel_language()
        return self.kernel_language

    def __repr__(self) -> str:
        return "RunOptions(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"
