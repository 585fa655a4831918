"""The j-cli skill installed for agents (Codex and Claude Code read SKILL.md)."""

from __future__ import annotations

import os

from jcli_sidecar.fileio import write_text_atomic

__all__ = ["MARKER", "SKILL_MD", "install_skill", "remove_skill"]

MARKER = "<!-- managed by j-cli setup; reinstalled by it -->"

SKILL_MD = f"""---
name: j-cli
description: Run Python in a Jupyter kernel with j-cli and read saved notebook or run outputs (text, HTML, images) one at a time.
---
{MARKER}

# j-cli

**Run code** in a kernel session (`j-cli session create -n main` once):

- Inline: `j-cli -j exec main -c 'CODE'`. Short text comes back in `text`. Rich
  outputs (images, HTML, JSON) are kept as real files in
  `<cwd>/.j-cli/outputs/<run-id>/`; the result lists them as
  `{{type, output_index, mime, path, bytes}}` plus `run.run_id`.
- Notebook: `j-cli -j exec main -f analysis.ipynb` (or a py:percent
  `analysis.py`, optionally `--cell 2:5`). Outputs go into the notebook only;
  one JSON line per cell, then a summary.
- Code that raised is a result with `status: "error"` (exit 1). There is no
  stdin: `input()` fails.

**Read one output** instead of opening a whole notebook:

- Tool `read_notebook_output(file_path, cell_index)` lists a cell's outputs;
  add `output_index` (and `mime_type`, `offset`, `limit`) to read one: images
  arrive as images, text and HTML verbatim.
- `read_run_output(run, output_index)` does the same for kept inline runs.
- CLI: `j-cli -j notebook output FILE --cell N --output K`,
  `j-cli -j output show RUN_ID --output K`.

**Where runs live and cleanup:** `.j-cli/outputs` is a temporary area:
runs older than 7 days, or beyond the newest 50, are deleted automatically
(`j-cli output clean --dry-run` shows what would go). Copy what you need to
keep, or run the code in a notebook.
"""


def install_skill(skills_dir: str) -> str:
    """Write ``<skills_dir>/j-cli/SKILL.md``; returns its path."""
    target = os.path.join(skills_dir, "j-cli")
    os.makedirs(target, exist_ok=True)
    path = os.path.join(target, "SKILL.md")
    write_text_atomic(path, SKILL_MD)
    return path


def remove_skill(skills_dir: str) -> bool:
    """Delete our SKILL.md (only if it carries our marker) and its empty folder."""
    target = os.path.join(skills_dir, "j-cli")
    path = os.path.join(target, "SKILL.md")
    try:
        with open(path, encoding="utf-8") as fh:
            if MARKER not in fh.read():
                return False
    except OSError:
        return False
    os.unlink(path)
    try:
        os.rmdir(target)
    except OSError:
        pass
    return True
