"""``j-cli setup dsh``: the j-cli plugin row in DSH's Cordis composition.

``--project`` copies the plugin to ``<project>/.dsh/plugins/jcli.ts`` and adds
the row ``{id: j-cli, name: ./plugins/jcli.ts}`` to ``<project>/.dsh/cordis.yml``.
``--user`` copies it to ``$DSH_HOME/plugins/jcli.ts`` (``DSH_HOME`` defaults
to ``~/.dsh``) and adds an ``insert`` patch holding that row, with the
absolute path, to ``$DSH_HOME/cordis.patch.yml``.

The row lives in a marked block at the end of the file, so installing twice
changes nothing and removing restores the file byte for byte. ruamel.yaml
(round-trip mode, which keeps comments and unknown tags such as ``!!js``)
parses the file before the edit (it must be empty or a sequence, else
``CONFIG_INVALID`` and the file stays untouched) and after it (the result
must be exactly the old rows plus ours). A row with id ``j-cli`` outside
the block is someone else's: ``CONFIG_CONFLICT``.
"""

from __future__ import annotations

import json
import os
import re

from jcli_sidecar.errors import ConfigConflict, ConfigInvalid
from jcli_sidecar.fileio import read_text_or_none, write_text_atomic

from .blocks import has_block, put_block, remove_block
from .command import jcli_command
from .plugin_file import place_plugin, take_back_plugin
from .skill import install_skill, remove_skill

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ROW_ID", "dsh_paths", "plugin_row", "setup_dsh"]

ROW_ID = "j-cli"
_PROJECT_PLUGIN = "./plugins/jcli.ts"  # relative to .dsh/, where cordis.yml is
_PURPOSE = "DSH plugin row for read_notebook_output"
_WAS_EMPTY_FLOW = " (in place of an empty [])"
_REPLACED = "# replaced line: "
_EMPTY_FLOW_LINE = re.compile(r"^\[\s*\]\s*(?:#.*)?\n?", re.M)


def dsh_paths(scope: str, project: str) -> tuple[str, str, str]:
    """``(composition file, plugin file, skills dir)`` for a scope."""
    if scope == "project":
        dsh = os.path.join(project, ".dsh")
        return os.path.join(dsh, "cordis.yml"), os.path.join(dsh, "plugins", "jcli.ts"), os.path.join(project, ".agents", "skills")
    home = os.environ.get("DSH_HOME") or os.path.join(os.path.expanduser("~"), ".dsh")
    skills = os.path.join(os.path.expanduser("~"), ".agents", "skills")
    return os.path.join(home, "cordis.patch.yml"), os.path.join(home, "plugins", "jcli.ts"), skills


def plugin_row(scope: str, plugin: str) -> dict[str, Any]:
    """The composition entry j-cli adds (a row, or an ``insert`` patch of one)."""
    if scope == "project":
        return {"id": ROW_ID, "name": _PROJECT_PLUGIN}
    return {"insert": [{"id": ROW_ID, "name": plugin}]}


def _row_yaml(scope: str, plugin: str) -> str:
    if scope == "project":
        return f"- id: {ROW_ID}\n  name: '{_PROJECT_PLUGIN}'\n"
    return f"- insert:\n    - id: {ROW_ID}\n      name: {json.dumps(plugin)}\n"


def _parse(text: str, path: str) -> list:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        doc = YAML(typ="rt").load(text)
    except YAMLError as exc:
        raise ConfigInvalid(f"{path} is not valid YAML ({type(exc).__name__}); it was left untouched", path=path) from None
    if doc is None:
        return []
    if not isinstance(doc, list):
        raise ConfigInvalid(f"{path} must be a YAML sequence of Cordis rows; it was left untouched", path=path)
    return _plain(doc)


def _plain(node: Any) -> Any:
    """Comparable plain data: tagged scalars (``!!js …``) keep their tag."""
    from ruamel.yaml.comments import TaggedScalar

    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, TaggedScalar):
        return ("tag", str(node.tag.value), node.value)
    return node


def _claims(rows: list) -> bool:
    """Whether any row (or any row inside an ``insert`` patch) has our id."""
    for row in rows:
        if not isinstance(row, dict):
            continue
        if row.get("id") == ROW_ID:
            return True
        inserted = row.get("insert")
        if isinstance(inserted, list) and _claims(inserted):
            return True
    return False


def _with_row(text: str, rows: list, row_yaml: str) -> str:
    replaced = _replaced_line(text)
    if replaced is not None:  # our block stands where an empty ``[]`` was
        return put_block(text, _PURPOSE + _WAS_EMPTY_FLOW, _REPLACED + replaced + "\n" + row_yaml)
    if has_block(text):
        return put_block(text, _PURPOSE, row_yaml)
    match = _EMPTY_FLOW_LINE.search(text) if not rows else None
    if match is None:
        return put_block(text, _PURPOSE, row_yaml)
    line = match.group(0).rstrip("\n")
    block = put_block("", _PURPOSE + _WAS_EMPTY_FLOW, _REPLACED + line + "\n" + row_yaml)
    return text[: match.start()] + block + text[match.end() :]


def _replaced_line(text: str) -> str | None:
    """The ``[]`` line our block replaced, when it replaced one."""
    start = text.find("# >>> j-cli: ")
    if start < 0 or _WAS_EMPTY_FLOW not in text[start : text.find("\n", start)]:
        return None
    body = text.find("\n" + _REPLACED, start)
    if body < 0:
        return None
    body += 1 + len(_REPLACED)
    return text[body : text.find("\n", body)]


def _without_row(text: str) -> str:
    replaced = _replaced_line(text)
    rest = remove_block(text)
    if replaced is None:
        return rest
    start = text.index("# >>> j-cli: ")
    return rest[:start] + replaced + "\n" + rest[start:]


def setup_dsh(scope: str, project: str, remove: bool = False) -> dict[str, Any]:
    """Install (or remove) j-cli's DSH plugin file, its composition row and the skill.

    Raises:
        ConfigInvalid: the composition file is not a YAML sequence (or would not be after).
        ConfigConflict: a row with id ``j-cli``, or a ``jcli.ts``, that j-cli does not manage.
        OSError: a file cannot be written.
    """
    config, plugin, skills = dsh_paths(scope, project)
    text = read_text_or_none(config)
    rows = _parse(text or "", config)
    result: dict[str, Any] = {"host": "dsh", "scope": scope, "config": config, "plugin": plugin}
    if remove:
        changed = text is not None and has_block(text)
        if changed:
            rest = _without_row(text)
            if _split(_parse(rest, config)) != (_split(rows)[0], []):
                raise ConfigInvalid(f"{config}: the j-cli block does not hold only j-cli's row; it was left untouched", path=config)
            if rest:
                write_text_atomic(config, rest)
            else:
                os.unlink(config)  # j-cli created it
        result["removed"] = changed
        result["plugin_removed"] = take_back_plugin(plugin)
        result["skill_removed"] = remove_skill(skills)
        return result
    if not has_block(text or "") and _claims(rows):
        raise ConfigConflict(
            f"{config} already has a Cordis row with id {ROW_ID!r} that j-cli does not manage; rename or remove it", path=config
        )
    row = plugin_row(scope, plugin)
    new = _with_row(text or "", rows, _row_yaml(scope, plugin))
    if _split(_parse(new, config)) != (_split(rows)[0], [row]):
        raise ConfigInvalid(f"{config}: the j-cli row cannot be added to this file's layout; it was left untouched", path=config)
    command = jcli_command(scope)
    plugin_changed = place_plugin("dsh", plugin, command)
    if new != text:
        os.makedirs(os.path.dirname(config), exist_ok=True)
        write_text_atomic(config, new)
    result.update(row=row, command=command, skill=install_skill(skills), changed=new != text or plugin_changed)
    if scope == "project":
        result["warnings"] = [_project_warning(config)]
    return result


def _project_warning(config: str) -> str:
    """DSH composes its home and profile patches, never a project's file: say how to include it."""
    from pathlib import Path

    home = os.environ.get("DSH_HOME") or os.path.join(os.path.expanduser("~"), ".dsh")
    url = Path(config).as_uri()
    return (
        f"DSH reads no project file by itself: to load {config}, include it from "
        f"{os.path.join(home, 'cordis.patch.yml')} (or a `dsh --patch` overlay) with "
        f"`- insert: [{{id: j-cli-project, name: 'cordis:include', config: {{path: '{url}'}}}}]`, "
        "or run `j-cli setup dsh --user` instead"
    )


def _split(rows: list) -> tuple[list, list]:
    """``(other rows, j-cli's rows)``, each in file order."""
    ours = [r for r in rows if _claims([r])]
    return [r for r in rows if not _claims([r])], ours
