# Helpers for integration tests: sourced by run-all, one test per function.
# Every test boots real guests under kiln-vmm; nothing is mocked.
VMM=${VMM:-build/kiln-vmm}
BZIMAGE=build/kernel/bzImage
VMLINUX=build/kernel/vmlinux
INITRD=build/rootfs/minimal.cpio
# Debian's tools first (scripts/install-deps installs them): a version
# manager's shims in PATH (pyenv's python3 is a shell script) cost half a
# second per call here and half a minute inside the nested harness.
PATH=/usr/bin:/bin:$PATH
export PATH
# Generous: inside the nested harness everything is 50-100x slower.
BOOT_TIMEOUT=${BOOT_TIMEOUT:-300}
# The kiln CLI's request timeouts (docs/cli.md, "kiln CLI timeouts") are sized
# for real KVM; here each call is bounded by the test's own `timeout`.
export KILN_REQUEST_TIMEOUT=${KILN_REQUEST_TIMEOUT:-0}

# heartbeat WHAT: tell the nested harness's stall watchdog that the test
# is moving (it stops the outer VM after KILN_HARNESS_STALL seconds without a
# line in the progress file); long tests call it through vmm, ag and api.
heartbeat() {
  [ -z "${KILN_HARNESS_STATE:-}" ] || echo "$(date +%T)   beat $*" >>"$KILN_HARNESS_STATE/progress"
}

# vmm ARGS...: run kiln-vmm with a timeout; stdout in $out, stderr in $err,
# exit status in $rc.
vmm() {
  local o e
  heartbeat kiln-vmm
  o=$(mktemp) e=$(mktemp)
  rc=0
  timeout -k 5 "$BOOT_TIMEOUT" "$VMM" "$@" >"$o" 2>"$e" </dev/null || rc=$?
  # The serial console ends lines with CR LF.
  out=$(tr -d '\r' <"$o") err=$(cat "$e")
  rm -f "$o" "$e"
}

fail() {
  echo "[  ERROR   ] --- $*"
  # A kilnd test may fail before any command set these.
  echo "    --- exit status: ${rc-}"
  echo "    --- stdout (last 15 lines):"; printf '%s\n' "${out-}" | tail -15 | sed 's/^/    | /'
  echo "    --- stderr:"; printf '%s\n' "${err-}" | tail -15 | sed 's/^/    | /'
  return 1
}

expect_rc() { [ "$rc" = "$1" ] || fail "expected exit status $1, got $rc"; }
expect_out() { printf '%s\n' "$out" | grep -qE -- "$1" || fail "stdout lacks /$1/"; }
expect_err() { printf '%s\n' "$err" | grep -qE -- "$1" || fail "stderr lacks /$1/"; }
# Exactly one line on stderr: bad input gets one clear error.
expect_one_line_err() {
  [ "$(printf '%s\n' "$err" | grep -c .)" = 1 ] || fail "expected one line on stderr"
}
TEST_INITRD=build/rootfs/minimal-test.cpio
ROOT_EXT4=build/rootfs/minimal.ext4
