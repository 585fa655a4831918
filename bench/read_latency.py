"""Read latency of ``j-cli notebook output`` against the upstream peer.

What is measured: the wall time of one whole process, from spawn to exit, that
reads one image output (``--cell 100 --output 0``, a ~90 KB PNG) from a ~25 MB
notebook of 200 image cells and prints it as JSON. That is what an agent pays
for every read. Three commands run interleaved, round-robin, in one process:

* ours     -- this checkout's ``j-cli`` (the project venv);
* upstream -- ``jupyter-jcli`` (pinned below) in its own scratch venv, on the
              same notebook with cell ids (upstream cannot read one without);
* floor    -- the project interpreter importing what a lean client needs
              (``socket, msgpack, json, base64``) and nothing else: the cost
              of starting Python at all, which no client can go below.

Why ratios: the machine is noisy and absolute timings drift up to 2x between
runs, so the targets compare commands measured side by side in the same run:
``upstream / ours >= 4.0`` (we are much faster than the peer) and
``ours / floor <= 5.0`` (a read costs little more than starting Python).
Ratios use medians. Nothing here asserts on timings: the script only prints,
and exits non-zero only if our own tool fails (an error exit or a wrong PNG).

Everything generated (notebooks, the upstream venv) lives in ``bench/.work/``
and is reused by later runs.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
WORK = BENCH / ".work"
BIG = WORK / "big.ipynb"
BIG_IDS = WORK / "big_ids.ipynb"
UPSTREAM_VENV = WORK / "upstream-venv"
OUR_BIN = ROOT / ".venv" / "bin"

UPSTREAM_PIN = "jupyter-jcli==0.9.7"
CELLS, SIDE, SEED = 200, 173, 20240601
STAMP = {"cells": CELLS, "side": SIDE, "seed": SEED}  # regenerate when these change
WARMUP = 2
TARGETS = {"upstream / ours": (">=", 4.0), "ours / floor": ("<=", 5.0)}


# -- the notebooks ------------------------------------------------------------


def make_png(rng: random.Random) -> bytes:
    """A SIDE x SIDE RGB noise PNG (~90 KB: noise does not compress)."""
    from PIL import Image

    img = Image.frombytes("RGB", (SIDE, SIDE), rng.randbytes(SIDE * SIDE * 3))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def build_notebook(with_ids: bool) -> dict:
    rng = random.Random(SEED)  # the same images in both files
    cells = []
    for i in range(CELLS):
        png = base64.b64encode(make_png(rng)).decode("ascii")
        cell = {
            "cell_type": "code",
            "execution_count": i + 1,
            "metadata": {},
            "outputs": [{
                "output_type": "display_data",
                "data": {"image/png": png, "text/plain": [f"<Figure {SIDE}x{SIDE} #{i}>"]},
                "metadata": {},
            }],
            "source": [f"show_noise({i})"],
        }
        if with_ids:
            cell = {"id": f"cell-{i:03d}", **cell}
        cells.append(cell)
    metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "jcli_bench": STAMP,
    }
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5 if with_ids else 4}


def notebook_ok(path: Path, with_ids: bool) -> bool:
    """True if ``path`` is a complete notebook from this generator."""
    try:
        nb = json.loads(path.read_bytes())
        cells = nb["cells"]
        return (
            nb["metadata"].get("jcli_bench") == STAMP
            and nb["nbformat_minor"] == (5 if with_ids else 4)
            and len(cells) == CELLS
            and all(("id" in c) == with_ids and "image/png" in c["outputs"][0]["data"] for c in cells)
        )
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return False


def ensure_notebooks() -> None:
    for path, with_ids in ((BIG, False), (BIG_IDS, True)):
        if notebook_ok(path, with_ids):
            continue
        print(f"generating {path.relative_to(ROOT)} ...", flush=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(build_notebook(with_ids), f, indent=1)
        os.replace(tmp, path)  # never leave a half-written notebook behind


# -- the upstream venv --------------------------------------------------------


def ensure_upstream() -> Path | None:
    """Path of upstream's ``j-cli``, installing it on first use; None if unavailable."""
    exe = UPSTREAM_VENV / "bin" / "j-cli"
    if exe.exists():
        return exe
    print(f"note: installing {UPSTREAM_PIN} into {UPSTREAM_VENV.relative_to(ROOT)} (once) ...", flush=True)
    shutil.rmtree(UPSTREAM_VENV, ignore_errors=True)
    base = getattr(sys, "_base_executable", None) or sys.executable  # not the project venv
    steps = [
        [base, "-m", "venv", str(UPSTREAM_VENV)],
        [str(UPSTREAM_VENV / "bin" / "python"), "-m", "pip", "install", "-q", UPSTREAM_PIN],
    ]
    for step in steps:
        r = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            tail = "\n".join(r.stdout.strip().splitlines()[-5:])
            print(f"upstream unavailable: `{' '.join(step[1:])}` failed (exit {r.returncode}):\n{tail}")
            return None
    return exe if exe.exists() else None


# -- running and measuring ----------------------------------------------------


def run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=WORK)


def describe_failure(name: str, r: subprocess.CompletedProcess) -> str:
    err = r.stderr.decode("utf-8", "replace").strip()[-400:]
    return f"{name} failed (exit {r.returncode}): {err or '(no stderr)'}"


# Peak RSS must be taken from a small parent: Linux carries a process's RSS
# high-water mark over exec, so a child spawned by this script (which has
# parsed a 24 MB notebook) would report at least this script's own peak.
GNU_TIME = "/usr/bin/time"
SPAWN_AND_WAIT4 = """import os, sys
null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=null)
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss if os.waitstatus_to_exitcode(status) == 0 else -1)
"""


def peak_rss_mib(argv: list[str]) -> float | None:
    """Peak RSS of one run of ``argv`` in MiB, or None if it failed.

    Under GNU ``time -f %M`` if present, else ``os.wait4`` in a bare
    ``python -I -S`` launcher (which puts a floor of ~9 MiB on the reading).
    Both report ru_maxrss in KiB.
    """
    if os.access(GNU_TIME, os.X_OK):
        r = subprocess.run([GNU_TIME, "-f", "%M", *argv], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, cwd=WORK)
        last = (r.stderr.strip().splitlines() or ["-1"])[-1]
        kib = int(last) if r.returncode == 0 and last.isdigit() else -1
    else:
        r = subprocess.run([sys.executable, "-I", "-S", "-c", SPAWN_AND_WAIT4, *argv],
                           stdout=subprocess.PIPE, text=True, cwd=WORK)
        kib = int(r.stdout) if r.returncode == 0 else -1
    return kib / 1024 if kib >= 0 else None


def decoded_png(stdout: bytes) -> bytes:
    return base64.b64decode(json.loads(stdout)["selected"]["data"])


def summarize(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p90 = ordered[math.ceil(0.9 * len(ordered)) - 1]  # nearest rank
    return {"median": statistics.median(ordered), "min": ordered[0], "p90": p90}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command (default 15)")
    parser.add_argument("--cell", type=int, default=100, help=f"cell to read, 0..{CELLS - 1} (default 100)")
    args = parser.parse_args()
    if args.runs < 1 or not 0 <= args.cell < CELLS:
        parser.error(f"--runs must be >= 1 and --cell in 0..{CELLS - 1}")

    WORK.mkdir(parents=True, exist_ok=True)
    ensure_notebooks()
    upstream = ensure_upstream()

    read = ["-j", "notebook", "output", "--cell", str(args.cell), "--output", "0"]
    commands = {"ours": [str(OUR_BIN / "j-cli"), *read, str(BIG)]}
    if upstream is not None:
        commands["upstream"] = [str(upstream), *read, str(BIG_IDS)]
    commands["floor"] = [str(OUR_BIN / "python"), "-c", "import socket, msgpack, json, base64"]

    # Warm-up (page cache, .pyc) and a first check that each command works.
    first: dict[str, bytes] = {}
    for _ in range(WARMUP):
        for name, argv in list(commands.items()):
            r = run(argv)
            if r.returncode != 0:
                print(describe_failure(name, r))
                if name == "ours":
                    return 1
                del commands[name]
                continue
            first[name] = r.stdout

    # Same answer check, outside the timed loop.
    truth = base64.b64decode(json.loads(BIG.read_bytes())["cells"][args.cell]["outputs"][0]["data"]["image/png"])
    try:
        ours_png = decoded_png(first["ours"])
    except (ValueError, KeyError, TypeError) as exc:
        print(f"ours printed no readable PNG: {exc!r}")
        return 1
    ours_right = ours_png == truth
    print(f"check: ours PNG == notebook PNG ({len(truth)} bytes): {ours_right}")
    if "upstream" in commands:
        try:
            same = decoded_png(first["upstream"]) == ours_png
        except (ValueError, KeyError, TypeError) as exc:
            same = f"False (upstream output not understood: {exc!r})"
        print(f"check: ours PNG == upstream PNG: {same}")

    rss = {name: peak_rss_mib(argv) for name, argv in commands.items()}

    # Timed runs, round-robin; the starting command rotates every round.
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(args.runs):
        names = list(commands)
        for name in names[i % len(names):] + names[: i % len(names)]:
            t0 = time.perf_counter()
            r = run(commands[name])
            elapsed = time.perf_counter() - t0
            if r.returncode != 0:
                print(describe_failure(name, r))
                if name == "ours":
                    return 1
                del commands[name]
                times.pop(name)
                continue
            times[name].append(elapsed * 1000)

    size_mb = BIG.stat().st_size / 1e6
    print(f"\nread cell {args.cell} output 0 of a {size_mb:.1f} MB notebook "
          f"({CELLS} PNG cells); {args.runs} runs each, interleaved, {WARMUP} warm-ups")
    print(f"{'command':<10}{'median ms':>11}{'min ms':>9}{'p90 ms':>9}{'peak RSS MiB':>14}")
    stats = {name: summarize(samples) for name, samples in times.items()}
    for name, s in stats.items():
        peak = f"{rss[name]:.1f}" if rss.get(name) else "n/a"
        print(f"{name:<10}{s['median']:>11.1f}{s['min']:>9.1f}{s['p90']:>9.1f}{peak:>14}")
    if "upstream" not in stats:
        print(f"upstream  unavailable ({UPSTREAM_PIN})")

    print()
    for label, (op, target) in TARGETS.items():
        num, den = label.split(" / ")
        if num not in stats or den not in stats:
            print(f"{label:<16} n/a ({num if num not in stats else den} unavailable)")
            continue
        ratio = stats[num]["median"] / stats[den]["median"]
        met = ratio >= target if op == ">=" else ratio <= target
        verdict = "meets target" if met else "misses target"
        print(f"{label:<16}{ratio:>6.2f}x  (target {op} {target:.1f}x)  {verdict}")
    if not ours_right:
        print("\nours returned the wrong PNG: its timings do not count")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
