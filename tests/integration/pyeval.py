#!/usr/bin/env python3
"""pyeval: one Python interpreter for the integration tests' JSON look-ups.

    python3 tests/integration/pyeval.py PORTFILE
    python3 tests/integration/pyeval.py --once KIND A B

Inside the nested harness every python3 start costs about a second (the
outer VM is emulated), and the tests look into JSON answers hundreds of
times (lib.sh's jget). This server starts once per run, listens on an
ephemeral port of 127.0.0.1, writes the port to PORTFILE and answers one
request per connection, which bash makes with its own /dev/tcp (no
process started at all). PORTFILE (in a directory of mode 0700) gets
"PORT TOKEN"; a request without the token is closed unanswered, so no
other user of the machine can have Python run:

    request:  TOKEN " " KIND " " LEN_A " " LEN_B ":" A B   (lengths in bytes)
    reply:    RC "\\n" TEXT                  (then the connection closes)

KIND "print": A is a Python expression list, B a JSON document; TEXT is
what `d = json.loads(B); print(A)` prints, exactly as
`python3 -c "import json, sys; d = json.load(sys.stdin); print(A)"` would
(RC 0), or the traceback (RC 1); `walk(d, KEY...)` is there for
net_tests.sh's fwj. KIND "shjson": TEXT is the exec body
{"argv": ["sh", "-c", A]}. Anything else is RC 2. The tests are the only
client: the port is on the loopback of the (throwaway) test machine.
"""
import io
import json
import secrets
import socket
import socketserver
import sys
import traceback


def walk(v, *keys):
    """net_tests.sh's fwj: the value at keys (list indices as numbers), ""
    when missing, JSON for objects and lists."""
    for k in keys:
        v = v[int(k)] if isinstance(v, list) else v.get(k)
        if v is None:
            break
    return "" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else v)


TOKEN = secrets.token_hex(16)


def answer(kind, a, b):
    out = io.StringIO()

    def p(*args, **kw):
        kw.setdefault("file", out)
        print(*args, **kw)

    if kind == "print":
        d = json.loads(b)
        exec("print(" + a + ")", {"json": json, "sys": sys, "d": d, "walk": walk, "print": p})
        return 0, out.getvalue()
    if kind == "shjson":
        return 0, json.dumps({"argv": ["sh", "-c", a]}) + "\n"
    return 2, f"pyeval: unknown kind {kind!r}\n"


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        try:
            # Answer each segment at once: the client (bash) cannot turn
            # Nagle off, so a delayed ACK would hold its next write.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            head = b""
            while not head.endswith(b":") and len(head) < 128:
                c = self.rfile.read(1)
                if not c:
                    return
                head += c
            token, kind, la, lb = head[:-1].decode().split(" ")
            if not secrets.compare_digest(token, TOKEN):
                return
            la, lb = int(la), int(lb)
            a = self.rfile.read(la).decode("utf-8", "surrogateescape")
            b = self.rfile.read(lb).decode("utf-8", "surrogateescape")
        except Exception:
            return
        try:
            rc, text = answer(kind, a, b)
        except BaseException:  # the expression's own error (sys.exit too), as python3 -c reports it
            rc, text = 1, traceback.format_exc()
        # bash's read stops at a NUL, and $(...) drops them: drop them here.
        self.wfile.write(b"%d\n" % rc + text.replace("\0", "").encode("utf-8", "surrogateescape"))


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64  # parallel callers (background subshells)


def main():
    if sys.argv[1] == "--once":  # lib.sh's pyeval without a server: the same answer
        try:
            rc, text = answer(sys.argv[2], sys.argv[3], sys.argv[4])
        except Exception:
            rc, text = 1, traceback.format_exc()
        (sys.stdout if rc == 0 else sys.stderr).write(text)
        sys.exit(rc)
    srv = Server(("127.0.0.1", 0), Handler)
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{srv.server_address[1]} {TOKEN}")
    import os
    os.rename(tmp, sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
