"""Notebook parameters as papermill takes them (``exec -f NB -p NAME VALUE``, ``-y YAML``), with a real kernel.

The values reach the kernel (a later cell prints them and their types), the
notebook gets one cell tagged ``injected-parameters`` right after the cell
tagged ``parameters`` with the source papermill's own translator writes,
and ``metadata.papermill.parameters``; a re-run with other values replaces
that cell. A py:percent pair keeps it in the notebook only, through a
second and a third run, and never raises ``PAIR_CONFLICT`` for it. A
background job carries the parameters in its spec.
"""

from __future__ import annotations

import json

import nbformat
import pytest
from helpers import run_cli
from papermill.translators import PythonTranslator, Translator

SHOW = "print(repr(n), repr(ratio), repr(flag), repr(name), repr(items), repr(nothing))"


def papermill_source(values: dict) -> str:
    """papermill's Python translator's cell for ``values`` (as papermill writes it when black is not installed)."""
    return Translator.codify.__func__(PythonTranslator, values, "Parameters")


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def write_nb(path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Report"),
        nbformat.v4.new_code_cell("n = 1\nratio = 0.5\nflag = False\nname = 'default'\nitems = []\nnothing = 'x'"),
        nbformat.v4.new_code_cell(SHOW),
    ]
    nb.cells[1].metadata["tags"] = ["parameters"]
    nbformat.write(nb, str(path))


def run(session, ws, name, *extra):
    result = run_cli("-j", "exec", session, "-f", name, *extra, cwd=ws)
    return result, [json.loads(line) for line in result.stdout.splitlines()]


def injected(nb):
    return [i for i, cell in enumerate(nb.cells) if "injected-parameters" in cell.metadata.get("tags", [])]


def test_parameters_reach_the_kernel_and_the_notebook_and_a_rerun_replaces_them(ws, kernel_session):
    write_nb(ws / "report.ipynb")
    args = ["-p", "n", "5", "-p", "ratio", "2.5", "-p", "flag", "True", "-p", "name", 'hi "there"', "-y", "items: [1, two]\nnothing: null"]
    result, lines = run(kernel_session, ws, "report.ipynb", *args)
    assert result.returncode == 0, result.stderr
    *cells, summary = lines
    values = {"n": 5, "ratio": 2.5, "flag": True, "name": 'hi "there"', "items": [1, "two"], "nothing": None}
    assert summary["parameters"] == {**values}  # the run's summary records them (-y first, then -p, as papermill merges)
    assert [line["cell_index"] for line in cells] == [1, 2, 3]  # the injected cell ran right after the parameters cell
    assert cells[2]["outputs"][0]["text"] == "5 2.5 True 'hi \"there\"' [1, 'two'] None\n"
    nb = nbformat.read(str(ws / "report.ipynb"), as_version=4)
    assert injected(nb) == [2]
    order = {"items": values["items"], "nothing": None, "n": 5, "ratio": 2.5, "flag": True, "name": 'hi "there"'}
    assert nb.cells[2].source == papermill_source(order)  # byte for byte papermill's cell
    assert nb.cells[2].execution_count is not None
    assert nb.metadata["papermill"]["parameters"] == order
    first_id = nb.cells[2].id

    result, lines = run(kernel_session, ws, "report.ipynb", "-p", "n", "7", "-p", "name", "None")
    assert result.returncode == 0, result.stderr
    assert lines[-1]["parameters"] == {"n": 7, "name": None}
    assert lines[2]["outputs"][0]["text"] == "7 0.5 False None [] 'x'\n"  # the defaults again for what was not given
    nb = nbformat.read(str(ws / "report.ipynb"), as_version=4)
    assert injected(nb) == [2] and len(nb.cells) == 4 and nb.cells[2].id == first_id  # replaced in place, never a second
    assert nb.cells[2].source == papermill_source({"n": 7, "name": None})
    assert nb.metadata["papermill"]["parameters"] == {"n": 7, "name": None}

    plain = run_cli("exec", kernel_session, "-f", "report.ipynb", "-p", "n", "8", cwd=ws)
    assert plain.returncode == 0, plain.stderr
    assert "8 0.5 False 'default' [] 'x'" in plain.stdout.decode()
    assert "j-cli: parameters: n=8" in plain.stderr.decode()  # the human summary names them too

    again = run_cli("-j", "exec", kernel_session, "-f", "report.ipynb", cwd=ws)  # no parameters: the notebook runs as it is
    assert again.returncode == 0, again.stderr
    assert "parameters" not in json.loads(again.stdout.decode().splitlines()[-1])
    assert injected(nbformat.read(str(ws / "report.ipynb"), as_version=4)) == [2]


def test_a_pair_keeps_the_injected_cell_in_its_notebook_only_run_after_run(ws, kernel_session):
    py = ws / "pair.py"
    text = "# %%\nimport math\n\n# %% tags=[\"parameters\"]\nalpha = 1\n\n# %%\nprint('alpha', alpha, math.pi > 3)\n"
    py.write_text(text)
    for number, value in enumerate(["2", "3"], start=1):  # the first run creates the notebook, the second syncs it again
        result, lines = run(kernel_session, ws, "pair.py", "-p", "alpha", value)
        assert result.returncode == 0, (number, result.stderr)
        *cells, summary = lines
        assert [line["cell_index"] for line in cells] == [0, 1, None, 2]  # the injected cell has no .py index
        assert cells[2]["notebook_cell_index"] == 2 and cells[3]["notebook_cell_index"] == 3
        assert cells[3]["outputs"][0]["text"] == f"alpha {value} True\n"
        nb = nbformat.read(str(ws / "pair.ipynb"), as_version=4)
        assert injected(nb) == [2] and len(nb.cells) == 4
        assert nb.cells[2].source == papermill_source({"alpha": int(value)})
        assert summary["parameters"] == {"alpha": int(value)}
        assert py.read_text() == text  # the .py never gets it
    py.write_text(text.replace("alpha = 1", "alpha = 10"))  # an edit of the .py, then a third run without parameters
    result, lines = run(kernel_session, ws, "pair.py")
    assert result.returncode == 0, result.stderr
    assert [line["cell_index"] for line in lines[:-1]] == [0, 1, 2]
    assert lines[2]["outputs"][0]["text"] == "alpha 10 True\n"  # the .py's value: the injected cell went with the sync
    nb = nbformat.read(str(ws / "pair.ipynb"), as_version=4)
    assert injected(nb) == [] and len(nb.cells) == 3 and "parameters" not in nb.metadata.get("papermill", {})
    result, lines = run(kernel_session, ws, "pair.py", "-y", "alpha: [1, 2]")
    assert result.returncode == 0, result.stderr
    assert lines[3]["outputs"][0]["text"] == "alpha [1, 2] True\n"


def test_a_background_job_carries_the_parameters(ws, kernel_session, sidecar_on):
    write_nb(ws / "report.ipynb")
    started = run_cli("-j", "exec", kernel_session, "-f", "report.ipynb", "--background", "-p", "n", "42", "-y", "items: {a: 1}", cwd=ws)
    assert started.returncode == 0, started.stderr
    waited = run_cli("-j", "job", "wait", started.json()["job_id"], cwd=ws)
    assert waited.returncode == 0, waited.stderr
    job = waited.json()["jobs"][0]
    assert job["state"] == "ok" and job["result"]["parameters"] == {"items": {"a": 1}, "n": 42}
    nb = nbformat.read(str(ws / "report.ipynb"), as_version=4)
    assert injected(nb) == [2] and nb.cells[2].source == papermill_source({"items": {"a": 1}, "n": 42})
    assert nb.cells[3].outputs[0].text == "42 0.5 False 'default' {'a': 1} 'x'\n"


def test_new_values_with_stale_run_the_injected_cell_and_its_readers_only(ws, kernel_session):
    """``-p`` with ``--stale``: the replaced injected cell is stale, and so is each cell reading what it sets; nothing else runs."""
    write_nb(ws / "report.ipynb")
    nb = nbformat.read(str(ws / "report.ipynb"), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("print('unrelated')"))
    nbformat.write(nb, str(ws / "report.ipynb"))
    result, lines = run(kernel_session, ws, "report.ipynb", "-p", "n", "5")
    assert result.returncode == 0, result.stderr
    assert lines[-1]["cells_run"] == 4  # the parameters cell, the injected one, the reader and the unrelated cell
    result, lines = run(kernel_session, ws, "report.ipynb", "-p", "n", "6", "--stale")
    assert result.returncode == 0, result.stderr
    ran = [line["notebook_cell_index"] for line in lines[:-1]]
    assert ran == [2, 3] and lines[-1]["parameters"] == {"n": 6}
    assert lines[1]["cell"]["outputs"][0]["text"].startswith("6 ")
    result, lines = run(kernel_session, ws, "report.ipynb", "--stale")
    assert result.returncode == 0 and lines[-1]["cells_run"] == 0
