// kiln.secrets against the fake kilnd: set, list, get and delete send what
// docs/api.md says (the value only in PUT's body, owner a query parameter
// only when given), answers are metadata, and each refusal throws its class.
import assert from 'node:assert/strict';
import { test } from './runner.mjs';
import { startFake, jsonResponse, errorResponse } from './fake_kilnd.mjs';
import * as kiln from '../src/index.js';

const { Kiln } = kiln;
const META = { name: 'github', owner: 1000, created: '2026-11-30T16:33:52.681Z', updated: '2026-11-30T16:33:52.681Z' };

async function withFake(routes, fn) {
  const f = await startFake((req, sock) => {
    const r = routes[`${req.method} ${req.path}`];
    sock.end(r ? r(req) : errorResponse(404, 'route_not_found', `no ${req.method} ${req.path}`));
  });
  try {
    await fn(new Kiln({ socket: f.socket, timeoutMs: 3000 }), f);
  } finally {
    await f.close();
  }
}

const ROUTES = {
  'PUT /v1/secrets/github': () => jsonResponse(201, META),
  'GET /v1/secrets': () => jsonResponse(200, { secrets: [META] }),
  'GET /v1/secrets/github': () => jsonResponse(200, META),
  'DELETE /v1/secrets/github': () => jsonResponse(204),
};

test('secrets: set, list, get, delete', () => withFake(ROUTES, async (k, f) => {
  assert.deepEqual(await k.secrets.set('github', 'ghp_x y'), META);
  const put = f.requests.at(-1);
  assert.deepEqual(put.json(), { value: 'ghp_x y' });
  assert.equal(put.target, '/v1/secrets/github'); // no owner unless given
  assert.deepEqual(await k.secrets.list(), [META]);
  assert.deepEqual(await k.secrets.get('github'), META);
  assert.equal(await k.secrets.delete('github'), undefined);
  assert.deepEqual(f.requests.map((r) => r.method), ['PUT', 'GET', 'GET', 'DELETE']);
  for (const r of f.requests.slice(1)) assert.equal(r.body.length, 0); // the value goes in the PUT alone
}));

test('secrets: owner is a query parameter', () => withFake(ROUTES, async (k, f) => {
  await k.secrets.set('github', 'v', { owner: 1000 });
  assert.equal(f.requests.at(-1).target, '/v1/secrets/github?owner=1000');
  await k.secrets.list({ owner: 0 });
  assert.equal(f.requests.at(-1).target, '/v1/secrets?owner=0');
  await k.secrets.delete('github', { owner: 1000 });
  assert.equal(f.requests.at(-1).target, '/v1/secrets/github?owner=1000');
}));

test('secrets: a name is one path segment, a value a string', () => withFake({}, async (k, f) => {
  await assert.rejects(k.secrets.get('a/b'), kiln.RouteNotFoundError);
  assert.equal(f.requests.at(-1).target, '/v1/secrets/a%2Fb');
  assert.throws(() => k.secrets.set('github', Buffer.from('x')), TypeError);
  assert.throws(() => k.secrets.get('..'), TypeError);
}));

test('secrets: each refusal throws its class', async () => {
  for (const [status, code, cls] of [[400, 'bad_field', kiln.BadFieldError], [400, 'too_large', kiln.TooLargeError],
    [403, 'forbidden', kiln.ForbiddenError], [404, 'not_found', kiln.NotFoundError],
    [409, 'limit_reached', kiln.LimitReachedError], [507, 'no_space', kiln.NoSpaceError]]) {
    await withFake({
      'PUT /v1/secrets/a': () => errorResponse(status, code, 'no'),
      'DELETE /v1/secrets/a': () => errorResponse(status, code, 'no'),
    }, async (k) => {
      await assert.rejects(k.secrets.set('a', 'v'), cls);
      await assert.rejects(k.secrets.delete('a'), cls);
    });
  }
});
