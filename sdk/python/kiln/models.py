"""What kilnd's answers become: results and stream events (docs/api.md).
Every object keeps kilnd's whole JSON object as ``raw``, so a field this SDK
does not name yet is still there."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Optional

from .errors import KilnProtocolError, error_from_body

__all__ = [
    "ExecResult", "RunResult", "CodeError", "Event", "OutputEvent", "ExitEvent",
    "ResultEvent", "AttachedEvent", "GapEvent", "WatchEvent", "FileInfo", "event_from",
]


def _decode(obj: dict[str, Any], key: str) -> bytes:
    """An output field: text, or base64 when its ``*_encoding`` (or a
    ``data_base64`` key) says so."""
    b64 = obj.get(key + "_base64")
    if isinstance(b64, str):
        return _b64(b64)
    value = obj.get(key)
    if value is None:
        return b""
    if not isinstance(value, str):
        raise KilnProtocolError(f"kilnd's {key!r} is not a string")
    if obj.get(key + "_encoding") == "base64":
        return _b64(value)
    return value.encode("utf-8")


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as e:
        raise KilnProtocolError(f"kilnd sent bad base64: {e}") from None


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


@dataclass
class ExecResult:
    """A finished command. A non-zero exit is not an exception: look at
    ``exit_code`` (``None`` when a signal ended it: ``signal``)."""

    exit_code: Optional[int]
    signal: Optional[int]
    timed_out: bool
    stdout_raw: bytes
    stderr_raw: bytes
    raw: dict[str, Any] = field(repr=False)

    @property
    def stdout(self) -> str:
        return _text(self.stdout_raw)

    @property
    def stderr(self) -> str:
        return _text(self.stderr_raw)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def pid(self) -> Optional[int]:
        return self.raw.get("pid")

    @property
    def duration_ms(self) -> Optional[float]:
        return self.raw.get("duration_ms")

    @property
    def stdout_truncated(self) -> bool:
        return bool(self.raw.get("stdout_truncated"))

    @property
    def stderr_truncated(self) -> bool:
        return bool(self.raw.get("stderr_truncated"))

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "ExecResult":
        return cls(obj.get("exit_code"), obj.get("signal"), bool(obj.get("timed_out")),
                   _decode(obj, "stdout"), _decode(obj, "stderr"), obj)


@dataclass
class CodeError:
    """Why a run failed: ``result.error(...)`` (type ``ResultError``) or an
    uncaught exception (its type, message and traceback)."""

    type: str
    message: str
    traceback: Optional[str]

    @classmethod
    def from_json(cls, obj: Any) -> Optional["CodeError"]:
        if not isinstance(obj, dict):
            return None
        return cls(str(obj.get("type", "")), str(obj.get("message", "")), obj.get("traceback"))


@dataclass
class RunResult(ExecResult):
    """``run_code``'s answer: the command's result plus ``result`` (the value
    given to ``result.set``, or None) and ``error``."""

    result: Any = None
    error: Optional[CodeError] = None

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "RunResult":
        return cls(obj.get("exit_code"), obj.get("signal"), bool(obj.get("timed_out")),
                   _decode(obj, "stdout"), _decode(obj, "stderr"), obj,
                   obj.get("result"), CodeError.from_json(obj.get("error")))


@dataclass
class Event:
    """One event of a stream; ``type`` as in docs/api.md, ``raw`` the whole
    JSON object."""

    type: str
    raw: dict[str, Any] = field(repr=False)


@dataclass
class OutputEvent(Event):
    """``stdout`` / ``stderr``: ``data`` the bytes, ``text`` decoded;
    ``seq`` the first byte's sequence number (process output) or None."""

    data: bytes = b""
    seq: Optional[int] = None

    @property
    def text(self) -> str:
        return _text(self.data)


@dataclass
class ExitEvent(Event):
    """``exit``: the command's end (the stream's last event, but for run's
    ``result``)."""

    exit_code: Optional[int] = None
    signal: Optional[int] = None
    timed_out: bool = False


@dataclass
class ResultEvent(Event):
    """``result``: run_code's structured result, after ``exit``."""

    result: Any = None
    error: Optional[CodeError] = None


@dataclass
class AttachedEvent(Event):
    """``attached``: first event of a process output stream; ``seq`` is the
    first byte it covers."""

    seq: int = 0
    running: bool = False


@dataclass
class GapEvent(Event):
    """``gap``: ``bytes`` bytes from ``seq`` were overwritten in the ring
    before this reader got them."""

    seq: int = 0
    bytes: int = 0


@dataclass
class WatchEvent(Event):
    """A file-watch event: ``watching``, ``create``, ``modify``, ``delete``,
    ``rename`` (``old_path``), ``overflow``, ``end`` (``reason``)."""

    path: Optional[str] = None
    old_path: Optional[str] = None
    is_dir: bool = False
    seq: Optional[int] = None
    reason: Optional[str] = None


def event_from(obj: dict[str, Any], watch: bool = False) -> Event:
    """The typed event for one NDJSON object. An ``error`` event raises the
    exception of its code (the stream failed after it started)."""
    t = obj["type"]
    if t == "error":
        raise error_from_body(None, obj.get("error"))
    if watch:
        return WatchEvent(t, obj, obj.get("path"), obj.get("old_path"), bool(obj.get("is_dir")),
                          obj.get("seq"), obj.get("reason"))
    if t in ("stdout", "stderr"):
        return OutputEvent(t, obj, _decode(obj, "data"), obj.get("seq"))
    if t == "exit":
        return ExitEvent(t, obj, obj.get("exit_code"), obj.get("signal"), bool(obj.get("timed_out")))
    if t == "result":
        return ResultEvent(t, obj, obj.get("result"), CodeError.from_json(obj.get("error")))
    if t == "attached":
        return AttachedEvent(t, obj, int(obj.get("seq") or 0), bool(obj.get("running")))
    if t == "gap":
        return GapEvent(t, obj, int(obj.get("seq") or 0), int(obj.get("bytes") or 0))
    return Event(t, obj)


def build_event_from(obj: dict[str, Any]) -> Event:
    """One line of a template build's log (docs/api.md, "POST
    /v1/templates"): ``stdout``/``stderr`` as :class:`OutputEvent`, the
    others (``step``, ``cached``, ``copied``, ``ready``, ``step_end``,
    ``result``) as :class:`Event` with their fields in ``raw``. An
    ``error`` line raises the exception of its code, its ``step`` and
    ``line`` set."""
    t = obj["type"]
    if t == "error":
        e = error_from_body(None, obj.get("error"))
        step, line = obj.get("step"), obj.get("line")
        e.step = step if isinstance(step, int) else None
        e.line = line if isinstance(line, int) else None
        raise e
    if t in ("stdout", "stderr"):
        return OutputEvent(t, obj, _decode(obj, "data"), obj.get("seq"))
    if t == "result" and not isinstance(obj.get("template"), dict):
        raise KilnProtocolError(f"kilnd's build log: a result line without a template object: {str(obj)[:120]}")
    return Event(t, obj)


@dataclass
class FileInfo:
    """A guest file's metadata (``stat``, an entry of ``list``)."""

    path: str
    kind: str
    size: int
    mode: int
    raw: dict[str, Any] = field(repr=False)

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"

    @property
    def is_file(self) -> bool:
        return self.kind == "file"

    @property
    def target(self) -> Optional[str]:
        return self.raw.get("target")

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "FileInfo":
        return cls(str(obj.get("path", "")), str(obj.get("kind", "")), int(obj.get("size") or 0),
                   int(obj.get("mode") or 0), obj)
