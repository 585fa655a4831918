"""``j-cli setup claude``: the MCP server in Claude Code's config, plus the skill.

Where Claude Code keeps MCP servers, by scope:

- ``--local`` (the default, as in ``claude mcp add``): ``~/.claude.json``,
  under ``projects[<project path>].mcpServers``; private to you and this project;
- ``--project``: ``<project>/.mcp.json``, ``mcpServers``; shared through the repo;
- ``--user``: ``~/.claude.json``, top-level ``mcpServers``; every project.

The skill goes to ``<project>/.claude/skills/j-cli/`` for ``--project`` and to
``~/.claude/skills/j-cli/`` otherwise. JSON has no comments, so the files are
re-serialised the way Claude Code writes them (2-space indent); a file
already in that form round-trips byte for byte. Our entry is recognised by
its command (``j-cli mcp serve`` or ``<python> -m jcli mcp serve``); any
other ``jcli`` entry is ``CONFIG_CONFLICT``. The project file names plain
``j-cli`` and no path of this machine (see :mod:`jcli.setup.command`).
"""

from __future__ import annotations

import json
import os

from jcli_sidecar.errors import ConfigConflict, ConfigInvalid
from jcli_sidecar.fileio import read_text_or_none, write_text_atomic

from .command import is_mcp_server_argv, mcp_server_argv
from .skill import install_skill, remove_skill

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["claude_paths", "setup_claude"]

NAME = "jcli"


def claude_paths(scope: str, project: str) -> tuple[str, str]:
    """``(config file, skills dir)`` for ``local``, ``project`` or ``user``."""
    home = os.path.expanduser("~")
    if scope == "project":
        return os.path.join(project, ".mcp.json"), os.path.join(project, ".claude", "skills")
    return os.path.join(home, ".claude.json"), os.path.join(home, ".claude", "skills")


def _entry(scope: str, project: str) -> dict[str, Any]:
    # local is one project on one machine: rooted there. project is shared: plain
    # `j-cli`, rooted by Claude Code's project directory. user: every project.
    command, *args = mcp_server_argv("claude", scope, root=project if scope == "local" else None)
    return {"type": "stdio", "command": command, "args": args, "env": {}}


def _ours(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    return is_mcp_server_argv([entry["command"], *[str(a) for a in entry.get("args") or []]])


def _servers(doc: dict[str, Any], scope: str, project: str, create: bool) -> dict[str, Any] | None:
    holder = doc
    if scope == "local":
        projects = doc.get("projects")
        if not isinstance(projects, dict):
            if not create:
                return None
            projects = doc["projects"] = {}
        holder = projects.get(project)
        if not isinstance(holder, dict):
            if not create:
                return None
            holder = projects[project] = {}
    servers = holder.get("mcpServers")
    if not isinstance(servers, dict):
        if not create:
            return None
        servers = holder["mcpServers"] = {}
    return servers


def _dump(doc: dict[str, Any], newline: bool) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + ("\n" if newline else "")


def setup_claude(scope: str, project: str, remove: bool = False) -> dict[str, Any]:
    """Install (or remove) j-cli's MCP server and skill for Claude Code.

    Raises:
        ConfigInvalid: the file is not a JSON object.
        ConfigConflict: a ``jcli`` server exists that j-cli did not write.
        OSError: a file cannot be written.
    """
    config, skills = claude_paths(scope, project)
    text = read_text_or_none(config)
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        raise ConfigInvalid(f"{config} is not valid JSON; it was left untouched", path=config) from None
    if not isinstance(doc, dict):
        raise ConfigInvalid(f"{config} is not a JSON object; it was left untouched", path=config)
    newline = text.endswith("\n") if text else True
    result: dict[str, Any] = {"host": "claude", "scope": scope, "config": config}
    if remove:
        servers = _servers(doc, scope, project, create=False)
        changed = servers is not None and _ours(servers.get(NAME))
        if changed:
            del servers[NAME]
            if scope == "local" and not servers:
                holder = doc["projects"][project]
                del holder["mcpServers"]
                if not holder:
                    del doc["projects"][project]
            if scope == "project" and not servers:
                del doc["mcpServers"]
            if text is not None and doc == {} and scope == "project":
                os.unlink(config)  # j-cli created it
            else:
                write_text_atomic(config, _dump(doc, newline))
        result.update(removed=changed, skill_removed=remove_skill(skills))
        return result
    servers = _servers(doc, scope, project, create=True)
    current = servers.get(NAME)
    if current is not None and not _ours(current):
        raise ConfigConflict(f"{config} already has an MCP server named {NAME!r} that j-cli did not write", path=config)
    entry = _entry(scope, project)
    servers[NAME] = entry
    new = _dump(doc, newline)
    if new != text:
        os.makedirs(os.path.dirname(config), exist_ok=True)
        write_text_atomic(config, new)
    result.update(server=entry, skill=install_skill(skills), changed=new != text)
    return result
