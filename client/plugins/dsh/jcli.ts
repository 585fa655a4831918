// j-cli for DSH: read one saved notebook output in one tool call, and run
// j-cli's guards around DSH's own tools.
// managed by j-cli setup (`j-cli setup dsh --remove` deletes this file)
//
// A thin translation layer, in one file with no runtime import of any DSH
// package. The request goes straight to the workspace's j-cli sidecar over
// its Unix socket when one runs and is the spawned j-cli's version
// (sidecar-client.mjs, inlined here by setup; docs/protocol.md), else to
// `j-cli -j notebook output --request -` through
// `ctx.shell`, as JSON on stdin: the command string holds only the quoted
// j-cli executable, never an argument. Cancellation, timeout, exit status and
// stdout completeness are checked before the answer is parsed.
//
// Text and HTML come back verbatim, and the line beside them (always for an
// image, for text when its window is cut) is the caption j-cli builds when
// asked with `agent_text: true`, the line every j-cli client shows; nothing
// here words it. An image is saved with
// `ctx.attachments.saveImage` and the tool's value carries only its
// attachment reference, so programmatic (code-mode) callers never see base64;
// `output.render` turns that reference into an image block for the model.
// A stop (`exec.signal` aborted) throws: the host discards any success that
// settles after an abort, and a thrown error is what reaches the model.
//
// A model that takes no image input must never get one: DSH refuses every
// later request of a session whose history holds an image such a model
// cannot take. So each read asks j-cli for `text_only` (the image told as
// text: what, size, where, why, its text forms) unless the model is known to
// take images. What DSH tells a tool: the calling agent (`exec.agent`), whose
// session records the route of its latest model request
// (`session.requestContext()`), and `ctx.llm.resolveModelInfo(provider,
// model)`, whose `inputModalities` the route's adapter declares (absent:
// unknown). The row's `config.textOnly` (true or false) overrides; see
// textOnlyFor for the rest.

// A second tool, wait_notebook_job, waits for background jobs (`exec
// --background`): `j-cli -j job wait --timeout S -- IDS` through `ctx.shell`
// (each id checked against the job id alphabet first), j-cli's document as
// the value. A stop throws JOB_WAIT_STOPPED, for the reason above; the jobs
// run on.
//
// The guards (docs/guards.md) hold no logic here: a `tools/pre-execute`
// listener passes each `bash`, `edit` and `write` call to `j-cli _hooks NAME
// --platform dsh` (through `ctx.shell`, the payload on stdin) and turns a
// deny (exit 2) into the registry's `{kind: 'deny', reason}`; a
// `tools/post-execute` listener appends the post-edit hook's context to the
// result's content, which the model reads. Anything else (j-cli missing, a
// crash, a timeout, an answer we cannot read) lets the call through. The
// guards are registered first and need nothing but the shell, so a read tool
// the host refuses costs the read tool only (a warning says why).
//
// ---- The host surface this file uses (structural; checked against the
// ---- transcribed host types by dsh-host.conformance.ts).

type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif'

export interface ImageRef {
  attachmentId: string
  mediaType: ImageMediaType
  bytes: number
  width: number
  height: number
  name?: string
}

export type Block = { type: 'text'; text: string } | { type: 'image'; attachment: ImageRef; alt?: string }

export interface ShellRequest {
  command: string
  timeoutMs?: number
  stdoutMaxBytes?: number
  signal?: AbortSignal
  stdin?: string
  env?: Record<string, string>
}

export interface ShellResult {
  exitCode: number | null
  signal: string | null
  timedOut: boolean
  aborted: boolean
  timeoutMs: number
  stdout: { text: string; truncated: boolean }
  stderr: { text: string; truncated: boolean }
}

interface Shell<Spec> {
  resolve(request: ShellRequest): Spec
  run(spec: Spec): Promise<ShellResult>
}

export interface SaveImageInput {
  data: Uint8Array
  mediaType: ImageMediaType
  name?: string
}

interface Attachments {
  saveImage(input: SaveImageInput): Promise<ImageRef>
}

/** What the plugin reads of the calling DSH agent: the route of its session's latest model request. */
export interface AgentView {
  readonly session: { requestContext(): { provider: string; model: string } | undefined }
}

interface RunContext {
  readonly signal: AbortSignal
  readonly agent?: unknown
}

/** `ctx.llm`, read at call time (`ctx.get('llm')`): what a model route's adapter declares of a model. */
export interface Llm {
  resolveModelInfo(provider: string, model: string, signal?: AbortSignal): Promise<{ readonly inputModalities?: readonly string[] }>
}

/** JSON values, as the host's canonical tool value. */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** The JSON Schema subset the host accepts for `output.schema`. */
interface Schema {
  type?: 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'array' | 'object'
  oneOf?: Schema[]
  properties?: Record<string, Schema>
  required?: string[]
  additionalProperties?: boolean
  items?: Schema
  enum?: (string | number | boolean | null)[]
  description?: string
}

export interface ReadToolDefinition {
  readonly name: string
  readonly description: string
  readonly parameters: Record<string, unknown>
  readonly timeoutMs: number
  readonly output: {
    readonly schema: Schema
    render(args: unknown, value: Json): Block[]
  }
  isConcurrencySafe(args: unknown): boolean
  execute(args: unknown, exec: RunContext): Promise<ReadValue>
}

/** The part of a tool call the guards read (the registry's `ToolExecution`). */
export interface ToolCall {
  readonly name: string
  readonly arguments: unknown
  readonly signal: AbortSignal
}

export type PreDecision = { kind: 'allow' } | { kind: 'deny'; reason: string } | { kind: 'ask'; reason?: string }
/** Generic over the content block type: the host brands attachment ids, which the guards never touch. */
export type PostDecision<B = Block> =
  | { kind: 'accept'; content?: B[]; value?: Json; additionalContexts?: unknown[] }
  | { kind: 'block'; feedback: B[]; additionalContexts?: unknown[] }
export interface ToolResultView<B = Block> {
  readonly isError: boolean
  readonly content: readonly B[]
}
export type PreListener = (exec: ToolCall, next: () => Promise<PreDecision>) => Promise<PreDecision>
export type PostListener<B = Block> = (exec: ToolCall, result: ToolResultView<B>, next: () => Promise<PostDecision<B>>) => Promise<PostDecision<B>>

interface PluginContext<Spec> {
  tools: { register(definition: ReadToolDefinition): () => void }
  on(name: 'tools/pre-execute', listener: PreListener): () => void
  on(name: 'tools/post-execute', listener: PostListener): () => void
  shell: Shell<Spec>
  attachments: Attachments
  /** A service the plugin does not wait for: `llm` is read when a call needs it (undefined when absent). */
  get(name: 'llm'): Llm | undefined
}

export interface Config {
  /** The j-cli executable (default: `$JCLI_BIN`, else the command `j-cli setup` recorded). */
  bin?: string
  /** How long one read may take, in milliseconds. */
  timeoutMs?: number
  /**
   * Tell images as text (true) or send them (false) whatever the model; unset:
   * by what DSH says of the calling model (textOnlyFor).
   */
  textOnly?: boolean
}

import { sidecarReader } from '../sidecar-client.mjs' // inlined by j-cli setup

// ---- The plugin.

export const name = 'j-cli'
export const inject = ['tools', 'shell', 'attachments']

// How to start j-cli: plain `j-cli` from PATH in a project's shared copy, this
// install's absolute interpreter in a user's own (config.bin, then JCLI_BIN, win).
const INSTALLED_COMMAND: readonly string[] = ["j-cli"] // set by j-cli setup

/** Largest response asked of j-cli (its `max_response_bytes`). */
export const RESPONSE_BUDGET = 16 * 1024 * 1024
/** Stdout captured from j-cli: the budget plus room for the envelope. */
export const STDOUT_LIMIT = RESPONSE_BUDGET + 64 * 1024
export const DEFAULT_TIMEOUT_MS = 60_000

/** Request keys the model may set; everything else is the plugin's. */
const REQUEST_KEYS = ['file_path', 'cell_index', 'output_index', 'mime_type', 'offset', 'limit', 'as_mime_type', 'max_edge', 'max_pixels', 'max_bytes'] as const
const IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/webp', 'image/gif']
const BASE64_RUN = /[A-Za-z0-9+/]{40,}={0,2}/g

/**
 * The canonical value of one call (what code-mode programs receive).
 * `caption` and `window` are j-cli's own strings (its `agent_text`): the line
 * every j-cli client shows beside the data, and a cut window's part of it.
 */
export type ReadValue =
  | { kind: 'outputs'; source: string; text: string }
  | { kind: 'text'; source: string; mime_type: string; text: string; caption: string; window?: string }
  | { kind: 'image'; source: string; mime_type: string; image: ImageRef; caption: string; note?: string }
  | { kind: 'withheld'; source: string; mime_type: string; caption: string; withheld: string }

const STRING: Schema = { type: 'string' }
const VALUE_SCHEMA: Schema = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'source', 'text'],
      properties: { kind: { type: 'string', enum: ['outputs'] }, source: STRING, text: STRING },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'source', 'mime_type', 'text', 'caption'],
      properties: { kind: { type: 'string', enum: ['text'] }, source: STRING, mime_type: STRING, text: STRING, caption: STRING, window: STRING },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'source', 'mime_type', 'image', 'caption'],
      properties: {
        kind: { type: 'string', enum: ['image'] },
        source: STRING,
        mime_type: STRING,
        caption: STRING,
        note: STRING,
        image: {
          type: 'object',
          additionalProperties: false,
          required: ['attachmentId', 'mediaType', 'bytes', 'width', 'height'],
          properties: {
            attachmentId: STRING,
            mediaType: { type: 'string', enum: [...IMAGE_TYPES] },
            bytes: { type: 'integer' },
            width: { type: 'integer' },
            height: { type: 'integer' },
            name: STRING,
          },
        },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['kind', 'source', 'mime_type', 'caption', 'withheld'],
      properties: { kind: { type: 'string', enum: ['withheld'] }, source: STRING, mime_type: STRING, caption: STRING, withheld: STRING },
    },
  ],
}

// The read request as the model sees it: the fields, types, bounds and
// descriptions of j-cli's one request spec (jcli_sidecar/read/request_spec.py); a
// test fails when this drifts from it. file_path's path rule is this host's.
const PARAMETERS = {
  type: 'object',
  additionalProperties: false,
  required: ['file_path', 'cell_index'],
  properties: {
    file_path: { type: 'string', description: 'An .ipynb, or a py:percent .py paired with one; relative to the session directory.' },
    cell_index: { type: 'integer', minimum: 0, description: '0-based cell index in file_path.' },
    output_index: { type: 'integer', minimum: 0, description: "0-based index in the cell's outputs; omit to list them." },
    mime_type: { type: 'string', description: 'Exactly this representation (default: image, HTML, Markdown, text, JSON, SVG).' },
    offset: { type: 'integer', minimum: 0, description: 'Text window start, in characters (default 0).' },
    limit: { type: 'integer', minimum: 1, description: 'Text window length, in characters.' },
    as_mime_type: {
      type: 'string',
      enum: ['image/png', 'image/jpeg', 'image/webp'],
      description: 'Convert the selected image to this type, or render an SVG or a chart (Vega, Vega-Lite, Plotly) as an image.',
    },
    max_edge: { type: 'integer', minimum: 1, description: 'Downscale an image whose long edge is over this many pixels.' },
    max_pixels: { type: 'integer', minimum: 1, description: 'Downscale an image of more pixels than this.' },
    max_bytes: { type: 'integer', minimum: 1, description: 'Shrink an image larger than this many bytes.' },
  },
}

/** A j-cli failure, thrown as `Error` with `CODE: message` (never any base64). */
export class JcliToolError extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(`${code}: ${message.replace(BASE64_RUN, '[data]')}`)
    this.name = 'JcliToolError'
    this.code = code
  }
}

function quoteForShell(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`
}

function requestFrom(args: unknown, textOnly: boolean): Record<string, unknown> {
  if (typeof args !== 'object' || args === null) throw new JcliToolError('USAGE_ERROR', 'arguments must be an object')
  const given = args as Record<string, unknown>
  const request: Record<string, unknown> = {}
  for (const key of REQUEST_KEYS) if (given[key] !== undefined) request[key] = given[key]
  request.host = 'dsh' // j-cli fits images to DSH's types and limits
  request.max_response_bytes = RESPONSE_BUDGET
  request.agent_text = true // j-cli builds the caption this tool shows
  if (textOnly) request.text_only = true // j-cli tells an image as text, and sends none
  return request
}

function stopped(): JcliToolError {
  return new JcliToolError('ABORTED', 'the read was stopped')
}

function unavailable(command: readonly string[], why: string): JcliToolError {
  return new JcliToolError(
    'JCLI_UNAVAILABLE',
    `cannot run j-cli (${command.join(' ')}: ${why}); install j-cli on PATH, re-run \`j-cli setup dsh\`, or set JCLI_BIN (or the row's config.bin) to the absolute path of j-cli`,
  )
}

/** Run j-cli once and return its parsed JSON answer, or throw a coded error. */
export async function runJcli<Spec>(shell: Shell<Spec>, request: Record<string, unknown>, options: { command: readonly string[]; timeoutMs: number; signal: AbortSignal }): Promise<any> {
  return runJcliWith(shell, ['-j', 'notebook', 'output', '--request', '-'], JSON.stringify(request), { ...options, onStop: stopped })
}

/**
 * Run `j-cli ARGS` once (an argument quoted for the shell when it is not plain) and return its
 * parsed JSON answer, or throw a coded error; a stop throws `onStop()`.
 */
async function runJcliWith<Spec>(
  shell: Shell<Spec>,
  args: readonly string[],
  stdin: string,
  options: { command: readonly string[]; timeoutMs: number; signal: AbortSignal; onStop: () => Error },
): Promise<any> {
  if (options.signal.aborted) throw options.onStop()
  const spec = shell.resolve({
    command: [...options.command.map(quoteForShell), ...args.map((arg) => (/^[A-Za-z0-9._=/-]+$/.test(arg) ? arg : quoteForShell(arg)))].join(' '),
    stdin,
    stdoutMaxBytes: STDOUT_LIMIT,
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  })
  const result = await shell.run(spec)
  if (result.aborted || options.signal.aborted) throw options.onStop()
  if (result.timedOut) throw new JcliToolError('TIMEOUT', `j-cli did not answer within ${result.timeoutMs} ms`)
  if (result.exitCode !== 0) {
    let coded: { code?: unknown; message?: unknown } | null = null
    try {
      coded = JSON.parse(result.stderr.text)
    } catch {
      coded = null
    }
    if (coded && typeof coded.code === 'string') throw new JcliToolError(coded.code, String(coded.message ?? ''))
    // The shell says 127 for a command it cannot find and 126 for one it cannot execute.
    const how =
      result.exitCode === null ? `killed by ${result.signal}`
      : result.exitCode === 127 ? 'not found'
      : result.exitCode === 126 ? 'not executable'
      : `exited with ${result.exitCode} without a coded answer`
    const last = result.stderr.text.trim().split('\n').pop() ?? ''
    throw unavailable(options.command, last ? `${how}: ${last.slice(0, 200)}` : how)
  }
  if (result.stdout.truncated) {
    throw new JcliToolError('OUTPUT_TOO_LARGE', `j-cli answered more than ${STDOUT_LIMIT} bytes; read a text window (offset/limit)`)
  }
  try {
    return JSON.parse(result.stdout.text)
  } catch {
    throw new JcliToolError('PROTOCOL_ERROR', "j-cli's answer was not complete JSON")
  }
}

/** Where the data came from: the one label j-cli puts in every envelope. */
function sourceOf(doc: any): string {
  return String((doc.source ?? {}).label)
}

/**
 * Split what j-cli answered into the envelope and the strings j-cli built for
 * it (asked with `agent_text: true`): nothing here words anything itself.
 */
function captioned(doc: any): { envelope: any; caption: string; window: string | undefined } {
  const { agent_text: shown, ...envelope } = doc
  if (typeof shown?.caption !== 'string') throw new JcliToolError('PROTOCOL_ERROR', "j-cli's answer carries no agent_text caption")
  return { envelope, caption: shown.caption, window: typeof shown.window === 'string' ? shown.window : undefined }
}

/** Translate a j-cli read envelope into the tool's value, saving an image first. */
export async function toValue(doc: any, attachments: Attachments, signal: AbortSignal): Promise<ReadValue> {
  const { envelope, caption, window } = captioned(doc)
  const source = sourceOf(envelope)
  if (Array.isArray(envelope.outputs)) return { kind: 'outputs', source, text: JSON.stringify(envelope, null, 2) }
  if (envelope.stream) return textValue(source, `stream/${envelope.stream.name}`, envelope.stream.data, caption, window)
  if (envelope.error) {
    const b = envelope.error
    return textValue(source, 'error', 'data' in b ? b.data : JSON.stringify(b, null, 2), caption, window)
  }
  const sel = envelope.selected
  if (typeof sel.withheld === 'string') return { kind: 'withheld', source, mime_type: sel.mime_type, caption, withheld: sel.withheld }
  if (sel.encoding === 'base64') {
    const data = Buffer.from(sel.data, 'base64')
    const ref = await attachments.saveImage({ data: new Uint8Array(data.buffer, data.byteOffset, data.length), mediaType: sel.mime_type })
    if (signal.aborted) throw stopped()
    const image: ImageRef = { attachmentId: String(ref.attachmentId), mediaType: ref.mediaType, bytes: ref.bytes, width: ref.width, height: ref.height }
    if (ref.name !== undefined) image.name = ref.name
    const note: string | undefined = sel.note
    return note === undefined
      ? { kind: 'image', source, mime_type: sel.mime_type, image, caption }
      : { kind: 'image', source, mime_type: sel.mime_type, image, caption, note }
  }
  const text = sel.encoding === 'json' ? JSON.stringify(sel.data, null, 2) : sel.data
  return textValue(source, sel.mime_type, text, caption, window)
}

function textValue(source: string, mime: string, text: string, caption: string, window: string | undefined): ReadValue {
  return window === undefined ? { kind: 'text', source, mime_type: mime, text, caption } : { kind: 'text', source, mime_type: mime, text, caption, window }
}

/** Pure: the model-facing blocks for one value. */
export function render(_args: unknown, value: Json): Block[] {
  const v = value as unknown as ReadValue
  if (v.kind === 'image') return [{ type: 'text', text: v.caption }, { type: 'image', attachment: { ...v.image }, alt: v.caption }]
  // An image told as text is j-cli's caption alone: what, size, where, why not sent, how to read a text form.
  if (v.kind === 'withheld') return [{ type: 'text', text: v.caption }]
  // Whole text stands alone; a cut window is followed by its caption (j-cli's, with the offset to go on at).
  if (v.kind === 'text' && v.window !== undefined) return [{ type: 'text', text: v.text }, { type: 'text', text: v.caption }]
  return [{ type: 'text', text: v.text }]
}

/** The directory the host's shell runs commands in (where j-cli would run). */
function shellDirectory<Spec>(shell: Shell<Spec>): string {
  const probe = shell.resolve({ command: ':' }) as unknown as { workdir?: unknown }
  return typeof probe.workdir === 'string' ? probe.workdir : process.cwd()
}

/** Reads through the sidecar of the directory the shell runs in, else null (then j-cli is spawned). */
function sidecarFor<Spec>(shell: Shell<Spec>, command: readonly string[]) {
  const learn = async (): Promise<string | null> => {
    const spec = shell.resolve({ command: `${command.map(quoteForShell).join(' ')} --version`, timeoutMs: 10_000 })
    const result = await shell.run(spec)
    return result.exitCode === 0 ? result.stdout.text : null
  }
  const read = sidecarReader(learn)
  return (request: Record<string, unknown>, signal: AbortSignal) => read({ key: command.join('\0'), cwd: shellDirectory(shell), request, signal })
}

/**
 * Whether this call's read tells images as text. The row's `config.textOnly`
 * decides when set. Otherwise: a call on no agent's behalf (a program or
 * another plugin calling the registry) gets images, as no model's session
 * will hold them; a call for an agent follows the `inputModalities` DSH's
 * adapter declares for the route of the agent's latest model request, the
 * one that asked for this call. When DSH tells nothing of that model (no
 * `ctx.llm`, no request recorded, no modalities declared, a lookup that
 * fails), the answer is text only: a withheld image costs the model one
 * caption, a sent one a session DSH refuses from then on. Answers at once
 * (not a promise) when nothing needs asking.
 */
export function textOnlyFor(exec: RunContext, llm: () => Llm | undefined, config: Config): boolean | Promise<boolean> {
  if (typeof config.textOnly === 'boolean') return config.textOnly
  if (exec.agent === undefined || exec.agent === null) return false
  const takesNoImage = (info: { readonly inputModalities?: readonly string[] } | undefined) => !(Array.isArray(info?.inputModalities) && info.inputModalities.includes('image'))
  try {
    const route = (exec.agent as AgentView).session.requestContext()
    const runtime = llm()
    if (route === undefined || runtime === undefined) return true
    return runtime.resolveModelInfo(route.provider, route.model, exec.signal).then(takesNoImage).catch(() => true)
  } catch {
    return true
  }
}

/** The `read_notebook_output` tool over the given host services (`llm`: ctx.llm when present). */
export function readNotebookOutputTool<Spec>(shell: Shell<Spec>, attachments: Attachments, config: Config = {}, llm: () => Llm | undefined = () => undefined): ReadToolDefinition {
  const bin = config.bin || process.env.JCLI_BIN
  const command = bin ? [bin] : INSTALLED_COMMAND
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const viaSidecar = sidecarFor(shell, command)
  return {
    name: 'read_notebook_output',
    description:
      'Read a saved Jupyter notebook output in one call. Without output_index: the cell\'s outputs and MIME types. ' +
      'With it: that output, text and HTML verbatim, images as images (for a model that takes no image input: described as text). ' +
      'Works for .ipynb and py:percent .py pairs.',
    parameters: PARAMETERS,
    timeoutMs: timeoutMs + 5_000,
    output: { schema: VALUE_SCHEMA, render },
    isConcurrencySafe: () => true,
    async execute(args, exec) {
      const decided = textOnlyFor(exec, llm, config)
      const textOnly = typeof decided === 'boolean' ? decided : await decided
      if (exec.signal.aborted) throw stopped()
      const request = requestFrom(args, textOnly)
      const pending = viaSidecar(request, exec.signal) // null at once when no sidecar may be used
      const answer = pending === null ? null : await pending
      if (answer?.error) throw new JcliToolError(answer.error.code, answer.error.message)
      const doc = answer?.doc ?? (await runJcli(shell, request, { command, timeoutMs, signal: exec.signal }))
      return toValue(doc, attachments, exec.signal)
    },
  }
}

// ---- The wait tool: `j-cli -j job wait`, for jobs `exec --background` started.

/** The longest wait one call may ask for, in seconds (j-cli's own default is 100). */
export const MAX_WAIT_SECONDS = 3600
/** j-cli's default wait, when the call names none. */
const DEFAULT_WAIT_SECONDS = 100
/** What a job id (or a prefix of one) is made of: anything else never reaches the shell. */
const JOB_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

/** The value of one wait: `j-cli -j job wait`'s document (without its schema_version). */
export interface WaitValue {
  timed_out: boolean
  stopped: boolean
  waited_seconds: number
  jobs: Json[]
  ended: string[]
  pending: string[]
  failed: string | null
}

const IDS: Schema = { type: 'array', items: { type: 'string' } }
const WAIT_SCHEMA: Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['timed_out', 'stopped', 'waited_seconds', 'jobs', 'ended', 'pending', 'failed'],
  properties: {
    timed_out: { type: 'boolean' },
    stopped: { type: 'boolean' },
    waited_seconds: { type: 'number' },
    jobs: { type: 'array', items: { description: "each job's status, as `j-cli -j job status` gives it" } },
    ended: IDS,
    pending: IDS,
    failed: { oneOf: [{ type: 'string' }, { type: 'null' }] },
  },
}

const WAIT_PARAMETERS = {
  type: 'object',
  additionalProperties: false,
  required: ['job_ids'],
  properties: {
    job_ids: {
      type: 'array',
      minItems: 1,
      items: { type: 'string', minLength: 1 },
      description: 'The job ids (or unique prefixes) to wait for; returns on the first to end.',
    },
    timeout_seconds: { type: 'number', minimum: 1, maximum: MAX_WAIT_SECONDS, description: 'Return after this many seconds with timed_out: true (default 100).' },
  },
}

export interface WaitToolDefinition extends Omit<ReadToolDefinition, 'execute'> {
  execute(args: unknown, exec: RunContext): Promise<WaitValue>
}

/** The ids and the seconds of one call, checked: a bad one is USAGE_ERROR, before anything runs. */
export function waitRequest(args: unknown): { ids: string[]; seconds: number } {
  const given = (typeof args === 'object' && args !== null ? args : {}) as Record<string, unknown>
  const ids = given.job_ids
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string' && JOB_ID.test(id))) {
    throw new JcliToolError('USAGE_ERROR', 'job_ids must be a non-empty array of job ids (as `exec --background` printed them)')
  }
  const seconds = given.timeout_seconds ?? DEFAULT_WAIT_SECONDS
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 1 || seconds > MAX_WAIT_SECONDS) {
    throw new JcliToolError('USAGE_ERROR', `timeout_seconds must be a number of seconds from 1 to ${MAX_WAIT_SECONDS}`)
  }
  return { ids: ids as string[], seconds }
}

/** j-cli's wait document as the tool's value. */
export function toWaitValue(doc: any): WaitValue {
  if (typeof doc?.timed_out !== 'boolean' || !Array.isArray(doc.jobs)) throw new JcliToolError('PROTOCOL_ERROR', "j-cli's answer is not a job wait")
  return {
    timed_out: doc.timed_out,
    stopped: Boolean(doc.stopped),
    waited_seconds: Number(doc.waited_seconds),
    jobs: doc.jobs,
    ended: Array.isArray(doc.ended) ? doc.ended : [],
    pending: Array.isArray(doc.pending) ? doc.pending : [],
    failed: typeof doc.failed === 'string' ? doc.failed : null,
  }
}

/** Pure: the model reads the wait as the JSON `j-cli -j job wait` prints. */
export function renderWait(_args: unknown, value: Json): Block[] {
  return [{ type: 'text', text: JSON.stringify(value) }]
}

/**
 * A stopped wait throws its own error (DSH replaces a success that settles
 * after a stop with a generic abort, so a snapshot would never reach the
 * model); the jobs run on.
 */
function waitStopped(ids: readonly string[]): JcliToolError {
  const shown = ids.slice(0, 3).join(', ') + (ids.length > 3 ? ` (+${ids.length - 3} more)` : '')
  return new JcliToolError('JOB_WAIT_STOPPED', `the wait for ${shown} was stopped; the job(s) run on: call wait_notebook_job again to go on waiting`)
}

/** The `wait_notebook_job` tool: `j-cli -j job wait -- IDS --timeout S` through the host's shell. */
export function waitNotebookJobTool<Spec>(shell: Shell<Spec>, config: Config = {}): WaitToolDefinition {
  const command = commandOf(config)
  return {
    name: 'wait_notebook_job',
    description:
      'Wait for background j-cli jobs (started with `j-cli exec SESSION ... --background`, which prints the job_id). ' +
      'Returns as soon as one of them ends (its state and result), or when timeout_seconds pass with timed_out: true ' +
      'and the jobs as they stand: then call it again. The jobs run on whatever happens to the wait. ' +
      'Read a notebook job\'s images with read_notebook_output.',
    parameters: WAIT_PARAMETERS,
    timeoutMs: (MAX_WAIT_SECONDS + 30) * 1000,
    output: { schema: WAIT_SCHEMA, render: renderWait },
    isConcurrencySafe: () => true,
    async execute(args, exec) {
      const { ids, seconds } = waitRequest(args)
      const argv = ['-j', 'job', 'wait', '--timeout', String(seconds), '--', ...ids]
      const doc = await runJcliWith(shell, argv, '', { command, timeoutMs: (seconds + 30) * 1000, signal: exec.signal, onStop: () => waitStopped(ids) })
      return toWaitValue(doc)
    },
  }
}

// ---- The guards.

/** How long one guard may take before the call goes through unguarded. */
export const HOOK_TIMEOUT_MS = 30_000
// ---- begin generated: guards (`make docs` writes it from jcli.setup.generated; edit the source)
/** Which guards run before and after which DSH tools: its host table entry and j-cli's guard registry. */
const SHELL_TOOLS: ReadonlySet<string> = new Set(['bash'])
const EDIT_TOOLS: ReadonlySet<string> = new Set(['edit', 'write', 'apply_patch'])

function hooksBefore(tool: string): string[] {
  if (SHELL_TOOLS.has(tool)) return ['notebook-exec-guard', 'python-run-guard']
  if (EDIT_TOOLS.has(tool)) return ['notebook-edit-guard', 'pair-drift-guard-pre']
  return []
}

function hooksAfter(tool: string): string[] {
  return EDIT_TOOLS.has(tool) ? ['pair-drift-guard-post'] : []
}
// ---- end generated: guards

/** Run `j-cli _hooks NAME --platform dsh` with the call on stdin; null when it could not run or answer. */
export async function runHook<Spec>(shell: Shell<Spec>, name: string, exec: ToolCall, command: readonly string[]): Promise<ShellResult | null> {
  try {
    const cwd = shellDirectory(shell)
    const payload = { tool_name: exec.name, tool_input: exec.arguments ?? {}, cwd }
    const spec = shell.resolve({
      command: `${command.map(quoteForShell).join(' ')} _hooks ${name} --platform dsh`,
      stdin: JSON.stringify(payload),
      timeoutMs: HOOK_TIMEOUT_MS,
      signal: exec.signal,
    })
    const result = await shell.run(spec)
    return result.timedOut || result.aborted ? null : result
  } catch {
    return null
  }
}

function hookOutput(stdout: string): Record<string, unknown> | null {
  try {
    const doc = JSON.parse(stdout)
    return doc && typeof doc === 'object' && doc.hookSpecificOutput && typeof doc.hookSpecificOutput === 'object' ? doc.hookSpecificOutput : null
  } catch {
    return null
  }
}

/**
 * The reason of a deny, or null (allow). A deny is exit 2 with j-cli's
 * decision on stdout; a bare exit 2 (an old j-cli without `_hooks` fails
 * with a usage error, also 2) is not one.
 */
export function denyReason(name: string, result: ShellResult | null): string | null {
  if (!result || result.exitCode !== 2) return null
  const decision = hookOutput(result.stdout.text)
  if (decision?.permissionDecision !== 'deny') return null
  const reason = decision.permissionDecisionReason
  return `j-cli ${name}: ${typeof reason === 'string' && reason ? reason : result.stderr.text.trim() || 'refused this call'}`
}

/** The context a post hook hands the model, or null. */
export function postContext(result: ShellResult | null): string | null {
  if (!result || result.exitCode !== 0) return null
  const context = hookOutput(result.stdout.text)?.additionalContext
  return typeof context === 'string' && context ? context : null
}

function commandOf(config: Config): readonly string[] {
  const bin = config.bin || process.env.JCLI_BIN
  return bin ? [bin] : INSTALLED_COMMAND
}

/** The `tools/pre-execute` listener: a deny from j-cli refuses the call before dispatch. */
export function preExecuteGuard<Spec>(shell: Shell<Spec>, config: Config = {}): PreListener {
  return async (exec, next) => {
    for (const name of hooksBefore(exec.name)) {
      const reason = denyReason(name, await runHook(shell, name, exec, commandOf(config)))
      if (reason !== null) return { kind: 'deny', reason }
    }
    return next()
  }
}

/** The `tools/post-execute` listener: after a successful edit, j-cli's context joins the content. */
export function postExecuteGuard<Spec, B = Block>(shell: Shell<Spec>, config: Config = {}): PostListener<B> {
  return async (exec, result, next) => {
    const decision = await next()
    const names = hooksAfter(exec.name)
    if (names.length === 0 || result.isError || decision.kind !== 'accept' || 'value' in decision) return decision
    const notes: B[] = []
    for (const name of names) {
      const context = postContext(await runHook(shell, name, exec, commandOf(config)))
      if (context !== null) notes.push({ type: 'text', text: `[j-cli] ${context}` } as B) // a text block: every host block type has it
    }
    if (notes.length === 0) return decision
    const content = decision.content ?? [...result.content]
    return { ...decision, content: [...content, ...notes] }
  }
}

/**
 * Register the guards, then the read tool. The guards need only the shell;
 * a read tool the host refuses (another plugin's tool of the same name, say)
 * is a warning naming why, never a reason to go unguarded.
 */
export function apply<Spec>(ctx: PluginContext<Spec>, config: Config = {}): () => void {
  const disposers = [
    ctx.on('tools/pre-execute', preExecuteGuard(ctx.shell, config)),
    ctx.on('tools/post-execute', postExecuteGuard(ctx.shell, config)),
  ]
  const tools: [string, () => ReadToolDefinition | WaitToolDefinition][] = [
    ['read_notebook_output', () => readNotebookOutputTool(ctx.shell, ctx.attachments, config, () => (typeof ctx.get === 'function' ? ctx.get('llm') : undefined))],
    ['wait_notebook_job', () => waitNotebookJobTool(ctx.shell, config)],
  ]
  for (const [toolName, make] of tools) {
    try {
      disposers.push(ctx.tools.register(make() as ReadToolDefinition))
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err)
      console.warn(`[j-cli] ${toolName} is unavailable: the host refused it (${why.split('\n')[0]}); the guards still run`)
    }
  }
  return () => {
    for (const dispose of disposers.reverse()) dispose()
  }
}
