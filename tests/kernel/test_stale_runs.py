"""Stale cells on a real kernel: runs record what each output came from, summary tells, ``exec --stale`` runs exactly them."""

from __future__ import annotations

import json

import nbformat
import pytest
from helpers import run_cli

CELLS = [
    "import json",  # 0
    "base = 2",  # 1
    "other = 100",  # 2
    "sq = base ** 2\nprint(sq)",  # 3
    "total = sq + 1\nprint(total)",  # 4
    "print(other)",  # 5
    "exec('hidden = 1')\nprint(hidden)",  # 6: its names cannot be known
]


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def write_nb(path, sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources] + [nbformat.v4.new_markdown_cell("# notes")]
    nbformat.write(nb, str(path))


def summary(ws, name, human=False):
    result = run_cli(*(() if human else ("-j",)), "notebook", "summary", name, cwd=ws)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode() if human else result.json()


def exec_lines(ws, *args):
    result = run_cli("-j", "exec", *args, cwd=ws)
    return result, [json.loads(line) for line in result.stdout.splitlines()]


def counts(path):
    return [cell.get("execution_count") for cell in nbformat.read(str(path), as_version=4).cells if cell.cell_type == "code"]


def text_of(path, index):
    return "".join(o.get("text", "") for o in nbformat.read(str(path), as_version=4).cells[index].outputs)


def stale_rows(doc):
    return {row["cell_index"]: row for row in doc["cells"] if row.get("stale")}


def test_an_edit_makes_it_and_its_readers_stale_and_exec_stale_runs_exactly_them(ws, kernel_session):
    path = ws / "nb.ipynb"
    write_nb(path, CELLS)
    doc = summary(ws, "nb.ipynb")
    assert doc["stale_cells"] == list(range(7))
    assert {row["stale_cause"] for row in stale_rows(doc).values()} == {"never_ran"}
    assert "stale" not in doc["cells"][7]  # a markdown cell is never stale

    result, _ = exec_lines(ws, kernel_session, "-f", "nb.ipynb")
    assert result.returncode == 0, result.stderr
    assert summary(ws, "nb.ipynb")["stale_cells"] == []
    ran = nbformat.read(str(path), as_version=4).cells[4].metadata["jcli_ran"]
    assert set(ran) == {"src", "run", "deps"} and len(ran["deps"]) == 1  # it read sq from cell 3 only

    nb = nbformat.read(str(path), as_version=4)
    nb.cells[1].source = "base = 3"  # the edit
    nbformat.write(nb, str(path))
    before = counts(path)
    doc = summary(ws, "nb.ipynb")
    rows = stale_rows(doc)
    assert doc["stale_cells"] == [1, 3, 4, 6]
    assert rows[1]["stale_cause"] == "source_changed"
    assert (rows[3]["stale_cause"], rows[3]["stale_cell"]) == ("dependency_stale", 1)
    assert rows[3]["stale_reason"] == "it reads base from cell 1, which is stale"
    assert (rows[4]["stale_cause"], rows[4]["stale_cell"]) == ("dependency_stale", 3)
    assert rows[6]["stale_reason"].startswith("its dependencies cannot be known (it calls exec())")
    assert rows[6]["dependencies_unknown"] == "it calls exec()"
    human = summary(ws, "nb.ipynb", human=True)
    assert "STALE" in human and "stale: it reads base from cell 1, which is stale" in human
    assert "stale: cells 1, 3, 4, 6" in human

    refused = run_cli("-j", "exec", kernel_session, "-f", "nb.ipynb", "--stale", "--cell", "1:", cwd=ws)
    assert refused.returncode == 2 and json.loads(refused.stderr)["code"] == "USAGE_ERROR"
    inline = run_cli("-j", "exec", kernel_session, "-c", "1", "--stale", cwd=ws)
    assert inline.returncode == 2 and json.loads(inline.stderr)["code"] == "USAGE_ERROR"
    assert counts(path) == before  # nothing ran

    result, lines = exec_lines(ws, kernel_session, "-f", "nb.ipynb", "--stale")
    assert result.returncode == 0, result.stderr
    *cells, end = lines
    assert [line["cell_index"] for line in cells] == [1, 3, 4, 6] and end["stale"] == [1, 3, 4, 6]
    after = counts(path)
    assert [after[i] for i in (0, 2, 5)] == [before[i] for i in (0, 2, 5)]  # the others did not run
    assert all(after[i] > max(c for c in before if c is not None) for i in (1, 3, 4, 6))
    assert text_of(path, 3) == "9\n" and text_of(path, 4) == "10\n"
    assert summary(ws, "nb.ipynb")["stale_cells"] == []

    # a cell run again on its own: the cells reading from it are stale (it ran after them), then brought up to date
    result, _ = exec_lines(ws, kernel_session, "-f", "nb.ipynb", "--cell", "2")
    assert result.returncode == 0, result.stderr
    rows = stale_rows(summary(ws, "nb.ipynb"))
    assert sorted(rows) == [5, 6]
    assert (rows[5]["stale_cause"], rows[5]["stale_reason"]) == ("dependency_ran", "it reads other from cell 2, which ran after it")
    result, lines = exec_lines(ws, kernel_session, "-f", "nb.ipynb", "--stale")
    assert [line["cell_index"] for line in lines[:-1]] == [5, 6]
    result, lines = exec_lines(ws, kernel_session, "-f", "nb.ipynb", "--stale")
    assert lines == [{**lines[0], "cells_run": 0, "stale": []}]  # nothing left to run


PAIR = """\
# %%
rows = [1, 2, 3]

# %%
doubled = [r * 2 for r in rows]
print(doubled)

# %%
label = "sum"

# %%
print(label, sum(doubled))
"""


@pytest.fixture
def ws_sidecar(tmp_path, use_jupyter, sidecar_on):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def test_an_edited_cell_of_a_pair_is_stale_and_a_background_stale_run_brings_it_up_to_date(ws_sidecar, kernel_session):
    ws = ws_sidecar
    (ws / "report.py").write_text(PAIR)
    result, _ = exec_lines(ws, kernel_session, "-f", "report.py")
    assert result.returncode == 0, result.stderr
    assert summary(ws, "report.py")["stale_cells"] == []
    (ws / "report.py").write_text(PAIR.replace("rows = [1, 2, 3]", "rows = [1, 2, 3, 4]"))
    before = counts(ws / "report.ipynb")
    doc = summary(ws, "report.py")
    assert doc["stale_cells"] == [0, 1, 3]
    assert stale_rows(doc)[0]["stale_cause"] == "source_changed"

    started = run_cli("-j", "exec", kernel_session, "-f", "report.py", "--stale", "--background", cwd=ws)
    assert started.returncode == 0, started.stderr
    job = started.json()
    assert job["status"] == "running" and job["cells"] == 3
    waited = run_cli("-j", "job", "wait", job["job_id"], cwd=ws)
    assert waited.returncode == 0, waited.stderr
    assert waited.json()["jobs"][0]["state"] == "ok"
    after = counts(ws / "report.ipynb")
    assert after[2] == before[2] and all(after[i] > before[3] for i in (0, 1, 3))
    assert text_of(ws / "report.ipynb", 3) == "sum 20\n"
    assert summary(ws, "report.py")["stale_cells"] == []
    assert summary(ws, "report.ipynb")["stale_cells"] == []
