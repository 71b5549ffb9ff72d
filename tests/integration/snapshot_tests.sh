# Integration tests of kiln-vmm's pause, snapshot and restore (--control,
# --restore), in real guests driven through the agent. Sourced by run-all
# after agent_tests.sh (uses agent_vm_start, ag, check).

# snap_vm_start [VMM ARGS...]: agent_vm_start with a control socket ($ctl).
snap_vm_start() {
  ctl=$(mktemp -u /tmp/kctl.XXXXXX)
  agent_vm_start --control "$ctl" "$@"
}

# vctl COMMAND: one line to kiln-vmm's control socket $ctl; the reply line
# in $reply.
vctl() {
  heartbeat "control $1"
  reply=$(timeout 600 python3 - "$ctl" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(590)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
buf = b""
while not buf.endswith(b"\n"):
    b = s.recv(4096)
    if not b:
        break
    buf += b
print(buf.decode().strip())
PY
)
}

# vmm_wait: the VMM $vpid ends (after "ag shutdown"), killed after 60 s.
vmm_wait() {
  for _ in $(seq 1 120); do kill -0 "$vpid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$vpid" 2>/dev/null; wait "$vpid" 2>/dev/null
}

# A guest process counting into /tmp/count every 0.2 s.
start_counter() {
  ag exec -- sh -c 'setsid sh -c "i=0; while :; do i=\$((i+1)); echo \$i >/tmp/count; sleep 0.2; done" </dev/null >/dev/null 2>&1 &' >/dev/null
}

count() { ag exec -- cat /tmp/count 2>/dev/null || echo 0; }

test_vmm_pause_resume_snapshot_restore() {
  snap_vm_start || return 1
  local why='' c1 c2 c3 c4 c5 o snap="$vd/snap" size
  start_counter
  ag exec -- sh -c 'echo kept-in-ram >/tmp/keep' >/dev/null
  sleep 2
  c1=$(count)
  vctl pause
  check '[ "$reply" = "{\"ok\":true,\"state\":\"paused\"}" ]' "pause: $reply"
  vctl pause
  check '[ "$reply" = "{\"ok\":true,\"state\":\"paused\"}" ]' "pausing twice is fine: $reply"
  vctl status
  check '[ "$reply" = "{\"ok\":true,\"state\":\"paused\"}" ]' "status paused: $reply"
  sleep 3
  vctl resume
  check '[ "$reply" = "{\"ok\":true,\"state\":\"running\"}" ]' "resume: $reply"
  vctl resume
  check 'printf "%s" "$reply" | grep -q "\"ok\":false.*not paused"' "resuming a running VM is refused: $reply"
  vctl 'frobnicate'
  check 'printf "%s" "$reply" | grep -q "unknown command"' "unknown command: $reply"
  sleep 2
  c2=$(count)
  check '[ "$c2" -gt "$c1" ]' "the counter goes on after resume ($c1 → $c2)"

  vctl "snapshot $snap"
  check 'printf "%s" "$reply" | grep -q "\"ok\":true,\"state\":\"running\""' "snapshot of a running VM: $reply"
  check '[ -f "$snap/state" ] && [ -f "$snap/memory" ] && [ ! -e "$snap.tmp" ]' "snapshot files: $(ls "$snap" 2>&1)"
  size=$(stat -c %s "$snap/memory" 2>/dev/null || echo 0)
  check '[ "$size" = $((256 << 20)) ] && [ "$(du -k "$snap/memory" | cut -f1)" -lt $((200 << 10)) ]' "memory file: $size bytes, $(du -k "$snap/memory" | cut -f1) KiB used (sparse)"
  sleep 1
  c3=$(count)
  check '[ "$c3" -gt "$c2" ]' "the counter goes on after the snapshot ($c2 → $c3)"
  ag exec -- sh -c 'echo after >/tmp/later' >/dev/null

  # The VMM dies; the snapshot comes back in a new one.
  kill -9 "$vpid"
  wait "$vpid" 2>/dev/null
  vs="$vd/v2.sock"
  "$VMM" --restore "$snap" --mem 256 --cpus 2 --console --vsock "$vs" --control "$ctl" \
    >"$vd/console2" 2>"$vd/vmm2.err" </dev/null &
  vpid=$!
  check 'ag wait-ready >/dev/null' "agent answers after restore: $(cat "$vd/vmm2.err")"
  c4=$(count)
  sleep 2
  c5=$(count)
  check '[ "$c4" -ge "$c2" ] && [ "$c5" -gt "$c4" ]' "the counter continues in the restored VM ($c2 at snapshot … $c4 → $c5)"
  o=$(ag exec -- cat /tmp/keep)
  check '[ "$o" = kept-in-ram ]' "a file in RAM survived: '$o'"
  o=$(ag exec -- sh -c 'cat /tmp/later 2>&1 || echo gone')
  check 'printf "%s" "$o" | grep -q "gone\|No such"' "a file written after the snapshot is not there: '$o'"
  agent_vm_stop
  rm -f "$ctl"
  [ -z "$why" ] || { fail "$why"; return 1; }
}

test_vmm_restore_refuses_bad_snapshots() {
  snap_vm_start || return 1
  local why='' snap="$vd/snap" bad="$vd/bad"
  vctl "snapshot $snap"
  check 'printf "%s" "$reply" | grep -q "\"ok\":true"' "snapshot: $reply"
  vctl "snapshot relative/dir"
  check 'printf "%s" "$reply" | grep -q "absolute"' "a relative directory is refused: $reply"
  kill -9 "$vpid"; wait "$vpid" 2>/dev/null
  cp -r "$snap" "$bad"
  printf '\x55' | dd of="$bad/state" bs=1 seek=200 conv=notrunc status=none
  "$VMM" --restore "$bad" --mem 256 --cpus 2 --vsock "$vd/x.sock" </dev/null >/dev/null 2>"$vd/e"
  rc=$?
  check '[ $rc = 1 ] && grep -qi "damaged\|checksum" "$vd/e"' "a flipped byte is refused (exit $rc: $(cat "$vd/e"))"
  "$VMM" --restore "$snap" --mem 128 --cpus 2 --vsock "$vd/x.sock" </dev/null >/dev/null 2>"$vd/e"
  rc=$?
  check '[ $rc = 1 ] && grep -q -- "--mem 256" "$vd/e"' "other RAM size is refused, naming --mem (exit $rc: $(cat "$vd/e"))"
  "$VMM" --restore "$snap" --mem 256 --cpus 2 </dev/null >/dev/null 2>"$vd/e"
  rc=$?
  check '[ $rc = 1 ] && grep -q "devices" "$vd/e"' "other devices are refused (exit $rc: $(cat "$vd/e"))"
  ln -s "$snap" "$vd/link"
  "$VMM" --restore "$vd/link" --mem 256 --cpus 2 --vsock "$vd/x.sock" </dev/null >/dev/null 2>"$vd/e"
  rc=$?
  check '[ $rc = 1 ] && grep -q "symbolic link" "$vd/e"' "a snapshot directory given as a symlink is refused (exit $rc: $(cat "$vd/e"))"
  truncate -s 1000 "$bad/state"
  "$VMM" --restore "$bad" --mem 256 --cpus 2 --vsock "$vd/x.sock" </dev/null >/dev/null 2>"$vd/e"
  rc=$?
  check '[ $rc = 1 ] && grep -qi "truncated\|short" "$vd/e"' "a truncated state file is refused (exit $rc: $(cat "$vd/e"))"
  # The good snapshot still restores.
  vs="$vd/v3.sock"
  "$VMM" --restore "$snap" --mem 256 --cpus 2 --console --vsock "$vs" >"$vd/console3" 2>"$vd/vmm.err" </dev/null &
  vpid=$!
  ag wait-ready >/dev/null && [ "$(ag exec -- echo alive)" = alive ] ||
    why=${why:-"the intact snapshot restores: $(cat "$vd/vmm.err"; tail -5 "$vd/console3")"}
  ag shutdown >/dev/null 2>&1
  vmm_wait
  check 'stopped_clean "$vd/console3"' "the restored guest stops cleanly: $(tr -d '\r' <"$vd/console3" | tail -4)"
  out=$(tail -20 "$vd/console3" 2>/dev/null) err=$(cat "$vd/vmm.err" 2>/dev/null)
  rm -rf "$vd" "$ctl"
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# stopped_clean CONSOLE: the guest's console ends in a clean shutdown
# ("reboot: Restarting system") with no crash of PID 1 before it. Restored
# vCPUs once ran with a busy TSS in TR, and kiln-init's shutdown milestone
# (port I/O) then faulted: "Attempted to kill init!" (snapshot_sregs.h).
stopped_clean() {
  local c
  c=$(tr -d '\r' <"$1" 2>/dev/null)
  printf '%s\n' "$c" | grep -q "reboot: Restarting system" &&
    ! printf '%s\n' "$c" | grep -q "Attempted to kill init\|general protection fault\|segfault at\|Kernel panic"
}

# restore_run SNAP N: restore SNAP (--boot-timeline), check that its guest
# answers and stops cleanly; kiln-vmm's stderr is $vd/vmmN.err.
restore_run() {
  local con="$vd/console$2" # check evals its condition: its own $2 is the message
  vs="$vd/v$2.sock"
  "$VMM" --restore "$1" --mem 256 --cpus 2 --console --vsock "$vs" --boot-timeline \
    >"$vd/console$2" 2>"$vd/vmm$2.err" </dev/null &
  vpid=$!
  check 'ag wait-ready >/dev/null && [ "$(ag exec -- echo alive)" = alive ]' \
    "the guest runs after restoring $1: $(cat "$vd/vmm$2.err")"
  ag shutdown >/dev/null 2>&1
  vmm_wait
  check 'stopped_clean "$con"' "the guest restored from $1 stops cleanly: $(tr -d '\r' <"$con" | tail -4)"
}

# A snapshot of a booted VM has no workingset; one of a restored VM lists
# the pages its guest used since the restore; restoring that reads them
# ahead (the timeline's "prefetched") under the seccomp filters; a damaged
# workingset is a log line, never a failed restore
# (docs/architecture.md, "Working set").
test_vmm_snapshot_working_set() {
  snap_vm_start || return 1
  local why='' s1="$vd/s1" s2="$vd/s2" bad="$vd/bad" n
  vctl "snapshot $s1"
  check 'printf "%s" "$reply" | grep -q "\"ok\":true"' "snapshot of the booted VM: $reply"
  check '[ -f "$s1/memory" ] && [ ! -e "$s1/workingset" ]' "a booted VM's snapshot has no workingset: $(ls "$s1" 2>&1)"
  kill -9 "$vpid"; wait "$vpid" 2>/dev/null
  vs="$vd/v2.sock"
  "$VMM" --restore "$s1" --mem 256 --cpus 2 --console --vsock "$vs" --control "$ctl" \
    >"$vd/console2" 2>"$vd/vmm2.err" </dev/null &
  vpid=$!
  check 'ag wait-ready >/dev/null' "agent answers after restore: $(cat "$vd/vmm2.err")"
  ag exec -- ls / >/dev/null
  vctl "snapshot $s2"
  check 'printf "%s" "$reply" | grep -q "\"ok\":true"' "snapshot of the restored VM: $reply"
  n=$(stat -c %s "$s2/workingset" 2>/dev/null || echo 0)
  check '[ "$n" -gt 48 ] && [ $(((n - 48) % 16)) = 0 ] && [ "$(head -c 8 "$s2/workingset")" = KILNWSET ]' \
    "the restored VM's snapshot lists its working set: $n bytes, $(ls "$s2" 2>&1)"
  kill -9 "$vpid"; wait "$vpid" 2>/dev/null

  restore_run "$s2" 3
  check 'grep -q "prefetched" "$vd/vmm3.err" && ! grep -qi "working set\|workingset" "$vd/vmm3.err"' \
    "the restore read the working set ahead: $(cat "$vd/vmm3.err")"

  cp -r "$s2" "$bad"
  printf '\x55' | dd of="$bad/workingset" bs=1 seek=60 conv=notrunc status=none
  restore_run "$bad" 4
  check '[ "$(grep -c "ignoring the snapshot.s workingset: snapshot workingset damaged" "$vd/vmm4.err")" = 1 ] && ! grep -q prefetched "$vd/vmm4.err"' \
    "one log line, and no prefetch: $(cat "$vd/vmm4.err")"
  out=$(tail -20 "$vd/console4" 2>/dev/null) err=$(cat "$vd/vmm4.err" 2>/dev/null)
  rm -rf "$vd" "$ctl"
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# restore_read_in_jail JSON: the timeline has the snapshot read (its
# restore_* steps after vm_ready) after the jail (run_start) and the
# filters (seccomp_built), before the guest runs.
restore_read_in_jail() {
  python3 -c '
import json, sys
at = {m["name"]: m["ms"] for m in json.loads(sys.argv[1])["milestones"]}
seq = ["vm_ready", "run_start", "seccomp_built", "restore_state_disks", "restore_memory", "restored", "first_kvm_run"]
sys.exit(0 if all(n in at for n in seq) and all(at[a] <= at[b] for a, b in zip(seq, seq[1:])) else 1)' "$1"
}

# With --jail, a restore opens the snapshot as root and reads it only in
# the jail, on the restore thread under its seccomp filter
# (docs/security.md, "Restore"): a snapshot of another uid's 0600 files
# in a 0700 directory (what a fork of another sandbox's checkpoint
# reads) restores through what root opened; a snapshot file with another
# hard link (how a jailed VMM would have root read a file it may not) is
# refused.
test_vmm_restore_reads_the_snapshot_in_its_jail() {
  snap_vm_start || return 1
  local why='' j snap bad tl rc
  j=$(mktemp -d /tmp/kjail.XXXXXX)
  chmod 755 "$j"
  snap="$j/snap" bad="$j/bad"
  vctl "snapshot $snap"
  check 'printf "%s" "$reply" | grep -q "\"ok\":true"' "snapshot: $reply"
  kill -9 "$vpid"; wait "$vpid" 2>/dev/null
  cp -r "$snap" "$bad"
  chown -R 4244:4244 "$snap" && chmod 700 "$snap"
  vs="$j/v.sock"
  "$VMM" --restore "$snap" --mem 256 --cpus 2 --console --vsock "$vs" --jail "$j" --uid 4243 --gid 4243 \
    --boot-timeline=json >"$vd/console2" 2>"$vd/vmm2.err" </dev/null &
  vpid=$!
  check 'ag wait-ready >/dev/null && [ "$(ag exec -- echo alive)" = alive ]' \
    "the jailed restore of another uid's snapshot runs: $(cat "$vd/vmm2.err")"
  ag shutdown >/dev/null 2>&1
  vmm_wait
  tl=$(grep '^{"unit"' "$vd/vmm2.err")
  check 'restore_read_in_jail "$tl"' "the snapshot is read after the jail and the filters: $tl"
  # The state file as a hard link to a root-only file (the same bytes:
  # read by root before the jail, it would restore).
  cp "$bad/state" "$j/root-only" && chmod 600 "$j/root-only" && ln -f "$j/root-only" "$bad/state"
  timeout 120 "$VMM" --restore "$bad" --mem 256 --cpus 2 --vsock "$j/x.sock" --jail "$j" --uid 4243 --gid 4243 \
    </dev/null >/dev/null 2>"$vd/e"
  rc=$?
  check '[ $rc = 1 ] && grep -q "state. has other hard links" "$vd/e"' \
    "a hard-linked state file is refused (exit $rc: $(cat "$vd/e"))"
  out=$(tail -20 "$vd/console2" 2>/dev/null) err=$(cat "$vd/vmm2.err" 2>/dev/null)
  rm -rf "$vd" "$ctl" "$j"
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# seccomp_threads PID: "comm Seccomp Seccomp_filters" per thread of PID.
seccomp_threads() {
  local t
  for t in /proc/"$1"/task/*; do
    echo "$(cat "$t/comm") $(awk '/^Seccomp:/ {s=$2} /^Seccomp_filters:/ {f=$2} END {print s, f}' "$t/status")"
  done
}

# Every thread of kiln-vmm carries exactly one seccomp filter, its own
# role's (docs/security.md): vCPUs, the device thread, the control socket
# thread and the main thread; still so after a pause, resume and snapshot
# (the device thread is parked, not recreated by the filtered control
# thread), and the guest works through all of it. --seccomp=off leaves
# them unfiltered, a bad mode is one usage line.
test_seccomp_filter_on_every_thread_across_snapshot() {
  snap_vm_start || return 1
  local why= before after snap="$vd/snap"
  before=$(seccomp_threads "$vpid")
  check '[ "$(printf "%s\n" "$before" | grep -c "^vcpu")" = 2 ]' "two vCPU threads: $before"
  check 'printf "%s\n" "$before" | grep -q "^kiln-devices 2 1$"' "device thread filtered: $before"
  check 'printf "%s\n" "$before" | grep -q "^kiln-control 2 1$"' "control thread filtered: $before"
  check '! printf "%s\n" "$before" | grep -v " 2 1$" | grep -q .' "a thread without exactly one filter: $before"
  vctl pause; vctl resume; vctl "snapshot $snap"
  check 'printf "%s" "$reply" | grep -q "\"ok\":true"' "snapshot under the filters: $reply"
  check '[ "$(ag exec -- echo alive)" = alive ]' "the guest answers after pause, resume and snapshot"
  after=$(seccomp_threads "$vpid")
  check '[ "$after" = "$before" ]' "threads changed across the snapshot: $before / $after"
  agent_vm_stop
  rm -f "$ctl"
  [ -z "$why" ] || { fail "$why"; return 1; }
  expect_rc 0 || return 1
  agent_vm_start --seccomp=off || return 1
  after=$(seccomp_threads "$vpid")
  check '! printf "%s\n" "$after" | grep -v " 0 0$" | grep -q .' "--seccomp=off: $after"
  agent_vm_stop
  [ -z "$why" ] || { fail "$why"; return 1; }
  vmm --kernel "$VMLINUX" --seccomp=strict
  expect_rc 2 && expect_err "--seccomp=strict: expected kill, log or off" && expect_one_line_err
}
