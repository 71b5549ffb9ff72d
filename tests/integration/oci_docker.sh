# kiln-runtime under Docker (issue 34): dockerd with --add-runtime, so
# Docker's own containerd runs kiln-runtime through the runc shim
# (BinaryName). Source after lib.sh and oci_lib.sh. dockerd comes from
# the host's packages (scripts/install-deps); its data, exec root and
# socket are on a tmpfs (and /etc/docker, where it writes its key), vfs
# storage, no bridge and no iptables (the container runs with --network
# none), cgroupfs, no registry.

dk_start() {
  command -v dockerd >/dev/null || { fail "dockerd is missing: run scripts/install-deps"; return 1; }
  dk=$(mktemp -d /run/kiln-dk.XXXXXX) || return 1
  mount -t tmpfs -o mode=0700 tmpfs "$dk" || { fail "cannot mount a tmpfs on $dk"; return 1; }
  mkdir -p "$dk"/{root,exec}
  echo '{}' >"$dk/daemon.json"
  # dockerd writes its key into /etc/docker, read-only in the outer VM
  if [ ! -w /etc/docker ]; then
    mount -t tmpfs tmpfs /etc/docker || { fail "cannot make /etc/docker writable"; return 1; }
  fi
  dockerd --config-file "$dk/daemon.json" --data-root "$dk/root" --exec-root "$dk/exec" \
    --pidfile "$dk/pid" -H "unix://$dk/sock" --storage-driver vfs --iptables=false \
    --ip6tables=false --bridge=none --exec-opt native.cgroupdriver=cgroupfs \
    --add-runtime "kiln=$PWD/build/kiln-runtime" >"$dk/log" 2>&1 &
  dk_pid=$!
  local i
  for i in $(seq 300); do
    [ -S "$dk/sock" ] && dk_docker version >/dev/null 2>&1 && break
    kill -0 "$dk_pid" 2>/dev/null || break
    sleep 1
  done
  dk_docker version >/dev/null 2>&1 || { err=$(tail -15 "$dk/log"); fail "dockerd did not start"; return 1; }
  python3 tests/integration/oci_image.py docker "$dk/img.tar" || { fail "oci_image.py failed"; return 1; }
  dk_docker load -q -i "$dk/img.tar" >/dev/null || { fail "docker load failed"; return 1; }
}

# dk_docker ARGS...: the Docker CLI against the test's dockerd, bounded.
dk_docker() {
  heartbeat "docker $1"
  timeout 120 /usr/bin/docker -H "unix://$dk/sock" "$@"
}

dk_stop() {
  [ -n "${dk:-}" ] || return 0
  kill "$dk_pid" 2>/dev/null
  local i
  for i in $(seq 100); do kill -0 "$dk_pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$dk_pid" 2>/dev/null
  wait "$dk_pid" 2>/dev/null
  pkill -f "containerd.*$dk" 2>/dev/null
  umount -l "$dk" 2>/dev/null
  rmdir "$dk" 2>/dev/null
  unset dk dk_pid
}

# dk_run STDIN ARGS...: dk_docker ARGS through oci_capture.
dk_run() {
  local in=$1
  shift
  oci_capture "$in" dk_docker "$@"
}

test_oci_docker_kiln() {
  dk_start || { dk_stop; return 1; }
  local r=0 run=(run --rm --runtime kiln --network none kiln-test:latest)
  {
    dk_run '' "${run[@]}" /bin/busybox echo hello
    expect_rc 0 && expect_out '^hello$' &&
    dk_run '' "${run[@]}" /bin/sh -c 'echo out; echo err >&2; exit 7'
    expect_rc 7 && expect_out '^out$' && expect_err 'err' &&
    dk_run 'in' run --rm -i --runtime kiln --network none kiln-test:latest /bin/busybox cat
    expect_rc 0 && expect_out '^in$'
  } || r=1
  [ $r = 0 ] && [ -n "$(pgrep -x kiln-vmm)" ] && { fail "a kiln-vmm is left: $(pgrep -a kiln-vmm)"; r=1; }
  dk_stop
  return $r
}
