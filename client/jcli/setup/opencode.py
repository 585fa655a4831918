"""``j-cli setup opencode``: copy the j-cli plugin where OpenCode loads plugins.

``--project`` uses ``<project>/.opencode/plugins/``; ``--user`` uses the
OpenCode config dir (``$XDG_CONFIG_HOME/opencode/plugins``, default
``~/.config/opencode/plugins``). Only a file carrying j-cli's marker is
replaced or removed; anything else named ``jcli.js`` is ``CONFIG_CONFLICT``.
The plugin records how to start j-cli: plain ``j-cli`` in a project (the file
is shared), this install's interpreter for ``--user``; ``JCLI_BIN`` wins.
"""

from __future__ import annotations

import os

from .command import jcli_command
from .plugin_file import place_plugin, take_back_plugin

__all__ = ["opencode_plugin_path", "setup_opencode"]


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
    target = opencode_plugin_path(scope, project)
    result = {"host": "opencode", "scope": scope, "plugin": target}
    if remove:
        result["removed"] = take_back_plugin(target)
    else:
        result["command"] = jcli_command(scope)
        result["changed"] = place_plugin("opencode", target, result["command"])
    return result
