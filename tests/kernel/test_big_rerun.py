"""Re-running cells of a 100 MB notebook holds one cell's outputs, never the notebook.

Memory, not time: the ``j-cli exec -f`` child's peak resident set
(``ru_maxrss``) is measured by a fresh parent whose only child it is, so
nothing else this test run started can count. The run prepares from the
offset index (sources and metadata only) and splices each cell back; a
notebook not in nbformat's layout is laid out once, one cell at a time.
"""

from __future__ import annotations

import json
import sys

import nbformat
import pytest
from helpers import REPO, run_cli, run_cli_with_peak_rss

sys.path.insert(0, str(REPO / "bench"))
from realistic_notebook import cell_kind, write_notebook  # noqa: E402

SIZE = 100 * 1024 * 1024
PEAK_MIB = 64


def rerun(path, session, cells: str) -> tuple[list[dict], float]:
    """Run ``cells`` of ``path``; its JSON lines and the client's peak RSS in MiB."""
    proc, peak_mib = run_cli_with_peak_rss("-j", "exec", session, "-f", str(path), "--cell", cells, cwd=path.parent)
    return [json.loads(line) for line in proc.stdout.splitlines()], peak_mib


def biggest_output_mib(path, indexes) -> float:
    """The largest outputs array among ``indexes``, in MiB of its JSON text."""
    nb = json.loads(path.read_bytes())
    return max(len(json.dumps(nb["cells"][i].get("outputs", []))) for i in indexes) / (1 << 20)


@pytest.mark.parametrize("nbformat_layout", [True, False], ids=["nbformat-layout", "other-layout-laid-out-once"])
def test_rerunning_cells_of_a_100_mb_notebook_stays_under_64_mib_plus_one_cells_outputs(
    tmp_path, use_jupyter, kernel_session, nbformat_layout
):
    path = tmp_path / "big.ipynb"
    cells = write_notebook(path, SIZE, with_ids=True, runnable=True, nbformat_layout=nbformat_layout)
    try:
        first = cells - 12  # near the end, so the whole file is indexed and copied around the cells
        chosen = range(first, first + 10)
        assert {cell_kind(i) for i in chosen} >= {"log", "table", "image", "markdown"}
        before = path.read_bytes()
        lines, peak_mib = rerun(path, kernel_session, f"{first}:{first + 10}")
        assert lines[-1]["status"] == "ok" and lines[-1]["cells_run"] == 9
        after = path.read_bytes()
        assert after != before and (after[:1000] == before[:1000]) == nbformat_layout
        assert after == (nbformat.writes(nbformat.reads(after.decode(), as_version=4)) + "\n").encode()  # still nbformat's bytes
        budget = PEAK_MIB + biggest_output_mib(path, chosen)
        assert peak_mib < budget, f"peak RSS {peak_mib:.1f} MiB re-running 9 cells of a {len(after) >> 20} MiB notebook"
    finally:
        path.unlink(missing_ok=True)


def test_a_pair_whose_sync_changes_nothing_never_reads_its_big_notebook_whole(tmp_path, use_jupyter, kernel_session):
    """The first run records the pair's agreement (a sync that writes: the notebook is read whole, once); the next changes nothing."""
    path = tmp_path / "big.ipynb"
    cells = write_notebook(path, SIZE // 2, with_ids=True, runnable=True, nbformat_layout=True)
    try:
        assert run_cli("convert", "ipynb-to-py", str(path), cwd=tmp_path).returncode == 0
        last = next(i for i in range(cells - 1, 0, -1) if cell_kind(i) == "image")
        first_lines, first_peak = rerun(tmp_path / "big.py", kernel_session, str(last))
        assert first_lines[-1]["sync"]["kept"] == cells
        lines, peak_mib = rerun(tmp_path / "big.py", kernel_session, str(last))
        assert lines[-1]["status"] == "ok" and lines[-1]["sync"] == {"kept": cells, "edited": 0, "added": 0, "removed": 0}
        assert lines[0]["cell_index"] == last and lines[0]["text"].startswith(f"frame {last}\n")
        budget = PEAK_MIB + biggest_output_mib(path, [last])
        assert peak_mib < budget < first_peak, f"peak RSS {peak_mib:.1f} MiB (the syncing run: {first_peak:.1f} MiB)"
    finally:
        path.unlink(missing_ok=True)
