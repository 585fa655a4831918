"""``j-cli setup git``: a managed ``.gitignore`` block for ``**/.j-cli/``.

Ordinary exec never edits ``.gitignore``: ``.j-cli/`` carries its own
``.gitignore``; this block is for teams who want the rule in the repository.
A symlinked ``.gitignore`` is edited at its target; ``--remove`` deletes the
file only when setup created it (the block's ``[+file]``) and nothing else
was added since.

``--hooks`` also installs (``--hooks --remove``: removes) the pre-commit
hook that runs the pair check (:mod:`.git_hook`), in the same plan: every
check passes before the first file changes.
"""

from __future__ import annotations

import os

from . import files
from .blocks import find_block, put_block, remove_block

__all__ = ["setup_git"]

RULE = "**/.j-cli/"
#: The first line of upstream j-cli's own .gitignore block (it also ignores ``*.ipynb``).
_UPSTREAM_BLOCK = "# >>> jcli managed (git hooks) >>>"


def setup_git(project: str, remove: bool = False, hooks: bool = False, include: tuple[str, ...] = ()) -> dict:
    """Add (or remove) the managed block in ``<project>/.gitignore``, and with ``hooks`` the pre-commit hook.

    Raises:
        ConfigInvalid: the file is not a regular UTF-8 file.
        ConfigConflict: a file is in the way of the hook (see :mod:`.git_hook`).
        OutputSaveFailed: the file is read-only.
        UsageError: ``hooks`` outside a git work tree.
    """
    from . import git_hook

    path = os.path.join(project, ".gitignore")
    cur = files.read(path)
    plan = files.Plan()
    if remove:
        block = find_block(cur.text or "")
        if block is not None:
            rest = remove_block(cur.text or "")
            if rest == "" and block.created:
                plan.delete(cur, block.dirs)
            else:
                plan.write(cur, rest)
        result = {"gitignore": path, "removed": block is not None}
        if hooks:
            result.update(git_hook.remove_hook(project, plan))
            result["removed"] = result["removed"] or result["hook_removed"]
        plan.apply()
        return result
    new = put_block(cur.text or "", "j-cli outputs", RULE, created=cur.text is None)
    result = {"gitignore": path, "rule": RULE, "changed": plan.write(cur, new)}
    if hooks:
        result.update(git_hook.install_hook(project, list(include), plan))
        result["changed"] = result["changed"] or result["hook_changed"]
    if _UPSTREAM_BLOCK in (cur.text or ""):
        result["warnings"] = [
            f"{path} holds upstream j-cli's block, which ignores *.ipynb (so no notebook is committed or checked); "
            "it was left as it is: delete it by hand if your notebooks belong in the repository"
        ]
    plan.apply()
    return result
