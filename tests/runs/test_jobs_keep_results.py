"""Jobs keep their results, end to end on a real sidecar and kernel: a queue longer than the retention count
loses no unread result, and a job printing more than its bound keeps the newest text and says what it dropped.

Timing comes from the kernel side (a cell closes a FIFO the test reads, then
waits on another), never from sleeps.
"""

from __future__ import annotations

import os

import pytest
from helpers import run_cli
from test_jobs_run import Barrier


@pytest.fixture
def ws(tmp_path, use_jupyter, sidecar_on):
    work = tmp_path / "ws"
    work.mkdir()
    return work


def jcli(ws, *args, env=None):
    result = run_cli("-j", *args, cwd=ws, env=env)
    assert result.returncode == 0, result.stderr
    return result.json()


def test_a_queue_longer_than_the_retention_count_loses_no_unread_result(ws, kernel_session, tmp_path):
    env = {**os.environ, "JCLI_OUTPUT_MAX_RUNS": "1"}
    barrier = Barrier(tmp_path, "first")
    first = jcli(ws, "exec", kernel_session, "-c", barrier.code() + "print('job 0')", "--background", env=env)
    barrier.reached()  # the first job holds the kernel: the others queue behind it
    queued = [jcli(ws, "exec", kernel_session, "-c", f"print('job {i}')", "--background", "--queue", env=env) for i in range(1, 4)]
    listed = jcli(ws, "job", "list")
    assert len(listed["jobs"]) == 4
    barrier.release()
    ids = [first["job_id"], *(q["job_id"] for q in queued)]
    doc = jcli(ws, "job", "wait", *ids, "--all", "--timeout", "0")
    assert [j["state"] for j in doc["jobs"]] == ["ok"] * 4, doc  # none "removed": each job's end cleaned the others before
    for i, job_id in enumerate(ids):
        assert jcli(ws, "job", "output", job_id)["text"] == f"job {i}\n"
    # each end was read (the marks are left), yet none is past its age: a clean with a count of 1 keeps them all
    assert all((ws / ".j-cli" / "jobs" / job_id / "read").is_file() for job_id in ids)
    cleaned = jcli(ws, "output", "clean", "--max-runs", "1", env=env)
    assert cleaned["jobs"]["deleted"] == []
    assert len(jcli(ws, "job", "list")["jobs"]) == 4


def test_a_job_printing_past_its_bound_keeps_the_newest_text_and_says_what_it_dropped(ws, kernel_session):
    env = {**os.environ, "JCLI_JOB_OUTPUT_MAX_BYTES": "65536"}
    code = "for i in range(40000):\n    print(f'line {i:08d}')\n"  # 40,000 lines of 14 bytes: 560,000 bytes
    job = jcli(ws, "exec", kernel_session, "-c", code, "--background", env=env)
    assert jcli(ws, "job", "wait", job["job_id"], "--timeout", "0")["jobs"][0]["state"] == "ok"
    folder = ws / ".j-cli" / "jobs" / job["job_id"]
    kept = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("output"))
    assert kept <= 65536
    doc = jcli(ws, "job", "output", job["job_id"], "--limit", "100000")
    assert doc["total_bytes"] == 560_000 and doc["dropped_bytes"] == 560_000 - kept
    assert doc["text"].endswith("line 00039999\n") and f"{560_000 - kept} bytes dropped" in doc["note"]
    tail = jcli(ws, "job", "output", job["job_id"], "--offset", str(560_000 - 14), "--limit", "14")
    assert tail["text"] == "line 00039999\n" and tail["next_offset"] is None
