"""``j-cli notebook cell ...`` on the file path, through the installed binary: no server runs, so the file is edited.

An agent reads a cell's ``source_sha`` from ``notebook show`` and edits
with ``--if-source``; a stale one is refused with the cell's current
source and the file is left byte for byte. Another program's save that
lands between j-cli's read and its swap (the exec stall hook at
``cell-edit:swap``, never a sleep) is detected: theirs stays, j-cli's copy
is kept beside, and the edit made again from what ``show`` gives now keeps
both. Hostile input (a FIFO, a device, a symlink out of the workspace, a
text that is no notebook, a paired notebook, bad cells and flags) is a
coded error and changes nothing.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat
import pytest
from helpers import run_cli
from test_hostile_exec import Exec, no_exec_left_running  # noqa: F401 (an autouse fixture: a stalled j-cli is reaped)

from jcli_sidecar.read.staleness import source_digest


def write_nb(path: Path, minor: int = 5) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = minor
    cells = [
        nbformat.v4.new_code_cell("x = 1", execution_count=1, outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")]),
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("print(x)"),
    ]
    for n, cell in enumerate(cells):
        if minor >= 5:
            cell["id"] = f"c{n}"
        else:
            cell.pop("id", None)
    nb.cells = cells
    nbformat.write(nb, str(path))
    return path


@pytest.fixture
def ws(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    write_nb(work / "nb.ipynb")
    return work


def cli(ws: Path, *args: str, stdin: bytes | None = None):
    return run_cli(*args, cwd=ws, stdin=stdin)


def cells(path: Path) -> list[dict]:
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    return [dict(cell) for cell in nb.cells]


def shown(ws: Path, spec: str = "0:") -> list[dict]:
    result = cli(ws, "-j", "notebook", "show", "nb.ipynb", "--cell", spec)
    assert result.returncode == 0, result.stderr
    return result.json()["cells"]


def test_an_agent_edits_by_the_sha_show_gave_and_a_stale_sha_is_refused_with_the_source_now(ws):
    nb = ws / "nb.ipynb"
    row = shown(ws, "0")[0]
    assert row["cell_id"] == "c0" and row["source_sha"] == source_digest("x = 1")
    summary = cli(ws, "-j", "notebook", "summary", "nb.ipynb").json()
    assert [r["source_sha"] for r in summary["cells"]] == [source_digest(s) for s in ("x = 1", "# Title", "print(x)")]

    result = cli(ws, "-j", "notebook", "cell", "replace", "nb.ipynb", "c0", "--source", "x = 2", "--if-source", row["source_sha"])
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert doc["status"] == "ok" and doc["op"] == "replace" and doc["cell_id"] == "c0" and doc["cell_index"] == 0
    assert doc["source_sha"] == source_digest("x = 2") and doc["live"] is False and "JCLI_LIVE=off" in doc["live_reason"]
    cell = cells(nb)[0]
    assert cell["source"] == "x = 2" and cell["outputs"] == [] and cell["execution_count"] is None

    before = nb.read_bytes()
    stale = cli(ws, "-j", "notebook", "cell", "replace", "nb.ipynb", "c0", "--source", "x = 3", "--if-source", row["source_sha"])
    assert stale.returncode == 1 and stale.stdout == b""
    error = stale.error()
    assert error["code"] == "CELL_CHANGED" and error["source"] == "x = 2" and error["source_sha"] == source_digest("x = 2")
    assert error["cell_id"] == "c0" and error["expected_sha"] == row["source_sha"]
    assert nb.read_bytes() == before
    human = cli(ws, "notebook", "cell", "delete", "nb.ipynb", "c0", "--if-source", row["source_sha"])
    assert human.returncode == 1 and b"[CELL_CHANGED]" in human.stderr and b"Traceback" not in human.stderr
    assert nb.read_bytes() == before


def test_insert_move_clear_and_delete_through_the_binary(ws):
    nb = ws / "nb.ipynb"
    (ws / "src.py").write_text("from_file = 1\n")
    inserted = cli(ws, "-j", "notebook", "cell", "insert", "nb.ipynb", "--after", "c0", "--source-file", "src.py").json()
    new_id = inserted["cell_id"]
    assert inserted["cell_index"] == 1 and [c["id"] for c in cells(nb)] == ["c0", new_id, "c1", "c2"]
    piped = cli(
        ws, "-j", "notebook", "cell", "insert", "nb.ipynb", "--at", "0", "--type", "markdown", "--source-file", "-", stdin=b"# Top\n"
    )
    assert piped.returncode == 0, piped.stderr
    assert cells(nb)[0]["cell_type"] == "markdown" and cells(nb)[0]["source"] == "# Top\n"

    human = cli(ws, "notebook", "cell", "move", "nb.ipynb", new_id, "--to", "4")
    assert human.returncode == 0, human.stderr
    line = human.stdout.decode()
    assert line.startswith(f"moved cell 4 id={new_id} sha={source_digest('from_file = 1')} of nb.ipynb (5 cells), in the file")
    assert [c["id"] for c in cells(nb)][-1] == new_id

    cleared = cli(ws, "-j", "notebook", "cell", "clear", "nb.ipynb", "--all").json()
    assert cleared["cleared"] == [1, 3, 4]
    assert all(c.get("outputs", []) == [] for c in cells(nb))
    by_index = cli(ws, "-j", "notebook", "cell", "delete", "nb.ipynb", "1").json()  # an index, resolved to its id
    assert by_index["cell_id"] == "c0" and "c0" not in [c["id"] for c in cells(nb)]


def test_a_notebook_without_ids_is_edited_by_index_and_an_id_is_refused_saying_why(tmp_path):
    ws = tmp_path / "old"
    ws.mkdir()
    nb = write_nb(ws / "nb.ipynb", minor=4)
    refused = cli(ws, "-j", "notebook", "cell", "delete", "nb.ipynb", "c0")
    assert refused.returncode == 1 and refused.error()["code"] == "CELL_NOT_FOUND" and "by index" in refused.error()["message"]
    done = cli(ws, "-j", "notebook", "cell", "replace", "nb.ipynb", "2", "--source", "print(1)").json()
    assert done["cell_id"] is None and cells(nb)[2]["source"] == "print(1)"


def test_another_programs_save_between_read_and_swap_is_detected_and_nothing_is_lost(ws):
    nb = ws / "nb.ipynb"
    sha = shown(ws, "2")[0]["source_sha"]
    edit = Exec(
        ["-j", "notebook", "cell", "replace", "nb.ipynb", "c2", "--source", "print(x + 1)", "--if-source", sha], ws, step="cell-edit:swap"
    )
    edit.stalled()
    # JupyterLab's save lands now: a temp file renamed over the notebook, cell 0 edited by the person.
    theirs = json.loads(nb.read_text())
    theirs["cells"][0]["source"] = "x = 'theirs'"
    tmp = ws / ".nb.ipynb~"
    tmp.write_text(json.dumps(theirs, indent=1))
    os.replace(tmp, nb)
    saved = nb.read_bytes()
    code, out, err = edit.finish()
    assert code == 1 and out == b"" and b"Traceback" not in err
    error = json.loads(err)
    assert error["code"] == "NOTEBOOK_CHANGED", error
    assert nb.read_bytes() == saved  # their save stays
    kept = sorted(ws.glob("nb.jcli-conflict-*.ipynb"))
    assert len(kept) == 1 and "print(x + 1)" in kept[0].read_text()  # j-cli's version is kept beside it
    assert sorted(p.name for p in ws.iterdir()) == sorted(["nb.ipynb", kept[0].name])  # no temp file left
    # The agent reads again and edits again: both changes are in the notebook.
    again = shown(ws, "2")[0]["source_sha"]
    assert again == sha  # their save did not touch this cell
    redo = cli(ws, "-j", "notebook", "cell", "replace", "nb.ipynb", "c2", "--source", "print(x + 1)", "--if-source", again)
    assert redo.returncode == 0, redo.stderr
    assert [c["source"] for c in cells(nb)][::2] == ["x = 'theirs'", "print(x + 1)"]


def test_the_file_keeps_its_mode_and_a_symlink_inside_the_workspace_is_written_through(ws):
    real = ws / "nb.ipynb"
    real.chmod(0o640)
    (ws / "link.ipynb").symlink_to("nb.ipynb")
    done = cli(ws, "-j", "notebook", "cell", "delete", "link.ipynb", "c1")
    assert done.returncode == 0, done.stderr
    assert (ws / "link.ipynb").is_symlink() and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert [c["id"] for c in cells(real)] == ["c0", "c2"]


def test_with_live_rooms_on_and_no_server_running_an_edit_starts_none_and_edits_the_file(ws):
    env = {
        key: value for key, value in os.environ.items() if key not in ("JCLI_LIVE", "JCLI_JUPYTER_SERVER_URL", "JCLI_JUPYTER_SERVER_TOKEN")
    }
    done = run_cli("-j", "notebook", "cell", "clear", "nb.ipynb", "c0", cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    doc = done.json()
    assert doc["live"] is False and doc["live_reason"] == "no Jupyter Server runs for this directory, and an edit never starts one"
    assert cells(ws / "nb.ipynb")[0]["outputs"] == []
    status = run_cli("-j", "server", "status", cwd=ws, env=env)
    assert status.returncode == 0 and status.json()["running"] is False
