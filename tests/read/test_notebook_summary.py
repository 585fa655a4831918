"""``j-cli notebook summary|show|map`` against real files, notebooks a real kernel ran, and hostile inputs."""

from __future__ import annotations

import json
import os

import nbformat
import pytest
from helpers import run_cli

from jcli_sidecar.read.cell_analysis import NAME_LIMIT, analyse_code
from jcli_sidecar.read.notebook_summary import SUMMARY_CELL_LIMIT
from jcli_sidecar.read.staleness import source_digest

# A pair with a bare line magic and a shell escape (IPython syntax, not Python),
# a cell that raises and one after it that the run never reaches.
PAIR = """\
# %% [markdown]
# # Report

# %%
import math
def area(r):
    return math.pi * r ** 2
print(area(1))

# %%
!echo shell
%time z = area(2)
total = z + 1

# %%
1 / 0

# %%
never = 1
"""


@pytest.fixture
def ws(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def cli(ws, *args, env=None):
    return run_cli(*args, cwd=ws, env=env)


def write_nb(path, sources, outputs=None):
    nb = nbformat.v4.new_notebook()
    for i, source in enumerate(sources):
        kind, text = source if isinstance(source, tuple) else ("code", source)
        cell = nbformat.v4.new_markdown_cell(text) if kind == "markdown" else nbformat.v4.new_code_cell(text)
        cell["id"] = f"c{i}"
        if outputs and i in outputs:
            cell["outputs"], cell["execution_count"] = outputs[i]
        nb.cells.append(cell)
    nbformat.write(nb, str(path))


@pytest.fixture
def ran_pair(ws, use_jupyter, kernel_session):
    """report.py run by a real kernel: report.ipynb holds its outputs, counts and the error."""
    (ws / "report.py").write_text(PAIR)
    result = run_cli("-j", "exec", kernel_session, "-f", "report.py", cwd=ws)
    assert result.returncode == 1, result.stderr  # the 1 / 0 cell stops the run
    return ws


def test_summary_of_a_run_pair_tells_outputs_errors_counts_and_magics(ran_pair):
    doc = cli(ran_pair, "-j", "notebook", "summary", "report.py").json()
    assert doc["kind"] == "py" and doc["paired"] and doc["cell_count"] == 5 and doc["kernel"]
    md, code, magic, boom, never = doc["cells"]
    assert md["cell_type"] == "markdown" and md["source_start_line"] == 1 and "parsed" not in md
    assert (code["source_start_line"], code["source_end_line"], code["line_count"]) == (4, 8, 4)
    assert isinstance(code["execution_count"], int) and code["outputs"] == 1 and code["error"] is None
    assert code["imports"] == ["math"] and code["defines"] == ["area"] and code["calls"] == ["print", "area"] and code["parsed"] is True
    # IPython syntax is turned into Python first: the rest of the cell is still read.
    assert magic["parsed"] is True and magic["magics"] == ["!", "%time"] and magic["writes"] == ["total"]
    assert magic["outputs"] >= 1 and isinstance(magic["execution_count"], int)
    assert boom["error"] == "ZeroDivisionError: division by zero" and boom["outputs"] == 1
    assert never["execution_count"] is None and never["outputs"] == 0 and never["error"] is None
    assert {row["pair_change"] for row in doc["cells"]} == {"equal"}
    assert [row["notebook_cell_index"] for row in doc["cells"]] == [0, 1, 2, 3, 4]

    human = cli(ran_pair, "notebook", "summary", "report.py")
    assert human.returncode == 0, human.stderr
    text = human.stdout.decode()
    assert "report.py: 5 cells (paired with" in text
    assert "error ZeroDivisionError: division by zero" in text and "not run" in text
    assert "magics !, %time" in text and "defines area" in text


def test_summary_of_the_notebook_gives_the_py_spans(ran_pair):
    doc = cli(ran_pair, "-j", "notebook", "summary", "report.ipynb").json()
    assert doc["kind"] == "notebook" and doc["paired"] and doc["py_path"] == str(ran_pair / "report.py")
    spans = [(row["source_start_line"], row["source_end_line"]) for row in doc["cells"]]
    assert spans == [(1, 2), (4, 8), (10, 13), (15, 16), (18, 19)]
    assert doc["cells"][3]["error"].startswith("ZeroDivisionError")
    assert [row["py_cell_index"] for row in doc["cells"]] == [0, 1, 2, 3, 4]


def test_summary_copes_with_every_magic_form_and_a_cell_that_does_not_parse(ws):
    sources = [
        "%%bash\necho hi",
        "files = !ls\nfor f in files:\n    print(f)",
        "len?",
        "%matplotlib inline\nimport numpy as np",
        "!pip list\ndef broken(:\n    pass",
        "x = (",
    ]
    write_nb(ws / "m.ipynb", sources)
    result = cli(ws, "-j", "notebook", "summary", "m.ipynb")
    assert result.returncode == 0, result.stderr
    rows = result.json()["cells"]
    assert rows[0]["magics"] == ["%%bash"] and rows[0]["parsed"] is True
    assert rows[1]["magics"] == ["!"] and rows[1]["writes"] == ["files", "f"] and rows[1]["calls"] == ["print"]
    assert rows[2]["magics"] == ["?"]
    assert rows[3]["magics"] == ["%matplotlib"] and rows[3]["imports"] == ["numpy as np"]
    for row in rows[4:]:
        assert row["parsed"] is False and "line" in row["parse_error"] and row["calls"] == []
    assert "line 2" in rows[4]["parse_error"]  # the error is placed in the cell as written
    human = cli(ws, "notebook", "summary", "m.ipynb")
    assert human.returncode == 0 and b"does not parse:" in human.stdout


def test_analysis_lists_are_bounded():
    source = "\n".join(f"import mod{i}\nv{i} = f{i}()" for i in range(3 * NAME_LIMIT)) + "\n" + "y" * 500 + " = 1"
    info = analyse_code(source)
    assert len(info["imports"]) == NAME_LIMIT and len(info["calls"]) == NAME_LIMIT
    assert set(info["names_truncated"]) == {"imports", "writes", "calls"}
    assert info["writes"][:2] == ["v0", "v1"]
    info = analyse_code("z" * 500 + " = 1")
    assert len(info["writes"][0]) <= 60 and info["writes"][0].endswith("…")


@pytest.mark.slow
def test_summary_of_a_big_notebook_stays_small_and_pages(ws):
    body = "\n".join([f"import package_{i}" for i in range(30)] + [f"value_{i} = compute_{i}(value_{i - 1})" for i in range(60)])
    sources = [body] * 2000
    write_nb(ws / "big.ipynb", sources)
    result = cli(ws, "-j", "notebook", "summary", "big.ipynb")
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert len(result.stdout) < 256 * 1024
    assert doc["cell_count"] == 2000 and len(doc["cells"]) == SUMMARY_CELL_LIMIT
    assert doc["cells_omitted"] == 2000 - SUMMARY_CELL_LIMIT and doc["next_cells"] == f"{SUMMARY_CELL_LIMIT}:2000"
    row = doc["cells"][0]
    assert row["preview_truncated"] and len(row["preview"]) <= 160 and row["line_count"] == 90
    tail = cli(ws, "-j", "notebook", "summary", "big.ipynb", "--cell", "1990:").json()
    assert [r["cell_index"] for r in tail["cells"]] == list(range(1990, 2000)) and tail["next_cells"] is None
    human = cli(ws, "notebook", "summary", "big.ipynb")
    assert human.returncode == 0 and len(human.stdout) < 64 * 1024
    assert f"add --cell {SUMMARY_CELL_LIMIT}:2000" in human.stdout.decode()


def test_show_gives_whole_sources_for_every_spec_form(ws):
    (ws / "p.py").write_text(PAIR)
    doc = cli(ws, "-j", "notebook", "show", "p.py", "--cell", "1").json()
    assert doc["cell_count"] == 5 and len(doc["cells"]) == 1
    cell = doc["cells"][0]
    assert cell["source"] == "import math\ndef area(r):\n    return math.pi * r ** 2\nprint(area(1))"
    assert (cell["source_start_line"], cell["source_end_line"], cell["cell_type"]) == (4, 8, "code")
    for spec, expected in (("1:3", [1, 2]), ("3:", [3, 4]), (":2", [0, 1]), ("0:5", [0, 1, 2, 3, 4])):
        got = cli(ws, "-j", "notebook", "show", "p.py", "--cell", spec).json()
        assert [c["cell_index"] for c in got["cells"]] == expected, spec
    human = cli(ws, "notebook", "show", "p.py", "--cell", "3:")
    assert human.returncode == 0
    sha3, sha4 = source_digest("1 / 0"), source_digest("never = 1")
    assert human.stdout.decode() == f"--- cell 3 code L15-16 sha={sha3} ---\n1 / 0\n--- cell 4 code L18-19 sha={sha4} ---\nnever = 1\n"
    write_nb(ws / "n.ipynb", [("markdown", "# T"), "x = 1\n\n"])
    got = cli(ws, "-j", "notebook", "show", "n.ipynb", "--cell", "1").json()["cells"][0]
    # as stored; its source_sha is the digest a cell edit's --if-source checks
    assert got == {"cell_index": 1, "cell_id": "c1", "cell_type": "code", "source": "x = 1\n\n", "source_sha": source_digest("x = 1")}


@pytest.mark.parametrize("spec", ["5", "9", "2:9", "5:", ":6", "3:3", "4:2"])
def test_show_refuses_a_spec_outside_the_file_instead_of_clamping(ws, spec):
    (ws / "p.py").write_text(PAIR)
    result = cli(ws, "-j", "notebook", "show", "p.py", "--cell", spec)
    assert result.returncode == 1 and result.stdout == b""
    error = result.error()
    assert error["code"] == "CELL_NOT_FOUND" and error["cell_count"] == 5 and "(5 cells)" in error["message"]
    human = cli(ws, "notebook", "show", "p.py", "--cell", spec)
    assert human.returncode == 1 and b"[CELL_NOT_FOUND]" in human.stderr and b"5 cells" in human.stderr


@pytest.mark.parametrize("spec", ["x", "-1", "1:2:3", "a:b", ""])
def test_a_bad_spec_is_a_usage_error(ws, spec):
    (ws / "p.py").write_text(PAIR)
    for command in ("show", "summary"):
        result = cli(ws, "-j", "notebook", command, "p.py", "--cell", spec)
        assert result.returncode == 2 and result.error()["code"] == "USAGE_ERROR"


def test_map_after_a_run_tells_which_side_changed(ran_pair):
    ws = ran_pair
    doc = cli(ws, "-j", "notebook", "map", "report.py").json()
    assert doc["paired"] and doc["in_sync"] and doc["since_last_sync"] == {"py_changed": False, "notebook_changed": False}
    assert {row["change"] for row in doc["cells"]} == {"equal"} and doc["sync"]["refused"] is None
    assert [row["match"] for row in doc["cells"]] == ["content"] * 5  # the run wrote ids onto the notebook only
    # The .py changes: one cell edited in place, one added, one removed.
    edited = PAIR.replace("total = z + 1", "total = z + 2").replace("# %%\nnever = 1\n", "# %%\nbrand_new()\n")
    (ws / "report.py").write_text(edited)
    doc = cli(ws, "-j", "notebook", "map", "report.py").json()
    assert not doc["in_sync"] and doc["since_last_sync"] == {"py_changed": True, "notebook_changed": False}
    changes = [(row["py_index"], row["notebook_index"], row["match"], row["change"], row["changed_on"]) for row in doc["cells"]]
    assert changes[2] == (2, 2, "position", "edited", "py")
    assert (4, None, None, "only_py", "py") in changes and (None, 4, None, "only_notebook", "py") in changes
    assert doc["sync"] == {"kept": 3, "edited": 1, "added": 1, "removed": 1, "refused": None}
    human = cli(ws, "notebook", "map", "report.py").stdout.decode()
    assert "not in sync" in human and "the .py changed" in human and "edit 1, add 1, remove 1" in human
    assert "edited (py)" in human and "only notebook (py)" in human


def test_map_names_a_notebook_edit_and_the_refusal_it_causes(ran_pair):
    ws = ran_pair
    nb = nbformat.read(str(ws / "report.ipynb"), as_version=4)
    nb.cells[4].source = "never = 10"  # edited in JupyterLab
    nbformat.write(nb, str(ws / "report.ipynb"))
    doc = cli(ws, "-j", "notebook", "map", "report.ipynb").json()
    assert doc["since_last_sync"] == {"py_changed": False, "notebook_changed": True}
    assert doc["cells"][4]["change"] == "edited" and doc["cells"][4]["changed_on"] == "notebook"
    assert doc["sync"]["refused"] == {"code": "PAIR_CONFLICT", "reason": "notebook_edited", "cells": [4]}
    human = cli(ws, "notebook", "map", "report.ipynb").stdout.decode()
    assert "it would refuse (PAIR_CONFLICT, notebook_edited)" in human


def test_map_of_a_pair_never_synced_matches_by_content(ws):
    (ws / "p.py").write_text("# %%\na = 1\n\n# %%\nb = 2\n")
    write_nb(ws / "p.ipynb", ["a = 1", "b = 3"])
    doc = cli(ws, "-j", "notebook", "map", "p.py").json()
    assert doc["since_last_sync"] is None
    rows = [(r["match"], r["change"], r["changed_on"], r["notebook_cell_id"]) for r in doc["cells"]]
    assert rows == [("content", "equal", None, "c0"), ("position", "edited", "unknown", "c1")]


def test_map_without_a_pair_says_so_and_succeeds(ws):
    (ws / "alone.py").write_text("# %%\nx = 1\n")
    doc = cli(ws, "-j", "notebook", "map", "alone.py").json()
    assert doc["paired"] is False and doc["cells"] == [] and "alone.ipynb does not exist" in doc["pair_note"]
    human = cli(ws, "notebook", "map", "alone.py")
    assert human.returncode == 0 and human.stdout.decode() == "alone.py: not paired: no paired notebook (alone.ipynb does not exist)\n"
    write_nb(ws / "solo.ipynb", ["x = 1"])
    doc = cli(ws, "-j", "notebook", "map", "solo.ipynb").json()
    assert doc["paired"] is False and "solo.py does not exist" in doc["pair_note"]
    summary = cli(ws, "-j", "notebook", "summary", "alone.py").json()["cells"][0]
    assert summary["outputs"] is None and summary["execution_count"] is None  # unknown without a notebook


def test_reads_change_nothing(ran_pair):
    ws = ran_pair
    (ws / "report.py").write_text(PAIR.replace("never = 1", "never = 2"))
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in ws.iterdir() if p.is_file()}
    for name in ("report.py", "report.ipynb"):
        for mode in ((), ("-j",)):
            for args in (("summary", name), ("show", name, "--cell", "0:"), ("map", name)):
                assert cli(ws, *mode, "notebook", *args).returncode == 0
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in ws.iterdir() if p.is_file()}
    assert after == before


@pytest.mark.slow
def test_hostile_files_get_coded_errors(ws):
    os.mkfifo(ws / "fifo.ipynb")
    (ws / "bad.ipynb").write_text("{not json")
    (ws / "plain.py").write_text("print('no markers')\n")
    (ws / "latin.py").write_bytes(b"# %%\nx = '\xe9'\n")
    os.mkdir(ws / "dir.ipynb")
    write_nb(ws / "big.ipynb", ["x = 1" * 400])
    cases = [
        (("fifo.ipynb",), "NOTEBOOK_READ_FAILED", "FIFO", None),
        (("bad.ipynb",), "NOTEBOOK_READ_FAILED", "not valid JSON", None),
        (("plain.py",), "NOTEBOOK_READ_FAILED", "plain script", None),
        (("latin.py",), "NOTEBOOK_READ_FAILED", "not UTF-8", None),
        (("dir.ipynb",), "NOTEBOOK_READ_FAILED", "directory", None),
        (("missing.ipynb",), "FILE_NOT_FOUND", "no such file", None),
        (("big.ipynb",), "NOTEBOOK_READ_FAILED", "read limit", {**os.environ, "JCLI_MAX_FILE_MB": "0.001"}),
    ]
    for (name,), code, words, env in cases:
        for command in (("summary", name), ("show", name, "--cell", "0"), ("map", name)):
            result = cli(ws, "-j", "notebook", *command, env=env)
            assert result.returncode == 1, (command, result.stderr)
            error = result.error()
            assert error["code"] == code and words in error["message"], (command, error)
            human = cli(ws, "notebook", *command, env=env)
            assert human.returncode == 1 and f"[{code}]".encode() in human.stderr and b"Traceback" not in human.stderr


def test_an_unreadable_pair_is_a_note_not_a_failure(ws):
    (ws / "p.py").write_text("# %%\nx = 1\n")
    os.mkfifo(ws / "p.ipynb")
    doc = cli(ws, "-j", "notebook", "summary", "p.py").json()
    assert doc["paired"] is False and "FIFO" in doc["pair_note"] and doc["cells"][0]["writes"] == ["x"]
    assert cli(ws, "-j", "notebook", "map", "p.py").json()["paired"] is False


def test_odd_cells_and_control_characters_never_break_a_summary(ws):
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            "not a cell",
            {"cell_type": "code", "id": "a", "source": 42, "outputs": "nope", "execution_count": True, "metadata": {}},
            {"cell_type": "code", "id": "b", "source": "print('\x1b[31mred')", "outputs": [], "metadata": {}},
        ],
    }
    (ws / "odd.ipynb").write_text(json.dumps(nb))
    result = cli(ws, "-j", "notebook", "summary", "odd.ipynb")
    assert result.returncode == 0, result.stderr
    rows = result.json()["cells"]
    assert rows[0]["problem"].startswith("not a notebook cell") and rows[0]["cell_type"] is None
    assert "neither a string" in rows[1]["problem"] and rows[1]["execution_count"] is None and rows[1]["outputs"] == 0
    human = cli(ws, "notebook", "summary", "odd.ipynb")
    assert human.returncode == 0 and b"\x1b" not in human.stdout and b"\\x1b[31mred" in human.stdout
    shown = cli(ws, "notebook", "show", "odd.ipynb", "--cell", "0:")
    assert shown.returncode == 0 and b"\x1b" not in shown.stdout


def test_a_symlinked_py_reads_its_pair_beside_the_target(ws):
    real = ws / "real"
    real.mkdir()
    (real / "t.py").write_text("# %%\nx = 1\n")
    write_nb(real / "t.ipynb", ["x = 1"], outputs={0: ([], 7)})
    os.symlink(real / "t.py", ws / "link.py")
    doc = cli(ws, "-j", "notebook", "summary", "link.py").json()
    assert doc["paired"] and doc["path"] == "link.py" and doc["cells"][0]["execution_count"] == 7
