"""Job records (``.j-cli/jobs/<id>/``) without a kernel: ids and prefixes, ``lost`` when the holder died,
reads without side effects, retention, links refused, and ``job wait``'s rules on real records.

Records are written by the core's own writer (:class:`jcli_sidecar.runs.JobRecord`),
holders are real processes (this one, or one that has exited); waits end on
events (a record rewritten by a thread the test drives, a signal landed at
the wait's stall point), never on sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from helpers import JCLI, run_cli

from jcli_sidecar.base import JobAmbiguous, JobNotFound, UsageError
from jcli_sidecar.base.process_record import ProcessRecord
from jcli_sidecar.runs import JobRecord, Policy, clean_jobs, list_jobs, new_job_id, note_read, read_job, resolve_job, wait_jobs

DAY_NS = 86_400 * 1_000_000_000


def dead_holder() -> dict:
    """The record of a real process that has exited."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    record = ProcessRecord.of_pid(proc.pid).to_dict()
    proc.stdin.close()
    proc.wait()
    return record


def make_job(ws, state="running", *, holder=None, finished_ns=None, job_id=None, created_ns=None) -> JobRecord:
    created_ns = created_ns or time.time_ns()
    doc = {
        "job_id": job_id or new_job_id(created_ns),
        "state": state,
        "kind": "inline",
        "session": "s",
        "cells": 1,
        "cells_done": 0 if state == "running" else 1,
        "created_ns": created_ns,
        "finished_ns": finished_ns,
        "holder": holder or ProcessRecord.current().to_dict(),
        "result": None,
        "error": None,
    }
    return JobRecord.create(str(ws), doc)


def test_a_job_record_reads_back_by_its_id_or_a_unique_prefix(tmp_path):
    record = make_job(tmp_path)
    record.write_output("hello\n")
    job_id = record.job_id
    assert resolve_job(str(tmp_path), job_id) == job_id
    assert resolve_job(str(tmp_path), job_id[:-3]) == job_id
    view = read_job(str(tmp_path), job_id)
    assert view["state"] == "running" and view["job_id"] == job_id
    assert os.stat(tmp_path / ".j-cli" / "jobs" / job_id / "job.json").st_mode & 0o077 == 0
    assert (tmp_path / ".j-cli" / ".gitignore").read_text().strip().endswith("*")  # never shows up in git


def test_an_ambiguous_prefix_and_an_unknown_id_are_coded_errors(tmp_path):
    make_job(tmp_path, created_ns=1_800_000_000_000_000_000)
    make_job(tmp_path, created_ns=1_800_000_000_000_000_001)
    with pytest.raises(JobAmbiguous) as caught:
        resolve_job(str(tmp_path), "2027")
    assert len(caught.value.details["matches"]) == 2
    with pytest.raises(JobNotFound):
        resolve_job(str(tmp_path), "1999")
    with pytest.raises(UsageError):
        resolve_job(str(tmp_path), "../x")
    result = run_cli("-j", "job", "status", "nope", cwd=tmp_path)
    assert result.returncode == 1 and json.loads(result.stderr)["code"] == "JOB_NOT_FOUND"


def test_a_running_job_whose_holder_died_reads_lost_and_the_read_writes_nothing(tmp_path):
    record = make_job(tmp_path, holder=dead_holder())
    path = tmp_path / ".j-cli" / "jobs" / record.job_id / "job.json"
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    view = read_job(str(tmp_path), record.job_id)
    assert view["state"] == "lost"
    assert view["lost"]["last_update_ns"] == record.doc["updated_ns"]
    assert "kernel may still be running" in view["lost"]["note"]
    assert [j["state"] for j in list_jobs(str(tmp_path))] == ["lost"]
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before


def test_a_running_job_of_a_live_holder_reads_running(tmp_path):
    record = make_job(tmp_path)
    assert read_job(str(tmp_path), record.job_id)["state"] == "running"


def read_at(ws, record: JobRecord, when_ns: int) -> None:
    """The job's end is read (the command's own mark), as if at ``when_ns``."""
    note_read(str(ws), [read_job(str(ws), record.job_id)])
    mark = ws / ".j-cli" / "jobs" / record.job_id / "read"
    os.utime(mark, ns=(when_ns, when_ns))


def test_retention_never_cleans_a_running_job_and_cleans_old_read_ended_ones_whatever_the_count(tmp_path):
    now = time.time_ns()
    running = make_job(tmp_path, created_ns=now - 30 * DAY_NS)
    old = make_job(tmp_path, "ok", finished_ns=now - 8 * DAY_NS, created_ns=now - 9 * DAY_NS)
    read_at(tmp_path, old, now - 8 * DAY_NS)
    lost = make_job(tmp_path, holder=dead_holder(), created_ns=now - 3 * DAY_NS)
    young = [make_job(tmp_path, "error", finished_ns=now - i, created_ns=now - 10 - i) for i in range(3)]
    read_at(tmp_path, young[2], now)
    report = clean_jobs(str(tmp_path), Policy(max_age_days=7, max_runs=2), now_ns=now)
    deleted = {d["job_id"]: d["reason"] for d in report["deleted"]}
    assert deleted == {old.job_id: "expired"}
    assert {"job_id": running.job_id, "reason": "running"} in report["kept"]
    # jobs do not count with runs: more ended jobs than max_runs, read or not, all stay until their age limit
    left = {j["job_id"] for j in list_jobs(str(tmp_path))}
    assert left == {running.job_id, lost.job_id, *(y.job_id for y in young)}


def test_output_clean_also_cleans_ended_jobs_once_read(tmp_path):
    old = make_job(tmp_path, "ok", finished_ns=time.time_ns() - 9 * DAY_NS)
    result = run_cli("-j", "output", "clean", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.json()["jobs"]["deleted"] == [] and {"job_id": old.job_id, "reason": "unread"} in result.json()["jobs"]["kept"]
    assert run_cli("-j", "job", "status", old.job_id, cwd=tmp_path).returncode == 0  # its end is read: the mark is left
    mark = tmp_path / ".j-cli" / "jobs" / old.job_id / "read"
    assert mark.is_file()
    result = run_cli("-j", "output", "clean", cwd=tmp_path)
    assert result.json()["jobs"]["deleted"] == []  # read just now: it stays its age limit from the read
    os.utime(mark, ns=(time.time_ns() - 8 * DAY_NS,) * 2)
    result = run_cli("-j", "output", "clean", cwd=tmp_path)
    assert result.json()["jobs"]["deleted"] == [{"job_id": old.job_id, "reason": "expired"}]


def test_a_link_under_jobs_is_kept_and_never_followed(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    make_job(ws, "ok", finished_ns=1)  # old: makes .j-cli/jobs
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = make_job(outside, "ok", finished_ns=1)  # an old ended job elsewhere
    link_name = new_job_id(1)
    os.symlink(outside / ".j-cli" / "jobs" / victim.job_id, ws / ".j-cli" / "jobs" / link_name)
    report = clean_jobs(str(ws), Policy(max_age_days=1, max_runs=1))
    assert {"job_id": link_name, "reason": "symlink"} in report["kept"]
    assert (outside / ".j-cli" / "jobs" / victim.job_id / "job.json").exists()
    assert os.path.islink(ws / ".j-cli" / "jobs" / link_name)
    with pytest.raises(JobNotFound):
        resolve_job(str(ws), link_name)  # a link is not a job
    listed = {j["job_id"]: j["state"] for j in list_jobs(str(ws))}
    assert listed[link_name] == "unreadable"


def test_a_symlinked_jobs_directory_is_refused_for_reading_writing_and_cleaning(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".j-cli").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    make_job(elsewhere, "ok", finished_ns=1)
    os.symlink(elsewhere / ".j-cli" / "jobs", ws / ".j-cli" / "jobs")
    with pytest.raises(UsageError):
        list_jobs(str(ws))
    with pytest.raises(UsageError):
        clean_jobs(str(ws), Policy(max_age_days=1, max_runs=1))
    with pytest.raises(Exception) as caught:
        make_job(ws)
    assert getattr(caught.value, "code", None) == "OUTPUT_SAVE_FAILED"
    result = run_cli("-j", "job", "list", cwd=ws)
    assert result.returncode == 2 and json.loads(result.stderr)["code"] == "USAGE_ERROR"
    assert len(os.listdir(elsewhere / ".j-cli" / "jobs")) == 1


def test_wait_times_out_with_the_snapshot_and_the_job_goes_on(tmp_path):
    record = make_job(tmp_path)
    doc = wait_jobs(str(tmp_path), [record.job_id], timeout=0.3)
    assert doc["timed_out"] is True and doc["pending"] == [record.job_id]
    assert doc["jobs"][0]["state"] == "running"


def test_wait_returns_on_the_first_of_two_jobs_to_end(tmp_path):
    slow, fast = make_job(tmp_path), make_job(tmp_path)
    seen = threading.Event()

    def sleep(seconds: float) -> bool:
        if not seen.is_set():
            seen.set()
            fast.update(state="ok", finished_ns=time.time_ns())
        return False

    doc = wait_jobs(str(tmp_path), [slow.job_id, fast.job_id], timeout=30, sleep=sleep)
    assert doc["ended"] == [fast.job_id] and doc["pending"] == [slow.job_id] and not doc["timed_out"]


def test_wait_all_returns_early_on_a_failure(tmp_path):
    slow, failing = make_job(tmp_path), make_job(tmp_path)

    def sleep(seconds: float) -> bool:
        failing.update(state="error", finished_ns=time.time_ns())
        return False

    doc = wait_jobs(str(tmp_path), [slow.job_id, failing.job_id], timeout=30, every=True, sleep=sleep)
    assert doc["failed"] == failing.job_id and doc["pending"] == [slow.job_id]


def test_a_job_removed_while_waited_on_is_removed(tmp_path):
    record = make_job(tmp_path)

    def sleep(seconds: float) -> bool:
        import shutil

        shutil.rmtree(tmp_path / ".j-cli" / "jobs" / record.job_id)
        return False

    doc = wait_jobs(str(tmp_path), [record.job_id], timeout=30, sleep=sleep)
    assert doc["jobs"][0]["state"] == "removed" and doc["ended"] == [record.job_id]


def test_wait_on_an_unknown_id_fails_at_once(tmp_path):
    make_job(tmp_path)
    result = run_cli("-j", "job", "wait", "20990101", "--timeout", "60", cwd=tmp_path)
    assert result.returncode == 1 and json.loads(result.stderr)["code"] == "JOB_NOT_FOUND"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_wait_and_never_the_job(tmp_path, signum):
    record = make_job(tmp_path)
    fifo = tmp_path / "stall"
    os.mkfifo(fifo)
    env = {**os.environ, "JCLI_EXEC_TEST_STALL_FIFO": str(fifo), "JCLI_EXEC_TEST_STALL_AT": "job-wait:sleeping"}
    proc = subprocess.Popen(
        [JCLI, "-j", "job", "wait", record.job_id], cwd=tmp_path, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE
    )
    with open(fifo, encoding="utf-8") as stalled:
        assert stalled.readline().startswith("stalled job-wait:sleeping")
    proc.send_signal(signum)
    with open(fifo, "w"):
        pass  # let the wait go on: it sees the signal
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum, err
    envelope = json.loads(err)
    assert envelope["code"] == "INTERRUPTED" and envelope["jobs"][0]["state"] == "running"
    assert read_job(str(tmp_path), record.job_id)["state"] == "running"


def test_background_without_a_sidecar_is_a_coded_error_never_a_foreground_run(tmp_path):
    result = run_cli("-j", "exec", "nosuch", "-c", "open('ran', 'w')", "--background", cwd=tmp_path)
    assert result.returncode == 1
    envelope = json.loads(result.stderr)
    assert envelope["code"] == "BACKGROUND_UNAVAILABLE" and envelope["executed"] is False
    assert "JCLI_SIDECAR=off" in envelope["message"]
    assert not (tmp_path / "ran").exists() and not (tmp_path / ".j-cli").exists()


def test_queue_without_background_is_a_usage_error(tmp_path):
    result = run_cli("-j", "exec", "main", "-c", "1", "--queue", cwd=tmp_path)
    assert result.returncode == 2 and json.loads(result.stderr)["code"] == "USAGE_ERROR"


def test_a_read_mark_that_is_not_a_plain_file_counts_as_unread_and_is_never_followed(tmp_path):
    now = time.time_ns()
    linked, folder = make_job(tmp_path, "ok", finished_ns=now - 9 * DAY_NS), make_job(tmp_path, "ok", finished_ns=now - 9 * DAY_NS)
    target = tmp_path / "elsewhere"
    target.write_text("keep me")
    os.symlink(target, tmp_path / ".j-cli" / "jobs" / linked.job_id / "read")
    (tmp_path / ".j-cli" / "jobs" / folder.job_id / "read").mkdir()
    report = clean_jobs(str(tmp_path), Policy(max_age_days=7, max_runs=1), now_ns=now)
    assert report["deleted"] == []
    assert {k["job_id"] for k in report["kept"] if k["reason"] == "unread"} == {linked.job_id, folder.job_id}
    assert target.read_text() == "keep me"


def test_only_reading_an_ended_job_leaves_the_mark(tmp_path):
    running = make_job(tmp_path)
    ended = make_job(tmp_path, "ok", finished_ns=time.time_ns())
    for args in (("job", "list"), ("job", "status", running.job_id), ("job", "output", running.job_id)):
        assert run_cli("-j", *args, cwd=tmp_path).returncode == 0
    assert not any((tmp_path / ".j-cli" / "jobs" / r.job_id / "read").exists() for r in (running, ended))
    assert run_cli("-j", "job", "output", ended.job_id, cwd=tmp_path).returncode == 0
    assert (tmp_path / ".j-cli" / "jobs" / ended.job_id / "read").is_file()
    assert not (tmp_path / ".j-cli" / "jobs" / running.job_id / "read").exists()


def test_an_end_slot_that_is_a_link_a_fifo_or_garbage_changes_no_reading(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"state": "ok", "finished_ns": 1}))
    for kind in ("link", "fifo", "garbage", "blank"):
        record = make_job(tmp_path)
        slot = tmp_path / ".j-cli" / "jobs" / record.job_id / "end.json"
        assert slot.stat().st_size == 4096 and slot.read_bytes().strip() == b""  # made full size, blank, at the start
        slot.unlink()
        if kind == "link":
            os.symlink(outside, slot)  # a planted "ended": never followed
        elif kind == "fifo":
            os.mkfifo(slot)  # never blocks a reader
        elif kind == "garbage":
            slot.write_bytes(b'{"state": "ok"' + b"\0" * 5000)
        else:
            slot.write_bytes(b" " * 4096)
        assert read_job(str(tmp_path), record.job_id)["state"] == "running", kind
