"""What the kilnd benchmarks share: a kilnd on a scratch state directory,
requests over its Unix socket, medians, and the nested harness's heartbeat."""
import http.client
import io
import json
import os
import socket
import statistics
import subprocess
import tarfile
import tempfile
import time

KILND = "build/kilnd"
# KILN_BENCH_VMM: another kiln-vmm for kilnd to start (an A/B against a saved build).
VMM = os.environ.get("KILN_BENCH_VMM", "build/kiln-vmm")
AGENT = "build/kiln-agent"
KERNEL = "build/kernel/vmlinux"
IMAGE = "build/rootfs/minimal-test.ext4"
TIMEOUT = 900


def heartbeat(who, what):
    # Progress for the nested harness's stall watchdog (tests/harness/run).
    state = os.environ.get("KILN_HARNESS_STATE")
    if state:
        with open(os.path.join(state, "progress"), "a") as f:
            f.write(f"{time.strftime('%T')} {who} {what}\n")


def nested():
    return bool(os.environ.get("KILN_IN_HARNESS"))


def where():
    return ("nested harness (TCG outer VM): 50-100x slower than real KVM" if nested()
            else "direct /dev/kvm")


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("kiln", timeout=TIMEOUT)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(self.path)


def call(sock, method, path, body=None):
    """One request on a fresh connection: (status, parsed JSON or None, seconds).
    Raises on a status of 300 or more."""
    c = UnixHTTP(sock)
    data = json.dumps(body).encode() if body is not None else None
    t0 = time.monotonic()
    c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    r = c.getresponse()
    raw = r.read()
    dt = time.monotonic() - t0
    c.close()
    doc = json.loads(raw) if raw and r.getheader("Content-Type", "").startswith("application/json") else None
    if r.status >= 300:
        raise RuntimeError(f"{method} {path}: HTTP {r.status}: {raw[:300]!r}")
    return r.status, doc, dt


def stats(v):
    v = sorted(v)
    return {"median": statistics.median(v), "p90": v[min(len(v) - 1, int(len(v) * 0.9))],
            "min": v[0], "n": len(v)}


def missing():
    """The first build product that is missing, or None."""
    for f in (KILND, VMM, AGENT, KERNEL, IMAGE):
        if not os.path.exists(f):
            return f
    return None


class Kilnd:
    """kilnd on a scratch state directory under /tmp (Unix sockets cannot be
    bound on the harness's 9p share); stopped and removed on exit."""

    def __init__(self, *args, kilnd=KILND, vmm=VMM, kernel=KERNEL, image=IMAGE):
        self.args = args
        self.kilnd, self.vmm, self.kernel, self.image = kilnd, vmm, kernel, image

    def __enter__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="kiln-bench.", dir="/tmp")
        d = self.tmp.name
        self.sock = os.path.join(d, "kiln.sock")
        self.state = os.path.join(d, "state")
        self.log = open(os.path.join(d, "kilnd.log"), "w")
        self.proc = subprocess.Popen([self.kilnd, "--socket", self.sock, "--state-dir", self.state,
                                      "--kernel", self.kernel, "--vmm", self.vmm, "--image", f"minimal={self.image}",
                                      "--boot-timeout", "600", "--idle-timeout", "0", "--quiet", *self.args],
                                     stdin=subprocess.DEVNULL, stderr=self.log)
        for _ in range(200):
            if os.path.exists(self.sock):
                break
            time.sleep(0.1)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.tmp.cleanup()

    def call(self, method, path, body=None):
        return call(self.sock, method, path, body)


def save(name, res):
    res.setdefault("harness", "nested" if os.environ.get("KILN_IN_HARNESS") else "direct")
    os.makedirs("build/bench", exist_ok=True)
    with open(f"build/bench/{name}.json", "w") as f:
        json.dump(res, f, indent=1)


def build_template(k, name, buildfile, query=""):
    """POST /v1/templates?name=NAME&QUERY with a context holding only the
    build file (bytes); the build's wall time in seconds. Raises unless its
    log ends in a result."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo("Kilnfile")
        info.size = len(buildfile)
        t.addfile(info, io.BytesIO(buildfile))
    c = UnixHTTP(k.sock)
    t0 = time.monotonic()
    c.request("POST", f"/v1/templates?name={name}{'&' + query if query else ''}", body=buf.getvalue(),
              headers={"Content-Type": "application/gzip"})
    r = c.getresponse()
    raw = r.read()
    dt = time.monotonic() - t0
    c.close()
    last = raw.strip().split(b"\n")[-1] if raw.strip() else b""
    if r.status != 200 or b'"type":"result"' not in last:
        raise RuntimeError(f"template build failed: HTTP {r.status}: {raw[-400:]!r}")
    return dt
