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
            "might_run_script",
            "notebook_edit",
            "notebook_exec",
            "percent_pair_of",
            "python_run",
        ),
        "hook_decision": (
            "Decision",
            "render_decision",
        ),
        "code_reach": (
            "Source",
            "interpreter_kind",
            "notebook_sources",
            "python_args",
            "python_sources",
        ),
        "hook_payload": (
            "KINDS",
            "MAX_PAYLOAD",
            "PLATFORMS",
            "PayloadError",
            "ToolCall",
            "call_from_fields",
            "fs_spellings",
            "parse_payload",
            "patch_paths",
            "scan_fields",
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
        "shell_tables": (
            "grammar_signature",
            "import_bashlex",
            "table_source",
        ),
        "shell_commands": (
            "Command",
            "Feed",
            "SHELLS",
            "commands",
        ),
        "shell_words": (
            "GLOB_LIMIT",
            "Word",
            "expand_braces",
            "glob_matches",
            "has_glob",
            "path_tokens",
        ),
        "shell_wrappers": (
            "RUNNERS",
            "WRAPPERS",
            "skip_assignments",
            "unwrap",
        ),
    },
)
