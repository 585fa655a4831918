"""Per-call latency of the ``read_notebook_output`` MCP tool, ours against upstream.

The read is always the same: one image output (cell 100, output 0, a ~90 KB
PNG) of the ~24 MB notebook of 200 image cells that the read benchmark uses
(``harness.ensure_notebooks`` generates it). Every server is driven through
the real MCP SDK client (``mcp.ClientSession`` over ``mcp.stdio_client``, from
the project venv), one long-lived session per server, all of them open at
once in one asyncio program:

* ours (sidecar)          -- ``j-cli mcp serve --root bench/.work`` from this
                             checkout, with the sidecar enabled (the default).
                             The script starts the sidecar first, so every
                             call is one round-trip to it, and checks that the
                             timed calls were all served from its cache;
* ours (JCLI_SIDECAR=off) -- the same server with ``JCLI_SIDECAR=off``: it
                             reads and parses the notebook itself on every call;
* upstream                -- ``j-cli mcp serve --root bench/.work`` of
                             ``jupyter-jcli`` (pinned in harness.py, its
                             own venv), on the same notebook with cell ids
                             (``big_ids.ipynb``; it cannot read one without).

Both ours get ``{"file_path": "big.ipynb", "cell_index": 100,
"output_index": 0}``, a path relative to their single root. Upstream gets the
same arguments on ``big_ids.ipynb``, once its tool schema (from
``list_tools``) shows that it takes them. Each server's answer is checked: the
image content must decode to the PNG stored in the notebook.

What is timed: one ``await session.call_tool(...)`` round trip, with
``time.perf_counter()``, after 3 warm-up calls per server, 50 calls per server
(``--calls``), the servers taking turns call by call (the first one changes
every round) so that they share the machine's noise. After each read, one
``list_tools`` round trip on the same session is timed too, for information:
what the protocol costs with no read at all. The start-up of each server
(spawn + ``initialize``) is timed once, also for information.

Start-up (the target of its own): before any session, each server is
started ``--starts`` times (default 10), ours and upstream taking turns, and
timed from the spawn until it has answered ``initialize`` and
``tools/list`` (the three frames written at once, as raw JSON-RPC lines;
``stdin`` is then closed and the process waited for). Ours runs with
``JCLI_SIDECAR=off``: starting reads nothing. Both servers are the MCP
SDK's low-level server over its stdio transport (ours on ``mcp`` 2.x,
upstream on 1.x) and both import the SDK at start, so the target is that
ours starts no slower than upstream (a ratio of medians of at most 1.0).

Why ratios: the machine is noisy and absolute timings drift up to 2x between
runs, so the target compares two medians measured side by side in the same
run (see TARGETS). Nothing here asserts on the numbers: the script prints
"meets target" or "misses target", and exits non-zero only if our own tool
fails (a server that does not start, an error result, a wrong PNG, a sidecar
that does not start or answer). If upstream cannot be installed or fails, the
script says so and reports our numbers alone.

The sidecar is private to this script: it and every j-cli child run with
``XDG_RUNTIME_DIR=bench/.work/mcp-runtime`` (mode 0700) and
``cwd=bench/.work``. At the end the MCP sessions are closed (the SDK closes
each server's stdin, then terminates it), the sidecar is stopped with
``j-cli sidecar stop``, also on errors, and the script checks that none of
the processes it started is left. Each server's stderr goes to
``bench/.work/mcp-<server>.log``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import select
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

from harness import (
    BIG,
    BIG_IDS,
    CELLS,
    J_CLI,
    UPSTREAM_PIN,
    WORK,
    BenchError,
    ProcessSet,
    Sidecar,
    child_env,
    ensure_notebooks,
    ensure_upstream,
    medians,
    notebook_png,
    print_targets,
    ratio_line,
    read_bytes,
    rotated,
    sidecar_runtime_dir,
    stats_header,
    stats_row,
    stop_and_clean,
    timed,
    verdict,
)

RUNTIME = WORK / "mcp-runtime"  # XDG_RUNTIME_DIR of the sidecar and of every server

TOOL = "read_notebook_output"
WARMUP = 3
CALL_TIMEOUT = 120.0  # seconds; a hung server fails instead of hanging the script
PROCESS_GRACE = 10.0  # seconds a server process may outlive its closed session

# Names used in the table and in the ratios.
OURS, OURS_OFF, UPSTREAM = "ours (sidecar)", "ours (JCLI_SIDECAR=off)", "upstream"
LOG_NAMES = {OURS: "ours", OURS_OFF: "ours-off", UPSTREAM: "upstream"}

# (numerator, denominator, op, target): ratios of medians from the same run.
TARGETS = [(UPSTREAM, OURS, ">=", 4.0)]
INFO = [(UPSTREAM, OURS_OFF, "information: ours without the sidecar")]


# -- the servers ------------------------------------------------------------------


class Server:
    """One MCP server: how to start it, its session, and what it answered."""

    def __init__(self, name: str, exe: Path, env: dict[str, str], notebook: Path, cell: int, output: int = 0) -> None:
        self.name = name
        self.output = output
        self.ours = name != UPSTREAM
        self.exe = exe
        self.env = env
        self.notebook = notebook
        self.cell = cell
        self.log = WORK / f"mcp-{LOG_NAMES[name]}.log"
        self.session = None
        self.arguments: dict | None = None
        self.png_of = result_png  # how to find the PNG in its answers (a peer may differ)
        self.startup_ms: float | None = None
        self.init_info = ""
        self.times: list[float] = []
        self.list_times: list[float] = []  # list_tools round trips: the protocol alone, no read

    def params(self):
        from mcp import StdioServerParameters

        return StdioServerParameters(
            command=str(self.exe),
            args=["mcp", "serve", "--root", str(WORK)],
            env=self.env,
            cwd=str(WORK),
        )

    def log_tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-5:])

    def failure(self, what: str, exc: BaseException) -> str:
        tail = self.log_tail()
        return f"{self.name}: {what} failed: {describe_exc(exc)}" + (f"\n{tail}" if tail else "")


def describe_exc(exc: BaseException) -> str:
    """One line for an exception, looking inside (anyio) exception groups."""
    while len(getattr(exc, "exceptions", ())) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:400]


def leftover_servers() -> list[str]:
    """``ps`` lines of any ``mcp serve --root bench/.work`` process still running."""
    r = subprocess.run(["ps", "-eo", "pid=,args="], check=False, stdout=subprocess.PIPE, text=True)
    marker = f"mcp serve --root {WORK}"
    return [line.strip() for line in r.stdout.splitlines() if marker in line]


# -- the answers ------------------------------------------------------------------


def describe_result(result) -> str:
    """What a tools/call result holds, in one line."""
    parts = []
    for block in result.content:
        if block.type == "image":
            parts.append(f"image {block.mime_type} ({len(block.data)} base64 chars)")
        elif block.type == "text":
            text = block.text.replace(str(WORK), "<root>")  # no machine-specific path in the output
            parts.append(f"text {text if len(text) <= 100 else text[:97] + '...'!r}")
        else:
            parts.append(block.type)
    structured = "none" if result.structured_content is None else f"keys {sorted(result.structured_content)}"
    wire = len(result.model_dump_json(by_alias=True, exclude_none=True))
    return f"isError {bool(result.is_error)}; content [{'; '.join(parts)}]; structuredContent {structured}; ~{wire / 1000:.0f} KB as JSON"


def result_png(result) -> bytes | None:
    """The decoded bytes of the result's one image/png content, or None."""
    if result.is_error:
        return None
    images = [b for b in result.content if b.type == "image" and b.mime_type == "image/png"]
    if len(images) != 1:
        return None
    try:
        return base64.b64decode(images[0].data, validate=True)
    except ValueError:
        return None


def png_in_text(result) -> bytes | None:
    """For a peer that does not answer with image content: a PNG as base64 in JSON text."""
    for block in result.content:
        if block.type != "text":
            continue
        try:
            doc = json.loads(block.text)
            return base64.b64decode(doc["selected"]["data"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


# -- the measurement --------------------------------------------------------------


async def open_server(server: Server, stack: AsyncExitStack, procs: ProcessSet) -> None:
    """Spawn and initialize ``server`` (timed), then list its tools and set its arguments.

    Its transport and session are entered into ``stack``, closed when it closes.
    """
    from mcp import ClientSession, stdio_client

    errlog = stack.enter_context(open(server.log, "w"))
    t0 = time.perf_counter()
    read, write = await stack.enter_async_context(stdio_client(server.params(), errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT))
    init = await session.initialize()
    server.startup_ms = (time.perf_counter() - t0) * 1000
    procs.add_children()
    server.session = session
    info = init.server_info
    server.init_info = f"{info.name} {info.version}, protocol {init.protocol_version}"

    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    if TOOL not in tools:
        raise RuntimeError(f"no {TOOL} tool (tools: {sorted(tools)})")
    schema = tools[TOOL].input_schema or {}
    props = schema.get("properties", {})
    required = schema.get("required", [])
    print(f"{server.name}: {server.init_info}; {TOOL} takes {sorted(props)}, requires {required}")
    wanted = {"file_path": server.notebook.name, "cell_index": server.cell, "output_index": server.output}
    missing = [key for key in wanted if key not in props]
    if missing or not set(required) <= set(wanted):
        raise RuntimeError(f"{TOOL}'s schema does not take file_path/cell_index/output_index: {schema}")
    server.arguments = wanted


async def call(server: Server):
    return await server.session.call_tool(TOOL, server.arguments, read_timeout_seconds=CALL_TIMEOUT)


async def first_answers(servers: dict[str, Server], truth: bytes) -> None:
    """The warm-up calls, with every answer checked; a failing peer is dropped."""
    for i in range(WARMUP):
        for name in list(servers):
            server = servers[name]
            try:
                result = await call(server)
            except Exception as exc:  # noqa: BLE001 -- ours is fatal below, a peer is dropped
                message = server.failure(f"warm-up call {i + 1}", exc)
                if server.ours:
                    raise BenchError(message) from None
                print(message)
                del servers[name]
                continue
            if i == 0:
                print(f"{name} returns: {describe_result(result)}")
                if result_png(result) is None and not server.ours and png_in_text(result) is not None:
                    server.png_of = png_in_text  # a peer may send the PNG as base64 in JSON text
            png = server.png_of(result)
            if i == 0 or png != truth:
                how = "image content" if server.png_of is result_png else "base64 in JSON text (no image content)"
                print(f"check: {name} {how} == notebook PNG ({len(truth)} bytes): {png == truth}")
            if png == truth:
                continue
            if server.ours:
                raise BenchError(f"{name} did not return the notebook's PNG as image content: {describe_result(result)}")
            print(f"{name}: wrong or unreadable answer: dropped")
            del servers[name]


async def timed_calls(servers: dict[str, Server], truth: bytes, calls: int) -> None:
    """``calls`` timed round trips per server, taking turns call by call.

    Each answer is checked after it is timed; a wrong one from ours is fatal,
    a peer's drops that peer.
    Each read is followed by one timed ``list_tools`` on the same session: an
    MCP round trip with no read, for information.
    """

    def drop(name: str, message: str) -> None:
        if servers[name].ours:
            raise BenchError(message)
        print(message)
        del servers[name]

    for i in range(calls):
        for name in rotated(list(servers), i):
            server = servers[name]
            t0 = time.perf_counter()
            try:
                result = await call(server)
            except Exception as exc:  # noqa: BLE001
                drop(name, server.failure(f"timed call {i + 1}", exc))
                continue
            elapsed = (time.perf_counter() - t0) * 1000
            if server.png_of(result) != truth:
                drop(name, f"{name}: timed call {i + 1} returned something else: {describe_result(result)}")
                continue
            server.times.append(elapsed)
            t0 = time.perf_counter()
            try:
                await server.session.list_tools()
            except Exception as exc:  # noqa: BLE001
                drop(name, server.failure(f"list_tools after timed call {i + 1}", exc))
                continue
            server.list_times.append((time.perf_counter() - t0) * 1000)


def killed_note(pid: int, proc) -> str:
    """The note for a server process killed because it outlived its session."""
    return f"pid {pid} ({' '.join(proc.cmdline()[1:4])}) still ran after its session closed: killed"


async def run(servers: list[Server], sidecar: Sidecar, truth: bytes, calls: int) -> dict[str, Server]:
    """Open every session, warm up, time; returns the servers that lasted."""
    procs = ProcessSet()  # every process the servers ran, so that none is left behind
    try:
        async with AsyncExitStack() as stack:
            active: dict[str, Server] = {}
            for server in servers:  # one after the other, so each start-up is timed alone
                sub = AsyncExitStack()
                try:
                    await open_server(server, sub, procs)
                except Exception as exc:  # noqa: BLE001
                    procs.add_children()
                    await sub.aclose()
                    message = server.failure("start-up (spawn, initialize, list_tools)", exc)
                    if server.ours:
                        raise BenchError(message) from None
                    print(message + "\n" + f"{server.name}: dropped")
                    continue
                stack.push_async_callback(sub.aclose)  # closed in reverse order, last opened first
                active[server.name] = server

            await first_answers(active, truth)
            before = sidecar.status()
            await timed_calls(active, truth, calls)
            after, served, misses = sidecar.served_since(before)
            ok = served == calls and misses == 0
            print(
                f"check: the {calls} timed calls of {OURS} were all served by the sidecar, from its cache: "
                f"{ok} (requests {served}, cache misses {misses})"
            )
            print(
                f"sidecar at the end: {after['requests_served']} requests served, cache entries "
                f"{after['cache']['entries']}, hits {after['cache']['hits']}, misses {after['cache']['misses']}"
            )
            if served < calls:
                raise BenchError(f"{OURS} did not read through the sidecar")
            return active
    finally:
        procs.add_children()  # anything spawned since (nothing, normally)
        notes = procs.wait_gone(PROCESS_GRACE, killed_note)
        left = leftover_servers()
        for note in notes:
            print(f"note: {note}")
        for line in left:
            print(f"note: still running: {line}")
        print(f"MCP servers stopped ({len(procs.seen)} processes seen)" + ("" if notes or left else ", none left"))


# -- the start-up ------------------------------------------------------------------

OURS_START, UPSTREAM_START = "ours start", "upstream start"
START_TARGETS = [(OURS_START, UPSTREAM_START, "<=", 1.0)]  # both on the SDK: no slower than upstream
START_FRAMES = b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)


def start_once(exe: Path, env: dict[str, str]) -> float:
    """Spawn one server, until it has answered initialize and tools/list; milliseconds."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(exe), "mcp", "serve", "--root", str(WORK)],
        cwd=WORK,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        proc.stdin.write(START_FRAMES)
        proc.stdin.flush()
        replies = [json.loads(line) for line in read_lines(proc.stdout.fileno(), 2)]
        elapsed = (time.perf_counter() - t0) * 1000
    finally:
        proc.stdin.close()
        try:
            proc.wait(PROCESS_GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    tools = [t.get("name") for t in ((replies[1] or {}).get("result") or {}).get("tools", [])]
    if (replies[0] or {}).get("id") != 1 or TOOL not in tools:
        raise RuntimeError(f"unexpected answers: {str(replies)[:300]}")
    return elapsed


def read_lines(fd: int, count: int) -> list[bytes]:
    """The first ``count`` lines written to ``fd``, each waited for at most CALL_TIMEOUT.

    Read straight from the descriptor: a buffered ``readline`` may take two
    answers at once, and a ``select`` on the descriptor would then wait for
    one that is already in the buffer.
    """
    data = b""
    while data.count(b"\n") < count:
        if not select.select([fd], [], [], CALL_TIMEOUT)[0]:
            raise RuntimeError(f"no answer within {CALL_TIMEOUT:.0f} s")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise RuntimeError("the server closed its output before answering")
        data += chunk
    return data.split(b"\n")[:count]


def time_starts(starters: dict[str, tuple[Path, dict[str, str]]], starts: int) -> dict[str, list[float]]:
    """``starts`` timed start-ups per server, taking turns; a failing peer is dropped, ours is fatal."""
    times: dict[str, list[float]] = {name: [] for name in starters}
    for i in range(starts):
        for name in rotated(list(times), i):
            try:
                times[name].append(start_once(*starters[name]))
            except (OSError, ValueError, RuntimeError) as exc:
                if name == OURS_START:
                    raise BenchError(f"{name}: {describe_exc(exc)}") from None
                print(f"{name}: failed: {describe_exc(exc)}; dropped")
                del times[name]
    return times


def print_starts(times: dict[str, list[float]], starts: int) -> None:
    print(f"\nMCP start-up: spawn until initialize and tools/list are answered, {starts} starts each, interleaved")
    print(stats_header("server", 28))
    for name, samples in times.items():
        print(stats_row(name, samples, 28, 0))
    print_targets(medians(times), START_TARGETS, 38, ratio_width=8)


# -- the report ---------------------------------------------------------------------


def print_table(servers: list[Server], cell: int, calls: int, notebook: Path = BIG) -> None:
    size_mb = notebook.stat().st_size / 1e6
    kind = f"{CELLS} PNG cells" if notebook == BIG else "realistic"
    print(
        f"\nMCP: {TOOL} cell {cell} output {servers[0].output} of a {size_mb:.1f} MB notebook ({kind}), "
        f"one stdio session per server; {calls} calls each, interleaved, {WARMUP} warm-ups"
    )
    print(f"{stats_header('server', 28)}{'calls':>7}{'list_tools ms':>15}{'startup ms':>12}")
    for server in servers:
        start = f"{server.startup_ms:.0f}" if server.startup_ms is not None else "n/a"
        if not server.times:
            print(f"{server.name:<28}{'unavailable':>11}{'':>40}{start:>12}" + (f"  ({UPSTREAM_PIN})" if not server.ours else ""))
            continue
        print(
            f"{stats_row(server.name, server.times, 28, 2)}{len(server.times):>7}{statistics.median(server.list_times):>15.2f}{start:>12}"
        )
    print("  list_tools = median of a list_tools round trip on the same session (no read), after each call")
    print("  startup = spawn + initialize, timed once per server")


def print_ratios(values: dict[str, float]) -> None:
    print_targets(values, TARGETS, 38, ratio_width=8)
    for num, den, note in INFO:
        if num in values and den in values:
            print(ratio_line(f"{num} / {den}", values[num] / values[den], note, 38, ratio_width=8))


def print_bytes_line(off: Server, notebook: Path, reads: int = 9) -> None:
    """The call without the sidecar against reading the notebook's bytes: ``(call - its own cost) / bytes``, target <= 2.5.

    Its own cost is the session's ``list_tools`` round trip (a call that
    reads nothing); the bytes are read here, in 1 MiB preads, right after
    the calls.
    """
    if not off.times:
        return
    read_ms = statistics.median(timed(read_bytes, notebook)[0] for _ in range(reads))
    call_ms, own_ms = statistics.median(off.times), statistics.median(off.list_times)
    ratio = (call_ms - own_ms) / read_ms
    note = f"{call_ms:.1f} ms call - {own_ms:.2f} ms list_tools, over {read_ms:.1f} ms reading the bytes; target <= 2.5"
    print(f"{ratio_line(f'{OURS_OFF} - call cost / bytes', ratio, note, 38, ratio_width=8)}  {verdict(ratio, '<=', 2.5)}")


# -- main -------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="timed calls per server (default 50)")
    parser.add_argument("--starts", type=int, default=10, help="timed start-ups per server (default 10)")
    parser.add_argument("--cell", type=int, default=100, help=f"cell to read, 0..{CELLS - 1} (default 100)")
    parser.add_argument(
        "--realistic",
        type=int,
        choices=(25, 400),
        help="read a PNG near the end of the realistic 25 or 400 MB notebook (big_reads.py) instead",
    )
    args = parser.parse_args()
    if args.calls < 1 or args.starts < 1 or not 0 <= args.cell < CELLS:
        parser.error(f"--calls and --starts must be >= 1, and --cell in 0..{CELLS - 1}")

    WORK.mkdir(parents=True, exist_ok=True)
    ensure_notebooks()  # also gives them an mtime an hour old, so the sidecar cache trusts them
    upstream = ensure_upstream()
    truth = notebook_png(args.cell)
    ours_nb, upstream_nb, output = BIG, BIG_IDS, 0
    if args.realistic:
        import big_reads
        from realistic_notebook import IMAGE_OUTPUT, image_png

        counts = big_reads.ensure_big()
        ours_nb = upstream_nb = big_reads.SIZES[args.realistic]  # with cell ids: both read it
        args.cell, output = big_reads.image_cell(counts[args.realistic]), IMAGE_OUTPUT
        truth = image_png(args.cell)
        TARGETS.append((UPSTREAM, OURS_OFF, ">=", 2.0))

    runtime = sidecar_runtime_dir(RUNTIME)
    servers = [
        Server(OURS, J_CLI, child_env(runtime, sidecar=True), ours_nb, args.cell, output),
        Server(OURS_OFF, J_CLI, child_env(runtime, sidecar=False), ours_nb, args.cell, output),
    ]
    if upstream is not None:
        servers.append(Server(UPSTREAM, upstream, child_env(runtime, sidecar=False), upstream_nb, args.cell, output))
    starters = {OURS_START: (J_CLI, child_env(runtime, sidecar=False))}
    if upstream is not None:
        starters[UPSTREAM_START] = (upstream, child_env(runtime, sidecar=False))
    sidecar = Sidecar(runtime)
    try:
        start_times = time_starts(starters, args.starts)
        sidecar.start()
        asyncio.run(run(servers, sidecar, truth, args.calls))
    except BenchError as exc:
        print(exc)
        return 1
    finally:
        stop_and_clean(sidecar, runtime, RUNTIME)

    print_table(servers, args.cell, args.calls, ours_nb)
    print_ratios(medians({s.name: s.times for s in servers if s.times}))
    if args.realistic:
        print_bytes_line(servers[1], ours_nb)
    print_starts(start_times, args.starts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
