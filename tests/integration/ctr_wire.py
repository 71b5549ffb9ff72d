#!/usr/bin/env python3
"""Containers in a kiln.oci guest (docs/agent-protocol.md, 7.9), driven raw
over kiln-vmm's vsock Unix socket, as kiln-runtime's shim drives them.

  ctr_wire.py UDS run        create (proc, tmpfs /dev, devpts, a read-only
                             bind), stdio streams, start, stdin to EOF,
                             stdout and stderr whole and in order, exit 7,
                             delete
  ctr_wire.py UDS refusals   a missing program in runc's words, a cid twice,
                             a share that is not there
  ctr_wire.py UDS kill       a container with a background job, KILL to
                             all of it, its exit, delete
  ctr_wire.py UDS exec       ctr_exec in a running container (init sleep):
                             its PID namespace (pid 1 is the init), the
                             hostname, stdin to it, exit 4; a missing
                             program in runc's words; refused before the
                             start and once the container stopped
Prints "ok ..." on success, "FAIL ..." and exits 1 otherwise.
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_wire  # noqa: E402  (the vsock handshake and framing)

TIMEOUT = agent_wire.TIMEOUT


class Conn(agent_wire.Conn):
    def ask(self, msg):
        """Send one request, return its one reply line."""
        self.send(msg)
        return json.loads(self._line())

    def read_to_eof(self):
        """A raw stream (ctr_stdio after ok) to its end."""
        out = self.buf
        while True:
            b = self.s.recv(65536)
            if not b:
                return out
            out += b


def request(uds, msg):
    c = Conn(uds)
    try:
        return c.ask(msg)
    finally:
        c.s.close()


def expect(cond, what):
    if not cond:
        print("FAIL " + what)
        sys.exit(1)


def wait_ready(uds):
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        try:
            if request(uds, {"type": "ping"}).get("type") == "pong":
                return
        except (OSError, EOFError, RuntimeError, ValueError):
            pass
        time.sleep(0.2)
    expect(False, "the agent never answered ping")


MOUNTS = [
    {"destination": "/proc", "type": "proc", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/dev", "type": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts",
     "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
    {"destination": "/etc/greeting", "type": "bind", "share": "b", "source": "ro/0", "options": ["rbind", "ro"]},
]
ENV = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"]


def create(uds, cid, args, **kw):
    msg = {"type": "ctr_create", "cid": cid, "rootfs": {"share": "r"}, "mounts": MOUNTS,
           "process": {"args": args, "env": ENV, "cwd": "/"}}
    msg.update(kw)
    return request(uds, msg)


def run(uds):
    script = ("echo out; echo err >&2; cat /etc/greeting; read x; echo got $x; cat /proc/sys/kernel/hostname; "
              "ls /dev/null; echo $$; touch /etc/greeting 2>/dev/null || echo ro; exit 7")
    r = create(uds, "c1", ["sh", "-c", script], hostname="box")
    expect(r.get("type") == "ctr_created" and r.get("cid") == "c1", f"ctr_create: {r}")
    streams = {}
    for s in ("stdin", "stdout", "stderr"):
        c = Conn(uds)
        a = c.ask({"type": "ctr_stdio", "cid": "c1", "stream": s})
        expect(a == {"type": "ok"}, f"ctr_stdio {s}: {a}")
        streams[s] = c
    r = request(uds, {"type": "ctr_stdio", "cid": "c1", "stream": "stdout"})
    expect(r.get("code") == "invalid_state", f"a second stdout: {r}")
    r = request(uds, {"type": "ctr_start", "cid": "c1"})
    expect(r == {"type": "ok"}, f"ctr_start: {r}")
    r = request(uds, {"type": "ctr_start", "cid": "c1"})
    expect(r.get("code") == "invalid_state", f"a second ctr_start: {r}")
    streams["stdin"].s.sendall(b"line\n")
    streams["stdin"].s.shutdown(socket.SHUT_WR)
    out = streams["stdout"].read_to_eof()
    err = streams["stderr"].read_to_eof()
    want = b"out\nhello-from-bind\ngot line\nbox\n/dev/null\n1\nro\n"
    expect(out == want, f"stdout {out!r}, want {want!r}")
    expect(err == b"err\n", f"stderr {err!r}")
    r = request(uds, {"type": "ctr_wait", "cid": "c1"})
    expect(r.get("type") == "exit" and r.get("exit_code") == 7 and r.get("signal") is None,
           f"ctr_wait: {r}")
    r = request(uds, {"type": "ctr_signal", "cid": "c1", "signal": "TERM"})
    expect(r.get("code") == "invalid_state" and "not running" in r.get("message", ""),
           f"signal after the exit: {r}")
    r = request(uds, {"type": "ctr_delete", "cid": "c1"})
    expect(r == {"type": "ok"}, f"ctr_delete: {r}")
    r = request(uds, {"type": "ctr_wait", "cid": "c1"})
    expect(r.get("code") == "not_found", f"wait after delete: {r}")
    print("ok run")


def refusals(uds):
    r = create(uds, "c2", ["nope"])
    expect(r.get("code") == "not_found" and
           r.get("message") == 'exec: "nope": executable file not found in $PATH', f"missing program: {r}")
    r = create(uds, "c2", ["/bin/nope"])
    expect(r.get("code") == "not_found" and "stat /bin/nope: no such file or directory" in r.get("message", ""),
           f"missing path: {r}")
    r = create(uds, "c3", ["true"])
    expect(r.get("type") == "ctr_created", f"ctr_create: {r}")
    r = create(uds, "c3", ["true"])
    expect(r.get("code") == "exists", f"a cid twice: {r}")
    r = request(uds, {"type": "ctr_delete", "cid": "c3"})
    expect(r == {"type": "ok"}, f"ctr_delete of a created container: {r}")
    r = request(uds, {"type": "ctr_create", "cid": "c4", "rootfs": {"share": "zz"},
                      "process": {"args": ["true"]}})
    expect(r.get("code") == "not_found" and "'zz'" in r.get("message", ""), f"a missing share: {r}")
    # the process's privileges and the container's sysctls fail by name
    r = create(uds, "c4", ["true"], sysctl={"kernel.domainname": "d", "kernel.no_such": "1"})
    expect(r.get("message") == 'ctr_create: sysctl kernel.no_such = "1" failed: the guest kernel has no such sysctl',
           f"a missing sysctl: {r}")
    proc = {"args": ["true"], "env": ENV, "cwd": "/", "capabilities": {"effective": ["CAP_KILL"]}}
    r = create(uds, "c4", ["true"], process=proc)
    expect("setting the capability sets failed" in r.get("message", ""), f"effective beyond permitted: {r}")
    proc = {"args": ["true"], "env": ENV, "cwd": "/",
            "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 1, "hard": 1 << 40}]}
    r = create(uds, "c4", ["true"], process=proc)
    expect(r.get("message", "").startswith("ctr_create: setting RLIMIT_NOFILE to soft 1, hard 1099511627776 failed"),
           f"a hard limit above the kernel's: {r}")
    print("ok refusals")


def kill(uds):
    r = create(uds, "c5", ["sh", "-c", "sleep 1000 & sleep 1000"])
    expect(r.get("type") == "ctr_created", f"ctr_create: {r}")
    r = request(uds, {"type": "ctr_start", "cid": "c5"})
    expect(r == {"type": "ok"}, f"ctr_start: {r}")
    time.sleep(1)
    r = request(uds, {"type": "ctr_signal", "cid": "c5", "signal": "KILL", "all": True})
    expect(r == {"type": "ok"}, f"ctr_signal KILL all: {r}")
    r = request(uds, {"type": "ctr_wait", "cid": "c5", "timeout_ms": 120000})
    expect(r.get("type") == "exit" and r.get("signal") == 9, f"ctr_wait: {r}")
    r = request(uds, {"type": "ctr_delete", "cid": "c5"})
    expect(r == {"type": "ok"}, f"ctr_delete: {r}")
    print("ok kill")


def ctr_exec(uds, cid, n, args):
    return request(uds, {"type": "ctr_exec", "cid": cid, "exec": n,
                         "process": {"args": args, "env": ENV, "cwd": "/"}})


def exec_(uds):
    r = create(uds, "c6", ["sleep", "1000"], hostname="inside")
    expect(r.get("type") == "ctr_created", f"ctr_create: {r}")
    init_pid = r.get("pid")
    r = ctr_exec(uds, "c6", 1, ["true"])
    expect(r.get("code") == "invalid_state", f"exec before the start: {r}")
    r = request(uds, {"type": "ctr_start", "cid": "c6"})
    expect(r == {"type": "ok"}, f"ctr_start: {r}")
    script = "echo $$; cat /proc/sys/kernel/hostname; tr '\\0' ' ' </proc/1/cmdline; echo; read x; echo got $x; exit 4"
    r = ctr_exec(uds, "c6", 1, ["sh", "-c", script])
    expect(r.get("type") == "ctr_created" and r.get("cid") == "c6" and r.get("exec") == 1 and
           isinstance(r.get("pid"), int) and r.get("pid") != init_pid, f"ctr_exec: {r}")
    r = ctr_exec(uds, "c6", 1, ["true"])
    expect(r.get("code") == "exists", f"exec 1 twice: {r}")
    streams = {}
    for s in ("stdin", "stdout", "stderr"):
        c = Conn(uds)
        a = c.ask({"type": "ctr_stdio", "cid": "c6", "exec": 1, "stream": s})
        expect(a == {"type": "ok"}, f"ctr_stdio exec 1 {s}: {a}")
        streams[s] = c
    r = request(uds, {"type": "ctr_start", "cid": "c6", "exec": 1})
    expect(r == {"type": "ok"}, f"ctr_start exec 1: {r}")
    streams["stdin"].s.sendall(b"to-exec\n")
    streams["stdin"].s.shutdown(socket.SHUT_WR)
    out = streams["stdout"].read_to_eof()
    err = streams["stderr"].read_to_eof()
    lines = out.decode(errors="replace").split("\n")
    # Its own pid in the container's namespace (the init is 1), the
    # container's hostname, the init's command line, what stdin carried.
    expect(len(lines) == 5 and lines[0].isdigit() and lines[0] != "1" and lines[1] == "inside" and
           lines[2] == "sleep 1000 " and lines[3] == "got to-exec" and lines[4] == "",
           f"exec stdout {out!r}")
    expect(err == b"", f"exec stderr {err!r}")
    r = request(uds, {"type": "ctr_wait", "cid": "c6", "exec": 1})
    expect(r.get("type") == "exit" and r.get("exec") == 1 and r.get("exit_code") == 4 and
           r.get("signal") is None, f"ctr_wait exec 1: {r}")
    r = request(uds, {"type": "ctr_wait", "cid": "c6", "exec": 1})
    expect(r.get("code") == "not_found", f"exec 1 after its exit was told: {r}")
    r = ctr_exec(uds, "c6", 2, ["nope"])
    expect(r.get("code") == "not_found" and
           r.get("message") == 'exec: "nope": executable file not found in $PATH', f"exec of a missing program: {r}")
    r = request(uds, {"type": "ctr_wait", "cid": "c6", "timeout_ms": 100})
    expect(r.get("code") == "timeout", f"the init runs on: {r}")
    r = request(uds, {"type": "ctr_signal", "cid": "c6", "signal": "KILL"})
    expect(r == {"type": "ok"}, f"ctr_signal KILL: {r}")
    r = request(uds, {"type": "ctr_wait", "cid": "c6", "timeout_ms": 120000})
    expect(r.get("type") == "exit" and r.get("signal") == 9, f"ctr_wait: {r}")
    r = ctr_exec(uds, "c6", 3, ["true"])
    expect(r.get("code") == "invalid_state", f"exec in a stopped container: {r}")
    r = request(uds, {"type": "ctr_delete", "cid": "c6"})
    expect(r == {"type": "ok"}, f"ctr_delete: {r}")
    print("ok exec")


def main():
    uds, what = sys.argv[1], sys.argv[2]
    wait_ready(uds)
    {"run": run, "refusals": refusals, "kill": kill, "exec": exec_}[what](uds)


if __name__ == "__main__":
    main()
