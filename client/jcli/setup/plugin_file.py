"""Copy a shipped host plugin file into place, and take back only our own.

The shipped files carry :data:`MARKER`; a file at the target without it was
not written by j-cli, so it is never replaced or deleted (``CONFIG_CONFLICT``),
except upstream jupyter-jcli's own plugin (first line ``// Managed by j-cli
setup opencode.`` or ``dsh.``), which installing replaces and reports.
When setup had to create the plugin's directories, the marker line records
how many (``[+N dirs]``), and taking the plugin back removes them while
they are empty.

Each shipped file has one line that records how to start j-cli::

    const INSTALLED_COMMAND = ["j-cli"] // set by j-cli setup

``plan_plugin`` writes the scope's command there (see
:mod:`jcli.setup.command`): plain ``j-cli`` in a project's shared file, this
install's absolute interpreter in a user's own.

Both plugins share the sidecar client ``client/plugins/sidecar-client.mjs``
through one line each::

    import { sidecarReader } from "../sidecar-client.mjs"; // inlined by j-cli setup

which rendering replaces with that module's text (its ``export`` keywords
dropped: OpenCode refuses any export but the plugin), so an installed plugin
stays one self-contained file.
"""

from __future__ import annotations

import json
import re

from jcli_sidecar.base import ConfigConflict

from . import files
from .seal import edited, seal

__all__ = ["MARKER", "is_upstream_plugin", "plan_plugin", "render_plugin"]

MARKER = "// managed by j-cli setup"
_COMMAND_LINE = re.compile(r"^(const INSTALLED_COMMAND\b[^=\n]*= ).*( // set by j-cli setup)$", re.M)
_SHARED_IMPORT = re.compile(r"""^import \{[^}\n]*\} from ["']\.\./sidecar-client\.mjs["'];? // inlined by j-cli setup$""", re.M)
_EXPORT = re.compile(r"^export ", re.M)
_MARKER_LINE = re.compile(r"^.*" + re.escape(MARKER) + r".*$", re.M)
_UPSTREAM_FIRST_LINE = re.compile(r"// Managed by j-cli setup (?:opencode|dsh)\.\r?(?:\n|$)")


def is_upstream_plugin(text: str) -> bool:
    """True for the plugin file upstream jupyter-jcli's setup wrote (its first line says so).

    Example:
        >>> is_upstream_plugin("// Managed by j-cli setup opencode.\\n\\nimport path from 'node:path'\\n")
        True
        >>> is_upstream_plugin("// my own plugin\\n")
        False
    """
    return _UPSTREAM_FIRST_LINE.match(text) is not None


def render_plugin(host: str, command: list[str], dirs: int = 0) -> str:
    """The shipped plugin for ``host`` with ``command`` recorded as how to start j-cli.

    ``dirs`` (the directories setup created for it) goes on the marker line.
    """
    from jcli.plugins import plugin_path

    with open(plugin_path(host), encoding="utf-8") as fh:
        shipped = fh.read()
    rendered, count = _COMMAND_LINE.subn(lambda m: m.group(1) + json.dumps(command) + m.group(2), shipped)
    if count != 1:
        raise AssertionError(f"the shipped {host} plugin must hold exactly one INSTALLED_COMMAND line")
    from jcli.plugins import shared_module_path

    with open(shared_module_path(), encoding="utf-8") as fh:
        shared = _EXPORT.sub("", fh.read()).rstrip("\n")
    rendered, count = _SHARED_IMPORT.subn(lambda m: shared, rendered)
    if count != 1:
        raise AssertionError(f"the shipped {host} plugin must import the shared sidecar client exactly once")
    if dirs:
        rendered = _MARKER_LINE.sub(lambda m: m.group(0) + files.dirs_mark(dirs), rendered, count=1)
    return rendered


def _dirs(text: str) -> int:
    match = _MARKER_LINE.search(text)
    return (files.dirs_recorded(match.group(0)) or 0) if match else 0


def plan_plugin(
    plan: files.Plan,
    host: str,
    target: str,
    command: list[str] | None,
    replaced: list[str] | None = None,
    edits: list[str] | None = None,
) -> bool:
    """Plan writing ``host``'s plugin at ``target`` recording ``command``, or (``command`` None) deleting it.

    Upstream jupyter-jcli's plugin at ``target`` is replaced by installing
    (noted in ``replaced``) and left alone by removing (it is not ours). Our
    file edited since setup wrote it (its digest, :mod:`jcli.setup.seal`) is
    still replaced or deleted, and ``edits`` says so. Returns whether anything changes.

    Raises:
        ConfigConflict: a file j-cli did not write is there.
        ConfigInvalid: what is there is not a regular UTF-8 file.
        OutputSaveFailed: it is read-only.
    """
    cur = files.read(target)
    upstream = cur.text is not None and MARKER not in cur.text and is_upstream_plugin(cur.text)
    if upstream:
        if command is None:
            return False
        if replaced is not None:
            replaced.append(f"plugin {target}")
        return plan.write(cur, seal(render_plugin(host, command, 0), MARKER))
    if cur.text is not None and MARKER not in cur.text:
        raise ConfigConflict(f"{target} exists and was not written by j-cli; move it away first", path=target)
    was_edited = cur.text is not None and edited(cur.text) is True
    if command is None:
        if cur.text is None:
            return False
        if was_edited and edits is not None:
            edits.append(f"plugin {target}: it was edited since setup wrote it, and is deleted with those edits")
        plan.delete(cur, _dirs(cur.text))
        return True
    dirs = cur.missing_dirs() if cur.text is None else _dirs(cur.text)
    changed = plan.write(cur, seal(render_plugin(host, command, dirs), MARKER))
    if was_edited and changed and edits is not None:
        edits.append(f"plugin {target}: it was edited since setup wrote it; those edits are replaced by j-cli's plugin")
    return changed
