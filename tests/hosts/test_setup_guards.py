"""``j-cli setup claude|codex`` install the guard hooks, and replace upstream's.

The upstream files under ``fixtures/upstream_setup`` are what upstream
jupyter-jcli 0.9.7 wrote in a scratch project, recorded once from
``j-cli setup claude|codex --project --only hook --only tool`` (its skill
is left out: it is not one of the entries this migration covers), with the
project's path replaced by ``@PROJECT@``. Fixtures rather than running
upstream here: upstream's setup needs the host CLIs on PATH and a venv the
suite does not build, and these bytes are its real output.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys

import pytest
from helpers import BIN, REPO, run_cli

UPSTREAM = REPO / "tests" / "fixtures" / "upstream_setup"
GUARDS = ("notebook-exec-guard", "python-run-guard", "notebook-edit-guard", "pair-drift-guard-pre", "pair-drift-guard-post")
#: A user's own settings: a hook in a Bash group, another event, other keys; pretty-printed as Claude writes it.
USER_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}],
    },
}
DENY_PAYLOAD = {"tool_name": "Bash", "tool_input": {"command": "papermill a.ipynb out.ipynb"}, "cwd": "."}
ALLOW_PAYLOAD = {"tool_name": "Bash", "tool_input": {"command": "ls -la"}, "cwd": "."}


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    return home


@pytest.fixture
def project(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    return project


def claude_settings(scope, home, project):
    return {"--project": project / ".claude" / "settings.json", "--local": project / ".claude" / "settings.local.json"}.get(
        scope, home / ".claude" / "settings.json"
    )


def ours(doc):
    """``{event: [(matcher, [hook names])]}`` of j-cli's groups."""
    found = {}
    for event, groups in doc.get("hooks", {}).items():
        for group in groups:
            hooks = group.get("hooks", [])
            if hooks and all("_jcli_guard" in h for h in hooks):
                found.setdefault(event, []).append((group.get("matcher"), [name(h) for h in hooks]))
    return found


def name(hook):
    """The guard a hook of ours runs (its mark may also record the directories setup made: ``NAME [+1 dir]``)."""
    return hook["_jcli_guard"].split(" [+")[0]


def commands(doc):
    return [h["command"] for groups in doc["hooks"].values() for g in groups for h in g["hooks"] if "_jcli_guard" in h]


@pytest.mark.parametrize("scope", ["--project", "--local", "--user"])
def test_claude_hooks_go_in_beside_the_users_and_come_out_byte_identical(home, project, scope):
    settings = claude_settings(scope, home, project)
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    original = settings.read_bytes()
    first = run_cli("setup", "claude", scope, cwd=project)
    assert first.returncode == 0, first.stderr
    assert f"hooks: {settings}" in first.stdout.decode()
    doc = json.loads(settings.read_text())
    assert ours(doc) == {
        "PreToolUse": [
            ("Bash", ["notebook-exec-guard", "python-run-guard"]),
            ("NotebookEdit|Edit|Write|MultiEdit", ["notebook-edit-guard", "pair-drift-guard-pre"]),
        ],
        "PostToolUse": [("Edit|Write|MultiEdit", ["pair-drift-guard-post"])],
    }
    # the user's hooks are all still there, in their own groups, before ours
    assert doc["hooks"]["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert doc["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"] and doc["permissions"] == USER_SETTINGS["permissions"]
    prefix = ["j-cli"] if scope == "--project" else [sys.executable, "-m", "jcli"]
    assert all(shlex.split(c)[: len(prefix)] == prefix and shlex.split(c)[-2:] == ["--platform", "claude"] for c in commands(doc))
    after_first = settings.read_bytes()
    again = run_cli("-j", "setup", "claude", scope, cwd=project).json()
    assert again["changed"] is False and again["hooks"] == str(settings) and again["replaced_upstream"] == []
    assert settings.read_bytes() == after_first
    removed = run_cli("-j", "setup", "claude", scope, "--remove", cwd=project).json()
    assert removed["hooks_removed"] is True
    assert settings.read_bytes() == original


def test_claude_settings_setup_creates_are_deleted_by_remove(home, project):
    assert run_cli("setup", "claude", "--project", cwd=project).returncode == 0
    settings = project / ".claude" / "settings.json"
    assert set(ours(json.loads(settings.read_text()))) == {"PreToolUse", "PostToolUse"}
    assert run_cli("setup", "claude", "--project", "--remove", cwd=project).returncode == 0
    assert not settings.exists() and not (project / ".claude").exists()  # setup made the directory, and it is empty again


def test_a_user_hook_added_to_our_group_keeps_the_group_and_is_never_removed(home, project):
    assert run_cli("setup", "claude", "--project", cwd=project).returncode == 0
    settings = project / ".claude" / "settings.json"
    doc = json.loads(settings.read_text())
    doc["hooks"]["PreToolUse"][0]["hooks"].append({"type": "command", "command": "echo mine"})
    settings.write_text(json.dumps(doc, indent=2))
    assert run_cli("setup", "claude", "--project", "--remove", cwd=project).returncode == 0
    left = json.loads(settings.read_text())
    assert {"type": "command", "command": "echo mine"} in left["hooks"]["PreToolUse"][0]["hooks"]


@pytest.mark.parametrize("content", ['{"hooks": []}', '{"hooks": {"PreToolUse": {}}}', "[1]", "{ nope"])
def test_claude_settings_we_cannot_edit_are_coded_errors_and_stay_untouched(home, project, content):
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(content)
    result = run_cli("-j", "setup", "claude", "--project", cwd=project)
    assert result.returncode == 1 and result.error()["code"] == "CONFIG_INVALID", result.stderr
    assert settings.read_text() == content and not (project / ".mcp.json").exists()


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_codex_hooks_json_beside_the_config_round_trips(home, project, scope):
    hooks = (project / ".codex" if scope == "--project" else home / ".codex") / "hooks.json"
    hooks.parent.mkdir(parents=True)
    hooks.write_text(json.dumps(USER_SETTINGS, indent=2))  # no final newline: kept as it is
    original = hooks.read_bytes()
    result = run_cli("-j", "setup", "codex", scope, cwd=project).json()
    assert result["hooks"] == str(hooks)
    doc = json.loads(hooks.read_text())
    assert ours(doc) == {
        "PreToolUse": [
            ("Bash", ["notebook-exec-guard", "python-run-guard"]),
            ("apply_patch", ["notebook-edit-guard", "pair-drift-guard-pre"]),
        ],
        "PostToolUse": [("apply_patch", ["pair-drift-guard-post"])],
    }
    assert all(c.endswith("--platform codex") for c in commands(doc))
    assert doc["hooks"]["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert run_cli("-j", "setup", "codex", scope, cwd=project).json()["changed"] is False
    assert run_cli("setup", "codex", scope, "--remove", cwd=project).returncode == 0
    assert hooks.read_bytes() == original


def test_codex_hooks_feature_off_is_a_warning_naming_the_setting(home, project):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("[features]\nhooks = false\n")
    result = run_cli("-j", "setup", "codex", "--user", cwd=project).json()
    assert any("[features] hooks = true" in w and str(config) in w for w in result["warnings"]), result
    human = run_cli("setup", "codex", "--user", cwd=project)
    assert "warning: Codex's hooks are off" in human.stderr.decode()
    config.write_text(config.read_text().replace("hooks = false", "hooks = true"))
    assert "warnings" not in run_cli("-j", "setup", "codex", "--user", cwd=project).json()


def _upstream_project(project):
    for name, dest in (
        ("mcp.json", ".mcp.json"),
        ("claude_settings.json", ".claude/settings.json"),
        ("codex_hooks.json", ".codex/hooks.json"),
        ("codex_config.toml", ".codex/config.toml"),
    ):
        path = project / dest
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((UPSTREAM / name).read_text().replace("@PROJECT@", str(project)))


def test_upstream_entries_are_replaced_with_ours_and_the_users_stay(home, project):
    _upstream_project(project)
    settings = project / ".claude" / "settings.json"
    doc = json.loads(settings.read_text())
    doc["hooks"]["PreToolUse"][0]["hooks"].append({"type": "command", "command": "echo mine"})  # a user's hook in upstream's group
    doc["hooks"]["Stop"] = USER_SETTINGS["hooks"]["Stop"]
    settings.write_text(json.dumps(doc, indent=2) + "\n")
    # Before setup, upstream's entries never block a call: every command they name is allowed on an ordinary payload.
    seen = set()
    for command in commands(
        {"hooks": {e: [{"hooks": [dict(h, _jcli_guard=1) for h in g["hooks"]]} for g in gs] for e, gs in doc["hooks"].items()}}
    ):
        argv = shlex.split(command)
        if argv[0] not in ("j-cli", "j-cli-hook"):  # both are installed by j-cli
            continue  # the user's own hook
        seen.add(argv[0])
        proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], input=json.dumps(ALLOW_PAYLOAD).encode(), capture_output=True, cwd=project)
        assert proc.returncode == 0 and proc.stdout == b"", (command, proc.stderr)
    assert seen == {"j-cli", "j-cli-hook"}

    human = run_cli("setup", "claude", "--project", cwd=project)
    assert human.returncode == 0, human.stderr
    out = human.stdout.decode()
    assert f"replaced upstream j-cli's MCP server jcli-notebook-output in {project / '.mcp.json'}" in out
    assert "replaced upstream j-cli's hooks notebook-exec-guard, python-run-guard" in out
    text = settings.read_text() + (project / ".mcp.json").read_text()
    assert "_jcli_managed" not in text and "jcli-notebook-output" not in text
    doc = json.loads(settings.read_text())
    assert {"type": "command", "command": "echo mine"} in [h for g in doc["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert doc["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"] and len(ours(doc)["PreToolUse"]) == 2
    assert "jcli" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert run_cli("-j", "setup", "claude", "--project", cwd=project).json()["replaced_upstream"] == []

    codex = run_cli("-j", "setup", "codex", "--project", cwd=project).json()
    assert len(codex["replaced_upstream"]) == 2, codex
    hooks_text = (project / ".codex" / "hooks.json").read_text()
    config_text = (project / ".codex" / "config.toml").read_text()
    assert "_jcli_managed" not in hooks_text and "jcli-notebook-output" not in config_text and "[mcp_servers.jcli]" in config_text
    assert set(ours(json.loads(hooks_text))) == {"PreToolUse", "PostToolUse"}


def _run_written(command, payload, cwd, env):
    return subprocess.run(command, shell=True, input=json.dumps(payload).encode(), capture_output=True, cwd=cwd, env=env, timeout=60)


@pytest.mark.parametrize(("host", "scope"), [("claude", "--project"), ("claude", "--user"), ("codex", "--project"), ("codex", "--user")])
def test_the_command_setup_wrote_really_runs_and_denies(home, project, tmp_path, host, scope):
    assert run_cli("setup", host, scope, cwd=project).returncode == 0
    path = (
        claude_settings(scope, home, project) if host == "claude" else (project if scope == "--project" else home) / ".codex" / "hooks.json"
    )
    doc = json.loads(path.read_text())
    bash_group = next(g for g in doc["hooks"]["PreToolUse"] if g["matcher"] == "Bash")
    exec_guard = next(h["command"] for h in bash_group["hooks"] if name(h) == "notebook-exec-guard")
    # The MCP reader broken: an `mcp` package that fails on import shadows the real one.
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('mcp is broken here')\n")
    env = dict(os.environ, PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]), PYTHONPATH=str(shadow.parent))
    assert subprocess.run([sys.executable, "-c", "import mcp"], env=env, capture_output=True).returncode != 0
    denied = _run_written(exec_guard, dict(DENY_PAYLOAD, cwd=str(project)), project, env)
    assert denied.returncode == 2, denied.stderr
    decision = json.loads(denied.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny" and "j-cli exec" in decision["permissionDecisionReason"]
    allowed = _run_written(exec_guard, dict(ALLOW_PAYLOAD, cwd=str(project)), project, env)
    assert allowed.returncode == 0 and allowed.stdout == b"" and allowed.stderr == b""


def test_real_codex_reads_the_hooks_flag_setup_warns_about(home, project, host_bin):
    """``codex features list`` (offline) shows the flag as Codex reads it: off when we warn, on when we do not."""
    from hostbins import host_env, offline_prefix

    def hooks_feature():
        env = host_env(home, CODEX_HOME=home / ".codex")
        proc = subprocess.run(
            [*offline_prefix(), str(host_bin / "codex"), "features", "list"], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return next(line.split()[-1] for line in proc.stdout.splitlines() if line.split()[:1] == ["hooks"])

    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("[features]\nhooks = false\n")
    assert run_cli("-j", "setup", "codex", "--user", cwd=project).json()["warnings"]
    assert hooks_feature() == "false"
    config.write_text(config.read_text().replace("[features]\nhooks = false\n", "[features]\nhooks = true\n"))
    assert "warnings" not in run_cli("-j", "setup", "codex", "--user", cwd=project).json()
    assert hooks_feature() == "true"


def _claude_prompt(host_bin, home, project):
    """``claude -p`` offline: it loads every settings file and runs UserPromptSubmit hooks before its (failing) API call."""
    from hostbins import host_env, offline_prefix

    env = host_env(
        home, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, ANTHROPIC_API_KEY="sk-offline", ANTHROPIC_BASE_URL="http://127.0.0.1:9"
    )
    env["CLAUDE_CODE_MAX_RETRIES"] = "0"
    log = project / "claude-debug.log"
    subprocess.run(
        [*offline_prefix(), str(host_bin / "claude"), "--debug-file", str(log), "-p", "hi"],
        cwd=project,
        env=env,
        capture_output=True,
        timeout=180,
    )
    return log.read_text()


@pytest.mark.parametrize("scope", ["--user", "--project", "--local"])
def test_real_claude_loads_the_settings_file_with_our_hooks(home, project, host_bin, scope):
    """Claude Code validates each settings file and skips one with a bad hook entry ("Invalid setting skipped").

    A user's UserPromptSubmit hook in the same file as ours runs, so Claude
    loaded the file, our marked entries included; the same file with one
    bad entry is skipped (the control: the check can fail).
    """
    assert run_cli("setup", "claude", scope, cwd=project).returncode == 0
    config = home / ".claude.json"
    doc = json.loads(config.read_text()) if config.exists() else {}
    doc.setdefault("projects", {}).setdefault(os.path.realpath(project), {})["hasTrustDialogAccepted"] = True
    config.write_text(json.dumps(doc, indent=2))
    settings = claude_settings(scope, home, project)
    marker = project / "prompt-hook-ran"
    doc = json.loads(settings.read_text())
    doc["hooks"]["UserPromptSubmit"] = [{"hooks": [{"type": "command", "command": f"touch {shlex.quote(str(marker))}"}]}]
    settings.write_text(json.dumps(doc, indent=2))
    log = _claude_prompt(host_bin, home, project)
    assert "Invalid setting" not in log and marker.exists(), log[-3000:]
    if scope == "--user":
        marker.unlink()
        doc["hooks"]["PreToolUse"][0]["hooks"].append({"type": "bogus"})
        settings.write_text(json.dumps(doc, indent=2))
        log = _claude_prompt(host_bin, home, project)
        assert "Invalid setting" in log and not marker.exists()


def _upstream_skill(folder, edited=False):
    """A skill folder in upstream's layout: files plus ``.j-cli-managed.json`` listing each one's sha256 (contents are ours)."""
    import hashlib

    contents = {"SKILL.md": "---\nname: j-cli\n---\nold\n", "workflows/exec.md": "exec\n", "scripts/x.py": "print(1)\n"}
    for rel, text in contents.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    manifest = {"files": {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in contents.items()}, "schema": 1}
    manifest["source"] = "jupyter-jcli:j-cli"
    (folder / ".j-cli-managed.json").write_text(json.dumps(manifest, indent=2))
    if edited:
        (folder / "workflows" / "exec.md").write_text("my notes\n")


def test_upstream_skill_folder_is_replaced_unless_edited(home, project):
    folder = project / ".claude" / "skills" / "j-cli"
    _upstream_skill(folder, edited=True)
    refused = run_cli("-j", "setup", "claude", "--project", cwd=project)
    assert refused.returncode == 1 and refused.error()["code"] == "CONFIG_CONFLICT"
    assert (folder / "workflows" / "exec.md").read_text() == "my notes\n"
    _upstream_skill(folder)
    result = run_cli("-j", "setup", "claude", "--project", cwd=project).json()
    assert f"skill in {folder}" in result["replaced_upstream"]
    assert sorted(p.name for p in folder.rglob("*")) == ["SKILL.md"] and "j-cli setup" in (folder / "SKILL.md").read_text()


@pytest.mark.parametrize("planted", [".j-cli-managed.json", "workflows/exec.md"])
def test_a_fifo_planted_in_an_upstream_skill_folder_never_blocks_setup(home, project, planted):
    """A FIFO as upstream's manifest, or as a file it lists, is read as nothing (never opened to block): the folder
    is not taken for upstream's, setup says so with its usual conflict, and the FIFO is left where it was."""
    folder = project / ".claude" / "skills" / "j-cli"
    _upstream_skill(folder)
    (folder / planted).unlink()
    os.mkfifo(folder / planted)
    refused = run_cli("-j", "setup", "claude", "--project", cwd=project)
    assert refused.returncode == 1 and refused.error()["code"] == "CONFIG_CONFLICT", refused.stderr
    assert stat.S_ISFIFO((folder / planted).lstat().st_mode)
    assert (folder / "SKILL.md").read_text() == "---\nname: j-cli\n---\nold\n"


def test_upstream_opencode_and_dsh_plugins_and_row_are_replaced_and_the_users_stay(home, project):
    """Upstream's plugin files (first line ``// Managed by j-cli setup opencode.``/``dsh.``) and its Cordis
    block (row ``jcli-hooks``, recorded from upstream's real setup) are replaced by ours; the user's row stays.

    The plugin bodies here are stand-ins: only upstream's first line is what setup recognises.
    """
    opencode_plugin = project / ".opencode" / "plugins" / "jcli.js"
    dsh_plugin = project / ".dsh" / "plugins" / "jcli.ts"
    cordis = project / ".dsh" / "cordis.yml"
    for path, first in ((opencode_plugin, "opencode"), (dsh_plugin, "dsh")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"// Managed by j-cli setup {first}.\n// j-cli version 0.9.7\n\nexport default {{}}\n")
    user_row = "- id: mine\n  name: './plugins/mine.ts'\n"
    cordis.write_text(user_row + (UPSTREAM / "dsh_cordis.yml").read_text())

    opencode = run_cli("-j", "setup", "opencode", "--project", cwd=project)
    assert opencode.returncode == 0, opencode.stderr
    assert opencode.json()["replaced_upstream"] == [f"plugin {opencode_plugin}"]
    assert (
        "// managed by j-cli setup" in opencode_plugin.read_text() and "Managed by j-cli setup opencode." not in opencode_plugin.read_text()
    )

    dsh = run_cli("setup", "dsh", "--project", cwd=project)
    assert dsh.returncode == 0, dsh.stderr
    assert f"replaced upstream j-cli's Cordis row jcli-hooks in {cordis}" in dsh.stdout.decode()
    assert f"replaced upstream j-cli's plugin {dsh_plugin}" in dsh.stdout.decode()
    text = cordis.read_text()
    assert text.startswith(user_row) and "jcli-hooks" not in text and "jcli managed" not in text and "id: j-cli" in text
    assert "// managed by j-cli setup" in dsh_plugin.read_text()

    again = run_cli("-j", "setup", "dsh", "--project", cwd=project).json()
    assert again["replaced_upstream"] == [] and again["changed"] is False

    for host in ("opencode", "dsh"):
        assert run_cli("setup", host, "--project", "--remove", cwd=project).returncode == 0
    assert cordis.read_text() == user_row and not opencode_plugin.exists() and not dsh_plugin.exists()


def test_removing_leaves_upstreams_plugin_alone(home, project):
    """``--remove`` takes back only what j-cli wrote: upstream's plugin is not ours to delete."""
    plugin = project / ".opencode" / "plugins" / "jcli.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("// Managed by j-cli setup opencode.\nexport default {}\n")
    before = plugin.read_bytes()
    result = run_cli("-j", "setup", "opencode", "--project", "--remove", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.json()["removed"] is False and plugin.read_bytes() == before


# -- the user edited our entries: remove takes ours wherever they are, setup never adds a second copy --------

#: (host, scope): the hooks file each writes.
HOOK_FILES = [("claude", "--project"), ("claude", "--local"), ("claude", "--user"), ("codex", "--project"), ("codex", "--user")]


def hooks_file(host, scope, home, project):
    if host == "claude":
        return claude_settings(scope, home, project)
    return (project / ".codex" if scope == "--project" else home / ".codex") / "hooks.json"


def guard_counts(doc):
    """How many hooks run each j-cli guard, wherever they are and however they are marked."""
    counts = {}
    for groups in doc.get("hooks", {}).values():
        for group in groups:
            for hook in group.get("hooks", []):
                argv = shlex.split(hook.get("command", ""))
                if "_hooks" in argv:
                    name = argv[argv.index("_hooks") + 1]
                    counts[name] = counts.get(name, 0) + 1
    return counts


def user_commands(doc):
    return [h["command"] for gs in doc.get("hooks", {}).values() for g in gs for h in g.get("hooks", []) if "_hooks" not in h["command"]]


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def _add_mine_and_debug(doc):
    """The issue's example: a hook of the user's inside our Bash group, --debug on one of ours, a field on another."""
    group = doc["hooks"]["PreToolUse"][0]["hooks"]
    group.append({"type": "command", "command": "echo mine"})
    group[0]["command"] += " --debug"
    group[1]["timeout"] = 30


def _move_ours_into_a_user_group(doc):
    """Our Bash hooks moved into the user's own group (and our group deleted), in reverse order."""
    pre = doc["hooks"]["PreToolUse"]
    ours_bash = pre.pop(0)["hooks"]
    pre.insert(0, {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo first"}, *reversed(ours_bash)]})


def _strip_marks(doc):
    """The marks taken out (a formatter that drops unknown keys): our hooks are known by their command."""
    for groups in doc["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook.pop("_jcli_guard", None)


def _duplicate(doc):
    """What an earlier setup left: a second copy of every group of ours, the user's --debug on the first copy."""
    for groups in doc["hooks"].values():
        groups.extend(json.loads(json.dumps(groups)))
    doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"] += " --debug"


EDITS = {"mine-and-debug": _add_mine_and_debug, "moved": _move_ours_into_a_user_group, "unmarked": _strip_marks, "duplicated": _duplicate}


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize(("host", "scope"), HOOK_FILES, ids=[f"{h}{s}" for h, s in HOOK_FILES])
def test_setup_again_after_the_user_edited_our_hooks_runs_each_guard_once_and_keeps_their_additions(home, project, host, scope, edit):
    path = hooks_file(host, scope, home, project)
    assert run_cli("setup", host, scope, cwd=project).returncode == 0
    edited = _edit(path, EDITS[edit])
    again = run_cli("-j", "setup", host, scope, cwd=project)
    assert again.returncode == 0, again.stderr
    doc = json.loads(path.read_text())
    assert guard_counts(doc) == dict.fromkeys(GUARDS, 1)
    assert user_commands(doc) == user_commands(edited)
    if edit == "mine-and-debug":
        bash = doc["hooks"]["PreToolUse"][0]["hooks"]
        assert bash[0]["command"].endswith(f"--platform {host} --debug") and bash[1]["timeout"] == 30
        assert again.json()["changed"] is False and path.read_text() == json.dumps(edited, indent=2) + "\n"
    if edit == "duplicated":  # the copy the user edited is the one kept
        assert doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"].endswith(f"--platform {host} --debug")
    assert run_cli("-j", "setup", host, scope, cwd=project).json()["changed"] is False  # and it stays so


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize(("host", "scope"), HOOK_FILES, ids=[f"{h}{s}" for h, s in HOOK_FILES])
def test_remove_after_the_user_edited_our_hooks_takes_every_one_out_and_says_what_it_dropped(home, project, host, scope, edit):
    path = hooks_file(host, scope, home, project)
    assert run_cli("setup", host, scope, cwd=project).returncode == 0
    edited = _edit(path, EDITS[edit])
    removed = run_cli("-j", "setup", host, scope, "--remove", cwd=project).json()
    assert removed["hooks_removed"] is True
    left = json.loads(path.read_text()) if path.exists() else {}
    assert guard_counts(left) == {}
    assert user_commands(left) == user_commands(edited)  # their own hooks stay, in their groups
    dropped = [d for d in removed["dropped_user_edits"] if d.startswith("hook ")]
    if edit == "mine-and-debug":
        assert dropped == [
            f"hook notebook-exec-guard in {path}: the arguments '--debug'",
            f"hook python-run-guard in {path}: the field timeout",
        ]
    elif edit == "duplicated":
        assert dropped == [f"hook notebook-exec-guard in {path}: the arguments '--debug'"]
    else:
        assert dropped == []
    again = run_cli("-j", "setup", host, scope, "--remove", cwd=project).json()
    assert again["hooks_removed"] is False and again["dropped_user_edits"] == []
    assert run_cli("setup", host, scope, cwd=project).returncode == 0
    assert guard_counts(json.loads(path.read_text())) == dict.fromkeys(GUARDS, 1)


def test_a_user_hook_in_our_group_stays_in_that_group_with_its_matcher_after_remove(home, project):
    assert run_cli("setup", "claude", "--project", cwd=project).returncode == 0
    settings = project / ".claude" / "settings.json"
    _edit(settings, _add_mine_and_debug)
    assert run_cli("setup", "claude", "--project", "--remove", cwd=project).returncode == 0
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"] == [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}
    ]


def test_an_edited_hook_of_another_install_gets_this_installs_command_and_keeps_its_arguments(home, project):
    """A user-scope hook written by another interpreter (a moved venv), then given --debug: re-setup updates it in place."""
    assert run_cli("setup", "claude", "--user", cwd=project).returncode == 0
    settings = home / ".claude" / "settings.json"

    def elsewhere(doc):
        hook = doc["hooks"]["PreToolUse"][0]["hooks"][0]
        hook["command"] = hook["command"].replace(shlex.quote(sys.executable), "/old/venv/bin/python") + " --debug"

    _edit(settings, elsewhere)
    assert run_cli("-j", "setup", "claude", "--user", cwd=project).json()["changed"] is True
    hook = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert shlex.split(hook["command"]) == [
        sys.executable,
        "-m",
        "jcli",
        "_hooks",
        "notebook-exec-guard",
        "--platform",
        "claude",
        "--debug",
    ]
