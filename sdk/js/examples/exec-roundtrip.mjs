#!/usr/bin/env node
// Prints the median round trip, in ms, of an SDK exec of ["true"]:
//   node examples/exec-roundtrip.mjs SOCKET SANDBOX_ID N
// (one warm-up exec first, not counted). Used by bench/ beside the CLI's.
import { Kiln, Sandbox } from '../src/index.js';

const [socket, id, nArg] = process.argv.slice(2);
const n = Number(nArg);
if (!socket || !id || !Number.isInteger(n) || n < 1) {
  process.stderr.write('usage: exec-roundtrip.mjs SOCKET SANDBOX_ID N\n');
  process.exit(2);
}
const sandbox = new Sandbox(new Kiln({ socket }), { id });
const times = [];
await sandbox.exec(['true']);
for (let i = 0; i < n; i++) {
  const t0 = process.hrtime.bigint();
  await sandbox.exec(['true']);
  times.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
times.sort((a, b) => a - b);
const mid = times.length >> 1;
const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
process.stdout.write(`${median.toFixed(3)}\n`);
