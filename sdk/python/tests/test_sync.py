"""kiln.Kiln against the fake kilnd: framing, every error mapping, streams,
transfers, and hostile answers."""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import socket
import stat
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest

import kiln
from kiln import errors
from fake_kilnd import (FakeKilnd, Request, chunk, chunked_head, chunked_response, error_response,
                        json_response, ndjson, response)

HERE = os.path.dirname(os.path.abspath(__file__))
SB = {"id": "3f9a1c2b7d4e", "state": "running"}


def routes(table):
    """A handler answering (METHOD, path) from a table; keep-alive."""
    def handler(req: Request, c: socket.socket) -> bool:
        ans = table.get((req.method, req.path))
        if ans is None:
            c.sendall(error_response(404, "route_not_found", f"no route {req.method} {req.path}"))
        elif callable(ans):
            return bool(ans(req, c))
        else:
            c.sendall(ans)
        return True
    return handler



def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode = tarfile.DIRTYPE, 0o755
    tar.addfile(ti)


def _add_file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    tar.addfile(ti, io.BytesIO(data))

class Base(unittest.TestCase):
    def setUp(self) -> None:
        self.fake = FakeKilnd()
        self.k = kiln.Kiln(self.fake.path, timeout=3)
        self.tmp = tempfile.mkdtemp(prefix="kiln-sdk-test.")

    def tearDown(self) -> None:
        self.k.close()
        self.fake.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def sandbox(self) -> kiln.Sandbox:
        return kiln.Sandbox(self.k, dict(SB))


class TestFraming(Base):
    def test_health_request_is_strict_http(self) -> None:
        self.fake.handler = routes({("GET", "/v1/health"): json_response(200, {"status": "ok"})})
        self.assertEqual(self.k.health()["status"], "ok")
        r = self.fake.requests[0]
        self.assertTrue(r.raw_head.startswith(b"GET /v1/health HTTP/1.1\r\nHost: kiln\r\n"))
        self.assertNotIn(b"\n", r.raw_head.replace(b"\r\n", b""))

    def test_chunked_json_answer(self) -> None:
        body = json.dumps({"images": [{"name": "minimal"}], "kernel": {}}).encode()
        self.fake.handler = routes({("GET", "/v1/images"): chunked_response(body, 5, "application/json")})
        self.assertEqual(self.k.images()[0]["name"], "minimal")

    def test_metrics_text(self) -> None:
        self.fake.handler = routes({("GET", "/metrics"): response(200, b"kiln_boots_total 3\n", ctype="text/plain")})
        self.assertIn("kiln_boots_total 3", self.k.metrics())

    def test_keep_alive_reuses_one_connection(self) -> None:
        self.fake.handler = routes({("GET", "/v1/health"): json_response(200, {"status": "ok"})})
        for _ in range(5):
            self.k.health()
        self.assertEqual(self.fake.connections, 1)

    def test_stale_pooled_connection_is_replaced(self) -> None:
        # kilnd closes an idle keep-alive connection silently: the next
        # request goes on a new one, once, without an error.
        def once(req: Request, c: socket.socket) -> bool:
            c.sendall(json_response(200, {"status": "ok"}))
            return False  # close after answering, no Connection: close
        self.fake.handler = routes({("GET", "/v1/health"): once})
        self.k.health()
        time.sleep(0.05)
        self.k.health()
        self.assertEqual(self.fake.connections, 2)

    def test_threads_share_a_client(self) -> None:
        self.fake.handler = routes({("GET", "/v1/health"): json_response(200, {"status": "ok"})})
        errs: list[BaseException] = []

        def run() -> None:
            try:
                for _ in range(20):
                    self.k.health()
            except BaseException as e:  # pragma: no cover
                errs.append(e)
        ts = [threading.Thread(target=run) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errs, [])
        self.assertEqual(len(self.fake.requests), 80)

    def test_query_values_are_encoded(self) -> None:
        sb = self.sandbox()
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/files/stat"):
                                    json_response(200, {"path": "/a b+c", "kind": "file", "size": 1, "mode": 420})})
        info = sb.files.stat("/a b+c&d=1", follow=False)
        self.assertEqual(info.kind, "file")
        t = self.fake.requests[0].target
        self.assertIn("path=/a%20b%2Bc%26d%3D1", t)
        self.assertIn("follow=false", t)

    def test_list_filters_by_labels(self) -> None:
        self.fake.handler = routes({("GET", "/v1/sandboxes"): json_response(200, {"sandboxes": [SB]})})
        out = self.k.sandboxes.list(state="running", labels={"job": "42", "team": "ci"})
        self.assertEqual(out[0].id, SB["id"])
        self.assertEqual(self.fake.requests[0].query,
                         [("state", "running"), ("label", "job=42"), ("label", "team=ci")])

    def test_create_sends_given_fields_only_and_deletes_on_exit(self) -> None:
        self.fake.handler = routes({("POST", "/v1/sandboxes"): json_response(201, SB),
                                    ("DELETE", "/v1/sandboxes/3f9a1c2b7d4e"): response(204)})
        with self.k.sandboxes.create(image="minimal", memory_mib=256, colour="red") as sb:
            self.assertEqual(sb.id, SB["id"])
        self.assertEqual(self.fake.requests[0].json(), {"image": "minimal", "memory_mib": 256, "colour": "red"})
        self.assertEqual(self.fake.requests[1].method, "DELETE")

    def test_fork_is_a_create_from_checkpoint(self) -> None:
        self.fake.handler = routes({("POST", "/v1/sandboxes"): json_response(201, {"id": "aaaaaaaaaaaa"})})
        f = self.sandbox().fork("cp1", hostname="w1")
        self.assertEqual(f.id, "aaaaaaaaaaaa")
        self.assertEqual(self.fake.requests[0].json(), {"from_checkpoint": "3f9a1c2b7d4e/cp1", "hostname": "w1"})

    def test_path_segments_are_encoded_whole(self) -> None:
        self.fake.handler = routes({})
        with self.assertRaises(errors.RouteNotFoundError):
            self.sandbox().checkpoints.get("a/b")
        self.assertEqual(self.fake.requests[0].path, "/v1/sandboxes/3f9a1c2b7d4e/checkpoints/a%2Fb")


class TestErrors(Base):
    def test_every_code_maps_to_its_class(self) -> None:
        codes = ["bad_request", "bad_json", "missing_field", "unknown_field", "bad_field", "too_large",
                 "not_directory", "is_directory", "unsafe_path", "bad_archive", "forbidden",
                 "permission_denied", "route_not_found", "sandbox_not_found", "image_not_found",
                 "process_not_found", "checkpoint_not_found", "not_found", "method_not_allowed",
                 "request_timeout", "wrong_state", "limit_reached", "exists", "not_empty", "invalid_state",
                 "read_only", "unsupported", "body_too_large", "uri_too_long", "headers_too_large",
                 "internal", "spawn_failed", "boot_failed", "io_error", "agent_protocol_error",
                 "agent_unavailable", "jail_unavailable", "too_many_connections", "shutting_down", "busy", "timeout",
                 "http_version_not_supported", "no_space", "no_egress_proxy"]
        status = {"timeout": 504, "request_timeout": 408, "no_space": 507}
        for code in codes:
            st = status.get(code, 400)
            self.fake.handler = routes({("GET", "/v1/health"): error_response(st, code, f"msg {code}")})
            with self.assertRaises(errors.KilnError) as cm:
                self.k.health()
            e = cm.exception
            name = "".join(p.capitalize() for p in code.split("_"))
            name += "" if name.endswith("Error") else "Error"
            self.assertEqual(type(e).__name__, name, code)
            self.assertIs(type(e), getattr(errors, name))
            self.assertEqual((e.status, e.code, e.message), (st, code, f"msg {code}"))
        # io_error is IoError, not IoErrorError (kept as a deprecated alias)
        self.assertEqual((errors.error_class("io_error").__name__,
                          errors.error_class("agent_protocol_error").__name__), ("IoError", "AgentProtocolError"))
        self.assertIs(errors.IoErrorError, errors.IoError)
        self.assertIs(errors.AgentProtocolErrorError, errors.AgentProtocolError)
        self.assertIn("IoErrorError", errors.__all__)

    def test_timeouts_are_builtin_timeouts(self) -> None:
        for code, st, cls in (("timeout", 504, errors.TimeoutError),
                              ("request_timeout", 408, errors.RequestTimeoutError)):
            self.fake.handler = routes({("GET", "/v1/health"): error_response(st, code)})
            with self.assertRaises(TimeoutError) as cm:  # the builtin
                self.k.health()
            self.assertIsInstance(cm.exception, cls)
            self.assertIsInstance(cm.exception, errors.TimeoutError)
        self.assertTrue(issubclass(errors.ClientTimeoutError, errors.TimeoutError))
        self.assertTrue(issubclass(errors.KilnConnectionError, ConnectionError))

    def test_unknown_code_is_plain_kiln_error(self) -> None:
        self.fake.handler = routes({("GET", "/v1/health"): error_response(418, "teapot", "short and stout")})
        with self.assertRaises(errors.KilnError) as cm:
            self.k.health()
        self.assertIs(type(cm.exception), errors.KilnError)
        self.assertEqual((cm.exception.status, cm.exception.code), (418, "teapot"))

    def test_error_body_not_json_is_protocol_error(self) -> None:
        self.fake.handler = routes({("GET", "/v1/health"): response(500, b"<html>oops</html>", ctype="text/html")})
        with self.assertRaises(errors.KilnProtocolError) as cm:
            self.k.health()
        self.assertEqual(cm.exception.status, 500)

    def test_bad_json_answer_is_protocol_error(self) -> None:
        self.fake.handler = routes({("GET", "/v1/health"): response(200, b'{"status": ')})
        with self.assertRaises(errors.KilnProtocolError):
            self.k.health()

    def test_huge_header_line_is_protocol_error(self) -> None:
        def huge(req: Request, c: socket.socket) -> bool:
            c.sendall(b"HTTP/1.1 200 OK\r\nX-Junk: " + b"a" * (200 * 1024))
            time.sleep(0.3)
            return False
        self.fake.handler = routes({("GET", "/v1/health"): huge})
        with self.assertRaises(errors.KilnProtocolError):
            self.k.health()

    def test_not_http_is_protocol_error(self) -> None:
        for junk in (b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 2000 OK\r\n\r\n",
                     b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
                     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                     b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                     b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
                     chunked_head(200, "application/json") + b"zz\r\n{}\r\n0\r\n\r\n",
                     chunked_head(200, "application/json") + b"2\r\n{}XX0\r\n\r\n"):
            self.fake.handler = routes({("GET", "/v1/health"): response(0) if False else junk})
            with self.assertRaises((errors.KilnProtocolError, errors.KilnConnectionError), msg=junk):
                self.k.health()

    def test_truncated_chunked_body_is_connection_error(self) -> None:
        def cut(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head(200, "application/octet-stream") + chunk(b"x" * 1000) + b"400\r\nxx")
            return False
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/files"): cut})
        dst = os.path.join(self.tmp, "out.bin")
        with self.assertRaises(errors.KilnConnectionError) as cm:
            self.sandbox().files.download("/big", dst)
        self.assertIn("before the end", str(cm.exception))
        self.assertFalse(os.path.exists(dst))
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith("out.bin")], [])
        with self.assertRaises(errors.KilnConnectionError):
            self.sandbox().files.read("/big")

    def test_download_follows_no_link_at_a_known_name(self) -> None:
        # The temporary file was PATH.part, opened to truncate: a link put
        # there (by another user, in a shared directory) was followed.
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/files"):
                                    response(200, b"new", ctype="application/octet-stream")})
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "wb") as f:
            f.write(b"keep")
        dst = os.path.join(self.tmp, "got.bin")
        os.symlink(victim, dst + ".part")
        self.sandbox().files.download("/x", dst)
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"keep")
        with open(dst, "rb") as f:
            self.assertEqual(f.read(), b"new")
        self.assertEqual(sorted(n for n in os.listdir(self.tmp) if n.startswith("got.bin")),
                         ["got.bin", "got.bin.part"])

    def test_no_kilnd_is_connection_error_naming_the_socket(self) -> None:
        path = os.path.join(self.tmp, "nobody.sock")
        k = kiln.Kiln(path, timeout=2)
        with self.assertRaises(errors.KilnConnectionError) as cm:
            k.health()
        self.assertIn(path, str(cm.exception))
        self.assertIn("KILN_SOCKET", str(cm.exception))
        self.assertIsNone(cm.exception.status)
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)  # a socket file nobody listens on: refused
        with self.assertRaises(errors.KilnConnectionError):
            k.health()
        s.close()

    def test_server_closing_before_answer_is_connection_error(self) -> None:
        self.fake.handler = lambda req, c: False
        with self.assertRaises(errors.KilnConnectionError):
            self.k.health()

    def test_server_never_answering_hits_client_deadline(self) -> None:
        gate = threading.Event()
        self.fake.handler = lambda req, c: gate.wait(10) and False
        k = kiln.Kiln(self.fake.path, timeout=0.5)
        t0 = time.monotonic()
        with self.assertRaises(errors.ClientTimeoutError) as cm:
            k.health()
        gate.set()
        self.assertLess(time.monotonic() - t0, 3)
        self.assertIsInstance(cm.exception, TimeoutError)
        self.assertIsNone(cm.exception.status)

    def test_socket_default_from_environment(self) -> None:
        old = os.environ.get("KILN_SOCKET")
        os.environ["KILN_SOCKET"] = self.fake.path
        try:
            self.assertEqual(kiln.Kiln().socket, self.fake.path)
            del os.environ["KILN_SOCKET"]
            self.assertEqual(kiln.Kiln().socket, "/run/kiln/kiln.sock")
        finally:
            if old is not None:
                os.environ["KILN_SOCKET"] = old


class TestExec(Base):
    EXEC = {"exit_code": 3, "signal": None, "timed_out": False, "stdout": "got hello\n",
            "stdout_encoding": "utf-8", "stderr": base64.b64encode(b"\xff\x00").decode(),
            "stderr_encoding": "base64", "pid": 57, "duration_ms": 2.9}

    def test_exec_argv_and_result(self) -> None:
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): json_response(200, self.EXEC)})
        r = self.sandbox().exec(["sh", "-c", "exit 3"], stdin=b"\x00\x01", timeout_ms=5000, env={"A": None})
        self.assertEqual((r.exit_code, r.stdout, r.stderr_raw, r.pid, r.ok), (3, "got hello\n", b"\xff\x00", 57, False))
        self.assertEqual(self.fake.requests[0].json(),
                         {"argv": ["sh", "-c", "exit 3"], "stdin_base64": "AAE=", "timeout_ms": 5000, "env": {"A": None}})

    def test_exec_string_is_shell(self) -> None:
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): json_response(200, self.EXEC)})
        self.sandbox().exec("echo $HOME | wc -c", stdin="text")
        self.assertEqual(self.fake.requests[0].json(), {"argv": ["echo $HOME | wc -c"], "shell": True, "stdin": "text"})

    def stream_handler(self, events: bytes, pieces: int = 7):
        def h(req: Request, c: socket.socket) -> bool:
            self.assertEqual(req.q.get("stream"), "1")
            c.sendall(chunked_response(events, pieces))
            return True
        return h

    def test_exec_stream_events_across_chunk_borders(self) -> None:
        ev = ndjson({"type": "stdout", "data": "1\n"}, {"type": "stderr", "data_base64": "/wA="},
                    {"type": "stdout", "data": "2\n"},
                    {"type": "exit", "exit_code": 0, "signal": None, "timed_out": False, "pid": 9})
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): self.stream_handler(ev, 13)})
        got = list(self.sandbox().exec_stream(["x"]))
        self.assertEqual([e.type for e in got], ["stdout", "stderr", "stdout", "exit"])
        self.assertEqual(got[1].data, b"\xff\x00")
        self.assertIsInstance(got[3], kiln.ExitEvent)
        self.assertEqual(got[3].exit_code, 0)

    def test_exec_stream_timeout_bounds_only_the_head(self) -> None:
        # kilnd sends a silent command's head at once (docs/api.md): the
        # client's timeout must not end the stream while it waits for output.
        def late(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head())
            time.sleep(1.2)
            c.sendall(chunk(ndjson({"type": "stdout", "data": "late\n"},
                                   {"type": "exit", "exit_code": 0, "signal": None, "timed_out": False})) +
                      b"0\r\n\r\n")
            return False
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): late})
        sb = kiln.Sandbox(kiln.Kiln(self.fake.path, timeout=0.5), dict(SB))
        self.assertEqual([e.type for e in sb.exec_stream("sleep 2; echo late")], ["stdout", "exit"])

    def test_exec_callbacks_use_the_stream(self) -> None:
        ev = ndjson({"type": "stdout", "data": "a"}, {"type": "stderr", "data": "b"}, {"type": "stdout", "data": "c"},
                    {"type": "exit", "exit_code": 1, "signal": None, "timed_out": False, "pid": 9})
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): self.stream_handler(ev)})
        outs: list[str] = []
        errs: list[str] = []
        r = self.sandbox().exec(["x"], on_stdout=outs.append, on_stderr=errs.append)
        self.assertEqual((outs, errs, r.stdout, r.stderr, r.exit_code, r.pid), (["a", "c"], ["b"], "ac", "b", 1, 9))

    def test_error_event_raises_its_class(self) -> None:
        ev = ndjson({"type": "stdout", "data": "a"},
                    {"type": "error", "error": {"code": "agent_unavailable", "message": "gone"}})
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): self.stream_handler(ev)})
        got = []
        with self.assertRaises(errors.AgentUnavailableError):
            for e in self.sandbox().exec_stream("x"):
                got.append(e.type)
        self.assertEqual(got, ["stdout"])

    def test_bad_json_event_is_protocol_error(self) -> None:
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"):
                                    self.stream_handler(b'{"type":"stdout","data":"a"}\n{"type": nope}\n')})
        with self.assertRaises(errors.KilnProtocolError):
            list(self.sandbox().exec_stream("x"))

    def test_server_closing_mid_stream_is_one_connection_error(self) -> None:
        def cut(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head() + chunk(ndjson({"type": "stdout", "data": "1\n"})) + b"1f\r\n{\"type\":")
            return False
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): cut})
        seen = []
        with self.assertRaises(errors.KilnConnectionError):
            for e in self.sandbox().exec_stream("x"):
                seen.append(e)
        self.assertEqual(len(seen), 1)

    def test_stream_ending_before_its_last_event_is_connection_error(self) -> None:
        # A well-framed end without "exit": kilnd cut the stream (an
        # upgrade does): the caller must not take it for a finished command.
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"):
                                    self.stream_handler(ndjson({"type": "stdout", "data": "1\n"}))})
        with self.assertRaises(errors.KilnConnectionError):
            list(self.sandbox().exec_stream("x"))

    def test_closing_a_stream_closes_its_connection(self) -> None:
        def endless(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head())
            try:
                for i in range(1000):
                    c.sendall(chunk(ndjson({"type": "stdout", "data": f"{i}\n"})))
                    time.sleep(0.01)
            except OSError:
                self.fake.closed_by_client.set()
            return False
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): endless})
        with self.sandbox().exec_stream("yes") as s:
            for e in s:
                if e.type == "stdout" and e.text == "3\n":
                    break
        self.assertTrue(self.fake.closed_by_client.wait(3))

    def test_run_code_result_and_error(self) -> None:
        ans = dict(self.EXEC, result={"checked": 3},
                   error={"type": "ValueError", "message": "too big", "traceback": "Traceback..."})
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/run"): json_response(200, ans)})
        r = self.sandbox().run_code("raise ValueError('too big')")
        self.assertEqual(r.result, {"checked": 3})
        assert r.error is not None
        self.assertEqual((r.error.type, r.error.message), ("ValueError", "too big"))
        self.assertEqual(self.fake.requests[0].json(), {"language": "python", "code": "raise ValueError('too big')"})

    def test_run_code_stream_ends_with_result(self) -> None:
        ev = ndjson({"type": "stdout", "data": "0\n"}, {"type": "exit", "exit_code": 0, "signal": None, "timed_out": False},
                    {"type": "result", "result": "done", "error": None})
        self.fake.handler = routes({("POST", "/v1/sandboxes/3f9a1c2b7d4e/run"): self.stream_handler(ev)})
        evs = list(self.sandbox().run_code_stream("console.log(0)", "javascript"))
        self.assertIsInstance(evs[-1], kiln.ResultEvent)
        self.assertEqual(evs[-1].result, "done")
        lines: list[str] = []
        r = self.sandbox().run_code("x", on_stdout=lines.append)
        self.assertEqual((r.result, r.stdout, lines), ("done", "0\n", ["0\n"]))


class TestProcesses(Base):
    P = "/v1/sandboxes/3f9a1c2b7d4e/processes"

    def test_spawn_list_signal_wait_resize_stdin(self) -> None:
        self.fake.handler = routes({
            ("POST", self.P): json_response(201, {"id": 1, "pid": 61}),
            ("GET", self.P): json_response(200, {"processes": [{"id": 1, "pid": 61, "running": True}]}),
            ("GET", self.P + "/1"): json_response(200, {"id": 1, "pid": 61, "running": True, "output_bytes": 4}),
            ("POST", self.P + "/1/signal"): response(204),
            ("POST", self.P + "/1/wait"): json_response(200, {"id": 1, "exit_code": None, "signal": 15}),
            ("POST", self.P + "/1/resize"): response(204),
            ("POST", self.P + "/1/stdin"): json_response(200, {"bytes": 3, "closed": True}),
        })
        sb = self.sandbox()
        p = sb.processes.spawn(["sh"], pty=True, rows=40, cols=120)
        self.assertEqual((p.id, p.pid), (1, 61))
        self.assertEqual(self.fake.requests[-1].json(), {"argv": ["sh"], "pty": True, "rows": 40, "cols": 120})
        self.assertEqual([q.id for q in sb.processes.list()], [1])
        self.assertTrue(sb.processes.get(1).info["running"])
        self.assertEqual(p.write_stdin("hi\n", eof=True)["closed"], True)
        self.assertEqual((self.fake.requests[-1].body, self.fake.requests[-1].q), (b"hi\n", {"close": "1"}))
        p.signal("TERM", group=True)
        self.assertEqual(self.fake.requests[-1].json(), {"signal": "TERM", "group": True})
        self.assertEqual(p.wait(timeout_ms=5000)["signal"], 15)
        self.assertEqual(self.fake.requests[-1].q, {"timeout_ms": "5000"})
        p.resize(50, 200)
        self.assertEqual(self.fake.requests[-1].json(), {"rows": 50, "cols": 200})

    def test_output_reattach_from_seq(self) -> None:
        ev = ndjson({"type": "attached", "id": 1, "pid": 61, "running": True, "seq": 2},
                    {"type": "stdout", "seq": 2, "data": "34"}, {"type": "gap", "seq": 4, "bytes": 10},
                    {"type": "stderr", "seq": 14, "data_base64": "/w=="},
                    {"type": "exit", "id": 1, "exit_code": 0, "signal": None, "timed_out": False})
        self.fake.handler = routes({("GET", self.P + "/1/output"): chunked_response(ev, 4)})
        p = kiln.Process(self.sandbox(), {"id": 1, "pid": 61})
        s = p.output(since=2)
        types = [e.type for e in s]
        self.assertEqual(types, ["attached", "stdout", "gap", "stderr", "exit"])
        self.assertEqual(s.next_seq, 15)
        self.assertEqual(self.fake.requests[0].q, {"from": "2"})

    def test_output_without_follow_stops_at_what_was_written(self) -> None:
        def endless(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head() + chunk(ndjson({"type": "attached", "seq": 0, "running": True},
                                                    {"type": "stdout", "seq": 0, "data": "ab"},
                                                    {"type": "stdout", "seq": 2, "data": "cd"})))
            time.sleep(5)  # live output would follow: the client must not wait for it
            return False
        self.fake.handler = routes({("GET", self.P + "/1"): json_response(200, {"id": 1, "output_bytes": 4}),
                                    ("GET", self.P + "/1/output"): endless})
        p = kiln.Process(self.sandbox(), {"id": 1, "pid": 61})
        t0 = time.monotonic()
        data = b"".join(e.data for e in p.output(follow=False) if isinstance(e, kiln.OutputEvent))
        self.assertEqual(data, b"abcd")
        self.assertLess(time.monotonic() - t0, 3)

    def test_output_without_follow_of_an_exited_process_ends_with_exit(self) -> None:
        ev = ndjson({"type": "attached", "seq": 0, "running": False}, {"type": "stdout", "seq": 0, "data": "ab"},
                    {"type": "exit", "id": 1, "exit_code": 3, "signal": None, "timed_out": False})
        self.fake.handler = routes({("GET", self.P + "/1"): json_response(200, {"id": 1, "running": False,
                                                                                "exit_code": 3, "output_bytes": 2}),
                                    ("GET", self.P + "/1/output"): chunked_response(ev, 3)})
        p = kiln.Process(self.sandbox(), {"id": 1, "pid": 61})
        evs = list(p.output(follow=False))
        self.assertEqual([e.type for e in evs], ["attached", "stdout", "exit"])
        self.assertEqual(evs[-1].exit_code, 3)

    def test_watch_events(self) -> None:
        ev = ndjson({"type": "watching", "path": "/w", "recursive": True, "watches": 1},
                    {"type": "rename", "seq": 0, "path": "b", "old_path": "a", "is_dir": False},
                    {"type": "end", "reason": "deleted"})
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/files/watch"): chunked_response(ev)})
        evs = list(self.sandbox().files.watch("/w", recursive=True))
        self.assertEqual([e.type for e in evs], ["watching", "rename", "end"])
        self.assertIsInstance(evs[1], kiln.WatchEvent)
        self.assertEqual((evs[1].path, evs[1].old_path, evs[2].reason), ("b", "a", "deleted"))
        self.assertEqual(self.fake.requests[0].q, {"path": "/w", "recursive": "true"})


class TestFiles(Base):
    F = "/v1/sandboxes/3f9a1c2b7d4e/files"

    def test_write_read_text(self) -> None:
        store: dict[str, bytes] = {}

        def put(req: Request, c: socket.socket) -> bool:
            store[req.q["path"]] = req.body
            c.sendall(json_response(200, {"path": req.q["path"], "bytes": len(req.body)}))
            return True

        def get(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_response(store[req.q["path"]], 2, "application/octet-stream"))
            return True
        self.fake.handler = routes({("PUT", self.F): put, ("GET", self.F): get})
        fs = self.sandbox().files
        self.assertEqual(fs.write("/t/a.txt", "héllo", mode=0o600, parents=True)["bytes"], 6)
        self.assertEqual(self.fake.requests[0].q, {"path": "/t/a.txt", "mode": "0600", "parents": "true"})
        self.assertEqual(fs.read_text("/t/a.txt"), "héllo")
        fs.write("/t/b", b"\x00\xff")
        self.assertEqual(fs.read("/t/b"), b"\x00\xff")

    def record_uploads(self) -> list[Request]:
        """PUT .../files answered with the bytes received; the requests."""
        got: list[Request] = []

        def put(req: Request, c: socket.socket) -> bool:
            got.append(req)
            c.sendall(json_response(200, {"path": req.q["path"], "bytes": len(req.body)}))
            return False
        self.fake.handler = routes({("PUT", self.F): put})
        return got

    def test_upload_streams_file_and_fileobj(self) -> None:
        got = self.record_uploads()
        src = os.path.join(self.tmp, "src.bin")
        data = os.urandom(300 * 1024)
        with open(src, "wb") as f:
            f.write(data)
        fs = self.sandbox().files
        self.assertEqual(fs.upload("/x", src)["bytes"], len(data))
        self.assertEqual(got[-1].headers.get("content-length"), str(len(data)))
        self.assertEqual(got[-1].headers.get("expect"), "100-continue")
        self.assertEqual(got[-1].body, data)
        fs.upload("/y", io.BytesIO(data))  # no file descriptor: chunked
        self.assertEqual(got[-1].headers.get("transfer-encoding"), "chunked")
        self.assertEqual(got[-1].body, data)

    def test_upload_takes_bytes_and_any_iterable_of_bytes(self) -> None:
        got = self.record_uploads()
        fs = self.sandbox().files
        data = os.urandom(200 * 1024)

        def gen():
            for i in range(0, len(data), 30000):
                yield data[i:i + 30000]
        self.assertEqual(fs.upload("/g", gen())["bytes"], len(data))  # a generator: chunked
        self.assertEqual((got[-1].body, got[-1].headers.get("transfer-encoding")), (data, "chunked"))
        fs.upload("/l", [b"ab", bytearray(b"cd"), memoryview(b"ef"), b""])
        self.assertEqual(got[-1].body, b"abcdef")
        fs.upload("/b", data)  # bytes: Content-Length
        self.assertEqual((got[-1].body, got[-1].headers.get("content-length")), (data, str(len(data))))
        n = len(got)
        with self.assertRaisesRegex(TypeError, "gave a str; give bytes"):
            fs.upload("/s", iter(["text"]))
        with self.assertRaisesRegex(TypeError, "not int"):
            fs.upload("/i", 5)  # type: ignore[arg-type]

        async def agen():
            yield b"x"
        a = agen()
        with self.assertRaisesRegex(TypeError, "AsyncKiln"):
            fs.upload("/a", a)  # type: ignore[arg-type]
        self.assertEqual(len(got), n)  # none of the refused ones was stored
        import asyncio
        asyncio.run(a.aclose())

    def test_upload_refused_before_body(self) -> None:
        self.fake.expect_continue = False

        def refuse(req: Request, c: socket.socket) -> bool:
            c.sendall(error_response(404, "not_found", "no such directory"))
            return False
        self.fake.handler = routes({("PUT", self.F): refuse})
        with self.assertRaises(errors.NotFoundError):
            self.sandbox().files.upload("/nodir/x", io.BytesIO(b"x" * 100000))

    def test_download_to_path_and_fileobj(self) -> None:
        data = os.urandom(200 * 1024)
        self.fake.handler = routes({("GET", self.F): chunked_response(data, 9, "application/octet-stream")})
        dst = os.path.join(self.tmp, "d.bin")
        self.assertEqual(self.sandbox().files.download("/d", dst), len(data))
        with open(dst, "rb") as f:
            self.assertEqual(f.read(), data)
        # A path that is no regular file (/dev/null, here a FIFO) is written
        # in place, never renamed over: as root, PATH.part would replace
        # /dev/null. The test holds the FIFO open read-write, so opening it
        # to write does not block, and reads what came through it.
        fifo = os.path.join(self.tmp, "fifo")
        os.mkfifo(fifo)
        fd = os.open(fifo, os.O_RDWR)
        try:
            self.fake.handler = routes({("GET", self.F): chunked_response(b"via fifo", 3, "application/octet-stream")})
            self.assertEqual(self.sandbox().files.download("/d", fifo), 8)
            self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))
            self.assertEqual(os.read(fd, 100), b"via fifo")
        finally:
            os.close(fd)
        self.fake.handler = routes({("GET", self.F): chunked_response(data, 9, "application/octet-stream")})
        buf = io.BytesIO()
        self.sandbox().files.download("/d", buf, offset=5, length=10)
        self.assertEqual(buf.getvalue(), data)
        self.assertEqual(self.fake.requests[-1].q, {"path": "/d", "offset": "5", "length": "10"})

    def test_a_100_mib_download_stays_under_32_mib_of_rss(self) -> None:
        # The client in a process of its own (its VmHWM is the download's),
        # the fake writing one 64 KiB chunk again and again.
        piece = chunk(b"\0" * 65536)

        def serve(req: Request, c: socket.socket) -> bool:
            c.sendall(chunked_head(200, "application/octet-stream"))
            for _ in range(1600):
                c.sendall(piece)
            c.sendall(b"0\r\n\r\n")
            return False
        self.fake.handler = routes({("GET", self.F): serve})
        code = (
            "import sys, kiln\n"
            "class Sink:\n"
            "    n = 0\n"
            "    def write(self, b):\n"
            "        self.n += len(b)\n"
            "        return len(b)\n"
            "k = kiln.Kiln(sys.argv[1], timeout=60)\n"
            "s = Sink()\n"
            "n = kiln.Sandbox(k, {'id': '3f9a1c2b7d4e', 'state': 'running'}).files.download('/big', s)\n"
            "hwm = [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
            "print(n, s.n, hwm // 1024)\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__))))
        p = subprocess.run([sys.executable, "-c", code, self.fake.path], capture_output=True, text=True,
                           timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        n, got, hwm = (int(x) for x in p.stdout.split())
        self.assertEqual(n, 1600 * 65536)
        self.assertEqual(got, n)
        self.assertLess(hwm, 32, f"peak RSS {hwm} MiB")

    def test_stat_list_mkdir_remove_rename(self) -> None:
        entry = {"path": "/srv/app", "kind": "dir", "size": 4096, "mode": 493, "depth": 1}
        self.fake.handler = routes({
            ("GET", self.F + "/list"): chunked_response(json.dumps({"path": "/srv", "entries": [entry],
                                                                    "count": 1}).encode(), 3, "application/json"),
            ("POST", self.F + "/mkdir"): json_response(200, {"path": "/a/b"}),
            ("POST", self.F + "/remove"): response(204),
            ("POST", self.F + "/rename"): json_response(200, {"from": "/a", "to": "/b"}),
        })
        fs = self.sandbox().files
        ls = fs.list("/srv", depth=2)
        self.assertTrue(ls[0].is_dir)
        self.assertEqual(ls[0].raw["depth"], 1)
        fs.mkdir("/a/b", parents=True, mode=0o700)
        self.assertEqual(self.fake.requests[-1].json(), {"path": "/a/b", "parents": True, "mode": 448})
        self.assertIsNone(fs.remove("/a", recursive=True))
        fs.rename("/a", "/b", overwrite=True)
        self.assertEqual(self.fake.requests[-1].json(), {"from": "/a", "to": "/b", "overwrite": True})

    def test_directory_round_trip_through_archives(self) -> None:
        src = os.path.join(self.tmp, "proj")
        os.makedirs(os.path.join(src, "sub"))
        with open(os.path.join(src, "a.txt"), "w") as f:
            f.write("A")
        with open(os.path.join(src, "sub", "b.bin"), "wb") as f:
            f.write(os.urandom(150000))
        os.symlink("a.txt", os.path.join(src, "link"))
        store: list[bytes] = []

        def put(req: Request, c: socket.socket) -> bool:
            store.append(req.body)
            c.sendall(json_response(200, {"path": req.q["path"], "files": 2}))
            return False
        self.fake.handler = routes({("PUT", "/v1/sandboxes/3f9a1c2b7d4e/archive"): put,
                                    ("GET", "/v1/sandboxes/3f9a1c2b7d4e/archive"):
                                    lambda r, c: c.sendall(chunked_response(store[0], 11, "application/gzip"))})
        fs = self.sandbox().files
        self.assertEqual(fs.upload_dir(src, "/home/user/proj")["files"], 2)
        self.assertEqual(self.fake.requests[0].headers.get("transfer-encoding"), "chunked")
        names = tarfile.open(fileobj=io.BytesIO(store[0]), mode="r:gz").getnames()
        self.assertEqual(sorted(names), ["a.txt", "link", "sub", "sub/b.bin"])
        dst = os.path.join(self.tmp, "back")
        counts = fs.download_dir("/home/user/proj", dst)
        self.assertEqual((counts["files"], counts["symlinks"], counts["dirs"]), (2, 1, 1))
        subprocess.run(["diff", "-r", "--no-dereference", src, dst], check=True)

    def hostile_archive(self, add) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            add(tar)
        return buf.getvalue()

    def test_hostile_archives_write_nothing_outside(self) -> None:
        def member(tar: tarfile.TarFile, name: str, data: bytes = b"x", **kw) -> None:
            ti = tarfile.TarInfo(name)
            for k, v in kw.items():
                setattr(ti, k, v)
            ti.size = len(data) if ti.type == tarfile.REGTYPE else 0
            tar.addfile(ti, io.BytesIO(data) if ti.type == tarfile.REGTYPE else None)

        cases = {
            "dotdot": lambda t: member(t, "../evil"),
            "absolute": lambda t: member(t, "/tmp/evil-kiln-sdk"),
            "symlink out": lambda t: member(t, "l", type=tarfile.SYMTYPE, linkname="../../.."),
            "absolute symlink": lambda t: member(t, "l", type=tarfile.SYMTYPE, linkname="/etc"),
            "write through symlink": lambda t: (member(t, "d", type=tarfile.SYMTYPE, linkname="."),
                                                member(t, "d/../../evil")),
            "hardlink out": lambda t: member(t, "h", type=tarfile.LNKTYPE, linkname="/etc/passwd"),
            # Inside by its text and by the tree when it is read; out once x exists.
            "link chain": lambda t: (member(t, "esc", type=tarfile.SYMTYPE, linkname="x/x/../../evil"),
                                     member(t, "x", type=tarfile.SYMTYPE, linkname=".")),
            # Each link harmless by its text, together out of the tree.
            "links through links": lambda t: (member(t, "sub", type=tarfile.DIRTYPE),
                                              member(t, "sub/l", type=tarfile.SYMTYPE, linkname=".."),
                                              member(t, "sub/l2", type=tarfile.SYMTYPE, linkname="l/.."),
                                              member(t, "h", type=tarfile.LNKTYPE, linkname="sub/l2/evil")),
        }
        for what, add in cases.items():
            blob = self.hostile_archive(add)
            self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/archive"):
                                        chunked_response(blob, 2, "application/gzip")})
            dst = os.path.join(self.tmp, "x", "dst")
            with self.assertRaises(errors.UnsafePathError, msg=what):
                self.sandbox().files.download_dir("/p", dst)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "x", "evil")), what)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "evil")), what)
            self.assertFalse(os.path.exists("/tmp/evil-kiln-sdk"), what)
            subprocess.run(["rm", "-rf", os.path.join(self.tmp, "x")])

    def test_huge_extended_header_is_refused_unread(self) -> None:
        # tarfile reads an extended header whole and follows chains of
        # them by recursion: what kiln's agent never writes is refused
        # from its header, before it is read (the bodies here are short).
        def hdr(name: str, typ: bytes, size: int, fmt: int = tarfile.USTAR_FORMAT) -> bytes:
            ti = tarfile.TarInfo(name)
            ti.type, ti.size = typ, size
            return ti.tobuf(format=fmt)

        def pax(records: dict) -> bytes:
            data = b"".join(f"{len(k) + len(v) + 3 + len(str(len(k) + len(v) + 3))} {k}={v}\n".encode()
                            for k, v in records.items())
            assert all(int(r.split(b" ")[0]) == len(r) for r in data.splitlines(keepends=True))
            return hdr("p", tarfile.XHDTYPE, len(data)) + data + bytes(-len(data) % 512)

        member = hdr("f", tarfile.REGTYPE, 0)
        cases = {
            "pax 64 MiB": (hdr("x", tarfile.XHDTYPE, 64 << 20) + b"a" * 4096, "extended header of 67108864 bytes"),
            "global": (hdr("g", tarfile.XGLTYPE, 10) + bytes(512), "global pax header"),
            "sparse": (hdr("s", tarfile.GNUTYPE_SPARSE, 10, tarfile.GNU_FORMAT) + bytes(1024), "sparse member"),
            "x after x": (pax({"comment": "a"}) + pax({"comment": "b"}) + member, "followed by another"),
            "pax sparse": (pax({"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "f",
                                "GNU.sparse.realsize": "10"}) + member + bytes(1024), "sparse member"),
        }
        for what, (body, why) in cases.items():
            self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/archive"):
                                        chunked_response(gzip.compress(body), 2, "application/gzip")})
            with self.assertRaisesRegex(errors.KilnError, why, msg=what):
                self.sandbox().files.download_dir("/p", os.path.join(self.tmp, "h"))
        # What the agent does write: one pax header per member, for a long name.
        long = "d/" + "n" * 200
        blob = self.hostile_archive(lambda t: (_add_dir(t, "d"), _add_file(t, long, b"hi")))
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/archive"):
                                    chunked_response(blob, 2, "application/gzip")})
        dst = os.path.join(self.tmp, "longname")
        self.sandbox().files.download_dir("/p", dst)
        with open(os.path.join(dst, long), "rb") as f:
            self.assertEqual(f.read(), b"hi")

    def test_corrupt_archive_is_an_error(self) -> None:
        blob = gzip.compress(b"not a tar at all" * 100)
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e/archive"):
                                    chunked_response(blob[:-20], 2, "application/gzip")})
        with self.assertRaises(errors.KilnError):
            self.sandbox().files.download_dir("/p", os.path.join(self.tmp, "c"))


class TestLifecycle(Base):
    def test_lifecycle_calls_update_info(self) -> None:
        table = {}
        for action, state in (("stop", "stopped"), ("start", "running"), ("pause", "paused"),
                              ("resume", "running"), ("hibernate", "hibernated"), ("wake", "running")):
            table[("POST", f"/v1/sandboxes/3f9a1c2b7d4e/{action}")] = json_response(200, dict(SB, state=state))
        table[("GET", "/v1/sandboxes/3f9a1c2b7d4e")] = json_response(200, dict(SB, state="running"))
        table[("POST", "/v1/sandboxes/3f9a1c2b7d4e/checkpoints")] = json_response(201, {"name": "cp"})
        table[("GET", "/v1/sandboxes/3f9a1c2b7d4e/checkpoints")] = json_response(200, {"checkpoints": [{"name": "cp"}]})
        table[("DELETE", "/v1/sandboxes/3f9a1c2b7d4e/checkpoints/cp")] = response(204)
        table[("POST", "/v1/sandboxes/3f9a1c2b7d4e/checkpoints/cp/restore")] = json_response(200, dict(SB, state="running", boot={"from": "checkpoint"}))
        table[("POST", "/v1/sandboxes/3f9a1c2b7d4e/ports")] = json_response(201, {"host_port": 40123, "guest_port": 8080})
        table[("GET", "/v1/sandboxes/3f9a1c2b7d4e/ports")] = json_response(200, {"ports": []})
        table[("DELETE", "/v1/sandboxes/3f9a1c2b7d4e/ports/40123")] = response(204)
        table[("POST", "/v1/sandboxes/3f9a1c2b7d4e/previews")] = json_response(201, {"port": 8080, "token": "t"})
        table[("GET", "/v1/sandboxes/3f9a1c2b7d4e/previews")] = json_response(200, {"previews": []})
        table[("DELETE", "/v1/sandboxes/3f9a1c2b7d4e/previews/8080")] = response(204)
        table[("GET", "/v1/sandboxes/3f9a1c2b7d4e/firewall")] = json_response(200, {"rules": {}})
        table[("PUT", "/v1/sandboxes/3f9a1c2b7d4e/firewall")] = json_response(200, {"applied": True})
        table[("GET", "/v1/sandboxes/3f9a1c2b7d4e/firewall/log")] = json_response(200, {"lines": ["egress drop"]})
        self.fake.handler = routes(table)
        sb = self.sandbox()
        self.assertEqual(sb.stop(grace_ms=5).state, "stopped")
        self.assertEqual(self.fake.requests[-1].json(), {"grace_ms": 5})
        for action, state in (("start", "running"), ("pause", "paused"), ("resume", "running"),
                              ("hibernate", "hibernated"), ("wake", "running")):
            self.assertEqual(getattr(sb, action)().state, state)
            self.assertEqual(self.fake.requests[-1].body, b"")
        self.assertEqual(sb.refresh().state, "running")
        self.assertEqual(sb.checkpoints.create("cp")["name"], "cp")
        self.assertEqual(sb.checkpoints.list()[0]["name"], "cp")
        self.assertEqual(sb.checkpoints.restore("cp").info["boot"]["from"], "checkpoint")
        sb.checkpoints.delete("cp")
        self.assertEqual(sb.ports.add(8080)["host_port"], 40123)
        self.assertEqual(self.fake.requests[-1].json(), {"guest_port": 8080})
        self.assertEqual(sb.ports.list(), [])
        sb.ports.remove(40123)
        self.assertEqual(sb.previews.add(8080)["token"], "t")
        self.assertEqual(self.fake.requests[-1].json(), {"port": 8080, "public": False})
        self.assertEqual(sb.previews.list(), [])
        sb.previews.remove(8080)
        self.assertEqual(sb.firewall.get()["rules"], {})
        self.assertTrue(sb.firewall.set({"outbound_internet": True})["applied"])
        self.assertEqual(sb.firewall.log(), ["egress drop"])


class TestGenerated(unittest.TestCase):
    def test_sync_surface_is_generated_from_async(self) -> None:
        tool = os.path.join(HERE, "..", "tools", "unasync.py")
        r = subprocess.run([sys.executable, tool, "--check"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


class TestPackaging(unittest.TestCase):
    def test_backend_writes_a_valid_wheel_and_sdist(self) -> None:
        import base64 as b64
        import hashlib
        import zipfile
        sys.path.insert(0, os.path.join(HERE, "..", "_backend"))
        try:
            import kiln_build
        finally:
            sys.path.pop(0)
        d = tempfile.mkdtemp()
        try:
            name = kiln_build.build_wheel(d)
            self.assertEqual(name, f"kiln-{kiln.__version__}-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = set(z.namelist())
                for need in ("kiln/__init__.py", "kiln/py.typed", "kiln/aio/__init__.py", "kiln/_surface.py"):
                    self.assertIn(need, names)
                self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
                record = z.read(f"kiln-{kiln.__version__}.dist-info/RECORD").decode().splitlines()
                for line in record:
                    path, digest, size = line.rsplit(",", 2)
                    if not digest:
                        continue
                    data = z.read(path)
                    want = b64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, int(size)), (f"sha256={want}", len(data)), path)
                meta = z.read(f"kiln-{kiln.__version__}.dist-info/METADATA").decode()
                self.assertIn("Name: kiln\n", meta)
                self.assertIn("Requires-Python: >=3.11\n", meta)
            sdist = kiln_build.build_sdist(d)
            with tarfile.open(os.path.join(d, sdist)) as t:
                members = t.getnames()
            self.assertIn(f"kiln-{kiln.__version__}/pyproject.toml", members)
            self.assertIn(f"kiln-{kiln.__version__}/_backend/kiln_build.py", members)
            self.assertEqual(kiln_build.get_requires_for_build_wheel(), [])
        finally:
            subprocess.run(["rm", "-rf", d])


class TestPipInstall(unittest.TestCase):
    def test_pip_installs_offline_into_a_venv(self) -> None:
        # In a kiln checkout the venv goes to build/sdk-python/venv, where
        # tests/integration/sdk_python_tests.sh finds it (pip in the nested
        # harness's emulated outer VM takes minutes).
        repo = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
        if os.path.exists(os.path.join(repo, "Makefile")) and os.path.isdir(os.path.join(repo, "sdk", "python")):
            venv = os.path.join(repo, "build", "sdk-python", "venv")
            os.makedirs(os.path.dirname(venv), exist_ok=True)
        else:  # pragma: no cover - the SDK copied elsewhere
            venv = os.path.join(tempfile.mkdtemp(), "venv")
        r = subprocess.run([os.path.join(HERE, "..", "tools", "install-venv"), "--force", venv],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import kiln, kiln.aio, sys; print(kiln.__file__.startswith(sys.prefix), kiln.__version__)"],
                           capture_output=True, text=True, cwd="/", timeout=60)
        self.assertEqual(r.stdout.strip(), f"True {kiln.__version__}", r.stderr)


class TestExample(Base):
    def test_exec_roundtrip_prints_a_median(self) -> None:
        self.fake.handler = routes({
            ("GET", "/v1/sandboxes/3f9a1c2b7d4e"): json_response(200, SB),
            ("POST", "/v1/sandboxes/3f9a1c2b7d4e/exec"): json_response(200, {"exit_code": 0, "stdout": "",
                                                                            "stderr": ""})})
        ex = os.path.join(HERE, "..", "examples", "exec_roundtrip.py")
        r = subprocess.run([sys.executable, ex, self.fake.path, SB["id"], "5"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        float(r.stdout.strip())
        self.assertEqual(len(self.fake.requests), 7)  # get, warm-up, 5
        self.assertEqual(self.fake.connections, 1)  # one kept-alive connection
        r = subprocess.run([sys.executable, ex, self.fake.path], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
