// The client: Kiln, its sandboxes and every call group of docs/api.md.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { Transport, seg, errorFromBody, DEFAULT_SOCKET, DEFAULT_TIMEOUT_MS } from './transport.js';
import { downloadTo } from './download.js';
import { extractTarGz } from './untar.js';
import { Templates, imagesOf } from './templates.js';
import { Secrets } from './secrets.js';
import { Egress } from './egress.js';
import { KilnError, KilnConnectionError, KilnProtocolError, SandboxNotFoundError, fromKiln } from './errors.js';

// Slack added to the client deadline of a call that carries a guest-side
// timeout (exec's timeout_ms, wait's timeout_ms).
const DEADLINE_SLACK_MS = 30000;

/** `memoryMib` -> `memory_mib`; snake_case keys stay as they are. */
export function snake(key) {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** An options object's top-level keys in kilnd's spelling; undefined values dropped. Nested objects are sent as given. */
export function wire(opts, skip = []) {
  const out = {};
  if (!opts) return out;
  for (const [k, v] of Object.entries(opts)) {
    if (v === undefined || skip.includes(k)) continue;
    out[snake(k)] = v;
  }
  return out;
}

function camel(key) {
  return key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
}

// A stream's silence limit (Kiln({streamTimeoutMs})), as transport options.
export function streamIdle(client) {
  return client.streamTimeoutMs > 0
    ? { idleTimeoutMs: client.streamTimeoutMs, idleAfterHead: true, idleWhat: 'a silent stream: Kiln({streamTimeoutMs})' }
    : {};
}

function deadlineFor(client, timeoutMs) {
  if (client.timeoutMs === 0) return 0;
  if (typeof timeoutMs === 'number' && timeoutMs > 0) return Math.max(client.timeoutMs, timeoutMs + DEADLINE_SLACK_MS);
  if (timeoutMs === 0) return 0; // no guest-side limit asked: no client deadline either
  return client.timeoutMs;
}

function decodeOutput(text, encoding) {
  if (typeof text !== 'string') return Buffer.alloc(0);
  return encoding === 'base64' ? Buffer.from(text, 'base64') : Buffer.from(text, 'utf8');
}

/** exec's answer: camelCase fields, stdout/stderr as text, the bytes in stdoutRaw/stderrRaw. */
export class ExecResult {
  constructor(obj, stdoutRaw, stderrRaw) {
    for (const [k, v] of Object.entries(obj || {})) this[camel(k)] = v;
    this.stdoutRaw = stdoutRaw !== undefined ? stdoutRaw : decodeOutput(obj.stdout, obj.stdout_encoding);
    this.stderrRaw = stderrRaw !== undefined ? stderrRaw : decodeOutput(obj.stderr, obj.stderr_encoding);
    this.stdout = this.stdoutRaw.toString('utf8');
    this.stderr = this.stderrRaw.toString('utf8');
    /** kilnd's object as it came. */
    Object.defineProperty(this, 'raw', { value: obj, enumerable: false });
  }

  get ok() { return this.exitCode === 0; }
}

/** run's answer: ExecResult plus `result` (the code's result.set value) and `error`. */
export class RunResult extends ExecResult {
  constructor(obj, stdoutRaw, stderrRaw) {
    super(obj, stdoutRaw, stderrRaw);
    if (this.result === undefined) this.result = null;
    if (this.error === undefined) this.error = null;
  }
}

/** A stream event: kilnd's JSON object; output events also get `bytes` (a Buffer). */
function eventOf(ev) {
  if ((ev.type === 'stdout' || ev.type === 'stderr') && ev.bytes === undefined) {
    const raw = typeof ev.data_base64 === 'string' ? Buffer.from(ev.data_base64, 'base64') : Buffer.from(typeof ev.data === 'string' ? ev.data : '', 'utf8');
    Object.defineProperty(ev, 'bytes', { value: raw, enumerable: false });
  }
  return ev;
}

/**
 * An async iterable of a stream's events, whose connection closes when the
 * loop is left (break, return, throw) or the stream ends. `terminal` lists
 * the event types that end it; a stream that ends before one is a
 * KilnConnectionError. An `error` event is thrown as its KilnError.
 */
export class EventStream {
  constructor(response, terminal, what) {
    this.response = response;
    this.terminal = terminal;
    this.what = what;
    this.iter = null;
  }

  async *events() {
    let ended = false;
    try {
      for await (const ev of this.response.lines()) {
        if (ended) throw new KilnProtocolError(`${this.what}: an event after the stream's last one`, { code: 'protocol_error' });
        if (ev.type === 'error') {
          const e = ev.error && typeof ev.error === 'object' ? ev.error : {};
          const err = fromKiln(typeof e.code === 'string' ? e.code : 'internal', e.message);
          if (Number.isInteger(ev.step)) err.step = ev.step;
          if (Number.isInteger(ev.line)) err.line = ev.line;
          throw err;
        }
        if (this.terminal.includes(ev.type)) ended = true;
        yield eventOf(ev);
        if (ended) break;
      }
      if (!ended) {
        throw new KilnConnectionError(`${this.what}: the stream ended before its last event (kilnd at ${this.response.transport.socket} went away?); is kilnd running? start it or set KILN_SOCKET`, { code: 'connection_error' });
      }
    } finally {
      this.response.close();
    }
  }

  [Symbol.asyncIterator]() {
    if (!this.iter) this.iter = this.events();
    return this.iter;
  }

  /** Closes the stream's connection (also done by leaving a for-await loop). */
  async close() {
    if (this.iter) await this.iter.return();
    this.response.close();
  }
}

function argvOf(cmd, body) {
  if (typeof cmd === 'string') {
    body.argv = [cmd];
    if (body.shell === undefined) body.shell = true;
  } else if (Array.isArray(cmd)) {
    body.argv = cmd;
  } else {
    throw new TypeError('cmd must be an argv array or a shell command string');
  }
}

function stdinOf(opts, body) {
  if (opts && opts.stdin !== undefined && typeof opts.stdin !== 'string') {
    body.stdin_base64 = Buffer.from(opts.stdin).toString('base64');
    delete body.stdin;
  }
}

export class Kiln {
  /**
   * @param {{socket?: string, timeoutMs?: number, streamTimeoutMs?: number}} [opts] socket: kilnd's
   * API socket ($KILN_SOCKET, else /run/kiln/kiln.sock); timeoutMs: the
   * client deadline of a request (0: none); streamTimeoutMs: how long a
   * stream (exec and run streams, process output, watch) may stay silent
   * once its head arrived (0 or absent: until kilnd ends it or the
   * connection closes). A watch is silent while nothing changes: a limit
   * ends an idle watch too.
   */
  constructor(opts = {}) {
    if (typeof opts === 'string') opts = { socket: opts };
    this.socket = opts.socket || process.env.KILN_SOCKET || DEFAULT_SOCKET;
    this.timeoutMs = opts.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : opts.timeoutMs;
    this.streamTimeoutMs = opts.streamTimeoutMs || 0;
    this.transport = new Transport(this.socket, this.timeoutMs);
    this.sandboxes = new Sandboxes(this);
    this.templates = new Templates(this);
    this.images = imagesOf(this);
    this.secrets = new Secrets(this);
  }

  health() { return this.transport.json('GET', '/v1/health'); }
  metrics() { return this.transport.text('GET', '/metrics'); }
}

export class Sandboxes {
  constructor(kiln) { this.kiln = kiln; }

  /** Creates (boots) a sandbox; a fork with `fromCheckpoint: "ID/NAME"`; from a template's ready snapshot with `template: NAME`. */
  async create(spec = {}) {
    const t = this.kiln.transport;
    const info = await t.json('POST', '/v1/sandboxes', { json: wire(spec) });
    return new Sandbox(this.kiln, info);
  }

  async list(filter = {}) {
    const t = this.kiln.transport;
    let label = filter.label || filter.labels;
    if (label && !Array.isArray(label) && typeof label === 'object') {
      label = Object.entries(label).map(([k, v]) => `${k}=${v}`);
    }
    const doc = await t.json('GET', '/v1/sandboxes', { query: { state: filter.state, label } });
    return doc.sandboxes.map((s) => new Sandbox(this.kiln, s));
  }

  async get(id) {
    const info = await this.kiln.transport.json('GET', `/v1/sandboxes/${seg(id)}`);
    return new Sandbox(this.kiln, info);
  }
}

/** Creates a sandbox, runs fn(sandbox) and deletes the sandbox however fn ends. */
export async function withSandbox(kiln, spec, fn) {
  const sb = await kiln.sandboxes.create(spec);
  try {
    return await fn(sb);
  } finally {
    await sb.close();
  }
}

export class Sandbox {
  constructor(kiln, info) {
    this.kiln = kiln;
    this.id = info.id;
    /** The last sandbox object kilnd answered (api.md's fields, snake_case). */
    this.info = info;
    this.files = new Files(this);
    this.processes = new Processes(this);
    this.ports = new Ports(this);
    this.previews = new Previews(this);
    this.checkpoints = new Checkpoints(this);
    this.firewall = new Firewall(this);
    this.egress = new Egress(this);
  }

  get path() { return `/v1/sandboxes/${seg(this.id)}`; }
  get state() { return this.info.state; }
  get t() { return this.kiln.transport; }

  async lifecycle(verb, body) {
    this.info = await this.t.json('POST', `${this.path}/${verb}`, body ? { json: body } : {});
    return this.info;
  }

  async refresh() { this.info = await this.t.json('GET', this.path); return this.info; }
  stop(opts) { return this.lifecycle('stop', opts ? wire(opts) : undefined); }
  start() { return this.lifecycle('start'); }
  pause() { return this.lifecycle('pause'); }
  resume() { return this.lifecycle('resume'); }
  hibernate() { return this.lifecycle('hibernate'); }
  wake() { return this.lifecycle('wake'); }
  async delete() { await this.t.json('DELETE', this.path); }

  /** Deletes the sandbox; one already gone is fine. */
  async close() {
    try {
      await this.delete();
    } catch (e) {
      if (!(e instanceof SandboxNotFoundError)) throw e;
    }
  }

  /** A fork: a new sandbox from this sandbox's checkpoint `name`. */
  fork(name, opts = {}) {
    return this.kiln.sandboxes.create({ ...opts, fromCheckpoint: `${this.id}/${name}` });
  }

  execBody(cmd, opts, skip) {
    const body = wire(opts, skip);
    argvOf(cmd, body);
    stdinOf(opts, body);
    return body;
  }

  /**
   * Runs cmd (argv array, or a string for `sh -c`) and resolves with its
   * ExecResult; a non-zero exit is not an error. With onStdout/onStderr the
   * output streams to them as it comes.
   */
  async exec(cmd, opts = {}) {
    if (opts.onStdout || opts.onStderr) return this.collect(this.execStream(cmd, opts), opts, ExecResult);
    const body = this.execBody(cmd, opts, ['onStdout', 'onStderr']);
    const obj = await this.t.json('POST', `${this.path}/exec`, { json: body, timeoutMs: deadlineFor(this.kiln, opts.timeoutMs) });
    return new ExecResult(obj);
  }

  /** The exec's events as they come (`stdout`, `stderr`, then `exit`). */
  async execStream(cmd, opts = {}) {
    const body = this.execBody(cmd, opts, ['onStdout', 'onStderr']);
    const r = await this.t.open('POST', `${this.path}/exec`, { json: body, query: { stream: 1 }, ...streamIdle(this.kiln) });
    return new EventStream(r, ['exit'], `exec in ${this.id}`);
  }

  /** Runs a code snippet (language python by default) and resolves with its RunResult. */
  async runCode(code, opts = {}) {
    if (opts.onStdout || opts.onStderr) return this.collect(this.runCodeStream(code, opts), opts, RunResult);
    const body = wire({ language: 'python', ...opts, code }, ['onStdout', 'onStderr']);
    stdinOf(opts, body);
    const obj = await this.t.json('POST', `${this.path}/run`, { json: body, timeoutMs: deadlineFor(this.kiln, opts.timeoutMs) });
    return new RunResult(obj);
  }

  async runCodeStream(code, opts = {}) {
    const body = wire({ language: 'python', ...opts, code }, ['onStdout', 'onStderr']);
    stdinOf(opts, body);
    const r = await this.t.open('POST', `${this.path}/run`, { json: body, query: { stream: 1 }, ...streamIdle(this.kiln) });
    return new EventStream(r, ['result'], `run in ${this.id}`);
  }

  async collect(streamPromise, opts, Result) {
    const stream = await streamPromise;
    const out = [];
    const err = [];
    let exit = null;
    let result = null;
    for await (const ev of stream) {
      if (ev.type === 'stdout') {
        out.push(ev.bytes);
        if (opts.onStdout) await opts.onStdout(ev.bytes.toString('utf8'), ev.bytes);
      } else if (ev.type === 'stderr') {
        err.push(ev.bytes);
        if (opts.onStderr) await opts.onStderr(ev.bytes.toString('utf8'), ev.bytes);
      } else if (ev.type === 'exit') {
        exit = ev;
      } else if (ev.type === 'result') {
        result = ev;
      }
    }
    const obj = { ...(exit || {}), ...(result ? { result: result.result, error: result.error } : {}) };
    delete obj.type;
    return new Result(obj, Buffer.concat(out), Buffer.concat(err));
  }
}

export class Files {
  constructor(sb) { this.sb = sb; }
  get t() { return this.sb.t; }
  get base() { return `${this.sb.path}/files`; }

  /** A streamed download: its chunks (Buffers) as an async iterable. */
  async readStream(path, opts = {}) {
    const r = await this.t.open('GET', this.base, { query: { path, ...wire(opts) }, idleTimeoutMs: this.sb.kiln.timeoutMs });
    return r.chunks();
  }

  /** The whole file as a Buffer. */
  async read(path, opts = {}) {
    const parts = [];
    for await (const c of await this.readStream(path, opts)) parts.push(c);
    return Buffer.concat(parts);
  }

  async readText(path, opts = {}) { return (await this.read(path, opts)).toString('utf8'); }

  /** Writes a Buffer or a string; mode as a number (0o600) or octal text ("0600"). */
  write(path, data, opts = {}) {
    return this.upload(path, typeof data === 'string' ? Buffer.from(data, 'utf8') : data, opts);
  }

  /**
   * Streams source into the guest file: a local path (string), a Buffer, or
   * any async iterable of bytes (a Readable). Resolves with {path, bytes}.
   */
  upload(path, source, opts = {}) {
    const q = { path, ...wire(opts) };
    if (typeof q.mode === 'number') q.mode = `0${q.mode.toString(8)}`;
    const body = typeof source === 'string' ? { localPath: source } : source;
    return this.t.json('PUT', this.base, { query: q, body, timeoutMs: 0, idleTimeoutMs: this.sb.kiln.timeoutMs });
  }

  /**
   * Streams the guest file into dest: a local path (string) or a Writable
   * (each chunk is written with a callback, and the next read waits for
   * it). Memory stays flat whatever the size. Resolves with the byte count.
   */
  async download(path, dest, opts = {}) {
    const query = { path, ...wire(opts) };
    const opt = { errorFromBody, idleTimeoutMs: this.sb.kiln.timeoutMs };
    if (typeof dest !== 'string') {
      // A file or socket stream is done with a chunk when it calls back;
      // any other Writable (a PassThrough) may keep it: it gets copies.
      const copy = !(dest instanceof fs.WriteStream || dest instanceof net.Socket);
      return downloadTo(this.t, this.base, query, dest, { ...opt, copy });
    }
    // Our own file stream is done with a chunk when it calls back: the read
    // buffer is handed to it without a copy.
    return toFile(dest, (out) => downloadTo(this.t, this.base, query, out, { ...opt, copy: false }));
  }

  stat(path, opts = {}) { return this.t.json('GET', `${this.base}/stat`, { query: { path, ...wire(opts) } }); }
  /** {path, entries, count, truncated, skipped} as api.md's files/list. */
  list(path, opts = {}) { return this.t.json('GET', `${this.base}/list`, { query: { path, ...wire(opts) } }); }
  mkdir(path, opts = {}) { return this.t.json('POST', `${this.base}/mkdir`, { json: { path, ...wire(opts) } }); }
  async remove(path, opts = {}) { await this.t.json('POST', `${this.base}/remove`, { json: { path, ...wire(opts) } }); }
  rename(from, to, opts = {}) { return this.t.json('POST', `${this.base}/rename`, { json: { from, to, ...wire(opts) } }); }

  /** The directory's change events (`watching` first); never ends by itself until `end`. */
  async watch(path, opts = {}) {
    const r = await this.t.open('GET', `${this.base}/watch`, { query: { path, ...wire(opts) }, ...streamIdle(this.sb.kiln) });
    return new EventStream(r, ['end'], `watch of ${path} in ${this.sb.id}`);
  }

  /** A tar.gz of the guest directory as an async iterable of Buffers. */
  async downloadArchive(path, opts = {}) {
    const r = await this.sb.t.open('GET', `${this.sb.path}/archive`, { query: { path, ...wire(opts) }, idleTimeoutMs: this.sb.kiln.timeoutMs });
    return r.chunks();
  }

  /** Extracts a tar.gz (local path, Buffer or async iterable) into the guest directory. */
  uploadArchive(path, source, opts = {}) {
    const body = typeof source === 'string' ? { localPath: source } : source;
    return this.sb.t.json('PUT', `${this.sb.path}/archive`, { query: { path, ...wire(opts) }, body, timeoutMs: 0, idleTimeoutMs: this.sb.kiln.timeoutMs });
  }

  /** Uploads a local directory's contents (the system `tar czf`, streamed) into the guest directory. */
  async uploadDir(localDir, path, opts = {}) {
    const tar = spawn('tar', ['czf', '-', '-C', localDir, '.'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const status = tarStatus(tar);
    let answer;
    try {
      answer = await this.uploadArchive(path, tar.stdout, opts);
    } finally {
      if (tar.exitCode === null) tar.kill();
    }
    const { code, err } = await status;
    if (code !== 0) throw new KilnError(`tar czf of ${localDir} failed: ${err.trim() || `exit ${code}`}`, { code: 'local_tar' });
    return answer;
  }

  /**
   * Downloads the guest directory into a local directory (created if missing), extracted here
   * (untar.js), not by the system tar. The archive is the guest's: absolute names, `..`, links
   * that leave the directory and writes through a link already on disk are refused
   * (UnsafePathError naming the member; members before it stay), special files skipped, no owners
   * or set-id bits kept. Resolves with {files, dirs, symlinks, hardlinks, skipped, bytes}.
   */
  async downloadDir(path, localDir, opts = {}) {
    return extractTarGz(await this.downloadArchive(path, opts), localDir);
  }
}

/**
 * fill(out) writes a download into a new file beside dest, which is renamed
 * over dest only once it completed (as `kiln cp` does): an error answer or
 * a cut transfer leaves dest as it was, and the temporary file is removed.
 * A dest that exists and is no regular file (/dev/null, a FIFO) is written
 * in place: nothing may be renamed over it.
 */
async function toFile(dest, fill) {
  let st = null;
  try {
    st = await fs.promises.stat(dest);
  } catch {
    // not there yet
  }
  const inPlace = st !== null && !st.isFile();
  const tmp = inPlace ? dest : `${dest}.kiln-${crypto.randomBytes(6).toString('hex')}`;
  const out = fs.createWriteStream(tmp, { flags: inPlace ? 'w' : 'wx' });
  let fileErr = null;
  out.on('error', (e) => { fileErr = fileErr || e; });
  try {
    let n;
    try {
      n = await fill(out);
    } finally {
      await new Promise((resolve) => { if (out.destroyed) resolve(); else out.end(resolve); out.once('error', resolve); });
    }
    if (fileErr) throw new KilnError(`download to ${dest}: ${fileErr.message}`, { code: 'download_sink' });
    if (!inPlace) {
      try {
        await fs.promises.rename(tmp, dest);
      } catch (e) {
        throw new KilnError(`download to ${dest}: cannot rename ${tmp} over it: ${e.message}`, { code: 'download_sink' });
      }
    }
    return n;
  } catch (e) {
    if (!inPlace) await fs.promises.rm(tmp, { force: true }).catch(() => {});
    throw e;
  }
}

export function tarStatus(child) {
  let err = '';
  child.stderr.on('data', (d) => { if (err.length < 4096) err += d; });
  if (child.stdin) child.stdin.on('error', () => {});
  return new Promise((resolve) => {
    child.on('error', (e) => resolve({ code: -1, err: e.message }));
    child.on('close', (code) => resolve({ code, err }));
  });
}

export class Processes {
  constructor(sb) { this.sb = sb; }

  /** Starts a background process; cmd as for exec. */
  async spawn(cmd, opts = {}) {
    const body = this.sb.execBody(cmd, opts, []);
    const obj = await this.sb.t.json('POST', `${this.sb.path}/processes`, { json: body });
    return new Process(this.sb, obj);
  }

  /** A `sh` on a terminal (POST .../shell). */
  async shell(opts = {}) {
    const obj = await this.sb.t.json('POST', `${this.sb.path}/shell`, { json: wire(opts) });
    return new Process(this.sb, obj);
  }

  async list() {
    const doc = await this.sb.t.json('GET', `${this.sb.path}/processes`);
    return doc.processes.map((p) => new Process(this.sb, p));
  }

  async get(id) {
    const p = new Process(this.sb, { id });
    await p.refresh();
    return p;
  }
}

export class Process {
  constructor(sb, info) {
    this.sb = sb;
    this.id = info.id;
    this.pid = info.pid;
    /** The last process object kilnd answered. */
    this.info = info;
  }

  get path() { return `${this.sb.path}/processes/${seg(this.id)}`; }

  async refresh() {
    this.info = await this.sb.t.json('GET', this.path);
    this.pid = this.info.pid;
    return this.info;
  }

  /**
   * The output's events (`attached`, `stdout`/`stderr` with `seq`, `gap`,
   * `exit`), from `since` (a seq, or "now"; default the oldest the ring
   * holds). Each output event has `next`, the seq to reattach from. With
   * follow: false it ends once it has caught up with the output so far; a
   * process that had exited by then ends with its `exit` event as kilnd
   * sends it.
   */
  async output(opts = {}) {
    const since = opts.since !== undefined ? opts.since : opts.from;
    let until = null;
    if (opts.follow === false) {
      const info = await this.refresh();
      if (info.running !== false) until = info.output_bytes;
    }
    const r = await this.sb.t.open('GET', `${this.path}/output`, { query: { from: since, encoding: opts.encoding }, ...streamIdle(this.sb.kiln) });
    const stream = new EventStream(r, ['exit'], `output of process ${this.id} in ${this.sb.id}`);
    if (until === null) return withNext(stream);
    return caughtUp(withNext(stream), until);
  }

  /** Writes to stdin (string or bytes); eof: true closes it after. */
  writeStdin(data, opts = {}) {
    const body = data === undefined || data === null ? Buffer.alloc(0) : (typeof data === 'string' ? Buffer.from(data) : Buffer.from(data));
    return this.sb.t.json('POST', `${this.path}/stdin`, { body, query: { close: opts.eof ? 1 : undefined } });
  }

  async signal(sig, opts = {}) {
    await this.sb.t.json('POST', `${this.path}/signal`, { json: { signal: sig, ...wire(opts) } });
  }

  /** The exit object once it exited; TimeoutError after timeoutMs (0/absent: no limit). */
  wait(timeoutMs) {
    return this.sb.t.json('POST', `${this.path}/wait`, {
      query: { timeout_ms: timeoutMs || undefined }, timeoutMs: deadlineFor(this.sb.kiln, timeoutMs || 0),
    });
  }

  async resize(rows, cols) {
    await this.sb.t.json('POST', `${this.path}/resize`, { json: { rows, cols } });
  }
}

function withNext(stream) {
  return {
    async *[Symbol.asyncIterator]() {
      for await (const ev of stream) {
        if ((ev.type === 'stdout' || ev.type === 'stderr') && typeof ev.seq === 'number') ev.next = ev.seq + ev.bytes.length;
        else if (ev.type === 'gap' && typeof ev.seq === 'number') ev.next = ev.seq + (ev.bytes || 0);
        yield ev;
      }
    },
    close: () => stream.close(),
  };
}

function caughtUp(stream, until) {
  return {
    async *[Symbol.asyncIterator]() {
      for await (const ev of stream) {
        yield ev;
        if (ev.type === 'exit') return;
        if (ev.type === 'attached' && typeof ev.seq === 'number' && ev.seq >= until) return;
        if (typeof ev.next === 'number' && ev.next >= until) return;
      }
    },
    close: () => stream.close(),
  };
}

export class Ports {
  constructor(sb) { this.sb = sb; }
  add(guestPort, opts = {}) { return this.sb.t.json('POST', `${this.sb.path}/ports`, { json: { guest_port: guestPort, ...wire(opts) } }); }
  async list() { return (await this.sb.t.json('GET', `${this.sb.path}/ports`)).ports; }
  async remove(hostPort) { await this.sb.t.json('DELETE', `${this.sb.path}/ports/${seg(hostPort)}`); }
}

export class Previews {
  constructor(sb) { this.sb = sb; }
  add(port, opts = {}) { return this.sb.t.json('POST', `${this.sb.path}/previews`, { json: { port, ...wire(opts) } }); }
  async list() { return (await this.sb.t.json('GET', `${this.sb.path}/previews`)).previews; }
  async remove(port) { await this.sb.t.json('DELETE', `${this.sb.path}/previews/${seg(port)}`); }
}

export class Checkpoints {
  constructor(sb) { this.sb = sb; }
  create(name, opts = {}) { return this.sb.t.json('POST', `${this.sb.path}/checkpoints`, { json: { name, ...wire(opts) } }); }
  async list() { return (await this.sb.t.json('GET', `${this.sb.path}/checkpoints`)).checkpoints; }
  get(name) { return this.sb.t.json('GET', `${this.sb.path}/checkpoints/${seg(name)}`); }
  async delete(name) { await this.sb.t.json('DELETE', `${this.sb.path}/checkpoints/${seg(name)}`); }
  /** Puts the sandbox back to the checkpoint in place; resolves with the sandbox object. */
  async restore(name) {
    this.sb.info = await this.sb.t.json('POST', `${this.sb.path}/checkpoints/${seg(name)}/restore`);
    return this.sb.info;
  }
}

export class Firewall {
  constructor(sb) { this.sb = sb; }
  get() { return this.sb.t.json('GET', `${this.sb.path}/firewall`); }
  set(rules) { return this.sb.t.json('PUT', `${this.sb.path}/firewall`, { json: rules }); }
  async log() { return (await this.sb.t.json('GET', `${this.sb.path}/firewall/log`)).lines; }
}
