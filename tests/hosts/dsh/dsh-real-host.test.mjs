// node --import tsx --test dsh-real-host.test.mjs   (JCLI_BIN=<abs>/.venv/bin/j-cli)
//
// j-cli's DSH plugin in the REAL DSH runtime: the published DSH packages
// pinned in package.json, booted by dsh-app-boot's `boot()` exactly as the
// `dsh` launcher boots a profile, with no model. Nothing here is a fake: the
// Cordis Loader and Include import and mount the plugin file that the real
// `j-cli setup dsh` placed; `ctx.tools` is dsh-tools' registry and every call
// goes through its whole `execute` pipeline (argument snapshot, policy,
// dispatch, output-schema check, render); `ctx.shell` is dsh-bash-local over
// dsh-subprocess-local; `ctx.attachments` is dsh-attachment-local's durable
// store under $DSH_HOME; the j-cli the shell runs is the real one.
//
// How DSH 0.1.0-rc.8 composes (apps/cli/src/profile-boot.ts, and the
// dsh-app-boot README): a profile's root `cordis.yml` is an empty entry list
// and the tree is built from patch layers, in order: each bundle's
// `cordis.patch.yml` (dsh-base first), the profile's own `cordis.patch.yml`,
// then `$DSH_HOME/cordis.patch.yml`, then `--patch` overlays; `boot()` mounts
// the root file through the `cordis:include` builtin with those layers.
// Here `hostLayer()` stands in for the bundle layer: it inserts only the
// rows the plugin needs, under the ids the dsh-base bundle gives them.
//
// What differs from a stock `dsh` tree, and why:
// - The guard tests (8, 9) add DSH's own bash, read/write/edit tools and
//   the services they inject (shell-env, fs-local); the others do not.
// - No LLM, agent, session or UI rows: no model is involved, and
//   `ctx.tools.execute` is what the agent loop calls for each tool call.
//   dsh-system-prompt is mounted only because dsh-tools injects it.
// - `ctx.shell` is dsh-bash-local. The dsh-base bundle composes
//   dsh-bash-sandbox (the same executor confined through ctx.sandbox), which
//   needs the sandbox and permission rows; that confinement is not tested.
// - The launch-environment snapshot and command line that `dsh` provides in
//   boot's `prepare` hook are not provided: no row here injects them.
// - DSH 0.1.0-rc.8 itself never reads `<project>/.dsh/cordis.yml`: its
//   launcher reads only the layers above (a project's `.dsh/` is read for
//   skills only). That file is a plain Cordis entry list, so it is mounted the
//   way Cordis mounts any entry-list file: a `cordis:include` row (the builtin
//   `boot()` registers) whose path is that file, so `./plugins/jcli.ts`
//   resolves against `.dsh/`. `j-cli setup dsh --project` says so in a
//   warning that quotes the row; the project tests paste that row, verbatim,
//   into `$DSH_HOME/cordis.patch.yml` and load it as `dsh` does.
// - The `--user` scope needs nothing of the kind: its `insert` patch is read
//   with dsh-app-boot's own `loadOptionalPatches` from `$DSH_HOME`, as `dsh`
//   reads it, and applied after the bundle layer.
//
// The plugin runs `j-cli` found on PATH (JCLI_BIN is removed from this
// process, which is the host), so each test puts JCLI_BIN's directory first
// on PATH; one test checks that JCLI_BIN, when set, wins. j-cli's background
// sidecar is switched off so no daemon outlives a test.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import test from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import zlib from 'node:zlib'

import { boot, loadOptionalPatches, PROFILE_PATCH_FILENAME, resolveProfileDir } from '@deepseek-ai/dsh-app-boot'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'
import { TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH } from '@deepseek-ai/dsh-tools'

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.resolve(here, '../../fixtures/protocol')
const cases = new Map(JSON.parse(fs.readFileSync(path.join(fixtures, 'cases.json'), 'utf8')).map((c) => [c.name, c]))
const NOTEBOOK = 'kernel_v4.5.ipynb'
const TOOL = 'read_notebook_output'
const BIN_NAME = 'dsh' // the diagnostic prefix the `dsh` launcher hands to boot()
const PROFILE = 'jcli-real-host'
const TIMEOUT = 60_000
const BASE64_RUN = /[A-Za-z0-9+/]{40,}/

const JCLI = process.env.JCLI_BIN
assert.ok(JCLI && path.isAbsolute(JCLI) && fs.existsSync(JCLI), 'set JCLI_BIN to the absolute path of the j-cli executable (.venv/bin/j-cli)')
delete process.env.JCLI_BIN // the host must find plain `j-cli` on PATH, as the project-scope row does

// One temp dir for the whole run, removed at the end: the tests' own dirs,
// j-cli's, and dsh-subprocess-local's per-process spill directory (created
// under os.tmpdir() at the first spawn; DSH never removes it) all land in it.
const runTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jcli-dsh-run-'))
test.after(() => fs.rmSync(runTmp, { recursive: true, force: true }))
process.env.TMPDIR = runTmp
process.env.JCLI_SIDECAR = 'off'
process.env.XDG_RUNTIME_DIR = fs.mkdtempSync(path.join(runTmp, 'xdg-')) // mode 0700, as j-cli requires

// ---- Scratch space, environment and cleanup.

/** Temp dirs for one test (project, $DSH_HOME, $HOME), removed after it with everything deferred. */
function scratch(t) {
  const stack = []
  t.after(async () => {
    while (stack.length) await stack.pop()()
  })
  const defer = (fn) => stack.push(fn)
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jcli-dsh-host-')))
  defer(() => fs.rmSync(root, { recursive: true, force: true }))
  const dirs = { root, project: path.join(root, 'project'), dshHome: path.join(root, 'dsh-home'), home: path.join(root, 'home') }
  for (const dir of [dirs.project, dirs.dshHome, dirs.home]) fs.mkdirSync(dir)
  fs.copyFileSync(path.join(fixtures, NOTEBOOK), path.join(dirs.project, NOTEBOOK))
  return { ...dirs, defer }
}

/** Set this process's environment (the host's) for one test; restored afterwards. */
function setEnv(s, values) {
  for (const [key, value] of Object.entries(values)) {
    const old = process.env[key]
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
    s.defer(() => {
      if (old === undefined) delete process.env[key]
      else process.env[key] = old
    })
  }
}

/** The real `j-cli setup dsh --<scope>`, run in the project with $HOME and $DSH_HOME in scratch. */
function setup(s, scope) {
  const env = { ...process.env, HOME: s.home, DSH_HOME: s.dshHome }
  const out = execFileSync(JCLI, ['-j', 'setup', 'dsh', `--${scope}`], { cwd: s.project, env, encoding: 'utf8' })
  return JSON.parse(out)
}

// ---- Booting DSH.

/** The bundle-like layer: the DSH services the plugin injects, under dsh-base's row ids. */
function hostLayer(s, { omit, guardedTools }) {
  const rows = [
    // ctx.systemPrompt, which dsh-tools injects to feed its tool schemas into the prompt.
    { id: 'system-prompt', name: '@deepseek-ai/dsh-system-prompt', config: { persona: '' } },
    // ctx.tools: the registry and its execution pipeline.
    { id: 'tools', name: '@deepseek-ai/dsh-tools' },
    // ctx.subprocess, which ctx.shell spawns through.
    { id: 'subprocess', name: '@deepseek-ai/dsh-subprocess-local' },
    // ctx.shell, working in the project, as `dsh` started there would (its default is process.cwd()).
    { id: 'bash-local', name: '@deepseek-ai/dsh-bash-local', config: { cwd: s.project } },
    // ctx.attachments: content-addressed objects under $DSH_HOME/attachments.
    { id: 'attachment-local', name: '@deepseek-ai/dsh-attachment-local' },
  ]
  if (guardedTools) {
    rows.push(
      // DSH's own bash tool (and ctx.shellEnv, which it injects), running commands through ctx.shell.
      { id: 'shell-env', name: '@deepseek-ai/dsh-shell-env', config: { dshHome: s.dshHome } },
      { id: 'tool-bash', name: '@deepseek-ai/dsh-tool-bash', config: { enableRunInBackground: false } },
      // DSH's own read/write/edit tools over the local file system (ctx.fs).
      { id: 'fs-local', name: '@deepseek-ai/dsh-fs-local' },
      { id: 'tool-fs', name: '@deepseek-ai/dsh-tool-fs' },
    )
  }
  return { insert: rows.filter((row) => row.id !== omit) }
}

/**
 * Boot DSH for a scratch project: PATH gets JCLI_BIN's directory (after any
 * `pathFirst`), $DSH_HOME is scratch, the profile root is `[]`, and the
 * layers are the host layer then (for `--user`) `$DSH_HOME/cordis.patch.yml`.
 * Resolves `{ ctx, logs }`; the context is disposed after the test.
 */
async function bootDsh(s, { scope = 'project', pathFirst = [], jcliBin, omit, guardedTools = false } = {}) {
  setEnv(s, { DSH_HOME: s.dshHome, PATH: [...pathFirst, path.dirname(JCLI), process.env.PATH].join(path.delimiter), JCLI_BIN: jcliBin })
  const profile = resolveProfileDir(PROFILE)
  fs.mkdirSync(profile, { recursive: true })
  fs.writeFileSync(path.join(profile, 'cordis.yml'), '[]\n')
  const layers = [hostLayer(s, { omit, guardedTools })]
  {
    const user = loadOptionalPatches(BIN_NAME, path.join(resolveDshHome(), PROFILE_PATCH_FILENAME))
    assert.ok(user, `no ${PROFILE_PATCH_FILENAME} in $DSH_HOME`)
    layers.push(...user)
  }
  const logs = []
  const ctx = await boot(BIN_NAME, path.join(profile, 'cordis.yml'), layers, (root) => {
    root.logger.exporter({ colors: false, export: (message) => logs.push(message) })
  })
  s.defer(() => ctx.fiber.dispose())
  return { ctx, logs }
}

const problems = (logs) => logs.filter((m) => m.type === 'error' || m.type === 'warn').map((m) => `${m.type} ${m.name}: ${m.args.map(String).join(' ')}`)

/**
 * The regression guard every test boots through: nothing warned or failed
 * while booting (boot() itself rejects an entry that did not load or
 * activate), the j-cli row is the one setup wrote, and the tool is registered.
 */
function assertPluginLoaded(host, rowName) {
  assert.deepEqual(problems(host.logs), [], 'the boot logged warnings or errors')
  const rows = [...host.ctx.loader.entries()].filter((entry) => entry.options.id === 'j-cli')
  assert.equal(rows.length, 1, 'exactly one j-cli row in the booted tree')
  assert.equal(rows[0].options.name, rowName)
  assert.ok(rows[0].fiber, 'the j-cli row has no plugin fiber')
  assert.ok(host.ctx.tools.get(TOOL), `${TOOL} is not registered`)
  assert.ok(host.ctx.tools.schemas().some((schema) => schema.name === TOOL), `${TOOL} is not in the schemas shown to a model`)
}

/**
 * `j-cli setup dsh --project`, then do what its warning says: paste the quoted
 * include row into `$DSH_HOME/cordis.patch.yml`, and boot.
 */
function installProject(s) {
  const result = setup(s, 'project')
  assert.equal(result.plugin, path.join(s.project, '.dsh', 'plugins', 'jcli.ts'))
  const include = /`(- insert: \[.*\])`/.exec(result.warnings.join('\n'))
  assert.ok(include, `setup dsh --project did not quote the include row: ${JSON.stringify(result.warnings)}`)
  assert.ok(include[1].includes(pathToFileURL(path.join(s.project, '.dsh', 'cordis.yml')).href))
  fs.mkdirSync(s.dshHome, { recursive: true })
  fs.writeFileSync(path.join(s.dshHome, PROFILE_PATCH_FILENAME), `${include[1]}\n`)
  return result
}

async function projectHost(t, options = {}) {
  const s = options.scratch ?? scratch(t)
  installProject(s)
  const host = await bootDsh(s, options)
  assertPluginLoaded(host, './plugins/jcli.ts')
  return { ...host, s }
}

let calls = 0
/** One call through the registry's whole pipeline, as the agent loop makes it. */
function read(ctx, args, signal = new AbortController().signal) {
  return ctx.tools.execute({ callId: `jcli-${++calls}`, name: TOOL, arguments: args, signal })
}

// ---- Fixture facts, computed here rather than trusted from the plugin.

/** The image bytes of a case's output, decoded from the .ipynb itself. */
function notebookBytes(c) {
  const env = c.expect.envelope
  const nb = JSON.parse(fs.readFileSync(path.join(fixtures, c.request.file_path), 'utf8'))
  const cell = nb.cells.find((cell) => cell.id === env.source.cell_id)
  const data = cell.outputs[env.source.output_index].data[env.selected.mime_type]
  return Buffer.from((Array.isArray(data) ? data.join('') : data).replace(/\s/g, ''), 'base64')
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

/** Files the attachment store holds (none until something is saved). */
function storedObjects(dshHome) {
  const dir = path.join(dshHome, 'attachments', 'v1', 'objects')
  return fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length : 0
}

function alive(pid) {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if (error.code === 'ESRCH') return false
    throw error
  }
  // A zombie has exited; only its parent has yet to reap it.
  try {
    return !/^\d+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return true
  }
}

/**
 * A `j-cli` that never answers: it records its pid (written then renamed, so
 * the file appears whole), then blocks opening a FIFO nobody writes.
 * `started()` resolves with that pid when the file appears (fs.watch, no polling).
 */
function blockingJcli(s) {
  const dir = path.join(s.root, 'blocking-bin')
  fs.mkdirSync(dir)
  const gate = path.join(s.root, 'gate')
  const mark = path.join(s.root, 'started')
  execFileSync('mkfifo', [gate])
  const q = (p) => `'${p.replace(/'/g, `'\\''`)}'`
  fs.writeFileSync(path.join(dir, 'j-cli'), `#!/bin/sh\necho $$ > ${q(mark)}.tmp && mv ${q(mark)}.tmp ${q(mark)}\nexec cat ${q(gate)} > /dev/null\n`, { mode: 0o755 })
  let pid
  s.defer(() => {
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL')
  })
  return {
    dir,
    mark,
    started() {
      return new Promise((resolve) => {
        const look = () => {
          let text
          try {
            text = fs.readFileSync(mark, 'utf8')
          } catch {
            return
          }
          watcher.close()
          pid = Number(text)
          resolve(pid)
        }
        const watcher = fs.watch(s.root, look)
        s.defer(() => watcher.close())
        look()
      })
    },
  }
}

/** A PNG built here (8-bit RGB, one IDAT), so its bytes and size are known. */
function png(width, height, pixel) {
  const chunk = (type, data) => {
    const head = Buffer.alloc(8)
    head.writeUInt32BE(data.length, 0)
    head.write(type, 4, 'latin1')
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(zlib.crc32(Buffer.concat([head.subarray(4), data])))
    return Buffer.concat([head, data, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8
  ihdr[9] = 2
  const raw = Buffer.alloc(height * (1 + 3 * width))
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) pixel(raw, y * (1 + 3 * width) + 1 + 3 * x)
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(raw, { level: 1 })), chunk('IEND', Buffer.alloc(0))])
}

function writeImageNotebook(dir, name, images) {
  const outputs = images.map((bytes) => ({ output_type: 'display_data', metadata: {}, data: { 'image/png': bytes.toString('base64') } }))
  const nb = { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [{ cell_type: 'code', id: 'a', metadata: {}, execution_count: 1, source: 'x', outputs }] }
  fs.writeFileSync(path.join(dir, name), JSON.stringify(nb))
}

// ---- The tests.

test('1. a PNG comes back as exactly one image block whose stored attachment has the notebook bytes', { timeout: TIMEOUT }, async (t) => {
  const { ctx, s } = await projectHost(t)
  const c = cases.get('png')
  const expected = notebookBytes(c)
  const result = await read(ctx, c.request)
  assert.equal(result.isError, false, JSON.stringify(result.error))
  const images = result.content.filter((block) => block.type === 'image')
  assert.equal(images.length, 1, 'exactly one image block')
  const [image] = images
  t.diagnostic(`content: ${JSON.stringify(result.content)}`)
  assert.equal(image.attachment.mediaType, 'image/png')
  assert.equal(image.attachment.bytes, expected.length)
  assert.deepEqual([image.attachment.width, image.attachment.height], [expected.readUInt32BE(16), expected.readUInt32BE(20)])
  assert.equal(image.attachment.attachmentId, `sha256:${sha256(expected)}`, 'the store addresses the notebook bytes')

  const stored = await ctx.attachments.readImage(image.attachment)
  const same = Buffer.from(stored.data.buffer, stored.data.byteOffset, stored.data.byteLength).equals(expected)
  t.diagnostic(`readImage: ${stored.data.byteLength} bytes, sha256 ${sha256(stored.data)}; notebook: ${expected.length} bytes; equal: ${same}`)
  assert.ok(same, "the stored bytes are not the notebook's")
  assert.deepEqual(stored.ref, image.attachment)
  assert.equal(storedObjects(s.dshHome), 1)

  // The canonical value (what a code-mode program gets) carries the reference only.
  assert.equal(result.value.kind, 'image')
  assert.deepEqual(result.value.image, image.attachment)
  const b64 = expected.toString('base64')
  const visible = JSON.stringify({ value: result.value, content: result.content }).replaceAll(image.attachment.attachmentId, '')
  assert.ok(!visible.includes(b64.slice(0, 40)) && !BASE64_RUN.test(visible), 'base64 in the value or content')
})

test('2. text and HTML come back verbatim, byte for byte, with no attachment', { timeout: TIMEOUT }, async (t) => {
  const { ctx, s } = await projectHost(t)
  for (const name of ['html', 'html_as_plain', 'stream_stdout']) {
    const c = cases.get(name)
    const env = c.expect.envelope
    const expected = env.selected?.data ?? env.stream.data
    const mime = env.selected?.mime_type ?? `stream/${env.stream.name}`
    const result = await read(ctx, c.request)
    assert.equal(result.isError, false, `${name}: ${JSON.stringify(result.error)}`)
    assert.equal(result.content.length, 1, name)
    assert.equal(result.content[0].type, 'text', name)
    assert.ok(Buffer.from(result.content[0].text, 'utf8').equals(Buffer.from(expected, 'utf8')), `${name}: not verbatim: ${JSON.stringify(result.content[0].text)}`)
    assert.deepEqual([result.value.kind, result.value.mime_type, result.value.text], ['text', mime, expected], name)
  }
  assert.equal(storedObjects(s.dshHome), 0)
})

test('3. the catalog (no output_index) is the envelope as text, with no image block', { timeout: TIMEOUT }, async (t) => {
  const { ctx, s } = await projectHost(t)
  const c = cases.get('catalog_bundle') // cell 9: a PNG/JPEG bundle and a stream
  assert.ok(c.expect.envelope.outputs[0].available_mime_types.includes('image/png'))
  const result = await read(ctx, c.request)
  assert.equal(result.isError, false, JSON.stringify(result.error))
  assert.deepEqual(result.content.map((block) => block.type), ['text'])
  const listing = JSON.parse(result.content[0].text)
  const absolute = listing.source.path
  listing.source.path = path.relative(s.project, absolute) // cases.json stores it relative, in the label too
  listing.source.label = listing.source.label.replace(absolute, listing.source.path)
  assert.deepEqual(listing, c.expect.envelope)
  assert.equal(result.value.kind, 'outputs')
  assert.equal(storedObjects(s.dshHome), 0, 'a catalog saved an attachment')
})

test('4. a cell that does not exist is an error result carrying CELL_NOT_FOUND', { timeout: TIMEOUT }, async (t) => {
  const { ctx } = await projectHost(t)
  const result = await read(ctx, { file_path: NOTEBOOK, cell_index: 999 })
  t.diagnostic(JSON.stringify(result))
  assert.equal(result.isError, true)
  assert.equal(result.value, undefined)
  assert.match(result.error.message, /^CELL_NOT_FOUND: /)
  assert.deepEqual(result.content, [{ type: 'text', text: `Error: ${result.error.message}` }])
})

test('5a. a call aborted before dispatch is an abort, and no j-cli is started', { timeout: TIMEOUT }, async (t) => {
  const s = scratch(t)
  const blocking = blockingJcli(s)
  const { ctx } = await projectHost(t, { scratch: s, pathFirst: [blocking.dir] })
  const result = await read(ctx, cases.get('png').request, AbortSignal.abort())
  t.diagnostic(JSON.stringify(result))
  assert.equal(result.isError, true)
  assert.equal(result.value, undefined)
  assert.equal(result.error.info?.code, TOOL_ABORTED_BEFORE_DISPATCH)
  assert.equal(fs.existsSync(blocking.mark), false, 'j-cli was started for a call stopped before dispatch')
})

test('5b. a call aborted while j-cli is reading is an abort, and j-cli is gone', { timeout: TIMEOUT }, async (t) => {
  const s = scratch(t)
  const blocking = blockingJcli(s)
  const { ctx } = await projectHost(t, { scratch: s, pathFirst: [blocking.dir] })
  const controller = new AbortController()
  const started = blocking.started()
  const pending = read(ctx, cases.get('png').request, controller.signal)
  const settledFirst = pending.then((result) => {
    throw new Error(`the call settled before j-cli started: ${JSON.stringify(result)}`)
  })
  const pid = await Promise.race([started, settledFirst])
  assert.ok(alive(pid), 'the j-cli stand-in is not running')
  controller.abort()
  const result = await pending
  t.diagnostic(JSON.stringify(result))
  assert.equal(result.isError, true, 'an aborted read must not succeed')
  assert.equal(result.value, undefined)
  // The registry's own abort (a body that settles normally after the stop), or the plugin's thrown ABORTED.
  assert.ok(result.error.info?.code === TOOL_ABORTED || /^ABORTED: /.test(result.error.message), `not an abort: ${result.error.message}`)
  assert.equal(alive(pid), false, 'j-cli outlived the aborted call')
})

test('6. --user: the insert patch in $DSH_HOME/cordis.patch.yml loads the plugin and the read works', { timeout: TIMEOUT }, async (t) => {
  const s = scratch(t)
  const result = setup(s, 'user')
  const plugin = path.join(s.dshHome, 'plugins', 'jcli.ts')
  assert.equal(result.plugin, plugin)
  assert.equal(fs.existsSync(path.join(s.project, '.dsh')), false, '--user wrote into the project')
  const host = await bootDsh(s, { scope: 'user' })
  assertPluginLoaded(host, plugin)
  const c = cases.get('png')
  const read1 = await read(host.ctx, c.request)
  assert.equal(read1.isError, false, JSON.stringify(read1.error))
  const [image] = read1.content.filter((block) => block.type === 'image')
  const stored = await host.ctx.attachments.readImage(image.attachment)
  assert.ok(Buffer.from(stored.data).equals(notebookBytes(c)))
  const html = await read(host.ctx, cases.get('html').request)
  assert.equal(html.isError, false, JSON.stringify(html.error))
  assert.equal(html.content[0].text, cases.get('html').expect.envelope.selected.data)
})

test('7a. guard: the booted tree is exactly the host rows plus the row setup wrote, which stays untouched', { timeout: TIMEOUT }, async (t) => {
  const s = scratch(t)
  const host = await projectHost(t, { scratch: s })
  const composition = path.join(s.project, '.dsh', 'cordis.yml')
  const before = fs.readFileSync(composition)
  const ids = [...host.ctx.loader.entries()].map((entry) => entry.options.id).sort()
  assert.deepEqual(ids, ['attachment-local', 'bash-local', 'include', 'j-cli', 'j-cli-project', 'subprocess', 'system-prompt', 'tools'])
  const result = await read(host.ctx, cases.get('html').request)
  assert.equal(result.isError, false)
  await host.ctx.fiber.dispose()
  assert.deepEqual(problems(host.logs), [], 'warnings or errors while running or disposing')
  assert.ok(fs.readFileSync(composition).equals(before), 'the Loader rewrote .dsh/cordis.yml')
})

test('7b. guard: an unloadable plugin file fails the boot loudly (so the guard cannot pass vacuously)', { timeout: TIMEOUT }, async (t) => {
  const s = scratch(t)
  installProject(s)
  fs.appendFileSync(path.join(s.project, '.dsh', 'plugins', 'jcli.ts'), '\nexport const = ;\n')
  await assert.rejects(bootDsh(s), /plugin\(s\) failed to load: \.\/plugins\/jcli\.ts/)
})

test('7c. guard: the plugin waiting for a service it injects fails the boot', { timeout: TIMEOUT }, async (t) => {
  const s = scratch(t)
  installProject(s)
  await assert.rejects(bootDsh(s, { omit: 'attachment-local' }), /\.\/plugins\/jcli\.ts: pending \(waiting for service: attachments\)/)
})

test('JCLI_BIN, when set in the host, wins over j-cli on PATH', { timeout: TIMEOUT }, async (t) => {
  const s = scratch(t)
  const broken = path.join(s.root, 'broken-bin')
  fs.mkdirSync(broken)
  fs.writeFileSync(path.join(broken, 'j-cli'), '#!/bin/sh\necho not json >&2\nexit 3\n', { mode: 0o755 })
  const { ctx } = await projectHost(t, { scratch: s, pathFirst: [broken], jcliBin: JCLI })
  const result = await read(ctx, cases.get('html').request)
  assert.equal(result.isError, false, JSON.stringify(result.error))
  assert.equal(result.content[0].text, cases.get('html').expect.envelope.selected.data)
})

// j-cli's `host: 'dsh'` profile must fit what dsh-attachment-local admits by
// default (the dsh-base row sets no limits): at most 2000 px per side and
// 3.5 MiB (`ctx.attachments.imageLimits`).
test('an image j-cli fitted for DSH is admitted by the real attachment store', { timeout: TIMEOUT }, async (t) => {
  const s = scratch(t)
  let seed = 7
  const noise = (raw, i) => {
    for (let k = 0; k < 3; k++) raw[i + k] = (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24
  }
  const wide = png(5000, 1000, (raw, i) => raw.set([10, 200, 30], i)) // fitted to 2000x400
  const heavy = png(1110, 1110, noise) // 3.53 MiB: over the store's 3.5 MiB, so j-cli must shrink it
  writeImageNotebook(s.project, 'big.ipynb', [wide, heavy])
  const { ctx } = await projectHost(t, { scratch: s })
  t.diagnostic(`store limits: ${JSON.stringify(ctx.attachments.imageLimits)}`)
  const refused = []
  for (const outputIndex of [0, 1]) {
    const result = await read(ctx, { file_path: 'big.ipynb', cell_index: 0, output_index: outputIndex })
    t.diagnostic(`output ${outputIndex}: ${JSON.stringify(result.content)}`)
    if (result.isError) refused.push(`output ${outputIndex}: ${result.error.message}`)
  }
  assert.deepEqual(refused, [])
})

// ---- The guards: DSH's own bash, edit and write tools, through the registry's
// pipeline, with j-cli's tools/pre-execute and tools/post-execute listeners.

/** A py:percent a.py paired (by the real j-cli) with a.ipynb in the project. */
function pairInProject(s) {
  fs.writeFileSync(path.join(s.project, 'a.py'), '# %%\nx = 1\n\n# %%\nprint(x)\n')
  execFileSync(JCLI, ['convert', 'py-to-ipynb', 'a.py'], { cwd: s.project })
}

function callTool(ctx, name, args) {
  return ctx.tools.execute({ callId: `jcli-${++calls}`, name, arguments: args, signal: new AbortController().signal })
}

test('8. guards: DSH\'s bash tool refuses papermill and a paired .py with j-cli\'s reason, before running it; ordinary commands run', { timeout: TIMEOUT }, async (t) => {
  const { ctx, s } = await projectHost(t, { guardedTools: true })
  pairInProject(s)
  assert.ok(ctx.tools.get('bash'), "DSH's bash tool is not registered")
  const marker = path.join(s.project, 'ran')
  const denied = await callTool(ctx, 'bash', { command: `touch ${marker} && papermill a.ipynb b.ipynb`, description: 'Run the notebook' })
  t.diagnostic(`denied: ${JSON.stringify(denied.content)}`)
  assert.equal(denied.isError, true)
  assert.match(denied.error.message, /^j-cli notebook-exec-guard: `papermill` runs a notebook outside j-cli/)
  assert.ok(denied.error.message.includes('j-cli exec SESSION -f a.ipynb'))
  assert.equal(fs.existsSync(marker), false, 'the denied command ran')
  const python = await callTool(ctx, 'bash', { command: 'python a.py', description: 'Run the script' })
  assert.equal(python.isError, true)
  assert.match(python.error.message, /^j-cli python-run-guard: /)

  const ordinary = await callTool(ctx, 'bash', { command: `echo ordinary && touch ${marker}`, description: 'Say something' })
  t.diagnostic(`ordinary: ${JSON.stringify(ordinary.content)}`)
  assert.equal(ordinary.isError, false, JSON.stringify(ordinary.error))
  assert.ok(JSON.stringify(ordinary.content).includes('ordinary'))
  assert.equal(fs.existsSync(marker), true, 'the ordinary command did not run')
})

test('9. guards: DSH\'s edit and write tools refuse a hand edit of a paired .ipynb; an edit of the .py syncs the notebook and says so', { timeout: TIMEOUT }, async (t) => {
  const { ctx, s } = await projectHost(t, { guardedTools: true })
  pairInProject(s)
  // Absolute paths: without an agent session, DSH's fs tools resolve against the process's directory.
  const notebook = path.join(s.project, 'a.ipynb')
  const py = path.join(s.project, 'a.py')
  const before = fs.readFileSync(notebook)
  for (const [name, args] of [
    ['edit', { file_path: notebook, old_string: 'x = 1', new_string: 'x = 3' }],
    ['write', { file_path: notebook, content: '{}' }],
  ]) {
    const denied = await callTool(ctx, name, args)
    assert.equal(denied.isError, true, name)
    assert.match(denied.error.message, /^j-cli notebook-edit-guard: a\.ipynb is paired with the py:percent a\.py; edit a\.py instead/, name)
  }
  assert.ok(fs.readFileSync(notebook).equals(before), 'the notebook was written')

  const read = await callTool(ctx, 'read', { file_path: py }) // DSH's edit tool wants the file read first
  assert.equal(read.isError, false, JSON.stringify(read.error))
  const edited = await callTool(ctx, 'edit', { file_path: py, old_string: 'x = 1', new_string: 'x = 2' })
  t.diagnostic(`edited: ${JSON.stringify(edited.content)}`)
  assert.equal(edited.isError, false, JSON.stringify(edited.error))
  const note = edited.content.filter((block) => block.type === 'text' && block.text.startsWith('[j-cli] '))
  assert.equal(note.length, 1, 'no j-cli note in the content the model reads')
  assert.match(note[0].text, /j-cli synced .*a\.ipynb from .*a\.py: 1 cells kept/)
  const cells = JSON.parse(fs.readFileSync(notebook, 'utf8')).cells
  assert.equal([].concat(cells[0].source).join(''), 'x = 2')
})

// ---- Reads through the sidecar's socket (sidecar-client.mjs, inlined into the installed plugin).

test('10. with a sidecar running, reads go through its socket (no j-cli spawned for a read) and equal the spawned ones', { timeout: 4 * TIMEOUT }, async (t) => {
  const s = scratch(t)
  const log = path.join(s.root, 'spawns.log')
  const counting = path.join(s.root, 'counting-j-cli')
  fs.writeFileSync(counting, `#!/bin/sh\necho "$*" >> ${JSON.stringify(log)}\nexec ${JSON.stringify(JCLI)} "$@"\n`, { mode: 0o755 })
  const requests = [cases.get('png').request, cases.get('html').request, { file_path: NOTEBOOK, cell_index: 999 }]
  const { ctx } = await projectHost(t, { scratch: s, jcliBin: counting })
  const shape = (r) => JSON.stringify({ isError: r.isError, value: r.value, content: r.content, error: r.error?.message })
  const spawned = []
  for (const request of requests) spawned.push(shape(await read(ctx, request))) // JCLI_SIDECAR=off
  const readsSpawned = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('-j notebook')).length : 0)
  assert.equal(readsSpawned(), requests.length)

  const sidecarEnv = { ...process.env }
  delete sidecarEnv.JCLI_SIDECAR
  const status = () => JSON.parse(execFileSync(JCLI, ['-j', 'sidecar', 'status'], { cwd: s.project, env: sidecarEnv, encoding: 'utf8' })).requests_served
  execFileSync(JCLI, ['sidecar', 'start'], { cwd: s.project, env: sidecarEnv })
  s.defer(() => execFileSync(JCLI, ['sidecar', 'stop'], { cwd: s.project, env: sidecarEnv }))
  setEnv(s, { JCLI_SIDECAR: undefined })
  const before = status()
  const socketed = []
  for (const request of requests) socketed.push(shape(await read(ctx, request)))
  assert.equal(status(), before + requests.length + 1, 'the sidecar served every read (and one status call)')
  assert.equal(readsSpawned(), requests.length, 'no j-cli was spawned for a read through the socket')
  assert.deepEqual(socketed, spawned)
})

// ---- wait_notebook_job: `j-cli -j job wait` on a real background job (an embedded Jupyter Server, a real kernel and sidecar).

/** A point in a cell: the cell closes `ready` (the test sees it got there), then waits until the test opens and closes `go`. */
function barrier(dir, name) {
  const ready = path.join(dir, `${name}-ready`)
  const go = path.join(dir, `${name}-go`)
  execFileSync('mkfifo', [ready, go])
  return {
    code: `open(${JSON.stringify(ready)}, 'w').close()\nopen(${JSON.stringify(go)}).read()\n`,
    reached: () => fs.readFileSync(ready),
    release: () => fs.writeFileSync(go, ''),
  }
}

test('11. wait_notebook_job: a 1 s wait on a job held at a barrier is a timed-out snapshot, and the next wait gets the ended job', { timeout: 2 * TIMEOUT }, async (t) => {
  const s = scratch(t)
  const { ctx } = await projectHost(t, { scratch: s })
  const jobsEnv = { ...process.env }
  delete jobsEnv.JCLI_SIDECAR // a background job needs the sidecar; the plugin's waits do not
  const jcli = (...args) => JSON.parse(execFileSync(JCLI, ['-j', ...args], { cwd: s.project, env: jobsEnv, encoding: 'utf8' }))
  jcli('session', 'create', '-n', 'jobs') // starts the workspace's embedded Jupyter Server
  s.defer(() => execFileSync(JCLI, ['server', 'stop'], { cwd: s.project, env: jobsEnv }))
  s.defer(() => execFileSync(JCLI, ['sidecar', 'stop'], { cwd: s.project, env: jobsEnv }))
  const hold = barrier(s.root, 'dsh')
  const started = jcli('exec', 'jobs', '-c', `print('held')\n${hold.code}print('done')\n`, '--background')
  assert.equal(started.status, 'running')
  hold.reached()

  const wait = (args) => ctx.tools.execute({ callId: `jcli-${++calls}`, name: 'wait_notebook_job', arguments: args, signal: new AbortController().signal })
  const snapshot = await wait({ job_ids: [started.job_id], timeout_seconds: 1 })
  assert.equal(snapshot.isError, false, snapshot.error?.message)
  assert.equal(snapshot.value.timed_out, true)
  assert.deepEqual(snapshot.value.pending, [started.job_id])
  assert.equal(snapshot.value.jobs[0].state, 'running')
  assert.deepEqual(JSON.parse(snapshot.content[0].text), snapshot.value) // the model reads the JSON j-cli prints

  hold.release()
  const ended = await wait({ job_ids: [started.job_id], timeout_seconds: 30 })
  assert.equal(ended.isError, false, ended.error?.message)
  assert.equal(ended.value.timed_out, false)
  assert.deepEqual(ended.value.ended, [started.job_id])
  assert.equal(ended.value.jobs[0].state, 'ok')
  assert.equal(ended.value.jobs[0].result.text, 'held\ndone\n')

  const unknown = await wait({ job_ids: ['nosuch'] })
  assert.equal(unknown.isError, true)
  assert.match(unknown.error.message, /^JOB_NOT_FOUND: no job nosuch/)
})
