"""``--display-mode``: which top-level expressions IPython displays, for one exec only.

The names are IPython's own values of ``InteractiveShell.ast_node_interactivity``:

- ``last_expr`` (IPython's default): the last statement, if it is an expression;
- ``all``: every top-level expression;
- ``last_expr_or_assign``: as ``last_expr``, and a final assignment shows its value;
- ``last``: the last top-level statement run interactively (a final ``for``
  loop displays the bare expressions inside it);
- ``none``: nothing is displayed (print and display() still work).

:func:`display_mode` sets the mode before the code runs and puts the
kernel's previous setting back afterwards, whatever happened in between
(an error, a timeout, a signal). Both steps are silent ``execute_request``\\s
carrying one ``user_expressions`` entry: nothing enters the history, the
execution count does not move, no variable is left behind. A kernel that is
not IPython (no ``get_ipython``) cannot do this: :class:`UsageError` before
any code runs.
"""

from __future__ import annotations

import contextlib

from ..base import JcliError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from .kernel_client import KernelConnection
    from .stop_switch import StopSwitch

__all__ = ["DISPLAY_MODES", "RESTORE_TIMEOUT", "check_display_mode", "in_display_mode"]

#: IPython's ``ast_node_interactivity`` values, ``--display-mode``'s choices.
DISPLAY_MODES = ("last_expr", "all", "last_expr_or_assign", "last", "none")
#: How long putting the previous mode back may take (the kernel is idle by then).
RESTORE_TIMEOUT = 15.0
_NOT_IPYTHON = "--display-mode needs an IPython kernel (ipykernel); this kernel has no get_ipython(), so nothing was run"


def check_display_mode(mode: str | None) -> str | None:
    """``mode`` if it is one of :data:`DISPLAY_MODES` (None: leave the kernel's own setting).

    Raises:
        UsageError: any other name.

    Example:
        >>> check_display_mode("all"), check_display_mode(None)
        ('all', None)
    """
    if mode is None or mode in DISPLAY_MODES:
        return mode
    raise UsageError(f"--display-mode must be one of {', '.join(DISPLAY_MODES)}; got {mode!r}")


@contextlib.contextmanager
def in_display_mode(
    kernel: KernelConnection,
    mode: str | None,
    *,
    notes: list[str],
    stop: StopSwitch | None = None,
    timeout: float | None = None,
) -> Iterator[None]:
    """Run the body with IPython's display mode ``mode``; the kernel's own mode is restored after.

    Args:
        mode: one of :data:`DISPLAY_MODES`; None changes nothing (no round trip).
        notes: where a failed restore is told (the run's notes).
        stop: the run's stop switch: from here on a signal is recorded, not
            raised, so the restore always gets its turn.
        timeout: for setting the mode (restoring takes at most :data:`RESTORE_TIMEOUT`).

    Raises:
        UsageError: a bad mode, or the kernel is not IPython (nothing ran).
        JcliError: the kernel could not be reached (nothing ran).
    """
    mode = check_display_mode(mode)
    if mode is None:
        yield
        return
    if stop is not None:
        stop.defer()
    previous = _swap(kernel, mode, timeout)
    try:
        yield
    finally:
        try:
            _swap(kernel, previous, RESTORE_TIMEOUT)
        except Exception as exc:  # the run's own outcome matters more; say what is left behind
            reason = exc.message if isinstance(exc, JcliError) else type(exc).__name__
            notes.append(f"the kernel's display mode could not be set back to {previous!r} ({reason}); it is still {mode!r}")


def _swap(kernel: KernelConnection, mode: str, timeout: float | None) -> str:
    """Set ``ast_node_interactivity`` to ``mode`` silently; returns the value it had."""
    shell = "get_ipython()"
    swap = f"[{shell}.ast_node_interactivity, setattr({shell}, 'ast_node_interactivity', {mode!r})][0]"
    result = kernel.execute("", timeout=timeout, silent=True, user_expressions={"previous": swap})
    answer = (result.user_expressions or {}).get("previous")
    if not isinstance(answer, dict) or answer.get("status") != "ok":
        raise UsageError(_NOT_IPYTHON, executed=False)
    text = (answer.get("data") or {}).get("text/plain")
    import ast  # only here: it costs a plain exec's start-up time

    try:
        previous = ast.literal_eval(text) if isinstance(text, str) else None
    except (ValueError, SyntaxError):
        previous = None
    return previous if isinstance(previous, str) and previous.isidentifier() else "last_expr"
