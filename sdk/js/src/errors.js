// The SDK's error classes: one per kilnd error code (docs/api.md's table),
// plus the client-side ones. Same names as the Python SDK's kiln.errors.

/** Base of every error the SDK throws. */
export class KilnError extends Error {
  constructor(message, { status, code } = {}) {
    super(message);
    this.name = new.target.name;
    /** HTTP status, or undefined for errors that did not come with one. */
    this.status = status;
    /** kilnd's error code (`wrong_state`, ...), or the SDK's own for client-side errors. */
    this.code = code;
    /** Where a template build failed (its log's `error` line), else undefined. */
    this.step = undefined;
    this.line = undefined;
  }
}

/** Any timeout: kilnd's `timeout`, its `request_timeout`, or the client's own deadline. */
export class TimeoutError extends KilnError {}
/** kilnd's 408 `request_timeout`: the request did not reach it in time. */
export class RequestTimeoutError extends TimeoutError {}
/** The client's own deadline passed (no status). */
export class ClientTimeoutError extends TimeoutError {}
/** kilnd unreachable, or it went away mid-request or mid-stream. */
export class KilnConnectionError extends KilnError {}
/** The answer was not kilnd's HTTP/JSON (bad framing, bad JSON, a stream that broke the format). */
export class KilnProtocolError extends KilnError {}

// Every code of docs/api.md's error table. `timeout` and `request_timeout`
// are the timeout classes above.
export const ERROR_CODES = [
  'bad_request', 'bad_json', 'missing_field', 'unknown_field', 'bad_field',
  'too_large', 'not_directory', 'is_directory', 'unsafe_path', 'bad_archive',
  'forbidden', 'permission_denied',
  'route_not_found', 'sandbox_not_found', 'image_not_found', 'process_not_found',
  'checkpoint_not_found', 'not_found',
  'method_not_allowed', 'request_timeout',
  'wrong_state', 'limit_reached', 'exists', 'in_use', 'not_empty', 'invalid_state', 'read_only', 'unsupported',
  'body_too_large', 'uri_too_long', 'headers_too_large',
  'internal', 'spawn_failed', 'boot_failed', 'io_error',
  'agent_protocol_error', 'agent_unavailable', 'jail_unavailable', 'too_many_connections', 'shutting_down', 'busy',
  'timeout', 'http_version_not_supported', 'no_space', 'no_egress_proxy',
];

/** `sandbox_not_found` -> `SandboxNotFoundError`; a code that ends in `_error` gets no second one: `io_error` -> `IoError`. */
export function className(code) {
  const camel = code.split('_').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
  return camel.endsWith('Error') ? camel : `${camel}Error`;
}

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
export class AgentUnavailableError extends KilnError {}
export class JailUnavailableError extends KilnError {}
export class TooManyConnectionsError extends KilnError {}
export class ShuttingDownError extends KilnError {}
export class BusyError extends KilnError {}
export class HttpVersionNotSupportedError extends KilnError {}
export class NoSpaceError extends KilnError {}
/** 409 no_egress_proxy: an egress policy callback for a sandbox without http rules. */
export class NoEgressProxyError extends KilnError {}

/** @deprecated The old name of {@link IoError}. */
export const IoErrorError = IoError;
/** @deprecated The old name of {@link AgentProtocolError}. */
export const AgentProtocolErrorError = AgentProtocolError;

const CLASSES = {
  BadRequestError, BadJsonError, MissingFieldError, UnknownFieldError, BadFieldError,
  TooLargeError, NotDirectoryError, IsDirectoryError, UnsafePathError, BadArchiveError,
  ForbiddenError, PermissionDeniedError, RouteNotFoundError, SandboxNotFoundError,
  ImageNotFoundError, ProcessNotFoundError, CheckpointNotFoundError, NotFoundError,
  MethodNotAllowedError, RequestTimeoutError, WrongStateError, LimitReachedError, ExistsError,
  InUseError, NotEmptyError, InvalidStateError, ReadOnlyError, UnsupportedError, BodyTooLargeError,
  UriTooLongError, HeadersTooLargeError, InternalError, SpawnFailedError, BootFailedError,
  IoError, AgentProtocolError, AgentUnavailableError, JailUnavailableError,
  TooManyConnectionsError, ShuttingDownError, BusyError, TimeoutError, HttpVersionNotSupportedError, NoSpaceError,
  NoEgressProxyError,
};

/** The class for a kilnd error code; KilnError for a code this SDK does not know. */
export function errorClass(code) {
  if (typeof code !== 'string' || !ERROR_CODES.includes(code)) return KilnError;
  return CLASSES[className(code)] || KilnError;
}

/** The error for kilnd's `{"error":{"code","message"}}` (status undefined for a stream's error event). */
export function fromKiln(code, message, status) {
  const Cls = errorClass(code);
  return new Cls(typeof message === 'string' && message ? message : `kilnd answered ${code}`, { status, code });
}
