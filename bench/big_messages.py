"""One large kernel message: what it costs the client, and whether the embedded server keeps it.

Used by ``exec_latency.py`` (groups D and E of its report).

D. The kernel prints one string of 5, 10, 20 and 40 MB (one stream
   message), and the client reads it whole. Timed is the client's CPU
   (``time.process_time()`` of this process around one execute, every
   thread of it included), not the server's or the kernel's:

   * ours    -- ``KernelConnection`` held on the bench session's kernel,
                through the bench Jupyter Server (started without the IOPub
                rate limit, as j-cli's embedded server is);
   * raw ZMQ -- ``jupyter_client``'s ``BlockingKernelClient`` on a local
                kernel: decoding the same message with no server between.

   Sizes and clients are interleaved round-robin; each run checks that the
   whole text arrived.

E. 10 MB printed on the embedded server: ``j-cli -j exec`` with no server
   configured, in a fresh workspace, so j-cli starts its own embedded
   server; the kept bytes are read back from the run's record. The server is
   stopped at the end.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path

from harness import J_CLI, WORK, BenchError, bare_env, describe_failure, print_targets, ratio_line, rotated, run

SIZES_MB = (5, 10, 20, 40)
EMBEDDED_MB = 10
EMBEDDED_WS = WORK / "embedded-ws"  # the workspace (and cwd) of group E
EMBEDDED_RUNTIME = WORK / "embedded-runtime"  # XDG_RUNTIME_DIR of group E's j-cli children
OURS, ZMQ = "ours", "raw ZMQ"
TARGET = (OURS, ZMQ, "<=", 1.5)  # at the largest size


def _code(mb: int) -> str:
    return f"print('x' * {mb * 1_000_000})"


def _cpu_ms(fn) -> tuple[float, object]:
    t0 = time.process_time()
    result = fn()
    return (time.process_time() - t0) * 1000, result


def _zmq_print(kc, code: str) -> int:
    """Run ``code`` over ZMQ; the length of its stdout, read until idle and the reply."""
    msg_id = kc.execute(code)
    length = 0
    while True:
        msg = kc.get_iopub_msg(timeout=120)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            length += len(msg["content"]["text"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    while kc.get_shell_msg(timeout=120)["parent_header"].get("msg_id") != msg_id:
        pass
    return length


def measure_cpu(held, zmq_kc, reps: int) -> dict[int, dict[str, list[float]]]:
    """D: client CPU ms by size and client; ``held`` is ours' open connection, ``zmq_kc`` the raw client."""

    def ours(code: str) -> int:
        result = held.execute(code, timeout=120)
        return sum(len(o["text"]) for o in result.outputs if o["output_type"] == "stream")

    clients = {OURS: ours} if zmq_kc is None else {OURS: ours, ZMQ: lambda code: _zmq_print(zmq_kc, code)}
    times: dict[int, dict[str, list[float]]] = {mb: {name: [] for name in clients} for mb in SIZES_MB}
    for fn in clients.values():  # warm-up: the first big message also grows each process's heap
        fn(_code(SIZES_MB[0]))
    for i in range(reps):
        for mb in SIZES_MB:
            for name in rotated(list(clients), i + mb):
                ms, length = _cpu_ms(lambda name=name, mb=mb: clients[name](_code(mb)))
                if length != mb * 1_000_000 + 1:
                    if name == OURS:
                        raise BenchError(f"ours received {length} characters of a {mb} MB print")
                    print(f"note: {name} received {length} characters of a {mb} MB print")
                times[mb][name].append(ms)
    return times


def print_cpu(times: dict[int, dict[str, list[float]]], reps: int) -> None:
    print(f"\nD. one kernel message (print of N MB), client CPU ms (process_time); {reps} runs each, interleaved, 1 warm-up")
    print(f"{'size':<10}{'ours':>10}{'raw ZMQ':>10}{'ours / ZMQ':>12}")
    for mb, by_client in times.items():
        ours = statistics.median(by_client[OURS])
        zmq = statistics.median(by_client[ZMQ]) if by_client.get(ZMQ) else None
        ratio = f"{ours / zmq:>11.2f}x" if zmq else f"{'n/a':>12}"
        print(f"{f'{mb} MB':<10}{ours:>10.0f}{zmq if zmq is not None else float('nan'):>10.0f}{ratio}")
    largest = times[SIZES_MB[-1]]
    values = {name: statistics.median(samples) for name, samples in largest.items() if samples}
    print_targets(values, [TARGET], 36, names={OURS: f"ours {SIZES_MB[-1]} MB", ZMQ: "raw ZMQ (client CPU)"})


def embedded_keeps_everything() -> dict:
    """E: ``j-cli -j exec`` of a 10 MB print on j-cli's own embedded server; what was kept."""
    shutil.rmtree(EMBEDDED_WS, ignore_errors=True)
    EMBEDDED_WS.mkdir(parents=True)
    env = bare_env(EMBEDDED_RUNTIME)
    try:
        created = run([str(J_CLI), "-j", "session", "create", "-n", "big"], env, cwd=EMBEDDED_WS)
        if created.returncode != 0:
            raise BenchError(describe_failure("j-cli session create (embedded server)", created))
        r = run([str(J_CLI), "-j", "exec", "big", "--code", _code(EMBEDDED_MB)], env, cwd=EMBEDDED_WS)
        if r.returncode != 0:
            raise BenchError(describe_failure("j-cli exec (embedded server)", r))
        doc = json.loads(r.stdout)
        kept = sum(Path(item["path"]).stat().st_size for item in doc["outputs"] if item.get("path"))
        return {"kept": kept, "printed": EMBEDDED_MB * 1_000_000 + 1, "dropped": doc.get("dropped"), "text": len(doc["text"])}
    finally:
        stopped = run([str(J_CLI), "server", "stop"], env, cwd=EMBEDDED_WS)
        if stopped.returncode != 0:
            print(describe_failure("j-cli server stop (embedded server)", stopped))
        shutil.rmtree(EMBEDDED_WS, ignore_errors=True)


def print_embedded(result: dict) -> None:
    whole = result["kept"] == result["printed"] and result["dropped"] is None
    print(f"\nE. {EMBEDDED_MB} MB printed on the embedded server (j-cli -j exec, no server given)")
    print(
        f"kept {result['kept']} of {result['printed']} bytes in the run's record; returned text {result['text']} characters; "
        f"dropped: {result['dropped']}"
    )
    print(
        ratio_line("kept / printed", result["kept"] / result["printed"], "target: arrives whole", 36)
        + f"  {'meets' if whole else 'misses'} target"
    )
