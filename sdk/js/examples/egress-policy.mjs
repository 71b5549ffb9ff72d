#!/usr/bin/env node
// An egress policy callback: the sandbox may POST to api.github.com only;
// every other request it makes gets an x-agent header; TLS connects are
// left to the sandbox's static rules.
//   KILN_SOCKET=/run/kiln/kiln.sock node examples/egress-policy.mjs SANDBOX_ID
// The sandbox needs http rules in its firewall (its flows then go through
// the egress proxy; docs/api.md, "The egress decision stream"). Prints each
// decision; runs until the stream ends (the sandbox stops) or Ctrl-C.
import { Kiln, egress } from '../src/index.js';

const [id] = process.argv.slice(2);
if (!id) {
  process.stderr.write('usage: egress-policy.mjs SANDBOX_ID\n');
  process.exit(2);
}
const sb = await new Kiln().sandboxes.get(id);
const policy = await sb.egress.policy((ev) => {
  if (ev.kind !== 'request') return null; // a TLS connect: the static rules decide
  const where = `${ev.method} ${ev.name}${ev.path}`;
  if (ev.method === 'POST' && ev.name !== 'api.github.com') {
    console.log(`deny ${where}`);
    return egress.deny({ status: 403, reason: 'POST only to api.github.com' });
  }
  console.log(`allow ${where}`);
  return egress.allow({ setHeaders: { 'x-agent': 'kiln-example' } });
}, { deadlineMs: 2000, onTimeout: 'deny' });
process.on('SIGINT', () => { policy.close(); });
console.log(`ended: ${await policy.wait()}`);
