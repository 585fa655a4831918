"""Pair drift for agents: before an edit of a pair, is the notebook ahead? After an edit of a ``.py``, sync it.

A py:percent ``x.py`` and its ``x.ipynb`` agree when j-cli last synced them
(``metadata.jcli.pair``, see :mod:`jcli_sidecar.pair.pairguard`: a fingerprint of
all cells and one digest per cell). Since then either side may have changed:
the agent edits the ``.py``; a person edits the notebook in JupyterLab.

**Before an edit** (:func:`before_edit`, no side effects: it reads the two
files and writes nothing, takes no lock, runs no git) of a paired ``.py``
or ``.ipynb``:

- the two agree, or only the ``.py`` moved on, or there is no record: allow
  (the sync after the edit follows pairguard's rules);
- the notebook changed since the sync: if its changes and the ``.py``'s own
  touch different cells, they can be merged without losing anything, and
  the edit is allowed (the sync after it merges); otherwise the edit is
  denied, naming the cells changed on both sides and the two ways to settle.

**After an edit** of a paired ``.py`` (:func:`after_edit`), under the
notebook's write-back lock (:meth:`jcli_sidecar.pair.pairing.Pair.write_lock`):

- only the ``.py`` changed (or no record): the notebook is synced from the
  ``.py`` by the one pair sync ``exec -f`` runs too
  (:meth:`jcli_sidecar.pair.pairing.LockedPair.sync`: plan, check, apply,
  record, write): outputs of unchanged cells kept;
- both changed, in different cells: a three-way merge at cell level (the
  base is the recorded per-cell digests): each side's changed cells win,
  cells neither side touched keep their outputs. The ``.py`` is rewritten by
  the codec with the notebook's edits first, then the notebook is written;
- both changed in the same cells, or an older record without per-cell
  digests: nothing is written, and the context names the cells.

The answer is text for the model (the post-tool context), or None when
there was nothing to do.
"""

from __future__ import annotations

import difflib
import os

from .guard_rules import percent_pair_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..pair import LockedPair, Pair, PercentCell
    from .hook_payload import ToolCall

__all__ = ["after_edit", "before_edit", "merge_cells"]


def _pairs(call: ToolCall) -> list[Pair]:
    """Each pair the call touches (by its ``.py`` or its ``.ipynb``)."""
    found: list[Pair] = []
    for path in call.paths:
        pair = percent_pair_of(path)
        if pair is not None and pair not in found:
            found.append(pair)
    return found


def _read(py: str, nb_path: str) -> tuple[list[PercentCell], dict[str, Any], str]:
    from ..ipynb import read_file_bytes, read_for_update
    from ..pair import parse_percent

    text = read_file_bytes(os.path.realpath(py)).decode("utf-8", "replace")
    return parse_percent(text), read_for_update(nb_path), text


def _cells(indexes: list[int]) -> str:
    return ", ".join(map(str, indexes))


def before_edit(call: ToolCall) -> str | None:
    """The reason to deny an edit of a pair whose notebook changed in the same cells, or None. Writes nothing."""
    for py, nb_path in _pairs(call):
        py_cells, nb, _ = _read(py, nb_path)
        verdict = _compare(py_cells, nb)
        if verdict is None or verdict[0] != "conflict":
            continue
        py_idx, nb_idx = verdict[1], verdict[2]
        return (
            f"{nb_path} was edited since j-cli last synced it with {py} (someone changed it outside the agent), "
            f"and so was the .py, in the same cells: notebook cells {_cells(nb_idx)}, .py cells {_cells(py_idx)}. "
            "Editing now would leave the pair unmergeable. Settle it first, then edit:\n" + _settle(py, nb_path)
        )
    return None


def _settle(py: str, nb_path: str) -> str:
    import shlex

    return (
        f"  the notebook wins: j-cli convert ipynb-to-py {shlex.quote(nb_path)} --force && j-cli convert py-to-ipynb {shlex.quote(py)}\n"
        f"  the .py wins:      j-cli convert py-to-ipynb {shlex.quote(py)} --py-wins\n"
        "(read both files first; nothing was changed)"
    )


def _compare(py_cells: list[PercentCell], nb: dict[str, Any]) -> tuple[str, list[int], list[int]] | None:
    """None: nothing to settle (in sync, no record, or only the ``.py`` moved on). Else ``(kind, py cells, notebook cells)``.

    ``kind`` is ``merge`` (the notebook changed; the changes merge cleanly),
    ``conflict`` (both changed the same cells) or ``unknown`` (the notebook
    changed but the record has no per-cell digests).
    """
    from ..pair import agreed_cells, cell_digests, changes_since_agreement, notebook_cells

    changed = changes_since_agreement(nb, py_cells)
    if changed is None or not changed[1]:
        return None
    py_now = [(pc.cell_type, pc.source) for pc in py_cells]
    nb_now = notebook_cells(nb)
    if cell_digests(py_now) == cell_digests(nb_now):
        return None  # both sides hold the same cells again
    base = agreed_cells(nb)
    if base is None:
        return "unknown", [], list(range(len(nb_now)))
    merged = merge_cells(base, cell_digests(py_now), cell_digests(nb_now))
    if isinstance(merged, tuple):
        return "conflict", merged[0], merged[1]
    return "merge", [], []


def merge_cells(base: list[str], ours: list[str], theirs: list[str]) -> list[tuple[str, int]] | tuple[list[int], list[int]]:
    """A three-way merge of cell digests: ``base`` (the last sync), ``ours`` (the ``.py``), ``theirs`` (the notebook).

    Returns the merged cells as ``("py" | "nb", index)`` (an unchanged cell
    comes from the notebook, which holds its outputs), or, when both sides
    changed the same base cells (or inserted at the same place, differently),
    ``(py indexes, notebook indexes)`` of the conflicting cells.

    Example:
        >>> merge_cells(["a", "b", "c"], ["A", "b", "c"], ["a", "b", "C"])
        [('py', 0), ('nb', 1), ('nb', 2)]
        >>> merge_cells(["a", "b"], ["A", "b"], ["X", "b"])
        ([0], [0])
    """
    py_hunks, py_equal = _hunks(base, ours)
    nb_hunks, nb_equal = _hunks(base, theirs)
    hunks = sorted([(i1, i2, "py", j1, j2) for i1, i2, j1, j2 in py_hunks] + [(i1, i2, "nb", j1, j2) for i1, i2, j1, j2 in nb_hunks])
    conflict_py: list[int] = []
    conflict_nb: list[int] = []
    kept: list[tuple[int, int, str, int, int]] = []
    for hunk in hunks:
        clash = next((k for k in kept if k[2] != hunk[2] and _overlap(k, hunk)), None)
        if clash is None:
            kept.append(hunk)
            continue
        side_seq = {"py": ours, "nb": theirs}
        if side_seq[clash[2]][clash[3] : clash[4]] == side_seq[hunk[2]][hunk[3] : hunk[4]] and clash[:2] == hunk[:2]:
            if hunk[2] == "nb":  # the same change on both sides: take the notebook's cells (their outputs)
                kept[kept.index(clash)] = hunk
            continue
        for h in (clash, hunk):
            target = conflict_py if h[2] == "py" else conflict_nb
            target.extend(range(h[3], h[4]) if h[4] > h[3] else [h[3]])
    if conflict_py or conflict_nb:
        return sorted(set(conflict_py)), sorted(set(conflict_nb))
    result: list[tuple[str, int]] = []
    i = 0
    for i1, i2, side, j1, j2 in sorted(kept):
        result.extend(("nb", nb_equal[b]) for b in range(i, i1))
        result.extend((side, j) for j in range(j1, j2))
        i = max(i, i2)
    result.extend(("nb", nb_equal[b]) for b in range(i, len(base)))
    return result


def _hunks(base: list[str], side: list[str]) -> tuple[list[tuple[int, int, int, int]], dict[int, int]]:
    matcher = difflib.SequenceMatcher(None, base, side, autojunk=False)
    hunks, equal = [], {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            equal.update({i1 + k: j1 + k for k in range(i2 - i1)})
        else:
            hunks.append((i1, i2, j1, j2))
    return hunks, equal


def _overlap(a: tuple[int, int, str, int, int], b: tuple[int, int, str, int, int]) -> bool:
    """Do two changes of the base touch the same cells (or the same place)? Adjacent ranges do not."""
    if a[0] == a[1] or b[0] == b[1]:  # an insertion: clashes with anything at or around its place
        return a[0] <= b[1] and b[0] <= a[1]
    return a[0] < b[1] and b[0] < a[1]


def after_edit(call: ToolCall) -> str | None:
    """Sync (or merge) each pair whose ``.py`` the agent just edited; text for the model, or None."""
    notes = [note for py, nb_path in _pairs(call) if call.paths and py in call.paths for note in [_sync(py, nb_path)] if note]
    return "\n".join(notes) or None


def _sync(py: str, nb_path: str) -> str | None:
    from ..base import JcliError, PairConflict
    from ..pair import Pair

    try:
        with Pair(py, nb_path).write_lock() as held:
            return _sync_locked(held)
    except PairConflict as err:
        return f"j-cli did not sync {nb_path} from {py}: {err.message}. Nothing was written.\n" + _settle(py, nb_path)
    except (JcliError, OSError, ValueError) as err:
        why = err.message if isinstance(err, JcliError) else f"{type(err).__name__}: {err}"
        return f"j-cli could not sync {nb_path} from {py} ({why}); nothing was written. `j-cli exec SESSION -f {py}` syncs it before a run."


def _sync_locked(held: LockedPair) -> str | None:
    py, nb_path = held.pair
    py_cells, nb, text = _read(py, nb_path)
    verdict = _compare(py_cells, nb)
    if verdict is not None and verdict[0] != "merge":
        kind, py_idx, nb_idx = verdict
        cells = (
            f"notebook cells {_cells(nb_idx)}, .py cells {_cells(py_idx)}"
            if kind == "conflict"
            else "the record of the last sync is too old to tell which"
        )
        return (
            f"j-cli did not sync {nb_path} from {py}: both were edited since the last sync ({cells}); "
            "nothing was written. Settle it:\n" + _settle(py, nb_path)
        )
    if verdict is not None:
        return _merge(held, py_cells, nb, text)
    done = held.sync(py_cells, nb)  # checked, and written only when the notebook changes
    if not done.written or not done.plan.changes_anything():
        return None
    report = done.report
    return (
        f"j-cli synced {nb_path} from {py}: {report['kept']} cells kept (with their outputs), {report['edited']} edited "
        f"(outputs cleared), {report['added']} added, {report['removed']} removed."
    )


def _merge(held: LockedPair, py_cells: list[PercentCell], nb: dict[str, Any], text: str) -> str:
    from ..base import write_text_atomic
    from ..ipynb import join_text
    from ..pair import (
        PercentCell,
        agreed_cells,
        cell_digests,
        normalize_source,
        notebook_cells,
        parse_percent,
        read_percent,
        sync_cells,
        write_percent,
    )

    py, nb_path = held.pair
    nb_cells = [c if isinstance(c, dict) else {} for c in nb.get("cells", [])]
    base = agreed_cells(nb) or []
    nb_digests = cell_digests(notebook_cells(nb))
    order = merge_cells(base, cell_digests([(c.cell_type, c.source) for c in py_cells]), nb_digests)
    if not isinstance(order, list):
        raise ValueError("the pair no longer merges")
    nb_edits = [k for k, (side, j) in enumerate(order) if side == "nb" and nb_digests[j] not in set(base)]
    merged: list[PercentCell] = []
    taken = {pc.cell_id for side, index in order if side == "py" for pc in [py_cells[index]] if pc.cell_id}
    for side, index in order:
        if side == "py":
            merged.append(py_cells[index])
            continue
        cell = nb_cells[index]
        cell_id = cell.get("id") if isinstance(cell.get("id"), str) and cell.get("id") not in taken else None
        if cell_id:  # an id several notebook cells share goes on the first marker only
            taken.add(cell_id)
        merged.append(PercentCell(str(cell.get("cell_type")), normalize_source(join_text(cell.get("source", ""), "source")), cell_id))
    done = sync_cells(merged, nb)  # the agreement recorded with the merged cells
    report = done.report
    new_text = write_percent(done.notebook["cells"], read_percent(text, py).metadata or None)
    if [(c.cell_type, c.source) for c in parse_percent(new_text)] != [(c.cell_type, c.source) for c in merged]:
        raise ValueError("the merged cells do not read back the same from the rewritten .py")
    write_text_atomic(os.path.realpath(py), new_text)  # the .py first: a crash before the notebook write leaves a pair that merges again
    held.write(done.notebook)
    return (
        f"j-cli merged {py} and {nb_path}: the notebook had been edited since the last sync (cells {_cells(nb_edits)} of "
        f"the merged pair), in other cells than your edit. Both edits are kept: {py} now holds the notebook's edits too "
        f"(re-read it before editing again), and the notebook has your cells ({report['edited']} edited, {report['added']} added, "
        f"{report['removed']} removed; other cells keep their outputs)."
    )
