"""``j-cli setup status``: per host and scope, what setup installed and which j-cli the host will run.

It reads the same files setup edits (never writes) and reports, for each
scope of each host: the MCP entry, the guard hooks (by guard), the plugin
file and the skill, the command they name, and whether the host will find
this j-cli by that command (:mod:`jcli.setup.host_path`). Each host's
module reads its own files (``status_<name>``, named by its
:class:`~jcli.setup.hosts.Host`) with the readers here.
"""

from __future__ import annotations

import os
import re

from jcli_sidecar.base import JcliError

from . import files, hook_entries
from .hook_marks import guard_of
from .host_path import finds, finds_warning
from .hosts import HOSTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["installed_guards", "installed_plugin", "installed_skill", "setup_status", "status_text"]

_COMMAND_LINE = re.compile(r"^const INSTALLED_COMMAND\b[^=\n]*= (.*) // set by j-cli setup$", re.M)


def _text(path: str) -> str | None:
    return files.read(path).text


def installed_skill(skills: str) -> str | None:
    """The j-cli skill file in the skills dir ``skills``, when setup wrote it there."""
    from .skill import MARKER

    path = os.path.join(skills, "j-cli", "SKILL.md")
    text = _text(path)
    return path if text is not None and MARKER in text else None


def installed_guards(path: str) -> list[str]:
    """The guards the hooks file ``path`` runs as j-cli's hooks, sorted."""
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


def installed_plugin(path: str) -> tuple[str | None, list[str] | None]:
    """``(path, the command it starts j-cli with)`` when j-cli's plugin is at ``path``, else ``(None, None)``."""
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


def setup_status(project: str, path: str | None = None) -> dict[str, Any]:
    """Every host and scope: what is installed, the command it names, and whether the host finds this j-cli.

    ``path``: the PATH the host will search (default: this process's).
    """
    entries = []
    warnings = []
    for name, host in HOSTS.items():
        for scope in (s.name for s in host.scopes):
            row: dict[str, Any] = {"host": name, "scope": scope}
            try:
                row.update(host.status(scope, project))
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
