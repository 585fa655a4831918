"""The git pre-commit check: a commit never holds a ``.py`` and its notebook out of line.

``j-cli _hooks pre-commit-pair-sync`` runs it (``j-cli setup git --hooks``
installs the hook). It looks only at what the commit will hold: the
staged blobs in the index git gives the hook, never the working tree's
files, so a ``.py`` staged in part (``git add -p``) is checked as staged.
It never writes: not the working tree, not the index, no refs; it never
runs code.

The pairs it checks are those the commit touches: a staged (added,
modified, deleted or renamed) ``foo.py`` or ``foo.ipynb`` names the pair
``foo``. With ``--include GLOB`` only pairs whose ``.py`` path (relative to
the repository, matched by :func:`fnmatch.fnmatchcase`, where ``*`` also
crosses ``/``) matches a glob are checked. Each pair ends in one status:

- ``in_line``: both are staged files and the notebook holds exactly the
  ``.py``'s cells (types and sources in order; outputs, ids and metadata do
  not count). Passes.
- ``not_paired``: the commit holds one of the two only (a notebook staged
  without a ``.py``, a ``.py`` whose notebook is untracked or ignored, one
  side deleted or renamed away). Nothing can drift; passes, with a note
  when one side leaves the commit.
- ``skipped``: the ``.py`` is no py:percent file (no ``# %%`` marker, not
  UTF-8), either side is a symlink or submodule, the notebook is a Git LFS
  pointer, or ``--include`` leaves the pair out. Passes.
- ``out_of_line``: the cells differ. Blocks, naming the cells and the
  commands that fix it: ``git add`` the working tree's notebook when that
  one is in line with the staged ``.py``; else ``j-cli convert`` in the
  direction the commit changed (only when the working tree holds exactly
  what is staged, so the command cannot pull unstaged edits in); else
  ``j-cli _hooks pre-commit-pair-sync --stage-synced``, which the user runs
  on purpose (see :func:`stage_synced`).
- ``unreadable``: the staged notebook is not a notebook (not JSON, not
  UTF-8, binary). Blocks: nothing can be checked against it.
- ``duplicate_ids``: the staged ``.py``'s markers repeat an ``id="…"`` (a
  copied cell), which every ``exec -f`` refuses (``CELL_ID_DUPLICATE``).
  Blocks, naming the cells and lines.

The outcome is the exit code git reads: 0 passes; a block is
``NOTEBOOK_OUT_OF_SYNC`` (exit 1). A check that cannot run (not in a
repository, git missing, a bug) also stops the commit, never letting drift
through unseen, and its message names the escape: ``git commit
--no-verify`` commits without the check.
"""

from __future__ import annotations

import fnmatch
import os
import sys

from ..base import JcliError, NotebookOutOfSync, NotebookReadFailed, UsageError, internal_error
from .pairing import pair_paths, percent_cells

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .git_index import IndexEntry, Repository
    from .percent import PercentCell

__all__ = ["ESCAPE", "STAGE_SYNCED", "check_commit", "main", "render_commit_check", "stage_synced"]

#: Every message that stops a commit ends with the way around the check.
ESCAPE = "To commit without this check: git commit --no-verify"
_LFS_POINTER = b"version https://git-lfs."
_SHOWN = 12
#: The command that stages notebooks synced from the staged ``.py`` files.
STAGE_SYNCED = "j-cli _hooks pre-commit-pair-sync --stage-synced"


def _pairs(changed: list[str], include: tuple[str, ...]) -> list[tuple[str, str, bool]]:
    """``(py, notebook, included)`` for each pair a changed path names, in the order first named."""
    pairs: dict[tuple[str, str], None] = {}
    for path in changed:
        if (pair := pair_paths(path, posix=True)) is not None:
            pairs.setdefault(pair)
    return [(py, nb, not include or any(fnmatch.fnmatchcase(py, glob) for glob in include)) for py, nb in pairs]


def _cells_text(indexes: list[int]) -> str:
    """``cell 3`` or ``cells 1, 4`` (the first dozen, then how many more)."""
    shown = ", ".join(map(str, indexes[:_SHOWN]))
    more = f" and {len(indexes) - _SHOWN} more" if len(indexes) > _SHOWN else ""
    return f"cell{'s' if len(indexes) > 1 else ''} {shown}{more}"


def _drift_text(drift: dict[str, Any]) -> str:
    parts = []
    if drift["edited"]:
        ours, theirs = [k for k, _ in drift["edited"]], [i for _, i in drift["edited"]]
        parts.append(f"edited: .py {_cells_text(ours)} (notebook {_cells_text(theirs)})")
    if drift["only_in_py"]:
        parts.append(f"only in the .py: {_cells_text(drift['only_in_py'])}")
    if drift["only_in_notebook"]:
        parts.append(f"only in the notebook: {_cells_text(drift['only_in_notebook'])}")
    if drift["reordered"]:
        parts.append("the cells stand in another order")
    return "; ".join(parts) or "the cells differ"


def _percent_cells(raw: bytes) -> list[PercentCell] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return percent_cells(text)


def _worktree_in_line(repo: Repository, nb: str, py_cells: list[PercentCell]) -> bool:
    """Whether the working tree's notebook (when readable) is in line with the staged ``.py``."""
    from ..ipynb import parse_notebook, read_file_bytes
    from .pair_update import in_line

    try:
        return in_line(py_cells, parse_notebook(read_file_bytes(os.path.join(repo.top, nb)), nb))
    except (JcliError, ValueError):
        return False


def _side(py: str, nb: str, changed: set[str]) -> str:
    """Which side the commit changes: ``"py"``, ``"notebook"`` or ``"both"`` (also when neither: drift already committed)."""
    py_side, nb_side = py in changed, nb in changed
    return "py" if py_side and not nb_side else "notebook" if nb_side and not py_side else "both"


def _fix(repo: Repository, py: str, nb: str, py_cells: list[PercentCell], side: str) -> tuple[str, list[str]]:
    """How to bring the pair in line: ``(what to do, the commands)``."""
    from .git_index import changed_in_worktree

    nb_dirty = changed_in_worktree(repo, nb)
    py_dirty = changed_in_worktree(repo, py)
    if nb_dirty and _worktree_in_line(repo, nb, py_cells):
        return f"the working tree's {nb} is in line with the staged {py}: stage it", [f"git add -- {_q(nb)}"]
    if side == "py" and not py_dirty and not nb_dirty:
        return (
            f"the commit changes {py} only: bring the notebook in line (outputs of unchanged cells are kept) and stage it",
            [f"j-cli convert py-to-ipynb {_q(py)}", f"git add -- {_q(nb)}"],
        )
    if side == "py":
        return (
            f"the commit changes {py} only, and the working tree holds edits that are not staged: stage a notebook "
            f"in line with the staged {py} (the working tree is left as it is)",
            [STAGE_SYNCED],
        )
    if side == "notebook" and not py_dirty and not nb_dirty:
        return (
            f"the commit changes {nb} only: write its cells into {py} and stage it",
            [f"j-cli convert ipynb-to-py {_q(nb)} --force", f"git add -- {_q(py)}"],
        )
    return (
        f"edit {py} or {nb} until their cells match and stage both "
        f"(`j-cli notebook map {_q(py)}` shows how the working tree's cells align)",
        [],
    )


def _q(path: str) -> str:
    import shlex

    return shlex.quote(path)


def _check_pair(
    repo: Repository, py: str, nb: str, entries: dict[str, IndexEntry], blobs: dict[str, bytes], changed: set[str]
) -> dict[str, Any]:
    from ..ipynb import parse_notebook
    from .pair_update import describe_drift, in_line

    out: dict[str, Any] = {"py": py, "notebook": nb}
    py_entry, nb_entry = entries.get(py), entries.get(nb)
    if py_entry is None or nb_entry is None:
        out["status"] = "not_paired"
        gone = [p for p, e in ((py, py_entry), (nb, nb_entry)) if e is None and p in changed]
        if gone and (py_entry or nb_entry):
            out["note"] = f"{gone[0]} leaves the commit while {nb if gone[0] == py else py} stays: the two are no longer a pair"
        return out
    if not (py_entry.regular and nb_entry.regular):
        return dict(out, status="skipped", note="a symlink or submodule in the index is not checked")
    py_cells = _percent_cells(blobs[py_entry.sha])
    if py_cells is None:
        return dict(out, status="skipped", note=f"the staged {py} is no py:percent file")
    from .cell_ids import describe_duplicates, duplicate_ids

    copies = duplicate_ids(py_cells)
    if copies:
        return dict(
            out,
            status="duplicate_ids",
            reason=f"the staged {py}'s cell markers repeat an id ({describe_duplicates(py_cells, copies)}), so no cell of it maps by that id",
            advice=f'delete the copied id="..." from the later marker of each in {py} (a copied cell keeps its marker), then stage it',
            commands=[],
        )
    raw = blobs[nb_entry.sha]
    if raw.startswith(_LFS_POINTER):
        return dict(out, status="skipped", note=f"the staged {nb} is a Git LFS pointer; its cells are not in the index")
    try:
        staged_nb = parse_notebook(raw, nb)
    except NotebookReadFailed as err:
        return dict(out, status="unreadable", reason=f"the staged {nb} is not a readable notebook ({err.message.removeprefix(nb + ': ')})")
    if in_line(py_cells, staged_nb):
        return dict(out, status="in_line")
    drift = describe_drift(py_cells, staged_nb)
    side = _side(py, nb, changed)
    advice, commands = _fix(repo, py, nb, py_cells, side)
    return dict(out, status="out_of_line", side=side, drift=drift, reason=_drift_text(drift), advice=advice, commands=commands)


def _inspect(cwd: str, include: tuple[str, ...]) -> tuple[Repository, list[dict[str, Any]], dict[str, IndexEntry], dict[str, bytes]]:
    from .git_index import read_blobs, repository, staged_changes, staged_entries

    repo = repository(cwd)
    changed = staged_changes(repo)
    pairs = _pairs(changed, include)
    if not pairs:
        return repo, [], {}, {}
    entries = staged_entries(repo)
    wanted = []
    for py, nb, included in pairs:
        if included and py in entries and nb in entries and entries[py].regular and entries[nb].regular:
            wanted += [entries[py].sha, entries[nb].sha]
    blobs = read_blobs(repo, wanted)
    changed_set = set(changed)
    results = []
    for py, nb, included in pairs:
        if not included:
            results.append({"py": py, "notebook": nb, "status": "skipped", "note": "not matched by --include"})
            continue
        results.append(_check_pair(repo, py, nb, entries, blobs, changed_set))
    return repo, results, entries, blobs


def check_commit(cwd: str, include: tuple[str, ...] = ()) -> dict[str, Any]:
    """Check the pairs the staged commit touches (see the module).

    Returns:
        ``{"status": "pass", "pairs": [...]}``: each pair's ``py``, ``notebook``,
        ``status`` and any ``note``.

    Raises:
        NotebookOutOfSync: a pair is out of line or its staged notebook is
            unreadable; the message names the files, the cells and the
            commands that fix it, ``details["pairs"]`` every pair.
        UsageError, GitFailed, InternalError: the check could not run; the
            message names ``git commit --no-verify``.
    """
    try:
        _, results, _, _ = _inspect(cwd, include)
    except JcliError as err:
        raise _with_escape(err) from None
    except Exception as exc:  # a bug must stop the commit too, and say how to get past it
        raise _with_escape(internal_error(exc)) from exc
    blocked = [r for r in results if r["status"] in ("out_of_line", "unreadable", "duplicate_ids")]
    if blocked:
        raise NotebookOutOfSync(_block_message(blocked), pairs=results)
    return {"status": "pass", "pairs": results}


def _with_escape(err: JcliError) -> JcliError:
    err.message = f"the pre-commit pair check could not run: {err.message}. The commit was stopped. {ESCAPE}"
    err.args = (err.message,)
    return err


def _block_message(blocked: list[dict[str, Any]]) -> str:
    lines = ["the commit would hold paired files whose cells differ; nothing was changed"]
    for pair in blocked:
        lines.append(f"  {pair['py']} and {pair['notebook']}: {pair['reason']}")
        if pair.get("advice"):
            lines.append(f"    {pair['advice']}:" if pair["commands"] else f"    {pair['advice']}")
            lines.extend(f"      {command}" for command in pair["commands"])
        elif pair["status"] == "unreadable":
            lines.append(f"    repair {pair['notebook']} (or `git rm --cached -- {_q(pair['notebook'])}`), then stage it again")
    lines.append(ESCAPE)
    return "\n".join(lines)


def stage_synced(cwd: str, include: tuple[str, ...] = ()) -> dict[str, Any]:
    """Stage, for each pair out of line where the commit changes the ``.py`` only, the notebook synced from the staged ``.py``.

    The synced notebook starts from the staged one (outputs of unchanged
    cells kept, edited and new cells without outputs) and goes into the
    index only; the working tree is not touched. Run by hand when the check
    says so; the hook itself never stages anything.

    Returns:
        ``{"staged": [{"py", "notebook", "sync"}...], "left": [pairs still out of line]}``.

    Raises:
        UsageError, GitFailed: not in a repository, or git failed.
    """
    from ..ipynb import dumps_notebook, parse_notebook
    from .git_index import stage_blob
    from .pair_update import synced_notebook

    repo, results, entries, blobs = _inspect(cwd, include)
    staged, left = [], []
    for pair in results:
        if pair["status"] not in ("out_of_line", "unreadable", "duplicate_ids"):
            continue
        py, nb = pair["py"], pair["notebook"]
        if pair["status"] != "out_of_line" or pair["side"] != "py":
            left.append({"py": py, "notebook": nb, "reason": pair["reason"]})
            continue
        py_cells = _percent_cells(blobs[entries[py].sha]) or []
        notebook, report = synced_notebook(py_cells, parse_notebook(blobs[entries[nb].sha], nb, exact_numbers=True))
        stage_blob(repo, nb, entries[nb].mode, dumps_notebook(notebook).encode("utf-8"))
        staged.append({"py": py, "notebook": nb, "sync": report})
    return {"staged": staged, "left": left}


def render_commit_check(doc: dict[str, Any]) -> str:
    """The human text of a passing check (or of :func:`stage_synced`)."""
    if "staged" in doc:
        lines = [
            f"staged {s['notebook']}, in line with the staged {s['py']} (cells kept with their outputs: {s['sync']['kept']}, "
            f"edited: {s['sync']['edited']}, added: {s['sync']['added']}, removed: {s['sync']['removed']}); the working tree is unchanged"
            for s in doc["staged"]
        ]
        lines += [f"left as it is: {s['py']} and {s['notebook']}: {s['reason']} (bring them in line by hand)" for s in doc["left"]]
        return "\n".join(lines) or "nothing to stage: no pair is out of line where only the .py changed"
    checked = [p["py"] for p in doc["pairs"] if p["status"] == "in_line"]
    lines = [f"j-cli pre-commit: in line: {', '.join(checked)}"] if checked else []
    lines += [f"j-cli pre-commit: note: {p['note']}" for p in doc["pairs"] if p.get("note") and p["status"] == "not_paired"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Run the check as a hook would (``[--include GLOB]...``): print, and return git's exit code."""
    include: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--include":
            include.append(next(args, ""))
        elif arg.startswith("--include="):
            include.append(arg.split("=", 1)[1])
        else:
            print(f"j-cli: error [USAGE_ERROR]: {UsageError(f'unknown argument {arg!r}')}. {ESCAPE}", file=sys.stderr)
            return 2
    try:
        text = render_commit_check(check_commit(os.getcwd(), tuple(include)))
    except JcliError as err:
        print(f"j-cli: error [{err.code}]: {err.message}", file=sys.stderr)
        return 2 if isinstance(err, UsageError) else 1
    if text:
        print(text)
    return 0
