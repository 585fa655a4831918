"""How a ``setup`` action ends: what it changed, printed, and its exit code, for click and the fast path alike.

The action is a host's or git's setup (``setup_<name>`` through
``with_path_check``), returning its result document. A coded error it
raises, or an ``OSError`` met while writing (the core's one table names it),
is printed as every command prints one; warnings go to stderr in human mode
(they are in the document with ``-j``).
"""

from __future__ import annotations

from jcli_sidecar.base import JcliError, os_error

from .. import emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["human_lines", "run_host_setup", "run_setup"]

#: The result's paths worth a line, in the order they are printed.
_PATH_KEYS = ("config", "hooks", "skill", "gitignore", "plugin", "hook", "chained", "restored")


def run_setup(action: Callable[[], dict[str, Any]], json_mode: bool) -> int:
    """Run ``action``, print what it did (or its error) and return the exit code."""
    try:
        result = action()
    except JcliError as err:
        return emit.error(err, json_mode)
    except OSError as exc:
        return emit.error(os_error(exc, "write"), json_mode)
    if json_mode:
        return emit.document(result, True)
    for warning in result.get("warnings", ()):
        emit.warn(warning)
    emit.say(human_lines(result))
    return emit.EXIT_OK


def run_host_setup(
    name: str, scope: str, remove: bool, json_mode: bool, parts: frozenset[str] | None = None, skill_dir: str | None = None
) -> int:
    """``j-cli setup NAME``: the host's setup (all its parts unless ``parts``), with the PATH check, printed.

    The click command and the fast path both end here.
    """
    from jcli_sidecar.base import workspace_of

    from .host_path import with_path_check
    from .hosts import HOSTS

    host = HOSTS[name]
    chosen = host.parts if parts is None else parts
    return run_setup(lambda: with_path_check(host.setup(scope, workspace_of(), remove, parts=chosen, skill_dir=skill_dir)), json_mode)


def human_lines(result: dict[str, Any]) -> str:
    """The human report of a setup result: the paths it touched, what it replaced, and whether anything changed.

    Example:
        >>> print(human_lines({"config": "/h/.claude.json", "changed": True}))
        config: /h/.claude.json
        updated
        >>> print(human_lines({"removed": False}))
        nothing to remove
    """
    lines = [f"{key}: {result[key]}" for key in _PATH_KEYS if result.get(key)]
    replaced = result.get("replaced_upstream")
    if isinstance(replaced, list):
        lines.extend(f"replaced upstream j-cli's {what}" for what in replaced)
    elif replaced:
        lines.append("replaced upstream j-cli's pre-commit shim")
    lines.extend(f"dropped what you added: {what}" for what in result.get("dropped_user_edits", ()))
    lines.extend(f"replaced your edits: {what}" for what in result.get("replaced_user_edits", ()))
    if "removed" in result:
        lines.append("removed" if result["removed"] else "nothing to remove")
    else:
        lines.append("updated" if result.get("changed") else "already up to date")
    return "\n".join(lines)
