"""Where the suite's CPU goes: an opt-in account per test, per file and per fixture.

On a shared machine wall times are noise; CPU seconds are not. Run with
``JCLI_CPU_ACCOUNT`` naming a folder (``tests/conftest.py`` registers this
plugin then, in the controller and in every xdist worker)::

    JCLI_CPU_ACCOUNT=/tmp/cpu .venv/bin/pytest -n 2 --quick
    .venv/bin/python tests/cpu_account.py /tmp/cpu        # the whole ranking again

Each process writes one JSON file there at its end; the controller prints
the ranking in the terminal summary. What is counted, per test phase
(setup, call, teardown):

* ``self``: the pytest process's own CPU (:func:`time.process_time`);
* ``children``: what its children cost: the ``RUSAGE_CHILDREN`` delta (CLI
  runs and host binaries reaped within the phase) plus, for each child still
  alive at either end (the warm CLI parent, a server a fixture holds), the
  growth of its own and its reaped children's CPU read from ``/proc``. A
  child reaped later is not counted twice.

Fixtures wider than a test are set up inside some test's setup phase and
are also listed on their own (their own CPU, nested fixtures left out).
Kernels and Jupyter servers outlive tests and are reaped by a server, not by
pytest: a thread samples ``/proc`` and counts the ones this process started
(they inherit a marker in their environment), by the file whose test was
running when each first showed, with the CPU each had when last seen.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

#: The folder the account is written to; unset, the plugin is not registered.
ENV = "JCLI_CPU_ACCOUNT"
#: Inherited by everything this process starts, so its kernels and servers can be told from others'.
MARK = "JCLI_CPU_ACCOUNT_WORKER"
_TICK = os.sysconf("SC_CLK_TCK")
_SAMPLE_SECONDS = 0.25


def _stat(pid: str) -> tuple[int, float, float] | None:
    """(ppid, own CPU, own + reaped children's CPU) of ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    # fields[0] is the state (field 3): ppid is field 4, utime..cstime fields 14..17
    own = (int(fields[11]) + int(fields[12])) / _TICK
    return int(fields[1]), own, own + (int(fields[13]) + int(fields[14])) / _TICK


def _live_children() -> dict[str, float]:
    """This process's live children and the CPU each has cost so far (its reaped children's included)."""
    me = os.getpid()
    found = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            stat = _stat(pid)
            if stat is not None and stat[0] == me:
                found[pid] = stat[2]
    return found


def _reaped_children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _kind(cmdline: str) -> str | None:
    if "ipykernel" in cmdline or "echo_kernel" in cmdline:
        return "kernel"
    if any(name in cmdline for name in ("jupyter", "embedded_server", "enterprise_gateway", "kernel_gateway")):
        return "server"
    return None


class CpuAccount:
    def __init__(self, folder: Path, worker: str) -> None:
        self.folder = folder
        self.worker = worker
        self.tests: list[dict] = []
        self.fixtures: dict[str, dict] = defaultdict(lambda: {"count": 0, "self": 0.0, "children": 0.0, "scope": ""})
        self.procs: dict[str, dict] = {}  # "pid:start" -> kind, first test, cmdline, cpu
        self.current = "(collection)"
        self.seen: set[str] = set()
        self.accounted: dict[str, float] = {}  # live child pid -> its CPU already charged
        self._fixture_stack: list[list[float]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        os.environ[MARK] = f"{os.getpid()}"
        self._marker = f"{MARK}={os.getpid()}".encode()
        self._own_cmdline = Path("/proc/self/cmdline").read_bytes()
        self.sampler_cpu = 0.0
        self._sampler = threading.Thread(target=self._sample_loop, name="cpu-account", daemon=True)
        self._sampler.start()
        self.start()

    # -- the children's CPU ------------------------------------------------------------------------

    def _children_charge(self) -> float:
        """The children's CPU since the last call: reaped ones through rusage, live ones through /proc."""
        reaped = _reaped_children_cpu()
        live = _live_children()
        charge = reaped - self._last_reaped
        self._last_reaped = reaped
        for pid, cpu in live.items():
            charge += cpu - self.accounted.get(pid, 0.0)
        for pid in set(self.accounted) - set(live):  # reaped since: rusage now holds all of it
            charge -= self.accounted[pid]
        self.accounted = live
        return charge

    def start(self) -> None:
        self._last_reaped = _reaped_children_cpu()
        self._children_charge()

    # -- kernels and servers -----------------------------------------------------------------------

    def _sample_loop(self) -> None:
        while not self._stop.wait(_SAMPLE_SECONDS):
            self._sample()
        self.sampler_cpu = time.thread_time()  # this thread's own CPU: the account's cost, not pytest's

    def _sample(self) -> None:
        me = str(os.getpid())
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid == me:
                continue
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            key = f"{pid}:{fields[19].decode()}"  # field 22, the start time: pids are reused
            own = (int(fields[11]) + int(fields[12])) / _TICK
            with self._lock:
                if key in self.procs:
                    self.procs[key]["cpu"] = own
                    continue
                if key in self.seen:
                    continue
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if raw == self._own_cmdline:
                continue  # forked, not yet exec'd: look again next time
            self.seen.add(key)
            cmdline = raw.replace(b"\0", b" ").decode(errors="replace")
            kind = _kind(cmdline) if self._marker in environ.split(b"\0") else None
            if kind is not None:
                with self._lock:
                    self.procs[key] = {"kind": kind, "test": self.current, "cmdline": cmdline[:200], "cpu": own}

    # -- the hooks -----------------------------------------------------------------------------------

    def _phase(self, item, phase: str):
        self.current = item.nodeid
        cpu0 = time.process_time()
        self._children_charge()
        yield
        own = time.process_time() - cpu0
        children = self._children_charge()
        self.tests.append({"nodeid": item.nodeid, "file": item.nodeid.split("::")[0], "phase": phase, "self": own, "children": children})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._phase(item, "teardown")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        self._fixture_stack.append([0.0, 0.0])
        cpu0 = time.process_time()
        children0 = _reaped_children_cpu()
        yield
        own = time.process_time() - cpu0
        children = _reaped_children_cpu() - children0
        nested_own, nested_children = self._fixture_stack.pop()
        if self._fixture_stack:  # a fixture another requested while it was being set up
            self._fixture_stack[-1][0] += own
            self._fixture_stack[-1][1] += children
        entry = self.fixtures[f"{fixturedef.baseid or '(plugin)'}::{fixturedef.argname}"]
        entry["count"] += 1
        entry["scope"] = fixturedef.scope
        entry["self"] += own - nested_own
        entry["children"] += children - nested_children

    def pytest_sessionfinish(self, session):
        self._stop.set()
        self._sampler.join()
        self._sample()
        record = {
            "worker": self.worker,
            "tests": self.tests,
            "fixtures": self.fixtures,
            "procs": list(self.procs.values()),
            "process_cpu": time.process_time(),
            "sampler_cpu": self.sampler_cpu,
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{self.worker}-{os.getpid()}.json").write_text(json.dumps(record))

    def pytest_terminal_summary(self, terminalreporter, config):
        if hasattr(config, "workerinput"):
            return
        for line in report(self.folder, top=30):
            terminalreporter.write_line(line)


def register(config) -> None:
    """Register the account when ``JCLI_CPU_ACCOUNT`` names a folder (called from tests/conftest.py)."""
    folder = os.environ.get(ENV)
    if not folder:
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "controller")
    config.pluginmanager.register(CpuAccount(Path(folder), worker), "cpu_account")


def totals(folder: Path) -> dict:
    """The account's sums: per file, per fixture, kernels and servers per file, and overall."""
    files: dict[str, dict] = defaultdict(lambda: {"tests": set(), "self": 0.0, "children": 0.0, "setup": 0.0})
    fixtures: dict[str, dict] = defaultdict(lambda: {"count": 0, "self": 0.0, "children": 0.0, "scope": ""})
    procs: dict[str, dict] = defaultdict(lambda: {"kernel": 0, "server": 0, "cpu": 0.0})
    overall = {"tests": 0.0, "processes": 0.0, "in_tests": 0.0, "sampler": 0.0}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        overall["processes"] += record["process_cpu"]
        overall["sampler"] += record.get("sampler_cpu", 0.0)
        for test in record["tests"]:
            row = files[test["file"]]
            row["tests"].add(test["nodeid"])
            row["self"] += test["self"]
            row["children"] += test["children"]
            if test["phase"] == "setup":
                row["setup"] += test["self"] + test["children"]
            overall["tests"] += test["self"] + test["children"]
            overall["in_tests"] += test["self"]
        for name, entry in record["fixtures"].items():
            row = fixtures[name]
            row["count"] += entry["count"]
            row["self"] += entry["self"]
            row["children"] += entry["children"]
            row["scope"] = entry["scope"]
        for proc in record["procs"]:
            row = procs[proc["test"].split("::")[0]]
            row[proc["kind"]] += 1
            row["cpu"] += proc["cpu"]
    return {
        "files": {name: {**row, "tests": len(row["tests"])} for name, row in files.items()},
        "fixtures": dict(fixtures),
        "procs": dict(procs),
        "overall": overall,
    }


def report(folder: Path, top: int | None = None) -> list[str]:
    """The ranking as lines: files by CPU, fixtures by CPU, kernel and server starts by file."""
    sums = totals(folder)
    overall = sums["overall"]
    between = overall["processes"] - overall["in_tests"] - overall["sampler"]
    lines = [
        f"== CPU account ({folder}): tests {overall['tests']:.1f} s (their own and their children's); the pytest processes "
        f"{overall['processes']:.1f} s in all: {overall['in_tests']:.1f} s in tests, {between:.1f} s between them "
        f"(start-up, collection, xdist), {overall['sampler']:.1f} s this account's sampler"
    ]
    lines.append(f"{'cpu s':>8} {'self':>8} {'child':>8} {'setup':>8} {'tests':>6}  file")
    files = sorted(sums["files"].items(), key=lambda kv: -(kv[1]["self"] + kv[1]["children"]))
    for name, row in files[:top]:
        lines.append(
            f"{row['self'] + row['children']:8.1f} {row['self']:8.1f} {row['children']:8.1f} {row['setup']:8.1f} {row['tests']:6d}  {name}"
        )
    lines.append(f"{'cpu s':>8} {'self':>8} {'child':>8} {'count':>6}  fixture (scope)")
    fixtures = sorted(sums["fixtures"].items(), key=lambda kv: -(kv[1]["self"] + kv[1]["children"]))
    for name, row in fixtures[: top or None]:
        lines.append(
            f"{row['self'] + row['children']:8.1f} {row['self']:8.1f} {row['children']:8.1f} {row['count']:6d}  {name} ({row['scope']})"
        )
    kernels = sum(row["kernel"] for row in sums["procs"].values())
    servers = sum(row["server"] for row in sums["procs"].values())
    lines.append(f"kernels started: {kernels}, servers started: {servers} (by the file whose test was running; cpu as last sampled)")
    for name, row in sorted(sums["procs"].items(), key=lambda kv: -kv[1]["cpu"])[:top]:
        lines.append(f"{row['cpu']:8.1f} kernels {row['kernel']:4d} servers {row['server']:4d}  {name}")
    return lines


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    if "--json" in sys.argv[2:]:
        print(json.dumps(totals(folder), indent=1))
    else:
        print("\n".join(report(folder)))
