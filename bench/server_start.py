"""Start of j-cli's embedded Jupyter Server, against the same server started as Jupyter ships it.

When no server is configured, j-cli starts one per workspace; the first
``exec`` (or ``session create``) in a workspace waits for it. Each round
times two starts, whole, in fresh private dirs, the first one changing
every round:

* ours -- ``j-cli -j server start`` (``JCLI_SIDECAR=off``) in a fresh
          workspace with a fresh ``XDG_RUNTIME_DIR``: from spawn until the
          command exits, which it does once the server answers its token on
          ``GET /api``. Then ``j-cli server stop``, untimed;
* bare -- the same Jupyter Server from the same venv, as ``python -m
          jupyter_server`` with the same options (``harness.jupyter_server_argv``,
          the token in ``JUPYTER_TOKEN``): from spawn until its ``jpserver-<pid>.json`` names a
          port and ``GET /api`` answers with the token there (polled every
          10 ms, the same cadence ours waits at). Then SIGTERM, untimed.

The difference is what j-cli's server process leaves out (an optional
jsonschema grammar no Jupyter schema uses, see ``jcli/embedded_server.py``),
less j-cli's own start-up. Ratios of medians from the same run, as in every
bench here (the machine drifts up to 2x between runs). Nothing asserts on
the numbers; the script exits non-zero only when a start fails.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from harness import (
    J_CLI,
    WORK,
    BenchError,
    bare_env,
    describe_failure,
    jupyter_server_argv,
    medians,
    print_targets,
    rotated,
    stats_header,
    stats_row,
)

OURS, BARE = "ours", "bare"
LABELS = {OURS: "ours (j-cli server start)", BARE: "bare (python -m jupyter_server, same options)"}
TARGETS = [(OURS, BARE, "<=", 0.6)]
POLL_SECONDS = 0.01
START_DEADLINE = 120.0


def _fresh(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=WORK))
    path.chmod(0o700)
    return path


def start_ours() -> float:
    workspace, runtime = _fresh("start-ws-"), _fresh("start-rt-")
    env = bare_env(runtime)
    try:
        t0 = time.perf_counter()
        started = subprocess.run([str(J_CLI), "-j", "server", "start"], cwd=workspace, env=env, capture_output=True)
        elapsed = time.perf_counter() - t0
        if started.returncode != 0:
            raise BenchError(describe_failure("j-cli server start", started))
        stopped = subprocess.run([str(J_CLI), "server", "stop"], cwd=workspace, env=env, capture_output=True)
        if stopped.returncode != 0:
            raise BenchError(describe_failure("j-cli server stop", stopped))
        return elapsed
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


def _answers(info: Path, token: str) -> bool:
    try:
        port = json.loads(info.read_bytes())["port"]
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api", headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status == 200
    except (OSError, ValueError, KeyError):
        return False


def start_bare() -> float:
    workspace, runtime = _fresh("start-ws-"), _fresh("start-rt-")
    token = secrets.token_hex(24)
    env = dict(os.environ, JUPYTER_TOKEN=token, JUPYTER_RUNTIME_DIR=str(runtime))
    argv = jupyter_server_argv(workspace, 0)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=workspace, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    info = runtime / f"jpserver-{proc.pid}.json"
    try:
        while not _answers(info, token):
            if proc.poll() is not None:
                raise BenchError(f"python -m jupyter_server exited at start with {proc.returncode}")
            if time.perf_counter() - t0 > START_DEADLINE:
                raise BenchError(f"python -m jupyter_server did not answer in {START_DEADLINE:g} s")
            time.sleep(POLL_SECONDS)
        return time.perf_counter() - t0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed starts of each (default 7)")
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)
    starts = {OURS: start_ours, BARE: start_bare}
    samples: dict[str, list[float]] = {name: [] for name in starts}
    try:
        for name in starts:  # one untimed start each: the disk cache warm for both
            starts[name]()
        for i in range(args.rounds):
            for name in rotated(list(starts), i):
                samples[name].append(starts[name]() * 1000)
    except BenchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    width = max(len(label) for label in LABELS.values()) + 2
    print(f"Embedded server start, {args.rounds} rounds, whole starts until GET /api answers")
    print(stats_header("", width))
    for name, label in LABELS.items():
        print(stats_row(label, samples[name], width, 0))
    print_targets(medians(samples), TARGETS, width + 10, names={OURS: "ours", BARE: "bare"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
