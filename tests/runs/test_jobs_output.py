"""A job's captured text without a kernel: appended (never rewritten), a bounded tail kept with what was
dropped said, read as a byte window without loading the file, and a read that is never a notebook error.

Texts are written by the core's own writer (:class:`jcli_sidecar.runs.JobRecord`);
write volume is the writer's ``wchar`` in ``/proc/PID/io`` (bytes handed to
``write``), memory the reader's peak RSS (``RUSAGE_CHILDREN``, the kernel's
own count). The end to end runs with a sidecar and a kernel are in
``test_jobs_output_run.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from helpers import run_cli, run_cli_with_peak_rss

from jcli_sidecar.base import InvalidWindow, UsageError
from jcli_sidecar.base.process_record import ProcessRecord
from jcli_sidecar.runs import JobRecord, new_job_id, read_job_output


def make_job(ws, *, output_max_bytes=None, state="running") -> JobRecord:
    doc = {
        "job_id": new_job_id(),
        "state": state,
        "kind": "inline",
        "session": "s",
        "cells": 1,
        "cells_done": 0,
        "created_ns": time.time_ns(),
        "finished_ns": None if state == "running" else time.time_ns(),
        "holder": ProcessRecord.current().to_dict(),
        "result": None,
        "error": None,
    }
    return JobRecord.create(str(ws), doc, **({} if output_max_bytes is None else {"output_max_bytes": output_max_bytes}))


def job_files(ws, record) -> dict[str, int]:
    folder = ws / ".j-cli" / "jobs" / record.job_id
    return {p.name: p.stat().st_size for p in folder.iterdir() if p.name.startswith("output")}


def test_text_is_appended_and_read_back_by_byte_windows_cut_on_whole_characters(tmp_path):
    record = make_job(tmp_path)
    record.write_output("héllo ")
    record.write_output("wörld ✓\n")
    whole = "héllo wörld ✓\n"
    text, info = read_job_output(str(tmp_path), record.job_id, 0, 4000)
    assert text == whole and info["total_bytes"] == len(whole.encode()) and info["dropped_bytes"] == 0
    assert info["next_offset"] is None and info["truncated"] is False
    # a window whose end falls inside "é" (2 bytes) stops before it; one starting inside it starts after it
    text, info = read_job_output(str(tmp_path), record.job_id, 0, 2)
    assert text == "h" and info["next_offset"] == 1
    text, info = read_job_output(str(tmp_path), record.job_id, 2, 5)
    assert text.startswith("llo") and info["offset"] == 3
    # a limit smaller than one character still moves on by one character
    text, info = read_job_output(str(tmp_path), record.job_id, 1, 1)
    assert text == "é" and info["next_offset"] == 3
    # the windows, followed by next_offset, give the text back exactly
    got, offset = "", 0
    while offset is not None:
        piece, info = read_job_output(str(tmp_path), record.job_id, offset, 3)
        got, offset = got + piece, info["next_offset"]
    assert got == whole
    with pytest.raises(InvalidWindow):
        read_job_output(str(tmp_path), record.job_id, 10_000, 10)
    assert read_job_output(str(tmp_path), record.job_id, len(whole.encode()), 10)[0] == ""


def test_a_bounded_tail_is_kept_and_what_was_dropped_is_said(tmp_path):
    record = make_job(tmp_path, output_max_bytes=4096)
    lines = [f"line {i:05d}\n" for i in range(2000)]  # 22,000 bytes, written in many appends
    for start in range(0, len(lines), 50):
        record.write_output("".join(lines[start : start + 50]))
    total = sum(len(line) for line in lines)
    assert sum(job_files(tmp_path, record).values()) <= 4096  # never more than the bound on disk
    text, info = read_job_output(str(tmp_path), record.job_id, 0, 100_000)
    assert info["total_bytes"] == total and info["dropped_bytes"] == total - len(text.encode()) > 0
    assert info["offset"] == info["dropped_bytes"]  # an offset in what was dropped starts at the first kept byte
    assert "".join(lines).endswith(text) and text.endswith("line 01999\n")
    result = run_cli("-j", "job", "output", record.job_id, "--limit", "10", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = result.json()
    assert doc["dropped_bytes"] == info["dropped_bytes"] and f"{info['dropped_bytes']} bytes dropped" in doc["note"]
    human = run_cli("job", "output", record.job_id, cwd=tmp_path).stdout.decode()
    assert human.startswith(f"[{info['dropped_bytes']} bytes dropped")


def test_text_queued_past_the_bound_keeps_the_newest_and_offsets_stay_true(tmp_path):
    record = make_job(tmp_path, output_max_bytes=4096)
    for i in range(100):  # queued without a flush (a slow or full disk): only the newest 4096 bytes are kept
        record.output.add(f"{i:03d}" * 100)
    assert record.output.unwritten() == 4096
    record.flush_output()
    record.write_output("end\n")
    text, info = read_job_output(str(tmp_path), record.job_id, 0, 100_000)
    assert info["total_bytes"] == 100 * 300 + 4
    assert text.endswith("099" * 100 + "end\n") and info["dropped_bytes"] == info["total_bytes"] - len(text)
    piece, _ = read_job_output(str(tmp_path), record.job_id, info["total_bytes"] - 4, 4)
    assert piece == "end\n"


WRITER = """
import json, os, sys, time
from jcli_sidecar.base.process_record import ProcessRecord
from jcli_sidecar.runs import JobRecord, new_job_id

def wchar():
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("wchar:"))

doc = {"job_id": new_job_id(), "state": "running", "kind": "inline", "session": "s", "cells": 1,
       "created_ns": time.time_ns(), "holder": ProcessRecord.current().to_dict()}
record = JobRecord.create(sys.argv[1], doc, output_max_bytes=int(sys.argv[2]))
chunk = "x" * 1023 + "\\n"
before = wchar()
for i in range(int(sys.argv[3])):
    record.output.add(chunk * 16)
    record.flush_output()
print(json.dumps({"written": wchar() - before, "job_id": record.job_id}))
"""


def test_the_writer_writes_each_byte_once_however_often_it_flushes(tmp_path):
    flushes = 128  # 128 flushes of 16 KiB: 2 MiB printed
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, str(tmp_path), str(1 << 20), str(flushes)], capture_output=True, check=True, cwd=tmp_path
    )
    out = json.loads(proc.stdout)
    printed = flushes * 16 * 1024
    # rewriting the whole text at each flush would hand write() about flushes/2 times the text (128 MiB here)
    assert out["written"] < printed * 1.05, out
    folder = tmp_path / ".j-cli" / "jobs" / out["job_id"]
    assert sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("output")) <= 1 << 20


def test_a_window_of_a_big_text_reads_only_the_window(tmp_path):
    record = make_job(tmp_path, state="ok")
    record.write_output("0123456789" * 4_000_000)  # 40 MB of text
    baseline = run_cli_with_peak_rss("-j", "job", "status", record.job_id, cwd=tmp_path)[1]
    proc, peak = run_cli_with_peak_rss("-j", "job", "output", record.job_id, "--offset", "39999990", "--limit", "10", cwd=tmp_path)
    assert json.loads(proc.stdout)["text"] == "0123456789"
    assert peak < baseline + 10, (peak, baseline)  # MiB: the 40 MB file is never loaded


def test_a_text_past_the_file_read_cap_is_read_never_a_notebook_error(tmp_path):
    record = make_job(tmp_path, state="ok")
    record.write_output("start\n")
    folder = tmp_path / ".j-cli" / "jobs" / record.job_id
    with open(folder / "output.txt", "r+b") as fh:  # a sparse 600 MiB text (no disk used): past every read cap
        fh.truncate(600 << 20)
        fh.seek((600 << 20) - 4)
        fh.write(b"end\n")
    result = run_cli("-j", "job", "output", record.job_id, "--offset", str((600 << 20) - 4), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.json()["text"] == "end\n" and result.json()["total_bytes"] == 600 << 20
    os.chmod(folder / "output.txt", 0)
    if os.geteuid() != 0:  # root reads whatever the mode says
        result = run_cli("-j", "job", "output", record.job_id, cwd=tmp_path)
        assert json.loads(result.stderr)["code"] != "NOTEBOOK_READ_FAILED"


def test_planted_segments_are_refused_or_ignored_never_followed(tmp_path):
    record = make_job(tmp_path, state="ok")
    record.write_output("mine\n")
    folder = tmp_path / ".j-cli" / "jobs" / record.job_id
    secret = tmp_path / "secret"
    secret.write_text("do not show\n")
    os.mkfifo(folder / "output.5.txt")  # a FIFO where a segment goes: never blocks, never read
    text, info = read_job_output(str(tmp_path), record.job_id, 0, 100)
    assert text == "mine\n" and info["total_bytes"] == 5
    os.unlink(folder / "output.5.txt")
    (folder / "output.99999999999999999999.txt").write_text("not a segment name")  # past the offsets we count
    assert read_job_output(str(tmp_path), record.job_id, 0, 100)[0] == "mine\n"
    os.symlink(secret, folder / "output.5.txt")
    with pytest.raises(UsageError):
        read_job_output(str(tmp_path), record.job_id, 0, 100)
    result = run_cli("-j", "job", "output", record.job_id, cwd=tmp_path)
    assert result.returncode == 2 and "do not show" not in result.stdout.decode() + result.stderr.decode()


def test_a_segment_deleted_while_a_window_is_read_is_counted_as_dropped(tmp_path):
    record = make_job(tmp_path, output_max_bytes=4096)
    record.write_output("a" * 2048)
    record.write_output("b" * 2048)  # a second segment
    folder = tmp_path / ".j-cli" / "jobs" / record.job_id
    assert sorted(job_files(tmp_path, record)) == ["output.2048.txt", "output.txt"]
    record.write_output("c" * 10)  # a third starts: the first goes
    assert sorted(job_files(tmp_path, record)) == ["output.2048.txt", "output.4096.txt"]
    (folder / "output.2048.txt").unlink()  # as if the writer deleted it while a reader listed
    text, info = read_job_output(str(tmp_path), record.job_id, 0, 100)
    assert text == "c" * 10 and info["dropped_bytes"] == 4096
