// j-cli's sidecar client for Node: one read over the workspace sidecar's Unix
// socket, exactly as docs/protocol.md describes it, with no dependency. Both
// plugins use it; `j-cli setup` inlines this file into the plugin it writes
// (the plugin's one `import ... from "../sidecar-client.mjs"` line), so each
// installed plugin stays one file. Keep every top-level name prefixed
// `sidecar`, so that it cannot clash with a plugin's own names.
//
// `sidecarRead` answers `{ doc }` (the envelope, equal to what
// `j-cli -j notebook output --request -` prints), `{ error: { code, message } }`
// (a coded answer about the request), or null: no sidecar, another version,
// a check that failed, anything unexpected. On null the plugin spawns j-cli,
// which gives the same result the slow way; so nothing depends on the sidecar.
import * as sidecarCrypto from "node:crypto";
import * as sidecarFs from "node:fs";
import * as sidecarNet from "node:net";
import * as sidecarPathMod from "node:path";

/** The wire protocol this client speaks (docs/protocol.md). */
export const SIDECAR_PROTOCOL = 1;
/** Largest response frame accepted (the Python client's cap too). */
export const SIDECAR_MAX_FRAME = 64 * 1024 * 1024;
export const SIDECAR_CONNECT_MS = 2_000;
export const SIDECAR_HELLO_MS = 1_000; // by default (JCLI_SIDECAR_HELLO_SECONDS): a live sidecar answers hello at once
/** A sidecar that answers nothing for this long is treated as gone. */
export const SIDECAR_REQUEST_MS = 120_000;
// ---- begin generated: constants (`make docs` writes it from jcli.setup.generated; edit the source)
/** Codes that say "the transport failed", not "your request is wrong": fall back (the Python client's FALLBACK_CODES). */
const SIDECAR_FALLBACK_CODES = new Set(["INTERNAL_ERROR", "PEER_REFUSED", "PROTOCOL_ERROR", "SIDECAR_ERROR", "SIDECAR_UNAVAILABLE"]);
/** The values (trimmed, any case) that turn a switch such as JCLI_SIDECAR off (j-cli's OFF_VALUES). */
export const SIDECAR_OFF_VALUES = new Set(["0", "disabled", "false", "no", "off"]);
// ---- end generated: constants

/** The hello's deadline in ms: JCLI_SIDECAR_HELLO_SECONDS when it is a number in (0, 120], read as j-cli reads it; else the default. */
export function sidecarHelloMs(env = process.env) {
  const raw = String(env.JCLI_SIDECAR_HELLO_SECONDS ?? "").trim();
  const ok = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(raw) && Number(raw) > 0 && Number(raw) <= 120;
  return ok ? Number(raw) * 1000 : SIDECAR_HELLO_MS;
}

// ---- Where the socket is (jcli_sidecar/base/runtime.py).

const sidecarHashes = new Map(); // workspace -> hash: a plugin sees few workspaces

/** The 16 hex digits naming a workspace's sidecar files: the first 8 bytes of the SHA-256 of its path (workspace_hash). */
export function sidecarWorkspaceHash(workspace) {
  let hash = sidecarHashes.get(workspace);
  if (hash === undefined) {
    hash = sidecarCrypto.createHash("sha256").update(workspace, "utf8").digest("hex").slice(0, 16);
    if (sidecarHashes.size >= 64) sidecarHashes.clear();
    sidecarHashes.set(workspace, hash);
  }
  return hash;
}

/** `$XDG_RUNTIME_DIR/jcli`, else `/tmp/jcli-<uid>`. */
export function sidecarRuntimeDir(env = process.env) {
  return env.XDG_RUNTIME_DIR ? sidecarPathMod.join(env.XDG_RUNTIME_DIR, "jcli") : `/tmp/jcli-${process.getuid()}`;
}

const sidecarUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The socket of `cwd`'s workspace, or null when it may not be used: the
 * sidecar is turned off, the workspace's real path is not UTF-8, the runtime
 * dir is not a directory of ours with mode 0700, the socket is not a
 * socket of ours, or j-cli recorded that sidecar as unresponsive (it
 * missed a hello; the j-cli spawned instead asks it again once it may be alive).
 */
export function sidecarLocate(cwd, env = process.env) {
  if (SIDECAR_OFF_VALUES.has(String(env.JCLI_SIDECAR ?? "").trim().toLowerCase())) return null;
  let workspace;
  try {
    workspace = sidecarUtf8.decode(sidecarFs.realpathSync.native(cwd, { encoding: "buffer" }));
  } catch {
    return null;
  }
  const [euid, dir] = [process.geteuid(), sidecarRuntimeDir(env)];
  const hash = sidecarWorkspaceHash(workspace);
  const socket = sidecarPathMod.join(dir, `${hash}.sock`);
  try {
    const d = sidecarFs.lstatSync(dir);
    if (!d.isDirectory() || d.uid !== euid || (d.mode & 0o077) !== 0) return null;
    const s = sidecarFs.lstatSync(socket);
    if (!s.isSocket() || s.uid !== euid) return null;
  } catch {
    return null;
  }
  if (sidecarFs.existsSync(sidecarPathMod.join(dir, `${hash}.unresponsive`))) return null;
  return { workspace, socket };
}

/**
 * True when `pid` runs as this user (real and effective uid, from /proc) and,
 * where this network namespace shows the socket listening on `socketPath`,
 * holds it.
 */
export function sidecarPeerIsOurs(pid, socketPath) {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    const status = sidecarFs.readFileSync(`/proc/${pid}/status`, "utf8");
    const uids = /^Uid:\s+(\d+)\s+(\d+)/m.exec(status);
    const euid = process.geteuid();
    if (!uids || Number(uids[1]) !== euid || Number(uids[2]) !== euid) return false;
    // The listening socket bound to the path (its inode in /proc/net/unix), held by that pid.
    const inodes = new Set();
    for (const line of sidecarFs.readFileSync("/proc/net/unix", "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length >= 8 && cols.slice(7).join(" ") === socketPath && cols[3] === "00010000") inodes.add(cols[6]);
    }
    // /proc/net/unix lists the sockets of this process's network namespace
    // only: a host sandboxed in its own (`unshare -n`) sees none of the
    // sidecar's. Then the private dir and the uid checks stand alone.
    if (inodes.size === 0) return true;
    for (const fd of sidecarFs.readdirSync(`/proc/${pid}/fd`)) {
      let target;
      try {
        target = sidecarFs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m && inodes.has(m[1])) return true;
    }
    return false;
  } catch {
    return false;
  }
}

// ---- msgpack, for exactly the types the protocol carries.

/**
 * One frame: a 4-byte big-endian length, then `message` as msgpack. The
 * message is first taken through JSON, so that it carries exactly what
 * `JSON.stringify` would send j-cli on stdin (undefined dropped, NaN null, ...).
 * Throws on what cannot be sent the same way (a lone surrogate, an integer
 * beyond 2^53).
 */
export function sidecarPackFrame(message) {
  const parts = [];
  sidecarPack(JSON.parse(JSON.stringify(message)), parts);
  const body = Buffer.concat(parts);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length);
  return Buffer.concat([header, body]);
}

function sidecarHead(parts, small, tag8, tag16, tag32, n, smallLimit) {
  if (small !== null && n < smallLimit) parts.push(Buffer.from([small | n]));
  else if (tag8 !== null && n < 0x100) parts.push(Buffer.from([tag8, n]));
  else if (n < 0x10000) {
    const b = Buffer.alloc(3);
    b[0] = tag16;
    b.writeUInt16BE(n, 1);
    parts.push(b);
  } else {
    const b = Buffer.alloc(5);
    b[0] = tag32;
    b.writeUInt32BE(n, 1);
    parts.push(b);
  }
}

function sidecarPack(value, parts) {
  if (value === null) parts.push(Buffer.from([0xc0]));
  else if (value === true || value === false) parts.push(Buffer.from([value ? 0xc3 : 0xc2]));
  else if (typeof value === "number") {
    if (Number.isInteger(value)) {
      if (!Number.isSafeInteger(value)) throw new Error("an integer beyond 2^53");
      const b = Buffer.alloc(9);
      b[0] = 0xd3;
      b.writeBigInt64BE(BigInt(value), 1);
      parts.push(b);
    } else {
      const b = Buffer.alloc(9);
      b[0] = 0xcb;
      b.writeDoubleBE(value, 1);
      parts.push(b);
    }
  } else if (typeof value === "string") {
    if (!value.isWellFormed()) throw new Error("a lone surrogate");
    const bytes = Buffer.from(value, "utf8");
    sidecarHead(parts, 0xa0, 0xd9, 0xda, 0xdb, bytes.length, 32);
    parts.push(bytes);
  } else if (Array.isArray(value)) {
    sidecarHead(parts, 0x90, null, 0xdc, 0xdd, value.length, 16);
    for (const item of value) sidecarPack(item, parts);
  } else {
    const keys = Object.keys(value);
    sidecarHead(parts, 0x80, null, 0xde, 0xdf, keys.length, 16);
    for (const key of keys) {
      sidecarPack(key, parts);
      sidecarPack(value[key], parts);
    }
  }
}

/**
 * Decode one frame's payload into what JSON.parse would give for the same
 * document printed by j-cli: `bin` becomes base64 text, as j-cli prints it.
 * Throws on anything j-cli could not have printed the same way (text that
 * is not UTF-8, a key that is not text, NaN, an ext type, trailing bytes).
 */
export function sidecarUnpack(buf) {
  let at = 0;
  const need = (n) => {
    if (at + n > buf.length) throw new Error("truncated msgpack");
  };
  const str = (n) => {
    need(n);
    const s = sidecarUtf8.decode(buf.subarray(at, at + n));
    at += n;
    return s;
  };
  const bin = (n) => {
    need(n);
    const s = buf.toString("base64", at, at + n);
    at += n;
    return s;
  };
  const big = (x) => Number(x); // rounds as JSON.parse rounds the same digits
  const float = (x) => {
    if (!Number.isFinite(x)) throw new Error("a float j-cli's JSON cannot hold");
    return x;
  };
  const array = (n) => {
    const out = [];
    for (let i = 0; i < n; i++) out.push(item());
    return out;
  };
  const map = (n) => {
    const out = {};
    for (let i = 0; i < n; i++) {
      const key = item();
      if (typeof key !== "string") throw new Error("a map key that is not text");
      const value = item();
      if (key === "__proto__") Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
      else out[key] = value;
    }
    return out;
  };
  const read = (n, f) => {
    need(n);
    const v = f(at);
    at += n;
    return v;
  };
  function item() {
    need(1);
    const t = buf[at++];
    if (t <= 0x7f) return t;
    if (t >= 0xe0) return t - 0x100;
    if ((t & 0xf0) === 0x80) return map(t & 0x0f);
    if ((t & 0xf0) === 0x90) return array(t & 0x0f);
    if ((t & 0xe0) === 0xa0) return str(t & 0x1f);
    switch (t) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return bin(read(1, (p) => buf.readUInt8(p)));
      case 0xc5: return bin(read(2, (p) => buf.readUInt16BE(p)));
      case 0xc6: return bin(read(4, (p) => buf.readUInt32BE(p)));
      case 0xca: return float(read(4, (p) => buf.readFloatBE(p)));
      case 0xcb: return float(read(8, (p) => buf.readDoubleBE(p)));
      case 0xcc: return read(1, (p) => buf.readUInt8(p));
      case 0xcd: return read(2, (p) => buf.readUInt16BE(p));
      case 0xce: return read(4, (p) => buf.readUInt32BE(p));
      case 0xcf: return big(read(8, (p) => buf.readBigUInt64BE(p)));
      case 0xd0: return read(1, (p) => buf.readInt8(p));
      case 0xd1: return read(2, (p) => buf.readInt16BE(p));
      case 0xd2: return read(4, (p) => buf.readInt32BE(p));
      case 0xd3: return big(read(8, (p) => buf.readBigInt64BE(p)));
      case 0xd9: return str(read(1, (p) => buf.readUInt8(p)));
      case 0xda: return str(read(2, (p) => buf.readUInt16BE(p)));
      case 0xdb: return str(read(4, (p) => buf.readUInt32BE(p)));
      case 0xdc: return array(read(2, (p) => buf.readUInt16BE(p)));
      case 0xdd: return array(read(4, (p) => buf.readUInt32BE(p)));
      case 0xde: return map(read(2, (p) => buf.readUInt16BE(p)));
      case 0xdf: return map(read(4, (p) => buf.readUInt32BE(p)));
      default: throw new Error(`msgpack type 0x${t.toString(16)} is not in the protocol`);
    }
  }
  const value = item();
  if (at !== buf.length) throw new Error("trailing bytes after the msgpack value");
  return value;
}

// ---- A held connection, one per sidecar, for as long as this process lives.

/**
 * One connection to a sidecar, kept between reads: the hello (protocol,
 * version, workspace, and that the answering process is ours) is asked once,
 * when it opens; then each `call(op, args, signal)` is one request frame,
 * answered by id, several in flight at once. It closes for good on any
 * transport problem (and rejects every call in flight); the next read opens
 * another. Idle, it keeps no event loop alive.
 */
class SidecarConnection {
  constructor(conn) {
    this.conn = conn;
    this.pending = new Map(); // id -> { resolve, reject, timer }
    this.nextId = 1;
    this.closed = false;
    this.chunks = [];
    this.held = 0;
    this.size = -1; // of the frame being received, once its header is in
    this.onFrame = null; // the hello's, until it is answered
    conn.on("data", (chunk) => this.receive(chunk));
    conn.on("error", (error) => this.close(error));
    conn.on("close", () => this.close(new Error("the sidecar closed the connection")));
  }

  receive(chunk) {
    this.chunks.push(chunk);
    this.held += chunk.length;
    try {
      for (;;) {
        if (this.size < 0) {
          if (this.held < 4) return;
          if (this.chunks[0].length < 4) this.chunks.splice(0, this.chunks.length, Buffer.concat(this.chunks));
          this.size = this.chunks[0].readUInt32BE(0);
          if (this.size > SIDECAR_MAX_FRAME) throw new Error("a frame over the cap");
        }
        if (this.held < 4 + this.size) return;
        const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
        const answer = sidecarUnpack(all.subarray(4, 4 + this.size));
        if (answer === null || typeof answer !== "object" || Array.isArray(answer)) throw new Error("a frame that is not a map");
        this.chunks.splice(0, this.chunks.length, all.subarray(4 + this.size));
        this.held -= 4 + this.size;
        this.size = -1;
        if (this.onFrame !== null) this.onFrame(answer);
        else this.settle(answer);
      }
    } catch (error) {
      this.close(error);
    }
  }

  settle(answer) {
    const waiter = this.pending.get(answer.id);
    if (waiter === undefined) return; // its caller stopped waiting
    this.pending.delete(answer.id);
    clearTimeout(waiter.timer);
    if (this.pending.size === 0) this.conn.unref();
    waiter.resolve(answer);
  }

  /** Send one request; resolves its answer map, rejects when the connection fails, `signal` aborts or no answer comes in time. */
  call(op, args, signal) {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error("the connection is closed"));
      if (signal?.aborted) return reject(new Error("aborted"));
      const id = this.nextId++;
      const drop = (error) => {
        if (!this.pending.delete(id)) return;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (this.pending.size === 0) this.conn.unref();
        reject(error);
      };
      const onAbort = () => drop(new Error("aborted"));
      const timer = setTimeout(() => this.close(new Error("no answer in time")), SIDECAR_REQUEST_MS);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        resolve: (answer) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(answer);
        },
        reject: drop,
        timer,
      });
      this.conn.ref();
      this.conn.write(sidecarPackFrame({ id, op, args }));
    });
  }

  close(error) {
    if (this.closed) return;
    this.closed = true;
    this.conn.destroy();
    if (this.onFrame !== null) this.onFrame(null, error);
    for (const waiter of [...this.pending.values()]) waiter.reject(error);
  }
}

const sidecarHeld = new Map(); // socket path -> Promise<{ connection } | { otherVersion } | null>

/**
 * Open a connection to `where.socket` and say hello as `version`: resolves
 * `{ connection }`, `{ otherVersion: true }` (a sidecar of another version:
 * closed at once), or null (no sidecar, a wrong answer, not ours, no hello in
 * time).
 */
function sidecarOpen(where, version, helloMs) {
  return new Promise((resolve) => {
    const conn = sidecarNet.createConnection({ path: where.socket });
    const connection = new SidecarConnection(conn);
    let timer = setTimeout(() => connection.close(new Error("connect timed out")), SIDECAR_CONNECT_MS);
    connection.onFrame = (answer, error) => {
      clearTimeout(timer);
      connection.onFrame = null;
      if (error !== undefined || answer === null) return resolve(null);
      const r = answer.ok === true ? answer.result : null;
      let verdict = null;
      if (answer.id !== 0 || r === null || typeof r !== "object") verdict = null;
      else if (r.protocol !== SIDECAR_PROTOCOL || r.version !== version) verdict = { otherVersion: true };
      else if (r.workspace === where.workspace && sidecarPeerIsOurs(r.pid, where.socket)) verdict = { connection };
      if (verdict === null || verdict.otherVersion) connection.close(new Error("not used"));
      else conn.unref();
      resolve(verdict);
    };
    conn.on("connect", () => {
      clearTimeout(timer); // a stopped sidecar still accepts: its silence is what tells
      timer = setTimeout(() => connection.close(new Error("no hello in time")), helloMs);
      conn.write(sidecarPackFrame({ id: 0, op: "hello", args: { protocol: SIDECAR_PROTOCOL, version, workspace: where.workspace } }));
    });
  });
}

/** The held connection for `where` as `version`, opening one when there is none (or it closed). */
async function sidecarConnection(where, version, helloMs) {
  const key = `${where.socket}\0${where.workspace}\0${version}`;
  let opening = sidecarHeld.get(key);
  if (opening !== undefined) {
    const held = await opening;
    if (held !== null && held.connection !== undefined && !held.connection.closed) return held;
  }
  opening = sidecarOpen(where, version, helloMs);
  sidecarHeld.set(key, opening);
  const held = await opening;
  if (held === null || held.otherVersion) sidecarHeld.delete(key); // asked again on the next read
  return held;
}

/** What `sidecarRead` answers when the sidecar is another version (a fallback, like null). */
export const SIDECAR_OTHER_VERSION = Object.freeze({ otherVersion: true });

/**
 * Read through the workspace sidecar of `cwd`: `{ doc }`, `{ error }`, or
 * null or SIDECAR_OTHER_VERSION (fall back to spawning j-cli). `version` is the version of the j-cli
 * the plugin would spawn: a sidecar of another version is never used (nor
 * asked to exit: the spawned j-cli does that). The connection is held for
 * the next read; one that has closed since (the sidecar retired) is
 * replaced once before falling back.
 */
export async function sidecarRead({ cwd, op = "notebook.read", request, version, signal, env = process.env, located }) {
  try {
    if (typeof version !== "string" || !version) return null;
    const where = located ?? sidecarLocate(cwd, env);
    if (where === null) return null;
    let reply = null;
    for (let attempt = 0; reply === null && attempt < 2; attempt++) {
      const held = await sidecarConnection(where, version, sidecarHelloMs(env));
      if (held === null) return null;
      if (held.otherVersion) return SIDECAR_OTHER_VERSION;
      try {
        reply = await held.connection.call(op, request, signal);
      } catch (error) {
        if (signal?.aborted || !held.connection.closed) return null;
      }
    }
    if (reply === null) return null;
    if (reply.ok === true) {
      const doc = reply.result;
      return doc !== null && typeof doc === "object" && !Array.isArray(doc) ? { doc } : null;
    }
    const error = reply.error;
    if (error === null || typeof error !== "object" || typeof error.code !== "string" || SIDECAR_FALLBACK_CODES.has(error.code)) return null;
    return { error: { code: error.code, message: typeof error.message === "string" ? error.message : "no message" } };
  } catch {
    return null;
  }
}

/** The version a `j-cli --version` line names ("j-cli, version 0.1.0"), or null. */
export function sidecarParseVersion(text) {
  const m = /^j-cli, version (\S+)\s*$/.exec(String(text).trim());
  return m ? m[1] : null;
}

/**
 * A reader that learns the spawned j-cli's version once per command (with
 * `learnVersion(key)`, resolving the `--version` text or null) and forgets it
 * when a sidecar of another version answers, in case j-cli was upgraded.
 * Where no sidecar may be used it answers null at once, not a promise, so the
 * plugin starts j-cli without waiting a tick.
 */
export function sidecarReader(learnVersion) {
  const versions = new Map();
  const read = async ({ key, cwd, request, signal, op }, located) => {
    if (!versions.has(key)) versions.set(key, Promise.resolve().then(() => learnVersion(key)).then(sidecarParseVersion, () => null));
    const version = await versions.get(key);
    if (version === null) {
      versions.delete(key);
      return null;
    }
    const answer = await sidecarRead({ cwd, op, request, version, signal, located });
    if (answer === SIDECAR_OTHER_VERSION) {
      versions.delete(key);
      return null;
    }
    return answer;
  };
  return (call) => {
    const located = sidecarLocate(call.cwd);
    return located === null ? null : read(call, located);
  };
}
