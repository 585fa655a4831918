"""Plugin read latency: the OpenCode plugin reading through the sidecar's socket from Node, against spawning j-cli.

One image output (``--cell 100 --output 0``, a ~90 KB PNG) of the ~24 MB read
benchmark notebook, read by the real OpenCode plugin
(``client/plugins/opencode/jcli.js``, its ``@opencode-ai/plugin`` dependency
installed by ``npm ci``) inside one Node process (``bench/plugin_read.mjs``),
timed there with ``process.hrtime``. Both paths read from the same warm
sidecar, private to this script (``XDG_RUNTIME_DIR=bench/.work/runtime-plugin``,
``cwd=bench/.work``), interleaved, the first changing every round:

* socket -- the tool as OpenCode calls it: through the plugin process's one
            held connection to the sidecar's Unix socket (hello and peer
            check once, when it opens; then one request frame per read);
* spawn  -- the plugin's fallback: it spawns ``j-cli -j notebook output
            --request -``, which reads through the same sidecar.

The two results must be identical (checked every round; a difference is our
tool failing: exit 1), and the sidecar must have served every read.
Target: the socket path is at least 20x faster (ratio of medians).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys

from harness import (
    J_CLI,
    ROOT,
    WORK,
    BenchError,
    Sidecar,
    ensure_notebooks,
    medians,
    print_targets,
    sidecar_runtime_dir,
    stats_header,
    stats_row,
    stop_and_clean,
)

RUNTIME = WORK / "runtime-plugin"
PLUGIN_DIR = ROOT / "client" / "plugins" / "opencode"
TARGETS = [("spawn", "socket", ">=", 20.0)]
WARMUP = 5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed rounds (each reads once through each path)")
    parser.add_argument("--cell", type=int, default=100, help="which cell's output to read (0..199)")
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        print("plugin latency: node is not on PATH; skipped")
        return 0
    if not (PLUGIN_DIR / "node_modules" / "@opencode-ai" / "plugin").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=PLUGIN_DIR, check=True)
    WORK.mkdir(parents=True, exist_ok=True)
    ensure_notebooks()
    runtime = sidecar_runtime_dir(RUNTIME)
    sidecar = Sidecar(runtime)
    try:
        sidecar.start()
        request = json.dumps({"file_path": "big.ipynb", "cell_index": args.cell, "output_index": 0})
        before = sidecar.status()
        r = subprocess.run(
            [node, str(ROOT / "bench" / "plugin_read.mjs"), request, str(args.runs), str(WARMUP)],
            capture_output=True,
            cwd=WORK,
            env={**sidecar.env, "JCLI_BIN": str(J_CLI)},
        )
        if r.returncode != 0:
            raise BenchError(f"the Node driver failed (exit {r.returncode}): {r.stderr.decode('utf-8', 'replace')[-400:]}")
        doc = json.loads(r.stdout)
        _, served, _ = sidecar.served_since(before)
        reads = 2 * (args.runs + WARMUP)
        if not doc["same"]:
            raise BenchError("the socket path and the spawn path gave different results")
        if served < reads:
            raise BenchError(f"the sidecar served {served} requests for {reads} reads: a path did not use it")
        width = 10
        print(f"OpenCode plugin read, cell {args.cell} of big.ipynb (~90 KB PNG), warm sidecar, {args.runs} rounds")
        print(stats_header("path", width))
        for name in ("socket", "spawn"):
            print(stats_row(name, doc[name], width, 2))
        print("same result on both paths: yes")
        print_targets(medians({k: doc[k] for k in ("socket", "spawn")}), TARGETS, 18)
    finally:
        stop_and_clean(sidecar, runtime, RUNTIME)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
