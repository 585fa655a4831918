"""Execute latency of ``j-cli exec``, whole-command and in-process, against upstream and the floors.

One run of this script starts its own Jupyter Server (the project venv's
``jupyter_server``, on a free loopback port, with a random token) and
produces three groups of figures.

A. Whole CLI processes, from spawn to exit, running ``1+1`` in a session on
   that server and printing the result as JSON. That is what an agent pays
   for every ``exec``. Three commands run interleaved, round-robin:

   * ours      -- ``j-cli -j exec bench --code '1+1'`` (this checkout's
                  j-cli, ``JCLI_SIDECAR=off``), in a session made once with
                  ``j-cli -j session create -n bench``;
   * ours, sidecar -- the same command through this script's own warm
                  sidecar (started before, stopped after), which holds the
                  kernel connection: the target is at most 1.5x the floor
                  plus one kernel round trip (raw ZMQ, from B);
   * ours, background -- ``j-cli -j exec bench --code '1+1' --background``
                  through the same sidecar: the time until the job id is
                  printed (the job's end is then awaited with ``job wait``,
                  untimed, and its result checked); the target is at most
                  2x the foreground through the sidecar;
   * upstream  -- ``jupyter-jcli`` (pinned in harness.py, its own venv),
                  the same command line, in a session made with its own
                  ``j-cli -j session create -k python3 -n bench-upstream``;
   * floor     -- the project interpreter importing what a lean client needs
                  (``socket, msgpack, json, base64``) and nothing else.

   Both j-cli's find the server the same way, through
   ``JCLI_JUPYTER_SERVER_URL`` and ``JCLI_JUPYTER_SERVER_TOKEN``. Upstream
   is slow (seconds per call), so it gets fewer timed runs, spread evenly
   among the others.

B. In-process execute round-trips of ``1+1``, timed inside this script (or,
   for the peer, inside its own process), interleaved round-robin:

   * ours      -- ``jcli_sidecar.kernel.kernel_client.KernelConnection(server, kernel_id)``
                  held open, ``.execute("1+1")`` on the ``bench`` session's
                  kernel: one connection, as a notebook run uses it;
   * two rows for information only, to show where a one-shot ``j-cli
                  exec`` spends its time: the websocket opened and closed
                  with no execute ("ws open+close only"), and
                  ``jcli_sidecar.kernel.kernel_client.execute``, which opens a new
                  connection per call ("ours, new connection/call");
   * jupyter-kernel-client -- datalayer's client (pinned below, in its own
                  venv, driven as a subprocess over a pipe; the time is taken
                  inside that process): one websocket held open, attached to
                  the same kernel, ``client.execute("1+1")``;
   * raw ZMQ   -- ``jupyter_client`` talking ZMQ straight to a local kernel
                  started by this script (the server does not expose its
                  kernels' ZMQ ports): the kernel's own round-trip, which no
                  client going through a server can beat.

D, E. One large kernel message (5 to 40 MB): the client's CPU, ours
   against raw ZMQ, and a 10 MB print kept whole by the embedded server
   (``big_messages.py``). The server of A and B runs without the IOPub rate
   limit, as the embedded one does, so a big print reaches the client.

C. Publishing a run of 200 ~100 KB PNGs through the run store
   (``jcli_sidecar.runs.store``: ``stage_run`` then ``publish_run``), next to a
   raw floor that only decodes the same base64 and writes the same bytes to
   200 files. Skipped with a note while the store is not in the checkout.

Why ratios: the machine is noisy and absolute timings drift up to 2x between
runs, so every target compares two medians measured side by side in the same
run (see TARGETS). Nothing here asserts on the numbers: the script prints
"meets target" or "misses target", and exits non-zero only if our own tool
fails (an error exit, a wrong result, a server that does not start). If a
peer cannot be installed or fails, the script says so and goes on.

Everything generated (the Jupyter root and runtime dirs, the peers' venvs,
the server log, the run store's workspace) lives in ``bench/.work/``. The
server, its kernels and the local ZMQ kernel are stopped at the end, also on
errors, and the script checks that none of their processes is left.
"""

from __future__ import annotations

import argparse
import base64
import inspect
import json
import os
import random
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import big_messages
from harness import (
    FLOOR_ARGV,
    J_CLI,
    ROOT,
    UPSTREAM_PIN,
    WORK,
    BenchError,
    ProcessSet,
    Sidecar,
    bare_env,
    describe_failure,
    ensure_upstream,
    ensure_venv,
    jupyter_server_argv,
    medians,
    noise_png,
    peak_rss_mib,
    print_targets,
    private_dir,
    ratio_line,
    rotated,
    run,
    sidecar_runtime_dir,
    stats_header,
    stats_row,
    stop_and_clean,
    timed,
)

JROOT = WORK / "jroot"  # the server's root_dir (kernels' cwd)
JRUNTIME = WORK / "jupyter-runtime"  # JUPYTER_RUNTIME_DIR (connection files)
XDG_RUNTIME = WORK / "exec-runtime"  # XDG_RUNTIME_DIR of the j-cli children
SERVER_LOG = WORK / "jupyter-server.log"
ZMQ_KERNEL_LOG = WORK / "zmq-kernel.log"
JKC_LOG = WORK / "jkc.log"  # jupyter-kernel-client's stderr
STORE_WS = WORK / "store-ws"  # cwd of the run store (holds .j-cli/)
JKC_VENV = WORK / "jkc-venv"

JKC_PIN = "jupyter-kernel-client==1.0.2"
CODE = "1+1"
WARMUP = 2
CALL_WARMUP = 5
SERVER_START_TIMEOUT = 60.0
PNGS, PNG_SIDE, PNG_SEED = 200, 183, 20240602  # 183x183 RGB noise: ~100 KB each

# Names used in the tables and in the ratios.
OURS, UPSTREAM, FLOOR = "ours", "upstream", "floor"
OURS_SIDECAR = "ours sidecar"
OURS_BACKGROUND = "ours background"
OURS_EXEC, JKC, ZMQ = "ours held connection", "jupyter-kernel-client", "raw ZMQ"
WS_ONLY, FRESH = "ours ws only", "ours fresh connection"  # information only: where ours' time goes
LABELS = {
    OURS: "ours (JCLI_SIDECAR=off)",
    OURS_SIDECAR: "ours (sidecar, warm)",
    OURS_BACKGROUND: "ours (--background start)",
    OURS_EXEC: "ours (KernelConnection, held)",
    WS_ONLY: "  info: ws open+close only",
    FRESH: "  info: ours, new connection/call",
    JKC: "jupyter-kernel-client",
    ZMQ: "raw ZMQ (jupyter_client)",
}

# (numerator, denominator, op, target): ratios of medians from the same run.
TARGETS = [
    (UPSTREAM, OURS, ">=", 15.0),
    (OURS, FLOOR, "<=", 5.0),
    (JKC, OURS_EXEC, ">=", 3.0),
    (OURS_EXEC, ZMQ, "<=", 1.5),
    (OURS_BACKGROUND, OURS_SIDECAR, "<=", 2.0),
]
#: ``exec -c 1+1`` through the warm sidecar: at most this times the floor, plus one raw ZMQ round trip.
SIDECAR_FLOOR_FACTOR = 1.5


# -- the Jupyter Server ---------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """This script's Jupyter Server, with everything it started."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(24)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.seen = ProcessSet()  # the server and every kernel seen

    def start(self) -> None:
        JROOT.mkdir(parents=True, exist_ok=True)
        private_dir(JRUNTIME)
        argv = jupyter_server_argv(JROOT, self.port)
        env = dict(os.environ, JUPYTER_TOKEN=self.token, JUPYTER_RUNTIME_DIR=str(JRUNTIME))
        with open(SERVER_LOG, "wb") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=WORK, env=env)
        self.seen.add(self.proc.pid)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"the Jupyter Server exited with {self.proc.returncode} at start; see {SERVER_LOG.relative_to(ROOT)}")
            try:
                self.get("status", timeout=2)
                return
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"the Jupyter Server did not answer /api/status within "
                        f"{SERVER_START_TIMEOUT:g} s; see {SERVER_LOG.relative_to(ROOT)}"
                    ) from None
                time.sleep(0.1)

    def get(self, path: str, timeout: float = 10.0):
        req = urllib.request.Request(f"{self.url}/api/{path}", headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def remember_kernels(self) -> None:
        """Note the server's children (its kernels), to check at the end that they are gone."""
        self.seen.add_children(self.proc.pid)

    def stop(self) -> list[str]:
        """Terminate the server (it shuts its kernels down), wait, and check nothing is left."""
        notes = []
        if self.proc is None:
            return notes
        self.remember_kernels()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                notes.append("the Jupyter Server ignored SIGTERM for 30 s: killed")
        return notes + self.seen.wait_gone(10, lambda pid, _: f"process {pid} (a kernel of the server) outlived it by 10 s: killed")


# -- running --------------------------------------------------------------------


def child_env(server: Server, runtime: Path = XDG_RUNTIME) -> dict[str, str]:
    """The environment of every j-cli child (ours and upstream alike); the sidecar off."""
    return bare_env(runtime, JCLI_JUPYTER_SERVER_URL=server.url, JCLI_JUPYTER_SERVER_TOKEN=server.token)


def create_session(env: dict[str, str], name: str) -> None:
    """``j-cli session create -n NAME`` on the bench's server, or a :class:`BenchError` with what it printed."""
    r = subprocess.run([str(J_CLI), "-j", "session", "create", "-n", name], capture_output=True, env=env, cwd=WORK)
    if r.returncode != 0:
        raise BenchError(f"session create failed: {r.stderr.decode(errors='replace')[-400:]}")


def with_sidecar(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the sidecar allowed (the script's own, already running)."""
    return {k: v for k, v in env.items() if k != "JCLI_SIDECAR"}


def run_child(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """One j-cli child (or the floor) run to its end, with no stdin."""
    return run(argv, env, stdin=subprocess.DEVNULL)


def ensure_jkc() -> Path | None:
    """Python of the scratch venv holding JKC_PIN, installed on first use; None if unavailable."""
    python = JKC_VENV / "bin" / "python"

    def ready() -> bool:
        probe = [str(python), "-c", "import jupyter_kernel_client"]
        return python.exists() and subprocess.run(probe, capture_output=True).returncode == 0

    return python if ensure_venv(JKC_VENV, JKC_PIN, ready, JKC_PIN) else None


# -- A: whole CLI processes -----------------------------------------------------


def ours_text(stdout: bytes) -> str | None:
    """``text`` of ours' JSON result when it ran fine, else None."""
    try:
        doc = json.loads(stdout)
        return doc["text"] if doc.get("status") == "ok" else None
    except (ValueError, KeyError, TypeError):
        return None


def upstream_says_2(stdout: bytes) -> bool:
    try:
        doc = json.loads(stdout)
        return doc.get("status") == "ok" and any(o.get("text") == "2" for o in doc.get("outputs", []))
    except (ValueError, AttributeError, TypeError):
        return False


def create_sessions(env: dict[str, str], upstream: Path | None) -> tuple[dict, bool]:
    """Ours ``bench`` session (its row) and whether upstream made its own."""
    r = run_child([str(J_CLI), "-j", "session", "create", "-n", "bench"], env)
    if r.returncode != 0:
        raise BenchError(describe_failure("j-cli session create", r))
    row = json.loads(r.stdout)
    print(f"session bench: id {row['id'][:8]}, kernel {row['kernel_id'][:8]} (ours, j-cli session create)")
    if upstream is None:
        return row, False
    r = run_child([str(upstream), "-j", "session", "create", "-k", "python3", "-n", "bench-upstream"], env)
    if r.returncode != 0:
        print(describe_failure("upstream session create", r))
        return row, False
    try:
        up = json.loads(r.stdout)
        print(f"session bench-upstream: id {up['session_id'][:8]}, kernel {up['kernel_id'][:8]} (upstream, its own session create)")
    except (ValueError, KeyError, TypeError):
        print(f"note: upstream session create printed: {r.stdout[:200]!r}")
    return row, True


def cli_commands(env: dict[str, str], upstream: Path | None, sidecar: bool) -> dict[str, list[str]]:
    commands = {OURS: [str(J_CLI), "-j", "exec", "bench", "--code", CODE]}
    if sidecar:
        commands[OURS_SIDECAR] = list(commands[OURS])
        commands[OURS_BACKGROUND] = [*commands[OURS], "--background"]
    if upstream is not None:
        commands[UPSTREAM] = [str(upstream), "-j", "exec", "bench-upstream", "--code", CODE]
    commands[FLOOR] = FLOOR_ARGV
    return commands


def finish_job(r: subprocess.CompletedProcess, env: dict[str, str]) -> None:
    """Wait (untimed) for the job a ``--background`` start printed, and check it printed 2; fatal otherwise.

    The next command runs on the same kernel: it must be free (else ``KERNEL_BUSY``).
    """
    if r.returncode != 0:
        raise BenchError(describe_failure("ours (j-cli exec --background)", r))
    try:
        job_id = json.loads(r.stdout)["job_id"]
    except (ValueError, KeyError, TypeError):
        raise BenchError(f"ours --background printed no job id: {r.stdout[:300]!r}") from None
    w = run_child([str(J_CLI), "-j", "job", "wait", job_id, "--timeout", "60"], env)
    try:
        job = json.loads(w.stdout)["jobs"][0]
        good = w.returncode == 0 and job["state"] == "ok" and job["result"]["text"] == "2\n"
    except (ValueError, KeyError, TypeError, IndexError):
        good = False
    if not good:
        raise BenchError(describe_failure(f"ours background job {job_id} (j-cli job wait)", w))


def check_cli(name: str, r: subprocess.CompletedProcess) -> bool:
    """True if the run is good; a bad ``ours`` is fatal, a bad peer is reported (False)."""
    if name == OURS_BACKGROUND:
        return True  # finish_job has checked the start and the job's result
    if name in (OURS, OURS_SIDECAR):
        if r.returncode != 0:
            raise BenchError(describe_failure("ours (j-cli exec)", r))
        if ours_text(r.stdout) != "2\n":
            raise BenchError(f"ours printed the wrong result: {r.stdout[:300]!r}")
        return True
    if r.returncode != 0:
        print(describe_failure(name, r))
        return False
    if name == UPSTREAM and not upstream_says_2(r.stdout):
        print(f"upstream printed no 2: {r.stdout[:300]!r}")
        return False
    return True


def measure_cli(
    env: dict[str, str], upstream: Path | None, runs: int, upstream_runs: int, with_upstream: bool, sidecar: Sidecar | None
) -> tuple[dict, dict]:
    """A: returns ``(timings ms by command, peak RSS MiB by command)``."""
    commands = cli_commands(env, upstream if with_upstream else None, sidecar is not None)
    envs = {name: with_sidecar(env) if name in (OURS_SIDECAR, OURS_BACKGROUND) else env for name in commands}

    def run_named(name: str) -> subprocess.CompletedProcess:
        return run_child(commands[name], envs[name])

    def done(name: str, r: subprocess.CompletedProcess) -> None:
        """After a timed run: a background start's job is awaited and checked (untimed)."""
        if name == OURS_BACKGROUND:
            finish_job(r, envs[name])

    last: dict[str, bytes] = {}
    for _ in range(WARMUP):  # the first one also waits for the kernels to finish starting
        for name in list(commands):
            r = run_named(name)
            done(name, r)
            if check_cli(name, r):
                last[name] = r.stdout
            else:
                del commands[name]
    if OURS in commands:  # check_cli has checked both printed 2
        doc = json.loads(last[OURS])
        print(
            f"check: ours prints 2: True  (status {doc['status']!r}, text {doc['text']!r}, "
            f"outputs {[o.get('text') for o in doc.get('outputs', [])]})"
        )
    if UPSTREAM in commands:
        doc = json.loads(last[UPSTREAM])
        print(f"check: upstream prints 2: True  (status {doc['status']!r}, outputs {doc['outputs']})")
    # a background start's RSS run would leave its job running on the kernel: not measured
    rss = {name: peak_rss_mib(argv, envs[name]) for name, argv in commands.items() if name != OURS_BACKGROUND}

    times: dict[str, list[float]] = {name: [] for name in commands}
    up_done = 0
    for i in range(runs):
        names = list(commands)
        if UPSTREAM in names and up_done >= (i + 1) * upstream_runs // runs:
            names.remove(UPSTREAM)  # upstream runs in upstream_runs of the rounds, evenly spread
        for name in rotated(names, i):
            elapsed, r = timed(run_named, name)
            done(name, r)
            if not check_cli(name, r):
                del commands[name]
                times.pop(name)
                continue
            times[name].append(elapsed)
            up_done += name == UPSTREAM
    if sidecar is not None and OURS_SIDECAR in commands:
        held = sidecar.status().get("kernels") or {}
        print(
            f"check: the sidecar ran them on its held connection: opened {held.get('opened')}, reused {held.get('reused')} "
            f"(of {WARMUP + len(times[OURS_SIDECAR])} runs)"
        )
        if not held.get("reused"):
            raise BenchError("the sidecar runs did not go through the sidecar's held connection")
    return times, rss


# -- B: in-process round-trips --------------------------------------------------


JKC_DRIVER = r"""
import json, sys, threading, time

def say(doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()

def says_2(reply):
    return reply.get("status") == "ok" and any(
        (o.get("data") or {}).get("text/plain") == "2" for o in reply.get("outputs", []))

try:
    from jupyter_kernel_client import JupyterKernelClient, __version__
except Exception as exc:
    say({"error": f"import failed: {exc!r}"})
    sys.exit(1)
url, token, kernel_id = sys.argv[1:4]
t0 = time.perf_counter()
client = JupyterKernelClient(server_url=url, token=token, kernel_id=kernel_id)
client.start()
connect_ms = (time.perf_counter() - t0) * 1000
first = client.execute("1+1", timeout=30)
say({"version": __version__, "connect_ms": connect_ms, "kernel_id": client.id,
     "first": first, "ok": says_2(first)})
for line in sys.stdin:
    if line.strip() != "x":
        break
    t0 = time.perf_counter()
    reply = client.execute("1+1", timeout=30)
    ms = (time.perf_counter() - t0) * 1000
    say({"ms": ms, "ok": says_2(reply)})
t0 = time.perf_counter()
client.stop()
stop_ms = (time.perf_counter() - t0) * 1000
alive = [t.name for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
say({"stop_ms": stop_ms, "threads_alive": alive})
"""


class JkcPeer:
    """jupyter-kernel-client in its own venv, one connection, driven line by line."""

    def __init__(self, python: Path, server: Server, kernel_id: str) -> None:
        self.log = open(JKC_LOG, "w")
        self.proc = subprocess.Popen(
            [str(python), "-c", JKC_DRIVER, server.url, server.token, kernel_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            cwd=WORK,
        )
        self.info: dict = {}

    def hello(self) -> dict:
        """Its first answer: version, connect time, the kernel it is on, its first result."""
        return self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=30)
            tail = JKC_LOG.read_text(errors="replace").strip()[-400:]
            raise RuntimeError(f"exited {self.proc.returncode}: {tail or '(no stderr)'}")
        doc = json.loads(line)
        if "error" in doc:
            raise RuntimeError(doc["error"])
        return doc

    def call(self) -> tuple[float, bool]:
        self.proc.stdin.write("x\n")
        self.proc.stdin.flush()
        doc = self._read()
        return doc["ms"], doc["ok"]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("q\n")
                self.proc.stdin.flush()
                t0 = time.perf_counter()
                self.info = self._read()
                self.proc.wait(timeout=60)
                self.info["exit_ms"] = (time.perf_counter() - t0) * 1000
            except (OSError, ValueError, RuntimeError, subprocess.TimeoutExpired) as exc:
                self.info = {"error": repr(exc)}
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.log):
            try:
                stream.close()
            except OSError:  # stdin of a dead process: its buffer cannot be flushed
                pass


class ZmqKernel:
    """A local kernel started by this script, talked to over ZMQ by jupyter_client."""

    def __init__(self) -> None:
        from jupyter_client.manager import start_new_kernel

        os.environ["JUPYTER_RUNTIME_DIR"] = str(JRUNTIME)  # its connection file
        self.log = open(ZMQ_KERNEL_LOG, "wb")
        self.km, self.kc = start_new_kernel(startup_timeout=60, kernel_name="python3", cwd=str(JROOT), stdout=self.log, stderr=self.log)
        self.proc = self.km.provisioner.process if self.km.provisioner else None

    def execute(self) -> list[dict]:
        """One ``1+1``: send, read iopub until idle, then the reply. Returns the result data."""
        kc = self.kc
        msg_id = kc.execute(CODE)
        results = []
        while True:
            msg = kc.get_iopub_msg(timeout=30)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "execute_result":
                results.append(msg["content"]["data"])
            elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        while kc.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != msg_id:
            pass
        return results

    def stop(self) -> list[str]:
        notes = []
        try:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=False)
        except Exception as exc:  # noqa: BLE001 -- a failed shutdown is reported, then forced
            notes.append(f"ZMQ kernel shutdown failed: {exc!r}")
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            notes.append("the ZMQ kernel was still running after shutdown: killed")
        self.log.close()
        return notes


def measure_in_process(server: Server, kernel_id: str, jkc_python: Path | None, calls: int, cleanup: list) -> tuple[dict, dict]:
    """B: returns ``(timings ms by client, notes about jupyter-kernel-client)``."""
    from jcli_sidecar.kernel.jupyter_api import JupyterServer
    from jcli_sidecar.kernel.kernel_client import KernelConnection, execute

    srv = JupyterServer(server.url, server.token)
    held = KernelConnection(srv, kernel_id)
    cleanup.append(held.close)

    def ours() -> tuple[float, object]:
        return timed(held.execute, CODE, timeout=30)

    def fresh() -> tuple[float, object]:
        return timed(execute, srv, kernel_id, CODE, timeout=30)

    def ws_only() -> tuple[float, object]:
        return timed(lambda: srv.channels(kernel_id, os.urandom(16).hex()).close())

    def ours_ok(result) -> bool:
        return result.status == "ok" and any(
            (o.get("data") or {}).get("text/plain") == "2" for o in result.outputs if o["output_type"] == "execute_result"
        )

    try:
        first = ours()[1]
        again = fresh()[1]
    except Exception as exc:  # noqa: BLE001 -- ours failing is what makes the run fail
        raise BenchError(f"ours failed: {exc!r}") from None
    print(f"check: ours (held connection) returns 2: {ours_ok(first)}  outputs {first.outputs}")
    print(f"check: ours (fresh connection) returns 2: {ours_ok(again)}")
    if not ours_ok(first) or not ours_ok(again):
        raise BenchError("ours returned the wrong outputs")

    fns: dict[str, object] = {OURS_EXEC: ours, WS_ONLY: ws_only, FRESH: fresh}

    jkc_notes: dict = {}
    if jkc_python is not None:
        try:
            peer = JkcPeer(jkc_python, server, kernel_id)
            cleanup.append(peer.close)
            hello = peer.hello()
            attached = hello["kernel_id"] == kernel_id
            jkc_notes = {"peer": peer, **hello, "attached": attached}
            print(
                f"check: jupyter-kernel-client {hello['version']} attached to the bench kernel: {attached}; "
                f"returns 2: {hello['ok']}  outputs {hello['first']['outputs']}"
            )
            if hello["ok"]:
                fns[JKC] = lambda: peer.call()
            else:
                print("jupyter-kernel-client: wrong result, left out")
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            print(f"jupyter-kernel-client unavailable: {exc}")

    try:
        zmq = ZmqKernel()
        cleanup.append(zmq.stop)
        got = zmq.execute()
        print(f"check: raw ZMQ execute returns 2: {got == [{'text/plain': '2'}]}  results {got}")

        fns[ZMQ] = lambda: timed(zmq.execute)
    except Exception as exc:  # noqa: BLE001 -- the floor is optional: say why and go on
        print(f"raw ZMQ floor unavailable: {exc!r}")

    times: dict[str, list[float]] = {name: [] for name in fns}

    def call(name: str):
        """One timed call; a failing peer is dropped, a failing ``ours`` is fatal."""
        try:
            return fns[name]()
        except Exception as exc:  # noqa: BLE001
            if name not in (JKC, ZMQ):
                raise BenchError(f"{LABELS[name].strip()} failed: {exc!r}") from None
            print(f"{name} failed, left out: {exc!r}")
            del fns[name]
            times.pop(name, None)
            return None

    for _ in range(CALL_WARMUP):
        for name in list(fns):
            call(name)
    bad: dict[str, int] = {name: 0 for name in fns}
    for i in range(calls):
        for name in rotated(list(fns), i):
            done = call(name)
            if done is None:
                continue
            ms, result = done
            times[name].append(ms)
            if name in (OURS_EXEC, FRESH) and not ours_ok(result):
                raise BenchError(f"ours execute returned the wrong outputs: {result.outputs}")
            if name == JKC and not result:
                bad[name] += 1
            if name == ZMQ and result != [{"text/plain": "2"}]:
                bad[name] += 1
    for name, count in bad.items():
        if count:
            print(f"note: {name} returned a wrong result {count} times")
    return times, jkc_notes


def measure_big_messages(server: Server, kernel_id: str, reps: int, cleanup: list) -> dict:
    """D: client CPU of one large message, ours (a held connection) against raw ZMQ (a local kernel of its own)."""
    from jcli_sidecar.kernel.jupyter_api import JupyterServer
    from jcli_sidecar.kernel.kernel_client import KernelConnection

    held = KernelConnection(JupyterServer(server.url, server.token), kernel_id)
    cleanup.append(held.close)
    try:
        zmq = ZmqKernel()
        cleanup.append(zmq.stop)
        kc = zmq.kc
    except Exception as exc:  # noqa: BLE001 -- the floor is optional: say why and go on
        print(f"raw ZMQ floor unavailable: {exc!r}")
        kc = None
    return big_messages.measure_cpu(held, kc, reps)


# -- C: the run store -----------------------------------------------------------


def store_api():
    """``(stage_run, publish_run)`` from the installed run store, or None with a reason printed."""
    try:
        from jcli_sidecar.runs import store
    except ImportError:
        print("run store: not available in this checkout yet (skipped)")
        return None
    stage, publish = getattr(store, "stage_run", None), getattr(store, "publish_run", None)
    if not callable(publish) or not callable(stage):
        print("run store: not available in this checkout yet (skipped)")
        return None
    want_stage = {"cwd", "outputs", "source", "status", "created_ns"}
    try:
        have_stage = set(inspect.signature(stage).parameters)
        publish_params = list(inspect.signature(publish).parameters)
    except (TypeError, ValueError):
        have_stage, publish_params = set(), []
    if not want_stage <= have_stage or publish_params[:2] != ["outputs", "run_id"]:
        print(
            f"run store: its API is not the one this benchmark knows (stage_run{sorted(have_stage)}, publish_run{publish_params}) (skipped)"
        )
        return None
    return stage, publish


def make_pngs() -> list[bytes]:
    rng = random.Random(PNG_SEED)
    return [noise_png(rng, PNG_SIDE) for _ in range(PNGS)]


def measure_store(api, runs: int) -> tuple[dict, dict] | None:
    """C: stage + publish a run of PNGS image outputs, against a raw write of the same bytes."""
    stage_run, publish_run = api
    pngs = make_pngs()
    outputs = [
        {
            "output_type": "display_data",
            "data": {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": f"<Figure #{i}>"},
            "metadata": {},
        }
        for i, png in enumerate(pngs)
    ]
    shutil.rmtree(STORE_WS, ignore_errors=True)
    STORE_WS.mkdir(parents=True)
    raw_root = STORE_WS / "raw"
    raw_root.mkdir()
    ws = str(STORE_WS)

    def store_once() -> tuple[float, float, str]:
        t0 = time.perf_counter()
        staged = stage_run(ws, outputs, source={"kind": "code", "code": "bench"}, status="ok", created_ns=time.time_ns())
        t1 = time.perf_counter()
        published = publish_run(staged.outputs_dir, staged.run_id)
        manifest = published["manifest"] if isinstance(published, dict) else published
        t2 = time.perf_counter()
        return (t1 - t0) * 1000, (t2 - t1) * 1000, manifest

    def raw_once() -> float:
        t0 = time.perf_counter()
        tmp = raw_root / f".tmp-{os.urandom(4).hex()}"
        tmp.mkdir()
        for i, output in enumerate(outputs):
            with open(tmp / f"output-{i:04d}-0.png", "xb") as fh:
                fh.write(base64.b64decode(output["data"]["image/png"]))
        os.rename(tmp, raw_root / tmp.name[1:])
        return (time.perf_counter() - t0) * 1000

    def check(manifest: str) -> None:
        run_dir = Path(manifest).parent
        doc = json.loads(Path(manifest).read_bytes())
        files = [run_dir / e["data"]["image/png"]["file"] for e in doc["outputs"]]
        same = len(files) == PNGS and all(f.read_bytes() == png for f, png in zip(files, pngs, strict=False))
        print(
            f"check: published run holds the {PNGS} PNGs, byte for byte: {same}  "
            f"({sum(map(len, pngs)) / 1e6:.1f} MB in {run_dir.relative_to(ROOT)})"
        )
        if not same:
            raise BenchError("the run store published the wrong files")

    def drop_runs() -> None:  # outside the timed part: keep the disk use bounded
        for path in list(Path(ws, ".j-cli", "outputs").iterdir()) + list(raw_root.iterdir()):
            if path.is_dir() and not path.name.startswith("."):
                shutil.rmtree(path)

    times: dict[str, list[float]] = {"stage": [], "publish": [], "store": [], "raw": []}
    try:
        *_, manifest = store_once()  # the warm-up, checked
        check(manifest)
        raw_once()
        drop_runs()
        for i in range(runs):
            for what in ("store", "raw") if i % 2 == 0 else ("raw", "store"):
                if what == "raw":
                    times["raw"].append(raw_once())
                else:
                    stage_ms, publish_ms, _ = store_once()
                    times["stage"].append(stage_ms)
                    times["publish"].append(publish_ms)
                    times["store"].append(stage_ms + publish_ms)
            drop_runs()
    except BenchError:
        raise
    except Exception as exc:  # noqa: BLE001 -- the store is ours: any failure is our tool failing
        raise BenchError(f"the run store failed: {exc!r}") from None
    finally:
        shutil.rmtree(STORE_WS, ignore_errors=True)
    return times, {"mb": sum(map(len, pngs)) / 1e6, "avg_kb": sum(map(len, pngs)) / len(pngs) / 1e3}


# -- the report -----------------------------------------------------------------


def print_cli_table(times: dict, rss: dict, runs: int, upstream_runs: int) -> None:
    print(
        f"\nA. CLI: j-cli -j exec SESSION --code '{CODE}' on one local Jupyter Server; "
        f"{runs} runs each ({upstream_runs} for upstream), interleaved, {WARMUP} warm-ups"
    )
    print(f"{stats_header('command', 30)}{'runs':>6}{'peak RSS MiB':>14}")
    for name, samples in times.items():
        peak = f"{rss[name]:.1f}" if rss.get(name) else "n/a"
        print(f"{stats_row(LABELS.get(name, name), samples, 30, 1)}{len(samples):>6}{peak:>14}")
    if UPSTREAM not in times:
        print(f"{UPSTREAM:<30}unavailable ({UPSTREAM_PIN})")
        return
    fast, slow = upstream_modes(times[UPSTREAM])
    if slow:
        print(
            f"  upstream: {len(slow)} of {len(times[UPSTREAM])} runs stalled (median "
            f"{statistics.median(slow):.0f} ms; its websocket close waited out a select timeout)"
            + (f", {len(fast)} did not (median {statistics.median(fast):.0f} ms)" if fast else "")
        )


def upstream_modes(samples: list[float]) -> tuple[list[float], list[float]]:
    """Upstream's runs split into (fast, stalled).

    Upstream's close races websocket-client's reader thread; when it loses,
    it waits the reader's 2 s select timeout. A run more than 1 s slower
    than the fastest one has stalled.
    """
    cut = min(samples) + 1000
    return [t for t in samples if t <= cut], [t for t in samples if t > cut]


def print_in_process_table(times: dict, calls: int, jkc: dict) -> None:
    print(f"\nB. in-process: execute '{CODE}' and wait for the result; {calls} calls each, interleaved, {CALL_WARMUP} warm-ups")
    print(stats_header("client", 30))
    for name, samples in times.items():
        print(stats_row(LABELS.get(name, name), samples, 30, 2))
    if JKC not in times:
        print(f"{JKC:<30}unavailable ({JKC_PIN})")
    else:
        info = jkc.get("peer").info if jkc.get("peer") else {}
        alive = info.get("threads_alive")
        print(
            f"  jupyter-kernel-client {jkc['version']}: connect {jkc['connect_ms']:.0f} ms; "
            f"stop() {info.get('stop_ms', float('nan')):.0f} ms"
            + (f", threads still alive after stop: {alive}" if alive else "")
            + (f"; process exit {info['exit_ms']:.0f} ms after 'q'" if "exit_ms" in info else "")
        )


def print_store_table(result, runs: int) -> None:
    if result is None:
        return
    times, info = result
    print(
        f"\nC. run store: stage + publish {PNGS} PNG outputs (avg {info['avg_kb']:.1f} KB, "
        f"{info['mb']:.1f} MB); {runs} run{'s' if runs != 1 else ''} each, interleaved, 1 warm-up"
    )
    print(stats_header("step", 30))
    what = {"stage": "stage_run", "publish": "publish_run", "store": "stage_run + publish_run", "raw": "raw: b64decode + write files"}
    for name, samples in times.items():
        print(stats_row(what[name], samples, 30, 1))


def print_ratios(samples: dict[str, list[float]], store) -> None:
    values = medians(samples)
    print_targets(values, TARGETS, 36)
    if OURS_SIDECAR in values and FLOOR in values and ZMQ in values:
        allowed = SIDECAR_FLOOR_FACTOR * values[FLOOR] + values[ZMQ]
        ratio = values[OURS_SIDECAR] / allowed
        verdict = "meets target" if ratio <= 1.0 else "misses target"
        print(
            ratio_line(
                "sidecar / (1.5 floor + raw ZMQ)",
                ratio,
                f"target <= 1.00: {values[OURS_SIDECAR]:.1f} ms vs {allowed:.1f} ms allowed; {verdict}",
                36,
            )
        )
        print(ratio_line("sidecar / floor", values[OURS_SIDECAR] / values[FLOOR], "information", 36))
        print(ratio_line("sidecar / ours (sidecar off)", values[OURS_SIDECAR] / values[OURS], "information", 36))
    if OURS_BACKGROUND in values and OURS in values:
        print(ratio_line("background / ours (sidecar off)", values[OURS_BACKGROUND] / values[OURS], "information", 36))
    if UPSTREAM in samples and OURS in values:
        fast, slow = upstream_modes(samples[UPSTREAM])
        if fast and slow:
            ratio = statistics.median(fast) / values[OURS]
            print(ratio_line("upstream (runs not stalled) / ours", ratio, "information: upstream when its close does not stall", 36))
    if store is not None:
        times = store[0]
        ratio = statistics.median(times["store"]) / statistics.median(times["raw"])
        print(ratio_line("run store / raw write", ratio, "no target yet", 36))


# -- main -------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed CLI runs of ours and floor (default 15)")
    parser.add_argument("--upstream-runs", type=int, default=5, help="timed CLI runs of upstream (default 5)")
    parser.add_argument("--calls", type=int, default=100, help="timed in-process calls per client (default 100)")
    parser.add_argument("--store-runs", type=int, default=5, help="timed run-store publishes (default 5)")
    parser.add_argument("--big-runs", type=int, default=3, help="timed runs of each large message size (default 3)")
    args = parser.parse_args()
    if min(args.runs, args.upstream_runs, args.calls, args.store_runs, args.big_runs) < 1 or args.upstream_runs > args.runs:
        parser.error("every count must be >= 1, and --upstream-runs <= --runs")

    WORK.mkdir(parents=True, exist_ok=True)
    upstream = ensure_upstream()
    jkc_python = ensure_jkc()

    server = Server()
    runtime = sidecar_runtime_dir(XDG_RUNTIME)
    sidecar: Sidecar | None = None
    cleanup: list = []
    notes: list[str] = []
    jkc: dict = {}
    try:
        server.start()
        print(f"Jupyter Server started: pid {server.proc.pid}, {server.url}")
        env = child_env(server, runtime)
        row, with_upstream = create_sessions(env, upstream)
        sidecar = Sidecar(runtime)
        sidecar.start()
        cli_times, rss = measure_cli(env, upstream, args.runs, args.upstream_runs, with_upstream, sidecar)
        stop_and_clean(sidecar, runtime, XDG_RUNTIME)
        sidecar = None
        server.remember_kernels()
        in_process, jkc = measure_in_process(server, row["kernel_id"], jkc_python, args.calls, cleanup)
        server.remember_kernels()
        big = measure_big_messages(server, row["kernel_id"], args.big_runs, cleanup)
    except BenchError as exc:
        print(exc)
        return 1
    finally:
        if sidecar is not None:
            stop_and_clean(sidecar, runtime, XDG_RUNTIME)
        for step in reversed(cleanup):
            try:
                notes += step() or []
            except Exception as exc:  # noqa: BLE001 -- one failed step must not stop the others
                notes.append(f"cleanup step {getattr(step, '__qualname__', step)} failed: {exc!r}")
        notes += server.stop()
        for note in notes:
            print(f"note: {note}")
        print("Jupyter Server and kernels stopped" + ("" if notes else ", no process left"))

    api = store_api()
    try:
        store = measure_store(api, args.store_runs) if api else None
        embedded = big_messages.embedded_keeps_everything()
    except BenchError as exc:
        print(exc)
        return 1

    print_cli_table(cli_times, rss, args.runs, args.upstream_runs)
    print_in_process_table(in_process, args.calls, jkc)
    print_store_table(store, args.store_runs)
    big_messages.print_cpu(big, args.big_runs)
    big_messages.print_embedded(embedded)
    print_ratios({**cli_times, **in_process}, store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
