"""Running a ``.py`` never silently rewrites its notebook, and write-back keeps links.

Every refused sync must leave the notebook byte-identical and run no code:
each ``.py`` cell here would create ``ran.txt`` if it ran.
"""

from __future__ import annotations

import json
import os

import nbformat
import pytest
from helpers import run_cli

from jcli_sidecar.ipynb.nbwrite import dumps_notebook


def ran(ws):
    """A cell that leaves ``ran.txt`` in ``ws`` (the kernel's own cwd is the server's)."""
    return f"open({str(ws / 'ran.txt')!r}, 'a').write('x')\n"


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def exec_file(session, ws, name, *extra):
    result = run_cli("-j", "exec", session, "-f", name, *extra, cwd=ws)
    return result, [json.loads(line) for line in result.stdout.splitlines()]


def notebook(cells, **meta):
    nb = nbformat.v4.new_notebook(metadata=meta)
    nb.cells = cells
    return nb


def rich_notebook():
    """Three cells: code with an output, a markdown note, more code with an output."""
    first = nbformat.v4.new_code_cell("x = 1\nx", id="c0", execution_count=1)
    first.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)]
    note = nbformat.v4.new_markdown_cell("# Findings\nThe numbers are right.", id="m1")
    last = nbformat.v4.new_code_cell("print('hi')", id="c2", execution_count=2)
    last.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    return notebook([first, note, last])


def write_nb(path, nb):
    path.write_text(dumps_notebook(nb))


def set_mtime(path, ns):
    os.utime(path, ns=(ns, ns))


def test_an_old_script_never_wipes_a_newer_notebook(ws, kernel_session):
    nb_path, py = ws / "analysis.ipynb", ws / "analysis.py"
    write_nb(nb_path, rich_notebook())
    py.write_text("# %%\n" + ran(ws))
    set_mtime(py, 1_000_000_000 * 10**9)  # years older than the notebook
    before = nb_path.read_bytes()
    result, _ = exec_file(kernel_session, ws, "analysis.py")
    err = result.error()
    assert result.returncode == 1 and err["code"] == "PAIR_CONFLICT", result.stderr
    assert err["reason"] == "notebook_newer" and err["cells"] == [0, 1, 2]
    assert "--py-wins" in err["message"] and "cells 0, 1, 2" in err["message"]
    assert nb_path.read_bytes() == before and not (ws / "ran.txt").exists()


def test_a_newer_script_still_may_not_drop_cells_or_outputs_it_never_knew(ws, kernel_session):
    nb_path, py = ws / "model.ipynb", ws / "model.py"
    write_nb(nb_path, rich_notebook())
    set_mtime(nb_path, 1_000_000_000 * 10**9)
    cases = {
        "a cell removed": "# %%\nx = 1\nx\n\n# %%\nprint('hi')\n" + ran(ws),
        "an output dropped by an edit": "# %%\nx = 2\nx\n\n# %% [markdown]\n# # Findings\n# The numbers are right.\n\n# %%\nprint('hi')\n",
    }
    before = nb_path.read_bytes()
    for what, text in cases.items():
        py.write_text(text)
        result, _ = exec_file(kernel_session, ws, "model.py")
        err = result.error()
        assert err["code"] == "PAIR_CONFLICT" and err["reason"] == "would_lose_cells", (what, result.stderr)
        assert nb_path.read_bytes() == before and not (ws / "ran.txt").exists(), what


def test_a_newer_script_that_only_adds_cells_syncs(ws, kernel_session):
    nb_path, py = ws / "grow.ipynb", ws / "grow.py"
    write_nb(nb_path, rich_notebook())
    set_mtime(nb_path, 1_000_000_000 * 10**9)
    py.write_text("# %%\nx = 1\nx\n\n# %% [markdown]\n# # Findings\n# The numbers are right.\n\n# %%\nprint('hi')\n\n# %%\n" + ran(ws))
    result, lines = exec_file(kernel_session, ws, "grow.py", "--cell", "3")
    assert result.returncode == 0, result.stderr
    assert lines[-1]["sync"] == {"kept": 3, "edited": 0, "added": 1, "removed": 0}
    cells = nbformat.read(str(nb_path), as_version=4).cells
    assert cells[0].outputs[0]["data"]["text/plain"] == "1" and cells[2].outputs[0]["text"] == "hi\n"
    assert (ws / "ran.txt").exists()


def test_py_wins_lets_the_script_overwrite(ws, kernel_session):
    nb_path, py = ws / "analysis.ipynb", ws / "analysis.py"
    write_nb(nb_path, rich_notebook())
    py.write_text("# %%\n" + ran(ws))
    set_mtime(py, 1_000_000_000 * 10**9)
    result, lines = exec_file(kernel_session, ws, "analysis.py", "--py-wins")
    assert result.returncode == 0, result.stderr
    assert lines[-1]["sync"] == {"kept": 0, "edited": 0, "added": 1, "removed": 3}
    assert len(nbformat.read(str(nb_path), as_version=4).cells) == 1 and (ws / "ran.txt").exists()


def test_after_a_sync_the_script_may_remove_cells_it_knew(ws, kernel_session):
    py = ws / "flow.py"
    py.write_text("# %%\na = 1\n\n# %%\nb = 2\n\n# %% [markdown]\n# notes\n")
    assert exec_file(kernel_session, ws, "flow.py")[0].returncode == 0
    meta = nbformat.read(str(ws / "flow.ipynb"), as_version=4).metadata
    assert isinstance(meta["jcli"]["pair"]["sources"], str)
    py.write_text("# %%\na = 1\n\n# %%\n" + ran(ws))
    result, lines = exec_file(kernel_session, ws, "flow.py")
    assert result.returncode == 0, result.stderr
    assert lines[-1]["sync"]["removed"] == 2 and (ws / "ran.txt").exists()


@pytest.mark.parametrize("script_changed_too", [False, True])
def test_a_notebook_edited_since_the_last_sync_is_never_overwritten(ws, kernel_session, script_changed_too):
    nb_path, py = ws / "lab.ipynb", ws / "lab.py"
    py.write_text("# %%\na = 1\n\n# %%\nb = 2\n")
    assert exec_file(kernel_session, ws, "lab.py")[0].returncode == 0
    nb = nbformat.read(str(nb_path), as_version=4)
    nb.cells[1].source = "b = 3  # edited in JupyterLab"
    nbformat.write(nb, str(nb_path))
    if script_changed_too:
        py.write_text("# %%\na = 1\n\n# %%\nb = 2\n\n# %%\n" + ran(ws))
    before = nb_path.read_bytes()
    result, _ = exec_file(kernel_session, ws, "lab.py")
    err = result.error()
    assert err["code"] == "PAIR_CONFLICT" and err["reason"] == "notebook_edited" and err["cells"] == [1], result.stderr
    assert nb_path.read_bytes() == before and not (ws / "ran.txt").exists()


def test_write_back_goes_through_a_symlinked_notebook(ws, kernel_session):
    real_dir = ws / "store"
    real_dir.mkdir()
    real = real_dir / "real.ipynb"
    write_nb(real, notebook([nbformat.v4.new_code_cell("print('through the link')", id="a")]))
    (ws / "link.ipynb").symlink_to(real)
    result, _ = exec_file(kernel_session, ws, "link.ipynb")
    assert result.returncode == 0, result.stderr
    assert (ws / "link.ipynb").is_symlink() and os.readlink(ws / "link.ipynb") == str(real)
    assert nbformat.read(str(real), as_version=4).cells[0].outputs[0]["text"] == "through the link\n"
    assert sorted(os.listdir(real_dir)) == ["real.ipynb"]  # no temp file left beside it


def test_write_back_keeps_hard_links_one_file(ws, kernel_session):
    first = ws / "a.ipynb"
    write_nb(first, notebook([nbformat.v4.new_code_cell("print('both names')", id="a")]))
    second = ws / "b.ipynb"
    os.link(first, second)
    os.chmod(first, 0o640)
    result, _ = exec_file(kernel_session, ws, "a.ipynb")
    assert result.returncode == 0, result.stderr
    assert os.stat(first).st_ino == os.stat(second).st_ino and os.stat(first).st_nlink == 2
    assert oct(os.stat(first).st_mode & 0o777) == oct(0o640)
    for name in (first, second):
        assert nbformat.read(str(name), as_version=4).cells[0].outputs[0]["text"] == "both names\n"
    assert sorted(p.name for p in ws.iterdir()) == ["a.ipynb", "b.ipynb"]


def test_a_symlinked_script_pairs_with_the_notebook_beside_its_target(ws, kernel_session):
    real_dir = ws / "src"
    real_dir.mkdir()
    (real_dir / "job.py").write_text("# %%\nprint('paired')\n")
    (ws / "job.py").symlink_to(real_dir / "job.py")
    result, _ = exec_file(kernel_session, ws, "job.py")
    assert result.returncode == 0, result.stderr
    assert (real_dir / "job.ipynb").exists() and not (ws / "job.ipynb").exists()
    read = run_cli("-j", "notebook", "output", "job.py", "--cell", "0", "--output", "0", cwd=ws)
    assert read.returncode == 0 and read.json()["stream"]["data"] == "paired\n", read.stderr


def test_a_number_no_float_holds_is_written_back_as_it_was(ws, kernel_session):
    path = ws / "big.ipynb"
    path.write_text(
        '{"cells": [{"cell_type": "code", "execution_count": null, "id": "a", "metadata": {"scale": 1e400, "tiny": -2.5e-400},'
        ' "outputs": [], "source": "print(1)"}], "metadata": {"huge": -1E+999}, "nbformat": 4, "nbformat_minor": 5}\n'
    )
    result, _ = exec_file(kernel_session, ws, "big.ipynb")
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    assert "Infinity" not in text and '"scale": 1e400' in text and '"huge": -1E+999' in text and '"tiny": -2.5e-400' in text
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} written"))  # strict JSON
    assert nbformat.read(str(path), as_version=4).cells[0].outputs[0]["text"] == "1\n"
