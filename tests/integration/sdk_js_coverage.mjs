// test_sdk_js's coverage script (tests/integration/sdk_js_tests.sh copies
// it into a scratch project where `npm install` put @kiln/sdk): every call
// group of sdk/js against a real kilnd on ONE sandbox and its fork, the
// 100 MiB streamed download with its RSS, an MCP session with kiln-mcp,
// and last kilnd SIGKILLed mid-stream. Env: KILN_SOCKET, KILND_PID,
// KILN_HARNESS_STATE (heartbeats), WORK (a scratch directory), MCP_BIN.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, execFileSync } from 'node:child_process';
import * as kiln from '@kiln/sdk';

const { Kiln } = kiln;
const work = process.env.WORK;
const t0 = Date.now();
const beat = (what) => {
  const line = `${new Date().toISOString().slice(11, 19)}   beat sdk_js: ${what} (${((Date.now() - t0) / 1000).toFixed(1)} s)`;
  console.log(line.trim());
  if (process.env.KILN_HARNESS_STATE) fs.appendFileSync(path.join(process.env.KILN_HARNESS_STATE, 'progress'), `${line}\n`);
};
const rejects = async (p, cls, what) => {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof cls, `${what}: expected ${cls.name}, got ${e && e.name}: ${e && e.message}`);
    return e;
  }
  throw new Error(`${what}: expected ${cls.name}, nothing thrown`);
};

const k = new Kiln({ timeoutMs: 600000 });
const late = []; // failures reported at the end

beat('health, metrics, images');
assert.equal((await k.health()).status, 'ok');
assert.match(await k.metrics(), /^kiln_sandboxes\{state="running"\}/m);
assert.ok((await k.images()).some((i) => i.name === 'minimal'));
await rejects(k.sandboxes.get('0123456789ab'), kiln.SandboxNotFoundError, 'unknown sandbox');
await rejects(k.sandboxes.create({ image: 'minimal', colour: 'red' }), kiln.UnknownFieldError, 'unknown field');

beat('create');
const sb = await k.sandboxes.create({ image: 'minimal', labels: { sdk: 'js' }, env: { FROM_CREATE: 'yes' } });
assert.equal(sb.state, 'running');
assert.deepEqual((await k.sandboxes.list({ label: { sdk: 'js' } })).map((s) => s.id), [sb.id]);
assert.equal((await k.sandboxes.get(sb.id)).info.labels.sdk, 'js');

beat('exec');
let r = await sb.exec(['sh', '-c', 'echo out; echo err >&2; exit 3']);
assert.deepEqual([r.exitCode, r.stdout, r.stderr, r.ok], [3, 'out\n', 'err\n', false]);
r = await sb.exec('read x; echo "got $x $FROM_CREATE $MINE"', { stdin: 'hello\n', env: { MINE: 'mine' } });
assert.equal(r.stdout, 'got hello yes mine\n');
r = await sb.exec('head -c 3 | od -An -tx1', { stdin: Buffer.from([0, 255, 10]) });
assert.equal(r.stdout.trim(), '00 ff 0a');
r = await sb.exec(['sleep', '5'], { timeoutMs: 300 });
assert.ok(r.timedOut, 'exec timeout');
await rejects(sb.exec(['/no/such/program']), kiln.NotFoundError, 'missing program');
const seen = [];
r = await sb.exec('echo a; echo b >&2; echo c', { onStdout: (t) => seen.push(t), onStderr: (t) => seen.push(`E${t}`) });
assert.equal(seen.filter((t) => !t.startsWith('E')).join(''), 'a\nc\n');
assert.equal(seen.filter((t) => t.startsWith('E')).join(''), 'Eb\n');
assert.equal(r.stdout, 'a\nc\n');
const evs = [];
for await (const ev of await sb.execStream('for i in 1 2 3; do echo $i; done; exit 7')) evs.push(ev);
assert.equal(evs.filter((e) => e.type === 'stdout').map((e) => e.data).join(''), '1\n2\n3\n');
assert.equal(evs.at(-1).exit_code, 7);

// A command silent for longer than the client's timeout: that bounds only
// the head, which kilnd sends without waiting for the first output.
{
  const quiet = await new Kiln({ timeoutMs: 2000 }).sandboxes.get(sb.id);
  const t1 = Date.now();
  const qevs = [];
  for await (const ev of await quiet.execStream('sleep 5; echo late')) qevs.push(ev);
  assert.deepEqual(qevs.map((e) => e.type), ['stdout', 'exit']);
  assert.equal(qevs[0].data, 'late\n');
  console.log(`sdk_js: a stream silent for 5 s under timeoutMs 2000: ${Date.now() - t1} ms`);
}

beat('run code');
const rc = await sb.runCode('echo checking; result set \'{"checked":3}\'', { language: 'bash' });
assert.deepEqual([rc.stdout, rc.result, rc.error], ['checking\n', { checked: 3 }, null]);

beat('files');
await sb.files.mkdir('/home/user/w/sub', { parents: true });
assert.deepEqual(await sb.files.write('/home/user/w/a.txt', 'héllo\n', { mode: 0o600 }), { path: '/home/user/w/a.txt', bytes: 7 });
assert.equal(await sb.files.readText('/home/user/w/a.txt'), 'héllo\n');
const st = await sb.files.stat('/home/user/w/a.txt');
assert.deepEqual([st.kind, st.size, st.mode_octal], ['file', 7, '0600']);
await sb.files.rename('/home/user/w/a.txt', '/home/user/w/b.txt');
const ls = await sb.files.list('/home/user/w', { depth: 2 });
assert.deepEqual(ls.entries.map((e) => e.path).sort(), ['/home/user/w/b.txt', '/home/user/w/sub']);
await rejects(sb.files.remove('/home/user/w'), kiln.NotEmptyError, 'remove a full directory');
fs.writeFileSync(path.join(work, 'up.bin'), Buffer.alloc(300000, 9));
assert.equal((await sb.files.upload('/home/user/w/up.bin', path.join(work, 'up.bin'))).bytes, 300000);
assert.equal((await sb.files.upload('/home/user/w/up2.bin', fs.createReadStream(path.join(work, 'up.bin')))).bytes, 300000);
assert.equal(await sb.files.download('/home/user/w/up2.bin', path.join(work, 'down.bin')), 300000);
assert.ok(fs.readFileSync(path.join(work, 'down.bin')).equals(fs.readFileSync(path.join(work, 'up.bin'))));
fs.mkdirSync(path.join(work, 'tree/deep'), { recursive: true });
fs.writeFileSync(path.join(work, 'tree/deep/f.txt'), 'in a tree\n');
assert.equal((await sb.files.uploadDir(path.join(work, 'tree'), '/home/user/w/tree')).files, 1);
await sb.files.downloadDir('/home/user/w/tree', path.join(work, 'back'));
assert.equal(fs.readFileSync(path.join(work, 'back/deep/f.txt'), 'utf8'), 'in a tree\n');
await rejects(sb.files.read('/home/user/nope'), kiln.NotFoundError, 'read a missing file');
const watch = await sb.files.watch('/home/user/w/sub');
const wevs = [];
for await (const ev of watch) {
  wevs.push(ev.type);
  if (ev.type === 'watching') await sb.files.write('/home/user/w/sub/new.txt', 'x');
  if (ev.type === 'create') break;
}
assert.deepEqual(wevs.slice(0, 2), ['watching', 'create']);
await sb.files.remove('/home/user/w/sub', { recursive: true });

beat('processes');
const p = await sb.processes.spawn('echo one; read x; cat; echo "two $x"'); // cat: ends only at the stdin EOF
let next = 0;
const out1 = [];
for await (const ev of await p.output({ since: 0 })) {
  if (ev.type === 'stdout') { out1.push(ev.data); next = ev.next; break; } // detach after the first line
}
assert.equal(out1.join(''), 'one\n');
await p.writeStdin('hi\n', { eof: true });
const out2 = [];
for await (const ev of await p.output({ since: next })) if (ev.type === 'stdout') out2.push(ev.data);
assert.equal(out2.join(''), 'two hi\n');
assert.equal((await p.wait(60000)).exit_code, 0);
const sl = await sb.processes.spawn(['sleep', '600']);
await rejects(sl.wait(100), kiln.TimeoutError, 'wait on a running process');
await sl.signal('TERM');
assert.equal((await sl.wait(60000)).signal, 15);
const tty = await sb.processes.spawn(['sh'], { pty: true, rows: 10, cols: 40 });
await tty.resize(40, 120);
await tty.writeStdin('stty size; exit\n');
await tty.wait(60000);
const ttyOut = [];
for await (const ev of await tty.output({ since: 0 })) if (ev.type === 'stdout') ttyOut.push(ev.data || '');
assert.match(ttyOut.join(''), /40 120|stty: not found/); // the size the resize set (when the image has stty)
assert.ok((await sb.processes.list()).length >= 3);
assert.equal((await sb.processes.get(p.id)).info.running, false);
const pevs = [];
for await (const ev of await p.output({ since: 0, follow: false })) pevs.push(ev);
assert.equal(pevs.at(-1).type, 'exit', 'output without follow of an exited process ends with its exit');

beat('ports, previews, firewall');
const port = await sb.ports.add(8080);
assert.equal((await sb.ports.list())[0].host_port, port.host_port);
await sb.ports.remove(port.host_port);
assert.deepEqual(await sb.ports.list(), []);
const pv = await sb.previews.add(8080, { public: true });
assert.equal(pv.port, 8080);
assert.equal((await sb.previews.list()).length, 1);
await sb.previews.remove(8080);
await rejects(sb.firewall.get(), kiln.WrongStateError, 'firewall of a sandbox without network');
await rejects(sb.firewall.set({ outbound_internet: true }), kiln.WrongStateError, 'firewall set without network');
await rejects(sb.firewall.log(), kiln.WrongStateError, 'firewall log without network');

beat('MCP session');
{
  const child = spawn(process.execPath, [process.env.MCP_BIN], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = '';
  const answers = [];
  let wake = null;
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { answers.push(JSON.parse(buf.slice(0, i))); buf = buf.slice(i + 1); if (wake) wake(); }
  });
  const ask = async (id, method, params) => {
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    while (!answers.length) await new Promise((res) => { wake = res; });
    const a = answers.shift();
    assert.equal(a.id, id, JSON.stringify(a));
    return a;
  };
  const init = await ask(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'sdk_js test', version: '1' } });
  assert.equal(init.result.protocolVersion, '2025-06-18');
  child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  const tools = (await ask(2, 'tools/list', {})).result.tools.map((t) => t.name);
  assert.ok(tools.includes('exec') && tools.includes('template_build') && tools.length === 12, tools.join(' '));
  const call = await ask(3, 'tools/call', { name: 'exec', arguments: { sandbox_id: sb.id, command: 'echo from mcp; uname -s' } });
  assert.equal(call.result.isError, false, JSON.stringify(call));
  assert.match(call.result.content[0].text, /^exit_code: 0\nstdout:\nfrom mcp\nLinux\n/);
  const rd = await ask(4, 'tools/call', { name: 'read_file', arguments: { sandbox_id: sb.id, path: '/home/user/w/b.txt' } });
  assert.equal(rd.result.content[0].text, 'héllo\n');
  const bad = await ask(5, 'tools/call', { name: 'exec', arguments: { sandbox_id: sb.id } });
  assert.equal(bad.error.code, -32602);
  const imgs = await ask(6, 'tools/call', { name: 'image_list', arguments: {} });
  assert.match(imgs.result.content[0].text, /^minimal: [0-9.]+ MiB, source /m, JSON.stringify(imgs));
  // A cancelled exec: no answer (the next one is 8's), and its processes
  // killed in the guest (kiln-mcp finds them by KILN_MCP_CALL).
  const sleeping = async () => Number((await sb.exec('for f in /proc/[0-9]*/cmdline; do tr "\\0" " " <$f; echo; done 2>/dev/null | grep -c "^sleep 599"')).stdout.trim());
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'exec', arguments: { sandbox_id: sb.id, command: 'sleep 599; echo not killed' } } })}\n`);
  for (let i = 0; await sleeping() === 0; i++) { assert.ok(i < 100, 'the MCP exec never started'); await new Promise((res) => { setTimeout(res, 100); }); }
  child.stdin.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}\n');
  for (let i = 0; await sleeping() > 0; i++) { assert.ok(i < 100, 'the cancelled exec still runs after 10 s'); await new Promise((res) => { setTimeout(res, 100); }); }
  await new Promise((res) => { setTimeout(res, 500); });
  assert.deepEqual((await ask(8, 'ping', {})).result, {});
  child.stdin.end();
  assert.equal(await new Promise((res) => child.on('exit', res)), 0);
}

// KILN_SDK_DOWNLOAD_MIB (default 100): the nested harness moves about
// 1 MiB/s from a guest, so this step costs about a second per MiB there.
const dlMib = Number(process.env.KILN_SDK_DOWNLOAD_MIB || 100);
beat(`${dlMib} MiB streamed download`);
{
  assert.equal((await sb.exec(`truncate -s ${dlMib}M /home/user/big || dd if=/dev/zero of=/home/user/big bs=1048576 count=0 seek=${dlMib}`)).exitCode, 0);
  // Into a local file (the SDK hands its one read buffer to the file
  // stream, no copy; /dev/null: the outer VM's tmpfs copy is not what is
  // measured); RSS sampled throughout.
  const dest = '/dev/null';
  const base = process.memoryUsage().rss;
  let peak = base;
  const iv = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 10);
  const t1 = Date.now();
  const got = await sb.files.download('/home/user/big', dest);
  clearInterval(iv);
  peak = Math.max(peak, process.memoryUsage().rss);
  const mib = (x) => (x / 1048576).toFixed(1);
  console.log(`sdk_js: download of ${got} bytes in ${((Date.now() - t1) / 1000).toFixed(1)} s; RSS ${mib(base)} MiB before, peak ${mib(peak)} MiB (+${mib(peak - base)} MiB)`);
  assert.equal(got, dlMib * 1048576);
  // Checked at the end, so that one run reports every step.
  if (peak - base >= 32 * 1048576) late.push(`RSS grew by ${mib(peak - base)} MiB during the ${dlMib} MiB download`);
  await sb.files.remove('/home/user/big');
}

beat('examples/exec-roundtrip.mjs');
{
  const ex = path.join(path.dirname(process.env.MCP_BIN), '..', 'examples', 'exec-roundtrip.mjs');
  const ms = execFileSync(process.execPath, [ex, process.env.KILN_SOCKET, sb.id, '5']).toString();
  assert.match(ms, /^\d+\.\d{3}\n$/);
  console.log(`sdk_js: exec round trip through the SDK, median of 5: ${ms.trim()} ms (nested harness)`);
}

beat('pause, resume, checkpoint, fork');
assert.equal((await sb.pause()).state, 'paused');
await rejects(sb.exec(['true']), kiln.WrongStateError, 'exec while paused');
assert.equal((await sb.resume()).state, 'running');
await sb.files.write('/home/user/mark', 'before\n');
const cp = await sb.checkpoints.create('c1');
assert.equal(cp.name, 'c1');
assert.deepEqual((await sb.checkpoints.list()).map((c) => c.name), ['c1']);
assert.equal((await sb.checkpoints.get('c1')).sandbox_id, sb.id);
await rejects(sb.checkpoints.create('c1'), kiln.ExistsError, 'checkpoint name taken');
const fork = await sb.fork('c1', { hostname: 'forked' });
assert.equal(fork.info.boot.from, 'checkpoint');
assert.equal((await fork.exec('cat /home/user/mark; hostname')).stdout, 'before\nforked\n');
await fork.close();
await rejects(fork.refresh(), kiln.SandboxNotFoundError, 'deleted fork');

beat('restore, hibernate, wake');
await sb.files.write('/home/user/mark', 'after\n');
assert.equal((await sb.checkpoints.restore('c1')).boot.from, 'checkpoint');
assert.equal(await sb.files.readText('/home/user/mark'), 'before\n');
assert.equal((await sb.hibernate()).state, 'hibernated');
assert.equal((await sb.wake()).state, 'running');
assert.equal((await sb.exec('cat /home/user/mark')).stdout, 'before\n');
await sb.checkpoints.delete('c1');
assert.deepEqual(await sb.checkpoints.list(), []);
assert.equal((await sb.refresh()).state, 'running');

beat('kilnd SIGKILLed mid-stream');
{
  const stream = await sb.execStream('while true; do echo tick; sleep 0.2; done');
  const errors = [];
  let ticks = 0;
  const t1 = Date.now();
  try {
    for await (const ev of stream) {
      if (ev.type === 'stdout' && ++ticks === 1) process.kill(Number(process.env.KILND_PID), 'SIGKILL');
    }
  } catch (e) {
    errors.push(e);
  }
  assert.equal(errors.length, 1, 'one error');
  assert.ok(errors[0] instanceof kiln.KilnConnectionError, `${errors[0].name}: ${errors[0].message}`);
  assert.match(errors[0].message, /is kilnd running\? start it or set KILN_SOCKET/);
  console.log(`sdk_js: kilnd killed mid-stream -> ${errors[0].name} after ${Date.now() - t1} ms: ${errors[0].message}`);
  await rejects(k.health(), kiln.KilnConnectionError, 'health with kilnd dead');
}
console.log(`SANDBOX ${sb.id}`);
beat('coverage done');
assert.deepEqual(late, []);
