"""The guards, one entry each: its name, when it runs, on which tools, and its rule.

Modelled on the sidecar's ``@op``: a guard is a function of the host's tool
call (a :class:`~jcli_sidecar.guards.hook_payload.ToolCall`) registered with
:func:`guard`, and everything else derives its lists from :data:`GUARDS`:
the hook entry point (``j-cli _hooks NAME``), the hook entries ``setup``
writes for Claude Code and Codex, and the lists in the OpenCode and DSH
plugins (a test holds their copies to :func:`guard_table`). The names are
upstream's (``jupyter-jcli`` 0.9.7), so hooks it installed keep working.

A rule module is imported only when its guard runs, so a guard for an
unrelated tool call stays lean.
"""

from __future__ import annotations

from .hook_decision import Decision

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from .hook_payload import ToolCall

__all__ = ["EVENTS", "GUARDS", "Guard", "TOOLS", "guard", "guard_table", "guards_for"]

#: When a guard runs: before the host's tool call, or after it.
EVENTS = ("before", "after")
#: Which of the host's tools it looks at: its shell, or its file edits.
TOOLS = ("shell", "edit")


class Guard:
    """One guard: ``decide(call)`` answers with a :class:`Decision`.

    Attributes:
        event: ``before``, ``after``, or None for a name that is answered
            (upstream installed it) but has nothing to do.
        tools: ``shell`` or ``edit`` (None with no event).
        doc: what it does, as ``j-cli _hooks NAME --help`` says it.
    """

    __slots__ = ("name", "event", "tools", "doc", "decide")

    def __init__(self, name: str, event: str | None, tools: str | None, doc: str, decide: Callable[[ToolCall], Decision]) -> None:
        self.name, self.event, self.tools, self.doc, self.decide = name, event, tools, doc, decide


#: Every guard, by name, in the order hosts run them.
GUARDS: dict[str, Guard] = {}


def guard(
    name: str, event: str | None, tools: str | None, doc: str
) -> Callable[[Callable[[ToolCall], Decision]], Callable[[ToolCall], Decision]]:
    """Register the decorated function as the guard ``name``."""
    if (event is None) != (tools is None) or (event is not None and (event not in EVENTS or tools not in TOOLS)):
        raise ValueError(f"guard {name}: event {event!r} with tools {tools!r}")

    def register(decide: Callable[[ToolCall], Decision]) -> Callable[[ToolCall], Decision]:
        GUARDS[name] = Guard(name, event, tools, doc, decide)
        return decide

    return register


def guards_for(event: str, tools: str) -> list[str]:
    """The names of the guards that run at ``event`` on ``tools``, in order."""
    return [g.name for g in GUARDS.values() if (g.event, g.tools) == (event, tools)]


def guard_table() -> dict[str, dict[str, list[str]]]:
    """``{event: {tools: [names]}}``: the lists a host plugin keeps."""
    return {event: {tools: guards_for(event, tools) for tools in TOOLS} for event in EVENTS}


def _deny_if(reason: str | None) -> Decision:
    return Decision.deny(reason) if reason else Decision.allow()


def _touches_notebook_files(call: ToolCall) -> bool:
    return any(path.endswith((".ipynb", ".py")) for path in call.paths)


@guard("notebook-exec-guard", "before", "shell", "deny running a notebook outside j-cli (PreToolUse, shell)")
def _notebook_exec(call: ToolCall) -> Decision:
    from .guard_rules import notebook_exec

    return _deny_if(notebook_exec(call))


@guard("python-run-guard", "before", "shell", "deny running a paired py:percent .py as a plain script (PreToolUse, shell)")
def _python_run(call: ToolCall) -> Decision:
    from .guard_rules import python_run

    return _deny_if(python_run(call))


@guard("notebook-edit-guard", "before", "edit", "deny hand edits of a paired .ipynb (PreToolUse, file edits)")
def _notebook_edit(call: ToolCall) -> Decision:
    if not _touches_notebook_files(call):
        return Decision.allow()
    from .guard_rules import notebook_edit

    return _deny_if(notebook_edit(call))


@guard(
    "pair-drift-guard-pre",
    "before",
    "edit",
    "deny an edit of a pair whose notebook changed and cannot be merged (PreToolUse, file edits)",
)
def _pair_drift_before(call: ToolCall) -> Decision:
    if not _touches_notebook_files(call):
        return Decision.allow()
    from .pair_drift import before_edit

    return _deny_if(before_edit(call))


@guard("pair-drift-guard-post", "after", "edit", "sync a paired notebook from its .py after an edit (PostToolUse, file edits)")
def _pair_drift_after(call: ToolCall) -> Decision:
    if not _touches_notebook_files(call):
        return Decision.allow()
    from .pair_drift import after_edit

    text = after_edit(call)
    return Decision.context(text) if text else Decision.allow()


@guard("gc-pair-sync-refs", None, None, "nothing to do: j-cli keeps no git refs")
def _gc_pair_sync_refs(call: ToolCall) -> Decision:
    return Decision.allow()
