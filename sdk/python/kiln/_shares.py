"""Client shares (docs/api.md, "Client shares"): a sandbox share whose files
an object in this process serves. ``GET .../shares/{n}/serve`` with
``Upgrade: kiln-fs`` switches the connection to NDJSON lines: kilnd sends
the guest's requests, the object's answers go back.

The object's methods (each optional: a missing one answers ENOSYS):
``stat(path)`` -> ``{"type": "file"|"dir", "size": int, "mode"?: int,
"mtime"?: number}``; ``readdir(path)`` -> ``[{"name", "type"}, ...]`` (or
names with a ``stat`` to type them); ``read(path, offset, size)`` -> bytes;
``write(path, offset, data)`` -> bytes written (None: all); ``create(path,
mode)``, ``mkdir(path, mode)``, ``unlink(path)``, ``rmdir(path)``,
``rename(path, to)``, ``truncate(path, size)``. An ``OSError`` with an errno
kilnd knows answers that errno's name; any other exception answers EIO.
"""

from __future__ import annotations

import asyncio
import base64
import errno as errno_mod
import inspect
import json
import socket
import threading
from typing import TYPE_CHECKING, Any, Optional, Union

from .errors import KilnError

if TYPE_CHECKING:
    from ._async_transport import AsyncUpgraded
    from ._transport import Upgraded

PROTOCOL = "kiln-fs"
LINE_MAX = 262144  # a line with its newline (the protocol's bound)
ERRORS = frozenset(
    "ENOENT EEXIST ENOTDIR EISDIR ENOTEMPTY EACCES EPERM EROFS ENOSPC EINVAL EIO ENOSYS "
    "EFBIG ENAMETOOLONG".split())
_OPS = ("stat", "readdir", "read", "write", "create", "mkdir", "unlink", "rmdir", "rename", "truncate")


def error_name(exc: BaseException) -> str:
    """The protocol's name for an exception the object raised."""
    if isinstance(exc, OSError) and exc.errno is not None:
        name = errno_mod.errorcode.get(exc.errno, "EIO")
        return name if name in ERRORS else "EIO"
    return "EIO"


IO_MAX = 131072  # bytes in one read or write
PATH_MAX = 4096
NAME_MAX = 255
OFFSET_MAX = 2 ** 63 - 1
MODE_MAX = 0o7777


def path_ok(path: Any) -> bool:
    """An absolute path of the protocol: components neither empty, "." nor
    "..", no NUL, each at most NAME_MAX bytes, the whole at most PATH_MAX."""
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        return False
    try:
        if len(path.encode("utf-8")) > PATH_MAX:
            return False
    except UnicodeEncodeError:  # a lone surrogate: not a name kilnd sends
        return False
    if path == "/":
        return True
    return all(n not in ("", ".", "..") and len(n.encode("utf-8")) <= NAME_MAX
               for n in path[1:].split("/"))


def _int_in(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _b64_ok(v: Any) -> bool:
    if not isinstance(v, str) or len(v) > (IO_MAX + 2) // 3 * 4:
        return False
    try:
        base64.b64decode(v, validate=True)
    except ValueError:
        return False
    return True


def request_ok(req: dict[str, Any]) -> bool:
    """The request's fields are the protocol's (kilnd checks them; a
    compromised kilnd must not hand the object a path outside the share,
    such as "/../x", or a size of its choosing)."""
    op = req.get("op")
    if not path_ok(req.get("path")):
        return False
    if op == "read":
        return _int_in(req.get("offset"), 0, OFFSET_MAX) and _int_in(req.get("size"), 1, IO_MAX)
    if op == "write":
        return _int_in(req.get("offset"), 0, OFFSET_MAX) and _b64_ok(req.get("data"))
    if op in ("create", "mkdir"):
        return _int_in(req.get("mode"), 0, MODE_MAX)
    if op == "rename":
        return path_ok(req.get("to"))
    if op == "truncate":
        return _int_in(req.get("size"), 0, OFFSET_MAX)
    return True


def call_args(req: dict[str, Any]) -> tuple[Any, ...]:
    op, path = req["op"], req["path"]
    if op == "read":
        return (path, req["offset"], req["size"])
    if op == "write":
        return (path, req["offset"], base64.b64decode(req["data"]))
    if op in ("create", "mkdir"):
        return (path, req["mode"])
    if op == "rename":
        return (path, req["to"])
    if op == "truncate":
        return (path, req["size"])
    return (path,)


def _ok(req: dict[str, Any], result: Any) -> dict[str, Any]:
    """The reply line for the object's result."""
    op, out = req["op"], {"id": req["id"]}
    if op == "stat":
        st = dict(result)
        out["type"] = st["type"]
        out["size"] = int(st.get("size", 0))
        for k in ("mode", "mtime"):
            if st.get(k) is not None:
                out[k] = st[k]
    elif op == "readdir":
        out["entries"] = [{"name": e["name"], "type": e["type"]} for e in result]
    elif op == "read":
        data = bytes(result or b"")[: req["size"]]
        out["data"] = base64.b64encode(data).decode("ascii")
    elif op == "write":
        n = len(base64.b64decode(req["data"]))
        out["size"] = n if result is None else min(int(result), n)
    return out


def lookup(obj: Any, req: dict[str, Any]) -> Any:
    """The object's method for the request, or None (ENOSYS)."""
    op = req.get("op")
    if op not in _OPS:
        return None
    fn = getattr(obj, op, None)
    return fn if callable(fn) else None


def answer(req: dict[str, Any], call: Any) -> dict[str, Any]:
    """The reply for a request, ``call`` being the object's result or the
    exception it raised."""
    if isinstance(call, BaseException):
        return {"id": req.get("id"), "error": error_name(call)}
    try:
        out = _ok(req, call)
        json.dumps(out, allow_nan=False)  # a value no JSON line can carry: EIO now
        return out
    except Exception:  # a result of the wrong shape
        return {"id": req.get("id"), "error": "EIO"}


def dispatch(obj: Any, req: dict[str, Any]) -> dict[str, Any]:
    """One request to the object (synchronously), its reply line."""
    fn = lookup(obj, req)
    if fn is None:
        return {"id": req.get("id"), "error": "ENOSYS"}
    if not request_ok(req):
        return {"id": req.get("id"), "error": "EINVAL"}
    try:
        result = fn(*call_args(req))
    except Exception as e:  # noqa: BLE001 - every failure is an answer
        return answer(req, e)
    return answer(req, result)


def encode(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, separators=(",", ":")).encode() + b"\n"


def share_index(info: dict[str, Any], share: Union[int, str]) -> int:
    """A share's index from its index or guest path (the sandbox's spec)."""
    shares = info.get("shares") or []
    if isinstance(share, int):
        return share
    for i, s in enumerate(shares):
        if s.get("guest_path") == share:
            return i
    raise KilnError(f"sandbox {info.get('id')} has no share at guest path {share!r} "
                    f"(its shares: {[s.get('guest_path') for s in shares]})")


def parse_line(line: bytes) -> Optional[dict[str, Any]]:
    """A request line from kilnd; None for kilnd's own error lines (a
    refused reply: the message says why) and anything else."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        return None
    if not isinstance(msg, dict) or "op" not in msg:
        return None
    return msg


class ShareServer:
    """``sb.shares.serve(...)``'s handle: the serving thread; ``close()`` ends
    it (the guest's requests get EIO from then on). ``errors`` holds kilnd's
    messages about replies it refused."""

    def __init__(self, conn: "Upgraded", index: int, obj: Any) -> None:
        self.index = index
        self.errors: list[str] = []
        self._obj = obj
        self._closed = threading.Event()
        self._sock, rest = conn.sock, conn.leftover
        # The client's timeout bounded the upgrade (its last deadline is
        # still on the socket); a share may be idle for hours.
        self._sock.settimeout(None)
        self._thread = threading.Thread(target=self._run, args=(rest,), daemon=True,
                                        name=f"kiln-share-{index}")
        self._thread.start()

    def _run(self, buf: bytes) -> None:
        try:
            while not self._closed.is_set():
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > LINE_MAX:
                        return
                    more = self._sock.recv(65536)
                    if not more:
                        return
                    buf += more
                    continue
                line, buf = buf[:nl], buf[nl + 1:]
                req = parse_line(line)
                if req is None:
                    note(self.errors, line)
                    continue
                self._sock.sendall(encode(dispatch(self._obj, req)))
        except OSError:
            pass
        finally:
            self._closed.set()

    @property
    def serving(self) -> bool:
        return not self._closed.is_set()

    def close(self) -> None:
        """Stop serving (the connection closes; the share answers EIO)."""
        self._closed.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> "ShareServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def note(errors: list[str], line: bytes) -> None:
    """kilnd's line about a reply it refused, kept for the caller."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return
    if isinstance(msg, dict) and msg.get("kind") == "error":
        errors.append(str(msg.get("message")))


class MemoryFS:
    """An example share object: a tree held in memory. ``files`` maps each
    file's path to its bytes; directories are implied by the paths and
    ``dirs`` (an empty one stays listed). The guest sees a share's files as
    root's, so MemoryFS reports every file 0666 and directory 0777: the
    sandbox's default user (uid 1000) may write too. The guest chooses
    offsets and sizes: the files together hold at most ``max_bytes``
    (ENOSPC beyond; a write or truncate ending past it: EFBIG)."""

    FILE_MODE = 0o666
    DIR_MODE = 0o777
    MAX_BYTES = 256 << 20

    def __init__(self, files: Optional[dict[str, bytes]] = None,
                 max_bytes: int = MAX_BYTES) -> None:
        self.files: dict[str, bytes] = dict(files or {})
        self.dirs: set[str] = {"/"}
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        for p in list(self.files):
            self._parents(p)

    def _room(self, path: str, new_len: int) -> None:
        """path may become new_len bytes long (else EFBIG or ENOSPC)."""
        if new_len > self.max_bytes:
            raise OSError(errno_mod.EFBIG, path)
        total = sum(len(v) for v in self.files.values())
        if total - len(self.files[path]) + new_len > self.max_bytes:
            raise OSError(errno_mod.ENOSPC, path)

    def _parents(self, path: str) -> None:
        parts = path.strip("/").split("/")[:-1]
        for i in range(len(parts)):
            self.dirs.add("/" + "/".join(parts[: i + 1]))

    @staticmethod
    def _parent(path: str) -> str:
        return path.rsplit("/", 1)[0] or "/"

    def _need_dir(self, path: str) -> None:
        if path in self.files:
            raise OSError(errno_mod.ENOTDIR, path)
        if path not in self.dirs:
            raise OSError(errno_mod.ENOENT, path)

    def stat(self, path: str) -> dict[str, Any]:
        with self._lock:
            if path in self.files:
                return {"type": "file", "size": len(self.files[path]), "mode": self.FILE_MODE}
            if path in self.dirs:
                return {"type": "dir", "size": 0, "mode": self.DIR_MODE}
        raise OSError(errno_mod.ENOENT, path)

    def readdir(self, path: str) -> list[dict[str, str]]:
        with self._lock:
            self._need_dir(path)
            prefix = path.rstrip("/") + "/"
            out: dict[str, str] = {}
            for p in self.files:
                if p.startswith(prefix) and "/" not in p[len(prefix):]:
                    out[p[len(prefix):]] = "file"
            for d in self.dirs:
                if d != "/" and d.startswith(prefix) and "/" not in d[len(prefix):]:
                    out[d[len(prefix):]] = "dir"
        return [{"name": n, "type": t} for n, t in sorted(out.items())]

    def read(self, path: str, offset: int, size: int) -> bytes:
        with self._lock:
            if path in self.dirs:
                raise OSError(errno_mod.EISDIR, path)
            if path not in self.files:
                raise OSError(errno_mod.ENOENT, path)
            return self.files[path][offset: offset + size]

    def write(self, path: str, offset: int, data: bytes) -> int:
        with self._lock:
            if path not in self.files:
                raise OSError(errno_mod.ENOENT, path)
            old = self.files[path]
            self._room(path, max(len(old), offset + len(data)))
            if len(old) < offset:
                old += b"\0" * (offset - len(old))
            self.files[path] = old[:offset] + data + old[offset + len(data):]
        return len(data)

    def create(self, path: str, mode: int) -> None:
        with self._lock:
            self._need_dir(self._parent(path))
            if path in self.files or path in self.dirs:
                raise OSError(errno_mod.EEXIST, path)
            self.files[path] = b""

    def mkdir(self, path: str, mode: int) -> None:
        with self._lock:
            self._need_dir(self._parent(path))
            if path in self.files or path in self.dirs:
                raise OSError(errno_mod.EEXIST, path)
            self.dirs.add(path)

    def unlink(self, path: str) -> None:
        with self._lock:
            if path in self.dirs:
                raise OSError(errno_mod.EISDIR, path)
            if self.files.pop(path, None) is None:
                raise OSError(errno_mod.ENOENT, path)

    def rmdir(self, path: str) -> None:
        with self._lock:
            self._need_dir(path)
            prefix = path + "/"
            if path == "/" or any(p.startswith(prefix) for p in list(self.files) + list(self.dirs)):
                raise OSError(errno_mod.ENOTEMPTY, path)
            self.dirs.discard(path)

    def rename(self, path: str, to: str) -> None:
        with self._lock:
            self._need_dir(self._parent(to))
            if path in self.files:
                if to in self.dirs:
                    raise OSError(errno_mod.EISDIR, to)
                self.files[to] = self.files.pop(path)
                return
            if path not in self.dirs or path == "/":
                raise OSError(errno_mod.ENOENT, path)
            if to in self.files:
                raise OSError(errno_mod.ENOTDIR, to)
            if to.startswith(path + "/"):
                raise OSError(errno_mod.EINVAL, to)
            if to == path:
                return
            # Over a directory: only an empty one (an ancestor never is).
            if to in self.dirs and any(p.startswith(to.rstrip("/") + "/")
                                       for p in list(self.files) + list(self.dirs)):
                raise OSError(errno_mod.ENOTEMPTY, to)
            self.dirs.discard(to)
            prefix = path + "/"
            self.dirs = {to + d[len(path):] if d == path or d.startswith(prefix) else d for d in self.dirs}
            self.files = {to + p[len(path):] if p.startswith(prefix) else p: v for p, v in self.files.items()}

    def truncate(self, path: str, size: int) -> None:
        with self._lock:
            if path not in self.files:
                raise OSError(errno_mod.ENOENT, path)
            old = self.files[path]
            self._room(path, size)
            self.files[path] = old[:size] + b"\0" * max(0, size - len(old))


class AsyncShareServer:
    """The asyncio client's handle (``await sb.shares.serve(...)``): the
    serving task; ``await close()`` ends it. The object's methods may be
    coroutines (awaited) or plain functions (called in the event loop: keep
    them quick)."""

    def __init__(self, conn: "AsyncUpgraded", index: int, obj: Any) -> None:
        self.index = index
        self.errors: list[str] = []
        self._obj = obj
        self._reader, self._writer, self._leftover = conn.reader, conn.writer, conn.leftover
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        buf = self._leftover
        try:
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > LINE_MAX:
                        return
                    more = await self._reader.read(65536)
                    if not more:
                        return
                    buf += more
                    continue
                line, buf = buf[:nl], buf[nl + 1:]
                req = parse_line(line)
                if req is None:
                    note(self.errors, line)
                    continue
                fn = lookup(self._obj, req)
                if fn is None:
                    reply = {"id": req.get("id"), "error": "ENOSYS"}
                elif not request_ok(req):
                    reply = {"id": req.get("id"), "error": "EINVAL"}
                else:
                    try:
                        reply = answer(req, await maybe_await(fn(*call_args(req))))
                    except Exception as e:  # noqa: BLE001 - every failure is an answer
                        reply = answer(req, e)
                self._writer.write(encode(reply))
                await self._writer.drain()
        except OSError:
            return

    @property
    def serving(self) -> bool:
        return not self._task.done()

    async def close(self) -> None:
        """Stop serving (the connection closes; the share answers EIO)."""
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001
            pass
        self._writer.close()

    async def __aenter__(self) -> "AsyncShareServer":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def maybe_await(v: Any) -> Any:
    return await v if inspect.isawaitable(v) else v
