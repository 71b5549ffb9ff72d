#!/usr/bin/python3
"""Test hosts for tests/integration/net_tests.sh, run inside a network
namespace on this machine (never any outside address): small servers
bound to addresses the test put on the namespace's loopback.

  --http ADDR:PORT     answers every GET with "kiln-net ADDR:PORT"
  --stream ADDR:PORT   sends "tick N" every 0.2 s to whoever connects
  --sink ADDR:PORT     reads everything; logs "sink BYTES SECONDS" at the end
                       (SECONDS: from the first byte to the last)
  --source ADDR:PORT:MIB  sends MIB MiB of zeros to whoever connects, then
                       closes; logs "source BYTES SECONDS" (SECONDS: until
                       the peer closed, or, when it had half-closed already,
                       until the last byte went into the socket)
  --udp-sink ADDR:PORT UDP: counts datagrams (a 4-byte sequence number first);
                       logs "udpsink RECEIVED DISTINCT SECONDS" 15 s after the last
  --https ADDR:PORT    HTTP/1.1 over TLS (--tls-cert, --tls-key): a GET of a file
                       below --static DIR serves it (a directory: its index.html;
                       a missing one below an entry of DIR is a 404: git's dumb
                       HTTP and a pip index are served), any other request is
                       answered "kiln-net-tls ADDR:PORT METHOD PATH"; logs
                       "https ADDR:PORT METHOD PATH authorization=VALUE" and
                       " x-agent=VALUE" when sent (test-only: the egress tests
                       check what the proxy and a policy callback added)
  --dns ADDR           UDP DNS on port 53: A records from --zone NAME=IP,
                       NOERROR and no answer for other types of those
                       names, NXDOMAIN for the rest
  --log FILE           one line per request ("http ADDR:PORT from CLIENT")
  --ready FILE         created once every server listens

Test-only code: one thread per connection, nothing bounded beyond what a
test needs.
"""
import argparse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import os
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time

log_lock = threading.Lock()
log_path = None


def log(line):
    with log_lock:
        with open(log_path, "a") as f:
            f.write(line + "\n")


def split(spec):
    addr, port = spec.rsplit(":", 1)
    return addr, int(port)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def http(spec):
    addr, port = split(spec)

    class H(socketserver.StreamRequestHandler):
        def handle(self):
            line = self.rfile.readline(4096)
            while True:
                h = self.rfile.readline(4096)
                if h in (b"\r\n", b"\n", b""):
                    break
            body = ("kiln-net %s:%d\n" % (addr, port)).encode()
            log("http %s:%d from %s %s" % (addr, port, self.client_address[0], line.split(b" ")[1:2]))
            self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    return Server((addr, port), H)


def https(spec, cert, key, static):
    addr, port = split(spec)

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self):
            n = int(self.headers.get("content-length") or 0)
            if n:
                self.rfile.read(n)
            log("https %s:%d %s %s authorization=%s%s" % (addr, port, self.command, self.path,
                                                         self.headers.get("authorization", "-"),
                                                         " x-agent=" + self.headers["x-agent"]
                                                         if "x-agent" in self.headers else ""))
            path = os.path.normpath("/" + self.path.split("?", 1)[0]).lstrip("/")
            f = os.path.join(static, path) if static and path else None
            if f and os.path.isdir(f):
                f = os.path.join(f, "index.html")
            code = 200
            if self.command == "GET" and f and os.path.isfile(f):
                body = open(f, "rb").read()
            elif f and os.path.exists(os.path.join(static, path.split("/")[0])):
                code, body = 404, b"not found\n"  # below a static entry: a file or nothing
            else:
                body = ("kiln-net-tls %s:%d %s %s\n" % (addr, port, self.command, self.path)).encode()
            self.send_response(code)
            if code == 200 and f and f.endswith(".html"):
                self.send_header("Content-Type", "text/html")  # pip reads no other index
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = answer

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv = ThreadingHTTPServer((addr, port), H)
    srv.daemon_threads = True
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    return srv


def stream(spec):
    addr, port = split(spec)

    class H(socketserver.BaseRequestHandler):
        def handle(self):
            log("stream %s:%d from %s" % (addr, port, self.client_address[0]))
            self.request.settimeout(5)
            n = 0
            try:
                while n < 5000:
                    self.request.sendall(b"tick %d\n" % n)
                    n += 1
                    time.sleep(0.2)
            except OSError as e:
                log("stream %s:%d ended after %d ticks: %s" % (addr, port, n, e))

    return Server((addr, port), H)


def sink(spec):
    addr, port = split(spec)

    class H(socketserver.BaseRequestHandler):
        def handle(self):
            total, t0, t1 = 0, None, None
            self.request.settimeout(600)
            try:
                while True:
                    d = self.request.recv(65536)
                    if not d:
                        break
                    if t0 is None:
                        t0 = time.monotonic()
                    t1 = time.monotonic()
                    total += len(d)
            except OSError:
                pass
            log("sink %d %.3f" % (total, (t1 - t0) if t0 is not None else 0.0))

    return Server((addr, port), H)


def source(spec):
    addr, port, mib = spec.rsplit(":", 2)
    port, total = int(port), int(mib) << 20

    class H(socketserver.BaseRequestHandler):
        def handle(self):
            chunk = bytes(1 << 16)
            sent, t0 = 0, time.monotonic()
            self.request.settimeout(600)
            try:
                while sent < total:
                    n = min(len(chunk), total - sent)
                    self.request.sendall(chunk[:n])
                    sent += n
                self.request.shutdown(socket.SHUT_WR)
                self.request.recv(1)  # until the guest has read it all and closed
            except OSError:
                pass
            log("source %d %.3f" % (sent, time.monotonic() - t0))

    return Server((addr, port), H)


def udp_sink(spec):
    """Counts datagrams (kiln-udp-flood's: a 4-byte sequence number first)
    and logs "udpsink RECEIVED DISTINCT SECONDS" once 15 s pass without one."""
    addr, port = split(spec)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:  # past rmem_max (root): a slow sink must not be the one dropping
        s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((addr, port))

    def run():
        while True:
            s.settimeout(None)
            seen, n = set(), 0
            d = s.recv(65536)
            t0 = t1 = time.monotonic()
            s.settimeout(15)
            while True:
                n += 1
                if len(d) >= 4:
                    seen.add(int.from_bytes(d[:4], "big"))
                try:
                    d = s.recv(65536)
                except socket.timeout:
                    break
                t1 = time.monotonic()
            log("udpsink %d %d %.3f" % (n, len(seen), t1 - t0))

    return run


def qname(msg):
    """The question name and the offset after QTYPE/QCLASS, or None."""
    labels, i = [], 12
    while i < len(msg):
        n = msg[i]
        if n == 0:
            i += 1
            break
        if n & 0xC0 or i + 1 + n > len(msg):
            return None
        labels.append(msg[i + 1:i + 1 + n].decode("ascii", "replace").lower())
        i += 1 + n
    if i + 4 > len(msg):
        return None
    return ".".join(labels), struct.unpack("!H", msg[i:i + 2])[0], i + 4


def dns(addr, zone):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))

    def serve():
        while True:
            msg, peer = s.recvfrom(4096)
            if len(msg) < 12:
                continue
            q = qname(msg)
            if not q:
                continue
            name, qtype, end = q
            ident = msg[:2]
            question = msg[12:end]
            log("dns %s type %d from %s" % (name, qtype, peer[0]))
            if name not in zone:
                flags, answers = 0x8183, b""  # NXDOMAIN
            elif qtype == 1:
                flags = 0x8180
                answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + socket.inet_aton(zone[name])
            else:
                flags, answers = 0x8180, b""
            head = ident + struct.pack("!HHHHH", flags, 1, 1 if answers else 0, 0, 0)
            s.sendto(head + question + answers, peer)

    return serve


def main():
    global log_path
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", action="append", default=[])
    ap.add_argument("--stream", action="append", default=[])
    ap.add_argument("--sink", action="append", default=[])
    ap.add_argument("--source", action="append", default=[])
    ap.add_argument("--udp-sink", action="append", default=[])
    ap.add_argument("--https", action="append", default=[])
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--static")
    ap.add_argument("--dns")
    ap.add_argument("--zone", action="append", default=[])
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()
    log_path = a.log
    open(log_path, "a").close()
    servers = [http(x) for x in a.http] + [stream(x) for x in a.stream] + [sink(x) for x in a.sink] + [source(x) for x in a.source]
    servers += [https(x, a.tls_cert, a.tls_key, a.static) for x in a.https]
    for srv in servers:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    for x in a.udp_sink:
        threading.Thread(target=udp_sink(x), daemon=True).start()
    if a.dns:
        zone = dict(z.lower().split("=", 1) for z in a.zone)
        threading.Thread(target=dns(a.dns, zone), daemon=True).start()
    open(a.ready, "w").close()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
