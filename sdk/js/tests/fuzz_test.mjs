// Randomized hostile input (a seeded PRNG, so a failure reproduces): kilnd
// answers and decision streams mutated byte by byte, and MCP lines mutated the same way. The
// SDK must settle every call with a value or a KilnError, never hang or
// throw anything else; the MCP server must answer every request line once
// and stay up; write_file's base64 check takes exactly base64. KILN_FUZZ_ROUNDS raises the rounds (default 300 / 600), KILN_FUZZ_SEED picks another seed.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from './runner.mjs';
import { startFake, jsonResponse, chunkedHead, chunk, LAST_CHUNK } from './fake_kilnd.mjs';
import * as kiln from '../src/index.js';
import { serve, base64Problem } from '../src/mcp.js';

function prng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
}

function mutate(buf, rnd) {
  const b = Buffer.from(buf);
  const out = [...b];
  const n = 1 + Math.floor(rnd() * 4);
  for (let i = 0; i < n; i++) {
    const at = Math.floor(rnd() * (out.length + 1));
    switch (Math.floor(rnd() * 5)) {
      case 0: if (out.length) out[Math.min(at, out.length - 1)] = Math.floor(rnd() * 256); break;
      case 1: out.splice(at, 0, Math.floor(rnd() * 256)); break;
      case 2: out.splice(at, 1 + Math.floor(rnd() * 8)); break;
      case 3: out.splice(at, 0, ...Buffer.from(['\r\n', '\n', '"', '{', '0\r\n\r\n', '\u0000', 'ffffffff\r\n'][Math.floor(rnd() * 7)])); break;
      default: out.length = at; // truncated
    }
  }
  return Buffer.from(out);
}

const STREAM = Buffer.concat([Buffer.from(chunkedHead()), chunk('{"type":"stdout","data":"a\\n"}\n{"type":"stderr","data_base64":"/w=="}\n'),
  chunk('{"type":"exit","exit_code":0}\n'), Buffer.from(LAST_CHUNK)]);
const JSONANS = jsonResponse(200, { exit_code: 0, stdout: 'x', stdout_encoding: 'utf-8', stderr: '', stderr_encoding: 'base64' });
const ERRANS = jsonResponse(409, { error: { code: 'wrong_state', message: 'm' } });
const FILEANS = Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunk('hello ')}${chunk('world')}${LAST_CHUNK}`);
const FILECL = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world');

/**
 * rounds of call(sb, i) against a fake kilnd answering answerFor(i)
 * (mutated): each settles as a value (its outcome) or a KilnError; at
 * least three kinds of outcome are seen.
 */
async function settleRounds(seed, answerFor, call) {
  const rnd = prng(Number(process.env.KILN_FUZZ_SEED || seed));
  let answer = null;
  const f = await startFake((req, sock) => { sock.end(answer); });
  try {
    const sb = new kiln.Sandbox(new kiln.Kiln({ socket: f.socket, timeoutMs: 500 }), { id: 'abc123' });
    const rounds = Number(process.env.KILN_FUZZ_ROUNDS || 300);
    const seen = {};
    for (let i = 0; i < rounds; i++) {
      answer = mutate(answerFor(i), rnd);
      let outcome;
      try {
        outcome = await call(sb, i);
      } catch (e) {
        assert.ok(e instanceof kiln.KilnError, `round ${i}: ${e && e.name}: ${e && e.message} for ${JSON.stringify(answer.toString('latin1'))}`);
        outcome = e.name;
      }
      seen[outcome] = (seen[outcome] || 0) + 1;
    }
    assert.ok(Object.keys(seen).length >= 3, JSON.stringify(seen));
  } finally {
    await f.close();
  }
}

test('fuzz: mutated kilnd answers settle as a value or a KilnError, never a hang', async () => {
  const dest = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-fuzz-')), 'f');
  try {
    await settleRounds(0x6b696c6e, (i) => [JSONANS, STREAM, ERRANS, FILEANS, FILECL][i % 5], async (sb, i) => {
      const which = i % 5;
      if (which >= 3) {
        await sb.files.download('/f', dest);
      } else if (which === 1) {
        for await (const ev of await sb.execStream('x')) assert.equal(typeof ev.type, 'string');
      } else {
        await sb.exec('x');
      }
      return 'ok';
    });
  } finally {
    fs.rmSync(path.dirname(dest), { recursive: true, force: true });
  }
});

const DECISIONS = Buffer.from('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: kiln-decisions\r\n\r\n'
  + '{"kind":"attached","deadline_ms":2000,"on_timeout":"deny"}\n'
  + '{"kind":"connect","id":7,"src":"10.0.2.15:40312","dst":"10.0.2.2:443","name":"a.test","proto":"tls","static":"allow","rule":0,"intercept":true}\n'
  + '{"kind":"request","id":8,"flow":7,"name":"a.test","method":"GET","path":"/","headers":[["a","b"]],"inject":[],"static":"allow","rule":null}\n'
  + '{"kind":"error","id":8,"message":"m"}\n{"kind":"end","reason":"sandbox_stopped"}\n');

test('fuzz: mutated decision streams settle policy() and wait() as a value or a KilnError, never a hang', () => settleRounds(0x706f6c, () => DECISIONS, async (sb) => {
  const h = await sb.egress.policy((ev) => (ev.kind === 'request' ? kiln.egress.allow({ setHeaders: { 'x-a': 'b' } }) : null), { onError: () => {} });
  return `ended ${await h.wait()}`;
}));

test('fuzz: mutated MCP lines each get one answer and the server stays up', async () => {
  const rnd = prng(Number(process.env.KILN_FUZZ_SEED || 0x6d6370));
  const input = new PassThrough();
  const output = new PassThrough();
  const k = new kiln.Kiln({ socket: '/nonexistent/kiln.sock', timeoutMs: 500 });
  const done = serve({ input, output, kiln: k });
  const seeds = [
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}',
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec","arguments":{"sandbox_id":"a","command":["ls"]}}}',
    '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"sandbox_id":"a","path":"/x","content":"y"}}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
  ];
  let text = '';
  output.on('data', (d) => { text += d; });
  const rounds = Number(process.env.KILN_FUZZ_ROUNDS || 300) * 2;
  for (let i = 0; i < rounds; i++) {
    const line = mutate(seeds[i % seeds.length], rnd).toString('latin1').replace(/\n/g, ' ');
    input.write(`${line}\n`);
  }
  input.write('{"jsonrpc":"2.0","id":"last","method":"ping"}\n');
  input.end();
  await done;
  const answers = text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  for (const a of answers) {
    assert.equal(a.jsonrpc, '2.0');
    assert.ok(('result' in a) !== ('error' in a), JSON.stringify(a));
  }
  assert.deepEqual(answers.at(-1).id === 'last' || answers.some((a) => a.id === 'last'), true);
});

test('fuzz: mutated share request lines never end the serving, reach MemoryFS only as the protocol\'s, and each op line gets one answer', async () => {
  const rnd = prng(Number(process.env.KILN_FUZZ_SEED || 0x736872));
  const { EventEmitter } = await import('node:events');
  const sock = new EventEmitter();
  sock.destroyed = false;
  let text = '';
  sock.write = (d) => { text += d; return true; };
  sock.destroy = () => { sock.destroyed = true; sock.emit('close'); };
  sock.pause = () => {};
  sock.resume = () => {};
  const rejections = [];
  const onRejection = (e) => rejections.push(e);
  process.on('unhandledRejection', onRejection);
  const fs = new kiln.MemoryFS({ '/d/f': 'hello' });
  const seen = [];
  for (const op of ['stat', 'readdir', 'read', 'write', 'create', 'mkdir', 'unlink', 'rmdir', 'rename', 'truncate']) {
    const orig = fs[op].bind(fs);
    fs[op] = (...a) => { seen.push(a); return orig(...a); };
  }
  const srv = new kiln.ShareServer(0, fs, sock, Buffer.alloc(0));
  const seeds = [
    '{"id":1,"op":"stat","path":"/d/f"}', '{"id":2,"op":"readdir","path":"/d"}',
    '{"id":3,"op":"read","path":"/d/f","offset":1,"size":3}', '{"id":4,"op":"write","path":"/d/f","offset":2,"data":"aGk="}',
    '{"id":5,"op":"create","path":"/d/g","mode":420}', '{"id":6,"op":"rename","path":"/d/g","to":"/d/h"}',
    '{"id":7,"op":"truncate","path":"/d/f","size":9}', '{"kind":"error","message":"refused"}',
  ];
  const rounds = Number(process.env.KILN_FUZZ_ROUNDS || 300) * 2;
  let asked = 0;
  for (let i = 0; i < rounds; i++) {
    const line = mutate(seeds[i % seeds.length], rnd).toString('latin1').replace(/\n/g, ' ');
    let msg;
    try { msg = JSON.parse(line); } catch { msg = null; }
    if (msg && typeof msg === 'object' && msg.kind !== 'error' && typeof msg.op === 'string') asked++;
    srv.feed(Buffer.from(`${line}\n`, 'latin1'));
  }
  srv.feed(Buffer.from('{"id":"last","op":"stat","path":"/"}\n'));
  await srv.chain;
  process.off('unhandledRejection', onRejection);
  assert.deepEqual(rejections, []);
  const answers = text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(answers.length, asked + 1);
  assert.deepEqual(answers.at(-1), { id: 'last', type: 'dir', size: 0, mode: 0o777 });
  const { pathOk } = await import('../src/shares.js');
  for (const args of seen) assert.ok(pathOk(args[0]), JSON.stringify(args));
});

test('fuzz: write_file\'s base64 check takes every encoding of random bytes and only strings that decode to exactly their bytes', () => {
  const rnd = prng(Number(process.env.KILN_FUZZ_SEED || 0x623634));
  const rounds = Number(process.env.KILN_FUZZ_ROUNDS || 300) * 10;
  let taken = 0;
  for (let i = 0; i < rounds; i++) {
    const bytes = Buffer.from(Array.from({ length: Math.floor(rnd() * 40) }, () => Math.floor(rnd() * 256)));
    const b64 = bytes.toString('base64');
    assert.equal(base64Problem(b64), null, b64);
    assert.equal(base64Problem(b64.replace(/=+$/, '')), null, `${b64} unpadded`);
    // A mutation is refused, or it is base64 whose length in bytes is what its characters say.
    const m = mutate(Buffer.from(b64), rnd).toString('latin1');
    if (base64Problem(m) !== null) continue;
    taken += 1;
    const n = m.replace(/[\s=]/g, '').length;
    assert.match(m, /^[A-Za-z0-9+/\s]*(=\s*){0,2}$/, m);
    assert.equal(Buffer.from(m, 'base64').length, Math.floor((n * 3) / 4), m);
  }
  assert.ok(taken > 0);
});
