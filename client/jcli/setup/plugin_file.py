"""Copy a shipped host plugin file into place, and take back only our own.

The shipped files carry :data:`MARKER`; a file at the target without it was
not written by j-cli, so it is never replaced or deleted (``CONFIG_CONFLICT``).
"""

from __future__ import annotations

import os

from jcli_sidecar.errors import ConfigConflict
from jcli_sidecar.fileio import read_text_or_none, write_text_atomic

__all__ = ["MARKER", "place_plugin", "take_back_plugin"]

MARKER = "// managed by j-cli setup"


def _ours_or_absent(target: str) -> str | None:
    current = read_text_or_none(target)
    if current is not None and MARKER not in current:
        raise ConfigConflict(f"{target} exists and was not written by j-cli; move it away first", path=target)
    return current


def place_plugin(host: str, target: str) -> bool:
    """Write the shipped plugin for ``host`` at ``target``; True when it changed.

    Raises:
        ConfigConflict: a file j-cli did not write is in the way.
    """
    from jcli.plugins import plugin_path

    current = _ours_or_absent(target)
    with open(plugin_path(host), encoding="utf-8") as fh:
        shipped = fh.read()
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
