"""Notebooks that look like real ones, of any size, written fast as JSON text.

Real notebooks are not only images: plots (``display_data`` with a PNG and
a ``text/plain`` repr) come with printed text stored as a list of lines, a
long log every so often, and pandas-style HTML tables. The cells cycle
through ten kinds, so every size has the same mix:

- cell ``10k``: a ``stream`` of about 150 KB of text (log lines);
- cells ``10k + 3`` and ``10k + 7``: an ``execute_result`` with an HTML
  table and its ``text/plain`` form;
- cell ``10k + 5``: a markdown cell;
- every other cell: a short ``stream`` and a ``display_data`` PNG (seeded
  noise, so every run writes the same file) with a ``text/plain`` repr.

With ``runnable`` each code cell's source makes outputs of the same kinds
and sizes again when a kernel runs it (``bench/notebook_rerun.py``, the
write-back memory test); with ``nbformat_layout`` the file is byte for byte
what nbformat would write (Jupyter's own saves), else each cell is dumped
on its own without nbformat's nesting.

Shared by the benchmarks (``bench/read_latency.py``, ``bench/mcp_latency.py``)
and the memory tests (``tests/ipynb/test_big_notebook.py``, ``tests/kernel/test_big_rerun.py``). The file is written
cell by cell: generating 400 MB holds a few cells in memory, never the file.
"""

from __future__ import annotations

import base64
import io
import json
import random

__all__ = ["IMAGE_OUTPUT", "cell_kind", "image_png", "write_notebook"]

#: Which output of an image cell holds the PNG.
IMAGE_OUTPUT = 1


def _noise_png(rng: random.Random, side: int) -> bytes:
    from PIL import Image

    img = Image.frombytes("RGB", (side, side), bytes(rng.getrandbits(8) for _ in range(side * side * 3)))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def cell_kind(index: int) -> str:
    """``"log"``, ``"table"``, ``"markdown"`` or ``"image"``: what cell ``index`` holds."""
    k = index % 10
    if k == 0:
        return "log"
    if k in (3, 7):
        return "table"
    if k == 5:
        return "markdown"
    return "image"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _log(rng: random.Random, index: int) -> list[str]:
    lines = []
    size = 0
    step = 0
    while size < 150_000:
        loss = rng.random()
        line = f'epoch {index:4d} step {step:5d}  loss={loss:.6f}  acc={1 - loss / 3:.4f}  lr=3.0e-04  "ok" [{step % 7}]\n'
        lines.append(line)
        size += len(line)
        step += 1
    return lines


def _table(rng: random.Random, rows: int = 40) -> tuple[list[str], list[str]]:
    html = [
        "<div>\n",
        '<table border="1" class="dataframe">\n',
        "  <thead>\n",
        "    <tr><th></th><th>a</th><th>b</th><th>name</th></tr>\n",
        "  </thead>\n",
        "  <tbody>\n",
    ]
    plain = ["      a         b   name\n"]
    for r in range(rows):
        a, b = rng.random(), rng.randint(0, 10_000)
        html.append(f"    <tr><th>{r}</th><td>{a:.6f}</td><td>{b}</td><td>row&lt;{r}&gt;</td></tr>\n")
        plain.append(f"{r:<4}{a:.6f}  {b:>6}  row<{r}>\n")
    html += ["  </tbody>\n", "</table>\n", "</div>"]
    return html, plain


#: Sources that make each kind's outputs again (``runnable``): the same kinds, about the same sizes.
_RUNNABLE = {
    "log": "for step in range(1500):\n    print(f'epoch {step:4d} step {step:5d}  loss=0.{step:06d}  acc=0.9000  lr=3.0e-04  \"ok\" [{step % 7}]')",
    "table": (
        "class Table:\n"
        "    def _repr_html_(self):\n"
        "        return '<table>' + ''.join(f'<tr><td>{r}</td><td>{r * 0.5:.6f}</td></tr>' for r in range(40)) + '</table>'\n"
        "    def __repr__(self):\n"
        "        return '\\n'.join(f'{r:<4}{r * 0.5:.6f}' for r in range(40))\n"
        "Table()"
    ),
    "image": (
        "import io, os\nfrom PIL import Image as _Image\nfrom IPython.display import Image, display\n"
        "_buf = io.BytesIO()\n_Image.frombytes('RGB', (200, 200), os.urandom(120000)).save(_buf, format='PNG')\n"
        "print('frame', {index})\ndisplay(Image(data=_buf.getvalue(), format='png'))"
    ),
}


def _cell(index: int, rng: random.Random, pngs: list[str], with_ids: bool, runnable: bool = False) -> dict:
    kind = cell_kind(index)
    cell: dict = {"cell_type": "markdown" if kind == "markdown" else "code", "metadata": {}}
    if with_ids:
        cell["id"] = f"cell-{index:05d}"
    if kind == "markdown":
        cell["source"] = _lines(f"## Section {index}\n\nSome words about what follows, with `code` and a [link](https://example.org).")
        return cell
    cell["execution_count"] = index + 1
    if kind == "log":
        cell["source"] = _lines(f"for step in range(n):\n    train(step, epoch={index})")
        outputs = [{"output_type": "stream", "name": "stdout", "text": _log(rng, index)}]
    elif kind == "table":
        html, plain = _table(rng)
        cell["source"] = ["df.head(40)"]
        outputs = [
            {
                "output_type": "execute_result",
                "execution_count": index + 1,
                "metadata": {},
                "data": {"text/html": html, "text/plain": plain},
            }
        ]
    else:
        cell["source"] = _lines(f"fig, ax = plt.subplots()\nax.imshow(frames[{index}])\nprint('frame', {index})")
        png = pngs[index % len(pngs)]
        outputs = [
            {"output_type": "stream", "name": "stdout", "text": [f"frame {index}\n"]},
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"image/png": png, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
            },
        ]
    cell["outputs"] = outputs
    if runnable:
        cell["source"] = _lines(_RUNNABLE[kind].replace("{index}", str(index)))
    return cell


def _pngs(seed: int, side: int) -> list[bytes]:
    rng = random.Random(seed)
    return [_noise_png(rng, side) for _ in range(4)]


def image_png(index: int, *, seed: int = 18, side: int = 200) -> bytes:
    """The PNG that image cell ``index`` holds (output :data:`IMAGE_OUTPUT`)."""
    return _pngs(seed, side)[index % 4]


def write_notebook(
    path,
    target_bytes: int,
    *,
    seed: int = 18,
    with_ids: bool = False,
    side: int = 200,
    runnable: bool = False,
    nbformat_layout: bool = False,
) -> int:
    """Write a notebook of about ``target_bytes`` to ``path``; returns the number of cells.

    ``with_ids`` writes nbformat 4.5 with cell ids (upstream j-cli needs
    them), else 4.4 without; ``runnable`` and ``nbformat_layout`` as the
    module says.
    """
    rng = random.Random(seed + 1)
    pngs = [base64.b64encode(png).decode("ascii") for png in _pngs(seed, side)]
    minor = 5 if with_ids else 4
    tail = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "language_info": {"name": "python"}}
    written = 0
    count = 0
    if nbformat_layout:  # nbformat: keys sorted, every level indented by one more space
        frame = json.dumps({"cells": [{}], "metadata": tail, "nbformat": 4, "nbformat_minor": minor}, indent=1, sort_keys=True)
        cut = frame.index("\n  {}\n")
        head, end, between = frame[: cut + 3], frame[cut + 5 :] + "\n", ",\n  "
    else:
        head = '{\n "cells": [\n'
        end = f'\n ],\n "metadata": {json.dumps(tail)},\n "nbformat": 4,\n "nbformat_minor": {minor}\n}}\n'
        between = ",\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head)
        while written < target_bytes:
            cell = _cell(count, rng, pngs, with_ids, runnable)
            if nbformat_layout:
                text = json.dumps(cell, indent=1, sort_keys=True, ensure_ascii=False).replace("\n", "\n  ")
            else:
                text = json.dumps(cell, indent=1, ensure_ascii=False)
            fh.write((between if count else "") + text)
            written += len(text) + 2
            count += 1
        fh.write(end)
    return count
