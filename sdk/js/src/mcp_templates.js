// kiln-mcp's template and image tools (template_build, template_list,
// template_delete, image_list): a build's log kept as a bounded tail, the
// checks of a context directory an AI agent names, and compact listings.
// mcp.js declares the schemas and dispatches here.
import fs from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { KilnError } from './errors.js';

export const LOG_TAIL_LINES = 64;
export const LOG_LINE_CHARS = 4096; // 64 lines of 4096: MAX_TEXT (256 KiB)
const PROGRESS_CHARS = 200;
const SKIPPED_SHOWN = 20;

/**
 * The last LOG_TAIL_LINES lines of a build's log, each at most
 * LOG_LINE_CHARS characters, and how much was left out: memory stays
 * bounded whatever the build prints.
 */
export class LogTail {
  constructor(maxLines = LOG_TAIL_LINES, lineChars = LOG_LINE_CHARS) {
    this.maxLines = maxLines;
    this.lineChars = lineChars;
    this.lines = [];
    this.partial = '';
    this.partialCut = 0; // characters of the open line beyond lineChars
    this.leftLines = 0;
    this.leftChars = 0;
    this.decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  }

  push(line, cut = 0) {
    if (line.length > this.lineChars) {
      cut += line.length - this.lineChars;
      line = line.slice(0, this.lineChars);
    }
    this.lines.push(cut ? `${line} [... ${cut} characters cut]` : line);
    if (this.lines.length > this.maxLines) {
      this.leftLines += 1;
      this.leftChars += this.lines.shift().length + 1;
    }
  }

  /** Output text, lines ended by '\n', the last one maybe open. */
  output(text) {
    let start = 0;
    for (;;) {
      const nl = text.indexOf('\n', start);
      const piece = text.slice(start, nl < 0 ? text.length : nl);
      const room = this.lineChars - this.partial.length;
      if (piece.length <= room) {
        this.partial += piece;
      } else {
        this.partial += piece.slice(0, Math.max(room, 0));
        this.partialCut += piece.length - Math.max(room, 0);
      }
      if (nl < 0) return;
      this.endLine();
      start = nl + 1;
    }
  }

  endLine() {
    this.push(this.partial, this.partialCut);
    this.partial = '';
    this.partialCut = 0;
  }

  /** Closes an open output line (before a line of the build's own). */
  flush() {
    for (const d of Object.values(this.decoders)) this.output(d.end());
    if (this.partial || this.partialCut) this.endLine();
  }

  /** One build log event (templates.js BuildStream's). */
  event(ev) {
    const step = () => `step ${ev.step} (line ${ev.line}): ${ev.instruction}`;
    if (ev.type === 'stdout' || ev.type === 'stderr') {
      this.output(this.decoders[ev.type].write(ev.bytes || Buffer.alloc(0)));
      return;
    }
    this.flush();
    switch (ev.type) {
      case 'step': this.push(step()); break;
      case 'cached': this.push(`${step()} [cached]`); break;
      case 'copied': this.push(`copied ${ev.files} files, ${ev.dirs} directories to ${ev.target}`); break;
      case 'ready': this.push(`ready after ${ev.tries} tries (exit code ${ev.exit_code})`); break;
      case 'step_end': this.push(`step ${ev.step} done in ${ev.ms} ms`); break;
      default: break;
    }
  }

  text() {
    this.flush();
    if (!this.lines.length) return 'build log: empty';
    const left = this.leftLines ? `; ${this.leftLines} earlier lines (${this.leftChars} characters) left out` : '';
    return `build log (last ${this.lines.length} lines${left}):\n${this.lines.join('\n')}`;
  }
}

const mib = (n) => (Number.isFinite(n) ? `${(n / 1048576).toFixed(1)} MiB` : 'size unknown');

function pick(obj, keys) {
  const out = {};
  for (const k of keys) if (obj && obj[k] !== undefined) out[k] = obj[k];
  return out;
}

const TEMPLATE_KEYS = ['name', 'from', 'from_kind', 'checkpoint', 'size_bytes', 'created_at', 'build_ms', 'cache_entries', 'in_use'];
const IMAGE_KEYS = ['name', 'source', 'size_bytes', 'digest', 'created', 'format', 'layers'];

function templateLine(t) {
  const parts = [`from ${t.from_kind || 'image'} ${t.from}`, t.checkpoint ? `ready (snapshot ${t.checkpoint})` : 'no snapshot', mib(t.size_bytes)];
  if (t.created_at) parts.push(`created ${t.created_at}`);
  if (Number.isFinite(t.build_ms)) parts.push(`built in ${Math.round(t.build_ms)} ms`);
  if (Number.isInteger(t.cache_entries)) parts.push(`${t.cache_entries} cached steps`);
  if (Number.isInteger(t.in_use)) parts.push(`used by ${t.in_use} sandboxes`);
  return `${t.name}: ${parts.join(', ')}`;
}

function imageLine(i) {
  const parts = [i.size_bytes === null ? 'file missing' : mib(i.size_bytes), `source ${i.source}`];
  if (i.format) parts.push(`${i.format} archive, ${i.layers} layers`);
  if (i.digest) parts.push(i.digest);
  if (i.created) parts.push(`created ${i.created}`);
  return `${i.name}: ${parts.join(', ')}`;
}

export async function templateList(kiln) {
  const l = await kiln.templates.list();
  const text = l.length ? l.map(templateLine).join('\n') : 'no templates (template_build makes one)';
  return { text, data: { templates: l.map((t) => pick(t, TEMPLATE_KEYS)) } };
}

export async function imageList(kiln) {
  const l = await kiln.images.list();
  return { text: l.length ? l.map(imageLine).join('\n') : 'no images', data: { images: l.map((i) => pick(i, IMAGE_KEYS)) } };
}

const HINTS = {
  in_use: 'sandboxes created from the template use it: delete them first (sandbox_list shows each one\'s template), then retry',
  busy: 'it is being built, or a sandbox is being created from it, right now: retry once that finished',
  limit_reached: 'other builds are running: retry once one finished',
};

function kilnText(e) {
  const hint = HINTS[e.code] ? `\n${HINTS[e.code]}` : '';
  return `${e.name}${e.code ? ` (${e.code})` : ''}: ${e.message}${hint}`;
}

export async function templateDelete(kiln, name) {
  try {
    await kiln.templates.delete(name);
  } catch (e) {
    if (!(e instanceof KilnError)) throw e;
    return { text: `template_delete ${name}: ${kilnText(e)}`, isError: true };
  }
  return { text: `deleted template ${name}` };
}

const fail = (text) => ({ text: `template_build: ${text}`, isError: true });

async function statOf(p, how = 'stat') {
  try {
    return await fs.promises[how](p);
  } catch (e) {
    return { error: e.code === 'ENOENT' ? 'does not exist' : e.message };
  }
}

/** The context directory and build file, checked here: one clear error each; else null. */
async function contextProblem(dir, where, file) {
  const st = await statOf(dir);
  if (st.error) return `context_dir ${where} ${st.error}: give the directory holding the build file and what it COPYs`;
  if (!st.isDirectory()) return `context_dir ${where} is not a directory: give the directory holding the build file and what it COPYs`;
  if (file !== undefined) {
    if (path.isAbsolute(file) || file.split('/').includes('..')) {
      return `file ${JSON.stringify(file)}: the build file's path inside context_dir, relative and without '..' (e.g. "Kilnfile")`;
    }
    // lstat: a symbolic link is left out of the context when packed.
    const f = await statOf(path.join(dir, file), 'lstat');
    if (f.error || !f.isFile()) return `file ${JSON.stringify(file)}: no such file in context_dir ${dir} (a symbolic link is not followed)`;
    return null;
  }
  for (const n of ['Kilnfile', 'Dockerfile']) {
    const f = await statOf(path.join(dir, n), 'lstat');
    if (!f.error && f.isFile()) return null;
  }
  return `context_dir ${where} has no Kilnfile or Dockerfile at its top: write one there, or name it with file`;
}

/**
 * With KILN_MCP_CONTEXT_ROOT set, a context directory must lie beneath it
 * (symbolic links resolved): what a model may pack and upload from this
 * machine. Null when it does, else the error.
 */
async function outsideRoot(dir, where, root) {
  if (!root) return null;
  let real;
  let top;
  try {
    [real, top] = await Promise.all([fs.promises.realpath(dir), fs.promises.realpath(root)]);
  } catch (e) {
    return `KILN_MCP_CONTEXT_ROOT ${root}: ${e.message}: set it to an existing directory`;
  }
  if (real === top || real.startsWith(top === '/' ? '/' : `${top}/`)) return null;
  return `context_dir ${where} is outside KILN_MCP_CONTEXT_ROOT ${top}: give a directory beneath it`;
}

/**
 * template_build: packs context_dir (relative: against cwd) and builds
 * through the SDK; the template and the log's tail, or the error (with
 * its step and line) and the tail. progress(n, message) (optional) is
 * told of each step.
 */
export async function templateBuild(kiln, a, { env, cwd, progress }) {
  const dir = path.resolve(cwd, a.context_dir);
  const where = dir === a.context_dir ? dir : `${dir} (${JSON.stringify(a.context_dir)} resolved against kiln-mcp's working directory ${cwd})`;
  const problem = await contextProblem(dir, where, a.file) || await outsideRoot(dir, where, env.KILN_MCP_CONTEXT_ROOT);
  if (problem) return fail(problem);
  const tail = new LogTail();
  let steps = 0;
  let stream;
  try {
    stream = await kiln.templates.buildStream(a.name, {
      contextDir: dir, file: a.file, cpus: a.cpus, memoryMib: a.memory_mib, diskMib: a.disk_mib,
    });
    for await (const ev of stream) {
      tail.event(ev);
      if (progress && (ev.type === 'step' || ev.type === 'cached')) {
        steps += 1;
        progress(steps, `step ${ev.step} (line ${ev.line}): ${String(ev.instruction).slice(0, PROGRESS_CHARS)}${ev.type === 'cached' ? ' [cached]' : ''}`);
      }
    }
  } catch (e) {
    if (!(e instanceof KilnError)) throw e;
    const at = e.step !== undefined ? ` at step ${e.step} (line ${e.line})` : '';
    return { text: `template_build ${a.name} failed${at}: ${kilnText(e)}\n${tail.text()}`, isError: true };
  }
  const t = stream.result;
  const all = Array.isArray(t.steps) ? t.steps : [];
  const lines = [
    `built template ${t.name} from ${t.from_kind || 'image'} ${t.from}${Number.isFinite(t.build_ms) ? ` in ${Math.round(t.build_ms)} ms` : ''}: `
      + `${all.length} steps, ${all.filter((s) => s && s.cached).length} cached; create a sandbox from it with sandbox_create {"template":${JSON.stringify(t.name)}}`,
  ];
  const skipped = stream.skipped || [];
  if (skipped.length) {
    lines.push(`left out of the context (${skipped.length}):`, ...skipped.slice(0, SKIPPED_SHOWN));
    if (skipped.length > SKIPPED_SHOWN) lines.push(`[... ${skipped.length - SKIPPED_SHOWN} more]`);
  }
  lines.push(tail.text());
  return {
    text: lines.join('\n'),
    data: { template: pick(t, TEMPLATE_KEYS), log_lines_left_out: tail.leftLines, skipped: skipped.slice(0, SKIPPED_SHOWN) },
  };
}
