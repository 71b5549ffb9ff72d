"""kiln.aio.AsyncKiln against the fake kilnd: its own transport
(asyncio.open_unix_connection), so framing, errors, streams, deadlines and
archives are checked again through it."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import kiln
from kiln import errors
from kiln.aio import AsyncKiln, AsyncSandbox
from fake_kilnd import (FakeKilnd, Request, chunk, chunked_head, chunked_response, error_response,
                        json_response, ndjson, response)
from test_sync import SB, routes


class AsyncBase(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        self.fake = FakeKilnd()
        self.k = AsyncKiln(self.fake.path, timeout=3)
        self.tmp = tempfile.mkdtemp(prefix="kiln-sdk-atest.")

    def tearDown(self) -> None:
        self.fake.close()
        subprocess.run(["rm", "-rf", self.tmp])

    async def asyncSetUp(self) -> None:
        # The test loop runs in debug mode: archive work in worker threads
        # is not the slow callback it would report.
        asyncio.get_running_loop().slow_callback_duration = 2.0

    def sandbox(self) -> AsyncSandbox:
        return AsyncSandbox(self.k, dict(SB))


class TestAsync(AsyncBase):
    async def test_health_images_metrics(self) -> None:
        self.fake.handler = routes({("GET", "/v1/health"): json_response(200, {"status": "ok"}),
                                    ("GET", "/v1/images"): chunked_response(b'{"images":[{"name":"m"}]}', 4,
                                                                            "application/json"),
                                    ("GET", "/metrics"): response(200, b"kiln_x 1\n", ctype="text/plain")})
        self.assertEqual((await self.k.health())["status"], "ok")
        self.assertEqual((await self.k.images())[0]["name"], "m")
        self.assertIn("kiln_x 1", await self.k.metrics())

    async def test_error_classes(self) -> None:
        for st, code, cls in ((404, "sandbox_not_found", errors.SandboxNotFoundError),
                              (409, "wrong_state", errors.WrongStateError),
                              (507, "no_space", errors.NoSpaceError), (504, "timeout", errors.TimeoutError),
                              (400, "unknown_field", errors.UnknownFieldError)):
            self.fake.handler = routes({("POST", "/v1/sandboxes"): error_response(st, code, "m")})
            with self.assertRaises(cls) as cm:
                await self.k.sandboxes.create(image="minimal", colour="red")
            self.assertEqual((cm.exception.status, cm.exception.code), (st, code))

    async def test_context_manager_deletes(self) -> None:
        self.fake.handler = routes({("POST", "/v1/sandboxes"): json_response(201, SB),
                                    ("DELETE", "/v1/sandboxes/3f9a1c2b7d4e"): response(204)})
        async with await self.k.sandboxes.create(image="minimal") as sb:
            self.assertEqual(sb.id, SB["id"])
        self.assertEqual([r.method for r in self.fake.requests], ["POST", "DELETE"])

    async def test_exec_and_stream(self) -> None:
        ev = ndjson({"type": "stdout", "data": "1\n"}, {"type": "stderr", "data_base64": "/w=="},
                    {"type": "exit", "exit_code": 0, "signal": None, "timed_out": False})
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): chunked_response(ev, 11)})
        got = [e async for e in self.sandbox().exec_stream(["x"])]
        self.assertEqual([e.type for e in got], ["stdout", "stderr", "exit"])
        self.assertEqual(got[1].data, b"\xff")
        outs: list[str] = []
        r = await self.sandbox().exec("x", on_stdout=outs.append)
        self.assertEqual((r.stdout, r.stderr_raw, outs), ("1\n", b"\xff", ["1\n"]))

    async def test_closed_mid_stream_is_connection_error(self) -> None:
        def cut(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head() + chunk(ndjson({"type": "stdout", "data": "1\n"})) + b"40\r\n{")
            return False
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): cut})
        seen = 0
        with self.assertRaises(errors.KilnConnectionError):
            async for _ in self.sandbox().exec_stream("x"):
                seen += 1
        self.assertEqual(seen, 1)

    async def test_never_answering_hits_deadline(self) -> None:
        gate = threading.Event()
        self.fake.handler = lambda req, c: gate.wait(10) and False
        k = AsyncKiln(self.fake.path, timeout=0.5)
        t0 = time.monotonic()
        with self.assertRaises(errors.ClientTimeoutError):
            await k.health()
        gate.set()
        self.assertLess(time.monotonic() - t0, 3)

    async def test_stream_silence_deadline(self) -> None:
        def silent(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head() + chunk(ndjson({"type": "watching", "path": "/w", "watches": 1})))
            time.sleep(3)
            return False
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/files/watch"): silent})
        k = AsyncKiln(self.fake.path, timeout=2, stream_timeout=0.3)
        sb = AsyncSandbox(k, dict(SB))
        stream = sb.files.watch("/w")
        self.assertEqual((await stream.__anext__()).type, "watching")
        with self.assertRaises(errors.ClientTimeoutError):
            await stream.__anext__()

    async def test_no_kilnd(self) -> None:
        k = AsyncKiln(os.path.join(self.tmp, "none.sock"))
        with self.assertRaises(errors.KilnConnectionError) as cm:
            await k.health()
        self.assertIn("KILN_SOCKET", str(cm.exception))

    async def test_upload_download_and_dirs(self) -> None:
        store: dict[str, bytes] = {}

        def put(req: Request, c: socket.socket) -> bool:
            store[req.path + req.q["path"]] = req.body
            c.sendall(json_response(200, {"path": req.q["path"], "bytes": len(req.body)}))
            return False

        def get(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_response(store[req.path + req.q["path"]], 7, "application/octet-stream"))
            return False
        self.fake.handler = routes({("PUT", "/v1/sandboxes/3f9a1c2b7d4e/files"): put,
                                    ("GET", "/v1/sandboxes/3f9a1c2b7d4e/files"): get,
                                    ("PUT", "/v1/sandboxes/3f9a1c2b7d4e/archive"): put,
                                    ("GET", "/v1/sandboxes/3f9a1c2b7d4e/archive"): get})
        fs = self.sandbox().files
        data = os.urandom(200000)
        await fs.upload("/f", io.BytesIO(data))

        async def agen():
            for i in range(0, len(data), 70000):
                yield data[i:i + 70000]
        self.assertEqual((await fs.upload("/a", agen()))["bytes"], len(data))
        self.assertEqual(store["/v1/sandboxes/3f9a1c2b7d4e/files/a"], data)
        self.assertEqual((await fs.upload("/g", iter([data[:5], data[5:]])))["bytes"], len(data))
        self.assertEqual(store["/v1/sandboxes/3f9a1c2b7d4e/files/g"], data)
        out = io.BytesIO()
        self.assertEqual(await fs.download("/f", out), len(data))
        self.assertEqual(out.getvalue(), data)
        await fs.write("/t", "text")
        self.assertEqual(await fs.read_text("/t"), "text")
        src = os.path.join(self.tmp, "src")
        os.makedirs(os.path.join(src, "d"))
        with open(os.path.join(src, "d", "x"), "wb") as f:
            f.write(data)
        await fs.upload_dir(src, "/p")
        dst = os.path.join(self.tmp, "dst")
        counts = await fs.download_dir("/p", dst)
        self.assertEqual(counts["files"], 1)
        subprocess.run(["diff", "-r", src, dst], check=True)

    async def test_download_dir_cut_short(self) -> None:
        src = os.path.join(self.tmp, "src")
        os.makedirs(src)
        with open(os.path.join(src, "x"), "wb") as f:
            f.write(os.urandom(300000))
        import tarfile
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as t:
            t.add(os.path.join(src, "x"), "x")
        blob = buf.getvalue()

        def cut(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head(200, "application/gzip") + chunk(blob[:len(blob) // 2]))
            return False
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/archive"): cut})
        with self.assertRaises(errors.KilnError):
            await self.sandbox().files.download_dir("/p", os.path.join(self.tmp, "dst"))

    async def test_process_output_and_lifecycle(self) -> None:
        ev = ndjson({"type": "attached", "seq": 0, "running": False}, {"type": "stdout", "seq": 0, "data": "hey"},
                    {"type": "exit", "exit_code": 0, "signal": None, "timed_out": False})
        P = "/v1/sandboxes/3f9a1c2b7d4e/processes"
        self.fake.handler = routes({("POST", P): json_response(201, {"id": 2, "pid": 70}),
                                    ("GET", P + "/2/output"): chunked_response(ev, 2),
                                    ("POST", P + "/2/wait"): json_response(200, {"exit_code": 0}),
                                    ("POST", "/v1/sandboxes/3f9a1c2b7d4e/hibernate"):
                                    json_response(200, dict(SB, state="hibernated"))})
        sb = self.sandbox()
        p = await sb.processes.spawn("echo hey")
        async with p.output() as s:
            texts = [e.text async for e in s if isinstance(e, kiln.OutputEvent)]
        self.assertEqual((texts, s.next_seq), (["hey"], 3))
        self.assertEqual((await p.wait(1000))["exit_code"], 0)
        self.assertEqual((await sb.hibernate()).state, "hibernated")
