# Integration test of libkiln as an appliance builder uses it: install
# into a staging root, build examples/appliance.c against the installed
# headers, library and kiln.pc with pkg-config, run it on a real guest.
# Sourced by run-all (uses fail, heartbeat, check from lib.sh and
# agent_tests.sh). A second program (libkiln_agent.c, built the same way)
# walks the rest of the API: streaming exec, spawn/attach/stdin/signal,
# tar both ways, pause/resume, errors as errnos, the guest's shutdown.

test_libkiln_example_installed_boots_execs_forks() {
  local why='' d ex root log
  d=$(mktemp -d /tmp/klib.XXXXXX)
  root="$d/root" ex="$d/ex" log="$d/log"
  rc=0 out='' err=''
  heartbeat "make install"
  if ! make --no-print-directory install DESTDIR="$root" PREFIX=/usr >"$log" 2>&1; then
    err=$(tail -15 "$log"); fail "make install DESTDIR=$root PREFIX=/usr failed"; rm -rf "$d"; return 1
  fi
  check '[ -x "$root/usr/bin/kiln-vmm" ] && [ -x "$root/usr/lib/kiln/kiln-init" ] && [ -f "$root/usr/include/kiln/kiln.h" ] && [ -L "$root/usr/lib/libkiln.so.1" ] && [ -f "$root/usr/lib/libkiln.a" ] && [ -f "$root/usr/share/doc/kiln/libkiln.md" ]' \
    "installed tree incomplete: $(cd "$root" && find . | sort | tr '\n' ' ')"
  cp -r examples "$ex"
  heartbeat "build the example"
  if ! PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_PATH="$root/usr/lib/pkgconfig" \
      make --no-print-directory -C "$ex" >"$log" 2>&1; then
    err=$(tail -15 "$log"); fail "building examples/ against the installed libkiln failed"; rm -rf "$d"; return 1
  fi
  check 'grep -q -- "-I$root/usr/include" "$log" && grep -q -- "-lkiln" "$log"' "the example was not built with pkg-config's flags: $(cat "$log")"
  check 'readelf -d "$ex/appliance" | grep -q "NEEDED.*libkiln.so.1"' "the example does not link libkiln.so.1"
  mkdir "$d/w"
  heartbeat "appliance"
  timeout -k 5 $((BOOT_TIMEOUT * 3)) env LD_LIBRARY_PATH="$root/usr/lib" "$ex/appliance" --kernel "$VMLINUX" \
    --initrd "$TEST_INITRD" --workdir "$d/w" --mem 256 --cpus 2 --timeout "$AGENT_READY_MS" \
    >"$d/out" 2>"$d/err" </dev/null || rc=$?
  out=$(cat "$d/out") err=$(cat "$d/err")
  check '[ "$rc" = 0 ]' "appliance exited $rc"
  check 'grep -q "^booted: agent ready after" "$d/out"' "no boot line"
  check 'grep -qx "hello-from-guest" "$d/out" && grep -q "^Linux " "$d/out"' "the command's output is missing"
  check 'grep -q "^file round trip: 25 bytes ok" "$d/out"' "the file round trip failed"
  check 'grep -q "^snapshot: 256 MiB RAM" "$d/out" && [ -f "$d/w/snap/memory" ]' "no snapshot"
  check 'grep -q "^restored into a second VM: agent answers" "$d/out" && grep -qx "restored-vm-answers" "$d/out"' "the restored VM did not answer"
  check 'grep -qx "hello from the appliance" "$d/out"' "the restored VM lacks the file written before the snapshot"
  check 'grep -q "^fork ended: stopped" "$d/out" && grep -q "^first VM ended: stopped" "$d/out"' "VMs did not end as stopped"
  rm -rf "$d"
  [ -z "$why" ] || { fail "$why"; return 1; }
  printf '%s\n' "$out" | sed 's/^/    | /'
}

test_libkiln_agent_api_on_a_real_guest() {
  local why='' d root log
  d=$(mktemp -d /tmp/klib.XXXXXX)
  root="$d/root" log="$d/log"
  rc=0 out='' err=''
  heartbeat "make install"
  if ! make --no-print-directory install DESTDIR="$root" PREFIX=/usr >"$log" 2>&1; then
    err=$(tail -15 "$log"); fail "make install failed"; rm -rf "$d"; return 1
  fi
  heartbeat "build libkiln_agent"
  # shellcheck disable=SC2046
  if ! cc -std=c11 -Wall -Wextra -Werror -o "$d/libkiln_agent" tests/integration/libkiln_agent.c \
      $(PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_PATH="$root/usr/lib/pkgconfig" pkg-config --cflags --libs kiln) \
      >"$log" 2>&1; then
    err=$(cat "$log"); fail "building libkiln_agent.c against the installed libkiln failed"; rm -rf "$d"; return 1
  fi
  mkdir "$d/w" "$d/t"
  printf 'from the host\n' >"$d/t/a.txt"
  tar --format=ustar -C "$d/t" -cf "$d/up.tar" a.txt
  heartbeat "libkiln_agent"
  timeout -k 5 $((BOOT_TIMEOUT * 3)) env LD_LIBRARY_PATH="$root/usr/lib" "$d/libkiln_agent" --kernel "$VMLINUX" \
    --initrd "$TEST_INITRD" --workdir "$d/w" --tar "$d/up.tar" >"$d/out" 2>"$d/err" </dev/null || rc=$?
  out=$(cat "$d/out") err=$(cat "$d/err")
  check '[ "$rc" = 0 ] && grep -qx "all passed" "$d/out"' "libkiln_agent exited $rc: $(grep FAIL "$d/out")"
  rm -rf "$d"
  [ -z "$why" ] || { fail "$why"; return 1; }
  printf '%s\n' "$out" | tail -3 | sed 's/^/    | /'
}
