"""A pair's one owner (``jcli_sidecar.pair.pairing``): its two paths, whether a path or a text is one, its notebook's
write lock, on real files and real locks."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from jcli_sidecar.base.errors import OutputSaveFailed, RuntimeDirUnsafe
from jcli_sidecar.base.locks import notebook_lock_path
from jcli_sidecar.base.runtime import runtime_dir
from jcli_sidecar.pair.pairing import Pair, is_percent, is_percent_file, notebook_write_lock, percent_cells

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
