"""Soak: four writers publish 150 runs each (half through the sidecar, half
in-process) while a cleaner loops ``output clean --max-runs 2`` until the
last writer is done; and a burst
of concurrent reads, after which the sidecar is back within its cache budget
plus a fixed base."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading

import pytest
from helpers import JCLI, run_cli

#: Runs each writer publishes: a fixed amount of work, however fast the machine (JCLI_SOAK_RUNS for a longer soak).
SOAK_RUNS = int(os.environ.get("JCLI_SOAK_RUNS", "150"))

WRITER = """
import json, os, sys, time
from jcli.transport import publish
from jcli_sidecar.runs.retention import resolve_policy
from jcli_sidecar.runs.store import stage_run

cwd, runs = os.path.realpath(sys.argv[1]), int(sys.argv[2])
png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
outputs = [
    {"output_type": "stream", "name": "stdout", "text": "soak\\n"},
    {"output_type": "display_data", "metadata": {}, "data": {"image/png": png, "text/html": "<b>x</b>"}},
]
policy = resolve_policy()
log = []
for _ in range(runs):
    staged = stage_run(cwd, outputs, source={"kind": "soak"}, status="ok", created_ns=time.time_ns())
    result = publish(cwd, staged.run_id, policy)
    paths = [result["manifest"]] + [item["path"] for item in staged.items]
    readable = True
    for path in paths:
        try:
            with open(path, "rb") as fh:
                readable = readable and bool(fh.read())
        except OSError:
            readable = False
    log.append({"run_id": staged.run_id, "completed_ns": staged.manifest["completed_ns"], "readable": readable})
print(json.dumps(log))
"""


@pytest.mark.slow
def test_writers_and_a_cleaner_never_break_a_run(tmp_path, sidecar_on):
    ws = tmp_path / "ws"
    ws.mkdir()
    assert run_cli("sidecar", "start", cwd=ws).returncode == 0
    served_before = run_cli("-j", "sidecar", "status", cwd=ws).json()["requests_served"]
    writers = []
    for i in range(4):
        env = dict(os.environ)
        if i % 2:
            env["JCLI_SIDECAR"] = "off"
        writers.append(
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(ws), str(SOAK_RUNS)], cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        )
    cleans, failures = [], []

    def cleaner():
        while any(proc.poll() is None for proc in writers):
            result = subprocess.run([JCLI, "-j", "output", "clean", "--max-runs", "2"], cwd=ws, capture_output=True, timeout=60)
            if result.returncode != 0:
                failures.append(result.stderr)
            else:
                cleans.append(json.loads(result.stdout))

    thread = threading.Thread(target=cleaner)
    thread.start()
    logs = []
    for proc in writers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        logs.append(json.loads(out))
    thread.join(300)

    published = [entry for log in logs for entry in log]
    assert [len(log) for log in logs] == [SOAK_RUNS] * 4
    assert all(entry["readable"] for entry in published), "a returned path was not readable"
    assert not failures, failures[:1]
    assert sum(c["totals"]["deleted"] for c in cleans) > 0  # the cleaner really competed
    root = ws / ".j-cli" / "outputs"
    assert os.listdir(root / ".staging") == []
    for name in os.listdir(root):
        if name.startswith("."):
            continue
        manifest = json.loads((root / name / "manifest.json").read_text())
        assert sorted(os.listdir(root / name)) == sorted(manifest["files"] + ["manifest.json"]), name
    final = run_cli("-j", "output", "clean", "--max-runs", "2", cwd=ws).json()
    remaining = sorted(n for n in os.listdir(root) if not n.startswith("."))
    newest_two = sorted(e["run_id"] for e in sorted(published, key=lambda e: (e["completed_ns"], e["run_id"]))[-2:])
    assert remaining == newest_two and final["status"] == "ok"
    served = run_cli("-j", "sidecar", "status", cwd=ws).json()["requests_served"]
    assert served - served_before >= len(logs[0])  # half the writers went through the sidecar


#: What a sidecar holds beyond its cache budget (the interpreter, its modules, the index), in MiB: bench/'s SIDECAR_BASE_MIB.
SIDECAR_BASE_MIB = 64
BURST = 200  # concurrent readers: enough to swamp a two-core machine


def _image_notebook(path, cells: int, image_bytes: int) -> list[bytes]:
    """A notebook of ``cells`` cells, each with one PNG-headed image of ``image_bytes``; returns the images."""
    images = [b"\x89PNG\r\n\x1a\n" + os.urandom(image_bytes) for _ in range(cells)]
    doc = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {
                "cell_type": "code",
                "id": f"c{i}",
                "execution_count": i + 1,
                "metadata": {},
                "source": f"plot({i})",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"image/png": base64.b64encode(png).decode(), "text/plain": "<img>"},
                    }
                ],
            }
            for i, png in enumerate(images)
        ],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return images


def _vm_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024


def test_after_a_burst_of_concurrent_reads_the_sidecar_is_back_within_its_budget(tmp_path, sidecar_on, monkeypatch):
    from jcli_sidecar.base.errors import SidecarUnavailable
    from jcli_sidecar.base.runtime import SidecarPaths
    from jcli_sidecar.read.requests import handle_read
    from jcli_sidecar.sidecar.client import call

    ws = tmp_path / "ws"
    ws.mkdir()
    images = _image_notebook(ws / "plots.ipynb", cells=40, image_bytes=384 * 1024)
    budget_mib = 8
    monkeypatch.setenv("JCLI_SIDECAR_CACHE_MB", str(budget_mib))  # below what the burst decodes, so the budget is what bounds it
    monkeypatch.setenv("JCLI_SIDECAR_HELLO_SECONDS", "60")  # this test is about memory and the backlog, not a swamped hello
    started = run_cli("-j", "sidecar", "start", cwd=ws)
    assert started.returncode == 0, started.stderr
    pid = started.json()["pid"]
    monkeypatch.chdir(ws)
    paths = SidecarPaths(os.path.realpath(ws))
    listening = subprocess.run(["ss", "-xlH", "src", paths.socket], capture_output=True, text=True, check=True).stdout.split()
    with open("/proc/sys/net/core/somaxconn", encoding="ascii") as fh:
        system_cap = int(fh.read())
    assert listening[1] == "LISTEN" and int(listening[3]) >= min(4096, system_cap), f"the listen backlog is {listening[3]}"
    gate = threading.Barrier(BURST)
    refused: list[str] = []
    wrong: list[int] = []

    def read(i: int) -> None:
        request = {"file_path": "plots.ipynb", "cell_index": i % len(images), "output_index": 0}
        gate.wait()
        try:
            doc = call(paths, "notebook.read", request)
        except SidecarUnavailable as exc:
            refused.append(exc.message)
            doc = handle_read(request)  # what a client does: read in-process
        data = doc["selected"]["data"]
        if (data if isinstance(data, bytes) else base64.b64decode(data)) != images[i % len(images)]:
            wrong.append(i)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(BURST)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not wrong, f"reads answered the wrong image: {wrong[:5]}"
    assert not refused, f"{len(refused)} of {BURST} connections were refused (a full backlog), e.g. {refused[0]}"
    stats = call(paths, "stats", {})  # the burst is over: nothing in flight
    assert stats["requests_served"] == BURST + 2  # sidecar start's status, the burst, this call
    assert stats["cache"]["bytes"] <= stats["cache"]["budget_bytes"] == budget_mib * 1024 * 1024, stats["cache"]
    rss = _vm_rss_mib(pid)
    assert rss <= budget_mib + SIDECAR_BASE_MIB, (
        f"the sidecar holds {rss:.0f} MiB after the burst (cache {stats['cache']['bytes'] / 2**20:.1f} MiB)"
    )
