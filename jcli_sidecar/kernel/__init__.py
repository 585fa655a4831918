"""Kernels: the Jupyter Server's REST API and websocket, sessions, running code (inline and notebook runs),
the exec result, and a kernel's variables.

This face re-exports the public names of the modules below; each module is imported on first use.
"""

from ..base.face import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "cell_timing": (
            "EXECUTION_METADATA",
            "TIMING_KEYS",
            "message_time",
            "timing_fields",
        ),
        "cell_writeback": (
            "CellTarget",
            "Checkpoint",
            "WritebackPacer",
            "check_writable",
            "write_back_all",
        ),
        "display_mode": (
            "DISPLAY_MODES",
            "RESTORE_TIMEOUT",
            "check_display_mode",
            "in_display_mode",
        ),
        "exec_result": (
            "ExecutionResult",
            "ITEM_BUDGET",
            "TEXT_BUDGET",
            "build_result",
            "needs_store",
            "output_text",
        ),
        "exec_timeout": (
            "DEFAULT_TIMEOUT",
            "MAX_TIMEOUT",
            "TIMEOUT_ENV",
            "check_timeout",
            "parse_timeout",
            "resolve_timeout",
        ),
        "hub_servers": (
            "HubRoute",
            "hub_route",
            "not_running",
            "redirect_error",
            "server_state",
            "server_state_error",
        ),
        "inline_run": (
            "finish_inline",
            "run_inline",
        ),
        "jsonl_compat": (
            "SOURCE_PREVIEW_CHARS",
            "cell_fields",
            "source_preview",
            "summary_fields",
        ),
        "jupyter_api": (
            "JupyterServer",
            "kernel_summary",
            "select_session",
            "session_summary",
        ),
        "kernel_client": (
            "KernelConnection",
            "execute",
        ),
        "kernel_cwd": (
            "PLACE_TIMEOUT",
            "place_kernel",
        ),
        "kernel_request": (
            "EXTENSION_LANGUAGES",
            "asked_kernel",
            "check_session_kernel",
            "inspect_kernel_request",
        ),
        "kernel_vars": (
            "MAX_ROWS",
            "NAMED_VALUE_CHARS",
            "PREVIEW_NAMES",
            "PREVIEW_TIMEOUT",
            "RICH_CHARS",
            "VALUE_CHARS",
            "VARS_TIMEOUT",
            "preview_variables",
            "read_variables",
        ),
        "notebook_open": (
            "Opened",
            "open_notebook",
        ),
        "notebook_run": (
            "NotebookRun",
            "RAISES_EXCEPTION_TAG",
        ),
        "output_collector": (
            "OUTPUT_EVENTS",
            "OutputCollector",
            "RATE_LIMIT_NOTE",
        ),
        "proxy_route": (
            "PROXY_VARIABLES",
            "ProxyRoute",
            "bypassed",
            "is_loopback",
            "proxy_environment",
            "proxy_for",
        ),
        "run_budget": (
            "RunBudget",
            "per_cell_note",
        ),
        "run_options": (
            "DEFAULT_CHECKPOINT_SECONDS",
            "DEFAULT_WRITEBACK_PACE",
            "RunOptions",
            "checkpoint_seconds_from_env",
            "is_notebook_file",
            "writeback_pace_from_env",
        ),
        "server_probe": (
            "EG_USER_SETTING",
            "LISTING_SETTINGS",
            "ServerInfo",
            "listing_forbidden",
            "probe",
            "refused_kernel_user",
        ),
        "server_replies": (
            "MESSAGE_CHARS",
            "reply_error",
            "reply_status",
            "server_message",
        ),
        "session_lookup": (
            "find_session",
            "find_sessions",
            "listed_sessions",
            "visible_sessions",
        ),
        "session_names": (
            "MEMORY_MAX_BYTES",
            "NameMemory",
            "create_remembered",
            "forget_kernels",
            "is_full_id",
            "remembered_session",
            "remembered_sessions",
            "server_key",
        ),
        "stop_switch": (
            "IDLE_AFTER_INTERRUPT",
            "StopRequested",
            "StopSwitch",
            "signals_to",
        ),
        "urls": (
            "check_server_url",
            "redact_text",
            "redact_url",
            "split_server_url",
        ),
        "vars_rules": (
            "HIDDEN_NAMES",
            "bounded",
            "describe",
            "is_hidden",
            "run",
            "select",
        ),
        "wire": (
            "HttpError",
            "ProxyRefused",
            "Response",
            "WebSocket",
            "WireError",
            "http_request",
            "open_websocket",
        ),
    },
)
