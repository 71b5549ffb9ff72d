// downloadDir's extractor: the guest's tar.gz written into a local
// directory by this process, with the rules of `kiln cp`
// (api/kiln/cli_tar.c), not by the system tar. The archive is hostile:
// tar_reader.js refuses absolute names, `..` and links that leave the
// directory before a member gets here, and here nothing is written
// through a symlink:
//  - every parent component of a member is lstat'ed (made when missing)
//    and must be a real directory, not a symlink an earlier member or an
//    earlier download left there. A directory seen so is remembered for
//    the rest of the download: no member can replace a directory (below);
//  - a member's own name is removed first when something other than a
//    directory is there, then created with O_CREAT | O_EXCL | O_NOFOLLOW
//    (a file), symlink(2) or link(2), none of which follows a link in
//    the last component;
//  - a hard link may only name a regular file this download extracted.
// Modes are the archive's & 0777 less the umask (no set-id or sticky
// bits); directories keep u+rwx so their members can be created; files get
// the archive's mtime. Devices, FIFOs and sparse files are skipped, never
// made. Memory is bounded: one gunzipped chunk, one header, one pax/GNU
// record at a time. The paths are the caller's localDir and names below
// it: only a local process changing the tree while it is written could
// race the lstat of a parent with the creation below it.
import fs from 'node:fs';
import path from 'node:path';
import { Readable, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { TarReader, shown } from './tar_reader.js';
import { KilnError, BadArchiveError, UnsafePathError } from './errors.js';

const fsp = fs.promises;
const C = fs.constants;
const FILE_FLAGS = C.O_WRONLY | C.O_CREAT | C.O_EXCL | (C.O_NOFOLLOW || 0) | (C.O_NOCTTY || 0);

const member = (m) => `archive member '${shown(m.name)}'`;

async function lstatOrNull(p) {
  try {
    return await fsp.lstat(p);
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
}

class Untar {
  constructor(root) {
    this.root = Buffer.from(root).toString('latin1'); // names are latin1 strings (tar_reader.js)
    this.dirs = new Set(['']); // real directories made or checked in this download
    this.files = new Set();    // regular files it extracted: what a hard link may name
    this.fh = null;
    this.m = null;
    this.stats = { files: 0, dirs: 0, symlinks: 0, hardlinks: 0, skipped: 0, bytes: 0 };
  }

  p(name) { return Buffer.from(`${this.root}/${name}`, 'latin1'); }

  ioError(m, doing, e) {
    if (e.code === 'ELOOP' || e.code === 'ENOTDIR') {
      return new UnsafePathError(`${member(m)}: its path goes through a symlink or a file here; refusing to write through it`, { code: 'unsafe_path' });
    }
    return new KilnError(`${member(m)}: ${doing}: ${e.message}`, { code: 'local_io' });
  }

  async io(m, doing, fn) {
    try {
      return await fn();
    } catch (e) {
      throw this.ioError(m, doing, e);
    }
  }

  /** Every directory above `name`: a real directory (made when missing), never a link. */
  async parents(m, name) {
    const comps = name.split('/');
    let rel = '';
    for (let i = 0; i < comps.length - 1; i++) {
      rel = rel ? `${rel}/${comps[i]}` : comps[i];
      if (this.dirs.has(rel)) continue;
      const p = this.p(rel);
      let st = await this.io(m, `looking at '${shown(rel)}'`, () => lstatOrNull(p));
      if (!st) {
        await this.io(m, `creating directory '${shown(rel)}'`, async () => {
          try { await fsp.mkdir(p, 0o777); } catch (e) { if (e.code !== 'EEXIST') throw e; }
        });
        st = await this.io(m, `looking at '${shown(rel)}'`, () => fsp.lstat(p));
      }
      if (!st.isDirectory()) {
        throw new UnsafePathError(`${member(m)}: '${shown(rel)}' here is ${st.isSymbolicLink() ? 'a symlink' : 'not a directory'}; refusing to write through it`,
          { code: 'unsafe_path' });
      }
      this.dirs.add(rel);
    }
  }

  /** Remove what is at `name` unless it is a directory: a link there is replaced, never followed. */
  async clearWay(m, name) {
    const p = this.p(name);
    const st = await this.io(m, 'looking at what is there', () => lstatOrNull(p));
    if (!st) return;
    if (st.isDirectory()) throw new KilnError(`${member(m)}: a directory is in the way; remove it or download into another directory`, { code: 'local_io' });
    await this.io(m, 'replacing what is there', () => fsp.unlink(p));
    this.files.delete(name);
  }

  async event(ev) {
    switch (ev.kind) {
      case 'member': return this.create(ev.member);
      case 'data': return this.write(ev.data);
      case 'fileEnd': return this.fileEnd();
      case 'skipped': this.stats.skipped++; return undefined;
      default: return undefined;
    }
  }

  async create(m) {
    await this.parents(m, m.name);
    const p = this.p(m.name);
    switch (m.type) {
      case 'file':
        await this.clearWay(m, m.name);
        this.fh = await this.io(m, 'creating it', () => fsp.open(p, FILE_FLAGS, m.mode & 0o777));
        this.m = m;
        return;
      case 'dir':
        if (!this.dirs.has(m.name)) {
          await this.io(m, 'creating it', async () => {
            try { await fsp.mkdir(p, (m.mode & 0o777) | 0o700); } catch (e) { if (e.code !== 'EEXIST') throw e; }
          });
          const st = await this.io(m, 'looking at what is there', () => fsp.lstat(p));
          if (!st.isDirectory()) {
            throw new KilnError(`${member(m)}: something that is not a directory is in the way; remove it or download into another directory`, { code: 'local_io' });
          }
          this.dirs.add(m.name);
        }
        this.stats.dirs++;
        return;
      case 'symlink':
        await this.clearWay(m, m.name);
        await this.io(m, 'creating the symlink', () => fsp.symlink(Buffer.from(m.link, 'latin1'), p));
        this.stats.symlinks++;
        return;
      default:
        await this.hardlink(m, p);
    }
  }

  async hardlink(m, p) {
    const what = `tar hard link '${shown(m.name)}' -> '${shown(m.link)}'`;
    if (m.link === m.name) { this.stats.hardlinks++; return; } // already so
    if (!this.files.has(m.link)) {
      throw new UnsafePathError(`${what}: not a file this archive extracted before it; a hard link must name one`, { code: 'unsafe_path' });
    }
    await this.parents(m, m.link);
    const src = this.p(m.link);
    const st = await this.io(m, 'looking at its link', () => fsp.lstat(src));
    if (!st.isFile()) throw new UnsafePathError(`${what}: the link is not a regular file`, { code: 'unsafe_path' });
    await this.clearWay(m, m.name);
    await this.io(m, 'creating the hard link', () => fsp.link(src, p));
    this.files.add(m.name);
    this.stats.hardlinks++;
  }

  async write(data) {
    for (let off = 0; off < data.length;) {
      const { bytesWritten } = await this.io(this.m, 'writing', () => this.fh.write(data, off, data.length - off));
      off += bytesWritten;
    }
    this.stats.bytes += data.length;
  }

  async fileEnd() {
    const fh = this.fh;
    this.fh = null;
    try {
      await fh.utimes(new Date(), this.m.mtime);
    } catch {
      // As tar: a time the file system cannot hold leaves the file's own.
    }
    await this.io(this.m, 'closing it', () => fh.close());
    this.files.add(this.m.name);
    this.stats.files++;
  }

  async close() {
    if (this.fh) await this.fh.close().catch(() => {});
    this.fh = null;
  }
}

/**
 * The tar.gz in `chunks` (an async iterable of Buffers) extracted into
 * localDir (made if missing; it may itself be a link, it is the caller's).
 * Resolves with {files, dirs, symlinks, hardlinks, skipped, bytes}. Throws
 * UnsafePathError for a member that would leave the directory or write
 * through a link, BadArchiveError for a corrupt or cut archive, KilnError
 * (code local_io) for a local failure; members before it stay.
 */
export async function extractTarGz(chunks, localDir) {
  const root = path.resolve(localDir);
  try {
    await fsp.mkdir(root, { recursive: true });
  } catch (e) {
    throw new KilnError(`downloadDir: cannot make ${root}: ${e.message}`, { code: 'local_io' });
  }
  const u = new Untar(root);
  const rd = new TarReader(root);
  const src = Readable.from(chunks, { objectMode: false });
  const gz = zlib.createGunzip();
  pipeline(src, gz, () => {});
  try {
    for await (const buf of gz) {
      // After the end-of-archive blocks the rest is read only for the gzip trailer's check.
      if (rd.done) continue;
      for (const ev of rd.feed(buf)) await u.event(ev);
    }
    rd.finish();
  } catch (e) {
    if (typeof e.code === 'string' && e.code.startsWith('Z_')) {
      throw new BadArchiveError(`downloadDir: the archive is not gzip or is cut off (${e.message}); download it again`, { code: 'bad_archive' });
    }
    throw e;
  } finally {
    await u.close();
    gz.destroy();
    src.destroy();
  }
  return u.stats;
}
