// Templates, image import and create-from-template against the fake kilnd:
// the build log (its result, its error line, a log cut short, hostile
// lines), every error code the endpoints document, packing a context
// directory (nothing followed out of it), and an image upload that never
// holds the archive in memory.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { test, memoryGrowth } from './runner.mjs';
import { startFake, jsonResponse, errorResponse, chunkedHead, chunk, LAST_CHUNK } from './fake_kilnd.mjs';
import * as kiln from '../src/index.js';
import { linkLeaves, packContext } from '../src/templates.js';

const { Kiln } = kiln;
const TPL = { name: 'web', from: 'minimal', from_kind: 'image', sandbox: '0123456789ab', checkpoint: 'ready', steps: [] };
const LOG = [
  { type: 'step', step: 1, line: 1, instruction: 'FROM minimal' },
  { type: 'step_end', step: 1, line: 1, instruction: 'FROM minimal', ms: 3 },
  { type: 'step', step: 2, line: 2, instruction: 'RUN echo hi' },
  { type: 'stdout', data: 'hi\n' },
  { type: 'stderr', data_base64: 'AP8=' },
  { type: 'step_end', step: 2, line: 2, instruction: 'RUN echo hi', ms: 40 },
  { type: 'result', template: TPL },
];
const IMG = { name: 'alpine', source: 'oci', digest: 'sha256:00', layers: 1 };

const BUILD_REFUSALS = [
  [409, 'busy', kiln.BusyError], [409, 'in_use', kiln.InUseError], [409, 'limit_reached', kiln.LimitReachedError],
  [400, 'bad_field', kiln.BadFieldError], [400, 'bad_archive', kiln.BadArchiveError],
  [400, 'missing_field', kiln.MissingFieldError], [404, 'not_found', kiln.NotFoundError],
  [404, 'image_not_found', kiln.ImageNotFoundError], [507, 'no_space', kiln.NoSpaceError],
  [413, 'body_too_large', kiln.BodyTooLargeError],
];
const IMPORT_REFUSALS = [
  [409, 'exists', kiln.ExistsError], [400, 'bad_archive', kiln.BadArchiveError], [400, 'bad_field', kiln.BadFieldError],
  [400, 'missing_field', kiln.MissingFieldError], [403, 'forbidden', kiln.ForbiddenError],
  [413, 'body_too_large', kiln.BodyTooLargeError], [507, 'no_space', kiln.NoSpaceError], [500, 'internal', kiln.InternalError],
];
const DELETE_REFUSALS = [
  [409, 'in_use', kiln.InUseError], [409, 'busy', kiln.BusyError], [409, 'read_only', kiln.ReadOnlyError],
  [404, 'not_found', kiln.NotFoundError], [404, 'image_not_found', kiln.ImageNotFoundError],
];

function log(lines, { end = true } = {}) {
  return (req, sock) => {
    sock.write(chunkedHead());
    sock.write(chunk(lines.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)) + '\n').join('')));
    if (end) sock.end(LAST_CHUNK); else sock.destroy();
  };
}

async function withFake(routes, fn) {
  const f = await startFake((req, sock) => {
    const r = routes[`${req.method} ${req.path}`];
    if (!r) { sock.end(errorResponse(404, 'route_not_found', `no ${req.method} ${req.path}`)); return; }
    const out = r(req, sock);
    if (out !== undefined && !(out instanceof Promise)) sock.end(out);
  });
  try {
    await fn(new Kiln({ socket: f.socket, timeoutMs: 3000 }), f);
  } finally {
    await f.close();
  }
}

// A tar's member names and types ('0' file, '2' symlink, '5' dir, '1' hard link) from its ustar headers.
function tarMembers(gz) {
  const tar = zlib.gunzipSync(gz);
  const out = {};
  for (let off = 0; off + 512 <= tar.length;) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const cstr = (a, b) => { const s = h.subarray(a, b); const z = s.indexOf(0); return s.subarray(0, z < 0 ? s.length : z).toString(); };
    const name = (cstr(345, 500) ? `${cstr(345, 500)}/` : '') + cstr(0, 100);
    const size = parseInt(cstr(124, 136).trim() || '0', 8);
    out[name.replace(/\/$/, '')] = { type: String.fromCharCode(h[156]), link: cstr(157, 257), data: tar.subarray(off + 512, off + 512 + size) };
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

function makeContext() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-ctx-'));
  const ctx = path.join(root, 'ctx');
  fs.mkdirSync(path.join(ctx, 'app', 'deep'), { recursive: true });
  fs.writeFileSync(path.join(ctx, 'Kilnfile'), 'FROM minimal\nCOPY app/ /srv/\n');
  fs.writeFileSync(path.join(ctx, 'app', 'index.html'), 'hi');
  fs.writeFileSync(path.join(ctx, '-dash'), 'not an option');
  fs.writeFileSync(path.join(root, 'secret'), 'outside');
  fs.symlinkSync('index.html', path.join(ctx, 'app', 'link'));
  fs.symlinkSync('../index.html', path.join(ctx, 'app', 'deep', 'up'));
  fs.symlinkSync('../../secret', path.join(ctx, 'app', 'out'));
  fs.symlinkSync(path.join(root, 'secret'), path.join(ctx, 'abs'));
  fs.symlinkSync('..', path.join(ctx, 'parent'));
  fs.linkSync(path.join(ctx, 'app', 'index.html'), path.join(ctx, 'app', 'again.html'));
  execFileSync('mkfifo', [path.join(ctx, 'fifo')]); // a fifo: left out
  return { root, ctx };
}

test('templates: linkLeaves is kilnd\'s symlink rule', () => {
  assert.ok(linkLeaves('a', '/x') && linkLeaves('a', '..') && linkLeaves('d/a', '../..') && linkLeaves('a', 'b/../../c'));
  assert.ok(!linkLeaves('d/a', '..') && !linkLeaves('a', 'b/../c') && !linkLeaves('a', 'b'));
});

test('templates: create from a template sends template and no image', () => withFake({
  'POST /v1/sandboxes': (req) => jsonResponse(201, { id: 'abc123', state: 'running', template: 'web', sent: req.json() }),
}, async (k) => {
  const sb = await k.sandboxes.create({ template: 'web', hostname: 'h1' });
  assert.deepEqual(sb.info.sent, { template: 'web', hostname: 'h1' });
}));

test('templates: build from a directory packs it (links out left out) and resolves to the template', async () => {
  const { root, ctx } = makeContext();
  try {
    await withFake({ 'POST /v1/templates': log(LOG) }, async (k, f) => {
      const seen = [];
      const tpl = await k.templates.build('web', { contextDir: ctx, file: 'Kilnfile', cpus: 2, memoryMib: 256, diskMib: 1024, onEvent: (e) => seen.push(e) });
      assert.deepEqual(tpl, TPL);
      assert.deepEqual(seen.map((e) => e.type), LOG.map((e) => e.type));
      assert.equal(seen[3].bytes.toString(), 'hi\n');
      assert.deepEqual([...seen[4].bytes], [0, 255]);
      const req = f.requests[0];
      assert.deepEqual(Object.fromEntries(req.query), { name: 'web', file: 'Kilnfile', cpus: '2', memory_mib: '256', disk_mib: '1024' });
      assert.equal(req.headers['content-length'], String(req.body.length));
      assert.equal(req.headers['content-type'], 'application/gzip');
      const m = tarMembers(req.body);
      assert.deepEqual(Object.keys(m).sort(), ['-dash', 'Kilnfile', 'app', 'app/again.html', 'app/deep', 'app/deep/up', 'app/index.html', 'app/link']);
      assert.equal(m['app/link'].type, '2');
      assert.equal(m['app/link'].link, 'index.html');
      assert.equal(m['app/again.html'].type, '0'); // not a hard link member
      assert.equal(m['app/again.html'].data.toString(), 'hi');
      assert.ok(!zlib.gunzipSync(req.body).includes('outside')); // the links out were not followed
      const s = await k.templates.buildStream('web', { contextDir: ctx });
      for await (const ev of s) void ev;
      assert.equal(s.skipped.length, 4, s.skipped.join('\n'));
      assert.ok(s.skipped.some((x) => /'abs'/.test(x) && /outside/.test(x)));
      assert.ok(s.skipped.some((x) => /'app\/out'/.test(x)));
      assert.ok(s.skipped.some((x) => /'parent'/.test(x)));
      assert.ok(s.skipped.some((x) => /'fifo'/.test(x) && /not a file/.test(x)));
      assert.deepEqual(s.result, TPL);
    });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('templates: packing never follows a directory swapped for a symlink out after the listing; odd names kept', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-race-'));
  const ctx = path.join(root, 'ctx');
  try {
    fs.mkdirSync(path.join(root, 'outside'));
    fs.writeFileSync(path.join(root, 'outside', 'x'), 'outside secret');
    fs.mkdirSync(path.join(ctx, 'd'), { recursive: true });
    fs.mkdirSync(path.join(ctx, 'app', 'sub'), { recursive: true });
    fs.writeFileSync(path.join(ctx, 'd', 'x'), 'inside');
    fs.writeFileSync(path.join(ctx, 'app', 'sub', 'x'), 'inside');
    const odd = ['-dash', '--exclude=x', 'sp ace', 'new\nline', 'star*', 'back\\slash', '[br]'];
    for (const n of odd) fs.writeFileSync(path.join(ctx, 'app', n), n);
    const out = ['-out*', 'o\\ut', 'o\nut', '[o]ut'];
    for (const n of out) fs.symlinkSync('../../outside', path.join(ctx, 'app', n)); // left out, each by its exact name
    fs.writeFileSync(path.join(ctx, 'app', '-out-kept'), 'kept'); // not caught by that exclusion
    const packed = await packContext(ctx, {
      beforeTar: () => { // listed as directories, now symlinks out of the context
        fs.rmSync(path.join(ctx, 'd'), { recursive: true });
        fs.symlinkSync('../outside', path.join(ctx, 'd'));
        fs.rmSync(path.join(ctx, 'app', 'sub'), { recursive: true });
        fs.symlinkSync('../../outside', path.join(ctx, 'app', 'sub'));
      },
    });
    try {
      const m = tarMembers(fs.readFileSync(packed.file));
      assert.ok(!zlib.gunzipSync(fs.readFileSync(packed.file)).includes('outside secret'), Object.keys(m).join(' '));
      assert.equal(m.d.type, '2'); // packed as the symlink it became, never followed
      assert.equal(m['app/sub'].type, '2');
      assert.ok(!('d/x' in m) && !('app/sub/x' in m));
      for (const n of odd) assert.equal(m[`app/${n}`].data.toString(), n, n);
      assert.equal(m['app/-out-kept'].data.toString(), 'kept');
      for (const n of out) assert.ok(!(`app/${n}` in m), n);
      assert.deepEqual(packed.skipped, [...out].sort().map((n) => `skipped symlink 'app/${n}' -> '../../outside': it points outside the context directory`));
    } finally {
      await packed.cleanup();
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('templates: buildStream from a Buffer, a path and a stream; a context given exactly once', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-'));
  const blob = zlib.gzipSync(Buffer.alloc(1024));
  fs.writeFileSync(path.join(dir, 'ctx.tgz'), blob);
  try {
    await withFake({ 'POST /v1/templates': log(LOG) }, async (k, f) => {
      const s = await k.templates.buildStream('web', { context: blob });
      const types = [];
      for await (const ev of s) types.push(ev.type);
      assert.equal(types.at(-1), 'result');
      assert.deepEqual(s.result, TPL);
      assert.ok(f.requests[0].body.equals(blob));
      assert.deepEqual(await k.templates.build('web', { context: path.join(dir, 'ctx.tgz') }), TPL);
      assert.equal(f.requests[1].headers['content-length'], String(blob.length));
      assert.deepEqual(await k.templates.build('web', { context: fs.createReadStream(path.join(dir, 'ctx.tgz')) }), TPL);
      assert.equal(f.requests[2].headers['transfer-encoding'], 'chunked');
      assert.ok(f.requests[2].body.equals(blob));
      await assert.rejects(k.templates.build('web'), TypeError);
      await assert.rejects(k.templates.build('web', { context: blob, contextDir: dir }), TypeError);
      await assert.rejects(k.templates.build('web', { contextDir: path.join(dir, 'missing') }), (e) => e instanceof kiln.KilnError && e.code === 'local_context');
      assert.equal(f.requests.length, 3);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('templates: an error line throws its class with step and line', () => withFake({
  'POST /v1/templates': log([LOG[0], LOG[2], { type: 'error', step: 2, line: 5, error: { code: 'bad_field', message: 'step at line 5 (RUN): RUN exited with status 2' } }]),
}, async (k) => {
  const seen = [];
  await assert.rejects(k.templates.build('web', { context: Buffer.from('x'), onEvent: (e) => seen.push(e.type) }),
    (e) => e instanceof kiln.BadFieldError && e.step === 2 && e.line === 5 && /line 5 \(RUN\)/.test(e.message));
  assert.deepEqual(seen, ['step', 'step']);
}));

test('templates: every refusal before the build starts, with its status', async () => {
  for (const [status, code, Cls] of BUILD_REFUSALS) {
    await withFake({ 'POST /v1/templates': () => errorResponse(status, code, `build file line 4: ${code}`) }, async (k) => {
      await assert.rejects(k.templates.build('web', { context: Buffer.alloc(300000) }),
        (e) => e instanceof Cls && e.status === status && e.code === code && /line 4/.test(e.message), code);
    });
  }
});

test('templates: a log cut short is one KilnConnectionError, not a hang; hostile lines are protocol errors', async () => {
  for (const answer of [log(LOG.slice(0, 3)), log(LOG.slice(0, 2), { end: false })]) {
    await withFake({ 'POST /v1/templates': answer }, async (k) => {
      const t0 = Date.now();
      await assert.rejects(k.templates.build('web', { context: Buffer.from('x') }), kiln.KilnConnectionError);
      assert.ok(Date.now() - t0 < 2000);
    });
  }
  const huge = (req, sock) => {
    sock.write(chunkedHead());
    const piece = chunk(Buffer.alloc(1024 * 1024, 65));
    sock.write(chunk('{"type":"stdout","data":"'));
    for (let i = 0; i < 17 && !sock.destroyed; i++) sock.write(piece);
    sock.end(LAST_CHUNK);
  };
  for (const answer of [log(['not json']), log(['["type"]']), log([{ type: 'result', template: 'web' }]), huge]) {
    await withFake({ 'POST /v1/templates': answer }, async (k) => {
      await assert.rejects(k.templates.build('web', { context: Buffer.from('x') }), kiln.KilnProtocolError);
    });
  }
});

test('templates: a slow build waits on streamTimeoutMs, not the request deadline', () => withFake({
  'POST /v1/templates': async (req, sock) => {
    sock.write(chunkedHead());
    for (const ev of LOG) {
      await new Promise((r) => setTimeout(r, 120));
      sock.write(chunk(JSON.stringify(ev) + '\n'));
    }
    sock.end(LAST_CHUNK);
  },
}, async (k, f) => {
  const quick = new Kiln({ socket: f.socket, timeoutMs: 500 }); // the log takes 840 ms
  assert.deepEqual(await quick.templates.build('web', { context: Buffer.from('x') }), TPL);
  const impatient = new Kiln({ socket: f.socket, timeoutMs: 3000, streamTimeoutMs: 60 });
  await assert.rejects(impatient.templates.build('web', { context: Buffer.from('x') }), kiln.ClientTimeoutError);
}));

test('templates: list, get, delete; their refusals', async () => {
  await withFake({
    'GET /v1/templates': () => jsonResponse(200, { templates: [TPL] }),
    'GET /v1/templates/web': () => jsonResponse(200, TPL),
    'DELETE /v1/templates/web': () => jsonResponse(204),
  }, async (k, f) => {
    assert.deepEqual(await k.templates.list(), [TPL]);
    assert.deepEqual(await k.templates.get('web'), TPL);
    assert.equal(await k.templates.delete('web'), undefined);
    assert.equal(f.requests.at(-1).method, 'DELETE');
  });
  for (const [status, code, Cls] of DELETE_REFUSALS) {
    await withFake({
      'DELETE /v1/templates/x%2Fy': () => errorResponse(status, code, 'refused'),
      'GET /v1/templates/x%2Fy': () => errorResponse(status, code, 'refused'),
    }, async (k) => {
      await assert.rejects(k.templates.delete('x/y'), Cls);
      await assert.rejects(k.templates.get('x/y'), Cls);
    });
  }
});

test('images: list (and the old images() call), get, import from a path, a Buffer and a stream, delete', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-'));
  const data = Buffer.alloc(300 * 1024, 9);
  fs.writeFileSync(path.join(dir, 'a.tar'), data);
  try {
    await withFake({
      'GET /v1/images': () => jsonResponse(200, { images: [IMG], kernel: {} }),
      'GET /v1/images/alpine': () => jsonResponse(200, IMG),
      'POST /v1/images': (req) => jsonResponse(201, { ...IMG, got: req.body.length, same: req.body.equals(data) }),
      'DELETE /v1/images/alpine': () => jsonResponse(204),
    }, async (k, f) => {
      assert.deepEqual(await k.images(), [IMG]);
      assert.deepEqual(await k.images.list(), [IMG]);
      assert.deepEqual(await k.images.get('alpine'), IMG);
      const a = await k.images.import('alpine', path.join(dir, 'a.tar'));
      assert.ok(a.same && a.got === data.length);
      assert.deepEqual(Object.fromEntries(f.requests.at(-1).query), { name: 'alpine' });
      assert.equal(f.requests.at(-1).headers['content-length'], String(data.length));
      const b = await k.images.import('alpine', fs.createReadStream(path.join(dir, 'a.tar')), { devices: true });
      assert.ok(b.same);
      assert.deepEqual(Object.fromEntries(f.requests.at(-1).query), { name: 'alpine', devices: '1' });
      assert.equal(f.requests.at(-1).headers['transfer-encoding'], 'chunked');
      assert.ok((await k.images.import('alpine', data, { ref: 'v1+b' })).same);
      assert.deepEqual(Object.fromEntries(f.requests.at(-1).query), { name: 'alpine', ref: 'v1+b' });
      assert.equal(await k.images.delete('alpine'), undefined);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('images: every import and delete refusal maps to its class', async () => {
  for (const [status, code, Cls] of IMPORT_REFUSALS) {
    await withFake({ 'POST /v1/images': () => errorResponse(status, code, 'layer 1 (sha256:00): member "x": refused') }, async (k) => {
      await assert.rejects(k.images.import('alpine', Buffer.alloc(300000)), (e) => e instanceof Cls && e.status === status, code);
    });
  }
  for (const [status, code, Cls] of DELETE_REFUSALS) {
    await withFake({ 'DELETE /v1/images/a': () => errorResponse(status, code, 'refused') }, async (k) => {
      await assert.rejects(k.images.delete('a'), Cls, code);
    });
  }
});

test('images: a 100 MiB import from a file keeps RSS flat (streamed, not read whole)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-'));
  const file = path.join(dir, 'big.tar');
  fs.closeSync(fs.openSync(file, 'w'));
  fs.truncateSync(file, 100 * 1048576); // sparse: made at once
  // A server that counts the body and keeps none of it.
  const sockPath = path.join(dir, 'kiln.sock');
  const server = net.createServer((sock) => {
    let head = Buffer.alloc(0);
    let left = -1;
    let got = 0;
    sock.on('data', (d) => {
      if (left < 0) {
        head = Buffer.concat([head, d]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        left = Number(/content-length: *(\d+)/i.exec(head.subarray(0, end).toString())[1]);
        d = head.subarray(end + 4);
        head = null;
      }
      got += d.length;
      left -= d.length;
      if (left <= 0) sock.end(jsonResponse(201, { ...IMG, size_bytes: got }));
    });
    sock.on('error', () => {});
  });
  await new Promise((r) => server.listen(sockPath, r));
  try {
    const k = new Kiln({ socket: sockPath });
    const { value: img, arrayBuffersMib, rssMib } = await memoryGrowth(() => k.images.import('big', file));
    assert.equal(img.size_bytes, 100 * 1048576);
    // Holding the archive would pass 100 MiB; the read stream's and the
    // server's 64-256 KiB buffers are garbage until a GC (12-26 MiB seen).
    assert.ok(arrayBuffersMib < 64, `arrayBuffers grew by ${arrayBuffersMib} MiB`);
    assert.ok(rssMib < 32, `RSS grew by ${rssMib} MiB`);
  } finally {
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
