"""How ``j-cli setup NAME`` presents each agent host: its help, its scopes and ``--remove``.

One row per host that j-cli sets up; ``cli.py`` builds each host's click
command from its row (one flag per scope, the first the default, and
``--remove``). The work is ``jcli.setup.<name>.setup_<name>(scope, project,
remove)``; the images a host takes are its row in
``jcli_sidecar.read.HOST_PROFILES``, which names the same hosts.
"""

from __future__ import annotations

__all__ = ["HOST_SETUPS", "HostSetup"]


class HostSetup:
    """One host's ``j-cli setup`` command: its help, scopes and ``--remove`` help."""

    __slots__ = ("name", "setup_help", "scopes", "remove_help")

    def __init__(self, name: str, setup_help: str, scopes: tuple[tuple[str, str], ...], remove_help: str) -> None:
        self.name = name
        self.setup_help = setup_help
        #: ``(scope, help)`` pairs; the first is the default.
        self.scopes = scopes
        self.remove_help = remove_help


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
        ),
    )
}
