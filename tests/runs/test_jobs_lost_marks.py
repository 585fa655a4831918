"""A sidecar killed while a long cell's checkpoint is in the notebook: the next sidecar settles the lost job.

The checkpoint (``JCLI_CHECKPOINT_SECONDS=0``: at every output) marks the
running cell ``metadata.jcli.running``. The cell itself waits until its
checkpoint is on disk, then holds at a FIFO barrier; the test kills the
sidecar with SIGKILL there. Reads (``job status``) leave everything as it
is; the next sidecar of the workspace clears the mark (the checkpointed
outputs stay) and ends the record ``lost``.
"""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest
from helpers import run_cli
from test_jobs_run import Barrier, jcli, sidecar_pid, start, status, ws  # noqa: F401  (ws is a fixture)

from jcli_sidecar.base.process_record import wait_for_exit


def cells(path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def marked(path) -> list[int]:
    return [i for i, cell in enumerate(cells(path)) if cell.get("metadata", {}).get("jcli") == {"running": True}]


def kill_sidecar(ws) -> None:  # noqa: F811
    pid = sidecar_pid(ws)
    process = psutil.Process(pid)
    os.kill(pid, signal.SIGKILL)
    assert wait_for_exit(process, 10)


@pytest.mark.parametrize("user_saved", [False, True])
def test_a_lost_jobs_running_mark_is_cleared_by_the_next_sidecar_and_its_checkpoint_kept(ws, kernel_session, tmp_path, user_saved):  # noqa: F811
    barrier = Barrier(tmp_path, "mark")
    nb = ws / "long.ipynb"
    watch = (
        "import json, time\n"
        f"while json.load(open({str(nb)!r}))['cells'][1].get('metadata', {{}}).get('jcli') != {{'running': True}}:\n"
        "    time.sleep(0.02)\n"
    )
    (ws / "long.py").write_text(
        "# %%\nprint('kept')\n# %%\nprint('partial', flush=True)\n" + watch + barrier.code() + "print('never saved')\n"
    )
    env = {**os.environ, "JCLI_WRITEBACK_PACE": "0", "JCLI_CHECKPOINT_SECONDS": "0"}
    doc = start(ws, kernel_session, "-f", "long.py", "--timeout", "none", env=env)
    barrier.reached()  # the checkpoint, marked, is in the notebook
    kill_sidecar(ws)
    lost = status(ws, doc["job_id"])
    assert lost["state"] == "lost" and lost["kernel_may_be_running"] is True and "kernel may still be running" in lost["lost"]["note"]
    assert lost["written_back"] == [0] and lost["running_cell"] == 1
    assert marked(nb) == [1]  # a read changes nothing
    if user_saved:  # another program saved over the cell meanwhile: theirs stays as it is
        nb_doc = json.loads(nb.read_text())
        nb_doc["cells"][1]["metadata"] = {}
        nb_doc["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["theirs\n"]}]
        nb.write_text(json.dumps(nb_doc, indent=1))
        before = nb.read_text()
    assert jcli(ws, "sidecar", "start").returncode == 0  # the next sidecar settles it
    assert marked(nb) == []
    saved = cells(nb)
    assert "".join(saved[0]["outputs"][0]["text"]) == "kept\n"
    if user_saved:
        assert nb.read_text() == before
    else:
        assert "".join(saved[1]["outputs"][0]["text"]) == "partial\n"  # the last consistent checkpoint
    settled = status(ws, doc["job_id"])
    assert settled["state"] == "lost" and settled["kernel_may_be_running"] is True
    assert settled["lost"]["marks_cleared"] == ([] if user_saved else [1]) and isinstance(settled["finished_ns"], int)
    assert settled["lost"]["last_update_ns"] == lost["lost"]["last_update_ns"]
    listed = jcli(ws, "job", "list").json()["jobs"]
    assert [(j["job_id"], j["state"]) for j in listed] == [(doc["job_id"], "lost")]
    kill_sidecar(ws)  # a second new sidecar finds nothing more to do
    after = nb.read_text()
    assert jcli(ws, "sidecar", "start").returncode == 0
    assert nb.read_text() == after and status(ws, doc["job_id"])["lost"] == settled["lost"]
    barrier.release()  # the kernel was left running the cell: let it finish
    free = run_cli("-j", "exec", kernel_session, "-c", "'free'", cwd=ws, env={**os.environ, "JCLI_SIDECAR": "off"})
    assert free.returncode == 0 and free.json()["text"].strip() == "'free'"  # a lost job holds no kernel
