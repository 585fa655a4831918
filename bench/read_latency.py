"""Read latency of ``j-cli notebook output``, cold and through the sidecar, against upstream.

The read is always the same: one image output (``--cell 100 --output 0``, a
~90 KB PNG) of a ~24 MB notebook of 200 image cells. One run of this script
produces three groups of figures.

1. Whole CLI processes, from spawn to exit, reading the output and printing
   it as JSON. That is what an agent pays for every read. Four commands run
   interleaved, round-robin, in one loop:

   * ours warm  -- this checkout's ``j-cli`` with the sidecar enabled, already
                   started and already holding the notebook (a warm cache);
   * ours cold  -- the same command with ``JCLI_SIDECAR=off``: the client
                   reads and parses the notebook itself;
   * upstream   -- ``jupyter-jcli`` (pinned in harness.py) in its own scratch
                   venv, on the same notebook with cell ids (it cannot read
                   one without);
   * floor      -- the project interpreter importing what a lean client needs
                   (``socket, msgpack, json, base64``) and nothing else: the
                   cost of starting Python at all, which no client can go below.

2. In-process reads, timed inside this script, with no process start-up:

   * in-sidecar       -- ``jcli_sidecar.sidecar.client.call(..., "notebook.read", ...)``,
                         one request round-trip to the warm sidecar;
   * cold in-process  -- ``jcli_sidecar.read.reader.read_output(path, 100, 0)``,
                         which indexes the file and decodes the cell every time;
   * bytes            -- this process reading the notebook's bytes in 1 MiB
                         preads (:func:`harness.read_bytes`): the physical limit.

   The three are interleaved too (the cold reads and byte reads are spread
   evenly among the calls). A cold read is held to a few times the bytes (it
   must look at each of them once); a warm one must cost less than reading
   the bytes at all, which is what the cache is for. (The cold read is now
   within 2x of the bytes, so a ratio of cold to warm no longer says how good
   the cache is: a faster cold read would shrink it.)

3. Sidecar memory: the resident set (``psutil`` RSS) of the sidecar once it
   has cached 10 copies of the notebook (``big_00.ipynb`` .. ``big_09.ipynb``,
   real copies: the cache keys by inode), next to the cache's own byte count
   and budget (``JCLI_SIDECAR_CACHE_MB``, default 256 MiB). The sidecar is
   allowed a fixed **base of 64 MiB** on top of the budget: the interpreter,
   asyncio, msgpack, watchfiles and allocator slack, also once a burst of
   :data:`BURST` reads at once is answered. This is measured first,
   on the freshly started sidecar, so that its cache holds exactly these 10;
   figures 1 and 2 then run against the same sidecar with the copies still
   cached (11 notebooks; the cache keeps each one's offset index, not its
   text: about 4 MiB).

Why ratios: the machine is noisy and absolute timings drift up to 2x between
runs, so every latency target compares two medians measured side by side in
the same run (see TARGETS). The memory target is absolute: budget + base.
Nothing here asserts on the numbers: the script prints "meets target" or
"misses target", and exits non-zero only if our own tool fails (an error
exit, a wrong PNG, or a sidecar that does not start or answer).

The sidecar is private to this script: every j-cli child runs with
``XDG_RUNTIME_DIR=bench/.work/runtime`` (mode 0700) and ``cwd=bench/.work``,
so all of them share one sidecar and never touch anybody else's. It is
stopped at the end, also on errors.

Everything generated (notebooks, copies, the upstream venv, the runtime dir)
lives in ``bench/.work/`` and is reused by later runs. The notebooks are
given an mtime one hour old, because the sidecar cache does not trust a file
modified within a second of being read and would re-read it on every request.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

from harness import (
    BIG,
    BIG_IDS,
    CELLS,
    FLOOR_ARGV,
    J_CLI,
    MIB,
    UPSTREAM_PIN,
    WORK,
    BenchError,
    Sidecar,
    child_env,
    describe_failure,
    ensure_notebooks,
    ensure_upstream,
    medians,
    notebook_png,
    peak_rss_mib,
    print_targets,
    read_bytes,
    rotated,
    run,
    sidecar_runtime_dir,
    stats_header,
    stats_row,
    stop_and_clean,
    timed,
    verdict,
)

COPIES = [WORK / f"big_{i:02d}.ipynb" for i in range(10)]
RUNTIME = WORK / "runtime"

WARMUP = 2
CALL_WARMUP = 5
SIDECAR_BASE_MIB = 64
BURST = 200  # concurrent reads in figure 3's burst

# Names used in the tables and in the ratios.
WARM, COLD, UPSTREAM, FLOOR = "ours warm", "ours cold", "upstream", "floor"
IN_SIDECAR, COLD_IN_PROCESS, BYTES = "in-sidecar", "cold in-process", "bytes"
LABELS = {WARM: "ours warm (sidecar)", COLD: "ours cold (JCLI_SIDECAR=off)"}

# (numerator, denominator, op, target): ratios of medians from the same run.
TARGETS = [
    (WARM, FLOOR, "<=", 1.5),
    (UPSTREAM, COLD, ">=", 4.0),
    (COLD, FLOOR, "<=", 5.0),
    (COLD_IN_PROCESS, BYTES, "<=", 2.5),
    (IN_SIDECAR, BYTES, "<=", 1.0),
]


def ensure_copies() -> None:
    """``big_00.ipynb`` .. ``big_09.ipynb``: real copies of ``big.ipynb`` (own inodes, old mtime)."""

    def fingerprint(path: Path) -> tuple[int, int] | None:
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        return info.st_size, info.st_mtime_ns

    stale = [copy for copy in COPIES if fingerprint(copy) != fingerprint(BIG)]
    if stale:
        print(f"copying {BIG.name} to {len(stale)} of {COPIES[0].name} .. {COPIES[-1].name} ...", flush=True)
    for copy in stale:
        tmp = copy.with_suffix(".tmp")
        shutil.copy2(BIG, tmp)  # copy2 keeps the old mtime
        os.replace(tmp, copy)


def decoded_png(stdout: bytes) -> bytes:
    return base64.b64decode(json.loads(stdout)["selected"]["data"])


# -- figure 1: whole CLI processes --------------------------------------------


def cli_commands(cell: int, upstream: Path | None, runtime: Path) -> dict[str, tuple[list[str], dict]]:
    read = ["-j", "notebook", "output", "--cell", str(cell), "--output", "0"]
    off = child_env(runtime, sidecar=False)
    commands = {
        WARM: ([str(J_CLI), *read, str(BIG)], child_env(runtime, sidecar=True)),
        COLD: ([str(J_CLI), *read, str(BIG)], off),
    }
    if upstream is not None:
        commands[UPSTREAM] = ([str(upstream), *read, str(BIG_IDS)], off)
    commands[FLOOR] = (FLOOR_ARGV, off)
    return commands


def run_or_drop(commands: dict, name: str) -> subprocess.CompletedProcess | None:
    """Run one command; a failing peer is dropped, a failing ``ours`` is fatal."""
    argv, env = commands[name]
    r = run(argv, env)
    if r.returncode == 0:
        return r
    if name in (WARM, COLD):
        raise BenchError(describe_failure(name, r))
    print(describe_failure(name, r))
    del commands[name]
    return None


def warm_up(commands: dict) -> dict[str, bytes]:
    """WARMUP rounds of every command (page cache, ``.pyc``, the sidecar's cache).

    Returns the stdout of each command's last warm-up run.
    """
    last: dict[str, bytes] = {}
    for _ in range(WARMUP):
        for name in list(commands):
            r = run_or_drop(commands, name)
            if r is not None:
                last[name] = r.stdout
    return last


def check_cli_answers(last: dict[str, bytes], truth: bytes) -> None:
    """Same-answer checks, once, outside the timed loop."""
    try:
        cold_png = decoded_png(last[COLD])
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"ours cold printed no readable PNG: {exc!r}") from None
    print(f"check: ours cold PNG == notebook PNG ({len(truth)} bytes): {cold_png == truth}")
    same = last[WARM] == last[COLD]
    print(f"check: ours warm stdout == ours cold stdout, byte for byte ({len(last[COLD])} bytes): {same}")
    if UPSTREAM in last:
        try:
            up = decoded_png(last[UPSTREAM]) == cold_png
        except (ValueError, KeyError, TypeError) as exc:
            up = f"False (upstream output not understood: {exc!r})"
        print(f"check: ours PNG == upstream PNG: {up}")
    if cold_png != truth or not same:
        raise BenchError("ours returned the wrong output: its timings do not count")


def time_cli(commands: dict, runs: int) -> dict[str, list[float]]:
    """Timed runs, round-robin; the starting command rotates every round."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(runs):
        for name in rotated(list(commands), i):
            ms, r = timed(run_or_drop, commands, name)
            if r is None:
                times.pop(name)
                continue
            times[name].append(ms)
    return times


def measure_cli(sidecar: Sidecar, cell: int, upstream: Path | None, runtime: Path, truth: bytes, runs: int) -> tuple[dict, dict]:
    """Figure 1: returns ``(timings ms by command, peak RSS MiB by command)``."""
    commands = cli_commands(cell, upstream, runtime)
    check_cli_answers(warm_up(commands), truth)
    rss = {name: peak_rss_mib(argv, env) for name, (argv, env) in commands.items()}
    before = sidecar.status()
    times = time_cli(commands, runs)
    _, served, misses = sidecar.served_since(before)
    print(
        f"check: the {runs} timed warm runs were all served from the sidecar's cache: "
        f"{served == runs and misses == 0} (requests {served}, cache misses {misses})"
    )
    return times, rss


# -- figure 2: in-process reads -----------------------------------------------


def measure_in_process(cell: int, truth: bytes, calls: int, cold_reads: int) -> dict[str, list[float]]:
    """Figure 2: ``call`` round-trips to the warm sidecar vs cold ``read_output``.

    The cold reads are spread evenly among the calls so both see the same noise.
    """
    from jcli_sidecar.base.runtime import SidecarPaths
    from jcli_sidecar.read.reader import read_output
    from jcli_sidecar.sidecar.client import call

    paths = SidecarPaths(os.path.realpath(WORK))  # reads XDG_RUNTIME_DIR from os.environ
    request = {"file_path": BIG.name, "cell_index": cell, "output_index": 0}  # relative to the workspace
    via_sidecar = partial(call, paths, "notebook.read", request)
    cold = partial(read_output, str(BIG), cell, 0)

    got = via_sidecar()["selected"]["data"]
    cold_png = base64.b64decode(cold()["selected"]["data"])
    print(f"check: in-sidecar PNG == notebook PNG: {got == truth}")
    print(f"check: cold in-process PNG == notebook PNG: {cold_png == truth}")
    if got != truth or cold_png != truth:
        raise BenchError("an in-process read returned the wrong PNG")
    for _ in range(CALL_WARMUP):
        via_sidecar()
    for _ in range(WARMUP):
        cold()

    read_big = partial(read_bytes, BIG)
    times: dict[str, list[float]] = {IN_SIDECAR: [], COLD_IN_PROCESS: [], BYTES: []}
    for i in range(calls):
        times[IN_SIDECAR].append(timed(via_sidecar)[0])
        while len(times[COLD_IN_PROCESS]) < (i + 1) * cold_reads // calls:
            times[COLD_IN_PROCESS].append(timed(cold)[0])
            times[BYTES].append(timed(read_big)[0])
    return times


# -- figure 3: sidecar memory -------------------------------------------------


def measure_memory(sidecar: Sidecar, cell: int) -> dict:
    """Figure 3: the sidecar's RSS once it has cached the 10 copies.

    Run on the freshly started sidecar, so its cache holds exactly these 10.
    """
    from jcli_sidecar.base.runtime import SidecarPaths
    from jcli_sidecar.sidecar.client import call

    paths = SidecarPaths(os.path.realpath(WORK))
    pid = sidecar.status()["pid"]
    fresh = sidecar.rss_mib(pid)
    for copy in COPIES:
        call(paths, "notebook.read", {"file_path": copy.name, "cell_index": cell, "output_index": 0})
    cache = sidecar.status()["cache"]
    result = {"pid": pid, "fresh": fresh, "rss": sidecar.rss_mib(pid), **cache}
    print(
        f"check: sidecar cache entries == {len(COPIES)}: {cache['entries'] == len(COPIES)} "
        f"(entries {cache['entries']}, misses {cache['misses']})"
    )
    result.update(measure_burst(paths, cell, sidecar, pid))
    return result


def measure_burst(paths, cell: int, sidecar: Sidecar, pid: int) -> dict:
    """Figure 3, continued: :data:`BURST` reads of the copies at once, then the sidecar's RSS once they are answered."""
    import threading

    from jcli_sidecar.base.errors import SidecarUnavailable
    from jcli_sidecar.sidecar.client import call

    gate = threading.Barrier(BURST)
    refused = []

    def one(i: int) -> None:
        gate.wait()
        try:
            call(paths, "notebook.read", {"file_path": COPIES[i % len(COPIES)].name, "cell_index": cell, "output_index": 0})
        except SidecarUnavailable as exc:
            refused.append(exc.message)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(BURST)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = sidecar.status()  # nothing in flight: the burst is over
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    return {"burst_refused": len(refused), "burst_rss": sidecar.rss_mib(pid), "burst_peak": peak, "burst_cache": after["cache"]["bytes"]}


# -- the report ---------------------------------------------------------------


def print_cli_table(times: dict, rss: dict, cell: int, runs: int) -> None:
    size_mb = BIG.stat().st_size / 1e6
    print(
        f"\nCLI: read cell {cell} output 0 of a {size_mb:.1f} MB notebook "
        f"({CELLS} PNG cells); {runs} runs each, interleaved, {WARMUP} warm-ups"
    )
    print(f"{stats_header('command', 30)}{'peak RSS MiB':>14}")
    for name, samples in times.items():
        peak = f"{rss[name]:.1f}" if rss.get(name) else "n/a"
        print(f"{stats_row(LABELS.get(name, name), samples, 30, 1)}{peak:>14}")
    if UPSTREAM not in times:
        print(f"{UPSTREAM:<30}unavailable ({UPSTREAM_PIN})")


def print_in_process_table(times: dict) -> None:
    print(
        f"\nin-process: the same read inside this script "
        f"({len(times[IN_SIDECAR])} calls, {len(times[COLD_IN_PROCESS])} cold reads, interleaved)"
    )
    print(stats_header("read", 30))
    what = {IN_SIDECAR: "in-sidecar (call)", COLD_IN_PROCESS: "cold in-process (read_output)", BYTES: "bytes (1 MiB preads)"}
    for name, samples in times.items():
        print(stats_row(what[name], samples, 30, 3))


def print_memory(mem: dict) -> None:
    print(f"\nsidecar memory (pid {mem['pid']}) after caching {len(COPIES)} copies of the notebook")
    print(f"  RSS just after start      {mem['fresh']:8.1f} MiB")
    print(f"  RSS with the copies cached{mem['rss']:8.1f} MiB")
    print(f"  cache entries             {mem['entries']:8d}")
    print(f"  cache bytes               {mem['bytes'] / MIB:8.1f} MiB  ({mem['bytes']} bytes)")
    print(f"  cache budget_bytes        {mem['budget_bytes'] / MIB:8.1f} MiB  ({mem['budget_bytes']} bytes)")
    print(
        f"  after {BURST} reads at once   {mem['burst_rss']:8.1f} MiB  (peak {mem['burst_peak']:.1f} MiB; {mem['burst_refused']} refused; cache {mem['burst_cache'] / MIB:.1f} MiB)"
    )


def print_ratios(times: dict[str, list[float]], mem: dict | None) -> None:
    print_targets(medians(times), TARGETS, 32)
    if mem is not None:
        limit = mem["budget_bytes"] / MIB + SIDECAR_BASE_MIB
        print(
            f"{'sidecar RSS':<32}{mem['rss']:>6.1f} MiB  (target <= budget {mem['budget_bytes'] / MIB:g} "
            f"+ base {SIDECAR_BASE_MIB} = {limit:g} MiB)  {verdict(mem['rss'], '<=', limit)}"
        )
        print(
            f"{f'sidecar RSS after {BURST} at once':<32}{mem['burst_rss']:>6.1f} MiB  (target <= {limit:g} MiB)  {verdict(mem['burst_rss'], '<=', limit)}"
        )


# -- main -----------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed CLI runs per command (default 15)")
    parser.add_argument("--calls", type=int, default=200, help="timed in-sidecar calls (default 200)")
    parser.add_argument("--cold-reads", type=int, default=30, help="timed cold in-process reads (default 30)")
    parser.add_argument("--cell", type=int, default=100, help=f"cell to read, 0..{CELLS - 1} (default 100)")
    parser.add_argument("--big-runs", type=int, default=9, help="timed runs per case on the 100/400 MB notebooks (default 9; 0 skips them)")
    args = parser.parse_args()
    if min(args.runs, args.calls, args.cold_reads) < 1 or not 0 <= args.cell < CELLS:
        parser.error(f"--runs, --calls and --cold-reads must be >= 1, and --cell in 0..{CELLS - 1}")

    WORK.mkdir(parents=True, exist_ok=True)
    ensure_notebooks()
    ensure_copies()
    upstream = ensure_upstream()
    truth = notebook_png(args.cell)

    runtime = sidecar_runtime_dir(RUNTIME)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # for SidecarPaths in this process
    sidecar = Sidecar(runtime)
    mem = None
    try:
        sidecar.start()
        mem = measure_memory(sidecar, args.cell)
        cli_times, rss = measure_cli(sidecar, args.cell, upstream, runtime, truth, args.runs)
        in_process = measure_in_process(args.cell, truth, args.calls, args.cold_reads)
        end = sidecar.status()
        print(
            f"sidecar at the end: {end['requests_served']} requests served, cache entries "
            f"{end['cache']['entries']}, hits {end['cache']['hits']}, misses {end['cache']['misses']}, "
            f"RSS {sidecar.rss_mib(end['pid']):.1f} MiB"
        )
    except BenchError as exc:
        print(exc)
        return 1
    finally:
        stop_and_clean(sidecar, runtime, RUNTIME)

    big = None
    if args.big_runs > 0:
        import big_reads

        runtime = sidecar_runtime_dir(RUNTIME)
        try:
            big = big_reads.measure(runtime, upstream, args.big_runs, upstream_runs=3)
        except BenchError as exc:
            print(exc)
            return 1
        finally:
            if runtime != RUNTIME:
                shutil.rmtree(runtime, ignore_errors=True)

    print_cli_table(cli_times, rss, args.cell, args.runs)
    print_in_process_table(in_process)
    print_memory(mem)
    print_ratios({**cli_times, **in_process}, mem)
    if big is not None:
        big_reads.report(big, args.big_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
