"""The real Claude Code CLI (pinned in tests/hosts) reads what ``j-cli setup claude`` writes.

Claude Code runs offline against a temporary HOME (``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``
stops even its DNS look-ups). Nothing is mocked: ``claude mcp list`` and
``claude mcp get`` start ``j-cli mcp serve`` themselves and report whether the
MCP handshake succeeded.

What Claude Code 2.1.332 prints, and how a project server gets approved (found
by running the binary, and in its own messages):

- ``mcp list``: ``jcli: <command> <args joined by spaces> - <status>``;
- ``mcp get jcli``: ``jcli:`` then indented ``Scope:``, ``Status:``, ``Type:``,
  ``Command:``, ``Args:`` lines, then ``claude mcp remove jcli -s <scope>``;
  for an unknown name it exits 1 with ``No MCP server named "jcli"`` on stderr;
- a ``.mcp.json`` server is ``⏸ Pending approval`` (and is not started) until
  the user, in an interactive ``claude``, accepts the workspace trust dialog
  (``projects[<dir>].hasTrustDialogAccepted`` in ``~/.claude.json``) and then
  approves the server, which Claude records in the project's
  ``.claude/settings.local.json`` as ``enabledMcpjsonServers: [name]`` (or
  ``enableAllProjectMcpServers: true`` for "all future servers too"). An
  approval in an untrusted folder still shows as pending.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from claude_world import approve
from helpers import BIN, run_cli
from hostbins import host_env

CONNECTED = "✔ Connected"
PENDING = "⏸ Pending approval (run `claude` to approve)"
SCOPES = {
    "--local": ("local", "Local config (private to you in this project)"),
    "--user": ("user", "User config (available in all your projects)"),
}
PROJECT_SCOPE = "Project config (shared via .mcp.json)"
#: What ``setup claude --project`` writes: teammates commit it, so no absolute path, no --root.
PORTABLE = {"type": "stdio", "command": "j-cli", "args": ["mcp", "serve", "--host", "claude"], "env": {}}


def claude(bin_dir, home, *args, cwd=None, path_first=None):
    env = host_env(home, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1)
    if path_first is not None:
        env["PATH"] = os.pathsep.join([str(path_first), env.get("PATH", "")])
    return subprocess.run([str(bin_dir / "claude"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def listed(proc) -> str | None:
    """Our line in ``claude mcp list``, or None."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return next((ln for ln in proc.stdout.splitlines() if ln.startswith("jcli:")), None)


def described(proc) -> dict[str, str]:
    """The ``Key: value`` lines of ``claude mcp get jcli``."""
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines and lines[0] == "jcli:", proc.stdout + proc.stderr
    fields = {}
    for ln in lines[1:]:
        if ln.startswith("  ") and ":" in ln:
            key, _, value = ln.strip().partition(":")
            fields[key] = value.strip()
    return fields


def assert_nothing_listed(bin_dir, home, project, **kw):
    after = claude(bin_dir, home, "mcp", "list", cwd=project, **kw)
    assert listed(after) is None, after.stdout
    assert "No MCP servers configured" in after.stdout, after.stdout
    gone = claude(bin_dir, home, "mcp", "get", "jcli", cwd=project, **kw)
    assert gone.returncode == 1 and 'No MCP server named "jcli"' in gone.stderr, gone.stdout + gone.stderr


def dirs(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "project"
    project.mkdir()
    return home, project


@pytest.mark.parametrize("scope", list(SCOPES))
def test_claude_lists_and_gets_our_server_and_its_health_check_connects(host_bin, tmp_path, monkeypatch, scope):
    home, project = dirs(tmp_path, monkeypatch)
    done = run_cli("-j", "setup", "claude", scope, cwd=project)
    assert done.returncode == 0, done.stderr
    server = done.json()["server"]
    shown = f"{server['command']} {' '.join(server['args'])}"

    line = listed(claude(host_bin, home, "mcp", "list", cwd=project))
    assert line == f"jcli: {shown} - {CONNECTED}"  # Claude Code started `j-cli mcp serve` and spoke MCP to it

    got = claude(host_bin, home, "mcp", "get", "jcli", cwd=project)
    name, label = SCOPES[scope]
    fields = described(got)
    assert fields["Scope"] == label
    assert fields["Status"] == CONNECTED
    assert fields["Type"] == server["type"] == "stdio"
    assert fields["Command"] == server["command"]
    assert fields["Args"] == " ".join(server["args"])
    assert f"claude mcp remove jcli -s {name}" in got.stdout

    removed = run_cli("-j", "setup", "claude", scope, "--remove", cwd=project)
    assert removed.returncode == 0 and removed.json()["removed"] is True, removed.stderr
    assert_nothing_listed(host_bin, home, project)


def test_claude_loads_our_server_from_a_hand_formatted_config_and_remove_keeps_its_entry(host_bin, tmp_path, monkeypatch):
    """A 4-space ~/.claude.json whose project entry has its own ``"mcpServers": {}``: setup edits it as text."""
    home, project = dirs(tmp_path, monkeypatch)
    config = home / ".claude.json"
    key = os.path.realpath(project)
    config.write_text(json.dumps({"projects": {key: {"allowedTools": [], "mcpServers": {}}}}, indent=4))
    done = run_cli("-j", "setup", "claude", "--local", cwd=project)
    assert done.returncode == 0, done.stderr
    server = done.json()["server"]
    line = listed(claude(host_bin, home, "mcp", "list", cwd=project))
    assert line == f"jcli: {server['command']} {' '.join(server['args'])} - {CONNECTED}"
    removed = run_cli("-j", "setup", "claude", "--local", "--remove", cwd=project)
    assert removed.returncode == 0 and removed.json()["removed"] is True, removed.stderr
    assert_nothing_listed(host_bin, home, project)
    entry = json.loads(config.read_text())["projects"][key]  # Claude Code may have added keys of its own by now
    assert entry["mcpServers"] == {} and entry["allowedTools"] == []


@pytest.mark.parametrize("how", ["one", "all"], ids=["enabledMcpjsonServers", "enableAllProjectMcpServers"])
def test_claude_shows_the_project_server_pending_then_connects_once_approved(host_bin, tmp_path, monkeypatch, how):
    home, project = dirs(tmp_path, monkeypatch)
    done = run_cli("-j", "setup", "claude", "--project", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.json()["server"] == PORTABLE
    text = (project / ".mcp.json").read_text()
    assert json.loads(text) == {"mcpServers": {"jcli": PORTABLE}}
    assert str(tmp_path) not in text and os.path.realpath(tmp_path) not in text  # nothing machine-specific to commit
    shown = "j-cli mcp serve --host claude"
    on_path = {"path_first": BIN}  # `j-cli` is found on PATH, as on a teammate's machine

    line = listed(claude(host_bin, home, "mcp", "list", cwd=project, **on_path))
    assert line == f"jcli: {shown} - {PENDING}"
    fields = described(claude(host_bin, home, "mcp", "get", "jcli", cwd=project, **on_path))
    assert (fields["Scope"], fields["Status"]) == (PROJECT_SCOPE, PENDING)
    assert (fields["Type"], fields["Command"], fields["Args"]) == ("stdio", "j-cli", "mcp serve --host claude")

    approve(home, project, how)
    line = listed(claude(host_bin, home, "mcp", "list", cwd=project, **on_path))
    assert line == f"jcli: {shown} - {CONNECTED}"  # started from PATH, in the project, and it answered
    got = claude(host_bin, home, "mcp", "get", "jcli", cwd=project, **on_path)
    fields = described(got)
    assert (fields["Scope"], fields["Status"], fields["Command"], fields["Args"]) == (
        PROJECT_SCOPE,
        CONNECTED,
        "j-cli",
        "mcp serve --host claude",
    )
    assert "claude mcp remove jcli -s project" in got.stdout

    removed = run_cli("-j", "setup", "claude", "--project", "--remove", cwd=project)
    assert removed.returncode == 0 and removed.json()["removed"] is True, removed.stderr
    assert_nothing_listed(host_bin, home, project, **on_path)
