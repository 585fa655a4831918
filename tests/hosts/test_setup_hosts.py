"""The host table (``jcli.setup.hosts``) and what derives from it.

Each host's object says which files each scope writes, which tools its
guards run on, and its plugin; setup, status, the hook entries, the plugins'
generated constants and docs/hosts.md's tables follow it. These tests run
setup for real (in a temporary home and project) and read the committed
files.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jcli.setup import generated
from jcli.setup.hosts import HOSTS

REPO = Path(__file__).resolve().parents[2]


def test_every_generated_block_in_the_repository_is_what_the_code_writes():
    proc = subprocess.run([sys.executable, "-m", "jcli.setup.generated", str(REPO), "--check"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"stale generated lines: {proc.stderr.strip()} (run `{generated.REGENERATE}` and commit the result)"


def test_check_mode_names_a_stale_file_and_the_command_and_writes_nothing(tmp_path):
    for path in generated.BLOCKS:
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((REPO / path).read_text(encoding="utf-8"), encoding="utf-8")
    plugin = tmp_path / "client" / "plugins" / "opencode" / "jcli.js"
    edited = plugin.read_text(encoding="utf-8").replace('return ["pair-drift-guard-post"]', 'return ["x"]', 1)
    edited = edited.replace('? ["pair-drift-guard-post"]', '? ["x"]', 1)
    plugin.write_text(edited, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "jcli.setup.generated", str(tmp_path), "--check"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    assert "client/plugins/opencode/jcli.js is stale: run `make docs`" in proc.stderr
    assert plugin.read_text(encoding="utf-8") == edited
    assert generated.main([str(tmp_path)]) == 0
    assert plugin.read_text(encoding="utf-8") == (REPO / "client" / "plugins" / "opencode" / "jcli.js").read_text(encoding="utf-8")


def test_a_file_without_its_block_lines_is_named_with_the_lines_it_lacks():
    with pytest.raises(ValueError, match=r"docs/hosts.md: no generated block 'hosts' \(its lines '<!-- begin generated: hosts"):
        generated.rendered("docs/hosts.md", "# Agent hosts\n")


def test_the_plugins_guard_lists_and_sidecar_constants_come_from_python():
    from jcli_sidecar.base.settings import OFF_VALUES
    from jcli_sidecar.sidecar.client import FALLBACK_CODES

    shared = (REPO / "client" / "plugins" / "sidecar-client.mjs").read_text(encoding="utf-8")
    for name, values in (("SIDECAR_FALLBACK_CODES", FALLBACK_CODES), ("SIDECAR_OFF_VALUES", OFF_VALUES)):
        line = next(line for line in shared.splitlines() if re.match(rf"(export )?const {name} = new Set\(", line))
        assert set(line[line.index("[") + 1 : line.index("]")].replace('"', "").split(", ")) == set(values)
    for host in HOSTS.values():
        if host.plugin is None:
            continue
        text = (REPO / "client" / "plugins" / host.plugin.file).read_text(encoding="utf-8")
        assert generated.render_guards(host) in text
        for tool in (*host.tools.shell, *host.tools.edit):
            assert f"'{tool}'" in text or f'"{tool}"' in text


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_the_core_reads_each_guarded_tool_as_the_kind_its_guards_expect(name):
    from jcli_sidecar.guards import parse_payload

    host = HOSTS[name]
    for tool in host.tools.shell:
        call = parse_payload(f'{{"tool_name": "{tool}", "tool_input": {{"command": "ls"}}, "cwd": "/"}}'.encode())
        assert call.kind == "shell", (name, tool)
    for tool in {*host.tools.edit, *host.tools.edit_after}:
        call = parse_payload(f'{{"tool_name": "{tool}", "tool_input": {{"file_path": "/a.py"}}, "cwd": "/"}}'.encode())
        assert call.kind in ("edit", "write", "notebook_edit", "patch"), (name, tool)


def _written(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _expected(files: tuple[str, ...], home: Path, project: Path, env: dict[str, Path]) -> set[str]:
    """The files a Scope lists, as paths under ``home`` and ``project`` (a folder: the SKILL.md it holds)."""
    found = set()
    for name in files:
        for var, path in env.items():
            name = name.replace(f"${var}", str(path))
        name = name.replace("~", str(home), 1) if name.startswith("~") else name
        path = Path(name) if os.path.isabs(name) else project / name
        found.add(str(path / "SKILL.md") if name.endswith("/") else str(path))
    return found


@pytest.mark.parametrize(("name", "scope"), [(h.name, s.name) for h in HOSTS.values() for s in h.scopes])
def test_each_scope_writes_the_files_its_host_object_lists_and_status_finds_them(name, scope, tmp_path, monkeypatch):
    from jcli.setup.status import setup_status

    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {"CODEX_HOME": home / ".codex", "DSH_HOME": home / ".dsh", "XDG_CONFIG_HOME": home / ".config"}
    monkeypatch.setenv("HOME", str(home))
    for var, path in env.items():
        monkeypatch.setenv(var, str(path))
    host = HOSTS[name]
    host.setup(scope, str(project))
    written = {str(tmp_path / p) for p in _written(tmp_path)}
    skill_files = {p for p in written if f"{os.sep}skills{os.sep}j-cli{os.sep}" in p and not p.endswith("SKILL.md")}
    assert written - skill_files == _expected(host.scopes[[s.name for s in host.scopes].index(scope)].files, home, project, env)
    row = next(r for r in setup_status(str(project))["hosts"] if (r["host"], r["scope"]) == (name, scope))
    assert row["installed"] is True and row["command"]
    host.setup(scope, str(project), remove=True)
    assert not any(r["installed"] for r in setup_status(str(project))["hosts"] if "error" not in r)
