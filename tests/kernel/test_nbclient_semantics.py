"""``exec -f`` against nbclient: the same notebook, run by both on the same kernel spec, saved alike.

One py:percent file covers each of nbclient's rules (display updates across
cells and within one, a new output with an id in use, ``clear_output``
forgetting ids, empty cells, ``skip-execution`` and ``raises-exception``
tags written on ``# %%`` lines, stdin disabled, history in memory). j-cli
runs it three ways (the foreground run that creates the notebook, a
background job, and a run that checkpoints on every output); nbclient runs
the same notebook in-process, on a kernel of its own. The saved cells are
compared one by one, normalised only where the two legitimately differ
(documented in docs/notebook-runs.md): the kernel's execution counter (j-cli
runs on a session kernel that ran code before, nbclient starts one), how a
stream's chunks are split into outputs, and ``metadata.execution``'s times.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading

import nbformat
import pytest
from helpers import run_cli

RULES = """\
# %%
from IPython.display import clear_output, display, update_display
handle = display("first", display_id=True)
print("shown")

# %%
handle.update("updated from a later cell")
1 + 1

# %%

# %% tags=["skip-execution"]
print("must not run")

# %% tags=["raises-exception"]
raise ValueError("expected")

# %%
display("a", display_id="same")
display("b", display_id="same")

# %%
display("c", display_id="same")

# %%
display("gone", display_id="cleared")
clear_output()
display("kept")

# %%
update_display("not shown anywhere", display_id="cleared")
print("one")
print("two")

# %% tags=["raises-exception"]
input("stdin is disabled")

# %%
str(get_ipython().history_manager.hist_file)
"""


@pytest.fixture
def ws(tmp_path, use_jupyter, sidecar_on):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def run_with_nbclient(path, cwd):
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=60, resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def clean_copy(source, target):
    """``source`` without outputs or counts: what each run starts from."""
    nb = nbformat.read(str(source), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
    nbformat.write(nb, str(target))


_COUNT = re.compile(r"(In ?\[)(\d+)(\])")


def normalised(nb):
    """Each code cell as ``(tags, execution_count, outputs)``, counts relative to the run's first, streams merged."""
    counts = [cell.execution_count for cell in nb.cells if cell.cell_type == "code" and cell.execution_count is not None]
    base = min(counts) - 1 if counts else 0

    def count(n):
        return None if n is None else n - base

    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in json.loads(json.dumps(cell.outputs)):
            if out["output_type"] == "stream" and outputs and outputs[-1]["output_type"] == "stream" and outputs[-1]["name"] == out["name"]:
                outputs[-1]["text"] += out["text"]
                continue
            if "execution_count" in out:
                out["execution_count"] = count(out["execution_count"])
            if out["output_type"] == "error":
                out["traceback"] = [_COUNT.sub(lambda m: f"{m[1]}{count(int(m[2]))}{m[3]}", line) for line in out["traceback"]]
            outputs.append(out)
        cells.append((cell.metadata.get("tags", []), count(cell.execution_count), outputs))
    return cells


def test_exec_saves_what_nbclient_saves_foreground_background_and_checkpointed(ws, kernel_session):
    (ws / "rules.py").write_text(RULES)
    first = run_cli("-j", "exec", kernel_session, "-f", "rules.py", cwd=ws)
    assert first.returncode == 0, first.stderr
    *lines, summary = [json.loads(line) for line in first.stdout.splitlines()]
    assert summary["skipped"] == [{"cell_index": 2, "reason": "empty"}, {"cell_index": 3, "reason": "skip-execution"}]
    assert summary["expected_errors"] == [4, 9]
    by_index = {line["cell_index"]: line for line in lines}
    assert sorted(by_index) == [0, 1, 4, 5, 6, 7, 8, 9, 10]
    assert by_index[1]["displays_updated"] == [0] and by_index[6]["displays_updated"] == [5]
    assert "displays_updated" not in by_index[8]  # the id's outputs were cleared: nothing to update

    created = nbformat.read(str(ws / "rules.ipynb"), as_version=4)
    nbformat.validate(created)
    assert [cell.metadata.get("tags") for cell in created.cells] == [None, None, None, ["skip-execution"], ["raises-exception"]] + [
        None
    ] * 4 + [
        ["raises-exception"],
        None,
    ]
    clean_copy(ws / "rules.ipynb", ws / "reference.ipynb")
    reference = normalised(run_with_nbclient(ws / "reference.ipynb", ws))
    assert normalised(created) == reference

    # The rules on their own terms, as nbclient saved them (so a change on both sides is seen too).
    display_data = [
        [o["data"]["text/plain"] for o in outputs if o["output_type"] == "display_data"] for _tags, _count, outputs in reference
    ]
    assert display_data[0] == ["'updated from a later cell'"]
    assert display_data[5] == ["'c'", "'c'"] and display_data[6] == ["'c'"]
    assert display_data[7] == ["'kept'"]
    assert [count for _tags, count, _outputs in reference][2:4] == [None, None]
    assert reference[9][2][0]["ename"] == "StdinNotImplementedError"
    assert reference[10][2][0]["data"]["text/plain"] == "':memory:'"

    # A background job, checkpointing on every output: the earlier cells' updates go out with the checkpoints.
    clean_copy(ws / "rules.ipynb", ws / "bg.ipynb")
    env = {**os.environ, "JCLI_CHECKPOINT_SECONDS": "0"}
    started = run_cli("-j", "exec", kernel_session, "-f", "bg.ipynb", "--background", cwd=ws, env=env)
    assert started.returncode == 0, started.stderr
    job = run_cli("-j", "job", "wait", started.json()["job_id"], cwd=ws).json()["jobs"][0]
    assert job["state"] == "ok", job
    background = nbformat.read(str(ws / "bg.ipynb"), as_version=4)
    assert normalised(background) == reference
    assert not any("jcli" in cell.metadata for cell in background.cells)

    # The foreground run of the notebook itself, checkpointing on every output.
    shutil.copy(ws / "bg.ipynb", ws / "again.ipynb")
    clean_copy(ws / "bg.ipynb", ws / "again.ipynb")
    again = run_cli("-j", "exec", kernel_session, "-f", "again.ipynb", cwd=ws, env=env)
    assert again.returncode == 0, again.stderr
    assert normalised(nbformat.read(str(ws / "again.ipynb"), as_version=4)) == reference


def test_a_display_update_meets_an_earlier_cell_edited_meanwhile_and_leaves_it_as_edited(ws, kernel_session, tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    (ws / "edited.py").write_text(
        "# %%\nfrom IPython.display import display\nhandle = display('first', display_id=True)\n"
        f"# %%\nopen({str(gate)!r}).read()\nhandle.update('second')\nprint('updated')\n"
    )
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", run_cli("-j", "exec", kernel_session, "-f", "edited.py", cwd=ws)))
    worker.start()
    with open(gate, "w") as opened:  # opens once the kernel is inside the second cell: the first is written back
        nb = json.loads((ws / "edited.ipynb").read_text())
        nb["cells"][0]["source"] = "print('edited by a person meanwhile')"
        (ws / "edited.ipynb").write_text(json.dumps(nb))
        opened.write("go")
    worker.join(120)
    result = box["r"]
    *lines, summary = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0, result.stderr
    assert lines[1]["displays_updated"] == [0]
    assert any(note.startswith("cell 0: a later cell updated its display, which could not be written") for note in summary["notes"])
    cells = json.loads((ws / "edited.ipynb").read_text())["cells"]
    assert "".join(cells[0]["source"]) == "print('edited by a person meanwhile')"
    assert "".join(cells[0]["outputs"][0]["data"]["text/plain"]) == "'first'"  # the person's cell, as they left it
    assert "".join(cells[1]["outputs"][0]["text"]) == "updated\n"


def test_a_long_cells_checkpoint_writes_the_earlier_cell_its_display_update_changed(ws, kernel_session, tmp_path, monkeypatch):
    from watchfiles import watch

    monkeypatch.setenv("JCLI_CHECKPOINT_SECONDS", "0")  # checkpoint on every output
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    (ws / "long.py").write_text(
        "# %%\nfrom IPython.display import display\nhandle = display('first', display_id=True)\n"
        f"# %%\nhandle.update('second')\nprint('waiting', flush=True)\nopen({str(gate)!r}).read()\n"
    )
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", run_cli("-j", "exec", kernel_session, "-f", "long.py", cwd=ws)))
    worker.start()
    seen = None
    for changes in watch(ws, rust_timeout=30_000, yield_on_timeout=True, raise_interrupt=False):
        if not changes:  # 30 s without a change: the bound (the gate then opens well before the run's own timeout)
            break
        cells = json.loads((ws / "long.ipynb").read_text())["cells"] if (ws / "long.ipynb").exists() else []
        if len(cells) == 2 and cells[1].get("metadata", {}).get("jcli") and cells[0]["outputs"]:
            if "".join(cells[0]["outputs"][0]["data"]["text/plain"]) == "'second'":
                seen = cells
                break
    with open(gate, "w") as opened:
        opened.write("go")
    worker.join(120)
    assert seen is not None, "the earlier cell was not rewritten while the later one ran"
    assert seen[1]["metadata"]["jcli"] == {"running": True}
    assert box["r"].returncode == 0
    final = json.loads((ws / "long.ipynb").read_text())["cells"]
    assert "".join(final[0]["outputs"][0]["data"]["text/plain"]) == "'second'" and "jcli" not in final[1]["metadata"]


def test_human_mode_says_which_cells_were_skipped_and_why(ws, kernel_session):
    (ws / "skips.py").write_text('# %%\nprint("ran")\n\n# %%\n\n# %% tags=["skip-execution"]\nprint("no")\n')
    result = run_cli("exec", kernel_session, "-f", "skips.py", cwd=ws)
    assert result.returncode == 0, result.stderr
    assert b"ran\n" in result.stdout and b"no\n" not in result.stdout
    assert b"skipped: cell 1 (empty), cell 2 (skip-execution)" in result.stderr
