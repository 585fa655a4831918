"""A pair's one owner (``jcli_sidecar.pair.pairing``): its two paths, whether a path or a text is one, its notebook's
write lock and its one sync, on real files and real locks."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from jcli_sidecar.base.errors import OutputSaveFailed, PairConflict, RuntimeDirUnsafe
from jcli_sidecar.base.locks import notebook_lock_path
from jcli_sidecar.base.runtime import runtime_dir
from jcli_sidecar.ipynb.nbwrite import dumps_notebook
from jcli_sidecar.pair.pairing import Pair, is_percent, is_percent_file, notebook_write_lock, parse_percent, percent_cells, sync_cells

PERCENT = "# %%\nx = 1\n\n# %% [markdown]\n# Hi\n"


def test_is_percent_is_one_rule_for_a_text_and_for_a_file(tmp_path):
    script, plain = tmp_path / "a.py", tmp_path / "plain.py"
    script.write_text(PERCENT)
    plain.write_text("# In[1]:\nx = 1  # %% not at the start\n")
    assert is_percent(PERCENT) and is_percent_file(str(script))
    assert not is_percent(plain.read_text()) and not is_percent_file(str(plain))
    assert [c.cell_type for c in percent_cells(PERCENT)] == ["code", "markdown"]
    assert percent_cells(plain.read_text()) is None


def test_a_file_that_cannot_be_read_cheaply_is_no_percent_file(tmp_path):
    os.mkfifo(tmp_path / "fifo.py")  # never opened for a blocking read
    big = tmp_path / "big.py"
    big.write_text(PERCENT + "y = 2\n" * 1000)
    assert not is_percent_file(str(tmp_path / "fifo.py"))
    assert not is_percent_file(str(tmp_path / "missing.py"))
    assert not is_percent_file(str(tmp_path))  # a directory
    assert is_percent_file(str(big)) and not is_percent_file(str(big), limit=100)


def test_a_pair_is_named_by_either_of_its_paths():
    assert Pair.of("d/x.py") == Pair.of("d/x.ipynb") == Pair("d/x.py", "d/x.ipynb") == Pair.of_py("d/x.py")
    assert Pair.of("d/x.txt") is None
    assert Pair.of("d/x.ipynb", posix=True).notebook == "d/x.ipynb"
    py, notebook = Pair.of("x.py")
    assert (py, notebook) == ("x.py", "x.ipynb")


def test_a_pair_on_disk_needs_a_percent_py_and_its_notebook_beside_the_real_py(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.py").write_text(PERCENT)
    link = tmp_path / "a.py"
    link.symlink_to(real / "a.py")
    assert Pair.on_disk(str(link)) is None  # no notebook yet
    (real / "a.ipynb").write_text("{}")
    found = Pair.on_disk(str(link))
    assert found == Pair(str(link), str(tmp_path / "a.ipynb"))  # spelt as asked, found beside the real .py
    assert Pair.on_disk(str(real / "a.ipynb")) == Pair(str(real / "a.py"), str(real / "a.ipynb"))
    assert Pair.on_disk(str(real / "a.py"), limit=4) is None  # a peek too short to tell
    (real / "a.py").write_text("x = 1\n")
    assert Pair.on_disk(str(real / "a.ipynb")) is None  # a plain script beside a notebook is no pair


def _taker(path: str) -> tuple[threading.Thread, threading.Event]:
    """A second taker of ``path``'s write lock, on a thread: the event is set once it holds the lock."""
    got = threading.Event()

    def take() -> None:
        with notebook_write_lock(path):
            got.set()

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread, got


def test_a_second_taker_of_the_write_lock_waits_until_it_is_released(tmp_path):
    notebook = tmp_path / "a.ipynb"
    link = tmp_path / "link.ipynb"
    link.symlink_to(notebook)  # every name of the file takes the one lock
    with notebook_write_lock(str(notebook)):
        thread, got = _taker(str(link))
        assert not got.wait(0.3)
    assert got.wait(10)
    thread.join(10)
    assert os.path.isfile(notebook_lock_path(runtime_dir(), str(notebook)))  # in the runtime dir, named by the real path
    assert sorted(os.listdir(tmp_path)) == ["link.ipynb"]  # nothing beside the notebook, which need not exist


def test_a_write_lock_that_cannot_be_taken_is_a_coded_error():
    runtime = Path(runtime_dir())
    runtime.mkdir(mode=0o700, exist_ok=True)
    (runtime / "locks").write_text("squatted")
    with pytest.raises(OutputSaveFailed, match="cannot take the write-back lock of") as plain, notebook_write_lock("a.ipynb"):
        pass
    assert "executed" not in plain.value.details
    with pytest.raises(OutputSaveFailed) as run, notebook_write_lock("a.ipynb", executed=False):
        pass
    assert run.value.details["executed"] is False
    (runtime / "locks").unlink()
    runtime.chmod(0o755)  # a runtime dir others may enter is refused before any lock
    try:
        with pytest.raises(RuntimeDirUnsafe) as unsafe, notebook_write_lock("a.ipynb", executed=True):
            pass
    finally:
        runtime.chmod(0o700)
    assert unsafe.value.details["executed"] is True


def _pair(tmp_path: Path, text: str = PERCENT) -> Pair:
    (tmp_path / "a.py").write_text(text)
    return Pair.of_py(str(tmp_path / "a.py"))


def _cells(pair: Pair) -> list[dict]:
    return json.loads(Path(pair.notebook).read_text())["cells"]


def _give_outputs(pair: Pair) -> None:
    """The notebook's first cell gets an output, as a run would leave it."""
    nb = json.loads(Path(pair.notebook).read_text())
    nb["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    nb["cells"][0]["execution_count"] = 1
    Path(pair.notebook).write_text(json.dumps(nb))


def test_a_sync_writes_the_notebook_once_and_then_only_when_it_changes(tmp_path):
    pair = _pair(tmp_path)
    cells = parse_percent(PERCENT)
    first = pair.sync(cells, kernel_name="python3")
    assert first.written and first.report == {"kept": 0, "edited": 0, "added": 2, "removed": 0} and first.py_to_nb == [0, 1]
    nb = json.loads(Path(pair.notebook).read_text())
    assert (
        Path(pair.notebook).read_text() == dumps_notebook(first.notebook)
        and nb["metadata"]["kernelspec"]["name"] == "python3"
        and "pair" in nb["metadata"]["jcli"]
    )
    before = os.stat(pair.notebook).st_mtime_ns
    again = pair.sync(cells)
    assert not again.written and again.report["kept"] == 2 and os.stat(pair.notebook).st_mtime_ns == before
    _give_outputs(pair)
    edited = parse_percent("# %%\nx = 2\n\n# %% [markdown]\n# Hi\n")
    done = pair.sync(edited)
    assert done.written and done.report["edited"] == 1 and _cells(pair)[0]["outputs"] == []  # stale outputs never kept


def test_a_sync_that_changes_nothing_may_read_the_cells_without_their_outputs(tmp_path):
    pair = _pair(tmp_path)
    cells = parse_percent(PERCENT)
    pair.sync(cells)
    _give_outputs(pair)
    heads = pair.sync(cells, heads_only=True)
    assert not heads.written and heads.notebook["cells"][0]["outputs"] == []  # read through the offset index
    whole = pair.sync(cells)
    assert not whole.written and whole.notebook["cells"][0]["outputs"][0]["text"] == "1\n"


def test_a_sync_the_notebook_never_agreed_to_is_refused_unless_the_py_wins(tmp_path):
    pair = _pair(tmp_path)
    pair.sync(parse_percent(PERCENT))
    nb = json.loads(Path(pair.notebook).read_text())
    nb["cells"][0]["source"] = "x = 'edited in JupyterLab'"
    Path(pair.notebook).write_text(json.dumps(nb))
    on_disk = Path(pair.notebook).read_bytes()
    edited = parse_percent("# %%\nx = 3\n\n# %% [markdown]\n# Hi\n")
    with pytest.raises(PairConflict) as refused:
        pair.sync(edited)
    assert refused.value.details["reason"] == "notebook_edited" and Path(pair.notebook).read_bytes() == on_disk
    assert pair.sync(edited, check=False).written and _cells(pair)[0]["source"] == ["x = 3"]


def test_a_sync_reads_and_adjusts_as_its_caller_says_before_the_agreement_is_recorded(tmp_path):
    pair = _pair(tmp_path)
    seen = []

    def read(path: str) -> None:
        seen.append(path)
        return None  # as if there were no notebook yet

    def adjust(plan, nb) -> None:
        seen.append(len(plan.match))
        nb["metadata"]["note"] = "adjusted"

    done = pair.sync(parse_percent(PERCENT), read=read, adjust=adjust)
    assert seen == [pair.notebook, 2] and done.written
    assert json.loads(Path(pair.notebook).read_text())["metadata"]["note"] == "adjusted"


def test_a_sync_waits_for_the_write_lock(tmp_path):
    pair = _pair(tmp_path)
    finished = threading.Event()

    def sync() -> None:
        pair.sync(parse_percent(PERCENT))
        finished.set()

    with pair.write_lock() as held:
        assert held.pair == pair
        thread = threading.Thread(target=sync, daemon=True)
        thread.start()
        assert not finished.wait(0.3) and not os.path.exists(pair.notebook)  # nothing written while another holds it
    assert finished.wait(10)
    thread.join(10)
    assert len(_cells(pair)) == 2


def test_a_held_lock_syncs_what_its_holder_read_and_writes_with_coded_errors(tmp_path):
    pair = _pair(tmp_path)
    cells = parse_percent(PERCENT)
    with pair.write_lock(executed=False) as held:
        assert held.read() is None
        done = held.sync(cells, None)
        assert done.written and Path(pair.notebook).read_text() == dumps_notebook(done.notebook)
        assert not held.sync(cells, held.read()).written
        loop: dict = {}
        loop["self"] = loop
        broken = dict(done.notebook, metadata=loop)  # nothing JSON can hold
        with pytest.raises(OutputSaveFailed, match=r"\(ValueError\); nothing was run") as failed:
            held.write(broken)
    assert failed.value.details["executed"] is False
    with pair.write_lock() as held, pytest.raises(OutputSaveFailed) as plain:
        held.write(broken)
    assert "nothing was run" not in plain.value.message and "executed" not in plain.value.details
    assert Path(pair.notebook).read_text() == dumps_notebook(done.notebook)  # a failed write leaves the file as it was


def test_the_sync_in_memory_reads_and_writes_nothing(tmp_path):
    pair = _pair(tmp_path)
    pair.sync(parse_percent(PERCENT))
    on_disk = Path(pair.notebook).read_text()
    current = json.loads(on_disk)
    plans = []
    done = sync_cells(parse_percent("# %%\nx = 1\n"), current, check=plans.append)
    assert plans == [done.plan] and done.report["removed"] == 1 and not done.written
    assert current == json.loads(on_disk) and Path(pair.notebook).read_text() == on_disk


def test_a_sync_refuses_markers_that_repeat_an_id_before_it_locks_reads_or_writes(tmp_path, monkeypatch):
    from jcli_sidecar.base.errors import CellIdDuplicate

    py, nb = tmp_path / "c.py", tmp_path / "c.ipynb"
    py.write_text('# %% id="k"\nx = 1\n\n# %% id="k"\nx = 2\n')
    cells = parse_percent(py.read_text())
    with pytest.raises(CellIdDuplicate) as refused:
        Pair(str(py), str(nb)).sync(cells)
    assert refused.value.details["duplicates"] == [{"id": "k", "cells": [0, 1], "lines": [1, 4]}]
    assert not nb.exists()
    with pytest.raises(CellIdDuplicate):
        sync_cells(cells, None)  # the sync in memory (the guards, the pre-commit's synced notebook) too


def test_a_sync_never_maps_by_an_id_several_notebook_cells_carry_and_leaves_one_id_per_cell(tmp_path):
    from jcli_sidecar.ipynb.nbwrite import new_cell, new_notebook

    old = new_notebook([new_cell("code", "a = 1", "dup"), new_cell("code", "b = 2", "dup"), new_cell("code", "c = 3", "ok")])
    old["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "a\n"}]
    cells = parse_percent('# %%\nb = 2\n\n# %% id="dup"\na = 1\n\n# %% id="ok"\nc = 3\n')
    done = sync_cells(cells, old)
    assert done.plan.match == [1, 0, 2]  # by content: "dup" names two cells, so it names none
    assert [c["id"] for c in done.notebook["cells"]][1:] == ["dup", "ok"] and done.notebook["cells"][0]["id"] != "dup"
    assert done.notebook["cells"][1]["outputs"] == old["cells"][0]["outputs"]  # a = 1 kept its output
    assert [(r["cell_index"], r["id"]) for r in done.plan.renewed] == [(0, "dup")] and done.report["ids_renewed"] == 1
