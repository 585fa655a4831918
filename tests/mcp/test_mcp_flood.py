"""A flood of pipelined tool calls into ``j-cli mcp serve``: threads and memory stay bounded, and every call is answered.

On main every call got a worker thread of its own (anyio's 40 at once),
and every answer was held until written: 50 reads of a 10 MB output peaked
at 0.85 to 1 GB. Now calls run on a bounded pool (``CALLS_AT_ONCE`` places,
``job_wait`` on a lane of its own), a call keeps its place until its
answer is written; a call waiting in line holds only its request (at most
``MAX_MESSAGE_BYTES``). Stdin is read on all the while: a client that
writes every call before it reads an answer is never blocked. Threads and the peak memory (``VmHWM``) are
read from ``/proc/PID/status``, sampled each time an answer arrives.
"""

from __future__ import annotations

import json
import threading

from test_mcp_protocol import Server

#: The most threads a server may run: its pool (``CALLS_AT_ONCE`` and ``WAITS_AT_ONCE``, 4 each), the main one,
#: stdin's reader, stdout's writer, and one spare.
MOST_THREADS = 4 + 4 + 4


def _status(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        return {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in fh) if k in ("Threads", "VmHWM")}


def _notebook(path, text_bytes: int) -> None:
    cell = {
        "cell_type": "code",
        "id": "big",
        "metadata": {},
        "execution_count": 1,
        "source": "print(x)",
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "y" * text_bytes}],
    }
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}))


def _flood(server: Server, calls: list[dict]) -> tuple[dict, int]:
    """Send every call at once, read every answer; the answers by id and the most threads seen."""
    body = b"".join(json.dumps(call).encode() + b"\n" for call in calls)
    writer = threading.Thread(target=server.send_raw, args=(body,), daemon=True)  # a client writes and reads at once
    writer.start()
    answers: dict = {}
    most = 0
    while len(answers) < len(calls):
        answer = json.loads(server.proc.stdout.readline())  # blocking: select() would miss lines already buffered here
        assert answer.get("id") not in answers, "a call was answered twice"
        answers[answer.get("id")] = answer
        most = max(most, _status(server.proc.pid)["Threads"])
    writer.join()
    return answers, most


def _read(request_id, path="big.ipynb") -> dict:
    arguments = {"file_path": path, "cell_index": 0, "output_index": 0}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "read_notebook_output", "arguments": arguments}}


def test_three_hundred_pipelined_calls_are_all_answered_on_a_bounded_pool(tmp_path):
    _notebook(tmp_path / "small.ipynb", 10)
    server = Server(tmp_path, "--root", str(tmp_path))
    try:
        server.initialize()
        calls = [_read(i, "small.ipynb" if i % 3 else "missing.ipynb") for i in range(300)]
        calls += [{"jsonrpc": "2.0", "id": f"ping-{i}", "method": "ping"} for i in range(50)]
        answers, most = _flood(server, calls)
    finally:
        assert server.close() == 0
    assert set(answers) == {call["id"] for call in calls}
    for i in range(300):
        text = answers[i]["result"]["content"][0]["text"]
        assert ("FILE_NOT_FOUND" in text) if i % 3 == 0 else (answers[i]["result"]["isError"] is False), answers[i]
    assert most <= MOST_THREADS, f"{most} threads at once"


def test_many_reads_of_a_large_output_hold_a_bounded_amount_of_memory(tmp_path, reads=24):
    _notebook(tmp_path / "big.ipynb", 5_000_000)
    server = Server(tmp_path, "--root", str(tmp_path))
    try:
        server.initialize()
        idle = _status(server.proc.pid)["VmHWM"]
        answers, most = _flood(server, [_read(i) for i in range(reads)])
        peak = _status(server.proc.pid)["VmHWM"]
    finally:
        assert server.close() == 0
    assert all(len(answers[i]["result"]["content"][0]["text"]) > 0 for i in range(reads))
    grown_mib = (peak - idle) / 1024
    # one call in flight holds about five times its output (read, document, JSON); main held every call's at once (310 MiB here, 24 threads)
    assert grown_mib < 200, f"{reads} reads of a 5 MB output grew the server by {grown_mib:.0f} MiB"
    assert most <= MOST_THREADS, f"{most} threads at once"
