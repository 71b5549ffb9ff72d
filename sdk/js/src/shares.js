// sandbox.shares: client shares (docs/api.md, "Client shares"): a share
// created with { guest_path, client: true } whose files an object in this
// process serves. serve() upgrades GET .../shares/{n}/serve to kiln-fs and
// answers each request line kilnd sends with the object's method:
//   stat(path) -> { type: 'file'|'dir', size, mode?, mtime? }
//   readdir(path) -> [{ name, type }]
//   read(path, offset, size) -> Buffer/Uint8Array/string
//   write(path, offset, data: Buffer) -> bytes written (undefined: all)
//   create(path, mode), mkdir(path, mode), unlink(path), rmdir(path),
//   rename(path, to), truncate(path, size)
// each sync or async. A missing method answers ENOSYS; an Error whose
// `code` is an errno name the protocol has ('ENOENT', ...) answers it;
// anything else EIO.
import { KilnError } from './errors.js';

export const SHARE_PROTOCOL = 'kiln-fs';
const LINE_MAX = 262144;
const WAITING_MAX = 64; // request lines queued before the socket pauses
const ERRORS = new Set(('ENOENT EEXIST ENOTDIR EISDIR ENOTEMPTY EACCES EPERM EROFS ENOSPC EINVAL EIO ' +
  'ENOSYS EFBIG ENAMETOOLONG').split(' '));
const OPS = new Set(['stat', 'readdir', 'read', 'write', 'create', 'mkdir', 'unlink', 'rmdir', 'rename', 'truncate']);

/** The protocol's error name for what a method threw. */
export function errorName(e) {
  const code = e && typeof e.code === 'string' ? e.code : '';
  return ERRORS.has(code) ? code : 'EIO';
}

const IO_MAX = 131072;
const PATH_MAX = 4096;
const NAME_MAX = 255;
const OFFSET_MAX = 2 ** 63 - 1; // as a double: offsets above 2^53 lose their low bits
const MODE_MAX = 0o7777;

/** An absolute path of the protocol: components neither empty, "." nor "..", no NUL, each at most 255 bytes, the whole at most 4096. */
export function pathOk(p) {
  if (typeof p !== 'string' || !p.startsWith('/') || p.includes('\0') || Buffer.byteLength(p) > PATH_MAX) return false;
  if (p === '/') return true;
  return p.slice(1).split('/').every((n) => n !== '' && n !== '.' && n !== '..' && Buffer.byteLength(n) <= NAME_MAX);
}

const intIn = (v, lo, hi) => Number.isInteger(v) && v >= lo && v <= hi;
const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const b64Ok = (v) => typeof v === 'string' && v.length <= Math.ceil(IO_MAX / 3) * 4 && B64.test(v);

/** The request's fields are the protocol's (kilnd checks them; a compromised kilnd must not hand the object a path outside the share, such as "/../x", or a size of its choosing). */
export function requestOk(req) {
  if (!pathOk(req.path)) return false;
  switch (req.op) {
    case 'read': return intIn(req.offset, 0, OFFSET_MAX) && intIn(req.size, 1, IO_MAX);
    case 'write': return intIn(req.offset, 0, OFFSET_MAX) && b64Ok(req.data);
    case 'create': case 'mkdir': return intIn(req.mode, 0, MODE_MAX);
    case 'rename': return pathOk(req.to);
    case 'truncate': return intIn(req.size, 0, OFFSET_MAX);
    default: return true;
  }
}

function callArgs(req) {
  switch (req.op) {
    case 'read': return [req.path, req.offset, req.size];
    case 'write': return [req.path, req.offset, Buffer.from(req.data, 'base64')];
    case 'create': case 'mkdir': return [req.path, req.mode];
    case 'rename': return [req.path, req.to];
    case 'truncate': return [req.path, req.size];
    default: return [req.path];
  }
}

function okReply(req, result) {
  const out = { id: req.id };
  switch (req.op) {
    case 'stat':
      out.type = result.type;
      out.size = Number(result.size || 0);
      if (result.mode !== undefined && result.mode !== null) out.mode = result.mode;
      if (result.mtime !== undefined && result.mtime !== null) out.mtime = result.mtime;
      break;
    case 'readdir':
      out.entries = result.map((e) => ({ name: e.name, type: e.type }));
      break;
    case 'read': {
      const b = Buffer.from(result === undefined || result === null ? '' : result);
      out.data = b.subarray(0, req.size).toString('base64');
      break;
    }
    case 'write': {
      const n = Buffer.from(req.data, 'base64').length;
      out.size = result === undefined || result === null ? n : Math.min(Number(result), n);
      break;
    }
    default:
      break;
  }
  return out;
}

/** One request to obj: its reply line (an object). */
export async function dispatch(obj, req) {
  const fn = OPS.has(req.op) && obj ? obj[req.op] : undefined;
  if (typeof fn !== 'function') return { id: req.id, error: 'ENOSYS' };
  if (!requestOk(req)) return { id: req.id, error: 'EINVAL' };
  let result;
  try {
    result = await fn.apply(obj, callArgs(req));
  } catch (e) {
    return { id: req.id, error: errorName(e) };
  }
  try {
    const out = okReply(req, result);
    JSON.stringify(out); // a value no JSON line can carry (a BigInt): EIO now, not a missing answer
    return out;
  } catch {
    return { id: req.id, error: 'EIO' };
  }
}

/** A share's index from its index or guest path (the sandbox object's shares). */
export function shareIndex(info, share) {
  if (typeof share === 'number') return share;
  const shares = (info && info.shares) || [];
  const i = shares.findIndex((s) => s.guest_path === share);
  if (i < 0) {
    throw new KilnError(`sandbox ${info && info.id} has no share at guest path ${JSON.stringify(share)} (its shares: ${JSON.stringify(shares.map((s) => s.guest_path))})`);
  }
  return i;
}

/** serve()'s handle: close() ends the serving (the share answers EIO); `errors` holds kilnd's messages about replies it refused; `closed` resolves when the connection ends. */
export class ShareServer {
  constructor(index, obj, socket, head) {
    this.index = index;
    this.errors = [];
    this.obj = obj;
    this.socket = socket;
    this.buf = Buffer.alloc(0);
    this.chain = Promise.resolve();
    this.waiting = 0; // lines queued on chain, not yet answered
    this.paused = false;
    this.closed = new Promise((resolve) => {
      socket.on('close', resolve);
    });
    socket.on('error', () => {});
    socket.on('data', (d) => this.feed(d));
    if (head && head.length) this.feed(head);
  }

  get serving() { return !this.socket.destroyed; }

  feed(d) {
    this.buf = Buffer.concat([this.buf, d]);
    let nl;
    while ((nl = this.buf.indexOf(10)) >= 0) {
      const line = this.buf.subarray(0, nl).toString('utf8');
      this.buf = this.buf.subarray(nl + 1);
      // A line that throws must neither stop the chain nor be an unhandled rejection (which ends the process).
      this.waiting++;
      this.chain = this.chain.then(() => this.line(line)).catch(() => {}).finally(() => this.done());
    }
    // kilnd sends one request at a time; lines that pile up (a compromised kilnd) pause the socket.
    if (this.waiting >= WAITING_MAX && !this.paused) {
      this.paused = true;
      this.socket.pause();
    }
    if (this.buf.length > LINE_MAX) this.socket.destroy();
  }

  done() {
    this.waiting--;
    if (this.paused && this.waiting <= WAITING_MAX / 4) {
      this.paused = false;
      this.socket.resume();
    }
  }

  async line(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (!msg || typeof msg !== 'object') return;
    if (msg.kind === 'error') {
      this.errors.push(typeof msg.message === 'string' ? msg.message : JSON.stringify(msg.message));
      return;
    }
    if (typeof msg.op !== 'string') return;
    const reply = await dispatch(this.obj, msg);
    if (!this.socket.destroyed) this.socket.write(JSON.stringify(reply) + '\n');
  }

  async close() {
    this.socket.destroy();
    await this.closed;
  }
}

function fsError(code, path) {
  const e = new Error(`${code}: ${path}`);
  e.code = code;
  return e;
}

/** An example share object: a tree in memory. `files` maps each file's path to a Buffer; `dirs` holds the directories ('/' and any made or implied). The guest sees a share's files as root's, so MemoryFS reports every file 0666 and directory 0777: the sandbox's default user may write too. The guest chooses offsets and sizes: the files together hold at most `maxBytes` (default 256 MiB; ENOSPC beyond; a write or truncate ending past it: EFBIG). */
export class MemoryFS {
  constructor(files = {}, { maxBytes = 256 * 1024 * 1024 } = {}) {
    this.maxBytes = maxBytes;
    this.files = new Map();
    this.dirs = new Set(['/']);
    for (const [p, v] of Object.entries(files)) {
      this.files.set(p, Buffer.from(v));
      this.addParents(p);
    }
  }

  addParents(p) {
    const parts = p.split('/').filter(Boolean).slice(0, -1);
    for (let i = 1; i <= parts.length; i++) this.dirs.add('/' + parts.slice(0, i).join('/'));
  }

  static parent(p) { return p.slice(0, p.lastIndexOf('/')) || '/'; }

  room(p, len) {
    if (len > this.maxBytes) throw fsError('EFBIG', p);
    let total = 0;
    for (const b of this.files.values()) total += b.length;
    if (total - this.files.get(p).length + len > this.maxBytes) throw fsError('ENOSPC', p);
  }

  needDir(p) {
    if (this.files.has(p)) throw fsError('ENOTDIR', p);
    if (!this.dirs.has(p)) throw fsError('ENOENT', p);
  }

  stat(p) {
    if (this.files.has(p)) return { type: 'file', size: this.files.get(p).length, mode: 0o666 };
    if (this.dirs.has(p)) return { type: 'dir', size: 0, mode: 0o777 };
    throw fsError('ENOENT', p);
  }

  readdir(p) {
    this.needDir(p);
    const prefix = p === '/' ? '/' : p + '/';
    const out = new Map();
    for (const f of this.files.keys()) {
      if (f.startsWith(prefix) && !f.slice(prefix.length).includes('/')) out.set(f.slice(prefix.length), 'file');
    }
    for (const d of this.dirs) {
      if (d !== '/' && d.startsWith(prefix) && !d.slice(prefix.length).includes('/')) out.set(d.slice(prefix.length), 'dir');
    }
    return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, type]) => ({ name, type }));
  }

  read(p, offset, size) {
    if (this.dirs.has(p)) throw fsError('EISDIR', p);
    if (!this.files.has(p)) throw fsError('ENOENT', p);
    return this.files.get(p).subarray(offset, offset + size);
  }

  write(p, offset, data) {
    if (!this.files.has(p)) throw fsError('ENOENT', p);
    let old = this.files.get(p);
    this.room(p, Math.max(old.length, offset + data.length));
    if (old.length < offset + data.length) old = Buffer.concat([old, Buffer.alloc(offset + data.length - old.length)]);
    data.copy(old, offset);
    this.files.set(p, old);
    return data.length;
  }

  create(p) {
    this.needDir(MemoryFS.parent(p));
    if (this.files.has(p) || this.dirs.has(p)) throw fsError('EEXIST', p);
    this.files.set(p, Buffer.alloc(0));
  }

  mkdir(p) {
    this.needDir(MemoryFS.parent(p));
    if (this.files.has(p) || this.dirs.has(p)) throw fsError('EEXIST', p);
    this.dirs.add(p);
  }

  unlink(p) {
    if (this.dirs.has(p)) throw fsError('EISDIR', p);
    if (!this.files.delete(p)) throw fsError('ENOENT', p);
  }

  rmdir(p) {
    this.needDir(p);
    const prefix = p + '/';
    if (p === '/' || [...this.files.keys(), ...this.dirs].some((x) => x.startsWith(prefix))) throw fsError('ENOTEMPTY', p);
    this.dirs.delete(p);
  }

  rename(p, to) {
    this.needDir(MemoryFS.parent(to));
    if (this.files.has(p)) {
      if (this.dirs.has(to)) throw fsError('EISDIR', to);
      this.files.set(to, this.files.get(p));
      this.files.delete(p);
      return;
    }
    if (!this.dirs.has(p) || p === '/') throw fsError('ENOENT', p);
    if (this.files.has(to)) throw fsError('ENOTDIR', to);
    if (to.startsWith(p + '/')) throw fsError('EINVAL', to);
    if (to === p) return;
    // Over a directory: only an empty one (an ancestor never is).
    const under = to === '/' ? '/' : to + '/';
    if (this.dirs.has(to) && [...this.files.keys(), ...this.dirs].some((x) => x !== '/' && x.startsWith(under))) throw fsError('ENOTEMPTY', to);
    this.dirs.delete(to);
    const moved = (x) => (x === p || x.startsWith(p + '/') ? to + x.slice(p.length) : x);
    this.dirs = new Set([...this.dirs].map(moved));
    this.files = new Map([...this.files].map(([k, v]) => [moved(k), v]));
  }

  truncate(p, size) {
    if (!this.files.has(p)) throw fsError('ENOENT', p);
    const old = this.files.get(p);
    this.room(p, size);
    this.files.set(p, size <= old.length ? old.subarray(0, size) : Buffer.concat([old, Buffer.alloc(size - old.length)]));
  }
}

export class Shares {
  constructor(sb) { this.sb = sb; }

  /** Serve share `share` (its index, or its guest path) with obj until the handle's close(); one client per share (BusyError for a second). */
  async serve(share, obj) {
    const index = typeof share === 'number' ? share : shareIndex(await this.sb.refresh(), share);
    const { socket, head } = await this.sb.t.upgrade('GET', `${this.sb.path}/shares/${index}/serve`, { protocol: SHARE_PROTOCOL });
    return new ShareServer(index, obj, socket, head);
  }
}
