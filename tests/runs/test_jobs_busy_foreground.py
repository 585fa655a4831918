"""A foreground run that does not go through the sidecar still sees the workspace's jobs: ``KERNEL_BUSY`` naming the job.

With ``JCLI_SIDECAR=off`` (and for a notebook run, which runs in the
calling process) the check reads the job records: a running job whose
holder is alive, on the same kernel. The cell holds at a kernel-side FIFO
barrier; nothing is timed.
"""

from __future__ import annotations

import json
import os

from helpers import run_cli
from test_jobs_run import Barrier, other_session, start, wait, ws  # noqa: F401  (fixtures)


def foreground(where, *args: str, sidecar: str = "off"):
    return run_cli("-j", "exec", *args, cwd=where, env={**os.environ, "JCLI_SIDECAR": sidecar})


def refused_by(result, job_id: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    error = json.loads(result.stderr.strip().splitlines()[-1])
    assert error["code"] == "KERNEL_BUSY" and error["job_id"] == job_id and error["executed"] is False
    assert job_id in error["message"]


def test_a_foreground_exec_with_the_sidecar_off_is_refused_on_a_kernel_busy_with_a_job(ws, kernel_session, other_session, tmp_path):  # noqa: F811
    barrier = Barrier(tmp_path, "off")
    held = start(ws, kernel_session, "-c", barrier.code())
    barrier.reached()
    refused_by(foreground(ws, kernel_session, "-c", "touched = 1"), held["job_id"])
    (ws / "nb.py").write_text("# %%\ntouched = 2\n")
    for sidecar in ("off", "on"):  # a notebook run goes to the kernel from the calling process either way
        refused_by(foreground(ws, kernel_session, "-f", "nb.py", sidecar=sidecar), held["job_id"])
    assert not (ws / "nb.ipynb").exists() or all(not c.get("outputs") for c in json.loads((ws / "nb.ipynb").read_text())["cells"])
    free = foreground(ws, other_session, "-c", "'other kernel'")  # another kernel is not busy
    assert free.returncode == 0 and free.json()["text"].strip() == "'other kernel'"
    barrier.release()
    assert wait(ws, held["job_id"])["jobs"][0]["state"] == "ok"
    after = foreground(ws, kernel_session, "-c", "'touched' in globals()")  # nothing of the refused runs ran
    assert after.returncode == 0 and after.json()["text"].strip() == "False"
