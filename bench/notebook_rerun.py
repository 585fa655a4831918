"""Re-running a notebook with big outputs: ``j-cli exec -f`` against ``jupyter nbconvert --execute``.

Every cell ``j-cli exec SESSION -f x.ipynb`` finishes is written back into
the notebook at once; this measures what that costs as the notebook grows.
The notebooks are ``realistic_notebook.write_notebook(runnable=True,
nbformat_layout=True)``: plots, logs and tables, whose code makes outputs
of the same kinds and sizes again, saved as Jupyter saves them. Each timed
run works on a fresh copy (the copy is not timed). One Jupyter Server
(``exec_latency.Server``) and one warm kernel session serve j-cli.

A. A full re-run of every cell of the SIZE MB notebook (default 25):

   * ours      -- ``j-cli -j exec rerun -f copy.ipynb`` (``JCLI_SIDECAR=off``);
   * nbconvert -- ``jupyter nbconvert --to notebook --execute`` on the same
                  file; it starts a kernel of its own each time, so its
                  run of a one-cell notebook is shown too (its fixed cost).

   Target: ours <= 1.5x nbconvert.

B. Per-cell cost against the notebook's size: the same kinds of cells (a
   run of K near the end) re-run in a 1 MB and a BIG MB (default 100)
   notebook. The marginal cost of a cell is ``(t(K) - t(2)) / (K - 2)``,
   which leaves out what a run pays once (starting, indexing the file).
   Target: BIG MB <= 3x 1 MB. The client's peak RSS (``ru_maxrss``) of the
   K-cell run on the BIG MB notebook: target <= 64 MiB plus the biggest
   cell's outputs.

Run: ``python bench/notebook_rerun.py [--size-mb 25] [--big-mb 100] [--runs 3] [--cells 8]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys

from exec_latency import Server, child_env, create_session
from harness import J_CLI, OUR_BIN, WORK, BenchError, peak_rss_mib, print_targets, stats_header, stats_row, timed
from realistic_notebook import cell_kind, write_notebook

SESSION = "rerun"
WIDTH = 34


def template(size_mb: int) -> tuple:
    """The runnable notebook of ``size_mb`` in bench/.work (made once) and its cell count."""
    path = WORK / f"rerun_{size_mb}mb.ipynb"
    count_file = path.with_suffix(".cells")
    if not path.exists() or not count_file.exists():
        print(f"note: writing {path.name} (once) ...", flush=True)
        count_file.write_text(str(write_notebook(path, size_mb << 20, with_ids=True, runnable=True, nbformat_layout=True)))
    return path, int(count_file.read_text())


def fresh_copy(source, name: str):
    target = WORK / name
    shutil.copyfile(source, target)
    return target


def run_ours(env: dict[str, str], path, cells: str | None = None) -> dict:
    argv = [str(J_CLI), "-j", "exec", SESSION, "-f", str(path)] + (["--cell", cells] if cells else [])
    r = subprocess.run(argv, capture_output=True, cwd=WORK, env=env)
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    if r.returncode != 0 or not lines or lines[-1].get("status") != "ok":
        raise BenchError(f"j-cli exec -f failed (exit {r.returncode}): {r.stderr.decode(errors='replace')[-400:]}")
    return lines[-1]


def run_nbconvert(path) -> None:
    argv = [str(OUR_BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--output", "nbconvert-out.ipynb", str(path)]
    r = subprocess.run(argv, capture_output=True, cwd=WORK)
    if r.returncode != 0:
        raise BenchError(f"nbconvert failed (exit {r.returncode}): {r.stderr.decode(errors='replace')[-400:]}")


def one_cell_notebook():
    path = WORK / "rerun_one_cell.ipynb"
    nb = {
        "cells": [{"cell_type": "code", "execution_count": None, "id": "one", "metadata": {}, "outputs": [], "source": ["1 + 1"]}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1, sort_keys=True) + "\n")
    return path


def full_rerun(env: dict[str, str], size_mb: int, runs: int) -> dict[str, list[float]]:
    path, count = template(size_mb)
    code = sum(1 for i in range(count) if cell_kind(i) != "markdown")
    samples: dict[str, list[float]] = {"ours": [], "nbconvert": [], "nbconvert, one cell": []}
    one = one_cell_notebook()
    for _ in range(runs):
        ms, summary = timed(run_ours, env, fresh_copy(path, "rerun_ours.ipynb"))
        if summary["cells_run"] != code:
            raise BenchError(f"j-cli ran {summary['cells_run']} cells, not {code}")
        samples["ours"].append(ms)
        samples["nbconvert"].append(timed(run_nbconvert, fresh_copy(path, "rerun_nbconvert.ipynb"))[0])
        samples["nbconvert, one cell"].append(timed(run_nbconvert, one)[0])
    print(f"\nA. full re-run: {count} cells ({code} code) of a {path.stat().st_size / (1 << 20):.1f} MiB notebook, {runs} runs")
    print(stats_header("", WIDTH, "max"))
    for name, values in samples.items():
        print(stats_row(name, values, WIDTH, 0, "max"))
    return samples


def per_cell(env: dict[str, str], sizes: list[int], cells: int, runs: int) -> tuple[dict[int, float], float | None, float]:
    marginal: dict[int, float] = {}
    peak = None
    biggest = 0.0
    for size_mb in sizes:
        path, count = template(size_mb)
        if count < cells + 2:
            raise BenchError(f"{path.name} has {count} cells: fewer than --cells {cells}")
        first = max(count - cells - 10, 0) // 10 * 10 + 1  # the same kinds of cells in every size
        timings: dict[int, list[float]] = {2: [], cells: []}
        for _ in range(runs):
            for k in (2, cells):
                copy = fresh_copy(path, f"rerun_cells_{size_mb}.ipynb")
                timings[k].append(timed(run_ours, env, copy, f"{first}:{first + k}")[0])
        marginal[size_mb] = (statistics.median(timings[cells]) - statistics.median(timings[2])) / (cells - 2)
        print(
            f"{size_mb:>4} MB: run of 2 cells {statistics.median(timings[2]):8.0f} ms, of {cells} {statistics.median(timings[cells]):8.0f} ms,"
            f" marginal {marginal[size_mb]:7.1f} ms per cell"
        )
        if size_mb == sizes[-1]:
            copy = fresh_copy(path, f"rerun_cells_{size_mb}.ipynb")
            peak = peak_rss_mib([str(J_CLI), "-j", "exec", SESSION, "-f", str(copy), "--cell", f"{first}:{first + cells}"], env)
            nb = json.loads(copy.read_bytes())
            biggest = max(len(json.dumps(nb["cells"][i].get("outputs", []))) for i in range(first, first + cells)) / (1 << 20)
        (WORK / f"rerun_cells_{size_mb}.ipynb").unlink(missing_ok=True)
    return marginal, peak, biggest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=25, help="the notebook of the full re-run (default 25)")
    parser.add_argument("--big-mb", type=int, default=100, help="the big notebook of the per-cell figures (default 100)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    parser.add_argument("--cells", type=int, default=8, help="cells of the long per-cell run (default 8: a 1 MB notebook has 9)")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    server = Server()
    try:
        server.start()
        env = child_env(server)
        create_session(env, SESSION)
        run_ours(env, fresh_copy(template(1)[0], "rerun_warm.ipynb"), "0:10")  # warm the kernel: imports, first PNG
        full = full_rerun(env, args.size_mb, args.runs)
        print(f"\nB. per-cell cost, cells of the same kinds ({args.runs} runs each)")
        marginal, peak, biggest = per_cell(env, [1, args.big_mb], args.cells, args.runs)
        values = {
            "ours": statistics.median(full["ours"]),
            "nbconvert": statistics.median(full["nbconvert"]),
            f"{args.big_mb} MB per cell": marginal[args.big_mb],
            "1 MB per cell": marginal[1],
        }
        print_targets(values, [("ours", "nbconvert", "<=", 1.5), (f"{args.big_mb} MB per cell", "1 MB per cell", "<=", 3)], WIDTH)
        if peak is not None:
            budget = 64 + biggest
            verdict = "meets target" if peak <= budget else "misses target"
            print(
                f"{'client peak RSS, ' + str(args.big_mb) + ' MB run':<{WIDTH}}{peak:7.1f} MiB  (target <= 64 + {biggest:.1f} MiB)  {verdict}"
            )
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        for note in server.stop():
            print(f"note: {note}")
        for name in ("rerun_ours.ipynb", "rerun_nbconvert.ipynb", "nbconvert-out.ipynb", "rerun_warm.ipynb"):
            (WORK / name).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
