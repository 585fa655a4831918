"""j-cli setup against real-world config files: byte-exact round trips."""

from __future__ import annotations

import asyncio
import os
import stat
import tomllib

import pytest
from helpers import run_cli

CODEX_CONFIG = """\
# Codex configuration, hand-edited.
model = "gpt-5.3-codex"   # the default model
approval_policy = "on-request"

[mcp_servers.docs]
# documentation lookups
command = "npx"
args = ["-y", "docs-mcp@1.2.3"]   # pinned
startup_timeout_sec = 20

[mcp_servers.docs.env]
DOCS_TOKEN = "not-a-real-token"

[hooks]
# run before every tool call
pre_tool = ["./scripts/check.sh"]

[profiles.fast]
model = "gpt-5.3-codex-mini"
model_reasoning_effort = "low"
"""


@pytest.fixture
def codex_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").write_text(CODEX_CONFIG)
    (codex / "config.toml").chmod(0o640)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    return codex


def test_codex_install_twice_then_remove_is_byte_identical(codex_home, tmp_path):
    config = codex_home / "config.toml"
    first = run_cli("-j", "setup", "codex", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    after_first = config.read_bytes()
    second = run_cli("-j", "setup", "codex", cwd=tmp_path).json()
    assert second["changed"] is False and config.read_bytes() == after_first
    parsed = tomllib.loads(config.read_text())
    assert parsed["mcp_servers"]["docs"]["args"] == ["-y", "docs-mcp@1.2.3"]
    ours = parsed["mcp_servers"]["jcli"]
    assert ours["args"] == ["-m", "jcli", "mcp", "serve"] and ours["startup_timeout_sec"] == 30 and ours["tool_timeout_sec"] == 120
    assert config.read_text().startswith(CODEX_CONFIG)  # every byte outside our table survives
    skill = tmp_path / "home" / ".agents" / "skills" / "j-cli" / "SKILL.md"
    assert skill.read_text().startswith("---\nname: j-cli\n")
    removed = run_cli("-j", "setup", "codex", "--remove", cwd=tmp_path).json()
    assert removed["removed"] and removed["skill_removed"]
    assert config.read_text() == CODEX_CONFIG and stat.S_IMODE(config.stat().st_mode) == 0o640
    assert not skill.exists()
    again = run_cli("-j", "setup", "codex", "--remove", cwd=tmp_path).json()
    assert again["removed"] is False and config.read_text() == CODEX_CONFIG


def test_codex_project_scope_roots_the_server_in_the_project(codex_home, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    result = run_cli("-j", "setup", "codex", "--project", cwd=project).json()
    config = project / ".codex" / "config.toml"
    assert result["config"] == str(config.resolve())
    ours = tomllib.loads(config.read_text())["mcp_servers"]["jcli"]
    assert ours["args"][-2:] == ["--root", str(project.resolve())]
    assert (project / ".agents" / "skills" / "j-cli" / "SKILL.md").exists()
    assert (codex_home / "config.toml").read_text() == CODEX_CONFIG  # the user file is untouched
    run_cli("setup", "codex", "--project", "--remove", cwd=project)
    assert not config.exists()  # j-cli created it, j-cli removed it


def test_the_configured_server_really_starts_and_lists_its_tools(codex_home, tmp_path):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    run_cli("setup", "codex", cwd=tmp_path)
    ours = tomllib.loads((codex_home / "config.toml").read_text())["mcp_servers"]["jcli"]

    async def main():
        params = StdioServerParameters(command=ours["command"], args=ours["args"], cwd=str(tmp_path), env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [tool.name for tool in (await session.list_tools()).tools]

    assert sorted(asyncio.run(main())) == ["read_notebook_output", "read_run_output"]


@pytest.mark.parametrize(
    "content, code",
    [
        ("model = \n[broken", "CONFIG_INVALID"),
        ("mcp_servers = { docs = { command = 'x' } }\n", "CONFIG_INVALID"),
        ("[mcp_servers.jcli]\ncommand = 'mine'\n", "CONFIG_CONFLICT"),
    ],
    ids=["garbage", "inline-table", "user-owned-entry"],
)
def test_a_config_we_cannot_edit_is_a_coded_error_and_stays_untouched(codex_home, tmp_path, content, code):
    config = codex_home / "config.toml"
    config.write_text(content)
    result = run_cli("-j", "setup", "codex", cwd=tmp_path)
    assert result.returncode == 1 and result.error()["code"] == code
    assert config.read_text() == content


def test_setup_git_adds_and_removes_only_its_block(tmp_path):
    gitignore = tmp_path / ".gitignore"
    original = "node_modules/\n*.pyc"  # no trailing newline on purpose
    gitignore.write_text(original)
    first = run_cli("-j", "setup", "git", cwd=tmp_path).json()
    assert first["changed"] and "**/.j-cli/" in gitignore.read_text().splitlines()
    snapshot = gitignore.read_bytes()
    assert run_cli("-j", "setup", "git", cwd=tmp_path).json()["changed"] is False and gitignore.read_bytes() == snapshot
    assert run_cli("-j", "setup", "git", "--remove", cwd=tmp_path).json()["removed"]
    assert gitignore.read_text() == original


def test_exec_never_touches_gitignore(tmp_path):
    from jcli_sidecar.store import ensure_outputs_dir

    ensure_outputs_dir(str(tmp_path))
    assert not (tmp_path / ".gitignore").exists()
    assert (tmp_path / ".j-cli" / ".gitignore").read_text().splitlines()[-1] == "*"


CLAUDE_JSON = {
    "numStartups": 12,
    "theme": "dark",
    "mcpServers": {"search": {"type": "stdio", "command": "npx", "args": ["-y", "search-mcp"], "env": {"KEY": "x"}}},
    "projects": {"/somewhere/else": {"allowedTools": [], "mcpServers": {"db": {"type": "stdio", "command": "db-mcp", "args": []}}}},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]},
}


@pytest.fixture
def claude_home(tmp_path, monkeypatch):
    import json

    home = tmp_path / "home"
    home.mkdir()
    config = home / ".claude.json"
    config.write_text(json.dumps(CLAUDE_JSON, indent=2) + "\n")
    config.chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.parametrize("scope", ["--local", "--user", "--project"])
def test_claude_install_twice_then_remove_is_byte_identical(claude_home, tmp_path, scope):
    import json

    project = tmp_path / "project"
    project.mkdir()
    config = claude_home / ".claude.json"
    original = config.read_bytes()
    assert run_cli("setup", "claude", scope, cwd=project).returncode == 0
    second = run_cli("-j", "setup", "claude", scope, cwd=project).json()
    assert second["changed"] is False
    target = project / ".mcp.json" if scope == "--project" else config
    doc = json.loads(target.read_text())
    servers = {
        "--local": lambda d: d["projects"][str(project.resolve())]["mcpServers"],
        "--user": lambda d: d["mcpServers"],
        "--project": lambda d: d["mcpServers"],
    }[scope](doc)
    assert servers["jcli"]["args"][:4] == ["-m", "jcli", "mcp", "serve"]
    if scope != "--project":
        assert doc["mcpServers"]["search"] == CLAUDE_JSON["mcpServers"]["search"] and doc["hooks"] == CLAUDE_JSON["hooks"]
    assert run_cli("-j", "setup", "claude", scope, "--remove", cwd=project).json()["removed"]
    assert config.read_bytes() == original and stat.S_IMODE(config.stat().st_mode) == 0o600
    assert not (project / ".mcp.json").exists()


def test_claude_refuses_a_foreign_jcli_entry_and_broken_json(claude_home, tmp_path):
    import json

    config = claude_home / ".claude.json"
    foreign = dict(CLAUDE_JSON, mcpServers={"jcli": {"command": "something-else"}})
    config.write_text(json.dumps(foreign, indent=2))
    result = run_cli("-j", "setup", "claude", "--user", cwd=tmp_path)
    assert result.returncode == 1 and result.error()["code"] == "CONFIG_CONFLICT"
    config.write_text("{ not json")
    result = run_cli("-j", "setup", "claude", "--user", cwd=tmp_path)
    assert result.returncode == 1 and result.error()["code"] == "CONFIG_INVALID"
    assert config.read_text() == "{ not json"


def test_setup_opencode_copies_the_shipped_plugin_and_removes_only_it(tmp_path, monkeypatch):
    from jcli.plugins import plugin_path

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with open(plugin_path("opencode"), encoding="utf-8") as fh:
        shipped = fh.read()
    project = tmp_path / "project"
    project.mkdir()
    first = run_cli("-j", "setup", "opencode", cwd=project).json()
    target = project / ".opencode" / "plugins" / "jcli.js"
    assert first["changed"] and target.read_text() == shipped
    assert run_cli("-j", "setup", "opencode", cwd=project).json()["changed"] is False
    user = run_cli("-j", "setup", "opencode", "--user", cwd=project).json()
    assert user["plugin"] == str(tmp_path / "config" / "opencode" / "plugins" / "jcli.js")
    neighbour = project / ".opencode" / "plugins" / "theirs.js"
    neighbour.write_text("// someone else's plugin\n")
    assert run_cli("-j", "setup", "opencode", "--remove", cwd=project).json()["removed"]
    assert not target.exists() and neighbour.read_text() == "// someone else's plugin\n"
    target.write_text("// a hand-written jcli.js\n")
    conflict = run_cli("-j", "setup", "opencode", cwd=project)
    assert conflict.returncode == 1 and conflict.error()["code"] == "CONFIG_CONFLICT"
    assert target.read_text() == "// a hand-written jcli.js\n"
