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
import gzip
import hashlib
import http.client
import io
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time

MAX_SANDBOXES = 2  # per client
MAX_CHECKPOINTS = 3  # per sandbox
GRACE_S = 20  # after a chaos event, failures are uncertain, not wrong
POOL_MEMORY_MIB = 96  # a create of this size fits the warm pool
GUEST_PORT = 8080  # busybox httpd in the guest, for ports and previews
FIREWALLS = [  # rule sets a passt sandbox is given, as PUT
    {},
    {"outbound_internet": True},
    {"allow": [{"cidr": "10.0.0.0/8", "proto": "tcp", "ports": "80-443"}], "deny": [{"cidr": "203.0.113.7"}]},
    {"allow": [{"host": "*.example.com", "ports": 443}], "dns": []},
]


def http_get(port, path, headers=None, timeout=60):
    """A plain TCP HTTP GET on 127.0.0.1 (a forwarded port, the preview
    listener): (status, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def context_targz(files):
    """A build context: {name: text} as a tar.gz."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), 0o644
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


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
        with socket.socket() as s:  # a free port for the preview listener
            s.bind(("127.0.0.1", 0))
            self.preview_port = s.getsockname()[1]

    def argv(self, upgrade=False):
        a = self.a
        v = [a.kilnd, "--socket", self.sock, "--state-dir", a.state_dir, "--kernel", a.kernel,
             "--vmm", a.vmm, "--image", "minimal=" + a.image, "--boot-timeout", "300",
             "--stop-timeout", "120", "--idle-timeout", "0", "--max-cpus", "2",
             "--preview-listen", f"127.0.0.1:{self.preview_port}",
             "--pool", f"minimal=1,memory_mib={POOL_MEMORY_MIB}"]
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
        self.pool_ready()
        self.baseline = self.usage()

    def pool_ready(self, timeout=600):
        """Wait until the warm pool holds its sandbox, so descriptors are
        compared with the pool full both times."""
        end = time.time() + timeout
        while time.time() < end:
            try:
                st, data = call(self.sock, "GET", "/v1/health", timeout=10)
                pools = json.loads(data)["pools"] if st == 200 else []
                if pools and all(p["ready"] == p["size"] for p in pools):
                    return True
            except (ConnError, ValueError, KeyError):
                pass
            time.sleep(1)
        print("soak: the warm pool did not fill within "
              f"{timeout} s (see kilnd.log)", flush=True)
        return False

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
    def __init__(self, sid, files=None, network="none", template=None):
        self.id = sid
        self.files = dict(files or {})  # path -> sha256 hex, None: unknown
        self.ckpts = {}  # name -> files at the checkpoint
        self.n = 0
        self.network = network
        self.rules = None  # the canonical firewall rules last PUT; None: unknown
        self.template = template  # the template it was created from


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
        self.tpl = f"soak-{self.label}"  # this client's template
        self.tpl_state = None  # None: none; a token: built with it; "?": unknown

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
            sb = self.sbs.setdefault(sid, Sandbox(sid, network=s.get("network", "none"),
                                                  template=s.get("template")))
            sb.files = {p: None for p in sb.files}
            sb.ckpts = {k: {p: None for p in v} for k, v in sb.ckpts.items()}
            sb.rules = None
            if s["state"] in ("crashed", "stopped"):
                self.j("POST", f"/v1/sandboxes/{sid}/start")
            elif s["state"] == "paused":
                self.j("POST", f"/v1/sandboxes/{sid}/resume")
            self.soak_dir(sb)
        if self.tpl_state == "?":
            st, _ = self.api("GET", f"/v1/templates/{self.tpl}", ok=(200, 404))
            self.tpl_state = "?" if st == 200 else None  # its token is not known

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
        kind = self.rng.choices(["image", "pool", "passt", "template"], [4, 2, 2, 2])[0]
        if kind == "template" and self.tpl_state is None:
            kind = "image"
        body = {"image": "minimal", "memory_mib": 128, "labels": {"soak": self.label}}
        if kind == "pool":
            body["memory_mib"] = POOL_MEMORY_MIB  # fits the pool (a miss boots)
        elif kind == "passt":
            body["network"] = "passt"
        elif kind == "template":
            body = {"template": self.tpl, "labels": {"soak": self.label}}
        st, data = self.api("POST", "/v1/sandboxes", body, ok=(201, 404) if kind == "template" else (201,))
        if st == 404:  # the template is gone (a chaos event cut its build short)
            self.tpl_state = None
            return self.op_create()
        r = json.loads(data)
        frm = (r.get("boot") or {}).get("from")
        if kind == "pool" and frm == "pool":
            self.rep.count("create_from_pool")
        if kind == "template" and (r.get("template") != self.tpl or frm not in ("template", "kernel")):
            raise AssertionError(f"a create from template {self.tpl}: template {r.get('template')!r}, "
                                 f"boot.from {frm!r}")
        sb = self.sbs[r["id"]] = Sandbox(r["id"], network=body.get("network", "none"),
                                         template=body.get("template"))
        if sb.network == "passt":
            sb.rules = self.j("GET", f"/v1/sandboxes/{sb.id}/firewall")["rules"]
        self.soak_dir(sb)
        if kind == "template" and self.tpl_state != "?":
            got = self.sh(sb, "cat /etc/soak-template").strip()
            if got != self.tpl_state:
                raise AssertionError(f"a sandbox of template {self.tpl} reads {got!r}, "
                                     f"the build wrote {self.tpl_state!r}")
        self.rep.count("create_" + kind)

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
        fk = self.sbs[r["id"]] = Sandbox(r["id"], sb.ckpts[name], network=sb.network)
        fk.rules = sb.rules  # a fork starts with its source's current rules
        self.op_read(fk)

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

    # -- ports, previews, firewall, templates --
    def httpd(self, sb):
        """busybox httpd on the guest's GUEST_PORT serving a fresh token;
        one already running (the port taken) serves the same directory."""
        tok = f"p{self.rng.getrandbits(48):x}"
        self.sh(sb, f"mkdir -p /tmp/www && echo {tok} >/tmp/www/index.html && "
                    f"(setsid httpd -p 127.0.0.1:{GUEST_PORT} -h /tmp/www </dev/null >/dev/null 2>&1 &)")
        return tok

    def fetch_token(self, what, get, tok):
        """GET until httpd listens (a connection closed at once, or 502
        from the preview listener, until it does): its body is tok."""
        last = None
        for _ in range(60):
            try:
                st, body = get()
            except (OSError, http.client.HTTPException) as e:
                last = f"{e.__class__.__name__}: {e}"
                time.sleep(0.5)
                continue
            if st == 502:
                last = "502"
                time.sleep(0.5)
                continue
            if st != 200 or body.strip() != tok.encode():
                raise AssertionError(f"{what}: HTTP {st} {body[:200]!r}, wanted 200 {tok}")
            return
        raise AssertionError(f"{what}: httpd never answered ({last})")

    def op_port(self, sb):
        tok = self.httpd(sb)
        r = self.j("POST", f"/v1/sandboxes/{sb.id}/ports", {"guest_port": GUEST_PORT}, ok=(201,))
        hp = r["host_port"]
        self.fetch_token(f"127.0.0.1:{hp} -> guest {GUEST_PORT}", lambda: http_get(hp, "/"), tok)
        self.api("DELETE", f"/v1/sandboxes/{sb.id}/ports/{hp}", ok=(204,))
        if any(m["host_port"] == hp for m in self.j("GET", f"/v1/sandboxes/{sb.id}/ports")["ports"]):
            raise AssertionError(f"port {hp} is still listed after its DELETE")

    def op_preview(self, sb):
        tok = self.httpd(sb)
        st, data = self.api("POST", f"/v1/sandboxes/{sb.id}/previews", {"port": GUEST_PORT}, ok=(201, 409))
        if st == 409:  # one left by a request a chaos event cut short
            self.api("DELETE", f"/v1/sandboxes/{sb.id}/previews/{GUEST_PORT}", ok=(204,))
            data = self.api("POST", f"/v1/sandboxes/{sb.id}/previews", {"port": GUEST_PORT}, ok=(201,))[1]
        r = json.loads(data)
        path = f"/preview/{sb.id}/{GUEST_PORT}/"
        pp = self.d.preview_port
        self.fetch_token(f"preview {path}", lambda: http_get(pp, path, {"X-Kiln-Preview-Token": r["token"]}), tok)
        st, _ = http_get(pp, path)
        if st != 401:
            raise AssertionError(f"preview {path} without its token: HTTP {st}, wanted 401")
        self.api("DELETE", f"/v1/sandboxes/{sb.id}/previews/{GUEST_PORT}", ok=(204,))
        st, _ = http_get(pp, path, {"X-Kiln-Preview-Token": r["token"]})
        if st != 404:
            raise AssertionError(f"preview {path} after its DELETE: HTTP {st}, wanted 404")

    def op_firewall(self, sb):
        rules = self.rng.choice(FIREWALLS)
        if sb.network != "passt":
            st, data = self.api("PUT", f"/v1/sandboxes/{sb.id}/firewall", rules, ok=(409,))
            if b"wrong_state" not in data:
                raise AssertionError(f"PUT firewall of a sandbox without network: {data[:200]!r}")
            return
        if sb.rules is not None:  # kept across hibernation, restore, kilnd's restarts
            got = self.j("GET", f"/v1/sandboxes/{sb.id}/firewall")["rules"]
            if got != sb.rules:
                raise AssertionError(f"GET firewall {got}, the last PUT answered {sb.rules}")
        sb.rules = None
        r = self.j("PUT", f"/v1/sandboxes/{sb.id}/firewall", rules)
        if not r["applied"]:
            raise AssertionError(f"PUT firewall of a running sandbox: not applied: {r}")
        sb.rules = r["rules"]
        got = self.j("GET", f"/v1/sandboxes/{sb.id}/firewall")
        if got["rules"] != sb.rules or not got["running"]:
            raise AssertionError(f"GET firewall {got['rules']} (running {got['running']}), PUT answered {sb.rules}")

    def op_template(self, sb):
        users = [s for s in self.sbs.values() if s.template == self.tpl]
        if self.tpl_state is not None and not users and self.rng.random() < 0.5:
            st, data = self.api("DELETE", f"/v1/templates/{self.tpl}", ok=(204, 404, 409))
            if st == 409 and b"in_use" in data:
                return  # a fork of one of its sandboxes uses it too
            if st == 409:
                raise AssertionError(f"DELETE template {self.tpl}: {data[:200]!r}")
            self.tpl_state = None
            self.api("GET", f"/v1/templates/{self.tpl}", ok=(404,))
            return
        if users:  # a rebuild would be 409 in_use: make a sandbox of it instead
            return self.op_exec(sb)
        tok = f"t{self.rng.getrandbits(48):x}"
        ctx = context_targz({"Kilnfile": f"FROM minimal\nRUN echo {tok} >/etc/soak-template\n"})
        self.tpl_state = "?"
        _, data = self.api("POST", f"/v1/templates?name={self.tpl}", raw=ctx)
        lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
        if not lines or lines[-1].get("type") != "result":
            raise AssertionError(f"template build {self.tpl}: last line {lines[-1] if lines else None}")
        self.tpl_state = tok

    def op_delete(self, sb):
        self.api("DELETE", f"/v1/sandboxes/{sb.id}", ok=(204,))
        del self.sbs[sb.id]
        self.api("GET", f"/v1/sandboxes/{sb.id}", ok=(404,))

    OPS = [("exec", 6), ("write", 6), ("read", 6), ("process", 3), ("checkpoint", 2),
           ("restore", 2), ("fork", 2), ("pause", 2), ("hibernate", 2), ("stop_start", 1),
           ("delete", 1), ("port", 2), ("preview", 2), ("firewall", 2), ("template", 1)]

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
        try:
            self.api("DELETE", f"/v1/templates/{self.tpl}", ok=(204, 404))
        except Exception as e:  # noqa: BLE001
            self.rep.fail(self.n, f"final delete of template {self.tpl}: {e}", self.history)


def api_leftovers(d):
    """What the API must no longer list once every client deleted its own."""
    found = []
    for path, key in (("/v1/sandboxes", "sandboxes"), ("/v1/templates", "templates")):
        st, data = call(d.sock, "GET", path)
        if st != 200 or json.loads(data)[key]:
            found.append(f"GET {path}: {st} {data[:200]!r}")
    return found


def leftovers(a):
    """What must be gone once kilnd stopped (it removes its pool's)."""
    found = []
    for name, pat in (("kiln-vmm", ["-x", "kiln-vmm"]), ("keeper", ["-f", "kilnd --keeper"]),
                      ("passt", ["-x", "passt"])):
        r = subprocess.run(["pgrep"] + pat, capture_output=True, text=True)
        if r.stdout.strip():
            found.append(f"{name} processes: {r.stdout.split()}")
    sdir = os.path.join(a.state_dir, "sandboxes")
    if os.path.isdir(sdir) and os.listdir(sdir):
        found.append(f"sandbox directories: {os.listdir(sdir)}")
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
    d.pool_ready()
    end = d.usage()
    if d.baseline and end["fds"] > d.baseline["fds"] + 2:
        rep.fail("-", f"kilnd holds {end['fds']} fds, {d.baseline['fds']} when it began", [])
    for what in api_leftovers(d):
        rep.fail("-", f"left over: {what}", [])
    rc = d.stop()
    if rc != 0:
        rep.fail("-", f"kilnd exited {rc} on SIGTERM, not 0", [])
    for what in leftovers(a):
        rep.fail("-", f"left over: {what}", [])
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
