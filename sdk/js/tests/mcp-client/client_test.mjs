// kiln-mcp (bin/kiln-mcp.js) as an MCP host sees it: the official
// @modelcontextprotocol/sdk client over stdio, its tools going to a fake
// kilnd, and every tool's inputSchema compiled by ajv. Both are
// devDependencies of this directory only (package.json, package-lock.json;
// scripts/install-deps runs `npm ci` here): kiln-mcp itself has none.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from '../runner.mjs';
import { startFake, jsonResponse, errorResponse } from '../fake_kilnd.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.join(HERE, '..', '..', 'bin', 'kiln-mcp.js');

async function deps() {
  try {
    const [{ Client }, { StdioClientTransport }, ajv] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('ajv'),
    ]);
    return { Client, StdioClientTransport, Ajv: ajv.default || ajv };
  } catch (e) {
    throw new Error(`${e.message}: the test's npm packages are missing; run scripts/install-deps (npm ci in ${HERE})`);
  }
}

const SB = { id: 'abc123', state: 'running', image: 'minimal' };
const OUT = 'out-7f3a'; // exec's stdout, to count in a result

/**
 * A fake kilnd. An exec of "sleep 600" is held open (held: its
 * KILN_MCP_CALL token -> socket) until a root exec of `sh -c SCRIPT sh
 * TOKEN` (kiln-mcp's kill) comes: that ends it as killed by signal 9.
 */
async function kilnd() {
  const held = new Map();
  const kills = [];
  const creates = []; // held creates' sockets
  const deletes = [];
  const f = await startFake((req, sock) => {
    const k = `${req.method} ${req.path}`;
    const execResult = (over) => jsonResponse(200, { exit_code: 0, signal: null, timed_out: false, stdout: '', stdout_encoding: 'utf-8', stderr: '', stderr_encoding: 'utf-8', ...over });
    if (k === 'POST /v1/sandboxes/abc123/exec') {
      const b = req.json();
      if (b.user === 'root' && b.argv[0] === 'sh' && b.argv[1] === '-c' && b.argv[2].includes('/proc/')) {
        const token = b.argv[4];
        kills.push(token);
        if (held.has(token)) {
          held.get(token).end(execResult({ exit_code: null, signal: 9 }));
          held.delete(token);
        }
        sock.end(execResult());
        return;
      }
      if (b.shell && b.argv[0] === 'sleep 600') {
        held.set((b.env && b.env.KILN_MCP_CALL) || 'no token', sock);
        return;
      }
      sock.end(execResult({ exit_code: 3, stdout: `${OUT}\n`, stdout_bytes: OUT.length + 1, stderr: 'warn\n', stderr_bytes: 5 }));
      return;
    }
    if (k === 'POST /v1/sandboxes' && req.json().timeout_s === 4242) {
      creates.push(sock); // held: answered by the test
      return;
    }
    if (k === 'DELETE /v1/sandboxes/abc123') {
      deletes.push(k);
      sock.end(jsonResponse(204));
      return;
    }
    const answers = {
      'POST /v1/sandboxes': () => jsonResponse(201, { ...SB, template: null }),
      'GET /v1/sandboxes/abc123': () => jsonResponse(200, SB),
      'GET /v1/templates': () => jsonResponse(200, { templates: [{ name: 'web', from: 'minimal', from_kind: 'image', checkpoint: 'ready', size_bytes: 1, in_use: 0 }] }),
      'GET /v1/images': () => jsonResponse(200, { images: [{ name: 'minimal', source: 'option', size_bytes: 2 }] }),
      'PUT /v1/sandboxes/abc123/files': () => jsonResponse(200, { path: req.query.get('path'), bytes: req.body.length }),
    };
    sock.end(answers[k] ? answers[k]() : errorResponse(404, 'sandbox_not_found', `no ${k}`));
  });
  return { ...f, held, kills, creates, deletes };
}

/** The official client connected to kiln-mcp; errors: what its onerror got (a late answer among them). */
async function connect(socket) {
  const { Client, StdioClientTransport } = await deps();
  const client = new Client({ name: 'kiln-test', version: '1.0.0' });
  const errors = [];
  client.onerror = (e) => errors.push(String(e && e.message));
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN], env: { ...process.env, KILN_SOCKET: socket }, stderr: 'pipe' });
  await client.connect(transport);
  return { client, errors };
}

const until = async (what, ok, ms = 3000) => {
  for (const t0 = Date.now(); !ok();) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => { setTimeout(r, 20); });
  }
};

test('mcp client: the official client lists the tools; every inputSchema compiles with ajv (strict), every property has a type', async () => {
  const { Ajv } = await deps();
  const f = await kilnd();
  const { client } = await connect(f.socket);
  try {
    assert.equal(client.getServerVersion().name, 'kiln-mcp');
    const { tools } = await client.listTools();
    assert.equal(tools.length, 12);
    // strict: unknown keywords, ignored ones and types that do not fit
    // are errors; union types (exec's command) are allowed by name.
    const ajv = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true });
    const typed = (where, s) => {
      assert.ok(s.type !== undefined, `${where}: no "type" (hosts that want one on every property reject the tool)`);
      for (const [i, b] of (s.oneOf || []).entries()) {
        assert.ok([].concat(s.type).includes(b.type), `${where}.oneOf[${i}]: type ${b.type} not in ${JSON.stringify(s.type)}`);
        typed(`${where}.oneOf[${i}]`, b);
      }
      if (s.items) typed(`${where}[]`, s.items);
      if (s.additionalProperties && typeof s.additionalProperties === 'object') typed(`${where}{}`, s.additionalProperties);
    };
    const validators = {};
    for (const t of tools) {
      validators[t.name] = ajv.compile(t.inputSchema);
      for (const [k, s] of Object.entries(t.inputSchema.properties)) typed(`${t.name}.${k}`, s);
    }
    const exec = validators.exec;
    for (const command of ['echo hi', ['ls', '-l']]) assert.ok(exec({ sandbox_id: 'a', command }), JSON.stringify(exec.errors));
    for (const command of [5, [], '', [1], null]) assert.ok(!exec({ sandbox_id: 'a', command }), `command ${JSON.stringify(command)} passed`);
    // kiln-mcp checks the same: what ajv refuses, kiln-mcp refuses.
    await assert.rejects(client.callTool({ name: 'exec', arguments: { sandbox_id: 'abc123', command: 5 } }), /-32602|does not match/);
  } finally {
    await client.close();
    await f.close();
  }
});

test('mcp client: structuredContent is also in content as its JSON; exec output appears once', async () => {
  const f = await kilnd();
  const { client } = await connect(f.socket);
  try {
    const results = {
      exec: await client.callTool({ name: 'exec', arguments: { sandbox_id: 'abc123', command: 'echo' } }),
      sandbox_create: await client.callTool({ name: 'sandbox_create', arguments: {} }),
      template_list: await client.callTool({ name: 'template_list', arguments: {} }),
      image_list: await client.callTool({ name: 'image_list', arguments: {} }),
    };
    for (const [name, r] of Object.entries(results)) {
      assert.equal(r.isError, false, `${name}: ${JSON.stringify(r)}`);
      assert.ok(r.structuredContent, `${name}: no structuredContent`);
      const mirror = r.content.filter((c) => c.type === 'text').map((c) => { try { return JSON.parse(c.text); } catch { return undefined; } });
      assert.ok(mirror.some((m) => JSON.stringify(m) === JSON.stringify(r.structuredContent)), `${name}: structuredContent not in content: ${JSON.stringify(r)}`);
    }
    const r = results.exec;
    assert.match(r.content[0].text, new RegExp(`^exit_code: 3\nstdout:\n${OUT}\n\nstderr:\nwarn\n$`));
    assert.equal(JSON.stringify(r).split(OUT).length - 1, 1, `the output once in the whole result: ${JSON.stringify(r)}`);
    assert.deepEqual(r.structuredContent, { exit_code: 3, signal: null, timed_out: false, stdout_bytes: OUT.length + 1, stderr_bytes: 5 });
  } finally {
    await client.close();
    await f.close();
  }
});

test('mcp client: write_file refuses content that is not base64 with a tool error, and writes nothing', async () => {
  const f = await kilnd();
  const { client } = await connect(f.socket);
  const write = (content) => client.callTool({ name: 'write_file', arguments: { sandbox_id: 'abc123', path: '/w/b', content, encoding: 'base64' } });
  try {
    for (const [content, why] of [['aGk*', '"\\*" at character 3'], ['aGk=aGk=', "'=' before the end"], ['a', 'one too many or too few'],
      ['aGk===', 'padding fills up to a multiple of 4'], ['aG=', 'padding fills up to a multiple of 4'], ['aGk_', '"_" at character 3']]) {
      const r = await write(content);
      assert.equal(r.isError, true, `${content}: ${JSON.stringify(r)}`);
      assert.match(r.content[0].text, new RegExp(`^write_file: content is not valid base64: .*${why}.*; nothing was written`), content);
    }
    assert.equal(f.requests.filter((q) => q.method === 'PUT').length, 0, 'nothing was written');
    for (const [content, bytes] of [['aGk=', 2], ['aGk', 2], ['aGVs\nbG8=', 5], ['', 0]]) {
      const r = await write(content);
      assert.equal(r.isError, false, JSON.stringify(r));
      assert.equal(r.content[0].text, `wrote ${bytes} bytes to /w/b`);
    }
  } finally {
    await client.close();
    await f.close();
  }
});

test('mcp client: a sandbox created for a cancelled call is deleted once kilnd answers (nobody learns its id)', async () => {
  const f = await kilnd();
  const { client, errors } = await connect(f.socket);
  try {
    const ac = new AbortController();
    const call = client.callTool({ name: 'sandbox_create', arguments: { timeout_s: 4242 } }, undefined, { signal: ac.signal });
    await until('the create reached kilnd', () => f.creates.length === 1);
    ac.abort('the user stopped it');
    await assert.rejects(call, /abort|cancel|stopped/i);
    await new Promise((r) => { setTimeout(r, 100); }); // the cancel reaches kiln-mcp first
    f.creates[0].end(jsonResponse(201, { ...SB, template: null }));
    await until('kiln-mcp deleted the sandbox', () => f.deletes.length === 1);
    await new Promise((r) => { setTimeout(r, 300); });
    assert.deepEqual(errors, [], 'no answer to a cancelled request');
    // Not cancelled: kept.
    const r = await client.callTool({ name: 'sandbox_create', arguments: {} });
    assert.equal(r.structuredContent.sandbox_id, 'abc123');
    assert.equal(f.deletes.length, 1);
  } finally {
    await client.close();
    await f.close();
  }
});

test('mcp client: a cancelled exec gets no answer and its process is killed; the server goes on', async () => {
  const f = await kilnd();
  const { client, errors } = await connect(f.socket);
  try {
    const ac = new AbortController();
    const call = client.callTool({ name: 'exec', arguments: { sandbox_id: 'abc123', command: 'sleep 600' } }, undefined, { signal: ac.signal });
    await until('the exec reached kilnd', () => f.held.size === 1);
    const [token] = f.held.keys();
    ac.abort('the user stopped it'); // the client sends notifications/cancelled
    await assert.rejects(call, /abort|cancel|stopped/i);
    let killed = true;
    try {
      await until('kiln-mcp killed the process', () => f.kills.includes(token) && f.held.size === 0);
    } catch (e) {
      killed = e.message;
      f.held.get(token).end(jsonResponse(200, { exit_code: 0, signal: null, timed_out: false, stdout: '', stderr: '' })); // it ends anyway
    }
    // An answer to the cancelled request would reach the client's onerror.
    await new Promise((r) => { setTimeout(r, 300); });
    assert.deepEqual(errors, [], 'no answer to a cancelled request');
    assert.equal(killed, true);
    assert.match(token, /^[0-9a-f-]{36}$/); // KILN_MCP_CALL: a fresh token per call
    const r = await client.callTool({ name: 'exec', arguments: { sandbox_id: 'abc123', command: 'echo' } });
    assert.equal(r.structuredContent.exit_code, 3);
    await client.ping();
    // A cancel of a finished or unknown request is ignored.
    await client.notification({ method: 'notifications/cancelled', params: { requestId: 12345 } });
    await client.ping();
    assert.deepEqual(errors, []);
  } finally {
    await client.close();
    await f.close();
  }
});
