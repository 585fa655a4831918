"""Re-running only what changed: ``j-cli exec -f x.ipynb --stale`` after one edit, against a full re-run.

The notebook has CELLS code cells (default 200), each sleeping 50 ms, in
blocks of ten: cell ``i`` writes ``x{i}`` and reads ``x{i-1}``, except the
first of a block, which reads nothing of the others. Cell 0 imports
``time``. After a full run (which leaves every cell's run record), cell 100
is edited: it and the rest of its block (101..109) are stale, ten cells.

Timed, each on a fresh copy of the same files, in one warm kernel session
(``JCLI_SIDECAR=off``):

* full      -- ``j-cli -j exec S -f copy.ipynb``: every cell;
* stale     -- ``j-cli -j exec S -f edited.ipynb --stale``: it must run exactly the ten stale cells;
* the same  -- ``j-cli -j exec S -f edited.ipynb --cell 100:110``: the same
               cells of the same notebook, named by hand: what running the
               stale cells costs without finding them.

Target: stale <= 1.1 x the same (the stale cells' time plus 10%).

Run: ``python bench/stale_rerun.py [--cells 200] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys

from exec_latency import Server, child_env, create_session
from harness import WORK, BenchError, code_notebook, exec_notebook, print_targets, stats_header, stats_row, timed

SESSION = "stale"
WIDTH = 34
EDITED = 100
BLOCK = 10


def source(i: int, bump: int = 0) -> str:
    head = "import time\n" if i == 0 else ""
    value = f"x{i - 1} + 1" if i % BLOCK else str(i + bump)
    return f"{head}time.sleep(0.05)\nx{i} = {value}\n"


def run(env: dict[str, str], path, *extra: str) -> dict:
    return exec_notebook(env, SESSION, path, *extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=200, help="code cells of the notebook (default 200)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    args = parser.parse_args()
    if args.cells <= EDITED:
        print(f"error: --cells must be over {EDITED}", file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    sources = [source(i) for i in range(args.cells)]
    stale = list(range(EDITED, EDITED + BLOCK))
    blank, ran, edited, by_hand = (WORK / f"stale_{name}.ipynb" for name in ("blank", "ran", "edited", "by_hand"))
    code_notebook(blank, sources)
    server = Server()
    try:
        server.start()
        env = child_env(server)
        create_session(env, SESSION)
        samples: dict[str, list[float]] = {"full": [], "stale": [], "the same cells": []}
        for _ in range(args.runs):
            shutil.copyfile(blank, ran)
            ms, summary = timed(run, env, ran)
            if summary["cells_run"] != args.cells:
                raise BenchError(f"the full run ran {summary['cells_run']} cells, not {args.cells}")
            samples["full"].append(ms)
            nb = json.loads(ran.read_text())
            nb["cells"][EDITED]["source"] = source(EDITED, 1)  # the edit
            edited.write_text(json.dumps(nb, indent=1) + "\n")
            shutil.copyfile(edited, by_hand)
            ms, summary = timed(run, env, edited, "--stale")
            if summary.get("stale") != stale or summary["cells_run"] != len(stale):
                raise BenchError(f"--stale ran {summary.get('stale')}, not {stale}")
            samples["stale"].append(ms)
            ms, summary = timed(run, env, by_hand, "--cell", f"{EDITED}:{EDITED + BLOCK}")
            if summary["cells_run"] != len(stale):
                raise BenchError(f"--cell ran {summary['cells_run']} cells, not {len(stale)}")
            samples["the same cells"].append(ms)
        print(f"\nstale cells: {len(stale)} of {args.cells} code cells (50 ms each) after one edit, {args.runs} runs")
        print(stats_header("", WIDTH, "max"))
        for name, values in samples.items():
            print(stats_row(name, values, WIDTH, 0, "max"))
        values = {name: statistics.median(v) for name, v in samples.items()}
        print_targets(values, [("stale", "the same cells", "<=", 1.1)], WIDTH)
        print(f"{'full / stale':<{WIDTH}}{values['full'] / values['stale']:7.1f}x")
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        for note in server.stop():
            print(f"note: {note}")
        for path in (blank, ran, edited, by_hand):
            path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
