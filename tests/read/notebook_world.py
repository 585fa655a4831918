"""A small tree of real notebooks for the grep and text tests: every kind of output, pairs, and traps.

Every file that must be searched holds the word ``needle`` somewhere; every
file a walk must leave alone holds it too, so a hit from one of them shows.
"""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

__all__ = ["PNG", "TRAPS", "build_world", "write_nb"]

#: A real PNG (what the image output holds, and its size line names).
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

#: Where a walk must not look (each holds a needle).
TRAPS = (".hidden/t.ipynb", "node_modules/pkg/t.ipynb", ".ipynb_checkpoints/rich-checkpoint.ipynb", ".j-cli/t.ipynb", ".git/t.ipynb")


def write_nb(path: Path, cells) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path


def _big_png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.frombytes("RGB", (64, 64), os.urandom(64 * 64 * 3)).save(buf, format="PNG")
    return buf.getvalue()


def rich_cells() -> list:
    code = new_code_cell("x = 1\nprint('needle in source')", execution_count=1)
    code.outputs = [
        new_output("stream", name="stdout", text="first line\nneedle in stdout\n"),
        new_output("stream", name="stderr", text="\x1b[33mneedle in stderr\x1b[0m\n"),
        new_output(
            "execute_result",
            data={"text/html": "<b>needle in html</b>", "text/plain": "needle in plain"},
            execution_count=1,
        ),
        new_output("display_data", data={"image/png": base64.b64encode(_big_png()).decode(), "text/plain": "<Figure>"}),
        new_output("display_data", data={"application/json": {"key": "needle in json"}, "text/markdown": "*needle* in markdown"}),
        new_output(
            "error",
            ename="NeedleError",
            evalue="needle in error",
            traceback=["\x1b[31m---------\x1b[0m", "\x1b[31mNeedleError\x1b[0m: needle in traceback"],
        ),
    ]
    return [new_markdown_cell("# A needle heading\n\nwords"), code, new_code_cell("y = 2")]


def build_world(root: Path) -> Path:
    """The tree under ``root``; returns ``root``."""
    write_nb(root / "rich.ipynb", rich_cells())
    write_nb(root / "sub" / "deeper" / "plain.ipynb", [new_code_cell("needle = 3")])
    # A pair: the .py gives the sources, the notebook its outputs.
    paired = new_code_cell("value = 'needle in pair'", execution_count=1)
    paired.outputs = [new_output("stream", name="stdout", text="needle printed by the pair\n")]
    write_nb(root / "pair.ipynb", [paired])
    (root / "pair.py").write_text("# %%\nvalue = 'needle in pair'\n", encoding="utf-8")
    (root / "percent.py").write_text("# %%\nimport os\n\n# %% [markdown]\n# needle in a percent markdown cell\n", encoding="utf-8")
    (root / "script.py").write_text("needle = 'a plain script is not searched'\n", encoding="utf-8")
    (root / "notes.txt").write_text("needle in a text file\n", encoding="utf-8")
    for trap in TRAPS:
        write_nb(root / trap, [new_code_cell("needle = 'trap'")])
    return root
