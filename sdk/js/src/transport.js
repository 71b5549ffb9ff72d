// HTTP/1.1 over kilnd's Unix socket: one connection per request (node:http
// with socketPath), deadlines, error mapping and NDJSON streams.
import http from 'node:http';
import fs from 'node:fs';
import {
  KilnError, KilnConnectionError, KilnProtocolError, ClientTimeoutError, fromKiln,
} from './errors.js';

export const DEFAULT_SOCKET = '/run/kiln/kiln.sock';
export const DEFAULT_TIMEOUT_MS = 300000;
const MAX_JSON_BYTES = 256 * 1024 * 1024; // a files/list of a million entries fits
const MAX_ERROR_BYTES = 1024 * 1024;
const MAX_LINE_BYTES = 16 * 1024 * 1024;

const HINT = 'is kilnd running? start it or set KILN_SOCKET';

/** `?a=1&b=x` from an object; undefined/null values are left out, arrays repeat the key. */
export function queryString(query) {
  if (!query) return '';
  const parts = [];
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    for (const one of Array.isArray(v) ? v : [v]) {
      parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(one))}`);
    }
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** A path segment (sandbox id, checkpoint name, ...) made safe for a URL path. */
export function seg(value) {
  const s = String(value);
  if (s === '' || s === '.' || s === '..') throw new TypeError(`not a valid path segment: ${JSON.stringify(s)}`);
  return encodeURIComponent(s);
}

function isReadableSource(x) {
  return x !== null && typeof x === 'object' && typeof x[Symbol.asyncIterator] === 'function';
}

export class Transport {
  constructor(socket, timeoutMs) {
    this.socket = socket;
    this.timeoutMs = timeoutMs;
  }

  // Any low-level failure as one of the SDK's errors.
  convert(err, state, what) {
    if (err instanceof KilnError) return err;
    if (state && state.timedOut) {
      const which = state.idleWhat || 'the client deadline: Kiln({timeoutMs})';
      return new ClientTimeoutError(`${what}: no complete answer from kilnd at ${this.socket} within ${state.deadlineMs} ms (${which})`, { code: 'client_timeout' });
    }
    if (state && state.lastError && String(state.lastError.code).startsWith('HPE_')) err = state.lastError;
    const code = err && err.code;
    if (typeof code === 'string' && code.startsWith('HPE_')) {
      return new KilnProtocolError(`${what}: kilnd at ${this.socket} answered something that is not valid HTTP (${err.message})`, { code: 'protocol_error' });
    }
    const detail = (err && err.message) || String(err);
    if (state && state.gotHead) {
      return new KilnConnectionError(`${what}: kilnd at ${this.socket} went away mid-answer (${detail}); ${HINT}`, { code: 'connection_error' });
    }
    return new KilnConnectionError(`${what}: cannot reach kilnd at ${this.socket} (${detail}); ${HINT}`, { code: 'connection_error' });
  }

  /**
   * Sends a request and resolves once the answer's head is in, with a
   * status below 400 (errors are thrown, mapped to their classes).
   * opts: query, json, body (Buffer|string|async iterable|{path}),
   * headers, timeoutMs (deadline for the head, or for everything with
   * wholeDeadline), idleTimeoutMs (while reading the body),
   * idleAfterHeadMs (when given: the silence limit from the head on, 0
   * none; an upload whose answer is a long stream: a template build).
   */
  open(method, path, opts = {}) {
    const what = `${method} ${path}`;
    const deadlineMs = opts.timeoutMs === undefined ? this.timeoutMs : opts.timeoutMs;
    const state = { timedOut: false, gotHead: false, deadlineMs, done: false };
    const headers = { Accept: 'application/json', ...(opts.headers || {}) };
    let body = opts.body;
    if (opts.json !== undefined) {
      body = Buffer.from(JSON.stringify(opts.json));
      headers['Content-Type'] = 'application/json';
    }
    if (typeof body === 'string') body = Buffer.from(body);
    let streamBody = null;
    if (Buffer.isBuffer(body) || body instanceof Uint8Array) {
      headers['Content-Length'] = String(body.length);
    } else if (body && typeof body === 'object' && typeof body.localPath === 'string') {
      headers['Content-Length'] = String(fs.statSync(body.localPath).size);
      streamBody = fs.createReadStream(body.localPath, { highWaterMark: 256 * 1024 });
      body = null;
    } else if (isReadableSource(body)) {
      headers['Transfer-Encoding'] = 'chunked';
      streamBody = body;
      body = null;
    } else if (body !== undefined && body !== null) {
      throw new TypeError('body must be a Buffer, a string, an async iterable of bytes or a local path');
    }

    return new Promise((resolve, reject) => {
      let req;
      try {
        req = http.request({
          socketPath: this.socket, path: path + queryString(opts.query), method, headers,
          agent: false, setHost: true,
        });
      } catch (e) {
        reject(this.convert(e, state, what));
        return;
      }
      let timer = null;
      let resRef = null;
      const fail = (err) => {
        if (state.done) return;
        state.done = true;
        clearTimeout(timer);
        req.destroy();
        if (streamBody && typeof streamBody.destroy === 'function') streamBody.destroy();
        reject(this.convert(err, state, what));
      };
      if (deadlineMs) {
        timer = setTimeout(() => {
          state.timedOut = true;
          if (!state.done) { fail(new Error('deadline')); return; }
          req.destroy();
          if (resRef) resRef.destroy(new Error('deadline'));
        }, deadlineMs);
      }
      req.on('error', (e) => {
        // After the head, a parser error (HPE_*) also ends the body's read: keep it to name the cause.
        if (!state.lastError) state.lastError = e;
        fail(e);
      });
      // A transfer may take long, but never sits silent longer than this;
      // a stream's silence counts from its head (idleAfterHead), the head
      // itself being the deadline's.
      const armIdle = (ms) => req.setTimeout(ms, () => {
        state.timedOut = true;
        state.deadlineMs = ms;
        if (opts.idleWhat) state.idleWhat = opts.idleWhat;
        if (!state.done) { fail(new Error('idle')); return; }
        req.destroy();
        if (resRef) resRef.destroy(new Error('idle'));
      });
      if (opts.idleTimeoutMs && !opts.idleAfterHead) armIdle(opts.idleTimeoutMs);
      req.on('response', (res) => {
        state.gotHead = true;
        if (opts.idleAfterHeadMs !== undefined) armIdle(opts.idleAfterHeadMs);
        else if (opts.idleTimeoutMs && opts.idleAfterHead) armIdle(opts.idleTimeoutMs);
        resRef = res;
        if (state.done) { res.destroy(); return; }
        const stop = () => { clearTimeout(timer); req.destroy(); };
        const response = new Response(this, res, req, state, what, stop);
        if (res.statusCode >= 400) {
          // The error body, still under the deadline.
          response.readAll(MAX_ERROR_BYTES).then((buf) => {
            clearTimeout(timer);
            state.done = true;
            req.destroy();
            reject(errorFromBody(res.statusCode, buf, what));
          }, fail);
          return;
        }
        if (!opts.wholeDeadline) clearTimeout(timer);
        else response.onFinish = () => clearTimeout(timer);
        state.done = true;
        resolve(response);
      });
      if (streamBody) {
        pump(req, streamBody).catch((e) => {
          if (!state.gotHead) fail(e instanceof KilnError ? e : new KilnError(`${what}: reading the upload failed: ${e.message}`, { code: 'upload_source' }));
        });
      } else {
        req.end(body || undefined);
      }
    });
  }

  /**
   * A protocol switch (Connection: Upgrade, Upgrade: opts.protocol) on a
   * connection of its own, under the client deadline until kilnd's 101:
   * resolves {socket, head} (the raw socket, and the bytes that came with
   * the head). An error status rejects with its class; any other answer
   * is a KilnProtocolError.
   */
  upgrade(method, path, opts = {}) {
    const what = `${method} ${path}`;
    const state = { timedOut: false, gotHead: false, deadlineMs: this.timeoutMs, done: false };
    return new Promise((resolve, reject) => {
      let req;
      try {
        req = http.request({
          socketPath: this.socket, path: path + queryString(opts.query), method,
          headers: { Connection: 'Upgrade', Upgrade: opts.protocol }, agent: false, setHost: true,
        });
      } catch (e) {
        reject(this.convert(e, state, what));
        return;
      }
      let timer = null;
      const settle = (err, value) => {
        if (state.done) return false;
        state.done = true;
        clearTimeout(timer);
        if (err) {
          req.destroy();
          reject(this.convert(err, state, what));
        } else {
          resolve(value);
        }
        return true;
      };
      if (this.timeoutMs) {
        timer = setTimeout(() => { state.timedOut = true; settle(new Error('deadline')); }, this.timeoutMs);
      }
      req.on('error', (e) => settle(e));
      req.on('upgrade', (res, socket, head) => {
        state.gotHead = true;
        const got = String(res.headers.upgrade || '').toLowerCase();
        if (got !== opts.protocol) {
          socket.destroy();
          settle(new KilnProtocolError(`${what}: kilnd switched to ${JSON.stringify(got)}, not ${opts.protocol}`, { code: 'protocol_error' }));
        } else if (!settle(null, { socket, head })) {
          socket.destroy();
        }
      });
      req.on('response', (res) => {
        state.gotHead = true;
        const answer = new Response(this, res, req, state, what, () => req.destroy());
        answer.readAll(MAX_ERROR_BYTES).then((buf) => settle(res.statusCode >= 400
          ? errorFromBody(res.statusCode, buf, what)
          : new KilnProtocolError(`${what}: kilnd answered HTTP ${res.statusCode}, not 101 Switching Protocols to ${opts.protocol} (a kilnd older than this SDK?)`, { status: res.statusCode, code: 'protocol_error' })), settle);
      });
      req.end();
    });
  }

  /** The whole answer as parsed JSON (null for 204), under one deadline. */
  async json(method, path, opts = {}) {
    const r = await this.open(method, path, { ...opts, wholeDeadline: true });
    const buf = await r.readAll(MAX_JSON_BYTES);
    if (r.status === 204) return null;
    return parseJson(buf, `${method} ${path}`);
  }

  /** The whole answer as text, under one deadline. */
  async text(method, path, opts = {}) {
    const r = await this.open(method, path, { ...opts, wholeDeadline: true });
    return (await r.readAll(MAX_JSON_BYTES)).toString('utf8');
  }
}

async function pump(req, source) {
  for await (const chunk of source) {
    if (req.destroyed) return;
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (buf.length === 0) continue;
    if (!req.write(buf)) {
      await new Promise((resolve) => {
        const done = () => { req.off('drain', done); req.off('close', done); resolve(); };
        req.on('drain', done);
        req.on('close', done);
      });
    }
  }
  if (!req.destroyed) req.end();
}

function parseJson(buf, what) {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw new KilnProtocolError(`${what}: kilnd's answer is not JSON (${e.message}): ${JSON.stringify(buf.subarray(0, 120).toString('utf8'))}`, { code: 'protocol_error' });
  }
}

export function errorFromBody(status, buf, what) {
  let doc;
  try {
    doc = JSON.parse(buf.toString('utf8'));
  } catch (e) {
    return new KilnProtocolError(`${what}: HTTP ${status} with a body that is not kilnd's JSON error: ${JSON.stringify(buf.subarray(0, 120).toString('utf8'))}`, { status, code: 'protocol_error' });
  }
  const e = doc && typeof doc === 'object' ? doc.error : undefined;
  if (!e || typeof e !== 'object' || typeof e.code !== 'string') {
    return new KilnProtocolError(`${what}: HTTP ${status} without kilnd's {"error":{"code","message"}}`, { status, code: 'protocol_error' });
  }
  return fromKiln(e.code, e.message, status);
}

/** An answer whose head is in: status, headers, and its body to read once. */
export class Response {
  constructor(transport, res, req, state, what, stop) {
    this.transport = transport;
    this.res = res;
    this.req = req;
    this.state = state;
    this.what = what;
    this.status = res.statusCode;
    this.headers = res.headers;
    this.stop = stop;
    this.onFinish = null;
    this.closed = false;
  }

  /** Closes the connection (a stream left early). */
  close() {
    if (this.closed) return;
    this.closed = true;
    this.stop();
    this.res.destroy();
    if (this.onFinish) this.onFinish();
  }

  /** The body's chunks (Buffers); the connection closes at the end or when left early. */
  async *chunks() {
    try {
      for await (const c of this.res) yield c;
      if (!this.res.complete) throw new Error('the answer ended before its end');
    } catch (e) {
      throw this.transport.convert(e, this.state, this.what);
    } finally {
      this.close();
    }
  }

  async readAll(cap) {
    const parts = [];
    let n = 0;
    for await (const c of this.chunks()) {
      n += c.length;
      if (n > cap) throw new KilnProtocolError(`${this.what}: kilnd's answer is over ${cap} bytes`, { code: 'protocol_error' });
      parts.push(c);
    }
    return Buffer.concat(parts);
  }

  /** NDJSON: one parsed object per line. */
  async *lines() {
    const parse = (buf) => {
      const text = buf.toString('utf8').trim();
      if (!text) return undefined;
      let v;
      try {
        v = JSON.parse(text);
      } catch (e) {
        throw new KilnProtocolError(`${this.what}: a stream line is not JSON (${e.message})`, { code: 'protocol_error' });
      }
      if (!v || typeof v !== 'object' || Array.isArray(v) || typeof v.type !== 'string') {
        throw new KilnProtocolError(`${this.what}: a stream line is not an event object with a "type"`, { code: 'protocol_error' });
      }
      return v;
    };
    const lines = new LineBuffer(this.what);
    const it = this.chunks();
    try {
      for await (const chunk of it) {
        for (const line of lines.push(chunk)) {
          const ev = parse(line);
          if (ev !== undefined) yield ev;
        }
      }
      const last = lines.rest();
      if (last) {
        const ev = parse(last);
        if (ev !== undefined) yield ev;
      }
    } finally {
      await it.return();
      this.close();
    }
  }
}

/** Bytes in, newline-ended lines (Buffers) out; a line over 16 MiB is a KilnProtocolError. */
export class LineBuffer {
  constructor(what) {
    this.what = what;
    this.held = [];
    this.heldLen = 0;
  }

  /** The lines chunk completes (without their newlines); the rest is held. */
  push(chunk) {
    const out = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      this.held.push(chunk.subarray(start, nl));
      out.push(this.held.length === 1 ? this.held[0] : Buffer.concat(this.held));
      this.held = [];
      this.heldLen = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.heldLen += chunk.length - start;
      if (this.heldLen > MAX_LINE_BYTES) throw new KilnProtocolError(`${this.what}: a stream line is over ${MAX_LINE_BYTES} bytes`, { code: 'protocol_error' });
      this.held.push(Buffer.from(chunk.subarray(start)));
    }
    return out;
  }

  /** What is held at the end: a last line without its newline, or null. */
  rest() { return this.held.length ? Buffer.concat(this.held) : null; }
}
