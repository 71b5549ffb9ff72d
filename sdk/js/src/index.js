// @kiln/sdk: kilnd's API (docs/api.md) for Node 18+, no dependencies.
export {
  Kiln, Sandboxes, Sandbox, Files, Processes, Process, Ports, Previews, Checkpoints, Firewall,
  ExecResult, RunResult, EventStream, withSandbox,
} from './client.js';
export { Templates, BuildStream } from './templates.js';
export { Secrets } from './secrets.js';
export { Egress, EgressPolicy, egress } from './egress.js';
export * from './errors.js';
export { DEFAULT_SOCKET, DEFAULT_TIMEOUT_MS } from './transport.js';
