"""Runs through a collaboration room: how soon the person sees an output, and what a whole run costs, against the file path.

A Jupyter Server with jupyter-collaboration (its server part, as the
project venv has it), one warm kernel session, and a person in the
notebook's room: a real Y client of its own (tests/room/room_world.Person,
pycrdt and jupyter-ydoc as JupyterLab's front end), not j-cli's.

* output -> person: a cell prints the kernel's clock 40 times, 50 ms apart;
  the person's client notes its own clock as each line appears in its
  document (same machine, same clock). Live: j-cli writes each output into
  the room. By the file (``JCLI_LIVE=off``, a checkpoint at every output,
  the fastest the file path goes): the person sees a line only when the
  server notices the file changed and reloads it into the room.
  Target: live median under 250 ms.
* a 200-cell run (``x{i} = i``), the person in the room: ``j-cli -j exec
  S -f nb.ipynb`` through the room (every output live, the server's save
  waited for) against ``JCLI_LIVE=off`` (the file written cell by cell).
  Target: the room within 1.5x the file path.

The first few lines' two clocks are printed, to show a run as the person sees it.

Run: ``python bench/live_room.py [--runs 3] [--cells 200]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

from exec_latency import JROOT, Server, child_env, create_session
from harness import ROOT, WORK, BenchError, code_notebook, exec_notebook, print_targets, stats_header, stats_row, timed

sys.path.insert(0, str(ROOT / "tests" / "room"))
sys.path.insert(0, str(ROOT / "tests"))

SESSION = "live"
WIDTH = 40
LINES = 40
CLOCK_CELL = f"import time\nfor _ in range({LINES}):\n    print(repr(time.time()), flush=True)\n    time.sleep(0.05)\n"


def run(env: dict[str, str], path) -> dict:
    return exec_notebook(env, SESSION, path, cwd=JROOT)


def seen_by_person(server: Server, env: dict[str, str], name: str) -> tuple[list[tuple[float, float]], dict]:
    """Run the clock cell with the person in the room: ``(kernel clock, person's clock)`` per line, and the summary."""
    from room_world import person_in_room

    path = JROOT / name
    code_notebook(path, [CLOCK_CELL])
    seen: dict[float, float] = {}
    with person_in_room(server.url, server.token, name) as person:
        done = threading.Event()

        def look() -> None:  # wakes at each message the room sends the person, once the person's document has it
            with person.changed:
                while not done.is_set():
                    person.changed.wait(0.5)
                    now = time.time()
                    outputs = person.notebook.ycells[0].get("outputs")
                    if outputs is None or not len(outputs):
                        continue
                    for line in str(outputs[0].get("text", "")).splitlines():
                        try:
                            seen.setdefault(float(line), now)
                        except ValueError:
                            continue

        watcher = threading.Thread(target=look, daemon=True)
        watcher.start()
        summary = run(env, path)
        person.wait_for(lambda: len(seen) >= LINES, f"all {LINES} lines", bound=30)
        done.set()
        watcher.join(5)
    path.unlink(missing_ok=True)
    return sorted(seen.items()), summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    parser.add_argument("--cells", type=int, default=200, help="cells of the whole-run notebook (default 200)")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    server = Server()
    made = []
    try:
        server.start()
        env = child_env(server)
        live_env = {k: v for k, v in env.items() if k != "JCLI_LIVE"}
        file_env = {**env, "JCLI_LIVE": "off", "JCLI_CHECKPOINT_SECONDS": "0"}
        create_session(env, SESSION)

        pairs, summary = seen_by_person(server, live_env, "clock-live.ipynb")
        if summary.get("live") is not True:
            raise BenchError(f"the run did not go through the room: {summary.get('live_reason')}")
        live_delays = [(person - kernel) * 1000 for kernel, person in pairs]
        print(f"\nthe person's view of a live run ({LINES} lines, 50 ms apart): kernel clock -> person's clock")
        for kernel, person in pairs[:5]:
            print(
                f"  {time.strftime('%H:%M:%S', time.localtime(kernel))}.{int(kernel % 1 * 1000):03d}"
                f" -> {time.strftime('%H:%M:%S', time.localtime(person))}.{int(person % 1 * 1000):03d}"
                f"  (+{(person - kernel) * 1000:.0f} ms)"
            )
        file_pairs, summary = seen_by_person(server, file_env, "clock-file.ipynb")
        if summary.get("live") is not False:
            raise BenchError("JCLI_LIVE=off went through the room")
        file_delays = [(person - kernel) * 1000 for kernel, person in file_pairs]
        print(f"\noutput -> the person's document, ms ({LINES} lines)")
        print(stats_header("", WIDTH, "max"))
        print(stats_row("live (through the room)", live_delays, WIDTH, 0, "max"))
        print(stats_row("by the file (server reloads it)", file_delays, WIDTH, 0, "max"))
        live_median = statistics.median(live_delays)
        verdict = "ok" if live_median < 250 else "MISSED"
        print(f"{'live median':<{WIDTH}}{live_median:7.0f} ms  target < 250 ms  {verdict}")

        from room_world import person_in_room

        samples: dict[str, list[float]] = {"through the room": [], "by the file": []}
        sources = [f"x{i} = {i}\n" for i in range(args.cells)]
        for k in range(args.runs):
            for label, run_env in (("through the room", live_env), ("by the file", {**env, "JCLI_LIVE": "off"})):
                name = f"whole-{k}-{'room' if run_env is live_env else 'file'}.ipynb"
                path = JROOT / name
                made.append(path)
                code_notebook(path, sources)
                with person_in_room(server.url, server.token, name):
                    ms, summary = timed(run, run_env, path)
                if summary["cells_run"] != args.cells or summary.get("live") is not (run_env is live_env):
                    raise BenchError(f"{label}: ran {summary['cells_run']} cells, live {summary.get('live')}")
                samples[label].append(ms)
        print(f"\na {args.cells}-cell run with the person in the room, ms, {args.runs} runs")
        print(stats_header("", WIDTH, "max"))
        for label, values in samples.items():
            print(stats_row(label, values, WIDTH, 0, "max"))
        values = {label: statistics.median(v) for label, v in samples.items()}
        print_targets(values, [("through the room", "by the file", "<=", 1.5)], WIDTH)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        for note in server.stop():
            print(f"note: {note}")
        for path in made:
            path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
