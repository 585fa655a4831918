"""``j-cli setup codex``: the MCP server in Codex's ``config.toml``, plus the skill.

The ``[mcp_servers.jcli]`` table lives in a marked block appended to the
file, so installing twice changes nothing and removing restores the file
byte for byte. tomlkit parses the file before (a malformed file is
``CONFIG_INVALID`` and stays untouched) and after the edit (the result must
parse and carry exactly our table).
"""

from __future__ import annotations

import os

from jcli_sidecar.errors import ConfigConflict, ConfigInvalid
from jcli_sidecar.fileio import read_text_or_none, write_text_atomic

from .blocks import has_block, put_block, remove_block
from .command import MCP_SERVER_ENV, mcp_server_argv
from .skill import install_skill, remove_skill

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["codex_paths", "project_trusted", "server_table", "setup_codex"]

STARTUP_TIMEOUT_SEC = 30
TOOL_TIMEOUT_SEC = 120


def codex_paths(scope: str, project: str) -> tuple[str, str]:
    """``(config.toml, skills dir)`` for ``"user"`` or ``"project"`` scope."""
    if scope == "project":
        return os.path.join(project, ".codex", "config.toml"), os.path.join(project, ".agents", "skills")
    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return os.path.join(home, "config.toml"), os.path.join(os.path.expanduser("~"), ".agents", "skills")


def server_table(scope: str, project: str) -> dict[str, Any]:
    """What Codex starts: ``j-cli mcp serve`` (plain ``j-cli`` in a shared project file)."""
    command, *args = mcp_server_argv("codex", scope)
    return {
        "command": command,
        "args": args,
        "env_vars": list(MCP_SERVER_ENV),  # Codex passes only these through, by name
        "startup_timeout_sec": STARTUP_TIMEOUT_SEC,
        "tool_timeout_sec": TOOL_TIMEOUT_SEC,
    }


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
        projects = _parse(read_text_or_none(user_config) or "", user_config).get("projects") or {}
    except ConfigInvalid:
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


def setup_codex(scope: str, project: str, remove: bool = False) -> dict[str, Any]:
    """Install (or remove) j-cli's MCP server and skill for Codex.

    Raises:
        ConfigInvalid: the config is not valid TOML (or would not be after).
        ConfigConflict: a ``[mcp_servers.jcli]`` exists that j-cli does not manage.
        OSError: a file cannot be written.
    """
    config, skills = codex_paths(scope, project)
    text = read_text_or_none(config)
    before = _parse(text or "", config)
    if remove:
        changed = text is not None and has_block(text)
        if changed:
            rest = remove_block(text)
            if rest:
                write_text_atomic(config, rest)
            else:
                os.unlink(config)  # j-cli created it
        skill_removed = remove_skill(skills)
        return {"host": "codex", "scope": scope, "config": config, "removed": changed, "skill_removed": skill_removed}
    if not has_block(text or "") and "jcli" in (before.get("mcp_servers") or {}):
        raise ConfigConflict(f"{config} already has an [mcp_servers.jcli] that j-cli does not manage; rename or remove it", path=config)
    table = server_table(scope, project)
    new = put_block(text or "", "MCP server for saved notebook outputs", _render(table))
    after = _parse(new, config)
    if dict(after.get("mcp_servers", {}).get("jcli", {})) != table:
        raise ConfigInvalid(f"{config}: the j-cli table cannot be added to this file's layout; it was left untouched", path=config)
    if new != text:
        os.makedirs(os.path.dirname(config), exist_ok=True)
        write_text_atomic(config, new)
    skill = install_skill(skills)
    result = {"host": "codex", "scope": scope, "config": config, "server": table, "skill": skill, "changed": new != text}
    if scope == "project":
        result["project_trusted"] = project_trusted(project)
        result["warnings"] = [] if result["project_trusted"] else [_trust_warning(project)]
    return result
