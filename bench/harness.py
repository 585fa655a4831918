"""What the benchmarks in ``bench/`` share, so that each script holds only what it measures.

The scripts run as ``python bench/NAME.py``, so this directory is first on
``sys.path`` and they import this module as ``harness``. Everything here is
used by two or more of them:

* paths and the upstream competitor's scratch venv (``ensure_venv``,
  ``ensure_upstream``);
* the fixture notebooks of the read and MCP benchmarks (``ensure_notebooks``,
  ``notebook_png``, ``noise_png``);
* the environment of the j-cli children and a script's own sidecar
  (``child_env``, ``bare_env``, ``sidecar_runtime_dir``, ``Sidecar``,
  ``stop_and_clean``), and the processes to check none is left behind
  (``ProcessSet``);
* the notebooks of the notebook-run benchmarks and one run of one (``code_notebook``, ``exec_notebook``);
* running and timing (``run``, ``timed``, ``rotated``, ``peak_rss_mib``), and a
  Jupyter Server as it ships (``jupyter_server_argv``);
* the report (``summarize``, ``medians``, ``stats_header``, ``stats_row``,
  ``ratio_line``, ``print_targets``).

Nothing here runs on import; generated files go in ``bench/.work/``.
"""

from __future__ import annotations

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
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
WORK = BENCH / ".work"  # everything generated (git-ignored), reused by later runs
OUR_BIN = ROOT / ".venv" / "bin"
J_CLI = OUR_BIN / "j-cli"
MIB = 1024 * 1024

# The floor of the whole-process figures: the project interpreter importing
# what a lean client needs and nothing else, the cost of starting Python at all.
FLOOR_ARGV = [str(OUR_BIN / "python"), "-c", "import socket, msgpack, json, base64"]

UPSTREAM_PIN = "jupyter-jcli==0.9.7"
UPSTREAM_VENV = WORK / "upstream-venv"


class BenchError(Exception):
    """Our own tool failed: the run's numbers cannot be trusted."""


# -- scratch venvs ----------------------------------------------------------------


def ensure_venv(venv: Path, pin: str, ready: Callable[[], bool], name: str) -> bool:
    """Make sure the scratch venv ``venv`` holds ``pin``, installing it on first use.

    ``ready()`` tells whether an earlier run already did. The venv is made
    from the base interpreter, not from the project venv. Returns False, and
    prints the failing step under ``name``, if it cannot be installed.
    """
    if ready():
        return True
    print(f"note: installing {pin} into {venv.relative_to(ROOT)} (once) ...", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    base = getattr(sys, "_base_executable", None) or sys.executable  # not the project venv
    python = venv / "bin" / "python"
    for step in ([base, "-m", "venv", str(venv)], [str(python), "-m", "pip", "install", "-q", pin]):
        r = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            tail = "\n".join(r.stdout.strip().splitlines()[-5:])
            print(f"{name} unavailable: `{' '.join(step[1:])}` failed (exit {r.returncode}):\n{tail}")
            return False
    return True


def ensure_upstream() -> Path | None:
    """Path of upstream's ``j-cli`` (UPSTREAM_PIN, in its own venv), installed on first use; None if unavailable."""
    exe = UPSTREAM_VENV / "bin" / "j-cli"
    if not ensure_venv(UPSTREAM_VENV, UPSTREAM_PIN, exe.exists, "upstream"):
        return None
    return exe if exe.exists() else None


# -- the fixture notebooks (read and MCP benchmarks) --------------------------------

BIG = WORK / "big.ipynb"  # nbformat 4.4, no cell ids: what ours reads
BIG_IDS = WORK / "big_ids.ipynb"  # the same cells as nbformat 4.5 with cell ids: upstream needs them
CELLS, SIDE, SEED = 200, 173, 20240601
STAMP = {"cells": CELLS, "side": SIDE, "seed": SEED}  # regenerate when these change
OLD_MTIME_AGE = 3600  # seconds; the sidecar cache ignores files changed within 1 s of a read


def noise_png(rng: random.Random, side: int) -> bytes:
    """A ``side`` x ``side`` RGB noise PNG drawn from ``rng`` (noise does not compress: ~3 bytes a pixel)."""
    from PIL import Image

    img = Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def build_notebook(with_ids: bool) -> dict:
    """CELLS code cells, each with one ``display_data`` output: a SIDE x SIDE noise PNG and ``text/plain``."""
    rng = random.Random(SEED)  # the same images in both files
    cells = []
    for i in range(CELLS):
        png = base64.b64encode(noise_png(rng, SIDE)).decode("ascii")
        cell = {
            "cell_type": "code",
            "execution_count": i + 1,
            "metadata": {},
            "outputs": [
                {
                    "output_type": "display_data",
                    "data": {"image/png": png, "text/plain": [f"<Figure {SIDE}x{SIDE} #{i}>"]},
                    "metadata": {},
                }
            ],
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


def make_old(path: Path) -> None:
    """Give a fresh ``path`` an mtime an hour old, so the sidecar cache trusts it."""
    now = time.time()
    if path.stat().st_mtime > now - 60:
        os.utime(path, (now - OLD_MTIME_AGE, now - OLD_MTIME_AGE))


def ensure_notebooks() -> None:
    """BIG and BIG_IDS, generated if missing or stale, with an old mtime."""
    for path, with_ids in ((BIG, False), (BIG_IDS, True)):
        if not notebook_ok(path, with_ids):
            print(f"generating {path.relative_to(ROOT)} ...", flush=True)
            tmp = path.with_suffix(".tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(build_notebook(with_ids), f, indent=1)
            os.replace(tmp, path)  # never leave a half-written notebook behind
        make_old(path)


def notebook_png(cell: int) -> bytes:
    """The PNG stored in output 0 of ``cell`` of BIG: what every read must return."""
    stored = json.loads(BIG.read_bytes())["cells"][cell]["outputs"][0]["data"]["image/png"]
    return base64.b64decode(stored)


# -- the children's environment and the private sidecar ------------------------------


def private_dir(path: Path) -> Path:
    """``path``, created if missing, with mode 0700 (as an ``XDG_RUNTIME_DIR`` must be)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def sidecar_runtime_dir(preferred: Path) -> Path:
    """A mode-0700 ``XDG_RUNTIME_DIR`` for a script's own sidecar.

    ``preferred`` unless the socket path would be too long for a Unix socket
    there (a deep checkout), then a fresh temporary directory.
    """
    from jcli_sidecar.base.runtime import SidecarPaths

    private_dir(preferred)
    socket_path = SidecarPaths(os.path.realpath(WORK), str(preferred / "jcli")).socket
    if len(os.fsencode(socket_path)) <= 100:
        return preferred
    fallback = Path(tempfile.mkdtemp(prefix="jcli-bench-"))  # mkdtemp makes it 0700
    print(f"note: {preferred.relative_to(ROOT)} is too deep for a Unix socket; using {fallback}")
    return fallback


def child_env(runtime: Path, *, sidecar: bool) -> dict[str, str]:
    """A j-cli child's environment: this one, with the private runtime dir and the sidecar on or off.

    Other ``JCLI_*`` settings (e.g. ``JCLI_SIDECAR_CACHE_MB``) pass through.
    """
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime))
    if sidecar:
        env.pop("JCLI_SIDECAR", None)
    else:
        env["JCLI_SIDECAR"] = "off"
    return env


def bare_env(runtime: Path, **extra: str) -> dict[str, str]:
    """A j-cli child's environment with no ``JCLI_*`` setting of the caller's.

    The sidecar off, ``XDG_RUNTIME_DIR=runtime`` (made, mode 0700), and
    ``extra`` on top.
    """
    private_dir(runtime)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JCLI_")}
    env.update(JCLI_SIDECAR="off", XDG_RUNTIME_DIR=str(runtime), **extra)
    return env


def jupyter_server_argv(root: Path, port: int) -> list[str]:
    """``python -m jupyter_server`` from the project venv, as it ships, with the options of j-cli's embedded server.

    Loopback only, ``port`` (0: any free one, named in its ``jpserver-<pid>.json``),
    no browser, no terminals, no IOPub rate limit; the caller gives the token
    in ``JUPYTER_TOKEN`` and the runtime dir in ``JUPYTER_RUNTIME_DIR``.
    """
    argv = [
        str(OUR_BIN / "python"),
        "-m",
        "jupyter_server",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.terminals_enabled=False",
        "--ZMQChannelsWebsocketConnection.limit_rate=False",  # as j-cli's embedded server: a run's output arrives whole
    ]
    return [*argv, "--allow-root"] if os.geteuid() == 0 else argv


class ProcessSet:
    """Processes a script started, directly or not, so that it can make sure none is left behind."""

    def __init__(self) -> None:
        self.seen: dict[int, Any] = {}  # pid -> psutil.Process (which holds its create time)

    def add(self, pid: int) -> None:
        """Track ``pid``; psutil records its create time, so a reused pid is never taken for it."""
        import psutil

        if pid not in self.seen:
            try:
                self.seen[pid] = psutil.Process(pid)
            except psutil.Error:
                pass

    def add_children(self, pid: int | None = None) -> None:
        """Track every descendant of ``pid`` (default: this process)."""
        import psutil

        try:
            children = psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            self.add(child.pid)

    def wait_gone(self, grace: float, killed: Callable[[int, Any], str]) -> list[str]:
        """Wait until every tracked process has exited; kill any still running ``grace`` s from now.

        Returns one note per process killed, worded by ``killed(pid, process)``.
        """
        import psutil

        notes = []
        deadline = time.monotonic() + grace
        for pid, proc in self.seen.items():
            try:
                while proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    if time.monotonic() > deadline:
                        note = killed(pid, proc)  # worded first: a killed process can no longer be described
                        proc.kill()  # is_running() checked pid and create time: it is ours
                        notes.append(note)
                        break
                    time.sleep(0.01)
            except psutil.NoSuchProcess:
                pass
        return notes


class Sidecar:
    """A script's own sidecar, driven by ``j-cli sidecar start|status|stop``."""

    def __init__(self, runtime: Path) -> None:
        self.env = child_env(runtime, sidecar=True)
        self.procs = ProcessSet()  # every sidecar pid seen

    def _cli(self, *args: str) -> subprocess.CompletedProcess:
        return run([str(J_CLI), *args], self.env)

    def status(self) -> dict:
        """``j-cli -j sidecar status``, parsed."""
        r = self._cli("-j", "sidecar", "status")
        if r.returncode != 0:
            raise BenchError(describe_failure("j-cli sidecar status", r))
        doc = json.loads(r.stdout)
        if isinstance(doc.get("pid"), int):
            self.procs.add(doc["pid"])
        return doc

    def start(self) -> dict:
        """Stop a sidecar left over in this runtime dir, start a fresh one, and say so."""
        leftover = self.status()
        if leftover.get("running"):
            print(f"note: stopping a sidecar left over from an earlier run (pid {leftover.get('pid')})")
            self.stop()
        r = self._cli("-j", "sidecar", "start")
        if r.returncode != 0:
            raise BenchError(describe_failure("j-cli sidecar start", r))
        doc = json.loads(r.stdout)
        if isinstance(doc.get("pid"), int):
            self.procs.add(doc["pid"])
        print(f"sidecar started: pid {doc['pid']}, cache budget {doc['cache']['budget_bytes'] / MIB:g} MiB")
        return doc

    def served_since(self, before: dict) -> tuple[dict, int, int]:
        """``(status now, requests served since status before, cache misses since)``.

        The status request made here is not counted as served.
        """
        after = self.status()
        served = after["requests_served"] - before["requests_served"] - 1
        misses = after["cache"]["misses"] - before["cache"]["misses"]
        return after, served, misses

    def rss_mib(self, pid: int) -> float:
        """The resident set of sidecar ``pid`` (seen by ``status``), in MiB."""
        return self.procs.seen[pid].memory_info().rss / MIB

    def stop(self) -> list[str]:
        """Stop the sidecar and make sure every sidecar process seen is gone.

        Returns notes about anything unexpected (empty when all went well).
        """
        notes = []
        r = self._cli("sidecar", "stop")
        if r.returncode != 0:
            notes.append(describe_failure("j-cli sidecar stop", r))
        notes += self.procs.wait_gone(10, lambda pid, _: f"sidecar pid {pid} still ran 10 s after stop: killed")
        self.procs = ProcessSet()
        return notes


def stop_and_clean(sidecar: Sidecar, runtime: Path, kept: Path) -> None:
    """Stop a script's sidecar, drop a temporary runtime dir (not ``kept``), say what was left."""
    notes = sidecar.stop()
    if runtime != kept:
        shutil.rmtree(runtime, ignore_errors=True)
    for note in notes:
        print(f"note: {note}")
    print("sidecar stopped" + ("" if notes else ", no process left"))


# -- running and timing ------------------------------------------------------------


def run(argv: list[str], env: dict[str, str], *, cwd: Path = WORK, stdin: int | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` to its end in ``cwd``, its stdout and stderr captured as bytes."""
    return subprocess.run(argv, stdin=stdin, capture_output=True, cwd=cwd, env=env)


def describe_failure(name: str, r: subprocess.CompletedProcess) -> str:
    """One message for a failed run: its exit status and the end of its stderr."""
    err = r.stderr.decode("utf-8", "replace").strip()[-400:]
    return f"{name} failed (exit {r.returncode}): {err or '(no stderr)'}"


def code_notebook(path: Path, sources: list[str]) -> None:
    """Write a Python notebook (nbformat 4.5) whose code cells hold ``sources``, ids ``c0``, ``c1``, …"""
    cells = [
        {"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [], "source": s}
        for i, s in enumerate(sources)
    ]
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1) + "\n")


def exec_notebook(env: dict[str, str], session: str, path: Path, *extra: str, cwd: Path = WORK) -> dict:
    """``j-cli -j exec SESSION -f PATH [extra]`` to its end: its summary, or a :class:`BenchError` with what it printed."""
    r = subprocess.run([str(J_CLI), "-j", "exec", session, "-f", str(path), *extra], capture_output=True, cwd=cwd, env=env)
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    if r.returncode != 0 or not lines or lines[-1].get("status") != "ok":
        raise BenchError(f"j-cli exec -f failed (exit {r.returncode}): {r.stderr.decode(errors='replace')[-400:]}")
    return lines[-1]


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """``(wall time in ms, result)`` of one ``fn(*args, **kwargs)``, timed with ``time.perf_counter()``."""
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    return (time.perf_counter() - t0) * 1000, result


def read_bytes(path: Path, chunk: int = MIB) -> int:
    """Read the whole file in ``chunk``-byte preads and drop them; returns how many bytes.

    What any reader of the whole file pays at least (the page cache
    copied out), so a read that must look at every byte is compared with it.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        at, size = 0, os.fstat(fd).st_size
        while at < size:
            got = os.pread(fd, chunk, at)
            if not got:
                break
            at += len(got)
        return at
    finally:
        os.close(fd)


def rotated(names: list[str], i: int) -> list[str]:
    """The order of round ``i`` of a round-robin: ``names`` starting at ``i`` (modulo their number).

    Every name takes its turn each round and the first one changes every
    round, so all of them share the machine's noise.
    """
    k = i % len(names)
    return names[k:] + names[:k]


# Peak RSS must be taken from a small parent: Linux carries a process's RSS
# high-water mark over exec, so a child spawned by a script (which may have
# parsed a 24 MB notebook) would report at least that script's own peak.
GNU_TIME = "/usr/bin/time"
SPAWN_AND_WAIT4 = """import os, sys
null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=null)
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss if os.waitstatus_to_exitcode(status) == 0 else -1)
"""


def peak_rss_mib(argv: list[str], env: dict[str, str]) -> float | None:
    """Peak RSS of one run of ``argv`` in MiB, or None if it failed.

    Under GNU ``time -f %M`` if present, else ``os.wait4`` in a bare
    ``python -I -S`` launcher (which puts a floor of ~9 MiB on the reading).
    Both report ru_maxrss in KiB.
    """
    if os.access(GNU_TIME, os.X_OK):
        r = subprocess.run([GNU_TIME, "-f", "%M", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=WORK, env=env)
        last = (r.stderr.strip().splitlines() or ["-1"])[-1]
        kib = int(last) if r.returncode == 0 and last.isdigit() else -1
    else:
        r = subprocess.run([sys.executable, "-I", "-S", "-c", SPAWN_AND_WAIT4, *argv], stdout=subprocess.PIPE, text=True, cwd=WORK, env=env)
        kib = int(r.stdout) if r.returncode == 0 else -1
    return kib / 1024 if kib >= 0 else None


# -- the report --------------------------------------------------------------------


def summarize(samples: Iterable[float]) -> dict[str, float]:
    """Median, min, max and p90 (nearest rank) of ``samples``."""
    ordered = sorted(samples)
    p90 = ordered[math.ceil(0.9 * len(ordered)) - 1]
    return {"median": statistics.median(ordered), "min": ordered[0], "p90": p90, "max": ordered[-1]}


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    """The median of each name's samples."""
    return {name: statistics.median(s) for name, s in samples.items()}


def stats_header(first: str, width: int, last: str = "p90") -> str:
    """A table's header: ``first`` in ``width`` columns, then ``median ms``, ``min ms`` and ``{last} ms``."""
    return f"{first:<{width}}{'median ms':>11}{'min ms':>9}{last + ' ms':>9}"


def stats_row(label: str, samples: list[float], width: int, digits: int, last: str = "p90") -> str:
    """A row under ``stats_header``: median, min and ``last`` of ``samples`` with ``digits`` decimals."""
    s = summarize(samples)
    return f"{label:<{width}}{s['median']:>11.{digits}f}{s['min']:>9.{digits}f}{s[last]:>9.{digits}f}"


def verdict(value: float, op: str, target: float) -> str:
    """``meets target`` or ``misses target``: ``value op target``, ``op`` being ``>=`` or ``<=``."""
    met = value >= target if op == ">=" else value <= target
    return "meets target" if met else "misses target"


def ratio_line(label: str, ratio: float, note: str, width: int, ratio_width: int = 7) -> str:
    """``label`` in ``width`` columns, the ratio (2 decimals) in ``ratio_width``, then ``(note)``."""
    return f"{label:<{width}}{ratio:>{ratio_width}.2f}x  ({note})"


def print_targets(
    values: dict[str, float],
    targets: list[tuple[str, str, str, float]],
    width: int,
    ratio_width: int = 7,
    names: dict[str, str] | None = None,
) -> None:
    """A blank line, then one line per ``(numerator, denominator, op, target)``: the ratio of their values and its verdict.

    A pair with a missing side is printed as ``n/a``. ``names`` renames a
    side in the label.
    """
    names = names or {}
    print()
    for num, den, op, target in targets:
        label = f"{names.get(num, num)} / {names.get(den, den)}"
        if num not in values or den not in values:
            print(f"{label:<{width}} n/a ({num if num not in values else den} unavailable)")
            continue
        ratio = values[num] / values[den]
        print(ratio_line(label, ratio, f"target {op} {target:g}x", width, ratio_width) + f"  {verdict(ratio, op, target)}")
