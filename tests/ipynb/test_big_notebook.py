"""A cold read of one output of a 400 MB notebook holds the index, never the notebook.

Memory, not time: the child's peak resident set (``ru_maxrss``) is measured
by a fresh parent whose only child is the read, so nothing else this test
run started can count.
"""

from __future__ import annotations

import base64
import json
import sys

import pytest
from helpers import REPO, run_cli_with_peak_rss

sys.path.insert(0, str(REPO / "bench"))
from realistic_notebook import IMAGE_OUTPUT, cell_kind, write_notebook  # noqa: E402

SIZE = 400 * 1024 * 1024
PEAK_MIB = 64


@pytest.mark.slow
def test_a_cold_read_of_one_output_of_a_400_mb_notebook_stays_under_64_mib(tmp_path):
    path = tmp_path / "huge.ipynb"
    cells = write_notebook(path, SIZE)
    try:
        assert path.stat().st_size >= SIZE
        cell = next(i for i in range(cells - 20, 0, -1) if cell_kind(i) == "image")  # near the end: the whole file is walked
        proc, peak_mib = run_cli_with_peak_rss(
            "-j", "notebook", "output", str(path), "--cell", str(cell), "--output", str(IMAGE_OUTPUT), cwd=tmp_path
        )
        envelope = json.loads(proc.stdout)
        png = base64.b64decode(envelope["selected"]["data"])
        assert png.startswith(b"\x89PNG") and envelope["selected"]["width"] == 200
        assert envelope["source"]["cell_index"] == cell
        assert peak_mib < PEAK_MIB, f"peak RSS {peak_mib:.1f} MiB reading one output of a {path.stat().st_size >> 20} MiB notebook"
    finally:
        path.unlink(missing_ok=True)
