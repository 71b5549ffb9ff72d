// Templates (build with its streamed log, list, get, delete) and images
// (list, get, import streamed from a file, delete): docs/api.md,
// "Templates" and "Images".
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { seg } from './transport.js';
import { EventStream, streamIdle, tarStatus, wire } from './client.js';
import { KilnError, KilnProtocolError } from './errors.js';

/** A symlink member `name` -> `target` that leaves the archive's root (kilnd's rule: absolute, or more `..` than it is deep). */
export function linkLeaves(name, target) {
  if (!target || target.startsWith('/') || target.includes('\0')) return true;
  let depth = name.split('/').length - 1;
  for (const part of target.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (depth === 0) return true;
      depth -= 1;
    } else {
      depth += 1;
    }
  }
  return false;
}

/** kilnd's cap of a build context's members (CONTEXT_MEMBERS_MAX): a larger directory is refused before packing. */
export const MAX_CONTEXT_MEMBERS = 16384;

// The members of a context directory (relative names), nothing followed:
// `top` gets the names directly in it that are packed, `left` the names
// (at any depth) left out: symlinks pointing outside it and special
// files, one message each in `skipped`. More than MAX_CONTEXT_MEMBERS
// entries in the whole tree (counted in `seen.n` as they are listed)
// stops the walk there, before the rest of a huge directory is read.
async function contextMembers(dir, prefix, top, left, skipped, seen) {
  const entries = [];
  for await (const e of await fs.promises.opendir(path.join(dir, prefix))) {
    if (++seen.n > MAX_CONTEXT_MEMBERS) {
      const name = prefix ? `${prefix}/${e.name}` : e.name;
      throw new KilnError(`templates.build: contextDir ${dir} has more than ${MAX_CONTEXT_MEMBERS} entries (kilnd's cap of a build context; at '${name}'): build from a directory that holds only the build file and what it COPYs`, { code: 'local_context' });
    }
    entries.push(e.name);
  }
  entries.sort();
  for (const base of entries) {
    const name = prefix ? `${prefix}/${base}` : base;
    const st = await fs.promises.lstat(path.join(dir, name));
    let keep = true;
    if (st.isSymbolicLink()) {
      const target = await fs.promises.readlink(path.join(dir, name));
      if (linkLeaves(name, target)) {
        skipped.push(`skipped symlink '${name}' -> '${target}': it points outside the context directory`);
        keep = false;
      }
    } else if (st.isDirectory()) {
      await contextMembers(dir, name, top, left, skipped, seen);
    } else if (!st.isFile()) {
      skipped.push(`skipped '${name}': not a file, directory or symlink`);
      keep = false;
    }
    if (!keep) left.push(name);
    else if (!prefix) top.push(name);
  }
}

/**
 * `dir` packed as tar.gz into a temporary file by the system GNU tar:
 * { file, skipped, cleanup }. The listing here only decides what is left
 * out; tar itself descends from the top-level names (openat, O_NOFOLLOW),
 * so no path with a directory in it is ever opened by name, and a
 * directory swapped for a symlink while packing is packed as that symlink,
 * never followed. What is left out is excluded by exact name (anchored, no
 * wildcards). Links are kept as links; a file with several links is packed
 * as a file each time. `hooks.beforeTar` (tests) runs between the listing
 * and tar.
 */
export async function packContext(dir, hooks = {}) {
  let st;
  try {
    st = await fs.promises.stat(dir);
  } catch (e) {
    throw new KilnError(`templates.build: contextDir ${dir}: ${e.message}`, { code: 'local_context' });
  }
  if (!st.isDirectory()) throw new KilnError(`templates.build: contextDir ${dir} is not a directory`, { code: 'local_context' });
  const top = [];
  const left = [];
  const skipped = [];
  await contextMembers(dir, '', top, left, skipped, { n: 0 });
  if (hooks.beforeTar) await hooks.beforeTar();
  const tmp = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'kiln-context.'));
  const cleanup = () => fs.promises.rm(tmp, { recursive: true, force: true });
  const file = path.join(tmp, 'context.tar.gz');
  try {
    // --exclude on the command line (tar reads -X files by lines, so a
    // name with a newline could not be given there).
    const tar = spawn('tar', ['czf', file, '-C', dir, '--hard-dereference', '--owner=0', '--group=0', '--numeric-owner',
      '--anchored', '--no-wildcards', ...left.map((n) => `--exclude=${n}`),
      '--null', '--verbatim-files-from', '-T', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
    const status = tarStatus(tar);
    tar.stdin.end(top.length ? Buffer.from(top.join('\0') + '\0') : Buffer.alloc(0));
    const { code, err } = await status;
    if (code !== 0) throw new KilnError(`tar czf of ${dir} failed: ${err.trim() || `exit ${code}`}`, { code: 'local_tar' });
  } catch (e) {
    await cleanup();
    throw e;
  }
  return { file, skipped, cleanup };
}

/**
 * A template build's log as an async iterable of its events (`step`,
 * `cached`, `stdout`/`stderr` with `bytes`, `copied`, `ready`,
 * `step_end`, `result`). After `result` (the last line) `result` is the
 * new template. An `error` line is thrown as its KilnError with `step`
 * and `line` set; a log that ends without either is a KilnConnectionError.
 * `skipped`: what packing `contextDir` left out.
 */
export class BuildStream {
  constructor(response, what, skipped) {
    this.stream = new EventStream(response, ['result'], what);
    this.what = what;
    this.result = null;
    this.skipped = skipped;
    this.iter = null;
  }

  async *events() {
    for await (const ev of this.stream) {
      if (ev.type === 'result') {
        if (!ev.template || typeof ev.template !== 'object' || Array.isArray(ev.template)) {
          throw new KilnProtocolError(`${this.what}: a result line without a template object`, { code: 'protocol_error' });
        }
        this.result = ev.template;
      }
      yield ev;
    }
  }

  [Symbol.asyncIterator]() {
    if (!this.iter) this.iter = this.events();
    return this.iter;
  }

  /** Closes the log's connection (also done by leaving a for-await loop). */
  async close() {
    if (this.iter) await this.iter.return();
    await this.stream.close();
  }
}

function contextBody(context) {
  if (typeof context === 'string') return { localPath: context };
  if (Buffer.isBuffer(context) || context instanceof Uint8Array) return context;
  if (context && typeof context === 'object' && typeof context[Symbol.asyncIterator] === 'function') return context;
  throw new TypeError('templates.build: context must be a tar.gz: a local path, a Buffer or an async iterable of bytes');
}

export class Templates {
  constructor(kiln) { this.kiln = kiln; }

  /**
   * POST /v1/templates?name=NAME: the build's log as a BuildStream.
   * opts: contextDir (a local directory, packed into a temporary file
   * first; nothing followed: symlinks out of it are left out) or context
   * (a tar.gz already made: a local path, a Buffer or an async iterable),
   * file, cpus, memoryMib, diskMib. A build refused before it starts
   * rejects with its error (BadFieldError naming the build file's line,
   * BusyError, InUseError, NoSpaceError, BodyTooLargeError, ...).
   */
  async buildStream(name, opts = {}) {
    const { contextDir, context } = opts;
    if ((contextDir === undefined) === (context === undefined)) {
      throw new TypeError('templates.build: give contextDir (a directory, packed here) or context (a tar.gz), one of them');
    }
    const query = { name, ...wire(opts, ['contextDir', 'context', 'onEvent']) };
    const k = this.kiln;
    let packed = null;
    let body;
    if (contextDir !== undefined) {
      packed = await packContext(contextDir);
      body = { localPath: packed.file };
    } else {
      body = contextBody(context);
    }
    try {
      // The upload may take long but never sits silent over timeoutMs;
      // the log may (a quiet RUN step): streamTimeoutMs from its head on.
      const r = await k.transport.open('POST', '/v1/templates', {
        query, body, headers: { 'Content-Type': 'application/gzip' }, timeoutMs: 0,
        idleTimeoutMs: k.timeoutMs, idleAfterHeadMs: streamIdle(k).idleTimeoutMs || 0,
      });
      return new BuildStream(r, `template build of ${name}`, packed ? packed.skipped : []);
    } finally {
      if (packed) await packed.cleanup(); // the body is sent once the head is in
    }
  }

  /** Builds template `name` (as buildStream) and resolves to it; opts.onEvent(ev) sees each log event. */
  async build(name, opts = {}) {
    const stream = await this.buildStream(name, opts);
    for await (const ev of stream) {
      if (opts.onEvent) await opts.onEvent(ev);
    }
    return stream.result;
  }

  async list() { return (await this.kiln.transport.json('GET', '/v1/templates')).templates; }
  get(name) { return this.kiln.transport.json('GET', `/v1/templates/${seg(name)}`); }
  async delete(name) { await this.kiln.transport.json('DELETE', `/v1/templates/${seg(name)}`); }
}

/**
 * kiln.images: a function (kiln.images() lists them, as before) with
 * list, get, import and delete.
 */
export function imagesOf(kiln) {
  const t = () => kiln.transport;
  const images = () => images.list();
  images.list = async () => (await t().json('GET', '/v1/images')).images;
  images.get = (name) => t().json('GET', `/v1/images/${seg(name)}`);
  /**
   * POST /v1/images?name=NAME: an OCI or docker-save archive (a local
   * path, a Buffer or an async iterable, e.g. a file stream), streamed,
   * never held in memory. opts: devices (a root client only), ref (the
   * tag to import from an OCI layout of several), timeoutMs
   * (how long kilnd may stay silent, the upload or the import; default
   * an hour, kilnd's cap of an import).
   */
  images.import = (name, source, opts = {}) => {
    const body = typeof source === 'string' ? { localPath: source } : source;
    return t().json('POST', '/v1/images', {
      query: { name, devices: opts.devices ? 1 : undefined, ref: opts.ref }, body,
      headers: { 'Content-Type': 'application/octet-stream' },
      timeoutMs: 0, idleTimeoutMs: opts.timeoutMs === undefined ? 3600000 : opts.timeoutMs,
    });
  };
  images.delete = async (name) => { await t().json('DELETE', `/v1/images/${seg(name)}`); };
  return images;
}
