"""The sidecar's notebook cache, on real files: never stale, always bounded."""

from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest
from helpers import FIXTURES

from jcli_sidecar.base.errors import FileNotFound
from jcli_sidecar.ipynb.notebook import NotebookFile
from jcli_sidecar.read.reader import read_output
from jcli_sidecar.sidecar.cache import CacheWatcher, NotebookCache

V45 = FIXTURES / "kernel_v4.5.ipynb"
OLD = 1_600_000_000  # a timestamp far from "just written"


def settle(path) -> None:
    """Give ``path`` an old mtime (its ctime stays "now": no user can set that back)."""
    os.utime(path, (OLD, OLD))


def trusting_cache(budget: int = 64 << 20) -> NotebookCache:
    """A cache that trusts a fresh entry at once (no racy window), so a test sees reuse without sleeping.

    Only the key (device, inode, size, mtime, ctime) then stands between a
    change and a stale read.
    """
    return NotebookCache(budget, racy_ns=0)


@pytest.fixture
def notebook(tmp_path):
    path = tmp_path / "nb.ipynb"
    shutil.copy(V45, path)
    settle(path)
    return str(os.path.realpath(path))


def stream_text(cache, path) -> str:
    return read_output(path, 1, 1, load=cache.load)["stream"]["data"]


def rewrite_stderr(path, text: str, *, atomic: bool, same_mtime: bool = False) -> None:
    with open(path, encoding="utf-8") as fh:
        nb = json.load(fh)
    nb["cells"][1]["outputs"][1]["text"] = [text]
    data = json.dumps(nb, indent=1)
    if atomic:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)
    else:
        with open(path, "r+", encoding="utf-8") as fh:
            fh.write(data)
            fh.truncate()
    if same_mtime:
        settle(path)


def test_a_trusted_entry_is_reused(notebook):
    cache = trusting_cache()
    first = cache.load(notebook)
    assert cache.load(notebook) is first
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1


def wide_racy_window(monkeypatch) -> NotebookCache:
    """A cache whose racy window (an hour, fine timestamps too) no load on the machine can outlast between two loads."""
    from jcli_sidecar.sidecar import cache

    hour = 3600 * 1_000_000_000
    monkeypatch.setattr(cache, "FINE_RACY_NS", hour)
    return NotebookCache(64 << 20, racy_ns=hour)


def test_a_just_written_file_is_not_trusted_until_its_mtime_is_safely_old(notebook, monkeypatch):
    cache = wide_racy_window(monkeypatch)
    os.utime(notebook)  # "now": inside the racy window
    cache.load(notebook)
    cache.load(notebook)
    assert cache.stats()["hits"] == 0 and cache.stats()["misses"] == 2


def test_an_old_mtime_with_a_fresh_ctime_is_not_trusted_either(notebook, monkeypatch):
    cache = wide_racy_window(monkeypatch)
    assert os.stat(notebook).st_mtime == OLD  # settled: an old mtime ...
    cache.load(notebook)  # ... but the utime itself set the ctime to "now"
    cache.load(notebook)
    assert cache.stats()["hits"] == 0 and cache.stats()["misses"] == 2


@pytest.mark.parametrize("atomic", [False, True], ids=["in-place", "rename"])
def test_a_rewritten_notebook_is_never_served_stale(notebook, atomic):
    cache = trusting_cache()
    assert stream_text(cache, notebook) == "warned\n"
    rewrite_stderr(notebook, "CHANGED", atomic=atomic)
    assert stream_text(cache, notebook) == "CHANGED"


def test_an_in_place_rewrite_with_the_same_size_and_mtime_is_caught_by_the_racy_rule(notebook, monkeypatch):
    cache = wide_racy_window(monkeypatch)
    os.utime(notebook)  # read while the timestamp is fresh ...
    assert stream_text(cache, notebook) == "warned\n"
    before = os.stat(notebook)
    with open(notebook, "r+b") as fh:  # ... same bytes but one word, same size
        data = fh.read().replace(b'"warned\\n"', b'"WARNED\\n"')
        fh.seek(0)
        fh.write(data)
    os.utime(notebook, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the very same mtime
    assert os.stat(notebook).st_size == before.st_size
    assert stream_text(cache, notebook) == "WARNED\n"


def test_a_deleted_notebook_is_gone_from_the_cache(notebook):
    cache = NotebookCache(64 << 20)
    cache.load(notebook)
    os.unlink(notebook)
    with pytest.raises(FileNotFound):
        cache.load(notebook)
    assert cache.stats()["entries"] == 0


def test_the_lru_stays_within_its_byte_budget(tmp_path):
    size = NotebookFile.load(str(V45)).approx_bytes  # an entry is an index: far smaller than the file
    assert size < os.path.getsize(V45)
    cache = trusting_cache(int(size * 2.5))
    paths = []
    for i in range(4):
        path = tmp_path / f"nb{i}.ipynb"
        shutil.copy(V45, path)
        settle(path)
        paths.append(os.path.realpath(path))
        cache.load(paths[-1])
    stats = cache.stats()
    assert stats["entries"] == 2 and stats["bytes"] <= stats["budget_bytes"]
    assert cache.directories() == {str(tmp_path.resolve())}
    cache.load(paths[3])
    assert cache.stats()["hits"] == 1  # the newest survived
    cache.load(paths[0])
    assert cache.stats()["hits"] == 1  # the oldest did not


def test_a_notebook_larger_than_the_budget_is_served_but_not_kept(notebook):
    cache = NotebookCache(1000)
    assert cache.load(notebook).cell_count == 15
    assert cache.stats()["entries"] == 0


def test_the_watcher_evicts_a_changed_notebook_early(notebook):
    async def scenario():
        cache = NotebookCache(64 << 20)
        watcher = CacheWatcher(cache)
        cache.on_insert = watcher.notice
        evicted = asyncio.Event()
        real_evict = cache.evict

        def observed_evict(path):
            hit = real_evict(path)
            if hit and path == notebook:
                evicted.set()
            return hit

        cache.evict = observed_evict
        task = asyncio.create_task(watcher.run())
        try:
            await asyncio.sleep(0)  # let the watcher start
            await asyncio.to_thread(cache.load, notebook)
            assert cache.stats()["entries"] == 1
            # The watcher restarts on the new directory; change the file until it reports.
            for _ in range(200):
                await asyncio.to_thread(rewrite_stderr, notebook, "x", atomic=True)
                try:
                    await asyncio.wait_for(evicted.wait(), 0.5)
                    break
                except TimeoutError:
                    await asyncio.to_thread(cache.load, notebook)
            assert evicted.is_set()
            assert cache.stats()["entries"] == 0
        finally:
            task.cancel()

    asyncio.run(scenario())


def test_memoised_reads_equal_fresh_reads_and_count_against_the_budget(tmp_path, monkeypatch):
    from helpers import load_cases

    from jcli_sidecar.base.errors import JcliError
    from jcli_sidecar.read.requests import handle_read

    work = tmp_path / "protocol"
    shutil.copytree(FIXTURES, work)
    for path in work.iterdir():
        settle(path)
    monkeypatch.chdir(work)
    cache = trusting_cache()

    def answer(request, **kwargs):
        try:
            return handle_read(request, binary=True, **kwargs)
        except JcliError as exc:
            return exc.code

    for case in load_cases():
        fresh = answer(case["request"])
        for _ in range(3):  # first a miss, then memoised cells and images
            assert answer(case["request"], load=cache.load) == fresh, case["name"]
    stats = cache.stats()
    memo = sum(entry.notebook.memo_bytes for entry in cache._entries.values())
    assert memo > 0 and stats["bytes"] >= memo
    assert stats["bytes"] == sum(entry.notebook.approx_bytes for entry in cache._entries.values())


def test_one_notebook_s_decoded_outputs_stay_within_the_budget_and_reads_stay_right(tmp_path, monkeypatch):
    """A single notebook is never evicted for its own memo: its oldest decoded outputs are, and reads give the same bytes."""
    import base64
    import json

    from jcli_sidecar.read.requests import handle_read

    images = [b"\x89PNG\r\n\x1a\n" + os.urandom(200 * 1024) for _ in range(12)]
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "execution_count": i,
            "metadata": {},
            "source": "",
            "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": base64.b64encode(png).decode()}}],
        }
        for i, png in enumerate(images)
    ]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    settle(tmp_path / "nb.ipynb")
    monkeypatch.chdir(tmp_path)
    budget = 1 << 20  # a few outputs' worth: all twelve decoded would be about 8 MiB
    cache = trusting_cache(budget)
    for _ in range(2):
        for i, png in enumerate(images):
            doc = handle_read({"file_path": "nb.ipynb", "cell_index": i, "output_index": 0}, binary=True, load=cache.load)
            assert doc["selected"]["data"] == png
            cache.settle()  # what the sidecar does when nothing is in flight
            assert cache.stats()["bytes"] <= budget
    assert cache.stats()["entries"] == 1  # the notebook itself (its index) stays
    notebook = next(iter(cache._entries.values())).notebook
    assert notebook.memo and notebook.approx_bytes == cache.stats()["bytes"]
