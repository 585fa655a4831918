"""Notebook runs through the collaboration room: outputs land live in the person's document, and nobody's work is lost.

A real Jupyter Server with jupyter-collaboration, a real kernel, the
installed ``j-cli`` and a person as a real Y client (room_world.Person).
The run's first cell prints, then waits for a file the test makes: the
person sees the first output, with the running mark, before the cell ends,
and types into another cell meanwhile; the summary says ``live``, the
server has saved the document when j-cli returns, and the file holds the
run's outputs and the person's edit. An edit of the very cell being run
keeps the person's source and j-cli's outputs, and says so; a connection
dropped mid-run goes on by the file without loss; parameters land as a
cell in the person's document; no room, or ``JCLI_LIVE=off``, is the file
path, said so. A background job lands live too, its checkpoints reach the
file through the server's save, and reads through the sidecar see the
shared document while the job runs; a file rewritten out of band mid-run
is reloaded by the server and the run's later writes land on it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest
from helpers import JCLI, run_cli
from room_world import code_cell, collaboration_server, notebook_file, person_in_room, wait_on_file

WAITING_CELL = """import os, time
print("first", flush=True)
deadline = time.monotonic() + 120
while not os.path.exists({flag!r}) and time.monotonic() < deadline:
    time.sleep(0.01)
print("second")"""


@pytest.fixture(scope="module")
def room_server(tmp_path_factory, starts_jupyter):
    """A collaboration server for this module, and a kernel session on it: ``(root, env, session name)``."""
    root = tmp_path_factory.mktemp("live-root")
    with collaboration_server(root) as (url, token):
        created = run_cli("-j", "session", "create", "-n", "live", cwd=root, env=_env(url, token))
        assert created.returncode == 0, created.stderr
        yield root, url, token
        run_cli("session", "kill", "live", cwd=root, env=_env(url, token))


def _env(url: str, token: str) -> dict[str, str]:
    """This test's environment (its runtime dir, its sidecar and live switches) naming the collaboration server."""
    return {**os.environ, "JCLI_JUPYTER_SERVER_URL": url, "JCLI_JUPYTER_SERVER_TOKEN": token}


def _start_run(root, env, *args) -> subprocess.Popen:
    return subprocess.Popen([JCLI, "-j", "exec", "live", *args], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen) -> tuple[list[dict], dict]:
    out, err = proc.communicate(timeout=120)
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert lines, err.decode()
    return lines[:-1], lines[-1]


def _outputs_text(cell: dict) -> str:
    return "".join(o.get("text", "") if isinstance(o.get("text"), str) else "".join(o.get("text", [])) for o in cell["outputs"])


def test_outputs_land_live_while_the_person_types_and_both_reach_the_file(room_server, live_on):
    root, url, token = room_server
    env = _env(url, token)
    flag = root / "go-on"
    nb = notebook_file(
        root / "watched.ipynb",
        [
            code_cell("slow", WAITING_CELL.format(flag=str(flag))),
            code_cell("quick", "x = 2\nx * 21"),
            {"cell_type": "markdown", "id": "notes", "metadata": {}, "source": "# Notes"},
        ],
    )
    with person_in_room(url, token, "watched.ipynb") as person:
        proc = _start_run(root, env, "-f", "watched.ipynb")
        try:
            # The person sees the first output while the cell still runs (it waits for the flag), with JupyterLab's running mark.
            person.wait_for(lambda: _outputs_text(person.cell("slow")) == "first\n", "the first output", bound=60)
            assert person.notebook.ycells[0].get("execution_state") == "running" and not flag.exists()
            person.wait_for(
                lambda: any(s.get("user", {}).get("name") == "j-cli (live)" for s in person.others()), "j-cli as a collaborator"
            )

            def note(notebook):
                text = notebook.ycells[2]["source"]
                text += "\nAda: checking the first cell"

            person.edit(note)
        finally:
            flag.write_text("go")
        lines, summary = _finish(proc)
        assert summary["status"] == "ok" and summary["live"] is True and summary["saved"] is True, summary
        assert summary["live_reason"] == "joined the collaboration room of watched.ipynb as j-cli (live)"
        assert [line["cell_id"] for line in lines] == ["slow", "quick"]
        person.wait_for(
            lambda: person.cell("quick")["outputs"] and person.cell("quick")["execution_count"] is not None, "the second cell's result"
        )
        assert _outputs_text(person.cell("slow")) == "first\nsecond\n"
        assert person.notebook.ycells[0].get("execution_state") == "idle"
    # The server saved the document before j-cli returned: the file has the run and the person's edit.
    saved = json.loads(nb.read_text())
    first, second = (c["execution_count"] for c in saved["cells"][:2])
    assert first is not None and second == first + 1
    assert "".join(saved["cells"][0]["outputs"][0]["text"]) == "first\nsecond\n"
    assert saved["cells"][1]["outputs"][0]["data"]["text/plain"] in ("42", ["42"])
    assert "".join(saved["cells"][2]["source"]).endswith("Ada: checking the first cell")
    assert saved["cells"][0]["metadata"]["jcli_ran"]["src"] and "execution" in saved["cells"][0]["metadata"]
    # So a read right after the run sees it, and the cells read fresh (not stale).
    shown = run_cli("-j", "notebook", "summary", "watched.ipynb", cwd=root, env=env)
    assert shown.returncode == 0 and not json.loads(shown.stdout).get("stale_cells")


def test_an_edit_of_the_running_cell_keeps_the_persons_source_and_the_runs_outputs(room_server, live_on):
    root, url, token = room_server
    env = _env(url, token)
    flag = root / "go-on-2"
    source = WAITING_CELL.format(flag=str(flag))
    nb = notebook_file(root / "edited-while-running.ipynb", [code_cell("slow", source)])
    with person_in_room(url, token, "edited-while-running.ipynb") as person:
        proc = _start_run(root, env, "-f", "edited-while-running.ipynb")
        try:
            person.wait_for(lambda: _outputs_text(person.cell("slow")) == "first\n", "the first output", bound=60)
            person.edit(lambda notebook: notebook.ycells[0]["source"].insert(0, "# Ada was here\n"))
        finally:
            flag.write_text("go")
        lines, summary = _finish(proc)
    assert summary["status"] == "ok" and summary["live"] is True
    saved = json.loads(nb.read_text())
    cell = saved["cells"][0]
    assert "".join(cell["source"]) == "# Ada was here\n" + source
    assert "".join(cell["outputs"][0]["text"]) == "first\nsecond\n" and cell["execution_count"] is not None
    if any("was edited in the shared document while it ran" in note for note in summary.get("notes", [])):
        assert "jcli_ran" not in cell["metadata"]  # j-cli saw the edit before its last write: no run record
    # Either way (the edit may reach j-cli after its last write), the cell reads stale: its outputs are of other code.
    shown = run_cli("-j", "notebook", "summary", "edited-while-running.ipynb", cwd=root, env=env).json()
    assert shown["stale_cells"] == [0]


def test_parameters_land_as_a_cell_in_the_persons_document(room_server, live_on):
    root, url, token = room_server
    env = _env(url, token)
    nb = notebook_file(
        root / "report.ipynb",
        [
            {**code_cell("defaults", "n = 1"), "metadata": {"tags": ["parameters"]}},
            code_cell("use", "print(n * 10)"),
        ],
    )
    with person_in_room(url, token, "report.ipynb") as person:
        lines, summary = _finish(_start_run(root, env, "-f", "report.ipynb", "-p", "n", "4"))
        assert summary["status"] == "ok" and summary["live"] is True and summary["parameters"] == {"n": 4}
        person.wait_for(lambda: len(person.notebook.ycells) == 3 and person.cell("use")["outputs"], "the injected cell and the output")
        injected = person.notebook._cell_to_py(person.notebook.ycells[1])
        assert injected["metadata"]["tags"] == ["injected-parameters"] and injected["source"].strip().endswith("n = 4")
        assert _outputs_text(person.cell("use")) == "40\n"
    saved = json.loads(nb.read_text())
    assert [c["metadata"].get("tags") for c in saved["cells"]] == [["parameters"], ["injected-parameters"], None]


def test_no_room_is_the_file_path_and_says_why(room_server, live_on, tmp_path):
    root, url, token = room_server
    env = _env(url, token)
    outside = notebook_file(tmp_path / "elsewhere.ipynb", [code_cell("a", "print('by the file')")])
    lines, summary = _finish(_start_run(tmp_path, env, "-f", str(outside)))
    assert summary["status"] == "ok" and summary["live"] is False
    assert "does not serve" in summary["live_reason"]
    assert "".join(json.loads(outside.read_text())["cells"][0]["outputs"][0]["text"]) == "by the file\n"
    notebook_file(root / "off.ipynb", [code_cell("a", "print('off')")])
    lines, summary = _finish(_start_run(root, {**env, "JCLI_LIVE": "off"}, "-f", "off.ipynb"))
    assert summary["live"] is False and summary["live_reason"].startswith("JCLI_LIVE=off")


def test_a_connection_dropped_mid_run_goes_on_by_the_file_without_loss(room_server, live_on):
    """In process: the room's socket is shut down under it while the first cell runs (a real drop, not a mock)."""
    from jcli_sidecar.kernel import JupyterServer, NotebookRun, RunOptions, find_session
    from jcli_sidecar.room import open_live_run

    root, url, token = room_server
    flag = root / "go-on-3"
    nb = notebook_file(
        root / "dropped.ipynb", [code_cell("slow", WAITING_CELL.format(flag=str(flag))), code_cell("after", "print('after the drop')")]
    )
    server = JupyterServer(url, token)
    session = find_session(server, "live")
    live, reason = open_live_run(server, str(nb), session="live", env={})
    assert live is not None, reason
    run = NotebookRun(str(nb), RunOptions(timeout=120, checkpoint_seconds=None))
    run.live, run.live_reason = live, reason
    dropped = []

    def drop_at_first_output(event, output, index, outputs, chunk=None):
        if not dropped:
            dropped.append(True)
            live.room._socket._ws.sock.shutdown(socket.SHUT_RDWR)
            deadline = time.monotonic() + 30
            while live.room.lost is None and time.monotonic() < deadline:
                time.sleep(0.01)  # the reader thread sees the drop
            flag.write_text("go")

    run.on_output = drop_at_first_output
    try:
        summary = run.execute(server, session)
    finally:
        live.close()
    assert summary["status"] == "ok" and summary["live"] is False, summary
    assert summary["live_reason"].startswith("the collaboration room was lost during the run (the connection dropped")
    saved = wait_on_file(nb, lambda doc: doc["cells"][1]["outputs"], "the run's outputs")
    assert _outputs_text(saved["cells"][0]) == "first\nsecond\n" and _outputs_text(saved["cells"][1]) == "after the drop\n"


def test_a_background_job_lands_live_and_checkpoints_reach_the_file(room_server, live_on, sidecar_on):
    root, url, token = room_server
    env = _env(url, token)
    flag = root / "go-on-4"
    nb = notebook_file(
        root / "job.ipynb",
        [code_cell("slow", WAITING_CELL.format(flag=str(flag)).replace("flush=True)", 'flush=True); print("waiting", flush=True)'))],
    )
    job_env = {**env, "JCLI_CHECKPOINT_SECONDS": "0"}  # every output change asks the server to save
    with person_in_room(url, token, "job.ipynb") as person:
        started = run_cli("-j", "exec", "live", "-f", "job.ipynb", "--background", cwd=root, env=job_env)
        assert started.returncode == 0, started.stderr
        try:
            person.wait_for(lambda: _outputs_text(person.cell("slow")) == "first\nwaiting\n", "the job's first outputs", bound=60)
            # The server saved them while the cell still runs: a read of the file sees them.
            running = wait_on_file(nb, lambda doc: _outputs_text(doc["cells"][0]) == "first\nwaiting\n", "the checkpointed outputs")
            assert running["cells"][0]["execution_count"] is None and not flag.exists()
        finally:
            flag.write_text("go")
        waited = run_cli("-j", "job", "wait", started.json()["job_id"], cwd=root, env=job_env)
        job = waited.json()["jobs"][0]
        assert job["state"] == "ok", job
        assert job["result"]["live"] is True and job["result"]["saved"] is True
    saved = json.loads(nb.read_text())
    assert _outputs_text(saved["cells"][0]) == "first\nwaiting\nsecond\n" and saved["cells"][0]["execution_count"] is not None


TICKING_CELL = """import os, time
print("first", flush=True)
deadline = time.monotonic() + 120
while not os.path.exists({flag!r}) and time.monotonic() < deadline:
    print("tick", flush=True)
    time.sleep(0.1)
print("second")"""


def test_reads_through_the_sidecar_see_the_shared_document_while_a_job_runs(room_server, live_on, sidecar_on):
    root, url, token = room_server
    env = {**_env(url, token), "JCLI_CHECKPOINT_SECONDS": "600"}  # no checkpoint saves: the file lags the room
    flag = root / "go-on-5"
    nb = notebook_file(root / "read-live.ipynb", [code_cell("ticking", TICKING_CELL.format(flag=str(flag)))])
    with person_in_room(url, token, "read-live.ipynb") as person:
        started = run_cli("-j", "exec", "live", "-f", "read-live.ipynb", "--background", cwd=root, env=env)
        assert started.returncode == 0, started.stderr
        try:
            person.wait_for(lambda: _outputs_text(person.cell("ticking")).startswith("first\ntick\n"), "the job's output", bound=60)
            read = run_cli("-j", "notebook", "output", "read-live.ipynb", "--cell", "0", "--output", "0", cwd=root, env=env)
            assert read.returncode == 0, read.stderr
            doc = read.json()
            # Read from the room's document through the sidecar, which holds the job's room: what the person sees, not the file.
            assert doc["source"]["live"] is True and doc["source"]["path"] == str(nb.resolve())
            assert doc["stream"]["data"].startswith("first\ntick\n")
            # So do notebook summary and show: the cell as the person sees it, the path as the user named it.
            summary = run_cli("-j", "notebook", "summary", "read-live.ipynb", cwd=root, env=env).json()
            assert summary["live"] is True and summary["path"] == "read-live.ipynb"
            assert summary["cells"][0]["outputs"] >= 1 and summary["cells"][0]["execution_count"] is None  # the outputs so far
            shown = run_cli("-j", "notebook", "show", "read-live.ipynb", "--cell", "0", cwd=root, env=env).json()
            assert shown["live"] is True and shown["cells"][0]["cell_id"] == "ticking"
        finally:
            flag.write_text("go")
        waited = run_cli("-j", "job", "wait", started.json()["job_id"], cwd=root, env=env)
        assert waited.json()["jobs"][0]["state"] == "ok"
    # Once the job is over, reads are of the file again (which the server saved before the job ended).
    after = run_cli("-j", "notebook", "output", "read-live.ipynb", "--cell", "0", "--output", "0", cwd=root, env=env).json()
    assert "live" not in after["source"] and after["stream"]["data"].endswith("second\n")
    assert "live" not in run_cli("-j", "notebook", "summary", "read-live.ipynb", cwd=root, env=env).json()


def test_an_out_of_band_change_of_the_file_is_taken_as_the_server_takes_it(room_server, live_on):
    """Another program rewrites the file mid-run: the server reloads it into the room; j-cli's later writes land on it by id."""
    root, url, token = room_server
    env = _env(url, token)
    flag = root / "go-on-6"
    cells = [code_cell("slow", WAITING_CELL.format(flag=str(flag))), code_cell("next", "print('next')")]
    nb = notebook_file(root / "out-of-band.ipynb", cells)
    with person_in_room(url, token, "out-of-band.ipynb") as person:
        proc = _start_run(root, env, "-f", "out-of-band.ipynb")
        try:
            person.wait_for(lambda: _outputs_text(person.cell("slow")) == "first\n", "the first output", bound=60)
            # A program of the person's rewrites the file (say, a checkout): one more cell, no outputs.
            notebook_file(nb, [*cells, {"cell_type": "markdown", "id": "added", "metadata": {}, "source": "from elsewhere"}])
            person.wait_for(lambda: len(person.notebook.ycells) == 3, "the server's reload of the file", bound=60)
        finally:
            flag.write_text("go")
        lines, summary = _finish(proc)
        assert summary["status"] == "ok" and summary["live"] is True, summary
        person.wait_for(lambda: _outputs_text(person.cell("next")) == "next\n", "the next cell's output")
    saved = json.loads(nb.read_text())
    assert [c["id"] for c in saved["cells"]] == ["slow", "next", "added"]
    assert _outputs_text(saved["cells"][0]) == "first\nsecond\n" and _outputs_text(saved["cells"][1]) == "next\n"


def test_display_updates_clear_output_and_stale_runs_land_in_the_persons_document(room_server, live_on):
    root, url, token = room_server
    env = _env(url, token)
    nb = notebook_file(
        root / "displays.ipynb",
        [
            code_cell("shown", "handle = display('draft', display_id=True)"),
            code_cell("cleared", "from IPython.display import clear_output\nprint('old')\nclear_output()\nprint('new')"),
            code_cell("update", "handle.update('final')"),
        ],
    )
    with person_in_room(url, token, "displays.ipynb") as person:
        lines, summary = _finish(_start_run(root, env, "-f", "displays.ipynb"))
        assert summary["status"] == "ok" and summary["live"] is True
        assert lines[2]["displays_updated"] == [0]
        person.wait_for(lambda: person.cell("shown")["outputs"][0]["data"]["text/plain"] == "'final'", "the display update in cell 0")
        assert _outputs_text(person.cell("cleared")) == "new\n"
        # The person edits the last cell: --stale runs it (and only it) through the room.
        person.edit(lambda notebook: notebook.ycells[2]["source"].insert(len("handle.update('final')"), "\nprint('again')"))
        person.wait_for(lambda: "again" in person.cell("update")["source"], "the person's own edit")
        lines, summary = _finish(_start_run(root, env, "-f", "displays.ipynb", "--stale"))
        assert summary["status"] == "ok" and summary["live"] is True and summary["stale"] == [2], summary
        person.wait_for(lambda: _outputs_text(person.cell("update")) == "again\n", "the stale cell's output")
    saved = json.loads(nb.read_text())
    assert saved["cells"][0]["outputs"][0]["data"]["text/plain"] in ("'final'", ["'final'"])
    assert _outputs_text(saved["cells"][2]) == "again\n" and "print('again')" in "".join(saved["cells"][2]["source"])


def test_a_paired_py_syncs_into_the_room_cell_by_cell_and_keeps_the_persons_other_cell(room_server, live_on):
    root, url, token = room_server
    env = {**_env(url, token), "JCLI_LIVE": "off"}
    py = root / "paired.py"
    py.write_text("# %%\na = 1\nprint(a)\n\n# %% [markdown]\n# Notes\n\n# %%\nb = 2\n")
    first = run_cli("-j", "exec", "live", "-f", "paired.py", cwd=root, env=env)  # makes paired.ipynb, by the file
    assert first.returncode == 0, first.stderr
    env = _env(url, token)
    with person_in_room(url, token, "paired.ipynb") as person:
        # The person types a line into the markdown cell; the agent edits the first cell of the .py.
        person.edit(lambda notebook: notebook.ycells[1]["source"].insert(len("Notes"), "\nAda's note"))
        person.wait_for(lambda: "Ada's note" in str(person.notebook.ycells[1]["source"]), "the person's note")
        py.write_text("# %%\na = 10\nprint(a)\n\n# %% [markdown]\n# Notes\n\n# %%\nb = 2\n")
        result = run_cli("-j", "exec", "live", "-f", "paired.py", cwd=root, env=env)
        assert result.returncode == 0, result.stderr
        summary = json.loads(result.stdout.splitlines()[-1])
        assert summary["status"] == "ok" and summary["live"] is True, summary
        assert summary["sync"]["edited"] == 1 and any(".py cells 1 keep the edits" in note for note in summary["notes"])
        person.wait_for(lambda: _outputs_text(person.notebook._cell_to_py(person.notebook.ycells[0])) == "10\n", "the synced cell's run")
        assert str(person.notebook.ycells[1]["source"]) == "Notes\nAda's note"
        # The next run keeps the person's cell too: the record is the .py's, the notebook's edit stays theirs.
        again = run_cli("-j", "exec", "live", "-f", "paired.py", cwd=root, env=env)
        assert again.returncode == 0 and json.loads(again.stdout.splitlines()[-1])["sync"]["edited"] == 0, again.stderr
    saved = json.loads((root / "paired.ipynb").read_text())
    assert "".join(saved["cells"][0]["source"]) == "a = 10\nprint(a)" and "".join(saved["cells"][1]["source"]) == "Notes\nAda's note"
