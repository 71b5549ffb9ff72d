#!/usr/bin/env python3
"""soak.py: kilnd under a seeded random mix of API operations, from several
concurrent clients, with kill -9 and --upgrade of kilnd at random moments,
checking invariants after every step (docs/testing.md, "The soak").

Run by tests/soak/run inside the nested harness; stdlib only, and plain
HTTP over kilnd's Unix socket (http.client), not kiln's own SDKs.

    soak.py --kilnd K --vmm V --kernel K --image IMG --state-dir D
            --minutes M --seed S --clients N --chaos-min S --chaos-max S

Exit 0 when no invariant failed; 1 with every failure and the operations
that led to it.
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

MAX_SANDBOXES = 2  # per client
MAX_CHECKPOINTS = 3  # per sandbox
GRACE_S = 20  # after a chaos event, failures are uncertain, not wrong


def heartbeat(what):
    """The nested harness's stall watchdog wants a line now and then."""
    st = os.environ.get("KILN_HARNESS_STATE")
    if st:
        with open(os.path.join(st, "progress"), "a") as f:
            f.write(f"{time.strftime('%H:%M:%S')}   beat soak {what}\n")


class ConnError(Exception):
    pass


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("kiln", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


def call(sock, method, path, body=None, raw=None, timeout=900):
    """One request on a connection of its own: (status, bytes)."""
    c = UnixHTTP(sock, timeout)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    try:
        c.request(method, path, body=data, headers={"Content-Type": "application/json"} if raw is None else {})
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException) as e:
        raise ConnError(f"{method} {path}: {e.__class__.__name__}: {e}")
    finally:
        c.close()


class Daemon:
    """The kilnd under test: started, killed, upgraded; its pid and the
    RSS and fds it had when it began serving."""

    def __init__(self, a):
        self.a = a
        self.sock = os.path.join(a.work, "kiln.sock")
        self.log = open(os.path.join(a.work, "kilnd.log"), "ab")
        self.proc = None
        self.windows = []  # (start, end) of chaos events
        self.lock = threading.Lock()
        self.baseline = None

    def argv(self, upgrade=False):
        a = self.a
        v = [a.kilnd, "--socket", self.sock, "--state-dir", a.state_dir, "--kernel", a.kernel,
             "--vmm", a.vmm, "--image", "minimal=" + a.image, "--boot-timeout", "300",
             "--stop-timeout", "120", "--idle-timeout", "0", "--max-cpus", "2"]
        return v + (["--upgrade"] if upgrade else [])

    def healthy(self, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            try:
                if call(self.sock, "GET", "/v1/health", timeout=10)[0] == 200:
                    return True
            except ConnError:
                pass
            time.sleep(0.2)
        return False

    def start(self, upgrade=False):
        p = subprocess.Popen(self.argv(upgrade), stdin=subprocess.DEVNULL, stdout=self.log,
                             stderr=self.log)
        old, self.proc = self.proc, p
        if old:
            try:
                rc = old.wait(timeout=300)
            except subprocess.TimeoutExpired:
                raise SystemExit("soak: the old kilnd did not exit within 300 s of --upgrade")
            if rc != 0:
                raise SystemExit(f"soak: the old kilnd exited {rc} after --upgrade, not 0")
        if not self.healthy():
            raise SystemExit("soak: kilnd did not answer /v1/health (see kilnd.log)")
        self.baseline = self.usage()

    def usage(self):
        pid = self.proc.pid
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        rss = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        return {"fds": fds, "rss_kib": rss}

    def chaos(self, kind):
        t0 = time.time()
        with self.lock:
            self.windows.append([t0, t0 + 3600])
        if kind == "kill9":
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None
            self.start()
        else:
            self.start(upgrade=True)
        with self.lock:
            self.windows[-1][1] = time.time() + GRACE_S

    def in_chaos(self, t0, t1):
        with self.lock:
            return any(s <= t1 and t0 <= e for s, e in self.windows)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=600)


class Sandbox:
    def __init__(self, sid, files=None):
        self.id = sid
        self.files = dict(files or {})  # path -> sha256 hex, None: unknown
        self.ckpts = {}  # name -> files at the checkpoint
        self.n = 0


class Report:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.uncertain = 0
        self.failures = []

    def count(self, op):
        with self.lock:
            self.counts[op] = self.counts.get(op, 0) + 1

    def fail(self, client, msg, history):
        with self.lock:
            self.failures.append((client, msg, list(history[-8:])))
        print(f"soak: FAILURE client {client}: {msg}", flush=True)


class Uncertain(Exception):
    pass


class Client(threading.Thread):
    def __init__(self, n, seed, d, rep, deadline):
        super().__init__(daemon=True)
        self.n, self.rng, self.d, self.rep, self.deadline = n, random.Random(seed), d, rep, deadline
        self.label = f"c{n}"
        self.sbs = {}
        self.history = []

    # -- requests --
    def api(self, method, path, body=None, raw=None, ok=(200,), op=None):
        t0 = time.time()
        self.history.append(f"{time.strftime('%H:%M:%S')} {method} {path}")
        while True:
            try:
                st, data = call(self.d.sock, method, path, body, raw)
            except ConnError as e:
                if self.d.in_chaos(t0, time.time()):
                    raise Uncertain(str(e))
                raise AssertionError(str(e))
            if st in (409, 503) and b'"busy"' in data:
                time.sleep(0.5)  # documented: a fork reading a checkpoint; retry
                continue
            break
        if st in ok:
            return st, data
        if st >= 500 and self.d.in_chaos(t0, time.time()):
            raise Uncertain(f"{method} {path}: {st} {data[:200]!r}")
        raise AssertionError(f"{method} {path}: HTTP {st}, wanted {ok}: {data[:300]!r}")

    def j(self, *a, **k):
        return json.loads(self.api(*a, **k)[1] or b"null")

    # -- the model against the API --
    def resync(self):
        """After an uncertain outcome: take the API's word for which of
        our sandboxes exist, forget what we cannot know, and start what
        a crash left stopped."""
        for _ in range(60):
            try:
                lst = self.j("GET", "/v1/sandboxes")["sandboxes"]
                break
            except Uncertain:
                time.sleep(2)
        mine = {s["id"]: s for s in lst if s.get("labels", {}).get("soak") == self.label}
        for sid in list(self.sbs):
            if sid not in mine:
                del self.sbs[sid]  # a create or fork cut short, or a delete that went through
        for sid, s in mine.items():
            sb = self.sbs.setdefault(sid, Sandbox(sid))
            sb.files = {p: None for p in sb.files}
            sb.ckpts = {k: {p: None for p in v} for k, v in sb.ckpts.items()}
            if s["state"] in ("crashed", "stopped"):
                self.j("POST", f"/v1/sandboxes/{sid}/start")
            elif s["state"] == "paused":
                self.j("POST", f"/v1/sandboxes/{sid}/resume")
            self.soak_dir(sb)

    def check_list(self):
        lst = self.j("GET", "/v1/sandboxes")["sandboxes"]
        mine = sorted(s["id"] for s in lst if s.get("labels", {}).get("soak") == self.label)
        if mine != sorted(self.sbs):
            raise AssertionError(f"the API lists {mine}, the client made {sorted(self.sbs)}")

    # -- operations --
    def sh(self, sb, script, user="user"):
        r = self.j("POST", f"/v1/sandboxes/{sb.id}/exec", {"argv": ["sh", "-c", script], "user": user})
        if r["exit_code"] != 0:
            raise AssertionError(f"exec {script!r}: exit {r['exit_code']}: {r.get('stderr', '')[:200]}")
        return r["stdout"]

    def op_create(self):
        body = {"image": "minimal", "memory_mib": 128, "labels": {"soak": self.label}}
        r = self.j("POST", "/v1/sandboxes", body, ok=(201,))
        sb = self.sbs[r["id"]] = Sandbox(r["id"])
        self.soak_dir(sb)

    def soak_dir(self, sb):
        # synced: a cold boot after a crash (kilnd killed during a restore)
        # starts from the disk, where unsynced guest writes never were
        self.sh(sb, "mkdir -p /soak && chmod 777 /soak && sync", user="root")

    def op_exec(self, sb):
        tok = f"t{self.rng.getrandbits(32):x}"
        out = self.sh(sb, f"echo {tok}")
        if out.strip() != tok:
            raise AssertionError(f"exec echo {tok}: stdout {out!r}")

    def op_write(self, sb):
        sb.n += 1
        path = f"/soak/f{sb.n % 6}"
        data = self.rng.randbytes(self.rng.choice([0, 1, 4096, 65536, 300000]))
        sb.files[path] = None  # unknown until the answer
        self.api("PUT", f"/v1/sandboxes/{sb.id}/files?path={path}", raw=data, ok=(200, 201, 204))
        sb.files[path] = hashlib.sha256(data).hexdigest()

    def op_read(self, sb):
        known = [p for p, h in sb.files.items() if h]
        if not known:
            return self.op_write(sb)
        path = self.rng.choice(known)
        _, data = self.api("GET", f"/v1/sandboxes/{sb.id}/files?path={path}")
        if hashlib.sha256(data).hexdigest() != sb.files[path]:
            raise AssertionError(f"{path}: read back {len(data)} bytes that differ from what was written")

    def op_process(self, sb):
        r = self.j("POST", f"/v1/sandboxes/{sb.id}/processes",
                   {"argv": ["sh", "-c", "for i in 1 2 3 4 5; do echo $i; sleep 0.3; done"]}, ok=(201,))
        base = f"/v1/sandboxes/{sb.id}/processes/{r['id']}/output"
        out, seq, exit_ev = "", 0, None
        for _ in range(30):  # reattach from where the last read ended, until exit
            _, data = self.api("GET", f"{base}?from={seq}")
            for line in data.decode().splitlines():
                ev = json.loads(line)
                if ev["type"] == "stdout":
                    out += ev["data"]
                    seq = ev["seq"] + len(ev["data"].encode())
                elif ev["type"] == "exit":
                    exit_ev = ev
            if exit_ev:
                break
        if out != "1\n2\n3\n4\n5\n" or not exit_ev or exit_ev["exit_code"] != 0:
            raise AssertionError(f"process output {out!r}, exit {exit_ev}")

    def op_checkpoint(self, sb):
        if len(sb.ckpts) >= MAX_CHECKPOINTS:
            name = self.rng.choice(sorted(sb.ckpts))
            self.api("DELETE", f"/v1/sandboxes/{sb.id}/checkpoints/{name}", ok=(204,))
            del sb.ckpts[name]
        sb.n += 1
        name = f"k{sb.n}"
        self.api("POST", f"/v1/sandboxes/{sb.id}/checkpoints", {"name": name}, ok=(200, 201))
        sb.ckpts[name] = dict(sb.files)

    def op_restore(self, sb):
        if not sb.ckpts:
            return self.op_checkpoint(sb)
        name = self.rng.choice(sorted(sb.ckpts))
        sb.files = {p: None for p in sb.files}
        self.api("POST", f"/v1/sandboxes/{sb.id}/checkpoints/{name}/restore")
        sb.files = dict(sb.ckpts[name])

    def op_fork(self, sb):
        if not sb.ckpts or len(self.sbs) >= MAX_SANDBOXES:
            return self.op_exec(sb)
        name = self.rng.choice(sorted(sb.ckpts))
        r = self.j("POST", "/v1/sandboxes",
                   {"from_checkpoint": f"{sb.id}/{name}", "labels": {"soak": self.label}}, ok=(201,))
        self.sbs[r["id"]] = Sandbox(r["id"], sb.ckpts[name])
        self.op_read(self.sbs[r["id"]])

    def op_pause(self, sb):
        self.api("POST", f"/v1/sandboxes/{sb.id}/pause")
        self.api("POST", f"/v1/sandboxes/{sb.id}/exec", {"argv": ["true"]}, ok=(409,))
        self.api("POST", f"/v1/sandboxes/{sb.id}/resume")
        self.op_exec(sb)

    def op_hibernate(self, sb):
        self.api("POST", f"/v1/sandboxes/{sb.id}/hibernate")
        if self.rng.random() < 0.5:
            self.api("POST", f"/v1/sandboxes/{sb.id}/wake")
        self.op_read(sb)  # an implicit wake otherwise

    def op_stop_start(self, sb):
        self.api("POST", f"/v1/sandboxes/{sb.id}/stop")
        self.api("POST", f"/v1/sandboxes/{sb.id}/start")
        self.op_read(sb)

    def op_delete(self, sb):
        self.api("DELETE", f"/v1/sandboxes/{sb.id}", ok=(204,))
        del self.sbs[sb.id]
        self.api("GET", f"/v1/sandboxes/{sb.id}", ok=(404,))

    OPS = [("exec", 6), ("write", 6), ("read", 6), ("process", 3), ("checkpoint", 2),
           ("restore", 2), ("fork", 2), ("pause", 2), ("hibernate", 2), ("stop_start", 1),
           ("delete", 1)]

    def step(self):
        if len(self.sbs) < 1 or (len(self.sbs) < MAX_SANDBOXES and self.rng.random() < 0.1):
            op, sb = "create", None
        else:
            op = self.rng.choices([o for o, _ in self.OPS], [w for _, w in self.OPS])[0]
            sb = self.sbs[self.rng.choice(sorted(self.sbs))]
        getattr(self, "op_" + op)(*([sb] if sb else []))
        self.rep.count(op)

    def run(self):
        while time.time() < self.deadline:
            try:
                self.step()
                self.check_list()
            except Uncertain as e:
                with self.rep.lock:
                    self.rep.uncertain += 1
                print(f"soak: client {self.n}: uncertain during chaos: {e}", flush=True)
                for attempt in range(5):  # chaos may strike again meanwhile
                    try:
                        self.resync()
                        break
                    except Uncertain:
                        time.sleep(2)
                    except Exception as e2:  # noqa: BLE001 - any failure here is the soak's finding
                        self.rep.fail(self.n, f"resync: {e2}", self.history)
                        return
            except Exception as e:  # noqa: BLE001
                self.rep.fail(self.n, str(e), self.history)
                try:
                    self.resync()
                except Exception:  # noqa: BLE001
                    return
        for sid in list(self.sbs):
            try:
                self.op_delete(self.sbs[sid])
            except Exception as e:  # noqa: BLE001
                self.rep.fail(self.n, f"final delete of {sid}: {e}", self.history)


def leftovers(d, a):
    """What must be gone once every sandbox was deleted."""
    found = []
    for name, pat in (("kiln-vmm", ["-x", "kiln-vmm"]), ("keeper", ["-f", "kilnd --keeper"]),
                      ("passt", ["-x", "passt"])):
        r = subprocess.run(["pgrep"] + pat, capture_output=True, text=True)
        if r.stdout.strip():
            found.append(f"{name} processes: {r.stdout.split()}")
    sdir = os.path.join(a.state_dir, "sandboxes")
    if os.path.isdir(sdir) and os.listdir(sdir):
        found.append(f"sandbox directories: {os.listdir(sdir)}")
    st, data = call(d.sock, "GET", "/v1/sandboxes")
    if st != 200 or json.loads(data)["sandboxes"]:
        found.append(f"GET /v1/sandboxes: {st} {data[:200]!r}")
    return found


def main():
    p = argparse.ArgumentParser()
    for f in ("kilnd", "vmm", "kernel", "image", "state-dir", "work"):
        p.add_argument("--" + f, required=True)
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    p.add_argument("--clients", type=int, default=3)
    p.add_argument("--chaos-min", type=float, default=120)
    p.add_argument("--chaos-max", type=float, default=300)
    a = p.parse_args()
    print(f"soak: seed {a.seed}, {a.minutes} min, {a.clients} clients, chaos every "
          f"{a.chaos_min:.0f}-{a.chaos_max:.0f} s, state {a.state_dir} "
          f"(rerun: SOAK_SEED={a.seed})", flush=True)
    rng = random.Random(a.seed)
    d = Daemon(a)
    d.start()
    first = d.baseline
    print(f"soak: kilnd up: {first['fds']} fds, RSS {first['rss_kib']} KiB", flush=True)
    rep = Report()
    t_start = time.time()
    deadline = t_start + a.minutes * 60
    clients = [Client(i, rng.getrandbits(32), d, rep, deadline) for i in range(a.clients)]
    for c in clients:
        c.start()
    chaos = []
    while True:
        t = time.time() + rng.uniform(a.chaos_min, a.chaos_max)
        kind = rng.choice(["kill9", "upgrade"])
        while time.time() < min(t, deadline) and any(c.is_alive() for c in clients):
            time.sleep(1)
            if int(time.time()) % 30 == 0:
                heartbeat(f"{sum(rep.counts.values())} operations")
        if time.time() >= deadline - 30 or not any(c.is_alive() for c in clients):
            break
        print(f"soak: chaos: {kind} at {time.time() - t_start:.0f} s", flush=True)
        d.chaos(kind)
        chaos.append(kind)
    for c in clients:
        while c.is_alive():
            c.join(30)
            heartbeat("finishing")
    end = d.usage()
    if d.baseline and end["fds"] > d.baseline["fds"] + 2:
        rep.fail("-", f"kilnd holds {end['fds']} fds, {d.baseline['fds']} when it began", [])
    for what in leftovers(d, a):
        rep.fail("-", f"left over: {what}", [])
    rc = d.stop()
    if rc != 0:
        rep.fail("-", f"kilnd exited {rc} on SIGTERM, not 0", [])
    total = sum(rep.counts.values())
    print(f"soak: {total} operations in {(time.time() - t_start) / 60:.1f} min: "
          + ", ".join(f"{k} {v}" for k, v in sorted(rep.counts.items())), flush=True)
    print(f"soak: chaos: {', '.join(chaos) or 'none'}; {rep.uncertain} uncertain outcomes", flush=True)
    print(f"soak: kilnd at its start {d.baseline['fds']} fds, RSS {d.baseline['rss_kib']} KiB; "
          f"at the end {end['fds']} fds, RSS {end['rss_kib']} KiB "
          f"(the first kilnd: {first['fds']} fds, RSS {first['rss_kib']} KiB)", flush=True)
    for client, msg, hist in rep.failures:
        print(f"soak: FAILED (client {client}): {msg}")
        for h in hist:
            print(f"    after {h}")
    print(f"soak: {'PASS' if not rep.failures else 'FAIL'} (seed {a.seed})", flush=True)
    return 1 if rep.failures else 0


if __name__ == "__main__":
    sys.exit(main())
