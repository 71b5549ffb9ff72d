# Containers in a kiln.oci guest (docs/agent-protocol.md, 7.9; issue 34's
# kiln-runtime drives them): the guest boots from oci-init.cpio (kiln-init
# alone), leaves the initramfs for a tmpfs root, mounts the shares, and
# runs each container pivoted into its share. Driven raw by ctr_wire.py.
# Sourced by run-all; one guest per test function.
OCI_INITRD=build/rootfs/oci-init.cpio

# ctr_vm_start: a root share holding the minimal image's tree, a bind share
# with one file, the guest booted with kiln.oci. Sets $vd, $vpid, $vs.
ctr_vm_start() {
  vd=$(mktemp -d /tmp/kc.XXXXXX)
  vs="$vd/v.sock"
  mkdir -p "$vd/root" "$vd/binds/ro"
  (cd "$vd/root" && cpio -id --quiet <"$OLDPWD/$INITRD") || { fail "unpacking $INITRD"; return 1; }
  echo hello-from-bind >"$vd/binds/ro/0"
  "$VMM" --kernel "$VMLINUX" --initrd "$OCI_INITRD" --mem 256 --cpus 1 --console --vsock "$vs" \
    --share "$vd/root:r" --share "$vd/binds:b:ro" \
    --cmdline 'kiln.oci kiln.shares=r:/run/kiln/r,b:/run/kiln/b:ro' \
    >"$vd/console" 2>"$vd/vmm.err" </dev/null &
  vpid=$!
}

ctr_vm_stop() {
  kill -9 "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null
  out=$(tr -d '\r' <"$vd/console") err=$(cat "$vd/vmm.err")
  rm -rf "$vd"
}

test_ctr_run_stdio_exit_refusals_kill_and_exec() {
  ctr_vm_start || return 1
  local why= r what
  for what in run refusals kill exec; do
    heartbeat "ctr_wire $what"
    r=$(timeout -k 5 600 python3 tests/integration/ctr_wire.py "$vs" "$what" 2>&1)
    [[ $r == ok* ]] || { why="ctr_wire $what: $r"; break; }
  done
  ctr_vm_stop
  [ -z "$why" ] || { fail "$why"; return 1; }
}
