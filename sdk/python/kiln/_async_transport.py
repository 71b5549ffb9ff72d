"""The asyncio transport: HTTP/1.1 over kilnd's Unix socket with
``asyncio.open_unix_connection``, one connection per request, a deadline on
every wait. The HTTP framing is ``_http``'s, shared with the synchronous
transport.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Callable, Iterable, Iterator, Mapping, Optional, TypeVar

from . import _http, _tario
from ._common import upload_block
from ._http import Head, ResponseParser, Truncated
from ._transport import READ_SIZE, Answer, Deadline, connect_failed, cut_short, io_failed, no_answer
from .errors import ClientTimeoutError, KilnError

T = TypeVar("T")


def _next_block(it: Iterator[bytes]) -> Optional[bytes]:
    return next(it, None)


async def _next_async_block(ait: AsyncIterator[Any]) -> Optional[bytes]:
    try:
        return upload_block(await ait.__anext__())
    except StopAsyncIteration:
        return None


class _AsyncConn(Deadline):
    client = "AsyncKiln"

    def __init__(self, transport: "AsyncTransport", reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, what: str) -> None:
        super().__init__(transport, what)
        self.reader = reader
        self.writer = writer

    async def send(self, data: bytes) -> None:
        """Raises BrokenPipeError/ConnectionResetError as they are (an
        upload reads kilnd's early answer then), other failures as
        KilnConnectionError."""
        try:
            self.writer.write(data)
            await asyncio.wait_for(self.writer.drain(), self._left())
        except asyncio.TimeoutError:
            raise self.timed_out() from None
        except (BrokenPipeError, ConnectionResetError):
            raise
        except OSError as e:
            raise io_failed(self.t.socket_path, self.what, e) from None

    async def recv(self) -> bytes:
        try:
            return await asyncio.wait_for(self.reader.read(READ_SIZE), self._left())
        except asyncio.TimeoutError:
            raise self.timed_out() from None
        except ConnectionResetError:
            return b""

    def close(self) -> None:
        try:
            self.writer.close()
        except (OSError, RuntimeError):  # pragma: no cover - a closed loop
            pass


class AsyncResponse(Answer[_AsyncConn]):
    """An answer whose head has been read; the body is read on demand."""

    async def read_chunk(self) -> bytes:
        conn = self._conn
        if conn is None:
            return b""
        while True:
            data = self._parser.body()
            if data:
                return data
            if self._parser.done:
                await self.aclose()
                return b""
            try:
                self._parser.feed(await conn.recv())
            except Truncated:
                await self.aclose()
                raise cut_short(conn.t.socket_path, conn.what) from None
            except KilnError:
                await self.aclose()
                raise
            except OSError as e:
                await self.aclose()
                raise io_failed(conn.t.socket_path, conn.what, e) from None
            except BaseException:
                await self.aclose()
                raise

    async def read_all(self, limit: int = _http.MAX_JSON_BODY) -> bytes:
        body = _http.BodyLimit(limit, self.status)
        while True:
            data = await self.read_chunk()
            if not data:
                return bytes(body.out)
            try:
                body.add(data)
            except KilnError:
                await self.aclose()
                raise

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        lines = _http.LineSplitter()
        while True:
            data = await self.read_chunk()
            if not data:
                lines.finish()
                return
            for ev in lines.feed(data):
                yield ev

    async def aclose(self) -> None:
        self._drop()


class AsyncTransport:
    def __init__(self, socket_path: str, timeout: Optional[float], stream_timeout: Optional[float]) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self.stream_timeout = stream_timeout

    async def _connect(self, what: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.wait_for(asyncio.open_unix_connection(self.socket_path, limit=READ_SIZE),
                                          self.timeout)
        except asyncio.TimeoutError:
            raise ClientTimeoutError(f"kilnd at {self.socket_path}: connecting for {what} took over "
                                     f"{self.timeout:g} s (its backlog is full?)") from None
        except OSError as e:
            raise connect_failed(self.socket_path, e) from None

    async def aclose(self) -> None:
        """Nothing is pooled: each request's connection ends with it."""

    async def open(self, method: str, path: str, *, query: Optional[_http.Query] = None,
                   json: Any = None, data: Optional[bytes] = None, content_type: Optional[str] = None,
                   extra_timeout: float = 0.0, stream: bool = False) -> AsyncResponse:
        what, payload = _http.request(method, path, query, json, data, content_type)
        reader, writer = await self._connect(what)
        conn = _AsyncConn(self, reader, writer, what)
        conn.set_deadline(None if self.timeout is None else self.timeout + extra_timeout)
        parser = ResponseParser(no_body=method == "HEAD")
        try:
            try:
                await conn.send(payload)
            except OSError as e:
                if isinstance(e, KilnError):
                    raise
                raise io_failed(self.socket_path, what, e) from None
            head = await self._read_head(conn, parser)
        except BaseException:
            conn.close()
            raise
        return await self._answer(conn, parser, head, stream)

    async def open_upload(self, method: str, path: str, *, query: Optional[_http.Query],
                          source: Iterable[bytes], length: Optional[int], content_type: str,
                          stream: bool = False, extra_timeout: float = 0.0) -> AsyncResponse:
        """A streamed body after kilnd's ``100 Continue``. ``source`` is a
        plain iterator (file reads, the tar writer): each block is taken in
        a worker thread, so the event loop never waits on the disk.
        ``stream``: the answer is a stream (a template build's log), read
        under the stream timeout once its head arrived. ``extra_timeout``:
        seconds kilnd may take to answer beyond the client's timeout once
        the body is sent (an image import's work)."""
        what = f"{method} {path}"
        reader, writer = await self._connect(what)
        conn = _AsyncConn(self, reader, writer, what)
        conn.set_deadline(self.timeout)
        parser = ResponseParser()
        # An async iterable (an upload's) is read here; anything else in a
        # worker thread.
        ait: Optional[AsyncIterator[Any]] = source.__aiter__() if hasattr(source, "__aiter__") else None
        it: Iterator[bytes] = iter(()) if ait is not None else iter(source)
        try:
            try:
                await conn.send(_http.upload_head(method, path, query, length, content_type))
            except (BrokenPipeError, ConnectionResetError) as e:
                raise io_failed(self.socket_path, what, e) from None
            while not parser.continued and parser.head() is None:
                await self._feed(conn, parser)
            if parser.head() is None:
                try:
                    body = _http.UploadBody(path, length)
                    while True:
                        block = (await _next_async_block(ait) if ait is not None
                                 else await asyncio.to_thread(_next_block, it))
                        if block is None:
                            break
                        if not block:
                            continue
                        conn.set_deadline(self.timeout)
                        await conn.send(body.block(block))
                    tail = body.end()
                    if tail:
                        await conn.send(tail)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # kilnd answered early and closed: read its answer below
                conn.set_deadline(None if self.timeout is None else self.timeout + extra_timeout)
            head = await self._read_head(conn, parser)
        except BaseException:
            conn.close()
            close = getattr(it, "close", None)
            if close is not None:
                close()
            aclose = getattr(ait, "aclose", None)
            if aclose is not None:
                await aclose()
            raise
        return await self._answer(conn, parser, head, stream)

    async def upgrade(self, method: str, path: str, *, query: Optional[_http.Query],
                      protocol: str) -> "AsyncUpgraded":
        """A protocol switch (``Upgrade: PROTOCOL``) on a fresh connection,
        under the client's timeout until kilnd's ``101``; then its reader
        and writer and what came after the head. An error status raises
        its exception."""
        what = f"{method} {path}"
        reader, writer = await self._connect(what)
        conn = _AsyncConn(self, reader, writer, what)
        conn.set_deadline(self.timeout)
        parser = ResponseParser()
        try:
            try:
                await conn.send(_http.upgrade_head(method, path, query, protocol))
            except (BrokenPipeError, ConnectionResetError) as e:
                raise io_failed(self.socket_path, what, e) from None
            head = await self._read_head(conn, parser)
            await self._answer(conn, parser, head, False)  # an error status raises
            _http.check_switched(head, protocol, what)
        except BaseException:
            conn.close()
            raise
        return AsyncUpgraded(reader, writer, parser.leftover, self.timeout, self.socket_path, what)

    async def extract(self, resp: AsyncResponse, dest: str) -> dict[str, int]:
        """Unpack a tar.gz answer into ``dest`` as it is read: tarfile runs
        in a worker thread fed through a bounded queue."""
        src = _tario.QueueSource()

        def work() -> dict[str, int]:
            try:
                return _tario.extract_tar(_tario.ChunkReader(src), dest)  # type: ignore[arg-type]
            finally:
                src.closed.set()

        job = asyncio.ensure_future(asyncio.to_thread(work))
        try:
            while not job.done():
                try:
                    data = await resp.read_chunk()
                except BaseException as e:
                    await asyncio.to_thread(src.put, e if isinstance(e, Exception) else KilnError("cancelled"))
                    try:
                        await job
                    except BaseException:
                        pass
                    raise
                if not await asyncio.to_thread(src.put, data) or not data:
                    break
            return await job
        finally:
            await resp.aclose()

    async def _feed(self, conn: _AsyncConn, parser: ResponseParser) -> None:
        try:
            parser.feed(await conn.recv())
        except Truncated:
            raise no_answer(self.socket_path, conn.what) from None
        except KilnError:
            raise
        except OSError as e:
            raise io_failed(self.socket_path, conn.what, e) from None

    async def _read_head(self, conn: _AsyncConn, parser: ResponseParser) -> Head:
        while parser.head() is None:
            await self._feed(conn, parser)
        head = parser.head()
        assert head is not None
        return head

    async def _answer(self, conn: _AsyncConn, parser: ResponseParser, head: Head, stream: bool) -> AsyncResponse:
        resp = AsyncResponse(conn, parser, head)
        if head.status >= 400:
            body = await resp.read_all(1024 * 1024)
            await resp.aclose()
            raise _http.error_for(head.status, body)
        if stream:
            conn.set_per_read(self.stream_timeout)
        return resp

    async def call(self, method: str, path: str, **kw: Any) -> Any:
        resp = await self.open(method, path, **kw)
        return _http.decode_json(resp.status, await resp.read_all())

    async def text(self, method: str, path: str, **kw: Any) -> bytes:
        resp = await self.open(method, path, **kw)
        return await resp.read_all()


class AsyncUpgraded:
    """A connection after its protocol switch: its reader and writer, the
    bytes that came with the head, the client's timeout (for the stream's
    first line), and names for messages."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, leftover: bytes,
                 timeout: Optional[float], socket_path: str, what: str) -> None:
        self.reader = reader
        self.writer = writer
        self.leftover = leftover
        self.timeout = timeout
        self.socket_path = socket_path
        self.what = what


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread (local disk work: packing a build
    context), so the event loop does not wait on it."""
    return await asyncio.to_thread(fn, *args)
