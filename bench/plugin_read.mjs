// Driven by bench/plugin_latency.py: the OpenCode plugin's read, timed inside
// Node, through its two paths against the same warm sidecar, interleaved.
//   socket -- the tool's execute: the sidecar's socket from Node (sidecar-client.mjs)
//   spawn  -- the plugin's spawn path (internals.runJcli + toToolResult): a
//             `j-cli` process, which itself reads through the same sidecar
// argv: <request JSON> <rounds> <warmup>. Prints one JSON document:
// {socket: [ms], spawn: [ms], same: bool, socket_spawns: n}.
import { isDeepStrictEqual } from "node:util";

import JcliPlugin from "../client/plugins/opencode/jcli.js";

const [request, rounds, warmup] = [JSON.parse(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
const { runJcli, toToolResult, RESPONSE_BUDGET } = JcliPlugin.internals;
const tool = (await JcliPlugin({ directory: process.cwd() })).tool.read_notebook_output;
const context = { sessionID: "b", messageID: "b", agent: "build", directory: process.cwd(), worktree: process.cwd(), abort: new AbortController().signal, metadata() {}, ask: async () => {} };

const paths = {
  socket: () => tool.execute(request, context),
  spawn: async () => toToolResult(await runJcli(["-j", "notebook", "output", "--request", "-"], { ...request, file_path: `${process.cwd()}/${request.file_path}`, host: "opencode", max_response_bytes: RESPONSE_BUDGET, agent_text: true }, { cwd: process.cwd() })),
};

async function timed(name) {
  const t0 = process.hrtime.bigint();
  const result = await paths[name]();
  return [Number(process.hrtime.bigint() - t0) / 1e6, result];
}

const samples = { socket: [], spawn: [] };
let same = true;
for (let i = 0; i < warmup + rounds; i++) {
  const order = i % 2 ? ["spawn", "socket"] : ["socket", "spawn"];
  const results = {};
  for (const name of order) {
    const [ms, result] = await timed(name);
    results[name] = result;
    if (i >= warmup) samples[name].push(ms);
  }
  same &&= isDeepStrictEqual(results.socket, results.spawn);
}
process.stdout.write(JSON.stringify({ ...samples, same }));
