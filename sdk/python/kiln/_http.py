"""HTTP/1.1 for kilnd's socket without I/O: request bytes, an incremental
response parser and an NDJSON line splitter, shared by the synchronous and
the asyncio transports. kilnd is strict about framing (docs/api.md,
"Connections"), so requests are written exactly; responses are read as
hostile input: every length is bounded and every framing error is a
:class:`KilnProtocolError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from .errors import KilnError, KilnProtocolError, error_from_body

# A response head (status line and headers) larger than this is refused:
# kilnd's own are a few hundred bytes; a bigger one is not kilnd.
MAX_HEAD = 64 * 1024
# A chunk-size line (hex digits, extensions) longer than this is refused.
MAX_CHUNK_LINE = 1024
# One NDJSON event at most: an output event carries at most one agent chunk
# (64 KiB, base64 grows it by a third); anything near this is not kilnd.
MAX_EVENT_LINE = 16 * 1024 * 1024
# A JSON body is read whole; kilnd's largest (a file listing of 10^6
# entries) stays below this.
MAX_JSON_BODY = 512 * 1024 * 1024

QueryValue = Union[str, int, bool, None]
Query = Union[Mapping[str, QueryValue], Sequence[tuple[str, QueryValue]]]


def seg(value: Union[str, int]) -> str:
    """One path segment (an id, a name), percent-encoded whole: kilnd routes
    paths as sent, so a ``/`` in a name never becomes a path separator."""
    return quote(str(value), safe="")


def _query_value(v: Union[str, int, bool]) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def target(path: str, query: Optional[Query] = None) -> str:
    """``path`` plus its query string; ``None`` values are left out. Values
    are percent-encoded (``+`` as ``%2B``: kilnd reads ``+`` as a space)."""
    if not query:
        return path
    items = query.items() if isinstance(query, Mapping) else query
    parts = [f"{quote(k, safe='')}={quote(_query_value(v), safe='/')}"
             for k, v in items if v is not None]
    return path + ("?" + "&".join(parts) if parts else "")


def request_head(method: str, tgt: str, *, content_length: Optional[int] = None,
                 chunked: bool = False, content_type: Optional[str] = None,
                 expect_continue: bool = False,
                 extra: Iterable[tuple[str, str]] = ()) -> bytes:
    """A request head kilnd reads one way only: CRLF lines, one ``Host``, at
    most one of ``Content-Length`` / ``Transfer-Encoding: chunked``."""
    if chunked and content_length is not None:
        raise ValueError("a request body is either chunked or has a Content-Length")
    lines = [f"{method} {tgt} HTTP/1.1", "Host: kiln", "User-Agent: kiln-python/0.1"]
    if content_length is not None:
        lines.append(f"Content-Length: {content_length}")
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    if expect_continue:
        lines.append("Expect: 100-continue")
    lines.extend(f"{k}: {v}" for k, v in extra)
    for line in lines:
        if "\r" in line or "\n" in line:
            raise ValueError(f"request head line {line!r} holds a line break")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def json_body(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked request body (never the empty last one)."""
    return b"%x\r\n%s\r\n" % (len(data), data)


LAST_CHUNK = b"0\r\n\r\n"


def request(method: str, path: str, query: Optional[Query], json: Any, data: Optional[bytes],
            content_type: Optional[str]) -> tuple[str, bytes]:
    """A request with its body held in memory (JSON or bytes): what to call
    it in messages ("POST /v1/sandboxes") and the bytes to send."""
    if json is not None:
        data = json_body(json)
        content_type = "application/json"
    head = request_head(method, target(path, query), content_length=None if data is None else len(data),
                        content_type=content_type)
    return f"{method} {path}", head + (data or b"")


def upload_head(method: str, path: str, query: Optional[Query], length: Optional[int],
                content_type: str) -> bytes:
    """A streamed upload's head: chunked unless the length is known, sent
    before the body only once kilnd says ``100 Continue``."""
    return request_head(method, target(path, query), content_length=length, chunked=length is None,
                        content_type=content_type, expect_continue=True)


class UploadBody:
    """An upload's blocks as they go on the wire (chunks, unless the length
    was announced), and a check that the source gave what was announced."""

    def __init__(self, path: str, length: Optional[int]) -> None:
        self.path = path
        self.length = length
        self.sent = 0

    def block(self, data: bytes) -> bytes:
        self.sent += len(data)
        return chunk(data) if self.length is None else data

    def end(self) -> bytes:
        if self.length is None:
            return LAST_CHUNK
        if self.sent != self.length:
            raise KilnError(f"upload to {self.path}: the source gave {self.sent} bytes, "
                            f"not the {self.length} announced")
        return b""


class BodyLimit:
    """A whole answer read into memory, refused past ``limit`` bytes."""

    def __init__(self, limit: int, status: int) -> None:
        self.limit = limit
        self.status = status
        self.out = bytearray()

    def add(self, data: bytes) -> None:
        self.out += data
        if len(self.out) > self.limit:
            raise KilnError(f"kilnd's answer is over {self.limit} bytes", status=self.status)


@dataclass
class Head:
    status: int
    reason: str
    headers: dict[str, str] = field(default_factory=dict)

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())


class Truncated(Exception):
    """The connection ended before the response did (the transports turn it
    into a :class:`KilnConnectionError` naming the socket)."""


# Parser states.
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILER, _UNTIL_EOF, _DONE = range(8)


class ResponseParser:
    """An incremental HTTP/1.1 response reader. ``feed`` bytes as they come
    (``feed(b"")`` at EOF), then ask ``head()`` once it is complete and take
    the body with ``body()``, which returns what has been decoded so far.
    ``done`` is true after the body's end; ``leftover`` holds bytes that
    came after it (none from kilnd, which answers one request at a time).

    ``no_body``: the request was HEAD (no body whatever the headers say).
    """

    def __init__(self, *, no_body: bool = False) -> None:
        self._buf = bytearray()
        self._state = _HEAD
        self._no_body = no_body
        self._remaining = 0
        self._out = bytearray()
        self._eof = False
        self.head_: Optional[Head] = None
        self.keep_alive = True
        self.received_any = False
        self.continued = False

    @property
    def done(self) -> bool:
        return self._state == _DONE

    @property
    def leftover(self) -> bytes:
        return bytes(self._buf) if self._state == _DONE else b""

    def feed(self, data: bytes) -> None:
        if not data:
            self._eof = True
        else:
            self.received_any = True
            self._buf += data
        self._advance()

    def head(self) -> Optional[Head]:
        return self.head_

    def body(self) -> bytes:
        out = bytes(self._out)
        self._out.clear()
        return out

    def needs_data(self) -> bool:
        """True while more input is needed for a head or body bytes."""
        if self.head_ is None:
            return True
        return not self._out and self._state != _DONE

    def _advance(self) -> None:
        while True:
            before = (self._state, len(self._buf))
            if self._state == _HEAD:
                self._parse_head()
            elif self._state == _LENGTH:
                self._take(_DONE)
            elif self._state == _UNTIL_EOF:
                self._out += self._buf
                self._buf.clear()
                if self._eof:
                    self._state = _DONE
            elif self._state == _CHUNK_SIZE:
                self._parse_chunk_size()
            elif self._state == _CHUNK_DATA:
                self._take(_CHUNK_CRLF)
            elif self._state == _CHUNK_CRLF:
                if len(self._buf) >= 2:
                    if self._buf[:2] != b"\r\n":
                        raise KilnProtocolError("kilnd's chunked response: a chunk does not end in CRLF")
                    del self._buf[:2]
                    self._state = _CHUNK_SIZE
            elif self._state == _TRAILER:
                line = self._line(MAX_HEAD, "a trailer line")
                if line is not None:
                    if line == b"":
                        self._state = _DONE
            if self._state == _DONE:
                return
            if (self._state, len(self._buf)) == before:
                break
        if self._eof and self._state != _DONE:
            if self.head_ is None and not self.received_any:
                raise Truncated("the connection closed before any answer")
            raise Truncated("the connection closed before the end of the response")

    def _take(self, then: int) -> None:
        """Body bytes of a known length (the body's or a chunk's); state
        ``then`` once they are all in."""
        take = min(self._remaining, len(self._buf))
        self._out += self._buf[:take]
        del self._buf[:take]
        self._remaining -= take
        if self._remaining == 0:
            self._state = then

    def _line(self, limit: int, what: str) -> Optional[bytes]:
        i = self._buf.find(b"\n")
        if i < 0:
            if len(self._buf) > limit:
                raise KilnProtocolError(f"kilnd's response: {what} is over {limit} bytes")
            return None
        if i > limit:
            raise KilnProtocolError(f"kilnd's response: {what} is over {limit} bytes")
        line = bytes(self._buf[:i])
        del self._buf[:i + 1]
        if not line.endswith(b"\r"):
            raise KilnProtocolError(f"kilnd's response: {what} does not end in CRLF")
        return line[:-1]

    def _parse_head(self) -> None:
        end = self._buf.find(b"\r\n\r\n")
        bare = self._buf.find(b"\n\n")
        if bare >= 0 and (end < 0 or bare < end):
            raise KilnProtocolError("kilnd's response head has bare LF line ends: not kilnd")
        if end < 0:
            if len(self._buf) > MAX_HEAD:
                raise KilnProtocolError(f"kilnd's response head is over {MAX_HEAD} bytes: not kilnd")
            return
        if end > MAX_HEAD:
            raise KilnProtocolError(f"kilnd's response head is over {MAX_HEAD} bytes: not kilnd")
        raw = bytes(self._buf[:end])
        del self._buf[:end + 4]
        try:
            text = raw.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes anything
            raise KilnProtocolError("kilnd's response head is not text")
        lines = text.split("\r\n")
        if any("\n" in line or "\r" in line for line in lines):
            raise KilnProtocolError("kilnd's response head has a bare CR or LF: not kilnd")
        status_line = lines[0].split(" ", 2)
        if len(status_line) < 2 or status_line[0] not in ("HTTP/1.1", "HTTP/1.0") \
                or not status_line[1].isdigit() or len(status_line[1]) != 3:
            raise KilnProtocolError(f"not an HTTP/1.1 response from kilnd: {lines[0][:80]!r}")
        status = int(status_line[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise KilnProtocolError(f"kilnd's response: bad header line {line[:80]!r}")
            key = name.lower()
            value = value.strip()
            if key in headers:
                if key in ("content-length", "transfer-encoding"):
                    raise KilnProtocolError(f"kilnd's response has two {name} headers")
                headers[key] += ", " + value
            else:
                headers[key] = value
        if 100 <= status < 200 and status != 101:
            self.continued = True
            return  # 100 Continue: the final answer follows
        head = Head(status, status_line[2] if len(status_line) > 2 else "", headers)
        self.head_ = head
        if status_line[0] == "HTTP/1.0" or "close" in headers.get("connection", "").lower():
            self.keep_alive = False
        te = headers.get("transfer-encoding")
        cl = headers.get("content-length")
        if self._no_body or status in (101, 204, 304):
            self._state = _DONE
        elif te is not None:
            if te.lower() != "chunked" or cl is not None:
                raise KilnProtocolError(f"kilnd's response: Transfer-Encoding {te!r} is not chunked alone")
            self._state = _CHUNK_SIZE
        elif cl is not None:
            if not cl.isdigit() or len(cl) > 18:
                raise KilnProtocolError(f"kilnd's response: Content-Length {cl[:40]!r} is not a number")
            self._remaining = int(cl)
            self._state = _LENGTH if self._remaining else _DONE
        else:
            self.keep_alive = False
            self._state = _UNTIL_EOF

    def _parse_chunk_size(self) -> None:
        line = self._line(MAX_CHUNK_LINE, "a chunk-size line")
        if line is None:
            return
        size_text = line.split(b";", 1)[0].strip()
        if not size_text or len(size_text) > 15 or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
            raise KilnProtocolError(f"kilnd's chunked response: bad chunk size {line[:40]!r}")
        size = int(size_text, 16)
        if size == 0:
            self._state = _TRAILER
        else:
            self._remaining = size
            self._state = _CHUNK_DATA


def upgrade_head(method: str, path: str, query: Optional[Query], protocol: str) -> bytes:
    """A protocol switch's request (``Connection: Upgrade``, ``Upgrade: PROTOCOL``)."""
    return request_head(method, target(path, query), extra=(("Connection", "Upgrade"), ("Upgrade", protocol)))


def check_switched(head: Head, protocol: str, what: str) -> None:
    """A non-error answer to a protocol switch must be its ``101``."""
    if head.status != 101:
        raise KilnProtocolError(f"{what}: kilnd answered HTTP {head.status}, not 101 Switching Protocols "
                                f"to {protocol} (a kilnd older than this SDK?)", status=head.status)
    if (head.header("upgrade") or "").lower() != protocol:
        raise KilnProtocolError(f"{what}: kilnd switched to {head.header('upgrade')!r}, not {protocol}")


class LineSplitter:
    """NDJSON: bytes in, JSON objects out, one per line, bounded."""

    def __init__(self, limit: int = MAX_EVENT_LINE) -> None:
        self._buf = bytearray()
        self._limit = limit

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        return [parse_event(line) for line in self.lines(data)]

    def lines(self, data: bytes) -> list[bytes]:
        """The lines ``data`` completes, not yet parsed (blank ones left out)."""
        self._buf += data
        out: list[bytes] = []
        while True:
            i = self._buf.find(b"\n")
            if i < 0:
                if len(self._buf) > self._limit:
                    raise KilnProtocolError(f"kilnd's stream: an event line is over {self._limit} bytes")
                return out
            line = bytes(self._buf[:i])
            del self._buf[:i + 1]
            if line.strip():
                out.append(line)

    def finish(self) -> None:
        """The stream ended: bytes after the last newline are a cut event."""
        if self._buf.strip():
            raise KilnProtocolError("kilnd's stream ended inside an event line")


def parse_event(line: bytes, key: str = "type", what: str = "kilnd's stream") -> dict[str, Any]:
    """One NDJSON line: an object whose ``key`` (``type``; the decision
    stream's ``kind``) is a str."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise KilnProtocolError(f"{what}: an event is not JSON ({e}): {line[:120]!r}")
    if not isinstance(obj, dict) or not isinstance(obj.get(key), str):
        raise KilnProtocolError(f"{what}: an event is not an object with a {key}: {line[:120]!r}")
    return obj


def decode_json(status: int, body: bytes) -> Any:
    """A 2xx response's JSON body."""
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise KilnProtocolError(f"kilnd's answer (HTTP {status}) is not JSON ({e}): {body[:120]!r}",
                                status=status)


def error_for(status: int, body: bytes) -> KilnError:
    """The exception for an error response (status >= 400)."""
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return KilnProtocolError(f"kilnd answered HTTP {status} with a body that is not JSON: {body[:200]!r}",
                                 status=status)
    err = obj.get("error") if isinstance(obj, dict) else None
    return error_from_body(status, err)
