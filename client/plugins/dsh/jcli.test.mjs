// node --import tsx --test: the DSH plugin (jcli.ts) in a fake DSH host whose
// ctx.shell really runs commands (bash, stdin, bounded stdout, timeout and
// abort like the host's executor) and whose ctx.attachments really checks and
// stores image bytes. The j-cli it runs is the real one (JCLI_BIN), reading
// tests/fixtures/protocol.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";

import { assertMatchesSpec, blockedExecutable, countingJcli, shownByCliAndMcp, startSidecar, stopSidecar, writeBigPngNotebook } from "../test-support.mjs";

import * as plugin from "./jcli.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.resolve(here, "../../../tests/fixtures/protocol");
const cases = JSON.parse(fs.readFileSync(path.join(fixtures, "cases.json"), "utf8"));
const BASE64_RUN = /[A-Za-z0-9+/]{40,}/;
const MiB = 1024 * 1024;

process.env.JCLI_SIDECAR = "off";
process.env.XDG_RUNTIME_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "jcli-xdg-"));
fs.chmodSync(process.env.XDG_RUNTIME_DIR, 0o700);
test.after(() => fs.rmSync(process.env.XDG_RUNTIME_DIR, { recursive: true, force: true }));

function workspace(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jcli-dsh-"));
  fs.cpSync(fixtures, dir, { recursive: true });
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** ctx.shell as the host's local executor behaves (see dsh-host.d.ts). */
class LocalShell {
  constructor(workdir, { defaultStdoutMaxBytes = MiB, stdoutCap = Infinity } = {}) {
    this.workdir = workdir;
    this.defaultStdoutMaxBytes = defaultStdoutMaxBytes;
    this.stdoutCap = stdoutCap;
    this.commands = [];
  }

  resolve(request) {
    return {
      command: request.command,
      workdir: request.workdir ?? this.workdir,
      timeoutMs: Math.min(request.timeoutMs ?? 120_000, 600_000),
      stdoutMaxBytes: Math.min(request.stdoutMaxBytes ?? this.defaultStdoutMaxBytes, this.stdoutCap),
      signal: request.signal,
      stdin: request.stdin,
      env: request.env,
    };
  }

  run(spec) {
    this.commands.push(spec.command);
    return new Promise((resolve, reject) => {
      const child = spawn("bash", ["-c", spec.command], {
        cwd: spec.workdir,
        env: { ...process.env, ...(spec.env ?? {}) },
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
      });
      const collect = (limit) => ({ chunks: [], bytes: 0, truncated: false, limit });
      const out = collect(spec.stdoutMaxBytes);
      const err = collect(MiB);
      const keepTail = (c, chunk) => {
        c.chunks.push(chunk);
        c.bytes += chunk.length;
        while (c.bytes > c.limit) {
          c.truncated = true;
          const drop = Math.min(c.chunks[0].length, c.bytes - c.limit);
          c.chunks[0] = c.chunks[0].subarray(drop);
          c.bytes -= drop;
          if (c.chunks[0].length === 0) c.chunks.shift();
        }
      };
      child.stdout.on("data", (chunk) => keepTail(out, chunk));
      child.stderr.on("data", (chunk) => keepTail(err, chunk));
      let cause = null;
      const kill = (why) => {
        if (cause) return;
        cause = why;
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      };
      const timer = setTimeout(() => kill("timeout"), spec.timeoutMs);
      const onAbort = () => kill("abort");
      spec.signal?.addEventListener("abort", onAbort, { once: true });
      if (spec.signal?.aborted) onAbort();
      child.on("error", reject);
      child.on("close", (exitCode, signal) => {
        clearTimeout(timer);
        spec.signal?.removeEventListener("abort", onAbort);
        const text = (c) => ({ text: Buffer.concat(c.chunks).toString("utf8"), truncated: c.truncated });
        resolve({
          exitCode,
          signal,
          timedOut: cause === "timeout",
          aborted: cause === "abort",
          timeoutMs: spec.timeoutMs,
          stdout: text(out),
          stderr: text(err),
        });
      });
      child.stdin.on("error", () => {});
      child.stdin.end(spec.stdin ?? "");
    });
  }
}

const MAGIC = {
  "image/png": [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
  "image/jpeg": [0xff, 0xd8, 0xff],
  "image/gif": [0x47, 0x49, 0x46, 0x38],
  "image/webp": [0x52, 0x49, 0x46, 0x46],
};

function dimensions(bytes, mediaType) {
  const view = Buffer.from(bytes);
  if (mediaType === "image/png") return [view.readUInt32BE(16), view.readUInt32BE(20)];
  if (mediaType === "image/jpeg") {
    for (let i = 2; i < view.length; ) {
      const marker = view[i + 1];
      const length = view.readUInt16BE(i + 2);
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) return [view.readUInt16BE(i + 7), view.readUInt16BE(i + 5)];
      i += 2 + length;
    }
  }
  throw Object.assign(new Error("INVALID_IMAGE"), { code: "INVALID_IMAGE" });
}

/** ctx.attachments: checks bytes against the declared type and keeps them. */
class AttachmentStore {
  constructor() {
    this.saved = new Map();
  }

  async saveImage(input) {
    assert.ok(input.data instanceof Uint8Array, "data must be raw bytes");
    const magic = MAGIC[input.mediaType];
    assert.ok(magic, `unsupported media type ${input.mediaType}`);
    if (!magic.every((b, i) => input.data[i] === b)) throw Object.assign(new Error("IMAGE_TYPE_MISMATCH"), { code: "IMAGE_TYPE_MISMATCH" });
    const [width, height] = dimensions(input.data, input.mediaType);
    const attachmentId = `att-${this.saved.size + 1}`;
    this.saved.set(attachmentId, Buffer.from(input.data));
    return { attachmentId, mediaType: input.mediaType, bytes: input.data.length, width, height };
  }
}

/** The host's raw JSON Schema subset, validated the way the registry does. */
function conforms(schema, value) {
  if (schema.oneOf) return schema.oneOf.filter((branch) => conforms(branch, value)).length === 1;
  if (schema.enum && !schema.enum.includes(value)) return false;
  switch (schema.type) {
    case "string":
      return typeof value === "string";
    case "integer":
      return Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
      if ((schema.required ?? []).some((k) => !(k in value))) return false;
      for (const [k, v] of Object.entries(value)) {
        const sub = schema.properties?.[k];
        if (!sub) {
          if (schema.additionalProperties === false) return false;
        } else if (!conforms(sub, v)) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

/** A fake DSH host: registry + services + the registry's dispatch invariants; `services` are what `ctx.get` finds. */
function host(dir, shellOptions = {}, config = {}, services = {}) {
  const shell = new LocalShell(dir, shellOptions);
  const attachments = new AttachmentStore();
  const registered = [];
  const listeners = { "tools/pre-execute": [], "tools/post-execute": [] };
  const ctx = {
    shell,
    attachments,
    on(name, listener) {
      listeners[name].push(listener);
      return () => listeners[name].splice(listeners[name].indexOf(listener), 1);
    },
    tools: {
      register(definition) {
        registered.push(definition);
        return () => registered.splice(registered.indexOf(definition), 1);
      },
    },
    get: (name) => services[name],
  };
  const dispose = plugin.apply(ctx, config);
  const tool = registered[0];
  const effects = { deferred: 0, concluded: 0 };
  /** One Native dispatch: value checked against output.schema, then rendered. */
  async function call(args, signal = new AbortController().signal, agent = undefined) {
    return dispatch(tool, args, signal, agent);
  }
  /** The same dispatch of the wait tool. */
  async function wait(args, signal = new AbortController().signal) {
    return dispatch(
      registered.find((d) => d.name === "wait_notebook_job"),
      args,
      signal,
    );
  }
  async function dispatch(tool, args, signal, agent) {
    const exec = {
      callId: "c1",
      rootCallId: "c1",
      name: tool.name,
      arguments: args,
      ...(agent === undefined ? {} : { agent }),
      signal,
      deferContext: () => effects.deferred++,
      concludeTurn: () => effects.concluded++,
    };
    const value = await tool.execute(args, exec);
    if (signal.aborted) throw new Error("the host would replace this success with 'tool call aborted'");
    assert.deepEqual(JSON.parse(JSON.stringify(value)), value, "value must be lossless JSON");
    assert.ok(conforms(tool.output.schema, value), `value violates output.schema: ${JSON.stringify(value).slice(0, 200)}`);
    return { value, content: tool.output.render(args, value) };
  }
  return { ctx, shell, attachments, tool, call, wait, effects, dispose, registered, listeners };
}

test("the plugin registers read_notebook_output in the host's tool shape", (t) => {
  const h = host(workspace(t));
  assert.equal(plugin.name, "j-cli");
  assert.deepEqual(plugin.inject, ["tools", "shell", "attachments"]);
  assert.equal(h.tool.name, "read_notebook_output");
  assert.deepEqual(h.tool.parameters.required, ["file_path", "cell_index"]);
  assert.equal(typeof h.tool.output.render, "function");
  assert.ok(h.tool.output.schema.oneOf.length === 4);
  assert.equal(h.listeners["tools/pre-execute"].length, 1);
  assert.equal(h.listeners["tools/post-execute"].length, 1);
  h.dispose();
  assert.equal(h.registered.length, 0, "disposing unregisters the tool");
  assert.equal(h.listeners["tools/pre-execute"].length + h.listeners["tools/post-execute"].length, 0, "and the guards");
});

test("the tool's parameters are j-cli's request spec (no drift)", (t) => {
  const h = host(workspace(t));
  assertMatchesSpec(assert, h.tool.parameters);
  h.dispose();
});

test("an image arrives as exactly one image block with the notebook's bytes", async (t) => {
  const h = host(workspace(t));
  const { value, content } = await h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 });
  const expected = Buffer.from(cases.find((c) => c.name === "png").expect.envelope.selected.data, "base64");
  const images = content.filter((b) => b.type === "image");
  assert.equal(images.length, 1);
  assert.equal(images[0].attachment.mediaType, "image/png");
  assert.deepEqual(h.attachments.saved.get(images[0].attachment.attachmentId), expected);
  assert.equal(images[0].attachment.bytes, expected.length);
  assert.equal(h.attachments.saved.size, 1);
  // PTC: a code-mode program receives `value`, which carries only the reference.
  assert.equal(value.kind, "image");
  assert.ok(!BASE64_RUN.test(JSON.stringify(value)), "base64 in the canonical value");
  for (const block of content) if (block.type === "text") assert.ok(!BASE64_RUN.test(block.text));
  assert.deepEqual(h.effects, { deferred: 0, concluded: 0 }, "no deferred context, no turn control");
});

test("a JPEG output is saved as a JPEG attachment", async (t) => {
  const h = host(workspace(t));
  const jpeg = cases.find((c) => c.expect.envelope?.selected?.mime_type === "image/jpeg");
  const { content } = await h.call(jpeg.request);
  const image = content.find((b) => b.type === "image");
  assert.equal(image.attachment.mediaType, "image/jpeg");
  assert.deepEqual(h.attachments.saved.get(image.attachment.attachmentId), Buffer.from(jpeg.expect.envelope.selected.data, "base64"));
});

test("every text and HTML case of the shared fixtures is verbatim, with no attachment", async (t) => {
  const h = host(workspace(t));
  let checked = 0;
  for (const c of cases) {
    const env = c.expect.envelope;
    if (!env || env.outputs || !env.selected || env.selected.encoding !== "utf-8") continue;
    const { value, content } = await h.call(c.request);
    assert.equal(value.kind, "text", c.name);
    assert.equal(content[0].text, env.selected.data, c.name);
    assert.equal(value.text, env.selected.data, c.name);
    checked++;
  }
  assert.ok(checked >= 5, `only ${checked} text cases`);
  assert.equal(h.attachments.saved.size, 0);
});

test("without output_index the tool lists the cell's outputs", async (t) => {
  const h = host(workspace(t));
  const { value, content } = await h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 2 });
  assert.equal(value.kind, "outputs");
  const listing = JSON.parse(content[0].text);
  assert.ok(Array.isArray(listing.outputs) && listing.outputs.length >= 1);
  assert.equal("agent_text" in listing, false, "the listing is the envelope as j-cli printed it");
  assert.ok(!BASE64_RUN.test(content[0].text));
});

test("the caption is the one the CLI and the MCP tools show, for every fixture output: one wording, j-cli's", async (t) => {
  const dir = fs.realpathSync(workspace(t)); // the MCP tools read real paths: the same request, so the same envelope
  const h = host(dir);
  const singles = cases.filter((c) => c.expect.envelope && !c.expect.envelope.outputs);
  const request = (c) => ({ ...c.request, file_path: path.join(dir, c.request.file_path) });
  const others = shownByCliAndMcp(dir, singles.map((c) => ({ ...request(c), host: "dsh" })));
  let windows = 0;
  let images = 0;
  for (const [i, c] of singles.entries()) {
    const { value, content } = await h.call(request(c));
    const { cli, mcp } = others[i];
    assert.match(value.caption, /^\[.+ from .+\]$/, c.name);
    assert.equal(value.caption, mcp.at(-1), `${c.name}: the MCP tools' caption`);
    const texts = content.filter((b) => b.type === "text").map((b) => b.text);
    if (value.kind === "image") {
      assert.equal(cli.stdout, `${value.caption}\n`, `${c.name}: the CLI's caption (an image's body)`);
      assert.deepEqual(texts, [value.caption], c.name);
      assert.equal(content.find((b) => b.type === "image").alt, value.caption, c.name);
      images++;
    } else {
      assert.equal(cli.stderr, `${value.caption}\n`, `${c.name}: the CLI's caption`);
      if (value.window === undefined) {
        assert.deepEqual(texts, [value.text], `${c.name}: whole text stands alone`);
      } else {
        assert.deepEqual(texts, [value.text, value.caption], c.name);
        assert.ok(value.caption.endsWith(`; ${value.window}]`), c.name);
        windows++;
      }
    }
  }
  assert.ok(windows >= 3 && images >= 3, `only ${windows} cut windows and ${images} images`);
});

test("hostile file names are passed as data on stdin, never through the shell", async (t) => {
  const dir = workspace(t);
  const h = host(dir);
  for (const name of ["with space.ipynb", "quo'te\".ipynb", "$(touch pwned).ipynb", "new\nline.ipynb", "`touch pwned2`.ipynb"]) {
    fs.copyFileSync(path.join(dir, "kernel_v4.5.ipynb"), path.join(dir, name));
    const { content } = await h.call({ file_path: name, cell_index: 5, output_index: 0 });
    assert.equal(content[0].text, "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>");
  }
  assert.equal(fs.existsSync(path.join(dir, "pwned")), false);
  assert.equal(fs.existsSync(path.join(dir, "pwned2")), false);
  for (const command of h.shell.commands) assert.match(command, /^'[^']*' -j notebook output --request -$/);
});

test("an image larger than a 1 MiB default shell capture arrives whole", async (t) => {
  const dir = workspace(t);
  const size = writeBigPngNotebook(dir);
  assert.ok(size > MiB);
  const h = host(dir, { defaultStdoutMaxBytes: MiB });
  const { content } = await h.call({ file_path: "big.ipynb", cell_index: 0, output_index: 0 });
  const image = content.find((b) => b.type === "image");
  assert.equal(h.attachments.saved.get(image.attachment.attachmentId).length, size);
  assert.deepEqual([image.attachment.width, image.attachment.height], [900, 900]);
});

test("stdout cut by the shell is a clear error, never half-parsed JSON", async (t) => {
  const h = host(workspace(t), { stdoutCap: 1000 });
  await assert.rejects(h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 }), /^JcliToolError: OUTPUT_TOO_LARGE: /);
  assert.equal(h.attachments.saved.size, 0);
});

test("a stop throws (never a snapshot) and kills the child", async (t) => {
  const dir = workspace(t);
  const bin = blockedExecutable(dir);
  const h = host(dir, {}, { bin });
  const controller = new AbortController();
  const pending = h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 }, controller.signal);
  controller.abort();
  await assert.rejects(pending, /^JcliToolError: ABORTED: /);
  const before = new AbortController();
  before.abort();
  await assert.rejects(h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 2 }, before.signal), /ABORTED/);
  assert.equal(h.shell.commands.length, 1, "a call stopped before it starts runs nothing");
});

test("a timeout throws TIMEOUT", async (t) => {
  const dir = workspace(t);
  const bin = blockedExecutable(dir);
  const h = host(dir, {}, { bin, timeoutMs: 200 });
  await assert.rejects(h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 }), /^JcliToolError: TIMEOUT: /);
});

test("a non-zero exit gives the coded error, with no base64 in it", async (t) => {
  const h = host(workspace(t));
  await assert.rejects(h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 99 }), /^JcliToolError: CELL_NOT_FOUND: /);
  await assert.rejects(h.call({ file_path: "missing.ipynb", cell_index: 0 }), /^JcliToolError: FILE_NOT_FOUND: /);
  await assert.rejects(
    h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 5, output_index: 0, mime_type: "image/png" }),
    (err) => /^MIME_NOT_FOUND: /.test(err.message) && err.code === "MIME_NOT_FOUND" && !BASE64_RUN.test(err.message),
  );
  await assert.rejects(h.call({ file_path: "kernel_v4.5.ipynb", cell_index: "two" }), /^JcliToolError: USAGE_ERROR: /);
});

test("a missing or broken executable is JCLI_UNAVAILABLE and says what to set; base64 on its stderr is never repeated", async (t) => {
  const dir = workspace(t);
  const bin = path.join(dir, "broken-j-cli");
  fs.writeFileSync(bin, `#!/bin/sh\necho '{"code": "INTERNAL", "message": "${"QUJD".repeat(30)}"}' >&2\nexit 3\n`, { mode: 0o755 });
  const h = host(dir, {}, { bin });
  await assert.rejects(h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 0 }), (err) => err.code === "INTERNAL" && !BASE64_RUN.test(err.message));
  fs.writeFileSync(bin, "#!/bin/sh\necho not json >&2\nexit 3\n", { mode: 0o755 });
  await assert.rejects(h.call({ file_path: "kernel_v4.5.ipynb", cell_index: 0 }), /^JcliToolError: JCLI_UNAVAILABLE: .*exited with 3 without a coded answer: not json.*set JCLI_BIN/);
  const missing = host(dir, {}, { bin: path.join(dir, "no-such-j-cli") });
  await assert.rejects(missing.call({ file_path: "kernel_v4.5.ipynb", cell_index: 0 }), /^JcliToolError: JCLI_UNAVAILABLE: .*not found.*set JCLI_BIN/);
  fs.writeFileSync(path.join(dir, "not-executable"), "", { mode: 0o644 });
  const denied = host(dir, {}, { bin: path.join(dir, "not-executable") });
  await assert.rejects(denied.call({ file_path: "kernel_v4.5.ipynb", cell_index: 0 }), /^JcliToolError: JCLI_UNAVAILABLE: .*not executable/);
});

test("images are fitted to DSH's limits and SVG renders on request, all in memory", async (t) => {
  const dir = workspace(t);
  const script = `
import base64, io, json
from PIL import Image
out = io.BytesIO()
Image.new("RGB", (5000, 1000), (10, 200, 30)).save(out, "PNG")
svg = '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="#ff0000"/></svg>'
nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": 1, "source": "x",
      "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": base64.b64encode(out.getvalue()).decode()}},
                  {"output_type": "display_data", "metadata": {}, "data": {"image/svg+xml": svg, "text/plain": "<svg>"}}]}]}
json.dump(nb, open("plots.ipynb", "w"))
`;
  execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", script], { cwd: dir });
  const before = fs.readFileSync(path.join(dir, "plots.ipynb"));
  const h = host(dir);
  const fitted = await h.call({ file_path: "plots.ipynb", cell_index: 0, output_index: 0 });
  const image = fitted.content.find((b) => b.type === "image");
  assert.deepEqual([image.attachment.width, image.attachment.height], [2000, 400]);
  assert.match(fitted.value.note, /^fitted from 5000x1000 px image\/png/);
  const rendered = await h.call({ file_path: "plots.ipynb", cell_index: 0, output_index: 1, mime_type: "image/svg+xml", as_mime_type: "image/png" });
  const png = rendered.content.find((b) => b.type === "image");
  assert.equal(png.attachment.mediaType, "image/png");
  assert.match(rendered.value.note, /^rendered from image\/svg\+xml/);
  assert.deepEqual(fs.readFileSync(path.join(dir, "plots.ipynb")), before);
  assert.deepEqual(fs.readdirSync(dir).filter((n) => n.startsWith("plots")), ["plots.ipynb"]);
});

// ---- The guards: the tools/pre-execute and tools/post-execute listeners, against the real j-cli.
// (The real DSH pipeline runs them in tests/hosts/dsh/dsh-real-host.test.mjs.)

/** A project with a py:percent a.py paired (by the real j-cli) with a.ipynb. */
function pairedProject(t) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "jcli-dsh-guards-")));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, "a.py"), "# %%\nx = 1\n\n# %%\nprint(x)\n");
  execFileSync(process.env.JCLI_BIN, ["convert", "py-to-ipynb", "a.py"], { cwd: dir });
  return dir;
}

const ALLOW = { kind: "allow" };
function exec(name, args) {
  return { name, arguments: args, signal: new AbortController().signal };
}
async function pre(h, name, args) {
  const [listener] = h.listeners["tools/pre-execute"];
  return listener(exec(name, args), async () => ALLOW);
}
async function post(h, name, args, result = { isError: false, content: [{ type: "text", text: "ok" }] }) {
  const [listener] = h.listeners["tools/post-execute"];
  return listener(exec(name, args), result, async () => ({ kind: "accept" }));
}

test("a read tool the host refuses costs only the read tool: the guards still deny, and a warning says why", async (t) => {
  const dir = pairedProject(t);
  const listeners = { "tools/pre-execute": [], "tools/post-execute": [] };
  const ctx = {
    shell: new LocalShell(dir),
    attachments: new AttachmentStore(),
    on(name, listener) {
      listeners[name].push(listener);
      return () => listeners[name].splice(listeners[name].indexOf(listener), 1);
    },
    tools: {
      register() {
        throw new Error("tool read_notebook_output is already registered by plugin other");
      },
    },
  };
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => warnings.push(args.join(" "));
  let dispose;
  try {
    dispose = plugin.apply(ctx, {});
  } finally {
    console.warn = warn;
  }
  assert.equal(warnings.length, 2); // one per tool: the read, then the wait
  assert.match(warnings[0], /^\[j-cli\] read_notebook_output is unavailable: the host refused it \(tool read_notebook_output is already registered by plugin other\); the guards still run$/);
  assert.match(warnings[1], /^\[j-cli\] wait_notebook_job is unavailable: the host refused it \(.*\); the guards still run$/);
  const [listener] = listeners["tools/pre-execute"];
  const decision = await listener({ name: "bash", arguments: { command: "papermill a.ipynb b.ipynb" }, signal: new AbortController().signal }, async () => ({ kind: "allow" }));
  assert.equal(decision.kind, "deny");
  assert.match(decision.reason, /^j-cli notebook-exec-guard: /);
  assert.equal(listeners["tools/post-execute"].length, 1);
  dispose();
  assert.equal(listeners["tools/pre-execute"].length + listeners["tools/post-execute"].length, 0);
});

// ---- wait_notebook_job: `j-cli -j job wait`, through the host's shell (a real job: tests/hosts/dsh/dsh-real-host.test.mjs).

/** A j-cli that prints `doc` as `job wait` would, and records its arguments. */
function answeringWait(dir, doc) {
  const bin = path.join(dir, "answering-j-cli");
  const answer = path.join(dir, "wait-answer.json");
  fs.writeFileSync(answer, JSON.stringify(doc));
  fs.writeFileSync(bin, `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > ${JSON.stringify(path.join(dir, "wait-args"))}\ncat ${JSON.stringify(answer)}\n`, { mode: 0o755 });
  return { bin, args: () => fs.readFileSync(path.join(dir, "wait-args"), "utf8").split("\n").slice(0, -1) };
}

const RUNNING = { job_id: "j1", state: "running", kind: "inline", session: "main", cells: 1, cells_done: 0, running_cell: 0 };

test("wait_notebook_job is registered beside the read tool, in the host's tool shape", (t) => {
  const h = host(workspace(t));
  assert.deepEqual(
    h.registered.map((d) => d.name),
    ["read_notebook_output", "wait_notebook_job"],
  );
  const tool = h.registered[1];
  assert.deepEqual(tool.parameters.required, ["job_ids"]);
  assert.deepEqual(Object.keys(tool.parameters.properties).sort(), ["job_ids", "timeout_seconds"]);
  assert.ok(tool.timeoutMs > plugin.MAX_WAIT_SECONDS * 1000, "the host never cuts a wait the call asked for");
  assert.equal(tool.isConcurrencySafe({}), true);
  h.dispose();
  assert.equal(h.registered.length, 0);
});

test("the wait is j-cli's document as the value, and the model reads it as the JSON j-cli prints", async (t) => {
  const dir = workspace(t);
  const doc = { schema_version: 1, timed_out: true, stopped: false, waited_seconds: 1.001, jobs: [RUNNING], ended: [], pending: ["j1"], failed: null };
  const fake = answeringWait(dir, doc);
  const h = host(dir, {}, { bin: fake.bin });
  const { value, content } = await h.wait({ job_ids: ["j1"], timeout_seconds: 1 });
  const { schema_version: _v, ...expected } = doc;
  assert.deepEqual(value, expected);
  assert.deepEqual(content, [{ type: "text", text: JSON.stringify(expected) }]);
  assert.deepEqual(fake.args(), ["-j", "job", "wait", "--timeout", "1", "--", "j1"]);
  await h.wait({ job_ids: ["j1", "20261202T073330.6Z-742cd278"] });
  assert.deepEqual(fake.args(), ["-j", "job", "wait", "--timeout", "100", "--", "j1", "20261202T073330.6Z-742cd278"]); // j-cli's default
});

test("bad job ids or timeouts are USAGE_ERROR and run nothing: an id never reaches the shell unchecked", async (t) => {
  const dir = workspace(t);
  const h = host(dir);
  for (const args of [{}, { job_ids: [] }, { job_ids: "j1" }, { job_ids: ["$(touch pwned)"] }, { job_ids: ["-x"] }, { job_ids: ["a b"] }, { job_ids: [""] }]) {
    await assert.rejects(h.wait(args), /^JcliToolError: USAGE_ERROR: job_ids/, JSON.stringify(args));
  }
  for (const timeout_seconds of [0, -5, plugin.MAX_WAIT_SECONDS + 1, "10", Number.NaN]) {
    await assert.rejects(h.wait({ job_ids: ["j1"], timeout_seconds }), /^JcliToolError: USAGE_ERROR: timeout_seconds/, String(timeout_seconds));
  }
  assert.deepEqual(h.shell.commands, []);
  assert.equal(fs.existsSync(path.join(dir, "pwned")), false);
});

test("an unknown job id is j-cli's JOB_NOT_FOUND, at once", async (t) => {
  const h = host(workspace(t));
  await assert.rejects(h.wait({ job_ids: ["nosuch"], timeout_seconds: 60 }), (err) => err.code === "JOB_NOT_FOUND" && /^JOB_NOT_FOUND: no job nosuch/.test(err.message));
});

test("a stopped wait throws its own error naming the jobs (never a snapshot DSH would replace), and the jobs run on", async (t) => {
  const dir = workspace(t);
  const h = host(dir, {}, { bin: blockedExecutable(dir) });
  const controller = new AbortController();
  const ids = ["j1", "j2", "j3", "j4"];
  const pending = h.wait({ job_ids: ids, timeout_seconds: 60 }, controller.signal);
  controller.abort();
  await assert.rejects(
    pending,
    (err) =>
      err.code === "JOB_WAIT_STOPPED" &&
      err.message === "JOB_WAIT_STOPPED: the wait for j1, j2, j3 (+1 more) was stopped; the job(s) run on: call wait_notebook_job again to go on waiting",
  );
  const before = new AbortController();
  before.abort();
  await assert.rejects(h.wait({ job_ids: ["j1"] }, before.signal), /^JcliToolError: JOB_WAIT_STOPPED: the wait for j1 was stopped/);
  assert.equal(h.shell.commands.length, 1, "a wait stopped before it starts runs nothing");
});

test("pre-execute: bash running papermill or a paired .py is denied with j-cli's reason; ordinary commands pass on", async (t) => {
  const h = host(pairedProject(t));
  const denied = await pre(h, "bash", { command: "papermill a.ipynb b.ipynb", description: "run" });
  assert.equal(denied.kind, "deny");
  assert.match(denied.reason, /^j-cli notebook-exec-guard: `papermill` runs a notebook outside j-cli/);
  assert.ok(denied.reason.includes("j-cli exec SESSION -f a.ipynb"));
  assert.match((await pre(h, "bash", { command: "python a.py" })).reason, /^j-cli python-run-guard: .*j-cli exec SESSION -f a\.py/s);
  for (const command of ["ls -la", "python -m pytest -q", 'echo "papermill"']) assert.deepEqual(await pre(h, "bash", { command }), ALLOW, command);
  assert.deepEqual(await pre(h, "read_notebook_output", { file_path: "a.ipynb", cell_index: 0 }), ALLOW);
});

test("pre-execute: an edit or write of a paired .ipynb is denied; the .py passes", async (t) => {
  const h = host(pairedProject(t));
  assert.match((await pre(h, "edit", { file_path: "a.ipynb", old_string: "x", new_string: "y" })).reason, /^j-cli notebook-edit-guard: a\.ipynb is paired/);
  assert.equal((await pre(h, "write", { file_path: "a.ipynb", content: "{}" })).kind, "deny");
  assert.deepEqual(await pre(h, "edit", { file_path: "a.py", old_string: "x = 1", new_string: "x = 2" }), ALLOW);
});

test("post-execute: an edit of the paired .py syncs the notebook and adds j-cli's note to the content", async (t) => {
  const dir = pairedProject(t);
  const h = host(dir);
  fs.writeFileSync(path.join(dir, "a.py"), "# %%\nx = 2\n\n# %%\nprint(x)\n");
  const decision = await post(h, "edit", { file_path: "a.py", old_string: "x = 1", new_string: "x = 2" });
  assert.equal(decision.kind, "accept");
  assert.equal(decision.content[0].text, "ok");
  assert.match(decision.content[1].text, /^\[j-cli\] j-cli synced .*a\.ipynb from .*a\.py: 1 cells kept/);
  const cells = JSON.parse(fs.readFileSync(path.join(dir, "a.ipynb"), "utf8")).cells;
  assert.equal([].concat(cells[0].source).join(""), "x = 2");
  assert.deepEqual(await post(h, "bash", { command: "true" }), { kind: "accept" });
  assert.deepEqual(await post(h, "edit", { file_path: "a.py" }, { isError: true, content: [] }), { kind: "accept" });
});

test("a guard that cannot run, crashes, or exits 2 without a decision never denies", async (t) => {
  const dir = pairedProject(t);
  const scripts = {
    crashes: "#!/bin/sh\necho 'Traceback: boom' >&2\nexit 1\n",
    "usage-error": "#!/bin/sh\necho \"Error: No such command '_hooks'.\" >&2\nexit 2\n",
    "garbage-deny": "#!/bin/sh\necho 'not json'\nexit 2\n",
  };
  const bins = [path.join(dir, "missing-j-cli")];
  for (const [name, body] of Object.entries(scripts)) {
    const bin = path.join(dir, `j-cli-${name}`);
    fs.writeFileSync(bin, body, { mode: 0o755 });
    bins.push(bin);
  }
  for (const bin of bins) {
    const h = host(dir, {}, { bin });
    assert.deepEqual(await pre(h, "bash", { command: "papermill a.ipynb b.ipynb" }), ALLOW, bin);
    assert.deepEqual(await post(h, "edit", { file_path: "a.py" }), { kind: "accept" }, bin);
  }
});

// ---- Reads through the sidecar's socket (sidecar-client.mjs) against spawning j-cli.

/** A workspace whose sidecar (if any) is stopped after the test, then removed (the stop needs it as its cwd). */
function sidecarWorkspace(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jcli-dsh-"));
  fs.cpSync(fixtures, dir, { recursive: true });
  t.after(() => {
    stopSidecar(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

async function outcomes(h, requests) {
  const out = [];
  for (const request of requests) {
    try {
      out.push(await h.call(request));
    } catch (e) {
      out.push({ error: e.message });
    }
  }
  return { out, saved: [...h.attachments.saved] };
}

test("with a sidecar running, every fixture case comes through the socket, equal to spawning j-cli, and spawns nothing", async (t) => {
  const dir = sidecarWorkspace(t);
  const counting = countingJcli(dir);
  const requests = cases.map((c) => c.request);
  const spawned = await outcomes(host(dir), requests);
  assert.ok(spawned.saved.length > 0, "image cases");
  assert.ok(spawned.out.some((o) => /^CELL_NOT_FOUND: /.test(o.error)), "an error case");
  const saved = process.env.JCLI_SIDECAR;
  delete process.env.JCLI_SIDECAR;
  t.after(() => {
    process.env.JCLI_SIDECAR = saved;
  });
  const sidecar = startSidecar(null, dir);
  const h = host(dir, {}, { bin: counting.bin });
  await h.call(requests[1]); // learns the j-cli version once (through the host's shell)
  h.attachments.saved.clear();
  const spawnsBefore = counting.spawns();
  const servedBefore = sidecar.requests();
  const socketed = await outcomes(h, requests);
  assert.equal(counting.spawns(), spawnsBefore, "no j-cli was spawned for a read");
  assert.equal(sidecar.requests(), servedBefore + requests.length + 1, "the sidecar served every read (and one status call)");
  assert.equal(counting.versions(), 1);
  assert.deepEqual(h.shell.commands.filter((c) => !c.endsWith(" --version")), [], "the host's shell ran no j-cli read");
  assert.deepEqual(socketed.out.map((o) => JSON.stringify(o)), spawned.out.map((o) => JSON.stringify(o)));
  assert.equal(socketed.saved.length, spawned.saved.length);
  socketed.saved.forEach(([, bytes], i) => assert.ok(bytes.equals(spawned.saved[i][1]), `image ${i} has the same bytes`));
});

test("with no sidecar, the read spawns j-cli through the host's shell", async (t) => {
  const dir = sidecarWorkspace(t);
  const counting = countingJcli(dir);
  const request = cases.find((c) => c.name === "png").request;
  const spawned = await outcomes(host(dir), [request]);
  const saved = process.env.JCLI_SIDECAR;
  delete process.env.JCLI_SIDECAR;
  t.after(() => {
    process.env.JCLI_SIDECAR = saved;
  });
  const got = await outcomes(host(dir, {}, { bin: counting.bin }), [request]);
  assert.equal(counting.spawns(), 1);
  assert.equal(JSON.stringify(got.out), JSON.stringify(spawned.out));
  assert.ok(got.saved[0][1].equals(spawned.saved[0][1]));
});

// ---- A model that takes no image input (the read's text_only).

/** An agent as the loop hands it to a tool: its session knows the route of its latest model request. */
function agentOn(provider, model) {
  return { id: "s1", session: { requestContext: () => (provider === undefined ? undefined : { provider, model }) } };
}

/** ctx.llm as DSH's runtime answers: what each route's adapter declares of a model; `asked` records the lookups. */
function llmDeclaring(models) {
  const asked = [];
  return {
    asked,
    async resolveModelInfo(provider, model, signal) {
      asked.push({ provider, model, signal });
      if (!(model in models)) throw Object.assign(new Error(`no adapter owns ${provider}`), { code: "NO_ADAPTER" });
      const inputModalities = models[model];
      return { provider, id: model, name: model, ...(inputModalities === undefined ? {} : { inputModalities }) };
    },
  };
}

const PNG_READ = { file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 };

function assertWithheld(h, { value, content }, label) {
  assert.equal(value.kind, "withheld", `${label}: ${JSON.stringify(value).slice(0, 200)}`);
  assert.equal(value.withheld, "the model takes no image input", label);
  assert.deepEqual(content, [{ type: "text", text: value.caption }], `${label}: the caption alone`);
  assert.equal(h.attachments.saved.size, 0, `${label}: an image was saved`);
  assert.ok(!BASE64_RUN.test(JSON.stringify(value)), `${label}: base64 in the value`);
}

test("a text-only model (by what DSH's adapter declares) gets j-cli's text-only caption: what, size, where, why, its text forms", async (t) => {
  const dir = fs.realpathSync(workspace(t));
  const llm = llmDeclaring({ "deepseek-v4-flash": ["text"] });
  const h = host(dir, {}, {}, { llm });
  const signal = new AbortController().signal;
  const request = { ...PNG_READ, file_path: path.join(dir, PNG_READ.file_path) };
  const shown = await h.call(request, signal, agentOn("deepseek-official", "deepseek-v4-flash"));
  assertWithheld(h, shown, "text-only");
  assert.deepEqual(llm.asked, [{ provider: "deepseek-official", model: "deepseek-v4-flash", signal }], "the route of the agent's latest request, under the call's signal");
  // The caption is j-cli's own for `--text-only`, word for word.
  const [{ cli }] = shownByCliAndMcp(dir, [{ ...request, host: "dsh", text_only: true }]);
  assert.equal(cli.stdout, `${shown.value.caption}\n`);
  assert.match(shown.value.caption, /^\[image\/png from .*kernel_v4\.5\.ipynb cell 2 output 0; 3630 bytes, \d+x\d+ px; not sent: the model takes no image input; /);
  assert.deepEqual(h.shell.commands.length, 1, "one j-cli for the read");
});

test("a model DSH declares as taking images gets the image, and a call on no agent's behalf does too", async (t) => {
  const llm = llmDeclaring({ "vision": ["text", "image"] });
  const h = host(workspace(t), {}, {}, { llm });
  const forAgent = await h.call(PNG_READ, undefined, agentOn("deepseek-official", "vision"));
  assert.equal(forAgent.value.kind, "image");
  assert.deepEqual(forAgent.content.map((b) => b.type), ["text", "image"]);
  const noAgent = await h.call(PNG_READ);
  assert.equal(noAgent.value.kind, "image", "no agent: no model session will hold the image");
  assert.equal(llm.asked.length, 1, "no lookup for a call on no agent's behalf");
});

test("when DSH tells nothing about the agent's model, the read is text only", async (t) => {
  const declared = { "no-modalities": undefined, "text-only": ["text"] };
  const rejecting = { resolveModelInfo: () => Promise.reject(new Error("lookup failed")) };
  const throwing = { resolveModelInfo: () => { throw new Error("sync failure"); } };
  const unknowns = [
    ["no ctx.llm", {}, agentOn("p", "text-only")],
    ["no request recorded yet", { llm: llmDeclaring(declared) }, agentOn(undefined)],
    ["no modalities declared", { llm: llmDeclaring(declared) }, agentOn("p", "no-modalities")],
    ["a route no adapter owns", { llm: llmDeclaring(declared) }, agentOn("p", "unknown-model")],
    ["a lookup that rejects", { llm: rejecting }, agentOn("p", "m")],
    ["a lookup that throws", { llm: throwing }, agentOn("p", "m")],
    ["an agent of another shape", { llm: llmDeclaring(declared) }, { id: "s1" }],
    ["a session whose requestContext throws", { llm: llmDeclaring(declared) }, { session: { requestContext: () => { throw new Error("x"); } } }],
    ["modalities that are not a list", { llm: { resolveModelInfo: async () => ({ inputModalities: "image" }) } }, agentOn("p", "m")],
    ["a lookup answering nothing", { llm: { resolveModelInfo: async () => null } }, agentOn("p", "m")],
  ];
  for (const [label, services, agent] of unknowns) {
    const h = host(workspace(t), {}, {}, services);
    assertWithheld(h, await h.call(PNG_READ, undefined, agent), label);
  }
});

test("the row's config.textOnly overrides what DSH says: true withholds every image, false sends them even to a text-only model", async (t) => {
  const llm = llmDeclaring({ "vision": ["text", "image"], "flash": ["text"] });
  const always = host(workspace(t), {}, { textOnly: true }, { llm });
  assertWithheld(always, await always.call(PNG_READ, undefined, agentOn("p", "vision")), "textOnly true, image model");
  assertWithheld(always, await always.call(PNG_READ), "textOnly true, no agent");
  const never = host(workspace(t), {}, { textOnly: false }, { llm });
  assert.equal((await never.call(PNG_READ, undefined, agentOn("p", "flash"))).value.kind, "image");
  assert.equal(llm.asked.length, 0, "a configured choice asks DSH nothing");
});

test("text only changes nothing for text: HTML and a stream stay verbatim, with no text_only effect", async (t) => {
  const h = host(workspace(t), {}, {}, { llm: llmDeclaring({ flash: ["text"] }) });
  for (const name of ["html", "stream_stdout"]) {
    const c = cases.find((x) => x.name === name);
    const { value, content } = await h.call(c.request, undefined, agentOn("p", "flash"));
    const expected = c.expect.envelope.selected?.data ?? c.expect.envelope.stream.data;
    assert.equal(value.kind, "text", name);
    assert.deepEqual(content, [{ type: "text", text: expected }], name);
  }
});

test("a stop while DSH looks the model up throws, and starts no j-cli", async (t) => {
  const controller = new AbortController();
  const llm = { resolveModelInfo: async () => { controller.abort(); return { inputModalities: ["text"] }; } };
  const h = host(workspace(t), {}, {}, { llm });
  await assert.rejects(h.call(PNG_READ, controller.signal, agentOn("p", "m")), /^JcliToolError: ABORTED: /);
  assert.equal(h.shell.commands.length, 0);
});

test("a text-only read through a running sidecar equals the spawned one, and spawns no j-cli", async (t) => {
  const dir = sidecarWorkspace(t);
  const counting = countingJcli(dir);
  const agent = agentOn("p", "flash");
  const llm = llmDeclaring({ flash: ["text"] });
  const spawned = host(dir, {}, {}, { llm });
  const alone = await spawned.call(PNG_READ, undefined, agent);
  assertWithheld(spawned, alone, "spawned");
  const saved = process.env.JCLI_SIDECAR;
  delete process.env.JCLI_SIDECAR;
  t.after(() => {
    process.env.JCLI_SIDECAR = saved;
  });
  const sidecar = startSidecar(null, dir);
  const h = host(dir, {}, { bin: counting.bin }, { llm });
  await h.call(cases[1].request); // learns the j-cli version once (through the host's shell)
  const spawnsBefore = counting.spawns();
  const servedBefore = sidecar.requests();
  const socketed = await h.call(PNG_READ, undefined, agent);
  assert.equal(counting.spawns(), spawnsBefore, "no j-cli was spawned for the read");
  assert.equal(sidecar.requests(), servedBefore + 2, "the sidecar served the read (and one status call)");
  assert.deepEqual(socketed, alone);
});
