"""Retention latency of ``j-cli output clean``, dry run and real, against ``rm -rf``.

The workspace is always the same: 10,000 published inline runs in
``.j-cli/outputs/``, each a ``manifest.json`` plus one 5,000-character
stdout file, with ``completed_ns`` spread evenly over the 30 days before the
template was built. Under the default policy (7 days, 50 runs) most runs are
``expired``, the rest but the newest 50 are ``over_count``: a clean deletes
9,950 runs and keeps 50.

The template workspace (``bench/.work/clean-template/``) is built once with
the real run store (``jcli_sidecar.runs.store.stage_run`` then ``publish_run``
with no policy, so nothing is cleaned while building) and reused by later
runs while it is complete and young enough (see TEMPLATE_MAX_AGE_DAYS). Each
run's manifest names the building process as its ``owner``; that process has
exited by the time the template is cleaned, so no run is protected as the
newest run of a live owner.

Each round copies the template with ``cp -a`` (not timed, followed by a
``sync`` so that writeback does not land in the timed part), then times
three commands, whole processes from spawn to exit, round-robin with the
first command changing every round:

* ours dry run -- ``j-cli -j output clean --dry-run`` with ``cwd`` = a copy.
                  It changes nothing, so one copy serves every dry run; the
                  copy's tree (names, sizes, mtimes, inodes) is checked
                  unchanged after each one;
* ours clean   -- ``j-cli -j output clean`` (the default policy) on a fresh
                  copy, which it cleans down to 50 runs;
* floor        -- ``rm -rf <copy>/.j-cli/outputs`` on another fresh copy:
                  deleting every file with no reading and no checking at
                  all, which no retention pass can beat.

Why ratios: the machine is noisy and absolute timings drift up to 2x between
runs, so every target compares two medians measured side by side in the same
run (see TARGETS). Nothing here asserts on the numbers: the script prints
"meets target" or "misses target", and exits non-zero only if our own tool
fails (an error exit, a wrong report, a dry run that changed something, a
real clean that left the wrong runs, a run store that cannot build the
template).

Every j-cli child runs with ``JCLI_SIDECAR=off`` and a private
``XDG_RUNTIME_DIR=bench/.work/clean-runtime`` (mode 0700). Everything
generated lives in ``bench/.work/``: the template is kept, the copies
(``bench/.work/clean-copies/``) are removed at the end, also on errors.
``--profile`` also runs ``jcli_sidecar.runs.retention.clean`` in-process under
cProfile on one more copy and prints where its time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness import (
    J_CLI,
    ROOT,
    WORK,
    BenchError,
    bare_env,
    describe_failure,
    medians,
    print_targets,
    rotated,
    run,
    stats_header,
    stats_row,
    timed,
)

TEMPLATE = WORK / "clean-template"  # the workspace (holds .j-cli/outputs/)
STAMP_FILE = TEMPLATE / "bench-stamp.json"  # written last: the template is complete
COPIES = WORK / "clean-copies"
RUNTIME = WORK / "clean-runtime"  # XDG_RUNTIME_DIR of the j-cli children

RUNS = 10_000
SPREAD_DAYS = 30
TEXT_CHARS = 5000  # over the store's 2048-character inline limit: stored as a file
STAMP = {"runs": RUNS, "spread_days": SPREAD_DAYS, "text_chars": TEXT_CHARS}  # rebuild when these change
DAY_NS = 86_400 * 1_000_000_000
# The runs' ages grow with the template's. Under the default 7 days, at least
# 50 runs must still be young for the clean to keep 50 by count: that holds
# for 6.85 days after the build. Past this age the template is rebuilt.
TEMPLATE_MAX_AGE_DAYS = 5
MAX_AGE_DAYS, MAX_RUNS = 7, 50  # the default policy, which the timed commands use
KEEP = MAX_RUNS
WARMUP = 1

# Names used in the tables and in the ratios.
DRY, REAL, FLOOR = "ours dry run", "ours clean", "floor"
LABELS = {
    DRY: "ours dry run (--dry-run)",
    REAL: "ours clean (default policy)",
    FLOOR: "floor (rm -rf .j-cli/outputs)",
}

# (numerator, denominator, op, target): ratios of medians from the same run.
TARGETS = [
    (DRY, FLOOR, "<=", 3.0),
    (REAL, FLOOR, "<=", 3.0),
]


# -- the template -----------------------------------------------------------------


def outputs_of(workspace: Path) -> Path:
    return workspace / ".j-cli" / "outputs"


def run_names(outputs: Path) -> list[str]:
    """The run directories in ``outputs`` (not ``.staging``, ``.lock``), sorted."""
    return sorted(e.name for e in os.scandir(outputs) if not e.name.startswith(".") and e.is_dir())


def template_info() -> dict | None:
    """The template's runs ``{names, completed_ns by name, built_ns}``, or None if unusable.

    Prints why when it is there but cannot be reused.
    """
    try:
        stamp = json.loads(STAMP_FILE.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("params") != STAMP or not isinstance(stamp.get("built_ns"), int):
        print("note: the clean template was built with other parameters: rebuilding")
        return None
    age_days = (time.time_ns() - stamp["built_ns"]) / DAY_NS
    if age_days > TEMPLATE_MAX_AGE_DAYS:
        print(f"note: the clean template is {age_days:.1f} days old (its runs have aged past the policy): rebuilding")
        return None
    outputs = outputs_of(TEMPLATE)
    completed: dict[str, int] = {}
    try:
        names = run_names(outputs)
        staging = os.listdir(outputs / ".staging")
        for name in names:
            run_dir = outputs / name
            doc = json.loads((run_dir / "manifest.json").read_bytes())
            if sorted(os.listdir(run_dir)) != sorted(["manifest.json", *doc["files"]]) or len(doc["files"]) != 1:
                raise ValueError(f"{name}: unexpected files")
            completed[name] = doc["completed_ns"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"note: the clean template is damaged ({exc!r}): rebuilding")
        return None
    if len(names) != RUNS or staging:
        print(f"note: the clean template holds {len(names)} runs and {len(staging)} staged: rebuilding")
        return None
    return {"names": names, "completed": completed, "built_ns": stamp["built_ns"]}


def build_template() -> None:
    """RUNS published runs, through the real run store, spread over SPREAD_DAYS."""
    try:
        from jcli_sidecar.runs.store import publish_run, stage_run
    except ImportError as exc:
        raise BenchError(f"the run store cannot be imported: {exc!r}") from None
    shutil.rmtree(TEMPLATE, ignore_errors=True)
    TEMPLATE.mkdir(parents=True)
    cwd = str(TEMPLATE)
    outputs = [{"output_type": "stream", "name": "stdout", "text": "x" * TEXT_CHARS}]
    built_ns = time.time_ns()
    step = SPREAD_DAYS * DAY_NS // RUNS
    print(f"building {TEMPLATE.relative_to(ROOT)}: {RUNS} runs through the run store (once) ...", flush=True)
    t0 = time.perf_counter()
    try:
        for i in range(RUNS):
            when = built_ns - (RUNS - 1 - i) * step  # oldest first, the newest at built_ns
            staged = stage_run(cwd, outputs, source={"kind": "bench"}, status="ok", created_ns=when, completed_ns=when)
            publish_run(staged.outputs_dir, staged.run_id)
            if (i + 1) % 1000 == 0:
                print(f"  {i + 1} / {RUNS} runs published ({time.perf_counter() - t0:.1f} s)", flush=True)
    except Exception as exc:  # noqa: BLE001 -- the store is ours: any failure is our tool failing
        raise BenchError(f"the run store failed while building the template: {exc!r}") from None
    STAMP_FILE.write_text(json.dumps({"params": STAMP, "built_ns": built_ns}) + "\n")


def ensure_template() -> dict:
    info = template_info()
    if info is None:
        build_template()
        info = template_info()
        if info is None:
            raise BenchError("the freshly built clean template is not valid")
    return info


# -- copies, commands, checks -----------------------------------------------------


class Copies:
    """Fresh copies of the template under ``bench/.work/clean-copies/``."""

    def __init__(self) -> None:
        shutil.rmtree(COPIES, ignore_errors=True)  # left over by an interrupted run
        COPIES.mkdir(parents=True)
        self.count = 0

    def new(self, what: str) -> Path:
        self.count += 1
        dest = COPIES / f"{self.count:02d}-{what}"
        r = subprocess.run(["cp", "-a", str(TEMPLATE), str(dest)], capture_output=True)
        if r.returncode != 0:
            raise BenchError(describe_failure("cp -a (copying the template)", r))
        return dest

    @staticmethod
    def drop(path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(COPIES, ignore_errors=True)


def argv_of(name: str, copy: Path) -> list[str]:
    if name == DRY:
        return [str(J_CLI), "-j", "output", "clean", "--dry-run"]
    if name == REAL:
        return [str(J_CLI), "-j", "output", "clean"]
    return ["rm", "-rf", str(outputs_of(copy))]


def timed_run(name: str, copy: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    """One command of the round, timed, in ``copy``."""
    return timed(run, argv_of(name, copy), env, cwd=copy, stdin=subprocess.DEVNULL)


def tree_fingerprint(workspace: Path) -> dict[str, tuple]:
    """Every path under ``.j-cli`` with its type, size, mtime and inode."""
    found: dict[str, tuple] = {}
    stack = [workspace / ".j-cli"]
    while stack:
        directory = stack.pop()
        for entry in os.scandir(directory):
            st = entry.stat(follow_symlinks=False)
            found[entry.path] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return found


def report_of(name: str, r: subprocess.CompletedProcess) -> dict:
    if r.returncode != 0:
        raise BenchError(describe_failure(name, r))
    try:
        doc = json.loads(r.stdout)
        doc["totals"]["deleted"]
        return doc
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"{name} printed no clean report ({exc!r}): {r.stdout[:300]!r}") from None


def reasons(doc: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for d in doc["deleted"]:
        counts[d["reason"]] = counts.get(d["reason"], 0) + 1
    return counts


class Checker:
    """The checks on every timed run (outside the timing); the first of each kind is printed."""

    def __init__(self, info: dict) -> None:
        self.names = info["names"]
        self.kept = set(self.names[-KEEP:])  # run ids sort by creation time: the newest 50
        self.doomed = set(self.names[:-KEEP])
        self.completed = info["completed"]
        self.printed: set[str] = set()

    def expected_reasons(self, now_ns: int) -> dict[str, int]:
        expired = sum(1 for n in self.doomed if now_ns - self.completed[n] > MAX_AGE_DAYS * DAY_NS)
        return {"expired": expired, "over_count": len(self.doomed) - expired}

    def _say(self, kind: str, line: str) -> None:
        if kind not in self.printed:
            self.printed.add(kind)
            print(line)

    def dry(self, r: subprocess.CompletedProcess, before: dict, copy: Path, now_ns: int) -> None:
        doc = report_of("ours dry run (j-cli output clean --dry-run)", r)
        deleted = {d["run_id"] for d in doc["deleted"]}
        ok = (
            doc["status"] == "ok"
            and doc["dry_run"] is True
            and doc["totals"]["deleted"] == len(self.doomed)
            and deleted == self.doomed
            and not doc["errors"]
        )
        self._say(
            "dry",
            f"check: dry run reports totals.deleted == {len(self.doomed)}, the 50 newest kept: {ok} "
            f"(status {doc['status']!r}, totals {doc['totals']}, reasons {reasons(doc)}, "
            f"expected about {self.expected_reasons(now_ns)})",
        )
        if not ok:
            raise BenchError(f"the dry run reported the wrong runs: totals {doc['totals']}, errors {doc['errors'][:3]}")
        same = tree_fingerprint(copy) == before
        self._say("dry-same", f"check: the dry run changed nothing in its copy ({len(before)} paths compared): {same}")
        if not same:
            raise BenchError("the dry run changed the tree")

    def real(self, r: subprocess.CompletedProcess, copy: Path) -> None:
        doc = report_of("ours clean (j-cli output clean)", r)
        deleted = {d["run_id"] for d in doc["deleted"]}
        left = run_names(outputs_of(copy))
        ok = (
            doc["status"] == "ok"
            and doc["dry_run"] is False
            and doc["totals"]["deleted"] == len(self.doomed)
            and deleted == self.doomed
            and not doc["errors"]
        )
        self._say(
            "real",
            f"check: real clean reports totals.deleted == {len(self.doomed)}: {ok} "
            f"(status {doc['status']!r}, totals {doc['totals']}, reasons {reasons(doc)})",
        )
        same = set(left) == self.kept
        self._say("real-left", f"check: exactly the {KEEP} newest run dirs remain after the real clean: {same} ({len(left)} left)")
        if not ok or not same:
            raise BenchError(
                f"the real clean did the wrong thing: totals {doc['totals']}, errors {doc['errors'][:3]}, {len(left)} runs left"
            )

    def floor(self, r: subprocess.CompletedProcess, copy: Path) -> bool:
        gone = r.returncode == 0 and not outputs_of(copy).exists()
        self._say("floor", f"check: rm -rf removed .j-cli/outputs: {gone}")
        if not gone:
            print(describe_failure("floor (rm -rf)", r))
        return gone


# -- measuring ----------------------------------------------------------------------


def measure(info: dict, rounds: int, copies: Copies) -> dict[str, list[float]]:
    env = bare_env(RUNTIME)
    check = Checker(info)
    dry_copy = copies.new("dry")
    before = tree_fingerprint(dry_copy)
    for _ in range(WARMUP):  # .pyc and the page cache, checked like a timed run
        _, r = timed_run(DRY, dry_copy, env)
        check.dry(r, before, dry_copy, time.time_ns())

    names = [DRY, REAL, FLOOR]
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(rounds):
        fresh = {DRY: dry_copy}
        for name in names[1:]:
            if name in times:
                fresh[name] = copies.new("real" if name == REAL else "rm")
        os.sync()  # the copies' dirty pages are written back before the timed part
        for name in rotated([n for n in names if n in times], i):
            ms, r = timed_run(name, fresh[name], env)
            if name == DRY:
                check.dry(r, before, dry_copy, time.time_ns())
            elif name == REAL:
                check.real(r, fresh[name])
            elif not check.floor(r, fresh[name]):
                print("floor: left out")
                times.pop(FLOOR)
                continue
            times[name].append(ms)
        for name, copy in fresh.items():
            if name != DRY:
                copies.drop(copy)
    copies.drop(dry_copy)
    return times


def profile_clean(copies: Copies, top: int = 20) -> None:
    """``jcli_sidecar.runs.retention.clean`` in-process under cProfile, on one more copy."""
    from jcli_sidecar.base.locks import outputs_lock
    from jcli_sidecar.runs.retention import clean, resolve_policy

    copy = copies.new("profile")
    os.sync()
    outputs = str(outputs_of(copy))
    policy = resolve_policy(env={})
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    with outputs_lock(outputs):
        prof.enable()
        report = clean(outputs, policy)
        prof.disable()
    ms = (time.perf_counter() - t0) * 1000
    print(f"\nprofile: retention.clean in-process on a fresh copy: {ms:.0f} ms (under cProfile), totals {report['totals']}")
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats(key).print_stats(top)
        lines = out.getvalue().splitlines()
        start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
        print(f"top {top} by {key}:")
        print("\n".join(line for line in lines[start:] if line.strip()))
    copies.drop(copy)


# -- the report -----------------------------------------------------------------------


def print_table(times: dict, rounds: int, info: dict) -> None:
    print(
        f"\nclean: {RUNS} runs (manifest + one {TEXT_CHARS}-char file each, completed over {SPREAD_DAYS} days; "
        f"template built {(time.time_ns() - info['built_ns']) / DAY_NS:.1f} days ago), default policy "
        f"{MAX_AGE_DAYS} days / {MAX_RUNS} runs; {rounds} round{'s' if rounds != 1 else ''}, interleaved, "
        f"{WARMUP} warm-up dry run"
    )
    print(stats_header("command", 32, last="max"))
    for name, samples in times.items():
        print(stats_row(LABELS[name], samples, 32, 1, last="max"))
    if FLOOR not in times:
        print(f"{LABELS[FLOOR]:<32}unavailable")


# -- main -------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the three commands (default 3)")
    parser.add_argument("--profile", action="store_true", help="also profile retention.clean in-process (cProfile) on one more copy")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")

    WORK.mkdir(parents=True, exist_ok=True)
    copies = None
    try:
        info = ensure_template()
        print(
            f"template: {len(info['names'])} runs in {outputs_of(TEMPLATE).relative_to(ROOT)}, "
            f"built {(time.time_ns() - info['built_ns']) / DAY_NS:.2f} days ago"
        )
        copies = Copies()
        times = measure(info, args.rounds, copies)
        if args.profile:
            profile_clean(copies)
    except BenchError as exc:
        print(exc)
        return 1
    finally:
        if copies is not None:
            copies.close()
    print(f"copies removed ({COPIES.relative_to(ROOT)}); template kept")

    print_table(times, args.rounds, info)
    print_targets(medians(times), TARGETS, 28, names={FLOOR: "rm -rf"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
