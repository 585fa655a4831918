"""``exec --background --queue``: the jobs queued on one kernel run first in, first out, each behind the job directly ahead.

The head job holds the kernel at a kernel-side FIFO barrier while the
others are queued, so every job is queued before any of them can run;
nothing is timed. The order is read from the kernel itself: each job
appends its number to a list the head made, and the last prints it. Jobs
are queued both by ``j-cli exec --background --queue`` (the command a
user runs) and by ``job.start`` straight on the sidecar's socket (what a
plugin or another client sends), interleaved in one queue.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import run_cli
from test_jobs_run import Barrier, jcli, start, status, wait, ws  # noqa: F401  (fixtures)

from jcli_sidecar.base.runtime import SidecarPaths
from jcli_sidecar.runs import resolve_policy
from jcli_sidecar.sidecar.client import call


def submit(where: Path, session: str, code: str) -> dict:
    """``job.start`` straight on the sidecar's socket: an inline job, queued."""
    args = {
        "cwd": os.path.realpath(where),
        "kind": "inline",
        "session": session,
        "code": code,
        "queue": True,
        "policy": resolve_policy().to_wire(),
        "server": {"url": os.environ["JCLI_JUPYTER_SERVER_URL"], "token": os.environ["JCLI_JUPYTER_SERVER_TOKEN"]},
    }
    return call(SidecarPaths(os.path.realpath(where)), "job.start", args, timeout=30)


def queue(where: Path, session: str, codes: list[str]) -> list[dict]:
    """Queue ``codes`` in order, every third through the command line, the others on the socket."""
    return [start(where, session, "-c", code, "--queue") if n % 3 == 0 else submit(where, session, code) for n, code in enumerate(codes)]


def test_twenty_queued_jobs_run_in_the_order_they_were_queued_each_behind_the_one_directly_ahead(ws, kernel_session, tmp_path):  # noqa: F811
    barrier = Barrier(tmp_path, "head")
    head = start(ws, kernel_session, "-c", "seq = []\nx = 1\n" + barrier.code())
    barrier.reached()
    codes = [f"seq.append({n})\nx += 1" for n in range(20)] + ["print(seq, x)"]
    queued = queue(ws, kernel_session, codes)
    ids = [head["job_id"]] + [q["job_id"] for q in queued]
    assert [q["queued_behind"] for q in queued] == ids[:-1]  # each names the job directly ahead, not the running one
    assert [status(ws, q["job_id"])["queued_behind"] for q in queued] == ids[:-1]
    barrier.release()
    ended = wait(ws, "--all", *ids)["jobs"]
    assert [j["state"] for j in ended] == ["ok"] * len(ids), [j.get("error") for j in ended if j["state"] != "ok"]
    assert ended[-1]["result"]["text"] == f"{list(range(20))} 21\n"
    assert [j["started_ns"] for j in ended] == sorted(j["started_ns"] for j in ended)


def test_a_job_cancelled_while_queued_never_runs_and_the_ones_behind_it_move_up(ws, kernel_session, tmp_path):  # noqa: F811
    barrier = Barrier(tmp_path, "head")
    head = start(ws, kernel_session, "-c", "seq = []\n" + barrier.code())
    barrier.reached()
    a, b, c, d = queue(ws, kernel_session, ["seq.append('a')", "seq.append('b')", "seq.append('c')", "print(seq)"])
    for job_id in (b["job_id"], c["job_id"]):  # two in a row, the second now directly behind the first
        cancelled = jcli(ws, "job", "cancel", job_id)
        assert cancelled.returncode == 0, cancelled.stderr
    for job_id in (b["job_id"], c["job_id"]):
        gone = wait(ws, job_id)["jobs"][0]
        assert gone["state"] == "cancelled" and gone["executed"] is False and gone["started_ns"] is None
    assert status(ws, d["job_id"])["queued_behind"] == a["job_id"]  # still names the job directly ahead
    assert status(ws, a["job_id"])["queued_behind"] == head["job_id"]
    barrier.release()
    ended = wait(ws, "--all", head["job_id"], a["job_id"], d["job_id"])["jobs"]
    assert [j["state"] for j in ended] == ["ok", "ok", "ok"]
    assert ended[-1]["result"]["text"] == "['a']\n"


def test_a_failing_head_job_lets_the_queue_go_on_in_order(ws, kernel_session, tmp_path):  # noqa: F811
    barrier = Barrier(tmp_path, "head")
    head = start(ws, kernel_session, "-c", "seq = []\n" + barrier.code() + "raise ValueError('head failed')")
    barrier.reached()
    queued = queue(ws, kernel_session, [f"seq.append({n})" for n in range(6)] + ["1/0", "seq.append('after')", "print(seq)"])
    barrier.release()
    last = wait(ws, queued[-1]["job_id"])["jobs"][0]  # (--all returns at the first failure)
    assert last["state"] == "ok" and last["result"]["text"] == "[0, 1, 2, 3, 4, 5, 'after']\n"
    ended = [status(ws, job_id) for job_id in [head["job_id"]] + [q["job_id"] for q in queued]]
    assert [j["state"] for j in ended] == ["error"] + ["ok"] * 6 + ["error", "ok", "ok"]


def test_a_run_that_is_no_job_is_refused_while_jobs_wait_on_the_kernel(ws, kernel_session, tmp_path):  # noqa: F811
    barrier = Barrier(tmp_path, "head")
    head = start(ws, kernel_session, "-c", "seq = []\n" + barrier.code())
    barrier.reached()
    queued = queue(ws, kernel_session, ["seq.append(1)", "seq.append(2)"])
    for sidecar in ("on", "off"):  # through the sidecar, and in the calling process reading the records
        refused = run_cli(
            "-j", "exec", kernel_session, "-c", "seq.append('foreground')", cwd=ws, env={**os.environ, "JCLI_SIDECAR": sidecar}
        )
        assert refused.returncode == 1
        error = json.loads(refused.stderr.strip().splitlines()[-1])
        assert error["code"] == "KERNEL_BUSY" and error["job_id"] == head["job_id"] and error["executed"] is False
    unqueued = run_cli("-j", "exec", kernel_session, "-c", "1", "--background", cwd=ws)
    assert json.loads(unqueued.stderr)["code"] == "KERNEL_BUSY"
    barrier.release()
    wait(ws, "--all", head["job_id"], *[q["job_id"] for q in queued])
    after = run_cli("-j", "exec", kernel_session, "-c", "seq", cwd=ws)
    assert after.returncode == 0 and after.json()["text"].strip() == "[1, 2]"
