"""The real host CLIs read what j-cli setup writes (Codex and Claude Code, pinned).

The test setup installs the pinned npm packages once into .venv/hosts; both
CLIs run offline against a temporary HOME / CODEX_HOME. Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from helpers import REPO, run_cli

PINS = ["@openai/codex@0.171.0", "@anthropic-ai/claude-code@2.1.332"]
HOSTS = REPO / ".venv" / "hosts"


@pytest.fixture(scope="session")
def host_bin():
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the host CLIs cannot run here (config round-trip tests still gate setup)")
    stamp = HOSTS / "pins.json"
    if not stamp.exists() or json.loads(stamp.read_text()) != PINS:
        HOSTS.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [npm, "install", "--prefix", str(HOSTS), "--no-audit", "--no-fund", *PINS],
            capture_output=True, text=True, timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        stamp.write_text(json.dumps(PINS))
    return HOSTS / "node_modules" / ".bin"


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    return home


def host(bin_dir, name, *args, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI", "CLAUDE_CODE"))}
    return subprocess.run([str(bin_dir / name), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def test_codex_lists_our_server_exactly_as_configured(host_bin, home, tmp_path):
    assert run_cli("setup", "codex", cwd=tmp_path).returncode == 0
    listed = json.loads(host(host_bin, "codex", "mcp", "list", "--json").stdout)
    ours = [entry for entry in listed if entry["name"] == "jcli"]
    assert len(ours) == 1, listed
    transport = ours[0]["transport"]
    configured = run_cli("-j", "setup", "codex", cwd=tmp_path).json()["server"]
    assert transport["command"] == configured["command"] and transport["args"] == configured["args"]
    got = host(host_bin, "codex", "mcp", "get", "jcli", "--json")
    assert got.returncode == 0 and json.loads(got.stdout)["transport"]["args"] == configured["args"]
    assert run_cli("setup", "codex", "--remove", cwd=tmp_path).returncode == 0
    after = json.loads(host(host_bin, "codex", "mcp", "list", "--json").stdout)
    assert all(entry["name"] != "jcli" for entry in after)


@pytest.mark.parametrize("scope", ["--local", "--user"])
def test_claude_lists_our_server_and_its_health_check_connects(host_bin, home, tmp_path, scope):
    project = tmp_path / "project"
    project.mkdir()
    assert run_cli("setup", "claude", scope, cwd=project).returncode == 0
    listed = host(host_bin, "claude", "mcp", "list", cwd=project)
    line = next((ln for ln in listed.stdout.splitlines() if ln.startswith("jcli:")), None)
    assert line is not None, listed.stdout + listed.stderr
    assert "Connected" in line, line  # Claude Code started `j-cli mcp serve` and spoke MCP to it
    assert run_cli("setup", "claude", scope, "--remove", cwd=project).returncode == 0
    after = host(host_bin, "claude", "mcp", "list", cwd=project)
    assert not any(ln.startswith("jcli:") for ln in after.stdout.splitlines())
