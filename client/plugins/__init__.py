"""The JS host plugins shipped with j-cli (copied into place by ``j-cli setup``)."""

import os

__all__ = ["plugin_path", "shared_module_path"]


def plugin_path(host: str) -> str:
    """The shipped plugin file for ``host`` (``"opencode"`` or ``"dsh"``)."""
    files = {"opencode": os.path.join("opencode", "jcli.js"), "dsh": os.path.join("dsh", "jcli.ts")}
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), files[host])


def shared_module_path() -> str:
    """The sidecar client both plugins share, inlined into each by ``j-cli setup``."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "sidecar-client.mjs")
