// sb.egress: a policy callback on a sandbox's egress decisions (docs/api.md,
// "The egress decision stream"). GET .../egress/decisions switches to kiln-decisions,
// NDJSON both ways: kilnd asks about every TLS connect and HTTP request of
// a sandbox whose firewall has `http` rules; fn(event) answers with
// egress.allow(), egress.deny(), egress.rules() or null/undefined (rules).
// Each question is decided in a promise of its own, so a slow (async)
// callback delays no other; each is answered once, when its callback
// settles (kilnd applies its deadline, onTimeout, meanwhile).
import { KilnError, KilnConnectionError, KilnProtocolError, ClientTimeoutError } from './errors.js';
import { LineBuffer } from './transport.js';

export const DEADLINE_MS_MIN = 10;
export const DEADLINE_MS_MAX = 60000;
const MAX_HEADERS = 16;
const MAX_HEADER_NAME = 64;
const MAX_HEADER_VALUE = 4096;
const MAX_REASON = 200;
/** The reason of the deny sent for a callback that threw or answered what kilnd would refuse. */
export const FAILED_REASON = 'policy callback failed';
const FAILED = Object.freeze({ decision: 'deny', reason: FAILED_REASON });
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
const VALUE = /^[\x20-\x7e\t]*$/;
// Unicode control characters: not in a deny's reason.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/; // eslint-disable-line no-control-regex

function pick(opts, camel, snake) {
  return opts[camel] !== undefined ? opts[camel] : opts[snake];
}

/** Header names in lower case (kilnd takes them so; HTTP's are case-insensitive). */
function lowerNames(ans) {
  const sets = ans.set_headers;
  if (sets && typeof sets === 'object' && !Array.isArray(sets)) {
    ans.set_headers = Object.fromEntries(Object.entries(sets).map(([k, v]) => [k.toLowerCase(), v]));
  }
  if (Array.isArray(ans.remove_headers)) {
    ans.remove_headers = ans.remove_headers.map((n) => (typeof n === 'string' ? n.toLowerCase() : n));
  }
  return ans;
}

/** The answer a callback's value means, in kilnd's spelling (setHeaders -> set_headers). */
function normalise(result) {
  const out = {};
  for (const [k, v] of Object.entries(result)) {
    if (v === undefined) continue;
    out[{ setHeaders: 'set_headers', removeHeaders: 'remove_headers' }[k] || k] = v;
  }
  return lowerNames(out);
}

function checkName(name, where) {
  if (typeof name !== 'string') throw new TypeError(`${where}: a header name is a string, not ${typeof name}`);
  if (name.length > MAX_HEADER_NAME || !TOKEN.test(name)) {
    throw new RangeError(`${where}: header name ${JSON.stringify(name.slice(0, 80))} is not an HTTP token of up to ${MAX_HEADER_NAME} bytes (letters, digits and !#$%&'*+-.^_\`|~)`);
  }
}

/** Throws what kilnd would refuse in an answer to a question of this kind. */
export function checkAnswer(ans, kind) {
  const known = ['decision', 'status', 'reason', 'set_headers', 'remove_headers'];
  const extra = Object.keys(ans).filter((k) => !known.includes(k));
  if (extra.length) throw new TypeError(`the answer has unknown fields ${extra.join(', ')}: it takes ${known.join(', ')}`);
  const { decision } = ans;
  if (!['allow', 'deny', 'rules'].includes(decision)) throw new RangeError(`the answer's decision ${JSON.stringify(decision)}: give "allow", "deny" or "rules"`);
  if (decision !== 'deny' && (ans.status !== undefined || ans.reason !== undefined)) throw new TypeError('status and reason go with decision "deny" only');
  if (decision === 'deny') {
    const status = ans.status === undefined ? 403 : ans.status;
    if (!Number.isInteger(status) || status < 400 || status > 599) throw new RangeError(`a deny's status ${JSON.stringify(status)}: give an HTTP status 400..599`);
    if (ans.reason !== undefined) {
      if (typeof ans.reason !== 'string') throw new TypeError(`a deny's reason is a string, not ${typeof ans.reason}`);
      if (Buffer.byteLength(ans.reason) > MAX_REASON) throw new RangeError(`a deny's reason is over ${MAX_REASON} bytes`);
      if (CONTROL.test(ans.reason)) throw new RangeError("a deny's reason holds a control character: printable text only");
    }
  }
  const sets = ans.set_headers;
  const removes = ans.remove_headers;
  if ((sets !== undefined || removes !== undefined) && (decision !== 'allow' || kind !== 'request')) {
    throw new TypeError(`set_headers and remove_headers go with decision "allow" on a request only (this is a "${decision}" on a ${kind})`);
  }
  if (sets !== undefined) {
    if (!sets || typeof sets !== 'object' || Array.isArray(sets)) throw new TypeError('set_headers is an object of header name to value');
    const entries = Object.entries(sets);
    if (entries.length > MAX_HEADERS) throw new RangeError(`set_headers has ${entries.length} headers: at most ${MAX_HEADERS}`);
    for (const [name, value] of entries) {
      checkName(name, 'set_headers');
      if (typeof value !== 'string') throw new TypeError(`set_headers[${JSON.stringify(name)}] is a string, not ${typeof value}`);
      if (value.length > MAX_HEADER_VALUE || !VALUE.test(value)) {
        throw new RangeError(`set_headers[${JSON.stringify(name)}]: a value is up to ${MAX_HEADER_VALUE} bytes of visible ASCII, space and tab`);
      }
    }
  }
  if (removes !== undefined) {
    if (!Array.isArray(removes)) throw new TypeError('remove_headers is an array of header names');
    if (removes.length > MAX_HEADERS) throw new RangeError(`remove_headers has ${removes.length} names: at most ${MAX_HEADERS}`);
    for (const name of removes) checkName(name, 'remove_headers');
  }
}

/**
 * Let the flow or request through. On a request only: setHeaders (each
 * replaces every field of its name) and removeHeaders, at most 16 each;
 * names are HTTP tokens of up to 64 bytes (sent in lower case), values up
 * to 4096 bytes of visible ASCII, space and tab.
 */
export function allow(opts = {}) {
  const out = { decision: 'allow' };
  const sets = pick(opts, 'setHeaders', 'set_headers');
  const removes = pick(opts, 'removeHeaders', 'remove_headers');
  if (sets !== undefined) out.set_headers = sets;
  if (removes !== undefined) out.remove_headers = removes;
  lowerNames(out);
  checkAnswer(out, 'request');
  return out;
}

/** Refuse it: the guest gets HTTP status (400..599, default 403) with a body naming reason (<= 200 bytes, printable). */
export function deny(opts = {}) {
  const out = { decision: 'deny', status: opts.status === undefined ? 403 : opts.status };
  if (opts.reason !== undefined) out.reason = opts.reason;
  checkAnswer(out, 'request');
  return out;
}

/** What the sandbox's static rules decide (as if no callback were attached); null/undefined means the same. */
export function rules() { return { decision: 'rules' }; }

/** The answer helpers: kiln's `egress.allow()`, `egress.deny()`, `egress.rules()`. */
export const egress = Object.freeze({ allow, deny, rules });

/** The answer for a callback's value (null/undefined: rules); throws what is wrong with it. */
export function answerFor(kind, result) {
  if (result === null || result === undefined) return rules();
  if (typeof result !== 'object' || Array.isArray(result)) {
    throw new TypeError(`the policy callback returned ${Array.isArray(result) ? 'an array' : `a ${typeof result}`}: return egress.allow(), deny(), rules(), a {decision} object or nothing`);
  }
  const out = normalise(result);
  checkAnswer(out, kind);
  return out;
}

/** The stream's query from policy()'s options; throws before anything is sent. */
export function checkParams(fn, opts) {
  if (typeof fn !== 'function') throw new TypeError(`egress.policy: fn is a function taking an event, not ${fn === null ? 'null' : typeof fn}`);
  if (!opts || typeof opts !== 'object') throw new TypeError('egress.policy: options are an object ({deadlineMs, onTimeout, onError})');
  const unknown = Object.keys(opts).filter((k) => !['deadlineMs', 'deadline_ms', 'onTimeout', 'on_timeout', 'onError'].includes(k));
  if (unknown.length) throw new TypeError(`egress.policy: unknown option ${unknown.join(', ')} (it takes deadlineMs, onTimeout, onError)`);
  const deadlineMs = pick(opts, 'deadlineMs', 'deadline_ms') ?? 2000;
  const onTimeout = pick(opts, 'onTimeout', 'on_timeout') ?? 'deny';
  if (!Number.isInteger(deadlineMs)) throw new TypeError(`egress.policy: deadlineMs is an integer of milliseconds (${DEADLINE_MS_MIN}..${DEADLINE_MS_MAX}), not ${JSON.stringify(deadlineMs)}`);
  if (deadlineMs < DEADLINE_MS_MIN || deadlineMs > DEADLINE_MS_MAX) {
    throw new RangeError(`egress.policy: deadlineMs ${deadlineMs} is out of range: give ${DEADLINE_MS_MIN}..${DEADLINE_MS_MAX} (how long each question waits for the callback)`);
  }
  if (onTimeout !== 'deny' && onTimeout !== 'rules') {
    throw new RangeError(`egress.policy: onTimeout ${JSON.stringify(onTimeout)}: give "deny" (fail closed) or "rules" (the static rules decide)`);
  }
  if (opts.onError !== undefined && typeof opts.onError !== 'function') throw new TypeError('egress.policy: onError is a function (err, event)');
  return { deadline_ms: deadlineMs, on_timeout: onTimeout };
}

function parseLine(buf, what) {
  let v;
  try {
    v = JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw new KilnProtocolError(`${what}: a decision stream line is not JSON (${e.message})`, { code: 'protocol_error' });
  }
  if (!v || typeof v !== 'object' || Array.isArray(v) || typeof v.kind !== 'string') {
    throw new KilnProtocolError(`${what}: a decision stream line is not an object with a "kind"`, { code: 'protocol_error' });
  }
  if (['connect', 'request', 'error'].includes(v.kind) && !Number.isInteger(v.id)) {
    throw new KilnProtocolError(`${what}: a ${v.kind} line without an integer id`, { code: 'protocol_error' });
  }
  return v;
}

function defaultOnError(err, event) {
  const q = event && Number.isInteger(event.id) ? ` (question ${event.id})` : '';
  console.error(`kiln egress policy${q}: ${err.message}`);
}

/**
 * A policy callback attached to a sandbox's egress decisions. close()
 * detaches (kilnd's static rules decide alone again); wait() resolves
 * with the end line's reason (null after close(); rejects when the
 * stream was cut without one).
 */
export class EgressPolicy {
  constructor(socket, fn, { requestsOnly, onError, what, socketPath }) {
    this.socket = socket;
    this.fn = fn;
    this.requestsOnly = requestsOnly;
    this.onError = onError || defaultOnError;
    this.what = what;
    this.socketPath = socketPath;
    this.lines = new LineBuffer(what);
    this.fellBack = new Set();
    this.closing = false;
    /** kilnd's attached line ({deadline_ms, on_timeout}). */
    this.attached = null;
    /** The end line's reason; null until then, or after close(). */
    this.reason = null;
    /** kilnd's error lines: answers it refused. */
    this.errors = [];
    /** True once the stream ended (an end line, close(), a failure). */
    this.done = false;
    this.outcome = null;
    this.ended = new Promise((resolve) => { this.settle = resolve; });
  }

  /** Reads the attached line under timeoutMs (0: none); resolves with the handle, the rest running in the background. */
  static start(socket, head, fn, opts) {
    const self = new EgressPolicy(socket, fn, opts);
    return new Promise((resolve, reject) => {
      let timer = null;
      self.onAttached = (err) => {
        clearTimeout(timer);
        self.onAttached = null;
        if (err) reject(err);
        else resolve(self);
      };
      if (opts.timeoutMs) {
        timer = setTimeout(() => self.fail(new ClientTimeoutError(`${self.what}: no attached line from kilnd within ${opts.timeoutMs} ms`, { code: 'client_timeout' })), opts.timeoutMs);
      }
      socket.on('data', (chunk) => self.feed(chunk));
      socket.on('error', (e) => self.fail(new KilnConnectionError(`${self.what}: the decision stream failed (${e.message})`, { code: 'connection_error' })));
      socket.on('close', () => {
        if (self.closing) self.finish(null, null);
        else self.fail(new KilnConnectionError(`${self.what}: kilnd at ${self.socketPath} ended the decision stream without its end line (kilnd stopped?)`, { code: 'connection_error' }));
      });
      if (head && head.length) self.feed(head);
    });
  }

  feed(chunk) {
    if (this.done) return;
    try {
      for (const line of this.lines.push(chunk)) {
        if (!line.toString('utf8').trim()) continue;
        this.route(parseLine(line, this.what));
        if (this.done) return;
      }
    } catch (e) {
      this.fail(e);
    }
  }

  route(ev) {
    if (this.attached === null) {
      if (ev.kind !== 'attached') throw new KilnProtocolError(`${this.what}: kilnd's decision stream began with "${ev.kind}", not attached`, { code: 'protocol_error' });
      this.attached = ev;
      if (this.onAttached) this.onAttached(null);
      return;
    }
    if (ev.kind === 'end') {
      this.reason = typeof ev.reason === 'string' ? ev.reason : 'unknown';
      this.finish(this.reason, null);
    } else if (ev.kind === 'connect' && this.requestsOnly) {
      this.send(ev.id, rules());
    } else if (ev.kind === 'connect' || ev.kind === 'request') {
      this.ask(ev);
    } else if (ev.kind === 'error') {
      this.errors.push(ev);
      this.report(new KilnError(`kilnd refused the answer: ${ev.message}`, { code: 'answer_refused' }), ev);
      // The question stays open until its deadline: answer it again, with
      // a deny kilnd always takes (once: no loop).
      if (!this.fellBack.has(ev.id)) {
        this.fellBack.add(ev.id);
        this.send(ev.id, FAILED);
      }
    } // else: a kind newer than this SDK
  }

  ask(ev) {
    Promise.resolve()
      .then(() => this.fn(ev))
      .then((result) => answerFor(ev.kind, result))
      .catch((err) => {
        this.report(err instanceof Error ? err : new Error(String(err)), ev);
        return FAILED;
      })
      .then((ans) => this.send(ev.id, ans));
  }

  report(err, ev) {
    try {
      this.onError(err, ev);
    } catch {
      // onError's own failure has nowhere to go
    }
  }

  send(id, ans) {
    if (this.done || this.socket.destroyed) return; // the stream ended: nobody takes the answer
    this.socket.write(`${JSON.stringify({ id, ...ans })}\n`);
  }

  fail(err) {
    if (this.done) return;
    const before = this.onAttached;
    this.finish(null, err);
    if (!before) this.report(err, null);
  }

  finish(reason, err) {
    if (this.done) return;
    this.done = true;
    this.outcome = { reason, err };
    this.socket.destroy();
    if (this.onAttached) this.onAttached(err || new KilnConnectionError(`${this.what}: the decision stream closed before its attached line`, { code: 'connection_error' }));
    this.settle();
  }

  /** Resolves when the stream ends: the end line's reason (egress_proxy_stopped, sandbox_stopped, kilnd_shutdown), null after close(). */
  async wait() {
    await this.ended;
    if (this.outcome.err) throw this.outcome.err;
    return this.outcome.reason;
  }

  /** Detach: close the connection (answers of callbacks still running are dropped). */
  async close() {
    this.closing = true;
    this.finish(this.reason, null);
    await this.ended;
  }
}

/** sb.egress: policy(fn) and onRequest(fn). */
export class Egress {
  constructor(sb) { this.sb = sb; }

  /**
   * GET .../egress/decisions (Upgrade: kiln-decisions): fn(event) decides
   * every connect and request event. opts: deadlineMs (10..60000, default
   * 2000: how long kilnd waits for each answer), onTimeout ("deny", the
   * default, or "rules"), onError(err, event) (a callback that threw or
   * answered what kilnd would refuse, which is then denied; kilnd's error
   * lines; default: console.error). Bad options throw before anything is
   * sent; resolves with an EgressPolicy once attached.
   */
  policy(fn, opts = {}) { return this.attach(fn, opts, false); }

  /** policy() for request events only: TLS connects are answered "rules" without calling fn. */
  onRequest(fn, opts = {}) { return this.attach(fn, opts, true); }

  attach(fn, opts, requestsOnly) {
    const query = checkParams(fn, opts);
    const t = this.sb.t;
    return t.upgrade('GET', `${this.sb.path}/egress/decisions`, { query, protocol: 'kiln-decisions' }).then(({ socket, head }) => EgressPolicy.start(socket, head, fn, {
      requestsOnly, onError: opts.onError, what: `egress decisions of ${this.sb.id}`, socketPath: t.socket, timeoutMs: this.sb.kiln.timeoutMs,
    }));
  }
}
