"""Copy a shipped host plugin file into place, and take back only our own.

The shipped files carry :data:`MARKER`; a file at the target without it was
not written by j-cli, so it is never replaced or deleted (``CONFIG_CONFLICT``).

Each shipped file has one line that records how to start j-cli::

    const INSTALLED_COMMAND = ["j-cli"] // set by j-cli setup

``place_plugin`` writes the scope's command there (see
:mod:`jcli.setup.command`): plain ``j-cli`` in a project's shared file, this
install's absolute interpreter in a user's own.
"""

from __future__ import annotations

import json
import os
import re

from jcli_sidecar.errors import ConfigConflict
from jcli_sidecar.fileio import read_text_or_none, write_text_atomic

__all__ = ["MARKER", "place_plugin", "render_plugin", "take_back_plugin"]

MARKER = "// managed by j-cli setup"
_COMMAND_LINE = re.compile(r"^(const INSTALLED_COMMAND\b[^=\n]*= ).*( // set by j-cli setup)$", re.M)


def _ours_or_absent(target: str) -> str | None:
    current = read_text_or_none(target)
    if current is not None and MARKER not in current:
        raise ConfigConflict(f"{target} exists and was not written by j-cli; move it away first", path=target)
    return current


def render_plugin(host: str, command: list[str]) -> str:
    """The shipped plugin for ``host`` with ``command`` recorded as how to start j-cli."""
    from jcli.plugins import plugin_path

    with open(plugin_path(host), encoding="utf-8") as fh:
        shipped = fh.read()
    rendered, count = _COMMAND_LINE.subn(lambda m: m.group(1) + json.dumps(command) + m.group(2), shipped)
    if count != 1:
        raise AssertionError(f"the shipped {host} plugin must hold exactly one INSTALLED_COMMAND line")
    return rendered


def place_plugin(host: str, target: str, command: list[str]) -> bool:
    """Write the shipped plugin for ``host`` at ``target``, recording ``command``; True when it changed.

    Raises:
        ConfigConflict: a file j-cli did not write is in the way.
    """
    current = _ours_or_absent(target)
    shipped = render_plugin(host, command)
    if current == shipped:
        return False
    os.makedirs(os.path.dirname(target), exist_ok=True)
    write_text_atomic(target, shipped)
    return True


def take_back_plugin(target: str) -> bool:
    """Delete j-cli's plugin file at ``target``; True when there was one.

    Raises:
        ConfigConflict: the file there was not written by j-cli.
    """
    if _ours_or_absent(target) is None:
        return False
    os.unlink(target)
    return True
