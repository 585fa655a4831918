"""Notebook runs that go on past errors, record when each cell ran, and keep to a whole-run budget, with a real kernel.

``--allow-errors`` and the ``raises-exception`` tag (nbclient's), each
cell's ``metadata.execution`` (nbclient's ``record_timing``) and its line's
``timing``, ``--run-timeout`` and the note a per-cell ``--timeout`` gets.
A background run (held by the sidecar) goes on past errors the same way.
"""

from __future__ import annotations

import datetime
import json
import os
import time

import nbformat
import pytest
from helpers import run_cli

from jcli_sidecar.kernel.cell_timing import TIMING_KEYS
from jcli_sidecar.pair.pairing import PercentCell
from jcli_sidecar.pair.pairsync import sync_notebook
from jcli_sidecar.pair.percent_write import write_percent

FAILING = ["print('a')", "1 / 0", "print('b')", "raise ValueError('second')", "print('c')"]


@pytest.fixture
def ws(tmp_path, use_jupyter):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def write_nb(path, sources, tags=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    for index, cell_tags in (tags or {}).items():
        nb.cells[index].metadata["tags"] = cell_tags
    nbformat.write(nb, str(path))


def run_file(session, ws, name, *extra, env=None):
    result = run_cli("-j", "exec", session, "-f", name, *extra, cwd=ws, env=env)
    return result, [json.loads(line) for line in result.stdout.splitlines()]


def read_nb(path):
    return nbformat.read(str(path), as_version=4)


def instant(text):
    assert text.endswith("Z") and len(text) == len("2026-01-02T03:04:05.123456Z"), text
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def test_allow_errors_runs_past_two_failing_cells_and_says_which_failed(ws, kernel_session):
    write_nb(ws / "fails.ipynb", FAILING)
    result, lines = run_file(kernel_session, ws, "fails.ipynb", "--allow-errors")
    assert result.returncode == 1, result.stderr  # the run had errors: the exit status says so
    *cells, summary = lines
    assert [line["cell_index"] for line in cells] == [0, 1, 2, 3, 4]
    assert [line["status"] for line in cells] == ["ok", "error", "ok", "error", "ok"]
    assert cells[1]["error"]["ename"] == "ZeroDivisionError" and cells[3]["error"]["evalue"] == "second"
    assert not any(line.get("expected_error") for line in cells)
    assert summary["status"] == "error" and summary["cells_run"] == 5 and summary["cells_failed"] == 2
    assert summary["failed_cells"] == [1, 3] and "stopped_at" not in summary
    nb = read_nb(ws / "fails.ipynb")
    assert [o.output_type for c in nb.cells for o in c.outputs] == ["stream", "error", "stream", "error", "stream"]
    assert nb.cells[1].outputs[0].ename == "ZeroDivisionError" and nb.cells[3].outputs[0].ename == "ValueError"
    assert nb.cells[4].outputs[0].text == "c\n"  # the kernel ran what came after the errors
    plain = run_cli("exec", kernel_session, "-f", "fails.ipynb", "--allow-errors", cwd=ws)
    assert plain.returncode == 1
    assert "[5 cell(s) run into" in plain.stderr.decode() and "failed: cell(s) 1, 3" in plain.stderr.decode()


def test_without_the_flag_the_first_error_still_stops_the_run(ws, kernel_session):
    write_nb(ws / "fails.ipynb", FAILING)
    result, lines = run_file(kernel_session, ws, "fails.ipynb")
    assert result.returncode == 1
    assert lines[-1]["failed_cells"] == [1] and lines[-1]["stopped_at"] == 1 and lines[-1]["cells_run"] == 2
    assert read_nb(ws / "fails.ipynb").cells[2].outputs == []


def test_a_cell_tagged_raises_exception_may_raise_without_the_flag(ws, kernel_session):
    sources = ["print('a')", "1 / 0", "print('tagged, fine')", "print('after')"]
    write_nb(ws / "tagged.ipynb", sources, tags={1: ["raises-exception"], 2: ["raises-exception", "other"]})
    result, lines = run_file(kernel_session, ws, "tagged.ipynb")
    assert result.returncode == 0, result.stderr
    *cells, summary = lines
    assert cells[1]["status"] == "error" and cells[1]["expected_error"] is True
    assert cells[2]["status"] == "ok" and "expected_error" not in cells[2]  # a tagged cell that does not raise is fine too
    assert summary["status"] == "ok" and summary["expected_errors"] == [1] and summary["cells_failed"] == 0
    assert "failed_cells" not in summary and "code_aliases" not in summary
    nb = read_nb(ws / "tagged.ipynb")
    assert nb.cells[1].outputs[0].ename == "ZeroDivisionError" and nb.cells[3].outputs[0].text == "after\n"


def test_a_py_marker_tag_lets_its_cell_raise(ws, kernel_session):
    (ws / "tagged.py").write_text("# %%\nprint('a')\n\n# %% tags=[\"raises-exception\"]\n1 / 0\n\n# %%\nprint('after')\n")
    result, lines = run_file(kernel_session, ws, "tagged.py")
    assert result.returncode == 0, result.stderr
    assert lines[1]["expected_error"] is True and lines[-1]["expected_errors"] == [1] and lines[-1]["cells_run"] == 3


def test_each_cell_records_when_it_ran_in_the_notebook_and_its_line(ws, kernel_session):
    write_nb(ws / "timed.ipynb", ["import time\ntime.sleep(0.2)", "1 / 0", "print('x')"])
    result, lines = run_file(kernel_session, ws, "timed.ipynb", "--allow-errors")
    assert result.returncode == 1
    nb = read_nb(ws / "timed.ipynb")
    nbformat.validate(nb)
    previous_idle = None
    for cell, line in zip(nb.cells, lines[:-1], strict=True):
        execution = cell.metadata["execution"]
        assert set(execution) == set(TIMING_KEYS)  # (written with sorted keys, as nbformat does)
        moments = [instant(execution[key]) for key in TIMING_KEYS]
        assert moments == sorted(moments)  # busy <= execute_input <= reply <= idle
        assert previous_idle is None or previous_idle <= moments[0]  # cells ran in order
        previous_idle = moments[-1]
        timing = line["timing"]
        assert timing["started"] == execution["iopub.status.busy"] and timing["ended"] == execution["iopub.status.idle"]
        assert timing["duration_s"] == pytest.approx((moments[-1] - moments[0]).total_seconds())
    assert lines[0]["timing"]["duration_s"] >= 0.2
    rerun, _ = run_file(kernel_session, ws, "timed.ipynb", "--cell", "2")
    assert rerun.returncode == 0
    again = read_nb(ws / "timed.ipynb")
    assert again.cells[2].metadata["execution"] != nb.cells[2].metadata["execution"]  # the new run's times
    assert again.cells[0].metadata["execution"] == nb.cells[0].metadata["execution"]  # a cell not run keeps its own


def test_a_pair_run_records_timing_in_the_notebook_only(ws, kernel_session):
    text = "# %% [markdown]\n# Title\n\n# %%\nx = 1\n\n# %%\nprint(x)\n"
    (ws / "pair.py").write_text(text)
    result, lines = run_file(kernel_session, ws, "pair.py")
    assert result.returncode == 0, result.stderr
    nb = read_nb(ws / "pair.ipynb")
    assert [set(c.metadata.get("execution", {})) for c in nb.cells] == [set(), set(TIMING_KEYS), set(TIMING_KEYS)]
    assert (ws / "pair.py").read_text() == text  # the run never writes the .py
    assert "execution" not in write_percent(json.loads((ws / "pair.ipynb").read_text())["cells"])
    converted = run_cli("convert", "ipynb-to-py", "pair.ipynb", "-o", "back.py", cwd=ws)
    assert converted.returncode == 0, converted.stderr
    assert "iopub" not in (ws / "back.py").read_text() and "execution" not in (ws / "back.py").read_text()
    again, _ = run_file(kernel_session, ws, "pair.py")  # timing in the notebook is no edit: the pair still agrees
    assert again.returncode == 0, again.stderr
    (ws / "pair.py").write_text(text.replace("print(x)", "print(x + 1)"))
    edited, lines = run_file(kernel_session, ws, "pair.py", "--cell", "1")
    assert edited.returncode == 0, edited.stderr
    nb = read_nb(ws / "pair.ipynb")
    assert "execution" in nb.cells[1].metadata and "execution" not in nb.cells[2].metadata  # the edited cell's old times went


def test_an_edited_cell_loses_its_old_run_times_in_the_sync():
    cell = {
        "cell_type": "code",
        "id": "a",
        "source": "x = 1",
        "metadata": {"execution": {"iopub.status.busy": "2026-01-02T03:04:05.000000Z"}, "tags": ["keep"]},
        "outputs": [],
        "execution_count": 1,
    }
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
    kept, _, _ = sync_notebook([PercentCell("code", "x = 1", "a")], nb)
    assert kept["cells"][0]["metadata"] == cell["metadata"]
    edited, _, report = sync_notebook([PercentCell("code", "x = 2", "a")], nb)
    assert report["edited"] == 1 and edited["cells"][0]["metadata"] == {"tags": ["keep"]}


def test_run_timeout_interrupts_the_running_cell_and_starts_no_other(ws, kernel_session):
    (ws / "long.py").write_text(
        "# %%\nprint('first')\n\n# %%\nimport time\nprint('sleeping', flush=True)\ntime.sleep(30)\n\n# %%\nprint('never')\n"
    )
    started = time.monotonic()
    result, lines = run_file(kernel_session, ws, "long.py", "--run-timeout", "2")
    assert time.monotonic() - started < 25
    assert result.returncode == 1
    first, cut, summary = lines
    assert first["status"] == "ok"
    assert cut["cell_index"] == 1 and cut["code"] == "TIMEOUT" and cut["executed"] is True and cut["run_timeout"] == 2
    assert "--run-timeout 2 s" in cut["message"] and "sleeping" in cut["result"]["text"]
    assert summary["code"] == "TIMEOUT" and summary["stopped_at"] == 1 and summary["not_run"] == [2]
    assert summary["run_timeout"] == 2 and "--run-timeout" in summary["message"]
    nb = read_nb(ws / "long.ipynb")
    assert nb.cells[1].outputs[0].text == "sleeping\n" and "jcli" not in nb.cells[1].metadata
    assert nb.cells[2].outputs == []
    kept = run_cli("-j", "exec", kernel_session, "-c", "print('alive')", cwd=ws)  # the kernel was interrupted, not lost
    assert kept.returncode == 0 and kept.json()["text"] == "alive\n"


def test_a_budget_larger_than_the_run_changes_nothing(ws, kernel_session):
    write_nb(ws / "quick.ipynb", ["1", "2"])
    result, lines = run_file(kernel_session, ws, "quick.ipynb", "--run-timeout", "600", "--timeout", "60")
    assert result.returncode == 0, result.stderr
    assert lines[-1]["status"] == "ok" and lines[-1]["cells_run"] == 2 and "notes" not in lines[-1]


def test_a_per_cell_timeout_on_several_cells_gets_a_note(ws, kernel_session):
    write_nb(ws / "two.ipynb", ["1", "2"])
    _, lines = run_file(kernel_session, ws, "two.ipynb", "--timeout", "30")
    (note,) = lines[-1]["notes"]
    assert note.startswith("--timeout 30 applies to each cell (2 cells here, up to 60 s in all)") and "--run-timeout" in note
    plain = run_cli("exec", kernel_session, "-f", "two.ipynb", "--timeout", "30", cwd=ws)
    assert plain.returncode == 0 and "j-cli: note: --timeout 30 applies to each cell" in plain.stderr.decode()
    _, one = run_file(kernel_session, ws, "two.ipynb", "--timeout", "30", "--cell", "1")
    assert "notes" not in one[-1]  # one cell: per cell is the whole run
    _, from_env = run_file(kernel_session, ws, "two.ipynb", env={**os.environ, "JCLI_EXEC_TIMEOUT": "30"})
    assert "notes" not in from_env[-1]  # only a --timeout the caller typed


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "1", "--allow-errors"],
        ["-c", "1", "--run-timeout", "5"],
        ["-f", "two.ipynb", "--run-timeout", "-1"],
        ["-f", "two.ipynb", "--run-timeout", "inf"],
    ],
)
def test_the_run_options_are_refused_where_they_do_not_apply(ws, kernel_session, args):
    write_nb(ws / "two.ipynb", ["1", "2"])
    result = run_cli("-j", "exec", kernel_session, *args, cwd=ws)
    assert result.returncode == 2, result.stderr
    assert result.error()["code"] == "USAGE_ERROR" and result.error()["executed"] is False
    assert read_nb(ws / "two.ipynb").cells[0].outputs == []


def test_a_background_run_goes_on_past_errors_the_same_way(ws, kernel_session, sidecar_on):
    write_nb(ws / "fails.ipynb", FAILING, tags={3: ["raises-exception"]})
    started = run_cli("-j", "exec", kernel_session, "-f", "fails.ipynb", "--allow-errors", "--background", cwd=ws)
    assert started.returncode == 0, started.stderr
    waited = run_cli("-j", "job", "wait", started.json()["job_id"], cwd=ws)
    assert waited.returncode == 0, waited.stderr
    job = waited.json()["jobs"][0]
    assert job["state"] == "error" and job["cells_done"] == 5
    assert job["result"]["failed_cells"] == [1] and job["result"]["expected_errors"] == [3]
    nb = read_nb(ws / "fails.ipynb")
    assert nb.cells[4].outputs[0].text == "c\n" and all(set(c.metadata["execution"]) == set(TIMING_KEYS) for c in nb.cells)


def test_a_budget_spent_before_a_cell_starts_runs_no_further_cell(ws, kernel_session):
    write_nb(ws / "two.ipynb", ["print('one')", "print('two')"])
    before = (ws / "two.ipynb").read_bytes()
    result, lines = run_file(kernel_session, ws, "two.ipynb", "--run-timeout", "0.000000001")  # spent at once
    assert result.returncode == 1, result.stderr
    (summary,) = lines
    assert summary["status"] == "error" and summary["code"] == "TIMEOUT" and summary["cells_run"] == 0
    assert summary["stopped_at"] == 0 and summary["not_run"] == [0, 1] and "before cell 0 started" in summary["message"]
    assert (ws / "two.ipynb").read_bytes() == before
    plain = run_cli("exec", kernel_session, "-f", "two.ipynb", "--run-timeout", "0.000000001", cwd=ws)
    assert plain.returncode == 1 and "j-cli: error [TIMEOUT]: the run's budget ran out" in plain.stderr.decode()
    assert "not run: cell(s) 0, 1" in plain.stderr.decode()


def test_a_background_run_keeps_to_its_budget_the_same_way(ws, kernel_session, sidecar_on):
    write_nb(ws / "long.ipynb", ["print('first')", "import time\ntime.sleep(30)", "print('never')"])
    started = run_cli("-j", "exec", kernel_session, "-f", "long.ipynb", "--run-timeout", "2", "--background", cwd=ws)
    assert started.returncode == 0, started.stderr
    waited = run_cli("-j", "job", "wait", started.json()["job_id"], cwd=ws)
    assert waited.returncode == 0, waited.stderr
    job = waited.json()["jobs"][0]
    assert job["state"] == "timeout" and job["result"]["not_run"] == [2] and job["result"]["run_timeout"] == 2
    nb = read_nb(ws / "long.ipynb")
    assert nb.cells[0].outputs[0].text == "first\n" and nb.cells[2].outputs == []


def test_message_dates_are_written_as_nbclient_writes_them():
    from jcli_sidecar.kernel.cell_timing import message_time, timing_fields

    assert message_time({"header": {"date": "2026-12-02T10:07:14.010071Z"}}) == "2026-12-02T10:07:14.010071Z"
    assert message_time({"header": {"date": "2026-12-02T10:07:14Z"}}) == "2026-12-02T10:07:14.000000Z"  # isoformat drops zero microseconds
    assert message_time({"header": {"date": "2026-12-02T12:07:14.5+02:00"}}) == "2026-12-02T10:07:14.500000Z"
    assert message_time({"header": {"date": "2026-12-02T10:07:14.5"}}) == "2026-12-02T10:07:14.500000Z"  # naive: UTC
    for odd in ({}, {"header": None}, {"header": {"date": "yesterday"}}, {"header": {"date": "٢٠٢٦-12-02T10:07:14.010071Z"}}):
        instant(message_time(odd))  # the local clock's time, in the same form
    assert timing_fields({"iopub.execute_input": "2026-12-02T10:07:14.000000Z"}) is None
    assert timing_fields({"iopub.status.busy": "x", "shell.execute_reply": "y"}) == {"started": "x", "ended": "y", "duration_s": None}
