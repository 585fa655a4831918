"""``j-cli setup dsh``: the j-cli plugin row in DSH's Cordis composition.

``--project`` copies the plugin to ``<project>/.dsh/plugins/jcli.ts`` and adds
the row ``{id: j-cli, name: ./plugins/jcli.ts}`` to ``<project>/.dsh/cordis.yml``.
``--user`` copies it to ``$DSH_HOME/plugins/jcli.ts`` (``DSH_HOME`` defaults
to ``~/.dsh``) and adds an ``insert`` patch holding that row, with the
absolute path, to ``$DSH_HOME/cordis.patch.yml``.

The row lives in a marked block (:mod:`jcli.setup.blocks`) at the end of the
file, indented like the file's own rows and before an explicit document end
(``...``); a composition written as a flow sequence (``[a, b]``, ``[]``) gets
the row inside it, the block standing in place of those lines and keeping
them. So installing twice changes nothing and removing restores the file
byte for byte. ruamel.yaml (round-trip mode, which keeps comments and
unknown tags such as ``!!js``) parses the file before the edit (it must be
empty or a sequence, else ``CONFIG_INVALID`` and the file stays untouched)
and after it (the result must be exactly the old rows plus ours). A row
with id ``j-cli`` outside the block is someone else's: ``CONFIG_CONFLICT``.
"""

from __future__ import annotations

import json
import os
import re

from jcli_sidecar.base import ConfigConflict, ConfigInvalid

from . import files
from .blocks import find_block, put_block, remove_block
from .command import jcli_command
from .hosts import ALL_PARTS
from .plugin_file import plan_plugin
from .skill import plan_skill
from .upstream_skill import plan_replace_upstream_skill

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ROW_ID", "dsh_paths", "plugin_row", "setup_dsh", "status_dsh"]

ROW_ID = "j-cli"
_PROJECT_PLUGIN = "./plugins/jcli.ts"  # relative to .dsh/, where cordis.yml is
_PURPOSE = "DSH plugin row for read_notebook_output"


def dsh_paths(scope: str, project: str) -> tuple[str, str, str]:
    """``(composition file, plugin file, skills dir)`` for a scope."""
    if scope == "project":
        dsh = os.path.join(project, ".dsh")
        return os.path.join(dsh, "cordis.yml"), os.path.join(dsh, "plugins", "jcli.ts"), os.path.join(project, ".agents", "skills")
    home = os.environ.get("DSH_HOME") or os.path.join(os.path.expanduser("~"), ".dsh")
    skills = os.path.join(os.path.expanduser("~"), ".agents", "skills")
    return os.path.join(home, "cordis.patch.yml"), os.path.join(home, "plugins", "jcli.ts"), skills


def plugin_row(scope: str, plugin: str, extras: dict[str, Any] | None = None) -> dict[str, Any]:
    """The composition entry j-cli adds (a row, or an ``insert`` patch of one), with the user's ``extras`` in the row."""
    if scope == "project":
        return {"id": ROW_ID, "name": _PROJECT_PLUGIN, **(extras or {})}
    return {"insert": [{"id": ROW_ID, "name": plugin, **(extras or {})}]}


def _row_yaml(scope: str, plugin: str, extras: dict[str, Any]) -> str:
    if scope == "project":
        return f"- id: {ROW_ID}\n  name: '{_PROJECT_PLUGIN}'\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in extras.items())
    more = "".join(f"      {k}: {json.dumps(v)}\n" for k, v in extras.items())
    return f"- insert:\n    - id: {ROW_ID}\n      name: {json.dumps(plugin)}\n" + more


def _row_flow(scope: str, plugin: str, extras: dict[str, Any]) -> str:
    """The row as a flow mapping, for a composition written as a flow sequence."""
    more = "".join(f", {k}: {json.dumps(v)}" for k, v in extras.items())
    if scope == "project":
        return f"{{id: {ROW_ID}, name: '{_PROJECT_PLUGIN}'{more}}}"
    return f"{{insert: [{{id: {ROW_ID}, name: {json.dumps(plugin)}{more}}}]}}"


def _row_extras(scope: str, ours: list) -> dict[str, Any]:
    """What the user added to our row (keys besides ``id`` and ``name``), when it can be written back as JSON."""
    row = ours[0] if len(ours) == 1 else None
    if scope != "project" and isinstance(row, dict):
        inserted = row.get("insert")
        row = inserted[0] if isinstance(inserted, list) and len(inserted) == 1 else None
    if not isinstance(row, dict):
        return {}
    extras = {str(k): v for k, v in row.items() if k not in ("id", "name")}
    try:
        json.dumps(extras)
    except (TypeError, ValueError):
        return {}
    return extras


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


def _layout(text: str) -> tuple[int | None, str, tuple[int, int, int] | None]:
    """Where rows go in ``text``: ``(insert at, row indent, flow sequence to extend)``.

    The insert point is the end, or the line of an explicit document end
    (``...``); rows are indented like the sequence's own items. A flow
    sequence (``[a, b]``, ``[]``) gets the row inside it instead:
    ``(its [, where the row goes, its ])``.
    """
    from ruamel.yaml import YAML

    at: int | None = None
    indent = ""
    depth = 0
    opened = after = -1
    flow: tuple[int, int, int] | None = None
    for event in YAML().parse(text):
        kind = type(event).__name__
        if kind == "DocumentEndEvent" and event.explicit:
            at = event.start_mark.index - event.start_mark.column
        elif kind in ("SequenceStartEvent", "MappingStartEvent"):
            if depth == 0 and kind == "SequenceStartEvent" and event.flow_style:
                opened, after = event.start_mark.index, event.end_mark.index
            depth += 1
        elif kind in ("SequenceEndEvent", "MappingEndEvent"):
            depth -= 1
            if depth == 1:
                after = event.end_mark.index
            elif depth == 0 and opened >= 0:
                flow = (opened, after, event.start_mark.index)
        elif kind in ("ScalarEvent", "AliasEvent") and depth == 1:
            after = event.end_mark.index
    if flow is None:
        for token in YAML().scan(text):
            if type(token).__name__ == "BlockEntryToken":
                indent = " " * token.start_mark.column
                break
    return at, indent, flow


def _with_row(base: str, row_yaml: str, row_flow: str, created: bool, dirs: int) -> str:
    at, indent, flow = _layout(base)
    if flow is None:
        rows = "".join(indent + line + "\n" for line in row_yaml.splitlines())
        return put_block(base, _PURPOSE, rows, at=at, created=created, dirs=dirs)
    opened, where, close = flow
    first = base.rfind("\n", 0, opened) + 1
    last = base.find("\n", close)
    last = len(base) if last < 0 else last + 1
    item = row_flow if base[opened:where].rstrip().endswith("[") else ", " + row_flow
    lines = base[first:where] + item + base[where:last]
    return put_block(base, _PURPOSE, lines, at=first, replacing=last - first, created=created, dirs=dirs)


def setup_dsh(
    scope: str, project: str, remove: bool = False, *, parts: frozenset[str] = ALL_PARTS, skill_dir: str | None = None
) -> dict[str, Any]:
    """Install (or remove) j-cli's DSH plugin file, its composition row and the skill.

    Args:
        parts: ``skill``, and the plugin (``hook`` and ``tool``, which it carries together: either names it).
        skill_dir: the skill goes to ``skill_dir/j-cli/`` instead of the scope's skills dir.

    Raises:
        ConfigInvalid: the composition file is not a YAML sequence (or would not
            be after), or is not a regular UTF-8 file.
        ConfigConflict: a row with id ``j-cli``, a ``jcli.ts`` or a SKILL.md that j-cli does not manage.
        OutputSaveFailed: a file to change is read-only.
    """
    config, plugin, skills = dsh_paths(scope, project)
    skills = skill_dir or skills
    with_plugin = bool(parts & {"hook", "tool"})
    result: dict[str, Any] = {"host": "dsh", "scope": scope, "parts": sorted(parts)}
    if with_plugin:
        result.update(config=config, plugin=plugin)
    plan = files.Plan()
    if remove:
        result["removed"] = False
        result["dropped_user_edits"] = []
        if with_plugin:
            _plan_plugin_removal(plan, scope, config, plugin, result)
        if "skill" in parts:
            result["skill_removed"] = plan_skill(plan, skills, remove=True, edits=result["dropped_user_edits"])
            result["removed"] = result["removed"] or result["skill_removed"]
        plan.apply()
        return result
    replaced: list[str] = []
    edits: list[str] = []
    changed = False
    if with_plugin:
        planned = len(plan)
        command = jcli_command(scope)
        result.update(row=_plan_plugin_install(plan, scope, config, plugin, command, replaced, edits), command=command)
        changed = len(plan) > planned
    if "skill" in parts:
        planned = len(plan)
        upstream_skill = plan_replace_upstream_skill(plan, skills)
        if upstream_skill:
            replaced.append(f"skill in {os.path.join(skills, 'j-cli')}")
        result["skill"] = plan_skill(plan, skills, remove=False, replace_foreign=upstream_skill, edits=edits)
        changed = changed or len(plan) > planned
    result.update(changed=changed, replaced_upstream=replaced)
    if edits:
        result["replaced_user_edits"] = edits
    plan.apply()
    if scope == "project" and with_plugin:
        result["warnings"] = [_project_warning(config)]
    return result


def _plan_plugin_removal(plan: files.Plan, scope: str, config: str, plugin: str, result: dict[str, Any]) -> None:
    """Plan taking out our composition row and plugin file; ``result`` gets ``removed``, ``plugin_removed`` and the edits dropped."""
    cur = files.read(config)
    text = cur.text or ""
    rows = _parse(text, config)
    block = find_block(text)
    if block is not None:
        rest = remove_block(text)
        if _split(_parse(rest, config)) != (_split(rows)[0], []):
            raise ConfigInvalid(f"{config}: the j-cli block does not hold only j-cli's row; it was left untouched", path=config)
        if rest == "" and block.created:
            plan.delete(cur, block.dirs)
        else:
            plan.write(cur, rest)
    result["removed"] = block is not None
    extras = sorted(_row_extras(scope, _split(rows)[1])) if block is not None else []
    if extras:
        result["dropped_user_edits"].append(f"Cordis row {ROW_ID} in {config}: the keys {', '.join(extras)}")
    result["plugin_removed"] = plan_plugin(plan, "dsh", plugin, None, edits=result["dropped_user_edits"])


def _plan_plugin_install(
    plan: files.Plan, scope: str, config: str, plugin: str, command: list[str], replaced: list[str], edits: list[str]
) -> dict[str, Any]:
    """Plan our plugin file and its composition row (upstream's rows replaced); returns the row."""
    cur = files.read(config)
    text = cur.text or ""
    rows = _parse(text, config)
    block = find_block(text)
    text, upstream_rows = _without_upstream_blocks(text)
    if upstream_rows:
        replaced.append(f"Cordis row {', '.join(upstream_rows)} in {config}")
        rows = _parse(text, config)
        block = find_block(text)
    base = remove_block(text) if block is not None else text
    others = _split(_parse(base, config))[0] if block is not None else rows
    if block is None and _claims(rows):
        raise ConfigConflict(
            f"{config} already has a Cordis row with id {ROW_ID!r} that j-cli does not manage; rename or remove it", path=config
        )
    extras = _row_extras(scope, _split(rows)[1]) if block is not None else {}
    row = plugin_row(scope, plugin, extras)
    created, dirs = (block.created, block.dirs) if block is not None else (cur.text is None, cur.missing_dirs())
    try:
        if block is not None and _split(rows) == (others, [row]):
            new = text  # our row, with what the user added to it, is already in place
        else:
            new = _with_row(base, _row_yaml(scope, plugin, extras), _row_flow(scope, plugin, extras), created, dirs)
        fits = _split(_parse(new, config)) == (others, [row])
    except ConfigInvalid:
        fits = False
    if not fits:
        raise ConfigInvalid(f"{config}: the j-cli row cannot be added to this file's layout; it was left untouched", path=config)
    plan_plugin(plan, "dsh", plugin, command, replaced, edits)
    plan.write(cur, new)
    return row


#: Upstream jupyter-jcli's marked blocks in a Cordis file (its row ``jcli-hooks``).
_UPSTREAM_BLOCK = re.compile(
    r"^# >>> jcli managed \((?P<what>[^)\n]*)\) >>>\r?\n(?P<body>.*?)^# <<< jcli managed \((?P=what)\) <<<[^\n]*(?:\n|$)", re.M | re.S
)


def _without_upstream_blocks(text: str) -> tuple[str, list[str]]:
    """``text`` without upstream jupyter-jcli's marked blocks, and the row ids they held.

    Example:
        >>> _without_upstream_blocks("- id: mine\\n# >>> jcli managed (dsh hooks) >>>\\n- id: jcli-hooks\\n# <<< jcli managed (dsh hooks) <<<\\n")
        ('- id: mine\\n', ['jcli-hooks'])
    """
    ids: list[str] = []

    def drop(match: re.Match[str]) -> str:
        ids.extend(re.findall(r"\bid:\s*['\"]?([\w.-]+)", match.group("body")) or [match.group("what")])
        return ""

    return _UPSTREAM_BLOCK.sub(drop, text), ids


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


def status_dsh(scope: str, project: str) -> dict[str, Any]:
    """What setup installed for DSH in ``scope`` (a row of ``j-cli setup status``)."""
    from .status import installed_plugin, installed_skill

    config, plugin_path, skills = dsh_paths(scope, project)
    plugin, command = installed_plugin(plugin_path)
    return {
        "row": config if find_block(files.read(config).text or "") else None,
        "plugin": plugin,
        "skill": installed_skill(skills),
        "command": command[:1] if command else None,
    }
