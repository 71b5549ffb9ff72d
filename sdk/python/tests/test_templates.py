"""Templates, image import and create-from-template (sync and asyncio)
against the fake kilnd: the build log stream (its result, its error line,
a log cut short, hostile lines), every error code the endpoints document,
packing a context directory (nothing followed out of it), and an image
upload that never holds the archive in memory."""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest
import warnings
from typing import Any

import kiln
from kiln import _tario, errors
from fake_kilnd import (Request, chunk, chunked_head, chunked_response, error_response, json_response,
                        ndjson, response)
from test_sync import SB, Base, routes
from test_async import AsyncBase

TPL = {"name": "web", "from": "minimal", "from_kind": "image", "sandbox": "0123456789ab",
       "checkpoint": "ready", "defaults": {"env": {}, "working_dir": "/", "user": "root"}, "steps": []}
LOG = [
    {"type": "step", "step": 1, "line": 1, "instruction": "FROM minimal"},
    {"type": "step_end", "step": 1, "line": 1, "instruction": "FROM minimal", "ms": 3},
    {"type": "step", "step": 2, "line": 2, "instruction": "RUN echo hi"},
    {"type": "stdout", "data": "hi\n"},
    {"type": "stderr", "data_base64": "AP8="},
    {"type": "step_end", "step": 2, "line": 2, "instruction": "RUN echo hi", "ms": 40},
    {"type": "result", "template": TPL},
]
IMG = {"name": "alpine", "source": "oci", "digest": "sha256:00", "format": "docker", "layers": 1}

# Every refusal the endpoints document (docs/api.md, "POST /v1/templates",
# "POST /v1/images", their GET and DELETE), and the class each raises.
BUILD_REFUSALS = [
    (409, "busy", errors.BusyError), (409, "in_use", errors.InUseError),
    (409, "limit_reached", errors.LimitReachedError),
    (400, "bad_field", errors.BadFieldError), (400, "bad_archive", errors.BadArchiveError),
    (400, "missing_field", errors.MissingFieldError), (404, "not_found", errors.NotFoundError),
    (404, "image_not_found", errors.ImageNotFoundError),
    (507, "no_space", errors.NoSpaceError), (413, "body_too_large", errors.BodyTooLargeError),
]
IMPORT_REFUSALS = [
    (409, "exists", errors.ExistsError), (400, "bad_archive", errors.BadArchiveError),
    (400, "bad_field", errors.BadFieldError), (400, "missing_field", errors.MissingFieldError),
    (403, "forbidden", errors.ForbiddenError), (413, "body_too_large", errors.BodyTooLargeError),
    (507, "no_space", errors.NoSpaceError), (500, "internal", errors.InternalError),
]
DELETE_REFUSALS = [
    (409, "in_use", errors.InUseError), (409, "busy", errors.BusyError),
    (409, "read_only", errors.ReadOnlyError), (404, "not_found", errors.NotFoundError),
    (404, "image_not_found", errors.ImageNotFoundError),
]


def log_answer(events: list[dict], pieces: int = 4) -> bytes:
    return chunked_response(ndjson(*events), pieces)


def tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def members(body: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as t:
        return {m.name: m for m in t.getmembers()}


def make_context(root: str) -> str:
    """A context with a file, a subdirectory, a symlink inside (kept), a
    symlink out of it and an absolute one (both left out), a fifo (left
    out) and a hard-linked file (packed twice as plain files)."""
    ctx = os.path.join(root, "ctx")
    os.makedirs(os.path.join(ctx, "app", "deep"))
    with open(os.path.join(ctx, "Kilnfile"), "w") as f:
        f.write("FROM minimal\nCOPY app/ /srv/\n")
    with open(os.path.join(ctx, "app", "index.html"), "w") as f:
        f.write("hi")
    with open(os.path.join(root, "secret"), "w") as f:
        f.write("outside")
    os.symlink("index.html", os.path.join(ctx, "app", "link"))
    os.symlink("../index.html", os.path.join(ctx, "app", "deep", "up"))
    os.symlink("../../secret", os.path.join(ctx, "app", "out"))
    os.symlink(os.path.join(root, "secret"), os.path.join(ctx, "abs"))
    os.symlink("..", os.path.join(ctx, "parent"))
    os.mkfifo(os.path.join(ctx, "fifo"))
    os.link(os.path.join(ctx, "app", "index.html"), os.path.join(ctx, "app", "again.html"))
    return ctx


class TestTemplates(Base):
    def build_route(self, answer, got: list[Request]):
        def post(req: Request, c: socket.socket) -> bool:
            got.append(req)
            c.sendall(answer)
            return False
        return routes({("POST", "/v1/templates"): post})

    def test_create_from_a_template(self) -> None:
        self.fake.handler = routes({("POST", "/v1/sandboxes"): json_response(201, dict(SB, template="web"))})
        sb = self.k.sandboxes.create(template="web", hostname="h1")
        self.assertEqual(sb.info["template"], "web")
        self.assertEqual(self.fake.requests[-1].json(), {"template": "web", "hostname": "h1"})

    def test_build_from_a_directory_packs_it_and_returns_the_template(self) -> None:
        got: list[Request] = []
        self.fake.handler = self.build_route(log_answer(LOG), got)
        ctx = make_context(self.tmp)
        seen: list[kiln.Event] = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            tpl = self.k.templates.build("web", context_dir=ctx, file="Kilnfile", cpus=2, memory_mib=256,
                                         disk_mib=1024, on_event=seen.append)
        self.assertEqual(tpl, TPL)
        self.assertEqual([e.type for e in seen], [e["type"] for e in LOG])
        self.assertIsInstance(seen[3], kiln.OutputEvent)
        self.assertEqual(seen[3].data, b"hi\n")
        self.assertEqual(seen[4].data, b"\x00\xff")
        req = got[0]
        self.assertEqual(req.q, {"name": "web", "file": "Kilnfile", "cpus": "2", "memory_mib": "256",
                                 "disk_mib": "1024"})
        self.assertEqual(req.headers.get("content-length"), str(len(req.body)))  # spooled: its length known
        self.assertEqual(req.headers.get("content-type"), "application/gzip")
        m = members(req.body)
        self.assertEqual(sorted(m), ["Kilnfile", "app", "app/again.html", "app/deep", "app/deep/up",
                                     "app/index.html", "app/link"])
        self.assertTrue(m["app/link"].issym() and m["app/link"].linkname == "index.html")
        self.assertTrue(m["app/again.html"].isfile())  # not a hard link member
        with tarfile.open(fileobj=io.BytesIO(req.body), mode="r:gz") as t:
            self.assertEqual(t.extractfile("app/again.html").read(), b"hi")  # type: ignore[union-attr]
        self.assertNotIn(b"outside", gzip.decompress(req.body))  # the link out was not followed
        msgs = sorted(str(x.message) for x in w)
        self.assertEqual(len(msgs), 4, msgs)
        self.assertTrue(any("'abs'" in s and "outside" in s for s in msgs))
        self.assertTrue(any("'app/out'" in s for s in msgs))
        self.assertTrue(any("'parent'" in s for s in msgs))
        self.assertTrue(any("'fifo'" in s and "not a file" in s for s in msgs))

    def test_build_stream_from_bytes_and_file_objects(self) -> None:
        got: list[Request] = []
        self.fake.handler = self.build_route(log_answer(LOG, 9), got)
        blob = tgz({"Kilnfile": b"FROM minimal\n"})
        with self.k.templates.build_stream("web", context=blob) as st:
            types = [ev.type for ev in st]
        self.assertEqual(types[-1], "result")
        self.assertEqual(st.result, TPL)
        self.assertEqual(got[-1].body, blob)
        self.assertEqual(got[-1].q, {"name": "web"})
        self.assertEqual(self.k.templates.build("web", context=io.BytesIO(blob)), TPL)  # chunked
        self.assertEqual(got[-1].headers.get("transfer-encoding"), "chunked")
        self.assertEqual(got[-1].body, blob)
        path = os.path.join(self.tmp, "ctx.tgz")
        with open(path, "wb") as f:
            f.write(blob)
        self.assertEqual(self.k.templates.build("web", context=path), TPL)
        self.assertEqual(got[-1].headers.get("content-length"), str(len(blob)))

    def test_a_context_is_given_exactly_once(self) -> None:
        with self.assertRaises(TypeError):
            self.k.templates.build("web")
        with self.assertRaises(TypeError):
            self.k.templates.build("web", context_dir=self.tmp, context=b"x")
        with self.assertRaises(errors.KilnError):
            self.k.templates.build("web", context_dir=os.path.join(self.tmp, "missing"))
        self.assertEqual(self.fake.requests, [])

    def test_an_error_line_raises_with_step_and_line(self) -> None:
        bad = LOG[:4] + [{"type": "error", "step": 2, "line": 5,
                          "error": {"code": "bad_field", "message": "step at line 5 (RUN): RUN exited with status 2"}}]
        self.fake.handler = self.build_route(log_answer(bad), [])
        seen: list[str] = []
        with self.assertRaises(errors.BadFieldError) as cm:
            self.k.templates.build("web", context=b"x", on_event=lambda e: seen.append(e.type))
        self.assertEqual((cm.exception.step, cm.exception.line), (2, 5))
        self.assertIn("line 5 (RUN)", cm.exception.message)
        self.assertEqual(seen, ["step", "step_end", "step", "stdout"])
        self.fake.handler = self.build_route(log_answer([{"type": "error", "error": {"code": "internal"}}]), [])
        with self.assertRaises(errors.InternalError) as cm2:
            self.k.templates.build("web", context=b"x")
        self.assertIsNone(cm2.exception.step)

    def test_every_refusal_before_the_build_starts(self) -> None:
        for status, code, cls in BUILD_REFUSALS:
            for early in (False, True):  # after the body, or before it (no 100 Continue)
                self.fake.expect_continue = not early
                self.fake.handler = self.build_route(error_response(status, code, f"build file line 4: {code}"), [])
                with self.subTest(code=code, early=early), self.assertRaises(cls) as cm:
                    self.k.templates.build("web", context=io.BytesIO(b"z" * 300000))
                self.assertEqual((cm.exception.status, cm.exception.code), (status, code))
                self.assertIn("line 4", cm.exception.message)

    def test_a_log_cut_short_is_a_connection_error_not_a_hang(self) -> None:
        cuts = [
            log_answer(LOG[:3]),  # well framed, no result nor error
            chunked_head() + chunk(ndjson(*LOG[:2])),  # the connection closes mid-stream
            chunked_head() + chunk(ndjson(*LOG[:2]) + b'{"type":"res') + b"0\r\n\r\n",  # inside a line
        ]
        for i, answer in enumerate(cuts):
            self.fake.handler = self.build_route(answer, [])
            t0 = time.monotonic()
            with self.subTest(i=i), self.assertRaises((errors.KilnConnectionError, errors.KilnProtocolError)):
                self.k.templates.build("web", context=b"x")
            self.assertLess(time.monotonic() - t0, 2)

    def test_hostile_log_lines(self) -> None:
        huge = b'{"type":"stdout","data":"' + b"A" * (17 * 1024 * 1024)
        for body in (b"not json\n", b'["type"]\n', b'{"type":"result","template":"web"}\n',
                     b'{"type":"error","error":"x"}\n', huge):
            self.fake.handler = self.build_route(chunked_head() + chunk(body) + b"0\r\n\r\n", [])
            with self.subTest(body=body[:40]), self.assertRaises(errors.KilnProtocolError):
                self.k.templates.build("web", context=b"x")

    def test_a_slow_build_waits_on_the_stream_timeout_not_the_request_deadline(self) -> None:
        def slow(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head())
            for ev in LOG:
                time.sleep(0.12)
                c.sendall(chunk(ndjson(ev)))
            c.sendall(b"0\r\n\r\n")
            return False
        self.fake.handler = routes({("POST", "/v1/templates"): slow})
        k = kiln.Kiln(self.fake.path, timeout=0.5)  # the whole log takes 0.84 s
        try:
            self.assertEqual(k.templates.build("web", context=b"x"), TPL)
        finally:
            k.close()

    def test_list_get_delete(self) -> None:
        self.fake.handler = routes({
            ("GET", "/v1/templates"): json_response(200, {"templates": [TPL]}),
            ("GET", "/v1/templates/web"): json_response(200, TPL),
            ("DELETE", "/v1/templates/web"): response(204),
        })
        self.assertEqual(self.k.templates.list(), [TPL])
        self.assertEqual(self.k.templates.get("web"), TPL)
        self.assertIsNone(self.k.templates.delete("web"))
        self.assertEqual(self.fake.requests[-1].method, "DELETE")
        for status, code, cls in DELETE_REFUSALS:
            self.fake.handler = routes({("DELETE", "/v1/templates/x%2Fy"): error_response(status, code),
                                        ("GET", "/v1/templates/x%2Fy"): error_response(status, code)})
            with self.subTest(code=code):
                with self.assertRaises(cls):
                    self.k.templates.delete("x/y")  # a name is one path segment
                with self.assertRaises(cls):
                    self.k.templates.get("x/y")


class TestPackContextRaces(unittest.TestCase):
    """pack_context walks by directory descriptor: entries swapped while it
    packs (through its ``_listed`` hook, called after each lstat) never
    make it read outside the context, nor block on a fifo."""

    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="kiln-sdk-race.")
        self.ctx = os.path.join(self.tmp, "ctx")
        os.makedirs(os.path.join(self.ctx, "d"))
        os.makedirs(os.path.join(self.tmp, "outside"))
        for p, data in (("ctx/d/x", "inside"), ("ctx/f", "a file"), ("outside/x", "outside secret")):
            with open(os.path.join(self.tmp, p), "w") as f:
                f.write(data)

    def tearDown(self) -> None:
        subprocess.run(["rm", "-rf", self.tmp])

    def pack(self, hook=None) -> tuple[bytes, list[str]]:  # type: ignore[no-untyped-def]
        """Packs in a thread so that a packer that blocks fails the test, not hangs it."""
        buf = io.BytesIO()
        res: list[Any] = []

        def run() -> None:
            try:
                res.append(_tario.pack_context(self.ctx, buf, _listed=hook))
            except BaseException as e:  # checked by the test
                res.append(e)
        th = threading.Thread(target=run, daemon=True)
        th.start()
        th.join(10)
        self.assertFalse(th.is_alive(), "pack_context blocked")
        if isinstance(res[0], BaseException):
            raise res[0]
        return buf.getvalue(), res[0]

    def test_a_directory_swapped_for_a_symlink_out_after_its_listing_is_not_followed(self) -> None:
        def swap(name: str) -> None:
            if name == "d/x":  # d is open and listed; now d -> ../outside
                os.rename(os.path.join(self.ctx, "d"), os.path.join(self.tmp, "d.old"))
                os.symlink("../outside", os.path.join(self.ctx, "d"))
        body, skipped = self.pack(swap)
        self.assertFalse(b"outside secret" in gzip.decompress(body), "read outside the context")
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as t:
            self.assertEqual(t.extractfile("d/x").read(), b"inside")  # type: ignore[union-attr]
        self.assertEqual(skipped, [])

    def test_a_directory_swapped_for_a_symlink_before_it_is_opened_is_an_error(self) -> None:
        def swap(name: str) -> None:
            if name == "d":
                os.rename(os.path.join(self.ctx, "d"), os.path.join(self.tmp, "d.old"))
                os.symlink("../outside", os.path.join(self.ctx, "d"))
        with self.assertRaises(errors.KilnError) as cm:
            self.pack(swap)
        self.assertIn("'d'", str(cm.exception))
        self.assertIn("did it change while it was packed", str(cm.exception))

    def test_a_file_swapped_for_a_fifo_is_left_out_without_blocking(self) -> None:
        def swap(name: str) -> None:
            if name == "f":
                os.unlink(os.path.join(self.ctx, "f"))
                os.mkfifo(os.path.join(self.ctx, "f"))
        body, skipped = self.pack(swap)
        self.assertEqual(sorted(members(body)), ["d", "d/x"])
        self.assertEqual(skipped, ["skipped 'f': not a file, directory or symlink"])

    def test_a_file_swapped_for_a_symlink_is_an_error_never_its_target(self) -> None:
        def swap(name: str) -> None:
            if name == "f":
                os.unlink(os.path.join(self.ctx, "f"))
                os.symlink("../outside/x", os.path.join(self.ctx, "f"))
        with self.assertRaises(errors.KilnError) as cm:
            self.pack(swap)
        self.assertIn("'f'", str(cm.exception))

    def test_odd_names_a_fifo_and_no_leaked_descriptors(self) -> None:
        odd = ["-dash", "--x=y", "sp ace", "new\nline", "star*", "back\\slash"]
        for n in odd:
            with open(os.path.join(self.ctx, "d", n), "w") as f:
                f.write(n)
        os.mkfifo(os.path.join(self.ctx, "d", "fifo"))
        before = len(os.listdir("/proc/self/fd"))
        body, skipped = self.pack()
        self.assertEqual(len(os.listdir("/proc/self/fd")), before)
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as t:
            for n in odd:
                self.assertEqual(t.extractfile("d/" + n).read(), n.encode())  # type: ignore[union-attr]
        self.assertEqual(skipped, ["skipped 'd/fifo': not a file, directory or symlink"])
        with self.assertRaises(errors.KilnError):
            _tario.pack_context(os.path.join(self.ctx, "f"), io.BytesIO())  # not a directory


    def test_a_context_over_kilnds_member_cap_is_refused_before_it_is_read_whole(self) -> None:
        big = os.path.join(self.ctx, "d", "big")
        os.mkdir(big)
        for i in range(_tario.MAX_CONTEXT_MEMBERS):
            open(os.path.join(big, f"f{i}"), "w").close()
        seen: list[str] = []
        with self.assertRaises(errors.KilnError) as cm:
            self.pack(seen.append)
        self.assertIn(f"has more than {_tario.MAX_CONTEXT_MEMBERS} entries (kilnd's cap of a build context",
                      str(cm.exception))
        self.assertEqual(seen, ["d", "d/big"], "no member of the oversized directory was packed")
        # At the cap exactly (d, d/big and 16382 files: every entry is a member) it packs.
        for n in ("f", "d/x", "d/big/f0", "d/big/f1"):
            os.unlink(os.path.join(self.ctx, n))
        body, _ = self.pack()
        self.assertEqual(len(members(body)), _tario.MAX_CONTEXT_MEMBERS)


class TestImages(Base):
    def test_list_get_delete_and_the_old_call(self) -> None:
        self.fake.handler = routes({
            ("GET", "/v1/images"): json_response(200, {"images": [IMG], "kernel": {}}),
            ("GET", "/v1/images/alpine"): json_response(200, IMG),
            ("DELETE", "/v1/images/alpine"): response(204),
        })
        self.assertEqual(self.k.images(), [IMG])
        self.assertEqual(self.k.images.list(), [IMG])
        self.assertEqual(self.k.images.get("alpine"), IMG)
        self.assertIsNone(self.k.images.delete("alpine"))
        for status, code, cls in DELETE_REFUSALS:
            self.fake.handler = routes({("DELETE", "/v1/images/a"): error_response(status, code)})
            with self.subTest(code=code), self.assertRaises(cls):
                self.k.images.delete("a")

    def test_import_streams_a_path_or_a_file_object(self) -> None:
        got: list[Request] = []

        def post(req: Request, c: socket.socket) -> bool:
            got.append(req)
            c.sendall(json_response(201, IMG))
            return False
        self.fake.handler = routes({("POST", "/v1/images"): post})
        data = os.urandom(200 * 1024)
        path = os.path.join(self.tmp, "alpine.tar")
        with open(path, "wb") as f:
            f.write(data)
        self.assertEqual(self.k.images.import_("alpine", path), IMG)
        self.assertEqual(got[-1].q, {"name": "alpine"})
        self.assertEqual(got[-1].headers.get("content-length"), str(len(data)))
        self.assertEqual(got[-1].body, data)
        self.assertEqual(self.k.images.import_("alpine", io.BytesIO(data), devices=True), IMG)
        self.assertEqual(got[-1].q, {"name": "alpine", "devices": "1"})
        self.assertEqual(got[-1].headers.get("transfer-encoding"), "chunked")
        self.assertEqual(got[-1].body, data)
        self.assertEqual(self.k.images.import_("alpine", io.BytesIO(data), ref="v1+b"), IMG)
        self.assertEqual(got[-1].q, {"name": "alpine", "ref": "v1+b"})

    def test_every_import_refusal(self) -> None:
        for status, code, cls in IMPORT_REFUSALS:
            for early in (False, True):
                self.fake.expect_continue = not early

                def refuse(req: Request, c: socket.socket, status=status, code=code) -> bool:
                    c.sendall(error_response(status, code, "layer 1 (sha256:00): member \"x\": refused"))
                    return False
                self.fake.handler = routes({("POST", "/v1/images"): refuse})
                with self.subTest(code=code, early=early), self.assertRaises(cls) as cm:
                    self.k.images.import_("alpine", io.BytesIO(b"x" * 300000))
                self.assertEqual(cm.exception.status, status)

    def test_a_100_mib_import_stays_under_32_mib_of_rss(self) -> None:
        # The client in a process of its own (its VmHWM is the upload's), a
        # sparse 100 MiB archive, the fake counting the body, keeping none.
        self.fake.discard_body = True
        got: list[Request] = []

        def post(req: Request, c: socket.socket) -> bool:
            got.append(req)
            c.sendall(json_response(201, dict(IMG, size_bytes=req.body_len)))
            return False
        self.fake.handler = routes({("POST", "/v1/images"): post})
        path = os.path.join(self.tmp, "big.tar")
        with open(path, "wb") as f:
            f.truncate(100 * 1024 * 1024)
        code = (
            "import sys, kiln\n"
            "k = kiln.Kiln(sys.argv[1], timeout=60)\n"
            "img = k.images.import_('big', sys.argv[2])\n"
            "hwm = [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
            "print(img['size_bytes'], hwm // 1024)\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__))))
        p = subprocess.run([sys.executable, "-c", code, self.fake.path, path], capture_output=True, text=True,
                           timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        n, hwm = (int(x) for x in p.stdout.split())
        self.assertEqual(n, 100 * 1024 * 1024)
        self.assertEqual(got[0].body_len, n)
        self.assertLess(hwm, 32, f"peak RSS {hwm} MiB")


class TestAsyncTemplates(AsyncBase):
    async def test_build_list_get_delete_create(self) -> None:
        got: list[Request] = []

        def post(req: Request, c: socket.socket) -> bool:
            got.append(req)
            c.sendall(log_answer(LOG))
            return False
        self.fake.handler = routes({
            ("POST", "/v1/templates"): post,
            ("GET", "/v1/templates"): json_response(200, {"templates": [TPL]}),
            ("GET", "/v1/templates/web"): json_response(200, TPL),
            ("DELETE", "/v1/templates/web"): response(204),
            ("POST", "/v1/sandboxes"): json_response(201, dict(SB, template="web")),
        })
        ctx = make_context(self.tmp)
        seen: list[str] = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            tpl = await self.k.templates.build("web", context_dir=ctx, on_event=lambda e: seen.append(e.type))
        self.assertEqual(tpl, TPL)
        self.assertEqual(seen[-1], "result")
        self.assertEqual(len(w), 4)
        self.assertNotIn("app/out", members(got[0].body))
        async with self.k.templates.build_stream("web", context=b"x") as st:
            types = [ev.type async for ev in st]
        self.assertEqual((types[-1], st.result), ("result", TPL))
        self.assertEqual(await self.k.templates.list(), [TPL])
        self.assertEqual(await self.k.templates.get("web"), TPL)
        await self.k.templates.delete("web")
        sb = await self.k.sandboxes.create(template="web")
        self.assertEqual(sb.info["template"], "web")

    async def test_error_line_cut_log_and_refusals(self) -> None:
        bad = [LOG[0], {"type": "error", "step": 1, "line": 1,
                        "error": {"code": "image_not_found", "message": "FROM nope: no such image"}}]
        answers = iter([log_answer(bad), log_answer(LOG[:2]), error_response(409, "busy", "a build of web runs")])

        def post(req: Request, c: socket.socket) -> bool:
            c.sendall(next(answers))
            return False
        self.fake.handler = routes({("POST", "/v1/templates"): post})
        with self.assertRaises(errors.ImageNotFoundError) as cm:
            await self.k.templates.build("web", context=b"x")
        self.assertEqual((cm.exception.step, cm.exception.line), (1, 1))
        with self.assertRaises(errors.KilnConnectionError):
            await asyncio.wait_for(self.k.templates.build("web", context=b"x"), 2)
        with self.assertRaises(errors.BusyError):
            await self.k.templates.build("web", context=b"x")

    async def test_images(self) -> None:
        got: list[Request] = []

        def post(req: Request, c: socket.socket) -> bool:
            got.append(req)
            if req.q["name"] == "taken":
                c.sendall(error_response(409, "exists", "image 'taken' exists"))
            else:
                c.sendall(json_response(201, IMG))
            return False
        self.fake.handler = routes({
            ("POST", "/v1/images"): post,
            ("GET", "/v1/images"): json_response(200, {"images": [IMG]}),
            ("GET", "/v1/images/alpine"): json_response(200, IMG),
            ("DELETE", "/v1/images/alpine"): error_response(409, "in_use", "in use by sandbox x"),
        })
        data = os.urandom(100000)
        self.assertEqual(await self.k.images.import_("alpine", io.BytesIO(data)), IMG)
        self.assertEqual(got[-1].body, data)
        with self.assertRaises(errors.ExistsError):
            await self.k.images.import_("taken", io.BytesIO(data))
        self.assertEqual(await self.k.images(), [IMG])
        self.assertEqual(await self.k.images.get("alpine"), IMG)
        with self.assertRaises(errors.InUseError):
            await self.k.images.delete("alpine")
