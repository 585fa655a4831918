"""``j-cli setup git``: a managed ``.gitignore`` block for ``**/.j-cli/``.

Ordinary exec never edits ``.gitignore``: ``.j-cli/`` carries its own
``.gitignore``; this block is for teams who want the rule in the repository.
A symlinked ``.gitignore`` is edited at its target; ``--remove`` deletes the
file only when setup created it (the block's ``[+file]``) and nothing else
was added since.
"""

from __future__ import annotations

import os

from . import files
from .blocks import find_block, put_block, remove_block

__all__ = ["setup_git"]

RULE = "**/.j-cli/"


def setup_git(project: str, remove: bool = False) -> dict:
    """Add (or remove) the managed block in ``<project>/.gitignore``.

    Raises:
        ConfigInvalid: the file is not a regular UTF-8 file.
        OutputSaveFailed: the file is read-only.
    """
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
        plan.apply()
        return {"gitignore": path, "removed": block is not None}
    new = put_block(cur.text or "", "j-cli outputs", RULE, created=cur.text is None)
    changed = plan.write(cur, new)
    plan.apply()
    return {"gitignore": path, "rule": RULE, "changed": changed}
