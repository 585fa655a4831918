"""What a background job printing a lot costs the sidecar: bytes written, peak memory, and reading a window back.

Usage: ``.venv/bin/python bench/job_output_volume.py [MB]`` (default 200).

Starts its own Jupyter Server (the project venv's, loopback, no IOPub rate
limit, as j-cli's embedded one) and a sidecar in a private runtime dir, then
runs ``exec -c "for _ in range(MB): print('x' * 1048575)" --background`` and
waits for it. Figures, all from ``/proc``:

- the sidecar's ``write_bytes`` and ``wchar`` (``/proc/PID/io``) over the job;
- the sidecar's peak RSS (``VmHWM`` in ``/proc/PID/status``; the sidecar is
  started for this run, so its peak is this job's);
- ``j-cli -j job output ID --limit 10``: its peak RSS (``ru_maxrss`` of a
  parent that ran only it) and wall time;
- the bytes of the job's text kept on disk (and dropped), and of the inline
  run the job stored in ``.j-cli/outputs`` (its own write, as a foreground
  run's).

It runs the installed ``j-cli`` of this venv: install another version into
it to measure that one. Too slow for the test suite (tests/runs has the
scaled-down checks).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent
JCLI = str(BIN / "j-cli")


def proc_io(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/io") as fh:
        return {k: int(v) for k, v in (line.split(":") for line in fh)}


def vm_hwm_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    return kib / 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    top = Path(tempfile.mkdtemp(prefix="jcli-jobvol-", dir="/var/tmp"))
    runtime, work, root = top / "run", top / "ws", top / "root"
    for d in (runtime, work, root):
        d.mkdir(mode=0o700)
    token, port = os.urandom(16).hex(), free_port()
    argv = [
        str(BIN / "python"), "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
        "--ServerApp.terminals_enabled=False", "--ZMQChannelsWebsocketConnection.limit_rate=False",
    ]  # fmt: skip
    if os.geteuid() == 0:
        argv.append("--allow-root")
    server_env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": str(runtime / "jupyter")}
    server = subprocess.Popen(argv, env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "JCLI_SIDECAR"}
    env.update(XDG_RUNTIME_DIR=str(runtime), JCLI_JUPYTER_SERVER_URL=url, JCLI_JUPYTER_SERVER_TOKEN=token)

    def jcli(*args: str) -> dict:
        proc = subprocess.run([JCLI, "-j", *args], cwd=work, env=env, capture_output=True, timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"j-cli {' '.join(args)}: {proc.stderr.decode(errors='replace')}")
        return json.loads(proc.stdout)

    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        jcli("session", "create", "-n", "big")
        jcli("sidecar", "start")
        pid = jcli("sidecar", "status")["pid"]
        before = proc_io(pid)
        started = time.monotonic()
        job = jcli("exec", "big", "-c", f"for _ in range({mb}):\n    print('x' * 1048575)", "--background")
        done = jcli("job", "wait", job["job_id"], "--timeout", "0")
        job_seconds = time.monotonic() - started
        after = proc_io(pid)
        hwm = vm_hwm_mib(pid)
        probe = (
            "import resource, subprocess, sys, time\n"
            "t = time.monotonic(); r = subprocess.run(sys.argv[1:], capture_output=True); t = time.monotonic() - t\n"
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, round(t, 3), r.stderr[:300])\n"
        )
        read = subprocess.run(
            [str(BIN / "python"), "-c", probe, JCLI, "-j", "job", "output", job["job_id"], "--limit", "10"],
            cwd=work, env=env, capture_output=True, text=True,
        )  # fmt: skip
        folder = work / ".j-cli" / "jobs" / job["job_id"]
        kept = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith("output"))
        runs = sum(p.stat().st_size for p in (work / ".j-cli" / "outputs").rglob("*") if p.is_file())
        print(
            json.dumps(
                {
                    "printed_mb": mb,
                    "state": done["jobs"][0]["state"],
                    "job_seconds": round(job_seconds, 1),
                    "sidecar_write_bytes_mb": round((after["write_bytes"] - before["write_bytes"]) / 2**20, 1),
                    "sidecar_wchar_mb": round((after["wchar"] - before["wchar"]) / 2**20, 1),
                    "sidecar_vmhwm_mib": round(hwm, 1),
                    "job_output_limit_10": read.stdout.strip(),
                    "text_kept_on_disk_mb": round(kept / 2**20, 1),
                    "dropped_bytes": jcli("job", "output", job["job_id"], "--limit", "1")["dropped_bytes"],
                    "inline_run_stored_mb": round(runs / 2**20, 1),
                },
                indent=1,
            )
        )
        jcli("sidecar", "stop")
        jcli("session", "kill", "big")
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(top, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
