"""Which hooks in a host's hooks file are j-cli's, and what the user added to them.

A hook is j-cli's by its mark (``"_jcli_guard": NAME``), or, when the mark
was taken out, by its command: ``j-cli _hooks NAME ...`` or ``<python> -m
jcli _hooks NAME ...``, whatever arguments were added and wherever it was
moved. What the user added (arguments, fields) is kept by ``setup`` and
named by ``--remove``, which has to drop it.
"""

from __future__ import annotations

import os
import shlex

from jcli_sidecar.guards import GUARDS

from .command import PORTABLE_COMMAND

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MARK", "guard_of", "user_args", "user_edits"]

#: The field that marks a hook entry as j-cli's.
MARK = "_jcli_guard"
#: Fields of a hook that j-cli writes; any other field is the user's.
_OUR_FIELDS = ("type", "command", MARK)


def _argv(command: Any) -> list[str] | None:
    """``command`` split as the host's shell would, or None when it does not split."""
    if not isinstance(command, str):
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def _hooks_at(argv: list[str]) -> int | None:
    """Where ``_hooks`` stands in a j-cli command line in either form setup writes, else None."""
    if len(argv) >= 3 and os.path.basename(argv[0]) in PORTABLE_COMMAND and argv[1] == "_hooks":
        return 1
    if len(argv) >= 5 and argv[1:3] == ["-m", "jcli"] and argv[3] == "_hooks":
        return 3
    return None


def guard_of(hook: Any) -> str | None:
    """The guard a hook of j-cli's runs, else None.

    A hook is j-cli's by its mark, or, when the mark was taken out, by its
    command (``j-cli _hooks NAME ...`` or ``<python> -m jcli _hooks NAME ...``),
    whatever arguments were added and wherever it was moved.
    """
    if not isinstance(hook, dict):
        return None
    mark = hook.get(MARK)
    if isinstance(mark, str) and mark:
        return mark.split(" [+", 1)[0]
    argv = _argv(hook.get("command"))
    at = _hooks_at(argv) if argv else None
    if argv is None or at is None:
        return None
    name = argv[at + 1]
    return name if name in GUARDS else None


def user_args(hook: dict[str, Any]) -> list[str] | None:
    """The arguments the user added to a hook of ours (None: its command is not one setup could have written)."""
    argv = _argv(hook.get("command"))
    at = _hooks_at(argv) if argv else None
    if argv is None or at is None:
        return None
    rest = argv[at + 2 :]
    if "--platform" in rest[:-1]:
        i = rest.index("--platform")
        del rest[i : i + 2]
    return rest


def user_edits(hook: dict[str, Any]) -> list[str]:
    """What the user added to a hook of ours, each as a phrase (empty: it is as setup wrote it)."""
    found = []
    args = user_args(hook)
    if args is None:
        found.append(f"its command {hook.get('command')!r}")
    elif args:
        found.append(f"the arguments {shlex.join(args)!r}")
    fields = [str(k) for k in hook if k not in _OUR_FIELDS]
    if fields:
        found.append(f"the field{'s' if len(fields) > 1 else ''} {', '.join(fields)}")
    return found
