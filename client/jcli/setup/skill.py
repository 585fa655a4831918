"""The j-cli skill installed for agents (Codex and Claude Code read SKILL.md).

``<skills>/j-cli/SKILL.md`` is j-cli's when it carries :data:`MARKER`; a
``SKILL.md`` there without it is the user's own: ``CONFIG_CONFLICT``, never
overwritten or deleted. The marker line records how many directories setup
created for the file (``[+N dirs]``), which ``--remove`` takes back while
they are empty.
"""

from __future__ import annotations

import os

from jcli_sidecar.errors import ConfigConflict

from . import files

__all__ = ["MARKER", "SKILL_MD", "plan_skill", "render_skill"]

#: What marks j-cli's SKILL.md (the start of its marker line).
MARKER = "<!-- managed by j-cli setup"
_MARKER_LINE = MARKER + "; reinstalled by it{dirs} -->"

SKILL_MD = """---
name: j-cli
description: Run Python in a Jupyter kernel with j-cli and read saved notebook or run outputs (text, HTML, images) one at a time.
---
{marker}
# j-cli

**Run code** in a kernel session (`j-cli session create -n main` once):

- Inline: `j-cli -j exec main -c 'CODE'`. Short text comes back in `text`. Rich
  outputs (images, HTML, JSON) are kept as real files in
  `<cwd>/.j-cli/outputs/<run-id>/`; the result lists them as
  `{type, output_index, mime, path, bytes}` plus `run.run_id`.
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


def render_skill(dirs: int = 0) -> str:
    """The SKILL.md setup writes, recording ``dirs`` directories it created."""
    return SKILL_MD.replace("{marker}", _MARKER_LINE.format(dirs=files.dirs_mark(dirs, always=True)), 1)


def plan_skill(plan: files.Plan, skills_dir: str, remove: bool) -> str | bool:
    """Plan installing ``<skills_dir>/j-cli/SKILL.md`` (its path) or removing it (whether it was there).

    Raises:
        ConfigConflict: a SKILL.md j-cli did not write is there.
        ConfigInvalid: what is there is not a regular UTF-8 file.
        OutputSaveFailed: it is read-only.
    """
    path = os.path.join(skills_dir, "j-cli", "SKILL.md")
    cur = files.read(path)
    if cur.text is not None and MARKER not in cur.text:
        raise ConfigConflict(f"{path} exists and was not written by j-cli; move it away first", path=path)
    if remove:
        if cur.text is None:
            return False
        plan.delete(cur, _dirs(cur.text))
        return True
    plan.write(cur, render_skill(cur.missing_dirs() if cur.text is None else _dirs(cur.text)))
    return path


def _dirs(text: str) -> int:
    """The directories our SKILL.md records; one (its folder) for an earlier j-cli's, which always made it."""
    start = text.index(MARKER)
    end = text.find("\n", start)
    recorded = files.dirs_recorded(text[start : end if end >= 0 else len(text)])
    return 1 if recorded is None else recorded
