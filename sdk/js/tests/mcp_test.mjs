// The MCP server (bin/kiln-mcp.js) driven by a scripted client over stdio,
// its tools going to a fake kilnd.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { test } from './runner.mjs';
import { startFake, jsonResponse, errorResponse, chunkedHead, chunk, LAST_CHUNK } from './fake_kilnd.mjs';

const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'kiln-mcp.js');

/** The server as a child; send(obj|string) writes a line, next() the next answer line. */
function startServer(socket, { cwd, env = {} } = {}) {
  const child = spawn(process.execPath, [BIN], { cwd, env: { ...process.env, KILN_SOCKET: socket, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = [];
  const waiters = [];
  let buf = '';
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const l = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const w = waiters.shift();
      if (w) w(JSON.parse(l)); else lines.push(JSON.parse(l));
    }
  });
  const exited = new Promise((r) => child.on('exit', (code) => r(code)));
  return {
    child,
    exited,
    stderr: () => stderr,
    send: (m) => child.stdin.write(typeof m === 'string' ? m : `${JSON.stringify(m)}\n`),
    next: () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => waiters.push(r))),
    async call(id, method, params) {
      this.send({ jsonrpc: '2.0', id, method, params });
      const a = await this.next();
      assert.equal(a.id, id, JSON.stringify(a));
      return a;
    },
    /** A request's answer and the notifications sent before it. */
    async callSeeing(id, method, params) {
      this.send({ jsonrpc: '2.0', id, method, params });
      const seen = [];
      for (;;) {
        const a = await this.next();
        if (a.id === id) return { answer: a, seen };
        assert.equal(a.id, undefined, JSON.stringify(a));
        seen.push(a);
      }
    },
  };
}

const TPL = { name: 'web', from: 'minimal', from_kind: 'image', from_digest: 'sha256:01', sandbox: '0123456789ab', checkpoint: 'ready',
  defaults: { env: {}, working_dir: null, user: null }, build_ms: 1234.5, created_at: '2026-11-27T05:53:31.296Z', size_bytes: 12963020, cache_entries: 1, in_use: 0 };
const IMAGES = [
  { name: 'minimal', path: '/var/lib/kiln/images/minimal.ext4', size_bytes: 33554432, source: 'option', digest: 'sha256:151f', created: '2026-11-27T05:47:43.966Z' },
  { name: 'app', path: '/var/lib/kiln/images/app.ext4', size_bytes: null, source: 'oci', format: 'docker', layers: 2, manifest_digest: 'sha256:8e93', config: { env: { A: 'b' } } },
];
const STEP1 = [{ type: 'step', step: 1, line: 1, instruction: 'FROM minimal' }, { type: 'step_end', step: 1, line: 1, instruction: 'FROM minimal', ms: 3 }];
const RUN2 = { type: 'step', step: 2, line: 2, instruction: 'RUN echo hi' };
const END2 = { type: 'step_end', step: 2, line: 2, instruction: 'RUN echo hi', ms: 40 };
// 1000 output lines in chunks that cut lines (and an é) in two, then a 10000-character line.
const CHATTY = Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join('');
const chattyChunks = () => {
  const out = [];
  for (let i = 0; i < CHATTY.length; i += 777) out.push({ type: 'stdout', data: CHATTY.slice(i, i + 777) });
  return out;
};
const BUILD_LOGS = {
  web: [...STEP1, RUN2, { type: 'stdout', data: 'hi\n' }, { type: 'stdout', data_base64: 'w6k=' }, { type: 'stderr', data_base64: Buffer.from([0xc3]).toString('base64') },
    { type: 'stderr', data_base64: Buffer.from([0xa9, 0x0a]).toString('base64') }, END2,
    { type: 'cached', step: 3, line: 3, instruction: 'ENV A=b' }, { type: 'result', template: { ...TPL, steps: [{ step: 1 }, { step: 2 }, { step: 3, cached: true }], buildfile: 'FROM minimal\n' } }],
  bad: [...STEP1, RUN2, { type: 'stderr', data: 'oops: no such package\n' },
    { type: 'error', step: 2, line: 5, error: { code: 'bad_field', message: 'step at line 5 (RUN): RUN exited with status 2' } }],
  chatty: [...STEP1, RUN2, ...chattyChunks(), { type: 'stdout', data: 'x'.repeat(10000) }, END2, { type: 'result', template: { ...TPL, name: 'chatty' } }],
};
const buildLog = (lines) => Buffer.concat([Buffer.from(chunkedHead()), chunk(lines.map((e) => `${JSON.stringify(e)}\n`).join('')), Buffer.from(LAST_CHUNK)]);

/** A scratch directory: files (name -> content) written under it. */
function scratch(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-mcp-test-'));
  for (const [n, c] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, n)), { recursive: true });
    fs.writeFileSync(path.join(dir, n), c);
  }
  return dir;
}

const SB = { id: 'abc123', state: 'running', image: 'minimal' };
const kilnd = () => startFake((req, sock) => {
  const k = `${req.method} ${req.path}`;
  const answers = {
    'POST /v1/sandboxes': () => jsonResponse(201, { ...SB, template: req.json().template || null, sent: req.json() }),
    'GET /v1/templates': () => jsonResponse(200, { templates: [TPL] }),
    'GET /v1/images': () => jsonResponse(200, { images: IMAGES, kernel: { path: '/usr/lib/kiln/vmlinux', size_bytes: 21501520 } }),
    'POST /v1/templates': () => (BUILD_LOGS[req.query.get('name')] ? buildLog(BUILD_LOGS[req.query.get('name')])
      : errorResponse(400, 'bad_field', 'build file line 4: ADD is not supported: use COPY')),
    'DELETE /v1/templates/web': () => jsonResponse(204),
    'DELETE /v1/templates/used': () => errorResponse(409, 'in_use', "template 'used' is in use by sandbox sb-1: delete that sandbox first"),
    'DELETE /v1/templates/hot': () => errorResponse(409, 'busy', "template 'hot' is being built"),
    'GET /v1/sandboxes': () => jsonResponse(200, { sandboxes: [SB] }),
    'GET /v1/sandboxes/abc123': () => jsonResponse(200, SB),
    'DELETE /v1/sandboxes/abc123': () => jsonResponse(204),
    'POST /v1/sandboxes/abc123/exec': () => jsonResponse(200, { exit_code: 2, signal: null, timed_out: false, stdout: `ran ${JSON.stringify(req.json().argv)}\n`, stdout_encoding: 'utf-8', stderr: 'warn\n', stderr_encoding: 'utf-8' }),
    'POST /v1/sandboxes/abc123/run': () => jsonResponse(200, { exit_code: 0, stdout: '', stderr: '', result: { n: 1 }, error: null }),
    'GET /v1/sandboxes/abc123/files/stat': () => jsonResponse(200, { kind: 'file', size: 5 }),
    'GET /v1/sandboxes/abc123/files': () => 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello',
    'PUT /v1/sandboxes/abc123/files': () => jsonResponse(200, { path: req.query.get('path'), bytes: req.body.length }),
    'GET /v1/sandboxes/abc123/files/list': () => jsonResponse(200, { path: '/w', entries: [{ path: '/w/a', kind: 'file', size: 3 }], count: 1, truncated: false, skipped: 0 }),
  };
  const a = answers[k];
  sock.end(a ? a() : errorResponse(404, 'sandbox_not_found', 'sandbox nope does not exist'));
});

test('mcp: initialize (both protocol versions), initialized, ping, tools/list', async () => {
  const f = await kilnd();
  const s = startServer(f.socket);
  try {
    let a = await s.call(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    assert.equal(a.result.protocolVersion, '2025-06-18');
    assert.deepEqual(a.result.capabilities, { tools: { listChanged: false } });
    assert.equal(a.result.serverInfo.name, 'kiln-mcp');
    s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    a = await s.call(2, 'initialize', { protocolVersion: '2024-11-05' });
    assert.equal(a.result.protocolVersion, '2024-11-05');
    a = await s.call(3, 'initialize', { protocolVersion: '1999-01-01' });
    assert.equal(a.result.protocolVersion, '2025-06-18');
    assert.deepEqual((await s.call('p', 'ping')).result, {});
    const tools = (await s.call(4, 'tools/list', {})).result.tools;
    assert.deepEqual(tools.map((t) => t.name).sort(), ['exec', 'image_list', 'list_files', 'read_file', 'run_code', 'sandbox_create', 'sandbox_delete',
      'sandbox_list', 'template_build', 'template_delete', 'template_list', 'write_file']);
    // Strict schemas: no other arguments, every string and integer bounded.
    const bounded = (where, p) => {
      if (p.oneOf) { p.oneOf.forEach((q, i) => bounded(`${where}.oneOf[${i}]`, q)); return; }
      if (p.type === 'string') assert.ok(p.enum || (p.maxLength > 0 && p.maxLength <= 4 * 1024 * 1024), `${where}: no maxLength`);
      if (p.type === 'integer') assert.ok(Number.isSafeInteger(p.minimum) && Number.isSafeInteger(p.maximum), `${where}: unbounded`);
      if (p.type === 'array') { assert.ok(p.maxItems > 0, `${where}: no maxItems`); bounded(`${where}[]`, p.items); }
      if (p.type === 'object') { assert.ok(p.maxProperties > 0, `${where}: no maxProperties`); bounded(`${where}{}`, p.additionalProperties); }
      if (p.pattern) new RegExp(p.pattern, 'u'); // eslint-disable-line no-new
    };
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object');
      assert.equal(t.inputSchema.additionalProperties, false, t.name);
      assert.equal(typeof t.description, 'string');
      for (const r of t.inputSchema.required || []) assert.ok(t.inputSchema.properties[r], `${t.name}: required ${r} not a property`);
      for (const [k, p] of Object.entries(t.inputSchema.properties)) bounded(`${t.name}.${k}`, p);
    }
    s.child.stdin.end();
    assert.equal(await s.exited, 0);
  } finally {
    s.child.kill();
    await f.close();
  }
});

test('mcp: every tool through the SDK; a kilnd error is an isError result', async () => {
  const f = await kilnd();
  const s = startServer(f.socket);
  const call = async (id, name, args) => (await s.call(id, 'tools/call', { name, arguments: args })).result;
  try {
    let r = await call(1, 'sandbox_create', { memory_mib: 256 });
    assert.match(r.content[0].text, /created sandbox abc123/);
    assert.equal(r.structuredContent.sandbox_id, 'abc123');
    assert.deepEqual(f.requests.at(-1).json(), { memory_mib: 256, image: 'minimal' });
    r = await call(2, 'exec', { sandbox_id: 'abc123', command: 'echo hi' });
    assert.equal(r.isError, false);
    assert.match(r.content[0].text, /^exit_code: 2\nstdout:\nran \["echo hi"\]\n\nstderr:\nwarn/);
    r = await call(3, 'exec', { sandbox_id: 'abc123', command: ['ls', '-l'], timeout_ms: 1000 });
    assert.match(r.content[0].text, /ran \["ls","-l"\]/);
    assert.match((await call(4, 'run_code', { sandbox_id: 'abc123', code: 'result.set({"n":1})' })).content[0].text, /result: \{"n":1\}/);
    assert.equal((await call(5, 'read_file', { sandbox_id: 'abc123', path: '/w/a' })).content[0].text, 'hello');
    assert.match((await call(6, 'write_file', { sandbox_id: 'abc123', path: '/w/b', content: 'aGk=', encoding: 'base64' })).content[0].text, /wrote 2 bytes to \/w\/b/);
    assert.match((await call(7, 'list_files', { sandbox_id: 'abc123', path: '/w' })).content[0].text, /file\t3\t\/w\/a/);
    assert.match((await call(8, 'sandbox_list', {})).content[0].text, /abc123 running minimal/);
    assert.match((await call(9, 'sandbox_delete', { sandbox_id: 'abc123' })).content[0].text, /deleted/);
    r = await call(10, 'exec', { sandbox_id: 'nope', command: 'x' });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /SandboxNotFoundError \(sandbox_not_found\): sandbox nope does not exist/);
  } finally {
    s.child.kill();
    await f.close();
  }
});

test('mcp: hostile input gets JSON-RPC errors and never kills the server', async () => {
  const f = await kilnd();
  const s = startServer(f.socket);
  try {
    const expectErr = async (line, code) => {
      s.send(line);
      const a = await s.next();
      assert.equal(a.error && a.error.code, code, `${String(line).slice(0, 80)} -> ${JSON.stringify(a)}`);
      return a;
    };
    await expectErr('{not json\n', -32700);
    await expectErr('[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n', -32600);
    await expectErr('42\n', -32600);
    await expectErr('{"id":1,"method":"ping"}\n', -32600);
    await expectErr('{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}\n', -32600);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":7}\n', -32600);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"resources/list"}\n', -32601);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm_rf"}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":"x"}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":"a"}}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":"a","command":[1]}}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":"a","command":"x","timeout_ms":-1}}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":"a","command":"x","rm":true}}}\n', -32602);
    // Inherited names are not arguments, and an integer is a safe one.
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_create","arguments":{"constructor":"x"}}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_create","arguments":{"__proto__":{"a":1}}}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":"a","command":"x","timeout_ms":1e300}}}\n', -32602);
    await expectErr('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"sandbox_id":"a","path":"/x","content":"y","encoding":"utf-16"}}}\n', -32602);
    // A 5 MiB line is dropped with one error; the server goes on.
    const a = await expectErr(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"${'A'.repeat(5 * 1024 * 1024)}"}}\n`, -32600);
    assert.match(a.error.message, /over/);
    // Notifications of any kind are never answered; the next request is.
    s.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n');
    s.send('\n\n');
    assert.deepEqual((await s.call(99, 'ping')).result, {});
    s.child.stdin.end();
    assert.equal(await s.exited, 0);
  } finally {
    s.child.kill();
    await f.close();
  }
});

test('mcp: an id null, fractional or beyond 2^53 is an invalid request (MCP: a string or an integer), answered with id null', async () => {
  const f = await kilnd();
  const s = startServer(f.socket);
  try {
    for (const line of ['{"jsonrpc":"2.0","id":null,"method":"ping"}', '{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
      '{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":1}}', '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}', '{"jsonrpc":"2.0","id":true,"method":"ping"}']) {
      s.send(`${line}\n`);
      const a = await s.next();
      assert.deepEqual([a.id, a.error && a.error.code], [null, -32600], `${line} -> ${JSON.stringify(a)}`);
      assert.match(a.error.message, /is not a string or an integer \(MCP: a request's id is one, never null; a notification has no id\)/);
      assert.equal(a.result, undefined);
    }
    // A response from the client (kiln-mcp sends no requests), even with id null: no answer.
    s.send('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}\n{"jsonrpc":"2.0","id":7,"result":{}}\n');
    assert.deepEqual((await s.call(0, 'ping')).result, {});
    assert.deepEqual((await s.call('', 'ping')).result, {});
  } finally {
    s.child.kill();
    await f.close();
  }
});

test('mcp: the 4 MiB line cap is exact, however the line is cut into reads', async () => {
  const f = await kilnd();
  const s = startServer(f.socket);
  const MAX = 4 * 1024 * 1024;
  const ping = (id, bytes) => { const m = `{"jsonrpc":"2.0","id":${id},"method":"ping"}`; return m + ' '.repeat(bytes - m.length); };
  const sendCut = async (text, tail) => { // all but the last `tail` bytes, a pause (read apart), then the rest
    await new Promise((r) => s.child.stdin.write(text.slice(0, -tail), r));
    await new Promise((r) => { setTimeout(r, 300); });
    s.send(`${text.slice(-tail)}\n`);
  };
  try {
    await sendCut(ping(1, MAX), 100);
    assert.deepEqual(await s.next(), { jsonrpc: '2.0', id: 1, result: {} }, 'exactly 4 MiB is taken');
    for (const tail of [1, 100, 60000]) {
      await sendCut(ping(2, MAX + 1), tail);
      const a = await s.next();
      assert.deepEqual([a.id, a.error && a.error.code], [null, -32600], `4 MiB + 1 with its last ${tail} bytes read apart -> ${JSON.stringify(a).slice(0, 200)}`);
      assert.match(a.error.message, /^a message over 4194304 bytes was dropped/);
    }
    assert.deepEqual((await s.call(3, 'ping')).result, {});
  } finally {
    s.child.kill();
    await f.close();
  }
});

test('mcp: sandbox_create from a template; template_list, image_list, template_delete (in use, busy)', async () => {
  const f = await kilnd();
  const s = startServer(f.socket);
  const call = async (id, name, args) => (await s.call(id, 'tools/call', { name, arguments: args })).result;
  try {
    let r = await call(1, 'sandbox_create', { template: 'web', memory_mib: 256 });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.match(r.content[0].text, /^created sandbox abc123 \(template web, image minimal, state running\)$/);
    assert.deepEqual(f.requests.at(-1).json(), { template: 'web', memory_mib: 256 }); // no default image beside it
    // image or network with template: one invalid-params error naming both, nothing sent to kilnd.
    const before = f.requests.length;
    for (const [other, v] of [['image', 'minimal'], ['network', 'passt']]) {
      const a = await s.call(2, 'tools/call', { name: 'sandbox_create', arguments: { template: 'web', [other]: v } });
      assert.equal(a.error.code, -32602, JSON.stringify(a));
      assert.match(a.error.message, new RegExp(`give "template" or "${other}", not both: a template fixes its image and network`));
    }
    assert.equal(f.requests.length, before);
    r = await call(3, 'template_list', {});
    assert.equal(r.content[0].text, 'web: from image minimal, ready (snapshot ready), 12.4 MiB, created 2026-11-27T05:53:31.296Z, built in 1235 ms, 1 cached steps, used by 0 sandboxes');
    assert.deepEqual(Object.keys(r.structuredContent.templates[0]).sort(), ['build_ms', 'cache_entries', 'checkpoint', 'created_at', 'from', 'from_kind', 'in_use', 'name', 'size_bytes']);
    r = await call(4, 'image_list', {});
    assert.equal(r.content[0].text, 'minimal: 32.0 MiB, source option, sha256:151f, created 2026-11-27T05:47:43.966Z\napp: file missing, source oci, docker archive, 2 layers');
    assert.deepEqual(r.structuredContent.images[1], { name: 'app', size_bytes: null, source: 'oci', format: 'docker', layers: 2 });
    r = await call(5, 'template_delete', { name: 'web' });
    assert.deepEqual([r.isError, r.content[0].text], [false, 'deleted template web']);
    assert.equal(f.requests.at(-1).method, 'DELETE');
    r = await call(6, 'template_delete', { name: 'used' });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /^template_delete used: InUseError \(in_use\): template 'used' is in use by sandbox sb-1: delete that sandbox first\nsandboxes created from the template use it: delete them first/);
    r = await call(7, 'template_delete', { name: 'hot' });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /^template_delete hot: BusyError \(busy\): template 'hot' is being built\n.*retry once that finished$/);
    // Names follow kilnd's rule; every number has its bounds.
    for (const [tool, args] of [['template_delete', { name: '../x' }], ['template_delete', { name: 'a'.repeat(65) }], ['sandbox_create', { template: '-x' }],
      ['sandbox_create', { memory_mib: 2 ** 30 }], ['sandbox_create', { timeout_s: 604801 }],
      ['sandbox_create', { env: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`K${i}`, 'v'])) }],
      ['exec', { sandbox_id: 'a', command: Array(1025).fill('x') }], ['exec', { sandbox_id: 'a', command: 'x', timeout_ms: 604800001 }]]) {
      const a = await s.call(8, 'tools/call', { name: tool, arguments: args });
      assert.equal(a.error && a.error.code, -32602, `${tool} ${JSON.stringify(args).slice(0, 80)} -> ${JSON.stringify(a)}`);
    }
    assert.match((await call(9, 'sandbox_list', {})).content[0].text, /^abc123 running minimal$/);
  } finally {
    s.child.kill();
    await f.close();
  }
});

test('mcp: template_build from a relative context_dir: the template, its log tail, progress notifications', async () => {
  const f = await kilnd();
  const top = scratch({ 'ctx/Kilnfile': 'FROM minimal\nRUN echo hi\nENV A=b\n', 'ctx/app/index.html': 'hi\n' });
  const s = startServer(f.socket, { cwd: top });
  try {
    const { answer, seen } = await s.callSeeing(1, 'tools/call', { name: 'template_build', arguments: { name: 'web', context_dir: 'ctx', cpus: 2, disk_mib: 1024 }, _meta: { progressToken: 'tok' } });
    const r = answer.result;
    assert.equal(r.isError, false, JSON.stringify(r));
    const req = f.requests.find((q) => q.path === '/v1/templates');
    assert.equal(req.query.toString(), 'name=web&cpus=2&disk_mib=1024');
    assert.match(zlib.gunzipSync(req.body).toString('latin1'), /FROM minimal\nRUN echo hi/); // the context was packed and sent
    assert.equal(r.content[0].text, [
      'built template web from image minimal in 1235 ms: 3 steps, 1 cached; create a sandbox from it with sandbox_create {"template":"web"}',
      'build log (last 7 lines):',
      'step 1 (line 1): FROM minimal', 'step 1 done in 3 ms', 'step 2 (line 2): RUN echo hi', 'hi', 'éé', 'step 2 done in 40 ms',
      'step 3 (line 3): ENV A=b [cached]'].join('\n'));
    assert.equal(r.structuredContent.template.name, 'web');
    assert.equal(r.structuredContent.template.steps, undefined); // compact: no steps, no buildfile
    assert.equal(r.structuredContent.log_lines_left_out, 0);
    assert.deepEqual(seen, [1, 2, 3].map((n) => ({
      jsonrpc: '2.0', method: 'notifications/progress',
      params: { progressToken: 'tok', progress: n, message: ['step 1 (line 1): FROM minimal', 'step 2 (line 2): RUN echo hi', 'step 3 (line 3): ENV A=b [cached]'][n - 1] },
    })));
    // Without a token: no notification. A bad token: invalid params.
    assert.equal((await s.callSeeing(2, 'tools/call', { name: 'template_build', arguments: { name: 'web', context_dir: path.join(top, 'ctx') } })).seen.length, 0);
    for (const meta of [{ progressToken: { a: 1 } }, { progressToken: 1.5 }, { progressToken: 'x'.repeat(257) }, 'x']) {
      const a = await s.call(3, 'tools/call', { name: 'template_build', arguments: { name: 'web', context_dir: 'ctx' }, _meta: meta });
      assert.equal(a.error && a.error.code, -32602, JSON.stringify(a));
    }
  } finally {
    s.child.kill();
    await f.close();
    fs.rmSync(top, { recursive: true, force: true });
  }
});

test('mcp: template_build refuses a bad context_dir or file with one clear error each, before any upload', async () => {
  const f = await kilnd();
  const top = scratch({ 'ctx/Kilnfile': 'FROM minimal\n', 'ctx/sub/x': 'x', 'plain': 'x', 'nofile/readme': 'x', 'out/Kilnfile': 'FROM minimal\n' });
  fs.symlinkSync(path.join(top, 'out', 'Kilnfile'), path.join(top, 'ctx', 'Linked'));
  fs.symlinkSync(path.join(top, 'out'), path.join(top, 'ctx', 'sub', 'up'));
  const s = startServer(f.socket, { cwd: top, env: { KILN_MCP_CONTEXT_ROOT: path.join(top, 'ctx') } });
  const build = async (id, args) => (await s.call(id, 'tools/call', { name: 'template_build', arguments: { name: 'web', ...args } })).result;
  try {
    const cases = [
      [{ context_dir: 'missing' }, `template_build: context_dir ${path.join(top, 'missing')} ("missing" resolved against kiln-mcp's working directory ${top}) does not exist: give the directory holding the build file and what it COPYs`],
      [{ context_dir: path.join(top, 'plain') }, `template_build: context_dir ${path.join(top, 'plain')} is not a directory: give the directory holding the build file and what it COPYs`],
      [{ context_dir: 'nofile' }, `template_build: context_dir ${path.join(top, 'nofile')} ("nofile" resolved against kiln-mcp's working directory ${top}) has no Kilnfile or Dockerfile at its top: write one there, or name it with file`],
      [{ context_dir: 'ctx', file: '/etc/passwd' }, 'template_build: file "/etc/passwd": the build file\'s path inside context_dir, relative and without \'..\' (e.g. "Kilnfile")'],
      [{ context_dir: 'ctx', file: '../plain' }, 'template_build: file "../plain": the build file\'s path inside context_dir, relative and without \'..\' (e.g. "Kilnfile")'],
      [{ context_dir: 'ctx', file: 'sub' }, `template_build: file "sub": no such file in context_dir ${path.join(top, 'ctx')} (a symbolic link is not followed)`],
      [{ context_dir: 'ctx', file: 'Linked' }, `template_build: file "Linked": no such file in context_dir ${path.join(top, 'ctx')} (a symbolic link is not followed)`],
      // KILN_MCP_CONTEXT_ROOT: beside it, or beneath it only through a link, is outside.
      [{ context_dir: 'out' }, `template_build: context_dir ${path.join(top, 'out')} ("out" resolved against kiln-mcp's working directory ${top}) is outside KILN_MCP_CONTEXT_ROOT ${fs.realpathSync(path.join(top, 'ctx'))}: give a directory beneath it`],
      [{ context_dir: 'ctx/sub/up' }, `template_build: context_dir ${path.join(top, 'ctx/sub/up')} ("ctx/sub/up" resolved against kiln-mcp's working directory ${top}) is outside KILN_MCP_CONTEXT_ROOT ${fs.realpathSync(path.join(top, 'ctx'))}: give a directory beneath it`],
      [{ context_dir: 'ctx\0x' }, null],
    ];
    let id = 1;
    for (const [args, text] of cases) {
      const r = await build(id++, args);
      assert.equal(r.isError, true, JSON.stringify(r));
      if (text) assert.equal(r.content[0].text, text);
      else assert.match(r.content[0].text, /^template_build: context_dir .* null bytes/);
    }
    // Schema errors: no name, an empty context_dir, zero cpus, unknown argument.
    for (const args of [{ context_dir: 'ctx' }, { name: 'web', context_dir: '' }, { name: 'web', context_dir: 'ctx', cpus: 0 }, { name: 'web', context_dir: 'ctx', tag: 'x' }]) {
      const a = await s.call(id++, 'tools/call', { name: 'template_build', arguments: args });
      assert.equal(a.error && a.error.code, -32602, JSON.stringify(a));
    }
    // A context over kilnd's 16384 members is refused before packing.
    const big = path.join(top, 'ctx', 'big');
    fs.mkdirSync(big);
    fs.writeFileSync(path.join(big, 'Kilnfile'), 'FROM minimal\n');
    for (let i = 0; i < 16384; i++) fs.writeFileSync(path.join(big, `f${i}`), '');
    const r = await build(id++, { context_dir: 'ctx/big' });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /^template_build web failed: KilnError \(local_context\): templates.build: contextDir .*big has more than 16384 entries \(kilnd's cap of a build context; at '[^']+'\)/);
    assert.equal(f.requests.length, 0, 'nothing was sent to kilnd');
  } finally {
    s.child.kill();
    await f.close();
    fs.rmSync(top, { recursive: true, force: true });
  }
});

test('mcp: template_build of a failing step: the error with its step and line, and the log tail; a long log keeps its tail', async () => {
  const f = await kilnd();
  const top = scratch({ 'Kilnfile': 'FROM minimal\n' });
  const s = startServer(f.socket, { cwd: top });
  const build = async (id, name) => (await s.call(id, 'tools/call', { name: 'template_build', arguments: { name, context_dir: '.' } })).result;
  try {
    let r = await build(1, 'bad');
    assert.equal(r.isError, true);
    assert.equal(r.content[0].text, [
      'template_build bad failed at step 2 (line 5): BadFieldError (bad_field): step at line 5 (RUN): RUN exited with status 2',
      'build log (last 4 lines):', 'step 1 (line 1): FROM minimal', 'step 1 done in 3 ms', 'step 2 (line 2): RUN echo hi', 'oops: no such package'].join('\n'));
    // Refused before the log starts: the error, an empty log.
    r = await build(2, 'refused');
    assert.equal(r.content[0].text, 'template_build refused failed: BadFieldError (bad_field): build file line 4: ADD is not supported: use COPY\nbuild log: empty');
    // 1005 lines, the last output line 10000 characters: 64 lines kept, each at most 4096.
    r = await build(3, 'chatty');
    assert.equal(r.isError, false);
    const text = r.content[0].text;
    const lines = text.split('\n');
    assert.equal(lines[1], 'build log (last 64 lines; 941 earlier lines (8411 characters) left out):');
    assert.deepEqual(lines.slice(2, 4), ['line 938', 'line 939']);
    assert.deepEqual(lines.slice(-3), ['line 999', `${'x'.repeat(4096)} [... 5904 characters cut]`, 'step 2 done in 40 ms']);
    assert.equal(lines.length, 66);
    assert.equal(r.structuredContent.log_lines_left_out, 941);
    assert.ok(text.length < 256 * 1024);
  } finally {
    s.child.kill();
    await f.close();
    fs.rmSync(top, { recursive: true, force: true });
  }
});
