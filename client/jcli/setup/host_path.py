"""Which j-cli a host will run: the command an entry names, resolved as the host resolves it.

A project's shared files name plain ``j-cli`` (:mod:`jcli.setup.command`),
which the host looks up on its PATH when it starts a hook or the MCP
server. When that finds nothing, every hook exits 127 and the host runs the
command unguarded; when it finds another j-cli, the host runs that one. So
``setup`` resolves the command with the PATH it runs under (the host is
usually started from the same shell) and compares it with this install:
the same file (realpaths), else the same version (``--version``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from jcli_sidecar import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["finds", "finds_warning", "this_jcli", "with_path_check"]

#: How long ``--version`` of another j-cli may take.
_VERSION_TIMEOUT = 20


def this_jcli() -> str | None:
    """The ``j-cli`` script of this install (beside its interpreter), if there is one."""
    here = os.path.join(os.path.dirname(sys.executable), "j-cli")
    return here if os.access(here, os.X_OK) else shutil.which("j-cli", path=os.path.dirname(sys.executable))


def _version(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=_VERSION_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):  # that j-cli cannot run: no version, which setup reports
        return None
    words = proc.stdout.split()
    return words[-1] if proc.returncode == 0 and words else None


def finds(command: list[str], path: str | None = None) -> dict[str, Any]:
    """What running ``command`` finds with ``path`` as PATH (default: this process's).

    Returns ``{"command", "found", "this_jcli"}`` and, when something was
    found, ``"version"``: ``this_jcli`` is True when it is this install (the
    same file, or the same version).
    """
    path = os.environ.get("PATH", os.defpath) if path is None else path
    program = command[0] if command else ""
    if os.sep in program:
        found = program if os.access(program, os.X_OK) and os.path.isfile(program) else None
    else:
        found = shutil.which(program, path=path)
    out: dict[str, Any] = {"command": list(command), "found": found, "this_jcli": False}
    if found is None:
        return out
    argv = [found, *command[1:]]
    same_file = os.path.realpath(found) in {os.path.realpath(p) for p in (sys.executable, this_jcli() or "") if p}
    out["version"] = __version__ if same_file else _version(argv)
    out["this_jcli"] = out["version"] == __version__
    return out


def finds_warning(found: dict[str, Any], what: str) -> str | None:
    """The warning (with its fix) when ``found`` is not this j-cli, else None; ``what`` names the entries."""
    if found["this_jcli"]:
        return None
    command = " ".join(found["command"][:1])
    mine = this_jcli() or f"{sys.executable} -m jcli"
    fix = (
        f"put the directory of this j-cli ({os.path.dirname(mine)}) on the PATH the host starts with, "
        "or install j-cli where every teammate's PATH finds it, or use the --user (or --local) scope, "
        "which records this install's absolute path"
    )
    if found["found"] is None:
        return f"{what} run `{command}`, which is not on PATH: the host cannot start it, so they will not run (a hook that cannot start lets every command through); {fix}"
    version = found.get("version") or "unknown version"
    return f"{what} run `{command}`, which on PATH is {found['found']} ({version}), not this j-cli ({__version__}, {mine}); {fix}"


def with_path_check(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` of a project-scope setup with what its host will find on PATH (and a warning when it is not this j-cli).

    Other scopes record this install's absolute interpreter, and a removal
    leaves nothing to run: both are returned as they are.
    """
    if result.get("scope") != "project" or "removed" in result:
        return result
    from .command import PORTABLE_COMMAND

    found = finds(list(PORTABLE_COMMAND))
    result["jcli_on_path"] = found
    warning = finds_warning(found, f"the {result.get('host')} entries in this project")
    if warning:
        result["warnings"] = [*result.get("warnings", []), warning]
    return result
