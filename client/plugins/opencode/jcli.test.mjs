// node --test: the OpenCode plugin against the real @opencode-ai/plugin
// package and the real j-cli (JCLI_BIN), on tests/fixtures/protocol.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";

import * as sidecarClient from "../sidecar-client.mjs";
import {
  assertMatchesSpec,
  blockedExecutable,
  countingJcli,
  jcliJson,
  otherVersionSidecar,
  shownByCliAndMcp,
  startSidecar,
  stopSidecar,
  stoppableWait,
  writeBigPngNotebook,
} from "../test-support.mjs";

import * as pluginModule from "./jcli.js";

const JcliPlugin = pluginModule.default;
const { runJcli, runHook } = JcliPlugin.internals;

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.resolve(here, "../../../tests/fixtures/protocol");
const cases = JSON.parse(fs.readFileSync(path.join(fixtures, "cases.json"), "utf8"));

const made = [];
test.after(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

function workspace() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jcli-opencode-"));
  made.push(dir);
  fs.cpSync(fixtures, dir, { recursive: true });
  return dir;
}

function context(directory, abort = new AbortController().signal) {
  return { sessionID: "s", messageID: "m", agent: "build", directory, worktree: directory, abort, metadata() {}, ask: async () => {} };
}

async function readTool() {
  const hooks = await JcliPlugin({});
  return hooks.tool.read_notebook_output;
}

process.env.JCLI_SIDECAR = "off";
process.env.XDG_RUNTIME_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "jcli-xdg-"));
fs.chmodSync(process.env.XDG_RUNTIME_DIR, 0o700);
made.push(process.env.XDG_RUNTIME_DIR);

test("the module exports only functions, as OpenCode's loader requires (the real loader is tests/hosts/test_host_opencode.py)", () => {
  const exported = Object.entries(pluginModule);
  assert.deepEqual(exported.map(([name]) => name), ["default"]);
  for (const [name, value] of exported) assert.equal(typeof value, "function", name);
});

test("a missing or broken j-cli is JCLI_UNAVAILABLE and says what to set", async (t) => {
  const dir = workspace();
  const tool = await readTool();
  const saved = process.env.JCLI_BIN;
  t.after(() => {
    process.env.JCLI_BIN = saved;
  });
  process.env.JCLI_BIN = path.join(dir, "no-such-j-cli");
  await assert.rejects(tool.execute({ file_path: "kernel_v4.5.ipynb", cell_index: 2 }, context(dir)), /^Error: JCLI_UNAVAILABLE: .*ENOENT.*set JCLI_BIN/);
  const broken = path.join(dir, "broken-j-cli");
  fs.writeFileSync(broken, "#!/bin/sh\necho 'Traceback: ModuleNotFoundError: jcli' >&2\nexit 1\n", { mode: 0o755 });
  process.env.JCLI_BIN = broken;
  await assert.rejects(tool.execute({ file_path: "kernel_v4.5.ipynb", cell_index: 2 }, context(dir)), /^Error: JCLI_UNAVAILABLE: .*exited with 1 without a coded answer: Traceback: ModuleNotFoundError: jcli.*set JCLI_BIN/);
  fs.writeFileSync(path.join(dir, "not-executable"), "", { mode: 0o644 });
  process.env.JCLI_BIN = path.join(dir, "not-executable");
  await assert.rejects(tool.execute({ file_path: "kernel_v4.5.ipynb", cell_index: 2 }, context(dir)), /^Error: JCLI_UNAVAILABLE: .*EACCES/);
});

test("the tool's arguments are j-cli's request spec (no drift)", async () => {
  const tool = await readTool();
  const { tool: helper } = await import("@opencode-ai/plugin");
  assertMatchesSpec(assert, helper.schema.toJSONSchema(helper.schema.object(tool.args)));
});

test("the tool is declared with zod arguments from tool.schema", async () => {
  const tool = await readTool();
  assert.equal(typeof tool.execute, "function");
  assert.ok(tool.args.file_path.safeParse("a.ipynb").success);
  assert.equal(tool.args.cell_index.safeParse(-1).success, false);
});

test("an image arrives as exactly one attachment with the notebook's bytes", async () => {
  const dir = workspace();
  const tool = await readTool();
  const result = await tool.execute({ file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 }, context(dir));
  const expected = cases.find((c) => c.name === "png").expect.envelope.selected.data;
  assert.equal(result.attachments.length, 1);
  assert.equal(result.attachments[0].mime, "image/png");
  assert.equal(result.attachments[0].url, `data:image/png;base64,${expected}`);
  for (const text of [result.output, result.title, JSON.stringify(result.metadata)]) {
    assert.ok(!/[A-Za-z0-9+/]{40,}/.test(text), "base64 outside the attachment");
  }
});

// ---- A model that takes no images: OpenCode says so in chat.params; the read asks j-cli for text_only.

const PNG = { file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 };

function chatParams(sessionID, agent, image) {
  return { sessionID, agent, model: { id: "m", providerID: "p", capabilities: { input: { text: true, image } } }, provider: {}, message: {} };
}

function withTextOnly(t, value) {
  const saved = process.env.JCLI_TEXT_ONLY;
  t.after(() => {
    if (saved === undefined) delete process.env.JCLI_TEXT_ONLY;
    else process.env.JCLI_TEXT_ONLY = saved;
  });
  if (value === undefined) delete process.env.JCLI_TEXT_ONLY;
  else process.env.JCLI_TEXT_ONLY = value;
}

test("a read for a model OpenCode says takes no images is j-cli's text_only answer: its caption, no attachment, no base64", async (t) => {
  withTextOnly(t, undefined);
  const dir = workspace();
  const hooks = await JcliPlugin({});
  const output = { temperature: 0, topP: 1, topK: 0, maxOutputTokens: undefined, options: {} };
  await hooks["chat.params"](chatParams("s", "build", false), output);
  assert.deepEqual(output, { temperature: 0, topP: 1, topK: 0, maxOutputTokens: undefined, options: {} }, "the hook changes nothing it is asked");
  const result = await hooks.tool.read_notebook_output.execute(PNG, context(dir));
  const file = path.join(dir, PNG.file_path); // as execute() resolves it
  const expected = jcliJson(dir, ["notebook", "output", file, "--cell", "2", "--output", "0", "--host", "opencode", "--text-only", "--agent-text"]);
  assert.equal(result.attachments, undefined);
  assert.equal(result.output, expected.agent_text.caption);
  assert.equal(result.title, expected.agent_text.caption);
  assert.match(result.output, /; 3630 bytes, 150x100 px; not sent: the model takes no image input; its text forms: text\/plain/);
  assert.deepEqual(result.metadata, { mime_type: "image/png", bytes: 3630, withheld: "the model takes no image input" });
  assert.ok(!/[A-Za-z0-9+/]{40,}/.test(JSON.stringify(result)), "base64 in a text-only result");
});

test("text_only follows the model of the read's own session and agent, the last one OpenCode named", async (t) => {
  withTextOnly(t, undefined);
  const dir = workspace();
  const hooks = await JcliPlugin({});
  const read = (sessionID, agent) => hooks.tool.read_notebook_output.execute(PNG, { ...context(dir), sessionID, agent });
  await hooks["chat.params"](chatParams("s1", "build", false), {});
  await hooks["chat.params"](chatParams("s2", "build", true), {});
  await hooks["chat.params"](chatParams("s1", "title", true), {}); // the title request's small model is another agent
  assert.equal((await read("s1", "build")).attachments, undefined);
  assert.equal((await read("s2", "build")).attachments.length, 1);
  assert.equal((await read("s3", "build")).attachments.length, 1, "a session OpenCode said nothing of gets the image");
  await hooks["chat.params"](chatParams("s1", "build", true), {}); // the user switched to a model that takes images
  assert.equal((await read("s1", "build")).attachments.length, 1);
});

test("chat.params input without a model's capabilities changes nothing and never throws", async (t) => {
  withTextOnly(t, undefined);
  const dir = workspace();
  const hooks = await JcliPlugin({});
  for (const input of [undefined, null, {}, { sessionID: "s" }, { sessionID: "s", agent: "build", model: {} }, { sessionID: 7, model: { capabilities: { input: { image: false } } } }, { sessionID: "s", agent: "build", model: { capabilities: { input: { image: "no" } } } }]) {
    await hooks["chat.params"](input, {});
  }
  assert.equal((await hooks.tool.read_notebook_output.execute(PNG, context(dir))).attachments.length, 1);
});

test("JCLI_TEXT_ONLY on or off wins over what OpenCode said; blank is unset", async (t) => {
  const { modelInputs, wantsTextOnly } = JcliPlugin.internals;
  const models = modelInputs();
  models.note(chatParams("s", "build", true));
  models.note(chatParams("t", "build", false));
  const at = (sessionID) => ({ sessionID, agent: "build" });
  for (const on of ["1", "true", "YES", "on", " 1 "]) {
    assert.equal(wantsTextOnly(models, at("s"), { JCLI_TEXT_ONLY: on }), true, on);
  }
  for (const off of ["0", "false", "No", "off", "disabled"]) {
    assert.equal(wantsTextOnly(models, at("t"), { JCLI_TEXT_ONLY: off }), false, off);
  }
  for (const unset of [{}, { JCLI_TEXT_ONLY: "" }, { JCLI_TEXT_ONLY: "  " }]) {
    assert.equal(wantsTextOnly(models, at("s"), unset), false);
    assert.equal(wantsTextOnly(models, at("t"), unset), true);
    assert.equal(wantsTextOnly(models, at("u"), unset), false);
    assert.equal(wantsTextOnly(models, undefined, unset), false);
  }
  withTextOnly(t, "1");
  const dir = workspace();
  const result = await (await readTool()).execute(PNG, context(dir));
  assert.equal(result.attachments, undefined);
  assert.match(result.output, /not sent: the model takes no image input/);
});

test("the sessions remembered are bounded: the oldest is forgotten first", () => {
  const models = JcliPlugin.internals.modelInputs(2);
  models.note(chatParams("a", "build", false));
  models.note(chatParams("b", "build", false));
  models.note(chatParams("a", "build", false)); // a is the newest again
  models.note(chatParams("c", "build", false));
  assert.equal(models.takesImages("b", "build"), undefined);
  assert.equal(models.takesImages("a", "build"), false);
  assert.equal(models.takesImages("c", "build"), false);
});

test("every text case of the shared fixtures is verbatim", async () => {
  const dir = workspace();
  const tool = await readTool();
  for (const c of cases) {
    const env = c.expect.envelope;
    if (!env || env.outputs || !env.selected || env.selected.encoding !== "utf-8") continue;
    const result = await tool.execute(c.request, context(dir));
    assert.equal(result.output, env.selected.data, c.name);
    assert.equal(result.attachments, undefined, c.name);
  }
});

test("the title is the caption the CLI and the MCP tools show, for every fixture output: one wording, j-cli's", async () => {
  const dir = fs.realpathSync(workspace()); // the MCP tools read real paths: the same request, so the same envelope
  const tool = await readTool();
  const singles = cases.filter((c) => c.expect.envelope && !c.expect.envelope.outputs);
  const asSent = (c) => ({ ...c.request, file_path: path.join(dir, c.request.file_path), host: "opencode" }); // as execute() resolves it
  const others = shownByCliAndMcp(dir, singles.map(asSent));
  let windows = 0;
  let images = 0;
  for (const [i, c] of singles.entries()) {
    const result = await tool.execute(c.request, context(dir));
    const { cli, mcp } = others[i];
    assert.match(result.title, /^\[.+ from .+\]$/, c.name);
    assert.equal(result.title, mcp.at(-1), `${c.name}: the MCP tools' caption`);
    if (result.attachments) {
      assert.equal(result.output, result.title, c.name);
      assert.equal(cli.stdout, `${result.title}\n`, `${c.name}: the CLI's caption (an image's body)`);
      images++;
    } else {
      assert.equal(cli.stderr, `${result.title}\n`, `${c.name}: the CLI's caption`);
    }
    if (result.title.includes("; continue at offset ")) windows++;
  }
  assert.ok(windows >= 3 && images >= 3, `only ${windows} cut windows and ${images} images`);
});

test("a catalog is titled by its caption and lists the envelope as j-cli printed it", async () => {
  const dir = workspace();
  const tool = await readTool();
  const c = cases.find((k) => k.name === "catalog_bundle");
  const result = await tool.execute(c.request, context(dir));
  assert.match(result.title, /^\[2 output\(s\) of .*kernel_v4\.5\.ipynb cell 9\]$/);
  const listing = JSON.parse(result.output);
  assert.equal("agent_text" in listing, false);
  assert.deepEqual(listing.outputs, c.expect.envelope.outputs);
  assert.equal(result.metadata.outputs, 2);
});

test("hostile file names are passed as data, never through a shell", async () => {
  const dir = workspace();
  const tool = await readTool();
  for (const name of ["with space.ipynb", "quo'te\".ipynb", "$(touch pwned).ipynb", "new\nline.ipynb"]) {
    fs.copyFileSync(path.join(dir, "kernel_v4.5.ipynb"), path.join(dir, name));
    const result = await tool.execute({ file_path: name, cell_index: 5, output_index: 0 }, context(dir));
    assert.equal(result.output, "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>");
  }
  assert.equal(fs.existsSync(path.join(dir, "pwned")), false);
});

test("an image larger than a 1 MiB shell capture arrives whole", async () => {
  const dir = workspace();
  const size = writeBigPngNotebook(dir);
  assert.ok(size > 1024 * 1024);
  const tool = await readTool();
  const result = await tool.execute({ file_path: "big.ipynb", cell_index: 0, output_index: 0 }, context(dir));
  const data = Buffer.from(result.attachments[0].url.split(",")[1], "base64");
  assert.equal(data.length, size);
});

test("a response over budget is a clear error, never half-parsed JSON", async () => {
  const dir = workspace();
  await assert.rejects(
    runJcli(["-j", "notebook", "output", "--request", "-"], { file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 }, { cwd: dir, stdoutLimit: 1000 }),
    /OUTPUT_TOO_LARGE/,
  );
  const tool = await readTool();
  const big = { file_path: "kernel_v4.5.ipynb", cell_index: 14, output_index: 0 };
  await assert.doesNotReject(tool.execute(big, context(dir)));
});

test("an abort kills the child and throws", async () => {
  const dir = workspace();
  const tool = await readTool();
  const controller = new AbortController();
  const pending = tool.execute({ file_path: "kernel_v4.5.ipynb", cell_index: 2, output_index: 0 }, context(dir, controller.signal));
  controller.abort();
  await assert.rejects(pending, /ABORTED/);
});

test("a coded j-cli error is thrown with its code and no base64", async () => {
  const dir = workspace();
  const tool = await readTool();
  await assert.rejects(tool.execute({ file_path: "kernel_v4.5.ipynb", cell_index: 99 }, context(dir)), /^Error: CELL_NOT_FOUND: /);
  await assert.rejects(
    tool.execute({ file_path: "kernel_v4.5.ipynb", cell_index: 5, output_index: 0, mime_type: "image/png" }, context(dir)),
    /MIME_NOT_FOUND/,
  );
});

// ---- wait_notebook_job: `j-cli -j job wait`, translated (the real binary with a real job: tests/hosts/test_host_opencode.py).

const { toWaitResult, waitArgs, MAX_WAIT_SECONDS } = JcliPlugin.internals;

async function waitTool() {
  const hooks = await JcliPlugin({});
  return hooks.tool.wait_notebook_job;
}

function jobView(id, state) {
  return { job_id: id, state, kind: "inline", session: "main", cells: 1, cells_done: state === "running" ? 0 : 1, running_cell: state === "running" ? 0 : null };
}

test("wait_notebook_job is offered beside read_notebook_output, with job_ids and timeout_seconds", async () => {
  const hooks = await JcliPlugin({});
  assert.deepEqual(Object.keys(hooks.tool).sort(), ["read_notebook_output", "wait_notebook_job"]);
  const tool = hooks.tool.wait_notebook_job;
  assert.deepEqual(Object.keys(tool.args).sort(), ["job_ids", "timeout_seconds"]);
  assert.match(tool.description, /--background/);
});

test("the wait's arguments reach j-cli as data after --, each id its own argument", () => {
  assert.deepEqual(waitArgs({ job_ids: ["a1"] }), ["-j", "job", "wait", "--", "a1"]);
  assert.deepEqual(waitArgs({ job_ids: ["--all", "$(touch x); b"], timeout_seconds: 2.5 }), ["-j", "job", "wait", "--timeout", "2.5", "--", "--all", "$(touch x); b"]);
  for (const bad of [{}, { job_ids: [] }, { job_ids: "a1" }, { job_ids: [""] }, { job_ids: [7] }, null]) {
    assert.throws(() => waitArgs(bad), /^Error: USAGE_ERROR: job_ids/, JSON.stringify(bad));
  }
  for (const timeout of [0, -1, MAX_WAIT_SECONDS + 1, Number.NaN, Infinity, "5"]) {
    assert.throws(() => waitArgs({ job_ids: ["a1"], timeout_seconds: timeout }), /^Error: USAGE_ERROR: timeout_seconds/, String(timeout));
  }
});

test("an ended wait is j-cli's document verbatim, titled by the job that ended and its state", () => {
  const doc = { schema_version: 1, timed_out: false, stopped: false, waited_seconds: 0.4, jobs: [{ ...jobView("j1", "ok"), result: { status: "ok", text: "2\n" } }], ended: ["j1"], pending: [], failed: null };
  const result = toWaitResult(doc);
  const { schema_version: _v, ...wait } = doc;
  assert.deepEqual(JSON.parse(result.output), wait);
  assert.equal(result.title, "ended: j1 ok");
  assert.deepEqual(result.metadata, { timed_out: false, stopped: false, ended: ["j1"], pending: [], failed: null });
});

test("a timed-out wait says the jobs still run and to wait again", () => {
  const doc = { schema_version: 1, timed_out: true, stopped: false, waited_seconds: 1, jobs: [jobView("j1", "running"), jobView("j2", "running")], ended: [], pending: ["j1", "j2"], failed: null };
  const result = toWaitResult(doc);
  assert.equal(result.title, "still running after 1 s: j1, j2; wait again");
  assert.equal(JSON.parse(result.output).timed_out, true);
  assert.deepEqual(result.metadata.pending, ["j1", "j2"]);
});

test("an unknown job id is j-cli's JOB_NOT_FOUND at once", async () => {
  const dir = workspace();
  const tool = await waitTool();
  await assert.rejects(tool.execute({ job_ids: ["nosuch"], timeout_seconds: 30 }, context(dir)), /^Error: JOB_NOT_FOUND: no job nosuch/);
});

test("a stopped wait sends j-cli SIGTERM and returns the snapshot it answers, marked stopped: true", async (t) => {
  const dir = workspace();
  const snapshot = { timed_out: false, waited_seconds: 3, jobs: [jobView("j1", "running")], ended: [], pending: ["j1"], failed: null };
  const fake = stoppableWait(dir, snapshot);
  const saved = process.env.JCLI_BIN;
  process.env.JCLI_BIN = fake.bin;
  t.after(() => {
    process.env.JCLI_BIN = saved;
  });
  const tool = await waitTool();
  const controller = new AbortController();
  const pending = tool.execute({ job_ids: ["j1"], timeout_seconds: 60 }, context(dir, controller.signal));
  fake.ready(); // j-cli is waiting
  controller.abort();
  const result = await pending;
  assert.deepEqual(fake.args(), ["-j", "job", "wait", "--timeout", "60", "--", "j1"]);
  assert.equal(result.title, "wait stopped; still running: j1 (they run on)");
  const shown = JSON.parse(result.output);
  assert.equal(shown.stopped, true);
  assert.deepEqual(shown.jobs, snapshot.jobs);
  assert.equal(shown.code, undefined); // the snapshot, not the error envelope around it
  assert.deepEqual(result.metadata, { timed_out: false, stopped: true, ended: [], pending: ["j1"], failed: null });
});

test("a stop that j-cli does not answer with a snapshot is ABORTED", async (t) => {
  const dir = workspace();
  const saved = process.env.JCLI_BIN;
  t.after(() => {
    process.env.JCLI_BIN = saved;
  });
  process.env.JCLI_BIN = blockedExecutable(dir); // says nothing, and SIGTERM ends it
  const tool = await waitTool();
  const controller = new AbortController();
  const pending = tool.execute({ job_ids: ["j1"] }, context(dir, controller.signal));
  controller.abort();
  await assert.rejects(pending, /ABORTED/);
});

// ---- The guards: tool.execute.before / tool.execute.after against the real j-cli.

/** A project with a py:percent a.py paired (by the real j-cli) with a.ipynb. */
function pairedProject() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jcli-opencode-guards-"));
  made.push(dir);
  fs.writeFileSync(path.join(dir, "a.py"), "# %%\nx = 1\n\n# %%\nprint(x)\n");
  execFileSync(process.env.JCLI_BIN, ["convert", "py-to-ipynb", "a.py"], { cwd: dir });
  return dir;
}

async function guards(dir) {
  return JcliPlugin({ directory: dir, worktree: dir });
}

const call = (tool) => ({ tool, sessionID: "s", callID: "c" });

test("before: a bash call running papermill is refused with j-cli's reason; an ordinary one passes", async () => {
  const dir = pairedProject();
  const hooks = await guards(dir);
  await assert.rejects(
    hooks["tool.execute.before"](call("bash"), { args: { command: "papermill a.ipynb b.ipynb", description: "run" } }),
    (e) => e instanceof Error && /^j-cli notebook-exec-guard: `papermill` runs a notebook outside j-cli/.test(e.message) && e.message.includes("j-cli exec SESSION -f a.ipynb"),
  );
  await assert.rejects(hooks["tool.execute.before"](call("bash"), { args: { command: "cd . && python a.py" } }), /^Error: j-cli python-run-guard: .*j-cli exec SESSION -f a\.py/s);
  for (const command of ["ls -la", "python -m pytest -q", 'echo "papermill"']) {
    await assert.doesNotReject(hooks["tool.execute.before"](call("bash"), { args: { command } }), command);
  }
});

test("before: an edit or write of a paired .ipynb is refused; the .py and other tools pass", async () => {
  const dir = pairedProject();
  const hooks = await guards(dir);
  await assert.rejects(
    hooks["tool.execute.before"](call("edit"), { args: { filePath: path.join(dir, "a.ipynb"), oldString: "x", newString: "y" } }),
    /^Error: j-cli notebook-edit-guard: a\.ipynb is paired with the py:percent a\.py; edit a\.py instead/,
  );
  await assert.rejects(hooks["tool.execute.before"](call("write"), { args: { filePath: "a.ipynb", content: "{}" } }), /notebook-edit-guard/);
  await assert.doesNotReject(hooks["tool.execute.before"](call("edit"), { args: { filePath: "a.py", oldString: "x = 1", newString: "x = 2" } }));
  await assert.doesNotReject(hooks["tool.execute.before"](call("read"), { args: { filePath: "a.ipynb" } }));
});

test("after: an edit of the paired .py syncs the notebook and tells the model in the tool's output", async () => {
  const dir = pairedProject();
  const hooks = await guards(dir);
  fs.writeFileSync(path.join(dir, "a.py"), "# %%\nx = 2\n\n# %%\nprint(x)\n"); // what OpenCode's edit tool just wrote
  const output = { title: "a.py", output: "Edit applied successfully.", metadata: {} };
  await hooks["tool.execute.after"]({ ...call("edit"), args: { filePath: "a.py", oldString: "x = 1", newString: "x = 2" } }, output);
  assert.match(output.output, /^Edit applied successfully\.\n\n\[j-cli\] j-cli synced .*a\.ipynb from .*a\.py: 1 cells kept/);
  const cells = JSON.parse(fs.readFileSync(path.join(dir, "a.ipynb"), "utf8")).cells;
  assert.equal([].concat(cells[0].source).join(""), "x = 2");
  const untouched = { title: "t", output: "ok", metadata: {} };
  await hooks["tool.execute.after"]({ ...call("bash"), args: { command: "true" } }, untouched);
  assert.equal(untouched.output, "ok");
});

/**
 * The plugin as `j-cli setup opencode --project` installs it, in a fresh project
 * outside this tree, so `@opencode-ai/plugin` resolves only if `prepare` puts it there.
 */
async function installedOffline(prepare = () => {}) {
  const dir = pairedProject();
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "jcli-opencode-home-"));
  made.push(home);
  execFileSync(process.env.JCLI_BIN, ["-j", "setup", "opencode", "--project"], { cwd: dir, env: { ...process.env, HOME: home } });
  prepare(path.join(dir, ".opencode"));
  const plugin = await import(`${path.join(dir, ".opencode", "plugins", "jcli.js")}?${Date.now()}`);
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => warnings.push(args.join(" "));
  try {
    return { dir, hooks: await plugin.default({ directory: dir, worktree: dir }), warnings };
  } finally {
    console.warn = warn;
  }
}

/** A package at `@opencode-ai/plugin` whose import throws, as a half-finished install leaves it. */
function brokenPackage(configDir) {
  const pkg = path.join(configDir, "node_modules", "@opencode-ai", "plugin");
  fs.mkdirSync(pkg, { recursive: true });
  fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "@opencode-ai/plugin", type: "module", exports: { ".": "./index.js" } }));
  fs.writeFileSync(path.join(pkg, "index.js"), 'import "zod";\nexport const tool = () => {};\n');
}

/** A package at `@opencode-ai/plugin` that loads but has no `tool` helper (another major version). */
function foreignPackage(configDir) {
  const pkg = path.join(configDir, "node_modules", "@opencode-ai", "plugin");
  fs.mkdirSync(pkg, { recursive: true });
  fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: "@opencode-ai/plugin", type: "module", exports: { ".": "./index.js" } }));
  fs.writeFileSync(path.join(pkg, "index.js"), "export const plugin = {};\n");
}

for (const [variant, prepare, why] of [
  ["missing", () => {}, /@opencode-ai\/plugin cannot be loaded \(Cannot find package '@opencode-ai\/plugin'/],
  ["broken (its own import fails)", brokenPackage, /@opencode-ai\/plugin cannot be loaded \(Cannot find package 'zod'/],
  ["without tool()", foreignPackage, /@opencode-ai\/plugin has no tool\(\) helper/],
]) {
  test(`with @opencode-ai/plugin ${variant}, the guards still deny and the read tool says why`, async () => {
    const { dir, hooks, warnings } = await installedOffline(prepare);
    await assert.rejects(
      hooks["tool.execute.before"](call("bash"), { args: { command: "papermill a.ipynb b.ipynb", description: "run" } }),
      /^Error: j-cli notebook-exec-guard: `papermill` runs a notebook outside j-cli/,
    );
    await assert.rejects(hooks["tool.execute.before"](call("edit"), { args: { filePath: "a.ipynb", oldString: "x", newString: "y" } }), /notebook-edit-guard/);
    await assert.doesNotReject(hooks["tool.execute.before"](call("bash"), { args: { command: "ls -la" } }));
    const tool = hooks.tool.read_notebook_output;
    assert.deepEqual(tool.args, {});
    await assert.rejects(tool.execute({ file_path: "a.ipynb", cell_index: 0 }, context(dir)), (e) => {
      assert.match(e.message, /^READ_TOOL_UNAVAILABLE: read_notebook_output cannot load: /);
      assert.match(e.message, why);
      assert.match(e.message, /guards are unaffected/);
      return true;
    });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /^\[j-cli\] read_notebook_output is unavailable: .*; the guards still run$/);
    assert.match(warnings[0], why);
  });
}

test("with @opencode-ai/plugin installed beside it, the installed plugin has its zod arguments and warns nothing", async () => {
  const { hooks, warnings } = await installedOffline((configDir) => {
    fs.symlinkSync(path.join(here, "node_modules"), path.join(configDir, "node_modules"), "dir");
  });
  assert.deepEqual(warnings, []);
  assert.equal(typeof hooks.tool.read_notebook_output.args.file_path?.parse, "function");
});

test("a guard that cannot run, crashes, answers garbage or exits 2 without a decision never blocks", async (t) => {
  const dir = pairedProject();
  const saved = process.env.JCLI_BIN;
  t.after(() => {
    process.env.JCLI_BIN = saved;
  });
  const papermill = { args: { command: "papermill a.ipynb b.ipynb" } };
  const scripts = {
    "missing": null,
    "crashes": "#!/bin/sh\necho 'Traceback: boom' >&2\nexit 1\n",
    "garbage-deny": "#!/bin/sh\necho 'not json'\nexit 2\n",
    "usage-error": "#!/bin/sh\necho \"Error: No such command '_hooks'.\" >&2\nexit 2\n",
  };
  for (const [name, body] of Object.entries(scripts)) {
    const bin = path.join(dir, `j-cli-${name}`);
    if (body !== null) fs.writeFileSync(bin, body, { mode: 0o755 });
    process.env.JCLI_BIN = bin;
    const hooks = await guards(dir);
    await assert.doesNotReject(hooks["tool.execute.before"](call("bash"), papermill), name);
    const output = { title: "t", output: "ok", metadata: {} };
    await hooks["tool.execute.after"]({ ...call("edit"), args: { filePath: "a.py" } }, output);
    assert.equal(output.output, "ok", name);
  }
});

test("a guard that hangs is killed after its timeout and the call goes through", async () => {
  const dir = pairedProject();
  const bin = path.join(dir, "j-cli-hangs");
  fs.writeFileSync(bin, "#!/bin/sh\nexec sleep 600\n", { mode: 0o755 });
  const saved = process.env.JCLI_BIN;
  process.env.JCLI_BIN = bin;
  try {
    assert.equal(await runHook("notebook-exec-guard", { tool_name: "bash", tool_input: { command: "papermill a b" } }, { cwd: dir, timeoutMs: 200 }), null);
  } finally {
    process.env.JCLI_BIN = saved;
  }
});

// ---- Reads through the sidecar's socket (sidecar-client.mjs) against spawning j-cli.

/** Turn the sidecar on and run j-cli through `bin` for this test only. */
function sidecarOn(t, bin) {
  const saved = { JCLI_SIDECAR: process.env.JCLI_SIDECAR, JCLI_BIN: process.env.JCLI_BIN };
  delete process.env.JCLI_SIDECAR;
  process.env.JCLI_BIN = bin;
  t.after(() => Object.assign(process.env, saved));
}

async function outcome(tool, dir, request) {
  try {
    return { result: await tool.execute(request, context(dir)) };
  } catch (e) {
    return { error: e.message };
  }
}

async function spawnedOutcomes(tool, dir, requests) {
  assert.equal(process.env.JCLI_SIDECAR, "off");
  const out = [];
  for (const request of requests) out.push(await outcome(tool, dir, request));
  return out;
}

test("with a sidecar running, every fixture case comes through the socket, equal to spawning j-cli, and spawns nothing", async (t) => {
  const dir = workspace();
  const counting = countingJcli(dir);
  const tool = await readTool();
  const requests = cases.map((c) => c.request);
  const spawned = await spawnedOutcomes(tool, dir, requests);
  assert.ok(spawned.some((o) => o.result?.attachments), "an image case");
  assert.ok(spawned.some((o) => o.result?.metadata.mime_type === "text/html"), "an HTML case");
  assert.ok(spawned.some((o) => o.result?.metadata.output_type === "stream"), "a text case");
  assert.ok(spawned.some((o) => /^CELL_NOT_FOUND: /.test(o.error)), "an error case");
  sidecarOn(t, counting.bin);
  const sidecar = startSidecar(t, dir);
  await outcome(tool, dir, requests[0]); // learns the j-cli version once
  assert.equal(counting.versions(), 1);
  const spawnsBefore = counting.spawns();
  const servedBefore = sidecar.requests();
  const socketed = [];
  for (const request of requests) socketed.push(await outcome(tool, dir, request));
  assert.equal(counting.spawns(), spawnsBefore, `no j-cli was spawned for a read: ${fs.readFileSync(path.join(dir, "spawns.log"), "utf8")}`);
  assert.equal(sidecar.requests(), servedBefore + requests.length + 1, "the sidecar served every read (and one status call)");
  assert.equal(counting.versions(), 1, "the version is learned once");
  assert.deepEqual(socketed, spawned);
});

test("with a sidecar running, a read for a model that takes no images comes through the socket as the same description, and spawns nothing", async (t) => {
  withTextOnly(t, undefined);
  const dir = workspace();
  const counting = countingJcli(dir);
  const hooks = await JcliPlugin({});
  const tool = hooks.tool.read_notebook_output;
  await hooks["chat.params"](chatParams("s", "build", false), {});
  const requests = [PNG, cases.find((c) => c.name === "html").request];
  const spawned = await spawnedOutcomes(tool, dir, requests);
  assert.match(spawned[0].result.output, /not sent: the model takes no image input/);
  sidecarOn(t, counting.bin);
  startSidecar(t, dir);
  await outcome(tool, dir, requests[0]); // learns the j-cli version once
  const spawnsBefore = counting.spawns();
  const socketed = [];
  for (const request of requests) socketed.push(await outcome(tool, dir, request));
  assert.equal(counting.spawns(), spawnsBefore, "no j-cli was spawned for a read");
  assert.deepEqual(socketed, spawned);
});

test("with no sidecar, the read spawns j-cli (which starts one for next time)", async (t) => {
  const dir = workspace();
  const counting = countingJcli(dir);
  const tool = await readTool();
  const request = cases.find((c) => c.name === "png").request;
  const [spawned] = await spawnedOutcomes(tool, dir, [request]);
  sidecarOn(t, counting.bin);
  t.after(() => stopSidecar(dir));
  assert.deepEqual(await outcome(tool, dir, request), spawned);
  assert.equal(counting.spawns(), 1);
  assert.equal(counting.versions(), 0, "no socket, so no version to learn");
});

test("a sidecar of another version is not used: the read spawns j-cli and gives the same result", async (t) => {
  const dir = workspace();
  const counting = countingJcli(dir);
  const tool = await readTool();
  const request = cases.find((c) => c.name === "html").request;
  const [spawned] = await spawnedOutcomes(tool, dir, [request]);
  sidecarOn(t, counting.bin);
  t.after(() => stopSidecar(dir));
  const fake = await otherVersionSidecar(t, dir, sidecarClient);
  assert.deepEqual(await outcome(tool, dir, request), spawned);
  assert.equal(counting.spawns(), 1, "the read fell back to j-cli");
  const version = execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", "import jcli_sidecar; print(jcli_sidecar.__version__)"]).toString().trim();
  assert.equal(counting.versions(), 1, "the plugin learned its j-cli's version to say hello");
  assert.equal(fake.hellos.length, 2, "two hellos: the plugin's, then the spawned j-cli's");
  for (const hello of fake.hellos) assert.deepEqual(hello, { protocol: 1, version, workspace: fs.realpathSync(dir) });
  await fake.close(); // before the sidecar is stopped: `sidecar start` would wait for the fake one to leave its socket
});

/** Connections waiting in the accept queue of `dir`'s sidecar socket (a stopped sidecar accepts none). */
function queued(dir) {
  const socket = path.join(sidecarClient.sidecarRuntimeDir(), `${sidecarClient.sidecarWorkspaceHash(fs.realpathSync(dir))}.sock`);
  const cols = execFileSync("ss", ["-xlH", "src", socket]).toString().trim().split(/\s+/);
  assert.equal(cols[1], "LISTEN");
  return Number(cols[2]);
}

test("a stopped sidecar costs one short hello: the read falls back to j-cli, and no later read connects to it", async (t) => {
  const dir = workspace();
  const counting = countingJcli(dir);
  const tool = await readTool();
  const request = cases.find((c) => c.name === "png").request;
  const [spawned] = await spawnedOutcomes(tool, dir, [request]);
  sidecarOn(t, counting.bin);
  startSidecar(undefined, dir);
  const { pid } = jcliJson(dir, ["sidecar", "status"]);
  process.kill(pid, "SIGSTOP");
  t.after(() => {
    process.kill(pid, "SIGCONT");
    stopSidecar(dir);
  });
  assert.deepEqual(await outcome(tool, dir, request), spawned);
  assert.equal(counting.spawns(), 1, "the plugin gave up on the hello and ran j-cli");
  assert.equal(queued(dir), 2, "the plugin's connection, then the spawned j-cli's (which recorded the sidecar as unresponsive)");
  assert.deepEqual(await outcome(tool, dir, request), spawned);
  assert.equal(counting.spawns(), 2);
  assert.equal(queued(dir), 2, "neither the plugin nor j-cli connected again");
});

test("the hello's deadline follows JCLI_SIDECAR_HELLO_SECONDS as j-cli reads it", () => {
  assert.equal(sidecarClient.sidecarHelloMs({}), sidecarClient.SIDECAR_HELLO_MS);
  assert.equal(sidecarClient.sidecarHelloMs({ JCLI_SIDECAR_HELLO_SECONDS: " 0.25 " }), 250);
  for (const bad of ["0", "-1", "inf", "nan", "121", "1e9", "0x10", "two"]) {
    assert.equal(sidecarClient.sidecarHelloMs({ JCLI_SIDECAR_HELLO_SECONDS: bad }), sidecarClient.SIDECAR_HELLO_MS, bad);
  }
});

test("the workspace hash is the one Python names the socket by", () => {
  const names = ["/home/me/project", "", "x".repeat(128), "x".repeat(129), "/tmp/caf\u00e9 \u{1F600}/" + "y".repeat(300)];
  const script = "import json, sys; from jcli_sidecar.base.runtime import workspace_hash; print(json.dumps([workspace_hash(n) for n in json.load(sys.stdin)]))";
  const python = JSON.parse(execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", script], { input: JSON.stringify(names) }).toString());
  assert.deepEqual(names.map(sidecarClient.sidecarWorkspaceHash), python);
});

test("msgpack: what Python's msgpack packs decodes to what j-cli's JSON gives, and back", () => {
  const script = [
    "import json, sys, msgpack",
    "from jcli_sidecar.base.protocol import dump_json",
    "doc = {'a': [1, -1, 2**40, -(2**40), 2**63 + 5, 0.5, None, True, False], 'b': b'\\x00\\xff' * 40, 's': 'x' * 300, 'm': {str(i): i for i in range(20)}, 'e': 'caf\\u00e9', '__proto__': 1}",
    "sys.stdout.write(json.dumps({'packed': msgpack.packb(doc, use_bin_type=True).hex(), 'json': dump_json(doc).decode()}))",
  ].join("\n");
  const out = JSON.parse(execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", script]).toString());
  const decoded = sidecarClient.sidecarUnpack(Buffer.from(out.packed, "hex"));
  assert.deepEqual(decoded, JSON.parse(out.json));
  assert.ok(Object.hasOwn(decoded, "__proto__"));
  const back = execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", "import sys, msgpack, json; print(json.dumps(msgpack.unpackb(sys.stdin.buffer.read()[4:])))"], {
    input: sidecarClient.sidecarPackFrame({ n: [0, 127, 128, -33, 2 ** 40, 1.5], s: "é".repeat(100), o: { k: null } }),
  });
  assert.deepEqual(JSON.parse(back.toString()), { n: [0, 127, 128, -33, 2 ** 40, 1.5], s: "é".repeat(100), o: { k: null } });
  assert.throws(() => sidecarClient.sidecarUnpack(Buffer.from([0xa2, 0xc3, 0x28])), /./, "text that is not UTF-8 is refused");
});

// ---- One held connection per sidecar (sidecar-client.mjs), for as long as the plugin's process lives.

function jcliVersion() {
  return execFileSync(process.env.JCLI_PYTHON || "python3", ["-c", "import jcli_sidecar; print(jcli_sidecar.__version__)"]).toString().trim();
}

/** The sidecar's open connections, not counting the status call's own. */
function heldConnections(dir) {
  return jcliJson(dir, ["sidecar", "status"]).connections - 1;
}

test("reads share one held connection: one hello, then each read is one request, several at once", async (t) => {
  const dir = workspace();
  sidecarOn(t, countingJcli(dir).bin);
  const sidecar = startSidecar(t, dir);
  const version = jcliVersion();
  const request = cases.find((c) => c.name === "html").request;
  const first = await sidecarClient.sidecarRead({ cwd: dir, request, version });
  assert.ok(first?.doc, "the first read came through the socket");
  const held = heldConnections(dir);
  assert.ok(held >= 1, "the connection stays open after the read");
  const served = sidecar.requests();
  const many = await Promise.all(Array.from({ length: 6 }, () => sidecarClient.sidecarRead({ cwd: dir, request, version })));
  for (const answer of many) assert.deepEqual(answer, first);
  assert.equal(heldConnections(dir), held, "no new connection for the next reads");
  assert.equal(sidecar.requests(), served + 6 + 2, "six reads and two status calls: no hello is a request");
});

test("a held connection the sidecar closed is replaced at the next read, which still comes through the socket", async (t) => {
  const dir = workspace();
  sidecarOn(t, countingJcli(dir).bin);
  startSidecar(t, dir);
  const version = jcliVersion();
  const request = cases.find((c) => c.name === "png").request;
  const before = await sidecarClient.sidecarRead({ cwd: dir, request, version });
  assert.ok(before?.doc);
  stopSidecar(dir);
  const sidecar = startSidecar(t, dir);
  const served = sidecar.requests();
  assert.deepEqual(await sidecarClient.sidecarRead({ cwd: dir, request, version }), before);
  assert.equal(sidecar.requests(), served + 1 + 1, "the new sidecar served the read");
});

test("a read whose caller stops waiting leaves the held connection to the others", async (t) => {
  const dir = workspace();
  sidecarOn(t, countingJcli(dir).bin);
  startSidecar(t, dir);
  const version = jcliVersion();
  const request = cases.find((c) => c.name === "html").request;
  const first = await sidecarClient.sidecarRead({ cwd: dir, request, version });
  const held = heldConnections(dir);
  const stop = new AbortController();
  const stopped = sidecarClient.sidecarRead({ cwd: dir, request, version, signal: stop.signal });
  const other = sidecarClient.sidecarRead({ cwd: dir, request, version });
  stop.abort();
  assert.equal(await stopped, null, "a stopped read falls back (the plugin then reports the stop)");
  assert.deepEqual(await other, first);
  assert.equal(heldConnections(dir), held);
});

test("an idle held connection keeps no process alive", async (t) => {
  const dir = workspace();
  sidecarOn(t, countingJcli(dir).bin);
  startSidecar(t, dir);
  const script = [
    `import * as c from ${JSON.stringify(new URL("../sidecar-client.mjs", import.meta.url).href)};`,
    `const got = await c.sidecarRead({ cwd: ${JSON.stringify(dir)}, request: ${JSON.stringify(cases.find((c) => c.name === "html").request)}, version: ${JSON.stringify(jcliVersion())} });`,
    `process.stdout.write(got?.doc ? "read" : "fell back");`,
  ].join("\n");
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { env: process.env, timeout: 30_000 }).toString();
  assert.equal(out, "read", "the child read through the socket and then exited on its own");
});
