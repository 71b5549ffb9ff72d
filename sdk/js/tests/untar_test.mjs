// downloadDir against hostile archives (a guest's tar.gz through a fake
// kilnd): nothing is written outside the local directory, no link that
// leaves it is made, a link already on disk is never followed, special
// files are never created, and a corrupt archive is one clear error.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { test, memoryGrowth } from './runner.mjs';
import { startFake, jsonResponse, chunk, LAST_CHUNK } from './fake_kilnd.mjs';
import * as t from './tar_build.mjs';
import * as kiln from '../src/index.js';
import { TarReader } from '../src/tar_reader.js';

const SB = { id: 'abc123', state: 'running', image: 'minimal' };

/** A scratch directory with `out` (the download's) and `outside` (must stay empty) in it. */
async function scratch(fn) {
  const top = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-untar-'));
  const out = path.join(top, 'out');
  const outside = path.join(top, 'outside');
  fs.mkdirSync(outside);
  try {
    await fn({ top, out, outside });
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
}

/** downloadDir of a sandbox whose archive endpoint answers `tgz` (sent in pieces of `piece` bytes). */
async function download(tgz, localDir, piece = 1000) {
  const f = await startFake((req, sock) => {
    if (req.method === 'POST') { sock.end(jsonResponse(201, SB)); return; }
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nTransfer-Encoding: chunked\r\n\r\n');
    const parts = [];
    for (let i = 0; i < tgz.length; i += piece) parts.push(chunk(tgz.subarray(i, i + piece)));
    sock.end(Buffer.concat([...parts, Buffer.from(LAST_CHUNK)]));
  });
  try {
    const k = new kiln.Kiln({ socket: f.socket, timeoutMs: 5000 });
    const sb = await k.sandboxes.create({ image: 'minimal' });
    return await sb.files.downloadDir('/w', localDir);
  } finally {
    await f.close();
  }
}

/**
 * Every entry below dir (relative names, sorted, as UTF-8 shows them),
 * with what lstat says of it. Names are read as bytes: one that is not
 * UTF-8 is still looked at.
 */
function walk(dir, rel = '') {
  const out = [];
  const at = (r) => Buffer.from(r ? `${dir}/${r}` : dir, 'latin1');
  let names = [];
  try { names = fs.readdirSync(at(rel), { encoding: 'latin1' }).sort(); } catch { return out; }
  for (const n of names) {
    const r = rel ? `${rel}/${n}` : n;
    const st = fs.lstatSync(at(r));
    out.push({ name: Buffer.from(r, 'latin1').toString('utf8'), raw: r, st });
    if (st.isDirectory()) out.push(...walk(dir, r));
  }
  return out;
}

/** No symlink below dir points outside it, however it resolves (names as bytes: latin1 strings). */
function assertNoLinkOut(dir) {
  const L = (s) => Buffer.from(s, 'latin1');
  const real = fs.realpathSync(dir);
  for (const { name, raw, st } of walk(dir)) {
    if (!st.isSymbolicLink()) continue;
    const p = `${dir}/${raw}`;
    const target = fs.readlinkSync(L(p), { encoding: 'latin1' });
    assert.ok(!target.startsWith('/'), `symlink ${name} -> ${target} is absolute`);
    let resolved;
    try {
      resolved = fs.realpathSync.native(L(p), { encoding: 'latin1' });
    } catch {
      resolved = path.posix.resolve(fs.realpathSync.native(L(path.posix.dirname(p)), { encoding: 'latin1' }), target);
    }
    assert.ok(resolved === real || resolved.startsWith(`${real}/`), `symlink ${name} -> ${target} resolves to ${resolved}, outside ${real}`);
  }
}

async function refused(tgz, out, Cls, ...words) {
  const err = await download(tgz, out).then(() => null, (e) => e);
  assert.ok(err, 'downloadDir resolved; it should have refused the archive');
  assert.ok(err instanceof Cls, `${err.name} (${err.message}) is not a ${Cls.name}`);
  for (const w of words) assert.ok(err.message.includes(w), `'${err.message}' does not name ${w}`);
  return err;
}

test('downloadDir: a symlink out of the directory, then a file below it, writes nothing outside', () => scratch(async ({ out, outside }) => {
  await refused(t.tgz(t.symlink('a', outside), t.file('a/.bashrc', 'pwned\n')), out, kiln.UnsafePathError, "'a'", 'absolute');
  assert.deepEqual(fs.readdirSync(outside), []);
  assertNoLinkOut(out);
}));

test('downloadDir: a symlink already on disk is never written through', () => scratch(async ({ out, outside }) => {
  // What one download through the system tar left behind.
  fs.mkdirSync(out);
  fs.symlinkSync(outside, path.join(out, 'a'));
  fs.symlinkSync(path.join(outside, 'f'), path.join(out, 'f'));
  await refused(t.tgz(t.file('a/.bashrc', 'pwned\n')), out, kiln.UnsafePathError, "'a/.bashrc'", 'symlink');
  assert.deepEqual(fs.readdirSync(outside), []);
  // A file member over a link replaces the link, and writes nothing through it.
  const n = await download(t.tgz(t.file('f', 'mine\n')), out);
  assert.equal(n.files, 1);
  assert.deepEqual(fs.readdirSync(outside), []);
  assert.ok(fs.lstatSync(path.join(out, 'f')).isFile());
  assert.equal(fs.readFileSync(path.join(out, 'f'), 'utf8'), 'mine\n');
  // A directory member over a link is not a directory made through it.
  await refused(t.tgz(t.dir('a/'), t.file('a/x', 'pwned')), out, kiln.KilnError, "'a'");
  assert.deepEqual(fs.readdirSync(outside), []);
}));

test('downloadDir: links that climb out are refused and not made', () => scratch(async ({ out }) => {
  await refused(t.tgz(t.symlink('up', '../..')), out, kiln.UnsafePathError, "'up'", "'..' would leave");
  await refused(t.tgz(t.dir('d/'), t.symlink('d/up', '../../x')), out, kiln.UnsafePathError, "'d/up'");
  // `esc` reads as inside until `x -> .` makes x/x/.. climb from the top.
  await refused(t.tgz(t.symlink('esc', 'x/x/../../../../etc/passwd'), t.symlink('x', '.')), out, kiln.UnsafePathError,
    "'esc'", "'..' after a name");
  assertNoLinkOut(out);
  assert.ok(!fs.existsSync(path.join(out, 'esc')));
}));

test('downloadDir: absolute names and .. components are refused, nothing created', () => scratch(async ({ top, out }) => {
  await refused(t.tgz(t.file(`${top}/abs`, 'x')), out, kiln.UnsafePathError, 'absolute');
  await refused(t.tgz(t.file('../x', 'x')), out, kiln.UnsafePathError, "'../x'", "'..'");
  await refused(t.tgz(t.file('x/../../y', 'x')), out, kiln.UnsafePathError, "'x/../../y'");
  await refused(t.tgz(t.hardlink('h', '/etc/passwd')), out, kiln.UnsafePathError, 'absolute');
  assert.deepEqual(walk(out).map((e) => e.name), []);
  assert.deepEqual(fs.readdirSync(top).sort(), ['out', 'outside']);
}));

test('downloadDir: long names (GNU L/K, pax path/linkpath) obey the same rules', () => scratch(async ({ top, out }) => {
  // The long name is the one checked, not the header's harmless one.
  await refused(t.tgz(t.gnuLong(`ok/${'a'.repeat(100)}/../../../escape`), t.file('fine', 'x')), out, kiln.UnsafePathError, "'..'");
  await refused(t.tgz(t.pax({ path: `${top}/outside/abs` }), t.file('fine', 'x')), out, kiln.UnsafePathError, 'absolute');
  await refused(t.tgz(t.pax({ linkpath: '../../..' }), t.symlink('l', 'fine')), out, kiln.UnsafePathError, "'l'");
  await refused(t.tgz(t.gnuLong('/etc', 'K'), t.symlink('l2', 'fine')), out, kiln.UnsafePathError, "'l2'", 'absolute');
  assert.deepEqual(fs.readdirSync(path.join(top, 'outside')), []);
  assertNoLinkOut(out);
  const deep = `${'d'.repeat(120)}/${'e'.repeat(120)}/f.txt`;
  const n = await download(t.tgz(
    t.gnuLong(deep), t.file('ignored-short-name', 'gnu\n'),
    t.pax({ path: `p/${'q'.repeat(200)}` }), t.file('short', 'pax\n'),
    t.gnuLong(`${'d'.repeat(120)}/link`), t.gnuLong('e'.repeat(120), 'K'), t.symlink('x', 'y'),
    t.pax({ path: 'p/plink', linkpath: `${'q'.repeat(200)}` }), t.symlink('x', 'y'),
  ), out);
  assert.equal(fs.readFileSync(path.join(out, deep), 'utf8'), 'gnu\n');
  assert.equal(fs.readFileSync(path.join(out, 'p', 'q'.repeat(200)), 'utf8'), 'pax\n');
  assert.equal(fs.readlinkSync(path.join(out, 'd'.repeat(120), 'link')), 'e'.repeat(120));
  assert.equal(fs.readFileSync(path.join(out, 'p/plink'), 'utf8'), 'pax\n');
  assert.deepEqual([n.files, n.symlinks], [2, 2]);
}));

test('downloadDir: FIFOs and devices are skipped, never created', () => scratch(async ({ out }) => {
  const n = await download(t.tgz(t.header('fifo', { type: '6' }), t.header('null', { type: '3' }), t.header('blk', { type: '4' }),
    t.file('after', 'still read\n')), out);
  assert.deepEqual(walk(out).map((e) => e.name), ['after']);
  assert.equal(fs.readFileSync(path.join(out, 'after'), 'utf8'), 'still read\n');
  assert.equal(n.skipped, 3);
}));

test('downloadDir: a cut, corrupt or oversized archive is a BadArchiveError naming what is wrong', () => scratch(async ({ out }) => {
  const cutFile = t.tgzRaw(t.header('big', { size: 2000 }), Buffer.alloc(512, 0x61));
  await refused(cutFile, out, kiln.BadArchiveError, "'big'", 'cut off');
  await refused(t.tgzRaw(t.file('a', 'x').subarray(0, 300)), out, kiln.BadArchiveError, 'cut off inside a header');
  const sum = t.header('bad', { checksum: 12345 });
  await refused(t.tgz(sum), out, kiln.BadArchiveError, 'checksum');
  await refused(t.tgz(t.header('not', { magic: 'xxxxx\x0000' })), out, kiln.BadArchiveError, 'magic');
  // Base-256 beyond 2^53, and an octal field with junk in it.
  const huge = Buffer.concat([Buffer.from([0x80]), Buffer.alloc(11, 0xff)]);
  await refused(t.tgz(t.header('huge', { sizeField: huge })), out, kiln.BadArchiveError, 'size field');
  await refused(t.tgz(t.header('junk', { sizeField: '12x' })), out, kiln.BadArchiveError, 'size field');
  // 8 GiB - 1 declared, a few bytes sent: the cut is found, nothing is held.
  await refused(t.tgzRaw(t.header('eight', { sizeField: '77777777777\0' }), Buffer.alloc(512)), out, kiln.BadArchiveError, "'eight'", 'cut off');
  await refused(t.tgz(t.header('PaxHeaders/x', { type: 'x', size: 70000 })), out, kiln.BadArchiveError, 'at most 65536');
  await refused(Buffer.from('not gzip at all'), out, kiln.BadArchiveError, 'gzip');
  await refused(t.tgz(t.file('ok', 'x')).subarray(0, 30), out, kiln.BadArchiveError, 'gzip');
}));

test('downloadDir: a hard link only to a file this download extracted', () => scratch(async ({ out, outside }) => {
  fs.mkdirSync(out);
  fs.writeFileSync(path.join(outside, 'secret'), 'secret\n');
  fs.linkSync(path.join(outside, 'secret'), path.join(out, 'pre'));
  fs.symlinkSync(outside, path.join(out, 'lnk'));
  await refused(t.tgz(t.hardlink('h', 'pre')), out, kiln.UnsafePathError, "'h'", 'not a file this archive extracted');
  await refused(t.tgz(t.hardlink('h', 'lnk/secret')), out, kiln.UnsafePathError, "'h'");
  assert.ok(!fs.existsSync(path.join(out, 'h')));
  const n = await download(t.tgz(t.file('f', 'one\n'), t.hardlink('g', 'f')), out);
  assert.equal(n.hardlinks, 1);
  assert.equal(fs.statSync(path.join(out, 'g')).ino, fs.statSync(path.join(out, 'f')).ino);
}));

/** A tree with everything a guest's archive holds, and what it must become. */
function normalTree() {
  const big = crypto.randomBytes(70000);
  const members = [
    t.dir('src/', { mode: 0o750 }),
    t.dir('src/lib/', { mode: 0o755 }),
    t.file('src/lib/a.c', 'int a;\n', { mode: 0o640, mtime: 1600000000 }),
    t.file('src/big.bin', big, { mode: 0o600 }),
    t.file('src/empty', '', { mode: 0o644 }),
    t.file('run.sh', '#!/bin/sh\n', { mode: 0o4755 }),
    t.file('sticky', 's', { mode: 0o1777 }),
    t.symlink('src/lib/up', '../big.bin'),
    t.symlink('top', 'src/lib'),
    t.dir('ro/', { mode: 0o555 }),
    t.file('ro/inside', 'in a read-only directory\n', { mode: 0o444 }),
    t.file('implicit/dirs/made.txt', 'parents made on the way\n'),
    t.file('old-style-dir/', '', { type: '0' }),
    t.pax({ path: 'pax/ünïcødé name', mtime: '1500000000.5' }), t.file('x', 'pax name\n'),
    t.file(Buffer.from([0x6e, 0xff, 0xfe]), 'not utf-8\n'),
  ];
  return { big, tgz: t.tgz(...members), members };
}

test('downloadDir: a normal tree is extracted exactly (dirs, files, links, modes, mtimes)', () => scratch(async ({ out }) => {
  const { big, tgz } = normalTree();
  const um = process.umask();
  const n = await download(tgz, out, 777);
  try {
    const mode = (rel) => fs.lstatSync(path.join(out, rel)).mode & 0o7777;
    assert.equal(mode('src'), 0o750 & ~um);
    assert.equal(mode('src/lib/a.c'), 0o640 & ~um);
    assert.equal(mode('run.sh'), 0o755 & ~um); // no setuid
    assert.equal(mode('sticky'), 0o777 & ~um); // no sticky bit
    assert.equal(mode('ro'), 0o755 & ~um);     // u+w kept, so its member could be made
    assert.equal(fs.statSync(path.join(out, 'src/lib/a.c')).mtimeMs, 1600000000 * 1000);
    assert.equal(fs.statSync(path.join(out, 'pax/ünïcødé name')).mtimeMs, 1500000000.5 * 1000);
    assert.ok(fs.readFileSync(path.join(out, 'src/big.bin')).equals(big));
    assert.equal(fs.readFileSync(path.join(out, 'src/empty'), 'utf8'), '');
    assert.equal(fs.readlinkSync(path.join(out, 'src/lib/up')), '../big.bin');
    assert.ok(fs.readFileSync(path.join(out, 'src/lib/up')).equals(big));
    assert.equal(fs.readFileSync(path.join(out, 'top/a.c'), 'utf8'), 'int a;\n');
    assert.equal(fs.readFileSync(path.join(out, 'ro/inside'), 'utf8'), 'in a read-only directory\n');
    assert.equal(fs.readFileSync(path.join(out, 'implicit/dirs/made.txt'), 'utf8'), 'parents made on the way\n');
    assert.ok(fs.lstatSync(path.join(out, 'old-style-dir')).isDirectory());
    assert.equal(fs.readFileSync(Buffer.from(`${out}/n\xff\xfe`, 'latin1')).toString(), 'not utf-8\n');
    assert.deepEqual(walk(out).map((e) => e.name), ['implicit', 'implicit/dirs', 'implicit/dirs/made.txt', 'n\ufffd\ufffd',
      'old-style-dir', 'pax', 'pax/ünïcødé name', 'ro', 'ro/inside', 'run.sh', 'src', 'src/big.bin', 'src/empty', 'src/lib',
      'src/lib/a.c', 'src/lib/up', 'sticky', 'top']);
    assert.deepEqual(n, { files: 9, dirs: 4, symlinks: 2, hardlinks: 0, skipped: 0, bytes: 70000 + 7 + 10 + 1 + 25 + 24 + 9 + 10 });
    // The same archive again over it: files and links replaced, directories kept.
    assert.equal((await download(tgz, out)).files, 9);
  } finally {
    fs.chmodSync(path.join(out, 'ro'), 0o755);
  }
}));

test('downloadDir: the reader gives the same events however the archive is split', () => {
  const { members } = normalTree();
  const tar = Buffer.concat([...members, t.END, Buffer.from('trailing bytes after the end are ignored')]);
  const events = (pieces) => {
    const rd = new TarReader('out');
    const evs = [];
    for (const p of pieces) for (const ev of rd.feed(p)) evs.push(ev.kind === 'data' ? { kind: 'data', data: Buffer.from(ev.data) } : { ...ev });
    rd.finish();
    // Data as one buffer per file, whatever the split.
    const merged = [];
    for (const ev of evs) {
      const last = merged[merged.length - 1];
      if (ev.kind === 'data' && last && last.kind === 'data') last.data = Buffer.concat([last.data, ev.data]);
      else merged.push(ev);
    }
    return merged;
  };
  const whole = events([tar]);
  assert.equal(whole.filter((e) => e.kind === 'member').length, 15);
  assert.equal(whole[whole.length - 1].kind, 'end');
  const bytes = [];
  for (let i = 0; i < tar.length; i++) bytes.push(tar.subarray(i, i + 1));
  assert.deepEqual(events(bytes), whole);
  const odd = [];
  for (let i = 0; i < tar.length; i += 511) odd.push(tar.subarray(i, i + 511));
  assert.deepEqual(events(odd), whole);
});

/** gzip of `parts`, each written `times[i]` times: a large archive without a large buffer. */
async function gzipOf(parts) {
  const gz = zlib.createGzip();
  const out = [];
  gz.on('data', (d) => out.push(d));
  for (const [buf, times = 1] of parts) {
    for (let i = 0; i < times; i++) if (!gz.write(buf)) await once(gz, 'drain');
  }
  gz.end();
  await once(gz, 'end');
  return Buffer.concat(out);
}

// The rise measured is the per-chunk buffers the garbage collector frees
// late (about 22 MiB for a 64 MiB file, 25 MiB for 192 MiB); a file held
// whole would add its 128 MiB.
test('downloadDir: needs no tar program, and streams a large file in bounded memory', () => scratch(async ({ out }) => {
  const mib = 128;
  const tgz = await gzipOf([[t.header('big', { size: mib << 20 })], [Buffer.alloc(1 << 20, 0x5a), mib], [t.END]]);
  const savedPath = process.env.PATH;
  process.env.PATH = '/nonexistent';
  let m;
  try {
    m = await memoryGrowth(() => download(tgz, out, 64 * 1024));
  } finally {
    process.env.PATH = savedPath;
  }
  assert.equal(fs.statSync(path.join(out, 'big')).size, mib << 20);
  assert.equal(m.value.files, 1);
  assert.ok(m.arrayBuffersMib < 48, `arrayBuffers rose by ${m.arrayBuffersMib.toFixed(1)} MiB for a ${mib} MiB file`);
}));

test('downloadDir: an answer cut off by kilnd (no last chunk) rejects, never hangs or passes', () => scratch(async ({ out }) => {
  const tgz = t.tgz(t.file('a', 'x'.repeat(5000)), t.file('b', 'y'.repeat(5000)));
  const f = await startFake((req, sock) => {
    if (req.method === 'POST') { sock.end(jsonResponse(201, SB)); return; }
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nTransfer-Encoding: chunked\r\n\r\n');
    sock.write(chunk(tgz.subarray(0, tgz.length - 20)));
    setTimeout(() => sock.destroy(), 20);
  });
  try {
    const sb = await new kiln.Kiln({ socket: f.socket, timeoutMs: 5000 }).sandboxes.create({ image: 'minimal' });
    await assert.rejects(sb.files.downloadDir('/w', out), kiln.KilnConnectionError);
  } finally {
    await f.close();
  }
}));

function prng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
}

// Where a mutation lands: mostly a header's name, size, type, link or
// prefix field, or the first bytes after a header (pax records, long
// names); sometimes anywhere.
const FIELDS = [[0, 100], [124, 136], [156, 157], [157, 257], [345, 500], [512, 600]];

/** buf with a few bytes changed, inserted, dropped or cut, then every header's checksum made right again. */
function mutateTar(buf, rnd) {
  const heads = [];
  for (let off = 0; off + 512 <= buf.length; off += 512) if (buf.toString('latin1', off + 257, off + 262) === 'ustar') heads.push(off);
  const out = [...buf];
  for (let n = 1 + Math.floor(rnd() * 4); n > 0; n--) {
    let at = Math.floor(rnd() * out.length);
    if (rnd() < 0.8) {
      const [lo, hi] = FIELDS[Math.floor(rnd() * FIELDS.length)];
      at = Math.min(out.length - 1, heads[Math.floor(rnd() * heads.length)] + lo + Math.floor(rnd() * (hi - lo)));
    }
    switch (Math.floor(rnd() * 6)) {
      case 0: out.splice(at, 1 + Math.floor(rnd() * 8)); break;
      case 1: out.splice(at, 0, ...Buffer.from(['..', '/', '../', '\0', '77777777777', '2', '1', 'x', 'L'][Math.floor(rnd() * 9)])); break;
      case 2: if (rnd() < 0.3) out.length = at; break;
      default: out[at] = rnd() < 0.5 ? Math.floor(rnd() * 256) : '.\0/21x5L6'.charCodeAt(Math.floor(rnd() * 9));
    }
  }
  const b = Buffer.from(out);
  for (let off = 0; off + 512 <= b.length; off += 512) {
    if (b.toString('latin1', off + 257, off + 262) !== 'ustar') continue;
    b.fill(' ', off + 148, off + 156);
    let sum = 0;
    for (let i = off; i < off + 512; i++) sum += b[i];
    b.write(`${sum.toString(8).padStart(6, '0')}\0 `, off + 148, 'latin1');
  }
  return b;
}

// Mutated archives, checksums fixed so that the mutations reach names,
// types, sizes and pax records: every one settles with counts or a
// KilnError, and nothing is ever written outside or linked out.
// KILN_FUZZ_ROUNDS raises the rounds (default 200), KILN_FUZZ_SEED picks another seed.
test('downloadDir: mutated archives never write outside, never throw anything but a KilnError', () => scratch(async ({ top, out, outside }) => {
  const { extractTarGz } = await import('../src/untar.js');
  const seed = Number(process.env.KILN_FUZZ_SEED || 32);
  const rounds = Number(process.env.KILN_FUZZ_ROUNDS || 200);
  const rnd = prng(seed);
  const base = Buffer.concat([
    t.dir('d/'), t.file('d/f', 'data'), t.symlink('d/l', '../d/f'), t.symlink('s', 'd'), t.hardlink('h', 'd/f'),
    t.gnuLong(`${'g'.repeat(110)}/n`), t.file('short', 'gnu'), t.pax({ path: `d/${'p'.repeat(120)}`, linkpath: 'f' }), t.symlink('x', 'y'),
    t.header('fifo', { type: '6' }), t.file('e', ''), t.END,
  ]);
  const seen = {};
  for (let r = 0; r < rounds; r++) {
    fs.rmSync(out, { recursive: true, force: true });
    const tgz = zlib.gzipSync(mutateTar(base, rnd));
    async function* one() { yield tgz; }
    const res = await extractTarGz(one(), out).then((v) => 'ok', (e) => {
      if (!(e instanceof kiln.KilnError)) throw new Error(`seed ${seed} round ${r}: ${e.stack}`);
      return e.name;
    });
    seen[res] = (seen[res] || 0) + 1;
    assert.deepEqual(fs.readdirSync(outside), [], `seed ${seed} round ${r}`);
    assert.deepEqual(fs.readdirSync(top).sort(), ['out', 'outside'], `seed ${seed} round ${r}`);
    assertNoLinkOut(out);
    for (const { name, st } of walk(out)) {
      assert.ok(st.isFile() || st.isDirectory() || st.isSymbolicLink(), `seed ${seed} round ${r}: ${name} is a special file`);
      assert.equal(st.mode & 0o7000, 0, `seed ${seed} round ${r}: ${name} has set-id or sticky bits`);
    }
  }
  if (process.env.KILN_FUZZ_SHOW) console.log(JSON.stringify(seen));
  // The mutations reach past the checksum: some archives still extract, some are refused as unsafe.
  assert.ok(seen.ok && seen.UnsafePathError && seen.BadArchiveError, JSON.stringify(seen));
}));
