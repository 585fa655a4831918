"""One temporary Claude Code world for the real-host tests: a HOME, a project, j-cli set up, a scripted model.

:func:`setup_claude` runs the real ``j-cli setup claude``; :func:`approve`
records what an interactive ``claude`` writes when the user trusts the
folder and approves the project's server; :func:`run_claude` runs one
``claude -p`` turn against ``tests/hosts/model_server.py`` on loopback (through
``ANTHROPIC_BASE_URL``) with ``j-cli`` on PATH, as on a user's machine.
The world's ``home`` and ``project`` are fixtures of ``tests/hosts/conftest.py``.
"""

from __future__ import annotations

import json
import os
import subprocess

from helpers import BIN, run_cli
from hostbins import host_env
from model_server import ScriptedModel

#: The scripted model's last words, which ``claude -p`` prints when the turn ends.
FINAL = "scripted turn over"
TURN_TIMEOUT = 60


def approve(home, project, how):
    """What an interactive ``claude`` records when the user trusts the folder and approves the server."""
    config = home / ".claude.json"
    doc = json.loads(config.read_text()) if config.exists() else {}  # Claude Code has written its own keys by now
    doc.setdefault("projects", {}).setdefault(os.path.realpath(project), {})["hasTrustDialogAccepted"] = True
    config.write_text(json.dumps(doc, indent=2))
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir(exist_ok=True)
    local.write_text(json.dumps({"enabledMcpjsonServers": ["jcli"]} if how == "one" else {"enableAllProjectMcpServers": True}))


def setup_claude(project, *args) -> dict:
    done = run_cli("-j", "setup", "claude", *args, cwd=project)
    assert done.returncode == 0, done.stderr
    return done.json()


def project_setup(home, project) -> None:
    """``j-cli setup claude --project``, then what a user's approval in an interactive ``claude`` records."""
    setup_claude(project, "--project")
    approve(home, project, "one")


def run_claude(host_bin, home, project, script, allowed, *options, prefix=()) -> tuple[ScriptedModel, str]:
    """Run ``claude -p`` once against a scripted model: the model server (with what it received), and what Claude printed."""
    with ScriptedModel(script) as model:
        env = host_env(
            home,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1,
            CLAUDE_CODE_MAX_RETRIES=0,
            ANTHROPIC_API_KEY="sk-scripted",
            ANTHROPIC_BASE_URL=model.url,
            # Claude Code connects MCP servers without waiting by default; j-cli's (on the MCP SDK) takes about a
            # second to start, so a loaded machine could send the first request before its tools are listed.
            # docs/hosts.md tells users the same switch.
            MCP_CONNECTION_NONBLOCKING="false",
        )
        env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])  # `j-cli` on PATH, as on a user's machine
        argv = [*prefix, str(host_bin / "claude"), "-p", "go", "--allowedTools", ",".join(allowed), *options]
        proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=TURN_TIMEOUT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return model, proc.stdout


def claude_turn(host_bin, home, project, script, *allowed, prefix=()) -> ScriptedModel:
    """One turn; what the user of ``claude -p`` sees is the model's last words."""
    model, shown = run_claude(host_bin, home, project, script, allowed, prefix=prefix)
    assert shown.strip() == FINAL, shown[-2000:]
    return model
