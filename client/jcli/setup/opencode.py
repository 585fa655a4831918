"""``j-cli setup opencode``: copy the j-cli plugin where OpenCode loads plugins.

``--project`` uses ``<project>/.opencode/plugins/``; ``--user`` uses the
OpenCode config dir (``$XDG_CONFIG_HOME/opencode/plugins``, default
``~/.config/opencode/plugins``). The file carries a marker line: only a file
with that marker is replaced or removed; anything else named ``jcli.js`` is
``CONFIG_CONFLICT``.
"""

from __future__ import annotations

import os

from jcli_sidecar.errors import ConfigConflict
from jcli_sidecar.fileio import write_text_atomic

__all__ = ["MARKER", "opencode_plugin_path", "setup_opencode"]

MARKER = "// managed by j-cli setup"


def opencode_plugin_path(scope: str, project: str) -> str:
    if scope == "project":
        return os.path.join(project, ".opencode", "plugins", "jcli.js")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "opencode", "plugins", "jcli.js")


def setup_opencode(scope: str, project: str, remove: bool = False) -> dict:
    """Install (or remove) the OpenCode plugin file.

    Raises:
        ConfigConflict: a ``jcli.js`` j-cli did not write is in the way.
    """
    from jcli.plugins import plugin_path

    target = opencode_plugin_path(scope, project)
    try:
        with open(target, encoding="utf-8") as fh:
            current = fh.read()
    except FileNotFoundError:
        current = None
    if current is not None and MARKER not in current:
        raise ConfigConflict(f"{target} exists and was not written by j-cli; move it away first", path=target)
    result = {"host": "opencode", "scope": scope, "plugin": target}
    if remove:
        if current is not None:
            os.unlink(target)
        result["removed"] = current is not None
        return result
    with open(plugin_path("opencode"), encoding="utf-8") as fh:
        shipped = fh.read()
    if current != shipped:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        write_text_atomic(target, shipped)
    result["changed"] = current != shipped
    return result
