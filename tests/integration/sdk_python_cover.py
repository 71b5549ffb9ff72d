"""Every call group of the Python SDK against a real kilnd, on one sandbox
and its fork, and a template built from a local directory with one
sandbox from it (tests/integration/sdk_python_tests.sh runs it with the
venv's python, the SDK installed by pip).

    sdk_python_cover.py KILND_PID WORKDIR QUICKSTART_PY

$KILN_SOCKET names kilnd's socket. QUICKSTART_PY (sdk/python/README.md's
quickstart, extracted) runs first; its output lines come prefixed "qs| ". Reports
in cmocka's lines as every kiln test runner does ("[       OK ] ..." per
check, "[  FAILED  ] ..." for each failure), the last "N passed, N
failed"; exits 1 when one failed. The last step
SIGKILLs kilnd during a stream: the stream must end in one
KilnConnectionError, not hang.
"""

import asyncio
import contextlib
import io
import os
import runpy
import signal
import subprocess
import sys
import time
import warnings

import kiln
from kiln import errors
from kiln.aio import AsyncKiln

KILND_PID = int(sys.argv[1])
WORK = sys.argv[2]
failures: list[str] = []
passes = 0
T0 = time.monotonic()


def beat(what: str) -> None:
    """The nested harness's stall watchdog wants a line now and then."""
    state = os.environ.get("KILN_HARNESS_STATE")
    if state:
        with open(os.path.join(state, "progress"), "a") as f:
            f.write(time.strftime("%H:%M:%S") + f"   beat sdk-python {what}\n")
    print(f"-- {time.monotonic() - T0:6.1f} s {what}", flush=True)


def check(cond: object, what: str) -> None:
    global passes
    if cond:
        print(f"[       OK ] {what}", flush=True)
        passes += 1
    else:
        print(f"[  FAILED  ] {what}", flush=True)
        failures.append(what)


def raises(cls: type, fn, what: str) -> None:
    try:
        fn()
    except cls as e:
        check(True, f"{what} ({type(e).__name__}: {e.message})")
        return
    except Exception as e:  # noqa: BLE001 - reported
        check(False, f"{what}: raised {type(e).__name__}: {e}")
        return
    check(False, f"{what}: no exception")


beat("the README quickstart")
qs_out = io.StringIO()
try:
    with contextlib.redirect_stdout(qs_out):
        runpy.run_path(sys.argv[3], run_name="__main__")
    check(True, "the quickstart ran")
except Exception as e:  # noqa: BLE001 - reported
    check(False, f"the quickstart: {type(e).__name__}: {e}")
for line in qs_out.getvalue().splitlines():
    print(f"qs| {line}", flush=True)

k = kiln.Kiln(timeout=600)
beat("health, metrics, images")
check(k.health()["status"] == "ok", "health")
check("kiln_boots_total" in k.metrics(), "metrics")
check(any(i["name"] == "minimal" for i in k.images()), "images lists minimal")
raises(errors.ImageNotFoundError, lambda: k.sandboxes.create(image="nosuch"), "create of an unknown image")
raises(errors.UnknownFieldError, lambda: k.sandboxes.create(image="minimal", colour="red"),
       "unknown fields are not filtered: kilnd refuses them")

beat("create")
# The harness keeps the state directory on tmpfs, where what the guest
# writes is charged to its cgroup (docs/api.md, disk_mib): room for that.
sb = k.sandboxes.create(image="minimal", labels={"sdk": "python"}, env={"GREETING": "hi"},
                        limits={"memory_max_mib": 512})
check(sb.state == "running", f"created {sb.id}")
check([s.id for s in k.sandboxes.list(labels={"sdk": "python"})] == [sb.id], "list by label")
check(k.sandboxes.get(sb.id).info["labels"] == {"sdk": "python"}, "get")
raises(errors.SandboxNotFoundError, lambda: k.sandboxes.get("0123456789ab"), "get of an unknown id")

beat("exec")
r = sb.exec(["sh", "-c", "echo $GREETING; echo err >&2; exit 3"])
check((r.exit_code, r.stdout, r.stderr) == (3, "hi\n", "err\n"), f"exec argv: non-zero exit is a result ({r})")
r = sb.exec("read x; echo got $x | tr a-z A-Z", stdin="abc\n")
check(r.stdout == "GOT ABC\n", f"exec shell string with stdin ({r.stdout!r})")
r = sb.exec(["sh", "-c", "printf '\\377\\000'"])
check(r.stdout_raw == b"\xff\x00", "exec: raw bytes of non-UTF-8 output")
raises(errors.NotFoundError, lambda: sb.exec(["/no/such/program"]), "exec of a missing program")
lines: list[str] = []
r = sb.exec("for i in 1 2 3; do echo line $i; done", on_stdout=lines.append)
check("".join(lines) == r.stdout == "line 1\nline 2\nline 3\n" and r.exit_code == 0, "exec with on_stdout callback")
evs = list(sb.exec_stream(["sh", "-c", "echo a; sleep 0.3; echo b >&2; exit 2"]))
check([e.type for e in evs] == ["stdout", "stderr", "exit"] and evs[-1].exit_code == 2,
      f"exec_stream events ({[e.type for e in evs]})")
# A command silent for longer than the client's timeout: that bounds only
# the head, which kilnd sends without waiting for the first output.
t1 = time.monotonic()
try:
    quiet = kiln.Kiln(timeout=2.0).sandboxes.get(sb.id)
    evs = list(quiet.exec_stream("sleep 5; echo late"))
    check([e.type for e in evs] == ["stdout", "exit"] and evs[0].text == "late\n",
          f"exec_stream of a command silent past Kiln(timeout=2.0) ({[e.type for e in evs]}, "
          f"{time.monotonic() - t1:.1f} s)")
except Exception as e:  # noqa: BLE001 - reported
    check(False, f"exec_stream of a command silent past Kiln(timeout=2.0): {type(e).__name__}: {e}")
rr = sb.run_code("echo ran; result set '{\"n\": 42}'", "bash")
check(rr.result == {"n": 42} and rr.stdout == "ran\n", f"run_code bash result ({rr.result!r}, {rr.error})")
revs = list(sb.run_code_stream("result error 'bad input'", "bash"))
check(revs[-1].type == "result" and revs[-1].error is not None and revs[-1].error.message == "bad input",
      "run_code_stream ends with the result event")

beat("files")
fs = sb.files
check(fs.write("/home/user/a/b.txt", "héllo\n", parents=True)["bytes"] == 7, "write text with parents")
check(fs.read_text("/home/user/a/b.txt") == "héllo\n", "read_text")
fs.write("/home/user/bin.dat", bytes(range(256)))
check(fs.read("/home/user/bin.dat", offset=250) == bytes(range(250, 256)), "read bytes from an offset")
local = os.path.join(WORK, "up.bin")
blob = os.urandom(3 * 1024 * 1024 + 17)
with open(local, "wb") as f:
    f.write(blob)
check(fs.upload("/home/user/up.bin", local)["bytes"] == len(blob), "upload a local file (Content-Length)")
fs.upload("/home/user/up2.bin", io.BytesIO(blob[:100000]))
back = os.path.join(WORK, "down.bin")
check(fs.download("/home/user/up.bin", back) == len(blob) and open(back, "rb").read() == blob,
      "download what was uploaded, byte for byte")
st = fs.stat("/home/user/up.bin")
check(st.kind == "file" and st.size == len(blob), f"stat ({st})")
fs.mkdir("/home/user/d/e", parents=True, mode=0o700)
check(fs.stat("/home/user/d/e").mode == 0o700, "mkdir with mode")
fs.rename("/home/user/up2.bin", "/home/user/d/moved.bin")
names = sorted(e.path for e in fs.list("/home/user/d", depth=2))
check(names == ["/home/user/d/e", "/home/user/d/moved.bin"], f"rename and list ({names})")
fs.remove("/home/user/d", recursive=True)
raises(errors.NotFoundError, lambda: fs.stat("/home/user/d"), "remove recursive")
raises(errors.IsDirectoryError, lambda: fs.read("/home/user"), "read of a directory")
tree = os.path.join(WORK, "tree")
os.makedirs(os.path.join(tree, "sub"))
with open(os.path.join(tree, "sub", "x.txt"), "w") as f:
    f.write("x\n")
os.symlink("sub/x.txt", os.path.join(tree, "link"))
up = fs.upload_dir(tree, "/home/user/tree")
check(up["files"] == 1 and up["symlinks"] == 1, f"upload_dir ({up})")
check(sb.exec("cat /home/user/tree/link").stdout == "x\n", "upload_dir: the guest reads the tree")
got = fs.download_dir("/home/user/tree", os.path.join(WORK, "tree-back"))
check(got["files"] == 1 and os.readlink(os.path.join(WORK, "tree-back", "link")) == "sub/x.txt",
      f"download_dir ({got})")
fs.mkdir("/home/user/w")
with fs.watch("/home/user/w") as watch:
    first = next(watch)
    fs.write("/home/user/w/new.txt", "n")
    ev = next(e for e in watch if e.type == "create")
check(first.type == "watching" and ev.path == "new.txt", f"watch: watching, then create ({ev})")

beat("processes")
ps = sb.processes
p = ps.spawn(["sh", "-c", "while read l; do echo got $l; done; echo bye"])
p.write_stdin("one\n")
out = p.output()
text = ""
for e in out:
    if isinstance(e, kiln.OutputEvent):
        text += e.text
    if "got one" in text:
        break
out.close()
seq = out.next_seq
check(text == "got one\n" and seq == 8, f"output, then detach ({text!r}, next_seq {seq})")
p.write_stdin("two\n", eof=True)
check(p.wait(timeout_ms=60000)["exit_code"] == 0, "write_stdin with eof, wait")
rest = "".join(e.text for e in p.output(since=seq) if isinstance(e, kiln.OutputEvent))
check(rest == "got two\nbye\n", f"reattach from seq {seq}: only what came after ({rest!r})")
whole = "".join(e.text for e in p.output(follow=False) if isinstance(e, kiln.OutputEvent))
check(whole == "got one\ngot two\nbye\n", "output without follow: the whole ring")
last = list(p.output(follow=False))[-1]
check(isinstance(last, kiln.ExitEvent) and last.exit_code == 0,
      f"output without follow of an exited process ends with its exit ({last.type})")
q = ps.spawn("sleep 600")
check(any(x.id == q.id for x in ps.list()) and ps.get(q.id).info["running"], "list and get")
q.signal("KILL")
check(q.wait(timeout_ms=60000)["signal"] == 9, "signal KILL, wait")
t = ps.spawn("stty size; read x; stty size", pty=True, rows=24, cols=80)
ttext = ""
with t.output() as tout:
    for e in tout:
        ttext += e.text if isinstance(e, kiln.OutputEvent) else ""
        if "24 80" in ttext:
            break
t.resize(50, 132)
t.write_stdin("\n")
t.wait(timeout_ms=60000)
ttext += "".join(e.text for e in t.output(since=tout.next_seq) if isinstance(e, kiln.OutputEvent))
check("24 80" in ttext and "50 132" in ttext, f"pty, resize ({ttext!r})")
raises(errors.ProcessNotFoundError, lambda: ps.get(9999), "get of an unknown process")

beat("ports, previews, firewall")
m = sb.ports.add(8080)
check(m["guest_port"] == 8080 and m["host_port"] > 0, f"ports.add ({m['host_port']})")
check([x["host_port"] for x in sb.ports.list()] == [m["host_port"]], "ports.list")
sb.ports.remove(m["host_port"])
check(sb.ports.list() == [], "ports.remove")
pv = sb.previews.add(8080)
check(len(pv["token"]) == 48, "previews.add (private: a token)")
check([x["port"] for x in sb.previews.list()] == [8080], "previews.list")
sb.previews.remove(8080)
check(sb.previews.list() == [], "previews.remove")
# This sandbox has no network: each firewall call reaches its endpoint and
# is refused as api.md says (a sandbox with passt needs the net tests' hosts).
raises(errors.WrongStateError, sb.firewall.get, "firewall.get without a network")
raises(errors.WrongStateError, lambda: sb.firewall.set({"outbound_internet": True}), "firewall.set without a network")
raises(errors.WrongStateError, sb.firewall.log, "firewall.log without a network")

beat("pause, resume, checkpoint")
check(sb.pause().state == "paused", "pause")
raises(errors.WrongStateError, lambda: sb.exec("true"), "exec while paused")
check(sb.resume().state == "running", "resume")
fs.write("/home/user/state.txt", "v1")
cp = sb.checkpoints.create("cp1")
check(cp["name"] == "cp1" and sb.checkpoints.get("cp1")["sandbox_id"] == sb.id, "checkpoints.create, get")
check([c["name"] for c in sb.checkpoints.list()] == ["cp1"], "checkpoints.list")
raises(errors.ExistsError, lambda: sb.checkpoints.create("cp1"), "a checkpoint name taken")
fs.write("/home/user/state.txt", "v2")

beat("fork")
fork = sb.fork("cp1", hostname="forked")
check(fork.info["boot"]["from"] == "checkpoint", f"fork {fork.id}")
check(fork.files.read_text("/home/user/state.txt") == "v1" and fork.exec("hostname").stdout == "forked\n",
      "the fork has the checkpoint's files and its own hostname")

beat("hibernate, wake, restore")
# Hibernate and wake before the restore: a wake of a sandbox restored in
# place moments before failed once in four runs here (503
# agent_unavailable, kilnd's), reported to the lead rather than made a
# flake of this test.
check(sb.hibernate().state == "hibernated", "hibernate")
w = sb.wake()
check(w.state == "running" and w.info.get("woke_from") == "snapshot", f"wake ({w.info.get('woke_from')})")
check(sb.exec("cat /home/user/state.txt").stdout == "v2", "exec after wake: the state as it was")
check(sb.checkpoints.restore("cp1").info["boot"]["from"] == "checkpoint", "restore in place")
check(fs.read_text("/home/user/state.txt") == "v1", "restore: the later write is gone")
sb.checkpoints.delete("cp1")
raises(errors.CheckpointNotFoundError, lambda: sb.checkpoints.get("cp1"), "checkpoints.delete")


async def async_part() -> None:
    async with AsyncKiln(timeout=600) as ak:
        asb = await ak.sandboxes.get(sb.id)
        r = await asb.exec(["echo", "async"])
        check(r.stdout == "async\n", "AsyncKiln: exec")
        evs = [e.type async for e in asb.exec_stream("echo 1; echo 2 >&2")]
        check(evs == ["stdout", "stderr", "exit"], f"AsyncKiln: exec_stream ({evs})")
        await asb.files.write("/home/user/async.txt", b"A")
        check(await asb.files.read("/home/user/async.txt") == b"A", "AsyncKiln: files")
        try:
            await ak.sandboxes.get("0123456789ab")
            check(False, "AsyncKiln: unknown sandbox raises")
        except errors.SandboxNotFoundError:
            check(True, "AsyncKiln: unknown sandbox raises SandboxNotFoundError")

beat("asyncio client")
asyncio.run(async_part())

# KILN_SDK_DOWNLOAD_MIB (default 100) sizes the download: the nested
# harness moves a few MiB/s out of a guest, so sdk_python_tests.sh asks
# for 8; the unit test downloads 100 MiB from a fake kilnd under the same
# 32 MiB bound.
MIB = int(os.environ.get("KILN_SDK_DOWNLOAD_MIB", "100"))
beat(f"{MIB} MiB download")
sb.exec(f"truncate -s {MIB}M /home/user/big 2>/dev/null || dd if=/dev/zero of=/home/user/big bs=1 count=0 seek={MIB}M")


# In a process of its own, so that its peak RSS is the download's (this
# script's own peak includes everything before).
DOWNLOAD = r"""
import io, sys, time
import kiln

def hwm_kib():
    # VmHWM: this process's own peak RSS. ru_maxrss would also count the
    # parent's, which the kernel charges to a child at exec after vfork.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1

class ZeroCounter(io.RawIOBase):
    n = 0
    zeros = True
    def writable(self):
        return True
    def write(self, b):
        self.n += len(b)
        if bytes(b).count(0) != len(b):
            self.zeros = False
        return len(b)

sb = kiln.Kiln(timeout=600).sandboxes.get(sys.argv[1])
before = hwm_kib()
sink = ZeroCounter()
t0 = time.monotonic()
try:
    n = sb.files.download("/home/user/big", sink)
except kiln.KilnConnectionError as e:
    print(f"cut after {sink.n} bytes in {time.monotonic() - t0:.1f} s: {e}", file=sys.stderr)
    raise
secs = time.monotonic() - t0
print(n, sink.n, sink.zeros, f"{secs:.1f}", before // 1024, hwm_kib() // 1024)
"""
dl = subprocess.run([sys.executable, "-c", DOWNLOAD, sb.id], capture_output=True, text=True, timeout=900)
try:
    n, got, zeros, secs_s, rss_before, rss = dl.stdout.split()
    secs = float(secs_s)
    check(int(n) == int(got) == MIB * 1024 * 1024 and zeros == "True", f"{MIB} MiB streamed in {secs:.1f} s")
    check(int(rss) < 32, f"peak RSS {rss} MiB < 32 MiB (after start and imports: {rss_before} MiB)")
    print(f"measure: {MIB} MiB download {secs:.1f} s, {MIB / max(secs, 0.001):.1f} MiB/s, peak RSS {rss} MiB "
          f"({rss_before} MiB before it)", flush=True)
except ValueError:
    check(False, f"the {MIB} MiB download: rc {dl.returncode}: {dl.stdout[-500:]} {dl.stderr[-1500:]}")

beat("delete the sandbox")
sb.delete()
raises(errors.SandboxNotFoundError, sb.refresh, "delete")

# Templates: a build from a local directory (packed by the SDK, a link out
# of it left out), its log, a sandbox from its ready snapshot, the delete;
# a refused build file. One boot (the build's) and one fork.
beat("templates")
t_tpl = time.monotonic()
ctx = os.path.join(WORK, "tpl")
os.makedirs(os.path.join(ctx, "app"))
with open(os.path.join(ctx, "app", "hi.txt"), "w") as f:
    f.write("from the context\n")
os.symlink("/etc/passwd", os.path.join(ctx, "app", "out"))
with open(os.path.join(ctx, "Kilnfile"), "w") as f:
    f.write("FROM minimal\nRUN true\nADD app /srv\n")
try:
    k.templates.build("sdkpy", context_dir=ctx)
    check(False, "a refused build file raises")
except errors.BadFieldError as e:
    check(e.status == 400 and "line 3" in e.message, f"a refused build file: BadFieldError naming line 3 ({e.message})")
with open(os.path.join(ctx, "Kilnfile"), "w") as f:
    f.write("FROM minimal\nCOPY app/ /home/user/app/\nREADY test -s /home/user/app/hi.txt\n")
seen: list[str] = []
with warnings.catch_warnings(record=True) as warned:
    warnings.simplefilter("always")
    tpl = k.templates.build("sdkpy", context_dir=ctx, on_event=lambda ev: seen.append(ev.type))
check(tpl["name"] == "sdkpy" and seen[-1] == "result" and "copied" in seen and "ready" in seen,
      f"templates.build: the log and the template ({seen})")
check(len(warned) == 1 and "app/out" in str(warned[0].message), "templates.build: the link out was left out")
check([t["name"] for t in k.templates.list()] == ["sdkpy"] and k.templates.get("sdkpy")["from"] == "minimal",
      "templates.list, get")
with k.sandboxes.create(template="sdkpy", hostname="tpl1") as tsb:
    check(tsb.info["boot"]["from"] == "template" and tsb.info["template"] == "sdkpy",
          f"create from the template ({tsb.info['boot'].get('from')})")
    check(tsb.exec("cat /home/user/app/hi.txt; test -e /home/user/app/out || echo no-link").stdout == "from the context\nno-link\n",
          "the template's sandbox has the copied files")
    raises(errors.InUseError, lambda: k.templates.delete("sdkpy"), "templates.delete while a sandbox uses it")
k.templates.delete("sdkpy")
raises(errors.NotFoundError, lambda: k.templates.get("sdkpy"), "templates.delete")
print(f"measure: template build, create, delete {time.monotonic() - t_tpl:.1f} s", flush=True)

beat("kill kilnd during a stream")
kinds: list[str] = []
t0 = time.monotonic()
try:
    for e in fork.exec_stream("while :; do echo tick; sleep 0.2; done"):
        kinds.append(e.type)
        if len(kinds) == 2:
            os.kill(KILND_PID, signal.SIGKILL)
    check(False, "the stream ended without an error after kilnd was killed")
except errors.KilnConnectionError as e:
    check(kinds[:2] == ["stdout", "stdout"] and os.environ["KILN_SOCKET"] in str(e),
          f"SIGKILLed kilnd: one KilnConnectionError after {time.monotonic() - t0:.1f} s ({e})")
except Exception as e:  # noqa: BLE001 - reported
    check(False, f"SIGKILLed kilnd: {type(e).__name__}: {e}")
raises(errors.KilnConnectionError, k.health, "no kilnd: the next call is a KilnConnectionError too")
print(f"fork pid {fork.info.get('pid')}")

print(f"[==========] {passes + len(failures)} test(s) run.")
print(f"[  PASSED  ] {passes} test(s).")
if failures:
    print(f"[  FAILED  ] {len(failures)} test(s), listed above.")
print(f"{passes} passed, {len(failures)} failed", flush=True)
sys.exit(1 if failures else 0)
