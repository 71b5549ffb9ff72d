#!/usr/bin/env node
// kiln-mcp: kiln's MCP server over stdio. Configure an MCP host with
//   {"command":"node","args":["/path/to/sdk/js/bin/kiln-mcp.js"],"env":{"KILN_SOCKET":"/run/kiln/kiln.sock"}}
// KILN_SOCKET: kilnd's socket; KILN_MCP_IMAGE: sandbox_create's default image.
// template_build's context_dir is read here; a relative one is resolved
// against this process's working directory; KILN_MCP_CONTEXT_ROOT confines
// it to directories beneath one.
import { serve } from '../src/mcp.js';
import { Kiln } from '../src/client.js';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write('usage: kiln-mcp\n\nkiln\'s MCP server on stdin/stdout (newline-delimited JSON-RPC 2.0).\n'
    + 'Environment: KILN_SOCKET (kilnd\'s socket, default /run/kiln/kiln.sock), KILN_MCP_IMAGE (default image, "minimal").\n'
    + 'template_build reads its context_dir on this machine: a relative one is resolved against this working directory;\n'
    + 'KILN_MCP_CONTEXT_ROOT=DIR allows only directories beneath DIR.\n');
  process.exit(0);
}
process.stdout.on('error', () => process.exit(0)); // the host went away
await serve({
  input: process.stdin,
  output: process.stdout,
  kiln: new Kiln(),
  log: (m) => process.stderr.write(`${m}\n`),
});
