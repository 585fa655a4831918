"""Kernels: the Jupyter Server's REST API and websocket, sessions, running code (inline and notebook runs),
the exec result, and a kernel's variables.

This face exports the names the other concerns use, each from its module below, imported on first use.
"""

from ..base import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "display_mode": ("check_display_mode",),
        "exec_result": (
            "ExecutionResult",
            "output_text",
        ),
        "exec_timeout": (
            "check_timeout",
            "parse_timeout",
            "resolve_timeout",
        ),
        "inline_run": (
            "finish_inline",
            "run_inline",
        ),
        "frame_view": ("frame_text",),
        "jupyter_api": (
            "JupyterServer",
            "session_summary",
        ),
        "kernel_client": ("KernelConnection",),
        "kernel_cwd": ("place_kernel",),
        "kernel_request": ("inspect_kernel_request",),
        "kernel_vars": (
            "VARS_TIMEOUT",
            "preview_variables",
            "read_variables",
        ),
        "notebook_run": ("NotebookRun",),
        "parameters": (
            "Parameters",
            "resolve_parameters",
        ),
        "proxy_route": ("proxy_environment",),
        "run_options": (
            "RunOptions",
            "checkpoint_seconds_from_env",
            "is_notebook_file",
            "writeback_pace_from_env",
        ),
        "server_probe": (
            "LISTING_SETTINGS",
            "refused_kernel_user",
        ),
        "session_lookup": (
            "find_session",
            "find_sessions",
            "listed_sessions",
            "visible_sessions",
        ),
        "session_names": (
            "create_remembered",
            "forget_kernels",
        ),
        "stop_switch": (
            "IDLE_AFTER_INTERRUPT",
            "StopRequested",
            "StopSwitch",
            "signals_to",
        ),
        "urls": (
            "redact_text",
            "redact_url",
        ),
        "wire": (
            "HttpError",
            "WebSocket",
            "WireError",
        ),
    },
)
