"""The synchronous transport: HTTP/1.1 over kilnd's Unix socket with blocking
sockets, a small keep-alive pool, a deadline on every blocking call.
Thread-safe: each request has a connection of its own while it runs.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from typing import Any, Callable, Generic, Iterable, Iterator, Mapping, Optional, TypeVar

from . import _http, _tario
from ._http import Head, ResponseParser, Truncated
from .errors import ClientTimeoutError, KilnConnectionError, KilnError

T = TypeVar("T")
C = TypeVar("C")  # a transport's connection

# Idle keep-alive connections kept, and how long: kilnd closes an idle one
# after its --client-timeout (30 s by default, 1 s at the least); one found
# closed is replaced (below) before anything is sent twice.
POOL_SIZE = 4
POOL_IDLE_S = 10.0
READ_SIZE = 64 * 1024


def connection_error(socket_path: str, what: str) -> KilnConnectionError:
    return KilnConnectionError(
        f"kilnd at {socket_path}: {what}; is kilnd running? start it or set KILN_SOCKET")


def deadline_error(socket_path: str, what: str, timeout_s: Optional[float], client: str) -> ClientTimeoutError:
    return ClientTimeoutError(
        f"kilnd at {socket_path} did not answer {what} within {timeout_s or 0:g} s "
        f"(the client's deadline: raise {client}(timeout=...) for slow operations)")


def cut_short(socket_path: str, what: str) -> KilnConnectionError:
    return connection_error(socket_path, f"the connection ended before the end of the answer to {what} "
                                         "(kilnd stopped, or the transfer failed in kilnd)")


def no_answer(socket_path: str, what: str) -> KilnConnectionError:
    return connection_error(socket_path, f"the connection closed before the answer to {what}")


def io_failed(socket_path: str, what: str, e: OSError) -> KilnConnectionError:
    return connection_error(socket_path, f"{what}: {e.strerror or e}")


def connect_failed(socket_path: str, e: OSError) -> KilnConnectionError:
    if isinstance(e, PermissionError):
        return KilnConnectionError(
            f"kilnd at {socket_path}: permission denied; ask for kilnd's --allow-uid/--allow-gid "
            "and the socket's group (--socket-group)")
    return connection_error(socket_path, f"cannot connect ({e.strerror or e})")


def _deadline(timeout: Optional[float]) -> Optional[float]:
    return None if timeout is None else time.monotonic() + timeout


class Deadline:
    """A connection's time: one deadline for all its calls, or a timeout for
    each read (a stream: silence between events). Both transports' connections
    are one; ``client`` names the class whose timeout= to raise."""

    client = "Kiln"

    def __init__(self, transport: Any, what: str) -> None:
        self.t = transport
        self.what = what  # "POST /v1/..." for messages
        self.deadline: Optional[float] = None
        self.timeout_s: Optional[float] = None
        self.per_read = False

    def set_deadline(self, timeout: Optional[float]) -> None:
        """Every blocking call from now on ends within ``timeout`` in all."""
        self.timeout_s = timeout
        self.deadline = _deadline(timeout)
        self.per_read = False

    def set_per_read(self, timeout: Optional[float]) -> None:
        """Each read may wait ``timeout`` (a stream: silence between events)."""
        self.timeout_s = timeout
        self.deadline = None
        self.per_read = True

    def _left(self) -> Optional[float]:
        """What the next call may wait (None: no limit); past the deadline,
        raises the client's timeout."""
        if self.per_read or self.deadline is None:
            return self.timeout_s if self.per_read else None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self.timed_out()
        return left

    def timed_out(self) -> ClientTimeoutError:
        return deadline_error(self.t.socket_path, self.what, self.timeout_s, self.client)


class _Conn(Deadline):
    """One connection, its deadline and what is read of the answer."""

    def __init__(self, transport: "Transport", sock: socket.socket, reused: bool, what: str) -> None:
        super().__init__(transport, what)
        self.sock = sock
        self.reused = reused

    def _arm(self) -> None:
        self.sock.settimeout(self._left())

    def send(self, data: bytes) -> None:
        try:
            self._arm()
            self.sock.sendall(data)
        except socket.timeout:
            raise self.timed_out() from None

    def recv(self) -> bytes:
        try:
            self._arm()
            return self.sock.recv(READ_SIZE)
        except socket.timeout:
            raise self.timed_out() from None
        except ConnectionResetError:
            return b""

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:  # pragma: no cover
            pass


class Answer(Generic[C]):
    """An answer whose head has been read, the body read on demand through
    its connection (None once closed): what both transports' responses
    hold."""

    def __init__(self, conn: C, parser: ResponseParser, head: Head) -> None:
        self._conn: Optional[C] = conn
        self._parser = parser
        self.head = head
        self.status = head.status

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()  # type: ignore[attr-defined]


class Response(Answer["_Conn"]):
    """An answer whose head has been read; the body is read on demand."""

    def read_chunk(self) -> bytes:
        """The next body bytes; ``b""`` at the end of the body."""
        conn = self._conn
        if conn is None:
            return b""
        while True:
            data = self._parser.body()
            if data:
                return data
            if self._parser.done:
                self._finish()
                return b""
            try:
                got = conn.recv()
                self._parser.feed(got)
            except Truncated:
                self.close()
                raise cut_short(conn.t.socket_path, conn.what) from None
            except KilnError:
                self.close()
                raise
            except OSError as e:
                self.close()
                raise io_failed(conn.t.socket_path, conn.what, e) from None

    def read_all(self, limit: int = _http.MAX_JSON_BODY) -> bytes:
        body = _http.BodyLimit(limit, self.status)
        while True:
            data = self.read_chunk()
            if not data:
                return bytes(body.out)
            try:
                body.add(data)
            except KilnError:
                self.close()
                raise

    def events(self) -> Iterator[dict[str, Any]]:
        """The body as NDJSON events, parsed as they arrive."""
        lines = _http.LineSplitter()
        while True:
            data = self.read_chunk()
            if not data:
                lines.finish()
                return
            yield from lines.feed(data)

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._parser.keep_alive and not self._parser.leftover:
            conn.t._release(conn.sock)
        else:
            conn.close()

    def close(self) -> None:
        """Drop the connection (a stream closed early never goes back to the pool)."""
        self._drop()


class Transport:
    def __init__(self, socket_path: str, timeout: Optional[float], stream_timeout: Optional[float]) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self.stream_timeout = stream_timeout
        self._idle: list[tuple[socket.socket, float]] = []
        self._lock = threading.Lock()

    # -- connections --------------------------------------------------------

    def _connect(self, what: str) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            s.settimeout(self.timeout)
            s.connect(self.socket_path)
        except socket.timeout:
            s.close()
            raise ClientTimeoutError(f"kilnd at {self.socket_path}: connecting for {what} took over "
                                     f"{self.timeout:g} s (its backlog is full?)") from None
        except OSError as e:
            s.close()
            raise connect_failed(self.socket_path, e) from None
        return s

    def _acquire(self) -> tuple[socket.socket, bool]:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                s, since = self._idle.pop()
                if now - since < POOL_IDLE_S and not _readable(s):
                    return s, True
                s.close()
        return self._connect("a request"), False

    def _release(self, s: socket.socket) -> None:
        with self._lock:
            if len(self._idle) < POOL_SIZE:
                self._idle.append((s, time.monotonic()))
                return
        s.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for s, _ in idle:
            s.close()

    # -- requests -----------------------------------------------------------

    def open(self, method: str, path: str, *, query: Optional[_http.Query] = None,
             json: Any = None, data: Optional[bytes] = None, content_type: Optional[str] = None,
             extra_timeout: float = 0.0, stream: bool = False) -> Response:
        """Send a request with a body held in memory (JSON or bytes) and read
        the answer's head. Error statuses raise their exception."""
        what, payload = _http.request(method, path, query, json, data, content_type)
        timeout = None if self.timeout is None else self.timeout + extra_timeout
        for attempt in (0, 1):
            s, reused = self._acquire() if attempt == 0 else (self._connect(what), False)
            conn = _Conn(self, s, reused, what)
            conn.set_deadline(timeout)
            parser = ResponseParser(no_body=method == "HEAD")
            try:
                try:
                    conn.send(payload)
                except KilnError:
                    raise
                except OSError as e:
                    if reused and attempt == 0:
                        raise _Stale() from None
                    raise io_failed(self.socket_path, what, e) from None
                head = self._read_head(conn, parser)
            except _Stale as e:
                conn.close()
                # A reused connection that ends before any answer: kilnd
                # closed it idle, or took the request and then went away.
                # Only a request that is safe to repeat is sent again.
                if e.answered_nothing and method not in ("GET", "HEAD", "PUT", "DELETE"):
                    raise no_answer(self.socket_path, what) from None
                continue
            except BaseException:
                conn.close()
                raise
            return self._answer(conn, parser, head, stream)
        raise AssertionError("unreachable")  # pragma: no cover

    def open_upload(self, method: str, path: str, *, query: Optional[_http.Query],
                    source: Iterable[bytes], length: Optional[int], content_type: str,
                    stream: bool = False, extra_timeout: float = 0.0) -> Response:
        """Send a streamed body (chunked unless ``length`` is known) on a
        fresh connection, after kilnd's ``100 Continue``. ``stream``: the
        answer is a stream (a template build's log), read under the stream
        timeout once its head arrived. ``extra_timeout``: seconds kilnd may
        take to answer beyond the client's timeout once the body is sent
        (an image import's work)."""
        what = f"{method} {path}"
        if hasattr(source, "__aiter__"):
            raise TypeError("upload: an async iterable needs kiln.aio.AsyncKiln; give Kiln an iterable of bytes")
        conn = _Conn(self, self._connect(what), False, what)
        conn.set_deadline(self.timeout)
        parser = ResponseParser()
        try:
            try:
                conn.send(_http.upload_head(method, path, query, length, content_type))
            except KilnError:
                raise
            except OSError as e:
                raise io_failed(self.socket_path, what, e) from None
            while not parser.continued and parser.head() is None:
                self._feed(conn, parser)
            if parser.head() is None:
                try:
                    body = _http.UploadBody(path, length)
                    for block in source:
                        if not block:
                            continue
                        conn.set_deadline(self.timeout)  # a deadline per block: progress, not total
                        conn.send(body.block(block))
                    tail = body.end()
                    if tail:
                        conn.send(tail)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # kilnd answered early and closed: read its answer below
                conn.set_deadline(None if self.timeout is None else self.timeout + extra_timeout)
            head = self._read_head(conn, parser)
        except BaseException:
            conn.close()
            _close_source(source)
            raise
        return self._answer(conn, parser, head, stream)

    def upgrade(self, method: str, path: str, *, query: Optional[_http.Query], protocol: str) -> "Upgraded":
        """A protocol switch (``Upgrade: PROTOCOL``) on a fresh connection,
        under the client's timeout until kilnd's ``101``; then the socket,
        blocking without a timeout (a decision stream may be silent for
        hours), and what came after the head. An error status raises its
        exception."""
        what = f"{method} {path}"
        conn = _Conn(self, self._connect(what), False, what)
        conn.set_deadline(self.timeout)
        parser = ResponseParser()
        try:
            try:
                conn.send(_http.upgrade_head(method, path, query, protocol))
            except KilnError:
                raise
            except OSError as e:
                raise io_failed(self.socket_path, what, e) from None
            head = self._read_head(conn, parser)
            self._answer(conn, parser, head, False)  # an error status raises
            _http.check_switched(head, protocol, what)
        except BaseException:
            conn.close()
            raise
        return Upgraded(conn.sock, parser.leftover, self.timeout, self.socket_path, what)

    def extract(self, resp: Response, dest: str) -> dict[str, int]:
        """Unpack a tar.gz answer into ``dest`` as it is read."""
        try:
            return _tario.extract_tar(_tario.ChunkReader(resp.read_chunk), dest)  # type: ignore[arg-type]
        finally:
            resp.close()

    def _feed(self, conn: _Conn, parser: ResponseParser) -> None:
        try:
            parser.feed(conn.recv())
        except Truncated:
            raise no_answer(self.socket_path, conn.what) from None
        except KilnError:
            raise
        except OSError as e:
            raise io_failed(self.socket_path, conn.what, e) from None

    def _read_head(self, conn: _Conn, parser: ResponseParser) -> Head:
        while parser.head() is None:
            try:
                got = conn.recv()
                parser.feed(got)
            except Truncated:
                if conn.reused and not parser.received_any:
                    raise _Stale(answered_nothing=True) from None
                raise no_answer(self.socket_path, conn.what) from None
            except KilnError:
                raise
            except OSError as e:
                if conn.reused and not parser.received_any:
                    raise _Stale(answered_nothing=True) from None
                raise io_failed(self.socket_path, conn.what, e) from None
        head = parser.head()
        assert head is not None
        return head

    def _answer(self, conn: _Conn, parser: ResponseParser, head: Head, stream: bool) -> Response:
        resp = Response(conn, parser, head)
        if head.status >= 400:
            body = resp.read_all(1024 * 1024)
            resp.close()
            raise _http.error_for(head.status, body)
        if stream:
            conn.set_per_read(self.stream_timeout)
        return resp

    def call(self, method: str, path: str, **kw: Any) -> Any:
        """A request whose answer is JSON (or empty): the decoded body."""
        resp = self.open(method, path, **kw)
        return _http.decode_json(resp.status, resp.read_all())

    def text(self, method: str, path: str, **kw: Any) -> bytes:
        resp = self.open(method, path, **kw)
        return resp.read_all()


def _close_source(source: Iterable[bytes]) -> None:
    close = getattr(source, "close", None)
    if close is not None:
        close()


class Upgraded:
    """A connection after its protocol switch: the socket, the bytes that
    came with the head, the client's timeout (for the stream's first
    line), and names for messages."""

    def __init__(self, sock: socket.socket, leftover: bytes, timeout: Optional[float], socket_path: str,
                 what: str) -> None:
        self.sock = sock
        self.leftover = leftover
        self.timeout = timeout
        self.socket_path = socket_path
        self.what = what


class _Stale(Exception):
    """A pooled connection kilnd had closed: the request goes again, once
    (after the request was sent, only if it is safe to repeat)."""

    def __init__(self, answered_nothing: bool = False) -> None:
        super().__init__()
        self.answered_nothing = answered_nothing


def _readable(s: socket.socket) -> bool:
    """An idle keep-alive connection that is readable was closed by kilnd
    (EOF) or holds bytes nobody asked for: not reusable."""
    try:
        r, _, _ = select.select([s], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(r)


def default_socket() -> str:
    return os.environ.get("KILN_SOCKET") or "/run/kiln/kiln.sock"


def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` (the asyncio client runs it in a worker thread)."""
    return fn(*args)
