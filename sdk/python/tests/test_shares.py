"""Client shares: the answer an object gives to each request line
(kiln._shares.dispatch: methods, missing ones, errno names, results of the
wrong shape), MemoryFS's tree, and the sync and asyncio servers against a
fake kilnd that upgrades and sends lines (tests/unit/kilnd_shares_test
runs them against the real kilnd)."""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import os
import socket
import tempfile
import threading
import time
import unittest
from typing import Optional

import kiln
from kiln import _shares, errors
from kiln.aio import AsyncKiln


def req(op: str, path: str, **more: object) -> dict:
    return {"id": 9, "op": op, "path": path, **more}


class TestDispatch(unittest.TestCase):
    def test_memoryfs_ops(self) -> None:
        fs = kiln.MemoryFS({"/a/b.txt": b"abc"})
        d = lambda *a, **k: _shares.dispatch(fs, req(*a, **k))  # noqa: E731
        self.assertEqual(d("stat", "/a"), {"id": 9, "type": "dir", "size": 0, "mode": 0o777})
        self.assertEqual(d("stat", "/a/b.txt"), {"id": 9, "type": "file", "size": 3, "mode": 0o666})
        self.assertEqual(d("readdir", "/"), {"id": 9, "entries": [{"name": "a", "type": "dir"}]})
        self.assertEqual(d("read", "/a/b.txt", offset=1, size=1), {"id": 9, "data": "Yg=="})
        self.assertEqual(d("create", "/a/c", mode=0o644), {"id": 9})
        self.assertEqual(d("create", "/a/c", mode=0o644), {"id": 9, "error": "EEXIST"})
        self.assertEqual(d("write", "/a/c", offset=2, data="aGk="), {"id": 9, "size": 2})
        self.assertEqual(fs.files["/a/c"], b"\0\0hi")
        self.assertEqual(d("truncate", "/a/c", size=1), {"id": 9})
        self.assertEqual(d("mkdir", "/a/e", mode=0o755), {"id": 9})
        self.assertEqual(d("rename", "/a", to="/z"), {"id": 9})
        self.assertEqual(sorted(fs.files), ["/z/b.txt", "/z/c"])
        self.assertIn("/z/e", fs.dirs)
        self.assertEqual(d("rmdir", "/z"), {"id": 9, "error": "ENOTEMPTY"})
        self.assertEqual(d("unlink", "/z/e"), {"id": 9, "error": "EISDIR"})
        self.assertEqual(d("rmdir", "/z/e"), {"id": 9})
        self.assertEqual(d("unlink", "/z/c"), {"id": 9})
        self.assertEqual(d("read", "/nope", offset=0, size=1), {"id": 9, "error": "ENOENT"})
        self.assertEqual(d("create", "/nodir/x", mode=0o644), {"id": 9, "error": "ENOENT"})

    def test_errors(self) -> None:
        class Obj:
            def stat(self, path: str) -> dict:
                raise PermissionError(errno.EACCES, path)

            def read(self, path: str, offset: int, size: int) -> bytes:
                raise OSError(errno.EAGAIN, "not a protocol errno")

            def readdir(self, path: str) -> list:
                raise ValueError("a bug")

            def write(self, path: str, offset: int, data: bytes) -> int:
                return 99  # more than sent: capped

            def mkdir(self, path: str, mode: int) -> None:
                return None

            unlink = None  # not callable: ENOSYS

            def create(self, path: str, mode: int) -> None:
                raise OSError(errno.EROFS, path)

        o = Obj()
        self.assertEqual(_shares.dispatch(o, req("stat", "/")), {"id": 9, "error": "EACCES"})
        self.assertEqual(_shares.dispatch(o, req("read", "/", offset=0, size=1)), {"id": 9, "error": "EIO"})
        self.assertEqual(_shares.dispatch(o, req("readdir", "/")), {"id": 9, "error": "EIO"})
        self.assertEqual(_shares.dispatch(o, req("write", "/", offset=0, data="aGk=")), {"id": 9, "size": 2})
        self.assertEqual(_shares.dispatch(o, req("unlink", "/x")), {"id": 9, "error": "ENOSYS"})
        self.assertEqual(_shares.dispatch(o, req("rmdir", "/x")), {"id": 9, "error": "ENOSYS"})
        self.assertEqual(_shares.dispatch(o, req("create", "/x", mode=0)), {"id": 9, "error": "EROFS"})
        self.assertEqual(_shares.dispatch(o, req("chmod", "/x")), {"id": 9, "error": "ENOSYS"})

    def test_read_is_capped_and_stat_shape(self) -> None:
        class Obj:
            def read(self, path: str, offset: int, size: int) -> bytes:
                return b"0123456789"

            def stat(self, path: str) -> dict:
                return {"type": "file", "size": 1, "mode": 0o600, "mtime": 12.5, "extra": 1}

        self.assertEqual(_shares.dispatch(Obj(), req("read", "/", offset=0, size=3)),
                         {"id": 9, "data": base64.b64encode(b"012").decode()})
        self.assertEqual(_shares.dispatch(Obj(), req("stat", "/")),
                         {"id": 9, "type": "file", "size": 1, "mode": 0o600, "mtime": 12.5})

    def test_share_index(self) -> None:
        info = {"id": "x", "shares": [{"guest_path": "/a"}, {"guest_path": "/b", "client": True}]}
        self.assertEqual(_shares.share_index(info, "/b"), 1)
        self.assertEqual(_shares.share_index(info, 0), 0)
        with self.assertRaises(errors.KilnError) as c:
            _shares.share_index(info, "/c")
        self.assertIn("no share at guest path '/c'", str(c.exception))


class TestHostileLines(unittest.TestCase):
    """Lines a compromised kilnd could send: the object never sees a path
    outside the share's tree or a field of the wrong kind, MemoryFS never
    grows to a size the guest chose, and no line ends the serving."""

    class Recorder:
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def __getattr__(self, op: str):  # every op: recorded, answered ok
            if op not in _shares._OPS:
                raise AttributeError(op)

            def fn(*args: object) -> object:
                self.calls.append((op, *args))
                return {"type": "file", "size": 0} if op == "stat" else None
            return fn

    def test_bad_paths_never_reach_the_object(self) -> None:
        bad = ["/../x", "/a/../../etc/passwd", "..", "x", "", "//x", "/a//b", "/a/", "/./a",
               "/a/.", "/a\x00b", "/" + "n" * 256, "/a" * 2049, 5, None, ["/"]]
        for path in bad:
            obj = self.Recorder()
            got = _shares.dispatch(obj, req("stat", path))  # type: ignore[arg-type]
            self.assertEqual(got, {"id": 9, "error": "EINVAL"}, path)
            self.assertEqual(obj.calls, [], path)
        obj = self.Recorder()
        self.assertEqual(_shares.dispatch(obj, req("rename", "/a", to="/../b")), {"id": 9, "error": "EINVAL"})
        self.assertEqual(_shares.dispatch(obj, req("rename", "/a", to="/b")), {"id": 9})
        self.assertEqual(obj.calls, [("rename", "/a", "/b")])

    def test_bad_fields_never_reach_the_object(self) -> None:
        obj = self.Recorder()
        for r in (req("read", "/f", offset=-1, size=1), req("read", "/f", offset=0, size=0),
                  req("read", "/f", offset=0, size=131073), req("read", "/f", offset="0", size=1),
                  req("read", "/f", offset=True, size=1), req("read", "/f", offset=2 ** 63, size=1),
                  req("write", "/f", offset=0, data="a"), req("write", "/f", offset=0, data=7),
                  req("write", "/f", offset=1.5, data="aGk="), req("truncate", "/f", size=-1),
                  req("create", "/f", mode=0o10000), req("mkdir", "/d"), req("read", "/f")):
            self.assertEqual(_shares.dispatch(obj, r), {"id": 9, "error": "EINVAL"}, r)
        self.assertEqual(obj.calls, [])
        self.assertEqual(_shares.dispatch(obj, req("read", "/f", offset=2 ** 63 - 1, size=131072)),
                         {"id": 9, "data": ""})

    def test_memoryfs_sizes_are_bounded(self) -> None:
        fs = kiln.MemoryFS({"/f": b"ab"})
        d = lambda *a, **k: _shares.dispatch(fs, req(*a, **k))  # noqa: E731
        self.assertEqual(d("write", "/f", offset=2 ** 40, data="aGk="), {"id": 9, "error": "EFBIG"})
        self.assertEqual(d("truncate", "/f", size=2 ** 40), {"id": 9, "error": "EFBIG"})
        self.assertEqual(fs.files["/f"], b"ab")
        small = kiln.MemoryFS(max_bytes=8)
        self.assertEqual(_shares.dispatch(small, req("create", "/a", mode=0o644)), {"id": 9})
        self.assertEqual(_shares.dispatch(small, req("create", "/b", mode=0o644)), {"id": 9})
        self.assertEqual(_shares.dispatch(small, req("truncate", "/a", size=6)), {"id": 9})
        self.assertEqual(_shares.dispatch(small, req("write", "/b", offset=0, data="aGk=")),
                         {"id": 9, "size": 2})
        self.assertEqual(_shares.dispatch(small, req("write", "/b", offset=2, data="aGk=")),
                         {"id": 9, "error": "ENOSPC"})
        self.assertEqual(_shares.dispatch(small, req("truncate", "/a", size=0)), {"id": 9})
        self.assertEqual(_shares.dispatch(small, req("write", "/b", offset=2, data="aGk=")),
                         {"id": 9, "size": 2})

    def test_memoryfs_rename_of_a_directory_over_a_full_one(self) -> None:
        # rename(2): a directory may replace an empty one, not one with
        # entries (ENOTEMPTY), which also refuses a rename onto an ancestor.
        fs = kiln.MemoryFS({"/x/a": b"1", "/y/b": b"2", "/p/q/r": b"3"})
        fs.dirs.add("/e")
        d = lambda *a, **k: _shares.dispatch(fs, req(*a, **k))  # noqa: E731
        self.assertEqual(d("rename", "/x", to="/y"), {"id": 9, "error": "ENOTEMPTY"})
        self.assertEqual(d("rename", "/p/q", to="/p"), {"id": 9, "error": "ENOTEMPTY"})
        self.assertEqual(sorted(fs.files), ["/p/q/r", "/x/a", "/y/b"])
        self.assertEqual(d("rename", "/x", to="/x"), {"id": 9})
        self.assertEqual(d("rename", "/x", to="/e"), {"id": 9})
        self.assertEqual(sorted(fs.files), ["/e/a", "/p/q/r", "/y/b"])
        self.assertNotIn("/x", fs.dirs)

    def test_a_result_json_cannot_carry_is_eio(self) -> None:
        class Obj:
            def stat(self, path: str) -> dict:
                return {"type": "file", "size": 1, "mtime": object()}

        self.assertEqual(_shares.dispatch(Obj(), req("stat", "/f")), {"id": 9, "error": "EIO"})

    def test_a_deeply_nested_line_is_dropped(self) -> None:
        self.assertIsNone(_shares.parse_line(b"[" * 200000))
        errs: list[str] = []
        _shares.note(errs, b'{"kind":"error","message":' + b"[" * 200000 + b"}")
        self.assertEqual(errs, [])


class FakeShareKilnd:
    """A socket that answers the upgrade with `status` and then sends one
    request line and keeps the reply; the connection stays open until
    close(), as kilnd's does (a close would end the serving)."""

    def __init__(self, status: int = 101, delay: float = 0) -> None:
        self.dir = tempfile.mkdtemp(prefix="kiln-sdk-share.")
        self.path = os.path.join(self.dir, "k.sock")
        self.s = socket.socket(socket.AF_UNIX)
        self.s.bind(self.path)
        self.s.listen(1)
        self.status = status
        self.delay = delay
        self.head = b""
        self.reply = b""
        self.c: Optional[socket.socket] = None
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        c, _ = self.s.accept()
        self.c = c
        while b"\r\n\r\n" not in self.head:
            self.head += c.recv(1)
        if self.status != 101:
            body = json.dumps({"error": {"code": "busy", "message": "taken"}}).encode()
            c.sendall(b"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: "
                      + str(len(body)).encode() + b"\r\n\r\n" + body)
            c.close()
            return
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: kiln-fs\r\n\r\n"
                  b'{"kind":"error","message":"first"}\n')
        time.sleep(self.delay)  # a share idle for a while
        c.sendall(b'{"id":3,"op":"stat","path":"/f"}\n')
        while not self.reply.endswith(b"\n"):
            got = c.recv(1)
            if not got:
                break
            self.reply += got

    def close(self) -> None:
        if self.c:
            self.c.close()
        self.s.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


class TestServers(unittest.TestCase):
    def test_sync_server(self) -> None:
        fake = FakeShareKilnd()
        try:
            k = kiln.Kiln(fake.path)
            sb = kiln.Sandbox(k, {"id": "sb1", "shares": []})
            with sb.shares.serve(2, kiln.MemoryFS({"/f": b"xy"})) as srv:
                fake.t.join(5)
                self.assertIn(b"GET /v1/sandboxes/sb1/shares/2/serve HTTP/1.1", fake.head)
                self.assertIn(b"Upgrade: kiln-fs", fake.head)
                self.assertEqual(json.loads(fake.reply), {"id": 3, "type": "file", "size": 2, "mode": 0o666})
                self.assertEqual(srv.errors, ["first"])
        finally:
            fake.close()

    def test_sync_server_outlives_the_client_timeout(self) -> None:
        # A share may be idle for longer than the client's timeout (which
        # bounds the upgrade only): the next request is still served.
        fake = FakeShareKilnd(delay=1.2)
        try:
            sb = kiln.Sandbox(kiln.Kiln(fake.path, timeout=0.5), {"id": "sb1"})
            with sb.shares.serve(0, kiln.MemoryFS({"/f": b"xy"})) as srv:
                fake.t.join(5)
                self.assertEqual(json.loads(fake.reply), {"id": 3, "type": "file", "size": 2, "mode": 0o666})
                self.assertTrue(srv.serving)
        finally:
            fake.close()

    def test_sync_busy(self) -> None:
        fake = FakeShareKilnd(409)
        try:
            sb = kiln.Sandbox(kiln.Kiln(fake.path), {"id": "sb1"})
            with self.assertRaises(errors.BusyError):
                sb.shares.serve(0, kiln.MemoryFS())
        finally:
            fake.close()

    def test_async_server(self) -> None:
        fake = FakeShareKilnd()

        class AsyncFS(kiln.MemoryFS):
            async def stat(self, path: str) -> dict:  # type: ignore[override]
                return {"type": "dir", "size": 0}

        async def main() -> None:
            from kiln.aio import AsyncSandbox
            async with AsyncKiln(fake.path) as k:
                sb = AsyncSandbox(k, {"id": "sb1"})
                srv = await sb.shares.serve(1, AsyncFS())
                for _ in range(100):
                    if fake.reply.endswith(b"\n"):
                        break
                    await asyncio.sleep(0.05)
                await srv.close()
                self.assertEqual(srv.errors, ["first"])

        try:
            asyncio.run(main())
            self.assertEqual(json.loads(fake.reply), {"id": 3, "type": "dir", "size": 0})
        finally:
            fake.close()


if __name__ == "__main__":
    unittest.main()
