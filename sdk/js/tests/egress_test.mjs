// Egress policy callbacks against a stand-in for kilnd's decision stream
// (GET .../egress/decisions, Upgrade: kiln-decisions; NDJSON both ways):
// every question answered once with what the callback decided, kilnd's
// error line, its end line, a close from the client, onRequest, slow
// callbacks, and options refused before anything is sent.
import assert from 'node:assert/strict';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from './runner.mjs';
import { startFake, jsonResponse, errorResponse } from './fake_kilnd.mjs';
import * as kiln from '../src/index.js';

const { Kiln, Sandbox, egress } = kiln;
const PATH = '/v1/sandboxes/3f9a1c2b7d4e/egress/decisions';
const ATTACHED = { kind: 'attached', deadline_ms: 2000, on_timeout: 'deny' };
const CONNECT = {
  kind: 'connect', id: 7, src: '10.0.2.15:40312', dst: '10.0.2.2:443', name: 'api.github.com', proto: 'tls', static: 'allow', rule: 0, intercept: true,
};
const FAILED = { decision: 'deny', reason: 'policy callback failed' };
const END = { kind: 'end', reason: 'sandbox_stopped' };

function request(id, method = 'GET', name = 'api.github.com', flow = null) {
  return {
    kind: 'request', id, flow, src: '10.0.2.15:40312', dst: '10.0.2.2:443', name, method, path: '/v1/x', headers: [['user-agent', 'curl/7.88']], inject: ['authorization'], static: 'allow', rule: 0,
  };
}

/** kilnd's side of an upgraded connection: lines out, answers in (next() is null once the client closed). */
function peer(sock) {
  let buf = Buffer.alloc(0);
  let closed = false;
  const waiters = [];
  const pump = () => {
    while (waiters.length) {
      const nl = buf.indexOf(10);
      if (nl >= 0) {
        const line = buf.subarray(0, nl);
        buf = buf.subarray(nl + 1);
        waiters.shift()(JSON.parse(line.toString()));
      } else if (closed) {
        waiters.shift()(null);
      } else {
        break;
      }
    }
  };
  sock.on('data', (d) => { buf = Buffer.concat([buf, d]); pump(); });
  sock.on('end', () => { closed = true; pump(); });
  sock.on('close', () => { closed = true; pump(); });
  const p = {
    send: (...objs) => sock.write(objs.map((o) => `${JSON.stringify(o)}\n`).join('')),
    next: () => new Promise((resolve) => { waiters.push(resolve); pump(); }),
    async answer() {
      const a = await p.next();
      if (a === null) throw new Error('the client closed instead of answering');
      return a;
    },
    /** n answers by question id, each id once. */
    async answers(n) {
      const out = {};
      for (let i = 0; i < n; i++) {
        const { id, ...a } = await p.answer();
        if (out[id]) throw new Error(`question ${id} answered twice`);
        out[id] = a;
      }
      return out;
    },
  };
  return p;
}

/** A handler that switches to kiln-decisions, sends the first line and runs script(peer); done settles with it. */
function stream(script, first = ATTACHED) {
  const s = { req: null };
  s.done = new Promise((resolve, reject) => {
    s.handler = async (req, sock) => {
      s.req = req;
      sock.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: kiln-decisions\r\n\r\n${JSON.stringify(first)}\n`);
      try {
        await script(peer(sock));
        resolve();
      } catch (e) {
        reject(e);
      } finally {
        sock.end();
      }
    };
  });
  s.done.catch(() => {}); // awaited by the test; never unhandled
  s.check = async () => {
    await s.done;
    assert.equal(s.req.method, 'GET');
    assert.equal(s.req.path, PATH);
    assert.equal(s.req.headers.connection, 'Upgrade');
    assert.equal(s.req.headers.upgrade, 'kiln-decisions');
  };
  return s;
}

async function withStream(handler, fn) {
  const f = await startFake((req, sock) => (req.path === PATH && handler ? handler(req, sock) : sock.end(errorResponse(404, 'route_not_found', 'no'))));
  try {
    const k = new Kiln({ socket: f.socket, timeoutMs: 3000 });
    await fn(new Sandbox(k, { id: '3f9a1c2b7d4e', state: 'running' }), f);
  } finally {
    await f.close();
  }
}

function decide(seen) {
  return async (ev) => {
    seen.push(ev);
    if (ev.kind === 'connect') return egress.allow();
    if (ev.name === 'boom.test') throw new Error('boom');
    if (ev.name === 'rules.test') return undefined;
    if (ev.method === 'POST' && ev.name !== 'api.github.com') return egress.deny({ status: 451, reason: 'no POSTs here' });
    return egress.allow({ setHeaders: { 'X-Agent': 'a1' }, removeHeaders: ['user-agent'] });
  };
}

const EVENTS = [CONNECT, request(8, 'GET', 'api.github.com', 7), request(9, 'POST', 'example.com'), request(10, 'GET', 'rules.test'), request(11, 'GET', 'boom.test')];
const WANT = {
  7: { decision: 'allow' },
  8: { decision: 'allow', set_headers: { 'x-agent': 'a1' }, remove_headers: ['user-agent'] },
  9: { decision: 'deny', status: 451, reason: 'no POSTs here' },
  10: { decision: 'rules' },
  11: FAILED,
};

test('egress: every question gets the callback\'s answer; the end line ends the handle', async () => {
  const s = stream(async (p) => {
    p.send(...EVENTS);
    assert.deepEqual(await p.answers(EVENTS.length), WANT);
    p.send(END);
    assert.equal(await p.next(), null, 'an answer after the end line');
  });
  await withStream(s.handler, async (sb) => {
    const seen = [];
    const errs = [];
    const h = await sb.egress.policy(decide(seen), { onError: (e, ev) => errs.push([e.message, ev.id]) });
    assert.deepEqual(h.attached, ATTACHED);
    assert.equal(await h.wait(), 'sandbox_stopped');
    await s.check();
    assert.equal(s.req.target, `${PATH}?deadline_ms=2000&on_timeout=deny`);
    assert.ok(h.done);
    assert.equal(h.reason, 'sandbox_stopped');
    assert.deepEqual(seen.sort((a, b) => a.id - b.id), EVENTS);
    assert.deepEqual(errs, [['boom', 11]]);
    await h.close(); // after the end: nothing to do
  });
});

test('egress: options go in the query; bad ones throw before connecting', async () => {
  const s = stream(async (p) => assert.equal(await p.next(), null));
  await withStream(s.handler, async (sb, f) => {
    for (const [opts, cls, text] of [[{ deadlineMs: 9 }, RangeError, 'deadlineMs 9 is out of range'], [{ deadlineMs: 60001 }, RangeError, '10..60000'],
      [{ deadlineMs: '2000' }, TypeError, 'deadlineMs is an integer'], [{ deadlineMs: 1.5 }, TypeError, 'deadlineMs is an integer'],
      [{ onTimeout: 'allow' }, RangeError, 'onTimeout "allow"'], [{ colour: 'red' }, TypeError, 'unknown option colour'],
      [{ onError: 1 }, TypeError, 'onError is a function']]) {
      assert.throws(() => sb.egress.policy(() => null, opts), (e) => e instanceof cls && e.message.includes(text), JSON.stringify(opts));
      assert.throws(() => sb.egress.onRequest(() => null, opts), cls);
    }
    assert.throws(() => sb.egress.policy(null), /fn is a function/);
    assert.equal(f.requests.length, 0);
    const h = await sb.egress.policy(() => null, { deadlineMs: 10, onTimeout: 'rules' });
    await h.close();
    await s.check();
    assert.equal(s.req.target, `${PATH}?deadline_ms=10&on_timeout=rules`);
  });
});

test('egress: answers kilnd would refuse are denies, reported to onError', async () => {
  const bad = {
    1: { decision: 'allow', set_headers: { 'x-a': 'line\nbreak' } },
    2: { decision: 'maybe' },
    3: 'allow',
    4: { decision: 'deny', status: 200 },
    5: { decision: 'allow', colour: 'red' },
    6: { decision: 'deny', set_headers: { 'x-a': 'b' } },
    7: { decision: 'allow', remove_headers: ['bad name'] },
    8: { decision: 'deny', reason: 'x'.repeat(201) },
    9: { decision: 'allow', set_headers: Object.fromEntries([...Array(17).keys()].map((i) => [`x-${i}`, 'v'])) },
    10: [],
  };
  const ids = Object.keys(bad).map(Number);
  const s = stream(async (p) => {
    p.send(...ids.map((i) => request(i)), { ...CONNECT, id: 11 });
    const want = Object.fromEntries([...ids, 11].map((i) => [i, FAILED]));
    assert.deepEqual(await p.answers(ids.length + 1), want);
    p.send({ kind: 'end', reason: 'egress_proxy_stopped' });
  });
  await withStream(s.handler, async (sb) => {
    const errs = [];
    const h = await sb.egress.policy((ev) => (ev.kind === 'connect' ? { decision: 'allow', setHeaders: { 'x-a': 'b' } } : bad[ev.id]), { onError: (e) => errs.push(e) });
    assert.equal(await h.wait(), 'egress_proxy_stopped');
    await s.check();
    assert.equal(errs.length, ids.length + 1);
  });
});

test('egress: the helpers check their arguments', () => {
  assert.deepEqual(egress.rules(), { decision: 'rules' });
  assert.deepEqual(egress.deny(), { decision: 'deny', status: 403 });
  assert.deepEqual(egress.allow({ remove_headers: ['User-Agent'] }), { decision: 'allow', remove_headers: ['user-agent'] });
  assert.throws(() => egress.deny({ status: 302 }), RangeError);
  assert.throws(() => egress.deny({ reason: 'a\u0007' }), RangeError);
  assert.throws(() => egress.allow({ setHeaders: { x: '\u0000' } }), RangeError);
  assert.throws(() => egress.allow({ removeHeaders: 'x-a' }), TypeError);
  assert.throws(() => egress.allow({ setHeaders: { x: 1 } }), TypeError);
});

test('egress: kilnd\'s error line gets one fallback deny', async () => {
  const s = stream(async (p) => {
    p.send(request(8));
    assert.deepEqual(await p.answer(), { id: 8, decision: 'allow' });
    p.send({ kind: 'error', id: 8, message: 'set_headers: kilnd says no' });
    assert.deepEqual(await p.answer(), { id: 8, ...FAILED });
    p.send({ kind: 'error', id: 8, message: 'again' }, { kind: 'end', reason: 'kilnd_shutdown' });
    assert.equal(await p.next(), null, 'a second fallback');
  });
  await withStream(s.handler, async (sb) => {
    const errs = [];
    const h = await sb.egress.policy(() => egress.allow(), { onError: (e) => errs.push(e) });
    assert.equal(await h.wait(), 'kilnd_shutdown');
    await s.check();
    assert.deepEqual(h.errors.map((e) => e.message), ['set_headers: kilnd says no', 'again']);
    assert.equal(errs[0].code, 'answer_refused');
    assert.match(errs[0].message, /kilnd says no/);
  });
});

test('egress: close() from the client ends the stream; wait() resolves null', async () => {
  const s = stream(async (p) => assert.equal(await p.next(), null));
  await withStream(s.handler, async (sb) => {
    const calls = [];
    const h = await sb.egress.policy((ev) => calls.push(ev));
    assert.equal(h.done, false);
    await h.close();
    await s.check();
    assert.ok(h.done);
    assert.equal(await h.wait(), null);
    await h.close(); // twice is fine
    assert.deepEqual(calls, []);
  });
});

test('egress: onRequest answers connects with rules, without the callback', async () => {
  const s = stream(async (p) => {
    p.send(CONNECT, request(8, 'POST', 'example.com'));
    assert.deepEqual(await p.answers(2), { 7: { decision: 'rules' }, 8: { decision: 'deny', status: 403, reason: 'no' } });
    p.send(END);
  });
  await withStream(s.handler, async (sb) => {
    const seen = [];
    const h = await sb.egress.onRequest((ev) => { seen.push(ev.kind); return egress.deny({ reason: 'no' }); });
    assert.equal(await h.wait(), 'sandbox_stopped');
    await s.check();
    assert.deepEqual(seen, ['request']);
  });
});

test('egress: a slow callback delays no other question', async () => {
  let release;
  const gate = new Promise((r) => { release = r; });
  const s = stream(async (p) => {
    p.send(request(1, 'GET', 'slow.test'), request(2));
    const first = await p.answer();
    release();
    const second = await p.answer();
    assert.deepEqual([first.id, second.id], [2, 1]);
    p.send(END);
  });
  await withStream(s.handler, async (sb) => {
    const h = await sb.egress.policy(async (ev) => { if (ev.name === 'slow.test') await gate; return null; });
    assert.equal(await h.wait(), 'sandbox_stopped');
    await s.check();
  });
});

test('egress: refusals before the switch throw their classes', async () => {
  for (const [ans, cls, code] of [[errorResponse(409, 'busy', 'another client holds it'), kiln.BusyError, 'busy'],
    [errorResponse(409, 'no_egress_proxy', 'add an http rule'), kiln.NoEgressProxyError, 'no_egress_proxy'],
    [errorResponse(409, 'wrong_state', 'stopped'), kiln.WrongStateError, 'wrong_state'],
    [jsonResponse(200, {}), kiln.KilnProtocolError, 'protocol_error']]) {
    await withStream((req, sock) => sock.end(ans), async (sb) => {
      await assert.rejects(sb.egress.policy(() => null), (e) => e instanceof cls && e.code === code);
    });
  }
});

test('egress: a stream not beginning with attached, or cut without its end line', async () => {
  const first = stream(async () => {}, CONNECT);
  await withStream(first.handler, async (sb) => {
    await assert.rejects(sb.egress.policy(() => null), kiln.KilnProtocolError);
  });
  const cut = stream(async (p) => p.send(request(1)));
  await withStream(cut.handler, async (sb) => {
    const errs = [];
    const h = await sb.egress.policy(() => null, { onError: (e) => errs.push(e) });
    await assert.rejects(h.wait(), kiln.KilnConnectionError);
    await cut.check();
    assert.ok(errs.some((e) => e instanceof kiln.KilnConnectionError));
  });
});

test('examples/egress-policy.mjs denies POSTs but to api.github.com and adds a header to the rest', async () => {
  const s = stream(async (p) => {
    p.send(CONNECT, request(8, 'POST', 'api.github.com'), request(9, 'POST', 'example.com'), request(10, 'GET', 'example.com'));
    assert.deepEqual(await p.answers(4), {
      7: { decision: 'rules' },
      8: { decision: 'allow', set_headers: { 'x-agent': 'kiln-example' } },
      9: { decision: 'deny', status: 403, reason: 'POST only to api.github.com' },
      10: { decision: 'allow', set_headers: { 'x-agent': 'kiln-example' } },
    });
    p.send(END);
  });
  const f = await startFake((req, sock) => (req.path === PATH ? s.handler(req, sock) : sock.end(jsonResponse(200, { id: '3f9a1c2b7d4e', state: 'running' }))));
  const ex = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'egress-policy.mjs');
  const run = (args) => new Promise((resolve) => {
    execFile(process.execPath, [ex, ...args], { env: { ...process.env, KILN_SOCKET: f.socket }, timeout: 15000 }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
  try {
    const r = await run(['3f9a1c2b7d4e']);
    assert.equal(r.code, 0, r.stderr);
    await s.check();
    assert.match(r.stdout, /deny POST example\.com\/v1\/x/);
    assert.match(r.stdout, /ended: sandbox_stopped/);
    assert.equal((await run([])).code, 2);
  } finally {
    await f.close();
  }
});
