"""How a host starts j-cli, by scope: the one rule every ``setup`` module uses.

A **project** scope file is committed and shared by a team (``.mcp.json``,
``.codex/config.toml``, ``.opencode/plugins/jcli.js``, ``.dsh/``), so it
names plain ``j-cli``, found on each teammate's PATH, and no absolute path
of this machine; reads are rooted by the host's project directory or MCP
roots, never by ``--root /abs/path``.

Every other scope belongs to one machine, so it records this install's
absolute interpreter running ``-m jcli``: the host finds j-cli without PATH.
"""

from __future__ import annotations

import sys

__all__ = ["MCP_SERVER_ENV", "PORTABLE_COMMAND", "is_mcp_server_argv", "jcli_command", "mcp_server_argv", "mcp_user_args"]

#: What a shared project file runs: ``j-cli`` from PATH.
PORTABLE_COMMAND = ("j-cli",)
_MODULE_ARGS = ("-m", "jcli")
#: The environment ``j-cli mcp serve`` reads. A host that starts MCP servers
#: with a fixed environment (Codex) must pass these through, or reads would
#: use another runtime dir (a second sidecar) and ignore ``JCLI_SIDECAR=off``.
MCP_SERVER_ENV = ("XDG_RUNTIME_DIR", "JCLI_SIDECAR", "JCLI_SIDECAR_IDLE_SECONDS", "JCLI_SIDECAR_CACHE_MB", "JCLI_DEBUG")
_SERVE = ("mcp", "serve")


def jcli_command(scope: str) -> list[str]:
    """The argv prefix that starts j-cli for a ``scope``.

    Returns:
        ``["j-cli"]`` for ``"project"``; else ``[<this python>, "-m", "jcli"]``.

    Example:
        >>> jcli_command("project")
        ['j-cli']
    """
    if scope == "project":
        return list(PORTABLE_COMMAND)
    return [sys.executable, *_MODULE_ARGS]


def mcp_server_argv(host: str, scope: str, root: str | None = None) -> list[str]:
    """The full argv of ``j-cli mcp serve`` for ``host`` (``--root`` only when given).

    Example:
        >>> mcp_server_argv("claude", "project")
        ['j-cli', 'mcp', 'serve', '--host', 'claude']
    """
    argv = [*jcli_command(scope), *_SERVE, "--host", host]
    return argv + ["--root", root] if root else argv


def is_mcp_server_argv(argv: list[str]) -> bool:
    """True when ``argv`` is a j-cli MCP server in either form ``setup`` writes."""
    import os

    if not argv:
        return False
    if os.path.basename(argv[0]) in PORTABLE_COMMAND and tuple(argv[1:3]) == _SERVE:
        return True
    return tuple(argv[1:5]) == (*_MODULE_ARGS, *_SERVE)


def mcp_user_args(argv: list[str]) -> list[str]:
    """The arguments a user added to a j-cli MCP server's ``argv`` (``--host`` and ``--root`` are setup's).

    Example:
        >>> mcp_user_args(["j-cli", "mcp", "serve", "--host", "claude", "--debug"])
        ['--debug']
    """
    if not is_mcp_server_argv(argv):
        return []
    import os

    rest = argv[3:] if os.path.basename(argv[0]) in PORTABLE_COMMAND and tuple(argv[1:3]) == _SERVE else argv[5:]
    for option in ("--host", "--root"):
        if option in rest[:-1]:
            i = rest.index(option)
            del rest[i : i + 2]
    return rest
