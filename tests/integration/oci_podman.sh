# kiln-runtime under Podman (issue 34). Source after lib.sh and oci_lib.sh.

# The engine itself works in the outer VM with a runtime it ships (crun):
# when a kiln-runtime flow fails, this says whether the harness or kiln is
# to blame.
test_oci_podman_crun_baseline() {
  oci_start || { oci_stop; return 1; }
  local r=0
  oci_flows /usr/bin/crun && oci_flows_life /usr/bin/crun && oci_net /usr/bin/crun &&
    oci_cni /usr/bin/crun || r=1
  oci_stop
  return $r
}

# oci_vm_crash RUNTIME: the VM dies under a running container (kiln-vmm
# SIGKILLed): the container ends with 255 and is stopped (Podman's
# cleanup deletes it then), `rm` still cleans up; then the shim dies
# instead.
oci_vm_crash() {
  local rt=(--runtime "$1" --network none) id vmm
  oci_run '' run -d "${rt[@]}" "$oci_img" /bin/busybox sleep 1000
  expect_rc 0 || return 1
  id=$out
  vmm=$(pgrep -x kiln-vmm)
  [ -n "$vmm" ] || { fail "no kiln-vmm runs under the container"; return 1; }
  kill -9 $vmm
  oci_run '' wait "$id"
  expect_rc 0 && expect_out '^255$' || return 1
  oci_run '' inspect --format '{{.State.Status}}' "$id"
  expect_rc 0 && expect_out '^(exited|stopped)$' || return 1
  oci_run '' rm "$id"
  expect_rc 0 || return 1
  # the shim SIGKILLed (the OOM killer's way): the container ends killed,
  # and rm leaves no kiln-vmm although the jail cleared its PDEATHSIG
  oci_run '' run -d "${rt[@]}" "$oci_img" /bin/busybox sleep 1000
  expect_rc 0 || return 1
  id=$out
  oci_run '' inspect --format '{{.State.Pid}}' "$id"
  expect_rc 0 || return 1
  kill -9 "$out"
  oci_run '' wait "$id"
  expect_rc 0 && expect_out '^137$' || return 1
  oci_run '' rm "$id"
  expect_rc 0 || return 1
  vmm=$(pgrep -x kiln-vmm)
  [ -z "$vmm" ] || { fail "kiln-vmm $vmm outlived its killed shim and rm"; return 1; }
}

# The VM in the container's cgroup: the shim (the container's pid for
# Podman) and its kiln-vmm are in the cgroupsPath Podman gives (cgroupfs:
# .../libpod-<id>), whose memory.max is the VM's RAM (io.kiln.memory=192)
# plus kiln-runtime's 64 MiB for the VMM; `podman update --cpus` sets its
# cpu.max; `podman rm -f` leaves no cgroup.
# 0, or 1 after fail.
oci_kiln_cgroup() {
  local rt=(--runtime "$PWD/build/kiln-runtime" --network none) id shim vmm cg
  oci_run '' run -d --annotation io.kiln.memory=192 "${rt[@]}" "$oci_img" /bin/busybox sleep 1000
  expect_rc 0 || return 1
  id=$out
  oci_run '' inspect --format '{{.State.Pid}}' "$id"
  expect_rc 0 || return 1
  shim=$out
  vmm=$(pgrep -P "$shim" kiln-vmm | head -n 1)
  [ -n "$vmm" ] || { fail "no kiln-vmm is a child of the shim $shim"; return 1; }
  cg=$(sed -n 's/^0:://p' "/proc/$vmm/cgroup")
  [[ "$cg" == *"$id"* ]] || { fail "kiln-vmm $vmm is in cgroup '$cg', not the container's ($id)"; return 1; }
  [ "$(sed -n 's/^0:://p' "/proc/$shim/cgroup")" = "$cg" ] || { fail "the shim is not in $cg"; return 1; }
  [ "$(cat "/sys/fs/cgroup$cg/memory.max")" = $(((192 + 64) << 20)) ] ||
    { fail "memory.max of $cg: $(cat "/sys/fs/cgroup$cg/memory.max")"; return 1; }
  [ "$(cat "/sys/fs/cgroup$cg/pids.max")" = 1024 ] || { fail "pids.max of $cg: $(cat "/sys/fs/cgroup$cg/pids.max")"; return 1; }
  # podman update: the VM's share of the host CPU (its vCPUs are fixed)
  oci_run '' update --cpus 0.5 "$id"
  expect_rc 0 || return 1
  [ "$(cat "/sys/fs/cgroup$cg/cpu.max")" = "50000 100000" ] ||
    { fail "cpu.max of $cg after podman update --cpus 0.5: $(cat "/sys/fs/cgroup$cg/cpu.max")"; return 1; }
  oci_run '' rm -f -t 0 "$id"
  expect_rc 0 || return 1
  [ ! -e "/sys/fs/cgroup$cg" ] || { fail "the container's cgroup $cg is left after podman rm -f"; return 1; }
}

# podman container checkpoint, then restore: the container's VM is
# snapshotted and killed, and comes back from the snapshot with its
# memory: a counter its process keeps in the guest's /dev/shm (a tmpfs,
# guest RAM) goes on from where it was, the process's pid is the same,
# and exec works in the restored VM. 0, or 1 after fail.
oci_kiln_checkpoint() {
  local rt=(--runtime "$PWD/build/kiln-runtime" --network none) id before after pid
  oci_run '' run -d "${rt[@]}" "$oci_img" /bin/sh -c \
    'echo $$ >/dev/shm/pid; i=0; while :; do i=$((i+1)); echo $i >/dev/shm/n; sleep 0.2; done'
  expect_rc 0 || return 1
  id=$out
  for _ in $(seq 60); do
    oci_run '' exec "$id" /bin/busybox cat /dev/shm/n
    [ "$rc" = 0 ] && [ "${out:-0}" -ge 3 ] 2>/dev/null && break
    sleep 1
  done
  before=$out
  oci_run '' exec "$id" /bin/busybox cat /dev/shm/pid
  expect_rc 0 || return 1
  pid=$out
  oci_run '' container checkpoint "$id"
  expect_rc 0 || return 1
  oci_run '' inspect --format '{{.State.Status}}' "$id"
  expect_rc 0 && expect_out '^(exited|stopped)$' || return 1
  [ -z "$(pgrep -x kiln-vmm)" ] || { fail "kiln-vmm still runs after the checkpoint"; return 1; }
  oci_run '' container restore "$id"
  expect_rc 0 || return 1
  oci_run '' exec "$id" /bin/busybox cat /dev/shm/pid
  expect_rc 0 && expect_out "^$pid\$" || return 1
  sleep 2
  # the counter's file is rewritten in place (truncated, then written):
  # a read between the two finds it empty
  for _ in $(seq 10); do
    oci_run '' exec "$id" /bin/busybox cat /dev/shm/n
    expect_rc 0 || return 1
    [ -n "$out" ] && break
  done
  after=$out
  [ "$after" -gt "$before" ] 2>/dev/null ||
    { fail "the counter was $before before the checkpoint and is '$after' after the restore"; return 1; }
  oci_run '' rm -f -t 0 "$id"
  expect_rc 0 || return 1
}

# Warm starts (docs/oci-runtime.md): containers without a network resume
# one template, made once, rather than booting: their kernel command line
# is the template's, without the container's kiln.hostname (a booted
# VM's has it). Two of them still draw different random bytes (the guest
# is reseeded as it resumes); io.kiln.warm=false boots; two creates of a
# new shape at once make one template and both run; an annotation
# that is neither true nor false is refused in one line. The flows
# before made the templates: all of this build, no maker's leftovers.
# 0, or 1 after fail.
oci_kiln_warm() {
  local rt=(--rm --runtime "$PWD/build/kiln-runtime" --network none) a b c n
  local show='cat /proc/cmdline; head -c 16 /dev/urandom | od -An -tx1 | tr -d " "'
  oci_run '' run "${rt[@]}" "$oci_img" /bin/sh -c "$show"
  expect_rc 0 || return 1
  a=$out
  oci_run '' run "${rt[@]}" "$oci_img" /bin/sh -c "$show"
  expect_rc 0 || return 1
  b=$out
  for x in "$a" "$b"; do
    [[ "$(head -n 1 <<<"$x")" == *kiln.oci* && "$(head -n 1 <<<"$x")" != *kiln.hostname=* ]] ||
      { fail "a warm start's kernel command line is not the template's: $(head -n 1 <<<"$x")"; return 1; }
  done
  [ "$(tail -n 1 <<<"$a")" != "$(tail -n 1 <<<"$b")" ] ||
    { fail "two warm starts drew the same random bytes $(tail -n 1 <<<"$a"): the guest was not reseeded"; return 1; }
  oci_run '' run "${rt[@]}" --annotation io.kiln.warm=false "$oci_img" /bin/sh -c "$show"
  expect_rc 0 || return 1
  c=$out
  [[ "$(head -n 1 <<<"$c")" == *kiln.hostname=* ]] ||
    { fail "io.kiln.warm=false: the kernel command line $(head -n 1 <<<"$c") is not a boot's"; return 1; }
  # two creates of a shape with no template at once: one makes it, the
  # other waits and resumes it (the lock), both run
  local p1 p2 o1 o2
  o1=$(mktemp) o2=$(mktemp)
  timeout 120 podman run "${rt[@]}" --memory 160m "$oci_img" /bin/sh -c 'echo one' >"$o1" 2>&1 &
  p1=$!
  timeout 120 podman run "${rt[@]}" --memory 160m "$oci_img" /bin/sh -c 'echo two' >"$o2" 2>&1 &
  p2=$!
  wait $p1 || { out=$(cat "$o1"); rc=1; fail "the first of two concurrent warm starts failed"; rm -f "$o1" "$o2"; return 1; }
  wait $p2 || { out=$(cat "$o2"); rc=1; fail "the second of two concurrent warm starts failed"; rm -f "$o1" "$o2"; return 1; }
  grep -qx one "$o1" && grep -qx two "$o2" ||
    { out="$(cat "$o1" "$o2")"; fail "two concurrent warm starts: wrong output"; rm -f "$o1" "$o2"; return 1; }
  rm -f "$o1" "$o2"
  [ "$(ls -d /run/kiln-runtime/.warm/*-160m1c-rw 2>/dev/null | wc -l)" = 1 ] ||
    { fail "two concurrent warm starts left: $(ls -A /run/kiln-runtime/.warm)"; return 1; }
  oci_run '' run "${rt[@]}" --annotation io.kiln.warm=maybe "$oci_img" /bin/true
  [ "$rc" != 0 ] || { fail "io.kiln.warm=maybe was taken"; return 1; }
  expect_err 'io.kiln.warm "maybe": want true' || return 1
  # one build's templates (the flows' 512 MiB one, the cgroup check's
  # 192 MiB one), nothing half made
  n=$(ls -A /run/kiln-runtime/.warm | grep -v -e '\.lock$' -e '^empty$')
  [ "$(cut -c1-16 <<<"$n" | sort -u | wc -l)" = 1 ] && grep -q -- '-512m1c-rw$' <<<"$n" &&
    ! grep -q '\.tmp$' <<<"$n" ||
    { fail "/run/kiln-runtime/.warm holds: $(ls -A /run/kiln-runtime/.warm)"; return 1; }
}

# The same flows with kiln-runtime: each container a kiln VM. Afterwards
# nothing of them is left: no kiln-vmm, no shim, no state directory, no
# cgroup.
test_oci_podman_kiln() {
  oci_start || { oci_stop; return 1; }
  local r=0 left
  oci_flows "$PWD/build/kiln-runtime" && oci_flows_life "$PWD/build/kiln-runtime" &&
    oci_net "$PWD/build/kiln-runtime" && oci_cni "$PWD/build/kiln-runtime" &&
    oci_vm_crash "$PWD/build/kiln-runtime" &&
    oci_kiln_cgroup && oci_kiln_checkpoint && oci_kiln_warm || r=1
  if [ $r = 0 ]; then
    left=$(pgrep -a kiln-vmm; ls -A /run/kiln-runtime 2>/dev/null | grep -v -e '^\.ids$' -e '^\.warm$'
      ls -A /run/kiln-runtime-vm 2>/dev/null)
    [ -z "$left" ] || { fail "left behind after podman run --rm: $left"; r=1; }
  fi
  oci_stop
  return $r
}
