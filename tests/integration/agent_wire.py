#!/usr/bin/env python3
"""Raw agent-protocol scenarios for the integration tests (agent_tests.sh).

Speaks docs/agent-protocol.md directly over kiln-vmm's vsock Unix socket,
independently of api/agent-client/agent_client.c, for what the CLI cannot script: a PTY
session with resize, a stream that survives its client, hostile input.

  agent_wire.py UDS pty          interactive sh on a PTY, resize, exit
  agent_wire.py UDS reattach     spawn a line printer, drop the client,
                                 reattach and see the lines continue
  agent_wire.py UDS malformed N  N malformed messages, then ping
Prints "ok ..." on success, "FAIL ..." and exits 1 otherwise.
"""
import json
import socket
import sys
import time

TIMEOUT = 240  # seconds; the nested harness is slow


class Conn:
    def __init__(self, uds):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(TIMEOUT)
        self.s.connect(uds)
        self.s.sendall(b"CONNECT 1024\n")
        self.buf = b""
        line = self._line()
        if not line.startswith(b"OK "):
            raise RuntimeError(f"vsock handshake: {line!r}")

    def _fill(self):
        b = self.s.recv(65536)
        if not b:
            raise EOFError("agent closed the connection")
        self.buf += b

    def _line(self):
        while b"\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def send(self, msg, payload=b""):
        if payload:
            msg = dict(msg, len=len(payload))
        self.s.sendall(json.dumps(msg, separators=(",", ":")).encode() + b"\n" + payload)

    def recv(self):
        """One message: (header dict, payload bytes)."""
        h = json.loads(self._line())
        n = h.get("len", 0)
        while len(self.buf) < n:
            self._fill()
        p, self.buf = self.buf[:n], self.buf[n:]
        return h, p

    def output_until(self, needle, limit=TIMEOUT):
        """Collect stdout/stderr payloads until `needle` appears."""
        out, end = b"", time.time() + limit
        while needle not in out:
            if time.time() > end:
                raise TimeoutError(f"waiting for {needle!r}, got {out[-300:]!r}")
            h, p = self.recv()
            if h["type"] in ("stdout", "stderr"):
                out += p
            elif h["type"] == "error":
                raise RuntimeError(f"agent error: {h}")
            elif h["type"] == "exit":
                if needle not in out:
                    raise RuntimeError(f"process exited before {needle!r}: {out[-300:]!r}")
        return out

    def close(self):
        self.s.close()


def pty(uds):
    c = Conn(uds)
    c.send({"type": "spawn", "argv": ["sh"], "pty": True, "rows": 40, "cols": 120, "user": "root"})
    h, _ = c.recv()
    if h["type"] != "spawned":
        return f"FAIL spawn: {h}"
    c.send({"type": "stdin"}, b"stty size; echo END$((1))\r")
    out = c.output_until(b"END1\r\n")
    if b"40 120" not in out:
        return f"FAIL stty size before resize: {out!r}"
    c.send({"type": "resize", "rows": 50, "cols": 200})
    c.send({"type": "stdin"}, b"stty size; tty; echo END$((2))\r")
    out = c.output_until(b"END2\r\n")
    if b"50 200" not in out or b"/dev/pts/" not in out:
        return f"FAIL after resize: {out!r}"
    c.send({"type": "stdin"}, b"exit 3\r")
    while True:
        h, _ = c.recv()
        if h["type"] == "exit":
            break
    if h.get("exit_code") != 3:
        return f"FAIL exit: {h}"
    return "ok pty"


def reattach(uds):
    c = Conn(uds)
    c.send({"type": "spawn", "argv": ["sh", "-c", "i=0; while [ $i -lt 400 ]; do echo line$i; i=$((i+1)); sleep 0.05; done"]})
    h, _ = c.recv()
    if h["type"] != "spawned":
        return f"FAIL spawn: {h}"
    pid_id = h["id"]
    # Lines arrive as they are printed, not at exit.
    c.output_until(b"line2\n")
    c.close()  # detach: the process must keep running
    time.sleep(1)
    c = Conn(uds)
    c.send({"type": "attach", "id": pid_id, "from": "now"})
    h, _ = c.recv()
    if h["type"] != "attached" or not h.get("running"):
        return f"FAIL attach: {h}"
    out = c.output_until(b"\n")
    first = out.split(b"\n")[0]
    if not first.startswith(b"line") or first in (b"line0", b"line1", b"line2"):
        return f"FAIL reattached stream starts at {first!r}"
    c.send({"type": "signal", "signal": "KILL"})
    while True:
        h, _ = c.recv()
        if h["type"] == "exit":
            break
    if h.get("signal") != 9:
        return f"FAIL signal delivery: {h}"
    return f"ok reattach resumed at {first.decode()}"


def malformed(uds, n):
    bad = [b"{\n", b"[1,2]\n", b"\"str\"\n", b"{\"type\":\"nope\"}\n", b"{\"type\":1}\n",
           b"{\"type\":\"exec\",\"argv\":\"x\"}\n", b"{\"type\":\"exec\",\"argv\":[\"true\"],\"bogus\":1}\n",
           b"\xff\xfe garbage\n", b"x" * 70000 + b"\n", b"{\"type\":\"write\",\"path\":\"/tmp/x\",\"len\":100}\nshort",
           b"{\"type\":\"ping\",\"len\":5}\n12345", b"\n"]
    codes = {}
    for i in range(n):
        c = Conn(uds)
        c.s.sendall(bad[i % len(bad)])
        c.s.shutdown(socket.SHUT_WR)
        try:
            h, _ = c.recv()
            codes[h.get("code", h["type"])] = codes.get(h.get("code", h["type"]), 0) + 1
        except EOFError:
            codes["closed"] = codes.get("closed", 0) + 1
        c.close()
    c = Conn(uds)
    c.send({"type": "ping"})
    h, _ = c.recv()
    if h["type"] != "pong":
        return f"FAIL ping after malformed input: {h}"
    return f"ok malformed {n}: " + " ".join(f"{k}={v}" for k, v in sorted(codes.items()))


def main():
    uds, what = sys.argv[1], sys.argv[2]
    try:
        if what == "pty":
            r = pty(uds)
        elif what == "reattach":
            r = reattach(uds)
        elif what == "malformed":
            r = malformed(uds, int(sys.argv[3]))
        else:
            r = f"FAIL unknown scenario {what}"
    except Exception as e:  # a scenario failing is a test failure, said once
        r = f"FAIL {what}: {type(e).__name__}: {e}"
    print(r)
    return 0 if r.startswith("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
