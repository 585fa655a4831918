"""Notebook runs with a real kernel: outputs go into the notebook, pairs stay in sync."""

from __future__ import annotations

import json
import os
import stat
import threading

import nbformat
import pytest
from helpers import FIXTURES, run_cli

from jcli_sidecar.base.errors import CellNotFound, UsageError
from jcli_sidecar.ipynb.nbwrite import dumps_notebook
from jcli_sidecar.pair.pairing import PercentCell
from jcli_sidecar.pair.pairsync import sync_notebook

PAIR = """\
# %% [markdown]
# # A report

# %%
print("one")

# %%
x = 41
x + 1

# %%
import matplotlib.pyplot as plt
plt.plot([1, 3, 2]); plt.show()
"""


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def run_file(session, ws, name, *extra):
    result = run_cli("-j", "exec", session, "-f", name, *extra, cwd=ws)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return result, lines


def read_nb(path):
    return nbformat.read(str(path), as_version=4)


def test_a_pair_creates_its_notebook_and_every_cell_writes_back(ws, kernel_session):
    (ws / "report.py").write_text(PAIR)
    result, lines = run_file(kernel_session, ws, "report.py")
    assert result.returncode == 0, result.stderr
    *cells, summary = lines
    assert [c["cell_index"] for c in cells] == [1, 2, 3]
    assert summary == {**summary, "status": "ok", "cells_run": 3, "cells_failed": 0, "notebook": str(ws / "report.ipynb")}
    assert summary["sync"] == {"kept": 0, "edited": 0, "added": 4, "removed": 0}
    nb = read_nb(ws / "report.ipynb")
    nbformat.validate(nb)
    assert nb.nbformat_minor == 5 and all(cell.get("id") for cell in nb.cells)
    assert nb.cells[1].outputs[0].text == "one\n"
    assert nb.cells[2].outputs[0].data["text/plain"] == "42"
    assert nb.cells[2].execution_count == cells[1]["execution_count"]
    assert "image/png" in nb.cells[3].outputs[0].data
    assert not (ws / ".j-cli").exists()  # notebook runs keep outputs in the notebook only
    png = run_cli("-j", "notebook", "output", "report.py", "--cell", "3", "--output", "0", cwd=ws).json()
    assert png["selected"]["mime_type"] == "image/png" and png["source"]["mapping"] == "content"


def test_drift_edits_inserts_and_deletes_sync_without_misplacing_outputs(ws, kernel_session):
    (ws / "report.py").write_text(PAIR)
    run_file(kernel_session, ws, "report.py")
    before = read_nb(ws / "report.ipynb")
    edited = PAIR.replace("x = 41", "x = 99").replace('print("one")', 'print("one")\n\n# %%\nprint("inserted")')
    edited = edited.replace("# %%\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2]); plt.show()\n", "")
    (ws / "report.py").write_text(edited)
    result, lines = run_file(kernel_session, ws, "report.py", "--cell", "3")  # only the edited cell
    assert result.returncode == 0, result.stderr
    assert lines[-1]["sync"] == {"kept": 2, "edited": 1, "added": 1, "removed": 1}
    nb = read_nb(ws / "report.ipynb")
    nbformat.validate(nb)
    assert [c.source for c in nb.cells] == ["# A report", 'print("one")', 'print("inserted")', "x = 99\nx + 1"]
    assert nb.cells[1].outputs == before.cells[1].outputs and nb.cells[1].id == before.cells[1].id  # kept
    assert nb.cells[2].outputs == [] and nb.cells[2].execution_count is None  # added, not run
    assert nb.cells[3].id == before.cells[2].id  # the edited cell keeps its id
    assert nb.cells[3].outputs[0].data["text/plain"] == "100"  # and only its new output


def test_an_ipynb_runs_the_chosen_cells_and_keeps_its_mode(ws, kernel_session):
    target = ws / "copy.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"print({i})") for i in range(4)]
    nbformat.write(nb, str(target))
    os.chmod(target, 0o640)
    result, lines = run_file(kernel_session, ws, "copy.ipynb", "--cell", "1:3")
    assert result.returncode == 0
    assert [line["cell_index"] for line in lines[:-1]] == [1, 2]
    written = read_nb(target)
    assert [bool(c.outputs) for c in written.cells] == [False, True, True, False]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_an_id_less_notebook_stays_valid(ws, kernel_session):
    nb = read_nb(FIXTURES / "kernel_v4.4.ipynb")
    target = ws / "old.ipynb"
    nbformat.write(nb, str(target))
    result, _ = run_file(kernel_session, ws, "old.ipynb", "--cell", "13")
    assert result.returncode == 0
    written = read_nb(target)
    nbformat.validate(written)
    assert written.nbformat_minor == 4 and "id" not in written.cells[13]


def test_a_cell_that_raises_stops_the_run_and_its_error_is_saved(ws, kernel_session):
    (ws / "fails.py").write_text("# %%\nprint('a')\n\n# %%\n1 / 0\n\n# %%\nprint('never')\n")
    result, lines = run_file(kernel_session, ws, "fails.py")
    assert result.returncode == 1
    assert lines[-1]["status"] == "error" and lines[-1]["stopped_at"] == 1 and lines[-1]["cells_run"] == 2
    nb = read_nb(ws / "fails.ipynb")
    assert nb.cells[1].outputs[0].ename == "ZeroDivisionError" and nb.cells[2].outputs == []


def test_a_cell_edited_while_it_runs_is_never_overwritten(ws, kernel_session, tmp_path):
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    (ws / "slow.py").write_text(f"# %%\nopen({str(fifo)!r}).read()\nprint('ran')\n")
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", run_file(kernel_session, ws, "slow.py")))
    worker.start()
    with open(fifo, "w") as gate:  # opens once the kernel is inside the cell
        nb = json.loads((ws / "slow.ipynb").read_text())
        nb["cells"][0]["source"] = "print('edited by a person meanwhile')"
        (ws / "slow.ipynb").write_text(json.dumps(nb))
        gate.write("go")
    worker.join(120)
    result, lines = box["r"]
    assert result.returncode == 1
    assert lines[0]["code"] == "NOTEBOOK_OUT_OF_SYNC" and lines[0]["executed"] is True
    kept = json.loads((ws / "slow.ipynb").read_text())["cells"][0]
    assert kept["source"] == "print('edited by a person meanwhile')" and kept["outputs"] == []


def test_cell_specs():
    from jcli_sidecar.ipynb.cell_spec import parse_cell_spec

    assert parse_cell_spec(None, 3) == [0, 1, 2]
    assert parse_cell_spec("2:", 5) == [2, 3, 4]
    assert parse_cell_spec("1:99", 3) == [1, 2]
    for bad in ("x", "-1", "1:2:3", "a:b", ""):
        with pytest.raises(UsageError):
            parse_cell_spec(bad, 5)
    with pytest.raises(CellNotFound):
        parse_cell_spec("7", 5)


def test_usage_errors_for_notebook_runs(ws, kernel_session):
    (ws / "p.py").write_text("# %%\nprint(1)\n")
    for args in (["-f", "p.py", "--cell", "nope"], ["-c", "1", "--cell", "0"]):
        result = run_cli("-j", "exec", kernel_session, *args, cwd=ws)
        assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"


def test_our_writer_matches_nbformat_byte_for_byte():
    for name in ("kernel_v4.5.ipynb", "kernel_v4.4.ipynb", "wrapped_png.ipynb", "pair_ids.ipynb"):
        nb = read_nb(FIXTURES / name)
        assert dumps_notebook(json.loads(nbformat.writes(nb))) == nbformat.writes(nb) + "\n"


def test_sync_keeps_matches_by_id_then_content():
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {
                "cell_type": "code",
                "id": "a",
                "source": "x = 1",
                "metadata": {},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "1"}],
                "execution_count": 1,
            },
            {"cell_type": "code", "id": "b", "source": "y = 2", "metadata": {}, "outputs": [], "execution_count": None},
        ],
    }
    synced, _, report = sync_notebook([PercentCell("code", "y = 2"), PercentCell("code", "x = 10", "a")], nb)
    assert [c["id"] for c in synced["cells"]] == ["b", "a"]
    assert synced["cells"][1]["outputs"] == [] and synced["cells"][1]["source"] == "x = 10"
    assert report == {"kept": 1, "edited": 1, "added": 0, "removed": 0}


def test_a_long_cell_checkpoints_its_partial_outputs(ws, kernel_session, tmp_path, monkeypatch):
    from watchfiles import watch

    monkeypatch.setenv("JCLI_CHECKPOINT_SECONDS", "0")  # checkpoint on every output
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    (ws / "long.py").write_text(f"# %%\nprint('first', flush=True)\nopen({str(fifo)!r}).read()\nprint('second')\n")
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", run_file(kernel_session, ws, "long.py")))
    worker.start()
    seen = None
    for _ in watch(ws, rust_timeout=60_000, yield_on_timeout=True, raise_interrupt=False):
        cell = json.loads((ws / "long.ipynb").read_text())["cells"][0] if (ws / "long.ipynb").exists() else {}
        if cell.get("outputs"):
            seen = cell
            break
    with open(fifo, "w") as gate:
        gate.write("go")
    worker.join(120)
    assert seen is not None, "no checkpoint reached the notebook"
    assert "".join(seen["outputs"][0]["text"]) == "first\n" and seen["metadata"]["jcli"] == {"running": True}
    final = read_nb(ws / "long.ipynb").cells[0]
    assert final.outputs[0].text == "first\nsecond\n" and "jcli" not in final.metadata
    assert box["r"][0].returncode == 0


def test_human_mode_streams_output_live(ws, kernel_session, tmp_path):
    import subprocess

    from helpers import JCLI

    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    code = f"print('early', flush=True)\nopen({str(fifo)!r}).read()\nprint('late')"
    proc = subprocess.Popen([JCLI, "exec", kernel_session, "-c", code], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"early\n"  # shown while the cell still runs
    with open(fifo, "w") as gate:
        gate.write("go")
    out, _ = proc.communicate(timeout=120)
    assert out == b"late\n" and proc.returncode == 0


def test_magics_in_a_jupytext_pair_run_and_stay_magics(ws, kernel_session):
    """The issue's data-loss case: '# !echo hi' in the .py is the notebook's '!echo hi', never a comment."""
    import subprocess
    import sys
    from pathlib import Path

    sources = ["!echo hi", "%time y = 1", "files = !echo a b\nfiles", "# %not a magic\nprint(y)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(ws / "mg.ipynb"))
    jupytext_cli = Path(sys.executable).with_name("jupytext")
    subprocess.run([str(jupytext_cli), "--to", "py:percent", "mg.ipynb"], cwd=ws, check=True, capture_output=True)
    text = (ws / "mg.py").read_text()
    assert "# !echo hi" in text and "# %time y = 1" in text and "# # %not a magic" in text
    os.utime(ws / "mg.ipynb", (1, 1))  # jupytext wrote the notebook first: the .py is the newer side
    result, lines = run_file(kernel_session, ws, "mg.py")
    assert result.returncode == 0, result.stderr
    summary = lines[-1]
    assert summary["sync"] == {"kept": 4, "edited": 0, "added": 0, "removed": 0}
    after = read_nb(ws / "mg.ipynb")
    assert [c.source for c in after.cells] == sources
    assert "hi" in after.cells[0].outputs[0]["text"]
    assert "['a b']" in json.dumps(after.cells[2].outputs)  # the kernel ran '!echo' as a shell escape
    assert (ws / "mg.py").read_text() == text  # j-cli never rewrites the .py


# -- the kernel a file asks for against the session's ----------------------------------------------


R_HEADER = """\
# ---
# jupyter:
#   kernelspec:
#     display_name: R
#     language: R
#     name: ir
# ---

"""

VENV_HEADER = R_HEADER.replace("display_name: R", "display_name: Project venv").replace("language: R", "language: python")
VENV_HEADER = VENV_HEADER.replace("name: ir", "name: venvpy")


@pytest.fixture(scope="module")
def kernels_server(tmp_path_factory, starts_jupyter):
    """A real Jupyter Server of its own with two more kernelspecs that run IPython: ``ir`` (says R) and ``venvpy`` (python)."""
    import sys

    from helpers import embedded_server_with_kernels

    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernels = {
        "ir": {"argv": argv, "display_name": "R", "language": "R"},
        "venvpy": {"argv": argv, "display_name": "Project venv", "language": "python"},
    }
    yield from embedded_server_with_kernels(tmp_path_factory, kernels)


@pytest.fixture(scope="module")
def kernel_sessions(kernels_server, tmp_path_factory):
    """One session per kernel on that server: ``python3``, ``ir``, ``venvpy``."""
    env = {**os.environ, "JCLI_JUPYTER_SERVER_URL": kernels_server["url"], "JCLI_JUPYTER_SERVER_TOKEN": kernels_server["token"]}
    cwd = tmp_path_factory.mktemp("kernels-sessions")
    names = {}
    for kernel in ("python3", "ir", "venvpy"):
        name = f"k-{kernel}"
        created = run_cli("-j", "session", "create", "-n", name, "-k", kernel, cwd=cwd, env=env)
        assert created.returncode == 0, created.stderr
        names[kernel] = name
    yield env, names
    for name in names.values():
        run_cli("session", "kill", name, cwd=cwd, env=env)


def test_a_py_whose_header_names_another_kernel_is_refused_before_anything_runs(kernel_sessions, tmp_path):
    env, sessions = kernel_sessions
    (tmp_path / "r.py").write_text(R_HEADER + "# %%\n" + f"open({str(tmp_path / 'ran.txt')!r}, 'w')\n")
    for flags in ((), ("--py-wins",), ("--cell", "0")):
        result = run_cli("-j", "exec", sessions["python3"], "-f", "r.py", *flags, cwd=tmp_path, env=env)
        assert result.returncode == 1 and result.stdout == b"", result.stderr
        err = result.error()
        assert err["code"] == "KERNEL_MISMATCH" and err["executed"] is False
        assert (err["requested_kernel"], err["requested_language"], err["session_kernel"], err["session_language"]) == (
            "ir",
            "R",
            "python3",
            "python",
        )
        assert "-k ir" in err["message"] and "--any-kernel" in err["message"]
    assert not (tmp_path / "ran.txt").exists() and not (tmp_path / "r.ipynb").exists()
    human = run_cli("exec", sessions["python3"], "-f", "r.py", cwd=tmp_path, env=env)
    assert human.returncode == 1 and b"[KERNEL_MISMATCH]" in human.stderr and b"Traceback" not in human.stderr


def test_any_kernel_runs_it_and_the_new_notebook_records_the_kernel_the_file_asks_for(kernel_sessions, tmp_path):
    env, sessions = kernel_sessions
    (tmp_path / "r.py").write_text(R_HEADER + "# %%\nprint('ran')\n")
    result = run_cli("-j", "exec", sessions["python3"], "-f", "r.py", "--any-kernel", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert any("--any-kernel" in note and "'ir'" in note for note in summary["notes"])
    spec = read_nb(tmp_path / "r.ipynb").metadata["kernelspec"]
    assert (spec["name"], spec["language"], spec["display_name"]) == ("ir", "R", "R")
    in_its_kernel = run_cli("-j", "exec", sessions["ir"], "-f", "r.py", cwd=tmp_path, env=env)
    assert in_its_kernel.returncode == 0 and "notes" not in json.loads(in_its_kernel.stdout.splitlines()[-1])


def test_a_kernel_of_the_same_language_runs_with_a_note(kernel_sessions, tmp_path):
    env, sessions = kernel_sessions
    (tmp_path / "v.py").write_text(VENV_HEADER + "# %%\nprint('ran')\n")
    result = run_cli("-j", "exec", sessions["python3"], "-f", "v.py", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert any("'venvpy' (python)" in note and "the same language" in note for note in summary["notes"])
    assert read_nb(tmp_path / "v.ipynb").metadata["kernelspec"]["name"] == "venvpy"
    human = run_cli("exec", sessions["python3"], "-f", "v.py", cwd=tmp_path, env=env)
    assert human.returncode == 0 and b"note: " in human.stderr and b"the same language" in human.stderr


def test_a_notebook_asking_for_another_kernel_is_refused_and_left_as_it_was(kernel_sessions, tmp_path):
    env, sessions = kernel_sessions
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('py')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "p.ipynb").write_text(dumps_notebook(nb))
    before = (tmp_path / "p.ipynb").read_bytes()
    err = run_cli("-j", "exec", sessions["ir"], "-f", "p.ipynb", cwd=tmp_path, env=env).error()
    assert err["code"] == "KERNEL_MISMATCH" and err["requested_kernel"] == "python3" and err["session_kernel"] == "ir"
    assert (tmp_path / "p.ipynb").read_bytes() == before
    (tmp_path / "p.py").write_text("# %%\nprint('py')\n")  # no header: the paired notebook speaks for the .py
    err = run_cli("-j", "exec", sessions["ir"], "-f", "p.py", cwd=tmp_path, env=env).error()
    assert err["code"] == "KERNEL_MISMATCH" and "p.ipynb" in err["path"]
    assert (tmp_path / "p.ipynb").read_bytes() == before


def test_a_py_that_names_no_kernel_creates_a_notebook_of_the_sessions_kernel_and_language(kernel_sessions, tmp_path):
    env, sessions = kernel_sessions
    (tmp_path / "plain.py").write_text("# %%\nprint('any')\n")
    result = run_cli("-j", "exec", sessions["ir"], "-f", "plain.py", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    meta = read_nb(tmp_path / "plain.ipynb").metadata
    assert meta["kernelspec"]["name"] == "ir" and meta["kernelspec"]["language"] == "R" and meta["language_info"]["name"] == "R"
