"""``j-cli setup git --hooks``: the pre-commit hook that runs the pair check.

Where: the directory git runs hooks from (``core.hooksPath`` when set,
else the repository's ``hooks`` directory, shared by its worktrees).

- **Chained, never replaced.** A ``pre-commit`` that is already there (the
  user's own script, or a framework's such as the ``pre-commit`` package's)
  is renamed to ``pre-commit.jcli-chained``, and j-cli's hook runs it first,
  with the same arguments; only when it passes does the pair check run
  (last, so it sees the index as the other hooks left it). A failing hook
  still fails the commit, with its own exit code. ``--remove`` deletes
  j-cli's hook and renames the chained one back: the same file, byte for
  byte, with its mode (a symlink stays a link).
- **Upstream's shim replaced.** A hook that is upstream j-cli's three-line
  shim (``exec j-cli _hooks pre-commit-pair-sync …``, in ``.githooks`` with
  ``core.hooksPath`` or in the repository's hooks) is replaced by j-cli's,
  keeping its ``--include`` globs; ``core.hooksPath`` is left as it is.
- **Globs.** ``--include`` replaces the hook's globs; setup without it
  keeps those the hook has.
- **How the hook finds j-cli** is ``setup/command.py``'s rule: a hooks
  directory inside the work tree is committed and shared, so it runs
  ``j-cli`` from PATH; any other belongs to this machine and runs this
  install's interpreter. When that command is missing, the hook stops the
  commit and says so (``git commit --no-verify`` gets past it).
"""

from __future__ import annotations

import os
import re
import shlex

from jcli_sidecar.base import ConfigInvalid
from jcli_sidecar.pair import Repository, repository

from . import files
from .command import jcli_command

__all__ = ["CHAINED", "HOOK", "install_hook", "is_upstream_shim", "remove_hook"]

HOOK = "pre-commit"
#: Where an existing ``pre-commit`` hook is moved to be chained.
CHAINED = "pre-commit.jcli-chained"
_MARK = "# j-cli pre-commit hook (managed by `j-cli setup git --hooks`; `j-cli setup git --hooks --remove` restores what was here)"
_UPSTREAM = re.compile(
    r"\A#!/usr/bin/env bash\nset -euo pipefail\nexec j-cli _hooks pre-commit-pair-sync(?P<args>(?: --include \S+)*)\n?\Z"
)
_MAX_HOOK_BYTES = 1 << 20


def is_upstream_shim(text: str) -> bool:
    """Whether ``text`` is the pre-commit shim upstream j-cli (0.9.x) writes."""
    return _UPSTREAM.match(text) is not None


def _hook_includes(text: str) -> list[str]:
    """The ``--include`` globs on the hook's ``exec`` line (j-cli's or upstream's)."""
    lines = [line for line in text.splitlines() if line.startswith("exec ")]
    try:
        args = shlex.split(lines[-1]) if lines else []
    except ValueError:
        return []
    return [args[i + 1] for i in range(len(args) - 1) if args[i] == "--include"]


def hook_text(argv: list[str], include: list[str], dirs: int = 0) -> str:
    """The hook script: run the chained hook, then ``argv _hooks pre-commit-pair-sync``."""
    command = " ".join(shlex.quote(a) for a in [*argv, "_hooks", "pre-commit-pair-sync"])
    command += "".join(f" --include {shlex.quote(glob)}" for glob in include)
    missing = (
        f"echo 'j-cli pre-commit: {shlex.quote(argv[0])} cannot be run, so the pair check cannot run. "
        "To commit without it: git commit --no-verify' >&2"
    )
    return (
        "#!/bin/sh\n"
        f"{_MARK}{files.dirs_mark(dirs)}\n"
        f"# Runs the hook that was here before ({CHAINED}), then checks that no staged .py and its notebook differ.\n"
        'hooks_dir=$(dirname -- "$0")\n'
        f'if [ -x "$hooks_dir/{CHAINED}" ]; then\n'
        f'    "$hooks_dir/{CHAINED}" "$@" || exit\n'
        "fi\n"
        f"if ! command -v {shlex.quote(argv[0])} >/dev/null 2>&1; then\n"
        f"    {missing}\n"
        "    exit 1\n"
        "fi\n"
        f"exec {command}\n"
    )


class _Existing:
    """What is at the hook's path: nothing, j-cli's hook, upstream's shim, or someone else's."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.kind, self.text = "none", ""
        if not os.path.lexists(path):
            return
        if not os.path.islink(path) and not os.path.isfile(path):
            raise ConfigInvalid(f"{path} is not a regular file; it was left untouched", path=path)
        from jcli_sidecar.base import read_regular

        try:
            raw, _ = read_regular(path, _MAX_HOOK_BYTES)
            self.text = raw.decode("utf-8", "replace")
        except (OSError, ValueError):  # a dangling link, a huge binary: someone else's, kept as it is
            self.text = ""
        self.kind = "ours" if _MARK in self.text else "upstream" if is_upstream_shim(self.text) else "other"


def _where(project: str) -> tuple[Repository, str]:
    repo = repository(project)
    return repo, repo.hooks_dir()


def _shared(repo: Repository, hooks_dir: str) -> bool:
    """A hooks directory inside the work tree (and outside ``.git``) is committed and shared."""

    def under(path: str, root: str) -> bool:
        return os.path.commonpath([path, root]) == root

    real = os.path.realpath(hooks_dir)
    return under(real, os.path.realpath(repo.top)) and not under(real, os.path.realpath(repo.common_dir))


def install_hook(project: str, include: list[str], plan: files.Plan) -> dict:
    """Plan installing the hook; the result says where, and what was chained or replaced.

    Raises:
        UsageError: ``project`` is not in a git work tree.
        ConfigInvalid: a directory or device stands where the hook goes.
        ConfigConflict: a ``pre-commit.jcli-chained`` is in the way.
        OutputSaveFailed: the hooks directory is read-only.
    """
    repo, hooks_dir = _where(project)
    path = os.path.join(hooks_dir, HOOK)
    existing = _Existing(path)
    if existing.kind in ("ours", "upstream") and not include:
        include = _hook_includes(existing.text)  # setup again without --include keeps the globs
    argv = jcli_command("project" if _shared(repo, hooks_dir) else "local")
    result: dict = {"hook": path, "hooks_path": repo.hooks_path_setting(), "chained": None, "replaced_upstream": False}
    if existing.kind in ("ours", "upstream"):
        cur = files.read(path)
        dirs = files.dirs_recorded(cur.text or "") or 0 if existing.kind == "ours" else 0
        result["hook_changed"] = plan.write(cur, hook_text(argv, include, dirs), executable=True)
        result["replaced_upstream"] = existing.kind == "upstream"
        chained = os.path.join(hooks_dir, CHAINED)
        if existing.kind == "ours" and os.path.lexists(chained):
            result["chained"] = chained
        return result
    fresh = files.Current(path, path, None)
    if existing.kind == "other":
        chained = os.path.join(hooks_dir, CHAINED)
        plan.rename(files.Current(path, path, existing.text), chained)
        result["chained"] = chained
    result["hook_changed"] = plan.write(fresh, hook_text(argv, include, fresh.missing_dirs()), executable=True)
    return result


def remove_hook(project: str, plan: files.Plan) -> dict:
    """Plan removing j-cli's hook (or upstream's shim) and moving a chained hook back.

    Raises:
        UsageError: ``project`` is not in a git work tree.
        OutputSaveFailed: the hooks directory is read-only.
    """
    _, hooks_dir = _where(project)
    path = os.path.join(hooks_dir, HOOK)
    chained = os.path.join(hooks_dir, CHAINED)
    existing = _Existing(path)
    result: dict = {"hook": path, "hook_removed": False, "restored": None}
    if existing.kind not in ("ours", "upstream"):
        if os.path.lexists(chained):
            result["warnings"] = [f"{path} is not j-cli's hook, so {chained} was left where it is"]
        return result
    cur = files.Current(path, path, existing.text)
    has_chained = existing.kind == "ours" and os.path.lexists(chained)
    plan.delete(cur, 0 if has_chained else files.dirs_recorded(existing.text) or 0)
    if has_chained:
        plan.rename(files.Current(chained, chained, None), path)
        result["restored"] = path
    result["hook_removed"] = True
    return result
