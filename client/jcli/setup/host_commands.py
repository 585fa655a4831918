"""How ``j-cli setup NAME`` presents each agent host: its help, its scopes and ``--remove``.

One row per host that j-cli sets up; ``cli.py`` builds each host's click
command from its row (one flag per scope, the first the default,
``--remove``, and ``--only PART`` / ``--skill-dir DIR`` where the host has
parts to choose). The work is ``jcli.setup.<name>.setup_<name>(scope,
project, remove, parts=..., skill_dir=...)``; the images a host takes are
its row in ``jcli_sidecar.read.HOST_PROFILES``, which names the same hosts.

A host's parts are what ``--only`` names: ``skill`` (the j-cli skill),
``hook`` (the guards) and ``tool`` (the MCP server, or the plugin's
notebook-output tool). Where one file carries two parts (the OpenCode and
DSH plugins hold the tool and the guards), they are one group: installed
or removed together, never one without the other.
"""

from __future__ import annotations

__all__ = ["ALL_PARTS", "HOST_SETUPS", "HostSetup", "PARTS"]

#: Every part ``--only`` may name, in the order help lists them.
PARTS = ("skill", "hook", "tool")
#: The default of every ``setup_<host>``: all its parts.
ALL_PARTS = frozenset(PARTS)


class HostSetup:
    """One host's ``j-cli setup`` command: its help, scopes, ``--remove`` help and the part groups it installs."""

    __slots__ = ("name", "setup_help", "scopes", "remove_help", "part_groups")

    def __init__(
        self,
        name: str,
        setup_help: str,
        scopes: tuple[tuple[str, str], ...],
        remove_help: str,
        part_groups: tuple[tuple[str, ...], ...] = (("skill",), ("hook",), ("tool",)),
    ) -> None:
        self.name = name
        self.setup_help = setup_help
        #: ``(scope, help)`` pairs; the first is the default.
        self.scopes = scopes
        self.remove_help = remove_help
        #: The parts it installs, grouped by what can be installed alone.
        self.part_groups = part_groups

    @property
    def parts(self) -> frozenset[str]:
        """Every part this host installs."""
        return frozenset(part for group in self.part_groups for part in group)


#: Every host ``j-cli setup`` knows, by name, in the order of ``HOST_PROFILES``.
HOST_SETUPS: dict[str, HostSetup] = {
    h.name: h
    for h in (
        HostSetup(
            "dsh",
            "Install the read_notebook_output plugin for DSH.",
            (
                ("project", "./.dsh/cordis.yml and ./.dsh/plugins/jcli.ts (default)."),
                ("user", "$DSH_HOME/cordis.patch.yml and $DSH_HOME/plugins/jcli.ts."),
            ),
            "Remove only j-cli's row, plugin file and skill.",
            (("skill",), ("hook", "tool")),
        ),
        HostSetup(
            "claude",
            "Register the read-only MCP server (and the j-cli skill) with Claude Code.",
            (
                ("local", "~/.claude.json, for this project only (default)."),
                ("project", "./.mcp.json, shared with the project."),
                ("user", "~/.claude.json, for every project."),
            ),
            "Remove only j-cli's entries.",
        ),
        HostSetup(
            "codex",
            "Register the read-only MCP server (and the j-cli skill) with Codex.",
            (
                ("user", "Your Codex config (CODEX_HOME, default ~/.codex) (default)."),
                ("project", "This project's .codex/config.toml (roots reads here)."),
            ),
            "Remove only j-cli's entries.",
        ),
        HostSetup(
            "opencode",
            "Install the read_notebook_output plugin for OpenCode.",
            (("project", "./.opencode/plugins/jcli.js (default)."), ("user", "The OpenCode config dir's plugins/jcli.js.")),
            "Remove only j-cli's plugin file.",
            (("hook", "tool"),),
        ),
    )
}
