"""``j-cli setup claude``: the MCP server in Claude Code's config, plus the skill.

Where Claude Code keeps MCP servers, by scope:

- ``--local`` (the default, as in ``claude mcp add``): ``~/.claude.json``,
  under ``projects[<project path>].mcpServers``; private to you and this project;
- ``--project``: ``<project>/.mcp.json``, ``mcpServers``; shared through the repo;
- ``--user``: ``~/.claude.json``, top-level ``mcpServers``; every project.

The skill goes to ``<project>/.claude/skills/j-cli/`` for ``--project`` and to
``~/.claude/skills/j-cli/`` otherwise. JSON has no comments, so the files are
edited as text (:mod:`jcli.setup.jsontext`): our member goes in, and comes
back out, and every other byte stays as it was; what setup had to create
(the file, a project entry, an ``mcpServers`` key) it writes in a compact
one-line form, which is how ``--remove`` knows to take it out too. Our
entry is recognised by its command (``j-cli mcp serve`` or ``<python> -m
jcli mcp serve``); any other ``jcli`` entry is ``CONFIG_CONFLICT``, and a
container in the way that is not an object is ``CONFIG_INVALID``. The
project file names plain ``j-cli`` and no path of this machine (see
:mod:`jcli.setup.command`).
"""

from __future__ import annotations

import copy
import json
import os
import shlex

from jcli_sidecar.base import ConfigConflict, ConfigInvalid

from . import files, hook_entries, jsontext
from .command import is_mcp_server_argv, mcp_server_argv, mcp_user_args
from .hosts import ALL_PARTS
from .skill import plan_skill
from .upstream_skill import plan_replace_upstream_skill

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["claude_paths", "entry_edits", "installed_entry", "settings_path", "setup_claude", "status_claude"]

NAME = "jcli"
#: The MCP server name upstream j-cli 0.9.7 registered.
UPSTREAM_NAME = "jcli-notebook-output"


def claude_paths(scope: str, project: str) -> tuple[str, str]:
    """``(config file, skills dir)`` for ``local``, ``project`` or ``user``."""
    home = os.path.expanduser("~")
    if scope == "project":
        return os.path.join(project, ".mcp.json"), os.path.join(project, ".claude", "skills")
    return os.path.join(home, ".claude.json"), os.path.join(home, ".claude", "skills")


def settings_path(scope: str, project: str) -> str:
    """The Claude Code settings file that holds the guard hooks for ``scope``."""
    if scope == "user":
        return os.path.join(os.path.expanduser("~"), ".claude", "settings.json")
    name = "settings.json" if scope == "project" else "settings.local.json"
    return os.path.join(project, ".claude", name)


def _without_upstream_server(text: str | None, doc: dict[str, Any], keys: list[str], config: str) -> str | None:
    """``text`` without upstream's ``jcli-notebook-output`` server in our servers' object, or None when it has none."""
    holder: Any = doc
    for key in keys:
        holder = holder.get(key) if isinstance(holder, dict) else None
    if not text or not isinstance(holder, dict) or UPSTREAM_NAME not in holder:
        return None
    obj = jsontext.top_object(text)
    for key in keys:
        member = obj.get(key)
        assert member is not None
        obj = jsontext.scan_object(text, member.value_start)
    member = obj.get(UPSTREAM_NAME)
    assert member is not None
    expected = copy.deepcopy(doc)
    parent = expected
    for key in keys:
        parent = parent[key]
    del parent[UPSTREAM_NAME]
    return _verified(jsontext.cut_member(text, obj, member), expected, config)


def _entry(scope: str, project: str) -> dict[str, Any]:
    # local is one project on one machine: rooted there. project is shared: plain
    # `j-cli`, rooted by Claude Code's project directory. user: every project.
    command, *args = mcp_server_argv("claude", scope, root=project if scope == "local" else None)
    return {"type": "stdio", "command": command, "args": args, "env": {}}


#: The keys of our MCP entry; any other key is the user's.
_ENTRY_KEYS = ("type", "command", "args", "env")


def _argv(entry: dict[str, Any]) -> list[str]:
    return [entry["command"], *[str(a) for a in entry.get("args") or []]]


def _merged(current: Any, entry: dict[str, Any]) -> dict[str, Any]:
    """Our ``entry`` keeping what the user added to the ``current`` one: other keys, env variables, arguments."""
    if not _ours(current):
        return entry
    merged = dict(current)
    merged.update(entry)
    env = current.get("env")
    if isinstance(env, dict):
        merged["env"] = {**env, **entry["env"]}
    merged["args"] = [*entry["args"], *mcp_user_args(_argv(current))]
    return merged


def entry_edits(current: dict[str, Any]) -> list[str]:
    """What the user added to our MCP entry, each as a phrase (env variables by name only: values may be secrets)."""
    found = []
    extra = mcp_user_args(_argv(current))
    if extra:
        found.append(f"the arguments {shlex.join(extra)!r}")
    env = current.get("env")
    if isinstance(env, dict) and env:
        found.append(f"the env variables {', '.join(sorted(map(str, env)))}")
    keys = [str(k) for k in current if k not in _ENTRY_KEYS]
    if keys:
        found.append(f"the key{'s' if len(keys) > 1 else ''} {', '.join(keys)}")
    return found


def _ours(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    return is_mcp_server_argv([entry["command"], *[str(a) for a in entry.get("args") or []]])


def _keys(scope: str, project: str) -> list[str]:
    """The keys from the top of the file down to the object holding the servers."""
    return ["projects", project, "mcpServers"] if scope == "local" else ["mcpServers"]


def _holder(doc: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """The object holding the servers (``{}`` when it is missing or not an object)."""
    holder: Any = doc
    for key in keys:
        holder = holder.get(key) if isinstance(holder, dict) else None
    return holder if isinstance(holder, dict) else {}


def _chain(keys: list[str], entry: Any) -> dict[str, Any]:
    """``{keys[0]: {...: {"jcli": entry}}}``: what setup creates below the last key that exists."""
    value: dict[str, Any] = {NAME: entry}
    for key in reversed(keys):
        value = {key: value}
    return value


def _load(text: str | None, config: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        raise ConfigInvalid(f"{config} is not valid JSON; it was left untouched", path=config) from None
    if not isinstance(doc, dict):
        raise ConfigInvalid(f"{config} is not a JSON object; it was left untouched", path=config)
    return doc


def _verified(new: str, expected: dict[str, Any], config: str) -> str:
    try:
        same = json.loads(new) == expected
    except (ValueError, RecursionError):
        same = False
    if not same:
        raise ConfigInvalid(f"{config}: j-cli cannot edit this file's layout; it was left untouched", path=config)
    return new


def _with_entry(text: str | None, doc: dict[str, Any], keys: list[str], entry: dict[str, Any], config: str) -> str:
    """The file's text with our entry in place (added, or updated in place).

    Raises:
        ConfigConflict: a ``jcli`` entry j-cli did not write is there.
        ConfigInvalid: a container on the way is not an object.
    """
    expected = copy.deepcopy(doc)
    holder = expected
    for depth, key in enumerate(keys):
        if key not in holder:
            holder[key] = {}
        elif not isinstance(holder[key], dict):
            where = "".join(f"[{json.dumps(k, ensure_ascii=False)}]" for k in keys[: depth + 1])
            raise ConfigInvalid(f"{config}: {where} is not a JSON object; it was left untouched", path=config)
        holder = holder[key]
    current = holder.get(NAME)
    if current is not None and not _ours(current):
        raise ConfigConflict(f"{config} already has an MCP server named {NAME!r} that j-cli did not write", path=config)
    holder[NAME] = entry
    if not text:  # no file (it ends in a newline), or an empty one (it does not): see _plan_removal
        return jsontext.compact(_chain(keys, entry)) + ("\n" if text is None else "")
    obj = jsontext.top_object(text)
    for depth, key in enumerate(keys):
        member = obj.get(key)
        if member is None:
            new = jsontext.insert_member(text, obj, key, _chain(keys[depth + 1 :], entry), created=True)
            return _verified(new, expected, config)
        obj = jsontext.scan_object(text, member.value_start)
    member = obj.get(NAME)
    if member is None:
        new = jsontext.insert_member(text, obj, NAME, entry, created=False)
    elif json.loads(text[member.value_start : member.value_end]) == entry:
        new = text
    else:
        new = jsontext.replace_value(text, member, entry)
    return _verified(new, expected, config)


def _plan_removal(plan: files.Plan, cur: files.Current, doc: dict[str, Any], keys: list[str]) -> bool:
    """Plan taking our entry out, with every container setup created for it; whether it was there."""
    text = cur.text
    holder: Any = doc
    for key in keys:
        holder = holder.get(key) if isinstance(holder, dict) else None
    if not text or not isinstance(holder, dict) or not _ours(holder.get(NAME)):
        return False
    ours = holder[NAME]
    if doc == _chain(keys, ours) and text in (jsontext.compact(doc) + "\n", jsontext.compact(doc)):
        if text.endswith("\n"):
            plan.delete(cur)  # setup created the file
        else:
            plan.write(cur, "")  # the file was there, empty
        return True
    found = []
    obj = jsontext.top_object(text)
    for key in [*keys, NAME]:
        member = obj.get(key)
        assert member is not None  # the document has the whole chain
        found.append((obj, member))
        if key != NAME:
            obj = jsontext.scan_object(text, member.value_start)
    expected = copy.deepcopy(doc)
    parent = expected
    for depth, (obj, member) in enumerate(found):
        value = json.loads(text[member.value_start : member.value_end])
        if member.key == NAME or (value == _chain(keys[depth + 1 :], ours) and jsontext.is_compact(text, member)):
            del parent[member.key]
            plan.write(cur, _verified(jsontext.cut_member(text, obj, member), expected, cur.path))
            return True
        parent = parent[member.key]
    raise AssertionError("unreachable: the last member is ours")


def installed_entry(scope: str, project: str) -> dict[str, Any] | None:
    """Our MCP entry in the scope's config as it is now, or None.

    Raises:
        ConfigInvalid: the config is not a JSON object (or a regular UTF-8 file).
    """
    config = claude_paths(scope, project)[0]
    entry = _holder(_load(files.read(config).text, config), _keys(scope, project)).get(NAME)
    return entry if _ours(entry) else None


def setup_claude(
    scope: str, project: str, remove: bool = False, *, parts: frozenset[str] = ALL_PARTS, skill_dir: str | None = None
) -> dict[str, Any]:
    """Install (or remove) j-cli's MCP server, guards and skill for Claude Code.

    Args:
        parts: which of ``skill``, ``hook`` (the guards) and ``tool`` (the MCP server) to install or remove.
        skill_dir: the skill goes to ``skill_dir/j-cli/`` instead of the scope's skills dir.

    Raises:
        ConfigInvalid: the file is not a JSON object (or a regular UTF-8 file),
            or a container on the way is not an object.
        ConfigConflict: a ``jcli`` server, or a SKILL.md, exists that j-cli did not write.
        OutputSaveFailed: a file to change is read-only.
    """
    config, skills = claude_paths(scope, project)
    skills = skill_dir or skills
    settings = settings_path(scope, project)
    cur = files.read(config) if "tool" in parts else files.Current(config, config, None)  # the config only for the tool
    doc = _load(cur.text, config)
    keys = _keys(scope, project)
    result: dict[str, Any] = {"host": "claude", "scope": scope, "parts": sorted(parts)}
    if "tool" in parts:
        result["config"] = config
    if "hook" in parts:
        result["hooks"] = settings
    plan = files.Plan()
    if remove:
        dropped: list[str] = []
        hooks_removed = removed = skill_removed = False
        if "hook" in parts:
            hooks_removed, _, dropped = hook_entries.plan_hooks(plan, settings, "claude", scope, remove=True)
        if "tool" in parts:
            current = _holder(doc, keys).get(NAME)
            if _ours(current):
                dropped[:0] = [f"MCP server {NAME} in {config}: {'; '.join(edits)}" for edits in [entry_edits(current)] if edits]
            removed = _plan_removal(plan, cur, doc, keys)
        if "skill" in parts:
            skill_removed = plan_skill(plan, skills, remove=True, edits=dropped)
        result.update(removed=removed or hooks_removed or skill_removed, hooks_removed=hooks_removed, skill_removed=skill_removed)
        result["dropped_user_edits"] = dropped
        plan.apply()
        return result
    replaced: list[str] = []
    changed = False
    if "tool" in parts:
        text = _without_upstream_server(cur.text, doc, keys, config)
        if text is not None:
            replaced.append(f"MCP server {UPSTREAM_NAME} in {config}")
            doc = _load(text, config)
        entry = _merged(_holder(doc, keys).get(NAME), _entry(scope, project))
        new = _with_entry(cur.text if text is None else text, doc, keys, entry, config)
        changed = plan.write(cur, new)
        result["server"] = entry
    if "hook" in parts:
        hooks_changed, upstream_hooks, _ = hook_entries.plan_hooks(plan, settings, "claude", scope, remove=False)
        changed = changed or hooks_changed
        if upstream_hooks:
            replaced.append(f"hooks {', '.join(upstream_hooks)} in {settings}")
    edits: list[str] = []
    if "skill" in parts:
        planned = len(plan)
        upstream_skill = plan_replace_upstream_skill(plan, skills)
        if upstream_skill:
            replaced.append(f"skill in {os.path.join(skills, 'j-cli')}")
        result["skill"] = plan_skill(plan, skills, remove=False, replace_foreign=upstream_skill, edits=edits)
        changed = changed or len(plan) > planned
    result.update(changed=changed, replaced_upstream=replaced)
    if edits:
        result["replaced_user_edits"] = edits
    plan.apply()
    return result


def status_claude(scope: str, project: str) -> dict[str, Any]:
    """What setup installed for Claude Code in ``scope`` (a row of ``j-cli setup status``)."""
    from .status import installed_guards, installed_skill

    config, skills = claude_paths(scope, project)
    ours = installed_entry(scope, project)
    settings = settings_path(scope, project)
    return {
        "mcp": config if ours else None,
        "hooks": installed_guards(settings),
        "hooks_file": settings,
        "skill": installed_skill(skills),
        "command": [ours["command"]] if ours else None,
    }
