"""Egress policy callbacks (sync and asyncio) against a stand-in for
kilnd's decision stream (GET .../egress/decisions, Upgrade:
kiln-decisions; NDJSON both ways): every question answered once with
what the callback decided, kilnd's error line, its end line, a close from
the client, on_request, slow callbacks, and parameters refused before
anything is sent."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest
from typing import Any, Callable

import kiln
from kiln import egress, errors
from fake_kilnd import Request, error_response, json_response
from test_async import AsyncBase
from test_sync import HERE, SB, Base, routes

PATH = "/v1/sandboxes/3f9a1c2b7d4e/egress/decisions"
ATTACHED = {"kind": "attached", "deadline_ms": 2000, "on_timeout": "deny"}
CONNECT = {"kind": "connect", "id": 7, "src": "10.0.2.15:40312", "dst": "10.0.2.2:443", "name": "api.github.com",
           "proto": "tls", "static": "allow", "rule": 0, "intercept": True}
FAILED = {"decision": "deny", "reason": "policy callback failed"}


def request(qid: int, method: str = "GET", name: str = "api.github.com", flow: Any = None) -> dict[str, Any]:
    return {"kind": "request", "id": qid, "flow": flow, "src": "10.0.2.15:40312", "dst": "10.0.2.2:443",
            "name": name, "method": method, "path": "/v1/x", "headers": [["user-agent", "curl/7.88"]],
            "inject": ["authorization"], "static": "allow", "rule": 0}


class Peer:
    """kilnd's side of an upgraded connection: lines out, answers in."""

    def __init__(self, c: socket.socket) -> None:
        self.c = c
        self.buf = b""
        c.settimeout(5)

    def send(self, *objs: dict[str, Any]) -> None:
        self.c.sendall(b"".join(json.dumps(o).encode() + b"\n" for o in objs))

    def _line(self) -> bytes:
        while b"\n" not in self.buf:
            d = self.c.recv(65536)
            if not d:
                return b""
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def answer(self) -> dict[str, Any]:
        line = self._line()
        if not line:
            raise AssertionError("the client closed instead of answering")
        return json.loads(line)  # type: ignore[no-any-return]

    def answers(self, n: int) -> dict[int, dict[str, Any]]:
        """n answers by question id (each id once)."""
        out: dict[int, dict[str, Any]] = {}
        for _ in range(n):
            a = self.answer()
            if a["id"] in out:
                raise AssertionError(f"question {a['id']} answered twice: {out[a['id']]} then {a}")
            out[a.pop("id")] = a
        return out

    def expect(self, want: dict[int, dict[str, Any]]) -> None:
        """The answers to len(want) questions are these (by id)."""
        got = self.answers(len(want))
        if got != want:
            raise AssertionError(f"answers {got}, not {want}")

    def end(self, reason: str = "sandbox_stopped") -> None:
        self.send({"kind": "end", "reason": reason})

    def closed(self) -> bool:
        """True when the client closes without sending anything more."""
        return self._line() == b""


class Stream:
    """A handler that switches to kiln-decisions, sends the attached line
    and runs script(peer) in the server's thread; done/failure for the test."""

    def __init__(self, script: Callable[[Peer], None], first: dict[str, Any] = ATTACHED) -> None:
        self.script = script
        self.first = first
        self.done = threading.Event()
        self.failure: list[BaseException] = []
        self.request: Request | None = None

    def __call__(self, req: Request, c: socket.socket) -> bool:
        self.request = req
        try:
            c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: kiln-decisions\r\n\r\n"
                      + json.dumps(self.first).encode() + b"\n")
            self.script(Peer(c))
        except BaseException as e:  # the test reports it
            self.failure.append(e)
        finally:
            self.done.set()
        return False

    def check(self, test: unittest.TestCase) -> None:
        test.assertTrue(self.done.wait(10), "the stand-in's script did not finish")
        if self.failure:
            raise self.failure[0]
        assert self.request is not None
        test.assertEqual(self.request.method, "GET")
        test.assertEqual(self.request.path, PATH)
        test.assertEqual(self.request.headers.get("connection"), "Upgrade")
        test.assertEqual(self.request.headers.get("upgrade"), "kiln-decisions")


def decide(seen: list[dict[str, Any]]) -> Callable[[dict[str, Any]], Any]:
    def fn(ev: dict[str, Any]) -> Any:
        seen.append(ev)
        if ev["kind"] == "connect":
            return egress.allow()
        if ev["name"] == "boom.test":
            raise RuntimeError("boom")
        if ev["name"] == "rules.test":
            return None
        if ev["method"] == "POST" and ev["name"] != "api.github.com":
            return egress.deny(status=451, reason="no POSTs here")
        return egress.allow(set_headers={"X-Agent": "a1"}, remove_headers=["user-agent"])
    return fn


EVENTS = [CONNECT, request(8, flow=7), request(9, "POST", "example.com"), request(10, name="rules.test"),
          request(11, name="boom.test")]
WANT = {7: {"decision": "allow"},
        8: {"decision": "allow", "set_headers": {"x-agent": "a1"}, "remove_headers": ["user-agent"]},
        9: {"decision": "deny", "status": 451, "reason": "no POSTs here"},
        10: {"decision": "rules"},
        11: FAILED}


def every_event(peer: Peer) -> None:
    peer.send(*EVENTS)
    peer.expect(WANT)
    peer.end()
    if not peer.closed():
        raise AssertionError("the client answered after the end line")


BAD_PARAMS = [({"deadline_ms": 9}, ValueError, "deadline_ms 9 is out of range"),
              ({"deadline_ms": 60001}, ValueError, "10..60000"),
              ({"deadline_ms": "2000"}, TypeError, "deadline_ms is an int"),
              ({"deadline_ms": True}, TypeError, "deadline_ms is an int"),
              ({"on_timeout": "allow"}, ValueError, "on_timeout 'allow'"),
              ({"fn": None}, TypeError, "fn is a function")]


class TestEgressPolicy(Base):
    def test_every_question_gets_the_callbacks_answer(self) -> None:
        stream = Stream(every_event)
        self.fake.handler = stream
        seen: list[dict[str, Any]] = []
        with self.assertLogs("kiln.egress", "ERROR") as logs:
            h = self.sandbox().egress.policy(decide(seen))
            self.assertEqual(h.attached, ATTACHED)
            self.assertEqual(h.wait(10), "sandbox_stopped")
        stream.check(self)
        self.assertEqual(stream.request.q, {"deadline_ms": "2000", "on_timeout": "deny"})  # type: ignore[union-attr]
        self.assertTrue(h.done)
        self.assertEqual(h.reason, "sandbox_stopped")
        self.assertEqual(sorted(seen, key=lambda e: e["id"]), EVENTS)  # the events as kilnd sent them
        self.assertIn("boom", "\n".join(logs.output))
        h.close()  # after the end: nothing to do

    def test_parameters_go_in_the_query(self) -> None:
        stream = Stream(lambda peer: self.assertTrue(peer.closed()))
        self.fake.handler = stream
        with self.sandbox().egress.policy(lambda ev: None, deadline_ms=10, on_timeout="rules"):
            pass
        stream.check(self)
        self.assertEqual(stream.request.q, {"deadline_ms": "10", "on_timeout": "rules"})  # type: ignore[union-attr]

    def test_answers_kilnd_would_refuse_are_denies(self) -> None:
        bad: dict[int, Any] = {
            1: {"decision": "allow", "set_headers": {"x-a": "line\nbreak"}},
            2: {"decision": "maybe"},
            3: "allow",
            4: {"decision": "deny", "status": 200},
            5: {"decision": "allow", "colour": "red"},
            6: {"decision": "deny", "set_headers": {"x-a": "b"}},
            7: {"decision": "allow", "remove_headers": ["bad name"]},
            8: {"decision": "deny", "reason": "x" * 201},
            9: {"decision": "allow", "set_headers": {f"x-{i}": "v" for i in range(17)}},
        }

        def script(peer: Peer) -> None:
            peer.send(*[request(i) for i in bad], dict(CONNECT, id=10))
            peer.expect({i: FAILED for i in range(1, 11)})
            peer.end("egress_proxy_stopped")

        def fn(ev: dict[str, Any]) -> Any:
            if ev["kind"] == "connect":
                return egress.allow(set_headers={"x-a": "b"})  # headers on a connect
            return bad[ev["id"]]
        stream = Stream(script)
        self.fake.handler = stream
        with self.assertLogs("kiln.egress", "ERROR") as logs:
            h = self.sandbox().egress.policy(fn)
            self.assertEqual(h.wait(10), "egress_proxy_stopped")
        stream.check(self)
        self.assertEqual(len(logs.output), 10)

    def test_helpers_check_their_arguments(self) -> None:
        self.assertEqual(egress.rules(), {"decision": "rules"})
        self.assertEqual(egress.deny(), {"decision": "deny", "status": 403})
        self.assertEqual(egress.allow(remove_headers=("User-Agent",)), {"decision": "allow",
                                                                         "remove_headers": ["user-agent"]})
        for call in (lambda: egress.deny(status=302), lambda: egress.deny(reason="a\x07"),
                     lambda: egress.allow(set_headers={"x": "\x00"}), lambda: egress.allow(remove_headers="x-a"),
                     lambda: egress.allow(set_headers={"x": 1})):  # type: ignore[dict-item]
            with self.assertRaises((TypeError, ValueError)):
                call()

    def test_error_line_gets_one_fallback_deny(self) -> None:
        def script(peer: Peer) -> None:
            peer.send(request(8))
            if peer.answer() != {"id": 8, "decision": "allow"}:
                raise AssertionError("not the callback's answer")
            peer.send({"kind": "error", "id": 8, "message": "set_headers: kilnd says no"})
            if peer.answer() != {"id": 8, **FAILED}:
                raise AssertionError("no fallback deny")
            peer.send({"kind": "error", "id": 8, "message": "again"}, {"kind": "end", "reason": "kilnd_shutdown"})
            if not peer.closed():
                raise AssertionError("a second fallback")
        stream = Stream(script)
        self.fake.handler = stream
        with self.assertLogs("kiln.egress", "WARNING") as logs:
            h = self.sandbox().egress.policy(lambda ev: egress.allow())
            self.assertEqual(h.wait(10), "kilnd_shutdown")
        stream.check(self)
        self.assertEqual([e["message"] for e in h.errors], ["set_headers: kilnd says no", "again"])
        self.assertIn("kilnd says no", logs.output[0])

    def test_close_from_the_client(self) -> None:
        stream = Stream(lambda peer: None if peer.closed() else self.fail("not closed"))
        self.fake.handler = stream
        calls: list[Any] = []
        h = self.sandbox().egress.policy(calls.append)
        self.assertFalse(h.done)
        h.close()
        stream.check(self)
        self.assertTrue(h.done)
        self.assertIsNone(h.wait(1))
        h.close()  # twice is fine
        self.assertEqual(calls, [])

    def test_wait_with_a_timeout_on_an_open_stream(self) -> None:
        stream = Stream(lambda peer: peer.closed())
        self.fake.handler = stream
        with self.sandbox().egress.policy(lambda ev: None) as h:
            with self.assertRaises(errors.ClientTimeoutError):
                h.wait(0.05)
        stream.check(self)

    def test_on_request_answers_connects_with_rules(self) -> None:
        def script(peer: Peer) -> None:
            peer.send(CONNECT, request(8, "POST", "example.com"))
            peer.expect({7: {"decision": "rules"}, 8: {"decision": "deny", "status": 403, "reason": "no"}})
            peer.end()
        stream = Stream(script)
        self.fake.handler = stream
        seen: list[dict[str, Any]] = []
        h = self.sandbox().egress.on_request(lambda ev: seen.append(ev) or egress.deny(reason="no"))
        self.assertEqual(h.wait(10), "sandbox_stopped")
        stream.check(self)
        self.assertEqual([e["kind"] for e in seen], ["request"])

    def test_a_slow_callback_delays_no_other(self) -> None:
        release = threading.Event()

        def script(peer: Peer) -> None:
            peer.send(request(1, name="slow.test"), request(2))
            first = peer.answer()
            release.set()
            second = peer.answer()
            if (first["id"], second["id"]) != (2, 1):
                raise AssertionError(f"answered {first} before {second}")
            peer.end()

        def fn(ev: dict[str, Any]) -> Any:
            if ev["name"] == "slow.test":
                release.wait(10)
            return None
        stream = Stream(script)
        self.fake.handler = stream
        t0 = time.monotonic()
        h = self.sandbox().egress.policy(fn)
        self.assertLess(time.monotonic() - t0, 2)  # attached: the callbacks run in the background
        self.assertEqual(h.wait(10), "sandbox_stopped")
        stream.check(self)

    def test_bad_parameters_are_refused_before_connecting(self) -> None:
        sb = self.sandbox()
        for kw, cls, text in BAD_PARAMS:
            args = {"fn": lambda ev: None, **kw}
            with self.assertRaises(cls) as cm:
                sb.egress.policy(args.pop("fn"), **args)
            self.assertIn(text, str(cm.exception))
            with self.assertRaises(cls):
                sb.egress.on_request(**{"fn": lambda ev: None, **kw})
        self.assertEqual(self.fake.connections, 0)

    def test_refusals_before_the_switch(self) -> None:
        for ans, cls, code in [(error_response(409, "busy", "another client holds it"), errors.BusyError, "busy"),
                               (error_response(409, "no_egress_proxy", "add an http rule"), errors.NoEgressProxyError,
                                "no_egress_proxy"),
                               (error_response(409, "wrong_state", "stopped"), errors.WrongStateError, "wrong_state"),
                               (error_response(404, "sandbox_not_found", "no"), errors.SandboxNotFoundError,
                                "sandbox_not_found"),
                               (json_response(200, {}), errors.KilnProtocolError, "protocol_error")]:
            self.fake.handler = routes({("GET", PATH): ans})
            with self.assertRaises(cls) as cm:
                self.sandbox().egress.policy(lambda ev: None)
            self.assertEqual(cm.exception.code, code)

    def test_a_stream_not_beginning_attached_or_cut_short(self) -> None:
        self.fake.handler = Stream(lambda peer: None, first=CONNECT)
        with self.assertRaises(errors.KilnProtocolError):
            self.sandbox().egress.policy(lambda ev: None)
        stream = Stream(lambda peer: peer.send(request(1)))  # then closes: no end line
        self.fake.handler = stream
        with self.assertLogs("kiln.egress", "ERROR"):
            h = self.sandbox().egress.policy(lambda ev: None)
            with self.assertRaises(errors.KilnConnectionError):
                h.wait(10)
        stream.check(self)

    def test_hostile_lines_end_the_stream_with_a_protocol_error(self) -> None:
        for raw in (b"not json\n", b'{"kind": "request"}\n', b"[1]\n", b'{"kind": "request", "id": true}\n',
                    b'{"kind": 7}\n', b"x" * (17 << 20)):
            def script(peer: Peer, raw: bytes = raw) -> None:
                try:
                    peer.c.sendall(raw)
                except BrokenPipeError:
                    return  # the client closed at its line cap, mid-line
                peer.closed()
            stream = Stream(script)
            self.fake.handler = stream
            with self.assertLogs("kiln.egress", "ERROR"):
                h = self.sandbox().egress.policy(lambda ev: None)
                with self.assertRaises(errors.KilnProtocolError, msg=raw[:40]):
                    h.wait(10)
            stream.check(self)


class TestAsyncEgressPolicy(AsyncBase):
    async def test_every_question_gets_the_callbacks_answer(self) -> None:
        stream = Stream(every_event)
        self.fake.handler = stream
        seen: list[dict[str, Any]] = []
        sync_fn = decide(seen)

        async def fn(ev: dict[str, Any]) -> Any:
            await asyncio.sleep(0)
            return sync_fn(ev)
        with self.assertLogs("kiln.egress", "ERROR"):
            h = await self.sandbox().egress.policy(fn)
            self.assertEqual(await h.wait(10), "sandbox_stopped")
        stream.check(self)
        self.assertEqual(sorted(seen, key=lambda e: e["id"]), EVENTS)
        await h.aclose()

    async def test_a_plain_function_and_on_request(self) -> None:
        def script(peer: Peer) -> None:
            peer.send(CONNECT, request(8))
            peer.expect({7: {"decision": "rules"}, 8: {"decision": "allow", "set_headers": {"x-agent": "a1"}}})
            peer.end()
        stream = Stream(script)
        self.fake.handler = stream
        h = await self.sandbox().egress.on_request(lambda ev: egress.allow(set_headers={"x-agent": "a1"}))
        self.assertEqual(await h.wait(10), "sandbox_stopped")
        stream.check(self)

    async def test_a_slow_callback_delays_no_other(self) -> None:
        release = asyncio.Event()
        loop = asyncio.get_running_loop()

        def script(peer: Peer) -> None:
            peer.send(request(1, name="slow.test"), request(2))
            first = peer.answer()
            loop.call_soon_threadsafe(release.set)
            second = peer.answer()
            if (first["id"], second["id"]) != (2, 1):
                raise AssertionError(f"answered {first} before {second}")
            peer.end()

        async def fn(ev: dict[str, Any]) -> Any:
            if ev["name"] == "slow.test":
                await asyncio.wait_for(release.wait(), 10)
            return egress.rules()
        stream = Stream(script)
        self.fake.handler = stream
        h = await self.sandbox().egress.policy(fn)
        self.assertEqual(await h.wait(10), "sandbox_stopped")
        stream.check(self)

    async def test_error_line_and_close_from_the_client(self) -> None:
        got = threading.Event()

        def script(peer: Peer) -> None:
            peer.send(request(8), {"kind": "error", "id": 5, "message": "m"})
            if peer.answer() != {"id": 5, **FAILED} or peer.answer() != {"id": 8, "decision": "rules"}:
                raise AssertionError("not the fallback, then the answer")
            got.set()
            if not peer.closed():
                raise AssertionError("not closed")
        stream = Stream(script)
        self.fake.handler = stream
        with self.assertLogs("kiln.egress", "WARNING"):
            async with await self.sandbox().egress.policy(lambda ev: asyncio.sleep(0.2)) as h:
                await asyncio.to_thread(got.wait, 10)
                self.assertFalse(h.done)
        stream.check(self)
        self.assertTrue(h.done)
        self.assertIsNone(await h.wait(1))
        self.assertEqual(len(h.errors), 1)

    async def test_bad_parameters_are_refused_before_connecting(self) -> None:
        sb = self.sandbox()
        for kw, cls, text in BAD_PARAMS:
            args = {"fn": lambda ev: None, **kw}
            with self.assertRaises(cls) as cm:
                await sb.egress.policy(args.pop("fn"), **args)
            self.assertIn(text, str(cm.exception))
        self.assertEqual(self.fake.connections, 0)

    async def test_refusal_before_the_switch(self) -> None:
        self.fake.handler = routes({("GET", PATH): error_response(409, "busy", "another client holds it")})
        with self.assertRaises(errors.BusyError):
            await self.sandbox().egress.policy(lambda ev: None)


class TestEgressExample(Base):
    def test_egress_policy_example_denies_posts_and_adds_a_header(self) -> None:
        def script(peer: Peer) -> None:
            peer.send(CONNECT, request(8, "POST", "api.github.com"), request(9, "POST", "example.com"),
                      request(10, "GET", "example.com"))
            peer.expect({7: {"decision": "rules"},
                         8: {"decision": "allow", "set_headers": {"x-agent": "kiln-example"}},
                         9: {"decision": "deny", "status": 403, "reason": "POST only to api.github.com"},
                         10: {"decision": "allow", "set_headers": {"x-agent": "kiln-example"}}})
            peer.end()
        stream = Stream(script)
        self.fake.handler = routes({("GET", "/v1/sandboxes/3f9a1c2b7d4e"): json_response(200, SB),
                                    ("GET", PATH): stream})
        ex = os.path.join(HERE, "..", "examples", "egress_policy.py")
        env = dict(os.environ, KILN_SOCKET=self.fake.path)
        r = subprocess.run([sys.executable, ex, SB["id"]], capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        stream.check(self)
        self.assertIn("deny POST example.com/v1/x", r.stdout)
        self.assertIn("ended: sandbox_stopped", r.stdout)
        r = subprocess.run([sys.executable, ex], capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
