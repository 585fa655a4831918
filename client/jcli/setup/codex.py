"""``j-cli setup codex``: the MCP server in Codex's ``config.toml``, plus the skill.

The ``[mcp_servers.jcli]`` table lives in a marked block appended to the
file (:mod:`jcli.setup.blocks`), so installing twice changes nothing and
removing restores the file byte for byte. When ``mcp_servers`` is an inline
table (``mcp_servers = { docs = {...} }``), which no ``[mcp_servers.jcli]``
header may extend, our table goes inside it instead: the block stands in
place of those lines and keeps them for removal. tomlkit parses the file
before (a malformed file is ``CONFIG_INVALID`` and stays untouched) and
after the edit (the result must parse to the old document plus exactly our
table).
"""

from __future__ import annotations

import os
import re
import shlex

from jcli_sidecar.base import ConfigConflict, ConfigInvalid

from . import files, hook_entries
from .blocks import find_block, put_block, remove_block
from .command import MCP_SERVER_ENV, mcp_server_argv, mcp_user_args
from .hosts import ALL_PARTS
from .skill import plan_skill
from .upstream_skill import plan_replace_upstream_skill

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "codex_paths",
    "hooks_flag_warning",
    "installed_table",
    "project_trusted",
    "server_table",
    "setup_codex",
    "status_codex",
    "table_edits",
]

_PURPOSE = "MCP server for saved notebook outputs"
_SERVERS_KEY = re.compile(r"""^[ \t]*(?:mcp_servers|"mcp_servers"|'mcp_servers')[ \t]*=""", re.M)
STARTUP_TIMEOUT_SEC = 30
TOOL_TIMEOUT_SEC = 120


def codex_paths(scope: str, project: str) -> tuple[str, str]:
    """``(config.toml, skills dir)`` for ``"user"`` or ``"project"`` scope."""
    if scope == "project":
        return os.path.join(project, ".codex", "config.toml"), os.path.join(project, ".agents", "skills")
    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return os.path.join(home, "config.toml"), os.path.join(os.path.expanduser("~"), ".agents", "skills")


def _hooks_file(config: str) -> str:
    """The ``hooks.json`` beside ``config``: where Codex reads the guard hooks."""
    return os.path.join(os.path.dirname(config), "hooks.json")


def server_table(scope: str, project: str) -> dict[str, Any]:
    """What Codex starts: ``j-cli mcp serve`` (plain ``j-cli`` in a shared project file)."""
    command, *args = mcp_server_argv("codex", scope)
    return {
        "command": command,
        "args": args,
        "env_vars": list(MCP_SERVER_ENV),  # Codex passes only these through, by name
        "startup_timeout_sec": STARTUP_TIMEOUT_SEC,
        "tool_timeout_sec": TOOL_TIMEOUT_SEC,
        # Codex starts a turn without the tools of a server not ready yet, and the SDK's server takes
        # about a second to start: required, Codex waits for it (and says so when it cannot start).
        "required": True,
    }


#: Keys of our table whose value the user may tune (a number of seconds, or a switch): a re-setup keeps theirs.
_TUNABLE = {"startup_timeout_sec": int, "tool_timeout_sec": int, "required": bool}


def _merged(table: dict[str, Any], current: Any) -> dict[str, Any]:
    """Our ``table`` keeping what the user added to the ``current`` one: keys, env, arguments, env_vars, timeouts."""
    if not isinstance(current, dict):
        return table
    merged = dict(current)
    merged.update(table)
    for key, kind in _TUNABLE.items():
        if type(current.get(key)) is kind:
            merged[key] = current[key]
    extra = _user_args(current)
    merged["args"] = [*table["args"], *extra]
    names = current.get("env_vars")
    if isinstance(names, list):
        merged["env_vars"] = [*table["env_vars"], *[n for n in names if n not in table["env_vars"]]]
    return merged


def _user_args(current: dict[str, Any]) -> list[str]:
    command, args = current.get("command"), current.get("args")
    if not isinstance(command, str) or not isinstance(args, list):
        return []
    return mcp_user_args([command, *[str(a) for a in args]])


def _toml_scalar(value: Any) -> str:
    """A tunable's value as TOML spells it (``true``, ``30``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def table_edits(current: dict[str, Any], table: dict[str, Any]) -> list[str]:
    """What the user added to our ``[mcp_servers.jcli]``, each as a phrase (env variables by name only)."""
    found = []
    extra = _user_args(current)
    if extra:
        found.append(f"the arguments {shlex.join(extra)!r}")
    names = current.get("env_vars")
    added = [str(n) for n in names if n not in table["env_vars"]] if isinstance(names, list) else []
    if added:
        found.append(f"the env_vars {', '.join(added)}")
    env = current.get("env")
    if isinstance(env, dict) and env:
        found.append(f"the env variables {', '.join(sorted(map(str, env)))}")
    tuned = [f"{k} = {_toml_scalar(current[k])}" for k in _TUNABLE if k in current and current[k] != table[k]]
    keys = [str(k) for k in current if k not in table and k != "env"]
    if tuned or keys:
        found.append(f"the keys {', '.join([*tuned, *keys])}")
    return found


def _trust_keys(project: str) -> list[str]:
    """The paths Codex looks up for a project's trust: the directory, then its git root."""
    keys = [os.path.realpath(project)]
    here = keys[0]
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            if here != keys[0]:
                keys.append(here)
            return keys
        parent = os.path.dirname(here)
        if parent == here:
            return keys
        here = parent


def project_trusted(project: str) -> bool:
    """Whether the user's Codex config trusts ``project`` (else Codex ignores its ``.codex/``)."""
    user_config = codex_paths("user", project)[0]
    try:
        projects = _parse(files.read(user_config).text or "", user_config).get("projects") or {}
    except ConfigInvalid:
        return False
    if not isinstance(projects, dict):
        return False
    levels = {os.path.realpath(key): (entry or {}).get("trust_level") for key, entry in projects.items() if isinstance(entry, dict)}
    return any(levels.get(key) == "trusted" for key in _trust_keys(project))


def _trust_warning(project: str) -> str:
    user_config = codex_paths("user", project)[0]
    key = _trust_keys(project)[-1]
    return (
        f"Codex ignores {os.path.join(project, '.codex', 'config.toml')} until this project is trusted: "
        f"start codex in {project} and trust it when asked, or add to {user_config}: "
        f'[projects.{_toml_key(key)}] trust_level = "trusted"'
    )


def _hooks_trust_warning(hooks_file: str) -> str:
    """Codex skips a hook, without a word, until the user trusts its exact definition in ``/hooks``."""
    return (
        f"Codex runs the hooks in {hooks_file} only once you trust them: start codex, open /hooks and trust "
        "j-cli's hooks (until then Codex skips them silently; it asks again whenever setup changes them)"
    )


def _toml_key(key: str) -> str:
    import json

    return json.dumps(key)  # a TOML basic string is a JSON string for any path


def _parse(text: str, path: str):
    import tomlkit

    try:
        return tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises several parse error types
        raise ConfigInvalid(f"{path} is not valid TOML ({type(exc).__name__}); it was left untouched", path=path) from None


def _render(table: dict[str, Any]) -> str:
    import tomlkit

    doc = tomlkit.document()
    servers = tomlkit.table(is_super_table=True)
    servers.append("jcli", table)
    doc.append("mcp_servers", servers)
    return tomlkit.dumps(doc)


def _plain(doc) -> dict[str, Any]:
    """The document as plain data, an empty ``mcp_servers`` dropped (so removing our table compares equal)."""
    plain = doc.unwrap()
    if plain.get("mcp_servers") == {}:
        del plain["mcp_servers"]
    return plain


def _servers(plain: dict[str, Any]) -> dict[str, Any]:
    servers = plain.get("mcp_servers")
    return servers if isinstance(servers, dict) else {}


def _with_table(base: str, table: dict[str, Any], created: bool, dirs: int, path: str) -> str:
    """``base`` plus our table: a block at the end, else inside an inline ``mcp_servers``.

    Raises:
        ConfigInvalid: neither gives the old document plus exactly our table.
    """
    import copy

    expected = _plain(_parse(base, path))
    expected = copy.deepcopy(expected)
    if not isinstance(expected.setdefault("mcp_servers", {}), dict):
        raise ConfigInvalid(f"{path}: mcp_servers is not a table; it was left untouched", path=path)
    expected["mcp_servers"]["jcli"] = table
    for candidate in (_appended, _inside_inline):
        new = candidate(base, table, created, dirs)
        if new is None:
            continue
        try:
            if _plain(_parse(new, path)) == expected:
                return new
        except ConfigInvalid:
            pass
    raise ConfigInvalid(f"{path}: the j-cli table cannot be added to this file's layout; it was left untouched", path=path)


def _appended(base: str, table: dict[str, Any], created: bool, dirs: int) -> str:
    return put_block(base, _PURPOSE, _render(table), created=created, dirs=dirs)


def _inside_inline(base: str, table: dict[str, Any], created: bool, dirs: int) -> str | None:
    """``base`` with our table inside its inline ``mcp_servers``, in a block standing in place of those lines."""
    import tomlkit
    from tomlkit.items import InlineTable

    doc = tomlkit.parse(base)
    servers = doc.get("mcp_servers")
    if not isinstance(servers, InlineTable):
        return None
    ours = tomlkit.inline_table()
    ours.update(table)
    servers["jcli"] = ours
    edited = tomlkit.dumps(doc)
    first, last, new_last = _changed_lines(base, edited)
    # The block starts where the mcp_servers line does, not inside its value.
    starts = [m.start() for m in _SERVERS_KEY.finditer(base) if m.start() <= first]
    first = starts[-1] if starts else first
    return put_block(base, _PURPOSE, edited[first:new_last], at=first, replacing=last - first, created=created, dirs=dirs)


def _changed_lines(old: str, new: str) -> tuple[int, int, int]:
    """``(start, end in old, end in new)``: the whole lines where ``old`` and ``new`` differ."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    first = old.rfind("\n", 0, prefix) + 1
    end = old.find("\n", max(len(old) - suffix - 1, first))
    last = len(old) if end < 0 else end + 1
    return first, last, len(new) - (len(old) - last)


#: The MCP server name upstream j-cli 0.9.7 registered.
UPSTREAM_NAME = "jcli-notebook-output"


def hooks_flag_warning(configs: list[str]) -> str | None:
    """A warning naming the setting when a config turns Codex's hooks feature off (it is on by default)."""
    for config in configs:
        try:
            features = _parse(files.read(config).text or "", config).get("features") or {}
        except ConfigInvalid:
            continue
        if not isinstance(features, dict):
            continue
        for key in ("hooks", "codex_hooks"):
            if features.get(key) is False:
                return f"Codex's hooks are off in {config} ([features] {key} = false): set [features] hooks = true there, or the guards never run"
    return None


def _without_upstream_server(text: str, path: str) -> str | None:
    """``text`` without upstream's ``[mcp_servers.jcli-notebook-output]``, or None when it has none."""
    import tomlkit

    doc = _parse(text, path)
    servers = doc.get("mcp_servers")
    if not isinstance(servers, dict) or UPSTREAM_NAME not in servers:
        return None
    expected = _plain(doc)
    del expected["mcp_servers"][UPSTREAM_NAME]
    if expected["mcp_servers"] == {}:
        del expected["mcp_servers"]
    del servers[UPSTREAM_NAME]
    if not servers:
        del doc["mcp_servers"]
    new = tomlkit.dumps(doc)
    if _plain(_parse(new, path)) != expected:
        raise ConfigInvalid(f"{path}: upstream j-cli's [mcp_servers.{UPSTREAM_NAME}] cannot be taken out; it was left untouched", path=path)
    return new


def installed_table(scope: str, project: str) -> dict[str, Any] | None:
    """Our ``[mcp_servers.jcli]`` in the scope's config as it is now (in j-cli's block), or None.

    Raises:
        ConfigInvalid: the config is not valid TOML (or a regular UTF-8 file).
    """
    config = codex_paths(scope, project)[0]
    text = files.read(config).text or ""
    table = _servers(_plain(_parse(text, config))).get("jcli") if find_block(text) else None
    return table if isinstance(table, dict) else None


def setup_codex(
    scope: str, project: str, remove: bool = False, *, parts: frozenset[str] = ALL_PARTS, skill_dir: str | None = None
) -> dict[str, Any]:
    """Install (or remove) j-cli's MCP server, guards and skill for Codex.

    Args:
        parts: which of ``skill``, ``hook`` (the guards) and ``tool`` (the MCP server) to install or remove.
        skill_dir: the skill goes to ``skill_dir/j-cli/`` instead of the scope's skills dir.

    Raises:
        ConfigInvalid: the config is not valid TOML (or would not be after),
            or is not a regular UTF-8 file.
        ConfigConflict: a ``[mcp_servers.jcli]`` or a SKILL.md exists that j-cli does not manage.
        OutputSaveFailed: a file to change is read-only.
    """
    config, skills = codex_paths(scope, project)
    skills = skill_dir or skills
    hooks_file = _hooks_file(config)
    plan = files.Plan()
    result: dict[str, Any] = {"host": "codex", "scope": scope, "parts": sorted(parts)}
    if "tool" in parts:
        result["config"] = config
    if "hook" in parts:
        result["hooks"] = hooks_file
    if remove:
        dropped: list[str] = []
        hooks_removed = removed = skill_removed = False
        if "hook" in parts:  # hooks.json first: it shares the directory config.toml's block may delete
            hooks_removed, _, dropped = hook_entries.plan_hooks(plan, hooks_file, "codex", scope, remove=True)
        if "tool" in parts:
            removed = _plan_server(plan, scope, project, config, True, [], dropped) is not None
        if "skill" in parts:
            skill_removed = plan_skill(plan, skills, remove=True, edits=dropped)
        plan.apply()
        result.update(
            removed=removed or hooks_removed or skill_removed,
            hooks_removed=hooks_removed,
            skill_removed=skill_removed,
            dropped_user_edits=dropped,
        )
        return result
    replaced: list[str] = []
    edits: list[str] = []
    changed = hooks_changed = False
    if "tool" in parts:
        planned = len(plan)
        result["server"] = _plan_server(plan, scope, project, config, False, replaced, edits)
        changed = len(plan) > planned
    if "hook" in parts:
        hooks_changed, upstream_hooks, _ = hook_entries.plan_hooks(plan, hooks_file, "codex", scope, remove=False)
        changed = changed or hooks_changed
        if upstream_hooks:
            replaced.append(f"hooks {', '.join(upstream_hooks)} in {hooks_file}")
    if "skill" in parts:
        planned = len(plan)
        upstream_skill = plan_replace_upstream_skill(plan, skills)
        if upstream_skill:
            replaced.append(f"skill in {os.path.join(skills, 'j-cli')}")
        result["skill"] = plan_skill(plan, skills, remove=False, replace_foreign=upstream_skill, edits=edits)
        changed = changed or len(plan) > planned
    plan.apply()
    result.update(changed=changed, replaced_upstream=replaced)
    if edits:
        result["replaced_user_edits"] = edits
    warnings = []
    if scope == "project" and parts & {"tool", "hook"}:
        result["project_trusted"] = project_trusted(project)
        if not result["project_trusted"]:
            warnings.append(_trust_warning(project))
    if hooks_changed:
        warnings.append(_hooks_trust_warning(hooks_file))
    flag = hooks_flag_warning([config] if scope == "user" else [config, codex_paths("user", project)[0]]) if "hook" in parts else None
    if flag:
        warnings.append(flag)
    if (scope == "project" and parts & {"tool", "hook"}) or warnings:
        result["warnings"] = warnings
    return result


def _plan_server(
    plan: files.Plan, scope: str, project: str, config: str, remove: bool, replaced: list[str], edits: list[str]
) -> dict[str, Any] | None:
    """Plan our ``[mcp_servers.jcli]`` block in (its table) or out (None when there was none).

    ``replaced`` is told of upstream's server replaced; ``edits`` of what the user added that removal drops.

    Raises:
        ConfigInvalid: the config is not valid TOML (or would not be after), or our table has keys outside our block.
        ConfigConflict: a ``[mcp_servers.jcli]`` that j-cli does not manage.
    """
    cur = files.read(config)
    text = cur.text or ""
    if not remove:
        stripped = _without_upstream_server(text, config)
        if stripped is not None:
            text = stripped
            replaced.append(f"MCP server {UPSTREAM_NAME} in {config}")
    before = _plain(_parse(text, config))
    block = find_block(text)
    if block is not None:
        outside = _servers(_plain(_parse(remove_block(text), config))).get("jcli")
        if isinstance(outside, dict) and outside:
            raise ConfigInvalid(
                f"{config}: [mcp_servers.jcli] has {', '.join(map(str, outside))} outside j-cli's block "
                "(between `# >>> j-cli` and `# <<< j-cli`): move it into the block, where setup keeps it, "
                "or delete it; the file was left untouched",
                path=config,
            )
    if remove:
        if block is None:
            return None
        current = _servers(before).get("jcli")
        if isinstance(current, dict):
            found = table_edits(current, server_table(scope, project))
            if found:
                edits.insert(0, f"[mcp_servers.jcli] in {config}: {'; '.join(found)}")
        rest = remove_block(text)
        expected = dict(before, mcp_servers={k: v for k, v in _servers(before).items() if k != "jcli"})
        if expected["mcp_servers"] == {}:
            del expected["mcp_servers"]
        if _plain(_parse(rest, config)) != expected:
            raise ConfigInvalid(f"{config}: the j-cli block does not hold only j-cli's table; it was left untouched", path=config)
        if rest == "" and block.created:
            plan.delete(cur, block.dirs)
        else:
            plan.write(cur, rest)
        return {}
    if block is None and "jcli" in _servers(before):
        raise ConfigConflict(f"{config} already has an [mcp_servers.jcli] that j-cli does not manage; rename or remove it", path=config)
    table = server_table(scope, project)
    base = text if block is None else remove_block(text)
    if block is not None:  # keep what the user added to our table, except what lives outside the block
        outside = _servers(_plain(_parse(base, config))).get("jcli")
        current = _servers(before).get("jcli")
        if isinstance(current, dict):
            table = _merged(table, {k: v for k, v in current.items() if not (isinstance(outside, dict) and k in outside)})
    created, dirs = (cur.text is None, cur.missing_dirs()) if block is None else (block.created, block.dirs)
    if block is not None and _servers(before).get("jcli") == table:
        new = text  # our table, with what the user added to it, is already in place
    else:
        new = _with_table(base, table, created, dirs, config)
    plan.write(cur, new)
    return table


def status_codex(scope: str, project: str) -> dict[str, Any]:
    """What setup installed for Codex in ``scope`` (a row of ``j-cli setup status``)."""
    from .status import installed_guards, installed_skill

    config, skills = codex_paths(scope, project)
    table = installed_table(scope, project)
    hooks_file = _hooks_file(config)
    command = table.get("command") if isinstance(table, dict) else None
    return {
        "mcp": config if table else None,
        "hooks": installed_guards(hooks_file),
        "hooks_file": hooks_file,
        "skill": installed_skill(skills),
        "command": [command] if isinstance(command, str) else None,
    }
