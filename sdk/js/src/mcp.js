// kiln's MCP server: the Model Context Protocol over stdio (newline-
// delimited JSON-RPC 2.0), its tools going through the SDK. No dependency:
// the protocol's few messages are written out here.
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
        command: { oneOf: [{ type: 'string', minLength: 1, maxLength: 1048576 }, { type: 'array', items: { type: 'string', maxLength: 1048576 }, minItems: 1, maxItems: 1024 }] },
        cwd: PATH,
        env: envSchema(1024),
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

function typeOk(schema, v) {
  if (schema.oneOf) return schema.oneOf.some((s) => typeOk(s, v));
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

function cap(text) {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}\n[... ${text.length - MAX_TEXT} more characters cut]` : text;
}

function execText(r) {
  const parts = [`exit_code: ${r.exitCode === null ? `null (signal ${r.signal})` : r.exitCode}${r.timedOut ? ' (timed out)' : ''}`];
  parts.push(`stdout:\n${cap(r.stdout)}`);
  if (r.stderr) parts.push(`stderr:\n${cap(r.stderr)}`);
  return parts.join('\n');
}

/**
 * Runs one tool; resolves with its text. ctx: the server's environment
 * (env), working directory (cwd) and progress(n, message) or null.
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
      const r = await s.exec(a.command, { cwd: a.cwd, env: a.env, stdin: a.stdin, user: a.user, timeoutMs: a.timeout_ms === undefined ? 60000 : a.timeout_ms });
      return { text: execText(r), data: { exit_code: r.exitCode, stdout: cap(r.stdout), stderr: cap(r.stderr) } };
    }
    case 'run_code': {
      const s = await sb(a.sandbox_id);
      const r = await s.runCode(a.code, { language: a.language || 'python', timeoutMs: a.timeout_ms === undefined ? 60000 : a.timeout_ms });
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
  const send = (msg) => { output.write(`${JSON.stringify(msg)}\n`); };
  const reply = (id, result) => send({ jsonrpc: '2.0', id, result });
  const fail = (id, code, message) => send({ jsonrpc: '2.0', id, error: { code, message } });

  const handle = async (msg) => {
    if (!msg || typeof msg !== 'object' || Array.isArray(msg)) {
      fail(null, INVALID_REQUEST, Array.isArray(msg) ? 'batches are not supported: send one JSON-RPC message per line' : 'a JSON-RPC message must be an object');
      return;
    }
    const hasId = Object.prototype.hasOwnProperty.call(msg, 'id');
    const id = hasId ? msg.id : null;
    if (hasId && !(typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) || id === null)) {
      fail(null, INVALID_REQUEST, 'id must be a string or a number');
      return;
    }
    if (msg.jsonrpc !== '2.0') { fail(id, INVALID_REQUEST, 'jsonrpc must be "2.0"'); return; }
    if (typeof msg.method !== 'string') {
      // A response from the client (we send no requests): nothing to do.
      if (!hasId || (msg.result === undefined && msg.error === undefined)) fail(id, INVALID_REQUEST, 'method must be a string');
      return;
    }
    const params = msg.params === undefined ? {} : msg.params;
    if (!params || typeof params !== 'object' || Array.isArray(params)) {
      if (hasId) fail(id, INVALID_PARAMS, 'params must be an object');
      return;
    }
    if (!hasId) return; // notifications (notifications/initialized, cancelled, ...): no answer
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
        try {
          args = checkArgs(tool, params.arguments);
          const token = progressToken(params);
          if (token !== undefined) {
            progress = (n, message) => send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: n, message } });
          }
        } catch (e) {
          fail(id, INVALID_PARAMS, e.message);
          return;
        }
        try {
          const r = await callTool(kiln, tool.name, args, { env, cwd, progress });
          const result = { content: [{ type: 'text', text: r.text }], isError: Boolean(r.isError) };
          if (r.data) result.structuredContent = r.data;
          reply(id, result);
        } catch (e) {
          if (e instanceof ParamsError) { fail(id, INVALID_PARAMS, e.message); return; }
          const what = e instanceof KilnError ? `${e.name}${e.code ? ` (${e.code})` : ''}: ${e.message}` : `error: ${e && e.message}`;
          log(`kiln-mcp: ${tool.name}: ${what}`);
          reply(id, { content: [{ type: 'text', text: what }], isError: true });
        }
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
    input.on('data', (chunk) => {
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(10, start);
        if (nl < 0) break;
        if (skipping) {
          skipping = false;
        } else {
          held.push(chunk.subarray(start, nl));
          line(Buffer.concat(held));
        }
        held = [];
        heldLen = 0;
        start = nl + 1;
      }
      if (start < chunk.length && !skipping) {
        heldLen += chunk.length - start;
        if (heldLen > MAX_LINE_BYTES) {
          held = [];
          heldLen = 0;
          skipping = true;
          fail(null, INVALID_REQUEST, `a message over ${MAX_LINE_BYTES} bytes was dropped`);
        } else {
          held.push(Buffer.from(chunk.subarray(start)));
        }
      }
    });
    input.on('end', async () => {
      if (held.length && !skipping) line(Buffer.concat(held));
      while (pending.size) await Promise.allSettled([...pending]);
      resolve();
    });
  });
}
