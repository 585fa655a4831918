"""``j-cli setup status``: per host and scope, what setup installed and which j-cli the host will run.

It reads the same files setup edits (never writes) and reports, for each
scope of each host: the MCP entry, the guard hooks (by guard), the plugin
file and the skill, the command they name, and whether the host will find
this j-cli by that command (:mod:`jcli.setup.host_path`).
"""

from __future__ import annotations

import os
import re

from jcli_sidecar.base import JcliError

from . import files, hook_entries
from .hook_marks import guard_of
from .host_commands import HOST_SETUPS
from .host_path import finds, finds_warning

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["setup_status", "status_text"]

_COMMAND_LINE = re.compile(r"^const INSTALLED_COMMAND\b[^=\n]*= (.*) // set by j-cli setup$", re.M)


def _text(path: str) -> str | None:
    return files.read(path).text


def _skill(skills: str) -> str | None:
    from .skill import MARKER

    path = os.path.join(skills, "j-cli", "SKILL.md")
    text = _text(path)
    return path if text is not None and MARKER in text else None


def _hooks(path: str) -> list[str]:
    doc = hook_entries.load(_text(path), path)
    return sorted(
        {
            name
            for groups in (doc.get("hooks") or {}).values()
            for g in groups
            if isinstance(g, dict)
            for h in g.get("hooks") or []
            if (name := guard_of(h))
        }
    )


def _plugin(path: str) -> tuple[str | None, list[str] | None]:
    import json

    from .plugin_file import MARKER

    text = _text(path)
    if text is None or MARKER not in text:
        return None, None
    match = _COMMAND_LINE.search(text)
    try:
        command = json.loads(match.group(1)) if match else None
    except ValueError:
        command = None
    return path, command if isinstance(command, list) and all(isinstance(c, str) for c in command) else None


def _claude(scope: str, project: str) -> dict[str, Any]:
    from .claude import claude_paths, installed_entry, settings_path

    config, skills = claude_paths(scope, project)
    ours = installed_entry(scope, project)
    settings = settings_path(scope, project)
    return {
        "mcp": config if ours else None,
        "hooks": _hooks(settings),
        "hooks_file": settings,
        "skill": _skill(skills),
        "command": [ours["command"]] if ours else None,
    }


def _codex(scope: str, project: str) -> dict[str, Any]:
    from .codex import codex_paths, installed_table

    config, skills = codex_paths(scope, project)
    table = installed_table(scope, project)
    hooks_file = os.path.join(os.path.dirname(config), "hooks.json")
    command = table.get("command") if isinstance(table, dict) else None
    return {
        "mcp": config if table else None,
        "hooks": _hooks(hooks_file),
        "hooks_file": hooks_file,
        "skill": _skill(skills),
        "command": [command] if isinstance(command, str) else None,
    }


def _opencode(scope: str, project: str) -> dict[str, Any]:
    from .opencode import opencode_plugin_path

    plugin, command = _plugin(opencode_plugin_path(scope, project))
    return {"plugin": plugin, "command": command[:1] if command else None}


def _dsh(scope: str, project: str) -> dict[str, Any]:
    from .blocks import find_block
    from .dsh import dsh_paths

    config, plugin_path, skills = dsh_paths(scope, project)
    plugin, command = _plugin(plugin_path)
    return {
        "row": config if find_block(_text(config) or "") else None,
        "plugin": plugin,
        "skill": _skill(skills),
        "command": command[:1] if command else None,
    }


_READERS = {"claude": _claude, "codex": _codex, "opencode": _opencode, "dsh": _dsh}


def setup_status(project: str, path: str | None = None) -> dict[str, Any]:
    """Every host and scope: what is installed, the command it names, and whether the host finds this j-cli.

    ``path``: the PATH the host will search (default: this process's).
    """
    entries = []
    warnings = []
    for name, host in HOST_SETUPS.items():
        for scope, _ in host.scopes:
            row: dict[str, Any] = {"host": name, "scope": scope}
            try:
                row.update(_READERS[name](scope, project))
            except JcliError as exc:
                row["error"] = {"code": exc.code, "message": str(exc)}
                entries.append(row)
                continue
            installed = any(row.get(k) for k in ("mcp", "hooks", "plugin", "row", "skill"))
            row["installed"] = installed
            if installed and row.get("command"):
                row["finds"] = finds(row["command"], path)
                warning = finds_warning(row["finds"], f"{name} --{scope}: its entries")
                if warning:
                    warnings.append(warning)
            entries.append(row)
    return {"project": project, "hosts": entries, "warnings": warnings}


def status_text(status: dict[str, Any]) -> str:
    """One line per host and scope, for people."""
    lines = []
    for row in status["hosts"]:
        where = f"{row['host']} --{row['scope']}"
        if "error" in row:
            lines.append(f"{where}: {row['error']['code']}: {row['error']['message']}")
            continue
        if not row["installed"]:
            lines.append(f"{where}: not installed")
            continue
        parts = []
        for key, label in (("mcp", "MCP entry"), ("row", "Cordis row"), ("plugin", "plugin"), ("skill", "skill")):
            if row.get(key):
                parts.append(f"{label} {row[key]}")
        if row.get("hooks"):
            parts.append(f"hooks {', '.join(row['hooks'])} in {row['hooks_file']}")
        found = row.get("finds")
        if found:
            parts.append("runs this j-cli" if found["this_jcli"] else f"does NOT run this j-cli ({found['found'] or 'not found'})")
        lines.append(f"{where}: " + "; ".join(parts))
    return "\n".join(lines)
