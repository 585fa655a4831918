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


# -- cell ids several cells share: refused in a .py, renewed in a notebook, never a mapping ------------


def copied_marker_py(ws, second="print('copy')"):
    """A .py whose second cell was pasted from the first: both markers carry id="a1"."""
    return f'# %% id="a1"\n{ran(ws)}\n# %% id="a1"\n{second}\n\n# %% id="b2"\ny = 2\n'


@pytest.mark.parametrize("flags", [(), ("--py-wins",), ("--cell", "2")])
@pytest.mark.parametrize("with_notebook", [False, True])
def test_a_py_whose_markers_repeat_an_id_is_refused_before_anything_runs_or_is_written(ws, kernel_session, flags, with_notebook):
    py, nb_path = ws / "copied.py", ws / "copied.ipynb"
    py.write_text(copied_marker_py(ws))
    if with_notebook:
        write_nb(nb_path, rich_notebook())
        before = nb_path.read_bytes()
    result, lines = exec_file(kernel_session, ws, "copied.py", *flags)
    assert result.returncode == 1 and lines == [], result.stderr
    err = result.error()
    assert err["code"] == "CELL_ID_DUPLICATE" and err["executed"] is False
    assert err["duplicates"] == [{"id": "a1", "cells": [0, 1], "lines": [1, 4]}]
    assert 'delete the id="a1" on line 4' in err["message"] and "nothing was run or written" in err["message"]
    assert not (ws / "ran.txt").exists()
    assert (nb_path.read_bytes() == before) if with_notebook else not nb_path.exists()
    human = run_cli("exec", kernel_session, "-f", "copied.py", cwd=ws)
    assert human.returncode == 1 and b"[CELL_ID_DUPLICATE]" in human.stderr and b"Traceback" not in human.stderr


def test_every_repeated_id_is_named_with_its_cells_and_lines(ws, kernel_session):
    (ws / "many.py").write_text('# %% id="a"\nx = 1\n# %% id="b"\nx = 2\n# %% id="a"\nx = 3\n# %% id="b"\nx = 4\n# %% id="a"\nx = 5\n')
    result, _ = exec_file(kernel_session, ws, "many.py")
    err = result.error()
    assert err["duplicates"] == [{"id": "a", "cells": [0, 2, 4], "lines": [1, 5, 9]}, {"id": "b", "cells": [1, 3], "lines": [3, 7]}]
    assert 'id="a" on cells 0 (line 1), 2 (line 5) and 4 (line 9)' in err["message"]
    assert not (ws / "many.ipynb").exists()


def test_reads_never_map_a_py_cell_by_an_id_its_markers_repeat(ws, kernel_session):
    """The pasted cell used to return the original's output with mapping "id"."""
    py = ws / "read.py"
    py.write_text('# %% id="a1"\nprint("original")\n\n# %% id="b2"\nprint("other")\n')
    result, _ = exec_file(kernel_session, ws, "read.py")
    assert result.returncode == 0, result.stderr
    py.write_text('# %% id="a1"\nprint("original")\n\n# %% id="a1"\nprint("pasted and edited")\n\n# %% id="b2"\nprint("other")\n')
    for command in ("output", "outputs"):
        extra = ("--output", "0") if command == "output" else ()
        pasted = run_cli("-j", "notebook", command, "read.py", "--cell", "1", *extra, cwd=ws)
        assert pasted.returncode == 1, pasted.stdout
        err = pasted.error()
        assert err["code"] == "CELL_MAPPING_UNRELIABLE" and err["reason"] == "duplicate_id" and err["cell_id"] == "a1"
        assert 'id="a1" is repeated on .py cells 0, 1' in err["message"]
    original = run_cli("-j", "notebook", "output", "read.py", "--cell", "0", "--output", "0", cwd=ws).json()
    assert original["source"]["mapping"] == "content" and original["source"]["cell_index"] == 0
    assert original["stream"]["data"] == "original\n"
    other = run_cli("-j", "notebook", "output", "read.py", "--cell", "2", "--output", "0", cwd=ws).json()
    assert other["source"]["mapping"] == "id" and other["stream"]["data"] == "other\n"


def test_a_read_by_an_id_several_notebook_cells_carry_falls_back_to_content(ws):
    nb = notebook([nbformat.v4.new_code_cell("print(1)", id="dup"), nbformat.v4.new_code_cell("print(2)", id="dup")])
    for i, cell in enumerate(nb.cells):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{i + 1}\n")]
    write_nb(ws / "shared.ipynb", nb)
    (ws / "shared.py").write_text('# %% id="dup"\nprint(2)\n\n# %% id="dup2"\nprint(3)\n')
    second = run_cli("-j", "notebook", "output", "shared.py", "--cell", "0", "--output", "0", cwd=ws).json()
    assert second["source"]["mapping"] == "content" and second["source"]["cell_index"] == 1
    assert second["stream"]["data"] == "2\n"
    (ws / "shared.py").write_text('# %% id="dup"\nprint(99)\n')
    err = run_cli("-j", "notebook", "output", "shared.py", "--cell", "0", cwd=ws).error()
    assert err["code"] == "CELL_MAPPING_UNRELIABLE" and err["reason"] == "duplicate_id"
    assert "carried by several notebook cells" in err["message"]
    direct = run_cli("-j", "notebook", "output", "shared.ipynb", "--cell", "1", "--output", "0", cwd=ws).json()
    assert direct["source"]["mapping"] == "direct" and direct["stream"]["data"] == "2\n"


def test_a_notebook_whose_cells_share_an_id_is_repaired_when_run_and_keeps_every_output(ws, kernel_session):
    cells = [nbformat.v4.new_code_cell(f"print({i})") for i in range(3)]
    for cell in cells:
        cell["id"] = "same"
    write_nb(ws / "twins.ipynb", notebook(cells))
    for attempt in range(2):
        result, lines = exec_file(kernel_session, ws, "twins.ipynb")
        assert result.returncode == 0, result.stderr
        *done, summary = lines
        assert [line["notebook_updated"] for line in done] == [True, True, True]
        saved = nbformat.read(str(ws / "twins.ipynb"), as_version=4)
        nbformat.validate(saved)
        ids = [cell["id"] for cell in saved.cells]
        assert ids[0] == "same" and len(set(ids)) == 3
        assert [cell.outputs[0]["text"] for cell in saved.cells] == ["0\n", "1\n", "2\n"]
        if attempt == 0:
            assert [(r["cell_index"], r["id"]) for r in summary["ids_renewed"]] == [(1, "same"), (2, "same")]
            assert [r["new_id"] for r in summary["ids_renewed"]] == ids[1:]
            assert any("fresh ids" in note for note in summary["notes"])
        else:
            assert "ids_renewed" not in summary


def test_a_pairs_notebook_that_repeats_an_id_is_repaired_the_marker_keeping_its_id(ws, kernel_session):
    nb = notebook([nbformat.v4.new_code_cell("a = 1", id="dup"), nbformat.v4.new_code_cell("b = 2", id="dup")])
    write_nb(ws / "pair.ipynb", nb)
    (ws / "pair.py").write_text('# %%\na = 1\n\n# %% id="dup"\nb = 2\n')
    set_mtime(ws / "pair.ipynb", 1_000_000_000 * 10**9)
    result, lines = exec_file(kernel_session, ws, "pair.py")
    assert result.returncode == 0, result.stderr
    summary = lines[-1]
    saved = nbformat.read(str(ws / "pair.ipynb"), as_version=4)
    nbformat.validate(saved)
    assert saved.cells[1]["id"] == "dup" and saved.cells[0]["id"] != "dup"
    assert summary["sync"]["ids_renewed"] == 1 and summary["ids_renewed"][0]["cell_index"] == 0
    read = run_cli("-j", "notebook", "outputs", "pair.py", "--cell", "1", cwd=ws).json()
    assert read["source"]["mapping"] == "id" and read["source"]["cell_index"] == 1


def test_map_summary_and_show_name_a_repeated_id(ws):
    (ws / "copied.py").write_text(copied_marker_py(ws))
    nb = notebook([nbformat.v4.new_code_cell(ran(ws).strip(), id="a1"), nbformat.v4.new_code_cell("y = 2", id="b2")])
    write_nb(ws / "copied.ipynb", nb)
    mapped = run_cli("-j", "notebook", "map", "copied.py", cwd=ws).json()
    assert mapped["sync"]["refused"] == {"code": "CELL_ID_DUPLICATE", "reason": "duplicate_id", "cells": [], "py_cells": [0, 1]}
    rows = {row["py_index"]: row for row in mapped["cells"] if row["py_index"] is not None}
    assert rows[0]["match"] == "content" and rows[2]["match"] == "id"
    assert 'id="a1" is repeated on .py cells 0, 1 (lines 1, 4)' in rows[1]["problem"] and "problem" not in rows[2]
    summary = run_cli("-j", "notebook", "summary", "copied.py", cwd=ws).json()
    assert ["problem" in row for row in summary["cells"]] == [True, True, False]
    shown = run_cli("-j", "notebook", "show", "copied.py", "--cell", "1", cwd=ws).json()
    assert "CELL_ID_DUPLICATE" in shown["cells"][0]["problem"]
    nb.cells[1]["id"] = "a1"
    write_nb(ws / "copied.ipynb", nb)
    from_notebook = run_cli("-j", "notebook", "summary", "copied.ipynb", cwd=ws).json()
    assert all("shared by notebook cells 0, 1" in row["problem"] for row in from_notebook["cells"])


def test_convert_refuses_a_repeated_marker_id_and_never_writes_one(ws):
    (ws / "copied.py").write_text(copied_marker_py(ws))
    refused = run_cli("-j", "convert", "py-to-ipynb", "copied.py", cwd=ws)
    assert refused.returncode == 1 and refused.error()["code"] == "CELL_ID_DUPLICATE"
    assert not (ws / "copied.ipynb").exists()
    nb = notebook([nbformat.v4.new_code_cell(f"v = {i}", id="same") for i in range(3)])
    write_nb(ws / "twins.ipynb", nb)
    done = run_cli("-j", "convert", "ipynb-to-py", "twins.ipynb", cwd=ws).json()
    assert done["ids_left_off"] == [1, 2] and done["cells_with_ids"] == 1
    text = (ws / "twins.py").read_text()
    assert text.count('id="same"') == 1
    assert run_cli("-j", "convert", "py-to-ipynb", "twins.py", "-o", "again.ipynb", cwd=ws).returncode == 0


def test_the_pair_drift_guard_syncs_nothing_from_a_py_that_repeats_an_id(ws):
    (ws / "copied.py").write_text(copied_marker_py(ws))
    write_nb(ws / "copied.ipynb", notebook([nbformat.v4.new_code_cell("y = 2", id="b2")]))
    before = (ws / "copied.ipynb").read_bytes()
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": str(ws / "copied.py")}, "cwd": str(ws)}
    result = run_cli("_hooks", "pair-drift-guard-post", "--platform", "claude", stdin=json.dumps(payload).encode())
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert result.returncode == 0 and "could not sync" in context and 'id="a1"' in context and "line 4" in context
    assert (ws / "copied.ipynb").read_bytes() == before
