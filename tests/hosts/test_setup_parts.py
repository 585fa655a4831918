"""``j-cli setup HOST --only PART`` and ``--skill-dir DIR`` (upstream 0.9.7's spellings), on real config files in a temp HOME.

A part is ``skill``, ``hook`` (the guards) or ``tool`` (the MCP server, or
the plugin's tool); ``--only`` installs or removes just those, ``--remove``
taking out exactly what the same ``--only`` put in. ``--skill-dir DIR``
puts the skill's ``j-cli/`` folder in DIR, as upstream did.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import run_cli


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A temp HOME (Claude, Codex, OpenCode, DSH configs under it) and a project dir; returns (home, project)."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    return home, project


def _files(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` (by path) with its bytes."""
    return {str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()}


def _setup(project: Path, *argv: str) -> dict:
    result = run_cli("-j", "setup", *argv, cwd=project)
    assert result.returncode == 0, result.stderr
    return result.json()


def test_claude_installs_each_part_alone_and_removes_exactly_it(world):
    home, project = world
    skill = home / ".claude" / "skills" / "j-cli" / "SKILL.md"
    config = home / ".claude.json"
    hooks = project / ".claude" / "settings.local.json"
    only_skill = _setup(project, "claude", "--only", "skill")
    assert only_skill["parts"] == ["skill"] and only_skill["changed"] is True and "config" not in only_skill
    assert skill.is_file() and not config.exists() and not hooks.exists()
    only_hook = _setup(project, "claude", "--only", "hook")
    assert hooks.is_file() and not config.exists() and "_jcli_guard" in hooks.read_text()
    _setup(project, "claude", "--only", "tool")
    assert "jcli" in json.loads(config.read_text())["projects"][str(project)]["mcpServers"]
    assert only_hook["hooks"] == str(hooks)
    everything = _files(home, project)
    again = _setup(project, "claude")  # all parts already there: nothing changes
    assert again["changed"] is False and _files(home, project) == everything
    removed = _setup(project, "claude", "--remove", "--only", "hook")
    assert removed["removed"] is True and not hooks.exists() and skill.is_file() and config.is_file()
    _setup(project, "claude", "--remove", "--only", "skill", "--only", "tool")
    assert _files(home, project) == {}


def test_a_full_install_then_removing_part_by_part_leaves_nothing(world):
    home, project = world
    _setup(project, "codex", "--project")
    assert (project / ".codex" / "config.toml").is_file() and (project / ".codex" / "hooks.json").is_file()
    tool_gone = _setup(project, "codex", "--project", "--remove", "--only", "tool")
    assert tool_gone["removed"] is True and not (project / ".codex" / "config.toml").exists()
    assert (project / ".codex" / "hooks.json").is_file()
    _setup(project, "codex", "--project", "--remove", "--only", "hook")
    _setup(project, "codex", "--project", "--remove", "--only", "skill")
    assert _files(home, project) == {}
    nothing = _setup(project, "codex", "--project", "--remove", "--only", "skill")
    assert nothing["removed"] is False


@pytest.mark.parametrize("host", ["claude", "codex", "dsh"])
def test_skill_dir_puts_the_skill_there_and_remove_with_it_takes_it_out(world, host):
    home, project = world
    installed = _setup(project, host, "--only", "skill", "--skill-dir", "team-skills")
    target = project / "team-skills" / "j-cli" / "SKILL.md"
    assert installed["skill"] == str(target) and target.is_file()
    assert "notebook" in target.read_text()
    assert [p for p in _files(home, project) if not p.startswith(str(project / "team-skills"))] == []
    removed = _setup(project, host, "--remove", "--only", "skill", "--skill-dir", "team-skills")
    assert removed["skill_removed"] is True and _files(home, project) == {}


def test_skill_dir_beside_the_other_parts_moves_only_the_skill(world, tmp_path):
    home, project = world
    skills = tmp_path / "shared-skills"
    _setup(project, "claude", "--skill-dir", str(skills))
    assert (skills / "j-cli" / "SKILL.md").is_file() and not (home / ".claude" / "skills").exists()
    assert (home / ".claude.json").is_file() and (project / ".claude" / "settings.local.json").is_file()
    _setup(project, "claude", "--remove", "--skill-dir", str(skills))
    assert _files(home, project, skills) == {}


def test_the_plugin_hosts_take_their_plugin_as_one_part(world):
    home, project = world
    dsh_plugin = _setup(project, "dsh", "--user", "--only", "tool", "--only", "hook")
    assert Path(dsh_plugin["plugin"]).is_file() and not (home / ".agents").exists() and "skill" not in dsh_plugin
    dsh_skill = _setup(project, "dsh", "--user", "--only", "skill")
    assert Path(dsh_skill["skill"]).is_file() and "plugin" not in dsh_skill
    _setup(project, "dsh", "--user", "--remove", "--only", "hook", "--only", "tool")
    assert Path(dsh_skill["skill"]).is_file() and not Path(dsh_plugin["plugin"]).exists()
    _setup(project, "dsh", "--user", "--remove", "--only", "skill")
    opencode = _setup(project, "opencode", "--only", "hook", "--only", "tool")
    assert Path(opencode["plugin"]).is_file()
    _setup(project, "opencode", "--remove", "--only", "tool", "--only", "hook")
    assert _files(home, project) == {}


def test_only_naming_every_part_is_the_same_as_no_only(world):
    home, project = world
    _setup(project, "claude", "--only", "skill", "--only", "hook", "--only", "tool")
    with_only = _files(home, project)
    _setup(project, "claude", "--remove")
    assert _files(home, project) == {}
    _setup(project, "claude")
    assert _files(home, project) == with_only
    assert os.listdir(project / ".claude")
