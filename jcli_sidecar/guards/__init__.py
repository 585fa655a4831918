"""Agent guards: a host's hook payload, how a shell command line is read, the rules that deny, pair drift,
and how an answer looks to its host.

This face exports the names the other concerns use, each from its module below, imported on first use.
"""

from ..base import lazy_face

__all__, __getattr__ = lazy_face(
    __name__,
    {
        "hook_decision": (
            "Decision",
            "render_decision",
        ),
        "hook_payload": (
            "MAX_PAYLOAD",
            "PLATFORMS",
            "PayloadError",
            "call_from_fields",
            "parse_payload",
            "scan_fields",
        ),
        "registry": (
            "EVENTS",
            "GUARDS",
            "guard_table",
            "guards_for",
        ),
    },
)
