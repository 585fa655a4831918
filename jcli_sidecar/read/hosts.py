"""The agent hosts j-cli serves, in one table.

Each :class:`Host` row holds what differs between hosts: the image types and
limits the host accepts (``--host NAME``), and how ``j-cli setup NAME``
presents itself (help, scopes with the default first, ``--remove``). The
work of setting a host up is ``jcli.setup.<name>.setup_<name>(scope,
project, remove)``; how a host starts j-cli is ``jcli.setup.command``.
Adding a host is one row here plus its setup module.
"""

from __future__ import annotations

from .mime import RASTER_IMAGE_TYPES

__all__ = ["HOSTS", "HOST_NAMES", "HOST_PROFILES", "Host", "HostProfile", "MiB"]

MiB = 1024 * 1024


class HostProfile:
    """The image types and size limits one agent host accepts."""

    __slots__ = ("name", "types", "max_edge", "max_pixels", "max_bytes", "why")

    def __init__(self, name: str, types: tuple[str, ...], max_edge: int, max_pixels: int, max_bytes: int, why: str):
        self.name = name
        self.types = types
        self.max_edge = max_edge
        self.max_pixels = max_pixels
        self.max_bytes = max_bytes
        self.why = why


_RASTER = RASTER_IMAGE_TYPES  # every host takes every raster type j-cli reads


class Host:
    """One agent host: its image profile and its ``setup`` command."""

    __slots__ = ("name", "profile", "setup_help", "scopes", "remove_help")

    def __init__(self, profile: HostProfile, setup_help: str, scopes: tuple[tuple[str, str], ...], remove_help: str) -> None:
        self.name = profile.name
        self.profile = profile
        self.setup_help = setup_help
        #: ``(scope, help)`` pairs; the first is the default.
        self.scopes = scopes
        self.remove_help = remove_help


#: Every host, by name.
HOSTS: dict[str, Host] = {
    h.name: h
    for h in (
        Host(
            HostProfile(
                "dsh",
                _RASTER,
                2000,
                2000 * 2000,
                3 * MiB + MiB // 2,
                "DSH's attachment store (dsh-attachment-local 0.1.0-rc.8 defaults) admits at most 2000 px per side and 3.5 MiB",
            ),
            "Install the read_notebook_output plugin for DSH.",
            (
                ("project", "./.dsh/cordis.yml and ./.dsh/plugins/jcli.ts (default)."),
                ("user", "$DSH_HOME/cordis.patch.yml and $DSH_HOME/plugins/jcli.ts."),
            ),
            "Remove only j-cli's row, plugin file and skill.",
        ),
        Host(
            HostProfile(
                "claude",
                _RASTER,
                1568,
                1568 * 1568,
                3 * MiB + 3 * MiB // 4,
                "Claude takes png/jpeg/gif/webp up to 5 MB of base64 (3.75 MiB of bytes) and downscales past a 1568 px long edge",
            ),
            "Register the read-only MCP server (and the j-cli skill) with Claude Code.",
            (
                ("local", "~/.claude.json, for this project only (default)."),
                ("project", "./.mcp.json, shared with the project."),
                ("user", "~/.claude.json, for every project."),
            ),
            "Remove only j-cli's entries.",
        ),
        Host(
            HostProfile(
                "codex",
                _RASTER,
                2048,
                2048 * 2048,
                10 * MiB,
                "Codex rejects SVG; OpenAI vision scales images into a 2048 px square",
            ),
            "Register the read-only MCP server (and the j-cli skill) with Codex.",
            (
                ("user", "Your Codex config (CODEX_HOME, default ~/.codex) (default)."),
                ("project", "This project's .codex/config.toml (roots reads here)."),
            ),
            "Remove only j-cli's entries.",
        ),
        Host(
            HostProfile(
                "opencode",
                _RASTER,
                1568,
                1568 * 1568,
                3 * MiB + 3 * MiB // 4,
                "OpenCode forwards attachments to the model provider; these are the strictest common limits (Claude's)",
            ),
            "Install the read_notebook_output plugin for OpenCode.",
            (("project", "./.opencode/plugins/jcli.js (default)."), ("user", "The OpenCode config dir's plugins/jcli.js.")),
            "Remove only j-cli's plugin file.",
        ),
    )
}

#: ``--host NAME`` -> what that host takes.
HOST_PROFILES: dict[str, HostProfile] = {name: host.profile for name, host in HOSTS.items()}

#: The names, for help texts: "dsh, claude, codex or opencode".
HOST_NAMES = ", ".join(list(HOSTS)[:-1]) + " or " + list(HOSTS)[-1]
