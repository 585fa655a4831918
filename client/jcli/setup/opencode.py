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

from . import files
from .command import jcli_command
from .hosts import ALL_PARTS
from .plugin_file import plan_plugin

__all__ = ["opencode_plugin_path", "setup_opencode", "status_opencode"]


def opencode_plugin_path(scope: str, project: str) -> str:
    if scope == "project":
        return os.path.join(project, ".opencode", "plugins", "jcli.js")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "opencode", "plugins", "jcli.js")


def setup_opencode(
    scope: str, project: str, remove: bool = False, *, parts: frozenset[str] = ALL_PARTS, skill_dir: str | None = None
) -> dict:
    """Install (or remove) the OpenCode plugin file (the tool and the guards: OpenCode gets no skill file).

    ``parts`` and ``skill_dir`` are accepted for the one signature of every
    host; ``j-cli setup`` lets through only what applies (the plugin: ``hook`` and ``tool``).

    Raises:
        ConfigConflict: a ``jcli.js`` j-cli did not write is in the way.
        ConfigInvalid: what is there is not a regular UTF-8 file.
        OutputSaveFailed: it is read-only.
    """
    target = opencode_plugin_path(scope, project)
    result = {"host": "opencode", "scope": scope, "parts": sorted(parts & {"hook", "tool"}), "plugin": target}
    plan = files.Plan()
    edits: list[str] = []
    if remove:
        result["removed"] = plan_plugin(plan, "opencode", target, None, edits=edits)
        result["dropped_user_edits"] = edits
    else:
        replaced: list[str] = []
        result["command"] = jcli_command(scope)
        result["changed"] = plan_plugin(plan, "opencode", target, result["command"], replaced, edits)
        result["replaced_upstream"] = replaced
        if edits:
            result["replaced_user_edits"] = edits
    plan.apply()
    return result


def status_opencode(scope: str, project: str) -> dict:
    """What setup installed for OpenCode in ``scope`` (a row of ``j-cli setup status``)."""
    from .status import installed_plugin

    plugin, command = installed_plugin(opencode_plugin_path(scope, project))
    return {"plugin": plugin, "command": command[:1] if command else None}
