"""The j-cli skill installed for agents (Codex and Claude Code read SKILL.md).

``<skills>/j-cli/SKILL.md`` is j-cli's when it carries :data:`MARKER`; a
``SKILL.md`` there without it is the user's own: ``CONFIG_CONFLICT``, never
overwritten or deleted. The marker line records how many directories setup
created for the file (``[+N dirs]``), which ``--remove`` takes back while
they are empty.
"""

from __future__ import annotations

import os

from jcli_sidecar.base import ConfigConflict

from . import files
from .seal import edited, seal

__all__ = ["MARKER", "SKILL_MD", "plan_skill", "render_skill"]

#: What marks j-cli's SKILL.md (the start of its marker line).
MARKER = "<!-- managed by j-cli setup"
_MARKER_LINE = MARKER + "; reinstalled by it{dirs} -->"

_HEAD = """---
name: j-cli
description: Run Python in a Jupyter kernel with j-cli, run notebooks written as py:percent .py files, and read saved notebook or run outputs (text, HTML, images) one at a time.
---
{marker}
# j-cli

Put `-j` right after `j-cli` for one JSON document on stdout; a failure is a
JSON error on stderr with a stable `code` (exit 1; bad flags exit 2).
"""

_SESSIONS = """
## Start the server and a session

```sh
j-cli healthcheck                 # starts this directory's embedded Jupyter Server if none runs
j-cli session create -n main      # a kernel session named main, running in this directory
j-cli session list
```

Create a session once and reuse it: its variables stay between runs. A name
that exists already is `USAGE_ERROR`. `j-cli -j server status` shows the
server's url and token (JupyterLab can join the same kernels).

Another server: put `-s URL -t TOKEN` right after j-cli (a URL as the server prints it
works). On Kernel Gateway or Enterprise Gateway with default settings,
select the session by the full `kernel_id` that `session create` printed;
a name there is `FORBIDDEN` (the message names the server setting). If
`session create` says `kernel_in_cwd: false`, the kernel runs elsewhere:
paths in your code resolve on its machine, while kept outputs and notebook
runs stay here.
"""

_INLINE = """
## Run code inline

```sh
j-cli -j exec main -c 'import math; print(math.pi)'
j-cli -j exec main -c 'import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); plt.show()'
```

Text comes back in `text` (bounded; `truncation_notice` says what was left
out). Rich outputs (images, HTML, JSON, long text) are kept as files in
`.j-cli/outputs/<run-id>/`: the result lists `{type, output_index, mime,
path, bytes}` and `run.run_id`. Read one back, or list the kept runs:

```sh
j-cli -j output show RUN_ID --output 0
j-cli output list
```

Without `-j`, each kept rich output prints one line with its file:
`image/png 10.7 KiB -> .j-cli/outputs/<run-id>/output-0000-1.png`.

Code that raised is `status: "error"` with `ename`, `evalue` and
`traceback` (exit 1; no terminal colour codes). There is no stdin: `input()` fails. Each cell may run
600 s before the kernel is interrupted (`TIMEOUT`): `--timeout 30` (or
`JCLI_EXEC_TIMEOUT`) changes that, `--timeout none` lifts it.
`--display-mode all` shows every bare expression of the code, not only the
last (`last_expr`, the default, `last_expr_or_assign`, `last`, `none`).
"""

_NOTEBOOKS = """
## Notebooks: write a .py, run it

Write the notebook as a py:percent file, `analysis.py`; `# %%` starts a code
cell, `# %% [markdown]` a markdown cell (its lines commented):

```python
# %% [markdown]
# # Sales

# %%
import matplotlib.pyplot as plt

sales = [3, 5, 4, 6]

# %%
plt.plot(sales)
plt.show()
```

```sh
j-cli -j exec main -f analysis.py              # every code cell; outputs go into analysis.ipynb
j-cli -j exec main -f analysis.py --cell 2     # only cell 2 (cells count from 0, markdown included)
j-cli -j exec main -f analysis.py --cell 1:3   # cells 1 and 2 (A:B excludes B; A: and :B work too)
```

The first run creates `analysis.ipynb` beside the `.py`; nothing goes under
`.j-cli`. With `-j`, one JSON line per cell as it finishes, then a summary
line; a cell that raises stops the run (exit 1). `--allow-errors` runs the
cells after it too and lists the ones that raised (`failed_cells`, still exit
1); a cell whose marker is `# %% tags=["raises-exception"]` may raise without
it, one tagged `skip-execution` (or empty) is not run, and a display updated
from a later cell is updated in the earlier cell too (nbclient's rules). `--timeout` is per cell; `--run-timeout S` bounds the whole run (then
`TIMEOUT`, and `not_run` lists the cells skipped). Parameters as papermill
takes them: `-p NAME VALUE` (repeatable) and `-y 'YAML mapping'` go into a
cell tagged `injected-parameters` after the cell tagged `parameters`
(the notebook's only, never the `.py`'s). Without `-j`, each cell
starts with `[cell I] K/N`, and each image or other rich output prints the
command that reads it (`image/png 21.6 KiB -> j-cli notebook output
analysis.ipynb --cell 2 --output 0`).

Magics and shell commands are commented in the `.py` the jupytext way
(`# !pip list`, `# %time f()`, `# %%bash` on the marker line's cell) and are
magics again in the notebook and the kernel.

**Edit the `.py`, never the `.ipynb`.** Change, add or remove cells in the
`.py` and run it again: the notebook is brought in line first (unchanged
cells keep their outputs, edited cells lose stale ones), and j-cli never
rewrites the `.py`. If the notebook was edited elsewhere, the run stops with
`PAIR_CONFLICT` before any code runs and writes nothing; `--py-wins` lets
the `.py` win. When you copy a cell, delete the `id="…"` on the copy's
`# %%` marker: markers that repeat an id stop the run with
`CELL_ID_DUPLICATE` (the error names the lines). A file whose kernel is not
the session's stops with `KERNEL_MISMATCH`: create a session with
`-k NAME`, or pass `--any-kernel`.

**I edited a cell; bring the notebook up to date:**

```sh
j-cli notebook summary analysis.py             # STALE cells, and why (edited, or reading from one)
j-cli -j exec main -f analysis.py --stale      # runs exactly the stale cells, in order
```

`--stale` runs the edited cells and every cell after them that reads what
they write (transitively), nothing else; a cell using `exec`, `globals()`,
a star import or a magic that runs code counts as reading every cell before
it. Not with `--cell`. After a kernel restart, run the whole file instead.

When a person has the notebook open in JupyterLab with real-time
collaboration, a run writes into their shared document instead of the file
(the summary says `live: true`): they watch the outputs arrive, their edits
in other cells stay, and the file holds the run when `exec` returns.
"""

_READING = """
## Read one saved output

```sh
j-cli -j notebook outputs analysis.py --cell 2             # the cell's outputs: index, MIME types, sizes
j-cli -j notebook output analysis.py --cell 2 --output 0   # one output
```

Read one output instead of opening the whole notebook. `--cell` counts the
cells of the file you name (for a `.py`, the `.py`'s own cells); `--output`
is the index in that cell's outputs (streams and errors count). A display
output comes back in `selected` (an image as base64 in `selected.data`,
text and HTML verbatim), a stream in `stream`, an error in `error`.
`--mime text/html` picks a representation, `--offset 4000 --limit 2000` a
window of a long text, `--host claude` (or `codex`, `dsh`, `opencode`) fits
an image to that host. With the MCP tools,
`read_notebook_output(file_path, cell_index, output_index)` and
`read_run_output(run, output_index)` do the same, and images arrive as
images; `notebook_grep(pattern)` searches as `notebook grep` does (its
`next.arguments` are the next page's call), and `job_status(job_id)` and
`job_wait(job_id)` follow a background job (the wait returns within 50 s).
A chart (Altair / Vega-Lite, Vega, Plotly) is a JSON spec: read it as the
picture with `--as image/png` (`as_mime_type: "image/png"`), which the
catalog and exec's lines name for such outputs; without `--as` the spec
comes back verbatim. Reads never run code or change a file.
"""

_LONG_RUNS = """
## Runs longer than a shell call

Your shell tool stops a command after a while (Claude Code's Bash: 2
minutes by default). When a cell or a notebook may take longer, start it in
the background and wait in a loop:

```sh
j-cli -j exec main -f analysis.py --background
j-cli -j job wait JOB_ID
```

The first returns at once with `job_id`. `job wait` returns when the job
ends (`jobs[0].state`: `ok`, `error`, `timeout`, `cancelled`,
`kernel_died`, `lost`; `jobs[0].result` is what the run would have printed)
or after 100 s with `timed_out: true`: then call `job wait` again. The job
runs on between calls and if your call is stopped. `j-cli -j job status
JOB_ID` shows the progress (cells done of N), `j-cli -j job output JOB_ID`
the text so far, `j-cli -j job cancel JOB_ID` interrupts it. Read images
as usual with `notebook output` once the cell is written back. A
kernel busy with a job refuses other runs (`KERNEL_BUSY`): wait for it.
"""

_CLEANUP = """
## Interrupt, restart, clean up

```sh
j-cli kernel interrupt main       # stop what is running; the variables stay
j-cli kernel restart main         # a fresh kernel: the variables are gone
j-cli session kill main           # shut the session and its kernel down (several: kill A B)
j-cli output clean --dry-run      # kept runs that cleaning would delete
```

`.j-cli/outputs` is a scratch area: runs older than 7 days, or beyond the
newest 50, are deleted automatically. Copy what you need, or run the code in
a notebook. Kill the sessions you created when you are done.
"""

#: Workflows for inspecting a notebook or a kernel: a notebook's cells, the
#: kernel's variables, converting between .py and .ipynb. They come after
#: reading outputs and before cleaning up.
_INSPECTING: tuple[str, ...] = (
    """
## Look at a notebook without running it

```sh
j-cli notebook summary analysis.py              # per cell: lines, preview, imports/defines/calls, last run
j-cli notebook show analysis.py --cell 2        # the whole source of cell 2 (A:B for a range)
j-cli notebook map analysis.py                  # which .py cell is which notebook cell, what changed
```

`summary` also tells, from the notebook, each cell's `execution_count`, how
many `outputs` it has and its `error`, so you can find the cell that failed
before reading its output. `map` says what the next `exec -f` would keep,
edit, add or remove, and whether it would stop with `PAIR_CONFLICT`. A cell
spec outside the file is `CELL_NOT_FOUND`. These only read.

Edit an unpaired notebook's cells with `j-cli notebook cell`: `notebook cell
replace NB CELL --source TEXT --if-source SHA` (also `insert`, `delete`,
`move`, `clear`), CELL the `cell_id` and SHA the `source_sha` `show` gave. A
cell changed since is `CELL_CHANGED` with its source now: decide again. A
paired notebook is `NOTEBOOK_PAIRED`: edit its `.py`.
""",
    """
## Search notebooks: not grep on the JSON

```sh
j-cli notebook grep sales                       # sources and text outputs here and below: FILE cell N[ output K]: line
j-cli notebook grep -i -F 'plt.show()' analysis.py   # literal text, either case; --outputs-only, --sources-only
j-cli notebook text analysis.ipynb              # the whole notebook as plain text, an image as one size line
```

Each hit's numbers are what `notebook show FILE --cell N` and `notebook
output FILE --cell N --output K` take. At most 50 hits (`--max-hits`); the
last line is then the exact command for the next page. Exit 1 means no hit.
Tracebacks and streams are searched without colour codes; images are
never decoded. For ripgrep: `rg --pre j-cli-notebook-text --pre-glob
'*.ipynb' PATTERN`.
""",
    """
## Inspect the kernel's variables

```sh
j-cli vars main                                 # name, type, size, a short value; definition order
j-cli -j vars main --name sales --rich          # one variable: longer value, rich forms (HTML, text)
j-cli session list --vars                       # each idle session's first variable names
```

Values are cut (`truncated`, `repr_length` the full length); functions and
classes are listed, modules only with `--modules`. An unknown `--name` is
`VARIABLE_NOT_FOUND`. It runs nothing that leaves a trace in the kernel.

A pandas or polars DataFrame or Series has `frame`: its columns and dtypes;
with `--name` also null counts, the index and a 5-row head and tail. A cell
whose result is a DataFrame gets the same view as text in `frame` on that
output's item in `exec -j`: read it instead of parsing the printed table.
""",
    """
## Convert between .py and .ipynb

```sh
j-cli convert py-to-ipynb analysis.py           # create or update analysis.ipynb from the .py
j-cli convert ipynb-to-py analysis.ipynb -o other.py  # a notebook as a py:percent file
j-cli convert assign-ids analysis.ipynb         # give every cell a valid, unique id
j-cli kernelspec inspect-file analysis.py       # the kernel a file asks for (no server needed)
```

To start from someone's `.ipynb`, convert it to a `.py` and work on that.
`py-to-ipynb` keeps the outputs of unchanged cells (`--outputs preserve` or
`clear-all` to choose) and, like `exec -f`, stops with `PAIR_CONFLICT` rather
than drop notebook-side edits (`--py-wins` to overwrite them); convert never
rewrites its input.

## Guards: what a hook blocks, and why

`setup` installs hooks that deny a tool call with a reason naming the j-cli
command to use instead; run that command. They block:

- running a notebook outside j-cli (`jupyter nbconvert --execute`,
  `papermill`, `jupyter execute`, ...): use `exec SESSION -f` on it, so the
  outputs land in the notebook through j-cli;
- `python x.py` on a py:percent `.py` that has an `x.ipynb`: use
  `exec SESSION -f x.py`, which keeps the pair in step;
- hand edits of a paired `.ipynb`: edit the `.py`, then `convert py-to-ipynb`;
- an edit of a pair whose notebook and `.py` both changed the same cells:
  the reason names the cells and the two ways to settle it.

After you edit a paired `.py`, the hook syncs its notebook (outputs of
unchanged cells kept) and tells you what it did. With `setup git --hooks`,
a commit whose staged `.py` and notebook cells differ is stopped, naming the
cells and the commands that bring them in line; it never stages anything
for you. When a guard never seems to answer, ask whether the host finds
j-cli (a project's hooks run plain `j-cli` from PATH):

```bash
j-cli setup status
```
""",
)

#: The skill's sections, in the order an agent meets them.
_SECTIONS = (_HEAD, _SESSIONS, _INLINE, _NOTEBOOKS, _LONG_RUNS, _READING, *_INSPECTING, _CLEANUP)

SKILL_MD = "".join(_SECTIONS)


def render_skill(dirs: int = 0) -> str:
    """The SKILL.md setup writes, recording ``dirs`` directories it created."""
    return SKILL_MD.replace("{marker}", _MARKER_LINE.format(dirs=files.dirs_mark(dirs, always=True)), 1)


def plan_skill(
    plan: files.Plan, skills_dir: str, remove: bool, replace_foreign: bool = False, edits: list[str] | None = None
) -> str | bool:
    """Plan installing ``<skills_dir>/j-cli/SKILL.md`` (its path) or removing it (whether it was there).

    ``replace_foreign``: the SKILL.md there is upstream j-cli's, to be overwritten.
    ``edits``: told when our SKILL.md was edited since setup wrote it (its
    digest, :mod:`jcli.setup.seal`), which replacing or removing it loses.

    Raises:
        ConfigConflict: a SKILL.md j-cli did not write is there.
        ConfigInvalid: what is there is not a regular UTF-8 file.
        OutputSaveFailed: it is read-only.
    """
    path = os.path.join(skills_dir, "j-cli", "SKILL.md")
    cur = files.read(path)
    foreign = cur.text is not None and MARKER not in cur.text
    if foreign and not replace_foreign:
        raise ConfigConflict(f"{path} exists and was not written by j-cli; move it away first", path=path)
    was_edited = not foreign and cur.text is not None and edited(cur.text) is True
    if remove:
        if cur.text is None:
            return False
        if was_edited and edits is not None:
            edits.append(f"skill {path}: it was edited since setup wrote it, and is deleted with those edits")
        plan.delete(cur, _dirs(cur.text))
        return True
    text = seal(render_skill(cur.missing_dirs() if cur.text is None else 1 if foreign else _dirs(cur.text)), MARKER)
    if plan.write(cur, text) and was_edited and edits is not None:
        edits.append(f"skill {path}: it was edited since setup wrote it; those edits are replaced by j-cli's skill")
    return path


def _dirs(text: str) -> int:
    """The directories our SKILL.md records; one (its folder) for an earlier j-cli's, which always made it."""
    start = text.index(MARKER)
    end = text.find("\n", start)
    recorded = files.dirs_recorded(text[start : end if end >= 0 else len(text)])
    return 1 if recorded is None else recorded
