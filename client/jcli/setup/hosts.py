"""Every agent host j-cli sets up, one :class:`Host` object each.

A host's object says everything the client knows of it: its names, its
``j-cli setup NAME`` command (help, scopes and the files each writes,
``--remove``, the part groups ``--only`` offers, upstream's scope
spellings), how its guards are hooked in and on which of its tools, the
hook payload it sends, and its plugin file. From it derive:

- ``j-cli setup NAME`` (``cli.py`` builds each command from the object);
- the work: ``jcli.setup.<name>.setup_<name>(scope, project, remove,
  parts=..., skill_dir=...)`` and ``status_<name>(scope, project)``, the
  reader ``j-cli setup status`` calls (:mod:`jcli.setup.status`);
- the hook entries setup writes into a hooks file (:mod:`jcli.setup.hook_entries`);
- the constants in the plugins and the tables in docs/hosts.md
  (:mod:`jcli.setup.generated`, ``make docs``; a test holds them fresh).

The images a host takes are its row in the core's
``jcli_sidecar.read.HOST_PROFILES`` (the core does not import the client),
and the ``--platform`` names of its hooks are the core's
``jcli_sidecar.guards.PLATFORMS`` (a hook stays lean); a test holds both
to this table, in this order.

A host's parts are what ``--only`` names: ``skill`` (the j-cli skill),
``hook`` (the guards) and ``tool`` (the MCP server, or the plugin's
notebook-output tool). Where one file carries two parts (the OpenCode and
DSH plugins hold the tool and the guards), they are one group: installed
or removed together, never one without the other.

Example:
    >>> HOSTS["claude"].scopes[0].name, HOSTS["opencode"].plugin.file
    ('local', 'opencode/jcli.js')
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from jcli_sidecar.read import HostProfile

__all__ = ["ALL_PARTS", "HOSTS", "Host", "PARTS", "Plugin", "Scope", "Tools"]

#: Every part ``--only`` may name, in the order help lists them.
PARTS = ("skill", "hook", "tool")
#: The default of every ``setup_<host>``: all its parts.
ALL_PARTS = frozenset(PARTS)


class Scope:
    """One ``--SCOPE`` of ``j-cli setup NAME``: its help, and every file it writes.

    ``files``: relative paths are in the project, ``~`` is the home
    directory, ``$CODEX_HOME`` (default ``~/.codex``), ``$DSH_HOME``
    (default ``~/.dsh``) and ``$XDG_CONFIG_HOME`` (default ``~/.config``)
    the host's own directories; a path ending in ``/`` is a folder. A test
    runs each scope's setup and holds what it wrote to this list.
    """

    __slots__ = ("name", "help", "files")

    def __init__(self, name: str, help: str, files: tuple[str, ...]) -> None:
        self.name, self.help, self.files = name, help, files


class Tools:
    """The host's own tools its guards run on: its shell, and its file edits before and after they run."""

    __slots__ = ("shell", "edit", "edit_after")

    def __init__(self, shell: tuple[str, ...], edit: tuple[str, ...], edit_after: tuple[str, ...] | None = None) -> None:
        self.shell, self.edit = shell, edit
        self.edit_after = edit if edit_after is None else edit_after


class Plugin:
    """A host plugin j-cli ships: its file under ``client/plugins/`` and the language it is written in (``js`` or ``ts``)."""

    __slots__ = ("file", "language")

    def __init__(self, file: str, language: str) -> None:
        self.file, self.language = file, language


class Host:
    """One agent host: see the module docstring for what derives from it."""

    __slots__ = (
        "name",
        "title",
        "setup_help",
        "scopes",
        "remove_help",
        "part_groups",
        "upstream_scopes",
        "events",
        "hooks_in",
        "tools",
        "payload",
        "plugin",
    )

    def __init__(
        self,
        name: str,
        title: str,
        setup_help: str,
        scopes: tuple[Scope, ...],
        remove_help: str,
        *,
        events: tuple[str, str],
        hooks_in: str,
        tools: Tools,
        payload: str,
        part_groups: tuple[tuple[str, ...], ...] = (("skill",), ("hook",), ("tool",)),
        upstream_scopes: dict[str, str] | None = None,
        plugin: Plugin | None = None,
    ) -> None:
        self.name = name
        #: The host's own name, for people.
        self.title = title
        self.setup_help = setup_help
        #: The first is the default.
        self.scopes = scopes
        self.remove_help = remove_help
        #: The parts it installs, grouped by what can be installed alone.
        self.part_groups = part_groups
        #: Upstream jupyter-jcli's scope flags that j-cli spells otherwise: flag -> j-cli scope.
        self.upstream_scopes = upstream_scopes or {}
        #: The host's own names of the events its guards run at: before a tool call, after one.
        self.events = events
        #: Where its guards are hooked in, for people.
        self.hooks_in = hooks_in
        self.tools = tools
        #: The hook payload it sends (``jcli_sidecar.guards.hook_payload`` reads every shape), for people.
        self.payload = payload
        self.plugin = plugin

    @property
    def parts(self) -> frozenset[str]:
        """Every part this host installs."""
        return frozenset(part for group in self.part_groups for part in group)

    @property
    def profile(self) -> HostProfile:
        """The images it takes: its row of the core's ``HOST_PROFILES`` (``--host NAME``)."""
        from jcli_sidecar.read import HOST_PROFILES

        return HOST_PROFILES[self.name]

    def _function(self, prefix: str) -> Callable[..., Any]:
        name = f"{prefix}_{self.name}"
        return getattr(__import__(f"jcli.setup.{self.name}", fromlist=[name]), name)  # type: ignore[no-any-return]

    def setup(self, scope: str, project: str, remove: bool = False, **options: Any) -> dict[str, Any]:
        """Install (or remove) this host's parts: ``jcli.setup.<name>.setup_<name>``."""
        return self._function("setup")(scope, project, remove, **options)  # type: ignore[no-any-return]

    def status(self, scope: str, project: str) -> dict[str, Any]:
        """What is installed in ``scope``: ``jcli.setup.<name>.status_<name>`` (see :mod:`jcli.setup.status`)."""
        return self._function("status")(scope, project)  # type: ignore[no-any-return]


_CLAUDE_CODEX_PAYLOAD = "`tool_name`, `tool_input`, `cwd`, `hook_event_name` (JSON on stdin)"
_PLUGIN_PAYLOAD = "the plugin passes the call on as `tool_name`, `tool_input`, `cwd`"

#: Every host ``j-cli setup`` knows, by name, in the order of ``HOST_PROFILES``.
HOSTS: dict[str, Host] = {
    h.name: h
    for h in (
        Host(
            "dsh",
            "DSH",
            "Install the read_notebook_output plugin for DSH.",
            (
                Scope(
                    "project",
                    "./.dsh/cordis.yml and ./.dsh/plugins/jcli.ts (default).",
                    (".dsh/cordis.yml", ".dsh/plugins/jcli.ts", ".agents/skills/j-cli/"),
                ),
                Scope(
                    "user",
                    "$DSH_HOME/cordis.patch.yml and $DSH_HOME/plugins/jcli.ts.",
                    ("$DSH_HOME/cordis.patch.yml", "$DSH_HOME/plugins/jcli.ts", "~/.agents/skills/j-cli/"),
                ),
            ),
            "Remove only j-cli's row, plugin file and skill.",
            events=("tools/pre-execute", "tools/post-execute"),
            hooks_in="the j-cli plugin",
            tools=Tools(("bash",), ("edit", "write", "apply_patch")),
            payload=_PLUGIN_PAYLOAD,
            part_groups=(("skill",), ("hook", "tool")),
            upstream_scopes={"local": "project", "proj": "project", "global": "user"},
            plugin=Plugin("dsh/jcli.ts", "ts"),
        ),
        Host(
            "claude",
            "Claude Code",
            "Register the read-only MCP server (and the j-cli skill) with Claude Code.",
            (
                Scope(
                    "local",
                    "~/.claude.json, for this project only (default).",
                    ("~/.claude.json", ".claude/settings.local.json", "~/.claude/skills/j-cli/"),
                ),
                Scope("project", "./.mcp.json, shared with the project.", (".mcp.json", ".claude/settings.json", ".claude/skills/j-cli/")),
                Scope(
                    "user", "~/.claude.json, for every project.", ("~/.claude.json", "~/.claude/settings.json", "~/.claude/skills/j-cli/")
                ),
            ),
            "Remove only j-cli's entries.",
            events=("PreToolUse", "PostToolUse"),
            hooks_in="`.claude/settings*.json`",
            tools=Tools(("Bash",), ("NotebookEdit", "Edit", "Write", "MultiEdit"), ("Edit", "Write", "MultiEdit")),
            payload=_CLAUDE_CODEX_PAYLOAD,
        ),
        Host(
            "codex",
            "Codex",
            "Register the read-only MCP server (and the j-cli skill) with Codex.",
            (
                Scope(
                    "user",
                    "Your Codex config (CODEX_HOME, default ~/.codex) (default).",
                    ("$CODEX_HOME/config.toml", "$CODEX_HOME/hooks.json", "~/.agents/skills/j-cli/"),
                ),
                Scope(
                    "project",
                    "This project's .codex/config.toml (roots reads here).",
                    (".codex/config.toml", ".codex/hooks.json", ".agents/skills/j-cli/"),
                ),
            ),
            "Remove only j-cli's entries.",
            events=("PreToolUse", "PostToolUse"),
            hooks_in="`hooks.json`",
            tools=Tools(("Bash",), ("apply_patch",)),
            payload=_CLAUDE_CODEX_PAYLOAD + "; `apply_patch` carries the patch in `tool_input.command`",
            upstream_scopes={"local": "project"},
        ),
        Host(
            "opencode",
            "OpenCode",
            "Install the read_notebook_output plugin for OpenCode.",
            (
                Scope("project", "./.opencode/plugins/jcli.js (default).", (".opencode/plugins/jcli.js",)),
                Scope("user", "The OpenCode config dir's plugins/jcli.js.", ("$XDG_CONFIG_HOME/opencode/plugins/jcli.js",)),
            ),
            "Remove only j-cli's plugin file.",
            events=("tool.execute.before", "tool.execute.after"),
            hooks_in="the j-cli plugin",
            tools=Tools(("bash",), ("edit", "write", "patch", "apply_patch", "multiedit")),
            payload=_PLUGIN_PAYLOAD,
            part_groups=(("hook", "tool"),),
            upstream_scopes={"local": "project"},
            plugin=Plugin("opencode/jcli.js", "js"),
        ),
    )
}
