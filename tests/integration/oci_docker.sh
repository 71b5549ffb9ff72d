# kiln-runtime under Docker (issue 34): dockerd with --add-runtime, so
# Docker's own containerd runs kiln-runtime through the runc shim
# (BinaryName). Source after lib.sh and oci_lib.sh. dockerd comes from
# the host's packages (scripts/install-deps); its data, exec root and
# socket are on a tmpfs (and /etc/docker, where it writes its key), vfs
# storage, cgroupfs, no registry. It runs in a network namespace of its
# own (dk_ns), so its default bridge network is a fresh installation's
# (docker0 at dk_bip, iptables-nft rules, docker-proxy) without touching
# the outer VM's.

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
  unshare -n dockerd --config-file "$dk/daemon.json" --data-root "$dk/root" \
    --exec-root "$dk/exec" --pidfile "$dk/pid" -H "unix://$dk/sock" --storage-driver vfs \
    --bip "$dk_bip/24" --ip6tables=false --exec-opt native.cgroupdriver=cgroupfs \
    --add-runtime "kiln=$PWD/build/kiln-runtime" >"$dk/log" 2>&1 &
  dk_pid=$!  # unshare execs dockerd
  local i
  for i in $(seq 300); do
    [ -S "$dk/sock" ] && dk_docker version >/dev/null 2>&1 && break
    kill -0 "$dk_pid" 2>/dev/null || break
    sleep 1
  done
  dk_docker version >/dev/null 2>&1 || { err=$(tail -15 "$dk/log"); fail "dockerd did not start"; return 1; }
  # unshare left loopback down: docker-proxy listens on 127.0.0.1
  dk_ns ip link set lo up || { fail "cannot bring up dockerd's loopback"; return 1; }
  python3 tests/integration/oci_image.py docker "$dk/img.tar" || { fail "oci_image.py failed"; return 1; }
  dk_docker load -q -i "$dk/img.tar" >/dev/null || { fail "docker load failed"; return 1; }
}

dk_bip=10.88.78.1

# dk_ns CMD...: CMD in dockerd's network namespace.
dk_ns() { nsenter -t "$dk_pid" -n "$@"; }

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
  [ -n "${dk_srv:-}" ] && { kill "$dk_srv" 2>/dev/null; wait "$dk_srv" 2>/dev/null; }
  umount -l "$dk" 2>/dev/null
  rmdir "$dk" 2>/dev/null
  unset dk dk_pid dk_srv
}

# dk_run STDIN ARGS...: dk_docker ARGS through oci_capture.
dk_run() {
  local in=$1
  shift
  oci_capture "$in" dk_docker "$@"
}

# dk_bridge: the default network both ways. Outward, a container fetches
# a page from a server on docker0's address; inward, the host reaches a
# container's published port through docker-proxy (Docker's prestart
# hook moved the container's veth into the namespace kiln-runtime made,
# and its VM took it). 0, or 1 after fail.
dk_bridge() {
  local i got=''
  mkdir -p "$dk/www" && echo outward >"$dk/www/page"
  dk_ns python3 -m http.server 18081 --bind "$dk_bip" --directory "$dk/www" \
    >/dev/null 2>&1 &
  dk_srv=$!
  dk_run '' run --rm --runtime kiln kiln-test:latest /bin/sh -c \
    "for i in 1 2 3 4 5 6 7 8 9 10; do busybox wget -qO- http://$dk_bip:18081/page && exit 0; sleep 1; done; busybox ip addr; exit 1"
  expect_rc 0 && expect_out '^outward$' || return 1
  # the image's /opq/new.txt holds "new"
  dk_run '' run -d --runtime kiln -p 127.0.0.1:18080:9000 kiln-test:latest \
    /bin/busybox httpd -f -p 9000 -h /opq
  expect_rc 0 || return 1
  local cid=$out
  for i in $(seq 60); do
    got=$(dk_ns busybox wget -qO- http://127.0.0.1:18080/new.txt 2>/dev/null) && break
    sleep 1
  done
  [ "$got" = new ] || dk_run '' logs "$cid"
  dk_run '' rm -f "$cid"
  [ "$got" = new ] || { fail "the published port answered '$got', not 'new'"; return 1; }
  expect_rc 0 || return 1
  [ -z "$(dk_ns ls /sys/class/net/docker0/brif 2>/dev/null)" ] ||
    { fail "docker0 keeps a port: $(dk_ns ls /sys/class/net/docker0/brif)"; return 1; }
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
    expect_rc 0 && expect_out '^in$' &&
    dk_bridge
  } || r=1
  [ $r = 0 ] && [ -n "$(pgrep -x kiln-vmm)" ] && { fail "a kiln-vmm is left: $(pgrep -a kiln-vmm)"; r=1; }
  dk_stop
  return $r
}
