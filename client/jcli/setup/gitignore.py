"""``j-cli setup git``: a managed ``.gitignore`` block for ``**/.j-cli/``.

Ordinary exec never edits ``.gitignore``: ``.j-cli/`` carries its own
``.gitignore``; this block is for teams who want the rule in the repository.
"""

from __future__ import annotations

import os

from jcli_sidecar.fileio import read_text_or_none, write_text_atomic

from .blocks import has_block, put_block, remove_block

__all__ = ["setup_git"]

RULE = "**/.j-cli/"


def setup_git(project: str, remove: bool = False) -> dict:
    """Add (or remove) the managed block in ``<project>/.gitignore``."""
    path = os.path.join(project, ".gitignore")
    text = read_text_or_none(path)
    if remove:
        changed = text is not None and has_block(text)
        if changed:
            new = remove_block(text)
            if new == "":
                os.unlink(path)  # we created it
            else:
                write_text_atomic(path, new)
        return {"gitignore": path, "removed": changed}
    new = put_block(text or "", "j-cli outputs", RULE)
    if new != text:
        write_text_atomic(path, new)
    return {"gitignore": path, "rule": RULE, "changed": new != text}
