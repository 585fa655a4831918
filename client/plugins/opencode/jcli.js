// j-cli for OpenCode: read one saved notebook output in one tool call.
// managed by j-cli setup (`j-cli setup opencode --remove` deletes this file)
//
// A thin translation layer: the request goes to `j-cli -j notebook output
// --request -` as JSON on stdin (never spliced into a shell string), and the
// envelope comes back as an OpenCode tool result. Text and HTML go in
// `output` verbatim; an image goes in `attachments` as a data URL, and its
// base64 never appears in `output`, `title` or `metadata`. A coded j-cli
// error becomes a thrown Error carrying the code and message.
//
// OpenCode calls every function this module exports as a plugin and refuses
// any other export, so the plugin is the only export. Its helpers hang off it
// as `JcliPlugin.internals` for the unit tests.
import { spawn } from "node:child_process";
import path from "node:path";
import { tool } from "@opencode-ai/plugin";

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

/** Run j-cli privately with `request` on stdin; resolves the parsed JSON document. */
function runJcli(args, request, { cwd, signal, stdoutLimit = STDOUT_LIMIT } = {}) {
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
    const onAbort = () => {
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

/** Where the data came from: the one label j-cli puts in every envelope. */
function where(doc) {
  return String((doc.source || {}).label);
}

function windowNote(block) {
  if (!block || !block.truncated) return "";
  const end = block.offset + block.returned_characters;
  const more = block.next_offset != null ? `, continue with offset=${block.next_offset}` : "";
  return ` (characters ${block.offset}-${end} of ${block.total_characters}${more})`;
}

/** Translate a j-cli read envelope into an OpenCode ToolResult. */
function toToolResult(doc) {
  const from = where(doc);
  if (Array.isArray(doc.outputs)) {
    return { title: `outputs of ${from}`, output: JSON.stringify(doc, null, 2), metadata: { outputs: doc.output_count } };
  }
  if (doc.stream) {
    const b = doc.stream;
    return { title: `${b.name} from ${from}${windowNote(b)}`, output: b.data, metadata: { output_type: "stream", name: b.name } };
  }
  if (doc.error) {
    const b = doc.error;
    const output = "data" in b ? b.data : JSON.stringify(b, null, 2);
    return { title: `error ${b.ename} from ${from}${windowNote(b)}`, output, metadata: { output_type: "error", ename: b.ename } };
  }
  const sel = doc.selected;
  if (sel.encoding === "base64") {
    const dims = (sel.width ? `, ${sel.width}x${sel.height} px` : "") + (sel.note ? `; ${sel.note}` : "");
    return {
      title: `${sel.mime_type} from ${from}`,
      output: `[${sel.mime_type}, ${sel.bytes} bytes${dims}, attached]`,
      metadata: { mime_type: sel.mime_type, bytes: sel.bytes },
      attachments: [{ type: "file", mime: sel.mime_type, url: `data:${sel.mime_type};base64,${sel.data}` }],
    };
  }
  const output = sel.encoding === "json" ? JSON.stringify(sel.data, null, 2) : sel.data;
  return { title: `${sel.mime_type} from ${from}${windowNote(sel)}`, output, metadata: { mime_type: sel.mime_type } };
}

const JcliPlugin = async () => ({
  tool: {
    read_notebook_output: tool({
      description:
        "Read a saved Jupyter notebook output in one call. Without output_index: the cell's outputs and MIME types. " +
        "With it: that output, text and HTML verbatim, images as attachments. Works for .ipynb and py:percent .py pairs.",
      // The fields, types, bounds and descriptions of j-cli's one request spec
      // (jcli_sidecar/request_spec.py); a test fails when this drifts from it.
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
          .describe("Convert the selected image to this type, or render an SVG (mime_type image/svg+xml) as an image."),
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
        };
        for (const key of Object.keys(request)) if (request[key] === undefined) delete request[key];
        const doc = await runJcli(["-j", "notebook", "output", "--request", "-"], request, {
          cwd: context.directory,
          signal: context.abort,
        });
        return toToolResult(doc);
      },
    }),
  },
});

JcliPlugin.internals = { RESPONSE_BUDGET, STDOUT_LIMIT, runJcli, toToolResult };

export default JcliPlugin;
