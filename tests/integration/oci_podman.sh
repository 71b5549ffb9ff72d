# kiln-runtime under Podman (issue 34). Source after lib.sh and oci_lib.sh.

# The engine itself works in the outer VM with a runtime it ships (crun):
# when a kiln-runtime flow fails, this says whether the harness or kiln is
# to blame.
test_oci_podman_crun_baseline() {
  oci_start || { oci_stop; return 1; }
  local r=0
  oci_flows /usr/bin/crun && oci_flows_life /usr/bin/crun || r=1
  oci_stop
  return $r
}

# The VM in the container's cgroup: the shim (the container's pid for
# Podman) and its kiln-vmm are in the cgroupsPath Podman gives (cgroupfs:
# .../libpod-<id>), whose memory.max is the VM's RAM (io.kiln.memory=192)
# plus kiln-runtime's 64 MiB for the VMM; `podman rm -f` leaves no cgroup.
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
  oci_run '' rm -f -t 0 "$id"
  expect_rc 0 || return 1
  [ ! -e "/sys/fs/cgroup$cg" ] || { fail "the container's cgroup $cg is left after podman rm -f"; return 1; }
}

# The same flows with kiln-runtime: each container a kiln VM. Afterwards
# nothing of them is left: no kiln-vmm, no shim, no state directory, no
# cgroup.
test_oci_podman_kiln() {
  oci_start || { oci_stop; return 1; }
  local r=0 left
  oci_flows "$PWD/build/kiln-runtime" && oci_flows_life "$PWD/build/kiln-runtime" || r=1
  # on its own: a flow's failure says nothing of the cgroup
  oci_kiln_cgroup || r=1
  if [ $r = 0 ]; then
    left=$(pgrep -a kiln-vmm; ls -A /run/kiln-runtime 2>/dev/null | grep -v '^\.ids$')
    [ -z "$left" ] || { fail "left behind after podman run --rm: $left"; r=1; }
  fi
  oci_stop
  return $r
}
