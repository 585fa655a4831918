"""The workspace sidecar: the asyncio server and its ops, the notebook cache, held kernel connections,
spawning, control, and the clients that talk to it.

This face exports the names the other concerns use, each from its module below, imported on first use.
"""

from ..base import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "client": (
            "FALLBACK_CODES",
            "call",
        ),
        "control": (
            "sidecar_status",
            "start_sidecar",
            "stop_sidecar",
        ),
        "daemon": ("serve",),
        "exec_client": ("exec_through",),
        "op_table": (
            "IN_PROCESS",
            "JOB_CANCEL",
            "JOB_START",
            "KERNEL_EXEC",
            "NOTEBOOK_ADOPT",
            "NOTEBOOK_GREP",
            "NOTEBOOK_LIST",
            "NOTEBOOK_LOOK",
            "NOTEBOOK_READ",
            "OPS",
            "Op",
            "RUN_PUBLISH",
            "SKIP",
            "START",
            "WITHOUT_SIDECAR",
        ),
        "spawn": (
            "launch_detached",
            "spawn_detached",
        ),
    },
)
