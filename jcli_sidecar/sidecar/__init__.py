"""The workspace sidecar: the asyncio server and its ops, the notebook cache, held kernel connections,
spawning, control, and the clients that talk to it.

This face re-exports the public names of the modules below; each module is imported on first use.
"""

from ..base.face import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "cache": (
            "CacheWatcher",
            "DEFAULT_BUDGET_MB",
            "FINE_RACY_NS",
            "FLIGHT_SIZE_ENV",
            "NotebookCache",
            "RACY_NS",
            "budget_from_env",
            "flight_size_from_env",
            "racy_from_env",
            "racy_window",
        ),
        "client": (
            "CONNECT_TIMEOUT",
            "FALLBACK_CODES",
            "REQUEST_TIMEOUT",
            "call",
            "error_of",
            "greeted",
            "request_shutdown",
            "transport_failed",
        ),
        "control": (
            "sidecar_status",
            "start_sidecar",
            "stop_sidecar",
        ),
        "daemon": (
            "DEFAULT_IDLE_SECONDS",
            "serve",
        ),
        "exec_client": (
            "MAX_RUN_FRAME",
            "STOP_GRACE",
            "exec_through",
        ),
        "held_jobs": (
            "FLUSH_SECONDS",
            "HeldJobs",
            "state_of",
        ),
        "held_kernels": (
            "HeldKernels",
            "IDLE_SECONDS",
            "MAX_IDLE",
            "proxy_variables",
            "run_streamed",
        ),
        "liveness": (
            "RETRY_SECONDS",
            "clear_unresponsive",
            "hello_seconds",
            "mark_unresponsive",
            "read_unresponsive",
            "why_not_ask",
        ),
        "memory": (
            "ARENAS",
            "TRIM_AFTER_BYTES",
            "Trimmer",
            "limit_arenas",
            "rss_bytes",
            "trim",
        ),
        "op_table": (
            "IN_PROCESS",
            "JOB_CANCEL",
            "JOB_START",
            "KERNEL_EXEC",
            "KERNEL_STOP",
            "NOTEBOOK_ADOPT",
            "NOTEBOOK_GREP",
            "NOTEBOOK_LIST",
            "NOTEBOOK_READ",
            "NOT_APPLICABLE",
            "OPS",
            "Op",
            "PING",
            "REFUSE",
            "RUN_PUBLISH",
            "SHUTDOWN",
            "SKIP",
            "START",
            "STATS",
            "WITHOUT_SIDECAR",
        ),
        "ops": (
            "HANDLERS",
            "op",
        ),
        "pidfile": (
            "read_pid_record",
            "recorded_process",
            "unlink_pid_file_if_ours",
            "write_pid_file",
        ),
        "server": (
            "DEFAULT_REQUEST_SECONDS",
            "LISTEN_BACKLOG",
            "STOP_GRACE_SECONDS",
            "Sidecar",
            "request_seconds_from_env",
        ),
        "spawn": (
            "is_listening",
            "launch_detached",
            "spawn_detached",
        ),
    },
)
