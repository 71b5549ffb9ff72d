# The kiln CLI (build/kiln) against a real kilnd: run, exec's exit status,
# a directory copied both ways, fs, spawn/logs/kill/wait, a forwarded port
# and a shell fed from a pipe. Helpers (kc, kc_json): kilnd_lib.sh.

test_kiln_cli_end_to_end() {
  kd_start || return 1
  # status and body: kd_check's failure message names them (no api calls here).
  local why='' d=$kd/cli proc hp target got i status='' body=''
  mkdir -p "$d"

  # run: create, exec streamed, delete; the command's status is kiln's.
  kc run minimal -- sh -c 'echo run-out; echo run-err >&2; exit 3'
  kd_check '[ "$rc" = 3 ] && [ "$out" = run-out ] && [ "$err" = run-err ]' "kiln run (rc=$rc out=$out err=$err)"
  kc --json ls
  kd_check '[ "$(kc_json ".sandboxes | length")" = 0 ]' "run removed its sandbox ($out)"

  kc create --label cli=1
  sid=$out
  kd_check '[ "$rc" = 0 ] && [ -n "$sid" ]' "kiln create (rc=$rc err=$err)"
  kc exec "$sid" -- sh -c 'echo $((40+2)); exit 7'
  kd_check '[ "$rc" = 7 ] && [ "$out" = 42 ]' "exec: output and exit status 7 (rc=$rc out=$out err=$err)"
  kc exec --buffered "$sid" -- false
  kd_check '[ "$rc" = 1 ]' "exec --buffered: exit status 1 (rc=$rc err=$err)"
  kc --json exec "$sid" -- echo hi
  kd_check 'printf "%s\n" "$out" | tail -n 1 | grep -q "\"type\":\"exit\""' "exec --json: NDJSON events ($out)"
  kc exec 0123456789ab -- true
  kd_check '[ "$rc" = 4 ] && [ "$(printf "%s\n" "$err" | grep -c .)" = 1 ] && printf "%s" "$err" | grep -q "(sandbox_not_found)$"' "exec in an unknown sandbox: one line, exit 4 (rc=$rc err=$err)"

  # cp: a directory up and down again, byte for byte; symlinks stay links.
  mkdir -p "$d/src/sub/empty"
  head -c 300000 /dev/urandom >"$d/src/sub/big.bin"
  printf 'hello\n' >"$d/src/a.txt"
  chmod 755 "$d/src/a.txt"
  ln -s a.txt "$d/src/link"
  kc cp "$d/src" "$sid:/home/user/proj"
  kd_check '[ "$rc" = 0 ]' "cp a directory up (rc=$rc err=$err)"
  kc exec "$sid" -- sh -c 'cat /home/user/proj/a.txt; readlink /home/user/proj/link; wc -c </home/user/proj/sub/big.bin; test -d /home/user/proj/sub/empty && echo dir'
  kd_check '[ "$out" = "$(printf "hello\na.txt\n300000\ndir")" ]' "the tree in the guest ($out $err)"
  kc cp "$sid:/home/user/proj" "$d/back"
  kd_check '[ "$rc" = 0 ] && cmp -s "$d/src/sub/big.bin" "$d/back/sub/big.bin" && cmp -s "$d/src/a.txt" "$d/back/a.txt" && [ "$(readlink "$d/back/link")" = a.txt ] && [ -d "$d/back/sub/empty" ]' "cp the directory down again (rc=$rc err=$err)"
  kc cp "$sid:/home/user/proj" "$d/back"
  kd_check '[ "$rc" = 0 ] && cmp -s "$d/src/sub/big.bin" "$d/back/proj/sub/big.bin"' "cp into an existing directory lands under its name (rc=$rc err=$err)"
  kc cp "$sid:/home/user/proj/a.txt" -
  kd_check '[ "$out" = hello ]' "cp a file to stdout ($out $err)"

  # fs: ls, stat, mkdir -p, mv, rm -r.
  kc fs ls "$sid:/home/user/proj"
  kd_check '[ "$rc" = 0 ] && printf "%s\n" "$out" | grep -q " /home/user/proj/link -> a.txt$" && printf "%s\n" "$out" | grep -q "^d.* /home/user/proj/sub$"' "fs ls ($out $err)"
  kc --json fs stat "$sid:/home/user/proj/a.txt"
  kd_check '[ "$(kc_json "[.kind, .size, .mode_octal] | words")" = "file 6 0755" ]' "fs stat --json ($out $err)"
  kc fs mkdir -p "$sid:/home/user/x/y"
  kd_check '[ "$rc" = 0 ]' "fs mkdir -p ($err)"
  kc fs mv "$sid:/home/user/x" /home/user/z
  kd_check '[ "$rc" = 0 ]' "fs mv ($err)"
  kc fs rm -r "$sid:/home/user/z"
  kd_check '[ "$rc" = 0 ]' "fs rm -r ($err)"
  kc fs stat "$sid:/home/user/z"
  kd_check '[ "$rc" = 4 ]' "fs stat of a removed path exits 4 (rc=$rc err=$err)"

  # Processes: spawn, logs (what is there now), ps, kill, wait, logs -f.
  kc spawn "$sid" -- sh -c 'echo started; while :; do sleep 1; done'
  proc=$out
  kd_check '[ "$rc" = 0 ] && [ "$proc" -gt 0 ] 2>/dev/null' "spawn prints a process id (rc=$rc out=$out err=$err)"
  for i in $(seq 1 120); do
    kc logs "$sid" "$proc"
    [ "$out" = started ] && break
    sleep 0.5
  done
  kd_check '[ "$rc" = 0 ] && [ "$out" = started ]' "logs prints the output so far and returns (rc=$rc out=$out err=$err)"
  kc ps "$sid"
  kd_check 'printf "%s\n" "$out" | grep -qE "^$proc +[0-9]+ +running "' "ps lists it running ($out)"
  kc kill "$sid" "$proc" --signal KILL --group
  kd_check '[ "$rc" = 0 ]' "kill (rc=$rc err=$err)"
  kc wait "$sid" "$proc" --timeout-ms 60000
  kd_check '[ "$rc" = 137 ] && [ "$out" = "signal 9" ]' "wait: a KILLed process is 137 (rc=$rc out=$out err=$err)"
  kc logs -f "$sid" "$proc"
  kd_check '[ "$rc" = 0 ] && [ "$out" = started ]' "logs -f of an exited process ends (rc=$rc out=$out err=$err)"

  # port: a guest TCP server (busybox httpd) when kilnd forwards to guest
  # TCP (its answer has "target":"tcp"), else the test image's vsock echo
  # server, as kilnd forwarded to vsock before.
  kc --json port "$sid" 8080
  hp=$(kc_json .host_port) target=$(kc_json '.target // "vsock"')
  kd_check '[ "$rc" = 0 ] && [ -n "$hp" ]' "port creates a mapping (rc=$rc out=$out err=$err)"
  if [ "$target" = vsock ]; then
    kc exec "$sid" -- sh -c 'setsid kiln-vsock-test listen 8080 </dev/null >/dev/null 2>&1 &'
    got=$(python3 - "$hp" <<'PY'
import socket, sys, time
msg = b"kiln-port-ok"
for attempt in range(120):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
        s.sendall(msg)
        got = s.recv(100)
        s.close()
        if got:
            print(got.decode(errors="replace"))
            break
    except OSError:
        pass
    time.sleep(0.5)
PY
)
  else
    kc exec "$sid" -- sh -c 'mkdir -p /tmp/www && echo kiln-port-ok >/tmp/www/index.html && setsid httpd -p 8080 -h /tmp/www </dev/null >/dev/null 2>&1 &'
    got=$(python3 - "$hp" <<'PY'
import sys, time, urllib.request
for attempt in range(120):
    try:
        print(urllib.request.urlopen("http://127.0.0.1:%s/index.html" % sys.argv[1], timeout=60).read().decode().strip())
        break
    except OSError:
        time.sleep(0.5)
PY
)
  fi
  kd_check '[ "$got" = kiln-port-ok ]' "a connection through 127.0.0.1:$hp reaches the guest's $target server ($got)"
  kc port ls "$sid"
  kd_check 'printf "%s\n" "$out" | grep -q "^127.0.0.1:$hp  *8080 "' "port ls ($out $err)"
  kc port rm "$sid" "$hp"
  kd_check '[ "$rc" = 0 ]' "port rm (rc=$rc err=$err)"
  kc port rm "$sid" "$hp"
  kd_check '[ "$rc" = 4 ]' "port rm twice: not found, exit 4 (rc=$rc err=$err)"

  # shell, fed from a pipe: the input runs on the PTY, the exit status is
  # the shell's; a last line without newline still runs (^D after it).
  got=$(printf 'echo kiln-$((6*7)); exit 3\n' | timeout -k 5 300 "$KILN_CLI" --socket "$kds" shell "$sid" 2>"$d/shell.err")
  rc=$?
  kd_check '[ "$rc" = 3 ] && printf "%s" "$got" | grep -q "kiln-42"' "shell from a pipe: kiln-42 and exit 3 (rc=$rc out=$got err=$(cat "$d/shell.err"))"
  got=$(printf 'exit 4' | timeout -k 5 300 "$KILN_CLI" --socket "$kds" shell "$sid" 2>"$d/shell.err")
  rc=$?
  kd_check '[ "$rc" = 4 ]' "shell: a last line without newline (rc=$rc err=$(cat "$d/shell.err"))"
  kc shell "$sid" -- sh -c 'stty size; exit 5'
  kd_check '[ "$rc" = 5 ] && printf "%s" "$out" | grep -q "24 80"' "shell -- PROGRAM on a PTY of the default size (rc=$rc out=$out err=$err)"

  kc rm "$sid"
  kd_check '[ "$rc" = 0 ]' "kiln rm (rc=$rc err=$err)"
  kd_done
}
