// Compile-time only (`tsc --noEmit`): the plugin against the transcribed DSH
// host types in dsh-host.d.ts. Each check states one direction of the
// contract; a mismatch is a type error, so `make test` fails.
import type * as Host from './dsh-host.d.ts'
import { apply, inject, name, postExecuteGuard, preExecuteGuard, readNotebookOutputTool, render } from './jcli.ts'
import type { AgentView, Block, Config, ImageRef, Llm, ReadToolDefinition, ShellRequest, ShellResult, SaveImageInput } from './jcli.ts'

type Is<A, B> = [A] extends [B] ? true : false
type Check<T extends true> = T

/**
 * The attachment id is branded in the host's types, but a tool value is JSON,
 * and JSON carries a plain string; the host checks the id itself when it reads
 * the image. This is the one place the brand is erased.
 */
type Unbranded<T> = T extends { attachment: Host.ImageAttachmentRef }
  ? Omit<T, 'attachment'> & { attachment: Omit<Host.ImageAttachmentRef, 'attachmentId'> & { attachmentId: string } }
  : T

export type Checks = [
  // What the plugin sends to ctx.shell is a valid host request.
  Check<Is<ShellRequest, Host.ShellExecRequest>>,
  // What ctx.shell.run resolves has every field the plugin reads.
  Check<Is<Host.ShellRunResult, ShellResult>>,
  // What the plugin hands to saveImage is a valid host input, and the ref it
  // gets back has every field the plugin reads.
  Check<Is<SaveImageInput, Host.SaveImageAttachment>>,
  Check<Is<Host.ImageAttachmentRef, ImageRef>>,
  // Rendered blocks are host content blocks (text or image).
  Check<Is<Block, Unbranded<Host.ContentBlock>>>,
  // The registered definition is a host ToolDefinition (render modulo the brand).
  Check<Is<Omit<ReadToolDefinition, 'output'>, Omit<Host.ToolDefinition, 'output'>>>,
  Check<Is<ReadToolDefinition['output']['schema'], Host.JsonSchemaNode>>,
  Check<Is<typeof render, (args: unknown, value: Host.JsonValue) => Unbranded<Host.ContentBlock>[]>>,
  // execute accepts the host's run context.
  Check<Is<Host.ToolRunContext, Parameters<ReadToolDefinition['execute']>[1]>>,
  // What the plugin reads of the calling agent and of ctx.llm, the host has.
  Check<Is<Host.Agent, AgentView>>,
  Check<Is<Host.LlmRuntime, Llm>>,
]

// The plugin module has the shape DSH loads from a composition row, and the
// tool is built from the host's own ctx.shell and ctx.attachments, uncast.
declare const ctx: Host.Context
export const plugin: Pick<Host.PluginModule, 'name' | 'inject'> = { name, inject }
export const tool: ReadToolDefinition = readNotebookOutputTool(ctx.shell, ctx.attachments, {}, () => ctx.get('llm'))
// The guards are listeners the host's waterfalls accept, over its own ctx.shell.
export const preGuard: Host.PreExecuteListener = preExecuteGuard(ctx.shell)
export const postGuard: Host.PostExecuteListener = postExecuteGuard<Host.ShellExecSpec, Host.ContentBlock>(ctx.shell)
export const applies: (c: Parameters<typeof apply>[0], config: Config) => () => void = apply
