"""Outputs from a real ipykernel, run now, read back through the CLI.

The committed fixtures were made the same way; this test makes sure the
reader keeps up with whatever the installed kernel, IPython and matplotlib
produce today.
"""

from __future__ import annotations

import base64
import io
import json
import re
import sys

import nbformat
import pytest
from helpers import TESTS, run_cli
from PIL import Image

sys.path.insert(0, str(TESTS / "fixtures"))
from kernel_cells import CELLS  # noqa: E402


@pytest.fixture(scope="module")
def live_notebook(tmp_path_factory, starts_jupyter):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    makers = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell, "raw": nbformat.v4.new_raw_cell}
    nb.cells = [makers[kind](source) for kind, source in CELLS]
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    path = tmp_path_factory.mktemp("live") / "live.ipynb"
    nbformat.write(nb, str(path))
    return path, nb


def _read(path, cell, output, *extra):
    result = run_cli("-j", "notebook", "output", str(path), "--cell", str(cell), "--output", str(output), *extra)
    assert result.returncode == 0, result.stderr
    return result.json()


def test_every_live_output_reads(live_notebook):
    path, nb = live_notebook
    for ci, cell in enumerate(nb.cells):
        catalog = run_cli("-j", "notebook", "outputs", str(path), "--cell", str(ci)).json()
        assert catalog["output_count"] == len(cell.get("outputs", []))
        for oi, out in enumerate(cell.get("outputs", [])):
            env = _read(path, ci, oi)
            assert env["output_type"] == out.output_type
            assert "error" not in catalog["outputs"][oi]


def test_live_images_are_real_images(live_notebook):
    path, nb = live_notebook
    for ci, mime, fmt in [(2, "image/png", "PNG"), (3, "image/jpeg", "JPEG"), (9, "image/jpeg", "JPEG")]:
        sel = _read(path, ci, 0, "--mime", mime)["selected"]
        data = base64.b64decode(sel["data"])
        assert data == base64.b64decode(nb.cells[ci].outputs[0].data[mime])
        with Image.open(io.BytesIO(data)) as img:
            assert img.format == fmt and img.size == (sel["width"], sel["height"])


def test_live_rich_text_is_verbatim(live_notebook):
    path, nb = live_notebook
    for ci, mime in [(5, "text/html"), (6, "text/markdown"), (8, "image/svg+xml")]:
        sel = _read(path, ci, 0, "--mime", mime)["selected"]
        assert sel["data"] == nb.cells[ci].outputs[0].data[mime]
    sel = _read(path, 7, 0, "--mime", "application/json")["selected"]
    assert sel["data"] == nb.cells[7].outputs[0].data["application/json"]
    err = _read(path, 11, 0)["error"]
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in nb.cells[11].outputs[0].traceback]  # a read drops the colours
    assert err["ename"] == "ZeroDivisionError" and err["traceback"] == plain
    vendor = _read(path, 10, 0, "--mime", "application/vnd.acme.chart+json")["selected"]
    assert vendor["data"] == {"series": [3, 1, 2]}
    assert json.loads(json.dumps(vendor))  # plain JSON all the way
