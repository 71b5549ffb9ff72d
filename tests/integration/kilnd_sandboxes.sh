# kilnd's sandboxes (docs/api.md): requests refused before a
# boot, the lifecycle (with exec, run, files, confinement, cgroup limits,
# owners and the jail checked on its one sandbox), crashes, timeouts,
# restarts and kill -9 of kilnd, parallel creates. Helpers: kilnd_lib.sh.

test_kilnd_requests_refused_without_booting() {
  kd_start || return 1
  local why=
  api GET /v1/health
  kd_check '[ $status = 200 ] && [ "$(jget .status)" = ok ]' "health"
  kd_check '[ "$(jget .pools)" = "[]" ]' "health: no warm pools without --pool"
  api GET /v1/images
  kd_check '[ "$(jget ".images[0].name")" = minimal ]' "images lists minimal"
  api POST /v1/sandboxes -d '{"image":'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_json ]' "bad JSON is 400 bad_json"
  api POST /v1/sandboxes -d '{"image":"minimal","cpus":0}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "cpus 0 is 400 bad_field"
  api POST /v1/sandboxes -d '{"image":"minimal","hostname":"a b"}'
  kd_check '[ $status = 400 ]' "a hostname with a space is 400"
  api POST /v1/sandboxes -d '{"image":"minimal","colour":"red"}'
  kd_check '[ "$(jget .error.code)" = unknown_field ]' "unknown field"
  api POST /v1/sandboxes -d '{"image":"nosuch"}'
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = image_not_found ]' "unknown image is 404"
  api GET /v1/sandboxes/0123456789ab
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = sandbox_not_found ]' "unknown sandbox is 404"
  api DELETE /v1/sandboxes
  kd_check '[ $status = 405 ]' "DELETE /v1/sandboxes is 405"
  head -c 3000000 /dev/zero | tr '\0' 'x' >"$kd/big"
  api POST /v1/sandboxes --data-binary @"$kd/big"
  kd_check '[ $status = 413 ] && [ "$(jget .error.code)" = body_too_large ]' "3 MB body is 413"
  api GET /metrics
  kd_check 'printf "%s" "$body" | grep -q "^kiln_sandboxes{state=\"running\"} 0$"' "metrics"
  kd_done || return 1
  # A pool of an image kilnd does not have: it does not start, and says why.
  local pd
  pd=$(mktemp -d /tmp/kd.XXXXXX)
  out=$("$KILND" --socket "$pd/s" --state-dir "$pd/state" --kernel "$VMLINUX" --vmm "$VMM" \
    --image minimal="$KILND_IMAGE" --pool nosuch=2 2>&1)
  rc=$?
  rm -rf "$pd"
  [ "$rc" = 1 ] && printf '%s' "$out" | grep -q -- "--pool nosuch: no image 'nosuch'" ||
    { err=$out; fail "kilnd --pool of a missing image: exit $rc"; return 1; }
  # Not root: no jail, so no sandbox, unless the operator says --no-jail.
  local kd_wrap=(setpriv --reuid 65534 --regid 65534 --clear-groups) kd_keep
  kd_keep=$(mktemp -d /tmp/kd.XXXXXX)
  chmod 0777 "$kd_keep"
  # It boots nothing: a kernel file it may read is enough (the real one
  # lies beneath root's cache).
  : >"$kd_keep/vmlinux"
  chmod 0644 "$kd_keep/vmlinux"
  kd_start --allow-uid 0 --kernel "$kd_keep/vmlinux" || return 1
  api GET /v1/health
  kd_check '[ "$(jget "[.jail.enabled, .jail.mode, (.jail.reason | contains(\"not root\"))] | words")" = "false unavailable true" ]' "health says why there is no jail"
  api POST /v1/sandboxes -d '{"image":"minimal"}'
  kd_check '[ $status = 503 ] && [ "$(jget .error.code)" = jail_unavailable ] && jget .error.message | grep -q -- --no-jail' "an unjailable kilnd refuses sandboxes, naming --no-jail"
  kd_done
}

# kd_jail_why PID ID: "" when kiln-vmm PID is confined as docs/security.md
# says (checked from /proc, as an operator would), else what is not.
kd_jail_why() {
  local pid=$1 id=$2 uid st t ns vm
  api GET "/v1/sandboxes/$id"
  uid=$(jget 'if .jail then .jail.uid else "" end')
  [ -n "$uid" ] && [ "$uid" != 0 ] && [ "$(jget .jail.gid)" = "$uid" ] || { echo "no jail uid in GET: ${body:0:300}"; return; }
  st=$(cat "/proc/$pid/status") || { echo "no kiln-vmm $pid"; return; }
  printf '%s\n' "$st" | grep -Eq "^Uid:[[:space:]]+$uid[[:space:]]+$uid[[:space:]]+$uid[[:space:]]+$uid\$" || { echo "uid is not $uid: $(grep ^Uid <<<"$st")"; return; }
  printf '%s\n' "$st" | grep -Eq "^Gid:[[:space:]]+$uid[[:space:]]+$uid[[:space:]]+$uid[[:space:]]+$uid\$" || { echo "gid is not $uid: $(grep ^Gid <<<"$st")"; return; }
  printf '%s\n' "$st" | grep -Eq '^Groups:[[:space:]]*$' || { echo "supplementary groups: $(grep ^Groups <<<"$st")"; return; }
  printf '%s\n' "$st" | grep -q '^NoNewPrivs:[[:space:]]*1$' || { echo "no_new_privs is off"; return; }
  for f in CapInh CapPrm CapEff CapBnd CapAmb; do
    printf '%s\n' "$st" | grep -q "^$f:[[:space:]]*0000000000000000$" || { echo "$(grep "^$f" <<<"$st")"; return; }
  done
  for t in /proc/"$pid"/task/*; do
    grep -q '^Seccomp:[[:space:]]*2$' "$t/status" || { echo "thread ${t##*/}: $(grep '^Seccomp' "$t/status")"; return; }
  done
  for ns in pid mnt net ipc uts; do
    [ "$(readlink "/proc/$pid/ns/$ns")" != "$(readlink "/proc/self/ns/$ns")" ] || { echo "shares the host's $ns namespace"; return; }
  done
  grep -q '^NSpid:[[:space:]]*[0-9]*[[:space:]]*1$' <<<"$st" || { echo "not pid 1 of its pid namespace: $(grep ^NSpid <<<"$st")"; return; }
  vm=$kd/state/sandboxes/$id/vm
  [ -S "/proc/$pid/root$vm/control.sock" ] || { echo "its root lacks $vm"; return; }
  [ ! -e "/proc/$pid/root/etc" ] && [ ! -e "/proc/$pid/root/usr" ] && [ ! -e "/proc/$pid/root$kd/state/sandboxes/$id/meta.json" ] ||
    { echo "its root shows more than $vm: $(ls /proc/$pid/root/ | head -5)"; return; }
  touch "/proc/$pid/root/x" 2>/dev/null && { echo "its root is writable"; return; }
}

# Root's sandbox $sid, seen by an allowed client of another uid: not at
# all (docs/api.md "Sandbox owners"), and 404 exactly like a missing one.
kd_check_owner() {
  local nobody=65534 missing
  api_as $nobody GET /v1/sandboxes/0123456789ab
  missing=$(jget .error.message | sed 's/0123456789ab/ID/')
  api_as $nobody GET /v1/sandboxes
  kd_check '[ $status = 200 ] && [ "$(jget ".sandboxes | length")" = 0 ]' "another uid lists none of root's sandboxes"
  api_as $nobody GET "/v1/sandboxes/$sid"
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = sandbox_not_found ] &&
    [ "$(jget .error.message | sed "s/$sid/ID/")" = "$missing" ]' "another uid's GET is the 404 of a missing id"
  api_as $nobody POST "/v1/sandboxes/$sid/exec" -d '{"argv":["true"]}'
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = sandbox_not_found ]' "another uid cannot exec"
  api_as $nobody POST /v1/sandboxes -d "{\"from_checkpoint\":\"$sid/cp\"}"
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = sandbox_not_found ]' "another uid cannot fork"
  api_as $nobody DELETE "/v1/sandboxes/$sid"
  kd_check '[ $status = 404 ]' "another uid cannot delete"
  api GET "/v1/sandboxes/$sid"
  kd_check '[ $status = 200 ] && [ "$(jget .owner_uid)" = 0 ] && [ "$(jget .state)" = running ]' "root still sees it, owner 0"
}

test_kilnd_lifecycle_exec_files_stop_start_delete() {
  # Also the owner and share-swap checks, on this test's one sandbox: a
  # nobody client may connect (socket group, allowed uid).
  kd_start --allow-uid 65534 --socket-group 65534 || return 1
  chmod 711 "$kd"
  mkdir "$kd/shared"
  # The jailed kiln-vmm reaches a share with its jail uid's rights
  # (docs/security.md): make this one writable by it.
  chmod 0777 "$kd/shared"
  local why='' ev
  # A disk smaller than its image is refused before anything boots.
  api POST /v1/sandboxes -d '{"image":"minimal","disk_mib":16}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.message)" = "disk_mib 16 is smaller than image '"'"'minimal'"'"' (32 MiB): give at least 32, or leave it out for the image'"'"'s size" ]' \
    "a disk_mib under the image's size is 400 with the size to give"
  # The disk is 64 MiB, twice the image (kiln-init grows its ext4).
  kd_create '{"image":"minimal","cpus":2,"memory_mib":256,"disk_mib":64,"hostname":"box1","env":{"FOO":"bar"},"labels":{"suite":"kilnd"},
    "shares":[{"host_path":"'"$kd/shared"'","guest_path":"/mnt/shared"}]}' ||
    { kd_stop; return 1; }
  kd_check '[ "$(jget .state)" = running ]' "created sandbox is running"
  kd_check '[ "$(jget ".boot.agent_ready_ms > 0")" = true ]' "boot timeline has agent_ready_ms"
  local jail_why
  jail_why=$(kd_jail_why "$(jget .pid)" "$sid")
  kd_check '[ -z "$jail_why" ]' "kiln-vmm is jailed: $jail_why"
  api GET /v1/health
  kd_check '[ "$(jget .jail.enabled)" = true ]' "health says the jail is on"
  kd_check_owner
  # The share reached kiln-vmm as the directory kilnd opened (fd=N).
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","echo via-fd > /mnt/shared/f"],"user":"root"}'
  kd_check '[ "$(cat "$kd/shared/f" 2>/dev/null)" = via-fd ]' "the guest wrote into the share"
  # disk_mib: the guest sees the whole disk; filling it is ENOSPC inside,
  # the sandbox works on, and the overlay on the host holds what was
  # written. Before the RAM check below: this kilnd's state directory is on
  # the outer VM's tmpfs, where the overlay's pages are RAM charged to the
  # sandbox's cgroup (docs/api.md, disk_mib); fstrim gives them back.
  kd_sh "$sid" 'df -k / | tail -1'
  kd_check '[ "$(kd_out | awk "{print \$2}")" -gt 49152 ]' "df / shows the 64 MiB disk, not the 32 MiB image: $(kd_out)"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","dd if=/dev/zero of=/fill bs=1M 2>&1; sync; echo rc=$?"],"user":"root","timeout_ms":600000}'
  local fill
  fill=$(jget .stdout 2>/dev/null)
  kd_check '[ $status = 200 ] && [[ "$fill" == *"No space left on device"* ]]' "filling the disk ends in ENOSPC: $fill"
  api GET "/v1/sandboxes/$sid"
  kd_check '[ "$(jget "[.disk_mib, .disk.size_bytes, .disk.stored_bytes > 20971520] | words")" = "64 67108864 true" ]' \
    "GET shows the disk's size and the written bytes the overlay stores: $(jget .disk 2>/dev/null)"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","rm /fill && fstrim / >/dev/null 2>&1; echo after > /after && cat /after"],"user":"root"}'
  kd_check '[ $status = 200 ] && [ "$(jget .stdout)" = "after" ]' "the sandbox writes again once the filler is gone"
  # Its cgroup (docs/security.md, "cgroup limits"): the limits computed
  # from cpus 2 and memory_mib 256 are in force with kiln-vmm inside, and
  # a guest that touches all its RAM does not push the VMM past memory.max.
  local cg pid peak
  api GET "/v1/sandboxes/$sid"
  cg=$(jget .cgroup) pid=$(jget .pid)
  kd_check '[ "$(jget ".limits == {memory_max_mib: 336, pids_max: 66, cpu_max: 2}")" = true ]' "the sandbox shows its limits"
  # memory.max: 336 MiB, and with the state directory in RAM (the outer
  # VM's /tmp) twice the 64 MiB disk and the 256 MiB of RAM above it
  local max=$((336 << 20))
  api GET /v1/health
  [ "$(jget .state_dir.in_ram)" = true ] && max=$(((336 + 2 * 64 + 256) << 20))
  kd_check '[ -d "$cg" ] && [ "$(cat "$cg/memory.max")" = $max ] && [ "$(cat "$cg/pids.max")" = 66 ] && [ "$(cat "$cg/cpu.max")" = "200000 100000" ]' "its cgroup $cg has the limits in force ($max)"
  kd_check 'grep -qx "$pid" "$cg/cgroup.procs"' "kiln-vmm (pid $pid) runs in its cgroup"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","for i in 1 2 3; do dd if=/dev/zero of=/dev/null bs=120M count=1 2>/dev/null & done; wait; echo filled"]}'
  kd_check '[ $status = 200 ] && [ "$(jget ".stdout | strip")" = filled ]' "the guest ran three 120 MiB allocations in 256 MiB"
  peak=$(cat "$cg/memory.peak" 2>/dev/null || cat "$cg/memory.current")
  kd_check '[ "$peak" -ge $((200 << 20)) ] && [ "$peak" -le $max ] && [ "$(cat "$cg/memory.current")" -le $max ]' "the guest filled its RAM ($peak bytes at most in the cgroup) within memory.max"
  kd_check 'grep -qx "oom_kill 0" "$cg/memory.events" && grep -qx "$pid" "$cg/cgroup.procs"' "the VMM was not OOM-killed"
  api GET /v1/health
  kd_check '[ "$(jget .cgroups.used)" = true ]' "health says cgroups are used"


  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["echo","hello"]}'
  kd_check '[ $status = 200 ] && [ "$(jget ".stdout == \"hello\\n\" and .exit_code == 0")" = true ]' "exec echo"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","echo $FOO $(hostname) $(nproc); exit 3"]}'
  kd_check '[ "$(jget ".stdout | strip")" = "bar box1 2" ] && [ "$(jget .exit_code)" = 3 ]' "exec env, hostname, cpus, exit status"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["cat"],"stdin":"piped"}'
  kd_check '[ "$(jget .stdout)" = piped ]' "exec stdin"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["/no/such/program"]}'
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = not_found ]' "missing program is 404 not_found"
  api POST "/v1/sandboxes/$sid/exec?stream=1" -d '{"argv":["sh","-c","echo one; echo two >&2; echo three"]}'
  ev=$(jq -rs '[([.[] | select(.type == "stdout") | .data] | add | gsub("\n"; "|")), .[-1].type, .[-1].exit_code] | map(tostring) | join(" ")' <<<"$body")
  kd_check '[ "$ev" = "one|three| exit 0" ]' "streamed exec events: $ev"
  # A quiet process: the stream's head comes 1 s after the exec was asked
  # for (EXEC_HEAD_MS), before any output, so a client can bound its wait
  # for it; the events follow as before.
  t=$(curl -sS -N --unix-socket "$kds" -o "$kd/quiet.ndjson" -w '%{http_code} %{time_starttransfer} %{time_total}' \
    -X POST "http://kiln/v1/sandboxes/$sid/exec?stream=1" -d '{"argv":["sh","-c","sleep 4; echo late"]}')
  ev=$(jq -rs '[([.[] | select(.type == "stdout") | .data] | add | gsub("\n"; "|")), .[-1].type] | map(tostring) | join(" ")' <"$kd/quiet.ndjson")
  kd_check 'read -r code head total <<<"$t" && [ "$code" = 200 ] && awk -v h="$head" -v t="$total" "BEGIN { exit !(h < 3.5 && t >= 4) }" && [ "$ev" = "late| exit" ]' \
    "a quiet stream's head before its output ($t): $ev"
  # run (POST .../run) in the minimal image: bash is busybox's sh there,
  # and python is missing, which says so once.
  api POST "/v1/sandboxes/$sid/run" -d '{"language":"bash","code":"echo hi; result set \"[1,2]\"; exit 2"}'
  kd_check '[ $status = 200 ] && [ "$(jget ".stdout == \"hi\\n\" and .result == [1, 2] and has(\"error\") and .error == null and .exit_code == 2")" = true ]' "run bash: output, result, exit status"
  # Reals come back as the shortest text that reads back (issue 35 item 12):
  # the agent, kilnd and the CLI each re-write them (jansson: 3.1419999999999999).
  api POST "/v1/sandboxes/$sid/run" -d '{"language":"bash","code":"result set \"{\\\"pi\\\": 3.142, \\\"big\\\": 1e300, \\\"z\\\": -0.0, \\\"f\\\": 5.0}\""}'
  kd_check '[ $status = 200 ] && printf "%s" "$body" | grep -qF "\"result\":{\"pi\":3.142,\"big\":1e+300,\"z\":-0.0,\"f\":5.0}"' "run: reals in kilnd's answer as written"
  o=$(KILN_SOCKET=$kds build/kiln run-code "$sid" --language bash -c 'result set "{\"pi\": 3.142, \"ms\": 440.763456}"' 2>&1)
  kd_check '[ "$o" = "{\"pi\":3.142,\"ms\":440.763456}" ]' "kiln run-code prints the reals as written: $o"
  api POST "/v1/sandboxes/$sid/run" -d '{"language":"python","code":"print(1)"}'
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = not_found ] && jget .error.message | grep -q "language \"python\" needs python3 in the image: use the debian image"' "run python without python3: one clear error"
  # ... and confined (confine: true, as for exec): no /etc/passwd, /workspace writable, the result back;
  # of /run/kiln-run only the helpers and its own directory (not r.decoy, as another run's would be).
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["mkdir","/run/kiln-run/r.decoy"],"user":"root"}'
  api POST "/v1/sandboxes/$sid/run" -d '{"language":"bash","confine":true,"code":"cat /etc/passwd >/dev/null 2>&1 && echo leaked; ls /run/kiln-run | grep -c .; test -e /run/kiln-run/r.decoy && echo sees-other-run; echo r > /workspace/from-run && result set 7"}'
  kd_check '[ $status = 200 ] && [ "$(jget ".stdout == \"4\\n\" and .result == 7 and .exit_code == 0")" = true ]' "a confined run: no /etc/passwd, no other run's directory, /workspace written, its result"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["rmdir","/run/kiln-run/r.decoy"],"user":"root"}'
  kd_confine_checks

  head -c 3145728 /dev/urandom >"$kd/up.bin"
  api PUT "/v1/sandboxes/$sid/files?path=/home/user/dir/up.bin&parents=true" -T "$kd/up.bin"
  kd_check '[ $status = 200 ] && [ "$(jget .bytes)" = 3145728 ]' "PUT 3 MiB"
  curl -sS --unix-socket "$kds" -o "$kd/down.bin" "http://kiln/v1/sandboxes/$sid/files?path=/home/user/dir/up.bin"
  kd_check 'cmp -s "$kd/up.bin" "$kd/down.bin"' "GET returns the same 3 MiB"
  api GET "/v1/sandboxes/$sid/files?path=/home/user/nope"
  kd_check '[ $status = 404 ]' "GET of a missing file is 404"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sync"]}'

  api POST "/v1/sandboxes/$sid/stop"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = stopped ] && [ "$(jget .last_exit.reason)" = stopped ]' "stop"
  kd_check '[ ! -e "$cg" ] && jnull .cgroup' "the stopped VMM's cgroup is gone"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["true"]}'
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = wrong_state ]' "exec on a stopped sandbox is 409"
  api POST "/v1/sandboxes/$sid/stop"
  kd_check '[ $status = 409 ]' "stopping twice is 409"
  # Share swap: the shared directory replaced by a symbolic link while
  # stopped. The next start opens it without following links: refused
  # before kiln-vmm runs, naming the share and the component.
  mv "$kd/shared" "$kd/shared.real" && ln -s "$kd/shared.real" "$kd/shared"
  api POST "/v1/sandboxes/$sid/start"
  kd_check '[ $status = 403 ] && [ "$(jget .error.code)" = forbidden ] &&
    jget .error.message | grep -q "shares\[0\].*component .shared. .*symbolic link"' "a start with a swapped share is refused"
  rm "$kd/shared" && mv "$kd/shared.real" "$kd/shared"
  api POST "/v1/sandboxes/$sid/start"
  # boots: 2, one more for each boot kilnd retried (kiln_boot_retries_total).
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = running ] && [ "$(jget .boots)" = $((2 + $(kd_metric kiln_boot_retries_total))) ]' "start again"
  curl -sS --unix-socket "$kds" -o "$kd/again.bin" "http://kiln/v1/sandboxes/$sid/files?path=/home/user/dir/up.bin"
  kd_check 'cmp -s "$kd/up.bin" "$kd/again.bin"' "the file survived stop/start on the overlay"
  api GET "/v1/sandboxes?label=suite=kilnd"
  kd_check '[ "$(jget ".sandboxes | length")" = 1 ]' "list by label"

  api DELETE "/v1/sandboxes/$sid"
  kd_check '[ $status = 204 ]' "delete"
  kd_check '[ ! -e "$kd/state/sandboxes/$sid" ]' "delete removed the sandbox directory"
  api GET "/v1/sandboxes/$sid"
  kd_check '[ $status = 404 ]' "deleted sandbox is 404"
  kd_done || return 1
  expect_rc 0
}

# kd_confine_checks: "confine": true (docs/api.md, "Confinement") on the
# lifecycle test's sandbox (the minimal image on a disk, so the pivot_root
# path; test_agent_exec_basics covers an initramfs root): a confined process cannot read /etc/passwd, sees
# /workspace (its cwd and HOME) read-write and a private /tmp, cannot write
# to its root; the same through processes; an unconfined exec is as before;
# uid 1000 can stack user, mount and pid namespaces (the guest kernel's
# namespaces; busybox's unshare).
kd_confine_checks() {
  heartbeat "confine"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","echo outside > /tmp/outside; printf \"#!/bin/sh\\necho hi\\n\" > /home/user/x; chmod +x /home/user/x; head -c 5 /etc/passwd; id -u"]}'
  kd_check '[ "$(jget .stdout)" = "$(printf "root:1000")" ]' "an unconfined exec reads /etc/passwd and /tmp as before"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","cat /etc/passwd || echo no-passwd; test -e /tmp/outside && echo sees-tmp; echo mine > /tmp/own; echo confined > c.txt; echo $(pwd) $HOME $(id -u); touch /x 2>/dev/null || echo ro-root; ls /home /root 2>/dev/null || echo no-home"],"confine":true}'
  kd_check '[ $status = 200 ] && [ "$(jget .stdout)" = "$(printf "no-passwd\n/workspace /workspace 1000\nro-root\nno-home")" ] &&
    jget .stderr | grep -q "/etc/passwd.*No such file"' "a confined exec: no /etc/passwd, its own /tmp, /workspace its cwd and HOME, a read-only root"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","cat /workspace/c.txt; test -e /tmp/own || echo tmp-private"]}'
  kd_check '[ "$(jget .stdout)" = "$(printf "confined\ntmp-private")" ]' "the confined write is in /workspace unconfined; its /tmp was its own"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["cat","/etc/passwd"],"confine":"yes"}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "confine: \"yes\" is 400 bad_field"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["/home/user/x"],"confine":true}'
  kd_check '[ $status = 404 ] && jget .error.message | grep -q "not visible"' "a program outside the confined view is 404, saying why"
  api POST "/v1/sandboxes/$sid/processes" -d '{"argv":["sh","-c","cat /etc/passwd 2>/dev/null || echo proc-confined; pwd"],"confine":true,"cwd":"/workspace"}'
  local cpid
  cpid=$(jget .id)
  api POST "/v1/sandboxes/$sid/processes/$cpid/wait?timeout_ms=60000"
  api GET "/v1/sandboxes/$sid/processes/$cpid/output?from=0"
  kd_check 'printf "%s" "$body" | python3 -c "import json, sys; ev = [json.loads(l) for l in sys.stdin if l.strip()]; sys.exit(\"\".join(e.get(\"data\", \"\") for e in ev if e[\"type\"] == \"stdout\") != \"proc-confined\\n/workspace\\n\")"' "a confined background process ($body)"
  # Its own PID namespace: beside an unconfined process of the same user,
  # whose /proc/PID/root is the real root, a confined one sees neither.
  local upid tpid
  api POST "/v1/sandboxes/$sid/processes" -d '{"argv":["sleep","600"]}'
  upid=$(jget .id)
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","echo $$; for p in /proc/[0-9]*; do cat $p/root/etc/passwd 2>/dev/null; done | head -c 4; echo end"],"confine":true}'
  kd_check '[ $status = 200 ] && [ "$(jget .stdout)" = "$(printf "2\nend")" ]' "a confined exec is PID 2 of its own namespace and reaches no other process's root"
  api POST "/v1/sandboxes/$sid/processes/$upid/signal" -d '{"signal":"KILL"}'
  # A signal to a confined process reaches the program, and its exit is the program's.
  api POST "/v1/sandboxes/$sid/processes" -d '{"argv":["sh","-c","trap \"echo got-term; exit 7\" TERM; echo ready; while :; do sleep 1; done"],"confine":true}'
  tpid=$(jget .id)
  sleep 2
  api POST "/v1/sandboxes/$sid/processes/$tpid/signal" -d '{"signal":"TERM"}'
  api POST "/v1/sandboxes/$sid/processes/$tpid/wait?timeout_ms=60000"
  kd_check '[ "$(jget .exit_code)" = 7 ]' "TERM reached the confined program, which exited 7 (${body:0:200})"
  api POST "/v1/sandboxes/$sid/processes" -d '{"argv":["sleep","600"],"confine":true}'
  tpid=$(jget .id)
  api POST "/v1/sandboxes/$sid/processes/$tpid/signal" -d '{"signal":"TERM"}'
  api POST "/v1/sandboxes/$sid/processes/$tpid/wait?timeout_ms=60000"
  kd_check '[ "$(jget .signal)" = 15 ] && jnull .exit_code' "a confined program killed by TERM shows signal 15 (${body:0:200})"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","unshare --user --map-root-user --mount --pid --fork sh -c \"id -u; echo \\$\\$\" && echo unshare-ok; test -f /sys/fs/cgroup/cgroup.controllers && echo cgroup2"]}'
  kd_check '[ "$(jget .stdout)" = "$(printf "0\n1\nunshare-ok\ncgroup2")" ]' "uid 1000 unshares user, mount and pid namespaces; cgroup2 is mounted (${body:0:300})"
}

# A state directory whose path holds kiln-vmm's old separators (',' ':'):
# kilnd passes the overlay, the vsock socket and the jail one per option,
# which kiln-vmm takes whole, so the sandbox boots, runs and keeps its
# files in a folder of that name.
test_kilnd_state_dir_with_separators_boots() {
  local kd_keep why=''
  kd_keep=$(mktemp -d "/tmp/kd,a:b.XXXXXX")
  kd_start || { rm -rf "$kd_keep"; return 1; }
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","echo sep-ok > /home/user/f; cat /home/user/f"]}'
  kd_check '[ $status = 200 ] && [ "$(jget .stdout)" = sep-ok ]' "exec in a sandbox under $kd"
  api GET "/v1/sandboxes/$sid/files?path=/home/user/f"
  kd_check '[ $status = 200 ] && [[ $body == sep-ok* ]]' "read a file back"
  kd_check '[ -n "$(find "$kd/state" -name overlay -size +0)" ]' "the overlay lives under the state directory"
  api DELETE "/v1/sandboxes/$sid"
  kd_check '[ $status = 204 ]' "delete"
  kd_stop
  [ -z "$why" ] || { fail "$why"; return 1; }
}

test_kilnd_killed_vmm_is_crashed_and_others_unaffected() {
  kd_start || return 1
  local why='' a b pid cg
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  a=$sid
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  b=$sid
  api GET "/v1/sandboxes/$a"
  pid=$(jget .pid)
  kill -KILL "$pid"
  kd_check 'kd_wait_state "$a" crashed' "a killed kiln-vmm shows crashed"
  kd_check '[ "$(jget .last_exit.signal)" = 9 ] && [ "$(jget .last_exit.reason)" = crashed ] && jnull .pid' "last_exit says SIGKILL"
  kd_check '[ ! -e "$kd/state/sandboxes/$a/vm/vsock.sock" ]' "the crashed sandbox's vsock socket is gone"
  api POST "/v1/sandboxes/$a/exec" -d '{"argv":["true"]}'
  kd_check '[ $status = 409 ]' "exec on a crashed sandbox is 409"
  api POST "/v1/sandboxes/$b/exec" -d '{"argv":["echo","still"]}'
  kd_check '[ $status = 200 ] && [ "$(jget ".stdout | strip")" = still ]' "the other sandbox still runs"
  api GET /metrics
  kd_check 'printf "%s" "$body" | grep -q "^kiln_sandbox_crashes_total 1$"' "crash counted"
  api POST "/v1/sandboxes/$a/start"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = running ]' "a crashed sandbox starts again"
  # A VMM killed at its cgroup's memory.max is reported as such, not as a
  # mystery crash: shrinking memory.max below what it uses OOM-kills it.
  cg=$(jget .cgroup)
  kd_check '[ -d "$cg" ] && (echo 8M >"$cg/memory.max")' "shrink memory.max of $cg"
  kd_check 'kd_wait_state "$a" crashed' "a VMM killed at memory.max shows crashed"
  kd_check '[ "$(jget .last_exit.reason)" = memory_limit ] && jget .last_exit.message | grep -q memory.max' "last_exit says memory_limit"
  kd_check '[ ! -e "$cg" ]' "the killed VMM's cgroup is gone"
  api DELETE "/v1/sandboxes/$a"
  api DELETE "/v1/sandboxes/$b"
  kd_check '[ $status = 204 ]' "delete a running sandbox"
  kd_done
}

test_kilnd_timeout_stops_the_sandbox() {
  kd_start || return 1
  local why=
  kd_create '{"image":"minimal","timeout_s":5}' || { kd_stop; return 1; }
  kd_check '[ "$(jget .expires_at)" != null ]' "expires_at is set"
  kd_check 'kd_wait_state "$sid" stopped' "the timeout stopped it"
  kd_check '[ "$(jget .last_exit.reason)" = timeout ]' "last_exit.reason is timeout"
  kd_done
}

test_kilnd_restart_lists_its_sandboxes() {
  kd_start || return 1
  local why='' a b
  kd_create '{"image":"minimal","labels":{"keep":"yes"}}' || { kd_stop; return 1; }
  a=$sid
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  b=$sid
  api POST "/v1/sandboxes/$a/stop"
  # SIGTERM stops b cleanly; the state directory stays for the next kilnd.
  kd_stop keep
  kd_keep=$kd kd_start || return 1
  api GET /v1/sandboxes
  kd_check '[ "$(jget ".sandboxes | length")" = 2 ]' "both sandboxes listed after a restart"
  api GET "/v1/sandboxes/$b"
  kd_check '[ "$(jget .state)" = stopped ]' "the sandbox running at SIGTERM is stopped"
  api POST "/v1/sandboxes/$a/start"
  kd_check '[ $status = 200 ] && [ "$(jget .labels.keep)" = yes ]' "a restored sandbox starts with its settings"
  kd_done
}

# kill -9 of kilnd leaves its sandboxes running; the next kilnd
# reattaches them. Two sandboxes with a background process each printing
# a counter, a third whose VMM is killed while no kilnd runs; then
# kilnd --upgrade hands everything over to yet another kilnd.
test_kilnd_kill9_reattaches_running_sandboxes() {
  kd_start || return 1
  local why='' s id pid started proc seq ev
  local -A vpid vstart vproc vseq
  for s in a b c; do
    kd_create '{"image":"minimal","memory_mib":96}' || { kd_stop; return 1; }
    eval "id_$s=$sid"
    vpid[$s]=$(jget .pid)
    vstart[$s]=$(jget .started_at)
  done
  for s in a b; do
    eval "id=\$id_$s"
    api POST "/v1/sandboxes/$id/processes" -d '{"argv":["sh","-c","i=0; while :; do echo n$i; i=$((i+1)); sleep 0.2; done"]}'
    kd_check '[ $status = 201 ]' "background process in $s"
    vproc[$s]=$(jget .id)
  done
  sleep 2
  for s in a b; do
    eval "id=\$id_$s"
    api GET "/v1/sandboxes/$id/processes/${vproc[$s]}"
    vseq[$s]=$(jget .output_bytes)
  done
  heartbeat "kill -9 kilnd with three running sandboxes"
  kill -KILL "$kdpid"
  wait "$kdpid" 2>/dev/null
  # The VMMs run on without a daemon; one of them dies meanwhile.
  kd_check 'kill -0 "${vpid[a]}" && kill -0 "${vpid[b]}" && kill -0 "${vpid[c]}"' "VMMs outlive kilnd"
  kill -KILL "${vpid[c]}"
  sleep 3
  kd_keep=$kd kd_start || return 1
  for s in a b; do
    eval "id=\$id_$s"
    api GET "/v1/sandboxes/$id"
    kd_check '[ "$(jget .state)" = running ] && [ "$(jget .pid)" = "${vpid[$s]}" ] && [ "$(jget .started_at)" = "${vstart[$s]}" ]' "$s: running, same VMM pid and started_at after kill -9 of kilnd"
    api GET "/v1/sandboxes/$id/processes/${vproc[$s]}"
    kd_check '[ "$(jget .running)" = true ] && [ "$(jget ".output_bytes > ${vseq[$s]}")" = true ]' "$s: its process printed on while no kilnd ran"
    # Re-attach where we left: the first byte is ours, the counter has no gap.
    curl -sS -N --max-time 3 --unix-socket "$kds" "http://kiln/v1/sandboxes/$id/processes/${vproc[$s]}/output?from=${vseq[$s]}" >"$kd/out_$s" 2>/dev/null
    ev=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.endswith("\n")]
out = [e for e in ev if e["type"] == "stdout"]
text = "".join(e["data"] for e in out)
nums = [int(w[1:]) for w in text.split("\n")[:-1] if w.startswith("n")]
gap = any(b != a + 1 for a, b in zip(nums, nums[1:]))
print(out[0]["seq"] if out else -1, len(nums) > 5 and not gap)' "$kd/out_$s")
    kd_check '[ "$ev" = "${vseq[$s]} True" ]' "$s: output re-attached from seq ${vseq[$s]} without a gap ($ev)"
    api POST "/v1/sandboxes/$id/exec" -d '{"argv":["echo","after-restart"]}'
    kd_check '[ $status = 200 ] && [ "$(jget ".stdout | strip")" = after-restart ]' "$s: exec after the restart"
  done
  api GET "/v1/sandboxes/$id_c"
  kd_check '[ "$(jget .state)" = crashed ] && [ "$(jget .last_exit.signal)" = 9 ] && [ "$(jget .last_exit.reason)" = crashed ] && jnull .pid' "c: killed while no kilnd ran, crashed with signal 9"
  # kilnd --upgrade: the next kilnd takes the socket and the sandboxes over.
  local old=$kdpid rc_old
  kd_keep=$kd kd_start --upgrade || return 1
  wait "$old"
  rc_old=$?
  kd_check '[ "$rc_old" = 0 ] && grep -q "handed over; exiting" "$kd/kilnd.log"' "the old kilnd handed over and exited 0 ($rc_old)"
  api GET "/v1/sandboxes/$id_b"
  kd_check '[ "$(jget .state)" = running ] && [ "$(jget .pid)" = "${vpid[b]}" ]' "b: running with the same VMM after kilnd --upgrade"
  api POST "/v1/sandboxes/$id_b/exec" -d '{"argv":["echo","after-upgrade"]}'
  kd_check '[ $status = 200 ] && [ "$(jget ".stdout | strip")" = after-upgrade ]' "b: exec after kilnd --upgrade"
  # Supervised again: a stop reaches the reattached VMM and sees it end.
  api POST "/v1/sandboxes/$id_a/stop"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = stopped ]' "a: stop after the restart"
  kd_check '! kill -0 "${vpid[a]}" 2>/dev/null' "a: its VMM is gone after the stop"
  kd_done
}

# kill -9 of kilnd while creates are in flight. A create that
# never answered its client must leave nothing behind: after five rounds
# of (start, a burst of creates, kill -9 after a short random delay), the
# API's list and the directories under state/sandboxes agree, nothing is
# left crashed with boot null, every --max-sandboxes slot is free (the
# list is empty) and a create succeeds. The delays cover the whole create:
# before its first meta.json, while kiln-vmm starts, while the guest boots.
test_kilnd_kill9_during_creates_leaves_nothing() {
  local why='' round i k delay ids dirs cpids id cgp=/sys/fs/cgroup/kiln
  local -a delays=(0.05 0.3 1 2 4)
  kd_keep=$(mktemp -d /tmp/kd.XXXXXX)
  for round in 0 1 2 3 4; do
    kd_keep=$kd_keep kd_start --max-sandboxes 4 || return 1
    cpids=()
    for i in 1 2 3; do
      curl -sS --max-time 600 --unix-socket "$kds" -o /dev/null -X POST http://kiln/v1/sandboxes \
        -d '{"image":"minimal","memory_mib":96}' 2>/dev/null &
      cpids+=($!)
    done
    # A short random delay: from mid-request to mid-boot.
    delay=$(python3 -c "import random; print(round(${delays[$round]} * (0.5 + random.random()), 3))")
    sleep "$delay"
    heartbeat "kill -9 kilnd after $delay s (round $round)"
    kill -KILL "$kdpid"
    wait "$kdpid" 2>/dev/null
    for k in "${cpids[@]}"; do wait "$k" 2>/dev/null; done
  done
  kd_keep=$kd_keep kd_start --max-sandboxes 4 || return 1
  kd_keep=
  api GET /v1/sandboxes
  ids=$(jget '([.sandboxes[] | .id] | sort) | join(" ")')
  dirs=$(ls -A "$kd/state/sandboxes" | sort | paste -sd ' ' -)
  kd_check '[ "$ids" = "$dirs" ]' "the API lists '$ids', the state directory holds '$dirs'"
  kd_check '[ "$(jget "[.sandboxes[] | select(.boot == null)] | length")" = 0 ]' "a sandbox that never booted is listed"
  # A create that answered before its kill (a fast boot) is a sandbox of
  # its own; it goes, and then no slot may be held by anything.
  for id in $ids; do api DELETE "/v1/sandboxes/$id"; done
  api GET /v1/sandboxes
  kd_check '[ "$(jget ".sandboxes | length")" = 0 ]' "slots still held after deleting every listed sandbox"
  # Every sandbox a cut create made is gone with its cgroup.
  for id in $(sed -n 's/.*sandbox \([0-9a-f]\{12\}\): created.*/\1/p' "$kd/kilnd.log" | sort -u); do
    case " $ids " in *" $id "*) continue ;; esac
    kd_check '[ ! -e "$cgp/$id" ]' "the cgroup of $id (a create cut short) is still there"
  done
  kd_check 'grep -q "removing .*: \(no meta.json\|its create was cut short\)" "$kd/kilnd.log"' "no removal was logged"
  # And the slots work: a create succeeds.
  api POST /v1/sandboxes -d '{"image":"minimal","memory_mib":96}'
  kd_check '[ "$status" = 201 ]' "a create after the rounds"
  [ "$status" = 201 ] && { id=$(jget .id); api DELETE "/v1/sandboxes/$id"; }
  kd_done
}

# Ten sandboxes created at once: every create answers 201 with its own id,
# each runs its own command, and delete leaves an empty state directory.
test_kilnd_ten_sandboxes_in_parallel() {
  # Ten guests booting at once on the nested harness's two TCG vCPUs can
  # take longer than one boot's timeout (once: 300 s): allow 900 s.
  kd_start --boot-timeout 900 || return 1
  local why='' i ids=() hosts=() n pids=() k
  for i in $(seq 1 10); do
    curl -sS --max-time 1200 --unix-socket "$kds" -o "$kd/create.$i" -w '%{http_code}' \
      -X POST http://kiln/v1/sandboxes -d '{"image":"minimal","memory_mib":96,"hostname":"par'"$i"'"}' \
      >"$kd/status.$i" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do
    while kill -0 "$i" 2>/dev/null; do heartbeat "10 creates"; sleep 1; done
    wait "$i"
  done
  for i in $(seq 1 10); do
    status=$(cat "$kd/status.$i") body=$(cat "$kd/create.$i")
    kd_check '[ "$status" = 201 ]' "parallel create $i"
    [ "$status" = 201 ] && ids+=("$(jget .id)") hosts+=("par$i")
  done
  n=$(printf '%s\n' "${ids[@]}" | sort -u | wc -l)
  kd_check '[ "$n" = 10 ]' "10 distinct ids ($n)"
  api GET /v1/sandboxes
  n=$(jget '[.sandboxes[] | select(.jail) | .jail.uid] | unique | length')
  kd_check '[ "$n" = 10 ]' "10 distinct jail uids ($n)"
  for k in "${!ids[@]}"; do
    api POST "/v1/sandboxes/${ids[$k]}/exec" -d '{"argv":["hostname"]}'
    kd_check '[ $status = 200 ] && [ "$(jget ".stdout | strip")" = "${hosts[$k]}" ]' "exec in ${hosts[$k]} sees its own hostname"
  done
  api GET /v1/sandboxes
  kd_check '[ "$(jget "[.sandboxes[].state] == [range(10) | \"running\"]")" = true ]' "10 running"
  for sid in "${ids[@]}"; do
    api DELETE "/v1/sandboxes/$sid"
    kd_check '[ $status = 204 ]' "delete $sid"
  done
  kd_check '[ -z "$(ls -A "$kd/state/sandboxes")" ]' "delete cleaned the state directory ($(ls -A "$kd/state/sandboxes" | head -3))"
  kd_done
}
