// The guest's tar stream, read as it arrives, with the rules of kiln's C
// reader (api/proto/agent_tar.c, docs/agent-protocol.md "tar_upload"):
// ustar headers with verified checksums, pax `x` (path, linkpath, size,
// mtime) and GNU `L`/`K` long names of at most 64 KiB, `g` ignored. The
// archive is hostile: every member is checked before it is reported, and
// a member that could leave the directory stops the whole stream.
//
// Names are kept as latin1 strings: one character per byte, so names that
// are not UTF-8 reach the file system byte for byte (Buffer.from(s, 'latin1')).
import { BadArchiveError, UnsafePathError } from './errors.js';

export const BLOCK = 512;
/** pax `x` and GNU `L`/`K` data: the agent protocol's limit (TAR_EXT_MAX). */
export const EXT_MAX = 65536;
const NAME_MAX = 255;
const PATH_MAX = 4095; // AGENT_PATH_MAX

const S = { HEADER: 0, DATA: 1, SKIP: 2, EXT: 3, ZERO: 4, DONE: 5, ERROR: 6 };

/** A latin1 name as the UTF-8 its bytes usually are, cut for a message. */
export function shown(s) {
  const t = Buffer.from(s, 'latin1').toString('utf8');
  return t.length > 200 ? `${t.slice(0, 200)}...` : t;
}

const bad = (msg) => new BadArchiveError(msg, { code: 'bad_archive' });
const unsafe = (msg) => new UnsafePathError(msg, { code: 'unsafe_path' });

/**
 * A numeric header field: octal (leading spaces, then NUL or space to its
 * end; all blank is 0) or GNU base-256 (first byte 0x80 or 0xff). The
 * value, or null for garbage, a negative value where none is allowed, or
 * one beyond 2^53 - 1 (8 PiB: no guest file is that large).
 */
export function parseNumber(f, allowNeg = false) {
  let v = 0n;
  let i = 0;
  if (f[0] & 0x80) {
    const neg = (f[0] & 0x40) !== 0;
    if (neg && !allowNeg) return null;
    v = BigInt(f[0] & 0x3f) - (neg ? 64n : 0n);
    for (i = 1; i < f.length; i++) v = v * 256n + BigInt(f[i]);
  } else {
    while (i < f.length && f[i] === 0x20) i++;
    for (; i < f.length && f[i] >= 0x30 && f[i] <= 0x37; i++) v = v * 8n + BigInt(f[i] - 0x30);
    for (; i < f.length; i++) if (f[i] !== 0x20 && f[i] !== 0) return null;
  }
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return Number(v);
}

/**
 * A member name without empty and `.` components, relative: {name, dir}
 * (dir: it ended in '/'; name '' is the directory itself). Absolute names
 * and `..` components are unsafe_path; a component over 255 bytes or a name
 * over 4095 is bad_archive, as the C reader's (tar_name_normalize).
 */
export function normalizeName(raw, target) {
  if (raw.includes('\0')) throw bad(`tar member '${shown(raw)}': the name contains a NUL byte; the archive is corrupt`);
  if (raw.startsWith('/')) {
    throw unsafe(`tar member '${shown(raw)}': absolute name would leave ${target}; the archive must hold relative paths inside the target`);
  }
  const parts = [];
  let len = 0;
  for (const c of raw.split('/')) {
    if (c === '' || c === '.') continue;
    if (c === '..') throw unsafe(`tar member '${shown(raw)}': '..' would leave ${target}; the archive must hold relative paths inside the target`);
    len += (parts.length ? 1 : 0) + c.length;
    if (c.length > NAME_MAX || len > PATH_MAX) {
      throw bad(`tar member '${shown(raw)}': the name is too long: at most ${NAME_MAX} bytes per component and ${PATH_MAX} in all`);
    }
    parts.push(c);
  }
  return { name: parts.join('/'), dir: raw.endsWith('/') };
}

/**
 * May symlink member `name` (normalised) point at `link`? Relative only;
 * `..` only before any name (after a name it climbs from wherever that
 * name leads, which may itself be a link), and no higher than the
 * member's own directory is deep: tar_symlink_check's rule. Throws if not.
 */
export function checkSymlink(name, link, target) {
  const what = `tar symlink '${shown(name)}' -> '${shown(link)}'`;
  if (!link || link.includes('\0')) throw bad(`tar symlink '${shown(name)}': empty target or a NUL byte in it; the archive is corrupt`);
  if (link.startsWith('/')) throw unsafe(`${what}: an absolute target points outside ${target}; use a relative target`);
  const depth = name.split('/').length - 1;
  let climb = 0;
  let named = false;
  for (const c of link.split('/')) {
    if (c === '' || c === '.') continue;
    if (c !== '..') { named = true; continue; }
    if (named) throw unsafe(`${what}: '..' after a name could climb out of ${target}; put every '..' first`);
    if (++climb > depth) throw unsafe(`${what}: '..' would leave ${target}; the link must point inside the target`);
  }
}

function fieldString(h, off, len) {
  const f = h.subarray(off, off + len);
  const nul = f.indexOf(0);
  return f.toString('latin1', 0, nul < 0 ? len : nul);
}

function checksumOk(h) {
  const stored = parseNumber(h.subarray(148, 156));
  if (stored === null) return false;
  let us = 0;
  let ss = 0;
  for (let i = 0; i < BLOCK; i++) {
    const b = i >= 148 && i < 156 ? 0x20 : h[i];
    us += b;
    ss += b > 127 ? b - 256 : b;
  }
  return stored === us || stored === ss;
}

const isZero = (b) => { for (const x of b) if (x) return false; return true; };

/**
 * feed(buf) yields events, in order, for the bytes given (any split):
 *   {kind: 'member', member}  member: {type: 'file'|'dir'|'symlink'|'hardlink',
 *                                      name, link, size, mode, mtime (seconds)}
 *   {kind: 'data', data}      the next bytes of the current file (a view of buf)
 *   {kind: 'fileEnd'}         the current file is complete
 *   {kind: 'skipped'}         a device, FIFO, sparse file or unknown type
 *   {kind: 'end'}             the end-of-archive blocks; the rest is ignored
 * and throws BadArchiveError or UnsafePathError at the first member it
 * refuses (and again on every later call). finish() at the end of the
 * stream throws when it cut a header or a member.
 */
export class TarReader {
  /** target: how messages name the destination. */
  constructor(target) {
    this.target = target || 'the target directory';
    this.state = S.HEADER;
    this.blk = Buffer.alloc(BLOCK);
    this.blkLen = 0;
    this.offset = 0;     // archive bytes consumed
    this.hdrOffset = 0;  // where the current header began
    this.left = 0;       // bytes left of a data area, or of the padding being skipped
    this.pad = 0;        // padding after the current data or extended header
    this.member = null;
    this.error = null;
    this.clearOverrides();
  }

  clearOverrides() {
    this.o = { pending: false, paxPath: null, paxLink: null, gnuPath: null, gnuLink: null, size: null, mtime: null, sparse: false };
  }

  get done() { return this.state === S.DONE; }

  fail(err) {
    this.state = S.ERROR;
    this.error = err;
    return err;
  }

  *feed(buf) {
    if (this.state === S.ERROR) throw this.error;
    let used = 0;
    while (used < buf.length) {
      const avail = buf.length - used;
      let take;
      switch (this.state) {
        case S.DONE:
          this.offset += avail;
          return;
        case S.DATA:
          take = Math.min(avail, this.left);
          this.left -= take;
          this.offset += take;
          used += take;
          yield { kind: 'data', data: buf.subarray(used - take, used) };
          if (!this.left) yield* this.fileEnd();
          continue;
        case S.SKIP:
          take = Math.min(avail, this.left);
          this.left -= take;
          if (!this.left) this.state = S.HEADER;
          break;
        case S.EXT:
          take = Math.min(avail, this.left);
          buf.copy(this.ext, this.extLen, used, used + take);
          this.extLen += take;
          this.left -= take;
          break;
        default: // HEADER, ZERO: a block
          if (!this.blkLen) this.hdrOffset = this.offset;
          take = Math.min(avail, BLOCK - this.blkLen);
          buf.copy(this.blk, this.blkLen, used, used + take);
          this.blkLen += take;
          break;
      }
      used += take;
      this.offset += take;
      if (this.state === S.EXT && !this.left) {
        this.extDone();
        this.skip(this.pad);
      } else if (this.blkLen === BLOCK) {
        this.blkLen = 0;
        if (this.state === S.ZERO) {
          if (!isZero(this.blk)) throw this.fail(bad(`tar header at byte ${this.hdrOffset} follows a lone zero block; the archive is corrupt`));
          this.state = S.DONE;
          yield { kind: 'end' };
        } else {
          yield* this.header();
        }
      }
    }
  }

  *fileEnd() {
    yield { kind: 'fileEnd' };
    this.skip(this.pad);
  }

  skip(n) {
    this.left = n;
    this.state = n ? S.SKIP : S.HEADER;
  }

  /** The stream ended: throws unless that is at a member boundary. */
  finish() {
    switch (this.state) {
      case S.ERROR: throw this.error;
      case S.DONE: return;
      case S.HEADER:
      case S.ZERO:
        if (this.blkLen) {
          throw this.fail(bad(`archive cut off inside a header block (${this.blkLen} of ${BLOCK} bytes at byte ${this.hdrOffset}); download it again`));
        }
        if (this.o.pending) throw this.fail(bad('archive ends after an extended header without its member; download it again'));
        this.state = S.DONE;
        return;
      case S.DATA:
        throw this.fail(bad(`archive cut off inside member '${shown(this.member.name)}' (${this.left + this.pad} bytes missing); download it again`));
      default:
        throw this.fail(bad(`archive cut off inside a member at byte ${this.offset}; download it again`));
    }
  }

  /** pax records ("%d %s=%s\n", the length counting itself) into the overrides. */
  paxParse(d) {
    const at = `pax header at byte ${this.hdrOffset}`;
    let p = 0;
    while (p < d.length) {
      let i = p;
      let len = 0;
      while (i < d.length && d[i] >= 0x30 && d[i] <= 0x39 && i - p < 6) len = len * 10 + (d[i++] - 0x30);
      // Shortest record: "5 k=\n"; the key starts inside the record.
      if (i === p || i >= d.length || d[i] !== 0x20 || len < 5 || len > d.length - p || i + 1 >= p + len - 1 || d[p + len - 1] !== 0x0a) {
        throw this.fail(bad(`${at}: malformed record at offset ${p}; the archive is corrupt`));
      }
      const rec = d.subarray(i + 1, p + len - 1);
      const eq = rec.indexOf(0x3d);
      if (eq <= 0) throw this.fail(bad(`${at}: record without 'key=' at offset ${p}; the archive is corrupt`));
      const key = rec.toString('latin1', 0, eq);
      const val = rec.toString('latin1', eq + 1);
      p += len;
      if (key === 'path' || key === 'linkpath') {
        if (val.includes('\0')) throw this.fail(bad(`${at}: '${key}' contains a NUL byte; the archive is corrupt`));
        // An empty value deletes the override (pax "Extended Header").
        this.o[key === 'path' ? 'paxPath' : 'paxLink'] = val || null;
      } else if (key === 'size') {
        if (val && !/^[0-9]{1,16}$/.test(val)) throw this.fail(bad(`${at}: 'size' is not a decimal number; the archive is corrupt`));
        this.o.size = val ? Number(val) : null;
        if (this.o.size > Number.MAX_SAFE_INTEGER) throw this.fail(bad(`${at}: 'size' ${val} is beyond 2^53 bytes; the archive is corrupt`));
      } else if (key === 'mtime') {
        if (val && !/^-?[0-9]{1,15}(\.[0-9]*)?$/.test(val)) throw this.fail(bad(`${at}: 'mtime' is not a time; the archive is corrupt`));
        this.o.mtime = val ? Number(val) : null;
      } else if (key.startsWith('GNU.sparse.')) {
        // A pax-format sparse file: its data is a map and fragments, not the contents.
        this.o.sparse = true;
      }
      // Other keys (uid, uname, atime, vendor keys) do not apply here.
    }
  }

  extDone() {
    const d = this.ext.subarray(0, this.extLen);
    this.ext = null;
    this.o.pending = true;
    if (this.extType === 'x') { this.paxParse(d); return; }
    // GNU 'L'/'K': the name, NUL-terminated (the NUL counted in the size).
    const nul = d.indexOf(0);
    const v = d.toString('latin1', 0, nul < 0 ? d.length : nul);
    const link = this.extType === 'K';
    if (!v) throw this.fail(bad(`GNU long-${link ? 'link' : 'name'} header at byte ${this.hdrOffset} is empty; the archive is corrupt`));
    this.o[link ? 'gnuLink' : 'gnuPath'] = v;
  }

  /** A complete header block is in this.blk. */
  *header() {
    const h = this.blk;
    const off = this.hdrOffset;
    if (isZero(h)) {
      if (this.o.pending) throw this.fail(bad(`archive ends (zero block at byte ${off}) after an extended header without its member; the archive is corrupt`));
      this.state = S.ZERO;
      return;
    }
    if (!checksumOk(h)) throw this.fail(bad(`tar header at byte ${off}: checksum mismatch; the archive is corrupt or not a tar file`));
    const magic = h.toString('latin1', 257, 263);
    const posix = magic === 'ustar\0';
    if (!posix && magic !== 'ustar ') throw this.fail(bad(`tar header at byte ${off}: no ustar magic; the archive is not a POSIX (ustar/pax) or GNU tar`));
    let size = parseNumber(h.subarray(124, 136));
    if (size === null) throw this.fail(bad(`tar header at byte ${off}: the size field is not a number below 2^53; the archive is corrupt`));
    const type = String.fromCharCode(h[156]);

    if (type === 'x' || type === 'L' || type === 'K') {
      if (size > EXT_MAX || (type !== 'x' && !size)) {
        throw this.fail(bad(`${type === 'x' ? 'pax' : 'GNU long-name'} header at byte ${off} holds ${size} bytes; at most ${EXT_MAX} are accepted`));
      }
      this.ext = Buffer.alloc(size);
      this.extLen = 0;
      this.extType = type;
      this.left = size;
      this.pad = (BLOCK - (size % BLOCK)) % BLOCK;
      this.state = S.EXT;
      if (!size) { this.extDone(); this.skip(this.pad); }
      return;
    }
    if (type === 'g') { // global pax headers are ignored
      this.skip(size + ((BLOCK - (size % BLOCK)) % BLOCK));
      return;
    }

    if (this.o.size !== null) size = this.o.size;
    const kind = { 0: 'file', '\0': 'file', 7: 'file', 5: 'dir', 2: 'symlink', 1: 'hardlink' }[type];
    if (!kind || (kind === 'file' && this.o.sparse)) {
      // Devices and FIFOs have no data, whatever their size says.
      const data = '346'.includes(type) ? 0 : size + ((BLOCK - (size % BLOCK)) % BLOCK);
      this.clearOverrides();
      this.skip(data);
      yield { kind: 'skipped' };
      return;
    }
    const m = this.memberOf(h, posix, kind, size, off);
    this.clearOverrides();
    if (!m.name) { // "./": the destination itself, which exists
      this.skip(m.size + ((BLOCK - (m.size % BLOCK)) % BLOCK));
      return;
    }
    this.member = m;
    yield { kind: 'member', member: m };
    if (m.type === 'file') {
      this.left = m.size;
      this.pad = (BLOCK - (m.size % BLOCK)) % BLOCK;
      if (m.size) this.state = S.DATA;
      else yield* this.fileEnd();
    } else {
      this.state = S.HEADER;
    }
  }

  /** The member a checked header describes, its name and link checked too. */
  memberOf(h, posix, kind, size, off) {
    let raw = this.o.paxPath ?? this.o.gnuPath;
    if (raw === null) {
      const prefix = posix ? fieldString(h, 345, 155) : '';
      raw = (prefix ? `${prefix}/` : '') + fieldString(h, 0, 100);
    }
    let type = kind;
    const { name, dir } = (() => {
      try { return normalizeName(raw, this.target); } catch (e) { throw this.fail(e); }
    })();
    // Old tars mark directories only by a trailing '/' on a file.
    if (type === 'file' && dir) type = 'dir';
    if (type !== 'file' && size) {
      throw this.fail(bad(`tar member '${shown(name)}' (byte ${off}): a directory or link with a size of ${size}; the archive is corrupt`));
    }
    const mode = parseNumber(h.subarray(100, 108));
    const mtime = parseNumber(h.subarray(136, 148), true);
    if (mode === null || mtime === null) {
      throw this.fail(bad(`tar member '${shown(name)}' (byte ${off}): the mode or mtime field is not a number; the archive is corrupt`));
    }
    const m = { type, name, link: null, size: type === 'file' ? size : 0, mode: mode & 0o7777, mtime: this.o.mtime ?? mtime };
    if (type === 'symlink' || type === 'hardlink') {
      const lraw = this.o.paxLink ?? this.o.gnuLink ?? fieldString(h, 157, 100);
      try {
        if (type === 'symlink') {
          if (name) checkSymlink(name, lraw, this.target);
          m.link = lraw;
        } else {
          m.link = normalizeName(lraw, this.target).name;
          if (!m.link) throw unsafe(`tar hard link '${shown(name)}' names ${this.target} itself; a hard link must name a file inside it`);
        }
      } catch (e) {
        throw this.fail(e);
      }
    }
    return m;
  }
}
