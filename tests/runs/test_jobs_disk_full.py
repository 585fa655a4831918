"""A job that ends on a full disk reads as ended everywhere, and its record and last text are saved once space
comes back; no temporary file is left.

The disk is full for real: each scenario runs in a child in a private mount
namespace (``unshare -m``, as root) with a small tmpfs mounted on the
workspace, filled by writing a file until ``ENOSPC``. Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from helpers import JCLI

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare(1) for a real full disk"
)

COMMON = r"""
import errno, json, os, subprocess, sys, time
ws, jcli = sys.argv[1], sys.argv[2]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", ws], check=True)
from jcli_sidecar.base.process_record import ProcessRecord
from jcli_sidecar.runs import JobRecord, new_job_id

def fill():
    fd = os.open(os.path.join(ws, "filler"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)

def cli(*args):
    proc = subprocess.run([jcli, "-j", *args], cwd=ws, capture_output=True, env={**os.environ, "JCLI_SIDECAR": "off"})
    out = proc.stdout if proc.returncode == 0 else proc.stderr
    return {"rc": proc.returncode, "doc": json.loads(out) if out.strip() else None}

def doc(state="running"):
    return {"job_id": new_job_id(), "state": state, "kind": "inline", "session": "s", "session_id": "sid",
            "kernel_id": "k-1", "cells": 1, "cells_done": 0, "created_ns": time.time_ns(), "finished_ns": None,
            "holder": ProcessRecord.current().to_dict(), "result": None, "error": None}

def leftovers():
    return sorted(n for _, _, names in os.walk(os.path.join(ws, ".j-cli")) for n in names if n.endswith(".tmp"))
"""

ENDS_ON_A_FULL_DISK = (
    COMMON
    + r"""
from jcli_sidecar.runs import check_kernel_free, list_jobs, read_job
out = {}
record = JobRecord.create(ws, doc(), output_max_bytes=8192)
record.write_output("first words\n")
fill()
record.output.add("last words\n")  # printed as the job ends: the disk is full
failure = record.finish(state="ok", finished_ns=time.time_ns(), executed=True, cells_done=1,
                        result={"status": "ok", "text": "first words\nlast words\n" + "r" * 20000})
out["failure"] = failure.code if failure else None
out["status"] = cli("job", "status", record.job_id)
out["list"] = cli("job", "list")
out["wait"] = cli("job", "wait", record.job_id, "--timeout", "5")
out["cancel"] = cli("job", "cancel", record.job_id)
out["output_full"] = cli("job", "output", record.job_id)
try:
    check_kernel_free(ws, "k-1")
    out["kernel_free"] = True
except Exception as exc:
    out["kernel_free"] = getattr(exc, "code", repr(exc))
out["leftovers_full"] = leftovers()
out["retry_while_full"] = getattr(record.save_end(), "code", None)
os.unlink(os.path.join(ws, "filler"))  # space comes back: the next attempt saves it all
out["retry"] = record.save_end()
out["saved"] = read_job(ws, record.job_id)
out["output"] = cli("job", "output", record.job_id)
out["leftovers"] = leftovers()
print(json.dumps(out, default=str))
"""
)


def in_full_disk(tmp_path, script: str) -> dict:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-c", script, str(ws), JCLI],
        capture_output=True,
        timeout=120,
        cwd=tmp_path,  # the installed j-cli, never the sources of the directory pytest runs in
    )
    if proc.returncode != 0 and b"mount" in proc.stderr and b"ermission" in proc.stderr:
        pytest.skip("no tmpfs mount here")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_job_ending_on_a_full_disk_reads_ended_everywhere_and_is_saved_when_space_comes_back(tmp_path):
    out = in_full_disk(tmp_path, ENDS_ON_A_FULL_DISK)
    assert out["failure"] == "OUTPUT_SAVE_FAILED"
    status = out["status"]["doc"]
    assert out["status"]["rc"] == 0 and status["state"] == "ok" and status["running_cell"] is None
    assert status["record_save_failed"]["code"] == "OUTPUT_SAVE_FAILED" and "full disk" in status["record_save_failed"]["note"]
    assert [j["state"] for j in out["list"]["doc"]["jobs"]] == ["ok"]
    assert out["wait"]["rc"] == 0 and out["wait"]["doc"]["timed_out"] is False and out["wait"]["doc"]["ended"]
    assert out["cancel"]["rc"] == 0 and out["cancel"]["doc"]["cancelled"] is False  # never JOB_NOT_FOUND
    assert out["kernel_free"] is True  # an ended job holds no kernel, whatever its record met
    assert "first words" in out["output_full"]["doc"]["text"]
    assert out["leftovers_full"] == [] and out["leftovers"] == []  # no temporary record file left
    assert out["retry_while_full"] == "OUTPUT_SAVE_FAILED"
    assert out["retry"] is None
    saved = out["saved"]
    assert saved["state"] == "ok" and "record_save_failed" not in saved and saved["result"]["status"] == "ok"
    assert saved["end_save_retried"]["attempts"] == 3 and saved["end_save_retried"]["first_error"]["code"] == "OUTPUT_SAVE_FAILED"
    assert out["output"]["doc"]["text"] == "first words\nlast words\n"  # the last text, written once space came back


FULL_AT_THE_START = (
    COMMON
    + r"""
out = {}
fill()
try:
    JobRecord.create(ws, doc())
    out["created"] = True
except Exception as exc:
    out["created"] = exc.code
jobs = os.path.join(ws, ".j-cli", "jobs")
out["jobs"] = os.listdir(jobs) if os.path.isdir(jobs) else []
out["leftovers"] = leftovers()
print(json.dumps(out))
"""
)


def test_a_job_that_cannot_start_on_a_full_disk_leaves_nothing(tmp_path):
    out = in_full_disk(tmp_path, FULL_AT_THE_START)
    assert out["created"] == "OUTPUT_SAVE_FAILED" and out["jobs"] == [] and out["leftovers"] == []


FULL_MID_TEXT = (
    COMMON
    + r"""
out = {}
record = JobRecord.create(ws, doc(), output_max_bytes=1 << 20)
with open(os.path.join(ws, "filler"), "wb") as fh:  # leave about 16 KiB free
    free = os.statvfs(ws).f_bavail * os.statvfs(ws).f_frsize
    fh.write(b"\0" * (free - 16384))
text = "".join(f"{i:07d}\n" for i in range(8000))  # 64,000 bytes: the write stops part-way
try:
    record.write_output(text)
    out["first"] = None
except Exception as exc:
    out["first"] = exc.code
out["queued"] = record.output.unwritten()
os.unlink(os.path.join(ws, "filler"))
record.flush_output()
with open(os.path.join(ws, ".j-cli", "jobs", record.job_id, "output.txt")) as fh:
    out["same"] = fh.read() == text
print(json.dumps(out))
"""
)


def test_a_text_write_cut_short_by_a_full_disk_resumes_where_it_stopped(tmp_path):
    out = in_full_disk(tmp_path, FULL_MID_TEXT)
    assert out["first"] == "OUTPUT_SAVE_FAILED" and 0 < out["queued"] < 64_000
    assert out["same"] is True  # every byte once, none lost, none twice


# -- the same end to end: a real sidecar holds the job, on a real kernel --------------------------------


class FullDiskWorkspace:
    """A workspace on a 4 MiB tmpfs seen only by a private mount namespace; j-cli runs inside it (``nsenter``)."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.holder = subprocess.Popen(
            [
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                f"mount -t tmpfs -o size=4m,mode=0700 tmpfs '{ws}' && echo mounted && exec cat",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        if self.holder.stdout.readline().strip() != b"mounted":
            self.close()
            pytest.skip("no tmpfs mount here")

    def run(self, *argv: str, env=None) -> subprocess.CompletedProcess:
        enter = ["nsenter", "-t", str(self.holder.pid), "-m", f"--wdns={self.ws}", "--"]
        return subprocess.run([*enter, *argv], capture_output=True, env=env, timeout=60)

    def jcli(self, *args: str, env=None) -> tuple[int, dict]:
        proc = self.run(JCLI, "-j", *args, env=env)
        out = proc.stdout if proc.returncode == 0 else proc.stderr
        return proc.returncode, json.loads(out)

    def fill(self) -> None:
        proc = self.run("dd", "if=/dev/zero", f"of={self.ws}/filler", "bs=64k")
        assert b"No space left" in proc.stderr, proc.stderr

    def leftovers(self) -> list[str]:
        proc = self.run("find", f"{self.ws}/.j-cli", "-name", "*.tmp")
        return proc.stdout.decode().split()

    def close(self) -> None:
        self.holder.stdin.close()
        self.holder.wait(timeout=30)
        self.holder.stdout.close()


def test_a_sidecar_job_ending_on_a_full_disk_ends_for_every_reader_and_saves_its_last_text_later(
    tmp_path, use_jupyter, sidecar_on, kernel_session
):
    from test_jobs_run import Barrier

    ws = tmp_path / "ws"
    ws.mkdir()
    disk = FullDiskWorkspace(ws)
    try:
        barrier = Barrier(tmp_path, "end")
        rc, job = disk.jcli(
            "exec", kernel_session, "-c", "print('first words', flush=True)\n" + barrier.code() + "print('last words')", "--background"
        )
        assert rc == 0, job
        barrier.reached()
        disk.fill()
        barrier.release()  # the job prints its last words and ends: its end cannot be written whole
        rc, waited = disk.jcli("job", "wait", job["job_id"], "--timeout", "0")
        assert rc == 0 and waited["timed_out"] is False
        rc, status = disk.jcli("job", "status", job["job_id"])
        assert status["state"] in ("ok", "error") and status["running_cell"] is None
        assert status["record_save_failed"]["code"] == "OUTPUT_SAVE_FAILED"
        rc, listed = disk.jcli("job", "list")
        assert [j["state"] for j in listed["jobs"]] == [status["state"]]
        rc, cancel = disk.jcli("job", "cancel", job["job_id"])
        assert rc == 0 and cancel["cancelled"] is False  # the job ended: never JOB_NOT_FOUND
        rc, foreground = disk.jcli("exec", kernel_session, "-c", "1", env={**os.environ, "JCLI_SIDECAR": "off"})
        assert foreground.get("code") != "KERNEL_BUSY", foreground  # an ended job holds no kernel
        assert disk.leftovers() == []
        assert disk.run("rm", f"{ws}/filler").returncode == 0  # space comes back
        assert disk.jcli("sidecar", "stop")[0] == 0  # at the latest, a stopping sidecar saves what it kept
        rc, saved = disk.jcli("job", "status", job["job_id"])
        assert "record_save_failed" not in saved and saved["result"] is not None, saved
        assert saved["end_save_retried"]["first_error"]["code"] == "OUTPUT_SAVE_FAILED"
        rc, text = disk.jcli("job", "output", job["job_id"])
        assert text["text"] == "first words\nlast words\n"
        assert disk.leftovers() == []
    finally:
        disk.close()
