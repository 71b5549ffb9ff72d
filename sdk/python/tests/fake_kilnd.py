"""A fake kilnd for the SDK's unit tests: a Unix-socket HTTP server in the
test process that answers with canned responses, well-formed or hostile.

A test sets ``fake.handler(req, conn)``; ``req`` is the parsed request
(method, target, path, query, headers, body), ``conn`` the socket to write
any bytes to. The handler returns True to keep the connection for the next
request (keep-alive), False to close it. Helpers build the usual answers.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes = b""
    raw_head: bytes = b""
    conn_no: int = 0
    body_len: int = 0

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> list[tuple[str, str]]:
        return parse_qsl(urlsplit(self.target).query, keep_blank_values=True)

    @property
    def q(self) -> dict[str, str]:
        return dict(self.query)

    def json(self) -> Any:
        return json.loads(self.body)


def response(status: int, body: bytes = b"", *, reason: str = "X",
             ctype: str = "application/json", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def json_response(status: int, obj: Any) -> bytes:
    return response(status, json.dumps(obj).encode())


def error_response(status: int, code: str, message: str = "it failed") -> bytes:
    return json_response(status, {"error": {"code": code, "message": message}})


def chunked_head(status: int = 200, ctype: str = "application/x-ndjson") -> bytes:
    return f"HTTP/1.1 {status} OK\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def ndjson(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def chunked_response(data: bytes, pieces: int = 3, ctype: str = "application/x-ndjson") -> bytes:
    out = chunked_head(200, ctype)
    step = max(1, len(data) // pieces)
    for i in range(0, len(data), step):
        out += chunk(data[i:i + step])
    return out + b"0\r\n\r\n"


class FakeKilnd:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="fake-kilnd.")
        self.path = os.path.join(self.dir, "kiln.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(64)
        self.requests: list[Request] = []
        self.handler: Callable[[Request, socket.socket], bool] = lambda r, c: False
        self.connections = 0
        self.closed_by_client = threading.Event()
        self.expect_continue = True  # answer "100 Continue" to Expect
        self.discard_body = False  # count a Content-Length body (body_len), keep none of it
        self._stop = False
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._loop, daemon=True)
        self._accept.start()

    def close(self) -> None:
        self._stop = True
        try:
            socket.socket(socket.AF_UNIX).connect(self.path)
        except OSError:
            pass
        self.sock.close()
        try:
            os.unlink(self.path)
            os.rmdir(self.dir)
        except OSError:
            pass

    def _loop(self) -> None:
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            if self._stop:
                c.close()
                return
            self.connections += 1
            t = threading.Thread(target=self._serve, args=(c, self.connections), daemon=True)
            t.start()

    def _serve(self, c: socket.socket, no: int) -> None:
        buf = b""
        try:
            while True:
                req, buf = self._read_request(c, buf, no)
                if req is None:
                    self.closed_by_client.set()
                    return
                self.requests.append(req)
                if not self.handler(req, c):
                    return
        except OSError:
            self.closed_by_client.set()
        finally:
            try:
                c.close()
            except OSError:
                pass

    def _read_request(self, c: socket.socket, buf: bytes, no: int) -> tuple[Optional[Request], bytes]:
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return None, b""
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ")
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        req = Request(method, target, headers, raw_head=head + b"\r\n\r\n", conn_no=no)
        if headers.get("expect", "").lower() == "100-continue":
            req.body = b""
            if not self.expect_continue:
                return req, buf  # the handler answers before the body
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if "content-length" in headers and self.discard_body:
            left = int(headers["content-length"])
            req.body_len = left
            while left > len(buf):
                left -= len(buf)
                buf = c.recv(1 << 20)
                if not buf:
                    raise OSError("client closed inside the body")
            buf = buf[left:]
        elif "content-length" in headers:
            n = int(headers["content-length"])
            while len(buf) < n:
                d = c.recv(65536)
                if not d:
                    break
                buf += d
            req.body, buf = buf[:n], buf[n:]
        elif headers.get("transfer-encoding") == "chunked":
            body = bytearray()
            while True:
                while b"\r\n" not in buf:
                    buf += c.recv(65536)
                line, buf = buf.split(b"\r\n", 1)
                size = int(line, 16)
                while len(buf) < size + 2:
                    d = c.recv(65536)
                    if not d:
                        raise OSError("client closed inside a chunk")
                    buf += d
                body += buf[:size]
                buf = buf[size + 2:]
                if size == 0:
                    break
            req.body = bytes(body)
        return req, buf
