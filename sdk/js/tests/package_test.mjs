// The package itself: its types, its exports, npm pack, the example.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from './runner.mjs';
import { startFake, jsonResponse } from './fake_kilnd.mjs';
import * as kiln from '../src/index.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

test('package: index.d.ts type-checks (tsc --strict) with the API as the README uses it', () => {
  try {
    execFileSync('tsc', ['--noEmit', '--strict', '--target', 'es2020', '--module', 'es2020', '--moduleResolution', 'node',
      '--lib', 'es2020', path.join(ROOT, 'tests/types_check.ts')], { stdio: 'pipe' });
  } catch (e) {
    throw new Error(`tsc (node-typescript; scripts/install-deps installs it) failed: ${e.stdout || ''}${e.stderr || ''}${e.message}`);
  }
});

test('package: every runtime export is declared in index.d.ts and the other way round', () => {
  const dts = fs.readFileSync(path.join(ROOT, 'src/index.d.ts'), 'utf8');
  const declared = new Set([...dts.matchAll(/^export (?:declare )?(?:class|function|const) (\w+)/gm)].map((m) => m[1]));
  const runtime = new Set(Object.keys(kiln));
  assert.deepEqual([...runtime].filter((n) => !declared.has(n)), [], 'exported but not declared');
  assert.deepEqual([...declared].filter((n) => !runtime.has(n)), [], 'declared but not exported');
});

test('package: no dependencies, and npm pack takes src, bin, examples and the README', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  for (const k of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) assert.equal(pkg[k], undefined, k);
  assert.equal(pkg.bin['kiln-mcp'], 'bin/kiln-mcp.js');
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-npm-'));
  try {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--offline'], {
      cwd: ROOT, env: { ...process.env, npm_config_cache: cache, npm_config_update_notifier: 'false' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const files = JSON.parse(out.toString())[0].files.map((f) => f.path);
    for (const f of ['package.json', 'README.md', 'src/index.js', 'src/index.d.ts', 'src/mcp.js', 'bin/kiln-mcp.js', 'examples/exec-roundtrip.mjs']) {
      assert.ok(files.includes(f), `${f} not packed: ${files.join(' ')}`);
    }
    assert.ok(!files.some((f) => f.startsWith('tests/')), 'tests are not packed');
  } finally {
    fs.rmSync(cache, { recursive: true, force: true });
  }
});

test('package: npm install ./sdk/js into a project works offline, and the project imports it and has kiln-mcp', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-npm-install-'));
  try {
    const proj = path.join(tmp, 'proj');
    fs.mkdirSync(proj);
    fs.writeFileSync(path.join(proj, 'package.json'), '{"name":"p","version":"1.0.0","private":true,"type":"module"}\n');
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', ROOT], {
      cwd: proj, stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOME: tmp, npm_config_cache: path.join(tmp, 'cache'), npm_config_update_notifier: 'false' },
    });
    assert.ok(fs.existsSync(path.join(proj, 'node_modules/.bin/kiln-mcp')), 'no node_modules/.bin/kiln-mcp');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', "import { Kiln, KilnError } from '@kiln/sdk'; console.log(typeof Kiln, typeof KilnError)"], { cwd: proj });
    assert.equal(out.toString(), 'function function\n');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('examples/exec-roundtrip.mjs prints a median in ms', async () => {
  const f = await startFake((req, sock) => sock.end(jsonResponse(200, { exit_code: 0, stdout: '', stderr: '' })));
  try {
    const out = await new Promise((resolve, reject) => {
      import('node:child_process').then(({ execFile }) => execFile(process.execPath, [path.join(ROOT, 'examples/exec-roundtrip.mjs'), f.socket, 'abc123', '5'],
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message} ${stderr}`)) : resolve(stdout))));
    });
    assert.match(out, /^\d+\.\d{3}\n$/);
    assert.equal(f.requests.length, 6); // one warm-up, then N
    assert.deepEqual(f.requests[1].json(), { argv: ['true'] });
  } finally {
    await f.close();
  }
});
