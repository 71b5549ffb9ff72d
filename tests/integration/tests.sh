# Integration tests: each test_* function boots real guests under kiln-vmm.
# Run by tests/integration/run-all (inside the nested harness when this
# machine has no usable /dev/kvm).

test_bzimage_boots_to_init_and_exits_0() {
  vmm --kernel "$BZIMAGE" --initrd "$INITRD" --cmdline kiln.poweroff --boot-timeline=json
  expect_rc 0 && expect_err '"name":"init_started"' && expect_err '"reason":"reset"'
}

test_pvh_vmlinux_boots_to_init_and_exits_0() {
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --cmdline kiln.poweroff --boot-timeline=json
  expect_rc 0 && expect_err '"name":"init_started"'
}

test_timeline_milestones_in_order() {
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --cmdline kiln.poweroff --boot-timeline=json
  expect_rc 0 || return 1
  local names
  names=$(printf '%s\n' "$err" | grep '^{' | python3 -c '
import json, sys
t = json.loads(sys.stdin.read())
ms = [m["ms"] for m in t["milestones"]]
assert ms == sorted(ms), "milestones out of order"
print(" ".join(m["name"] for m in t["milestones"]))')
  [ "$names" = "boot_start boot_kvm_open boot_devices_made boot_guest_loaded vm_ready first_kvm_run kernel_start init_started agent_ready shutdown_requested vm_exit" ] ||
    fail "unexpected milestones: $names"
}

test_guest_sees_two_vcpus() {
  # Standalone --jail too: kiln-vmm forks into its own pid namespace and
  # the guest runs as uid 4242 with the console and exit status intact.
  local j
  j=$(mktemp -d)
  vmm --kernel "$BZIMAGE" --initrd "$INITRD" --cpus 2 --console --jail "$j" --uid 4242 --gid 4242 \
    --cmdline 'kiln.exec="echo cpus=$(grep -c ^processor /proc/cpuinfo) online=$(cat /sys/devices/system/cpu/online)"'
  rmdir "$j"
  expect_rc 0 && expect_out '^cpus=2 online=0-1'
}

test_pvh_guest_sees_four_vcpus() {
  # And takes paravirtual spinlocks (kernel-config/kiln.config): a waiter
  # halts instead of spinning for a preempted holder.
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --cpus 4 --mem 256 --console \
    --cmdline 'kiln.exec="echo cpus=$(grep -c ^processor /proc/cpuinfo); dmesg | grep -i spinlocks"'
  expect_rc 0 && expect_out '^cpus=4' && expect_out 'PV spinlocks enabled'
}

test_console_carries_guest_output_and_hostname() {
  # The kernel's parameter parser knows double quotes but no escapes, so the
  # guest command uses single quotes inside.
  local params
  params=$(cat <<'P'
kiln.hostname=box1 kiln.exec="echo host=$(hostname) mounts=$(cut -d' ' -f2 /proc/mounts | grep -c -x -E '/proc|/sys|/dev|/dev/pts|/tmp|/run')"
P
)
  vmm --kernel "$BZIMAGE" --initrd "$INITRD" --console --cmdline "$params"
  expect_rc 0 && expect_out '^host=box1 mounts=6' && expect_out 'kiln-init: command exited with status 0'
}

# ^C on --console ends kiln-vmm by SIGINT, and its handler gives the
# user's terminal back first (echo and line editing on again).
test_console_terminal_restored_after_sigint() {
  local r
  heartbeat "kiln-vmm --console on a pty, then SIGINT"
  r=$(timeout -k 5 "$BOOT_TIMEOUT" python3 - "$VMM" "$BZIMAGE" "$INITRD" <<'PY'
import os, pty, select, signal, sys, termios, time
vmm, kernel, initrd = sys.argv[1:4]
master, slave = pty.openpty()
pid = os.fork()
if pid == 0:
    os.setsid()
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    os.execv(vmm, [vmm, "--kernel", kernel, "--initrd", initrd, "--console",
                   "--cmdline", 'kiln.exec="sleep 60"'])
before = termios.tcgetattr(slave)[3]
keys = termios.ECHO | termios.ICANON
# Wait for kiln-vmm to switch the terminal (echo off), draining its output.
deadline = time.time() + 60
while termios.tcgetattr(slave)[3] & termios.ECHO and time.time() < deadline:
    if select.select([master], [], [], 0.05)[0]:
        os.read(master, 4096)
if termios.tcgetattr(slave)[3] & termios.ECHO:
    print("kiln-vmm never turned echo off"); sys.exit(0)
time.sleep(0.5)
os.kill(pid, signal.SIGINT)
while True:
    if select.select([master], [], [], 0.05)[0]:
        try:
            os.read(master, 4096)
        except OSError:
            pass
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
after = termios.tcgetattr(slave)[3]
if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != signal.SIGINT:
    print("not ended by SIGINT: status %#x" % status)
elif after & keys != before & keys:
    print("terminal left changed: lflag %#o, was %#o" % (after, before))
else:
    print("ok")
PY
  )
  [ "$r" = ok ] || fail "kiln-vmm --console, then SIGINT: $r"
}

test_guest_memory_size_is_what_was_asked() {
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --mem 512 --console \
    --cmdline 'kiln.exec="grep MemTotal /proc/meminfo"'
  expect_rc 0 || return 1
  local kb
  kb=$(printf '%s\n' "$out" | awk '/^MemTotal/ {print $2}')
  [ -n "$kb" ] && [ "$kb" -gt 450000 ] && [ "$kb" -le 524288 ] || fail "MemTotal $kb kB for --mem 512"
}

test_corrupt_bzimage_is_refused_with_one_line() {
  local bad
  bad=$(mktemp)
  cp "$BZIMAGE" "$bad"
  printf 'XXXX' | dd of="$bad" bs=1 seek=$((0x202)) conv=notrunc status=none
  vmm --kernel "$bad" --initrd "$INITRD"
  rm -f "$bad"
  expect_rc 1 && expect_one_line_err && expect_err "no HdrS magic"
}

test_truncated_bzimage_is_refused() {
  local bad
  bad=$(mktemp)
  head -c 100000 "$BZIMAGE" >"$bad"
  vmm --kernel "$bad"
  rm -f "$bad"
  expect_rc 1 && expect_one_line_err && expect_err "truncated"
}

test_truncated_vmlinux_is_refused() {
  local bad
  bad=$(mktemp)
  head -c 4096 "$VMLINUX" >"$bad"
  vmm --kernel "$bad"
  rm -f "$bad"
  expect_rc 1 && expect_one_line_err && expect_err "outside the file"
}

test_triple_fault_is_reported_not_hung() {
  vmm --kernel build/tests/triple-fault.elf --boot-timeline
  expect_rc 4 && expect_err "triple fault"
}

test_kernel_panic_before_init_exits_3() {
  # No init anywhere: the kernel panics, panic=-1 resets, kiln-vmm says so.
  vmm --kernel "$BZIMAGE" --initrd "$INITRD" --cmdline "rdinit=/nonexistent init=/nonexistent"
  expect_rc 3 && expect_err "before its init started"
}

test_bad_arguments_each_get_one_clear_line() {
  vmm --kernel /nonexistent
  expect_rc 1 && expect_one_line_err && expect_err "kernel '/nonexistent': No such file" || return 1
  vmm --kernel /tmp
  expect_rc 1 && expect_one_line_err && expect_err "not a regular file" || return 1
  vmm --kernel "$BZIMAGE" --mem 0
  expect_rc 1 && expect_one_line_err && expect_err "at least 32 MiB" || return 1
  vmm --kernel "$BZIMAGE" --cpus 999
  expect_rc 1 && expect_one_line_err && expect_err "between 1 and 64" || return 1
  vmm --kernel "$BZIMAGE" --mem lots
  expect_rc 2 && expect_one_line_err && expect_err "not a size in MiB" || return 1
  # num_parse: a sign or a space is a mistake, not a number
  vmm --kernel "$BZIMAGE" --mem +64
  expect_rc 2 && expect_one_line_err && expect_err "--mem '\\+64': not a size in MiB" || return 1
  vmm --kernel "$BZIMAGE" --cpus " 2"
  expect_rc 2 && expect_one_line_err && expect_err "--cpus ' 2': not a number of vCPUs" || return 1
  vmm
  expect_rc 2 && expect_one_line_err && expect_err "no kernel given" || return 1
  vmm --kernel "$BZIMAGE" --jail /tmp
  expect_rc 2 && expect_one_line_err && expect_err "--jail, --uid and --gid go together" || return 1
  vmm --kernel "$BZIMAGE" --jail /tmp --uid 0 --gid 5
  expect_rc 2 && expect_one_line_err && expect_err "--uid '0': not a uid above 0" || return 1
  vmm --kernel "$BZIMAGE" --initrd "$INITRD" --jail tmp --uid 5 --gid 5
  expect_rc 1 && expect_one_line_err && expect_err "must be an absolute path"
}

test_missing_dev_kvm_gives_one_clear_line() {
  # A private mount namespace with an empty /dev: no /dev/kvm at all.
  rc=0
  err=$(unshare -m sh -c "mount -t tmpfs none /dev && exec $VMM --kernel $BZIMAGE" 2>&1) || rc=$?
  out=""
  expect_rc 1 && expect_one_line_err && expect_err "/dev/kvm does not exist"
}

test_initrd_too_large_for_memory_is_refused() {
  local big
  big=$(mktemp)
  truncate -s 40M "$big"
  vmm --kernel "$BZIMAGE" --initrd "$big" --mem 32
  rm -f "$big"
  expect_rc 1 && expect_one_line_err && expect_err "raise --mem"
}

test_virtio_rng_feeds_the_guest() {
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --console \
    --cmdline 'quiet kiln.exec="echo rng=$(cat /sys/class/misc/hw_random/rng_current) bytes=$(head -c 4096 /dev/hwrng | wc -c)"'
  expect_rc 0 && expect_out '^rng=virtio_rng.0 bytes=4096'
}

test_no_rng_means_no_hwrng() {
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --console --no-rng \
    --cmdline 'quiet kiln.exec="echo rng=$(cat /sys/class/misc/hw_random/rng_current)"'
  expect_rc 0 && expect_out '^rng=none'
}

test_virtio_net_ping_and_tcp_over_tap() {
  local tap=kt$$ srv
  ip tuntap add dev $tap mode tap || { rc=1; fail "cannot create tap (tun module?)"; return 1; }
  ip addr add 10.9.0.1/24 dev $tap && ip link set $tap up
  # One-shot TCP server on the host side of the tap: answers one line.
  python3 - <<'PY' &
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.9.0.1", 8080)); s.listen(1); s.settimeout(240)
open("/tmp/kiln-net-ready", "w").close()
c, _ = s.accept(); c.settimeout(60)
data = c.recv(100)
c.sendall(b"host-got:" + data.strip() + b"\n"); c.close()
PY
  srv=$!
  for _ in $(seq 1 120); do [ -e /tmp/kiln-net-ready ] && break; sleep 0.5; done
  rm -f /tmp/kiln-net-ready
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --console --net tap=$tap,mac=02:00:00:00:00:07 \
    --cmdline 'quiet kiln.exec="ip addr add 10.9.0.2/24 dev eth0; ip link set eth0 up; cat /sys/class/net/eth0/address; ping -c 2 -W 10 10.9.0.1 >/dev/null && echo PING-OK; echo guest-hello | nc -w 30 10.9.0.1 8080"'
  kill $srv 2>/dev/null; wait $srv 2>/dev/null
  ip link del $tap
  expect_rc 0 && expect_out '^02:00:00:00:00:07' && expect_out '^PING-OK' && expect_out '^host-got:guest-hello'
}

test_boot_from_ext4_on_virtio_blk_and_data_survives_reboot() {
  local d base_sum
  d=$(mktemp -d)
  cp "$ROOT_EXT4" "$d/root.ext4"
  vmm --kernel "$VMLINUX" --disk "$d/root.ext4" --console \
    --cmdline 'quiet kiln.exec="grep -c ^/dev/root.*ext4 /proc/mounts; echo persisted > /root/note; sync"'
  expect_rc 0 && expect_out '^1$' || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --disk "$d/root.ext4" --console --cmdline 'quiet kiln.exec="cat /root/note"'
  rm -rf "$d"
  expect_rc 0 && expect_out '^persisted$'
}

test_cow_overlays_share_a_base_and_never_touch_it() {
  local d base_sum
  d=$(mktemp -d)
  cp "$ROOT_EXT4" "$d/base.ext4"
  base_sum=$(sha256sum <"$d/base.ext4")
  vmm --kernel "$VMLINUX" --disk "$d/base.ext4,overlay=$d/a.ovl" --console \
    --cmdline 'quiet kiln.exec="echo from-a > /root/who; sync"'
  expect_rc 0 || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --disk "$d/base.ext4,overlay=$d/b.ovl" --console \
    --cmdline 'quiet kiln.exec="cat /root/who 2>&1; echo from-b > /root/who; sync"'
  expect_rc 0 && expect_out 'No such file' || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --disk "$d/base.ext4,overlay=$d/a.ovl" --console --cmdline 'quiet kiln.exec="cat /root/who"'
  expect_rc 0 && expect_out '^from-a$' || { rm -rf "$d"; return 1; }
  [ "$(sha256sum <"$d/base.ext4")" = "$base_sum" ] || { rm -rf "$d"; fail "the base image changed"; return 1; }
  # The overlay is sparse: far smaller on disk than the 32 MiB disk.
  [ "$(du -k "$d/a.ovl" | cut -f1)" -lt 16384 ] || { rm -rf "$d"; fail "overlay is not sparse"; return 1; }
  rm -rf "$d"
}

# --disk-image/--disk-overlay/--disk-size take each path whole: the
# separators of --disk's syntax are just characters of the paths (kilnd
# passes paths it does not choose this way).
test_vmm_disk_paths_taken_whole() {
  local d base_sum
  d=$(mktemp -d)
  cp "$ROOT_EXT4" "$d/base,ro:x.ext4"
  base_sum=$(sha256sum <"$d/base,ro:x.ext4")
  vmm --kernel "$VMLINUX" --disk-image "$d/base,ro:x.ext4" --disk-overlay "$d/o,size=1:y.ovl" --disk-size 64 \
    --console --cmdline 'quiet kiln.exec="echo kept > /root/note; sync; cat /sys/block/vda/size"'
  expect_rc 0 && expect_out '^131072$' || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --disk-image "$d/base,ro:x.ext4" --disk-overlay "$d/o,size=1:y.ovl" --console \
    --cmdline 'quiet kiln.exec="cat /root/note"'
  expect_rc 0 && expect_out '^kept$' || { rm -rf "$d"; return 1; }
  [ "$(sha256sum <"$d/base,ro:x.ext4")" = "$base_sum" ] || { rm -rf "$d"; fail "the base image changed"; return 1; }
  # The --disk syntax still splits there, and says where.
  vmm --kernel "$VMLINUX" --disk "$d/base,ro:x.ext4,overlay=$d/z.ovl"
  rm -rf "$d"
  expect_rc 2 && expect_err "unknown or bad option 'ro:x.ext4'"
}

test_read_only_disk_refuses_writes() {
  local d
  d=$(mktemp -d)
  head -c 1048576 /dev/zero >"$d/data.img"
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --disk "$d/data.img,ro,serial=KILNRO" --console \
    --cmdline 'quiet kiln.exec="cat /sys/block/vda/ro; echo x | dd of=/dev/vda 2>/dev/null && echo WROTE || echo REFUSED"'
  local changed=0
  # (no process substitution: the harness's /dev has no /dev/fd)
  [ "$(sha256sum <"$d/data.img")" = "$(head -c 1048576 /dev/zero | sha256sum)" ] || changed=1
  rm -rf "$d"
  expect_rc 0 && expect_out '^1$' && expect_out '^REFUSED$' || return 1
  [ $changed = 0 ] || fail "read-only image was modified"
}

test_virtio_fs_share_tar_ro_and_symlink_escape() {
  local d
  d=$(mktemp -d)
  mkdir -p "$d/rw" "$d/ro" "$d/outside"
  echo HOSTSECRET >"$d/outside/secret"
  echo hello-ro >"$d/ro/file"
  ln -s "$d/outside" "$d/rw/escape"
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --console --share "$d/rw:work" --share "$d/ro:data:ro" \
    --cmdline 'quiet kiln.shares=work:/mnt/w,data:/mnt/r:ro kiln.exec="cp /bin/busybox /mnt/w/bb; tar -cf /mnt/w/etc.tar -C / etc; mkdir -p /mnt/w/tree/a/b; echo deep > /mnt/w/tree/a/b/c; cat /mnt/r/file; touch /mnt/r/new 2>/dev/null && echo RO-WRITABLE || echo RO-REFUSED; cat /mnt/w/escape/secret 2>&1; sync"'
  local ok=1
  expect_rc 0 && expect_out '^hello-ro$' && expect_out '^RO-REFUSED$' || ok=0
  if [ $ok = 1 ]; then
    printf '%s\n' "$out" | grep -q HOSTSECRET && { fail "host file read through a symlink"; ok=0; }
    cmp -s /bin/busybox "$d/rw/bb" || { fail "file copied into the share differs"; ok=0; }
    [ "$(cat "$d/rw/tree/a/b/c" 2>/dev/null)" = deep ] || { fail "nested write missing on the host"; ok=0; }
    # Not grep -q: it would stop reading at the first name, and tar's
    # SIGPIPE on the next fails the pipeline (pipefail).
    tar -tf "$d/rw/etc.tar" 2>&1 | grep 'etc/passwd' >/dev/null ||
      { fail "tar written through the share is unreadable ($(stat -c %s "$d/rw/etc.tar" 2>&1) bytes: $(tar -tf "$d/rw/etc.tar" 2>&1 | tail -3 | tr '\n' ' '))"; ok=0; }
    [ ! -e "$d/ro/new" ] || { fail "read-only share was written"; ok=0; }
  fi
  rm -rf "$d"
  [ $ok = 1 ]
}

# A client-served share (--share-remote): a stand-in server on the host
# serves an in-memory tree over the line protocol; the guest reads a file,
# writes one, makes a directory, renames into it and lists; a second share
# whose server never answers gives the guest EIO within the timeout.
test_virtio_fs_client_served_share() {
  local d ok=1 took
  d=$(mktemp -d /tmp/kfr.XXXXXX)
  python3 tests/integration/fs_remote_server.py "$d/mem.sock" serve "$d/tree.json" 2>"$d/mem.log" &
  local mem=$!
  python3 tests/integration/fs_remote_server.py "$d/slow.sock" silent "$d/slow.log" 2>"$d/slow.err" &
  local slow=$!
  for _ in $(seq 50); do [ -S "$d/mem.sock" ] && [ -S "$d/slow.sock" ] && break; sleep 0.1; done
  vmm --kernel "$VMLINUX" --initrd "$INITRD" --console \
    --share-remote "$d/mem.sock:mem" --share-remote "$d/slow.sock:slow" --share-remote-timeout 1000 \
    --cmdline 'quiet kiln.shares=mem:/mnt/m,slow:/mnt/s kiln.exec="cat /mnt/m/hello.txt; echo guest-wrote >/mnt/m/new.txt; mkdir /mnt/m/sub; mv /mnt/m/new.txt /mnt/m/sub/moved.txt; echo LS $(ls /mnt/m) /; echo SUB $(ls /mnt/m/sub); cat /mnt/m/sub/moved.txt; t0=$(cut -d. -f1 /proc/uptime); cat /mnt/s/f; t1=$(cut -d. -f1 /proc/uptime); echo SLOW-TOOK $((t1 - t0))"'
  kill "$mem" "$slow" 2>/dev/null
  wait "$mem" "$slow" 2>/dev/null
  expect_rc 0 && expect_out '^hello from the client$' && expect_out '^LS dir hello.txt sub /$' &&
    expect_out '^SUB moved.txt$' && expect_out '^guest-wrote$' && expect_out "can't open '/mnt/s/f': (I/O|Input/output) error" || ok=0
  if [ $ok = 1 ]; then
    took=$(printf '%s\n' "$out" | sed -n 's/^SLOW-TOOK //p')
    # The guest's uptime counts whole seconds: 1 s of timeout is 0 to 2.
    [ -n "$took" ] && [ "$took" -le 3 ] || { fail "the silent server's EIO took ${took:-?} s (timeout 1 s)"; ok=0; }
    python3 - "$d/tree.json" <<'PY' || { fail "the client's tree: $(cat "$d/tree.json")"; ok=0; }
import json, sys
t = json.load(open(sys.argv[1]))
assert t.get("/sub/moved.txt") == "guest-wrote\n", t
assert "/new.txt" not in t and t.get("/sub") == "<dir>", t
PY
    # The guest's path walk asks for the share's root first ("stat /"):
    # that is the request that times out.
    grep -q '^stat /' "$d/slow.log" || { fail "the silent server was not asked: $(cat "$d/slow.log")"; ok=0; }
    expect_err 'virtio-fs slow: no reply within the timeout' || ok=0
  fi
  rm -rf "$d"
  [ $ok = 1 ]
}

test_vsock_10mib_each_way_concurrently() {
  local d
  d=$(mktemp -d /tmp/kv.XXXXXX)
  # Two connections at once. Host side: an echo server for the guest's
  # connection to CID 2 port 6000 (kiln-vmm connects to "<uds>_6000"),
  # and a client that connects to guest port 5000 once it listens
  # (Firecracker's CONNECT protocol), sends 10 MiB and compares the echo.
  python3 - "$d/v.sock" >"$d/host.log" 2>&1 <<'PY' &
import hashlib, os, socket, sys, threading, time
uds = sys.argv[1]
srv = socket.socket(socket.AF_UNIX); srv.bind(uds + "_6000"); srv.listen(1); srv.settimeout(280)
echoed = [0]
def echo():
    c, _ = srv.accept()
    while True:
        b = c.recv(65536)
        if not b: break
        c.sendall(b); echoed[0] += len(b)
    c.close()
e = threading.Thread(target=echo); e.start()
data = os.urandom(10 << 20)
deadline = time.time() + 280
while time.time() < deadline:
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(uds)
        s.sendall(b"CONNECT 5000\n")
        line = b""
        while not line.endswith(b"\n"):
            ch = s.recv(1)
            if not ch: raise ConnectionError
            line += ch
        if not line.startswith(b"OK "): raise ConnectionError
        break
    except (ConnectionError, FileNotFoundError, ConnectionRefusedError):
        time.sleep(0.5)
got = bytearray()
def reader():
    while True:
        b = s.recv(65536)
        if not b: break
        got.extend(b)
t = threading.Thread(target=reader); t.start()
s.sendall(data); s.shutdown(socket.SHUT_WR); t.join(280)
print("host-to-guest", "ok" if hashlib.sha256(got).digest() == hashlib.sha256(data).digest() else f"BAD {len(got)}")
e.join(280)  # the guest's own echo may still be running
print("guest-to-host echoed", echoed[0])
PY
  local py=$!
  # The guest connects to port 6000 at once: wait until the host listens.
  for _ in $(seq 1 240); do [ -S "$d/v.sock_6000" ] && break; sleep 0.5; done
  vmm --kernel "$VMLINUX" --initrd "$TEST_INITRD" --mem 256 --console --vsock "$d/v.sock" \
    --cmdline 'quiet kiln.exec="kiln-vsock-test listen 5000 & L=$!; kiln-vsock-test send 2 6000 10485760; wait $L"'
  wait $py
  local hostlog
  hostlog=$(cat "$d/host.log")
  rm -rf "$d"
  expect_rc 0 && expect_out '^vsock-ok 10485760$' || { echo "    --- host: $hostlog"; return 1; }
  printf '%s\n' "$hostlog" | grep -q '^host-to-guest ok$' || { err=$hostlog; fail "host-to-guest echo failed"; }
}

test_vsock_guest_connect_refused_without_listener() {
  local d
  d=$(mktemp -d /tmp/kv.XXXXXX)
  vmm --kernel "$VMLINUX" --initrd "$TEST_INITRD" --console --vsock "$d/v.sock" \
    --cmdline 'quiet kiln.exec="kiln-vsock-test send 2 7000 16"'
  rm -rf "$d"
  expect_rc 0 && expect_out 'connect: Connection reset by peer'
}
