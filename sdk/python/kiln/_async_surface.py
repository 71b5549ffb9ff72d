"""The asyncio client: :class:`AsyncKiln` and what hangs off it.

This file is the source of both surfaces: ``kiln/_surface.py`` (the
synchronous :class:`kiln.Kiln`) is generated from it by
``tools/unasync.py`` (``async``/``await`` removed, ``Async`` names made
plain); ``tests/unit_test`` fails when the two differ. Edit this file, then
run ``python3 tools/unasync.py``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Optional, Union

from . import _common, egress
from ._async_transport import AsyncResponse, AsyncTransport, run_blocking
from ._common import Cmd, Context, Data, LocalFile, Source, drop_none, sb_path
from ._http import decode_json, seg
from ._policy import AsyncEgressPolicy
from ._tario import tar_chunks
from ._transport import cut_short, default_socket
from .errors import SandboxNotFoundError
from .models import (AttachedEvent, Event, ExecResult, ExitEvent, FileInfo, GapEvent, OutputEvent,
                     ResultEvent, RunResult, build_event_from, event_from)

__all__ = [
    "AsyncKiln", "AsyncSandboxes", "AsyncSandbox", "AsyncFiles", "AsyncProcesses", "AsyncProcess",
    "AsyncPorts", "AsyncPreviews", "AsyncCheckpoints", "AsyncFirewall", "AsyncEventStream",
    "AsyncTemplates", "AsyncBuildStream", "AsyncImages", "AsyncSecrets", "AsyncEgress", "AsyncEgressPolicy",
]

OutputCallback = Callable[[str], Any]


class AsyncEventStream:
    """An NDJSON stream of kilnd's (exec or run with ``stream``, process
    output, file watch) as an iterator of typed events. The request is sent
    at the first iteration. Closing it (``aclose()``, or leaving
    ``async with``; a dropped one is closed when collected) closes its
    connection. An ``error`` event raises the exception of its code.

    ``next_seq`` is the sequence number after the last output byte seen (a
    process's output stream): reattach there with ``output(since=...)``.
    """

    def __init__(self, opener: Callable[[], Awaitable[AsyncResponse]], *, socket_path: str,
                 last: tuple[str, ...], watch: bool = False, since: Optional[int] = None) -> None:
        self._opener = opener
        self._socket_path = socket_path
        self._last = last  # the event types that end the stream
        self._last_type: Optional[str] = None
        self._watch = watch
        self._resp: Optional[AsyncResponse] = None
        self._events: Optional[AsyncIterator[dict[str, Any]]] = None
        self._closed = False
        self.next_seq: Optional[int] = since
        self.until: Optional[int] = None

    def __aiter__(self) -> "AsyncEventStream":
        return self

    async def __anext__(self) -> Event:
        if self._closed or (self.until is not None and self.next_seq is not None
                            and self.next_seq >= self.until):
            await self.aclose()
            raise StopAsyncIteration
        try:
            if self._events is None:
                self._resp = await self._opener()
                self._events = self._resp.events()
            obj = await self._events.__anext__()
            ev = self._convert(obj)
        except StopAsyncIteration:
            await self.aclose()
            if self._last_type not in self._last:
                # A clean end without the last event: kilnd went away
                # (an upgrade cuts open streams) or cut it short.
                raise cut_short(self._socket_path, f"a stream (its last event was {self._last_type!r})") from None
            raise
        except BaseException:
            await self.aclose()
            raise
        self._last_type = ev.type
        if isinstance(ev, OutputEvent) and ev.seq is not None:
            self.next_seq = ev.seq + len(ev.data)
        elif isinstance(ev, (AttachedEvent, GapEvent)):
            self.next_seq = ev.seq + (ev.bytes if isinstance(ev, GapEvent) else 0)
        return ev

    def _convert(self, obj: dict[str, Any]) -> Event:
        return event_from(obj, self._watch)

    async def aclose(self) -> None:
        self._closed = True
        events, self._events = self._events, None
        resp, self._resp = self._resp, None
        if resp is not None:
            await resp.aclose()
        if events is not None:
            await events.aclose()  # type: ignore[attr-defined]

    async def __aenter__(self) -> "AsyncEventStream":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncKiln:
    """A client of kilnd's socket.

    ``socket``: kilnd's API socket; default ``$KILN_SOCKET``, else
    ``/run/kiln/kiln.sock``. ``timeout``: seconds any request may take
    (plus the guest's own ``timeout_ms`` where a call has one) before
    :class:`~kiln.errors.ClientTimeoutError`; None: no limit.
    ``stream_timeout``: seconds a stream may stay silent between events;
    None (the default): until kilnd ends it or the connection closes.
    """

    def __init__(self, socket: Optional[str] = None, *, timeout: Optional[float] = 120.0,
                 stream_timeout: Optional[float] = None) -> None:
        self.socket = socket or default_socket()
        self._t = AsyncTransport(self.socket, timeout, stream_timeout)
        self.sandboxes = AsyncSandboxes(self)
        self.templates = AsyncTemplates(self)
        self.images = AsyncImages(self)
        self.secrets = AsyncSecrets(self)

    async def health(self) -> dict[str, Any]:
        """``GET /v1/health``."""
        return await self._t.call("GET", "/v1/health")  # type: ignore[no-any-return]

    async def metrics(self) -> str:
        """``GET /metrics``: Prometheus text."""
        return (await self._t.text("GET", "/metrics")).decode("utf-8", errors="replace")

    async def aclose(self) -> None:
        """Close idle connections (the client stays usable)."""
        await self._t.aclose()

    async def __aenter__(self) -> "AsyncKiln":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncSandboxes:
    """``kiln.sandboxes``: create, list and find sandboxes."""

    def __init__(self, kiln: AsyncKiln) -> None:
        self._kiln = kiln

    async def create(self, image: Optional[str] = None, *, cpus: Optional[int] = None,
                     memory_mib: Optional[int] = None, env: Optional[Mapping[str, str]] = None,
                     network: Optional[str] = None, firewall: Optional[Mapping[str, Any]] = None,
                     disk_mib: Optional[int] = None, from_checkpoint: Optional[str] = None,
                     template: Optional[str] = None, **fields: Any) -> "AsyncSandbox":
        """``POST /v1/sandboxes``: create and boot a sandbox (or, with
        ``from_checkpoint="ID/NAME"``, fork one; with ``template=NAME``,
        start one from a template's ready snapshot: then no ``image``,
        ``disk_mib``, ``network`` or ``firewall``). Other fields
        (``hostname``, ``labels``, ``timeout_s``, ``limits``, ...) go as
        they are; kilnd refuses unknown ones (UnknownFieldError)."""
        body = drop_none({"image": image, "cpus": cpus, "memory_mib": memory_mib, "env": env,
                          "network": network, "firewall": firewall, "disk_mib": disk_mib,
                          "from_checkpoint": from_checkpoint, "template": template, **fields})
        info = await self._kiln._t.call("POST", "/v1/sandboxes", json=body)
        return AsyncSandbox(self._kiln, info)

    async def list(self, *, state: Optional[str] = None,
                   labels: Optional[Mapping[str, str]] = None) -> list["AsyncSandbox"]:
        """``GET /v1/sandboxes``, optionally filtered by state and labels."""
        ans = await self._kiln._t.call("GET", "/v1/sandboxes", query=_common.label_query(state, labels))
        return [AsyncSandbox(self._kiln, s) for s in ans["sandboxes"]]

    async def get(self, sandbox_id: str) -> "AsyncSandbox":
        """``GET /v1/sandboxes/{id}`` (SandboxNotFoundError if none)."""
        return AsyncSandbox(self._kiln, await self._kiln._t.call("GET", sb_path(sandbox_id)))


class AsyncBuildStream(AsyncEventStream):
    """A template build's log (``templates.build_stream``): its lines as
    events, the request sent at the first iteration. ``stdout``/``stderr``
    are :class:`OutputEvent`; ``step``, ``cached``, ``copied``,
    ``ready``, ``step_end`` and ``result`` are :class:`Event` (fields in
    ``raw``). After the ``result`` line (the last), ``result`` is the new
    template. An ``error`` line raises the exception of its code with
    ``step`` and ``line`` set; a log that ends without either raises
    KilnConnectionError. ``skipped``: what packing ``context_dir`` left
    out (a symlink pointing outside it, special files), one message each."""

    def __init__(self, opener: Callable[[], Awaitable[AsyncResponse]], *, socket_path: str) -> None:
        super().__init__(opener, socket_path=socket_path, last=("result",))
        self.result: Optional[dict[str, Any]] = None
        self.skipped: list[str] = []

    def _convert(self, obj: dict[str, Any]) -> Event:
        ev = build_event_from(obj)
        if ev.type == "result":
            self.result = obj["template"]
        return ev


class AsyncTemplates:
    """``kiln.templates``: build, list and delete templates (a build file
    run into a ready snapshot; ``sandboxes.create(template=NAME)`` starts
    from it)."""

    def __init__(self, kiln: AsyncKiln) -> None:
        self._kiln = kiln
        self._t = kiln._t

    def build_stream(self, name: str, *, context_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                     context: Optional[Context] = None, file: Optional[str] = None,
                     cpus: Optional[int] = None, memory_mib: Optional[int] = None,
                     disk_mib: Optional[int] = None) -> AsyncBuildStream:
        """``POST /v1/templates?name=NAME``: the build's log as it happens
        (:class:`AsyncBuildStream`). The context is ``context_dir``, a
        local directory packed as tar.gz into a temporary file first
        (nothing followed: symlinks stay symlinks, those pointing outside
        it are left out), or ``context``, a tar.gz already made (bytes, a
        path, a binary file object; streamed). ``file``: the build file's
        path in the context (default ``Kilnfile``, else ``Dockerfile``);
        ``cpus``, ``memory_mib``, ``disk_mib``: the build sandbox's (and so
        the snapshot's). A build refused before it starts raises at the
        first iteration (BadFieldError naming the build file's line,
        BusyError, InUseError, NoSpaceError, BodyTooLargeError, ...)."""
        _common.check_context(context_dir, context)
        q = {"name": name, "file": file, "cpus": cpus, "memory_mib": memory_mib, "disk_mib": disk_mib}
        stream: Optional[AsyncBuildStream] = None

        async def opener() -> AsyncResponse:
            assert stream is not None
            spool = None
            if context_dir is not None:
                spool, stream.skipped = await run_blocking(_common.spool_context, context_dir)
                for msg in stream.skipped:
                    warnings.warn(f"templates.build: {msg}", stacklevel=3)
                source, length = _common.file_source(spool)
            else:
                assert context is not None
                source, length = _common.context_source(context)
            try:
                return await self._t.open_upload("POST", "/v1/templates", query=q, source=source,
                                                 length=length, content_type="application/gzip", stream=True)
            finally:
                if spool is not None:
                    spool.close()
        stream = AsyncBuildStream(opener, socket_path=self._t.socket_path)
        return stream

    async def build(self, name: str, *, context_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                    context: Optional[Context] = None, file: Optional[str] = None,
                    cpus: Optional[int] = None, memory_mib: Optional[int] = None,
                    disk_mib: Optional[int] = None,
                    on_event: Optional[Callable[[Event], Any]] = None) -> dict[str, Any]:
        """Build template ``name`` (as :meth:`build_stream`) and return it
        (as ``get`` shows it). ``on_event`` is called with each log event
        as it arrives. A failed step raises the exception of its code with
        ``step`` and ``line`` set (``message``: what failed)."""
        stream = self.build_stream(name, context_dir=context_dir, context=context, file=file, cpus=cpus,
                                   memory_mib=memory_mib, disk_mib=disk_mib)
        async with stream:
            async for ev in stream:
                if on_event is not None:
                    on_event(ev)
        assert stream.result is not None
        return stream.result

    async def list(self) -> list[dict[str, Any]]:
        """``GET /v1/templates``: every template (without ``buildfile`` and ``steps``)."""
        return (await self._t.call("GET", "/v1/templates"))["templates"]  # type: ignore[no-any-return]

    async def get(self, name: str) -> dict[str, Any]:
        """``GET /v1/templates/{name}`` (NotFoundError if none)."""
        return await self._t.call("GET", "/v1/templates/" + seg(name))  # type: ignore[no-any-return]

    async def delete(self, name: str) -> None:
        """``DELETE /v1/templates/{name}``: the template and its cache
        (InUseError while sandboxes made from it exist, BusyError while it
        is being built or used by a create right now)."""
        await self._t.call("DELETE", "/v1/templates/" + seg(name))


class AsyncSecrets:
    """``kiln.secrets``: named secrets the egress proxy injects into the
    HTTP requests a sandbox's firewall ``http`` rules allow
    (``"inject": [{"header": "authorization", "secret": "github",
    "format": "Bearer {}"}]``). A value goes in and never comes back:
    every answer is metadata (``name``, ``owner``, ``created``,
    ``updated``). A secret is its owner's (the client's uid); root may
    pass ``owner=UID`` to act on another uid's."""

    def __init__(self, kiln: AsyncKiln) -> None:
        self._t = kiln._t

    async def set(self, name: str, value: str, *, owner: Optional[int] = None) -> dict[str, Any]:
        """``PUT /v1/secrets/{name}``: create or replace; its metadata.
        ``value``: 1..16384 bytes without NUL, CR or LF (BadFieldError,
        TooLargeError)."""
        return await self._t.call("PUT", "/v1/secrets/" + seg(name),  # type: ignore[no-any-return]
                                  query={"owner": owner}, json={"value": value})

    async def list(self, *, owner: Optional[int] = None) -> list[dict[str, Any]]:
        """``GET /v1/secrets``: the client's secrets (root: every owner's), metadata only."""
        return (await self._t.call("GET", "/v1/secrets",  # type: ignore[no-any-return]
                                   query={"owner": owner}))["secrets"]

    async def get(self, name: str, *, owner: Optional[int] = None) -> dict[str, Any]:
        """``GET /v1/secrets/{name}``: its metadata (NotFoundError if none)."""
        return await self._t.call("GET", "/v1/secrets/" + seg(name),  # type: ignore[no-any-return]
                                  query={"owner": owner})

    async def delete(self, name: str, *, owner: Optional[int] = None) -> None:
        """``DELETE /v1/secrets/{name}`` (NotFoundError if none)."""
        await self._t.call("DELETE", "/v1/secrets/" + seg(name), query={"owner": owner})


class AsyncImages:
    """``kiln.images``: root images. Calling it (``kiln.images()``) lists
    them, as ``list()``."""

    def __init__(self, kiln: AsyncKiln) -> None:
        self._t = kiln._t

    async def __call__(self) -> list[dict[str, Any]]:
        return await self.list()

    async def list(self) -> list[dict[str, Any]]:
        """``GET /v1/images``: the images (``name``, ``path``, ``size_bytes``, ``source``, ...)."""
        return (await self._t.call("GET", "/v1/images"))["images"]  # type: ignore[no-any-return]

    async def get(self, name: str) -> dict[str, Any]:
        """``GET /v1/images/{name}`` (ImageNotFoundError if none)."""
        return await self._t.call("GET", "/v1/images/" + seg(name))  # type: ignore[no-any-return]

    async def import_(self, name: str, archive: LocalFile, *, devices: bool = False, ref: str | None = None,
                      timeout_s: float = 3600.0) -> dict[str, Any]:
        """``POST /v1/images?name=NAME``: import an OCI or ``docker save``
        archive (a path or a binary file object, plain or gzip), streamed
        in 64 KiB blocks (never held in memory); returns the new image.
        ``devices``: make its device nodes (a root client only).
        ``ref``: the tag to import from an OCI layout of several (its
        ``org.opencontainers.image.ref.name``).
        ``timeout_s``: how long kilnd may take after the archive is sent
        (it caps an import at an hour). ExistsError, BadArchiveError
        (``message`` names the layer and member), BodyTooLargeError,
        NoSpaceError, ForbiddenError."""
        source, length = _common.file_source(archive)
        resp = await self._t.open_upload("POST", "/v1/images",
                                         query={"name": name, "devices": 1 if devices else None, "ref": ref},
                                         source=source, length=length, content_type="application/octet-stream",
                                         extra_timeout=timeout_s)
        return _decode(resp.status, await resp.read_all())

    async def delete(self, name: str) -> None:
        """``DELETE /v1/images/{name}`` (InUseError while a sandbox or pool
        uses it, ReadOnlyError for a ``--image`` one)."""
        await self._t.call("DELETE", "/v1/images/" + seg(name))


class AsyncSandbox:
    """One sandbox. ``info`` is kilnd's last sandbox object for it. Use it
    as a context manager to delete the sandbox at the end."""

    def __init__(self, kiln: AsyncKiln, info: dict[str, Any]) -> None:
        self._kiln = kiln
        self._t = kiln._t
        self.id: str = info["id"]
        self.info = info
        self.files = AsyncFiles(self)
        self.processes = AsyncProcesses(self)
        self.ports = AsyncPorts(self)
        self.previews = AsyncPreviews(self)
        self.checkpoints = AsyncCheckpoints(self)
        self.firewall = AsyncFirewall(self)
        self.egress = AsyncEgress(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {self.state}>"

    @property
    def state(self) -> str:
        return str(self.info.get("state"))

    async def _lifecycle(self, action: str, body: Optional[dict[str, Any]] = None) -> "AsyncSandbox":
        self.info = await self._t.call("POST", sb_path(self.id, action), json=body)
        return self

    async def refresh(self) -> "AsyncSandbox":
        """``GET .../{id}``: ``info`` anew."""
        self.info = await self._t.call("GET", sb_path(self.id))
        return self

    async def stop(self, *, grace_ms: Optional[int] = None) -> "AsyncSandbox":
        return await self._lifecycle("stop", drop_none({"grace_ms": grace_ms}) or None)

    async def start(self) -> "AsyncSandbox":
        return await self._lifecycle("start")

    async def pause(self) -> "AsyncSandbox":
        return await self._lifecycle("pause")

    async def resume(self) -> "AsyncSandbox":
        return await self._lifecycle("resume")

    async def hibernate(self) -> "AsyncSandbox":
        return await self._lifecycle("hibernate")

    async def wake(self) -> "AsyncSandbox":
        """``POST .../wake``; ``info["woke_from"]`` says ``snapshot`` or ``cold_boot``."""
        return await self._lifecycle("wake")

    async def delete(self) -> None:
        """``DELETE .../{id}``: the sandbox and everything it owned."""
        await self._t.call("DELETE", sb_path(self.id))

    async def fork(self, checkpoint_name: str, **fields: Any) -> "AsyncSandbox":
        """A new sandbox from this sandbox's checkpoint (``hostname``,
        ``env``, ``labels``, ``timeout_s``, ... as for a fork)."""
        return await self._kiln.sandboxes.create(from_checkpoint=f"{self.id}/{checkpoint_name}", **fields)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.delete()
        except SandboxNotFoundError:
            pass

    # -- commands -------------------------------------------------------------

    def _exec_body(self, cmd: Cmd, stdin: Optional[Data], fields: dict[str, Any]) -> dict[str, Any]:
        return {**_common.command_fields(cmd), **_common.stdin_fields(stdin), **drop_none(fields)}

    async def exec(self, cmd: Cmd, *, env: Optional[Mapping[str, Optional[str]]] = None,
                   cwd: Optional[str] = None, user: Optional[str] = None, stdin: Optional[Data] = None,
                   timeout_ms: Optional[int] = None, confine: Optional[bool] = None,
                   on_stdout: Optional[OutputCallback] = None, on_stderr: Optional[OutputCallback] = None,
                   **fields: Any) -> ExecResult:
        """Run ``cmd`` (a list: argv; a string: ``sh -c``) and wait for it.
        With ``on_stdout``/``on_stderr`` the output is streamed to them as
        it comes (text) and also collected in the result. Other fields
        (``output_cap``, ``output_encoding``, ...) go as they are."""
        body = self._exec_body(cmd, stdin, {"env": env, "cwd": cwd, "user": user, "timeout_ms": timeout_ms,
                                            "confine": confine, **fields})
        if on_stdout is None and on_stderr is None:
            ans = await self._t.call("POST", sb_path(self.id, "exec"), json=body,
                                     extra_timeout=_common.extra_for(timeout_ms))
            return ExecResult.from_json(ans)
        return await self._collect(self._stream("exec", body, timeout_ms), on_stdout, on_stderr, False)

    def exec_stream(self, cmd: Cmd, *, env: Optional[Mapping[str, Optional[str]]] = None,
                    cwd: Optional[str] = None, user: Optional[str] = None, stdin: Optional[Data] = None,
                    timeout_ms: Optional[int] = None, confine: Optional[bool] = None,
                    **fields: Any) -> AsyncEventStream:
        """``POST .../exec?stream=1``: the command's events as they happen
        (:class:`OutputEvent` ``stdout``/``stderr``, then :class:`ExitEvent`)."""
        body = self._exec_body(cmd, stdin, {"env": env, "cwd": cwd, "user": user, "timeout_ms": timeout_ms,
                                            "confine": confine, **fields})
        return self._stream("exec", body, timeout_ms)

    async def run_code(self, code: str, language: str = "python", *, stdin: Optional[Data] = None,
                       timeout_ms: Optional[int] = None, on_stdout: Optional[OutputCallback] = None,
                       on_stderr: Optional[OutputCallback] = None, **fields: Any) -> RunResult:
        """``POST .../run``: run a snippet (``python``, ``javascript``,
        ``typescript``, ``bash``); ``result`` is what it gave
        ``result.set``, ``error`` its uncaught exception or
        ``result.error``. Other fields as for exec."""
        body = {"language": language, "code": code, **_common.stdin_fields(stdin),
                **drop_none({"timeout_ms": timeout_ms, **fields})}
        if on_stdout is None and on_stderr is None:
            ans = await self._t.call("POST", sb_path(self.id, "run"), json=body,
                                     extra_timeout=_common.extra_for(timeout_ms))
            return RunResult.from_json(ans)
        res = await self._collect(self._stream("run", body, timeout_ms), on_stdout, on_stderr, True)
        assert isinstance(res, RunResult)
        return res

    def run_code_stream(self, code: str, language: str = "python", *, stdin: Optional[Data] = None,
                        timeout_ms: Optional[int] = None, **fields: Any) -> AsyncEventStream:
        """``POST .../run?stream=1``: exec's events, then a :class:`ResultEvent`."""
        body = {"language": language, "code": code, **_common.stdin_fields(stdin),
                **drop_none({"timeout_ms": timeout_ms, **fields})}
        return self._stream("run", body, timeout_ms)

    def _stream(self, endpoint: str, body: dict[str, Any], timeout_ms: Optional[int]) -> AsyncEventStream:
        async def opener() -> AsyncResponse:
            # The answer's head comes with the first event: a silent command
            # may hold it back as long as the command runs.
            return await self._t.open("POST", sb_path(self.id, endpoint), query={"stream": 1}, json=body,
                                      extra_timeout=_common.extra_for(timeout_ms), stream=True)
        return AsyncEventStream(opener, socket_path=self._t.socket_path,
                                last=("result",) if endpoint == "run" else ("exit",))

    async def _collect(self, stream: AsyncEventStream, on_stdout: Optional[OutputCallback],
                       on_stderr: Optional[OutputCallback], run: bool) -> ExecResult:
        out = {"stdout": bytearray(), "stderr": bytearray()}
        exit_raw: dict[str, Any] = {}
        result_ev: Optional[ResultEvent] = None
        async with stream:
            async for ev in stream:
                if isinstance(ev, OutputEvent):
                    out[ev.type] += ev.data
                    cb = on_stdout if ev.type == "stdout" else on_stderr
                    if cb is not None:
                        cb(ev.text)
                elif isinstance(ev, ExitEvent):
                    exit_raw = ev.raw
                elif isinstance(ev, ResultEvent):
                    result_ev = ev
        raw = {k: v for k, v in exit_raw.items() if k != "type"}
        args = (raw.get("exit_code"), raw.get("signal"), bool(raw.get("timed_out")),
                bytes(out["stdout"]), bytes(out["stderr"]), raw)
        if run:
            return RunResult(*args, result=result_ev.result if result_ev else None,
                             error=result_ev.error if result_ev else None)
        return ExecResult(*args)


class AsyncFiles:
    """``sb.files``: the guest's files. ``user`` is ``"user"`` (default) or
    ``"root"`` everywhere."""

    def __init__(self, sb: AsyncSandbox) -> None:
        self._sb = sb
        self._t = sb._t

    def _p(self, *rest: str) -> str:
        return sb_path(self._sb.id, "files", *rest)

    async def read(self, path: str, *, offset: Optional[int] = None, length: Optional[int] = None,
                   user: Optional[str] = None) -> bytes:
        """A whole file (or ``length`` bytes from ``offset``) in memory; see
        ``download`` for large ones."""
        return await self._t.text("GET", self._p(), query={"path": path, "offset": offset, "length": length,
                                                           "user": user})

    async def read_text(self, path: str, *, encoding: str = "utf-8", user: Optional[str] = None) -> str:
        return (await self.read(path, user=user)).decode(encoding)

    async def write(self, path: str, data: Data, *, mode: Union[int, str, None] = None,
                    parents: Optional[bool] = None, append: Optional[bool] = None,
                    exclusive: Optional[bool] = None, create: Optional[bool] = None,
                    user: Optional[str] = None) -> dict[str, Any]:
        """Write bytes or text (UTF-8) to a guest file; ``{"path", "bytes"}``."""
        return await self._t.call("PUT", self._p(), data=_common.to_bytes(data),  # type: ignore[no-any-return]
                                  content_type="application/octet-stream",
                                  query=self._write_query(path, mode, parents, append, exclusive, create, user))

    def _write_query(self, path: str, mode: Union[int, str, None], parents: Optional[bool],
                     append: Optional[bool], exclusive: Optional[bool], create: Optional[bool],
                     user: Optional[str]) -> dict[str, Any]:
        return {"path": path, "mode": _common.file_mode(mode), "parents": parents, "append": append,
                "exclusive": exclusive, "create": create, "user": user}

    async def upload(self, path: str, src: Source, *, mode: Union[int, str, None] = None,
                     parents: Optional[bool] = None, append: Optional[bool] = None,
                     exclusive: Optional[bool] = None, create: Optional[bool] = None,
                     user: Optional[str] = None) -> dict[str, Any]:
        """Stream ``src`` into a guest file: a local file (a path, or a
        binary file object, read in 64 KiB blocks: memory stays bounded
        whatever its size), bytes, or any iterable of bytes (a generator,
        sent as it yields; kiln.aio's client also takes an async one)."""
        source, length = _common.file_source(src)
        resp = await self._t.open_upload("PUT", self._p(), source=source, length=length,
                                         content_type="application/octet-stream",
                                         query=self._write_query(path, mode, parents, append, exclusive,
                                                                 create, user))
        return _decode(resp.status, await resp.read_all())

    async def download(self, path: str, dst: LocalFile, *, offset: Optional[int] = None,
                       length: Optional[int] = None, user: Optional[str] = None) -> int:
        """Stream a guest file into ``dst`` (a local path, written whole or
        not at all, or a binary file object); returns the bytes written.
        A transfer cut short raises KilnConnectionError."""
        resp = await self._t.open("GET", self._p(), query={"path": path, "offset": offset, "length": length,
                                                           "user": user}, stream=True)
        sink = _common.Sink(dst)
        ok = False
        try:
            while True:
                data = await resp.read_chunk()
                if not data:
                    break
                sink.write(data)
            ok = True
        finally:
            await resp.aclose()
            sink.finish(ok)
        return sink.bytes

    async def upload_dir(self, local_dir: Union[str, "os.PathLike[str]"], path: str, *,
                         user: Optional[str] = None) -> dict[str, Any]:
        """``PUT .../archive``: a local directory's contents into guest
        directory ``path`` (made if missing), packed as tar.gz while sent."""
        resp = await self._t.open_upload("PUT", sb_path(self._sb.id, "archive"),
                                         query={"path": path, "user": user},
                                         source=tar_chunks(os.fspath(local_dir)), length=None,
                                         content_type="application/gzip")
        return _decode(resp.status, await resp.read_all())

    async def download_dir(self, path: str, local_dir: Union[str, "os.PathLike[str]"], *,
                           user: Optional[str] = None) -> dict[str, int]:
        """``GET .../archive``: guest directory ``path`` into ``local_dir``
        (made if missing), unpacked while it streams. Members that would
        leave ``local_dir`` raise UnsafePathError."""
        resp = await self._t.open("GET", sb_path(self._sb.id, "archive"), query={"path": path, "user": user},
                                  stream=True)
        return await self._t.extract(resp, os.fspath(local_dir))

    async def stat(self, path: str, *, follow: Optional[bool] = None, user: Optional[str] = None) -> FileInfo:
        ans = await self._t.call("GET", self._p("stat"), query={"path": path, "follow": follow, "user": user})
        return FileInfo.from_json(ans)

    async def list(self, path: str, *, depth: Optional[int] = None, limit: Optional[int] = None,
                   user: Optional[str] = None) -> list[FileInfo]:
        """A directory's entries (``depth`` levels), each a FileInfo whose
        ``raw["depth"]`` is its level."""
        ans = await self._t.call("GET", self._p("list"), query={"path": path, "depth": depth, "limit": limit,
                                                               "user": user})
        return [FileInfo.from_json(e) for e in ans["entries"]]

    async def mkdir(self, path: str, *, parents: Optional[bool] = None, mode: Optional[int] = None,
                    user: Optional[str] = None) -> dict[str, Any]:
        return await self._t.call("POST", self._p("mkdir"),  # type: ignore[no-any-return]
                                  json=drop_none({"path": path, "parents": parents, "mode": mode, "user": user}))

    async def remove(self, path: str, *, recursive: Optional[bool] = None, user: Optional[str] = None) -> None:
        await self._t.call("POST", self._p("remove"),
                           json=drop_none({"path": path, "recursive": recursive, "user": user}))

    async def rename(self, src: str, dst: str, *, overwrite: Optional[bool] = None,
                     user: Optional[str] = None) -> dict[str, Any]:
        return await self._t.call("POST", self._p("rename"),  # type: ignore[no-any-return]
                                  json=drop_none({"from": src, "to": dst, "overwrite": overwrite, "user": user}))

    def watch(self, path: str, *, recursive: Optional[bool] = None, max_watches: Optional[int] = None,
              queue: Optional[int] = None, user: Optional[str] = None) -> AsyncEventStream:
        """``GET .../files/watch``: a directory's changes as :class:`WatchEvent`s
        (``watching`` first) until closed or an ``end`` event."""
        q = {"path": path, "recursive": recursive, "max_watches": max_watches, "queue": queue, "user": user}

        async def opener() -> AsyncResponse:
            return await self._t.open("GET", self._p("watch"), query=q, stream=True)
        return AsyncEventStream(opener, socket_path=self._t.socket_path, last=("end",), watch=True)


class AsyncProcesses:
    """``sb.processes``: background processes (their output kept in a ring)."""

    def __init__(self, sb: AsyncSandbox) -> None:
        self._sb = sb
        self._t = sb._t

    async def spawn(self, cmd: Cmd, *, pty: Optional[bool] = None, rows: Optional[int] = None,
                    cols: Optional[int] = None, env: Optional[Mapping[str, Optional[str]]] = None,
                    cwd: Optional[str] = None, user: Optional[str] = None, stdin: Optional[Data] = None,
                    timeout_ms: Optional[int] = None, confine: Optional[bool] = None,
                    ring_bytes: Optional[int] = None, **fields: Any) -> "AsyncProcess":
        """``POST .../processes``: start ``cmd`` detached (stdin stays open
        unless ``stdin`` is given)."""
        body = {**_common.command_fields(cmd), **_common.stdin_fields(stdin),
                **drop_none({"pty": pty, "rows": rows, "cols": cols, "env": env, "cwd": cwd, "user": user,
                             "timeout_ms": timeout_ms, "confine": confine, "ring_bytes": ring_bytes, **fields})}
        ans = await self._t.call("POST", sb_path(self._sb.id, "processes"), json=body)
        return AsyncProcess(self._sb, ans)

    async def list(self) -> list["AsyncProcess"]:
        ans = await self._t.call("GET", sb_path(self._sb.id, "processes"))
        return [AsyncProcess(self._sb, p) for p in ans["processes"]]

    async def get(self, proc_id: int) -> "AsyncProcess":
        """The process of this ``id`` (the create answer's, not the guest pid)."""
        return AsyncProcess(self._sb, await self._t.call("GET", sb_path(self._sb.id, "processes", proc_id)))


class AsyncProcess:
    """A background process: ``id`` (kilnd's), ``pid`` (the guest's),
    ``info`` (the last process object)."""

    def __init__(self, sb: AsyncSandbox, info: dict[str, Any]) -> None:
        self._sb = sb
        self._t = sb._t
        self.id: int = info["id"]
        self.pid: Optional[int] = info.get("pid")
        self.info = info

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} pid={self.pid}>"

    def _p(self, *rest: str) -> str:
        return sb_path(self._sb.id, "processes", self.id, *rest)

    async def refresh(self) -> "AsyncProcess":
        self.info = await self._t.call("GET", self._p())
        return self

    def output(self, since: Optional[int] = None, *, follow: bool = True,
               encoding: Optional[str] = None) -> AsyncEventStream:
        """The output as events (``attached``, ``stdout``/``stderr`` with
        ``seq``, ``gap``, ``exit``), from sequence number ``since`` (None:
        the oldest the ring holds; ``"now"`` is kilnd's too). ``follow``:
        live until the process exits; False: only what was written when
        the call was made (and the ``exit`` event, when it had exited by
        then). After a disconnect, reattach with
        ``output(since=stream.next_seq)``: nothing the ring still holds is
        missed."""
        stream: Optional[AsyncEventStream] = None

        async def opener() -> AsyncResponse:
            if not follow:
                assert stream is not None
                info = (await self.refresh()).info
                # An exited process's stream ends by itself, with its exit event.
                if info.get("running") is not False:
                    stream.until = info.get("output_bytes", 0)
            return await self._t.open("GET", self._p("output"), query={"from": since, "encoding": encoding},
                                      stream=True)
        stream = AsyncEventStream(opener, socket_path=self._t.socket_path, last=("exit",),
                                  since=since if isinstance(since, int) else None)
        return stream

    async def write_stdin(self, data: Data, *, eof: bool = False) -> dict[str, Any]:
        """Bytes (or UTF-8 text) to its stdin; ``eof`` closes stdin after them."""
        return await self._t.call("POST", self._p("stdin"),  # type: ignore[no-any-return]
                                  query={"close": 1 if eof else None}, data=_common.to_bytes(data),
                                  content_type="application/octet-stream")

    async def signal(self, sig: Union[str, int] = "TERM", *, group: Optional[bool] = None) -> None:
        """A signal by name (``"TERM"``, ``"SIGKILL"``) or number."""
        await self._t.call("POST", self._p("signal"), json=drop_none({"signal": sig, "group": group}))

    async def wait(self, timeout_ms: Optional[int] = None) -> dict[str, Any]:
        """Until it exited (its output drained): the exit object
        (``exit_code``, ``signal``, ``timed_out``, ...). kilnd's
        TimeoutError after ``timeout_ms``."""
        return await self._t.call("POST", self._p("wait"),  # type: ignore[no-any-return]
                                  query={"timeout_ms": timeout_ms}, extra_timeout=_common.extra_for(timeout_ms))

    async def resize(self, rows: int, cols: int) -> None:
        """The terminal's size (a ``pty`` process)."""
        await self._t.call("POST", self._p("resize"), json={"rows": rows, "cols": cols})


class AsyncPorts:
    """``sb.ports``: host TCP ports forwarded to guest ports."""

    def __init__(self, sb: AsyncSandbox) -> None:
        self._sb = sb
        self._t = sb._t

    async def add(self, guest_port: int, host_port: Optional[int] = None, *, target: Optional[str] = None,
                  guest_address: Optional[str] = None) -> dict[str, Any]:
        """Forward ``127.0.0.1:host_port`` (any free one when None) to the
        guest; the mapping's ``host_port`` says which."""
        body = drop_none({"guest_port": guest_port, "host_port": host_port, "target": target,
                          "guest_address": guest_address})
        return await self._t.call("POST", sb_path(self._sb.id, "ports"), json=body)  # type: ignore[no-any-return]

    async def list(self) -> list[dict[str, Any]]:
        return (await self._t.call("GET", sb_path(self._sb.id, "ports")))["ports"]  # type: ignore[no-any-return]

    async def remove(self, host_port: int) -> None:
        await self._t.call("DELETE", sb_path(self._sb.id, "ports", host_port))


class AsyncPreviews:
    """``sb.previews``: preview URLs of guest web servers."""

    def __init__(self, sb: AsyncSandbox) -> None:
        self._sb = sb
        self._t = sb._t

    async def add(self, port: int, public: bool = False) -> dict[str, Any]:
        """A preview of guest TCP ``port``: ``url``, ``path_url``, ``token``."""
        return await self._t.call("POST", sb_path(self._sb.id, "previews"),  # type: ignore[no-any-return]
                                  json={"port": port, "public": public})

    async def list(self) -> list[dict[str, Any]]:
        return (await self._t.call("GET", sb_path(self._sb.id, "previews")))["previews"]  # type: ignore[no-any-return]

    async def remove(self, port: int) -> None:
        await self._t.call("DELETE", sb_path(self._sb.id, "previews", port))


class AsyncCheckpoints:
    """``sb.checkpoints``: snapshots of the running sandbox, restored in place
    or forked (``sb.fork``)."""

    def __init__(self, sb: AsyncSandbox) -> None:
        self._sb = sb
        self._t = sb._t

    async def create(self, name: str, *, compress: Optional[bool] = None,
                     incremental: Optional[bool] = None) -> dict[str, Any]:
        return await self._t.call("POST", sb_path(self._sb.id, "checkpoints"),  # type: ignore[no-any-return]
                                  json=drop_none({"name": name, "compress": compress, "incremental": incremental}))

    async def list(self) -> list[dict[str, Any]]:
        return (await self._t.call("GET", sb_path(self._sb.id, "checkpoints")))["checkpoints"]  # type: ignore[no-any-return]

    async def get(self, name: str) -> dict[str, Any]:
        return await self._t.call("GET", sb_path(self._sb.id, "checkpoints", name))  # type: ignore[no-any-return]

    async def delete(self, name: str) -> None:
        await self._t.call("DELETE", sb_path(self._sb.id, "checkpoints", name))

    async def restore(self, name: str) -> AsyncSandbox:
        """Put the sandbox back to checkpoint ``name`` in place (same id)."""
        self._sb.info = await self._t.call("POST", sb_path(self._sb.id, "checkpoints", name, "restore"))
        return self._sb


class AsyncFirewall:
    """``sb.firewall``: the packet filter's rules, counters and log (a
    sandbox with ``network="passt"``)."""

    def __init__(self, sb: AsyncSandbox) -> None:
        self._sb = sb
        self._t = sb._t

    async def get(self) -> dict[str, Any]:
        """``{"network", "running", "rules", "counters"}``."""
        return await self._t.call("GET", sb_path(self._sb.id, "firewall"))  # type: ignore[no-any-return]

    async def set(self, rules: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the rule set (``{"outbound_internet", "allow", "deny", "dns"}``)."""
        return await self._t.call("PUT", sb_path(self._sb.id, "firewall"), json=dict(rules))  # type: ignore[no-any-return]

    async def log(self) -> list[str]:
        """The denied-flow log's lines, oldest first."""
        return (await self._t.call("GET", sb_path(self._sb.id, "firewall", "log")))["lines"]  # type: ignore[no-any-return]


class AsyncEgress:
    """``sb.egress``: a policy callback on the sandbox's egress decisions
    (a sandbox whose firewall has ``http`` rules, so its flows go through
    the egress proxy). While a callback is attached, kilnd asks it about
    every TLS connect and HTTP request (``kiln.egress`` has the answers);
    one client at a time per sandbox."""

    def __init__(self, sb: AsyncSandbox) -> None:
        self._sb = sb
        self._t = sb._t

    async def policy(self, fn: Callable[[dict[str, Any]], Any], *, deadline_ms: int = 2000,
                     on_timeout: str = "deny") -> AsyncEgressPolicy:
        """``GET .../egress/decisions`` (``Upgrade: kiln-decisions``):
        ``fn(event)`` decides every ``connect`` and ``request`` event and
        returns ``egress.allow(...)``, ``egress.deny(...)``,
        ``egress.rules()`` or None (rules); raising (or returning what
        kilnd would refuse) denies with reason "policy callback failed",
        logged on the ``kiln.egress`` logger. ``deadline_ms``
        (10..60000): how long kilnd waits for each answer; then
        ``on_timeout``: ``"deny"`` or ``"rules"``. Returns once attached,
        with the callback running in the background (:class:`AsyncEgressPolicy`:
        ``aclose()``, ``wait()``). BusyError: another client holds the
        stream; WrongStateError: not running; NoEgressProxyError: the
        sandbox has no ``http`` rules."""
        return await self._attach(fn, deadline_ms, on_timeout, False)

    async def on_request(self, fn: Callable[[dict[str, Any]], Any], *, deadline_ms: int = 2000,
                         on_timeout: str = "deny") -> AsyncEgressPolicy:
        """:meth:`policy` for ``request`` events only: TLS connects are
        answered ``rules`` without calling ``fn``."""
        return await self._attach(fn, deadline_ms, on_timeout, True)

    async def _attach(self, fn: Callable[[dict[str, Any]], Any], deadline_ms: int, on_timeout: str,
                      requests_only: bool) -> AsyncEgressPolicy:
        query = egress.check_params(fn, deadline_ms, on_timeout)
        conn = await self._t.upgrade("GET", sb_path(self._sb.id, "egress", "decisions"), query=query,
                                     protocol="kiln-decisions")
        return await AsyncEgressPolicy.start(conn, fn, requests_only)


def _decode(status: int, body: bytes) -> dict[str, Any]:
    return decode_json(status, body)  # type: ignore[no-any-return]
