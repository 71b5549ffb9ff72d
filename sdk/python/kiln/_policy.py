"""An egress policy callback's connection: kilnd's decision stream
(``GET .../egress/decisions`` switched to ``kiln-decisions``: NDJSON both
ways) answered by a function. :class:`EgressPolicy` (``kiln.Kiln``) reads
it in a background thread and runs the callback in a small thread pool;
:class:`AsyncEgressPolicy` (``kiln.aio``) reads it in a task and runs each
callback in a task of its own. Either way one slow callback delays no
other question, and every question is answered exactly once, when its
callback returns (kilnd applies its deadline, ``on_timeout``, meanwhile).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

from . import egress
from ._async_transport import AsyncUpgraded
from ._http import LineSplitter, json_body, parse_event
from ._transport import READ_SIZE, Upgraded, cut_short
from .errors import ClientTimeoutError, KilnError, KilnProtocolError

__all__ = ["EgressPolicy", "AsyncEgressPolicy"]

log = logging.getLogger("kiln.egress")

# Callbacks of one synchronous policy that may run at once; the next
# question waits for a free thread (kilnd's deadline still counts).
WORKERS = 16

Callback = Callable[[dict[str, Any]], Any]


def parse_line(line: bytes) -> dict[str, Any]:
    """One line of kilnd's decision stream: an object with a str ``kind``
    (and an integer ``id`` on a question or error)."""
    obj = parse_event(line, "kind", "kilnd's decision stream")
    if obj["kind"] in ("connect", "request", "error") and \
            (isinstance(obj.get("id"), bool) or not isinstance(obj.get("id"), int)):
        raise KilnProtocolError(f"kilnd's decision stream: a {obj['kind']} line without an integer id")
    return obj


class _Decisions:
    """What both handles share: the protocol's lines, the callback's
    answers, the state a caller sees (``attached``, ``reason``,
    ``errors``)."""

    def __init__(self, fn: Callback, requests_only: bool, socket_path: str, what: str) -> None:
        self._fn = fn
        self._requests_only = requests_only
        self._socket_path = socket_path
        self._what = what
        self._lines = LineSplitter()
        self._fell_back: set[int] = set()  # ids a fallback deny went to after an error line
        self._closing = False
        self._failure: Optional[BaseException] = None
        #: kilnd's ``attached`` line (``deadline_ms``, ``on_timeout``).
        self.attached: dict[str, Any] = {}
        #: The ``end`` line's reason (``sandbox_stopped``, ...); None until then
        #: or when the client closed the stream.
        self.reason: Optional[str] = None
        #: kilnd's ``error`` lines: answers it refused.
        self.errors: list[dict[str, Any]] = []

    def _first(self, lines: list[bytes]) -> list[bytes]:
        """The stream's first line must be ``attached``; the rest of what
        came (read by the thread or task, which reports its faults)."""
        first = parse_line(lines[0])
        if first["kind"] != "attached":
            raise KilnProtocolError(f"{self._what}: kilnd's decision stream began with {first['kind']!r}, "
                                    "not attached")
        self.attached = first
        return lines[1:]

    def _sort(self, pending: list[bytes]) -> tuple[bool, list[dict[str, Any]], list[bytes]]:
        """The lines that came: whether the end line is among them, the
        questions for the callback, the answers to send now."""
        asks: list[dict[str, Any]] = []
        sends: list[bytes] = []
        for raw in pending:
            ev = parse_line(raw)
            what, line = self._route(ev)
            if what == "end":
                return True, asks, sends
            if what == "ask":
                asks.append(ev)
            elif line is not None:
                sends.append(line)
        return False, asks, sends

    def _route(self, ev: dict[str, Any]) -> tuple[str, Optional[bytes]]:
        """What to do with a line: ("end", None), ("ask", None) (the
        callback decides), ("send", LINE) (an answer without the callback),
        ("skip", None)."""
        kind = ev["kind"]
        if kind == "end":
            self.reason = ev.get("reason") if isinstance(ev.get("reason"), str) else "unknown"
            return "end", None
        if kind == "connect" and self._requests_only:
            return "send", self._line(ev["id"], egress.rules())
        if kind in ("connect", "request"):
            return "ask", None
        if kind == "error":
            self.errors.append(ev)
            log.warning("egress policy: kilnd refused the answer to question %s: %s", ev["id"], ev.get("message"))
            if ev["id"] not in self._fell_back:
                # The question stays open until its deadline: answer it
                # again, with a deny kilnd always takes (once: no loop).
                self._fell_back.add(ev["id"])
                return "send", self._line(ev["id"], {"decision": "deny", "reason": egress.FAILED_REASON})
        return "skip", None  # an error after the fallback, or a kind newer than this SDK

    def _decided(self, ev: dict[str, Any], result: Any, exc: Optional[BaseException]) -> bytes:
        """The answer line for the callback's return value (or exception)."""
        if exc is None:
            try:
                return self._line(ev["id"], egress.answer_for(ev["kind"], result))
            except (TypeError, ValueError) as e:
                exc = e
        log.error("egress policy: the callback failed on %s %s (%s %s): %s: denied", ev["kind"], ev["id"],
                  ev.get("method", ""), ev.get("name"), exc, exc_info=exc)
        return self._line(ev["id"], {"decision": "deny", "reason": egress.FAILED_REASON})

    @staticmethod
    def _line(qid: int, ans: dict[str, Any]) -> bytes:
        return json_body({"id": qid, **ans}) + b"\n"

    def _ended(self) -> Optional[str]:
        """wait()'s value: the end line's reason, None when the client closed
        it; a stream that failed raises why."""
        if self._failure is not None:
            raise self._failure
        return self.reason

    def _cut(self) -> KilnError:
        return cut_short(self._socket_path, f"{self._what} (no end line)")


class EgressPolicy(_Decisions):
    """A policy callback attached to a sandbox's egress decisions
    (``sb.egress.policy(fn)``): a background thread reads kilnd's
    questions, up to 16 callbacks run at once in a thread pool (so ``fn``
    must be thread-safe), each answer goes when its callback returns.
    ``close()`` (or leaving ``with``) detaches: the static rules decide
    alone again. ``wait()`` blocks until the stream ends."""

    def __init__(self, conn: Upgraded, fn: Callback, requests_only: bool) -> None:
        super().__init__(fn, requests_only, conn.socket_path, conn.what)
        self._sock = conn.sock
        self._wlock = threading.Lock()
        self._sock_closed = False
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="kiln-egress-policy")
        self._thread: Optional[threading.Thread] = None

    @classmethod
    def start(cls, conn: Upgraded, fn: Callback, requests_only: bool) -> "EgressPolicy":
        """Reads the ``attached`` line (under the client's timeout), then
        leaves the rest to a thread."""
        try:
            self = cls(conn, fn, requests_only)
        except BaseException:
            conn.sock.close()
            raise
        try:
            conn.sock.settimeout(conn.timeout)
            data = conn.leftover
            lines = self._lines.lines(data)
            while not lines:
                try:
                    data = conn.sock.recv(READ_SIZE)
                except socket.timeout:
                    raise ClientTimeoutError(f"{conn.what}: no attached line from kilnd within "
                                             f"{conn.timeout:g} s") from None
                if not data:
                    raise self._cut()
                lines = self._lines.lines(data)
            rest = self._first(lines)
            conn.sock.settimeout(None)
        except BaseException:
            self._close_socket()
            self._pool.shutdown(wait=False)
            raise
        self._thread = threading.Thread(target=self._run, args=(rest,), name="kiln-egress-decisions", daemon=True)
        self._thread.start()
        return self

    def _run(self, pending: list[bytes]) -> None:
        try:
            while True:
                ended, asks, sends = self._sort(pending)
                if ended:
                    return
                for line in sends:
                    self._send(line)
                for ev in asks:
                    self._pool.submit(self._ask, ev)
                try:
                    data = self._sock.recv(READ_SIZE)
                except OSError:
                    data = b""
                if not data:
                    if not self._closing:
                        self._lines.finish()
                        raise self._cut()
                    return
                pending = self._lines.lines(data)
        except BaseException as e:
            if not self._closing:
                self._failure = e
                log.error("egress policy: the decision stream failed: %s", e)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._close_socket()

    def _ask(self, ev: dict[str, Any]) -> None:
        try:
            result, exc = self._fn(ev), None
        except Exception as e:
            result, exc = None, e
        self._send(self._decided(ev, result, exc))

    def _send(self, line: bytes) -> None:
        with self._wlock:
            if self._sock_closed:
                return  # the stream ended: nobody takes the answer
            try:
                self._sock.sendall(line)
            except OSError:
                pass  # the reader sees the end

    def _close_socket(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv or send
        except OSError:
            pass
        with self._wlock:
            if not self._sock_closed:
                self._sock_closed = True
                self._sock.close()

    @property
    def done(self) -> bool:
        """True once the stream ended (an end line, a close, a failure)."""
        return self._thread is None or not self._thread.is_alive()

    def wait(self, timeout: Optional[float] = None) -> Optional[str]:
        """Until the stream ends: the end line's reason
        (``egress_proxy_stopped``, ``sandbox_stopped``, ``kilnd_shutdown``),
        None after ``close()``. A stream cut without its end line raises
        KilnConnectionError; still open after ``timeout`` seconds,
        ClientTimeoutError."""
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise ClientTimeoutError(f"{self._what}: the stream is still open after {timeout:g} s")
        return self._ended()

    def close(self) -> None:
        """Detach: close the connection (kilnd's static rules decide alone
        again; answers of callbacks still running are dropped)."""
        self._closing = True
        self._close_socket()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def __enter__(self) -> "EgressPolicy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncEgressPolicy(_Decisions):
    """A policy callback attached to a sandbox's egress decisions
    (``await sb.egress.policy(fn)``): a task reads kilnd's questions and
    each is decided in a task of its own (``fn`` may be ``async``; a plain
    function runs on the event loop, so it must not block), its answer
    sent when it returns. ``aclose()`` (or leaving ``async with``)
    detaches; ``await wait()`` until the stream ends."""

    def __init__(self, conn: AsyncUpgraded, fn: Callback, requests_only: bool) -> None:
        super().__init__(fn, requests_only, conn.socket_path, conn.what)
        self._reader = conn.reader
        self._writer = conn.writer
        self._wlock = asyncio.Lock()
        self._asks: set[asyncio.Task[None]] = set()
        self._task: Optional[asyncio.Task[None]] = None

    @classmethod
    async def start(cls, conn: AsyncUpgraded, fn: Callback, requests_only: bool) -> "AsyncEgressPolicy":
        """Reads the ``attached`` line (under the client's timeout), then
        leaves the rest to a task."""
        try:
            self = cls(conn, fn, requests_only)
        except BaseException:
            conn.writer.close()
            raise
        try:
            lines = self._lines.lines(conn.leftover)
            while not lines:
                try:
                    data = await asyncio.wait_for(conn.reader.read(READ_SIZE), conn.timeout)
                except asyncio.TimeoutError:
                    raise ClientTimeoutError(f"{conn.what}: no attached line from kilnd within "
                                             f"{conn.timeout:g} s") from None
                if not data:
                    raise self._cut()
                lines = self._lines.lines(data)
            rest = self._first(lines)
        except BaseException:
            conn.writer.close()
            raise
        self._task = asyncio.create_task(self._run(rest))
        return self

    async def _run(self, pending: list[bytes]) -> None:
        try:
            while True:
                ended, asks, sends = self._sort(pending)
                if ended:
                    return
                for line in sends:
                    await self._send(line)
                for ev in asks:
                    task = asyncio.create_task(self._ask(ev))
                    self._asks.add(task)
                    task.add_done_callback(self._asks.discard)
                try:
                    data = await self._reader.read(READ_SIZE)
                except (OSError, ConnectionError):
                    data = b""
                if not data:
                    if not self._closing:
                        self._lines.finish()
                        raise self._cut()
                    return
                pending = self._lines.lines(data)
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            if not self._closing:
                self._failure = e
                log.error("egress policy: the decision stream failed: %s", e)
        finally:
            for task in list(self._asks):
                task.cancel()
            self._writer.close()

    async def _ask(self, ev: dict[str, Any]) -> None:
        try:
            result = self._fn(ev)
            if inspect.isawaitable(result):
                result = await result
            exc = None
        except Exception as e:
            result, exc = None, e
        await self._send(self._decided(ev, result, exc))

    async def _send(self, line: bytes) -> None:
        async with self._wlock:
            if self._writer.is_closing():
                return  # the stream ended: nobody takes the answer
            try:
                self._writer.write(line)
                await self._writer.drain()
            except (OSError, ConnectionError):
                pass  # the reader sees the end

    @property
    def done(self) -> bool:
        """True once the stream ended (an end line, a close, a failure)."""
        return self._task is None or self._task.done()

    async def wait(self, timeout: Optional[float] = None) -> Optional[str]:
        """Until the stream ends: the end line's reason, None after
        ``aclose()``. A stream cut without its end line raises
        KilnConnectionError; still open after ``timeout`` seconds,
        ClientTimeoutError."""
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout)
            except asyncio.TimeoutError:
                raise ClientTimeoutError(f"{self._what}: the stream is still open after {timeout:g} s") from None
            except asyncio.CancelledError:
                if not self._task.cancelled():
                    raise
        return self._ended()

    async def aclose(self) -> None:
        """Detach: close the connection (kilnd's static rules decide alone
        again; callbacks still running are cancelled)."""
        self._closing = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for task in list(self._asks):
            task.cancel()
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (OSError, ConnectionError):
            pass

    async def __aenter__(self) -> "AsyncEgressPolicy":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
