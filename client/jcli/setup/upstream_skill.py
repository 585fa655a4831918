"""Upstream j-cli 0.9.7's skill folder, recognised so ``setup`` can replace it.

Upstream installed ``<skills>/j-cli/`` with several files and a manifest,
``.j-cli-managed.json`` (``"source": "jupyter-jcli:j-cli"``, each file's
sha256). When every file it lists is still as upstream wrote it, setup
deletes them and the manifest (and the subfolders they leave empty) and
writes its own SKILL.md in their place. A file edited since is the user's:
then nothing is replaced and the usual conflict stands.
"""

from __future__ import annotations

import hashlib
import json
import os

from . import files

__all__ = ["plan_replace_upstream_skill"]

MANIFEST = ".j-cli-managed.json"
_SOURCE = "jupyter-jcli:j-cli"
#: The most read of the manifest or of a file it lists (upstream's are a few KiB).
_MAX_BYTES = 1 << 20


def _listed(folder: str) -> dict[str, str] | None:
    from jcli_sidecar.base import read_regular

    try:
        manifest = json.loads(read_regular(os.path.join(folder, MANIFEST), _MAX_BYTES)[0])
    except (OSError, ValueError):  # absent, not a regular file (a FIFO never blocks), too large, or garbled: not upstream's
        return None
    listed = manifest.get("files") if isinstance(manifest, dict) and manifest.get("source") == _SOURCE else None
    if not isinstance(listed, dict) or "SKILL.md" not in listed:
        return None
    return {str(k): str(v) for k, v in listed.items()}


def _unchanged(path: str, digest: str) -> bool:
    from jcli_sidecar.base import read_regular

    if os.path.islink(path):
        return False
    try:
        return hashlib.sha256(read_regular(path, _MAX_BYTES)[0]).hexdigest() == digest
    except (OSError, ValueError):  # absent, not a regular file, or too large: not as upstream wrote it
        return False


def plan_replace_upstream_skill(plan: files.Plan, skills_dir: str) -> bool:
    """Plan deleting upstream's skill files but SKILL.md (which setup then overwrites); whether it was upstream's."""
    folder = os.path.join(skills_dir, "j-cli")
    listed = _listed(folder)
    if listed is None:
        return False
    root = os.path.realpath(folder)
    paths = {}
    for rel, digest in listed.items():
        path = os.path.realpath(os.path.join(folder, rel))
        if not path.startswith(root + os.sep):
            return False  # a name leading out of the folder: not upstream's layout
        if not _unchanged(path, digest):
            return False
        paths[rel] = path
    for rel, path in [*paths.items(), (MANIFEST, os.path.join(root, MANIFEST))]:
        if rel == "SKILL.md":
            continue
        plan.delete(files.Current(path, path, None), dirs=rel.count("/"))
    return True
