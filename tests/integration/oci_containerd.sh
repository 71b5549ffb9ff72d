# kiln-runtime under containerd (issue 34): `ctr run --runc-binary`, so
# containerd's io.containerd.runc.v2 shim drives kiln-runtime exactly as
# it drives runc (--root, --log log.json --log-format json, the pid file
# in the bundle, FIFOs as stdio). Source after lib.sh and oci_lib.sh.
# containerd comes from the host's packages (scripts/install-deps); its
# root, state and socket are on a tmpfs, the CRI plugin is off, the
# snapshotter is `native` (plain directories), no registry.

ctd_start() {
  command -v containerd >/dev/null || { fail "containerd is missing: run scripts/install-deps"; return 1; }
  ctd=$(mktemp -d /run/kiln-ctd.XXXXXX) || return 1
  mount -t tmpfs -o mode=0700 tmpfs "$ctd" || { fail "cannot mount a tmpfs on $ctd"; return 1; }
  mkdir -p "$ctd"/{root,state}
  cat >"$ctd/config.toml" <<EOT
version = 2
root = "$ctd/root"
state = "$ctd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$ctd/sock"
EOT
  containerd --config "$ctd/config.toml" >"$ctd/log" 2>&1 &
  ctd_pid=$!
  local i
  for i in $(seq 300); do
    [ -S "$ctd/sock" ] && ctr -a "$ctd/sock" version >/dev/null 2>&1 && break
    sleep 0.2
  done
  [ -S "$ctd/sock" ] || { err=$(tail -5 "$ctd/log"); fail "containerd did not start"; return 1; }
  python3 tests/integration/oci_image.py docker "$ctd/img.tar" || { fail "oci_image.py failed"; return 1; }
  ctd_ctr images import --snapshotter native "$ctd/img.tar" >/dev/null || { fail "ctr images import failed"; return 1; }
  ctd_img=docker.io/library/kiln-test:latest
}

# ctd_ctr ARGS...: ctr against the test's containerd, bounded.
ctd_ctr() {
  heartbeat "ctr $1"
  timeout 120 ctr -a "$ctd/sock" "$@"
}

ctd_stop() {
  [ -n "${ctd:-}" ] || return 0
  kill "$ctd_pid" 2>/dev/null
  wait "$ctd_pid" 2>/dev/null
  pkill -f "containerd-shim-runc-v2 .*$ctd" 2>/dev/null
  umount -l "$ctd" 2>/dev/null
  rmdir "$ctd" 2>/dev/null
  unset ctd ctd_pid ctd_img
}

# ctd_run STDIN ARGS...: ctd_ctr ARGS through oci_capture.
ctd_run() {
  local in=$1
  shift
  oci_capture "$in" ctd_ctr "$@"
}

test_oci_containerd_kiln() {
  ctd_start || { ctd_stop; return 1; }
  local r=0 krt=$PWD/build/kiln-runtime run=(run --rm --snapshotter native --runc-binary)
  {
    ctd_run '' "${run[@]}" "$krt" "$ctd_img" k1 /bin/busybox echo hello
    expect_rc 0 && expect_out '^hello$' &&
    ctd_run '' "${run[@]}" "$krt" "$ctd_img" k2 /bin/sh -c 'echo out; echo err >&2; exit 7'
    expect_rc 7 && expect_out '^out$' && expect_err 'err' &&
    # kill: a detached container that ignores TERM, killed, then removed
    ctd_run '' run -d --snapshotter native --runc-binary "$krt" "$ctd_img" k3 /bin/busybox sleep 1000
    expect_rc 0 &&
    ctd_run '' task kill -s SIGKILL k3 && expect_rc 0 &&
    ctd_run '' task ls
  } || r=1
  if [ $r = 0 ]; then
    local i
    for i in $(seq 100); do
      ctd_run '' task ls
      printf '%s\n' "$out" | grep -q '^k3 .*STOPPED' && break
      sleep 0.3
    done
    printf '%s\n' "$out" | grep -q '^k3 .*STOPPED' || { fail "k3 did not stop after SIGKILL"; r=1; }
  fi
  if [ $r = 0 ]; then
    ctd_run '' task rm k3 && expect_rc 0 && ctd_run '' containers rm k3 && expect_rc 0 || r=1
  fi
  [ $r = 0 ] && [ -n "$(pgrep kiln-vmm)" ] && { fail "a kiln-vmm is left: $(pgrep -a kiln-vmm)"; r=1; }
  ctd_stop
  return $r
}
