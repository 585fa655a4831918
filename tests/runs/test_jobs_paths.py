"""Busy is decided by the kernel, whatever path named the workspace.

A bind mount of the workspace is a second path to the same directory: its
real path differs, so a second sidecar serves it, and both read and write
the same ``.j-cli/jobs`` records. The mount is real, made in a private
mount namespace (``unshare -m`` + ``mount --bind``) for each command that
goes through it; the sidecar started through it lives on in its namespace.
A symlinked directory resolves to the workspace's real path (one sidecar),
the cheap variant. Kernel-side FIFO barriers hold the jobs; nothing is timed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from helpers import JCLI, CliResult
from test_jobs_run import Barrier, jcli, start, status, wait, ws  # noqa: F401  (fixtures)

_MOUNT = 'mount --bind "$1" "$2" && cd "$2" && shift 2 && exec "$@"'


def _can_bind_mount() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return False
    probe = subprocess.run([unshare, "-m", "sh", "-c", _MOUNT, "sh", "/", "/mnt", "true"], capture_output=True, timeout=30)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _can_bind_mount(), reason="needs root and unshare -m (a private mount namespace)")


@pytest.fixture
def mounted(ws, tmp_path):  # noqa: F811
    """Run ``j-cli`` in the workspace reached through a bind mount at another path."""
    point = tmp_path / "elsewhere"
    point.mkdir()

    def run(*args: str, env=None) -> CliResult:
        argv = ["unshare", "-m", "sh", "-c", _MOUNT, "sh", str(ws), str(point), JCLI, *args]
        return CliResult(subprocess.run(argv, input=b"", capture_output=True, env=env, timeout=60))

    return run


def refused(result: CliResult, job_id: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    error = json.loads(result.stderr.strip().splitlines()[-1])
    assert error["code"] == "KERNEL_BUSY" and error["job_id"] == job_id and error["executed"] is False, error


def test_through_a_bind_mount_a_kernel_running_a_job_is_busy_and_queued_jobs_keep_their_order(ws, mounted, kernel_session, tmp_path):  # noqa: F811
    barrier = Barrier(tmp_path, "held")
    held = start(ws, kernel_session, "-c", "seq = []\n" + barrier.code())
    barrier.reached()
    refused(mounted("-j", "exec", kernel_session, "-c", "seq.append('second job')", "--background"), held["job_id"])
    refused(mounted("-j", "exec", kernel_session, "-c", "seq.append('through the sidecar')"), held["job_id"])
    refused(
        mounted("-j", "exec", kernel_session, "-c", "seq.append('in process')", env={**os.environ, "JCLI_SIDECAR": "off"}), held["job_id"]
    )
    pids = {jcli(ws, "sidecar", "status").json()["pid"], mounted("-j", "sidecar", "status").json()["pid"]}
    assert len(pids) == 2  # two sidecars, one directory
    queued = mounted("-j", "exec", kernel_session, "-c", "seq.append('b')", "--background", "--queue")
    assert queued.returncode == 0, queued.stderr
    behind = queued.json()
    assert behind["queued_behind"] == held["job_id"]
    last = start(ws, kernel_session, "-c", "seq.append('a')\nprint(seq)", "--queue")  # back through the first path
    assert last["queued_behind"] == behind["job_id"]
    refused(mounted("-j", "exec", kernel_session, "-c", "seq.append('no job')"), held["job_id"])
    barrier.release()
    ended = wait(ws, last["job_id"])["jobs"][0]
    assert ended["state"] == "ok" and ended["result"]["text"] == "['b', 'a']\n"
    records = [status(ws, j) for j in (held["job_id"], behind["job_id"])]
    assert [r["state"] for r in records] == ["ok", "ok"]
    assert {r["server_url"] for r in records} == {os.environ["JCLI_JUPYTER_SERVER_URL"].rstrip("/")}  # both sidecars name the same kernel
    assert len({r["holder"]["pid"] for r in records}) == 2
    free = mounted("-j", "exec", kernel_session, "-c", "len(seq)")  # the kernel is free again, through either path
    assert free.returncode == 0 and free.json()["text"].strip() == "2"


def test_through_a_symlinked_directory_the_same_sidecar_refuses_and_queues(ws, kernel_session, tmp_path):  # noqa: F811
    link = tmp_path / "link"
    link.symlink_to(ws, target_is_directory=True)
    barrier = Barrier(tmp_path, "held")
    held = start(ws, kernel_session, "-c", "seq = []\n" + barrier.code())
    barrier.reached()
    second = jcli(link, "exec", kernel_session, "-c", "seq.append('second job')", "--background")
    refused(second, held["job_id"])
    queued = start(link, kernel_session, "-c", "seq.append('b')\nprint(seq)", "--queue")
    assert queued["queued_behind"] == held["job_id"]
    barrier.release()
    assert wait(link, queued["job_id"])["jobs"][0]["result"]["text"] == "['b']\n"


def test_a_sidecar_that_stops_ends_its_job_queued_behind_another_sidecars_job(ws, mounted, kernel_session, tmp_path):  # noqa: F811
    barrier = Barrier(tmp_path, "held")
    held = start(ws, kernel_session, "-c", "seq = []\n" + barrier.code())
    barrier.reached()
    queued = mounted("-j", "exec", kernel_session, "-c", "seq.append('never')", "--background", "--queue")
    assert queued.returncode == 0, queued.stderr
    stopped = mounted("-j", "sidecar", "stop")  # it does not wait for the other sidecar's job to end
    assert stopped.returncode == 0, stopped.stderr
    ended = status(ws, queued.json()["job_id"])
    assert ended["state"] == "interrupted" and ended["executed"] is False and ended["started_ns"] is None
    assert status(ws, held["job_id"])["state"] == "running"
    barrier.release()
    assert wait(ws, held["job_id"])["jobs"][0]["state"] == "ok"
    after = jcli(ws, "exec", kernel_session, "-c", "seq")
    assert after.returncode == 0 and after.json()["text"].strip() == "[]"
