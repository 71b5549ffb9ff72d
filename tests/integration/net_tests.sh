# Integration tests of networking and the packet filter (kiln-vmm --net,
# --firewall, --net-rate, --egress-proxy with kiln-egress, the control
# socket's firewall-set/-get), in real
# guests driven through the agent. Sourced by run-all after agent_tests.sh
# and snapshot_tests.sh (uses agent_vm_stop, ag, check, vctl).
#
# The test hosts live in network namespaces made per test on this machine:
# kiln-vmm runs inside one ($ns, "the host": ip netns exec), so its TAP
# device, or its passt child's sockets, see only that namespace; the test
# hosts live in a second one ($nsh), behind a veth pair ($ns routes their
# addresses to it and forwards the guest's packets), because the filter
# denies the host's own addresses unless a rule names them: servers bound
# in $ns itself play the host's own services (net_self_start). Nothing
# can leave the machine: the namespaces have no other interface.
# Addresses: 10.77.0.0/24 the guest's link (TAP tests), 10.79.0.0/30 the
# veth, 10.77.x.y / 10.78.x.y hosts, and two addresses of 203.0.113.0/24
# (TEST-NET-3, RFC 5737: documentation only, never routed) on the hosts'
# loopback, because the filter needs a destination of the public class for
# two things it does by design: a hostname rule never opens a private
# address (DNS rebinding) and outbound_internet opens only public ones.
# 203.0.113.20 is a public address of the host itself.
NET_HOSTS=tests/integration/net_hosts.py
PY3=/usr/bin/python3

# net_fail MESSAGE: fail before any kiln-vmm ran (nothing to show of it).
net_fail() { rc=1 out= err=; fail "$1"; }

# net_ns_make: a namespace $ns (the host) with loopback up, 203.0.113.20 on
# it, and the hosts' namespace $nsh behind a veth pair, the hosts'
# addresses on its loopback and routed to it from $ns. TAP tests add kt0
# (the guest's link, 10.77.0.1/24).
net_ns_make() {
  ns=kiln$1$BASHPID
  nsh=${ns}h
  ip netns add "$ns" && ip netns add "$nsh" || { net_fail "ip netns add $ns failed (network namespaces, root)"; return 1; }
  ip -n "$ns" link set lo up && ip -n "$nsh" link set lo up &&
    ip -n "$ns" addr add 203.0.113.20/32 dev lo &&
    ip -n "$ns" link add kv0 type veth peer name kv1 netns "$nsh" &&
    ip -n "$ns" addr add 10.79.0.1/30 dev kv0 && ip -n "$ns" link set kv0 up &&
    ip -n "$nsh" addr add 10.79.0.2/30 dev kv1 && ip -n "$nsh" link set kv1 up &&
    ip -n "$nsh" route add default via 10.79.0.1 &&
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 || { net_fail "cannot link $ns to $nsh (veth)"; return 1; }
  local a
  for a in 10.77.1.10 10.77.2.10 10.77.3.53 10.78.1.10 10.78.3.53 203.0.113.10 203.0.113.11 169.254.169.254; do
    ip -n "$nsh" addr add "$a/32" dev lo && ip -n "$ns" route add "$a/32" via 10.79.0.2 ||
      { net_fail "cannot add $a in $nsh"; return 1; }
  done
}

net_ns_tap() {
  ip -n "$ns" tuntap add dev kt0 mode tap || { net_fail "cannot create a tap in $ns (tun module?)"; return 1; }
  ip -n "$ns" addr add 10.77.0.1/24 dev kt0 && ip -n "$ns" link set kt0 up
}

# net_ns_uplink: for passt, a TAP kd0 with a default route (passt copies
# the host's uplink addresses; nothing is attached to it).
net_ns_uplink() {
  ip -n "$ns" tuntap add dev kd0 mode tap && ip -n "$ns" addr add 10.78.0.2/24 dev kd0 &&
    ip -n "$ns" link set kd0 up && ip -n "$ns" route add default via 10.78.0.1 ||
    { net_fail "cannot give $ns an uplink"; return 1; }
}

# net_hosts_start ARGS...: net_hosts.py in $nsh (log $hlog); waits until it listens.
net_hosts_start() {
  hdir=$(mktemp -d /tmp/kh.XXXXXX)
  hlog="$hdir/hosts.log"
  ip netns exec "$nsh" "$PY3" "$NET_HOSTS" --log "$hlog" --ready "$hdir/ready" "$@" >"$hdir/out" 2>&1 &
  hpid=$!
  net_hosts_wait "$hdir/ready" "$hdir/out"
}

# net_self_start ARGS...: net_hosts.py in $ns, the host's own services
# (log $slog; after net_hosts_start).
net_self_start() {
  slog="$hdir/self.log"
  ip netns exec "$ns" "$PY3" "$NET_HOSTS" --log "$slog" --ready "$hdir/ready-self" "$@" >"$hdir/out-self" 2>&1 &
  spid=$!
  net_hosts_wait "$hdir/ready-self" "$hdir/out-self"
}

net_hosts_wait() {
  local i
  for i in $(seq 1 240); do [ -e "$1" ] && return 0; sleep 0.5; done
  rc=1 out=$(cat "$2") err=
  fail "test hosts did not start"
}

# reached_self HOST:PORT: the host's own service had a request.
reached_self() { grep -q "^http $1 " "$slog"; }

# The usual set: HTTP on host A (two ports), host B, the two public
# addresses and the metadata address; a stream, a sink and a UDP sink on
# host A; DNS.
net_hosts_default() {
  net_hosts_start --http 10.77.1.10:8080 --http 10.77.1.10:9090 --http 10.77.2.10:8080 \
    --http 203.0.113.10:8080 --http 203.0.113.11:8080 --http 169.254.169.254:80 \
    --stream 10.77.1.10:7070 --sink 10.77.1.10:7071 --udp-sink 10.77.1.10:7073 \
    --dns 10.77.3.53 --zone allowed.test=203.0.113.10 --zone other.test=203.0.113.11
}

# net_cleanup: the VM (if still running), the hosts, the namespace.
net_cleanup() {
  [ -n "${vpid:-}" ] && kill -0 "$vpid" 2>/dev/null && agent_vm_stop
  [ -n "${hpid:-}" ] && { kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null; }
  [ -n "${spid:-}" ] && { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
  [ -n "${ns:-}" ] && ip netns del "$ns" 2>/dev/null
  [ -n "${nsh:-}" ] && ip netns del "$nsh" 2>/dev/null
  [ -n "${hdir:-}" ] && rm -rf "$hdir"
  hpid= spid= ns= nsh= hdir=
}

# net_vm_start RULES_JSON [VMM ARGS...]: the test image in $ns with the
# rule set RULES_JSON (--firewall; "-": no --firewall), a control socket
# ($ctl) and the agent. Sets $vd ($NET_VD when set: a directory made
# before), $vpid, $vs like agent_vm_start.
net_vm_start() {
  local rules=$1 fw=()
  shift
  vd=${NET_VD:-$(mktemp -d /tmp/kn.XXXXXX)}
  vs="$vd/v.sock" ctl="$vd/ctl"
  printf '%s\n' "$rules" >"$vd/rules.json"
  [ "$rules" = - ] || fw=(--firewall "$vd/rules.json")
  heartbeat kiln-vmm
  ip netns exec "$ns" "$VMM" --kernel "$VMLINUX" --initrd "$TEST_INITRD" --mem 256 --cpus 2 --console \
    --vsock "$vs" --control "$ctl" "${fw[@]}" "$@" >"$vd/console" 2>"$vd/vmm.err" </dev/null &
  vpid=$!
  ag wait-ready >/dev/null || { out=$(tr -d '\r' <"$vd/console"); err=$(cat "$vd/vmm.err"); fail "agent never became ready"; return 1; }
}

# The guest on the TAP link: MAC, address, gateway and resolver.
NET_TAP_ARGS=(--net tap=kt0,mac=02:00:00:00:00:07,ip=10.77.0.2/24
  --cmdline 'quiet kiln.ip=10.77.0.2/24 kiln.gw=10.77.0.1 kiln.dns=10.77.3.53')

# gget HOST PORT [CONNECT_TIMEOUT]: an HTTP GET from the guest (busybox nc);
# prints the "kiln-net HOST:PORT" body line, nothing when it failed.
gget() {
  ag exec --timeout-ms 200000 -- sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w ${3:-60} $1 $2" 2>/dev/null | grep '^kiln-net' || true
}

# pget HOST PORT [CONNECT_TIMEOUT]: gget for passt. nc half-closes when its
# input ends, and Debian 12's passt (2023-03-09) then never passes the
# server's FIN on to the guest, so nc would wait for ever. Here nc's input
# stays open (a stray sleep holds it) and nc ends at the server's close.
# busybox wget is no way out: the static busybox's wget crashes.
pget() {
  ag exec --timeout-ms 200000 -- sh -c "(printf 'GET / HTTP/1.0\r\n\r\n'; sleep 120 </dev/null 2>/dev/null &) | nc -w ${3:-60} $1 $2" 2>/dev/null | grep '^kiln-net' || true
}

# How long a probe that the filter should drop waits for an answer. An
# allowed connection through either link answers within a second even in
# the nested harness; the filter drops silently, so a blocked probe costs
# this whole wait, and probes that may run together do (gnone, pnone).
NET_BLOCKED_S=10

# gnone HOST:PORT...: HTTP GETs from the guest to every HOST:PORT at once
# (one exec, NET_BLOCKED_S each); prints the "kiln-net" lines of any that
# answered, nothing when every one was blocked. pnone: the same through
# passt (nc's input held open, as in pget).
gnone() { net_probes "" "$@"; }
pnone() { net_probes "; sleep 120 </dev/null 2>/dev/null &" "$@"; }
net_probes() {
  local hold=$1 hp script=
  shift
  for hp; do
    script="$script (printf 'GET / HTTP/1.0\r\n\r\n'$hold) | nc -w $NET_BLOCKED_S ${hp%:*} ${hp##*:} &"
  done
  ag exec --timeout-ms 200000 -- sh -c "$script wait" 2>/dev/null | grep '^kiln-net' || true
}

# reached HOST:PORT: the host log has a request to it.
reached() { grep -q "^http $1 " "$hlog"; }

# fwj FILTER: jq's answer over the last firewall-get reply ($reply), e.g.
# fwj .counters.egress.drop_private.packets.
fwj() { jq -rc "$1" <<<"$reply"; }

# nslookup_a NAME SERVER: the address the guest's resolver query answered.
nslookup_a() {
  ag exec -- sh -c "nslookup $1 $2" 2>/dev/null | sed -n 's/^Address: *\([0-9.]*\)$/\1/p' | tail -1
}

test_net_firewall_file_errors_exit_2() {
  local d
  d=$(mktemp -d)
  echo '{"allow":[{"cidr":"10.0.0.1/8"}]}' >"$d/hostbits.json"
  vmm --kernel "$VMLINUX" --net tap=kt0 --firewall "$d/hostbits.json"
  expect_rc 2 && expect_one_line_err && \
    expect_err 'allow\[0\]\.cidr "10\.0\.0\.1/8": host bits are set: did you mean 10\.0\.0\.0/8\?' || { rm -rf "$d"; return 1; }
  echo '{"outbound_internet":true,"allow":[{"cidr":"169.254.169.254/32"}]}' >"$d/meta.json"
  vmm --kernel "$VMLINUX" --net passt --firewall "$d/meta.json"
  expect_rc 2 && expect_one_line_err && expect_err 'which kiln never allows' || { rm -rf "$d"; return 1; }
  echo '{"allow":[],"bogus":1}' >"$d/unknown.json"
  vmm --kernel "$VMLINUX" --net passt --firewall "$d/unknown.json"
  expect_rc 2 && expect_err 'bogus' || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --net passt --firewall "$d/missing.json"
  expect_rc 2 && expect_err 'missing\.json' || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --net passt --firewall "$d/hostbits.json" --net-rate tx_bytes=lots
  expect_rc 2 && expect_err "net-rate tx_bytes: 'lots' is not a number" || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --net-rate tx_bytes=1
  expect_rc 2 && expect_err 'need a --net device' || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --net passt,gw=10.1.1.1
  expect_rc 2 && expect_err "gw=10\.1\.1\.1: must be another address in the guest's network" || { rm -rf "$d"; return 1; }
  # `http` rules steer to an egress proxy: without one, say what to add.
  echo '{"http":[{"host":"web.test"}]}' >"$d/http.json"
  vmm --kernel "$VMLINUX" --net passt --firewall "$d/http.json"
  expect_rc 2 && expect_one_line_err && expect_err 'add --egress-proxy PATH' || { rm -rf "$d"; return 1; }
  vmm --kernel "$VMLINUX" --net passt --egress-proxy "$d/egress.sock"
  expect_rc 2 && expect_one_line_err && expect_err 'add --firewall FILE' || { rm -rf "$d"; return 1; }
  rm -rf "$d"
}

test_net_no_rules_reaches_nothing() {
  net_ns_make nr && net_ns_tap && net_hosts_default || { net_cleanup; return 1; }
  net_vm_start '{}' --firewall-log "${NET_TAP_ARGS[@]}" || { net_cleanup; return 1; }
  local why= o
  # The ping and the DNS query run while the HTTP probes wait.
  gnone 10.77.1.10:8080 203.0.113.10:8080 >"$hdir/probes" &
  local gpid=$!
  ag exec --user root -- ping -c 2 -W "$NET_BLOCKED_S" 10.77.0.1 >/dev/null; check '[ $arc != 0 ]' "ping to the gateway answered with no rules"
  o=$(nslookup_a allowed.test 10.77.3.53); check '[ -z "$o" ]' "DNS answered with no rules: $o"
  wait "$gpid"
  o=$(cat "$hdir/probes"); check '[ -z "$o" ]' "HTTP to 10.77.1.10:8080 or a public address went through with no rules: $o"
  check '! grep -q . "$hlog"' "a test host saw traffic: $(head -3 "$hlog")"
  vctl firewall-get
  check '[ "$(fwj .ok)" = true ]' "firewall-get: $reply"
  check '[ "$(fwj .counters.egress.pass_new.packets)" = 0 ]' "a flow was let out: $reply"
  check '[ "$(fwj .counters.egress.drop_private.packets)" -ge 1 ] && [ "$(fwj .counters.egress.drop_default.packets)" -ge 1 ]' \
    "drop counters: $(fwj .counters.egress)"
  check 'grep -q "kiln-vmm: firewall: egress drop_private tcp 10.77.0.2:[0-9]* -> 10.77.1.10:8080" "$vd/vmm.err"' \
    "no denied-flow log line: $(tail -3 "$vd/vmm.err")"
  # Control: the network itself works, once a rule lets the guest out.
  vctl 'firewall-set {"allow":[{"cidr":"10.77.1.10/32","proto":"tcp","ports":8080}]}'
  check '[ "$reply" = "{\"ok\":true,\"cut\":0}" ]' "firewall-set: $reply"
  o=$(gget 10.77.1.10 8080); check '[ "$o" = "kiln-net 10.77.1.10:8080" ]' "allowed HTTP failed: '$o'"
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

test_net_cidr_port_rule_allows_http_only_there() {
  net_ns_make cr && net_ns_tap && net_hosts_default || { net_cleanup; return 1; }
  net_vm_start '{"allow":[{"cidr":"10.77.1.10/32","proto":"tcp","ports":8080}]}' "${NET_TAP_ARGS[@]}" || { net_cleanup; return 1; }
  local why= o
  o=$(gget 10.77.1.10 8080); check '[ "$o" = "kiln-net 10.77.1.10:8080" ]' "allowed HTTP failed: '$o'"
  o=$(gnone 10.77.1.10:9090 10.77.2.10:8080); check '[ -z "$o" ]' "another port or host went through: $o"
  check 'reached 10.77.1.10:8080' "host A never saw the allowed request"
  check '! reached 10.77.1.10:9090 && ! reached 10.77.2.10:8080' "a blocked request arrived: $(cat "$hlog")"
  vctl firewall-get
  check '[ "$(fwj ".counters.rules.allow[0].flows")" -ge 1 ]' "rule counters: $(fwj .counters.rules)"
  check '[ "$(fwj .counters.egress.drop_private.packets)" -ge 2 ]' "drop counters: $(fwj .counters.egress)"
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

test_net_hostname_rule_allows_only_the_dns_answer() {
  net_ns_make hn && net_ns_tap && net_hosts_default || { net_cleanup; return 1; }
  net_vm_start '{"dns":["10.77.3.53"],"allow":[{"host":"allowed.test","proto":"tcp","ports":8080}]}' \
    "${NET_TAP_ARGS[@]}" || { net_cleanup; return 1; }
  local why= o a
  # Before the guest resolved the name, its address is just an address.
  o=$(gnone 203.0.113.10:8080); check '[ -z "$o" ]' "reached the host before resolving it: $o"
  a=$(nslookup_a allowed.test 10.77.3.53); check '[ "$a" = 203.0.113.10 ]' "allowed.test resolved to '$a'"
  o=$(gget 203.0.113.10 8080); check '[ "$o" = "kiln-net 203.0.113.10:8080" ]' "the answered address failed: '$o'"
  # An address the answer did not give, and that a name no rule allows
  # gave: neither opens it.
  a=$(nslookup_a other.test 10.77.3.53); check '[ "$a" = 203.0.113.11 ]' "other.test resolved to '$a'"
  o=$(gnone 203.0.113.11:8080); check '[ -z "$o" ]' "an address not in the allowed name's answer (other.test's) went through: $o"
  check '! reached 203.0.113.11:8080' "203.0.113.11 saw a request"
  vctl firewall-get
  check '[ "$(fwj .counters.dns_bindings)" -ge 1 ]' "no DNS binding: $(fwj .counters)"
  check '[ "$(fwj ".counters.rules.allow[0].flows")" -ge 1 ]' "host rule counters: $(fwj .counters.rules)"
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

test_net_runtime_rule_change_cuts_existing_flows() {
  net_ns_make rt && net_ns_tap && net_hosts_default || { net_cleanup; return 1; }
  net_vm_start '{"allow":[{"cidr":"10.77.1.10/32","proto":"tcp","ports":"7070-8080"}]}' \
    "${NET_TAP_ARGS[@]}" || { net_cleanup; return 1; }
  local why= o s1 s2 s3 s4 i
  # A long-lived flow: ticks from host A every 0.2 s into /tmp/stream.
  ag exec -- sh -c 'setsid sh -c "nc 10.77.1.10 7070 >/tmp/stream 2>&1" </dev/null >/dev/null 2>&1 &' >/dev/null
  for i in $(seq 1 120); do
    s1=$(ag exec -- sh -c 'wc -l </tmp/stream' 2>/dev/null || echo 0)
    [ "${s1:-0}" -ge 3 ] && break
    sleep 1
  done
  check '[ "${s1:-0}" -ge 3 ]' "the stream never started ($s1 lines)"
  # The blocked probe's wait is the window in which the stream must grow.
  s2=$(ag exec -- sh -c 'wc -c </tmp/stream')
  o=$(gnone 10.77.1.10:9090); check '[ -z "$o" ]' "port 9090 open before the change: $o"
  s3=$(ag exec -- sh -c 'wc -c </tmp/stream')
  check '[ "$s3" -gt "$s2" ]' "the stream does not grow before the change ($s2 -> $s3 bytes)"
  # New rules: 8080 and 9090, no longer 7070.
  vctl 'firewall-set {"allow":[{"cidr":"10.77.1.10/32","proto":"tcp","ports":8080},{"cidr":"10.77.1.10/32","proto":"tcp","ports":9090}]}'
  check '[ "$(fwj .ok)" = true ] && [ "$(fwj .cut)" -ge 1 ]' "firewall-set did not cut the stream: $reply"
  sleep 3
  # ... and the refused new flow's wait the window in which it must not.
  s3=$(ag exec -- sh -c 'wc -c </tmp/stream')
  o=$(ag exec --timeout-ms 200000 -- sh -c "nc -w $NET_BLOCKED_S 10.77.1.10 7070 </dev/null | head -1" 2>/dev/null)
  check '[ -z "$o" ]' "a new flow to 7070 opened after the change: $o"
  s4=$(ag exec -- sh -c 'wc -c </tmp/stream')
  check '[ "$s4" = "$s3" ]' "the cut stream still grows ($s3 -> $s4 bytes)"
  check '[ "$(grep -c "^stream 10.77.1.10:7070 from" "$hlog")" = 1 ]' "host A saw $(grep -c '^stream' "$hlog") stream connections"
  o=$(gget 10.77.1.10 9090); check '[ "$o" = "kiln-net 10.77.1.10:9090" ]' "9090 still closed after the change: '$o'"
  o=$(gget 10.77.1.10 8080); check '[ "$o" = "kiln-net 10.77.1.10:8080" ]' "8080 closed after the change: '$o'"
  vctl firewall-get
  check '[ "$(fwj .counters.flows_cut)" -ge 1 ]' "flows_cut: $(fwj .counters)"
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

test_net_metadata_blocked_with_outbound_internet() {
  net_ns_make md && net_ns_tap && net_hosts_default || { net_cleanup; return 1; }
  net_vm_start '{"outbound_internet":true}' "${NET_TAP_ARGS[@]}" || { net_cleanup; return 1; }
  local why= o
  o=$(gget 203.0.113.10 8080); check '[ "$o" = "kiln-net 203.0.113.10:8080" ]' "a public address failed with outbound_internet: '$o'"
  o=$(gnone 169.254.169.254:80 10.77.1.10:8080); check '[ -z "$o" ]' "the metadata address or a private address answered with outbound_internet: $o"
  check '! reached 169.254.169.254:80 && ! reached 10.77.1.10:8080' "a blocked request arrived: $(cat "$hlog")"
  vctl firewall-get
  check '[ "$(fwj .counters.egress.drop_reserved.packets)" -ge 1 ]' "drop_reserved: $(fwj .counters.egress.drop_reserved)"
  check '[ "$(fwj .counters.egress.drop_private.packets)" -ge 1 ]' "drop_private: $(fwj .counters.egress.drop_private)"
  # No rule can open it, at runtime either.
  vctl 'firewall-set {"outbound_internet":true,"allow":[{"cidr":"169.254.169.254/32","ports":80}]}'
  check '[ "$(fwj .ok)" = false ] && [[ "$(fwj .error)" == *"which kiln never allows"* ]]' "allowing the metadata address: $reply"
  o=$(gnone 169.254.169.254:80); check '[ -z "$o" ]' "the metadata address answered after the refused change: $o"
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# The host's own addresses (TAP): outbound_internet and a private block
# covering them do not reach the host's services; a rule naming the one
# address does, for its port.
test_net_host_addresses_need_a_rule_naming_them() {
  net_ns_make ha && net_ns_tap && net_hosts_default || { net_cleanup; return 1; }
  net_self_start --http 203.0.113.20:8080 --http 10.77.0.1:8080 || { net_cleanup; return 1; }
  net_vm_start '{"outbound_internet":true,"allow":[{"cidr":"10.77.0.0/16","proto":"tcp"}]}' "${NET_TAP_ARGS[@]}" ||
    { net_cleanup; return 1; }
  local why= o
  o=$(gget 203.0.113.10 8080); check '[ "$o" = "kiln-net 203.0.113.10:8080" ]' "a public host failed with outbound_internet: '$o'"
  o=$(gget 10.77.1.10 8080); check '[ "$o" = "kiln-net 10.77.1.10:8080" ]' "a private host failed through 10.77.0.0/16: '$o'"
  o=$(gnone 203.0.113.20:8080 10.77.0.1:8080)
  check '[ -z "$o" ]' "the host's public address (outbound_internet) or link address (10.77.0.0/16) answered: $o"
  check '! reached_self 203.0.113.20:8080 && ! reached_self 10.77.0.1:8080' "a host service was reached: $(cat "$slog")"
  vctl firewall-get
  check '[ "$(fwj .counters.egress.drop_host.packets)" -ge 2 ]' "drop_host: $(fwj .counters.egress.drop_host)"
  vctl 'firewall-set {"outbound_internet":true,"allow":[{"cidr":"203.0.113.20","proto":"tcp","ports":8080}]}'
  check '[ "$(fwj .ok)" = true ]' "naming the host's address: $reply"
  o=$(gget 203.0.113.20 8080); check '[ "$o" = "kiln-net 203.0.113.20:8080" ]' "the named host address failed: '$o'"
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# A TAP device without ip= cannot have a filter: the guest's source could not be held.
test_net_firewall_tap_needs_ip() {
  local d
  d=$(mktemp -d)
  echo '{"outbound_internet":true}' >"$d/r.json"
  vmm --kernel "$VMLINUX" --net tap=kt0 --firewall "$d/r.json"
  rm -rf "$d"
  expect_rc 1 && expect_one_line_err && expect_err 'kiln-vmm: --net tap=kt0: --firewall needs ip=ADDRESS/PREFIX'
}

# passt mode: kiln-vmm makes no interface and needs no privilege for the
# guest's network; passt (its child, as nobody) NATs the guest's flows into
# sockets of the namespace. The namespace gets a TAP with a default route
# only because passt copies its addresses from the host's uplink; nothing is
# attached to it. passt forwards the guest's DNS (10.0.2.3) to the
# resolver kiln-vmm names (resolver=: a resolv.conf of passt's own).
test_net_passt_outbound_without_root_setup() {
  net_ns_make ps && net_ns_uplink || { net_cleanup; return 1; }
  net_hosts_start --http 10.78.1.10:8080 --http 203.0.113.10:8080 \
    --dns 10.78.3.53 --zone allowed.test=203.0.113.10 || { net_cleanup; return 1; }
  net_self_start --http 127.0.0.1:8080 --http 203.0.113.20:8080 --http 10.78.0.2:8080 || { net_cleanup; return 1; }
  local why= o a links0 links1 ppid puser i
  links0=$(ip -n "$ns" -o link | wc -l)
  net_vm_start '{"outbound_internet":true,"dns":["10.0.2.3"],"allow":[{"cidr":"10.78.1.10/32","proto":"tcp","ports":8080},{"host":"allowed.test","proto":"tcp","ports":8080},{"cidr":"10.78.0.0/16"}]}' \
    --net passt,mac=02:00:00:00:00:08,resolver=10.78.3.53 \
    --cmdline 'quiet kiln.ip=10.0.2.15/24 kiln.gw=10.0.2.2 kiln.dns=10.0.2.3' || { net_cleanup; return 1; }
  ppid=$(ps -o pid=,args= --ppid "$vpid" | awk '$2 ~ /passt/ {print $1; exit}')
  check '[ -n "$ppid" ]' "no passt child of kiln-vmm $vpid: children: $(ps -o pid=,user=,stat=,args= --ppid "$vpid" | tr '\n' ';'); passt anywhere: $(pgrep -a passt | tr '\n' ';'); kiln-vmm: $(tail -3 "$vd/vmm.err" | tr '\n' ';')"
  puser=$(ps -o user= -p "${ppid:-0}" 2>/dev/null | tr -d ' ')
  check '[ -n "$puser" ] && [ "$puser" != root ]' "passt runs as '$puser'"
  links1=$(ip -n "$ns" -o link | wc -l)
  check '[ "$links0" = "$links1" ]' "kiln-vmm made network interfaces ($links0 -> $links1)"
  o=$(pget 10.78.1.10 8080); check '[ "$o" = "kiln-net 10.78.1.10:8080" ]' "HTTP through passt failed: '$o'"
  # DNS to 10.0.2.3 goes to resolver= (never the host's); its answer binds the host rule.
  a=$(nslookup_a allowed.test 10.0.2.3); check '[ "$a" = 203.0.113.10 ]' "allowed.test through passt resolved to '$a'"
  o=$(pget 203.0.113.10 8080); check '[ "$o" = "kiln-net 203.0.113.10:8080" ]' "the resolved host through passt failed: '$o'"
  # The gateway is passt itself: never a way to the host's services.
  # The gateway is passt itself: never a way to the host's services. The
  # host's own addresses: outbound_internet and 10.78.0.0/16 do not name
  # them, so passt (a process of the host) never connects there.
  o=$(pnone 10.0.2.2:8080 203.0.113.20:8080 10.78.0.2:8080)
  check '[ -z "$o" ]' "the gateway, the host's public address (outbound_internet) or its uplink address (10.78.0.0/16) answered: $o"
  check '! reached_self 127.0.0.1:8080' "the host's loopback service was reached"
  check '! reached_self 203.0.113.20:8080 && ! reached_self 10.78.0.2:8080' "a host service was reached: $(cat "$slog")"
  vctl firewall-get
  check '[ "$(fwj .counters.egress.drop_reserved.packets)" -ge 1 ]' "gateway not denied: $(fwj .counters.egress.drop_reserved)"
  check '[ "$(fwj .counters.egress.drop_host.packets)" -ge 2 ]' "host addresses not denied: $(fwj .counters.egress.drop_host)"
  # passt ends with kiln-vmm, even a killed one (its socket closes).
  kill -9 "$vpid"
  wait "$vpid" 2>/dev/null
  rc=$?
  for i in $(seq 1 60); do
    { [ -z "$ppid" ] || [ ! -e "/proc/$ppid" ] || grep -q '^State:.*Z' "/proc/$ppid/status" 2>/dev/null; } && break
    sleep 0.5
  done
  check '[ -z "$ppid" ] || [ ! -e "/proc/$ppid" ] || grep -q "^State:.*Z" "/proc/$ppid/status"' "passt $ppid outlived a killed kiln-vmm"
  out=$(tr -d '\r' <"$vd/console") err=$(cat "$vd/vmm.err")
  rm -rf "$vd"
  vpid=
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# passt without --firewall where no cgroup programs can hold passt (here:
# `ip netns exec` hides the cgroup2 mount; likewise a kiln-vmm that is not
# root): kiln-vmm's implicit rules let the guest reach the internet and
# the private ranges as before, but never the host's own addresses, its
# loopback (through them) or the metadata address (docs/security.md,
# "Outside the VMM: what passt may reach").
test_net_passt_without_firewall_keeps_off_the_host() {
  net_ns_make pd && net_ns_uplink || { net_cleanup; return 1; }
  net_hosts_start --http 10.78.1.10:8080 --http 203.0.113.10:8080 --http 169.254.169.254:80 || { net_cleanup; return 1; }
  net_self_start --http 203.0.113.20:8080 --http 10.78.0.2:8080 || { net_cleanup; return 1; }
  local why= o
  net_vm_start - --net passt,mac=02:00:00:00:00:09,resolver=10.78.3.53 \
    --cmdline 'quiet kiln.ip=10.0.2.15/24 kiln.gw=10.0.2.2 kiln.dns=10.0.2.3' || { net_cleanup; return 1; }
  check 'grep -q "passt runs without egress programs" "$vd/vmm.err"' "kiln-vmm did not say passt runs without egress programs: $(cat "$vd/vmm.err")"
  o=$(pget 10.78.1.10 8080); check '[ "$o" = "kiln-net 10.78.1.10:8080" ]' "a private address through passt failed: '$o'"
  o=$(pget 203.0.113.10 8080); check '[ "$o" = "kiln-net 203.0.113.10:8080" ]' "a public address through passt failed: '$o'"
  o=$(pnone 203.0.113.20:8080 10.78.0.2:8080 169.254.169.254:80)
  check '[ -z "$o" ]' "the host's own addresses or the metadata address answered: $o"
  check '! reached_self 203.0.113.20:8080 && ! reached_self 10.78.0.2:8080' "a host service was reached: $(cat "$slog")"
  check '! reached 169.254.169.254:80' "the metadata address was reached"
  agent_vm_stop
  vpid=
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# kiln-vmm's own memory: every mapping but guest RAM (256 MiB here).
vmm_rss_kb() {
  awk '/^[0-9a-f]+-[0-9a-f]+ /{big=0} /^Size:/{big=($2 >= 200000)} /^Rss:/{if (!big) s += $2} END{print s + 0}' "/proc/$1/smaps"
}

test_net_flood_is_rate_limited_and_vmm_memory_bounded() {
  net_ns_make fl && net_ns_tap && net_hosts_default || { net_cleanup; return 1; }
  net_vm_start '{"allow":[{"cidr":"10.77.1.10/32","proto":"tcp","ports":"7071-8080"},{"cidr":"10.77.1.10/32","proto":"udp","ports":7073}]}' \
    --net-rate tx_bytes=262144,tx_packets=400,rx_packets=400 "${NET_TAP_ARGS[@]}" || { net_cleanup; return 1; }
  local why= o rss0 rss1 line bytes secs usecs
  o=$(gget 10.77.1.10 8080); check '[ "$o" = "kiln-net 10.77.1.10:8080" ]' "warm-up HTTP failed: '$o'"
  rss0=$(vmm_rss_kb "$vpid")
  # 4 MiB as fast as the guest can push it, through 256 KiB/s (one second's
  # worth to start with): at least 15 s, however fast the machine.
  ag exec --timeout-ms 600000 -- sh -c 'head -c 4194304 /dev/zero | nc -w 60 10.77.1.10 7071' >/dev/null 2>&1
  for i in $(seq 1 60); do grep -q '^sink ' "$hlog" && break; sleep 1; done
  line=$(grep '^sink ' "$hlog" | tail -1)
  bytes=$(echo "$line" | cut -d' ' -f2) secs=$(echo "$line" | cut -d' ' -f3)
  check '[ "$bytes" = 4194304 ]' "the sink got '$line'"
  check '[ "$(echo "${secs:-0} >= 12" | bc)" = 1 ]' "4 MiB at 256 KiB/s took ${secs} s"
  # A packet flood: 3000 small datagrams as fast as the guest can send them,
  # through 400 packets/s (one second's worth to start with): at least
  # 6.5 s, and none lost (the guest's socket blocks; nothing is dropped).
  o=$(ag exec --timeout-ms 600000 -- kiln-udp-flood 10.77.1.10 7073 3000 64 2>&1)
  for i in $(seq 1 90); do grep -q "^udpsink " "$hlog" && break; sleep 1; done
  line=$(grep '^udpsink ' "$hlog" | tail -1)
  check '[ "$(echo "$line" | cut -d" " -f2,3)" = "3000 3000" ]' "the UDP sink got '$line' (guest: $o)"
  usecs=$(echo "$line" | cut -d' ' -f4)
  check '[ "$(echo "${usecs:-0} >= 6" | bc)" = 1 ]' "3000 datagrams at 400 packets/s took ${usecs} s"
  rss1=$(vmm_rss_kb "$vpid" 2>/dev/null)
  check '[ -n "$rss1" ] && [ $((rss1 - rss0)) -lt 16384 ]' "kiln-vmm grew from ${rss0} to ${rss1:-(gone)} KiB outside guest RAM"
  vctl firewall-get
  check '[ "$(fwj .counters.device.tx_throttled)" -ge 1 ]' "the rate limit never engaged: $(fwj .counters.device)"
  # Backpressure: over the limit frames wait in the guest's queue, none dropped.
  check '[ "$(fwj .counters.egress.drop_rate.packets)" = 0 ]' "frames dropped for rate: $(fwj .counters.egress.drop_rate)"
  echo "    4 MiB in ${secs} s at 256 KiB/s; 3000 datagrams in ${usecs} s at 400/s; kiln-vmm outside guest RAM ${rss0} -> ${rss1} KiB"
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# net_egress_start RULES [SOCKET]: kiln-egress in $ns (the host) at
# SOCKET (default $hdir/egress.sock, set as $esock), with the `http` rules
# RULES (a bare array); it resolves web.test and other.test from a hosts
# file bind-mounted over /etc/hosts in a mount namespace of its own (the
# outer VM's /etc is read-only).
net_egress_start() {
  esock=${2:-$hdir/egress.sock}
  printf '127.0.0.1 localhost\n203.0.113.10 web.test\n203.0.113.11 other.test\n' >"$hdir/hosts"
  printf '%s\n' "$1" >"$hdir/http.json"
  ip netns exec "$ns" unshare -m --propagation private sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' \
    sh "$hdir/hosts" build/kiln-egress --socket "$esock" --rules "$hdir/http.json" \
    >"$hdir/egress.out" 2>"$hdir/egress.err" </dev/null &
  epid=$!
  local i
  for i in $(seq 1 120); do [ -S "$esock" ] && return 0; sleep 0.5; done
  net_fail "kiln-egress did not start: $(cat "$hdir/egress.err")"
}

net_egress_stop() {
  [ -n "${epid:-}" ] && { kill "$epid" 2>/dev/null; wait "$epid" 2>/dev/null; }
  epid=
}

# hget HOST ADDR: an HTTP/1.1 GET for http://HOST/ sent to ADDR:80 from the
# guest; the whole answer. nc's input stays open (as in pget): the proxy
# takes a half-close after a whole request for the end of the flow.
hget() {
  ag exec --timeout-ms 200000 -- sh -c "(printf 'GET / HTTP/1.1\r\nHost: $1\r\nConnection: close\r\n\r\n'; sleep 120 </dev/null 2>/dev/null &) | nc -w 60 $2 80" 2>/dev/null | tr -d '\r' || true
}

# `http` rules with --egress-proxy: the guest's HTTP to port 80 is
# terminated by kiln-vmm and relayed to kiln-egress (PROXY v2 header with
# the name the guest resolved), which fetches a host a rule names and
# answers 403 for one no rule names; no allow rule is needed (the proxy
# decides); with the proxy gone the guest's connection is reset at once.
test_net_http_rules_steer_to_the_egress_proxy() {
  net_ns_make eg && net_ns_tap || { net_cleanup; return 1; }
  net_hosts_start --http 203.0.113.10:80 --http 203.0.113.11:80 \
    --dns 10.77.3.53 --zone web.test=203.0.113.10 --zone other.test=203.0.113.11 || { net_cleanup; return 1; }
  net_egress_start '[{"host":"web.test"}]' || { net_egress_stop; net_cleanup; return 1; }
  net_vm_start '{"http":[{"host":"web.test"}],"dns":["10.77.3.53"]}' --egress-proxy "$hdir/egress.sock" \
    "${NET_TAP_ARGS[@]}" || { net_egress_stop; net_cleanup; return 1; }
  local why= o a
  a=$(nslookup_a web.test 10.77.3.53); check '[ "$a" = 203.0.113.10 ]' "web.test resolved to '$a'"
  o=$(hget web.test 203.0.113.10)
  check 'grep -q "^kiln-net 203.0.113.10:80$" <<<"$o"' "the steered GET failed: '$o'; proxy: $(tail -3 "$hdir/egress.err")"
  check 'reached 203.0.113.10:80' "web.test never saw the request: $(cat "$hlog")"
  a=$(nslookup_a other.test 10.77.3.53); check '[ "$a" = 203.0.113.11 ]' "other.test resolved to '$a'"
  o=$(hget other.test 203.0.113.11)
  check 'grep -q "^HTTP/1.1 403" <<<"$o"' "a host no rule names was not refused with 403: '$o'"
  check '! reached 203.0.113.11:80' "other.test saw a request: $(cat "$hlog")"
  vctl firewall-get
  check '[ "$(fwj .counters.egress.steer_new.packets)" -ge 2 ]' "steer counters: $(fwj .counters.egress.steer_new)"
  check '[ "$(fwj .counters.device.steered_flows)" -ge 2 ] && [ "$(fwj .counters.device.steer_connect_failed)" = 0 ]' \
    "device counters: $(fwj .counters.device)"
  # The proxy gone: refused at once (a reset), counted.
  net_egress_stop
  rm -f "$hdir/egress.sock"
  o=$(hget web.test 203.0.113.10); check '! grep -q kiln-net <<<"$o"' "a GET went through without the proxy: '$o'"
  vctl firewall-get
  check '[ "$(fwj .counters.device.steer_connect_failed)" -ge 1 ]' "connect failures: $(fwj .counters.device)"
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

# The same from a jailed kiln-vmm (uid 4244, its own empty network
# namespace, seccomp): as kilnd will, the proxy's socket is in the jail
# directory (root's, searchable) and belongs to the jail uid, mode 0600.
test_net_http_rules_steer_from_a_jailed_vmm() {
  net_ns_make ej && net_ns_tap || { net_cleanup; return 1; }
  net_hosts_start --http 203.0.113.10:80 --dns 10.77.3.53 --zone web.test=203.0.113.10 || { net_cleanup; return 1; }
  local NET_VD why= o a
  NET_VD=$(mktemp -d /tmp/kn.XXXXXX) && chmod 0711 "$NET_VD"
  net_egress_start '[{"host":"web.test"}]' "$NET_VD/egress.sock" || { net_egress_stop; rm -rf "$NET_VD"; net_cleanup; return 1; }
  chown 4244:4244 "$esock" && chmod 0600 "$esock"
  net_vm_start '{"http":[{"host":"web.test"}],"dns":["10.77.3.53"]}' --egress-proxy "$esock" \
    --jail "$NET_VD" --uid 4244 --gid 4244 "${NET_TAP_ARGS[@]}" || { net_egress_stop; net_cleanup; return 1; }
  a=$(nslookup_a web.test 10.77.3.53); check '[ "$a" = 203.0.113.10 ]' "web.test resolved to '$a'"
  o=$(hget web.test 203.0.113.10)
  check 'grep -q "^kiln-net 203.0.113.10:80$" <<<"$o"' "the steered GET from the jail failed: '$o'; proxy: $(tail -3 "$hdir/egress.err"); vmm: $(tail -3 "$vd/vmm.err")"
  vctl firewall-get
  check '[ "$(fwj .counters.device.steered_flows)" -ge 1 ] && [ "$(fwj .counters.device.steer_connect_failed)" = 0 ]' \
    "device counters: $(fwj .counters.device)"
  net_egress_stop
  net_cleanup
  [ -z "$why" ] || { fail "$why"; return 1; }
}

