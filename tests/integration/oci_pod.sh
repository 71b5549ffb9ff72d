# A pod at kiln-runtime's command line (issue 34, "Pods"): bundles with
# exactly the annotations containerd's CRI sets (a sandbox, then further
# containers naming it), as a CRI runtime shim drives the runtime
# (and the sandbox's pids limit changed by update). The
# sandbox boots the VM; each further container runs in that VM (the
# same guest boot ID) with its own root (a marker file only its rootfs
# has), its own bind mount, exec, kill and delete (also --force of a
# running one); the guest forgets a deleted one (its ID is taken again);
# delete leaves no VM, mount or state. Sourced by run-all.

# pod_bundle DIR ID TYPE SANDBOX ARGS_JSON: a bundle whose rootfs is the
# minimal image plus /marker (ID), /data bound from $pod_dir/vol-ID.
# $pod_dir is 0711: the VM's uid passes through to the volumes.
pod_bundle() {
  # the volume world-writable: kiln-vmm serves it as the VM's host id
  # (docs/oci-runtime.md), here the sandbox's
  mkdir -p "$1/rootfs" "$pod_dir/vol-$2" && chmod 0777 "$pod_dir/vol-$2"
  (cd "$1/rootfs" && cpio -id --quiet <"$OLDPWD/$INITRD") || return 1
  echo "$2" >"$1/rootfs/marker"
  cat >"$1/config.json" <<EOT
{"ociVersion":"1.0.2","root":{"path":"rootfs"},"hostname":"pod",
 "process":{"args":$5,"cwd":"/","env":["PATH=/bin:/sbin"]},
 "mounts":[{"destination":"/proc","type":"proc","source":"proc"},
   {"destination":"/data","type":"bind","source":"$pod_dir/vol-$2","options":["rbind","rw"]}],
 "linux":{"namespaces":[{"type":"pid"},{"type":"mount"},{"type":"uts"},{"type":"ipc"}]},
 "annotations":{"io.kubernetes.cri.container-type":"$3","io.kubernetes.cri.sandbox-id":"$4"}}
EOT
}

# pod_krt ARGS...: kiln-runtime on the pod's root, bounded; output in $out.
pod_krt() {
  heartbeat "kiln-runtime $1"
  out=$(timeout -k 5 180 "$PWD/build/kiln-runtime" --root "$pod_dir/root" "$@" 2>&1 </dev/null)
  rc=$?
}

# pod_wait_stopped ID: until `state` says stopped (180 s).
pod_wait_stopped() {
  local i
  for i in $(seq 600); do
    pod_krt state "$1"
    [[ $out == *'"status": "stopped"'* ]] && return 0
    sleep 0.3
  done
  fail "container $1 did not stop: $out"
  return 1
}

# pod_create ID: create (the container's stdio: files in $pod_dir) and start.
pod_create() {
  heartbeat "kiln-runtime create $1"
  timeout -k 5 300 "$PWD/build/kiln-runtime" --root "$pod_dir/root" create \
    --bundle "$pod_dir/$1" "$1" </dev/null >"$pod_dir/$1.out" 2>"$pod_dir/$1.err" ||
    { fail "create $1: $(cat "$pod_dir/$1.err")"; return 1; }
  pod_krt start "$1"
  [ "$rc" = 0 ] || { fail "start $1: $out"; return 1; }
}

test_oci_pod_kiln() {
  pod_dir=$(mktemp -d /tmp/kiln-pod.XXXXXX) && chmod 0711 "$pod_dir"
  local r=0 boot
  {
    pod_bundle "$pod_dir/pod1" pod1 sandbox pod1 '["/bin/busybox","sleep","1000"]' &&
    pod_bundle "$pod_dir/c1" c1 container pod1 \
      '["/bin/sh","-c","cat /proc/sys/kernel/random/boot_id /marker; echo from-c1 >/data/f; exit 3"]' &&
    pod_bundle "$pod_dir/c2" c2 container pod1 '["/bin/busybox","sleep","1000"]' &&
    pod_create pod1 &&
    pod_krt exec pod1 /bin/busybox cat /proc/sys/kernel/random/boot_id && expect_rc 0 &&
    boot=$out &&
    # update --pids-limit reaches the guest: at 1 (its sleep) no exec can
    # start, at 8 one can
    pod_krt update --pids-limit 1 pod1 && expect_rc 0 &&
    pod_krt exec pod1 /bin/busybox true &&
    { [ "$rc" != 0 ] || fail "an exec started past pids.limit 1"; } &&
    pod_krt update --pids-limit 8 pod1 && expect_rc 0 &&
    pod_krt exec pod1 /bin/busybox true && expect_rc 0 &&
    # a further container: the sandbox's VM, its own root and bind, its exit
    pod_create c1 && pod_wait_stopped c1 &&
    { [ "$(cat "$pod_dir/c1.out")" = "$boot"$'\n'c1 ] || fail "c1 printed $(cat "$pod_dir/c1.out"), want the sandbox's boot ID $boot and c1"; } &&
    { grep -qx from-c1 "$pod_dir/vol-c1/f" || fail "c1's bind mount did not get its file"; } &&
    { grep -q '^exit_code=3 ' "$pod_dir/root/c1/exit" || fail "c1's exit: $(cat "$pod_dir/root/c1/exit")"; } &&
    # exec into a further container, in its root; kill; delete
    pod_create c2 &&
    pod_krt exec c2 /bin/busybox cat /marker && expect_rc 0 && expect_out '^c2$' &&
    pod_krt kill c2 KILL && expect_rc 0 && pod_wait_stopped c2 &&
    pod_krt delete c2 && expect_rc 0 &&
    { [ ! -e "$pod_dir/root/c2" ] && [ ! -e "$pod_dir/root/pod1/slots/c2" ] || fail "delete c2 left $(ls -R "$pod_dir/root" | head -20)"; } &&
    # the guest forgot c1 at its end: its ID is taken again
    pod_krt delete c1 && expect_rc 0 &&
    pod_create c1 && pod_wait_stopped c1 &&
    pod_krt delete c1 && expect_rc 0 &&
    # delete --force of a running one: its shim killed, the guest made to
    # forget it all the same (the ID is free again)
    pod_create c2 && pod_krt delete --force c2 && expect_rc 0 &&
    pod_create c2 && pod_krt exec c2 /bin/busybox cat /marker && expect_out '^c2$' &&
    pod_krt delete --force c2 && expect_rc 0 &&
    # the sandbox: killed, deleted, nothing left
    pod_krt kill pod1 KILL && expect_rc 0 && pod_wait_stopped pod1 &&
    pod_krt delete pod1 && expect_rc 0
  } || r=1
  if [ $r = 0 ]; then
    grep -q "$pod_dir/root" /proc/self/mountinfo && { fail "mounts left: $(grep "$pod_dir/root" /proc/self/mountinfo)"; r=1; }
    [ -n "$(ls "$pod_dir/root" 2>/dev/null | grep -v '^\.')" ] && { fail "state left: $(ls "$pod_dir/root")"; r=1; }
    [ -n "$(pgrep kiln-vmm)" ] && { fail "a kiln-vmm is left: $(pgrep -a kiln-vmm)"; r=1; }
  fi
  [ $r = 0 ] || cat "$pod_dir"/*.err "$pod_dir"/root/*/vmm.log 2>/dev/null | tail -20 >&2
  pkill -f "kiln-runtime --root $pod_dir/root" 2>/dev/null
  pkill kiln-vmm 2>/dev/null
  grep "$pod_dir" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$pod_dir"
  return $r
}
