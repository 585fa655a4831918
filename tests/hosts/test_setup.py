"""j-cli setup against real-world config files: byte-exact round trips."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
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
    assert (
        ours["args"] == ["-m", "jcli", "mcp", "serve", "--host", "codex"]
        and ours["startup_timeout_sec"] == 30
        and ours["tool_timeout_sec"] == 120
        and ours["required"] is True
    )
    assert config.read_text().startswith(CODEX_CONFIG)  # every byte outside our table survives
    skill = tmp_path / "home" / ".agents" / "skills" / "j-cli" / "SKILL.md"
    assert skill.read_text().startswith("---\nname: j-cli\n")
    removed = run_cli("-j", "setup", "codex", "--remove", cwd=tmp_path).json()
    assert removed["removed"] and removed["skill_removed"]
    assert config.read_text() == CODEX_CONFIG and stat.S_IMODE(config.stat().st_mode) == 0o640
    assert not skill.exists()
    again = run_cli("-j", "setup", "codex", "--remove", cwd=tmp_path).json()
    assert again["removed"] is False and config.read_text() == CODEX_CONFIG


def test_codex_waits_for_the_server_unless_the_user_said_not_to(codex_home, tmp_path):
    """``required = true``: Codex starts no turn before j-cli's tools are listed; a user's ``false`` survives a re-setup."""
    config = codex_home / "config.toml"
    assert run_cli("-j", "setup", "codex", cwd=tmp_path).returncode == 0
    assert tomllib.loads(config.read_text())["mcp_servers"]["jcli"]["required"] is True
    config.write_text(config.read_text().replace("required = true\n", "required = false\n"))
    edited = config.read_bytes()
    again = run_cli("-j", "setup", "codex", cwd=tmp_path).json()
    assert again["changed"] is False and config.read_bytes() == edited
    removed = run_cli("-j", "setup", "codex", "--remove", cwd=tmp_path).json()
    assert removed["removed"] and removed["dropped_user_edits"] == [f"[mcp_servers.jcli] in {config}: the keys required = false"]
    assert config.read_text() == CODEX_CONFIG


def test_codex_project_scope_is_portable_and_says_the_project_must_be_trusted(codex_home, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    result = run_cli("-j", "setup", "codex", "--project", cwd=project).json()
    config = project / ".codex" / "config.toml"
    assert result["config"] == str(config.resolve())
    text = config.read_text()
    ours = tomllib.loads(text)["mcp_servers"]["jcli"]
    assert ours["command"] == "j-cli" and ours["args"] == ["mcp", "serve", "--host", "codex"]
    assert str(tmp_path) not in text  # a file teammates commit names no path of this machine
    assert result["project_trusted"] is False
    warning, hooks = [w for w in result["warnings"] if "not on PATH" not in w]  # the PATH check is test_hostile_setup's
    assert hooks.startswith(f"Codex runs the hooks in {project.resolve() / '.codex' / 'hooks.json'} only once you trust them")
    assert "trusted" in warning and json.dumps(str(project.resolve())) in warning and str(codex_home / "config.toml") in warning
    human = run_cli("setup", "codex", "--project", cwd=project)
    assert human.returncode == 0 and b"warning: Codex ignores" in human.stderr
    assert (project / ".agents" / "skills" / "j-cli" / "SKILL.md").exists()
    assert (codex_home / "config.toml").read_text() == CODEX_CONFIG  # the user file is untouched: j-cli never trusts for you
    run_cli("setup", "codex", "--project", "--remove", cwd=project)
    assert not config.exists()  # j-cli created it, j-cli removed it


@pytest.mark.parametrize("where", ["project", "git-root"])
def test_codex_project_trusted_by_the_user_gives_no_warning(codex_home, tmp_path, where):
    repo = tmp_path / "repo"
    project = repo / "sub" if where == "git-root" else repo
    project.mkdir(parents=True)
    (repo / ".git").mkdir()
    trusted = repo if where == "git-root" else project
    with open(codex_home / "config.toml", "a") as fh:
        fh.write(f'\n[projects.{json.dumps(str(trusted.resolve()))}]\ntrust_level = "trusted"\n')
    result = run_cli("-j", "setup", "codex", "--project", cwd=project).json()
    assert result["project_trusted"] is True and [w for w in result["warnings"] if "not on PATH" not in w and "open /hooks" not in w] == []
    again = run_cli("-j", "setup", "codex", "--project", cwd=project).json()
    assert [w for w in again["warnings"] if "not on PATH" not in w] == []  # hooks unchanged: trusted ones stay trusted


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

    assert sorted(asyncio.run(main())) == ["job_status", "job_wait", "notebook_grep", "read_notebook_output", "read_run_output"]


@pytest.mark.parametrize(
    "content, code",
    [
        ("model = \n[broken", "CONFIG_INVALID"),
        ("[mcp_servers.jcli]\ncommand = 'mine'\n", "CONFIG_CONFLICT"),
        ("mcp_servers = { jcli = { command = 'mine' } }\n", "CONFIG_CONFLICT"),
    ],
    ids=["garbage", "user-owned-entry", "user-owned-inline-entry"],
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
    from jcli_sidecar.base.workspace_dir import ensure_outputs_dir

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
    if scope == "--project":  # shared with the team: plain j-cli, no path of this machine
        assert servers["jcli"]["command"] == "j-cli" and servers["jcli"]["args"] == ["mcp", "serve", "--host", "claude"]
        assert str(tmp_path) not in target.read_text()
    else:  # one machine's own file: this install's interpreter, found without PATH
        assert servers["jcli"]["command"] == sys.executable and servers["jcli"]["args"][:4] == ["-m", "jcli", "mcp", "serve"]
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


def _unsealed(text: str) -> str:
    """An installed file without the digest setup seals it with (on its marker line)."""
    token = re.search(r" \[sha256:[0-9a-f]{16}\]", text)
    assert token is not None, "setup seals what it writes whole"
    return text[: token.start()] + text[token.end() :]


def _shipped_plugin(host: str) -> str:
    """The shipped plugin as setup writes it: the shared sidecar client inlined in place of its import line."""
    from jcli.plugins import plugin_path, shared_module_path

    with open(plugin_path(host), encoding="utf-8") as fh:
        shipped = fh.read()
    with open(shared_module_path(), encoding="utf-8") as fh:
        shared = "".join(line.removeprefix("export ") for line in fh.read().splitlines(keepends=True)).rstrip("\n")
    line = next(ln for ln in shipped.splitlines() if ln.endswith("// inlined by j-cli setup"))
    return shipped.replace(line, shared, 1)


def test_setup_opencode_copies_the_shipped_plugin_and_removes_only_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    shipped = _shipped_plugin("opencode")
    project = tmp_path / "project"
    project.mkdir()
    first = run_cli("-j", "setup", "opencode", cwd=project).json()
    target = project / ".opencode" / "plugins" / "jcli.js"
    # the copy is the shipped file, its marker line recording the two folders setup made (.opencode/plugins)
    assert first["changed"] and _unsealed(target.read_text()) == shipped.replace("deletes this file)", "deletes this file) [+2 dirs]", 1)
    assert run_cli("-j", "setup", "opencode", cwd=project).json()["changed"] is False
    assert 'const INSTALLED_COMMAND = ["j-cli"] // set by j-cli setup' in shipped  # the shared copy names j-cli on PATH
    user = run_cli("-j", "setup", "opencode", "--user", cwd=project).json()
    assert user["plugin"] == str(tmp_path / "config" / "opencode" / "plugins" / "jcli.js")
    assert user["command"] == [sys.executable, "-m", "jcli"]  # a user's own copy finds this install without PATH
    user_copy = _unsealed((tmp_path / "config" / "opencode" / "plugins" / "jcli.js").read_text())
    expected = shipped.replace('["j-cli"] // set', f"{json.dumps(user['command'])} // set")
    assert user_copy == expected.replace("deletes this file)", "deletes this file) [+3 dirs]", 1)  # config/opencode/plugins
    neighbour = project / ".opencode" / "plugins" / "theirs.js"
    neighbour.write_text("// someone else's plugin\n")
    assert run_cli("-j", "setup", "opencode", "--remove", cwd=project).json()["removed"]
    assert not target.exists() and neighbour.read_text() == "// someone else's plugin\n"
    target.write_text("// a hand-written jcli.js\n")
    conflict = run_cli("-j", "setup", "opencode", cwd=project)
    assert conflict.returncode == 1 and conflict.error()["code"] == "CONFIG_CONFLICT"
    assert target.read_text() == "// a hand-written jcli.js\n"


DSH_WORKSPACE = """\
# Workspace composition for this repository.
- id: hooks   # the Claude Code hooks bridge
  name: '@deepseek-ai/dsh-hooks-claude-code'
  config:
    hooks: true

# MCP servers only this project sees
- id: mcp-local
  name: "@deepseek-ai/dsh-mcp-client"
  config:
    servers:
      - name: demo
        command: node
        args: [server.mjs, --flag]
"""

DSH_PATCH = """\
# Host-wide patch, hand-edited.
- insert:
    - id: mcp
      name: '@deepseek-ai/dsh-mcp-client'
      config:
        servers:
          - name: search
            env:
              API_KEY: !!js process.env.SEARCH_KEY
              AUTH: !!js '"Bearer " + process.env.TOKEN'
- remove: ui-theme"""  # no final newline


def _yaml(path):
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(path.read_text()) if "!!js" not in path.read_text() else YAML(typ="rt").load(path.read_text())


@pytest.fixture
def dsh_project(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh-home"))
    project = tmp_path / "project"
    (project / ".dsh").mkdir(parents=True)
    (project / ".j-cli" / "outputs" / "run-1").mkdir(parents=True)
    (project / ".j-cli" / "outputs" / "run-1" / "manifest.json").write_text("{}")
    return project


def test_dsh_project_install_twice_then_remove_is_byte_identical(dsh_project):
    config = dsh_project / ".dsh" / "cordis.yml"
    config.write_text(DSH_WORKSPACE)
    config.chmod(0o640)
    first = run_cli("-j", "setup", "dsh", cwd=dsh_project)
    assert first.returncode == 0, first.stderr
    doc = first.json()
    plugin = dsh_project / ".dsh" / "plugins" / "jcli.ts"
    assert doc["changed"] and doc["row"] == {"id": "j-cli", "name": "./plugins/jcli.ts"} and doc["plugin"] == str(plugin)
    # .dsh was there: setup made only plugins/
    assert _unsealed(plugin.read_text()) == _shipped_plugin("dsh").replace("deletes this file)", "deletes this file) [+1 dir]", 1)
    rows = _yaml(config)
    assert [r["id"] for r in rows] == ["hooks", "mcp-local", "j-cli"] and rows[2]["name"] == "./plugins/jcli.ts"
    assert rows[1]["config"]["servers"][0]["args"] == ["server.mjs", "--flag"]
    assert config.read_text().startswith(DSH_WORKSPACE)
    after_first = config.read_bytes()
    assert run_cli("-j", "setup", "dsh", cwd=dsh_project).json()["changed"] is False
    assert config.read_bytes() == after_first
    assert (dsh_project / ".agents" / "skills" / "j-cli" / "SKILL.md").exists()
    removed = run_cli("-j", "setup", "dsh", "--remove", cwd=dsh_project).json()
    assert removed["removed"] and removed["plugin_removed"] and removed["skill_removed"]
    assert config.read_text() == DSH_WORKSPACE and stat.S_IMODE(config.stat().st_mode) == 0o640
    assert not plugin.exists()
    assert (dsh_project / ".j-cli" / "outputs" / "run-1" / "manifest.json").read_text() == "{}"
    again = run_cli("-j", "setup", "dsh", "--remove", cwd=dsh_project).json()
    assert again["removed"] is False and again["plugin_removed"] is False and config.read_text() == DSH_WORKSPACE


def test_dsh_user_scope_inserts_a_patch_with_the_absolute_plugin_path(dsh_project, tmp_path):
    home = tmp_path / "dsh-home"
    home.mkdir()
    patch = home / "cordis.patch.yml"
    patch.write_text(DSH_PATCH)
    doc = run_cli("-j", "setup", "dsh", "--user", cwd=dsh_project).json()
    plugin = home / "plugins" / "jcli.ts"
    assert doc["config"] == str(patch) and doc["row"] == {"insert": [{"id": "j-cli", "name": str(plugin)}]}
    rows = _yaml(patch)
    assert rows[0]["insert"][0]["config"]["servers"][0]["env"]["API_KEY"].tag.value == "tag:yaml.org,2002:js"
    assert rows[1] == {"remove": "ui-theme"} and rows[2]["insert"][0] == {"id": "j-cli", "name": str(plugin)}
    assert plugin.exists() and not (dsh_project / ".dsh" / "cordis.yml").exists()
    assert doc["command"] == [sys.executable, "-m", "jcli"]  # a user's own copy finds this install without PATH
    assert f"const INSTALLED_COMMAND: readonly string[] = {json.dumps(doc['command'])} // set by j-cli setup" in plugin.read_text()
    assert run_cli("-j", "setup", "dsh", "--user", "--remove", cwd=dsh_project).json()["removed"]
    assert patch.read_text() == DSH_PATCH and not plugin.exists()


@pytest.mark.parametrize("before", [None, "", "# nothing yet\n", "[]\n", "# empty for now\n[]  # rows go here\n", "[]"])
def test_dsh_empty_compositions_round_trip(dsh_project, before):
    config = dsh_project / ".dsh" / "cordis.yml"
    if before is not None:
        config.write_text(before)
    assert run_cli("-j", "setup", "dsh", cwd=dsh_project).returncode == 0
    assert [r["id"] for r in _yaml(config)] == ["j-cli"]
    run_cli("-j", "setup", "dsh", cwd=dsh_project)
    assert [r["id"] for r in _yaml(config)] == ["j-cli"]
    assert run_cli("-j", "setup", "dsh", "--remove", cwd=dsh_project).json()["removed"]
    if before is None:
        assert not config.exists()  # j-cli created it
    else:
        assert config.read_text() == before  # it was there (even empty): it stays


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("- id: a\n  name: [unclosed\n", "CONFIG_INVALID"),
        ("plugins:\n  - id: a\n", "CONFIG_INVALID"),
        ("- id: j-cli\n  name: './plugins/theirs.ts'\n", "CONFIG_CONFLICT"),
        ("- insert:\n    - id: j-cli\n      name: theirs\n", "CONFIG_CONFLICT"),
    ],
)
def test_dsh_compositions_we_cannot_edit_are_coded_errors_and_stay_untouched(dsh_project, content, code):
    config = dsh_project / ".dsh" / "cordis.yml"
    config.write_text(content)
    result = run_cli("-j", "setup", "dsh", cwd=dsh_project)
    assert result.returncode == 1 and result.error()["code"] == code, result.stdout + result.stderr
    assert config.read_text() == content
    assert not (dsh_project / ".dsh" / "plugins").exists()


def test_dsh_refuses_to_replace_or_delete_a_foreign_plugin_file(dsh_project):
    plugin = dsh_project / ".dsh" / "plugins" / "jcli.ts"
    plugin.parent.mkdir()
    plugin.write_text("// a hand-written jcli.ts\n")
    result = run_cli("-j", "setup", "dsh", cwd=dsh_project)
    assert result.returncode == 1 and result.error()["code"] == "CONFIG_CONFLICT"
    assert plugin.read_text() == "// a hand-written jcli.ts\n"
    assert not (dsh_project / ".dsh" / "cordis.yml").exists()
    removal = run_cli("-j", "setup", "dsh", "--remove", cwd=dsh_project)
    assert removal.returncode == 1 and removal.error()["code"] == "CONFIG_CONFLICT"
    assert plugin.read_text() == "// a hand-written jcli.ts\n"
