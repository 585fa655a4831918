"""``j-cli convert``: ipynb-to-py, py-to-ipynb, assign-ids, each a ``j-cli`` process.

Each writes only its output (assign-ids its notebook), atomically; the
input's bytes and mtime never change; a converted file reads the same in
the real jupytext.
"""

from __future__ import annotations

import json
import os
import shutil

import jupytext
import nbformat
import pytest
from helpers import TESTS, run_cli

REAL = TESTS / "fixtures" / "real_notebooks"
MAGIC_SOURCES = ["!echo hi", "%time y = 1", "x?", "files = !ls", "%%bash\necho b", "# %not a magic\nprint(1)"]


def _notebook(sources, *, outputs=True, minor=5, ids=True):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for k, cell in enumerate(nb.cells):
        if outputs:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"out {k}\n")]
            cell.execution_count = k + 1
        if not ids:
            del cell["id"]
    nb.nbformat_minor = minor
    return nb


def _write_nb(path, nb):
    path.write_text(json.dumps(nb, indent=1))
    return path


def _fingerprint(path):
    info = os.stat(path)
    return path.read_bytes(), info.st_mtime_ns


def _json(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _error(result, code):
    assert result.returncode != 0
    assert b"Traceback" not in result.stderr
    doc = json.loads(result.stderr)
    assert doc["code"] == code, doc
    return doc


def test_ipynb_to_py_writes_what_jupytext_reads_as_the_notebook(tmp_path):
    nb_path = _write_nb(tmp_path / "m.ipynb", _notebook(MAGIC_SOURCES))
    before = _fingerprint(nb_path)
    doc = _json(run_cli("-j", "convert", "ipynb-to-py", "m.ipynb", cwd=tmp_path))
    assert doc == {**doc, "status": "ok", "output": str(tmp_path / "m.py"), "cells": 6, "cells_with_ids": 6, "replaced": False}
    text = (tmp_path / "m.py").read_text()
    assert "# !echo hi" in text and "# # %not a magic" in text and 'language="bash"\n# echo b' in text
    back = jupytext.reads(text, "py:percent")
    assert [c.source for c in back.cells] == MAGIC_SOURCES
    assert [c.metadata["id"] for c in back.cells] == [c["id"] for c in json.loads(nb_path.read_text())["cells"]]
    assert _fingerprint(nb_path) == before


def test_ipynb_to_py_refuses_an_existing_py_without_force_and_its_own_input(tmp_path):
    nb_path = _write_nb(tmp_path / "m.ipynb", _notebook(["x = 1"]))
    (tmp_path / "m.py").write_text("# mine\n")
    refused = run_cli("-j", "convert", "ipynb-to-py", "m.ipynb", cwd=tmp_path)
    assert "--force" in _error(refused, "USAGE_ERROR")["message"]
    assert (tmp_path / "m.py").read_text() == "# mine\n"
    human = run_cli("convert", "ipynb-to-py", "m.ipynb", "--force", cwd=tmp_path)
    assert human.returncode == 0 and human.stdout.decode().startswith(f"Replaced {tmp_path / 'm.py'} (1 cells)")
    before = _fingerprint(nb_path)
    os.symlink("m.ipynb", tmp_path / "link.ipynb")
    for out in ("m.ipynb", "link.ipynb", "./m.ipynb"):
        result = run_cli("-j", "convert", "ipynb-to-py", "m.ipynb", "-o", out, "--force", cwd=tmp_path)
        assert "is the input file" in _error(result, "USAGE_ERROR")["message"]
    assert _fingerprint(nb_path) == before


def test_py_to_ipynb_creates_a_notebook_with_the_magics_and_never_touches_the_py(tmp_path):
    py = tmp_path / "m.py"
    py.write_text('# %%\n# !echo hi\n\n# %% [markdown] tags=["a"]\n# # Title\n\n# %%\n# %time f()\n')
    before = _fingerprint(py)
    human = run_cli("convert", "py-to-ipynb", "m.py", cwd=tmp_path)
    assert human.returncode == 0 and human.stdout.decode().startswith(f"Created {tmp_path / 'm.ipynb'} (3 cells")
    nb = nbformat.read(tmp_path / "m.ipynb", as_version=4)
    nbformat.validate(nb)
    assert [(c.cell_type, c.source) for c in nb.cells] == [("code", "!echo hi"), ("markdown", "# Title"), ("code", "%time f()")]
    assert nb.cells[1].metadata["tags"] == ["a"]
    assert _fingerprint(py) == before


@pytest.mark.parametrize(
    ("policy", "kept", "cleared"),
    [("clear-edited", [True, False, True], 1), ("preserve", [True, True, True], 0), ("clear-all", [False, False, False], 3)],
)
def test_py_to_ipynb_updates_an_existing_notebook_by_the_outputs_policy(tmp_path, policy, kept, cleared):
    nb = _notebook(["a = 1", "b = 2 + 2", "!echo c", "d = 4"])
    _write_nb(tmp_path / "m.ipynb", nb)
    ids = [c["id"] for c in nb.cells]
    py = tmp_path / "m.py"
    py.write_text(f'# %% id="{ids[0]}"\na = 1\n\n# %% id="{ids[1]}"\nb = 2 + 3\n\n# %%\n# !echo c\n')
    before = _fingerprint(tmp_path / "m.ipynb")
    # Never synced from this .py: editing b and dropping d (both with outputs) is refused, as exec -f refuses it.
    refused = run_cli("-j", "convert", "py-to-ipynb", "m.py", "--outputs", policy, cwd=tmp_path)
    assert refused.returncode == 1 and refused.error()["code"] == "PAIR_CONFLICT" and refused.error()["cells"] == [1, 3]
    assert _fingerprint(tmp_path / "m.ipynb") == before
    doc = _json(run_cli("-j", "convert", "py-to-ipynb", "m.py", "--outputs", policy, "--py-wins", cwd=tmp_path))
    assert doc["sync"] == {"kept": 2, "edited": 1, "added": 0, "removed": 1}  # the .py wins: d = 4 is gone
    assert doc["created"] is False and doc["outputs_policy"] == policy
    assert doc["cells_with_outputs_cleared"] == cleared
    after = nbformat.read(tmp_path / "m.ipynb", as_version=4)
    assert [c.source for c in after.cells] == ["a = 1", "b = 2 + 3", "!echo c"]
    assert [c.id for c in after.cells] == ids[:3]
    assert [bool(c.outputs) for c in after.cells] == kept


def test_mixed_invalid_and_repeated_ids_in_a_py_give_a_valid_notebook(tmp_path):
    py = tmp_path / "m.py"
    py.write_text('# %% id="a1"\nx = 1\n\n# %%\ny = 2\n\n# %% id="a1"\nz = 3\n\n# %% id="no spaces allowed"\nw = 4\n')
    repeated = run_cli("-j", "convert", "py-to-ipynb", "m.py", "-o", "out.ipynb", cwd=tmp_path)
    assert repeated.returncode == 1 and repeated.error()["code"] == "CELL_ID_DUPLICATE"  # a repeat is the user's to fix
    assert 'delete the id="a1" on line 7' in repeated.error()["message"] and not (tmp_path / "out.ipynb").exists()
    py.write_text('# %% id="a1"\nx = 1\n\n# %%\ny = 2\n\n# %%\nz = 3\n\n# %% id="no spaces allowed"\nw = 4\n')
    doc = _json(run_cli("-j", "convert", "py-to-ipynb", "m.py", "-o", "out.ipynb", cwd=tmp_path))
    assert doc["ids_assigned"] == 3  # the two missing ones and the invalid one
    nb = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    nbformat.validate(nb)
    ids = [c.id for c in nb.cells]
    assert ids[0] == "a1" and len(set(ids)) == 4


def test_assign_ids_upgrades_and_fills_and_says_so(tmp_path):
    nb = _notebook(["a = 1", "b = 2", "c = 3"], minor=4, ids=False)
    path = _write_nb(tmp_path / "old.ipynb", nb)
    human = run_cli("convert", "assign-ids", "old.ipynb", cwd=tmp_path)
    assert human.returncode == 0, human.stderr
    assert human.stdout.decode().strip() == f"{path}: assigned 3 ids (3 missing, 0 invalid, 0 duplicate); nbformat 4.4 -> 4.5"
    after = nbformat.read(path, as_version=4)
    nbformat.validate(after)
    assert after.nbformat_minor == 5 and [c.outputs[0]["text"] for c in after.cells] == ["out 0\n", "out 1\n", "out 2\n"]
    before = _fingerprint(path)
    again = _json(run_cli("-j", "convert", "assign-ids", "old.ipynb", cwd=tmp_path))
    assert again["written"] is False and again["ids_assigned"] == 0
    assert _fingerprint(path) == before


def test_assign_ids_replaces_repeated_ids(tmp_path):
    nb = _notebook(["a = 1", "b = 2"])
    nb.cells[1]["id"] = nb.cells[0]["id"]
    path = _write_nb(tmp_path / "dup.ipynb", nb)
    doc = _json(run_cli("-j", "convert", "assign-ids", "dup.ipynb", cwd=tmp_path))
    assert (doc["ids_duplicate"], doc["ids_assigned"], doc["written"]) == (1, 1, True)
    ids = [c["id"] for c in json.loads(path.read_text())["cells"]]
    assert ids[0] == nb.cells[0]["id"] and len(set(ids)) == 2


@pytest.mark.parametrize("path", sorted(REAL.glob("*.ipynb")), ids=lambda p: p.stem)
def test_real_notebooks_survive_both_directions(tmp_path, path):
    shutil.copy(path, tmp_path / "n.ipynb")
    _json(run_cli("-j", "convert", "ipynb-to-py", "n.ipynb", cwd=tmp_path))
    doc = _json(run_cli("-j", "convert", "py-to-ipynb", "n.py", "-o", "back.ipynb", cwd=tmp_path))
    original = nbformat.read(path, as_version=4)
    back = nbformat.read(tmp_path / "back.ipynb", as_version=4)
    nbformat.validate(back)
    assert doc["cells"] == len(original.cells)
    assert [(c.cell_type, c.source.strip("\n")) for c in back.cells] == [(c.cell_type, c.source.strip("\n")) for c in original.cells]


def test_errors_are_coded(tmp_path):
    (tmp_path / "bad.ipynb").write_text("{not json")
    (tmp_path / "list.ipynb").write_text("[1, 2]")
    (tmp_path / "plain.py").write_text("print('no markers')\n")
    (tmp_path / "dir.ipynb").mkdir()
    os.mkfifo(tmp_path / "fifo.ipynb")
    os.mkfifo(tmp_path / "fifo.py")
    cases = [
        (("ipynb-to-py", "missing.ipynb"), "FILE_NOT_FOUND"),
        (("ipynb-to-py", "bad.ipynb"), "NOTEBOOK_READ_FAILED"),
        (("ipynb-to-py", "list.ipynb"), "NOTEBOOK_READ_FAILED"),
        (("ipynb-to-py", "dir.ipynb"), "NOTEBOOK_READ_FAILED"),
        (("ipynb-to-py", "fifo.ipynb"), "NOTEBOOK_READ_FAILED"),
        (("py-to-ipynb", "missing.py"), "FILE_NOT_FOUND"),
        (("py-to-ipynb", "plain.py"), "NOTEBOOK_READ_FAILED"),
        (("py-to-ipynb", "fifo.py"), "NOTEBOOK_READ_FAILED"),
        (("assign-ids", "bad.ipynb"), "NOTEBOOK_READ_FAILED"),
        (("assign-ids", "plain.py"), "NOTEBOOK_READ_FAILED"),
        (("py-to-ipynb", "plain.py", "--outputs", "keep"), "USAGE_ERROR"),
    ]
    for args, code in cases:
        _error(run_cli("-j", "convert", *args, cwd=tmp_path), code)
        human = run_cli("convert", *args, cwd=tmp_path)
        assert (
            human.returncode != 0
            and b"Traceback" not in human.stderr
            and (human.stderr.startswith(b"j-cli: error [") or b"Error: Invalid value" in human.stderr)
        ), args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.ipynb", "dir.ipynb", "fifo.ipynb", "fifo.py", "list.ipynb", "plain.py"]


def test_a_converted_py_runs_against_a_real_server_and_keeps_its_magics(tmp_path, use_jupyter, kernel_session):
    nb_path = _write_nb(tmp_path / "r.ipynb", _notebook(["!echo hi", "%time y = 1", "print(y)"], outputs=False))
    _json(run_cli("-j", "convert", "ipynb-to-py", "r.ipynb", cwd=tmp_path))
    os.utime(nb_path, (1, 1))
    result = run_cli("-j", "exec", kernel_session, "-f", "r.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["sync"] == {"kept": 3, "edited": 0, "added": 0, "removed": 0}
    after = nbformat.read(nb_path, as_version=4)
    assert [c.source for c in after.cells] == ["!echo hi", "%time y = 1", "print(y)"]
    assert "hi" in after.cells[0].outputs[0]["text"] and after.cells[2].outputs[0]["text"] == "1\n"


# -- py-to-ipynb never drops notebook-side work without --py-wins (the protection exec -f has) ---------


def _paired(tmp_path):
    """A pair made by convert (the agreement recorded), whose notebook then got outputs as a run would give them."""
    (tmp_path / "p.py").write_text("# %%\na = 1\n\n# %%\nprint(a)\n")
    _json(run_cli("-j", "convert", "py-to-ipynb", "p.py", cwd=tmp_path))
    nb = nbformat.read(tmp_path / "p.ipynb", as_version=4)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    return nb


def _labs_save(path, nb):
    """Save as JupyterLab does: the notebook's own metadata kept, the file replaced."""
    path.write_text(nbformat.writes(nb))


@pytest.mark.parametrize("labs_edit", ["a cell added with its output", "a cell's source edited", "a cell deleted"])
def test_py_to_ipynb_refuses_to_drop_notebook_side_work_and_names_the_cells(tmp_path, labs_edit):
    nb = _paired(tmp_path)
    if labs_edit == "a cell added with its output":
        added = nbformat.v4.new_code_cell("b = a * 2\nb", execution_count=3)
        added.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=3)]
        nb.cells.append(added)
        at_stake = [2]
    elif labs_edit == "a cell's source edited":
        nb.cells[0].source = "a = 5"
        at_stake = [0]
    else:
        del nb.cells[0]
        at_stake = []
    _labs_save(tmp_path / "p.ipynb", nb)
    (tmp_path / "p.py").write_text("# %%\na = 1\n\n# %%\nprint(a)\n\n# %%\nc = 3\n")  # the .py moves on too
    before = _fingerprint(tmp_path / "p.ipynb")
    refused = run_cli("-j", "convert", "py-to-ipynb", "p.py", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stdout == b""
    error = refused.error()
    assert error["code"] == "PAIR_CONFLICT" and error["reason"] == "notebook_edited" and error["cells"] == at_stake
    assert "--py-wins" in error["message"] and "nothing was written" in error["message"]
    assert error["py_cells"] == ([0, 2] if labs_edit == "a cell deleted" else [2])  # what the .py would add
    assert _fingerprint(tmp_path / "p.ipynb") == before
    human = run_cli("convert", "py-to-ipynb", "p.py", cwd=tmp_path)
    assert human.returncode == 1 and b"[PAIR_CONFLICT]" in human.stderr and b"Traceback" not in human.stderr
    won = _json(run_cli("-j", "convert", "py-to-ipynb", "p.py", "--py-wins", cwd=tmp_path))
    after = nbformat.read(tmp_path / "p.ipynb", as_version=4)
    assert [c.source for c in after.cells] == ["a = 1", "print(a)", "c = 3"] and won["created"] is False
    assert _json(run_cli("-j", "convert", "py-to-ipynb", "p.py", cwd=tmp_path))["sync"]["edited"] == 0  # agreed again


def test_py_to_ipynb_onto_a_newer_unrelated_notebook_is_refused(tmp_path):
    _write_nb(tmp_path / "other.ipynb", _notebook(["q = 1", "r = 2"]))
    (tmp_path / "p.py").write_text("# %%\nq = 1\n")
    os.utime(tmp_path / "p.py", ns=(10**18, 10**18))
    os.utime(tmp_path / "other.ipynb", ns=(2 * 10**18, 2 * 10**18))
    error = run_cli("-j", "convert", "py-to-ipynb", "p.py", "-o", "other.ipynb", cwd=tmp_path).error()
    assert error["code"] == "PAIR_CONFLICT" and error["reason"] == "notebook_newer" and error["cells"] == [1]


def test_py_to_ipynb_that_only_adds_or_keeps_cells_needs_no_flag(tmp_path):
    _labs_save(tmp_path / "p.ipynb", _paired(tmp_path))
    (tmp_path / "p.py").write_text("# %%\na = 1\n\n# %%\nprint(a)\n\n# %%\nnew = 1\n")
    doc = _json(run_cli("-j", "convert", "py-to-ipynb", "p.py", cwd=tmp_path))
    assert doc["sync"] == {"kept": 2, "edited": 0, "added": 1, "removed": 0} and doc["cells_with_outputs_kept"] == 1
