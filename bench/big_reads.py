"""Figure 4 of ``read_latency.py``: realistic notebooks of 100 and 400 MB, through the offset index.

The notebooks (``bench/.work/real_100.ipynb``, ``real_400.ipynb``, written
once by :mod:`realistic_notebook` with cell ids, so upstream reads them too,
and reused) mix PNG plots, printed text stored as lists of lines (every
10th cell a ~150 KB log) and HTML tables. Each read is one PNG output near
the end of the file. Cases, every CLI process timed from spawn to exit and
interleaved round-robin with the floor:

* warm 400   -- the sidecar holds the 400 MB notebook's index;
* cold 400   -- ``JCLI_SIDECAR=off``: the client indexes the file itself;
* upstream 400 -- upstream j-cli on the same file (fewer runs: it is slow);
* changed 100 -- the first read after another program changed the 100 MB
                 notebook (its timestamps are touched just before, so the
                 sidecar builds a new index);
* own write 100 -- the first read after j-cli's own write-back into a copy
                 of the 100 MB notebook (``real_100_own.ipynb``): one cell's
                 outputs spliced by :class:`CellWriter`, its index handed
                 to the sidecar (``notebook.adopt``) as ``exec -f`` does, so
                 the read builds none;
* bytes 400, bytes 100 -- this process reading the notebook's bytes in
                 1 MiB preads (:func:`harness.read_bytes`): what a read that
                 must look at every byte pays at least, page cache to memory;
* 4 at once  -- four reads started together right after the 400 MB notebook
                changed: wall time of all four; the sidecar's build counter
                must grow by one, and its peak RSS (``VmHWM``) is compared
                with its peak after a single build.

The sidecar is a fresh one of its own (the other figures' one is stopped).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

from harness import (
    FLOOR_ARGV,
    J_CLI,
    MIB,
    WORK,
    BenchError,
    Sidecar,
    child_env,
    describe_failure,
    make_old,
    medians,
    peak_rss_mib,
    print_targets,
    read_bytes,
    rotated,
    run,
    stats_header,
    stats_row,
    timed,
    verdict,
)
from realistic_notebook import IMAGE_OUTPUT, cell_kind, write_notebook

SIZES = {25: WORK / "real_25.ipynb", 100: WORK / "real_100.ipynb", 400: WORK / "real_400.ipynb"}
FLOOR, WARM, COLD, UPSTREAM, CHANGED, FOUR = "floor", "warm 400", "cold 400", "upstream 400", "changed 100", "4 at once 400"
OWN, BYTES_400, BYTES_100 = "own write 100", "bytes 400", "bytes 100"
# Sums of medians, the denominators of the targets that must look at every byte.
FLOOR_BYTES_400, FLOOR_BYTES_100 = "(floor + bytes 400)", "(floor + bytes 100)"
SIDECAR_BASE_MIB = 64
CLI_PEAK_MIB = 64
OWN_COPY = WORK / "real_100_own.ipynb"

TARGETS = [
    (WARM, FLOOR, "<=", 1.3),
    (COLD, FLOOR_BYTES_400, "<=", 2.5),
    (UPSTREAM, COLD, ">=", 8.0),
    (OWN, FLOOR, "<=", 1.3),
    (CHANGED, FLOOR_BYTES_100, "<=", 2.5),
]


def ensure_big() -> dict[int, int]:
    """The realistic notebooks, written once (with an old mtime); returns their cell counts."""
    counts = {}
    for mb, path in SIZES.items():
        stamp = path.with_suffix(".v2.cells")  # v2: PNG base64 without a trailing newline (upstream refuses one)
        if not path.exists() or not stamp.exists():
            print(f"generating {path.name} ({mb} MB, realistic) ...", flush=True)
            tmp = path.with_suffix(".tmp")
            cells = write_notebook(tmp, mb * 1024 * 1024, with_ids=True)
            os.replace(tmp, path)
            stamp.write_text(str(cells))
        make_old(path)
        counts[mb] = int(stamp.read_text())
    return counts


def image_cell(cells: int) -> int:
    return next(i for i in range(cells - 10, 0, -1) if cell_kind(i) == "image")


def read_argv(exe: Path, path: Path, cell: int) -> list[str]:
    return [str(exe), "-j", "notebook", "output", path.name, "--cell", str(cell), "--output", str(IMAGE_OUTPUT)]


def png_of(stdout: bytes) -> bytes:
    return base64.b64decode(json.loads(stdout)["selected"]["data"])


def vm_hwm_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise BenchError("no VmHWM in /proc")


def changed(path: Path) -> None:
    """A change the sidecar must notice: new timestamps (and ctime) on the same bytes."""
    os.utime(path)


class OwnWriter:
    """j-cli's own write-backs into a copy of the 100 MB notebook, each handed to the sidecar as ``exec -f`` hands it."""

    def __init__(self, runtime: Path, cells: int) -> None:
        import shutil

        from jcli_sidecar.base.runtime import SidecarPaths
        from jcli_sidecar.ipynb.nbsplice import CellWriter

        shutil.copyfile(SIZES[100], OWN_COPY)
        self.paths = SidecarPaths(os.path.realpath(WORK), str(runtime / "jcli"))
        self.writer = CellWriter(str(OWN_COPY))
        self.cell = next(i for i in range(cells // 2, cells) if cell_kind(i) == "log")  # written: the cells after it move
        self.count = 0
        self.write()  # the first write lays the copy out as nbformat does; the next ones splice
        if self.writer.full_rewrites != 1:
            raise BenchError("the first own write did not lay the notebook out as nbformat does")

    def write(self) -> None:
        from jcli_sidecar.ipynb.nbindex import index_to_wire
        from jcli_sidecar.sidecar.client import call

        self.count += 1
        text = [f"run {self.count} step {k}\n" for k in range(200)]

        def edit(cell) -> None:
            cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": text}]

        self.writer.update_cell(self.cell, None, edit)
        index = self.writer.hand_over()
        if self.count > 1:
            if index is None:
                raise BenchError("a splice handed over no index")
            answer = call(self.paths, "notebook.adopt", {"file_path": str(OWN_COPY.resolve()), "index": index_to_wire(index)})
            if answer != {"adopted": True}:
                raise BenchError(f"the sidecar did not adopt the handed-over index: {answer}")


def four_at_once(argv: list[str], env: dict[str, str]) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=WORK, env=env) for _ in range(4)]
    done = []
    for p in procs:
        out, err = p.communicate()
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def measure(runtime: Path, upstream: Path | None, runs: int, upstream_runs: int) -> dict:
    counts = ensure_big()
    big, mid = SIZES[400], SIZES[100]
    cell_big, cell_mid = image_cell(counts[400]), image_cell(counts[100])
    on, off = child_env(runtime, sidecar=True), child_env(runtime, sidecar=False)
    sidecar = Sidecar(runtime)
    results: dict = {"times": {FLOOR: [], WARM: [], COLD: [], UPSTREAM: [], CHANGED: [], OWN: [], BYTES_400: [], BYTES_100: [], FOUR: []}}
    try:
        sidecar.start()
        pid = sidecar.status()["pid"]
        # a single build of the 400 MB index, then its peak: what 4 at once is compared with
        first = run(read_argv(J_CLI, big, cell_big), on)
        if first.returncode != 0:
            raise BenchError(describe_failure("ours warm 400", first))
        truth = png_of(first.stdout)
        results["hwm_single"] = vm_hwm_mib(pid)
        cold = run(read_argv(J_CLI, big, cell_big), off)
        if cold.returncode != 0 or png_of(cold.stdout) != truth:
            raise BenchError("ours cold 400 failed or differs from warm: " + describe_failure("cold", cold))
        print(f"check: warm and cold reads of the 400 MB notebook give the same PNG ({len(truth)} bytes): True")
        commands = {
            FLOOR: (FLOOR_ARGV, off),
            WARM: (read_argv(J_CLI, big, cell_big), on),
            COLD: (read_argv(J_CLI, big, cell_big), off),
        }
        run(read_argv(J_CLI, mid, cell_mid), on)  # the 100 MB index, built once
        own = OwnWriter(runtime, counts[100])
        own_read = [str(J_CLI), "-j", "notebook", "output", OWN_COPY.name, "--cell", str(cell_mid), "--output", str(IMAGE_OUTPUT)]
        first_own = run(own_read, on)
        if first_own.returncode != 0 or png_of(first_own.stdout) != png_of(run(read_argv(J_CLI, mid, cell_mid), on).stdout):
            raise BenchError("the read after our own write failed or differs: " + describe_failure(OWN, first_own))
        adopted_before = sidecar.status()["cache"].get("adopted_loads", 0)
        for i in range(runs):
            for name in rotated([*commands, CHANGED, OWN, BYTES_400, BYTES_100], i):
                if name in (BYTES_400, BYTES_100):
                    results["times"][name].append(timed(read_bytes, big if name == BYTES_400 else mid)[0])
                    continue
                if name == CHANGED:
                    changed(mid)
                    ms, r = timed(run, read_argv(J_CLI, mid, cell_mid), on)
                elif name == OWN:
                    own.write()
                    ms, r = timed(run, own_read, on)
                else:
                    ms, r = timed(run, *commands[name])
                if r.returncode != 0:
                    raise BenchError(describe_failure(name, r))
                results["times"][name].append(ms)
        results["adopted"] = sidecar.status()["cache"].get("adopted_loads", 0) - adopted_before
        if upstream is not None:
            for _ in range(upstream_runs):
                ms, r = timed(run, read_argv(upstream, big, cell_big), off)
                if r.returncode != 0:
                    print(describe_failure("upstream 400", r))
                    break
                results["times"][UPSTREAM].append(ms)
            if results["times"][UPSTREAM] and png_of(r.stdout) != truth:
                print("check: upstream PNG == ours: False")
        results["peak_cold"] = peak_rss_mib(*commands[COLD])
        before = sidecar.status()["cache"]
        changed(big)
        ms, four = timed(four_at_once, read_argv(J_CLI, big, cell_big), on)
        if any(r.returncode != 0 or png_of(r.stdout) != truth for r in four):
            raise BenchError("one of 4 reads at once failed or gave another PNG")
        results["times"][FOUR].append(ms)
        after = sidecar.status()
        results["builds"] = after["cache"]["builds"] - before["builds"]
        results["shared"] = after["cache"]["shared_builds"] - before["shared_builds"]
        results["hwm_four"] = vm_hwm_mib(pid)
        results["rss"] = sidecar.rss_mib(pid)
        results["cache"] = after["cache"]
    finally:
        for note in sidecar.stop():
            print(f"note: {note}")
        OWN_COPY.unlink(missing_ok=True)
    return results


def report(results: dict, runs: int) -> None:
    times = {name: samples for name, samples in results["times"].items() if samples}
    print(
        f"\nbig notebooks: {SIZES[400].stat().st_size / 1e6:.0f} MB and {SIZES[100].stat().st_size / 1e6:.0f} MB realistic; {runs} runs each"
    )
    print(stats_header("case", 30))
    for name, samples in times.items():
        print(stats_row(name, samples, 30, 1))
    values = medians(times)
    for total, size in ((FLOOR_BYTES_400, BYTES_400), (FLOOR_BYTES_100, BYTES_100)):
        if FLOOR in values and size in values:
            values[total] = values[FLOOR] + values[size]
    print_targets(values, TARGETS, 32)
    print(
        f"{'own write 100: reads that adopted':<32}{results['adopted']:>6d}      (target {runs}: every read after our write built no index)  {verdict(results['adopted'], '>=', runs)}"
    )
    cache = results["cache"]
    limit = SIDECAR_BASE_MIB + cache["budget_bytes"] / MIB
    print(
        f"{'sidecar RSS after the reads':<32}{results['rss']:>6.1f} MiB  (target <= {SIDECAR_BASE_MIB} + cache budget = {limit:g} MiB; cache holds {cache['bytes'] / MIB:.1f} MiB)  {verdict(results['rss'], '<=', limit)}"
    )
    peak = results["peak_cold"]
    if peak is not None:
        print(f"{'ours cold 400 peak RSS':<32}{peak:>6.1f} MiB  (target <= {CLI_PEAK_MIB} MiB)  {verdict(peak, '<=', CLI_PEAK_MIB)}")
    print(
        f"{'4 at once: index builds':<32}{results['builds']:>6d}      (shared {results['shared']}; target 1)  {verdict(-abs(results['builds'] - 1), '>=', 0)}"
    )
    ratio = results["hwm_four"] / results["hwm_single"]
    print(
        f"{'4 at once: sidecar peak RSS':<32}{ratio:>6.2f}x  ({results['hwm_four']:.1f} MiB after, {results['hwm_single']:.1f} MiB after one build; target <= 1.2x)  {verdict(ratio, '<=', 1.2)}"
    )
