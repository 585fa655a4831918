"""A kernel restarted while it runs a cell ends the run at once: ``kernel_died`` for a job, ``KERNEL_DIED`` in the foreground.

The cell holds at a kernel-side FIFO barrier; the test restarts the kernel
(``j-cli kernel restart`` or the server's REST API) and the run must end
then, with what it printed, not at its ``--timeout``.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request

import pytest
from helpers import JCLI, run_cli
from test_jobs_run import Barrier, start, status, wait, ws  # noqa: F401  (ws is a fixture)


@pytest.fixture
def fresh_session(ws):  # noqa: F811
    name = f"restart-{os.urandom(3).hex()}"
    assert run_cli("session", "create", "-n", name, cwd=ws).returncode == 0
    yield name
    run_cli("session", "kill", name, cwd=ws)


def restart_through_rest(kernel_id: str) -> None:
    """Restart a kernel with the server's REST API (what a notebook UI does)."""
    url, token = os.environ["JCLI_JUPYTER_SERVER_URL"], os.environ["JCLI_JUPYTER_SERVER_TOKEN"]
    request = urllib.request.Request(f"{url.rstrip('/')}/api/kernels/{kernel_id}/restart", method="POST", data=b"")
    request.add_header("Authorization", f"token {token}")
    with urllib.request.urlopen(request, timeout=60) as reply:
        assert reply.status == 200


@pytest.mark.parametrize("how", ["cli", "rest"])
def test_a_kernel_restarted_during_a_job_ends_it_kernel_died_at_once(ws, fresh_session, tmp_path, how):  # noqa: F811
    barrier = Barrier(tmp_path, "restart")
    doc = start(ws, fresh_session, "-c", "print('before', flush=True)\n" + barrier.code(), "--timeout", "none")
    barrier.reached()
    if how == "cli":
        assert run_cli("kernel", "restart", fresh_session, cwd=ws).returncode == 0
    else:
        restart_through_rest(status(ws, doc["job_id"])["kernel_id"])
    answer = wait(ws, doc["job_id"], "--timeout", "30")
    job = answer["jobs"][0]
    assert answer["timed_out"] is False, job
    assert job["state"] == "kernel_died" and job["executed"] is True and job["error"]["code"] == "KERNEL_DIED"
    assert "before" in job["result"]["text"]
    again = run_cli("-j", "exec", fresh_session, "-c", "'fresh'", cwd=ws)  # the kernel is free for the next run
    assert again.returncode == 0 and again.json()["text"].strip() == "'fresh'"


@pytest.mark.parametrize("sidecar", ["on", "off"])
def test_a_kernel_restarted_during_a_foreground_exec_ends_it_kernel_died_at_once(ws, fresh_session, tmp_path, sidecar):  # noqa: F811
    barrier = Barrier(tmp_path, "fg")
    env = {**os.environ, "JCLI_SIDECAR": sidecar}
    code = "print('before', flush=True)\n" + barrier.code()
    fg = subprocess.Popen(
        [JCLI, "-j", "exec", fresh_session, "-c", code, "--timeout", "none"],
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        barrier.reached()
        assert run_cli("kernel", "restart", fresh_session, cwd=ws).returncode == 0
        out, err = fg.communicate(timeout=40)
    finally:
        if fg.poll() is None:
            fg.kill()
            fg.communicate()
    assert fg.returncode == 1, (out, err)
    error = json.loads(err)
    assert error["code"] == "KERNEL_DIED" and error["executed"] is True
    assert "before" in json.dumps(error)
