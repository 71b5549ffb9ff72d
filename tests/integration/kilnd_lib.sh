# Helpers of kilnd's integration tests (docs/api.md), one file per
# resource (kilnd_sandboxes.sh, kilnd_files.sh, kilnd_procs.sh,
# kilnd_snapshots.sh, kilnd_pools.sh, kilnd_net.sh, kilnd_cli.sh), as
# runc's tests/integration/*.bats: a real kilnd serving on a Unix socket,
# real kiln-vmm children booting the test image, driven with curl
# --unix-socket and read with jq. Sourced by run-all after lib.sh; one
# kilnd per test function. State and sockets live under /tmp: Unix sockets
# cannot be bound on the nested harness's 9p share.
KILND=${KILND:-build/kilnd}
KILND_IMAGE=${KILND_IMAGE:-build/rootfs/minimal-test.ext4}
# Scaled for the nested harness, where a guest boots 50-100x slower.
KILND_BOOT_TIMEOUT=${KILND_BOOT_TIMEOUT:-300}

# kilnd's default --max-cpus is the CPUs online; the tests' sandboxes take
# up to 2 also in a one-CPU outer VM (tests/harness/shards).
KD_MAX_CPUS=$(n=$(nproc); echo $((n < 2 ? 2 : n)))

# kd_start [KILND ARGS...]: start kilnd on a scratch state directory.
# Sets $kd (scratch dir), $kds (socket), $kdpid. No idle hibernation
# unless a test asks (--idle-timeout, or a sandbox's idle_timeout_s): in
# the nested harness 300 s pass between two requests of one test. The
# array kd_wrap, when set, is a command prefix that must exec what follows
# (so $kdpid is kilnd), e.g. ip netns exec NS.
kd_start() {
  kd=${kd_keep:-$(mktemp -d /tmp/kd.XXXXXX)}
  kds=$kd/kiln.sock
  ${kd_wrap[@]+"${kd_wrap[@]}"} "$KILND" --socket "$kds" --state-dir "$kd/state" --kernel "$VMLINUX" --vmm "$VMM" \
    --image minimal="$KILND_IMAGE" --boot-timeout "$KILND_BOOT_TIMEOUT" --stop-timeout 120 \
    --idle-timeout 0 --max-cpus "$KD_MAX_CPUS" "$@" \
    2>>"$kd/kilnd.log" </dev/null &
  kdpid=$!
  local i
  for i in $(seq 1 200); do
    # Answering, not just there: a kilnd killed with -9 leaves its socket.
    [ -S "$kds" ] && curl -s -o /dev/null --max-time 5 --unix-socket "$kds" http://kiln/v1/health && return 0
    kill -0 "$kdpid" 2>/dev/null || break
    sleep 0.1
  done
  rc=gone out='' err=$(cat "$kd/kilnd.log")
  fail "kilnd did not start listening on $kds"
}

# kd_stop: SIGTERM (kilnd stops every sandbox first), wait; $rc is its
# exit status, $err its log. kd_stop keep: leave the state directory.
kd_stop() {
  kill -TERM "$kdpid" 2>/dev/null
  local i
  for i in $(seq 1 600); do kill -0 "$kdpid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$kdpid" 2>/dev/null
  wait "$kdpid"
  rc=$?
  err=$(cat "$kd/kilnd.log")
  [ "${1:-}" = keep ] || rm -rf "$kd"
}

# api METHOD PATH [CURL ARGS...]: $body (the response) and $status.
api() {
  local m=$1 p=$2 resp
  shift 2
  heartbeat "$m $p"
  resp=$(curl -sS --max-time 900 --unix-socket "$kds" -X "$m" -w '\n%{http_code}' "http://kiln$p" "$@")
  status=${resp##*$'\n'}
  body=${resp%$'\n'*}
  out=$body
}

# jget FILTER: jq's answer (raw strings, compact JSON) over the last
# response body, e.g. jget .error.code; with strip (Python's str.strip)
# and words (a list's members joined by spaces) defined. jnull PATH: the
# body has the member PATH (.pid, .last_exit.signal), and it is null (a
# missing member is not null).
JQ_DEFS='def strip: sub("^\\s+"; "") | sub("\\s+$"; ""); def words: map(tostring) | join(" "); '

jget() { jq -rc "$JQ_DEFS$1" <<<"$body"; }

jnull() {
  local parent=${1%.*}
  jq -e "(${parent:-.} | has(\"${1##*.}\")) and $1 == null" <<<"$body" >/dev/null
}

# api_pair M1 P1 BODY1 M2 P2 [BODY2]: two requests back to back on one
# connection, as a keep-alive client (the SDKs) sends them: no process
# start between them. $status1 $body1 and $status2 $body2; BODY1 "" for none.
api_pair() {
  local st
  heartbeat "$1 $2; $4 $5"
  st=$(curl -sS --max-time 900 --unix-socket "$kds" -X "$1" -o "$kd/pair1" -w '%{http_code} ' \
    "http://kiln$2" ${3:+-d "$3"} --next --unix-socket "$kds" -X "$4" -o "$kd/pair2" \
    -w '%{http_code}' "http://kiln$5" ${6:+-d "$6"})
  status1=${st% *} status2=${st#* }
  body1=$(cat "$kd/pair1" 2>/dev/null) body2=$(cat "$kd/pair2" 2>/dev/null)
}

# expect_status CODE [ERROR_CODE]: the last api call's status (and error code).
expect_status() {
  [ "$status" = "$1" ] || { err=$(cat "$kd/kilnd.log"); fail "expected HTTP $1, got $status"; return 1; }
  [ -z "${2:-}" ] || [ "$(jget .error.code)" = "$2" ] ||
    { err=$(cat "$kd/kilnd.log"); fail "expected error code $2"; return 1; }
}

# kd_check COND MESSAGE: remember the first failure, keep going to clean up.
kd_check() { if ! eval "$1"; then [ -n "${why:-}" ] || why="$2 (HTTP $status: ${body:0:400})"; fi; }

# kd_create JSON: create a sandbox; $sid its id.
kd_create() {
  api POST /v1/sandboxes -d "$1"
  expect_status 201 || return 1
  sid=$(jget .id)
}

# kd_wait_state ID STATE: poll until the sandbox is in STATE (bounded).
kd_wait_state() {
  local i
  for i in $(seq 1 240); do
    api GET "/v1/sandboxes/$1"
    [ "$(jget .state)" = "$2" ] && return 0
    sleep 0.5
  done
  return 1
}

# kd_done: stop kilnd and report the first remembered failure.
kd_done() {
  kd_stop
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# api_as UID METHOD PATH [CURL ARGS...]: api as another uid (and gid UID,
# no supplementary groups), for the owner checks.
api_as() {
  local u=$1 m=$2 p=$3 resp
  shift 3
  heartbeat "uid $u $m $p"
  resp=$(setpriv --reuid="$u" --regid="$u" --clear-groups \
    curl -sS --max-time 900 --unix-socket "$kds" -X "$m" -w '\n%{http_code}' "http://kiln$p" "$@")
  status=${resp##*$'\n'}
  body=${resp%$'\n'*}
}

# kd_sh ID SCRIPT: exec `sh -c SCRIPT` in sandbox ID; $status, $body.
kd_sh() {
  api POST "/v1/sandboxes/$1/exec" \
    -d "$(jq -nc --arg script "$2" '{argv: ["sh", "-c", $script]}')"
}

# kd_out: the last exec's stdout, stripped ("" when it failed); kd_outw:
# its lines joined by spaces.
kd_out() { [ "$status" = 200 ] && jget '.stdout | strip'; }
kd_outw() { kd_out | paste -sd ' ' -; }

# kd_metric NAME: the value of an unlabelled metric of GET /metrics.
kd_metric() { curl -sS --max-time 60 --unix-socket "$kds" http://kiln/metrics | awk -v m="$1" '$1 == m { print $2 }'; }

# The kiln CLI (kilnd_cli.sh, and the previews and firewall tests).
KILN_CLI=${KILN_CLI:-build/kiln}

# kc ARGS...: the kiln CLI on this test's kilnd, stdin from /dev/null;
# $out, $err, $rc.
kc() {
  local o e
  heartbeat "kiln $1"
  o=$(mktemp) e=$(mktemp)
  rc=0
  timeout -k 5 900 "$KILN_CLI" --socket "$kds" "$@" >"$o" 2>"$e" </dev/null || rc=$?
  out=$(cat "$o") err=$(cat "$e")
  rm -f "$o" "$e"
}

# kc_json FILTER: jget over $out ("" if it is not JSON).
kc_json() { jq -rc "$JQ_DEFS$1" <<<"$out" 2>/dev/null; }
