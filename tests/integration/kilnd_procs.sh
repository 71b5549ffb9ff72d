# kilnd's background processes and their tty (docs/api.md, "Processes").
# Helpers: kilnd_lib.sh.

# Background processes: output streamed, a reader that disconnects and
# comes back with ?from=, stdin, signal, wait, errors.
test_kilnd_processes_output_reattach_stdin_signal() {
  kd_start || return 1
  local why='' pid1 pid2 ev seq
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  api POST "/v1/sandboxes/$sid/processes" -d '{"argv":["sh","-c","i=0; while [ ! -e /tmp/stop ]; do echo line$i; i=$((i+1)); sleep 0.5; done; echo done"]}'
  kd_check '[ $status = 201 ] && [ "$(jget ".id > 0 and .pid > 0")" = true ]' "create a background process"
  pid1=$(jget .id)
  # A reader that leaves after 2 s: the process must not notice.
  curl -sS -N --max-time 2 --unix-socket "$kds" "http://kiln/v1/sandboxes/$sid/processes/$pid1/output" >"$kd/out1" 2>/dev/null
  ev=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.endswith("\n")]
out = [e for e in ev if e["type"] == "stdout"]
print(ev[0]["type"], ev[0]["running"], out[0]["data"].split()[0] if out else "-", out[-1]["seq"] + len(out[-1]["data"]) if out else 0)' "$kd/out1")
  kd_check '[ "${ev% *}" = "attached True line0" ]' "first reader: attached, then line0 ($ev)"
  seq=${ev##* }
  api GET "/v1/sandboxes/$sid/processes/$pid1"
  kd_check '[ "$(jget .running)" = true ] && [ "$(jget .attached)" = 0 ]' "the process runs on, detached, after the reader left"
  # Let it finish (it runs until told: a slow harness must not end it early),
  # then reattach where the first reader stopped: no byte lost or repeated.
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["touch","/tmp/stop"]}'
  kd_check '[ $status = 200 ]' "exec touch /tmp/stop"
  api GET "/v1/sandboxes/$sid/processes/$pid1/output?from=$seq"
  ev=$(printf '%s\n' "$body" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
out = "".join(e.get("data", "") for e in ev if e["type"] == "stdout")
print(ev[0]["seq"], ev[-1]["type"], ev[-1]["exit_code"], out.split()[-1])')
  kd_check '[ "$ev" = "$seq exit 0 done" ]' "reattached from seq $seq to the exit ($ev)"
  api GET "/v1/sandboxes/$sid/processes/$pid1/output?from=0"
  kd_check '[ "$(printf "%s" "$body" | grep -c "\"type\":\"stdout\"")" -ge 1 ] && printf "%s" "$body" | tail -n 1 | grep -q "\"type\":\"exit\""' "an exited process replays its ring, then exit"

  # stdin: bytes, then close; cat echoes them and ends.
  api POST "/v1/sandboxes/$sid/processes" -d '{"argv":["cat"]}'
  pid2=$(jget .id)
  api POST "/v1/sandboxes/$sid/processes/$pid2/stdin" --data-binary 'hello kiln'
  kd_check '[ $status = 200 ] && [ "$(jget .bytes)" = 10 ]' "stdin bytes"
  api POST "/v1/sandboxes/$sid/processes/$pid2/stdin?close=1" --data-binary $'\n'
  kd_check '[ $status = 200 ] && [ "$(jget .closed)" = true ]' "stdin close"
  api POST "/v1/sandboxes/$sid/processes/$pid2/wait?timeout_ms=60000"
  kd_check '[ $status = 200 ] && [ "$(jget .exit_code)" = 0 ] && [ "$(jget .stdout_bytes)" = 11 ]' "cat ended at EOF"
  api GET "/v1/sandboxes/$sid/processes/$pid2/output"
  kd_check 'printf "%s" "$body" | grep -q "\"data\":\"hello kiln\\\\n\""' "cat echoed stdin"
  api POST "/v1/sandboxes/$sid/processes/$pid2/stdin" --data-binary 'late'
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = invalid_state ]' "stdin to an exited process is 409"

  # signal and wait.
  api POST "/v1/sandboxes/$sid/processes" -d '{"argv":["sleep","1000"]}'
  pid2=$(jget .id)
  api POST "/v1/sandboxes/$sid/processes/$pid2/wait?timeout_ms=200"
  kd_check '[ $status = 504 ] && [ "$(jget .error.code)" = timeout ]' "wait on a running process times out"
  api POST "/v1/sandboxes/$sid/processes/$pid2/signal" -d '{"signal":"TERM"}'
  kd_check '[ $status = 204 ]' "signal TERM"
  api POST "/v1/sandboxes/$sid/processes/$pid2/wait?timeout_ms=60000"
  kd_check '[ "$(jget .signal)" = 15 ] && jnull .exit_code' "TERM ended it"
  api POST "/v1/sandboxes/$sid/processes/$pid2/signal" -d '{"signal":"BOGUS"}'
  kd_check '[ $status = 400 ]' "unknown signal name is 400"
  api POST "/v1/sandboxes/$sid/processes/$pid2/resize" -d '{"rows":10,"cols":10}'
  kd_check '[ $status = 409 ]' "resize without a pty is 409"

  api GET "/v1/sandboxes/$sid/processes"
  kd_check '[ "$(jget ".processes | length")" = 3 ]' "three processes listed"
  api GET "/v1/sandboxes/$sid/processes/999"
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = process_not_found ]' "unknown process is 404"
  api GET "/v1/sandboxes/$sid/processes/x/output"
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = process_not_found ]' "a non-numeric process id is 404"
  api POST "/v1/sandboxes/$sid/processes" -d '{"argv":["true"],"rows":5}'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "rows without pty is 400"
  api POST "/v1/sandboxes/$sid/stop"
  api GET "/v1/sandboxes/$sid/processes"
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = wrong_state ]' "processes of a stopped sandbox: 409"
  kd_done
}

# The tty stream: a shell over the kiln-tty upgrade, resized in-band,
# checked with stty size; a second session reattaches to the same shell.
test_kilnd_tty_upgrade_shell_resize() {
  kd_start || return 1
  local why='' proc res
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  api POST "/v1/sandboxes/$sid/shell" -d '{"rows":30,"cols":100}'
  kd_check '[ $status = 201 ]' "POST .../shell"
  proc=$(jget .id)
  api GET "/v1/sandboxes/$sid/processes/$proc/tty"
  kd_check '[ $status = 400 ]' "tty without the upgrade headers is 400"
  res=$(python3 - "$kds" "/v1/sandboxes/$sid/processes/$proc/tty" <<'PY'
import socket, sys, time
sock_path, path = sys.argv[1], sys.argv[2]

def session(first):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(240)
    s.connect(sock_path)
    s.sendall(("GET %s HTTP/1.1\r\nHost: kiln\r\nConnection: Upgrade\r\nUpgrade: kiln-tty\r\n\r\n" % path).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            print("FAIL closed before the 101"); sys.exit(1)
        head += b
    if not head.startswith(b"HTTP/1.1 101"):
        print("FAIL", head.split(b"\r\n")[0].decode()); sys.exit(1)
    s.sendall(first)
    return s

def read_until(s, token):
    out = b""
    deadline = time.time() + 240
    while token not in out and time.time() < deadline:
        chunk = s.recv(4096)
        if not chunk:
            break
        out += chunk
    return out

# The escape split in two writes, with input around it.
s = session(b"stty size; echo A\"\"A\r")
out = read_until(s, b"AA")
if b"30 100" not in out:
    print("FAIL spawn size:", out[-200:]); sys.exit(1)
s.sendall(b"\x1b]kiln;res")
time.sleep(0.02)
s.sendall(b"ize;40;120\x07stty size; echo B\"\"B\r")
out = read_until(s, b"BB")
if b"40 120" not in out:
    print("FAIL in-band resize:", out[-200:]); sys.exit(1)
s.close()   # detach: the shell keeps running
time.sleep(1)
s = session(b"stty size; echo C\"\"C; exit\r")
out = read_until(s, b"CC")
if b"40 120" not in out:
    print("FAIL reattached session:", out[-200:]); sys.exit(1)
# sh exits: kilnd closes the connection after its output.
rest = read_until(s, b"\x00never")
print("ok")
PY
)
  kd_check '[ "$res" = ok ]' "tty session: $res"
  api POST "/v1/sandboxes/$sid/processes/$proc/wait?timeout_ms=60000"
  kd_check '[ $status = 200 ] && [ "$(jget .exit_code)" = 0 ]' "the shell exited 0 after exit"
  api POST "/v1/sandboxes/$sid/processes/$proc/resize" -d '{"rows":10,"cols":10}'
  kd_check '[ $status = 409 ]' "resize of an exited shell is 409"
  kd_done
}
