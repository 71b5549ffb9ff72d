# Podman in the outer VM, for kiln-runtime's tests (issue 34): storage,
# configuration and state on one tmpfs, no registry, nothing under /etc.
# Source after lib.sh. Podman comes from the host's packages (the outer VM
# mounts the host root read-only): scripts/install-deps installs it.
#
#   oci_start || return 1     # $oci: the tmpfs; $oci_img: the test image's ID
#   oci_podman run --rm --runtime "$PWD/build/kiln-runtime" "$oci_img" /bin/busybox true
#   oci_stop
#
# What Podman 4.3 needs of the read-only root it runs on, found by trying:
# /dev/shm for its lock manager, and writable /var/cache and /var/tmp.

oci_start() {
  command -v podman >/dev/null || { fail "podman is missing: run scripts/install-deps"; return 1; }
  oci=$(mktemp -d /run/kiln-oci.XXXXXX) || return 1
  mount -t tmpfs -o mode=0700 tmpfs "$oci" || { fail "cannot mount a tmpfs on $oci"; return 1; }
  mkdir -p /dev/shm "$oci"/{root,runroot,tmp,conf}
  mountpoint -q /dev/shm || mount -t tmpfs tmpfs /dev/shm
  local d
  for d in /var/cache /var/tmp; do
    [ -w "$d" ] || mount -t tmpfs tmpfs "$d" || { fail "cannot make $d writable"; return 1; }
  done
  cat >"$oci/conf/storage.conf" <<EOT
[storage]
driver = "vfs"
graphroot = "$oci/root"
runroot = "$oci/runroot"
EOT
  cat >"$oci/conf/containers.conf" <<EOT
[engine]
cgroup_manager = "cgroupfs"
events_logger = "none"
EOT
  export CONTAINERS_STORAGE_CONF="$oci/conf/storage.conf" CONTAINERS_CONF="$oci/conf/containers.conf"
  export TMPDIR="$oci/tmp"
  # The test image (busybox, two layers, a whiteout, an owned file), as
  # `docker save` writes it: podman load takes that from a plain path.
  python3 tests/integration/oci_image.py docker "$oci/img.tar" || { fail "oci_image.py failed"; return 1; }
  oci_podman load -q -i "$oci/img.tar" >/dev/null || { fail "podman load failed"; return 1; }
  oci_img=$(oci_podman images -q | head -1)
  [ -n "$oci_img" ] || { fail "podman load gave no image"; return 1; }
}

# oci_podman ARGS...: podman, bounded (60 s; the outer VM is slow).
oci_podman() {
  heartbeat "podman $1"
  timeout 60 podman "$@"
}

oci_stop() {
  [ -n "${oci:-}" ] || return 0
  podman rm -af -t 0 >/dev/null 2>&1
  umount -l "$oci" 2>/dev/null
  rmdir "$oci" 2>/dev/null
  unset CONTAINERS_STORAGE_CONF CONTAINERS_CONF TMPDIR oci oci_img
}

# oci_capture STDIN CMD...: CMD with STDIN as its input ('' for none);
# stdout in $out, stderr in $err, exit status in $rc (as lib.sh's vmm).
# Each engine's wrapper (oci_run, ctd_run, dk_run) runs through it.
oci_capture() {
  local in=$1 o e
  shift
  o=$(mktemp) e=$(mktemp)
  rc=0
  printf '%s' "$in" | "$@" >"$o" 2>"$e" || rc=$?
  out=$(tr -d '\r' <"$o") err=$(cat "$e")
  rm -f "$o" "$e"
}

# oci_run STDIN ARGS...: podman ARGS through oci_capture.
oci_run() {
  local in=$1
  shift
  oci_capture "$in" oci_podman "$@"
}

# oci_flows RUNTIME: what an engine asks of any OCI runtime, through
# `podman run --runtime RUNTIME`: output, the exit status, a missing
# program as 127, stdin, a terminal (-t), the process's limits and
# privileges. 0, or 1 after fail.
oci_flows() {
  local rt=(--runtime "$1" --network none)
  oci_run '' run --rm "${rt[@]}" "$oci_img" /bin/busybox echo hello
  expect_rc 0 && expect_out '^hello$' || return 1
  # config.json's process and linux confinement (issue 34 part 3): the
  # limits, capabilities, no_new_privs, OOM score, sysctl and pids limit the engine
  # asks for, Podman's masked /sys/firmware and read-only /proc/sys,
  # and a seccomp profile denying mkdir
  printf '%s' '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}' \
    >"$oci/deny-mkdir.json"
  oci_run '' run --rm "${rt[@]}" --ulimit nofile=1234:1234 --cap-drop all --cap-add CAP_KILL \
    --security-opt no-new-privileges --oom-score-adj 123 --sysctl kernel.msgmax=12345 --pids-limit 7 \
    --security-opt seccomp="$oci/deny-mkdir.json" "$oci_img" \
    /bin/sh -c 'echo out; echo err >&2; ulimit -n; busybox grep -E "^(NoNewPrivs|CapBnd|CapEff|Seccomp):" /proc/self/status
      busybox cat /proc/self/oom_score_adj /proc/sys/kernel/msgmax /sys/fs/cgroup/pids.max
      busybox grep -q " /sys/firmware " /proc/self/mountinfo && echo fw-masked
      busybox grep -q " /proc/sys ro," /proc/self/mountinfo && echo sys-ro
      busybox mkdir /tmp/d 2>/dev/null || echo mkdir-denied; exit 7'
  expect_rc 7 && expect_out '^out$' && expect_err 'err' && expect_out '^1234$' &&
    expect_out '^NoNewPrivs:\s*1$' && expect_out '^CapBnd:\s*0000000000000020$' &&
    expect_out '^CapEff:\s*0000000000000020$' && expect_out '^Seccomp:\s*2$' && expect_out '^123$' &&
    expect_out '^12345$' && expect_out '^7$' && expect_out '^fw-masked$' && expect_out '^sys-ro$' &&
    expect_out '^mkdir-denied$' || return 1
  oci_run '' run --rm "${rt[@]}" "$oci_img" /nosuch
  expect_rc 127 && expect_err 'not found' || return 1
  oci_run 'from stdin' run --rm -i "${rt[@]}" "$oci_img" /bin/busybox cat
  expect_rc 0 && expect_out '^from stdin$' || return 1
  oci_run '' run --rm -t "${rt[@]}" "$oci_img" /bin/sh -c 'test -t 0 && test -t 1 && echo is-a-tty; exit 5'
  expect_rc 5 && expect_out '^is-a-tty$' || return 1
}

# oci_flows_life RUNTIME: a detached container's life through the engine:
# `stop` reaches the process with SIGTERM (its trap's exit status comes
# back), `kill` ends one that ignores TERM (137), `ps` lists it while it
# runs, `exec` runs further processes in it (exit status, stdin, 127),
# `pause` and `unpause` it, `logs` has its output. 0, or 1 after fail.
oci_flows_life() {
  local rt=(--runtime "$1" --network none) id
  oci_run '' run -d "${rt[@]}" --ulimit nofile=2345:2345 --security-opt no-new-privileges "$oci_img" \
    /bin/sh -c 'trap "echo got-term; exit 3" TERM; echo up; while :; do sleep 0.1; done'
  expect_rc 0 || return 1
  id=$out
  oci_run '' ps -q --no-trunc
  expect_rc 0 && expect_out "^$id$" || return 1
  # an exec's process.json carries the container's limits and no_new_privs
  oci_run '' exec "$id" /bin/sh -c 'echo in-exec; ulimit -n; busybox grep NoNewPrivs /proc/self/status; exit 3'
  expect_rc 3 && expect_out '^in-exec$' && expect_out '^2345$' && expect_out '^NoNewPrivs:\s*1$' || return 1
  oci_run 'exec-stdin' exec -i "$id" /bin/busybox cat
  expect_rc 0 && expect_out '^exec-stdin$' || return 1
  oci_run '' exec "$id" /nosuch
  expect_rc 127 || return 1
  oci_run '' pause "$id"
  expect_rc 0 || return 1
  oci_run '' inspect --format '{{.State.Status}}' "$id"
  expect_rc 0 && expect_out '^paused$' || return 1
  oci_run '' unpause "$id"
  expect_rc 0 || return 1
  oci_run '' stop -t 30 "$id"
  expect_rc 0 || return 1
  oci_run '' inspect --format '{{.State.ExitCode}}' "$id"
  expect_rc 0 && expect_out '^3$' || return 1
  oci_run '' logs "$id"
  expect_rc 0 && expect_out '^up$' && expect_out '^got-term$' || return 1
  oci_run '' rm "$id"
  expect_rc 0 || return 1
  oci_run '' run -d "${rt[@]}" "$oci_img" /bin/busybox sleep 1000
  expect_rc 0 || return 1
  id=$out
  oci_run '' kill "$id"
  expect_rc 0 || return 1
  oci_run '' wait "$id"
  expect_rc 0 && expect_out '^137$' || return 1
  oci_run '' rm "$id"
  expect_rc 0 || return 1
}

# oci_net RUNTIME: the container on the network an engine gives it: a
# namespace holding a veth whose peer, 10.77.0.1 on the host, serves a
# page, passed as `--network ns:PATH` (the path netavark, CNI or
# libnetwork would have made and configured). The container fetches the
# host's page, the host reaches a server in the container, and the
# namespace holds what it held before once they are gone (lo and the
# veth: no TAP left). 0, or 1 after fail.
oci_net() {
  local ns=oci-n1 rt srv id links r=0
  rt=(--runtime "$1" --network "ns:/run/netns/$ns")
  ip netns add $ns && ip link add oci-h1 type veth peer name eth0 netns $ns &&
    ip addr add 10.77.0.1/24 dev oci-h1 && ip link set oci-h1 up &&
    ip -n $ns addr add 10.77.0.2/24 dev eth0 && ip -n $ns link set eth0 up &&
    ip -n $ns link set lo up && ip -n $ns route add default via 10.77.0.1 ||
    { fail "cannot make the test network"; ip netns del $ns 2>/dev/null; return 1; }
  mkdir -p "$oci/www" && echo from-host >"$oci/www/hello"
  python3 -m http.server --bind 10.77.0.1 --directory "$oci/www" 8077 >/dev/null 2>&1 &
  srv=$!
  oci_run '' run --rm "${rt[@]}" "$oci_img" /bin/busybox sh -c \
    'for i in $(seq 60); do wget -qO- http://10.77.0.1:8077/hello && exit; sleep 1; done; exit 9'
  expect_rc 0 && expect_out '^from-host$' || r=1
  if [ $r = 0 ]; then
    oci_run '' run -d "${rt[@]}" "$oci_img" /bin/busybox sh -c 'echo from-ctr | nc -l -p 9000'
    expect_rc 0 || r=1
    id=$out
  fi
  if [ $r = 0 ]; then
    out=$(python3 - <<'EOT'
import socket, time
for _ in range(120):
    try:
        s = socket.create_connection(("10.77.0.2", 9000), timeout=30)
        print(s.recv(100).decode().strip())
        break
    except OSError:
        time.sleep(0.5)
EOT
)
    expect_out '^from-ctr$' || r=1
    oci_run '' rm -f -t 0 "$id"
    expect_rc 0 || r=1
  fi
  links=$(ip -n $ns -o link | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort | tr '\n' ' ')
  [ $r = 1 ] || [ "$links" = "eth0 lo " ] || { fail "the namespace holds '$links' after the containers"; r=1; }
  kill $srv 2>/dev/null
  wait $srv 2>/dev/null
  ip netns del $ns
  return $r
}

# oci_cni RUNTIME: Podman's own container network as most installations
# have it: CNI's bridge plugin (a Linux bridge on the host, a veth into
# each container's namespace, host-local addresses), without the NAT and
# port plugins (the outer VM has no netfilter). A container reaches the
# host's test server at the bridge's address and another container at
# its own address; the bridge has no port left after both. CNI caches
# under /var/lib/cni and the outer VM's root is read-only: it all runs in
# a mount namespace of its own with a tmpfs on /var/lib. 0, or 1 after fail.
oci_cni() {
  oci_rt=$1 oci_dir=$oci oci_image=$oci_img \
    unshare -m --propagation private bash -c '
      . tests/integration/lib.sh && . tests/integration/oci_lib.sh
      oci=$oci_dir oci_img=$oci_image
      mount -t tmpfs tmpfs /var/lib || { fail "cannot mount a tmpfs on /var/lib"; exit 1; }
      oci_cni_in "$oci_rt"'
}

# The part of oci_cni in its mount namespace.
oci_cni_in() {
  local rt net=kilnbr r=0 a ip srv
  mkdir -p "$oci/cni" "$oci/www-cni" && echo from-host >"$oci/www-cni/hello"
  cat >"$oci/cni/$net.conflist" <<EOT
{"cniVersion": "0.4.0", "name": "$net",
 "plugins": [{"type": "bridge", "bridge": "kilnbr0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "routes": [{"dst": "0.0.0.0/0"}],
     "ranges": [[{"subnet": "10.88.77.0/24", "gateway": "10.88.77.1"}]]}}]}
EOT
  cp "$oci/conf/containers.conf" "$oci/conf/cni.conf"
  cat >>"$oci/conf/cni.conf" <<EOT
[network]
network_backend = "cni"
network_config_dir = "$oci/cni"
EOT
  export CONTAINERS_CONF="$oci/conf/cni.conf"
  rt=(--runtime "$1" --network "$net")
  oci_run '' run -d "${rt[@]}" "$oci_img" /bin/busybox sh -c 'echo from-a | nc -l -p 9000'
  expect_rc 0 || return 1
  a=$out
  oci_run '' inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$a"
  ip=$out
  [[ "$ip" == 10.88.77.* ]] || { fail "container $a has address '$ip' on $net"; oci_run '' rm -f -t 0 "$a"; return 1; }
  python3 -m http.server --bind 10.88.77.1 --directory "$oci/www-cni" 8078 >/dev/null 2>&1 &
  srv=$!
  oci_run '' run --rm "${rt[@]}" "$oci_img" /bin/busybox sh -c \
    "for i in \$(seq 60); do wget -qO- http://10.88.77.1:8078/hello && break; sleep 1; done
     for i in \$(seq 60); do nc $ip 9000 && exit 0; sleep 1; done; exit 9"
  expect_rc 0 && expect_out '^from-host$' && expect_out '^from-a$' || r=1
  oci_run '' rm -f -t 0 "$a"
  expect_rc 0 || r=1
  kill $srv 2>/dev/null
  wait $srv 2>/dev/null
  if [ $r = 0 ] && [ -n "$(ls -A /sys/class/net/kilnbr0/brif 2>/dev/null)" ]; then
    fail "the bridge still has ports after the containers: $(ls /sys/class/net/kilnbr0/brif)"
    r=1
  fi
  ip link del kilnbr0 2>/dev/null
  return $r
}
