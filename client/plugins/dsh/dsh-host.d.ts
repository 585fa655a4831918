// DSH host types, transcribed (not imported) for type-checking jcli.ts with tsc.
//
// Every declaration below is copied from public DSH sources in the
// repository toninfo/deepseek-harness (a public fork that keeps the upstream
// `@deepseek-ai/dsh-*` package names). Each block names the commit and path
// it came from. JSDoc is shortened; fields and signatures are as written
// there. Only what the plugin touches is transcribed. Nothing here exists
// at runtime: the plugin imports no DSH package.

// ---------------------------------------------------------------------------
// toninfo/deepseek-harness@86f0cb1ebebcceeb9223de119d0fc512c9ae5f10
//   packages/util/brand/src/index.ts
declare const BRAND: unique symbol
export type Branded<B extends string> = string & { readonly [BRAND]: B }

// toninfo/deepseek-harness@9caf3fdf696471a51203b25295d275bde574c241
//   packages/llm/llm/src/brand.ts
export type CallId = Branded<'CallId'>

// toninfo/deepseek-harness@0b63e53fadc3cc4d3f5d322a2f6d271af16e024f
//   packages/attachment/attachment/src/brand.ts
export type AttachmentId = Branded<'AttachmentId'>

// ---------------------------------------------------------------------------
// toninfo/deepseek-harness@226f565c7a67a9d982718a0ac13206e118fe5b64
//   packages/core/session/src/json.ts
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

// ---------------------------------------------------------------------------
// toninfo/deepseek-harness@c704c944853e4b55ced8bea46048cfdcef584a72
//   packages/attachment/attachment/src/types.ts
export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif'

export interface ImageAttachmentRef {
  /** Opaque storage identifier; never a filesystem path or bearer URL. */
  attachmentId: AttachmentId
  /** Media type verified from the stored bytes. */
  mediaType: ImageMediaType
  /** Exact encoded byte length. */
  bytes: number
  /** Intrinsic encoded width in pixels. */
  width: number
  /** Intrinsic encoded height in pixels. */
  height: number
  /** Optional display name stripped of local path information. */
  name?: string
}

export interface ImageAttachmentLimits {
  maxImageBytes: number
  maxImagesPerMessage: number
  maxMessageImageBytes: number
  maxImagePixels: number
  maxImageDimension: number
  mediaTypes: readonly ImageMediaType[]
}

export interface SaveImageAttachment {
  data: Uint8Array
  /** Caller-declared media type, checked against fully decoded bytes. */
  mediaType: ImageMediaType
  /** Optional browser/provider display name; it is never interpreted as a path. */
  name?: string
}

export interface StoredImageAttachment {
  ref: ImageAttachmentRef
  data: Uint8Array
}

// toninfo/deepseek-harness@0ddd5e205e5d5c6f032e5d13fd07d591ec68b70f
//   packages/attachment/attachment/src/index.ts  (abstract class AttachmentStore, registered as 'attachments')
export interface AttachmentStore {
  readonly imageLimits: ImageAttachmentLimits
  validateImage(input: SaveImageAttachment): Promise<void>
  saveImage(input: SaveImageAttachment): Promise<ImageAttachmentRef>
  readImage(ref: ImageAttachmentRef): Promise<StoredImageAttachment>
}

// ---------------------------------------------------------------------------
// toninfo/deepseek-harness@0067b14f046f6d30ef0ae6152b5aa99a1959c0aa
//   packages/llm/llm/src/types.ts  (other block kinds omitted: the plugin renders only these two)
export interface TextBlock {
  type: 'text'
  text: string
}

export interface ImageBlock {
  type: 'image'
  /** Immutable bytes and intrinsic display metadata owned by the attachment service. */
  attachment: ImageAttachmentRef
  /** Optional provider- and UI-facing alternative text. */
  alt?: string
}

export type ContentBlock = TextBlock | ImageBlock

export interface ToolSchema {
  name: string
  description: string
  /** JSON Schema object for the arguments. */
  parameters: Record<string, unknown>
}

// ---------------------------------------------------------------------------
// toninfo/deepseek-harness@02cbeaadd36d94afc5229d7c7a494733dec0be19
//   packages/subprocess/subprocess/src/types.ts
export interface CollectedOutput {
  /** Collected text — the TAIL of the stream when truncated. */
  text: string
  /** True when bytes were dropped from `text`. */
  truncated: boolean
  /** Path to a file holding the COMPLETE stream, when truncated and available. */
  spillPath?: string
}

// toninfo/deepseek-harness@935275924c80221ac3434a51f68f2f11550d472e
//   docs/subsystems/shell.md  (`ts type-equiv` blocks; dshEnv/sandbox fields omitted)
export interface ShellExecRequest {
  command: string
  workdir?: string | undefined
  timeoutMs?: number | undefined
  /** Foreground stdout capture budget in bytes (trusted in-process consumers). */
  stdoutMaxBytes?: number | undefined
  /** Abort signal — implementations kill the command when it fires. */
  signal?: AbortSignal | undefined
  /** Bytes to write to the command's stdin, then close it. */
  stdin?: string | undefined
  env?: Record<string, string> | undefined
}

export interface ShellExecSpec {
  command: string
  workdir: string
  timeoutMs: number
  stdoutMaxBytes: number
  signal?: AbortSignal | undefined
  stdin?: string | undefined
  env?: Record<string, string> | undefined
}

export interface ShellRunResult {
  /** Exit code; null when the process died from a signal. */
  exitCode: number | null
  /** Terminating signal (e.g. 'SIGTERM'); null on normal exit. */
  signal: NodeJS.Signals | null
  /** True when the executor's own timeout was the FIRST cause to cut the command short. */
  timedOut: boolean
  /** True when the caller's `AbortSignal` was the FIRST cause to kill the command. */
  aborted: boolean
  /** The effective timeout applied to this run (after defaulting/capping). */
  timeoutMs: number
  stdout: CollectedOutput
  stderr: CollectedOutput
}

/** `ctx.shell` (`ShellExecutor`, "Cordis API" section of the same page). */
export interface ShellExecutor {
  resolve(request: ShellExecRequest): ShellExecSpec
  run(spec: ShellExecSpec): Promise<ShellRunResult>
}

// ---------------------------------------------------------------------------
// toninfo/deepseek-harness@7330306a9a69c7f13c19835d012c2825f28297c6
//   packages/core/tools/src/json-schema.ts  (the supported raw JSON Schema subset)
export type JsonSchemaScalar = string | number | boolean | null
export type JsonSchemaType = 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'array' | 'object'
export interface JsonSchemaNode {
  type?: JsonSchemaType
  oneOf?: JsonSchemaNode[]
  properties?: Record<string, JsonSchemaNode>
  required?: string[]
  additionalProperties?: boolean
  items?: JsonSchemaNode
  enum?: JsonSchemaScalar[]
  const?: JsonSchemaScalar
  description?: string
  title?: string
  default?: JsonValue
  examples?: JsonValue
}

// ---------------------------------------------------------------------------
// toninfo/deepseek-harness@00af040daba1dcdf98efbef1e257f67784cd4d22
//   packages/core/tools/src/index.ts
declare const toolExecutionTokenBrand: unique symbol
export type ToolExecutionToken = symbol & { readonly [toolExecutionTokenBrand]: true }

export interface ToolExecutionInput {
  readonly callId: CallId
  readonly rootCallId?: CallId
  readonly name: string
  readonly arguments: unknown
  readonly agent?: Agent // the agent on whose behalf the call runs (set by the agent loop)
  readonly parent?: ToolExecutionToken
  readonly signal: AbortSignal
}

export interface ToolExecution extends ToolExecutionInput {
  readonly rootCallId: CallId
  readonly token: ToolExecutionToken
}

export interface ToolRunContext extends ToolExecution {
  /** Defer one context until this tool's final result reaches the agent loop. */
  deferContext(context: unknown): void // `UserMessage` from @deepseek-ai/dsh-session
  /** Mark a successful final result as terminal for the current agent turn. */
  concludeTurn(): void
}

/** Tool-owned canonical output contract used after the body returns a JSON value. */
export interface ToolOutputDefinition {
  /** Raw supported JSON Schema enforced against every successful canonical value. */
  readonly schema: JsonSchemaNode
  /** Pure projection from validated arguments and value to Native/model content. */
  render(args: unknown, value: JsonValue): ContentBlock[]
  /** Pure replayable presentation projection, computed only for surface calls. */
  presentationMeta?(args: unknown, value: JsonValue): JsonValue
}

/** A registered tool: its schema plus the execution function. */
export interface ToolDefinition extends ToolSchema {
  /** Mandatory canonical output declaration. */
  readonly output: ToolOutputDefinition
  /** Run one accepted call and return only its canonical lossless-JSON value. */
  execute(args: unknown, exec: ToolRunContext): Promise<unknown>
  /** Cooperative tool-call timeout budget in milliseconds. Omit for no deadline. */
  timeoutMs?: number
  isConcurrencySafe?(args: unknown): boolean
}

/** `ctx.tools` (ToolRegistry): only the method the plugin calls. */
export interface ToolRegistry {
  /** Register globally or in the calling agent scope; returns the exact disposer. */
  register(definition: ToolDefinition): () => void
}

/** Canonical error code for cancellation after a tool body was invoked. */
export declare const TOOL_ABORTED = 'ABORTED'

// ---------------------------------------------------------------------------
// The Cordis context as the plugin sees it: `inject = ['tools', 'shell',
// 'attachments']` makes these services available on `ctx`
// (toninfo/deepseek-harness@00af040daba1dcdf98efbef1e257f67784cd4d22
//   packages/attachment/attachment/src/invariant.ts shows the
//   `name` / `inject` / `apply` module shape).
// `get` is from @deepseek-ai/cordis 4.0.4, src/reflect.ts (`ReflectService.get`,
// mixed into every context): how a plugin reads a service it does not inject.
export interface Context {
  tools: ToolRegistry
  shell: ShellExecutor
  attachments: AttachmentStore
  /** Read a service without the inject requirement: undefined when not (yet) provided. */
  get(name: 'llm', strict?: boolean): LlmRuntime | undefined
}

/** A Cordis plugin module as DSH loads it from a composition row. */
export interface PluginModule<C = unknown> {
  readonly name: string
  readonly inject: readonly string[]
  apply(ctx: Context, config: C): void | Promise<void> | (() => void) | Promise<() => void>
}

// ---------------------------------------------------------------------------
// @deepseek-ai/dsh-tools 0.1.0-rc.8, README.md ("Key types", "Extension
// points") and lib/index.js: `ctx.waterfall(…, 'tools/pre-execute', exec, next)`
// and `ctx.waterfall(…, 'tools/post-execute', exec, result, next)`; a
// listener registered with `ctx.on(name, listener)` gets the same arguments
// and answers with a decision (or `next()`). Only what the guards read.
export type PreToolDecision = { kind: 'allow' } | { kind: 'deny'; reason: string } | { kind: 'ask'; reason?: string }

export type PostToolDecision =
  | { kind: 'accept'; content?: ContentBlock[]; value?: JsonValue; additionalContexts?: unknown[] }
  | { kind: 'block'; feedback: ContentBlock[]; additionalContexts?: unknown[] }

export interface ToolExecutionResultView {
  readonly isError: boolean
  readonly content: ContentBlock[]
}

export type PreExecuteListener = (exec: ToolExecution, next: () => Promise<PreToolDecision>) => Promise<PreToolDecision>
export type PostExecuteListener = (exec: ToolExecution, result: ToolExecutionResultView, next: () => Promise<PostToolDecision>) => Promise<PostToolDecision>

// ---------------------------------------------------------------------------
// What a tool learns of the model it runs for. From the published 0.1.0-rc.8
// type declarations: @deepseek-ai/dsh-agent lib/types/runtime-types.d.ts
// (`Agent.session`), @deepseek-ai/dsh-session lib/types/index.d.ts
// (`Session.requestContext()`) and lib/types/types.d.ts (`RequestContext`),
// @deepseek-ai/dsh-llm lib/types/index.d.ts (`LlmRuntime.resolveModelInfo`)
// and lib/types/types.d.ts (`LlmModelInfo`, `ModelModalityMap`). Only what the
// plugin reads.

/** Route metadata of the latest conversation request (the `request/context` event). */
export interface RequestContext {
  provider: string
  model: string
  contextWindow?: number
}

export interface Session {
  requestContext(): RequestContext | undefined
}

export interface Agent {
  readonly session: Session
}

export interface ModelModalityMap {
  text: 'text'
  image: 'image'
}
export type ModelModality = ModelModalityMap[keyof ModelModalityMap]

export interface LlmModelInfo {
  provider: string
  id: string
  name: string
  description?: string
  /** Accepted request modalities; absent means unknown, while an explicit omission is negative capability. */
  inputModalities?: readonly ModelModality[]
}

export interface LlmRuntime {
  resolveModelInfo(provider: string, model: string, signal?: AbortSignal): Promise<LlmModelInfo>
}
