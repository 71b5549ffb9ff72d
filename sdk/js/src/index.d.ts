// Types of @kiln/sdk (hand-written beside the JavaScript; tests/unit_test
// checks them with tsc --strict and that every runtime export is declared).
// Objects kilnd answers (the sandbox object, checkpoints, ...) are
// docs/api.md's JSON as it comes, snake_case; ExecResult and RunResult are
// the SDK's own, camelCase. No @types/node needed: byte and stream types
// are structural (a Node Buffer is a Bytes, a Readable a ByteSource).

/** Bytes as the SDK returns them (Node Buffers). */
export interface Bytes extends Uint8Array {
  toString(encoding?: string): string;
}

/** An upload's source: a local file path, bytes, or any async iterable of bytes (a Node Readable). */
export type ByteSource = string | Uint8Array | AsyncIterable<Uint8Array | string>;

/** A download's destination: a Node Writable, or anything whose write calls back once it took the chunk. */
export interface WritableLike {
  write(chunk: Uint8Array, callback: (error?: Error | null) => void): boolean;
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A JSON object from kilnd, as docs/api.md describes it. */
export interface KilnObject { [key: string]: any }

export const DEFAULT_SOCKET: string;
export const DEFAULT_TIMEOUT_MS: number;

// ---- errors ---------------------------------------------------------------

export class KilnError extends Error {
  constructor(message: string, opts?: { status?: number; code?: string });
  /** HTTP status; undefined for client-side errors and a stream's error event. */
  status: number | undefined;
  /** kilnd's error code; `connection_error`, `protocol_error`, `client_timeout` for the client's own. */
  code: string | undefined;
  /** Where a template build failed (its log's `error` line); undefined otherwise. */
  step: number | undefined;
  line: number | undefined;
}
export class TimeoutError extends KilnError {}
export class RequestTimeoutError extends TimeoutError {}
export class ClientTimeoutError extends TimeoutError {}
export class KilnConnectionError extends KilnError {}
export class KilnProtocolError extends KilnError {}
export class BadRequestError extends KilnError {}
export class BadJsonError extends KilnError {}
export class MissingFieldError extends KilnError {}
export class UnknownFieldError extends KilnError {}
export class BadFieldError extends KilnError {}
export class TooLargeError extends KilnError {}
export class NotDirectoryError extends KilnError {}
export class IsDirectoryError extends KilnError {}
export class UnsafePathError extends KilnError {}
export class BadArchiveError extends KilnError {}
export class ForbiddenError extends KilnError {}
export class PermissionDeniedError extends KilnError {}
export class RouteNotFoundError extends KilnError {}
export class SandboxNotFoundError extends KilnError {}
export class ImageNotFoundError extends KilnError {}
export class ProcessNotFoundError extends KilnError {}
export class CheckpointNotFoundError extends KilnError {}
export class NotFoundError extends KilnError {}
export class MethodNotAllowedError extends KilnError {}
export class WrongStateError extends KilnError {}
export class LimitReachedError extends KilnError {}
export class ExistsError extends KilnError {}
export class InUseError extends KilnError {}
export class NotEmptyError extends KilnError {}
export class InvalidStateError extends KilnError {}
export class ReadOnlyError extends KilnError {}
export class UnsupportedError extends KilnError {}
export class BodyTooLargeError extends KilnError {}
export class UriTooLongError extends KilnError {}
export class HeadersTooLargeError extends KilnError {}
export class InternalError extends KilnError {}
export class SpawnFailedError extends KilnError {}
export class BootFailedError extends KilnError {}
export class IoError extends KilnError {}
export class AgentProtocolError extends KilnError {}
/** @deprecated The old name of {@link IoError}. */
export const IoErrorError: typeof IoError;
/** @deprecated The old name of {@link AgentProtocolError}. */
export const AgentProtocolErrorError: typeof AgentProtocolError;
export class AgentUnavailableError extends KilnError {}
export class JailUnavailableError extends KilnError {}
export class ShuttingDownError extends KilnError {}
export class TooManyConnectionsError extends KilnError {}
export class BusyError extends KilnError {}
export class HttpVersionNotSupportedError extends KilnError {}
export class NoSpaceError extends KilnError {}
/** 409 no_egress_proxy: an egress policy callback for a sandbox without http rules. */
export class NoEgressProxyError extends KilnError {}
/** Every error code of docs/api.md's table. */
export const ERROR_CODES: string[];
/** `sandbox_not_found` -> `SandboxNotFoundError`. */
export function className(code: string): string;
/** The class of a kilnd error code (KilnError for an unknown one). */
export function errorClass(code: string): typeof KilnError;
/** The error for kilnd's {"error":{"code","message"}}. */
export function fromKiln(code: string, message?: string, status?: number): KilnError;

// ---- client ---------------------------------------------------------------

export interface KilnOptions {
  /** kilnd's API socket: $KILN_SOCKET, else /run/kiln/kiln.sock. */
  socket?: string;
  /** Client deadline of one request in ms (default 300000; 0: none). */
  timeoutMs?: number;
  /** How long a stream (exec and run streams, process output, watch) may
   * stay silent once its head arrived, in ms (default 0: until kilnd ends
   * it). A watch is silent while nothing changes: a limit ends it too. */
  streamTimeoutMs?: number;
}

export class Kiln {
  constructor(opts?: KilnOptions | string);
  readonly socket: string;
  readonly timeoutMs: number;
  readonly streamTimeoutMs: number;
  readonly sandboxes: Sandboxes;
  readonly templates: Templates;
  /** Callable (`kiln.images()` lists them) with list, get, import, delete. */
  readonly images: Images;
  readonly secrets: Secrets;
  health(): Promise<KilnObject>;
  /** Prometheus text. */
  metrics(): Promise<string>;
}

/** kiln.images: GET/POST/DELETE /v1/images. */
export interface Images {
  (): Promise<KilnObject[]>;
  list(): Promise<KilnObject[]>;
  get(name: string): Promise<KilnObject>;
  /** An OCI or docker-save archive (a local path, bytes or a stream), streamed; resolves to the new image.
   * devices: make its device nodes (a root client only); ref: the tag to import from an OCI layout of several;
   * timeoutMs: how long kilnd may stay silent (default an hour). */
  import(name: string, archive: ByteSource, opts?: { devices?: boolean; ref?: string; timeoutMs?: number }): Promise<KilnObject>;
  delete(name: string): Promise<void>;
}

/** Root only: act on another uid's secrets (default: the client's own). */
export interface SecretOptions {
  owner?: number;
}

/** kiln.secrets: named secrets the egress proxy injects (firewall http rules' inject); values never come back. */
export class Secrets {
  /** PUT /v1/secrets/{name}: create or replace; its metadata (name, owner, created, updated). */
  set(name: string, value: string, opts?: SecretOptions): Promise<KilnObject>;
  list(opts?: SecretOptions): Promise<KilnObject[]>;
  get(name: string, opts?: SecretOptions): Promise<KilnObject>;
  delete(name: string, opts?: SecretOptions): Promise<void>;
}

// ---- egress policy callbacks --------------------------------------------

/** A question of kilnd's decision stream, as kilnd sent it (docs/api.md, "The egress decision stream"). */
export interface EgressEvent extends KilnObject {
  kind: 'connect' | 'request';
  /** The question's id (its answer carries it). */
  id: number;
  src: string;
  dst: string;
  name: string | null;
  /** What the static rules decide. */
  static: string;
  rule: number | null;
  /** connect: the TLS flow's protocol and whether a rule decrypts it. */
  proto?: string;
  intercept?: boolean;
  /** request: the connect's id for a decrypted TLS flow, null for plain HTTP. */
  flow?: number | null;
  method?: string;
  path?: string;
  /** The guest's headers (minus the injected ones, named in inject without values). */
  headers?: Array<[string, string]>;
  inject?: string[];
}

/** An answer: egress.allow(), egress.deny(), egress.rules(), or written by hand. */
export interface EgressDecision {
  decision: 'allow' | 'deny' | 'rules';
  /** deny only: 400..599 (default 403). */
  status?: number;
  /** deny only: <= 200 bytes, printable. */
  reason?: string;
  /** allow on a request only: <= 16 each; names HTTP tokens (sent lower-case), values visible ASCII. */
  set_headers?: Record<string, string>;
  remove_headers?: string[];
  setHeaders?: Record<string, string>;
  removeHeaders?: string[];
}

/** A callback's value: an answer, or null/undefined for the static rules' decision; may be a promise. */
export type EgressAnswer = EgressDecision | null | undefined | void;
export type PolicyCallback = (event: EgressEvent) => EgressAnswer | Promise<EgressAnswer>;

export interface PolicyOptions {
  /** How long kilnd waits for each answer, 10..60000 ms (default 2000). */
  deadlineMs?: number;
  /** Then: "deny" (the default: fail closed) or "rules" (the static decision). */
  onTimeout?: 'deny' | 'rules';
  /** A callback that threw or answered what kilnd would refuse (then denied: "policy callback failed"),
   * kilnd's error lines (code answer_refused), the stream's failure; default console.error. */
  onError?: (err: Error, event: KilnObject | null) => unknown;
}

/** A policy callback attached to a sandbox's egress decisions. */
export class EgressPolicy {
  /** kilnd's attached line ({kind, deadline_ms, on_timeout}). */
  readonly attached: KilnObject;
  /** The end line's reason; null until then, or after close(). */
  readonly reason: string | null;
  /** kilnd's error lines: answers it refused. */
  readonly errors: KilnObject[];
  /** True once the stream ended. */
  readonly done: boolean;
  /** The end line's reason (egress_proxy_stopped, sandbox_stopped, kilnd_shutdown); null after close();
   * rejects with KilnConnectionError when the stream was cut without one. */
  wait(): Promise<string | null>;
  /** Detach: kilnd's static rules decide alone again. */
  close(): Promise<void>;
}

/** sb.egress: one policy client per sandbox (BusyError for a second; NoEgressProxyError without http rules). */
export class Egress {
  /** Every connect and request event goes to fn; resolves once attached, fn answering in the background. */
  policy(fn: PolicyCallback, opts?: PolicyOptions): Promise<EgressPolicy>;
  /** Request events only: TLS connects are answered "rules" without fn. */
  onRequest(fn: PolicyCallback, opts?: PolicyOptions): Promise<EgressPolicy>;
}

/** The answers of a policy callback. */
export const egress: {
  allow(opts?: { setHeaders?: Record<string, string>; removeHeaders?: string[]; set_headers?: Record<string, string>; remove_headers?: string[] }): EgressDecision;
  deny(opts?: { status?: number; reason?: string }): EgressDecision;
  rules(): EgressDecision;
};

/** POST /v1/templates: the build context is contextDir (a local directory, packed) or context (a tar.gz). */
export interface BuildOptions {
  contextDir?: string;
  context?: ByteSource;
  /** The build file's path in the context (default Kilnfile, else Dockerfile). */
  file?: string;
  cpus?: number;
  memoryMib?: number;
  diskMib?: number;
  /** build() only: called with each log event as it arrives. */
  onEvent?: (ev: StreamEvent) => unknown;
}

/** A template build's log; `result` is the template after the `result` line; `skipped` what packing left out. */
export class BuildStream implements EventIterable {
  result: KilnObject | null;
  skipped: string[];
  [Symbol.asyncIterator](): AsyncIterator<StreamEvent>;
  close(): Promise<void>;
}

export class Templates {
  /** The build and its template; a failed step throws its error with `step` and `line`. */
  build(name: string, opts: BuildOptions): Promise<KilnObject>;
  buildStream(name: string, opts: BuildOptions): Promise<BuildStream>;
  list(): Promise<KilnObject[]>;
  get(name: string): Promise<KilnObject>;
  delete(name: string): Promise<void>;
}

/** POST /v1/sandboxes fields, camelCase or snake_case (sent snake_case); nested objects go as api.md spells them. */
export interface CreateOptions {
  image?: string;
  cpus?: number;
  memoryMib?: number;
  diskMib?: number;
  hostname?: string;
  env?: Record<string, string>;
  labels?: Record<string, string>;
  /** A host directory ({ host_path, guest_path }) or a client share ({ guest_path, client: true, timeout_ms? }: sb.shares.serve). */
  shares?: Array<{ host_path?: string; guest_path: string; read_only?: boolean; client?: boolean; timeout_ms?: number }>;
  timeoutS?: number;
  idleTimeoutS?: number;
  console?: boolean;
  network?: 'none' | 'passt' | string;
  limits?: { memory_max_mib?: number; pids_max?: number; cpu_max?: number };
  firewall?: KilnObject;
  /** "<sandbox id>/<checkpoint name>": a fork. */
  fromCheckpoint?: string;
  /** A template's name: a sandbox from its ready snapshot (then no image, diskMib, network, firewall). */
  template?: string;
  /** Anything else is passed through; kilnd answers unknown_field for what it does not know. */
  [field: string]: unknown;
}

export class Sandboxes {
  create(spec?: CreateOptions): Promise<Sandbox>;
  list(filter?: { state?: string; label?: string | string[] | Record<string, string> }): Promise<Sandbox[]>;
  get(id: string): Promise<Sandbox>;
}

/** Creates a sandbox, runs fn with it, and deletes it however fn ends. */
export function withSandbox<T>(kiln: Kiln, spec: CreateOptions, fn: (sb: Sandbox) => Promise<T> | T): Promise<T>;

export interface ExecOptions {
  env?: Record<string, string | null>;
  cwd?: string;
  user?: 'user' | 'root' | string;
  /** Text, or bytes (sent as stdin_base64). */
  stdin?: string | Uint8Array;
  timeoutMs?: number;
  confine?: boolean;
  outputCap?: number;
  outputEncoding?: 'auto' | 'base64';
  shell?: boolean;
  /** Stream the output to these as it comes (the exec then uses the NDJSON stream). */
  onStdout?: (text: string, bytes: Bytes) => unknown;
  onStderr?: (text: string, bytes: Bytes) => unknown;
  [field: string]: unknown;
}

export interface RunOptions extends ExecOptions {
  language?: 'python' | 'javascript' | 'typescript' | 'bash' | string;
}

export class ExecResult {
  exitCode: number | null;
  signal: number | null;
  timedOut: boolean;
  /** stdout as UTF-8 text. */
  stdout: string;
  stderr: string;
  stdoutRaw: Bytes;
  stderrRaw: Bytes;
  stdoutBytes?: number;
  stderrBytes?: number;
  stdoutTruncated?: boolean;
  stderrTruncated?: boolean;
  pid?: number;
  durationMs?: number;
  wallUs?: number;
  userUs?: number;
  sysUs?: number;
  /** exitCode === 0 */
  readonly ok: boolean;
  /** kilnd's object as it came. */
  readonly raw: KilnObject;
  [field: string]: unknown;
}

export class RunResult extends ExecResult {
  /** The value the code gave result.set, or null. */
  result: Json;
  error: { type: string; message: string; traceback: string | null } | null;
}

/** A stream event: kilnd's object (`type` first); output events carry `bytes` too, a process's `next`. */
export interface StreamEvent extends KilnObject {
  type: string;
  bytes?: Bytes;
  next?: number;
}

/** Events of a stream; leaving a for-await loop (or close()) closes its connection. */
export interface EventIterable extends AsyncIterable<StreamEvent> {
  close(): Promise<void>;
}

export class EventStream implements EventIterable {
  [Symbol.asyncIterator](): AsyncIterator<StreamEvent>;
  close(): Promise<void>;
}

export class Sandbox {
  readonly id: string;
  /** The last sandbox object kilnd answered. */
  info: KilnObject;
  readonly state: string;
  readonly files: Files;
  readonly processes: Processes;
  readonly ports: Ports;
  readonly previews: Previews;
  readonly checkpoints: Checkpoints;
  readonly firewall: Firewall;
  readonly egress: Egress;
  readonly shares: Shares;
  refresh(): Promise<KilnObject>;
  stop(opts?: { graceMs?: number }): Promise<KilnObject>;
  start(): Promise<KilnObject>;
  pause(): Promise<KilnObject>;
  resume(): Promise<KilnObject>;
  hibernate(): Promise<KilnObject>;
  wake(): Promise<KilnObject>;
  delete(): Promise<void>;
  /** delete(), where a sandbox already gone is fine. */
  close(): Promise<void>;
  /** A new sandbox from this sandbox's checkpoint. */
  fork(checkpointName: string, opts?: CreateOptions): Promise<Sandbox>;
  /** cmd: argv, or a string run by sh -c. A non-zero exit is not an error. */
  exec(cmd: string | string[], opts?: ExecOptions): Promise<ExecResult>;
  execStream(cmd: string | string[], opts?: ExecOptions): Promise<EventStream>;
  runCode(code: string, opts?: RunOptions): Promise<RunResult>;
  runCodeStream(code: string, opts?: RunOptions): Promise<EventStream>;
}

export interface FileQuery { user?: 'user' | 'root' | string; [field: string]: unknown }

export class Files {
  read(path: string, opts?: FileQuery & { offset?: number; length?: number }): Promise<Bytes>;
  readText(path: string, opts?: FileQuery & { offset?: number; length?: number }): Promise<string>;
  /** The file's chunks as they arrive. */
  readStream(path: string, opts?: FileQuery & { offset?: number; length?: number }): Promise<AsyncIterable<Bytes>>;
  write(path: string, data: string | Uint8Array, opts?: WriteOptions): Promise<{ path: string; bytes: number }>;
  /** Streamed: a local path, bytes, or an async iterable of bytes. */
  upload(path: string, source: ByteSource, opts?: WriteOptions): Promise<{ path: string; bytes: number }>;
  /** Streamed into a local path or a Writable; resolves with the byte count. */
  download(path: string, dest: string | WritableLike, opts?: FileQuery & { offset?: number; length?: number }): Promise<number>;
  stat(path: string, opts?: FileQuery & { follow?: boolean }): Promise<KilnObject>;
  list(path: string, opts?: FileQuery & { depth?: number; limit?: number }): Promise<{ path: string; entries: KilnObject[]; count: number; truncated: boolean; skipped: number }>;
  mkdir(path: string, opts?: FileQuery & { parents?: boolean; mode?: number }): Promise<{ path: string }>;
  remove(path: string, opts?: FileQuery & { recursive?: boolean }): Promise<void>;
  rename(from: string, to: string, opts?: FileQuery & { overwrite?: boolean }): Promise<{ from: string; to: string }>;
  watch(path: string, opts?: FileQuery & { recursive?: boolean; maxWatches?: number; queue?: number }): Promise<EventStream>;
  downloadArchive(path: string, opts?: FileQuery): Promise<AsyncIterable<Bytes>>;
  uploadArchive(path: string, source: ByteSource, opts?: FileQuery): Promise<KilnObject>;
  /** A local directory's contents into the guest directory (system tar czf, streamed). */
  uploadDir(localDir: string, path: string, opts?: FileQuery): Promise<KilnObject>;
  /**
   * The guest directory into a local one (made if missing), streamed and extracted by the SDK itself:
   * absolute names, `..`, links leaving localDir and writes through a link already there are refused
   * (UnsafePathError), a corrupt or cut archive is a BadArchiveError; special files are skipped.
   */
  downloadDir(path: string, localDir: string, opts?: FileQuery): Promise<ExtractCounts>;
}

/** What downloadDir extracted; bytes is file data. */
export interface ExtractCounts {
  files: number;
  dirs: number;
  symlinks: number;
  hardlinks: number;
  skipped: number;
  bytes: number;
}

export interface WriteOptions extends FileQuery {
  /** 0o600, or octal text "0600". */
  mode?: number | string;
  parents?: boolean;
  append?: boolean;
  exclusive?: boolean;
  create?: boolean;
}

export interface SpawnOptions extends ExecOptions {
  pty?: boolean;
  rows?: number;
  cols?: number;
  ringBytes?: number;
}

export class Processes {
  spawn(cmd: string | string[], opts?: SpawnOptions): Promise<Process>;
  shell(opts?: { rows?: number; cols?: number; [field: string]: unknown }): Promise<Process>;
  list(): Promise<Process[]>;
  get(id: number): Promise<Process>;
}

export class Process {
  readonly id: number;
  pid: number;
  info: KilnObject;
  refresh(): Promise<KilnObject>;
  /** Output events from `since` (a seq, or "now"); reattach with an event's `next`. follow: false ends once caught up. */
  output(opts?: { since?: number | 'now'; encoding?: 'auto' | 'base64'; follow?: boolean }): Promise<EventIterable>;
  writeStdin(data: string | Uint8Array | null, opts?: { eof?: boolean }): Promise<{ bytes: number; closed: boolean }>;
  signal(sig: string | number, opts?: { group?: boolean }): Promise<void>;
  /** The exit object; TimeoutError when still running after timeoutMs. */
  wait(timeoutMs?: number): Promise<KilnObject>;
  resize(rows: number, cols: number): Promise<void>;
}

export class Ports {
  add(guestPort: number, opts?: { hostPort?: number; target?: 'tcp' | 'vsock'; guestAddress?: string }): Promise<KilnObject>;
  list(): Promise<KilnObject[]>;
  remove(hostPort: number): Promise<void>;
}

export class Previews {
  add(port: number, opts?: { public?: boolean }): Promise<KilnObject>;
  list(): Promise<KilnObject[]>;
  remove(port: number): Promise<void>;
}

export class Checkpoints {
  create(name: string, opts?: { compress?: boolean; incremental?: boolean }): Promise<KilnObject>;
  list(): Promise<KilnObject[]>;
  get(name: string): Promise<KilnObject>;
  delete(name: string): Promise<void>;
  /** In place; resolves with the sandbox object (also kept in sb.info). */
  restore(name: string): Promise<KilnObject>;
}

export class Firewall {
  get(): Promise<KilnObject>;
  set(rules: KilnObject): Promise<KilnObject>;
  log(): Promise<string[]>;
}

/** What a client share's object may implement (each method sync or async; a missing one answers ENOSYS; an Error whose code is an errno name answers it, anything else EIO). */
export interface ShareObject {
  stat?(path: string): { type: 'file' | 'dir'; size: number; mode?: number; mtime?: number } | Promise<{ type: 'file' | 'dir'; size: number; mode?: number; mtime?: number }>;
  readdir?(path: string): Array<{ name: string; type: 'file' | 'dir' }> | Promise<Array<{ name: string; type: 'file' | 'dir' }>>;
  read?(path: string, offset: number, size: number): Uint8Array | string | Promise<Uint8Array | string>;
  write?(path: string, offset: number, data: Bytes): number | void | Promise<number | void>;
  create?(path: string, mode: number): unknown;
  mkdir?(path: string, mode: number): unknown;
  unlink?(path: string): unknown;
  rmdir?(path: string): unknown;
  rename?(path: string, to: string): unknown;
  truncate?(path: string, size: number): unknown;
}

export class ShareServer {
  readonly index: number;
  /** kilnd's messages about replies it refused. */
  readonly errors: string[];
  readonly serving: boolean;
  /** Resolves when the connection ends (close(), kilnd, or the sandbox's VMM ending). */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

export class Shares {
  /** Serve a client share (its index or guest path) with obj until close(); BusyError when another client serves it. */
  serve(share: number | string, obj: ShareObject): Promise<ShareServer>;
}

/** An example ShareObject: a tree in memory. */
export class MemoryFS implements ShareObject {
  constructor(files?: Record<string, string | Uint8Array>, options?: { maxBytes?: number });
  maxBytes: number;
  files: Map<string, Bytes>;
  dirs: Set<string>;
  stat(path: string): { type: 'file' | 'dir'; size: number; mode: number };
  readdir(path: string): Array<{ name: string; type: 'file' | 'dir' }>;
  read(path: string, offset: number, size: number): Bytes;
  write(path: string, offset: number, data: Bytes): number;
  create(path: string, mode?: number): void;
  mkdir(path: string, mode?: number): void;
  unlink(path: string): void;
  rmdir(path: string): void;
  rename(path: string, to: string): void;
  truncate(path: string, size: number): void;
}
