# kilnd's client shares (docs/api.md "Client shares"; issue 37 item 6)
# end to end: a jailed kiln-vmm's --share-remote on vm/share-N.sock, kilnd's
# relay, and the Python SDK (the checkout's sdk/python) serving a MemoryFS.
# tests/unit/kilnd_shares_test covers kilnd's checks with a stand-in VMM.

# Before a client attaches, the guest's read is EIO at once; with the SDK
# serving MemoryFS the guest reads a file, writes one the object then
# holds, makes a directory and lists; a second share whose object answers
# after the timeout gives the guest EIO within it (timeout_ms 1000).
test_kilnd_client_share() {
  kd_start || return 1
  local why='' status='' body='' py
  py=$(mktemp /tmp/kdshare.XXXXXX.py)
  cat >"$py" <<'PY'
import sys, time
sys.path.insert(0, "sdk/python")
import kiln

# The guest's own clock around one command: "T <whole seconds>".
TIMED = 't0=$(cut -d. -f1 /proc/uptime); {}; t1=$(cut -d. -f1 /proc/uptime); echo T $((t1 - t0))'


class Slow(kiln.MemoryFS):
    def stat(self, path):
        time.sleep(4)  # past the share's 1 s
        return super().stat(path)


def took(r):
    return int([ln for ln in r.stdout.splitlines() if ln.startswith("T ")][-1].split()[1])


with kiln.Kiln(sys.argv[1], timeout=900) as k:
    sb = k.sandboxes.create(image="minimal", shares=[
        {"guest_path": "/mnt/mem", "client": True, "timeout_ms": 1000},
        {"guest_path": "/mnt/slow", "client": True, "timeout_ms": 1000}])
    r = sb.exec(["sh", "-c", TIMED.format("cat /mnt/mem/hello.txt 2>&1")])
    print("noclient|", r.stdout.replace("\n", " "))
    assert "Input/output error" in r.stdout or "I/O error" in r.stdout, r.stdout
    assert took(r) <= 1, r.stdout
    fs = kiln.MemoryFS({"/hello.txt": b"hello from the SDK\n", "/d/x": b""})
    with sb.shares.serve("/mnt/mem", fs):
        r = sb.exec(["sh", "-c", "cat /mnt/mem/hello.txt; echo guest-wrote > /mnt/mem/new.txt; "
                     "mkdir /mnt/mem/sub; echo LS $(ls /mnt/mem); cat /mnt/mem/new.txt"])
        print("served|", r.stdout.replace("\n", " "), r.stderr.replace("\n", " "))
        assert r.exit_code == 0, (r.stdout, r.stderr)
        assert r.stdout.splitlines() == ["hello from the SDK", "LS d hello.txt new.txt sub",
                                         "guest-wrote"], r.stdout
        assert fs.files.get("/new.txt") == b"guest-wrote\n", fs.files
        assert "/sub" in fs.dirs, fs.dirs
    with sb.shares.serve(1, Slow({"/f": b"late\n"})):
        r = sb.exec(["sh", "-c", TIMED.format("cat /mnt/slow/f 2>&1")])
        print("slow|", r.stdout.replace("\n", " "))
        assert "Input/output error" in r.stdout or "I/O error" in r.stdout, r.stdout
        assert took(r) <= 3, r.stdout  # whole seconds: 1 s of timeout is 0 to 2
    sb.delete()
print("client share: ok")
PY
  rc=0
  out=$(timeout -k 5 1200 python3 "$py" "$kds" 2>"$py.err") || rc=$?
  err=$(cat "$py.err")
  printf '%s\n' "$out" | sed 's/^/    /'
  kd_check '[ "$rc" = 0 ] && printf "%s\n" "$out" | grep -q "^client share: ok$"' \
    "the SDK's client shares (rc $rc): $(tail -c 1200 "$py.err") kilnd: $(grep -i share "$kd/kilnd.log" | tail -5)"
  rm -f "$py" "$py.err"
  kd_done
}
