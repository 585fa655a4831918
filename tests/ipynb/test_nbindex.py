"""The offset index: what it holds, when it is trusted, and one build for many readers."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import FIXTURES, REPO, run_cli

from jcli_sidecar.base.readfile import open_regular
from jcli_sidecar.ipynb.nbindex import Changed, build_index
from jcli_sidecar.ipynb.notebook import NotebookFile
from jcli_sidecar.read.reader import read_output
from jcli_sidecar.sidecar.cache import FINE_RACY_NS, RACY_NS, NotebookCache, _Entry, racy_window

sys.path.insert(0, str(REPO / "bench"))
from realistic_notebook import IMAGE_OUTPUT, cell_kind, write_notebook  # noqa: E402

V45 = FIXTURES / "kernel_v4.5.ipynb"


def stderr_text(envelope: dict) -> str:
    return envelope["stream"]["data"]


@pytest.fixture
def notebook(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(V45.read_bytes())
    return str(path)


def rewrite_in_place(path: str, old: bytes, new: bytes) -> None:
    """Same size, same inode: only the bytes (and the timestamps) change."""
    assert len(old) == len(new)
    with open(path, "r+b") as fh:
        data = fh.read()
        assert old in data
        fh.seek(0)
        fh.write(data.replace(old, new))


def test_the_index_of_a_realistic_notebook_is_a_tiny_fraction_of_it(tmp_path):
    path = tmp_path / "real.ipynb"
    cells = write_notebook(path, 8 << 20)
    nb = NotebookFile.load(str(path))
    assert nb.index is not None and nb.cell_count == cells
    assert nb.approx_bytes < path.stat().st_size / 100
    full = json.loads(path.read_bytes())
    image = next(i for i in range(cells) if cell_kind(i) == "image")
    assert nb.output(image, IMAGE_OUTPUT) == full["cells"][image]["outputs"][IMAGE_OUTPUT]
    log = next(i for i in range(1, cells) if cell_kind(i) == "log")
    assert nb.outputs(log) == full["cells"][log]["outputs"]


def test_a_file_that_changes_while_it_is_indexed_gives_no_index(notebook):
    fd, info = open_regular(notebook)  # the key the pass starts from
    try:
        rewrite_in_place(notebook, b'"warned\\n"', b'"WARNED\\n"')  # ... and a write during the pass
        with pytest.raises(Changed):
            build_index(fd, info)
    finally:
        os.close(fd)
    assert stderr_text(read_output(notebook, 1, 1)) == "WARNED\n"  # a fresh load starts from the new key


def test_an_index_never_reads_a_file_that_changed_after_it_was_built(notebook):
    stale = NotebookFile.load(notebook)
    rewrite_in_place(notebook, b'"warned\\n"', b'"WARNED\\n"')
    with pytest.raises(Changed):
        stale.outputs(1)


def test_a_read_whose_notebook_changes_under_it_starts_again(notebook):
    stale = NotebookFile.load(notebook)  # indexed before the change below
    handed = []

    def load(path):
        handed.append(path)
        return stale if len(handed) == 1 else NotebookFile.load(path)

    rewrite_in_place(notebook, b'"warned\\n"', b'"WARNED\\n"')
    assert stderr_text(read_output(notebook, 1, 1, load=load)) == "WARNED\n"
    assert len(handed) == 2


def test_fine_timestamps_get_a_window_of_a_few_ticks_and_whole_seconds_the_whole_second():
    fine = (1, 2, 3, 1_700_000_000_123_456_789, 1_700_000_000_123_456_789)
    whole = (1, 2, 3, 1_700_000_000_000_000_000, 1_700_000_000_000_000_000)
    assert racy_window(fine, RACY_NS) == FINE_RACY_NS
    assert racy_window(whole, RACY_NS) == RACY_NS
    assert racy_window(fine, 0) == 0  # JCLI_SIDECAR_RACY_MS=0 still trusts at once


def test_a_just_written_notebook_is_trusted_once_its_timestamps_are_a_few_ticks_old(notebook):
    nb = NotebookFile.load(notebook)
    stamp = max(nb.key[3], nb.key[4])
    if stamp % 1_000_000_000 == 0:
        pytest.skip("this file system keeps whole-second timestamps")
    # the load that starts within the window is not trusted; the next one, past it, is
    assert not _Entry(nb, stamp + FINE_RACY_NS // 2, RACY_NS).trusted
    assert _Entry(nb, stamp + FINE_RACY_NS + 1, RACY_NS).trusted


def test_a_same_size_rewrite_in_the_same_timestamp_tick_is_never_served_stale(notebook):
    """Same-size rewrites read back at once are never served stale.

    Where a rewrite keeps (dev, ino, size, mtime, ctime) (whole-second or
    coarse timestamps) only the racy rule can see it; where every rewrite gets
    new nanosecond stamps (this kernel, usually) the key does. Either way each
    read must give the bytes just written.
    """
    cache = NotebookCache(64 << 20)  # the default window
    for attempt in range(50):
        word = f"{attempt:06d}".encode()
        rewrite_in_place(notebook, b'"warned\\n"' if attempt == 0 else f'"{attempt - 1:06d}\\n"'.encode(), b'"' + word + b'\\n"')
        assert stderr_text(read_output(notebook, 1, 1, load=cache.load)) == f"{attempt:06d}\n"
        rewrite_in_place(notebook, b'"' + word + b'\\n"', f'"{attempt + 1:06d}\\n"'.encode())
        assert stderr_text(read_output(notebook, 1, 1, load=cache.load)) == f"{attempt + 1:06d}\n"
        rewrite_in_place(notebook, f'"{attempt + 1:06d}\\n"'.encode(), f'"{attempt:06d}\\n"'.encode())


def test_concurrent_readers_of_a_changed_notebook_share_one_index_build(fixture_dir, sidecar_on, monkeypatch):
    ws = fixture_dir
    monkeypatch.setenv("JCLI_SIDECAR_RACY_MS", "0")
    monkeypatch.setenv("JCLI_SIDECAR_TEST_FLIGHT_SIZE", "4")  # the build waits until 4 requests share it
    assert run_cli("-j", "sidecar", "start", cwd=ws).returncode == 0
    read = ["-j", "notebook", "output", "kernel_v4.5.ipynb", "--cell", "1", "--output", "1"]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run_cli(*read, cwd=ws), range(4)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert len({r.stdout for r in results}) == 1
    cache = run_cli("-j", "sidecar", "status", cwd=ws).json()["cache"]
    assert cache["builds"] == 1 and cache["shared_builds"] == 3, cache
