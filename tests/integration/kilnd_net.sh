# Ports, previews, networking and firewall (docs/api.md: the
# ports endpoints, "Preview URLs", "Networking and firewall"). Helpers:
# kilnd_lib.sh; the firewall test also uses net_tests.sh's test hosts.

# Port forwarding with no guest network. By default to a guest TCP port
# through the agent's tcp_connect bridge: busybox httpd on the guest's
# loopback (a small and a 350 KB file, fetched with curl), and busybox
# `nc -e wc -c`, which answers only after EOF, so the client's half-close
# must cross the whole chain and the server's close come back. A guest
# port where nothing listens closes the client's connection and counts as
# guest_unreachable. With "target":"vsock" to a guest vsock listener
# (kiln-vsock-test from the test image, an echo server for one connection).
# kd_http_hello PORT: "ok" when GET http://127.0.0.1:PORT/hello.txt
# answers the guest's hello-from-guest (retried while nothing answers).
kd_http_hello() {
  python3 - "$1" <<'PY'
import sys, time, urllib.request
last = None
for attempt in range(240):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/hello.txt", timeout=120) as r:
            body = r.read()
            print("ok" if r.status == 200 and body == b"hello-from-guest\n" else f"bad {r.status} {body[:100]!r}")
            break
    except Exception as e:
        last = e
        time.sleep(0.5)
else:
    print(f"never answered: {last!r}")
PY
}

test_kilnd_port_forwarding() {
  kd_start || return 1
  local why='' hp hp2 hpu hpv got
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  api POST "/v1/sandboxes/$sid/exec" \
    -d '{"argv":["sh","-c","mkdir -p /tmp/www && echo hello-from-guest >/tmp/www/hello.txt && seq 1 60000 >/tmp/www/seq.txt || exit 1; setsid httpd -f -p 127.0.0.1:8080 -h /tmp/www </dev/null >/dev/null 2>&1 & setsid nc -l -p 9090 -e wc -c </dev/null >/dev/null 2>&1 & setsid kiln-vsock-test listen 7070 </dev/null >/dev/null 2>&1 &"]}'
  kd_check '[ $status = 200 ] && [ "$(jget .exit_code)" = 0 ]' "start the guest servers"

  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":8080}'
  kd_check '[ $status = 201 ] && [ "$(jget "[.guest_port, .target, .guest_address, .guest_unreachable] | words")" = "8080 tcp 127.0.0.1 0" ]' "port mapping created, target tcp by default"
  hp=$(jget .host_port)
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":8081,"host_port":'"$hp"'}'
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = exists ]' "the same host port twice is 409"
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":8080,"target":"udp"}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "an unknown target is 400 bad_field"
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":8080,"guest_address":"10.0.2.2"}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "a guest_address beyond the loopback is 400 bad_field"
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":1024,"target":"vsock"}'
  kd_check '[ $status = 400 ]' "the agent's vsock port cannot be forwarded"

  # httpd may not listen yet: until it does, kilnd closes each connection.
  got=$(kd_http_hello "$hp")
  kd_check '[ "$got" = ok ]' "HTTP GET through 127.0.0.1:$hp → guest TCP 127.0.0.1:8080 ($got)"
  curl -sS --max-time 300 -o "$kd/seq.txt" "http://127.0.0.1:$hp/seq.txt" 2>"$kd/curl.err"
  kd_check 'seq 1 60000 | cmp -s - "$kd/seq.txt"' "curl fetched the 350 KB file whole ($(wc -c <"$kd/seq.txt" 2>/dev/null) bytes; $(head -c 200 "$kd/curl.err"))"

  # Half-close both ways: wc -c answers only once it has read EOF.
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":9090,"target":"tcp","guest_address":"127.0.0.1"}'
  kd_check '[ $status = 201 ]' "port mapping to guest TCP 9090"
  hp2=$(jget .host_port)
  got=$(python3 - "$hp2" <<'PY'
import socket, sys, time
msg = b"x" * 200000
got = b""
for attempt in range(240):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=120)
    try:
        s.sendall(msg)
        s.shutdown(socket.SHUT_WR)
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        got = b""
    s.close()
    if got:
        break
    time.sleep(0.5)  # nc was not listening yet
print("ok" if got.strip() == b"200000" else f"bad {got[:100]!r}")
PY
)
  kd_check '[ "$got" = ok ]' "200000 bytes, EOF in, wc -c's count and EOF out through 127.0.0.1:$hp2 → guest TCP 9090 ($got)"

  # Nothing listens on guest TCP 8089.
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":8089}'
  hpu=$(jget .host_port)
  got=$(python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=120)
try:
    print(len(s.recv(100)))
except OSError:
    print(0)' "$hpu")
  kd_check '[ "$got" = 0 ]' "a guest port where nothing listens: the connection is closed ($got)"
  api GET "/v1/sandboxes/$sid/ports"
  kd_check '[ "$(jget "[.ports[] | select(.host_port == $hpu) | .guest_unreachable]")" = "[1]" ]' "counted as guest_unreachable"

  # The vsock target.
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":7070,"target":"vsock"}'
  kd_check '[ $status = 201 ] && [ "$(jget "[.target, has(\"guest_address\")] | words")" = "vsock false" ]' "vsock port mapping created"
  hpv=$(jget .host_port)
  got=$(python3 - "$hpv" <<'PY'
import socket, sys, time
msg = b"through-vsock-" * 1000
for attempt in range(60):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    if got:
        break
    time.sleep(0.5)  # the guest server was not listening yet
print("ok" if got == msg else f"bad {len(got)}")
PY
)
  kd_check '[ "$got" = ok ]' "14000 bytes echoed through 127.0.0.1:$hpv → vsock 7070 ($got)"

  api GET "/v1/sandboxes/$sid/ports"
  kd_check '[ "$(jget "([.ports[] | .host_port] | sort) == ([$hp, $hp2, $hpu, $hpv] | sort)")" = true ]' "ports lists the four mappings"
  api DELETE "/v1/sandboxes/$sid/ports/$hp"
  kd_check '[ $status = 204 ]' "remove the mapping"
  kd_check '! python3 -c "import socket, sys; socket.create_connection((\"127.0.0.1\", $hp), timeout=5)" 2>/dev/null' "the host port is closed"
  api DELETE "/v1/sandboxes/$sid/ports/$hp"
  kd_check '[ $status = 404 ]' "removing it twice is 404"
  # A hibernation keeps the mappings: they listen again on the same host
  # ports once the sandbox wakes. A checkpoint keeps their guest sides:
  # its forks listen on them anew, on host ports of their own.
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":8080}'
  hp=$(jget .host_port)
  api POST "/v1/sandboxes/$sid/checkpoints" -d '{"name":"served"}'
  kd_check '[ $status = 201 ] && [ "$(jget "[.ports[] | .guest_port] | sort")" = "[7070,8080,8089,9090]" ]' "the checkpoint keeps the mappings' guest sides"
  api POST "/v1/sandboxes/$sid/hibernate"
  kd_check '[ $status = 200 ]' "hibernate with port mappings"
  api POST "/v1/sandboxes/$sid/wake"
  kd_check '[ $status = 200 ] && [ "$(jget .woke_from)" = snapshot ]' "wake"
  api GET "/v1/sandboxes/$sid/ports"
  kd_check '[ "$(jget "([.ports[] | .host_port] | sort) == ([$hp, $hp2, $hpu, $hpv] | sort)")" = true ]' "after the wake the mappings listen again on their host ports"
  got=$(kd_http_hello "$hp")
  kd_check '[ "$got" = ok ]' "HTTP GET through 127.0.0.1:$hp after the wake ($got)"
  api POST /v1/sandboxes -d '{"from_checkpoint":"'"$sid"'/served"}'
  kd_check '[ $status = 201 ]' "fork the checkpoint"
  local fk fhp
  fk=$(jget .id 2>/dev/null)
  api GET "/v1/sandboxes/$fk/ports"
  kd_check '[ "$(jget "[.ports[].guest_port] | sort")" = "[7070,8080,8089,9090]" ] && [ "$(jget "[.ports[].host_port] - [$hp, $hp2, $hpu, $hpv] | length")" = 4 ]' "the fork listens on the checkpoint's mappings, on host ports of its own"
  fhp=$(jget '([.ports[] | select(.guest_port == 8080) | .host_port])[0]' 2>/dev/null)
  got=$(kd_http_hello "$fhp")
  kd_check '[ "$got" = ok ]' "HTTP GET through the fork's 127.0.0.1:$fhp reaches its own httpd ($got)"
  api DELETE "/v1/sandboxes/$fk"
  kd_check '[ $status = 204 ]' "delete the fork"
  # A mapping ends with the sandbox.
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":8080}'
  hp=$(jget .host_port)
  api POST "/v1/sandboxes/$sid/stop"
  api GET "/v1/sandboxes/$sid/ports"
  kd_check '[ "$(jget ".ports | length")" = 0 ]' "stop ends the mappings"
  kd_check '! python3 -c "import socket, sys; socket.create_connection((\"127.0.0.1\", $hp), timeout=5)" 2>/dev/null' "the stopped sandbox's port is closed"
  api POST "/v1/sandboxes/$sid/ports" -d '{"guest_port":8080}'
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = wrong_state ]' "no mapping on a stopped sandbox"
  api DELETE "/v1/sandboxes/$sid"
  kd_done || return 1
  expect_rc 0
}

# Preview URLs (docs/api.md, "Preview URLs"): kilnd's --preview-listen
# proxies HTTP to guest ports by Host (PORT-ID.localhost) and by path
# (/preview/ID/PORT/). Busybox httpd (with a CGI that prints what reached
# it) behind a token: 401 without it, 200 with it as a header, a bearer or
# the cookie a ?token= first visit sets, and nothing of the token reaches
# the guest. kiln-ws-echo (the test image) behind a public preview: a
# WebSocket handshake and one masked frame echoed. Then the sandbox
# hibernates and a preview request wakes it. One boot.
KD_PREVIEW_PORT=18443

# kd_pcurl HOSTHDR PATH [CURL ARGS...]: $status and $body (without its
# last newline) of one request to the preview listener (retried while the
# guest server is not up: 502).
kd_pcurl() {
  local h=$1 p=$2 resp i
  shift 2
  for i in $(seq 1 120); do
    heartbeat "preview $p"
    resp=$(curl -sS --max-time 600 -H "Host: $h" -w '\n%{http_code}' "http://127.0.0.1:$KD_PREVIEW_PORT$p" "$@")
    status=${resp##*$'\n'}
    body=${resp%$'\n'*}
    body=${body%$'\n'}  # the page's own last newline
    [ "$status" = 502 ] || return 0
    sleep 0.5
  done
}

# kd_ws_echo HOSTHDR PATH [HEADER]: "ok" when the WebSocket handshake
# through the preview listener answers the right Sec-WebSocket-Accept and a
# masked text frame comes back as sent.
kd_ws_echo() {
  python3 - "$KD_PREVIEW_PORT" "$@" <<'PY'
import base64, hashlib, os, socket, sys, time
port, hosthdr, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
extra = sys.argv[4] + "\r\n" if len(sys.argv) > 4 else ""
msg = b"hello-through-the-preview"
for attempt in range(120):
    key = base64.b64encode(os.urandom(16)).decode()
    s = socket.create_connection(("127.0.0.1", port), timeout=600)
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {hosthdr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    if head.startswith(b"HTTP/1.1 502"):
        s.close()
        time.sleep(0.5)  # kiln-ws-echo is not listening yet
        continue
    break
want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
if not head.startswith(b"HTTP/1.1 101") or f"Sec-WebSocket-Accept: {want}\r\n".encode() not in head:
    print(f"bad handshake {head[:300]!r}")
    sys.exit(0)
mask = os.urandom(4)
s.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(msg)))
got = b""
while len(got) < 2 + len(msg):
    b = s.recv(4096)
    if not b:
        break
    got += b
s.close()
print("ok" if got == bytes([0x81, len(msg)]) + msg else f"bad frame {got[:100]!r}")
PY
}

test_kilnd_preview_urls() {
  kd_start --preview-listen "127.0.0.1:$KD_PREVIEW_PORT" || return 1
  local why='' tok bad h hw got url jar="$kd/cookies"
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  h="8080-$sid.localhost:$KD_PREVIEW_PORT" hw="8081-$sid.localhost:$KD_PREVIEW_PORT"
  api POST "/v1/sandboxes/$sid/exec" \
    -d '{"argv":["sh","-c","mkdir -p /tmp/www/cgi-bin && echo hello-from-guest >/tmp/www/hello.txt && printf \"#!/bin/sh\\necho Content-Type: text/plain\\necho\\nenv\\n\" >/tmp/www/cgi-bin/env && chmod +x /tmp/www/cgi-bin/env || exit 1; setsid httpd -f -p 127.0.0.1:8080 -h /tmp/www </dev/null >/dev/null 2>&1 & setsid kiln-ws-echo 8081 </dev/null >/dev/null 2>&1 &"]}'
  kd_check '[ $status = 200 ] && [ "$(jget .exit_code)" = 0 ]' "start the guest servers"

  api POST "/v1/sandboxes/$sid/previews" -d '{"port":8080}'
  kd_check '[ $status = 201 ] && [ "$(jget "[.id, .public, (.token | length), .url, .path_url] | words")" = "$sid/8080 false 48 http://$h/ http://127.0.0.1:$KD_PREVIEW_PORT/preview/$sid/8080/" ]' "a preview with a token and both URLs"
  tok=$(jget .token 2>/dev/null)
  api POST "/v1/sandboxes/$sid/previews" -d '{"port":8081,"public":true}'
  kd_check '[ $status = 201 ] && [ "$(jget "[.public, has(\"token\")] | words")" = "true false" ]' "a public preview has no token"
  api POST "/v1/sandboxes/$sid/previews" -d '{"port":8080}'
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = exists ]' "the same port twice is 409"
  api POST "/v1/sandboxes/$sid/previews" -d '{"port":0}'
  kd_check '[ $status = 400 ]' "port 0 is 400"

  kd_pcurl "$h" /hello.txt
  kd_check '[ $status = 401 ] && [[ "$body" == *unauthorized* ]]' "no token: 401"
  # The token with its last character changed (a token ending in 0 must
  # not become itself: that was a 1-in-16 flake).
  bad=${tok%?}0
  [ "$bad" != "$tok" ] || bad=${tok%?}1
  kd_pcurl "$h" /hello.txt -H "X-Kiln-Preview-Token: $bad"
  kd_check '[ $status = 401 ]' "a wrong token: 401"
  kd_pcurl "$h" /hello.txt -H "X-Kiln-Preview-Token: $tok"
  kd_check '[ $status = 200 ] && [ "$body" = hello-from-guest ]' "by Host with the token header: the guest's page"
  kd_pcurl 127.0.0.1 "/preview/$sid/8080/hello.txt" -H "Authorization: Bearer $tok"
  kd_check '[ $status = 200 ] && [ "$body" = hello-from-guest ]' "by path with a bearer token: the same page"
  # A first visit with ?token=: a redirect that sets the cookie and drops
  # the token; the cookie alone then lets the browser in.
  kd_pcurl 127.0.0.1 "/preview/$sid/8080/cgi-bin/env?a=1&token=$tok" -c "$jar" -D "$kd/redirect.h"
  kd_check '[ $status = 302 ] && grep -qi "^Location: /preview/$sid/8080/cgi-bin/env?a=1" "$kd/redirect.h" && grep -qi "Set-Cookie: kiln_preview_${sid}_8080=$tok; Path=/preview/$sid/8080; HttpOnly" "$kd/redirect.h"' "?token= answers 302 with an HttpOnly cookie"
  kd_pcurl 127.0.0.1 "/preview/$sid/8080/cgi-bin/env?a=1" -b "$jar" -H "Cookie: app=1"
  kd_check '[ $status = 200 ] && [[ "$body" == *QUERY_STRING=a=1* ]] && [[ "$body" == *HTTP_X_FORWARDED_PREFIX=/preview/$sid/8080* ]] && [[ "$body" == *app=1* ]]' "the cookie lets it in; the guest sees the path without the prefix and the app's own cookie"
  kd_check '[[ "$body" != *"$tok"* ]] && [[ "$body" != *kiln_preview* ]]' "neither the token nor the preview cookie reaches the guest"

  # The public preview: a WebSocket echo, by Host and by path, no token.
  got=$(kd_ws_echo "$hw" /)
  kd_check '[ "$got" = ok ]' "WebSocket echo through the host-based URL ($got)"
  got=$(kd_ws_echo 127.0.0.1 "/preview/$sid/8081/")
  kd_check '[ "$got" = ok ]' "WebSocket echo through the path-based URL ($got)"
  kd_pcurl "9999-$sid.localhost" /
  kd_check '[ $status = 404 ]' "a port without a preview: 404"

  # A hibernated sandbox is woken by a request to its preview.
  api POST "/v1/sandboxes/$sid/hibernate"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = hibernated ]' "hibernate"
  kd_pcurl "$h" /hello.txt -H "X-Kiln-Preview-Token: $tok"
  kd_check '[ $status = 200 ] && [ "$body" = hello-from-guest ]' "a preview request wakes it and gets the page ($status)"
  api GET "/v1/sandboxes/$sid"
  kd_check '[ "$(jget "[.state, .boot.from] | words")" = "running hibernate" ]' "running again, from its snapshot"
  api GET "/v1/sandboxes/$sid/previews"
  kd_check '[ "$(jget "[.previews[] | .port] | sort")" = "[8080,8081]" ]' "the previews survive the hibernation"
  api DELETE "/v1/sandboxes/$sid/previews/8080"
  kd_check '[ $status = 204 ]' "remove a preview"
  kd_pcurl "$h" /hello.txt -H "X-Kiln-Preview-Token: $tok"
  kd_check '[ $status = 404 ]' "a removed preview is 404"
  api DELETE "/v1/sandboxes/$sid/previews/8080"
  kd_check '[ $status = 404 ]' "removing it twice is 404"
  # The CLI's three commands.
  kc preview "$sid" 8082
  kd_check '[ $rc = 0 ] && printf "%s\n" "$out" | grep -qx "url: http://8082-$sid.localhost:$KD_PREVIEW_PORT/" && printf "%s\n" "$out" | grep -qE "^token: [0-9a-f]{48}$"' "kiln preview prints the URL and the token ($out $err)"
  kc preview ls "$sid"
  kd_check '[ $rc = 0 ] && printf "%s\n" "$out" | grep -qE "^8081 +public +http://8081-$sid" && printf "%s\n" "$out" | grep -qE "^8082 +token "' "kiln preview ls ($out $err)"
  kc preview rm "$sid" 8082
  kd_check '[ $rc = 0 ]' "kiln preview rm ($err)"
  api DELETE "/v1/sandboxes/$sid"
  kd_check '! grep -q "$tok" "$kd/kilnd.log"' "the token is never logged"
  kd_done || return 1
  expect_rc 0
}

# The firewall API's refusals (no guest needed).
test_kilnd_firewall_refusals() {
  local why=''
  # Requests that need no guest.
  kd_start || return 1
  api POST /v1/sandboxes -d '{"image":"minimal","firewall":{}}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "firewall without network passt is 400"
  api POST /v1/sandboxes -d '{"image":"minimal","network":"tap"}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "network tap is 400"
  api POST /v1/sandboxes -d '{"image":"minimal","network":"passt","firewall":{"allow":[{"cidr":"10.0.0.0/8","ports":"80-"}]}}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.message)" = "firewall: allow[0].ports \"80-\": not a port or a range LO-HI of 1..65535" ]' "a bad rule at create is 400 with the filter's message"
  api GET /v1/sandboxes/0123456789ab/firewall
  kd_check '[ $status = 404 ]' "firewall of an unknown sandbox is 404"
  kd_done
}

# kd_fw FILTER: jget over GET .../firewall of $sid.
kd_fw() { api GET "/v1/sandboxes/$sid/firewall"; jget "$1"; }

# kd_get HOST PORT [CONNECT_TIMEOUT]: an HTTP GET from sandbox $sid (busybox
# nc, its input held open: see pget in net_tests.sh); the "kiln-net
# HOST:PORT" line of net_hosts.py, nothing when it failed.
kd_get() {
  kd_sh "$sid" "(printf 'GET / HTTP/1.0\r\n\r\n'; sleep 120 </dev/null 2>/dev/null &) | nc -w ${3:-60} $1 $2"
  kd_out | grep '^kiln-net' || true
}

# A sandbox with "network": "passt" through kilnd: kilnd (so kiln-vmm and
# its passt) runs in a namespace of test hosts, set up as in net_tests.sh's
# test_net_passt_outbound_without_root_setup (an uplink for passt's
# defaults; kilnd --dns-resolver names the namespace's DNS server). The
# create body's rules reach kiln-vmm, GET shows rules and live counters,
# PUT checks (400 with the filter's message), saves and applies at runtime,
# a stopped sandbox keeps the saved rules for its next boot, a sandbox
# without network is 409.
test_kilnd_firewall_passt() {
  local why='' o sid sid0 kd_wrap
  net_ns_make kf && net_ns_uplink || { net_cleanup; return 1; }
  net_hosts_start --http 10.78.1.10:8080 --http 10.77.2.10:8080 --http 203.0.113.10:8080 \
    --stream 10.78.1.10:7070 --dns 10.78.3.53 --zone allowed.test=203.0.113.10 || { net_cleanup; return 1; }
  # ip netns exec mounts a fresh /sys without the cgroup2 beneath it: kilnd
  # needs the hierarchy for its VMMs' cgroups (in this mount namespace only).
  kd_wrap=(ip netns exec "$ns" sh -c 'mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec "$@"' kd-cgroup)
  kd_start --dns-resolver 10.78.3.53 || { net_cleanup; return 1; }
  why=

  # No network: no firewall (409), and the sandbox object says so.
  kd_create '{"image":"minimal","console":false}' || { kd_stop; net_cleanup; return 1; }
  sid0=$sid
  kd_check '[ "$(jget .network)" = none ]' "a sandbox without network says network none"
  api GET "/v1/sandboxes/$sid0/firewall"
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = wrong_state ]' "GET firewall without network is 409"
  api GET "/v1/sandboxes/$sid0/firewall/log"
  kd_check '[ $status = 409 ]' "GET firewall/log without network is 409"
  api PUT "/v1/sandboxes/$sid0/firewall" -d '{}'
  kd_check '[ $status = 409 ]' "PUT firewall without network is 409"
  api DELETE "/v1/sandboxes/$sid0"

  kd_create '{"image":"minimal","network":"passt","firewall":{"allow":[{"cidr":"10.78.1.10/32","proto":"tcp","ports":"7070-8080"},{"host":"allowed.test","proto":"tcp","ports":8080}]}}' ||
    { kd_stop; net_cleanup; return 1; }
  kd_check '[ "$(jget .network)" = passt ]' "the sandbox object says network passt"
  kd_check '[ "$(kd_fw "[.running, .rules.allow[0].cidr, (.rules.dns | join(\",\"))] | words")" = "true 10.78.1.10/32 10.0.2.3" ]' \
    "GET firewall: the create body's rules with passt's resolver added"
  kd_check '[ "$(kd_fw ".counters.egress | type")" = object ]' "GET firewall has kiln-vmm's counters"

  o=$(kd_get 10.78.1.10 8080); kd_check '[ "$o" = "kiln-net 10.78.1.10:8080" ]' "allowed host through passt: '$o'"
  o=$(kd_get 10.77.2.10 8080 "$NET_BLOCKED_S"); kd_check '[ -z "$o" ]' "a host no rule allows answered: '$o'"
  # ... and the denied flow is in the sandbox's denied-flow log.
  api GET "/v1/sandboxes/$sid/firewall/log"
  kd_check '[ $status = 200 ] && [ "$(jget "any(.lines[]; startswith(\"egress drop_private tcp 10.0.2.15:\") and contains(\"-> 10.77.2.10:8080\"))")" = true ]' \
    "GET .../firewall/log lists the denied flow"
  kd_sh "$sid" 'nslookup allowed.test 10.0.2.3'
  o=$(kd_out | sed -n 's/^Address: *\([0-9.]*\)$/\1/p' | tail -1)
  kd_check '[ "$o" = 203.0.113.10 ]' "DNS through the default resolver rule: '$o'"
  o=$(kd_get 203.0.113.10 8080); kd_check '[ "$o" = "kiln-net 203.0.113.10:8080" ]' "the host rule after DNS: '$o'"
  kd_check '[ "$(kd_fw ".counters.rules.allow[0].flows >= 1")" = true ]' "the CIDR rule counted its flow"
  kd_check '[ "$(kd_fw ".counters.egress.drop_private.packets >= 1")" = true ]' "the denied private host counted"

  # A connection the guest holds across a hibernation: its host side ends
  # with the old kiln-vmm and passt. At the wake the device probes it, the
  # guest answers, and the device resets it (devices/net/tcp_reset.h), so
  # the reader fails at once instead of waiting for ever. (nc's input is
  # held open: a half-closed flow through passt is another story, pget.)
  kd_sh "$sid" 'mkfifo /tmp/hold && setsid sh -c "sleep 600 >/tmp/hold & nc 10.78.1.10 7070 </tmp/hold >/tmp/stream 2>/tmp/stream.err; echo \$? >/tmp/stream.rc" </dev/null >/dev/null 2>&1 &'
  for i in $(seq 1 60); do
    kd_sh "$sid" 'wc -l </tmp/stream'
    [ "$(kd_out)" -ge 2 ] 2>/dev/null && break
    sleep 0.5
  done
  kd_check '[ "$(kd_out)" -ge 2 ] 2>/dev/null' "the stream from 10.78.1.10:7070 never started ($(kd_out) lines)"
  api POST "/v1/sandboxes/$sid/hibernate"
  kd_check '[ $status = 200 ]' "hibernate with a connection open"
  api POST "/v1/sandboxes/$sid/wake"
  kd_check '[ $status = 200 ]' "wake"
  for i in $(seq 1 60); do
    kd_sh "$sid" 'cat /tmp/stream.rc 2>/dev/null'
    [ -n "$(kd_out)" ] && break
    sleep 0.5
  done
  kd_check '[ -n "$(kd_out)" ]' "the connection held across the hibernation still hangs after the wake ($(kd_fw '.counters.device, (.counters.egress | with_entries(select(.value.packets != 0)))'); $(api GET "/v1/sandboxes/$sid/firewall/log"; jget '.lines[-6:]'))"
  kd_check '[ "$(kd_fw ".counters.device.tcp_probes >= 1 and .counters.device.tcp_resets >= 1")" = true ]' \
    "the wake's probe and reset are counted"
  o=$(kd_get 10.78.1.10 8080); kd_check '[ "$o" = "kiln-net 10.78.1.10:8080" ]' "a new connection after the wake: '$o'"

  # A bad rule set changes nothing.
  api PUT "/v1/sandboxes/$sid/firewall" -d '{"allow":[{"cidr":"10.0.0.0/8","ports":"80-"}]}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ] && [ "$(jget .error.message)" = "firewall: allow[0].ports \"80-\": not a port or a range LO-HI of 1..65535" ]' \
    "PUT of a bad rule is 400 with the filter's message"
  api PUT "/v1/sandboxes/$sid/firewall" -d '{"allow":[],"colour":1}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = unknown_field ]' "PUT with an unknown field is 400 unknown_field"
  kd_check '[ "$(kd_fw ".rules.allow[0].cidr")" = 10.78.1.10/32 ]' "a refused PUT left the rules"

  # At runtime: the other host only.
  api PUT "/v1/sandboxes/$sid/firewall" -d '{"allow":[{"cidr":"10.77.2.10/32","proto":"tcp","ports":8080}]}'
  kd_check '[ $status = 200 ] && [ "$(jget ".applied and .cut >= 0")" = true ]' "PUT applied at runtime"
  o=$(kd_get 10.77.2.10 8080); kd_check '[ "$o" = "kiln-net 10.77.2.10:8080" ]' "the newly allowed host: '$o'"
  o=$(kd_get 10.78.1.10 8080 "$NET_BLOCKED_S"); kd_check '[ -z "$o" ]' "the host no longer allowed answered: '$o'"
  kd_check '[ "$(kd_metric kiln_firewall_updates_total)" = 1 ] && [ "$(kd_metric kiln_firewall_sandboxes)" = 1 ]' "firewall metrics"

  # Stopped: the saved rules, no counters; a PUT now is for the next boot.
  api POST "/v1/sandboxes/$sid/stop"
  api GET "/v1/sandboxes/$sid/firewall"
  kd_check '[ "$(jget "[.running, .rules.allow[0].cidr] | words")" = "false 10.77.2.10/32" ] && jnull .counters' \
    "GET firewall of a stopped sandbox: the saved rules"
  api PUT "/v1/sandboxes/$sid/firewall" -d '{"allow":[{"cidr":"10.78.1.10/32","proto":"tcp","ports":8080}]}'
  kd_check '[ $status = 200 ] && [ "$(jget .applied)" = false ] && jnull .cut' "PUT while stopped is saved"
  api POST "/v1/sandboxes/$sid/start"
  kd_check '[ $status = 200 ]' "start"
  o=$(kd_get 10.78.1.10 8080); kd_check '[ "$o" = "kiln-net 10.78.1.10:8080" ]' "the saved rules apply at the next boot: '$o'"
  o=$(kd_get 10.77.2.10 8080 "$NET_BLOCKED_S"); kd_check '[ -z "$o" ]' "the rules of the previous boot still allowed: '$o'"

  # The CLI: allow appends a rule (read, append, PUT), show prints it.
  kc firewall allow "$sid" 10.77.2.10:8080/tcp
  kd_check '[ "$rc" = 0 ]' "kiln firewall allow (rc=$rc err=$err)"
  kc firewall show "$sid"
  kd_check 'printf "%s" "$out" | grep -q "10.77.2.10/32"' "kiln firewall show lists the new rule ($out $err)"
  kc firewall log "$sid"
  kd_check '[ "$rc" = 0 ] && printf "%s" "$out" | grep -q "^egress drop_private tcp 10.0.2.15:[0-9]* -> 10.77.2.10:8080"' \
    "kiln firewall log prints the denied flow of this boot ($out $err)"
  o=$(kd_get 10.77.2.10 8080); kd_check '[ "$o" = "kiln-net 10.77.2.10:8080" ]' "the rule the CLI added: '$o'"

  api DELETE "/v1/sandboxes/$sid"
  kd_check '[ $status = 204 ]' "delete"
  kd_done
  local r=$?
  net_cleanup
  return $r
}

# egress_proxy_pid: the kiln-egress kilnd ($kdpid) started, or nothing.
egress_proxy_pid() {
  local o
  for o in $(pgrep -x kiln-egress); do
    [ "$(ps -o ppid= -p "$o" | tr -d ' ')" = "$kdpid" ] && echo "$o"
  done
}

# egress_test_certs DIR NAME...: a CA of the test's own (DIR/ca.pem) and a
# server certificate for the NAMEs (DIR/srv.pem, DIR/srv.key): the test
# hosts' upstream identity, which kilnd's egress proxies are told to trust
# (--egress-upstream-ca), never the host's.
egress_test_certs() {
  local d=$1 n san=''
  shift
  for n in "$@"; do san="$san${san:+,}DNS:$n"; done
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/ca.key" -out "$d/ca.pem" \
    -days 2 -subj "/CN=kiln egress test upstream CA" -addext basicConstraints=critical,CA:TRUE 2>"$d/openssl.err" &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/srv.key" -out "$d/srv.csr" \
      -subj "/CN=$1" 2>>"$d/openssl.err" &&
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" >"$d/srv.ext" &&
    openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -out "$d/srv.pem" \
      -days 2 -extfile "$d/srv.ext" 2>>"$d/openssl.err"
}

# The HTTP(S) egress proxy through kilnd (issue 37; docs/security.md,
# "The egress proxy"), on the test image (HTTPS with kiln-bench-get, which
# does not check certificates; the Debian image's test has curl, git and
# pip trust the sandbox's CA). A sandbox with `http` rules gets a
# kiln-egress of its own uid (meta's "egress", not the jail's) listening
# on vm/egress.sock. A secret set through the API is injected on the host
# into HTTPS requests to api.test (the test server logs the authorization
# header it got) and is in no file, environment or /proc of the guest,
# nor in any log; a host no rule names is refused; plain HTTP to
# plain.test (which shares api.test's address) passes, a method its rule
# does not list is refused with a 403 and never reaches the server, and a
# guest claiming that Host to another address is refused; the decisions
# are in GET .../egress/log. A PUT that leaves no http rule stops the
# proxy (port 80 goes straight out again); one that adds them back to the
# running sandbox starts it, sends the guest the CA and steers at once.
test_kilnd_egress_proxy() {
  local why='' o sid kd_wrap tdir p puid rules secret=kiln-s3cret-7f3a9c
  net_ns_make ke && net_ns_uplink || { net_cleanup; return 1; }
  tdir=$(mktemp -d /tmp/ke.XXXXXX)
  egress_test_certs "$tdir" api.test other.test plain.test ||
    { fail "cannot make the test's certificates: $(cat "$tdir/openssl.err")"; rm -rf "$tdir"; net_cleanup; return 1; }
  net_hosts_start --https 203.0.113.10:443 --https 203.0.113.11:443 --http 203.0.113.10:80 --http 203.0.113.11:80 \
    --tls-cert "$tdir/srv.pem" --tls-key "$tdir/srv.key" --dns 10.78.3.53 \
    --zone api.test=203.0.113.10 --zone other.test=203.0.113.11 --zone plain.test=203.0.113.10 ||
    { rm -rf "$tdir"; net_cleanup; return 1; }
  # kilnd's --dns-resolver: passt and the proxy both ask the test's server.
  kd_wrap=(ip netns exec "$ns" sh -c 'mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec "$@"' kd-cgroup)
  kd_start --dns-resolver 10.78.3.53 --egress-upstream-ca "$tdir/ca.pem" || { rm -rf "$tdir"; net_cleanup; return 1; }
  why=

  api PUT /v1/secrets/gh -d "{\"value\":\"$secret\"}"
  kd_check '[ $status = 201 ]' "PUT /v1/secrets/gh"
  rules='{"outbound_internet":true,"http":[{"host":"api.test","intercept":true,"inject":[{"header":"authorization","secret":"gh","format":"Bearer {}"}]},{"host":"plain.test","ports":[80],"methods":["GET"]}]}'
  kd_create "{\"image\":\"minimal\",\"network\":\"passt\",\"firewall\":$rules}" ||
    { kd_stop; rm -rf "$tdir"; net_cleanup; return 1; }
  p=$(egress_proxy_pid)
  kd_check '[ -n "$p" ]' "no kiln-egress of kilnd's for the sandbox"
  puid=$(awk '/^Uid:/ {print $2}' "/proc/$p/status" 2>/dev/null)
  kd_check '[ -n "$puid" ] && [ "$puid" = "$(jget .egress.uid)" ] && [ "$puid" != "$(jget .jail.uid)" ] && [ "$puid" != 0 ]' \
    "the proxy's uid '$puid' is not the sandbox's egress uid, or is its jail's or root"
  kd_check '[ -S "$kd/state/sandboxes/$sid/vm/egress.sock" ]' "no vm/egress.sock"
  kd_check '[ "$(kd_metric kiln_egress_proxies)" = 1 ]' "kiln_egress_proxies is not 1"

  # kiln-bench-get (the test image's OpenSSL client; busybox wget's own TLS
  # sends no signature_algorithms, which OpenSSL 3 servers refuse).
  kd_sh "$sid" 'kiln-bench-get 1 https://api.test/ok 2>&1'
  kd_check 'kd_out | grep -q "^run 0 "' \
    "HTTPS to api.test through the proxy: '$(kd_out)' (egress.log: $(tail -c 1500 "$kd/state/sandboxes/$sid/egress.log" 2>&1))"
  kd_check 'grep -qx "https 203.0.113.10:443 GET /ok authorization=Bearer $secret" "$hlog"' \
    "the server got the injected authorization header ($(grep https "$hlog" | sed "s/$secret/SECRET/g"))"
  kd_sh "$sid" 'kiln-bench-get 1 https://other.test/ 2>&1'
  kd_check '! kd_out | grep -q "^run 0 " && ! grep -q "203.0.113.11:443" "$hlog"' "a host no rule names is refused: '$(kd_out)'"
  kd_sh "$sid" 'wget -q -O - http://plain.test/ 2>&1'
  kd_check '[ "$(kd_out)" = "kiln-net 203.0.113.10:80" ]' "plain HTTP to an allowed host: '$(kd_out)'"
  kd_sh "$sid" 'wget -q -O - --post-data x http://plain.test/ 2>&1; echo rc=$?'
  kd_check 'kd_out | grep -q "403" && [ "$(grep -c "^http 203.0.113.10:80" "$hlog")" = 1 ]' \
    "a POST the rule does not allow is 403 and never sent: '$(kd_out)'"
  kd_sh "$sid" 'wget -q -O - --header "Host: plain.test" http://203.0.113.11/ 2>&1; echo rc=$?'
  kd_check 'kd_out | grep -q 403 && ! grep -q "http 203.0.113.11:80" "$hlog"' \
    "an allowed Host sent to another address is refused: '$(kd_out)'"
  kd_sh "$sid" "grep -rls $secret /proc/[0-9]*/environ /proc/cmdline /etc /run /tmp /root 2>/dev/null | head -3; echo done"
  kd_check '[ "$(kd_out)" = done ]' "the secret is in no file or environment of the guest: '$(kd_out)'"

  api GET "/v1/sandboxes/$sid/egress/log"
  kd_check '[ $status = 200 ] && ! printf "%s" "$body" | grep -q "$secret"' "GET .../egress/log never holds the secret"
  kd_check 'printf "%s" "$body" | grep -q "authorization"' "GET .../egress/log names the injected header: ${body:0:600}"
  kd_check '! grep -rqs "$secret" "$kd/kilnd.log" "$kd/state/sandboxes/$sid"/*.log' "no log of kilnd's holds the secret"

  # A policy callback through the Python SDK (egress_policy_client.py):
  # it denies what the rules allow, adds a header, allows a POST the rule
  # does not; a silent one fails closed at its deadline.
  local cpid
  python3 tests/integration/egress_policy_client.py "$kds" "$sid" decide "$tdir/ready" >"$tdir/client.out" 2>&1 &
  cpid=$!
  for _ in $(seq 1 600); do [ -s "$tdir/ready" ] || ! kill -0 "$cpid" 2>/dev/null && break; sleep 0.1; done
  kd_check '[ -s "$tdir/ready" ]' "the SDK's policy client did not attach: $(tail -c 600 "$tdir/client.out")"
  api GET "/v1/sandboxes/$sid/egress/decisions" -H "Connection: Upgrade" -H "Upgrade: kiln-decisions"
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = busy ]' "a second decision client: $status $body"
  kd_sh "$sid" 'kiln-bench-get 1 https://api.test/blocked 2>&1'
  kd_check '! kd_out | grep -q "^run 0 " && ! grep -q "GET /blocked" "$hlog"' \
    "a request the callback denies is refused: '$(kd_out)'"
  kd_sh "$sid" 'kiln-bench-get 1 https://api.test/agent 2>&1'
  kd_check 'kd_out | grep -q "^run 0 " && grep -qx "https 203.0.113.10:443 GET /agent authorization=Bearer $secret x-agent=a1" "$hlog"' \
    "the callback's header and the rule's secret both arrive: '$(kd_out)' ($(grep "/agent" "$hlog" | sed "s/$secret/SECRET/g"))"
  kd_sh "$sid" 'wget -q -O - --post-data x http://plain.test/ 2>&1; echo rc=$?'
  kd_check 'kd_out | grep -q "^kiln-net 203.0.113.10:80"' "a POST the rules deny and the callback allows: '$(kd_out)'"
  kd_check 'grep -q "\"kind\": \"connect\"" "$tdir/client.out" && grep -q "\"path\": \"/agent\"" "$tdir/client.out" && ! grep -q "$secret" "$tdir/client.out"' \
    "the callback saw connects and requests, never the secret: $(tail -c 600 "$tdir/client.out" | sed "s/$secret/SECRET/g")"
  kill "$cpid" 2>/dev/null
  wait "$cpid" 2>/dev/null
  rm -f "$tdir/ready"
  python3 tests/integration/egress_policy_client.py "$kds" "$sid" silent "$tdir/ready" >"$tdir/client2.out" 2>&1 &
  cpid=$!
  for _ in $(seq 1 600); do [ -s "$tdir/ready" ] || ! kill -0 "$cpid" 2>/dev/null && break; sleep 0.1; done
  kd_sh "$sid" 'kiln-bench-get 1 https://api.test/slow 2>&1'
  kd_check '! kd_out | grep -q "^run 0 " && ! grep -q "GET /slow" "$hlog"' "a callback that does not answer in time fails closed: '$(kd_out)'"
  kill "$cpid" 2>/dev/null
  wait "$cpid" 2>/dev/null
  api GET "/v1/sandboxes/$sid/egress/log?lines=1000"
  kd_check 'printf "%s" "$body" | grep -q "\"policy\":\"timeout\"" && printf "%s" "$body" | grep -q "\"policy\":\"callback\""' \
    "the egress log says who decided: ${body: -800}"
  kd_sh "$sid" 'kiln-bench-get 1 https://api.test/after 2>&1'
  kd_check 'kd_out | grep -q "^run 0 "' "the client gone, the rules decide again: '$(kd_out)'"

  # No http rule left: the proxy stops and port 80 goes out through passt.
  api PUT "/v1/sandboxes/$sid/firewall" -d '{"outbound_internet":true}'
  kd_check '[ $status = 200 ]' "PUT without http rules"
  for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kd_check '! kill -0 "$p" 2>/dev/null' "kiln-egress $p runs on without http rules"
  kd_check '[ ! -e "$kd/state/sandboxes/$sid/vm/egress.sock" ] && [ "$(kd_metric kiln_egress_proxies)" = 0 ]' \
    "vm/egress.sock or kiln_egress_proxies left without http rules"
  kd_sh "$sid" 'wget -q -O - --header "Host: plain.test" http://203.0.113.11/ 2>&1; echo rc=$?'
  kd_check 'kd_out | grep -q "^kiln-net 203.0.113.11:80"' "without http rules port 80 is not steered: '$(kd_out)'"
  # Added back to the running sandbox: steered at once, the secret injected.
  api PUT "/v1/sandboxes/$sid/firewall" -d "$rules"
  kd_check '[ $status = 200 ] && [ "$(jget .applied)" = true ]' "PUT adding http rules at runtime"
  kd_sh "$sid" 'kiln-bench-get 1 https://api.test/again 2>&1'
  kd_check 'kd_out | grep -q "^run 0 " && grep -qx "https 203.0.113.10:443 GET /again authorization=Bearer $secret" "$hlog"' \
    "http rules added at runtime steer and inject: '$(kd_out)'"
  kd_sh "$sid" 'cat /run/kiln/egress-ca.pem 2>&1 | head -1'
  kd_check '[ "$(kd_out)" = "-----BEGIN CERTIFICATE-----" ]' "the guest got the CA with the rules: '$(kd_out)'"

  api DELETE "/v1/sandboxes/$sid"
  kd_check '[ $status = 204 ]' "delete"
  kd_done
  local r=$?
  rm -rf "$tdir"
  net_cleanup
  return $r
}
