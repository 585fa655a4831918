// Shared by the plugins' node tests (not shipped): fixtures made for real.
import { execFileSync } from "node:child_process";
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

/** The read tool's schema as j-cli's one request spec defines it (jcli_sidecar/request_spec.py). */
export function specSchema() {
  const script = "import json; from jcli_sidecar.request_spec import tool_schema; print(json.dumps(tool_schema()))";
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
