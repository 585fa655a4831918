// Shared by the plugins' node tests (not shipped): fixtures made for real.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const NOISE_NOTEBOOK = `
import base64, json, random, struct, zlib
rng = random.Random(7)
w = h = 900
raw = b"".join(b"\\x00" + bytes(rng.getrandbits(8) for _ in range(w * 3)) for _ in range(h))
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")
nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": 1, "source": "x",
      "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": base64.b64encode(png).decode()}}]}]}
json.dump(nb, open("big.ipynb", "w"))
print(len(png))
`;

/** Write `big.ipynb` in `dir`: one 900x900 noise PNG, over 1 MiB. Returns its byte size. */
export function writeBigPngNotebook(dir) {
  return Number(execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", NOISE_NOTEBOOK], { cwd: dir }).toString());
}

/** An executable in `dir` that blocks forever (it opens a FIFO nobody writes): for stop and timeout tests. */
export function blockedExecutable(dir) {
  const fifo = path.join(dir, "never-written");
  execFileSync("mkfifo", [fifo]);
  const bin = path.join(dir, "blocked-j-cli");
  fs.writeFileSync(bin, `#!/bin/sh\nexec cat ${JSON.stringify(fifo)}\n`, { mode: 0o755 });
  return bin;
}

/** The read tool's schema as j-cli's one request spec defines it (jcli_sidecar/read/request_spec.py). */
export function specSchema() {
  const script = "import json; from jcli_sidecar.read.request_spec import tool_schema; print(json.dumps(tool_schema()))";
  return JSON.parse(execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", script]).toString());
}

/**
 * Fail when a plugin's parameters drift from the spec: the same fields, types,
 * bounds, choices and descriptions (file_path may add the host's path rule).
 */
export function assertMatchesSpec(assert, schema, spec = specSchema()) {
  assert.deepEqual(Object.keys(schema.properties).sort(), Object.keys(spec.properties).sort());
  assert.deepEqual([...schema.required].sort(), [...spec.required].sort());
  for (const [name, want] of Object.entries(spec.properties)) {
    const got = schema.properties[name];
    assert.equal(got.type, want.type, name);
    assert.equal(got.minimum, want.minimum, name);
    assert.deepEqual(got.enum, want.enum, name);
    if (name === "file_path") assert.ok(got.description.startsWith(want.description.replace(/\.$/, "")), got.description);
    else assert.equal(got.description, want.description, name);
  }
}

/** The real j-cli the tests were given (tests swap JCLI_BIN for a counting one). */
const REAL_JCLI = process.env.JCLI_BIN;

/**
 * A j-cli that records each start in `<dir>/spawns.log`, then runs the real
 * one (JCLI_BIN as the test was given it): counting lines proves whether a
 * read spawned j-cli at all. `spawns()` counts reads, not `--version`.
 */
export function countingJcli(dir) {
  const log = path.join(dir, "spawns.log");
  const bin = path.join(dir, "counting-j-cli");
  fs.writeFileSync(bin, `#!/bin/sh\necho "$*" >> ${JSON.stringify(log)}\nexec ${JSON.stringify(REAL_JCLI)} "$@"\n`, { mode: 0o755 });
  const lines = () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter(Boolean) : []);
  return { bin, spawns: () => lines().filter((l) => l !== "--version").length, versions: () => lines().filter((l) => l === "--version").length };
}

/**
 * The real `j-cli` in `cwd`, its JSON answer parsed. A `sidecar` command runs
 * with the sidecar on; any other runs with the test's own switches, so a read
 * never leaves behind a sidecar it started for next time.
 */
export function jcliJson(cwd, args) {
  const env = { ...process.env };
  if (args[0] === "sidecar") delete env.JCLI_SIDECAR;
  return JSON.parse(execFileSync(REAL_JCLI, ["-j", ...args], { cwd, env }).toString());
}

/** The MCP tools' text parts for each request (its `host` as `mcp serve --host` passes it), as JSON on stdout. */
const MCP_TEXTS = `
import json, os, sys
from jcli.mcp_tools import READ_NOTEBOOK_OUTPUT, call_tool, tool_result_parts
shown = []
for request in json.load(sys.stdin):
    host = request.pop("host", None)
    doc = call_tool(READ_NOTEBOOK_OUTPUT, request, [os.path.realpath(os.getcwd())], host=host)
    shown.append([text for kind, text in tool_result_parts(doc) if kind == "text"])
print(json.dumps(shown))
`;

/**
 * What the other j-cli clients show for each request, read in `cwd`: the real
 * CLI in human mode (`cli.stdout`, `cli.stderr`, from `j-cli notebook output
 * --request -`) and the MCP tools (`mcp`, their text parts). A plugin's
 * caption is held to these: one wording, built once, in every client.
 */
export function shownByCliAndMcp(cwd, requests) {
  const env = { ...process.env, JCLI_SIDECAR: "off" };
  const mcp = JSON.parse(execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", MCP_TEXTS], { cwd, env, input: JSON.stringify(requests) }).toString());
  return requests.map((request, i) => {
    const run = spawnSync(REAL_JCLI, ["notebook", "output", "--request", "-"], { cwd, env, input: JSON.stringify(request) });
    if (run.status !== 0) throw new Error(`j-cli notebook output failed: ${run.stderr}`);
    return { cli: { stdout: run.stdout.toString(), stderr: run.stderr.toString() }, mcp: mcp[i] };
  });
}

/**
 * Start the workspace sidecar of `cwd` for real, stopped after test `t` (if
 * given); returns `requests()`, its served-request counter (that status call
 * itself counts one).
 */
export function startSidecar(t, cwd) {
  jcliJson(cwd, ["sidecar", "start"]);
  t?.after(() => stopSidecar(cwd));
  return { requests: () => jcliJson(cwd, ["sidecar", "status"]).requests_served };
}

/**
 * Stop `cwd`'s sidecar. A fallback read starts one in the background for next
 * time; `sidecar start` waits until that one listens (or starts one), so the
 * stop that follows never misses it.
 */
export function stopSidecar(cwd) {
  const env = { ...process.env };
  delete env.JCLI_SIDECAR;
  try {
    execFileSync(REAL_JCLI, ["sidecar", "start"], { cwd, env, stdio: "ignore" });
    execFileSync(REAL_JCLI, ["sidecar", "stop"], { cwd, env, stdio: "ignore" });
  } catch {
    /* none ran */
  }
}

/**
 * A fake sidecar on `cwd`'s socket that answers hello with another version
 * (a fault no real sidecar of this install can be made to show). Resolves
 * `{ hellos, close() }`; `hellos` collects the hello args it received.
 */
export async function otherVersionSidecar(t, cwd, { sidecarPackFrame, sidecarUnpack, sidecarWorkspaceHash, sidecarRuntimeDir }) {
  const net = await import("node:net");
  const dir = sidecarRuntimeDir();
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const socket = path.join(dir, `${sidecarWorkspaceHash(fs.realpathSync(cwd))}.sock`);
  const hellos = [];
  const server = net.createServer((conn) => {
    let buf = Buffer.alloc(0);
    conn.on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const msg = sidecarUnpack(buf.subarray(4, 4 + buf.readUInt32BE(0)));
        buf = buf.subarray(4 + buf.readUInt32BE(0));
        if (msg.op === "hello") {
          hellos.push(msg.args);
          conn.write(sidecarPackFrame({ id: msg.id, ok: true, result: { protocol: 1, version: "0.0.0-other", pid: process.pid, workspace: msg.args.workspace } }));
        }
      }
    });
    conn.on("error", () => {});
  });
  await new Promise((resolve) => server.listen(socket, resolve));
  const close = () => new Promise((resolve) => server.close(() => resolve()));
  t.after(close);
  return { hellos, close };
}

/**
 * A stand-in for `j-cli -j job wait` that is waiting when the test stops it:
 * it records its arguments (one per line in `<dir>/wait-args`), opens
 * `<dir>/wait-ready` (a FIFO: `ready()` returns once it is there and listens
 * for SIGTERM), then answers SIGTERM as j-cli does: the INTERRUPTED envelope
 * carrying `snapshot` on stderr, exit 143. Only the stop itself is staged:
 * a real job that never ends on cue cannot be had in a unit test.
 */
export function stoppableWait(dir, snapshot) {
  const ready = path.join(dir, "wait-ready");
  const hold = path.join(dir, "wait-hold");
  const args = path.join(dir, "wait-args");
  execFileSync("mkfifo", [ready, hold]);
  const envelope = JSON.stringify({ schema_version: 1, status: "error", code: "INTERRUPTED", message: "SIGTERM stopped the wait; the job(s) run on: wait again with j-cli job wait", signal: "SIGTERM", ...snapshot, stopped: true });
  const answer = path.join(dir, "wait-answer");
  fs.writeFileSync(answer, `${envelope}\n`);
  const bin = path.join(dir, "stoppable-j-cli");
  const script = [
    "#!/bin/sh",
    `for a in "$@"; do printf '%s\\n' "$a"; done > ${JSON.stringify(args)}`,
    `cat ${JSON.stringify(hold)} > /dev/null &`,
    "held=$!",
    `trap 'kill "$held"; cat ${JSON.stringify(answer)} >&2; exit 143' TERM`,
    `: > ${JSON.stringify(ready)}`,
    "wait",
  ].join("\n");
  fs.writeFileSync(bin, `${script}\n`, { mode: 0o755 });
  return {
    bin,
    ready: () => fs.readFileSync(ready),
    args: () => fs.readFileSync(args, "utf8").split("\n").slice(0, -1),
  };
}
