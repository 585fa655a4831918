"""The guard hooks in a host's JSON hooks file (Claude Code's settings, Codex's ``hooks.json``).

Both hosts read the same shape::

    {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "..."}]}]}}

j-cli adds matcher groups of its own (never hooks inside a user's group),
each hook marked ``"_jcli_guard": NAME`` (both hosts ignore fields they do
not know), so a later ``setup`` or ``--remove`` finds exactly ours, also
when the user moved or edited them (:mod:`jcli.setup.hook_marks`). The file
is edited as text (:mod:`jcli.setup.jsontext`): ours go in after the
existing groups and come back out, every other byte kept; what setup had
to create (the file, ``hooks``, an event's list) it writes in the compact
one-line form, which is how removal knows to take it out too.

Users edit these files. ``--remove`` takes every hook of ours out, wherever
it is, leaving a user's hook in the group it shared with ours; ``setup``
again runs each guard once: a group of ours the user changed stays as it is
(only j-cli's part of each command updated), the rest of ours is replaced,
and a second copy of a guard goes.

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
from .hook_marks import MARK, guard_of, user_args, user_edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "MARK",
    "UPSTREAM_MARK",
    "dropped_edits",
    "groups",
    "has_ours",
    "has_upstream",
    "load",
    "plan_hooks",
    "with_ours",
    "without_ours",
    "without_upstream",
]

#: The field upstream j-cli 0.9.7 marked its entries with.
UPSTREAM_MARK = "_jcli_managed"


def _hook(name: str, host: str, scope: str) -> dict[str, Any]:
    command = shlex.join([*jcli_command(scope), "_hooks", name, "--platform", host])
    return {"type": "command", "command": command, MARK: name}


def groups(host: str, scope: str, dirs: int = 0) -> dict[str, list[dict[str, Any]]]:
    """The matcher groups j-cli installs for ``host``, by event (see docs/guards.md), on its tools (``Host.tools``).

    ``dirs``: the directories setup created for the file, recorded in the
    first hook's mark (``"notebook-exec-guard [+1 dir]"``) so that removal
    deletes them too (JSON has no comments to hold it).
    """
    from .hosts import HOSTS

    tools, (before, after) = HOSTS[host].tools, HOSTS[host].events

    def group(matcher: tuple[str, ...], names: list[str]) -> dict[str, Any]:
        return {"matcher": "|".join(matcher), "hooks": [_hook(name, host, scope) for name in names]}

    found = {
        before: [group(tools.shell, guards_for("before", "shell")), group(tools.edit, guards_for("before", "edit"))],
        after: [group(tools.edit_after, guards_for("after", "edit"))],
    }
    first = found[before][0]["hooks"][0]
    first[MARK] += files.dirs_mark(dirs)
    return found


def _recorded_dirs(doc: dict[str, Any]) -> int:
    marks = [str(hook.get(MARK, "")) for _, _, _, _, hook in _found(doc)]
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


_upstream = _marked(UPSTREAM_MARK)


def _ours(hook: Any) -> bool:
    return guard_of(hook) is not None


def _group_hooks(group: Any) -> list[Any]:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return hooks if isinstance(hooks, list) else []


def _our_group(group: Any) -> bool:
    hooks = _group_hooks(group)
    return bool(hooks) and all(_ours(hook) for hook in hooks)


def _ours_by_event(doc: dict[str, Any]) -> dict[str, list[Any]]:
    return {event: [g for g in groups if _our_group(g)] for event, groups in (doc.get("hooks") or {}).items()}


def _found(doc: dict[str, Any]) -> list[tuple[str, int, int, str, dict[str, Any]]]:
    """Every hook of ours in the file: ``(event, group index, hook index, guard, hook)``, in file order."""
    return [
        (event, gi, hi, name, hook)
        for event, groups in (doc.get("hooks") or {}).items()
        for gi, group in enumerate(groups)
        for hi, hook in enumerate(_group_hooks(group))
        if (name := guard_of(hook)) is not None
    ]


def has_ours(doc: dict[str, Any]) -> bool:
    return bool(_found(doc))


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


def _event(text: str, event: str) -> tuple[jsontext.Obj, jsontext.Member]:
    _, member = _hooks_obj(text)
    assert member is not None
    obj = jsontext.scan_object(text, member.value_start)
    ev = obj.get(event)
    assert ev is not None
    return obj, ev


def _cut(text: str, path: str, cut: Callable[[str, int, int], bool]) -> str:
    """``text`` without the hooks ``cut(event, group index, hook index)`` selects (all of them j-cli's).

    A group left with none of its hooks goes; then an event left with no
    groups, when setup wrote it (its compact form, holding only j-cli's groups).
    """
    expected = json.loads(text)
    for event in list(expected.get("hooks") or {}):
        groups = expected["hooks"][event]
        chosen = {(gi, hi) for gi, g in enumerate(groups) for hi, _ in enumerate(_group_hooks(g)) if cut(event, gi, hi)}
        if not chosen:
            continue
        _, ev = _event(text, event)
        setups = jsontext.is_compact(text, ev) and all(_our_group(g) for g in groups)
        for gi in reversed(range(len(groups))):
            hooks = _group_hooks(groups[gi])
            gone = [hi for hi in range(len(hooks)) if (gi, hi) in chosen]
            if not gone:
                continue
            _, ev = _event(text, event)
            arr = jsontext.scan_array(text, ev.value_start)
            if len(gone) == len(hooks):
                text = jsontext.cut_element(text, arr, gi)
                del groups[gi]
                continue
            inner = jsontext.scan_object(text, arr.elements[gi][0]).get("hooks")
            assert inner is not None
            for hi in reversed(gone):
                text = jsontext.cut_element(text, jsontext.scan_array(text, inner.value_start), hi)
                del hooks[hi]
                inner = jsontext.scan_object(text, jsontext.scan_array(text, _event(text, event)[1].value_start).elements[gi][0]).get(
                    "hooks"
                )
                assert inner is not None
        if not groups and setups:
            obj, ev = _event(text, event)
            text = jsontext.cut_member(text, obj, ev)
            del expected["hooks"][event]
    return _verified(text, expected, path)


def without_ours(text: str, path: str) -> str:
    """``text`` without j-cli's hooks, wherever they are (``""`` for a file setup created and nothing else filled).

    Every hook of ours goes, edited or moved ones too; a hook of the user's
    in one of our groups stays, in its group. What setup created (the file,
    ``hooks``, an event) goes when it holds nothing else.
    """
    doc = load(text, path)
    if not _found(doc):
        return text
    ours = {event: groups for event, groups in _ours_by_event(doc).items() if groups}
    if doc == {"hooks": ours} and text in (jsontext.compact(doc) + "\n", jsontext.compact(doc)):
        return ""  # setup created the file (the caller deletes it) or filled an empty one
    top, member = _hooks_obj(text)
    assert member is not None
    if doc["hooks"] == ours and jsontext.is_compact(text, member):
        expected = dict(doc)
        del expected["hooks"]
        return _verified(jsontext.cut_member(text, top, member), expected, path)
    return _cut(text, path, lambda event, gi, hi: _ours(doc["hooks"][event][gi]["hooks"][hi]))


def dropped_edits(text: str | None, path: str) -> list[str]:
    """What removing j-cli's hooks from ``text`` drops that the user had added to them."""
    if not text:
        return []
    return [f"hook {name} in {path}: {'; '.join(edits)}" for _, _, _, name, hook in _found(load(text, path)) if (edits := user_edits(hook))]


def _kept(doc: dict[str, Any]) -> dict[str, tuple[str, int, int]]:
    """Our hooks in a group the user changed (a hook of theirs in it, or one of ours edited), by guard.

    The first of each guard stays in place, as the user left it.
    """
    kept: dict[str, tuple[str, int, int]] = {}
    for event, gi, hi, name, _ in _found(doc):
        group = doc["hooks"][event][gi]
        edited = not _our_group(group) or any(user_edits(hook) for hook in group["hooks"])
        if name not in kept and edited:
            kept[name] = (event, gi, hi)
    return kept


def _plain_groups(doc: dict[str, Any], kept: dict[str, tuple[str, int, int]]) -> dict[str, list[Any]]:
    """Our groups as setup wrote them (no edited hook in them), by event; dirs records left out of the marks."""
    out: dict[str, list[Any]] = {}
    for event, groups in (doc.get("hooks") or {}).items():
        for gi, group in enumerate(groups):
            if not _our_group(group) or any(loc[:2] == (event, gi) for loc in kept.values()):
                continue
            out.setdefault(event, []).append(_unmarked_dirs(group))
    return out


def _unmarked_dirs(group: dict[str, Any]) -> dict[str, Any]:
    hooks = [dict(h, **{MARK: str(h[MARK]).split(" [+", 1)[0]}) if MARK in h else h for h in group["hooks"]]
    return dict(group, hooks=hooks)


def _without_names(wanted: dict[str, list[dict[str, Any]]], names: set[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for event, groups in wanted.items():
        for group in groups:
            hooks = [h for h in group["hooks"] if guard_of(h) not in names]
            if hooks:
                out.setdefault(event, []).append(dict(group, hooks=hooks))
    return out


def _with_command(text: str, path: str, event: str, gi: int, hi: int, command: str) -> str:
    """``text`` with the command of one hook replaced in place, every other byte kept."""
    expected = json.loads(text)
    expected["hooks"][event][gi]["hooks"][hi]["command"] = command
    _, ev = _event(text, event)
    group = jsontext.scan_object(text, jsontext.scan_array(text, ev.value_start).elements[gi][0])
    inner = group.get("hooks")
    assert inner is not None
    hook = jsontext.scan_object(text, jsontext.scan_array(text, inner.value_start).elements[hi][0])
    member = hook.get("command")
    assert member is not None
    return _verified(jsontext.replace_value(text, member, command), expected, path)


def _command(name: str, host: str, scope: str, extra: list[str]) -> str:
    return shlex.join([*jcli_command(scope), "_hooks", name, "--platform", host, *extra])


def with_ours(text: str | None, path: str, host: str, scope: str, dirs: int = 0) -> str:
    """``text`` with j-cli's hooks for ``host``, each once (unchanged when they already are).

    A hook of ours the user edited (added arguments or fields) or moved in
    among their own hooks stays where it is, with its additions; only its
    j-cli command is brought up to date. Our other hooks are replaced by
    :func:`groups`, minus the guards kept that way, and a second copy of a
    guard is taken out, so no guard runs twice.

    Raises:
        ConfigInvalid: the file, ``hooks`` or an event's value has the wrong type.
    """
    wanted = groups(host, scope, dirs)
    doc = load(text, path)
    kept = _kept(doc)
    missing = _without_names(wanted, set(kept))
    found = _found(doc)
    plain = {loc for loc in ((e, gi, hi) for e, gi, hi, _, _ in found) if loc not in kept.values()}
    if plain and _plain_groups(doc, kept) != {e: [_unmarked_dirs(g) for g in gs] for e, gs in missing.items()}:
        assert text is not None
        if without_ours(text, path) == "" and not kept:
            return jsontext.compact({"hooks": wanted}) + ("\n" if text.endswith("\n") else "")
        text = _cut(text, path, lambda event, gi, hi: (event, gi, hi) in plain)
        doc = load(text, path)
        kept = _kept(doc)
    elif plain:
        missing = {}  # our plain groups are already what is wanted
    for name, (event, gi, hi) in kept.items():
        hook = doc["hooks"][event][gi]["hooks"][hi]
        extra = user_args(hook)
        if extra is not None and hook["command"] != (command := _command(name, host, scope, extra)):
            assert text is not None
            text = _with_command(text, path, event, gi, hi, command)
    return _with_groups(text, path, missing)


def _with_groups(text: str | None, path: str, wanted: dict[str, list[dict[str, Any]]]) -> str:
    """``text`` with ``wanted`` groups added after the existing ones."""
    if not wanted:
        assert text is not None
        return text
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
            _, ev = _event(text, event)
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


def plan_hooks(plan: files.Plan, path: str, host: str, scope: str, remove: bool) -> tuple[bool, list[str], list[str]]:
    """Plan j-cli's guard hooks into (or out of) ``path``: ``(changed, upstream hooks replaced, user edits dropped)``.

    Setup takes upstream's marked entries out and puts ours in (keeping what
    the user added to them); ``remove`` takes every hook of ours out, wherever
    it was moved, deleting the file when setup created it, and says what the
    user had added to them.

    Raises:
        ConfigInvalid: the file is not a JSON object, or ``hooks`` has the wrong shape.
        OutputSaveFailed: the file or its directory is read-only.
    """
    cur = files.read(path)
    doc = load(cur.text, path)
    if remove:
        if not cur.text:
            return False, [], []
        dropped = dropped_edits(cur.text, path)
        new = without_ours(cur.text, path)
        if new == "" and cur.text.endswith("\n"):
            plan.delete(cur, _recorded_dirs(doc))
            return True, [], dropped
        return plan.write(cur, new), [], dropped
    text, replaced = without_upstream(cur.text, path) if cur.text else (cur.text, [])
    if replaced and not text.strip("{} \n"):
        text = None  # upstream created the file and it held only its hooks: it is setup's now
    if cur.text is None:
        dirs = cur.missing_dirs()
    elif text and without_ours(text, path) == "":
        dirs = _recorded_dirs(doc)  # setup created it: keep the record
    else:
        dirs = 0
    new = with_ours(text, path, host, scope, dirs)
    return plan.write(cur, new), replaced, []
