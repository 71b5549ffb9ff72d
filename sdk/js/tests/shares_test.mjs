// Client shares: the reply an object gives each request line (dispatch:
// MemoryFS's tree, missing methods, errno names, async methods), and
// sb.shares.serve against the fake kilnd (the upgrade, a request line and
// its reply, kilnd's error lines, 409 busy). tests/unit/kilnd_shares_test
// runs the Python SDK against the real kilnd.
import assert from 'node:assert/strict';
import { test } from './runner.mjs';
import { startFake, errorResponse } from './fake_kilnd.mjs';
import * as kiln from '../src/index.js';
import { dispatch, shareIndex } from '../src/shares.js';

const { Kiln, Sandbox, MemoryFS } = kiln;
const req = (op, path, more = {}) => ({ id: 9, op, path, ...more });

test('shares: MemoryFS through dispatch', async () => {
  const fs = new MemoryFS({ '/a/b.txt': 'abc' });
  const d = (op, path, more) => dispatch(fs, req(op, path, more));
  assert.deepEqual(await d('stat', '/a'), { id: 9, type: 'dir', size: 0, mode: 0o777 });
  assert.deepEqual(await d('stat', '/a/b.txt'), { id: 9, type: 'file', size: 3, mode: 0o666 });
  assert.deepEqual(await d('readdir', '/'), { id: 9, entries: [{ name: 'a', type: 'dir' }] });
  assert.deepEqual(await d('read', '/a/b.txt', { offset: 1, size: 1 }), { id: 9, data: 'Yg==' });
  assert.deepEqual(await d('create', '/a/c', { mode: 0o644 }), { id: 9 });
  assert.deepEqual(await d('create', '/a/c', { mode: 0o644 }), { id: 9, error: 'EEXIST' });
  assert.deepEqual(await d('write', '/a/c', { offset: 2, data: 'aGk=' }), { id: 9, size: 2 });
  assert.deepEqual(fs.files.get('/a/c'), Buffer.from('\0\0hi'));
  assert.deepEqual(await d('truncate', '/a/c', { size: 1 }), { id: 9 });
  assert.deepEqual(await d('mkdir', '/a/e', { mode: 0o755 }), { id: 9 });
  assert.deepEqual(await d('rename', '/a', { to: '/z' }), { id: 9 });
  assert.deepEqual([...fs.files.keys()].sort(), ['/z/b.txt', '/z/c']);
  assert.ok(fs.dirs.has('/z/e'));
  assert.deepEqual(await d('rmdir', '/z'), { id: 9, error: 'ENOTEMPTY' });
  assert.deepEqual(await d('unlink', '/z/c'), { id: 9 });
  assert.deepEqual(await d('read', '/nope', { offset: 0, size: 1 }), { id: 9, error: 'ENOENT' });
});

test('shares: errors, missing methods, async methods, capped results', async () => {
  const obj = {
    async stat() { const e = new Error('no'); e.code = 'EACCES'; throw e; },
    read() { const e = new Error('busy'); e.code = 'EAGAIN'; throw e; },
    readdir() { throw new TypeError('a bug'); },
    write() { return 99; },
    async mkdir() {},
  };
  assert.deepEqual(await dispatch(obj, req('stat', '/')), { id: 9, error: 'EACCES' });
  assert.deepEqual(await dispatch(obj, req('read', '/', { offset: 0, size: 1 })), { id: 9, error: 'EIO' });
  assert.deepEqual(await dispatch(obj, req('readdir', '/')), { id: 9, error: 'EIO' });
  assert.deepEqual(await dispatch(obj, req('write', '/', { offset: 0, data: 'aGk=' })), { id: 9, size: 2 });
  assert.deepEqual(await dispatch(obj, req('mkdir', '/m', { mode: 0 })), { id: 9 });
  assert.deepEqual(await dispatch(obj, req('unlink', '/x')), { id: 9, error: 'ENOSYS' });
  assert.deepEqual(await dispatch(obj, req('toString', '/x')), { id: 9, error: 'ENOSYS' });
  assert.deepEqual(await dispatch({ read: () => '0123456789' }, req('read', '/', { offset: 0, size: 3 })),
    { id: 9, data: Buffer.from('012').toString('base64') });
  assert.equal(shareIndex({ shares: [{ guest_path: '/a' }, { guest_path: '/b' }] }, '/b'), 1);
  assert.throws(() => shareIndex({ id: 'x', shares: [] }, '/c'), /no share at guest path "\/c"/);
});

test('shares: serve upgrades and answers the lines', async () => {
  let head = '';
  let reply = '';
  let done;
  const replied = new Promise((r) => { done = r; });
  const f = await startFake((r, sock) => {
    head = `${r.method} ${r.target} ${JSON.stringify(r.headers)}`;
    sock.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: kiln-fs\r\n\r\n' +
      '{"kind":"error","message":"first"}\n{"id":3,"op":"stat","path":"/f"}\n');
    sock.on('data', (d) => { reply += d.toString(); if (reply.endsWith('\n')) done(); });
  });
  try {
    const sb = new Sandbox(new Kiln({ socket: f.socket, timeoutMs: 3000 }), { id: 'sb1' });
    const srv = await sb.shares.serve(2, new MemoryFS({ '/f': 'xy' }));
    await replied;
    assert.match(head, /^GET \/v1\/sandboxes\/sb1\/shares\/2\/serve /);
    assert.match(head.toLowerCase(), /"upgrade":"kiln-fs"/);
    assert.deepEqual(JSON.parse(reply), { id: 3, type: 'file', size: 2, mode: 0o666 });
    assert.deepEqual(srv.errors, ['first']);
    await srv.close();
    assert.equal(srv.serving, false);
  } finally {
    await f.close();
  }
});

test('shares: a second client is BusyError', async () => {
  const f = await startFake((r, sock) => sock.end(errorResponse(409, 'busy', 'served by another client')));
  try {
    const sb = new Sandbox(new Kiln({ socket: f.socket, timeoutMs: 3000 }), { id: 'sb1' });
    await assert.rejects(sb.shares.serve(0, new MemoryFS()), kiln.BusyError);
  } finally {
    await f.close();
  }
});

// Lines a compromised kilnd could send: the object never sees a path
// outside the share's tree or a field of the wrong kind, MemoryFS never
// grows to a size the guest chose, and no line ends the serving.
test('shares: bad paths and fields never reach the object', async () => {
  const calls = [];
  const obj = {};
  for (const op of ['stat', 'readdir', 'read', 'write', 'create', 'mkdir', 'unlink', 'rmdir', 'rename', 'truncate']) {
    obj[op] = (...a) => { calls.push([op, ...a]); return op === 'stat' ? { type: 'file', size: 0 } : undefined; };
  }
  const bad = ['/../x', '/a/../../etc/passwd', '..', 'x', '', '//x', '/a//b', '/a/', '/./a', '/a/.', '/a\0b',
    '/' + 'n'.repeat(256), '/a'.repeat(2049), 5, null, ['/'], { toString: () => '/' }];
  for (const path of bad) {
    assert.deepEqual(await dispatch(obj, req('stat', path)), { id: 9, error: 'EINVAL' }, String(path));
  }
  for (const r of [req('rename', '/a', { to: '/../b' }), req('read', '/f', { offset: -1, size: 1 }),
    req('read', '/f', { offset: 0, size: 0 }), req('read', '/f', { offset: 0, size: 131073 }),
    req('read', '/f', { offset: '0', size: 1 }), req('read', '/f', { offset: 0.5, size: 1 }),
    req('read', '/f', { offset: 2 ** 64, size: 1 }), req('write', '/f', { offset: 0, data: 'a' }),
    req('write', '/f', { offset: 0, data: 7 }), req('write', '/f', { offset: 0, data: 'a*==' }),
    req('truncate', '/f', { size: -1 }), req('create', '/f', { mode: 0o10000 }), req('mkdir', '/d'),
    req('read', '/f')]) {
    assert.deepEqual(await dispatch(obj, r), { id: 9, error: 'EINVAL' }, JSON.stringify(r));
  }
  assert.deepEqual(calls, []);
  assert.deepEqual(await dispatch(obj, req('rename', '/a', { to: '/b' })), { id: 9 });
  assert.deepEqual(calls, [['rename', '/a', '/b']]);
});

test('shares: MemoryFS sizes are bounded', async () => {
  const fs = new MemoryFS({ '/f': 'ab' });
  assert.deepEqual(await dispatch(fs, req('write', '/f', { offset: 2 ** 40, data: 'aGk=' })), { id: 9, error: 'EFBIG' });
  assert.deepEqual(await dispatch(fs, req('truncate', '/f', { size: 2 ** 40 })), { id: 9, error: 'EFBIG' });
  assert.deepEqual(fs.files.get('/f'), Buffer.from('ab'));
  const small = new MemoryFS({}, { maxBytes: 8 });
  const d = (op, path, more) => dispatch(small, req(op, path, more));
  assert.deepEqual(await d('create', '/a', { mode: 0o644 }), { id: 9 });
  assert.deepEqual(await d('create', '/b', { mode: 0o644 }), { id: 9 });
  assert.deepEqual(await d('truncate', '/a', { size: 6 }), { id: 9 });
  assert.deepEqual(await d('write', '/b', { offset: 0, data: 'aGk=' }), { id: 9, size: 2 });
  assert.deepEqual(await d('write', '/b', { offset: 2, data: 'aGk=' }), { id: 9, error: 'ENOSPC' });
  assert.deepEqual(await d('truncate', '/a', { size: 0 }), { id: 9 });
  assert.deepEqual(await d('write', '/b', { offset: 2, data: 'aGk=' }), { id: 9, size: 2 });
});

test('shares: a hostile kilnd line neither crashes the process nor stops the serving', async () => {
  let reply = '';
  let done;
  const replied = new Promise((r) => { done = r; });
  const rejections = [];
  const onRejection = (e) => rejections.push(e);
  process.on('unhandledRejection', onRejection);
  const f = await startFake((r, sock) => {
    sock.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: kiln-fs\r\n\r\n' +
      '{"kind":"error","message":{"toString":1}}\n' + '['.repeat(100000) + '\n' +
      '{"id":4,"op":"stat","path":"/f"}\n');
    sock.on('data', (d) => { reply += d.toString(); if (reply.endsWith('\n')) done(); });
  });
  try {
    const sb = new Sandbox(new Kiln({ socket: f.socket, timeoutMs: 3000 }), { id: 'sb1' });
    const srv = await sb.shares.serve(0, new MemoryFS({ '/f': 'xy' }));
    await Promise.race([replied, new Promise((r) => setTimeout(r, 2000))]);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(rejections, []);
    assert.deepEqual(JSON.parse(reply), { id: 4, type: 'file', size: 2, mode: 0o666 });
    assert.equal(srv.errors.length, 1);
    await srv.close();
  } finally {
    process.off('unhandledRejection', onRejection);
    await f.close();
  }
});

// kilnd sends one request at a time; one that floods (compromised) must
// not queue lines without bound: the socket pauses while many wait.
test('shares: a flood of request lines pauses the socket until the object catches up', async () => {
  const { EventEmitter } = await import('node:events');
  const sock = new EventEmitter();
  sock.destroyed = false;
  let text = '';
  let paused = 0;
  let resumed = 0;
  sock.write = (d) => { text += d; return true; };
  sock.destroy = () => { sock.destroyed = true; };
  sock.pause = () => { paused++; };
  sock.resume = () => { resumed++; };
  let release;
  const gate = new Promise((r) => { release = r; });
  const obj = { async stat() { await gate; return { type: 'file', size: 1 }; } };
  const srv = new kiln.ShareServer(0, obj, sock, Buffer.alloc(0));
  let lines = '';
  for (let i = 1; i <= 1000; i++) lines += `{"id":${i},"op":"stat","path":"/f"}\n`;
  srv.feed(Buffer.from(lines));
  assert.equal(paused, 1);
  assert.equal(resumed, 0);
  release();
  await srv.chain;
  assert.equal(resumed, 1);
  assert.equal(text.split('\n').filter(Boolean).length, 1000);
});

// rename(2): a directory may replace an empty one, not one with entries
// (ENOTEMPTY), which also refuses a rename onto an ancestor.
test('shares: MemoryFS renames a directory over an empty one only', async () => {
  const fs = new MemoryFS({ '/x/a': '1', '/y/b': '2', '/p/q/r': '3' });
  fs.dirs.add('/e');
  const d = (op, path, more) => dispatch(fs, req(op, path, more));
  assert.deepEqual(await d('rename', '/x', { to: '/y' }), { id: 9, error: 'ENOTEMPTY' });
  assert.deepEqual(await d('rename', '/p/q', { to: '/p' }), { id: 9, error: 'ENOTEMPTY' });
  assert.deepEqual([...fs.files.keys()].sort(), ['/p/q/r', '/x/a', '/y/b']);
  assert.deepEqual(await d('rename', '/x', { to: '/x' }), { id: 9 });
  assert.deepEqual(await d('rename', '/x', { to: '/e' }), { id: 9 });
  assert.deepEqual([...fs.files.keys()].sort(), ['/e/a', '/p/q/r', '/y/b']);
  assert.ok(!fs.dirs.has('/x'));
});

test('shares: a result JSON cannot carry answers EIO', async () => {
  const obj = { stat: () => ({ type: 'file', size: 1, mtime: 10n }) };
  assert.deepEqual(await dispatch(obj, req('stat', '/f')), { id: 9, error: 'EIO' });
});
