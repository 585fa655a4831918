// j-cli for OpenCode: read one saved notebook output in one tool call, and
// run j-cli's guards around OpenCode's own tools.
// managed by j-cli setup (`j-cli setup opencode --remove` deletes this file)
//
// A second tool, wait_notebook_job, waits for background jobs (`exec
// --background`): it spawns `j-cli -j job wait -- IDS` and returns j-cli's
// document; a stop sends j-cli SIGTERM and returns the snapshot it answers.
//
// A thin translation layer: the request goes straight to the workspace's
// j-cli sidecar over its Unix socket when one runs and is the spawned j-cli's
// version (sidecar-client.mjs, inlined here by setup; docs/protocol.md), else
// to `j-cli -j notebook output --request -` as JSON on stdin (never spliced into a shell string), and the
// envelope comes back as an OpenCode tool result. Text and HTML go in
// `output` verbatim; an image goes in `attachments` as a data URL, and its
// base64 never appears in `output`, `title` or `metadata`. The title (and an
// image's output) is the caption j-cli builds for the envelope when asked
// with `agent_text: true`, the line every j-cli client shows; nothing here
// words it. A coded j-cli error becomes a thrown Error carrying the code and message.
//
// A model that takes no images: OpenCode tells a plugin the model of every
// request it sends in `chat.params` (`model.capabilities.input.image`, from
// the model's `modalities` in the config or OpenCode's catalog), keyed here
// by session and agent, the two the read tool's context names. When that
// model takes no images the read asks j-cli for `text_only: true`, and j-cli
// (not this file) tells the image as text: what it is, its size, where it is,
// why it was not sent, how to read a text form. JCLI_TEXT_ONLY overrides
// what OpenCode said: on (1, true, yes) always, off (0, false, no, disabled)
// never. When OpenCode has said nothing for the session (no model request
// yet, as in `opencode debug agent --tool`) the image is sent.
//
// The guards (docs/guards.md) hold no logic here: `tool.execute.before` and
// `tool.execute.after` pass the call to `j-cli _hooks NAME --platform
// opencode` as `{tool_name, tool_input, cwd}` on stdin. A deny (exit 2)
// becomes a thrown Error carrying j-cli's reason, which is how an OpenCode
// plugin refuses a tool call; a post-edit context is appended to the tool's
// output, which the model reads. Anything else (j-cli missing, a crash, a
// timeout, an answer we cannot read) lets the call through: a broken guard
// must never stop the agent's work.
//
// The guards need nothing but Node's own modules. The read tool's argument
// schema comes from `@opencode-ai/plugin` (its `tool.schema`), which OpenCode
// installs into each config dir at start-up and which may be missing (offline,
// behind a proxy): it is imported when the plugin starts, never at the top, so
// its absence costs the read tool only. The tool is then still registered,
// with no arguments, and answers READ_TOOL_UNAVAILABLE naming the package, and
// a warning says the same once on stderr; the guards run either way.
//
// OpenCode calls every function this module exports as a plugin and refuses
// any other export, so the plugin is the only export. Its helpers hang off it
// as `JcliPlugin.internals` for the unit tests.
import { spawn } from "node:child_process";
import path from "node:path";
import { SIDECAR_OFF_VALUES, sidecarReader } from "../sidecar-client.mjs"; // inlined by j-cli setup

// How to start j-cli: plain `j-cli` from PATH in a project's shared copy, this
// install's absolute interpreter in a user's own (JCLI_BIN wins over both).
const INSTALLED_COMMAND = ["j-cli"] // set by j-cli setup

/** Largest response we ask j-cli for (its --max-response-bytes). */
const RESPONSE_BUDGET = 16 * 1024 * 1024;
/** Stdout beyond this is cut and refused (the budget plus room for the envelope). */
const STDOUT_LIMIT = RESPONSE_BUDGET + 64 * 1024;
const STDERR_LIMIT = 64 * 1024;

const BASE64_RUN = /[A-Za-z0-9+/]{40,}={0,2}/g;

function jcliCommand() {
  return process.env.JCLI_BIN ? [process.env.JCLI_BIN] : INSTALLED_COMMAND;
}

function unavailable(command, why) {
  return new Error(
    `JCLI_UNAVAILABLE: cannot run j-cli (${command.join(" ")}: ${why}); ` +
      "install j-cli on PATH, re-run `j-cli setup opencode`, or set JCLI_BIN to the absolute path of j-cli",
  );
}

/**
 * Run j-cli privately with `request` on stdin; resolves the parsed JSON document.
 * An abort kills j-cli (SIGKILL) and rejects ABORTED, unless `onStop` is given:
 * then j-cli gets SIGTERM, and its coded answer on stderr goes to `onStop`,
 * whose value (if not undefined) resolves the call.
 */
function runJcli(args, request, { cwd, signal, stdoutLimit = STDOUT_LIMIT, onStop } = {}) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new Error("ABORTED: the tool call was cancelled"));
      return;
    }
    const command = jcliCommand();
    const child = spawn(command[0], [...command.slice(1), ...args], { cwd, stdio: ["pipe", "pipe", "pipe"], shell: false });
    const out = [];
    const err = [];
    let outBytes = 0;
    let errBytes = 0;
    let failure = null;
    let stopping = false;
    const onAbort = () => {
      if (onStop) {
        stopping = true; // j-cli answers a stop itself (a snapshot on stderr)
        child.kill("SIGTERM");
        return;
      }
      failure = new Error("ABORTED: the tool call was cancelled");
      child.kill("SIGKILL");
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk) => {
      outBytes += chunk.length;
      if (outBytes > stdoutLimit) {
        if (!failure) failure = new Error(`OUTPUT_TOO_LARGE: j-cli answered more than ${stdoutLimit} bytes; read a text window (offset/limit)`);
        child.kill("SIGKILL");
        return;
      }
      out.push(chunk);
    });
    child.stderr.on("data", (chunk) => {
      if (errBytes < STDERR_LIMIT) err.push(chunk);
      errBytes += chunk.length;
    });
    child.on("error", (e) => {
      failure = failure || unavailable(command, e.code || e.message);
    });
    child.on("close", (code, killedBy) => {
      signal?.removeEventListener("abort", onAbort);
      if (failure) return reject(failure);
      if (code !== 0) {
        const text = Buffer.concat(err).toString("utf8");
        let coded = null;
        try {
          coded = JSON.parse(text);
        } catch {
          coded = null;
        }
        if (stopping) {
          const value = coded && typeof coded.code === "string" ? onStop(coded) : undefined;
          return value === undefined ? reject(new Error("ABORTED: the tool call was cancelled")) : resolve(value);
        }
        if (coded && typeof coded.code === "string") {
          return reject(new Error(`${coded.code}: ${coded.message}`.replace(BASE64_RUN, "[data]")));
        }
        const how = code === null ? `killed by ${killedBy}` : `exited with ${code} without a coded answer`;
        const last = text.trim().split("\n").pop() || "";
        return reject(unavailable(command, `${how}${last ? `: ${last.slice(0, 200)}` : ""}`.replace(BASE64_RUN, "[data]")));
      }
      const body = Buffer.concat(out).toString("utf8");
      try {
        resolve(JSON.parse(body));
      } catch {
        reject(new Error("PROTOCOL_ERROR: j-cli's answer was not complete JSON"));
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(request));
  });
}

/** Run `command --version` in `cwd`; resolves its stdout, or null. */
function versionText(command, cwd) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(command[0], [...command.slice(1), "--version"], { cwd, stdio: ["ignore", "pipe", "ignore"], shell: false });
    } catch {
      resolve(null);
      return;
    }
    const out = [];
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.on("error", () => resolve(null));
    child.on("close", (code) => resolve(code === 0 ? Buffer.concat(out).toString("utf8").slice(0, 4096) : null));
  });
}

/** Reads through the sidecar; the j-cli version it must match is learned once per command. */
const viaSidecar = sidecarReader((key) => versionText(key.split("\0"), process.cwd()));

/**
 * Split what j-cli answered into the envelope and the caption j-cli built for
 * it (asked with `agent_text: true`): the one line every j-cli client shows
 * beside the data. Nothing here words anything itself.
 */
function captioned(doc) {
  const { agent_text: shown, ...envelope } = doc;
  if (typeof shown?.caption !== "string") throw new Error("PROTOCOL_ERROR: j-cli's answer carries no agent_text caption");
  return { envelope, caption: shown.caption };
}

/** Translate a j-cli read envelope into an OpenCode ToolResult. */
function toToolResult(doc) {
  const { envelope, caption } = captioned(doc);
  if (Array.isArray(envelope.outputs)) {
    return { title: caption, output: JSON.stringify(envelope, null, 2), metadata: { outputs: envelope.output_count } };
  }
  if (envelope.stream) {
    const b = envelope.stream;
    return { title: caption, output: b.data, metadata: { output_type: "stream", name: b.name } };
  }
  if (envelope.error) {
    const b = envelope.error;
    const output = "data" in b ? b.data : JSON.stringify(b, null, 2);
    return { title: caption, output, metadata: { output_type: "error", ename: b.ename } };
  }
  const sel = envelope.selected;
  if (sel.encoding === "base64") {
    return {
      title: caption,
      output: caption,
      metadata: { mime_type: sel.mime_type, bytes: sel.bytes },
      attachments: [{ type: "file", mime: sel.mime_type, url: `data:${sel.mime_type};base64,${sel.data}` }],
    };
  }
  if (!("data" in sel)) {
    // An image told as text (text_only): the caption says what it is, where, why it was not sent, and how to read a text form.
    return { title: caption, output: caption, metadata: { mime_type: sel.mime_type, bytes: sel.bytes, withheld: sel.withheld } };
  }
  const output = sel.encoding === "json" ? JSON.stringify(sel.data, null, 2) : sel.data;
  return { title: caption, output, metadata: { mime_type: sel.mime_type } };
}

/** Sessions whose model this plugin remembers (the oldest is forgotten first). */
const REMEMBERED_SESSIONS = 256;

/**
 * What OpenCode said each session's model takes, from `chat.params`:
 * `note(input)` records `input.model.capabilities.input.image` under the
 * input's session and agent (the last request's model wins), and
 * `takesImages(sessionID, agent)` answers true, false, or undefined when
 * OpenCode has said nothing for them.
 */
function modelInputs(limit = REMEMBERED_SESSIONS) {
  const seen = new Map();
  const key = (sessionID, agent) => `${sessionID}\0${agent ?? ""}`;
  return {
    note(input) {
      const image = input?.model?.capabilities?.input?.image;
      if (typeof image !== "boolean" || typeof input.sessionID !== "string") return;
      const k = key(input.sessionID, input.agent);
      seen.delete(k);
      seen.set(k, image);
      if (seen.size > limit) seen.delete(seen.keys().next().value);
    },
    takesImages(sessionID, agent) {
      return typeof sessionID === "string" ? seen.get(key(sessionID, agent)) : undefined;
    },
  };
}

/** JCLI_TEXT_ONLY: true (on), false (off), or null when unset or blank. */
function textOnlySetting(env = process.env) {
  const raw = String(env.JCLI_TEXT_ONLY ?? "").trim().toLowerCase();
  return raw === "" ? null : !SIDECAR_OFF_VALUES.has(raw); // what turns a switch off, as j-cli reads it
}

/** Whether a read in tool `context` asks j-cli for `text_only`: JCLI_TEXT_ONLY when set, else what OpenCode said of the model. */
function wantsTextOnly(models, context, env = process.env) {
  const forced = textOnlySetting(env);
  if (forced !== null) return forced;
  return models.takesImages(context?.sessionID, context?.agent) === false;
}

/** How long one guard may take before the call goes through unguarded. */
const HOOK_TIMEOUT_MS = 30_000;

// ---- begin generated: guards (`make docs` writes it from jcli.setup.generated; edit the source)
/** Which guards run before and after which OpenCode tools: its host table entry and j-cli's guard registry. */
const SHELL_TOOLS = new Set(["bash"]);
const EDIT_TOOLS = new Set(["edit", "write", "patch", "apply_patch", "multiedit"]);

function hooksBefore(toolName) {
  if (SHELL_TOOLS.has(toolName)) return ["notebook-exec-guard", "python-run-guard"];
  if (EDIT_TOOLS.has(toolName)) return ["notebook-edit-guard", "pair-drift-guard-pre"];
  return [];
}

function hooksAfter(toolName) {
  return EDIT_TOOLS.has(toolName) ? ["pair-drift-guard-post"] : [];
}
// ---- end generated: guards

/**
 * Run `j-cli _hooks NAME --platform opencode` with `payload` on stdin.
 * Resolves `{ code, stdout, stderr }`, or `null` when j-cli could not be run
 * or did not answer in time; never rejects.
 */
function runHook(name, payload, { cwd, timeoutMs = HOOK_TIMEOUT_MS } = {}) {
  return new Promise((resolve) => {
    const command = jcliCommand();
    let child;
    try {
      child = spawn(command[0], [...command.slice(1), "_hooks", name, "--platform", "opencode"], { cwd, stdio: ["pipe", "pipe", "pipe"], shell: false });
    } catch {
      resolve(null);
      return;
    }
    const out = [];
    const err = [];
    let settled = false;
    const finish = (value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(value);
    };
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish(null);
    }, timeoutMs);
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.stderr.on("data", (chunk) => err.push(chunk));
    child.on("error", () => finish(null));
    child.on("close", (code) => {
      finish({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

function hookOutput(stdout) {
  try {
    const doc = JSON.parse(stdout);
    return doc && typeof doc === "object" ? doc.hookSpecificOutput || null : null;
  } catch {
    return null;
  }
}

/**
 * The reason of a deny, or null (allow). A deny is exit 2 with j-cli's
 * decision on stdout; a bare exit 2 (an old j-cli without `_hooks` fails
 * with a usage error, also 2) is not one.
 */
function denyReason(answer) {
  if (!answer || answer.code !== 2) return null;
  const decision = hookOutput(answer.stdout);
  if (decision?.permissionDecision !== "deny") return null;
  const reason = decision.permissionDecisionReason;
  return typeof reason === "string" && reason ? reason : answer.stderr.trim() || "refused by j-cli";
}

/** The context a post hook hands the model, or null. */
function postContext(answer) {
  if (!answer || answer.code !== 0) return null;
  const context = hookOutput(answer.stdout)?.additionalContext;
  return typeof context === "string" && context ? context : null;
}

/** The payload j-cli's hook entry reads (docs/guards.md, "The contract per host"). */
function hookPayload(toolName, args, directory) {
  return { tool_name: toolName, tool_input: args ?? {}, cwd: directory };
}

/** OpenCode's `tool.execute.before`: throw j-cli's reason to refuse the call. */
async function guardBefore(input, output, directory) {
  for (const name of hooksBefore(input.tool)) {
    const answer = await runHook(name, hookPayload(input.tool, output.args, directory), { cwd: directory });
    const reason = denyReason(answer);
    if (reason !== null) throw new Error(`j-cli ${name}: ${reason}`);
  }
}

/** OpenCode's `tool.execute.after`: append j-cli's context to the output the model reads. */
async function guardAfter(input, output, directory) {
  for (const name of hooksAfter(input.tool)) {
    const context = postContext(await runHook(name, hookPayload(input.tool, input.args, directory), { cwd: directory }));
    if (context !== null && output && typeof output.output === "string") output.output += `\n\n[j-cli] ${context}`;
  }
}

/** The package the read tool's schema comes from; OpenCode installs it beside the plugin. */
const TOOL_PACKAGE = "@opencode-ai/plugin";

/** `@opencode-ai/plugin`'s `tool` helper, or the reason it cannot be loaded. */
async function loadToolHelper() {
  try {
    const module = await import(TOOL_PACKAGE);
    if (typeof module?.tool === "function" && module.tool.schema) return { tool: module.tool };
    return { missing: `${TOOL_PACKAGE} has no tool() helper` };
  } catch (err) {
    return { missing: `${TOOL_PACKAGE} cannot be loaded (${String(err?.message || err).split("\n")[0]})` };
  }
}

/** The read tool's stand-in when its package is missing: it answers why, on every call. */
function unavailableReadTool(why) {
  const fix =
    "OpenCode installs it into its config dir when it starts, which needs the package registry: start OpenCode " +
    "once online, or install it there with npm. j-cli's guards are unaffected; `j-cli notebook output` reads the same outputs from a shell";
  return {
    description: `Read a saved Jupyter notebook output. Unavailable here: ${why}.`,
    args: {},
    async execute() {
      throw new Error(`READ_TOOL_UNAVAILABLE: read_notebook_output cannot load: ${why}; ${fix}`);
    },
  };
}

/** The `read_notebook_output` tool, built with `tool` from `@opencode-ai/plugin`. */
function readNotebookOutputTool(tool, models) {
  return tool({
    description:
      "Read a saved Jupyter notebook output in one call. Without output_index: the cell's outputs and MIME types. " +
      "With it: that output, text and HTML verbatim, images as attachments (told as text to a model that takes no images). " +
      "Works for .ipynb and py:percent .py pairs.",
    // The fields, types, bounds and descriptions of j-cli's one request spec
    // (jcli_sidecar/read/request_spec.py); a test fails when this drifts from it.
    args: {
      file_path: tool.schema.string().describe("An .ipynb, or a py:percent .py paired with one; relative to the session directory."),
      cell_index: tool.schema.number().int().min(0).describe("0-based cell index in file_path."),
      output_index: tool.schema.number().int().min(0).optional().describe("0-based index in the cell's outputs; omit to list them."),
      mime_type: tool.schema.string().optional().describe("Exactly this representation (default: image, HTML, Markdown, text, JSON, SVG)."),
      offset: tool.schema.number().int().min(0).optional().describe("Text window start, in characters (default 0)."),
      limit: tool.schema.number().int().min(1).optional().describe("Text window length, in characters."),
      as_mime_type: tool.schema
        .enum(["image/png", "image/jpeg", "image/webp"])
        .optional()
        .describe("Convert the selected image to this type, or render an SVG or a chart (Vega, Vega-Lite, Plotly) as an image."),
      max_edge: tool.schema.number().int().min(1).optional().describe("Downscale an image whose long edge is over this many pixels."),
      max_pixels: tool.schema.number().int().min(1).optional().describe("Downscale an image of more pixels than this."),
      max_bytes: tool.schema.number().int().min(1).optional().describe("Shrink an image larger than this many bytes."),
    },
    async execute(args, context) {
      const request = {
        ...args,
        file_path: path.resolve(context.directory, args.file_path),
        host: "opencode",
        max_response_bytes: RESPONSE_BUDGET,
        agent_text: true, // j-cli builds the caption this tool shows
        text_only: wantsTextOnly(models, context) || undefined, // j-cli tells the image as text
      };
      for (const key of Object.keys(request)) if (request[key] === undefined) delete request[key];
      const pending = viaSidecar({ key: jcliCommand().join("\0"), cwd: context.directory, request, signal: context.abort });
      const answer = pending === null ? null : await pending; // null at once when no sidecar may be used
      if (answer?.doc) return toToolResult(answer.doc);
      if (answer?.error) throw new Error(`${answer.error.code}: ${answer.error.message}`.replace(BASE64_RUN, "[data]"));
      const doc = await runJcli(["-j", "notebook", "output", "--request", "-"], request, {
        cwd: context.directory,
        signal: context.abort,
      });
      return toToolResult(doc);
    },
  });
}

/** The longest wait one call may ask for, in seconds (j-cli's own default is 100). */
const MAX_WAIT_SECONDS = 3600;

/** `j-cli -j job wait` arguments for the tool's arguments (ids as data, never through a shell). */
function waitArgs(args) {
  const ids = args?.job_ids;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === "string" && id.length > 0)) {
    throw new Error("USAGE_ERROR: job_ids must be a non-empty array of job ids (as `exec --background` printed them)");
  }
  const argv = ["-j", "job", "wait"];
  const timeout = args.timeout_seconds;
  if (timeout !== undefined) {
    if (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout < 1 || timeout > MAX_WAIT_SECONDS) {
      throw new Error(`USAGE_ERROR: timeout_seconds must be a number of seconds from 1 to ${MAX_WAIT_SECONDS}`);
    }
    argv.push("--timeout", String(timeout));
  }
  return [...argv, "--", ...ids];
}

/**
 * Translate `j-cli -j job wait`'s document into an OpenCode ToolResult: the
 * document as j-cli printed it (the model reads the same JSON a shell call
 * gives), titled by what it says. A stopped wait is the same snapshot, with
 * `stopped: true`: the jobs run on.
 */
function toWaitResult(doc) {
  const { schema_version: _version, status: _status, code: _code, message: _message, signal: _signal, ...wait } = doc;
  const ended = Array.isArray(wait.ended) ? wait.ended : [];
  const pending = Array.isArray(wait.pending) ? wait.pending : [];
  const states = Object.fromEntries((Array.isArray(wait.jobs) ? wait.jobs : []).map((job) => [job.job_id, job.state]));
  const title =
    wait.stopped ? `wait stopped; still running: ${pending.join(", ")} (they run on)`
    : wait.timed_out ? `still running after ${Number(Number(wait.waited_seconds).toFixed(1))} s: ${pending.join(", ")}; wait again`
    : `ended: ${ended.map((id) => `${id} ${states[id] ?? ""}`.trim()).join(", ")}`;
  return {
    title,
    output: JSON.stringify(wait),
    metadata: { timed_out: Boolean(wait.timed_out), stopped: Boolean(wait.stopped), ended, pending, failed: wait.failed ?? null },
  };
}

/** The snapshot a stopped `job wait` carries in its INTERRUPTED answer, or undefined. */
function stoppedSnapshot(coded) {
  return coded.code === "INTERRUPTED" && Array.isArray(coded.jobs) ? { ...coded, stopped: true } : undefined;
}

/** The `wait_notebook_job` tool: `j-cli -j job wait IDS --timeout S`, translated. */
function waitNotebookJobTool(tool) {
  return tool({
    description:
      "Wait for background j-cli jobs (started with `j-cli exec SESSION ... --background`, which prints the job_id). " +
      "Returns as soon as one of them ends (its state and result), or when timeout_seconds pass with timed_out: true " +
      "and the jobs as they stand: then call it again. The jobs run on whatever happens to the wait. " +
      "Read a notebook job's images with read_notebook_output.",
    args: {
      job_ids: tool.schema.array(tool.schema.string().min(1)).min(1).describe("The job ids (or unique prefixes) to wait for; returns on the first to end."),
      timeout_seconds: tool.schema
        .number()
        .min(1)
        .max(MAX_WAIT_SECONDS)
        .optional()
        .describe("Return after this many seconds with timed_out: true (default 100)."),
    },
    async execute(args, context) {
      const doc = await runJcli(waitArgs(args), {}, { cwd: context.directory, signal: context.abort, onStop: stoppedSnapshot });
      return toWaitResult(doc);
    },
  });
}

const JcliPlugin = async (input) => {
  const directory = input?.directory || process.cwd();
  const helper = await loadToolHelper();
  if (helper.missing) console.warn(`[j-cli] read_notebook_output is unavailable: ${helper.missing}; the guards still run`);
  const models = modelInputs();
  return {
    "chat.params": async (chatInput) => models.note(chatInput), // reads the model OpenCode is about to ask; changes nothing
    "tool.execute.before": (toolInput, output) => guardBefore(toolInput, output, directory),
    "tool.execute.after": (toolInput, output) => guardAfter(toolInput, output, directory),
    tool: {
      read_notebook_output: helper.tool ? readNotebookOutputTool(helper.tool, models) : unavailableReadTool(helper.missing),
      ...(helper.tool ? { wait_notebook_job: waitNotebookJobTool(helper.tool) } : {}),
    },
  };
};

JcliPlugin.internals = { RESPONSE_BUDGET, STDOUT_LIMIT, HOOK_TIMEOUT_MS, MAX_WAIT_SECONDS, runJcli, runHook, toToolResult, toWaitResult, waitArgs, modelInputs, wantsTextOnly };

export default JcliPlugin;
