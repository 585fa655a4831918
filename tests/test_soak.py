"""Soak: four writers publish runs for 30 s (half through the sidecar, half
in-process) while a cleaner loops ``output clean --max-runs 2``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from helpers import JCLI, run_cli

SOAK_SECONDS = float(os.environ.get("JCLI_SOAK_SECONDS", "30"))

WRITER = """
import json, os, sys, time
from jcli.transport import publish
from jcli_sidecar.runs.retention import resolve_policy
from jcli_sidecar.runs.store import stage_run

cwd, seconds = os.path.realpath(sys.argv[1]), float(sys.argv[2])
png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
outputs = [
    {"output_type": "stream", "name": "stdout", "text": "soak\\n"},
    {"output_type": "display_data", "metadata": {}, "data": {"image/png": png, "text/html": "<b>x</b>"}},
]
policy = resolve_policy()
log = []
end = time.monotonic() + seconds
while time.monotonic() < end:
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
                [sys.executable, "-c", WRITER, str(ws), str(SOAK_SECONDS)], cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        )
    cleans, failures = [], []

    def cleaner():
        end = time.monotonic() + SOAK_SECONDS
        while time.monotonic() < end:
            result = subprocess.run([JCLI, "-j", "output", "clean", "--max-runs", "2"], cwd=ws, capture_output=True, timeout=60)
            if result.returncode != 0:
                failures.append(result.stderr)
            else:
                cleans.append(json.loads(result.stdout))

    thread = threading.Thread(target=cleaner)
    thread.start()
    logs = []
    for proc in writers:
        out, err = proc.communicate(timeout=SOAK_SECONDS + 120)
        assert proc.returncode == 0, err
        logs.append(json.loads(out))
    thread.join(SOAK_SECONDS + 120)

    published = [entry for log in logs for entry in log]
    assert len(published) > 40 and all(log for log in logs)  # every writer made progress
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
