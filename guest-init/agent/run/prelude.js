// kiln run: the Node prelude (docs/agent-protocol.md, "run"). kiln-init
// writes this file to /run/kiln-run/prelude.js and runs
//   node --require /run/kiln-run/prelude.js CODE_FILE
// with KILN_RESULT_FILE naming the file the host reads back after the exit.
// It defines the global `result` (result.set(value), result.error(message)),
// records an uncaught exception or unhandled rejection as the run's error,
// and loads .ts files through esbuild (type stripping, no type check).
'use strict';
const fs = require('fs');

const file = process.env.KILN_RESULT_FILE;
delete process.env.KILN_RESULT_FILE;
// The host reads at most 1 MiB of result file: the value gets 960 KiB,
// so an error with its stack still fits beside it.
const VALUE_MAX = 960 * 1024;
const TEXT_MAX = 32 * 1024;
const state = {};

function flush() {
  if (!file) throw new Error('result: KILN_RESULT_FILE is not set (run this through kiln\'s run)');
  const parts = ['value', 'error'].filter((k) => k in state).map((k) => `"${k}":${state[k]}`);
  fs.writeFileSync(file, `{${parts.join(',')}}`);
}

function clip(s) {
  s = String(s);
  return s.length <= TEXT_MAX ? s : s.slice(0, TEXT_MAX) + '\n[... cut at 32 KiB]';
}

const result = Object.freeze({
  VALUE_MAX,
  set(value) {
    let text;
    try {
      text = JSON.stringify(value);
    } catch (e) {
      throw new TypeError(`result.set: the value is not JSON: ${e.message}`);
    }
    if (text === undefined) text = 'null';
    const n = Buffer.byteLength(text);
    if (n > VALUE_MAX) throw new RangeError(`result.set: the value is ${n} bytes of JSON; the limit is ${VALUE_MAX} (960 KiB)`);
    state.value = text;
    flush();
  },
  error(message) {
    state.error = JSON.stringify({ type: 'ResultError', message: clip(message), traceback: null });
    flush();
  },
});
Object.defineProperty(globalThis, 'result', { value: result, enumerable: false });

function report(err) {
  let type = typeof err;
  let message = String(err);
  let stack = null;
  if (err instanceof Error) {
    type = err.name || 'Error';
    message = String(err.message);
    stack = err.stack ? String(err.stack) : null;
  }
  process.stderr.write(`${stack || `Uncaught ${type}: ${message}`}\n`);
  state.error = JSON.stringify({ type, message: clip(message), traceback: stack && clip(stack) });
  try {
    flush();
  } catch (e) {
    // The error is on stderr; nothing else can be done.
  }
  process.exit(1);
}
process.on('uncaughtException', report);
process.on('unhandledRejection', report);

require.extensions['.ts'] = function loadTypeScript(module, filename) {
  const { execFileSync } = require('child_process');
  let js;
  try {
    js = execFileSync('esbuild', [filename, '--format=cjs', '--platform=node', '--sourcemap=inline', '--log-level=error', '--color=false'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  } catch (e) {
    const err = new SyntaxError(`esbuild could not transpile ${filename}:\n${e.stderr || e.message}`);
    err.stack = `SyntaxError: ${err.message}`;
    throw err;
  }
  if (process.setSourceMapsEnabled) process.setSourceMapsEnabled(true);
  module._compile(js, filename);
};
