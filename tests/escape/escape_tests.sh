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

# escape_run NET-OPTION...: the whole suite with that network; prints it.
escape_run() {
  local d port name marker tpid uid=3999000 share_fd
  d=$(mktemp -d /tmp/kesc.XXXXXX)
  mkdir -p "$d/vm" "$d/share"
  echo "kiln-escape canary" >"$d/canary"
  echo "shared" >"$d/share/file"
  chmod 0755 "$d" "$d/vm"
  ip addr add "$ESCAPE_HOST_ADDR/32" dev lo 2>/dev/null
  /usr/bin/python3 tests/escape/targets.py "$d" &
  tpid=$!
  for _ in $(seq 1 300); do [ -s "$d/ready" ] && break; sleep 0.1; done
  read -r port name <"$d/ready" || { fail "the targets never listened"; kill $tpid; return 1; }
  bash -c 'exec -a kiln-escape-marker sleep 900' &
  marker=$!
  heartbeat kiln-escape
  rc=0
  exec {share_fd}<"$d/share"
  out=$(timeout -k 5 "$BOOT_TIMEOUT" "$ESCAPE" --canary "$d/canary" --tcp "$port" --addr "$ESCAPE_HOST_ADDR" \
    --abstract "$name" --unix "$d/host.sock" --pid "$marker" -- \
    --kernel "$VMLINUX" --initrd "$INITRD" --mem 64 --jail "$d/vm" --uid $uid --gid $uid \
    --share "fd=$share_fd:escape" --vsock "$d/vm/vsock" --control "$d/vm/control" "$@" 2>"$d/err") || rc=$?
  exec {share_fd}<&-
  err=$(cat "$d/err")
  touch "$d/stop"
  kill $marker 2>/dev/null
  wait $tpid 2>/dev/null
  printf '%s\n' "$out" | sed 's/^/    /'
  reached=$(cat "$d/reached" 2>/dev/null)
  ip addr del "$ESCAPE_HOST_ADDR/32" dev lo 2>/dev/null
  rm -rf "$d"
}

escape_check() {
  [ -z "$reached" ] || fail "a host target accepted a connection from the jailed VMM: $reached" || return 1
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

# TAP: the VMM holds a TAP descriptor, but not the host's network namespace.
test_escape_jailed_vmm_with_a_tap_device() {
  local tap=kesc$$
  escape_run --net "tap=$tap,ip=10.79.0.2/24" || { ip link del $tap 2>/dev/null; return 1; }
  ip link del $tap 2>/dev/null
  escape_check
}
