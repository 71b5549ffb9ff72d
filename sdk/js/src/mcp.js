// kiln's MCP server: the Model Context Protocol over stdio (newline-
// delimited JSON-RPC 2.0), its tools going through the SDK. No dependency:
// the protocol's few messages are written out here.
import { randomUUID } from 'node:crypto';
import { Kiln } from './client.js';
import { KilnError } from './errors.js';
import { imageList, templateBuild, templateDelete, templateList } from './mcp_templates.js';

export const PROTOCOL_VERSIONS = ['2025-06-18', '2025-03-26', '2024-11-05'];
export const MAX_LINE_BYTES = 4 * 1024 * 1024;
const MAX_TEXT = 256 * 1024; // what a tool returns of one output or file
const VERSION = '0.1.0';

// JSON-RPC 2.0 error codes.
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

const MAX_PROGRESS_TOKEN = 256;
// exec and run_code put this variable, a fresh token, in the process's
// environment: a cancelled call's processes are found by it and killed.
export const CALL_ENV = 'KILN_MCP_CALL';
const SANDBOX_ID = { type: 'string', description: 'the sandbox id (from sandbox_create or sandbox_list)', minLength: 1, maxLength: 64 };
const envSchema = (keys) => ({ type: 'object', additionalProperties: { type: 'string', maxLength: 32768 }, maxProperties: keys, description: 'environment variables' });
// kilnd's rule for image and template names.
const nameSchema = (what) => ({ type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$', description: what });
const PATH = { type: 'string', minLength: 1, maxLength: 4095, description: 'absolute path' };
const CPUS = { type: 'integer', minimum: 1, maximum: 64 };
const MEMORY_MIB = { type: 'integer', minimum: 32, maximum: 1048576 };
const TIMEOUT_MS = { type: 'integer', minimum: 0, maximum: 604800000 };

export const TOOLS = [
  {
    name: 'sandbox_create',
    description: 'Create and boot a kiln sandbox (a microVM) from an image, or start one from a template (template_build, template_list): '
      + 'a fork of its ready snapshot, with what the build installed and started. Returns its id, used by the other tools.',
    inputSchema: {
      type: 'object',
      properties: {
        image: nameSchema('image name (image_list); default $KILN_MCP_IMAGE or "minimal"; not with template'),
        template: nameSchema('template name (template_list): start from its snapshot instead of an image; not with image or network'),
        cpus: CPUS,
        memory_mib: MEMORY_MIB,
        network: { type: 'string', enum: ['none', 'passt'], description: '"passt" for outbound network behind the firewall (a template fixes its own)' },
        env: envSchema(256),
        timeout_s: { type: 'integer', minimum: 0, maximum: 604800, description: 'stop the sandbox after this many seconds (0: never)' },
      },
      additionalProperties: false,
    },
  },
  {
    name: 'sandbox_delete',
    description: 'Delete a sandbox and everything in it.',
    inputSchema: { type: 'object', properties: { sandbox_id: SANDBOX_ID }, required: ['sandbox_id'], additionalProperties: false },
  },
  {
    name: 'sandbox_list',
    description: 'List the sandboxes (id, state, image, template).',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'exec',
    description: 'Run a command in a sandbox and return its exit code, stdout and stderr. A string runs through sh -c; an array is the argv.',
    inputSchema: {
      type: 'object',
      properties: {
        sandbox_id: SANDBOX_ID,
        command: { type: ['string', 'array'], oneOf: [{ type: 'string', minLength: 1, maxLength: 1048576 }, { type: 'array', items: { type: 'string', maxLength: 1048576 }, minItems: 1, maxItems: 1024 }] },
        cwd: PATH,
        env: envSchema(1023), // kilnd takes 1024: one is KILN_MCP_CALL
        stdin: { type: 'string', maxLength: 1048576 },
        user: { type: 'string', enum: ['user', 'root'] },
        timeout_ms: { ...TIMEOUT_MS, description: 'kill the command after this long (default 60000)' },
      },
      required: ['sandbox_id', 'command'],
      additionalProperties: false,
    },
  },
  {
    name: 'run_code',
    description: 'Run a code snippet in a sandbox (python, javascript, typescript or bash). The code may call result.set(value); returns output, the result and any exception.',
    inputSchema: {
      type: 'object',
      properties: {
        sandbox_id: SANDBOX_ID,
        code: { type: 'string', maxLength: 1048576 },
        language: { type: 'string', enum: ['python', 'javascript', 'typescript', 'bash'] },
        timeout_ms: TIMEOUT_MS,
      },
      required: ['sandbox_id', 'code'],
      additionalProperties: false,
    },
  },
  {
    name: 'read_file',
    description: 'Read a file of a sandbox (UTF-8 text, or base64 when it is not text).',
    inputSchema: {
      type: 'object',
      properties: { sandbox_id: SANDBOX_ID, path: PATH },
      required: ['sandbox_id', 'path'],
      additionalProperties: false,
    },
  },
  {
    name: 'write_file',
    description: 'Write a file in a sandbox (created or truncated; parent directories made when parents is true).',
    inputSchema: {
      type: 'object',
      properties: {
        sandbox_id: SANDBOX_ID,
        path: PATH,
        content: { type: 'string', maxLength: MAX_LINE_BYTES },
        encoding: { type: 'string', enum: ['utf-8', 'base64'] },
        parents: { type: 'boolean' },
      },
      required: ['sandbox_id', 'path', 'content'],
      additionalProperties: false,
    },
  },
  {
    name: 'list_files',
    description: 'List a directory of a sandbox (one line per entry: kind, size, path).',
    inputSchema: {
      type: 'object',
      properties: { sandbox_id: SANDBOX_ID, path: PATH, depth: { type: 'integer', minimum: 1, maximum: 32 } },
      required: ['sandbox_id', 'path'],
      additionalProperties: false,
    },
  },
  {
    name: 'template_build',
    description: 'Build a template: a root disk and a ready snapshot made by running a build file (Kilnfile, else Dockerfile: '
      + 'FROM, RUN, COPY, ENV, WORKDIR, USER, READY) from context_dir, a directory on the machine kiln-mcp runs on. '
      + 'Sandboxes then start from it with sandbox_create {"template": name}. Returns the template and the last 64 lines of the build log, '
      + 'or the failed step (its number and line) with the error and the log. Unchanged steps are reused from earlier builds. '
      + 'The build sandbox\'s cpus, memory_mib and disk_mib apply when FROM names an image.',
    inputSchema: {
      type: 'object',
      properties: {
        name: nameSchema('the new template\'s name (an existing one unused by sandboxes is replaced)'),
        context_dir: { type: 'string', minLength: 1, maxLength: 4096, description: 'the build context: a directory on kiln-mcp\'s machine, packed and sent (symlinks out of it are left out; at most 16384 entries). A relative path is resolved against kiln-mcp\'s working directory' },
        file: { type: 'string', minLength: 1, maxLength: 4096, description: 'the build file\'s path inside context_dir (default Kilnfile, else Dockerfile)' },
        cpus: CPUS,
        memory_mib: MEMORY_MIB,
        disk_mib: { type: 'integer', minimum: 1, maximum: 1048576 },
      },
      required: ['name', 'context_dir'],
      additionalProperties: false,
    },
  },
  {
    name: 'template_list',
    description: 'List the templates: name, what it was built FROM, ready snapshot, size, created, cached steps, how many sandboxes use it.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'template_delete',
    description: 'Delete a template and its cached build steps. Refused while sandboxes created from it exist (delete them first) or while it is being built or used by a create.',
    inputSchema: { type: 'object', properties: { name: nameSchema('the template\'s name') }, required: ['name'], additionalProperties: false },
  },
  {
    name: 'image_list',
    description: 'List the images sandboxes and templates can start FROM: name, size, source (option, state_dir, oci), digest, created.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
];

class ParamsError extends Error {}

const patterns = new Map();
function matches(pattern, v) {
  if (!patterns.has(pattern)) patterns.set(pattern, new RegExp(pattern, 'u'));
  return patterns.get(pattern).test(v);
}

const TYPE_OF = { string: (v) => typeof v === 'string', array: Array.isArray };

function typeOk(schema, v) {
  if (Array.isArray(schema.type) && !schema.type.some((t) => TYPE_OF[t](v))) return false;
  if (schema.oneOf) return schema.oneOf.filter((s) => typeOk(s, v)).length === 1;
  switch (schema.type) {
    case 'string': return typeof v === 'string' && (schema.minLength === undefined || v.length >= schema.minLength)
      && (schema.maxLength === undefined || v.length <= schema.maxLength) && (!schema.enum || schema.enum.includes(v))
      && (schema.pattern === undefined || matches(schema.pattern, v));
    case 'integer': return Number.isSafeInteger(v) && (schema.minimum === undefined || v >= schema.minimum) && (schema.maximum === undefined || v <= schema.maximum);
    case 'boolean': return typeof v === 'boolean';
    case 'array': return Array.isArray(v) && (schema.minItems === undefined || v.length >= schema.minItems)
      && (schema.maxItems === undefined || v.length <= schema.maxItems) && v.every((x) => typeOk(schema.items, x));
    case 'object':
      if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
      if (schema.maxProperties !== undefined && Object.keys(v).length > schema.maxProperties) return false;
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        return Object.values(v).every((x) => typeOk(schema.additionalProperties, x));
      }
      return true;
    default: return true;
  }
}

/** Checks a tool's arguments against its inputSchema; throws ParamsError naming the first problem. */
export function checkArgs(tool, args) {
  const s = tool.inputSchema;
  if (args === undefined) args = {};
  if (!args || typeof args !== 'object' || Array.isArray(args)) throw new ParamsError(`${tool.name}: arguments must be an object`);
  for (const r of s.required || []) if (args[r] === undefined) throw new ParamsError(`${tool.name}: "${r}" is required`);
  for (const [k, v] of Object.entries(args)) {
    // Own properties only: "constructor", "__proto__" and the like are unknown arguments.
    const ps = Object.hasOwn(s.properties, k) ? s.properties[k] : undefined;
    if (!ps) throw new ParamsError(`${tool.name}: unknown argument "${k}" (known: ${Object.keys(s.properties).join(', ') || 'none'})`);
    if (!typeOk(ps, v)) throw new ParamsError(`${tool.name}: "${k}" does not match its schema ${JSON.stringify(ps)}`);
  }
  return args;
}

/** What is wrong with s as standard base64 (ASCII whitespace allowed between), or null. */
export function base64Problem(s) {
  let n = 0; // base64 characters before the padding
  let pad = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') continue;
    if (c === '=') { pad += 1; continue; }
    if (!/[A-Za-z0-9+/]/.test(c)) return `${JSON.stringify(c)} at character ${i}`;
    if (pad) return `'=' before the end (character ${i})`;
    n += 1;
  }
  if (n % 4 === 1) return `${n} base64 characters: one too many or too few (a whole number of bytes is 0, 2 or 3 characters past a multiple of 4)`;
  if (pad && (pad > 2 || (n + pad) % 4 !== 0)) return `${pad} '=' after ${n} characters: padding fills up to a multiple of 4`;
  return null;
}

function cap(text) {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}\n[... ${text.length - MAX_TEXT} more characters cut]` : text;
}

function execText(r) {
  const parts = [`exit_code: ${r.exitCode === null ? `null (signal ${r.signal})` : r.exitCode}${r.timedOut ? ' (timed out)' : ''}`];
  parts.push(`stdout:\n${cap(r.stdout)}`);
  if (r.stderr) parts.push(`stderr:\n${cap(r.stderr)}`);
  return parts.join('\n');
}

// Kills, as root, every process whose environment holds CALL_ENV=$1, and
// its process group (the exec's own: the agent starts each in a session).
const KILL_MARKED = `for d in /proc/[0-9]*; do
  tr '\\0' '\\n' 2>/dev/null <"$d/environ" | grep -qxF "${CALL_ENV}=$1" || continue
  kill -9 -"\${d#/proc/}" 2>/dev/null; kill -9 "\${d#/proc/}" 2>/dev/null
done`;

/**
 * run: an exec or run in sandbox s whose environment holds CALL_ENV=token.
 * Once signal aborts (the call was cancelled), its processes are killed
 * through another exec, again until run has ended: kilnd goes on with an
 * exec whose client went away, and a cancel may come before the process
 * started. Resolves with run's value.
 */
async function stoppable(s, token, run, signal, log) {
  let ended = false;
  const end = run.then(() => {}, () => {}).finally(() => { ended = true; });
  const kill = async () => {
    for (let wait = 50; !ended; wait = Math.min(wait * 2, 1000)) {
      try {
        await s.exec(['sh', '-c', KILL_MARKED, 'sh', token], { user: 'root', timeoutMs: 10000 });
      } catch (e) {
        log(`kiln-mcp: cannot stop the cancelled command in ${s.id} (it runs until its timeout_ms): ${e && e.message}`);
        return;
      }
      await Promise.race([end, new Promise((r) => { setTimeout(r, wait); })]);
    }
  };
  const onAbort = () => { kill(); };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await run;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/**
 * Runs one tool; resolves with its text. ctx: the server's environment
 * (env), working directory (cwd), progress(n, message) or null, signal
 * (aborted when the call is cancelled) and log.
 */
async function callTool(kiln, name, a, ctx) {
  const sb = (id) => kiln.sandboxes.get(id);
  switch (name) {
    case 'sandbox_create': {
      if (a.template !== undefined && (a.image !== undefined || a.network !== undefined)) {
        // kilnd would answer unknown_field: say here what to do instead.
        throw new ParamsError(`sandbox_create: give "template" or "${a.image !== undefined ? 'image' : 'network'}", not both: `
          + 'a template fixes its image and network (template_list shows what each was built FROM)');
      }
      const spec = a.template !== undefined ? a : { ...a, image: a.image || ctx.env.KILN_MCP_IMAGE || 'minimal' };
      const s = await kiln.sandboxes.create(spec);
      if (ctx.signal && ctx.signal.aborted) {
        // Cancelled while it booted: no answer goes out, so nobody would
        // learn its id. kilnd finishes a create whose client left; it goes.
        await s.delete().catch((e) => ctx.log(`kiln-mcp: cannot delete sandbox ${s.id}, created for a cancelled call (delete it by hand): ${e && e.message}`));
        return { text: `sandbox ${s.id} deleted: the call was cancelled` };
      }
      const from = s.info.template ? `template ${s.info.template}, ` : '';
      return { text: `created sandbox ${s.id} (${from}image ${s.info.image}, state ${s.info.state})`, data: { sandbox_id: s.id, state: s.info.state } };
    }
    case 'sandbox_delete':
      await (await sb(a.sandbox_id)).delete();
      return { text: `deleted sandbox ${a.sandbox_id}` };
    case 'sandbox_list': {
      const l = await kiln.sandboxes.list();
      return { text: l.length ? l.map((s) => `${s.id} ${s.info.state} ${s.info.image}${s.info.template ? ` template ${s.info.template}` : ''}`).join('\n') : 'no sandboxes' };
    }
    case 'exec': {
      const s = await sb(a.sandbox_id);
      const token = randomUUID();
      const env = { ...a.env, [CALL_ENV]: token };
      const r = await stoppable(s, token, s.exec(a.command, { cwd: a.cwd, env, stdin: a.stdin, user: a.user, timeoutMs: a.timeout_ms === undefined ? 60000 : a.timeout_ms }), ctx.signal, ctx.log);
      // The output is in the text only: structuredContent is mirrored in content.
      const bytes = (n, raw) => (Number.isSafeInteger(n) ? n : raw.length);
      return {
        text: execText(r),
        data: { exit_code: r.exitCode, signal: r.signal === undefined ? null : r.signal, timed_out: Boolean(r.timedOut),
          stdout_bytes: bytes(r.stdoutBytes, r.stdoutRaw), stderr_bytes: bytes(r.stderrBytes, r.stderrRaw) },
      };
    }
    case 'run_code': {
      const s = await sb(a.sandbox_id);
      const token = randomUUID();
      const r = await stoppable(s, token, s.runCode(a.code, { language: a.language || 'python', env: { [CALL_ENV]: token }, timeoutMs: a.timeout_ms === undefined ? 60000 : a.timeout_ms }), ctx.signal, ctx.log);
      let text = execText(r);
      text += `\nresult: ${JSON.stringify(r.result)}`;
      if (r.error) text += `\nerror: ${r.error.type}: ${r.error.message}${r.error.traceback ? `\n${cap(r.error.traceback)}` : ''}`;
      return { text };
    }
    case 'read_file': {
      const s = await sb(a.sandbox_id);
      const st = await s.files.stat(a.path);
      if (st.kind !== 'file') return { text: `${a.path} is a ${st.kind}, not a file`, isError: true };
      const len = Math.min(st.size, MAX_TEXT);
      const buf = await s.files.read(a.path, { length: len });
      const text = buf.toString('utf8');
      const more = st.size > len ? `\n[... ${st.size - len} more bytes not read]` : '';
      if (Buffer.from(text, 'utf8').equals(buf)) return { text: text + more };
      return { text: `(not UTF-8; base64)\n${buf.toString('base64')}${more}` };
    }
    case 'write_file': {
      const s = await sb(a.sandbox_id);
      if (a.encoding === 'base64') {
        const bad = base64Problem(a.content);
        if (bad) return { text: `write_file: content is not valid base64: ${bad}; nothing was written. Send standard base64 (A-Z a-z 0-9 + /, '=' padding), or encoding "utf-8" for text`, isError: true };
      }
      const data = a.encoding === 'base64' ? Buffer.from(a.content, 'base64') : Buffer.from(a.content, 'utf8');
      const r = await s.files.write(a.path, data, { parents: a.parents });
      return { text: `wrote ${r.bytes} bytes to ${r.path}` };
    }
    case 'list_files': {
      const s = await sb(a.sandbox_id);
      const l = await s.files.list(a.path, { depth: a.depth, limit: 2000 });
      const lines = l.entries.map((e) => `${e.kind}\t${e.size}\t${e.path}`);
      if (l.truncated) lines.push('[listing truncated at 2000 entries]');
      return { text: lines.length ? lines.join('\n') : `${a.path} is empty` };
    }
    case 'template_build': return templateBuild(kiln, a, ctx);
    case 'template_list': return templateList(kiln);
    case 'template_delete': return templateDelete(kiln, a.name);
    case 'image_list': return imageList(kiln);
    default:
      throw new ParamsError(`unknown tool "${name}"`);
  }
}

/** A request's _meta.progressToken (a string or an integer), or undefined; throws ParamsError. */
function progressToken(params) {
  const meta = params._meta;
  if (meta === undefined) return undefined;
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) throw new ParamsError('_meta must be an object');
  const t = meta.progressToken;
  if (t === undefined || Number.isSafeInteger(t) || (typeof t === 'string' && t.length <= MAX_PROGRESS_TOKEN)) return t;
  throw new ParamsError(`_meta.progressToken must be a string (at most ${MAX_PROGRESS_TOKEN} characters) or an integer`);
}

/**
 * Serves MCP on input (a Readable of bytes) and output (a Writable).
 * Resolves when input ends and every answer is written.
 */
export function serve({ input, output, kiln = new Kiln(), env = process.env, cwd = process.cwd(), log = () => {} }) {
  const pending = new Set();
  // tools/call requests in progress, by idKey: {controller}; a cancelled
  // one is taken out, and nothing more is sent for it.
  const calls = new Map();
  const idKey = (id) => `${typeof id}:${id}`;
  const send = (msg) => { output.write(`${JSON.stringify(msg)}\n`); };
  const reply = (id, result) => send({ jsonrpc: '2.0', id, result });
  const fail = (id, code, message) => send({ jsonrpc: '2.0', id, error: { code, message } });

  // notifications/cancelled: the request gets no answer, and its tool stops
  // (exec and run_code kill their processes). Unknown or finished requests,
  // and malformed notifications, are ignored, as MCP allows.
  const cancel = (params) => {
    const rid = params.requestId;
    if (!(typeof rid === 'string' || Number.isSafeInteger(rid))) return;
    const c = calls.get(idKey(rid));
    if (!c) return;
    calls.delete(idKey(rid));
    c.controller.abort();
  };

  const handle = async (msg) => {
    if (!msg || typeof msg !== 'object' || Array.isArray(msg)) {
      fail(null, INVALID_REQUEST, Array.isArray(msg) ? 'batches are not supported: send one JSON-RPC message per line' : 'a JSON-RPC message must be an object');
      return;
    }
    // MCP: a request's id is a string or an integer, never null; a
    // notification has none. An id kiln-mcp could not echo exactly (null,
    // a fraction, beyond 2^53) makes the message invalid: answered with id null.
    const hasId = Object.prototype.hasOwnProperty.call(msg, 'id');
    const idOk = typeof msg.id === 'string' || Number.isSafeInteger(msg.id);
    const id = hasId && idOk ? msg.id : null;
    if (typeof msg.method !== 'string' && msg.jsonrpc === '2.0' && hasId && (msg.result !== undefined || msg.error !== undefined)) {
      return; // a response from the client (kiln-mcp sends no requests): nothing to do
    }
    if (hasId && !idOk) {
      fail(null, INVALID_REQUEST, `id ${JSON.stringify(msg.id).slice(0, 40)} is not a string or an integer (MCP: a request's id is one, never null; a notification has no id)`);
      return;
    }
    if (msg.jsonrpc !== '2.0') { fail(id, INVALID_REQUEST, 'jsonrpc must be "2.0"'); return; }
    if (typeof msg.method !== 'string') { fail(id, INVALID_REQUEST, 'method must be a string'); return; }
    const params = msg.params === undefined ? {} : msg.params;
    if (!params || typeof params !== 'object' || Array.isArray(params)) {
      if (hasId) fail(id, INVALID_PARAMS, 'params must be an object');
      return;
    }
    if (!hasId) { // notifications: never answered
      if (msg.method === 'notifications/cancelled') cancel(params);
      return;
    }
    switch (msg.method) {
      case 'initialize': {
        const asked = params.protocolVersion;
        if (asked !== undefined && typeof asked !== 'string') { fail(id, INVALID_PARAMS, 'protocolVersion must be a string'); return; }
        reply(id, {
          protocolVersion: PROTOCOL_VERSIONS.includes(asked) ? asked : PROTOCOL_VERSIONS[0],
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'kiln-mcp', title: 'kiln sandboxes', version: VERSION },
          instructions: 'Create a sandbox with sandbox_create, run commands with exec or run_code, move files with read_file/write_file/list_files, and delete it with sandbox_delete when done. '
            + 'To start sandboxes with software already installed (and services running), build a template once with template_build and create them with sandbox_create {"template": NAME}; template_list and image_list show what exists.',
        });
        return;
      }
      case 'ping':
        reply(id, {});
        return;
      case 'tools/list':
        reply(id, { tools: TOOLS });
        return;
      case 'tools/call': {
        const tool = TOOLS.find((t) => t.name === params.name);
        if (typeof params.name !== 'string' || !tool) {
          fail(id, INVALID_PARAMS, `unknown tool ${JSON.stringify(params.name)}: tools/list names them`);
          return;
        }
        let args;
        let progress = null;
        const key = idKey(id);
        const call = { controller: new AbortController() };
        const live = () => calls.get(key) === call;
        try {
          args = checkArgs(tool, params.arguments);
          const token = progressToken(params);
          if (token !== undefined) {
            progress = (n, message) => {
              if (live()) send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: n, message } });
            };
          }
        } catch (e) {
          fail(id, INVALID_PARAMS, e.message);
          return;
        }
        calls.set(key, call);
        let result;
        try {
          const r = await callTool(kiln, tool.name, args, { env, cwd, progress, signal: call.controller.signal, log });
          result = { content: [{ type: 'text', text: r.text }], isError: Boolean(r.isError) };
          if (r.data) {
            // MCP: structured content is also given serialised, as text.
            result.structuredContent = r.data;
            result.content.push({ type: 'text', text: JSON.stringify(r.data) });
          }
        } catch (e) {
          if (e instanceof ParamsError) {
            if (live()) fail(id, INVALID_PARAMS, e.message);
            calls.delete(key);
            return;
          }
          const what = e instanceof KilnError ? `${e.name}${e.code ? ` (${e.code})` : ''}: ${e.message}` : `error: ${e && e.message}`;
          log(`kiln-mcp: ${tool.name}: ${what}`);
          result = { content: [{ type: 'text', text: what }], isError: true };
        }
        if (!live()) return; // cancelled: no answer
        calls.delete(key);
        reply(id, result);
        return;
      }
      default:
        fail(id, METHOD_NOT_FOUND, `method ${JSON.stringify(msg.method).slice(0, 200)} not found (kiln-mcp serves initialize, ping, tools/list, tools/call)`);
    }
  };

  const line = (buf) => {
    const text = buf.toString('utf8').trim();
    if (!text) return;
    let msg;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      fail(null, PARSE_ERROR, `not JSON: ${e.message}`);
      return;
    }
    const p = handle(msg).catch((e) => { log(`kiln-mcp: ${e && e.stack}`); fail(null, INTERNAL_ERROR, 'internal error'); });
    pending.add(p);
    p.finally(() => pending.delete(p));
  };

  return new Promise((resolve) => {
    let held = [];
    let heldLen = 0;
    let skipping = false; // inside a line over MAX_LINE_BYTES: dropped up to its newline
    // A line is at most MAX_LINE_BYTES bytes, its newline not counted,
    // however the input is cut into chunks.
    input.on('data', (chunk) => {
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(10, start);
        const end = nl < 0 ? chunk.length : nl;
        if (!skipping && end > start) {
          heldLen += end - start;
          if (heldLen > MAX_LINE_BYTES) {
            held = [];
            skipping = true;
            fail(null, INVALID_REQUEST, `a message over ${MAX_LINE_BYTES} bytes was dropped: send at most ${MAX_LINE_BYTES} bytes per line`);
          } else {
            held.push(nl < 0 ? Buffer.from(chunk.subarray(start, end)) : chunk.subarray(start, end));
          }
        }
        if (nl < 0) return;
        if (!skipping) line(Buffer.concat(held));
        skipping = false;
        held = [];
        heldLen = 0;
        start = nl + 1;
      }
    });
    input.on('end', async () => {
      if (held.length && !skipping) line(Buffer.concat(held));
      while (pending.size) await Promise.allSettled([...pending]);
      resolve();
    });
  });
}
