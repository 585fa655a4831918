"""The guard hooks in a host's JSON hooks file (Claude Code's settings, Codex's ``hooks.json``).

Both hosts read the same shape::

    {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "..."}]}]}}

j-cli adds matcher groups of its own (never hooks inside a user's group),
each hook marked ``"_jcli_guard": NAME`` (both hosts ignore fields they do
not know), so a later ``setup`` or ``--remove`` finds exactly ours. The file
is edited as text (:mod:`jcli.setup.jsontext`): ours go in after the
existing groups and come back out, every other byte kept; what setup had
to create (the file, ``hooks``, an event's list) it writes in the compact
one-line form, which is how removal knows to take it out too.

Upstream j-cli 0.9.7 marked its hook entries ``"_jcli_managed": NAME``;
:func:`without_upstream` takes those out (a user's hook in the same group
stays), and the groups, lists and ``hooks`` object they leave empty.
"""

from __future__ import annotations

import json
import shlex

from jcli_sidecar.base import ConfigInvalid
from jcli_sidecar.guards import guards_for

from . import files, jsontext
from .command import jcli_command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "MARK",
    "UPSTREAM_MARK",
    "groups",
    "has_ours",
    "has_upstream",
    "load",
    "plan_hooks",
    "with_ours",
    "without_ours",
    "without_upstream",
]

#: The field that marks a hook entry as j-cli's.
MARK = "_jcli_guard"
#: The field upstream j-cli 0.9.7 marked its entries with.
UPSTREAM_MARK = "_jcli_managed"

#: Per host: the matcher of its shell tool, its edits before, its edits after.
_MATCHERS = {
    "claude": ("Bash", "NotebookEdit|Edit|Write|MultiEdit", "Edit|Write|MultiEdit"),
    "codex": ("Bash", "apply_patch", "apply_patch"),
}


def _hook(name: str, host: str, scope: str) -> dict[str, Any]:
    command = shlex.join([*jcli_command(scope), "_hooks", name, "--platform", host])
    return {"type": "command", "command": command, MARK: name}


def groups(host: str, scope: str, dirs: int = 0) -> dict[str, list[dict[str, Any]]]:
    """The matcher groups j-cli installs for ``host``, by event (see docs/guards.md).

    ``dirs``: the directories setup created for the file, recorded in the
    first hook's mark (``"notebook-exec-guard [+1 dir]"``) so that removal
    deletes them too (JSON has no comments to hold it).
    """
    shell, pre, post = _MATCHERS[host]

    def group(matcher: str, names: list[str]) -> dict[str, Any]:
        return {"matcher": matcher, "hooks": [_hook(name, host, scope) for name in names]}

    found = {
        "PreToolUse": [group(shell, guards_for("before", "shell")), group(pre, guards_for("before", "edit"))],
        "PostToolUse": [group(post, guards_for("after", "edit"))],
    }
    first = found["PreToolUse"][0]["hooks"][0]
    first[MARK] += files.dirs_mark(dirs)
    return found


def _recorded_dirs(doc: dict[str, Any]) -> int:
    marks = [str(h[MARK]) for groups in _ours_by_event(doc).values() for g in groups for h in g["hooks"]]
    return max((files.dirs_recorded(mark) or 0 for mark in marks), default=0)


def load(text: str | None, path: str) -> dict[str, Any]:
    """The file as a JSON object (``{}`` for no file or an empty one).

    Raises:
        ConfigInvalid: not JSON, not an object, or ``hooks`` (or an event in it) of the wrong type.
    """
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        raise ConfigInvalid(f"{path} is not valid JSON; it was left untouched", path=path) from None
    if not isinstance(doc, dict):
        raise ConfigInvalid(f"{path} is not a JSON object; it was left untouched", path=path)
    hooks = doc.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigInvalid(f'{path}: ["hooks"] is not a JSON object; it was left untouched', path=path)
    for event, value in hooks.items():
        if not isinstance(value, list):
            raise ConfigInvalid(f'{path}: ["hooks"][{json.dumps(event)}] is not a JSON array; it was left untouched', path=path)
    return doc


def _marked(mark: str) -> Callable[[Any], bool]:
    return lambda hook: isinstance(hook, dict) and mark in hook


_ours = _marked(MARK)
_upstream = _marked(UPSTREAM_MARK)


def _group_hooks(group: Any) -> list[Any]:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return hooks if isinstance(hooks, list) else []


def _our_group(group: Any) -> bool:
    hooks = _group_hooks(group)
    return bool(hooks) and all(_ours(hook) for hook in hooks)


def _ours_by_event(doc: dict[str, Any]) -> dict[str, list[Any]]:
    return {event: [g for g in groups if _our_group(g)] for event, groups in (doc.get("hooks") or {}).items()}


def has_ours(doc: dict[str, Any]) -> bool:
    return any(_ours_by_event(doc).values())


def has_upstream(doc: dict[str, Any]) -> bool:
    return any(_upstream(hook) for groups in (doc.get("hooks") or {}).values() for g in groups for hook in _group_hooks(g))


def _verified(new: str, expected: Any, path: str) -> str:
    try:
        same = json.loads(new) == expected
    except (ValueError, RecursionError):
        same = False
    if not same:
        raise ConfigInvalid(f"{path}: j-cli cannot edit this file's layout; it was left untouched", path=path)
    return new


def _hooks_obj(text: str) -> tuple[jsontext.Obj, jsontext.Member | None]:
    top = jsontext.top_object(text)
    return top, top.get("hooks")


def without_ours(text: str, path: str) -> str:
    """``text`` without j-cli's groups, exactly as it was before :func:`with_ours` (``""`` for a file setup created empty)."""
    doc = load(text, path)
    ours = {event: groups for event, groups in _ours_by_event(doc).items() if groups}
    if not ours:
        return text
    if doc == {"hooks": ours} and text in (jsontext.compact(doc) + "\n", jsontext.compact(doc)):
        return ""  # setup created the file (the caller deletes it) or filled an empty one
    expected = json.loads(text)
    top, member = _hooks_obj(text)
    assert member is not None
    if expected["hooks"] == ours and jsontext.is_compact(text, member):
        del expected["hooks"]
        return _verified(jsontext.cut_member(text, top, member), expected, path)
    for event in ours:
        expected["hooks"][event] = [g for g in expected["hooks"][event] if not _our_group(g)]
        _, member = _hooks_obj(text)
        assert member is not None
        obj = jsontext.scan_object(text, member.value_start)
        ev = obj.get(event)
        assert ev is not None
        if not expected["hooks"][event] and jsontext.is_compact(text, ev):
            del expected["hooks"][event]
            text = jsontext.cut_member(text, obj, ev)
            continue
        arr = jsontext.scan_array(text, ev.value_start)
        value = json.loads(text[ev.value_start : ev.value_end])
        for index in reversed(range(len(value))):
            if _our_group(value[index]):
                text = jsontext.cut_element(text, arr, index)
                arr = jsontext.scan_array(text, arr.start)
    return _verified(text, expected, path)


def with_ours(text: str | None, path: str, wanted: dict[str, list[dict[str, Any]]]) -> str:
    """``text`` with exactly ``wanted`` as j-cli's groups (unchanged when they already are).

    Raises:
        ConfigInvalid: the file, ``hooks`` or an event's value has the wrong type.
    """
    doc = load(text, path)
    if {event: groups for event, groups in _ours_by_event(doc).items() if groups} == wanted:
        assert text is not None
        return text
    if text:
        stripped = without_ours(text, path)
        if stripped == "":  # setup created the file (or filled an empty one): it stays setup's
            return jsontext.compact({"hooks": wanted}) + ("\n" if text.endswith("\n") else "")
        text = stripped
    if not text:
        return jsontext.compact({"hooks": wanted}) + ("\n" if text is None else "")
    expected = json.loads(text)
    top, member = _hooks_obj(text)
    if member is None:
        expected["hooks"] = wanted
        return _verified(jsontext.insert_member(text, top, "hooks", wanted, created=True), expected, path)
    for event, groups in wanted.items():
        _, member = _hooks_obj(text)
        assert member is not None
        obj = jsontext.scan_object(text, member.value_start)
        ev = obj.get(event)
        if ev is None:
            expected["hooks"][event] = groups
            text = jsontext.insert_member(text, obj, event, groups, created=True)
            continue
        expected["hooks"][event] = expected["hooks"][event] + groups
        for group in groups:
            _, member = _hooks_obj(text)
            assert member is not None
            ev = jsontext.scan_object(text, member.value_start).get(event)
            assert ev is not None
            text = jsontext.insert_element(text, jsontext.scan_array(text, ev.value_start), group)
    return _verified(text, expected, path)


def without_upstream(text: str, path: str) -> tuple[str, list[str]]:
    """``text`` without upstream's marked hooks, and the names of those taken out.

    A group left with no hooks goes, then an event left with no groups, then
    ``hooks`` when it is left empty; a user's hook in one of upstream's groups stays.
    """
    removed: list[str] = []
    while True:
        doc = load(text, path)
        found = next(
            (
                (event, gi, hi)
                for event, groups in (doc.get("hooks") or {}).items()
                for gi, group in enumerate(groups)
                for hi, hook in enumerate(_group_hooks(group))
                if _upstream(hook)
            ),
            None,
        )
        if found is None:
            return text, removed
        event, gi, hi = found
        expected = json.loads(text)
        removed.append(str(expected["hooks"][event][gi]["hooks"][hi][UPSTREAM_MARK]))
        del expected["hooks"][event][gi]["hooks"][hi]
        top, member = _hooks_obj(text)
        assert member is not None
        hooks_obj = jsontext.scan_object(text, member.value_start)
        ev = hooks_obj.get(event)
        assert ev is not None
        events = jsontext.scan_array(text, ev.value_start)
        group_obj = jsontext.scan_object(text, events.elements[gi][0])
        inner = group_obj.get("hooks")
        assert inner is not None
        if expected["hooks"][event][gi]["hooks"]:
            new = jsontext.cut_element(text, jsontext.scan_array(text, inner.value_start), hi)
        else:
            del expected["hooks"][event][gi]
            if expected["hooks"][event]:
                new = jsontext.cut_element(text, events, gi)
            else:
                del expected["hooks"][event]
                if expected["hooks"]:
                    new = jsontext.cut_member(text, hooks_obj, ev)
                else:
                    del expected["hooks"]
                    new = jsontext.cut_member(text, top, member)
        text = _verified(new, expected, path)


def plan_hooks(plan: files.Plan, path: str, host: str, scope: str, remove: bool) -> tuple[bool, list[str]]:
    """Plan j-cli's guard hooks into (or out of) ``path``: ``(changed, upstream hooks replaced)``.

    Setup takes upstream's marked entries out and puts ours in; ``remove``
    takes ours out only, deleting the file when setup created it.

    Raises:
        ConfigInvalid: the file is not a JSON object, or ``hooks`` has the wrong shape.
        OutputSaveFailed: the file or its directory is read-only.
    """
    cur = files.read(path)
    doc = load(cur.text, path)
    if remove:
        if not cur.text:
            return False, []
        new = without_ours(cur.text, path)
        if new == "" and cur.text.endswith("\n"):
            plan.delete(cur, _recorded_dirs(doc))
            return True, []
        return plan.write(cur, new), []
    text, replaced = without_upstream(cur.text, path) if cur.text else (cur.text, [])
    if replaced and not text.strip("{} \n"):
        text = None  # upstream created the file and it held only its hooks: it is setup's now
    if cur.text is None:
        dirs = cur.missing_dirs()
    elif text and without_ours(text, path) == "":
        dirs = _recorded_dirs(doc)  # setup created it: keep the record
    else:
        dirs = 0
    new = with_ours(text, path, groups(host, scope, dirs))
    return plan.write(cur, new), replaced
