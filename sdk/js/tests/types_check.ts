// Compiled with tsc --noEmit --strict by the unit tests: the declarations
// must type-check and describe the API as the README uses it.
import { Kiln, withSandbox, KilnError, TimeoutError, SandboxNotFoundError, ExecResult, StreamEvent, BadFieldError, KilnObject, egress, EgressEvent, EgressPolicy } from '../src/index.js';

async function main(): Promise<void> {
  const kiln = new Kiln({ socket: '/run/kiln/kiln.sock', timeoutMs: 1000 });
  const sb = await kiln.sandboxes.create({ image: 'minimal', memoryMib: 256, env: { A: 'b' } });
  const r: ExecResult = await sb.exec(['echo', 'hi'], { timeoutMs: 5000 });
  const code: number | null = r.exitCode;
  const text: string = r.stdout + r.stderrRaw.toString('utf8');
  await sb.files.write('/tmp/a', 'x', { mode: 0o600 });
  const back: string = await sb.files.readText('/tmp/a');
  for await (const ev of await sb.execStream('for i in 1 2; do echo $i; done')) {
    const e: StreamEvent = ev;
    if (e.type === 'stdout' && e.bytes) process_(e.bytes.toString());
  }
  await sb.checkpoints.create('c1');
  const fork = await sb.fork('c1', { hostname: 'f' });
  const run = await fork.runCode('result.set(1)', { language: 'python' });
  const p = await sb.processes.spawn('sleep 1');
  for await (const ev of await p.output({ since: 0 })) if (ev.next !== undefined) break;
  await p.wait(1000);
  await sb.files.download('/tmp/a', '/tmp/b');
  await sb.files.uploadDir('/tmp', '/w');
  const got: number = (await sb.files.downloadDir('/w', '/tmp/w')).files + 0;
  process_(String(got));
  await withSandbox(kiln, { image: 'minimal' }, async (s) => s.id);
  const meta: KilnObject = await kiln.secrets.set('github', 'ghp_x', { owner: 1000 });
  const names: string[] = (await kiln.secrets.list()).map((x) => String(x.name));
  await kiln.secrets.get('github');
  await kiln.secrets.delete('github');
  process_(String(meta.name) + names.join(','));
  try {
    await sb.refresh();
  } catch (e) {
    if (e instanceof SandboxNotFoundError || e instanceof TimeoutError) process_(String(e.status));
    else if (e instanceof KilnError) process_(e.code ?? '');
  }
  process_(String(code) + text + back + String(run.result));
  try {
    const tpl: KilnObject = await kiln.templates.build('web', { contextDir: './ctx', memoryMib: 256, onEvent: (ev) => process_(ev.type) });
    const st = await kiln.templates.buildStream('web', { context: '/tmp/ctx.tgz', file: 'Kilnfile' });
    for await (const ev of st) process_(ev.type);
    const again: KilnObject | null = st.result;
    process_(tpl.name + String(again) + st.skipped.join());
  } catch (e) {
    if (e instanceof BadFieldError) process_(`${e.step} ${e.line}`);
  }
  await kiln.templates.list();
  await kiln.templates.delete('web');
  const web = await kiln.sandboxes.create({ template: 'web' });
  const img: KilnObject = await kiln.images.import('alpine', '/tmp/alpine.tar', { devices: false });
  const all: KilnObject[] = await kiln.images();
  await kiln.images.get(img.name);
  await kiln.images.delete('alpine');
  process_(web.id + String(all.length));
  const policy: EgressPolicy = await sb.egress.policy((ev: EgressEvent) => {
    if (ev.kind === 'request' && ev.method === 'POST' && ev.name !== 'api.github.com') return egress.deny({ status: 403, reason: 'POST only to api.github.com' });
    if (ev.kind === 'request') return egress.allow({ setHeaders: { 'x-agent': 'a1' } });
    return null;
  }, { deadlineMs: 2000, onTimeout: 'deny' });
  const ended: string | null = await policy.wait();
  await policy.close();
  const onReq = await sb.egress.onRequest(async (ev) => (ev.path === '/' ? egress.rules() : undefined), { onError: (e, ev) => process_(e.message + String(ev?.id)) });
  process_(String(ended) + String(onReq.done) + String(policy.attached.deadline_ms));
}

function process_(s: string): void { void s; }
void main;
