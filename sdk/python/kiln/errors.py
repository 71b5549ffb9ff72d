"""Exceptions of the kiln SDK: one class per kilnd error code (docs/api.md).

Every exception is a :class:`KilnError` with ``status`` (the HTTP status, or
``None`` when no response carried it), ``code`` (kilnd's error code) and
``message``. A program decides by class or ``code``; ``message`` is for
people. Timeouts are also builtin :class:`TimeoutError`s, connection
failures builtin :class:`ConnectionError`s.
"""

from __future__ import annotations

import builtins
from typing import Optional

__all__ = [
    "KilnError", "KilnConnectionError", "KilnProtocolError", "TimeoutError",
    "RequestTimeoutError", "ClientTimeoutError", "error_class", "error_from_body",
]


class KilnError(Exception):
    """Base of every exception the SDK raises. ``step`` and ``line``: where
    a template build failed (its log's ``error`` line), else None."""

    code: str = "error"
    step: Optional[int] = None
    line: Optional[int] = None

    def __init__(self, message: str, *, status: Optional[int] = None,
                 code: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        if code is not None:
            self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class KilnConnectionError(KilnError, builtins.ConnectionError):
    """kilnd could not be reached, or the connection ended before the end of
    a response or stream (kilnd stopped or was killed, or aborted a transfer)."""

    code = "connection_error"


class KilnProtocolError(KilnError):
    """The answer was not kilnd's HTTP/JSON (bad framing, bad JSON, a head
    too large)."""

    code = "protocol_error"


class TimeoutError(KilnError, builtins.TimeoutError):  # noqa: A001 - the documented name
    """kilnd's ``timeout`` (504): the agent's or kiln-vmm's deadline passed.
    Base of every timeout the SDK raises."""

    code = "timeout"


class RequestTimeoutError(TimeoutError):
    """kilnd's ``request_timeout`` (408): the request did not arrive in time."""

    code = "request_timeout"


class ClientTimeoutError(TimeoutError):
    """The client's own deadline passed before kilnd answered (no status)."""

    code = "client_timeout"


# One class per code of api.md's error table: code ``foo_bar`` is
# ``FooBarError`` (the timeouts are the classes above).


class BadRequestError(KilnError):
    code = "bad_request"


class BadJsonError(KilnError):
    code = "bad_json"


class MissingFieldError(KilnError):
    code = "missing_field"


class UnknownFieldError(KilnError):
    code = "unknown_field"


class BadFieldError(KilnError):
    code = "bad_field"


class TooLargeError(KilnError):
    code = "too_large"


class NotDirectoryError(KilnError):
    code = "not_directory"


class IsDirectoryError(KilnError):
    code = "is_directory"


class UnsafePathError(KilnError):
    code = "unsafe_path"


class BadArchiveError(KilnError):
    code = "bad_archive"


class ForbiddenError(KilnError):
    code = "forbidden"


class PermissionDeniedError(KilnError):
    code = "permission_denied"


class RouteNotFoundError(KilnError):
    code = "route_not_found"


class SandboxNotFoundError(KilnError):
    code = "sandbox_not_found"


class ImageNotFoundError(KilnError):
    code = "image_not_found"


class ProcessNotFoundError(KilnError):
    code = "process_not_found"


class CheckpointNotFoundError(KilnError):
    code = "checkpoint_not_found"


class NotFoundError(KilnError):
    code = "not_found"


class MethodNotAllowedError(KilnError):
    code = "method_not_allowed"


class WrongStateError(KilnError):
    code = "wrong_state"


class LimitReachedError(KilnError):
    code = "limit_reached"


class ExistsError(KilnError):
    code = "exists"


class InUseError(KilnError):
    code = "in_use"


class NotEmptyError(KilnError):
    code = "not_empty"


class InvalidStateError(KilnError):
    code = "invalid_state"


class ReadOnlyError(KilnError):
    code = "read_only"


class UnsupportedError(KilnError):
    code = "unsupported"


class BodyTooLargeError(KilnError):
    code = "body_too_large"


class UriTooLongError(KilnError):
    code = "uri_too_long"


class HeadersTooLargeError(KilnError):
    code = "headers_too_large"


class InternalError(KilnError):
    code = "internal"


class SpawnFailedError(KilnError):
    code = "spawn_failed"


class BootFailedError(KilnError):
    code = "boot_failed"


class IoError(KilnError):
    code = "io_error"


class AgentProtocolError(KilnError):
    code = "agent_protocol_error"


class AgentUnavailableError(KilnError):
    code = "agent_unavailable"


class JailUnavailableError(KilnError):
    code = "jail_unavailable"


class TooManyConnectionsError(KilnError):
    code = "too_many_connections"


class ShuttingDownError(KilnError):
    code = "shutting_down"


class BusyError(KilnError):
    code = "busy"


class HttpVersionNotSupportedError(KilnError):
    code = "http_version_not_supported"


class NoSpaceError(KilnError):
    code = "no_space"


class NoEgressProxyError(KilnError):
    """``no_egress_proxy`` (409): an egress policy callback for a sandbox
    without ``http`` rules (no flow goes through the egress proxy)."""

    code = "no_egress_proxy"


_BY_CODE: dict[str, type[KilnError]] = {cls.code: cls for cls in (
    TimeoutError, RequestTimeoutError,
    BadRequestError, BadJsonError, MissingFieldError, UnknownFieldError, BadFieldError,
    TooLargeError, NotDirectoryError, IsDirectoryError, UnsafePathError,
    BadArchiveError, ForbiddenError, PermissionDeniedError, RouteNotFoundError,
    SandboxNotFoundError, ImageNotFoundError, ProcessNotFoundError,
    CheckpointNotFoundError, NotFoundError, MethodNotAllowedError, WrongStateError,
    LimitReachedError, ExistsError, InUseError, NotEmptyError, InvalidStateError, ReadOnlyError,
    UnsupportedError, BodyTooLargeError, UriTooLongError, HeadersTooLargeError,
    InternalError, SpawnFailedError, BootFailedError, IoError,
    AgentProtocolError, AgentUnavailableError, JailUnavailableError,
    TooManyConnectionsError, ShuttingDownError, BusyError, HttpVersionNotSupportedError,
    NoSpaceError, NoEgressProxyError,
)}

__all__ += [cls.__name__ for cls in _BY_CODE.values() if cls.__name__ not in __all__]

# Deprecated: the old names of IoError and AgentProtocolError (a code
# ending in "_error" no longer gets a second "Error").
IoErrorError = IoError
AgentProtocolErrorError = AgentProtocolError
__all__ += ["IoErrorError", "AgentProtocolErrorError"]


def error_class(code: str) -> type[KilnError]:
    """The exception class of a kilnd error code; :class:`KilnError` for a
    code this SDK does not know."""
    return _BY_CODE.get(code, KilnError)


def error_from_body(status: Optional[int], err: object) -> KilnError:
    """The exception for kilnd's ``{"code", "message"}`` error object (an
    unknown code gives a plain :class:`KilnError` carrying it)."""
    if not isinstance(err, dict) or not isinstance(err.get("code"), str):
        return KilnProtocolError(
            f"kilnd answered HTTP {status} without an error object: {str(err)[:200]!r}", status=status)
    code = err["code"]
    message = err.get("message")
    if not isinstance(message, str):
        message = code
    return error_class(code)(message, status=status, code=code)
