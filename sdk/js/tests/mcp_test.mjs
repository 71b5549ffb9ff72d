// The MCP server (bin/kiln-mcp.js) driven by a scripted client over stdio,
// its tools going to a fake kilnd.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { test } from './runner.mjs';
import { startFake, jsonResponse, errorResponse } from './fake_kilnd.mjs';

const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'kiln-mcp.js');

/** The server as a child; send(obj|string) writes a line, next() the next answer line. */
function startServer(socket) {
  const child = spawn(process.execPath, [BIN], { env: { ...process.env, KILN_SOCKET: socket }, stdio: ['pipe', 'pipe', 'pipe'] });
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
  };
}

const SB = { id: 'abc123', state: 'running', image: 'minimal' };
const kilnd = () => startFake((req, sock) => {
  const k = `${req.method} ${req.path}`;
  const answers = {
    'POST /v1/sandboxes': () => jsonResponse(201, { ...SB, sent: req.json() }),
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
    assert.deepEqual(tools.map((t) => t.name).sort(), ['exec', 'list_files', 'read_file', 'run_code', 'sandbox_create', 'sandbox_delete', 'sandbox_list', 'write_file']);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object');
      assert.equal(typeof t.description, 'string');
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
