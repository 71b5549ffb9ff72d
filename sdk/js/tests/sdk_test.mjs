// Unit tests of the SDK against a fake kilnd (tests/fake_kilnd.mjs).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, memoryGrowth } from './runner.mjs';
import { startFake, jsonResponse, errorResponse, chunkedHead, chunk, LAST_CHUNK } from './fake_kilnd.mjs';
import * as kiln from '../src/index.js';

const { Kiln } = kiln;
const SB = { id: 'abc123', state: 'running', image: 'minimal' };

// A fake whose answer comes from routes: {"METHOD /path": fn(req) -> Buffer|string}.
async function fake(routes) {
  return startFake((req, sock) => {
    const r = routes[`${req.method} ${req.path}`];
    if (!r) { sock.end(errorResponse(404, 'route_not_found', `no ${req.method} ${req.path}`)); return; }
    const out = r(req, sock);
    if (out !== undefined) sock.end(out);
  });
}

async function withFake(routes, fn) {
  const f = await fake(routes);
  try {
    await fn(new Kiln({ socket: f.socket, timeoutMs: 3000 }), f);
  } finally {
    await f.close();
  }
}

test('health, metrics and images: paths and answers', () => withFake({
  'GET /v1/health': () => jsonResponse(200, { status: 'ok' }),
  'GET /metrics': () => 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n\r\nkiln_boots_total 3',
  'GET /v1/images': () => jsonResponse(200, { images: [{ name: 'minimal' }], kernel: {} }),
}, async (k) => {
  assert.equal((await k.health()).status, 'ok');
  assert.equal(await k.metrics(), 'kiln_boots_total 3');
  assert.deepEqual(await k.images(), [{ name: 'minimal' }]);
}));

test('the socket comes from KILN_SOCKET, else the CLI default', () => {
  const old = process.env.KILN_SOCKET;
  try {
    process.env.KILN_SOCKET = '/tmp/x.sock';
    assert.equal(new Kiln().socket, '/tmp/x.sock');
    delete process.env.KILN_SOCKET;
    assert.equal(new Kiln().socket, '/run/kiln/kiln.sock');
    assert.equal(new Kiln({ socket: '/a' }).socket, '/a');
  } finally {
    if (old === undefined) delete process.env.KILN_SOCKET; else process.env.KILN_SOCKET = old;
  }
});

test('create sends snake_case fields as given and returns a Sandbox', () => withFake({
  'POST /v1/sandboxes': (req) => jsonResponse(201, { ...SB, sent: req.json() }),
}, async (k, f) => {
  const sb = await k.sandboxes.create({ image: 'minimal', memoryMib: 256, cpus: 2, env: { myVar: 'x' }, diskMib: 64, firewall: { outbound_internet: true }, bogusField: 1 });
  assert.equal(sb.id, 'abc123');
  assert.deepEqual(f.requests[0].json(), { image: 'minimal', memory_mib: 256, cpus: 2, env: { myVar: 'x' }, disk_mib: 64, firewall: { outbound_internet: true }, bogus_field: 1 });
  assert.equal(sb.info.state, 'running');
}));

test('list passes state and repeated label filters; get fetches one', () => withFake({
  'GET /v1/sandboxes': () => jsonResponse(200, { sandboxes: [SB, { ...SB, id: 'def456' }] }),
  'GET /v1/sandboxes/abc123': () => jsonResponse(200, SB),
}, async (k, f) => {
  const l = await k.sandboxes.list({ state: 'running', label: { job: '42', team: 'a b' } });
  assert.deepEqual(l.map((s) => s.id), ['abc123', 'def456']);
  assert.equal(f.requests[0].target, '/v1/sandboxes?state=running&label=job%3D42&label=team%3Da%20b');
  assert.equal((await k.sandboxes.get('abc123')).id, 'abc123');
}));

test('every error code maps to its class with status, code and message', async () => {
  const f = await startFake((req, sock) => {
    const code = req.query.get('code');
    sock.end(errorResponse(Number(req.query.get('status')), code, `msg ${code}`));
  });
  try {
    const t = new Kiln({ socket: f.socket, timeoutMs: 3000 }).transport;
    for (const code of kiln.ERROR_CODES) {
      const cls = kiln[kiln.className(code)];
      assert.ok(cls && cls.prototype instanceof kiln.KilnError, `class for ${code}`);
      await assert.rejects(t.json('GET', '/x', { query: { code, status: 409 } }), (e) => {
        assert.ok(e instanceof cls, `${code} -> ${e.name}`);
        assert.equal(e.name, kiln.className(code));
        assert.equal(e.status, 409);
        assert.equal(e.code, code);
        assert.equal(e.message, `msg ${code}`);
        return true;
      });
    }
    await assert.rejects(t.json('GET', '/x', { query: { code: 'brand_new', status: 418 } }), (e) => e.constructor === kiln.KilnError && e.code === 'brand_new' && e.status === 418);
    // io_error is IoError, not IoErrorError (kept as a deprecated alias)
    assert.deepEqual([kiln.errorClass('io_error').name, kiln.errorClass('agent_protocol_error').name], ['IoError', 'AgentProtocolError']);
    assert.equal(kiln.IoErrorError, kiln.IoError);
    assert.equal(kiln.AgentProtocolErrorError, kiln.AgentProtocolError);
  } finally {
    await f.close();
  }
});

test('timeouts: timeout, request_timeout and the client deadline are TimeoutErrors', async () => {
  assert.ok(new kiln.TimeoutError('x') instanceof kiln.KilnError);
  assert.ok(new kiln.RequestTimeoutError('x') instanceof kiln.TimeoutError);
  assert.ok(new kiln.ClientTimeoutError('x') instanceof kiln.TimeoutError);
  assert.equal(kiln.errorClass('timeout'), kiln.TimeoutError);
  assert.equal(kiln.errorClass('request_timeout'), kiln.RequestTimeoutError);
  // A server that never answers: the client deadline, no hang.
  const f = await startFake(() => {});
  try {
    const k = new Kiln({ socket: f.socket, timeoutMs: 200 });
    const t0 = Date.now();
    await assert.rejects(k.health(), (e) => e instanceof kiln.ClientTimeoutError && e.status === undefined && /200 ms/.test(e.message));
    assert.ok(Date.now() - t0 < 2000);
  } finally {
    await f.close();
  }
});

test('a head, then silence in the body: the client deadline still holds', async () => {
  const f = await startFake((req, sock) => sock.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"a":'));
  try {
    await assert.rejects(new Kiln({ socket: f.socket, timeoutMs: 300 }).health(), kiln.ClientTimeoutError);
  } finally {
    await f.close();
  }
});

test('no kilnd: one KilnConnectionError naming the socket and what to do', async () => {
  const k = new Kiln({ socket: '/nonexistent/kiln.sock' });
  await assert.rejects(k.health(), (e) => e instanceof kiln.KilnConnectionError && e.status === undefined
    && /\/nonexistent\/kiln\.sock/.test(e.message) && /is kilnd running\? start it or set KILN_SOCKET/.test(e.message));
});

test('a server that closes without answering: KilnConnectionError', async () => {
  const f = await startFake((req, sock) => sock.destroy());
  try {
    await assert.rejects(new Kiln({ socket: f.socket }).health(), kiln.KilnConnectionError);
  } finally {
    await f.close();
  }
});

test('a body cut short (Content-Length not reached): KilnConnectionError', async () => {
  const f = await startFake((req, sock) => sock.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"status":'));
  try {
    await assert.rejects(new Kiln({ socket: f.socket }).health(), kiln.KilnConnectionError);
  } finally {
    await f.close();
  }
});

test('hostile answers: bad framing, bad JSON, an error that is not JSON', async () => {
  const answers = [
    ['HELLO THERE\r\n\r\n', kiln.KilnProtocolError],
    ['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!', kiln.KilnProtocolError],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nxx\r\n', kiln.KilnProtocolError],
    ['HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nnotjson', kiln.KilnProtocolError],
    ['HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops', kiln.KilnProtocolError],
    ['HTTP/1.1 500 Oops\r\nContent-Length: 14\r\n\r\n{"error":"no"}', kiln.KilnProtocolError],
    ['HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\n[]', kiln.KilnProtocolError],
  ];
  let i = 0;
  const f = await startFake((req, sock) => sock.end(answers[i++][0]));
  try {
    const k = new Kiln({ socket: f.socket, timeoutMs: 2000 });
    for (const [raw, cls] of answers) {
      await assert.rejects(k.health(), (e) => {
        assert.ok(e instanceof cls, `${JSON.stringify(raw)} -> ${e.name}: ${e.message}`);
        return true;
      });
    }
    // The 500 with a text body keeps its status.
    i = 4;
    await assert.rejects(k.health(), (e) => e.status === 500);
  } finally {
    await f.close();
  }
});

test('exec: argv or shell string, stdin as bytes, camelCase result, non-zero exit is no error', () => withFake({
  'POST /v1/sandboxes/abc123/exec': (req) => {
    const b = req.json();
    return jsonResponse(200, {
      exit_code: 3, signal: null, timed_out: false, stdout: b.shell ? 'c2hlbGw=' : 'argv\n', stdout_encoding: b.shell ? 'base64' : 'utf-8',
      stderr: 'oops\n', stderr_encoding: 'utf-8', stdout_bytes: 5, duration_ms: 2.5, got: b,
    });
  },
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
}, async (k, f) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  const r = await sb.exec(['echo', 'x'], { cwd: '/tmp', timeoutMs: 5000, env: { A_B: '1' } });
  assert.equal(r.exitCode, 3);
  assert.equal(r.stdout, 'argv\n');
  assert.equal(r.stderr, 'oops\n');
  assert.equal(r.durationMs, 2.5);
  assert.equal(r.timedOut, false);
  assert.equal(r.ok, false);
  assert.deepEqual(r.got, { argv: ['echo', 'x'], cwd: '/tmp', timeout_ms: 5000, env: { A_B: '1' } });
  const s = await sb.exec('echo $X | wc', { stdin: Buffer.from([0, 255]) });
  assert.equal(s.stdout, 'shell');
  assert.deepEqual(s.stdoutRaw, Buffer.from('shell'));
  assert.deepEqual(s.got, { argv: ['echo $X | wc'], shell: true, stdin_base64: 'AP8=' });
  const t = await sb.exec('x', { stdin: 'text' });
  assert.equal(t.got.stdin, 'text');
}));

function ndjsonStream(events, { split = false, end = true } = {}) {
  return (req, sock) => {
    sock.write(chunkedHead());
    const text = events.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)) + '\n').join('');
    if (split) {
      for (let i = 0; i < text.length; i += 7) sock.write(chunk(text.slice(i, i + 7)));
    } else {
      sock.write(chunk(text));
    }
    if (end) sock.end(LAST_CHUNK); else sock.destroy();
  };
}

const EXIT = { type: 'exit', exit_code: 0, signal: null, timed_out: false, stdout_bytes: 4, stderr_bytes: 2, duration_ms: 1 };

test('exec stream: events split across chunks, base64 data, exit last', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/exec': ndjsonStream([
    { type: 'stdout', data: 'héllo\n' }, { type: 'stderr', data_base64: '/wA=' }, EXIT,
  ], { split: true }),
}, async (k, f) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  const evs = [];
  for await (const ev of await sb.execStream(['x'])) evs.push(ev);
  assert.deepEqual(evs.map((e) => e.type), ['stdout', 'stderr', 'exit']);
  assert.equal(evs[0].data, 'héllo\n');
  assert.deepEqual(evs[1].bytes, Buffer.from([255, 0]));
  assert.equal(f.requests[1].target, '/v1/sandboxes/abc123/exec?stream=1');
}));

test('exec with onStdout/onStderr uses the stream and still returns an ExecResult', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/exec': ndjsonStream([
    { type: 'stdout', data: 'a\n' }, { type: 'stderr', data: 'e\n' }, { type: 'stdout', data: 'b\n' }, EXIT,
  ]),
}, async (k) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  const seen = [];
  const r = await sb.exec('x', { onStdout: (s) => seen.push(`o:${s}`), onStderr: (s) => seen.push(`e:${s}`) });
  assert.deepEqual(seen, ['o:a\n', 'e:e\n', 'o:b\n']);
  assert.equal(r.stdout, 'a\nb\n');
  assert.equal(r.stderr, 'e\n');
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdoutBytes, 4);
}));

test('a stream cut mid-way (kilnd died): exactly one KilnConnectionError', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/exec': ndjsonStream([{ type: 'stdout', data: 'a\n' }], { end: false }),
}, async (k) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  const evs = [];
  const errs = [];
  try {
    for await (const ev of await sb.execStream('x')) evs.push(ev.type);
  } catch (e) {
    errs.push(e);
  }
  assert.equal(errs.length, 1);
  assert.ok(errs[0] instanceof kiln.KilnConnectionError, errs[0].name);
  assert.match(errs[0].message, /KILN_SOCKET/);
  assert.deepEqual(evs, ['stdout']);
}));

test('a stream silent past Kiln({streamTimeoutMs}): one ClientTimeoutError naming it; without it the stream waits', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  // One event, then neither more nor an end.
  'POST /v1/sandboxes/abc123/exec': (req, sock) => { sock.write(chunkedHead()); sock.write(chunk(JSON.stringify({ type: 'stdout', data: 'a' }) + '\n')); },
}, async (k, f) => {
  const quick = new Kiln({ socket: f.socket, timeoutMs: 3000, streamTimeoutMs: 300 });
  const sb = await quick.sandboxes.create({ image: 'minimal' });
  const evs = [];
  const t0 = Date.now();
  await assert.rejects((async () => { for await (const ev of await sb.execStream('x')) evs.push(ev.type); })(),
    (e) => e instanceof kiln.ClientTimeoutError && /300 ms/.test(e.message) && /streamTimeoutMs/.test(e.message));
  assert.deepEqual(evs, ['stdout']);
  assert.ok(Date.now() - t0 < 2500);
  assert.equal(quick.streamTimeoutMs, 300);
  assert.equal(k.streamTimeoutMs, 0);
  // The default: a long-silent stream is not the client's to end (timeoutMs bounds its head only).
  const slow = new Kiln({ socket: f.socket, timeoutMs: 500 });
  const sb2 = await slow.sandboxes.create({ image: 'minimal' });
  const it = (await sb2.execStream('x'))[Symbol.asyncIterator]();
  assert.equal((await it.next()).value.type, 'stdout');
  const more = it.next().then(() => 'ended', () => 'failed');
  const waited = await Promise.race([more, new Promise((r) => setTimeout(() => r('waiting'), 1500))]);
  assert.equal(waited, 'waiting');
  await f.close(); // ends it: an async generator's return() would queue behind the pending next()
  assert.equal(await more, 'failed');
}));

test('a stream head slower than streamTimeoutMs (a sandbox waking) is the deadline\'s to judge, not the silence\'s', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/exec': (req, sock) => {
    setTimeout(() => ndjsonStream([{ type: 'stdout', data: 'a' }, EXIT])(req, sock), 700);
  },
}, async (k, f) => {
  const sb = await new Kiln({ socket: f.socket, timeoutMs: 3000, streamTimeoutMs: 300 }).sandboxes.create({ image: 'minimal' });
  const evs = [];
  for await (const ev of await sb.execStream('x')) evs.push(ev.type);
  assert.deepEqual(evs, ['stdout', 'exit']);
}));

test('a stream that ends cleanly before its exit event: KilnConnectionError', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/exec': ndjsonStream([{ type: 'stdout', data: 'a\n' }]),
}, async (k) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  await assert.rejects((async () => { for await (const ev of await sb.execStream('x')) void ev; })(), kiln.KilnConnectionError);
}));

test("a stream's error event is thrown as its class; a garbage line is a protocol error", () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/exec': ndjsonStream([{ type: 'stdout', data: 'a' }, { type: 'error', error: { code: 'agent_unavailable', message: 'gone' } }]),
  'POST /v1/sandboxes/abc123/run': ndjsonStream(['{"type":"stdout","data":"a"}', 'not json at all']),
}, async (k) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  await assert.rejects(sb.exec('x', { onStdout: () => {} }), (e) => e instanceof kiln.AgentUnavailableError && e.message === 'gone');
  await assert.rejects(sb.runCode('x', { onStdout: () => {} }), kiln.KilnProtocolError);
}));

test('an error before the stream starts comes with its status', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/exec': () => errorResponse(404, 'not_found', 'no such program'),
}, async (k) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  await assert.rejects(sb.execStream(['nope']), (e) => e instanceof kiln.NotFoundError && e.status === 404);
}));

test('leaving a stream early closes its connection', async () => {
  let closed;
  const gone = new Promise((r) => { closed = r; });
  const f = await startFake((req, sock) => {
    if (req.method === 'POST' && req.path === '/v1/sandboxes') { sock.end(jsonResponse(201, SB)); return; }
    sock.on('close', closed);
    sock.write(chunkedHead());
    const iv = setInterval(() => { if (!sock.destroyed) sock.write(chunk('{"type":"stdout","data":"tick\\n"}\n')); }, 10);
    sock.on('close', () => clearInterval(iv));
  });
  try {
    const sb = await new Kiln({ socket: f.socket }).sandboxes.create({ image: 'minimal' });
    let n = 0;
    for await (const ev of await sb.execStream('yes')) { void ev; if (++n === 3) break; }
    await gone; // the server saw the connection close
    // close() on a stream never iterated closes it too
    const s = await sb.execStream('yes');
    await s.close();
  } finally {
    await f.close();
  }
});

test('runCode: result and error; the stream ends with the result event', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/run': (req, sock) => {
    if (req.query.get('stream')) return ndjsonStream([{ type: 'stdout', data: '1\n' }, EXIT, { type: 'result', result: 'done', error: null }])(req, sock);
    return jsonResponse(200, { exit_code: 1, stdout: '', stderr: 'tb', result: { n: 3 }, error: { type: 'ValueError', message: 'too big', traceback: 'tb' }, sent: req.json() });
  },
}, async (k) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  const r = await sb.runCode('raise ValueError()');
  assert.deepEqual(r.result, { n: 3 });
  assert.equal(r.error.type, 'ValueError');
  assert.deepEqual(r.sent, { language: 'python', code: 'raise ValueError()' });
  const out = [];
  const s = await sb.runCode('x', { language: 'javascript', onStdout: (t) => out.push(t) });
  assert.equal(s.result, 'done');
  assert.equal(s.exitCode, 0);
  assert.deepEqual(out, ['1\n']);
}));

test('files: read, readText, write (mode as octal), stat, list, mkdir, remove, rename', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'GET /v1/sandboxes/abc123/files': (req, sock) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n');
    sock.write(chunk('hello '));
    sock.end(Buffer.concat([chunk('world'), Buffer.from(LAST_CHUNK)]));
  },
  'PUT /v1/sandboxes/abc123/files': (req) => jsonResponse(200, { path: req.query.get('path'), bytes: req.body.length }),
  'GET /v1/sandboxes/abc123/files/stat': () => jsonResponse(200, { kind: 'file', size: 11 }),
  'GET /v1/sandboxes/abc123/files/list': () => jsonResponse(200, { path: '/w', entries: [{ path: '/w/a' }], count: 1, truncated: false, skipped: 0 }),
  'POST /v1/sandboxes/abc123/files/mkdir': (req) => jsonResponse(200, { path: req.json().path }),
  'POST /v1/sandboxes/abc123/files/remove': () => jsonResponse(204),
  'POST /v1/sandboxes/abc123/files/rename': (req) => jsonResponse(200, req.json()),
}, async (k, f) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  assert.deepEqual(await sb.files.read('/etc/x'), Buffer.from('hello world'));
  assert.equal(await sb.files.readText('/etc/x', { offset: 2 }), 'hello world');
  assert.equal(f.requests[2].target, '/v1/sandboxes/abc123/files?path=%2Fetc%2Fx&offset=2');
  assert.deepEqual(await sb.files.write('/w/a b', 'héllo', { mode: 0o600, parents: true }), { path: '/w/a b', bytes: 6 });
  assert.equal(f.requests[3].target, '/v1/sandboxes/abc123/files?path=%2Fw%2Fa%20b&mode=0600&parents=true');
  assert.equal(f.requests[3].headers['content-length'], '6');
  assert.equal((await sb.files.stat('/w/a')).size, 11);
  assert.equal((await sb.files.list('/w', { depth: 2 })).entries.length, 1);
  assert.equal(f.requests[5].query.get('depth'), '2');
  assert.equal((await sb.files.mkdir('/w/d', { parents: true })).path, '/w/d');
  assert.deepEqual(f.requests[6].json(), { path: '/w/d', parents: true });
  assert.equal(await sb.files.remove('/w/d', { recursive: true }), undefined);
  assert.deepEqual(await sb.files.rename('/a', '/b', { overwrite: true }), { from: '/a', to: '/b', overwrite: true });
}));

test('files: upload from a local path and a stream, download to a path and a Writable', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-'));
  const big = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
  fs.writeFileSync(path.join(dir, 'in.bin'), big);
  try {
    await withFake({
      'POST /v1/sandboxes': () => jsonResponse(201, SB),
      'PUT /v1/sandboxes/abc123/files': (req) => jsonResponse(200, { bytes: req.body.length, te: req.headers['transfer-encoding'] || null, cl: req.headers['content-length'] || null, same: req.body.equals(big) }),
      'GET /v1/sandboxes/abc123/files': (req, sock) => {
        sock.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
        for (let i = 0; i < big.length; i += 65536) sock.write(chunk(big.subarray(i, i + 65536)));
        sock.end(LAST_CHUNK);
      },
    }, async (k) => {
      const sb = await k.sandboxes.create({ image: 'minimal' });
      const a = await sb.files.upload('/w/in', path.join(dir, 'in.bin'));
      assert.deepEqual(a, { bytes: big.length, te: null, cl: String(big.length), same: true });
      const b = await sb.files.upload('/w/in', fs.createReadStream(path.join(dir, 'in.bin')));
      assert.deepEqual(b, { bytes: big.length, te: 'chunked', cl: null, same: true });
      assert.equal(await sb.files.download('/w/in', path.join(dir, 'out.bin')), big.length);
      assert.ok(fs.readFileSync(path.join(dir, 'out.bin')).equals(big));
      const ws = fs.createWriteStream(path.join(dir, 'out2.bin'));
      assert.equal(await sb.files.download('/w/in', ws), big.length);
      await new Promise((r) => ws.end(r));
      assert.ok(fs.readFileSync(path.join(dir, 'out2.bin')).equals(big));
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a download cut without its last chunk is a KilnConnectionError, not a short file', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'GET /v1/sandboxes/abc123/files': (req, sock) => {
    sock.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
    sock.write(chunk('partial'));
    setTimeout(() => sock.destroy(), 20);
  },
}, async (k) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  await assert.rejects(sb.files.read('/x'), kiln.KilnConnectionError);
}));

test('directories go through the archive endpoints (uploadDir with the system tar, downloadDir read by the SDK)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-'));
  fs.mkdirSync(path.join(dir, 'src/sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'src/sub/f.txt'), 'inside\n');
  let stored = null;
  try {
    await withFake({
      'POST /v1/sandboxes': () => jsonResponse(201, SB),
      'PUT /v1/sandboxes/abc123/archive': (req) => { stored = req.body; return jsonResponse(200, { path: req.query.get('path'), files: 1 }); },
      'GET /v1/sandboxes/abc123/archive': (req, sock) => {
        sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nTransfer-Encoding: chunked\r\n\r\n');
        sock.end(Buffer.concat([chunk(stored), Buffer.from(LAST_CHUNK)]));
      },
    }, async (k) => {
      const sb = await k.sandboxes.create({ image: 'minimal' });
      assert.equal((await sb.files.uploadDir(path.join(dir, 'src'), '/w/proj')).files, 1);
      assert.equal(stored[0], 0x1f); // gzip
      await sb.files.downloadDir('/w/proj', path.join(dir, 'back'));
      assert.equal(fs.readFileSync(path.join(dir, 'back/sub/f.txt'), 'utf8'), 'inside\n');
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

let exited = false;
test('processes: spawn, list, get, output with reattach, stdin, signal, wait, resize', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'POST /v1/sandboxes/abc123/processes': (req) => jsonResponse(201, { id: 1, pid: 61, sent: req.json() }),
  'GET /v1/sandboxes/abc123/processes': () => jsonResponse(200, { processes: [{ id: 1, pid: 61, running: true }] }),
  'GET /v1/sandboxes/abc123/processes/1': () => jsonResponse(200, { id: 1, pid: 61, running: !exited, output_bytes: exited ? 8 : 4 }),
  'GET /v1/sandboxes/abc123/processes/1/output': (req, sock) => {
    const from = Number(req.query.get('from') || 0);
    const evs = [{ type: 'attached', id: 1, seq: from }, { type: 'stdout', seq: from, data: 'ab' }, { type: 'stderr', seq: from + 2, data: 'cd' }];
    if (from > 0) evs.push({ type: 'exit', id: 1, exit_code: 0 });
    ndjsonStream(evs, { end: from > 0 })(req, sock);
    if (from === 0) setTimeout(() => sock.destroy(), 50);
  },
  'POST /v1/sandboxes/abc123/processes/1/stdin': (req) => jsonResponse(200, { bytes: req.body.length, closed: req.query.get('close') === '1' }),
  'POST /v1/sandboxes/abc123/processes/1/signal': () => jsonResponse(204),
  'POST /v1/sandboxes/abc123/processes/1/wait': (req) => jsonResponse(200, { id: 1, exit_code: 0, q: req.query.get('timeout_ms') }),
  'POST /v1/sandboxes/abc123/processes/1/resize': () => jsonResponse(204),
}, async (k, f) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  const p = await sb.processes.spawn(['sh'], { pty: true, rows: 10 });
  assert.deepEqual(p.info.sent, { argv: ['sh'], pty: true, rows: 10 });
  assert.equal((await sb.processes.list())[0].pid, 61);
  assert.equal((await sb.processes.get(1)).info.output_bytes, 4);
  // the first attach loses its connection after 4 bytes; reattach from next
  let next = 0;
  await assert.rejects((async () => {
    for await (const ev of await p.output({ since: 0 })) if (ev.next !== undefined) next = ev.next;
  })(), kiln.KilnConnectionError);
  assert.equal(next, 4);
  const types = [];
  for await (const ev of await p.output({ since: next })) types.push(`${ev.type}:${ev.seq ?? ''}`);
  assert.deepEqual(types, ['attached:4', 'stdout:4', 'stderr:6', 'exit:']);
  assert.equal(f.requests.at(-1).target, '/v1/sandboxes/abc123/processes/1/output?from=4');
  // follow: false stops once caught up with output_bytes (4)
  const caught = [];
  for await (const ev of await p.output({ since: 0, follow: false })) caught.push(ev.type);
  assert.deepEqual(caught, ['attached', 'stdout', 'stderr']);
  // ... and an exited process's stream keeps kilnd's exit event
  exited = true;
  const all = [];
  for await (const ev of await p.output({ since: 4, follow: false })) all.push(ev.type);
  assert.deepEqual(all, ['attached', 'stdout', 'stderr', 'exit']);
  assert.deepEqual(await p.writeStdin('hi\n', { eof: true }), { bytes: 3, closed: true });
  assert.deepEqual(await p.writeStdin(Buffer.from([1, 2])), { bytes: 2, closed: false });
  await p.signal('TERM', { group: true });
  assert.deepEqual(f.requests.find((r) => r.path.endsWith('/signal')).json(), { signal: 'TERM', group: true });
  assert.equal((await p.wait(5000)).q, '5000');
  await p.resize(40, 120);
  assert.deepEqual(f.requests.at(-1).json(), { rows: 40, cols: 120 });
}));

test('ports, previews, checkpoints, fork, firewall and lifecycle: paths and bodies', () => withFake({
  'POST /v1/sandboxes': (req) => jsonResponse(201, { ...SB, id: req.body.length > 30 ? 'fork01' : 'abc123', sent: req.json() }),
  'POST /v1/sandboxes/abc123/ports': (req) => jsonResponse(201, { host_port: 40000, ...req.json() }),
  'GET /v1/sandboxes/abc123/ports': () => jsonResponse(200, { ports: [{ host_port: 40000 }] }),
  'DELETE /v1/sandboxes/abc123/ports/40000': () => jsonResponse(204),
  'POST /v1/sandboxes/abc123/previews': (req) => jsonResponse(201, { ...req.json(), token: 't' }),
  'GET /v1/sandboxes/abc123/previews': () => jsonResponse(200, { previews: [{ port: 8080 }] }),
  'DELETE /v1/sandboxes/abc123/previews/8080': () => jsonResponse(204),
  'POST /v1/sandboxes/abc123/checkpoints': (req) => jsonResponse(201, { ...req.json(), sandbox_id: 'abc123' }),
  'GET /v1/sandboxes/abc123/checkpoints': () => jsonResponse(200, { checkpoints: [{ name: 'c1' }] }),
  'GET /v1/sandboxes/abc123/checkpoints/c1': () => jsonResponse(200, { name: 'c1' }),
  'DELETE /v1/sandboxes/abc123/checkpoints/c1': () => jsonResponse(204),
  'POST /v1/sandboxes/abc123/checkpoints/c1/restore': () => jsonResponse(200, { ...SB, boot: { from: 'checkpoint' } }),
  'GET /v1/sandboxes/abc123/firewall': () => jsonResponse(200, { network: 'passt', rules: {} }),
  'PUT /v1/sandboxes/abc123/firewall': (req) => jsonResponse(200, { rules: req.json(), applied: true }),
  'GET /v1/sandboxes/abc123/firewall/log': () => jsonResponse(200, { lines: ['egress drop'] }),
  'POST /v1/sandboxes/abc123/stop': (req) => jsonResponse(200, { ...SB, state: 'stopped', sent: req.body.toString() }),
  'POST /v1/sandboxes/abc123/start': () => jsonResponse(200, SB),
  'POST /v1/sandboxes/abc123/pause': () => jsonResponse(200, { ...SB, state: 'paused' }),
  'POST /v1/sandboxes/abc123/resume': () => jsonResponse(200, SB),
  'POST /v1/sandboxes/abc123/hibernate': () => jsonResponse(200, { ...SB, state: 'hibernated' }),
  'POST /v1/sandboxes/abc123/wake': () => jsonResponse(200, { ...SB, woke_from: 'snapshot' }),
  'GET /v1/sandboxes/abc123': () => jsonResponse(200, { ...SB, disk: {} }),
  'DELETE /v1/sandboxes/abc123': () => jsonResponse(204),
}, async (k, f) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  assert.equal((await sb.ports.add(8080, { hostPort: 0, target: 'tcp' })).guest_port, 8080);
  assert.deepEqual(f.requests.at(-1).json(), { guest_port: 8080, host_port: 0, target: 'tcp' });
  assert.equal((await sb.ports.list())[0].host_port, 40000);
  await sb.ports.remove(40000);
  assert.equal((await sb.previews.add(8080, { public: true })).public, true);
  assert.equal((await sb.previews.list())[0].port, 8080);
  await sb.previews.remove(8080);
  assert.deepEqual(await sb.checkpoints.create('c1', { compress: false }), { name: 'c1', compress: false, sandbox_id: 'abc123' });
  assert.equal((await sb.checkpoints.list())[0].name, 'c1');
  assert.equal((await sb.checkpoints.get('c1')).name, 'c1');
  const fork = await sb.fork('c1', { hostname: 'w1', env: { A: '1' } });
  assert.equal(fork.id, 'fork01');
  assert.deepEqual(fork.info.sent, { hostname: 'w1', env: { A: '1' }, from_checkpoint: 'abc123/c1' });
  assert.equal((await sb.checkpoints.restore('c1')).boot.from, 'checkpoint');
  assert.equal(sb.info.boot.from, 'checkpoint');
  await sb.checkpoints.delete('c1');
  assert.equal((await sb.firewall.get()).network, 'passt');
  assert.equal((await sb.firewall.set({ outbound_internet: true })).rules.outbound_internet, true);
  assert.deepEqual(await sb.firewall.log(), ['egress drop']);
  assert.equal((await sb.stop({ graceMs: 10 })).sent, '{"grace_ms":10}');
  assert.equal(sb.state, 'stopped');
  await sb.start();
  assert.equal((await sb.pause()).state, 'paused');
  await sb.resume();
  assert.equal((await sb.hibernate()).state, 'hibernated');
  assert.equal((await sb.wake()).woke_from, 'snapshot');
  assert.ok((await sb.refresh()).disk);
  await sb.delete();
  assert.equal(f.requests.at(-1).method, 'DELETE');
}));

test('withSandbox deletes the sandbox when fn throws; close() of a gone sandbox is fine', async () => {
  let deletes = 0;
  await withFake({
    'POST /v1/sandboxes': () => jsonResponse(201, SB),
    'DELETE /v1/sandboxes/abc123': () => { deletes++; return deletes > 1 ? errorResponse(404, 'sandbox_not_found', 'gone') : jsonResponse(204); },
  }, async (k) => {
    await assert.rejects(kiln.withSandbox(k, { image: 'minimal' }, async () => { throw new Error('boom'); }), /boom/);
    assert.equal(deletes, 1);
    assert.equal(await kiln.withSandbox(k, { image: 'minimal' }, async (sb) => sb.id), 'abc123');
    assert.equal(deletes, 2);
  });
});

test('watch: events until end, then the stream is over', () => withFake({
  'POST /v1/sandboxes': () => jsonResponse(201, SB),
  'GET /v1/sandboxes/abc123/files/watch': ndjsonStream([
    { type: 'watching', path: '/w', recursive: true, watches: 1 }, { type: 'create', seq: 0, path: 'a', is_dir: false }, { type: 'end', reason: 'deleted' },
  ]),
}, async (k, f) => {
  const sb = await k.sandboxes.create({ image: 'minimal' });
  const types = [];
  for await (const ev of await sb.files.watch('/w', { recursive: true, maxWatches: 10 })) types.push(ev.type);
  assert.deepEqual(types, ['watching', 'create', 'end']);
  assert.equal(f.requests[1].target, '/v1/sandboxes/abc123/files/watch?path=%2Fw&recursive=true&max_watches=10');
}));

test('many requests at once from one client', () => withFake({
  'GET /v1/health': () => jsonResponse(200, { status: 'ok' }),
}, async (k) => {
  const all = await Promise.all(Array.from({ length: 40 }, () => k.health()));
  assert.equal(all.length, 40);
  assert.ok(all.every((h) => h.status === 'ok'));
}));

test('ids and names are escaped in paths', () => withFake({
  'GET /v1/sandboxes/a%2Fb': () => jsonResponse(200, { id: 'a/b' }),
}, async (k) => {
  assert.equal((await k.sandboxes.get('a/b')).id, 'a/b');
  await assert.rejects(k.sandboxes.get('..'), TypeError);
}));

test('download framing: Content-Length, chunk extensions and trailers, until-close; errors mapped', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-'));
  const answers = {
    cl: 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello',
    ext: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n',
    eof: 'HTTP/1.1 200 OK\r\n\r\nuntil close',
    empty: 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n',
    err: errorResponse(404, 'not_found', 'no such file').toString(),
    badsize: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n',
    barelf: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n',
    long: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n',
    both: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n',
    status: 'HTTP/9 200 OK\r\n\r\n',
    cut: 'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort',
    cutchunk: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n',
    nothing: '',
  };
  const f = await startFake((req, sock) => {
    const a = answers[req.query.get('path')];
    if (a === undefined) return; // never answers
    sock.end(a);
  });
  try {
    const sb = new kiln.Sandbox(new Kiln({ socket: f.socket, timeoutMs: 5000 }), { id: 'abc123' });
    const quick = new kiln.Sandbox(new Kiln({ socket: f.socket, timeoutMs: 300 }), { id: 'abc123' });
    const get = async (name, s = sb) => {
      const p = path.join(dir, name);
      const n = await s.files.download(name, p);
      return [n, fs.readFileSync(p, 'utf8')];
    };
    assert.deepEqual(await get('cl'), [5, 'hello']);
    assert.deepEqual(await get('ext'), [5, 'abcde']);
    assert.deepEqual(await get('eof'), [11, 'until close']);
    assert.deepEqual(await get('empty'), [0, '']);
    await assert.rejects(get('err'), (e) => e instanceof kiln.NotFoundError && e.status === 404 && e.message === 'no such file');
    for (const name of ['badsize', 'barelf', 'long', 'both', 'status']) await assert.rejects(get(name), kiln.KilnProtocolError, name);
    for (const name of ['cut', 'cutchunk', 'nothing']) await assert.rejects(get(name), kiln.KilnConnectionError, name);
    await assert.rejects(get('silent', quick), kiln.ClientTimeoutError);
    await assert.rejects(new kiln.Sandbox(new Kiln({ socket: '/nonexistent/s' }), { id: 'x' }).files.download('/a', path.join(dir, 'z')), kiln.KilnConnectionError);
    // A local file that is there already stays as it was when the download
    // fails (an error answer, a cut transfer, a protocol error); no
    // temporary file is left beside it. A good one replaces it.
    const keep = path.join(dir, 'keep');
    fs.writeFileSync(keep, 'precious');
    const before = fs.readdirSync(dir).sort();
    await assert.rejects(sb.files.download('err', keep), kiln.NotFoundError);
    await assert.rejects(sb.files.download('cut', keep), kiln.KilnConnectionError);
    await assert.rejects(sb.files.download('badsize', keep), kiln.KilnProtocolError);
    assert.equal(fs.readFileSync(keep, 'utf8'), 'precious');
    assert.deepEqual(fs.readdirSync(dir).sort(), before);
    assert.equal(await sb.files.download('cl', keep), 5);
    assert.equal(fs.readFileSync(keep, 'utf8'), 'hello');
    assert.deepEqual(fs.readdirSync(dir).sort(), before);
    // A path that is no regular file (/dev/null, here a FIFO) is written in
    // place, never renamed over: as root a rename would replace /dev/null.
    // Held open read-write here, so opening it to write does not block.
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const fd = fs.openSync(fifo, 'r+');
    try {
      assert.equal(await sb.files.download('cl', fifo), 5);
      assert.ok(fs.statSync(fifo).isFIFO());
      const got = Buffer.alloc(16);
      assert.equal(got.subarray(0, fs.readSync(fd, got)).toString(), 'hello');
    } finally {
      fs.closeSync(fd);
    }
    // A Writable that is not a file gets copies; the bytes arrive whole.
    const { PassThrough } = await import('node:stream');
    const pt = new PassThrough();
    const parts = [];
    pt.on('data', (c) => parts.push(c));
    assert.equal(await sb.files.download('ext', pt), 5);
    assert.equal(Buffer.concat(parts).toString(), 'abcde');
  } finally {
    await f.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a 100 MiB download to a file keeps the read buffer and RSS flat', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-sdk-'));
  const block = Buffer.alloc(65536 + 17, 3);
  const f = await startFake(async (req, sock) => {
    sock.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
    const framed = chunk(block); // one buffer written again and again: the server allocates nothing per write
    for (let i = 0; i < 1600; i++) if (!sock.write(framed)) await new Promise((r) => sock.once('drain', r));
    sock.end(LAST_CHUNK);
  });
  try {
    const sb = new kiln.Sandbox(new Kiln({ socket: f.socket }), { id: 'abc123' });
    const { value: n, arrayBuffersMib, rssMib } = await memoryGrowth(() => sb.files.download('/big', path.join(dir, 'big')));
    assert.equal(n, 1600 * block.length);
    assert.equal(fs.statSync(path.join(dir, 'big')).size, n);
    assert.ok(arrayBuffersMib < 16, `arrayBuffers grew by ${arrayBuffersMib} MiB`);
    // The SDK's own memory for the download (the fake kilnd shares the process: its writes are one buffer).
    assert.ok(rssMib < 32, `RSS grew by ${rssMib} MiB`);
  } finally {
    await f.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
