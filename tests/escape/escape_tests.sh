# The escape suite (docs/security.md, "The escape suite"): kiln-escape sets
# a VM up with kiln-vmm's own parser and setup, jailed as kilnd jails it,
# then plays the compromised VMM against targets on this host: a canary
# file, a TCP listener on loopback and on another host address, an
# abstract and a path Unix socket, a process whose command line it must
# not read. Sourced by tests/integration/run-all (it needs real KVM: the
# nested harness). Every attempt's line is printed; any "ESCAPED", or a
# target that saw a connection, fails the test.
# KILN_TEST_ESCAPE: another build's kiln-escape (the tree before a fix, to see the suite fail).
ESCAPE=${KILN_TEST_ESCAPE:-build/tests/kiln-escape}
# An address of "the host" that is not loopback: passt must not reach it
# (TEST-NET-1, RFC 5737, on lo only for the test).
ESCAPE_HOST_ADDR=192.0.2.77

# escape_ns: a network namespace $ns for "the host": loopback up with
# $ESCAPE_HOST_ADDR on it, and an uplink (a TAP with a default route:
# passt copies the host's uplink and will not start without one).
escape_ns() {
  ns=kesc$BASHPID
  ip netns add "$ns" && ip -n "$ns" link set lo up && ip -n "$ns" addr add "$ESCAPE_HOST_ADDR/32" dev lo &&
    ip -n "$ns" tuntap add dev ke0 mode tap && ip -n "$ns" addr add 10.78.0.2/24 dev ke0 &&
    ip -n "$ns" link set ke0 up && ip -n "$ns" route add default via 10.78.0.1 ||
    { rc=1 out= err=; fail "cannot make the host's network namespace $ns"; ip netns del "$ns" 2>/dev/null; return 1; }
}

# escape_run KILN-VMM-OPTION...: the whole suite with those options (@SNAP@
# is the scratch snapshot), inside escape_ns; prints it.
escape_run() {
  local d port name marker tpid uid=3999000 euid=3999001 proxy ns a args=() target=()
  escape_ns || return 1
  d=$(mktemp -d /tmp/kesc.XXXXXX)
  mkdir -p "$d/vm" "$d/share" "$d/snaps/s1" "$d/snaps/s0"
  # A snapshot for --restore, outside the jail as a fork's is (another
  # sandbox's): kiln-vmm opens it before the jail and reads it only in
  # kiln_vm_run, which the suite never reaches, so empty files do.
  : >"$d/snaps/s1/state"
  : >"$d/snaps/s1/memory"
  for a; do args+=("${a//@SNAP@/$d/snaps/s1}"); done
  echo "kiln-escape canary" >"$d/canary"
  echo "shared" >"$d/share/file"
  # escape_graft=1: a pod member's slot, grafted after the jail
  if [ -n "${escape_graft:-}" ]; then
    mkdir -p "$d/graft/root" && echo "a member's file" >"$d/graft/root/file"
    target=(--graft "$d/graft")
  fi
  # The sandbox's egress proxy as kilnd lays it out: its directory (its
  # uid's, 0700: the CA's key, the secrets), its process (that uid, a pid
  # namespace of its own) and vm/egress.sock (targets.py binds it, and a
  # client share's vm/share-0.sock).
  mkdir -p "$d/egress"
  echo "kiln-escape ca key" >"$d/egress/ca.key"
  echo '{"github": "kiln-escape-secret"}' >"$d/egress/secrets.json"
  echo '{}' >"$d/egress/rules.json"
  chmod 0600 "$d/egress/"*
  chown -R $euid:$euid "$d/egress"
  chmod 0700 "$d/egress"
  chmod 0755 "$d" "$d/vm"
  unshare --pid --fork --kill-child setpriv --reuid=$euid --regid=$euid --clear-groups --no-new-privs \
    bash -c 'exec -a kiln-egress-standin sleep 900' >/dev/null 2>&1 &
  for _ in $(seq 1 50); do proxy=$(pgrep -n -f '^kiln-egress-standin') && break; sleep 0.1; done
  ip netns exec "$ns" /usr/bin/python3 tests/escape/targets.py "$d" $uid &
  tpid=$!
  for _ in $(seq 1 300); do [ -s "$d/ready" ] && break; sleep 0.1; done
  read -r port name <"$d/ready" ||
    { fail "the targets never listened"; kill $tpid; ip netns del "$ns"; rm -rf "$d"; return 1; }
  bash -c 'exec -a kiln-escape-marker sleep 900' &
  marker=$!
  heartbeat kiln-escape
  rc=0
  # The share is opened inside `ip netns exec`, which makes a mount
  # namespace of its own: a descriptor from another one cannot be cloned
  # (kiln-vmm refuses it, as it should). Its fresh /sys hides the cgroup2
  # mount, where a root kiln-vmm puts passt under its egress programs:
  # mounted again there.
  out=$(ip netns exec "$ns" bash -c \
    'grep -q " /sys/fs/cgroup cgroup2 " /proc/mounts || mount -t cgroup2 cgroup2 /sys/fs/cgroup; exec 7<"$0" && exec "$@"' \
    "$d/share" \
    timeout -k 5 "$BOOT_TIMEOUT" ${escape_park:+tests/escape/park_start.py} "$ESCAPE" --canary "$d/canary" --tcp "$port" --addr "$ESCAPE_HOST_ADDR" \
    --abstract "$name" --unix "$d/host.sock" --pid "$marker" \
    --egress-dir "$d/egress" --egress-pid "${proxy:-0}" --egress-sock "$d/vm/egress.sock" \
    --share-sock "$d/vm/share-0.sock" "${target[@]}" -- \
    --kernel "$VMLINUX" --initrd "$INITRD" --mem 64 --jail "$d/vm" --uid $uid --gid $uid \
    --share "fd=7:escape" --vsock "$d/vm/vsock" --control "$d/vm/control" "${args[@]}" 2>"$d/err") || rc=$?
  err=$(cat "$d/err")
  touch "$d/stop"
  kill $marker 2>/dev/null
  # pid 1 of its namespace: only SIGKILL reaches it from outside
  [ -n "$proxy" ] && kill -9 "$proxy" 2>/dev/null
  egress_accepted=$(cat "$d/egress-accepted" 2>/dev/null)
  share_accepted=$(cat "$d/share-accepted" 2>/dev/null)
  wait $tpid 2>/dev/null
  printf '%s\n' "$out" | sed 's/^/    /'
  reached=$(cat "$d/reached" 2>/dev/null)
  ip netns del "$ns" 2>/dev/null
  rm -rf "$d"
}

escape_check() {
  [ -z "$reached" ] || fail "a host target accepted a connection from the jailed VMM: $reached" || return 1
  # Its one way out: the jail alone (no filter) connects to vm/egress.sock.
  [ -n "$egress_accepted" ] || fail "the jailed VMM could not connect to vm/egress.sock" || return 1
  # And to a client share's socket, kilnd's relay (which checks every line).
  [ -n "$share_accepted" ] || fail "the jailed VMM could not connect to vm/share-0.sock" || return 1
  printf '%s\n' "$out" | grep -q 'ESCAPED' && { fail "an attempt escaped"; return 1; }
  expect_rc 0 || return 1
  printf '%s\n' "$out" | grep -qE '^escape: [0-9]+ attempts, [0-9]+ blocked, 0 escaped$' ||
    { fail "no summary line"; return 1; }
}

# passt: the network kilnd gives a sandbox by default.
test_escape_jailed_vmm_with_passt_and_a_share() {
  escape_run --net passt || return 1
  escape_check
}

# A restore: the snapshot's directory and its folder are held across the
# jail (read by the restore thread in the jail), as a read-only mount of
# their own whose ".." stays in the folder.
test_escape_jailed_vmm_restoring_a_snapshot() {
  escape_run --restore @SNAP@ || return 1
  escape_check
}

# A pod's sandbox VM (kiln-runtime): a further container's slot grafted
# into its share after the jail, a detached clone whose ".." goes nowhere.
test_escape_jailed_vmm_with_a_pod_graft() {
  escape_graft=1 escape_run --net passt || return 1
  escape_check
}

# A claimed zygote (docs/security.md, "Zygotes"): started alone as pid 1
# of its pid namespace, its KVM VM made while parked, then its command
# line and its share's descriptor received on its park socket, as kilnd
# claims one. It must hold nothing more than a fresh start does.
test_escape_jailed_vmm_from_a_zygote() {
  escape_park=1 escape_run --restore @SNAP@ || return 1
  escape_check
}

# TAP: the VMM holds a TAP descriptor, but not the host's network
# namespace. (The frames it writes into the TAP reach the host's stack as
# they would from the guest: no layer outside the VMM filters them;
# docs/security.md, "Network confinement".)
test_escape_jailed_vmm_with_a_tap_device() {
  escape_run --net "tap=kesct0,ip=10.79.0.2/24" || return 1
  escape_check
}
