"""``j-cli setup`` on hostile but ordinary configs: every target, every scope.

The promise: from a state without j-cli's entries, ``setup`` then
``--remove`` leaves every file byte-identical: contents, mode, symlinks and
existence, directories included. A file j-cli did not write is never
overwritten or deleted (``CONFIG_CONFLICT``); a read-only one is refused
(``OUTPUT_SAVE_FAILED``); what is not a regular file is refused without
blocking (``CONFIG_INVALID``); valid configs of every shape are accepted.

Each test builds a scratch ``$HOME`` and project, runs ``j-cli`` (``helpers.run_cli``, forked
warm: the matrix is about what setup decides; the cases on PATH and odd
working dirs start the installed script, ``cold=True``), and compares a snapshot of both trees (type, mode, bytes, link
target of every entry). Root ignores file modes, so the permission tests
also run as ``nobody``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import click
import pytest
from helpers import DROP, nobody_interpreter, run_cli

import jcli
import jcli_sidecar

#: Every target and scope: (host, scope flag or None for `setup git`).
TARGETS = [
    ("claude", "--local"),
    ("claude", "--user"),
    ("claude", "--project"),
    ("codex", "--user"),
    ("codex", "--project"),
    ("opencode", "--project"),
    ("opencode", "--user"),
    ("dsh", "--project"),
    ("dsh", "--user"),
    ("git", None),
]
IDS = [f"{host}{scope or ''}" for host, scope in TARGETS]


class World:
    """A scratch $HOME and project, and where each target keeps its files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(exist_ok=True)
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir()
        self.project.mkdir()

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "DSH_HOME", "XDG_CONFIG_HOME")}
        env["HOME"] = str(self.home)
        env.update(extra)
        return env

    def config(self, host: str, scope: str | None) -> Path:
        """The file setup edits (the plugin file itself for OpenCode)."""
        p, h = self.project, self.home
        return {
            ("claude", "--local"): h / ".claude.json",
            ("claude", "--user"): h / ".claude.json",
            ("claude", "--project"): p / ".mcp.json",
            ("codex", "--user"): h / ".codex" / "config.toml",
            ("codex", "--project"): p / ".codex" / "config.toml",
            ("opencode", "--project"): p / ".opencode" / "plugins" / "jcli.js",
            ("opencode", "--user"): h / ".config" / "opencode" / "plugins" / "jcli.js",
            ("dsh", "--project"): p / ".dsh" / "cordis.yml",
            ("dsh", "--user"): h / ".dsh" / "cordis.patch.yml",
            ("git", None): p / ".gitignore",
        }[(host, scope)]

    def skill(self, host: str, scope: str | None) -> Path | None:
        if host == "claude":
            base = self.project if scope == "--project" else self.home
            return base / ".claude" / "skills" / "j-cli" / "SKILL.md"
        if host in ("codex", "dsh"):
            base = self.project if scope == "--project" else self.home
            return base / ".agents" / "skills" / "j-cli" / "SKILL.md"
        return None

    def plugin(self, host: str, scope: str | None) -> Path | None:
        if host == "opencode":
            return self.config(host, scope)
        if host == "dsh":
            return (self.project if scope == "--project" else self.home) / ".dsh" / "plugins" / "jcli.ts"
        return None

    def setup(self, host: str, scope: str | None, *more: str, env: dict[str, str] | None = None):
        args = ["-j", "setup", host, *([scope] if scope else []), *more]
        result = run_cli(*args, cwd=self.project, env=env or self.env())
        assert b"Traceback" not in result.stderr, result.stderr
        if result.returncode != 0:
            assert result.error()["code"] != "INTERNAL_ERROR", result.stderr
        return result

    def snapshot(self) -> dict[str, tuple]:
        """Every entry under the scratch root: type, mode, bytes or link target."""
        out: dict[str, tuple] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                rel = os.path.relpath(path, self.root)
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = ("link", os.readlink(path))
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = ("dir", stat.S_IMODE(st.st_mode))
                elif stat.S_ISREG(st.st_mode):
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), Path(path).read_bytes())
                else:
                    out[rel] = ("other", stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
        return out


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


def _ok(result) -> dict:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.json()


def _code(result) -> str:
    assert result.returncode != 0, result.stdout
    return result.error()["code"]


def _round_trip(world: World, host: str, scope: str | None) -> None:
    """setup, setup again (no change), --remove, --remove again: the trees end as they began."""
    before = world.snapshot()
    first = _ok(world.setup(host, scope))
    assert first["changed"] is True
    installed = world.snapshot()
    assert installed != before
    assert _ok(world.setup(host, scope))["changed"] is False
    assert world.snapshot() == installed
    assert _ok(world.setup(host, scope, "--remove"))["removed"] is True
    assert world.snapshot() == before
    assert _ok(world.setup(host, scope, "--remove"))["removed"] is False
    assert world.snapshot() == before


# -- round trips from every starting state ------------------------------------------------

#: What a user may already have at each config, before j-cli: realistic, and the empty shapes the issue names.
EXISTING = {
    "claude": {
        "empty-file": "",
        "empty-object": "{}",
        "empty-servers": '{"mcpServers": {}}',
        "pretty": json.dumps({"numStartups": 3, "mcpServers": {"db": {"command": "db-mcp", "args": []}}}, indent=2) + "\n",
        "compact-with-others": '{"theme":"dark","mcpServers":{"db":{"command":"db-mcp"}}}',
        "four-spaces-crlf": '{\r\n    "theme": "dark",\r\n    "mcpServers": {\r\n        "db": {"command": "x"}\r\n    }\r\n}\r\n',
        "tabs-unicode": '{\n\t"name": "Zoë ✓",\n\t"projects": {}\n}',
    },
    "codex": {
        "empty-file": "",
        "comments-only": "# nothing yet\n",
        "tables": '[mcp_servers.docs]\ncommand = "npx"\n\n[profiles.fast]\nmodel = "m"\n',
        "inline-table": "mcp_servers = { docs = { command = 'x' } }\n",
        "empty-inline-table": "mcp_servers = {}\n",
        "inline-multiline-array": "model = 'a'\nmcp_servers = { docs = { command = 'x', args = [\n  'a',\n  'b' ] } } # mine\n[profiles.x]\na = 1",
        "dotted-keys": "mcp_servers.docs.command = 'x'\n",
        "no-final-newline": 'model = "m"',
    },
    "dsh": {
        "empty-file": "",
        "empty-flow": "[]\n",
        "rows": "# mine\n- id: a\n  name: '@x/a'\n",
        "document-end": "- id: a\n  name: '@x/a'\n...\n",
        "document-end-comment": "---\n- id: a\n  name: b\n... # done\n# trailing note\n",
        "empty-document": "# none yet\n---\n...\n# after the end\n",
        "indented-rows": "  - id: a\n    name: b\n",
        "flow-rows": "[{id: a, name: b}]\n",
        "multiline-flow": "# rows\n[\n  {id: a, name: b},  # first\n  {id: c, name: d},\n]",
        "flow-after-document-start": "--- [{id: a, name: b}]\n",
        "no-final-newline": "- id: a\n  name: b",
    },
    "git": {
        "empty-file": "",
        "rules": "node_modules/\n*.pyc\n",
        "no-final-newline": "dist",
        "crlf": "build/\r\n",
    },
}


def _states(host: str) -> list[str]:
    return ["absent", *EXISTING.get(host, {})]


@pytest.mark.parametrize(
    ("host", "scope", "state"),
    [(h, s, state) for h, s in TARGETS for state in _states(h)],
    ids=[f"{h}{s or ''}-{state}" for h, s in TARGETS for state in _states(h)],
)
@pytest.mark.slow  # a matrix of hosts, scopes and config shapes, two j-cli runs each
def test_setup_then_remove_leaves_every_file_byte_identical(world, host, scope, state):
    config = world.config(host, scope)
    if state != "absent":
        config.parent.mkdir(parents=True, exist_ok=True)
        text = EXISTING[host][state]
        if host == "claude" and scope == "--local" and state == "tabs-unicode":
            text = text.replace('"projects": {}', f'"projects": {{{json.dumps(str(world.project.resolve()))}: {{"mcpServers": {{}}}}}}')
        config.write_bytes(text.encode())
        config.chmod(0o640)
    _round_trip(world, host, scope)


def test_the_installed_entries_are_what_each_host_parses(world):
    """Spot-check the variants: the host's own parser sees the user's entries and ours."""
    toml = world.config("codex", "--user")
    toml.parent.mkdir()
    toml.write_text(EXISTING["codex"]["inline-multiline-array"])
    _ok(world.setup("codex", "--user"))
    parsed = tomllib.loads(toml.read_text())
    assert parsed["mcp_servers"]["docs"] == {"command": "x", "args": ["a", "b"]} and parsed["profiles"] == {"x": {"a": 1}}
    assert parsed["mcp_servers"]["jcli"]["args"][-4:] == ["mcp", "serve", "--host", "codex"]

    from ruamel.yaml import YAML

    for state in ("document-end-comment", "multiline-flow", "indented-rows"):
        yml = world.config("dsh", "--project")
        yml.parent.mkdir(exist_ok=True)
        yml.write_text(EXISTING["dsh"][state])
        _ok(world.setup("dsh", "--project"))
        rows = YAML(typ="safe", pure=True).load(yml.read_text())
        assert rows[-1] == {"id": "j-cli", "name": "./plugins/jcli.ts"} and rows[0]["id"] == "a", state
        _ok(world.setup("dsh", "--project", "--remove"))
        assert yml.read_text() == EXISTING["dsh"][state]

    claude = world.config("claude", "--user")
    claude.write_text(EXISTING["claude"]["four-spaces-crlf"])
    _ok(world.setup("claude", "--user"))
    doc = json.loads(claude.read_text())
    assert doc["theme"] == "dark" and set(doc["mcpServers"]) == {"db", "jcli"}


def test_the_issue_examples_survive_remove(world):
    """The examples named in the issue, one by one."""
    mcp = world.project / ".mcp.json"
    mcp.write_text('{"mcpServers": {}}')
    _ok(world.setup("claude", "--project"))
    _ok(world.setup("claude", "--project", "--remove"))
    assert mcp.read_text() == '{"mcpServers": {}}'

    gitignore = world.project / ".gitignore"
    gitignore.write_text("")
    _ok(world.setup("git", None))
    _ok(world.setup("git", None, "--remove"))
    assert gitignore.exists() and gitignore.read_text() == ""

    toml = world.home / ".codex" / "config.toml"
    toml.parent.mkdir()
    toml.write_text("")
    _ok(world.setup("codex", "--user"))
    _ok(world.setup("codex", "--user", "--remove"))
    assert toml.exists() and toml.read_text() == ""


def test_a_claude_project_entry_keeps_its_empty_servers_key_even_after_claude_rewrites_the_file(world):
    """Claude Code creates ``"mcpServers": {}`` in every project entry and rewrites ~/.claude.json often."""
    config = world.home / ".claude.json"
    project = str(world.project.resolve())
    config.write_text(json.dumps({"projects": {project: {"allowedTools": [], "mcpServers": {}}}}, indent=2))
    _ok(world.setup("claude", "--local"))
    config.write_text(json.dumps(dict(json.loads(config.read_text()), numStartups=1), indent=2))  # Claude Code was here
    _ok(world.setup("claude", "--local", "--remove"))
    assert json.loads(config.read_text()) == {"projects": {project: {"allowedTools": [], "mcpServers": {}}}, "numStartups": 1}


def test_a_server_setup_added_to_someone_elses_servers_leaves_them_alone(world):
    """A neighbour added after setup: removal takes out only our entry, never the container."""
    mcp = world.project / ".mcp.json"
    _ok(world.setup("claude", "--project"))
    doc = json.loads(mcp.read_text())
    doc["mcpServers"]["theirs"] = {"command": "t"}
    mcp.write_text(json.dumps(doc))
    _ok(world.setup("claude", "--project", "--remove"))
    assert json.loads(mcp.read_text()) == {"mcpServers": {"theirs": {"command": "t"}}}


# -- symlinks: a dotfiles repository ------------------------------------------------------


@pytest.mark.parametrize(("host", "scope"), TARGETS, ids=IDS)
@pytest.mark.parametrize("target", ["existing", "dangling"])
def test_a_symlinked_config_is_edited_through_the_link(world, host, scope, target):
    """The link stays a link, its target gets the change; --remove restores both."""
    config = world.config(host, scope)
    dotfiles = world.root / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / config.name
    if target == "existing" and host != "opencode":  # an existing jcli.js would be someone else's
        real.write_text({"claude": "{}\n", "codex": "# mine\n", "dsh": "# mine\n", "git": "*.log\n"}[host])
        real.chmod(0o600)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.symlink_to(real)
    before = world.snapshot()
    _ok(world.setup(host, scope))
    assert config.is_symlink() and os.readlink(config) == str(real)
    assert "jcli" in real.read_text() or "j-cli" in real.read_text()
    if target == "existing" and host != "opencode":
        assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert _ok(world.setup(host, scope))["changed"] is False
    _ok(world.setup(host, scope, "--remove"))
    assert world.snapshot() == before


def test_a_symlinked_config_directory_is_used_through_the_link(world):
    """~/.codex itself a link into dotfiles: the config and nothing else changes there."""
    dotfiles = world.root / "dotfiles" / "codex"
    dotfiles.mkdir(parents=True)
    (dotfiles / "config.toml").write_text('model = "m"\n')
    (world.home / ".codex").symlink_to(dotfiles, target_is_directory=True)
    _round_trip(world, "codex", "--user")


def test_the_temp_file_goes_next_to_the_target_not_the_link(world):
    """Atomic writes happen in the target's directory: a read-only link directory is no obstacle."""
    dotfiles = world.root / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / ".gitignore").write_text("*.log\n")
    sub = world.project / "links"
    sub.mkdir()
    (sub / "gitignore").symlink_to(dotfiles / ".gitignore")
    (world.project / ".gitignore").symlink_to(dotfiles / ".gitignore")
    world.project.chmod(0o555)
    try:
        before = world.snapshot()
        inode = (dotfiles / ".gitignore").stat().st_ino
        _ok(world.setup("git", None))
        assert (dotfiles / ".gitignore").stat().st_ino != inode  # replaced by a rename, never rewritten in place
        assert "**/.j-cli/" in (dotfiles / ".gitignore").read_text()
        _ok(world.setup("git", None, "--remove"))
        assert world.snapshot() == before
    finally:
        world.project.chmod(0o755)


def test_writes_are_atomic_and_keep_the_mode(world):
    config = world.home / ".claude.json"
    config.write_text("{}\n")
    config.chmod(0o604)
    inode = config.stat().st_ino
    _ok(world.setup("claude", "--user"))
    assert config.stat().st_ino != inode and stat.S_IMODE(config.stat().st_mode) == 0o604
    assert sorted(p.name for p in world.home.iterdir()) == [".claude", ".claude.json"]  # no temp file left


# -- files j-cli did not write ------------------------------------------------------------

FOREIGN_SKILL = "---\nname: j-cli\ndescription: my own notes about j-cli\n---\n# Mine\n"


@pytest.mark.parametrize(("host", "scope"), [t for t in TARGETS if t[0] in ("claude", "codex", "dsh")], ids=lambda v: str(v))
def test_a_users_own_skill_at_our_path_is_a_conflict_and_stays(world, host, scope):
    skill = world.skill(host, scope)
    skill.parent.mkdir(parents=True)
    skill.write_text(FOREIGN_SKILL)
    before = world.snapshot()
    assert _code(world.setup(host, scope)) == "CONFIG_CONFLICT"
    assert world.snapshot() == before  # nothing at all was written: not the config either
    assert _code(world.setup(host, scope, "--remove")) == "CONFIG_CONFLICT"
    assert world.snapshot() == before


@pytest.mark.parametrize(("host", "scope"), [t for t in TARGETS if t[0] in ("opencode", "dsh")], ids=lambda v: str(v))
def test_a_users_own_plugin_at_our_path_is_a_conflict_and_stays(world, host, scope):
    plugin = world.plugin(host, scope)
    plugin.parent.mkdir(parents=True)
    plugin.write_text("// my own plugin\n")
    before = world.snapshot()
    assert _code(world.setup(host, scope)) == "CONFIG_CONFLICT"
    assert world.snapshot() == before
    assert _code(world.setup(host, scope, "--remove")) == "CONFIG_CONFLICT"
    assert world.snapshot() == before


def test_a_directory_setup_did_not_create_stays(world):
    """An empty plugins folder the user made survives --remove; one setup made goes."""
    mine = world.project / ".opencode" / "plugins"
    mine.mkdir(parents=True)
    _round_trip(world, "opencode", "--project")
    assert mine.is_dir()


def test_a_file_added_next_to_ours_keeps_the_directories(world):
    _ok(world.setup("codex", "--project"))
    extra = world.project / ".agents" / "skills" / "mine" / "SKILL.md"
    extra.parent.mkdir()
    extra.write_text("mine\n")
    _ok(world.setup("codex", "--project", "--remove"))
    assert extra.read_text() == "mine\n" and not (world.project / ".agents" / "skills" / "j-cli").exists()
    assert not (world.project / ".codex").exists()  # setup made it, and it is empty again


# -- read-only and hard-linked files ------------------------------------------------------


@pytest.mark.parametrize(("host", "scope"), TARGETS, ids=IDS)
def test_a_read_only_config_is_refused_and_unchanged(world, host, scope):
    config = world.config(host, scope)
    config.parent.mkdir(parents=True, exist_ok=True)
    if host == "opencode":  # the plugin file is ours: install it, then make it read-only
        _ok(world.setup(host, scope))
    else:
        config.write_text({"claude": "{}\n", "codex": "# mine\n", "dsh": "# mine\n", "git": "*.log\n"}[host])
    config.chmod(0o444)
    before = world.snapshot()
    result = world.setup(host, scope) if host != "opencode" else world.setup(host, scope, "--remove")
    assert _code(result) == "OUTPUT_SAVE_FAILED"
    assert "read-only" in result.error()["message"]
    assert world.snapshot() == before


def test_remove_refuses_a_config_made_read_only_after_setup(world):
    _ok(world.setup("codex", "--user"))
    config = world.config("codex", "--user")
    config.chmod(0o444)
    before = world.snapshot()
    assert _code(world.setup("codex", "--user", "--remove")) == "OUTPUT_SAVE_FAILED"
    assert world.snapshot() == before


def test_a_read_only_directory_is_refused_before_anything_is_written(world):
    (world.project / ".dsh").mkdir(mode=0o555)
    before = world.snapshot()
    assert _code(world.setup("dsh", "--project")) == "OUTPUT_SAVE_FAILED"
    assert world.snapshot() == before


def test_a_hard_linked_config_is_refused_so_the_links_do_not_split(world):
    config = world.home / ".claude.json"
    config.write_text("{}\n")
    os.link(config, world.root / "backup.json")
    before = world.snapshot()
    result = world.setup("claude", "--user")
    assert _code(result) == "OUTPUT_SAVE_FAILED" and "hard links" in result.error()["message"]
    assert world.snapshot() == before


# -- not regular files: refused without blocking ------------------------------------------


def _make(kind: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "socket":  # bound by a name relative to its folder: a deep path may pass AF_UNIX's ~107 bytes
        here = os.getcwd()
        with socket.socket(socket.AF_UNIX) as sock:
            os.chdir(path.parent)
            try:
                sock.bind(path.name)
            finally:
                os.chdir(here)
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "not-utf8":
        path.write_bytes(b"\xff\xfe not text\n")


KINDS = ["fifo", "directory", "device", "socket", "loop", "not-utf8"]


@pytest.mark.parametrize(("host", "scope"), TARGETS, ids=IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_config_that_is_not_a_regular_file_is_refused_without_blocking(world, host, scope, kind):
    _make(kind, world.config(host, scope))
    before = world.snapshot()
    for more in ((), ("--remove",)):
        result = world.setup(host, scope, *more)  # run_cli's timeout fails the test if this hangs
        assert _code(result) == "CONFIG_INVALID", result.stderr
        assert world.snapshot() == before


@pytest.mark.parametrize(("host", "scope"), [t for t in TARGETS if t[0] in ("claude", "codex", "dsh")], ids=lambda v: str(v))
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_skill_path_that_is_not_a_regular_file_is_refused_without_blocking(world, host, scope, kind):
    _make(kind, world.skill(host, scope))
    before = world.snapshot()
    for more in ((), ("--remove",)):
        assert _code(world.setup(host, scope, *more)) == "CONFIG_INVALID"
        assert world.snapshot() == before


@pytest.mark.parametrize("scope", ["--project", "--user"])
def test_a_plugin_path_that_is_a_fifo_is_refused_without_blocking(world, scope):
    _make("fifo", world.plugin("dsh", scope))
    before = world.snapshot()
    assert _code(world.setup("dsh", scope)) == "CONFIG_INVALID"
    assert world.snapshot() == before


def test_a_config_over_the_size_cap_is_refused(world):
    config = world.home / ".claude.json"
    with open(config, "wb") as fh:
        fh.truncate(64 * 1024 * 1024 + 1)
    result = world.setup("claude", "--user")
    assert _code(result) == "CONFIG_INVALID" and "larger than" in result.error()["message"]


def test_the_codex_user_config_as_a_fifo_does_not_hang_the_project_trust_check(world):
    _make("fifo", world.home / ".codex" / "config.toml")
    doc = _ok(world.setup("codex", "--project"))
    assert doc["project_trusted"] is False


# -- configs whose containers are not what they must be -------------------------------------


@pytest.mark.parametrize(
    ("scope", "content"),
    [
        ("--user", '{"mcpServers": null}'),
        ("--user", '{"mcpServers": []}'),
        ("--local", '{"projects": "x"}'),
        ("--local", '{"projects": {"PROJECT": null}}'),
        ("--project", "[]"),
        ("--project", "\n"),
        ("--user", "[" * 100000 + "]" * 100000),
    ],
    ids=["servers-null", "servers-list", "projects-string", "entry-null", "array", "whitespace", "deep"],
)
def test_claude_containers_that_are_not_objects_are_invalid_and_untouched(world, scope, content):
    config = world.config("claude", scope)
    config.write_text(content.replace("PROJECT", str(world.project.resolve())))
    before = world.snapshot()
    assert _code(world.setup("claude", scope)) == "CONFIG_INVALID"
    assert world.snapshot() == before


def test_a_project_path_that_is_not_utf8_is_a_coded_error(world):
    odd = world.project / os.fsdecode(b"caf\xe9")
    odd.mkdir()
    before = world.snapshot()
    result = run_cli("-j", "setup", "claude", "--local", cwd=odd, env=world.env(), cold=True)
    assert b"Traceback" not in result.stderr
    assert _code(result) == "OUTPUT_SAVE_FAILED"
    assert world.snapshot() == before


# -- as nobody: the kernel's own permission checks ----------------------------------------


@pytest.fixture(scope="module")
def nobody_python():
    """(interpreter, PYTHONPATH) that ``nobody`` can run setup with, proven by an import."""
    import ruamel.yaml
    import tomlkit

    yield from nobody_interpreter(
        [jcli_sidecar, jcli, click, tomlkit, ruamel.yaml], "jcli.setup.codex, jcli.setup.dsh, tomlkit, ruamel.yaml", "jcli-nobody-setup-"
    )


@pytest.fixture
def nobody_world():
    base = Path(tempfile.mkdtemp(prefix="jcli-nobody-world-"))
    try:
        base.chmod(0o755)
        world = World(base / "w")
        for path in (world.root, world.home, world.project):
            os.chown(path, 65534, 65534)
        yield world
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(nobody_python, world: World, *args: str):
    python, libs = nobody_python
    env = {"PYTHONPATH": libs, "PATH": os.environ["PATH"], "HOME": str(world.home), "JCLI_SIDECAR": "off"}
    proc = subprocess.run([*DROP, python, "-m", "jcli", "-j", *args], cwd=world.project, env=env, capture_output=True, timeout=120)
    assert b"Traceback" not in proc.stderr, proc.stderr
    return proc


def test_nobody_really_cannot_write_a_0444_file(nobody_world):
    probe = nobody_world.home / "probe"
    probe.write_text("x")
    os.chown(probe, 65534, 65534)
    probe.chmod(0o444)
    proc = subprocess.run([*DROP, "sh", "-c", f"echo y > {probe}"], capture_output=True, timeout=30)
    assert proc.returncode != 0 and probe.read_text() == "x"


@pytest.mark.parametrize(
    ("host", "scope", "owner", "mode"),
    [
        ("claude", "--user", 65534, 0o444),
        ("codex", "--user", 65534, 0o444),
        ("dsh", "--user", 65534, 0o444),
        ("git", None, 65534, 0o444),
        ("claude", "--user", 0, 0o644),  # root's file in nobody's writable home: the rename would succeed
        ("git", None, 0, 0o644),
    ],
)
def test_as_nobody_a_config_it_may_not_write_is_refused(nobody_python, nobody_world, host, scope, owner, mode):
    world = nobody_world
    config = world.config(host, scope)
    if not config.parent.exists():
        config.parent.mkdir(parents=True)
        os.chown(config.parent, 65534, 65534)
    config.write_text({"claude": "{}\n", "codex": "# mine\n", "dsh": "# mine\n", "git": "*.log\n"}[host])
    os.chown(config, owner, owner)
    config.chmod(mode)
    before = world.snapshot()
    proc = _as_nobody(nobody_python, world, "setup", host, *([scope] if scope else []))
    assert proc.returncode == 1 and json.loads(proc.stderr)["code"] == "OUTPUT_SAVE_FAILED", proc.stderr
    assert world.snapshot() == before


def test_as_nobody_setup_then_remove_round_trips(nobody_python, nobody_world):
    world = nobody_world
    config = world.config("claude", "--user")
    config.write_text('{"mcpServers": {}}')
    os.chown(config, 65534, 65534)
    before = world.snapshot()
    assert _as_nobody(nobody_python, world, "setup", "claude", "--user").returncode == 0
    assert "jcli" in json.loads(config.read_text())["mcpServers"]
    assert _as_nobody(nobody_python, world, "setup", "claude", "--user", "--remove").returncode == 0
    assert world.snapshot() == before


# -- the user edited our entries: a re-setup keeps their additions, --remove names what it drops ------------

#: (host, scope) whose config holds an entry of ours that a user may add to.
EDITABLE = [
    ("claude", "--local"),
    ("claude", "--user"),
    ("claude", "--project"),
    ("codex", "--user"),
    ("codex", "--project"),
    ("dsh", "--project"),
    ("dsh", "--user"),
]


def _claude_entry(world: World, scope: str, doc: dict) -> dict:
    if scope == "--local":
        return doc["projects"][str(world.project.resolve())]["mcpServers"]["jcli"]
    return doc["mcpServers"]["jcli"]


def _edit_our_entry(world: World, host: str, scope: str) -> None:
    """What a user adds by hand: an env table, an argument, a key of their own (a secret-looking env value too)."""
    config = world.config(host, scope)
    if host == "claude":
        doc = json.loads(config.read_text())
        entry = _claude_entry(world, scope, doc)
        entry["env"] = {"FOO": "1", "API_TOKEN": "s3cret"}
        entry["args"].append("--debug")
        entry["timeout"] = 5
        config.write_text(json.dumps(doc, indent=2) + "\n")
    elif host == "codex":
        text = config.read_text()
        text = text.replace(
            "tool_timeout_sec = 120\n", 'tool_timeout_sec = 600\nenv = { FOO = "1", API_TOKEN = "s3cret" }\nenabled = true\n'
        )
        text = text.replace('"--host", "codex"]', '"--host", "codex", "--debug"]')
        assert "--debug" in text and "enabled" in text, text
        config.write_text(text)
    else:
        text = config.read_text()
        indent = "  " if scope == "--project" else "      "
        text = text.replace("# <<< j-cli", f"{indent}config:\n{indent}  bin: /opt/j-cli\n# <<< j-cli")
        config.write_text(text)


def _our_entry(world: World, host: str, scope: str) -> dict:
    config = world.config(host, scope)
    if host == "claude":
        return _claude_entry(world, scope, json.loads(config.read_text()))
    if host == "codex":
        return tomllib.loads(config.read_text())["mcp_servers"]["jcli"]
    from ruamel.yaml import YAML

    rows = YAML(typ="safe", pure=True).load(config.read_text())
    return rows[-1] if scope == "--project" else rows[-1]["insert"][0]


@pytest.mark.parametrize(("host", "scope"), EDITABLE, ids=[f"{h}{s}" for h, s in EDITABLE])
def test_setup_again_keeps_what_the_user_added_to_our_entry(world, host, scope):
    _ok(world.setup(host, scope))
    _edit_our_entry(world, host, scope)
    edited = world.config(host, scope).read_bytes()
    assert _ok(world.setup(host, scope))["changed"] is False
    assert world.config(host, scope).read_bytes() == edited
    entry = _our_entry(world, host, scope)
    if host == "claude":
        assert entry["env"] == {"FOO": "1", "API_TOKEN": "s3cret"} and entry["args"][-1] == "--debug" and entry["timeout"] == 5
    elif host == "codex":
        assert entry["env"] == {"FOO": "1", "API_TOKEN": "s3cret"} and entry["args"][-1] == "--debug" and entry["tool_timeout_sec"] == 600
    else:
        assert entry["config"] == {"bin": "/opt/j-cli"} and entry["id"] == "j-cli"


@pytest.mark.parametrize(("host", "scope"), EDITABLE, ids=[f"{h}{s}" for h, s in EDITABLE])
def test_remove_of_an_entry_the_user_added_to_says_what_it_dropped_and_never_the_values(world, host, scope):
    _ok(world.setup(host, scope))
    _edit_our_entry(world, host, scope)
    removed = _ok(world.setup(host, scope, "--remove"))
    assert removed["removed"] is True
    config = world.config(host, scope)
    dropped = [d for d in removed["dropped_user_edits"] if not d.startswith("hook ")]
    if host == "claude":
        assert dropped == [f"MCP server jcli in {config}: the arguments '--debug'; the env variables API_TOKEN, FOO; the key timeout"]
        assert "jcli" not in config.read_text()
    elif host == "codex":
        assert dropped == [
            f"[mcp_servers.jcli] in {config}: the arguments '--debug'; the env variables API_TOKEN, FOO; the keys tool_timeout_sec = 600, enabled"
        ]
        assert not config.exists() or "jcli" not in tomllib.loads(config.read_text()).get("mcp_servers", {})
    else:
        assert dropped == [f"Cordis row j-cli in {config}: the keys config"]
        assert not config.exists() or "j-cli" not in config.read_text()
    assert "s3cret" not in json.dumps(removed)
    assert _ok(world.setup(host, scope, "--remove"))["removed"] is False


def test_a_re_setup_after_the_interpreter_moved_updates_our_part_and_keeps_the_users(world):
    """A user-scope Claude entry written by another install (its python elsewhere), then given an env: both sides kept right."""
    _ok(world.setup("claude", "--user"))
    config = world.config("claude", "--user")
    doc = json.loads(config.read_text())
    doc["mcpServers"]["jcli"].update(command="/old/venv/bin/python", env={"FOO": "1"})
    config.write_text(json.dumps(doc))
    assert _ok(world.setup("claude", "--user"))["changed"] is True
    entry = json.loads(config.read_text())["mcpServers"]["jcli"]
    assert entry["command"] == sys.executable and entry["env"] == {"FOO": "1"}


# -- which j-cli the host will run: setup warns, `setup status` says -----------------------------------------

#: Every project scope, whose files name plain `j-cli` from PATH.
PROJECT_SCOPES = [("claude", "--project"), ("codex", "--project"), ("opencode", "--project"), ("dsh", "--project")]


def _path_without_jcli() -> str:
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not os.path.exists(os.path.join(p, "j-cli")))


def _other_jcli(world: World, version: str) -> str:
    """A directory with a `j-cli` of another version on it (what a stale pipx install leaves)."""
    bin_dir = world.root / "other-bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "j-cli"
    script.write_text(f"#!/bin/sh\necho 'j-cli, version {version}'\n")
    script.chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize(("host", "scope"), PROJECT_SCOPES, ids=[f"{h}{s}" for h, s in PROJECT_SCOPES])
def test_a_project_setup_without_j_cli_on_path_warns_with_the_fix(world, host, scope):
    result = _ok(world.setup(host, scope, env=world.env(PATH=_path_without_jcli())))
    assert result["jcli_on_path"]["found"] is None and result["jcli_on_path"]["this_jcli"] is False
    warning = next(w for w in result["warnings"] if "not on PATH" in w)
    assert "run `j-cli`" in warning and str(Path(sys.executable).parent) in warning and "--user" in warning
    human = run_cli("setup", host, scope, cwd=world.project, env=world.env(PATH=_path_without_jcli()), cold=True)
    assert human.returncode == 0 and b"warning: the " in human.stderr and b"which is not on PATH" in human.stderr


@pytest.mark.parametrize(("host", "scope"), PROJECT_SCOPES, ids=[f"{h}{s}" for h, s in PROJECT_SCOPES])
def test_a_project_setup_with_this_j_cli_on_path_says_so_and_does_not_warn(world, host, scope):
    path = os.pathsep.join([str(Path(sys.executable).parent), _path_without_jcli()])
    result = _ok(world.setup(host, scope, env=world.env(PATH=path)))
    assert result["jcli_on_path"]["this_jcli"] is True and result["jcli_on_path"]["version"] == jcli.__version__
    assert not [w for w in result.get("warnings", []) if "j-cli" in w and "PATH" in w]


def test_another_j_cli_first_on_path_is_named_with_its_version(world):
    path = os.pathsep.join([_other_jcli(world, "0.0.1"), str(Path(sys.executable).parent), _path_without_jcli()])
    result = _ok(world.setup("claude", "--project", env=world.env(PATH=path)))
    assert result["jcli_on_path"]["version"] == "0.0.1" and result["jcli_on_path"]["this_jcli"] is False
    assert any(f"{world.root / 'other-bin' / 'j-cli'} (0.0.1), not this j-cli ({jcli.__version__}" in w for w in result["warnings"])
    user = _ok(world.setup("claude", "--user", env=world.env(PATH=path)))  # records this install's interpreter: nothing to find
    assert "jcli_on_path" not in user


def _status(world: World, path: str) -> dict:
    result = run_cli("-j", "setup", "status", cwd=world.project, env=world.env(PATH=path), cold=True)
    assert result.returncode == 0, result.stderr
    return result.json()


def test_setup_status_says_per_host_and_scope_what_is_installed_and_whether_the_host_finds_this_j_cli(world):
    here = os.pathsep.join([str(Path(sys.executable).parent), _path_without_jcli()])
    empty = _status(world, here)
    assert {(r["host"], r["scope"]) for r in empty["hosts"]} == {(h, s.lstrip("-")) for h, s in TARGETS if h != "git"}
    assert not any(r["installed"] for r in empty["hosts"]) and empty["warnings"] == []
    for host, scope in [("claude", "--project"), ("codex", "--user"), ("opencode", "--project"), ("dsh", "--user")]:
        _ok(world.setup(host, scope))
    status = _status(world, here)
    rows = {(r["host"], r["scope"]): r for r in status["hosts"]}
    claude = rows["claude", "project"]
    assert claude["mcp"] == str(world.config("claude", "--project")) and claude["skill"] and len(claude["hooks"]) == 5
    assert claude["finds"]["this_jcli"] is True and claude["command"] == ["j-cli"]
    assert rows["codex", "user"]["finds"]["this_jcli"] is True and rows["codex", "user"]["command"] == [sys.executable]
    assert rows["opencode", "project"]["plugin"] == str(world.config("opencode", "--project"))
    assert rows["dsh", "user"]["row"] and rows["dsh", "user"]["plugin"]
    assert not rows["claude", "local"]["installed"] and status["warnings"] == []
    # the same files, with no j-cli on PATH: the project entries are named, the user ones still find this install
    blind = _status(world, _path_without_jcli())
    rows = {(r["host"], r["scope"]): r for r in blind["hosts"]}
    assert rows["claude", "project"]["finds"]["found"] is None and rows["opencode", "project"]["finds"]["this_jcli"] is False
    assert rows["codex", "user"]["finds"]["this_jcli"] is True and rows["dsh", "user"]["finds"]["this_jcli"] is True
    assert len(blind["warnings"]) == 2 and all("not on PATH" in w for w in blind["warnings"])
    human = run_cli("setup", "status", cwd=world.project, env=world.env(PATH=_path_without_jcli()), cold=True)
    assert b"claude --project: MCP entry" in human.stdout and b"does NOT run this j-cli (not found)" in human.stdout
    assert b"claude --local: not installed" in human.stdout


def test_setup_status_reports_a_config_it_cannot_read_and_goes_on(world):
    mcp = world.config("claude", "--project")
    mcp.write_text("{ nope")
    rows = {(r["host"], r["scope"]): r for r in _status(world, _path_without_jcli())["hosts"]}
    assert rows["claude", "project"]["error"]["code"] == "CONFIG_INVALID"
    assert rows["codex", "user"]["installed"] is False


# -- files setup writes whole (a plugin, the skill): edits are replaced or dropped, and said ---------------

WHOLE_FILES = [
    ("opencode", "--project", "plugin"),
    ("opencode", "--user", "plugin"),
    ("dsh", "--project", "plugin"),
    ("dsh", "--user", "plugin"),
    ("claude", "--local", "skill"),
    ("claude", "--project", "skill"),
    ("codex", "--user", "skill"),
    ("dsh", "--user", "skill"),
]


def _whole_file(world: World, host: str, scope: str, kind: str) -> Path:
    path = world.plugin(host, scope) if kind == "plugin" else world.skill(host, scope)
    assert path is not None
    return path


@pytest.mark.parametrize(("host", "scope", "kind"), WHOLE_FILES, ids=[f"{h}{s}-{k}" for h, s, k in WHOLE_FILES])
def test_an_edited_plugin_or_skill_is_replaced_or_removed_and_the_result_says_so(world, host, scope, kind):
    _ok(world.setup(host, scope))
    path = _whole_file(world, host, scope, kind)
    installed = path.read_bytes()
    assert "replaced_user_edits" not in _ok(world.setup(host, scope))  # unedited: nothing to say
    path.write_bytes(installed + b"\n// my own tweak\n")
    again = _ok(world.setup(host, scope))
    assert again["replaced_user_edits"] == [
        f"{kind} {path}: it was edited since setup wrote it; those edits are replaced by j-cli's {kind}"
    ]
    assert path.read_bytes() == installed
    assert "replaced_user_edits" not in _ok(world.setup(host, scope))
    path.write_bytes(installed.replace(b"\n", b"\n\n", 1))  # an edit near the top, the marker kept
    removed = _ok(world.setup(host, scope, "--remove"))
    assert f"{kind} {path}: it was edited since setup wrote it, and is deleted with those edits" in removed["dropped_user_edits"]
    assert not path.exists()


def test_a_plugin_from_an_earlier_j_cli_without_a_digest_is_replaced_without_a_word(world):
    _ok(world.setup("opencode", "--project"))
    path = world.plugin("opencode", "--project")
    old = path.read_text()
    path.write_text(old[: old.index(" [sha256:")] + old[old.index("]", old.index(" [sha256:")) + 1 :] + "// older body\n")
    result = _ok(world.setup("opencode", "--project"))
    assert result["changed"] is True and "replaced_user_edits" not in result and path.read_text() == old


@pytest.mark.parametrize("remove", [False, True], ids=["setup", "remove"])
def test_a_codex_addition_to_our_table_outside_our_block_is_named_and_the_file_left_alone(world, remove):
    """`[mcp_servers.jcli.env]` written after j-cli's block: neither kept in nor cut out blindly, but said where it is."""
    _ok(world.setup("codex", "--user"))
    config = world.config("codex", "--user")
    config.write_text(config.read_text() + '\n[mcp_servers.jcli.env]\nFOO = "1"\n')
    edited = config.read_bytes()
    result = world.setup("codex", "--user", *(["--remove"] if remove else []))
    assert _code(result) == "CONFIG_INVALID"
    assert (
        "[mcp_servers.jcli] has env outside j-cli's block" in result.error()["message"]
        and "move it into the block" in result.error()["message"]
    )
    assert config.read_bytes() == edited
