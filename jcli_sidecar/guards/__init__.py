"""Agent guards: a host's hook payload, how a shell command line is read, the rules that deny, pair drift,
and how an answer looks to its host.

This face re-exports the public names of the modules below; each module is imported on first use.
"""

from ..base.face import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "guard_rules": (
            "EXEC_HINT",
            "might_run_notebook",
            "notebook_edit",
            "notebook_exec",
            "percent_pair_of",
            "python_run",
        ),
        "hook_decision": (
            "Decision",
            "render_decision",
        ),
        "hook_payload": (
            "KINDS",
            "PLATFORMS",
            "PayloadError",
            "ToolCall",
            "parse_payload",
            "patch_paths",
        ),
        "pair_drift": (
            "after_edit",
            "before_edit",
            "merge_cells",
        ),
        "registry": (
            "EVENTS",
            "GUARDS",
            "Guard",
            "TOOLS",
            "guard",
            "guard_table",
            "guards_for",
        ),
        "shell_commands": (
            "Command",
            "RUNNERS",
            "SHELLS",
            "WRAPPERS",
            "commands",
        ),
    },
)
