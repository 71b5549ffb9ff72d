# Integration test of the `debian` image (rootfs/build-debian) through
# kilnd and the kiln CLI. Sourced by run-all only when KILN_DEBIAN_IMAGE
# names the image: `make test` sets it when the image's base is cached
# (building it from the cache takes seconds), `make test-debian` builds it
# first (downloads packages when not cached).

test_kilnd_debian_image_python_node_git() {
  kd_start --image debian="$KILN_DEBIAN_IMAGE" || return 1
  local why='' o
  export KILN_SOCKET=$kds
  # Python confined (docs/api.md, "Confinement"): the runtime works in the
  # view (merged /usr links, ld.so.cache), /etc/passwd is not there,
  # /workspace is its cwd and writable.
  heartbeat "kiln run --confine debian python3"
  o=$(build/kiln run --confine debian -- python3 -c 'import os; print(6*7); print(os.path.exists("/etc/passwd")); open("p.txt", "w").write("x"); print(os.getcwd(), open("/workspace/p.txt").read())' 2>&1)
  rc=$? status=- body=$o
  kd_check '[ $rc = 0 ] && [ "$o" = "$(printf "42\nFalse\n/workspace x")" ]' "kiln run --confine debian -- python3: 42, no /etc/passwd, writes /workspace (exit $rc)"
  heartbeat "kiln run debian node"
  o=$(build/kiln run debian -- node -e 'console.log([1,2,3].map(x => x * 2).join(","))' 2>&1)
  rc=$? body=$o
  kd_check '[ $rc = 0 ] && [ "$o" = 2,4,6 ]' "kiln run debian -- node -e printed 2,4,6 (exit $rc)"
  heartbeat "kiln run debian id/git"
  o=$(build/kiln run debian -- sh -c 'id -un; stat -c %U /workspace; git --version | cut -d" " -f1-2; unshare --user --map-root-user --mount --pid --fork true && echo unshare-ok; exit 5' 2>&1)
  rc=$? body=$o
  kd_check '[ $rc = 5 ] && [ "$o" = "$(printf "user\nuser\ngit version\nunshare-ok")" ]' "runs as user, owns /workspace, git, unshare of user+mount+pid namespaces as uid 1000, exit 5 passed on (exit $rc)"
  api GET /v1/sandboxes
  kd_check '[ "$(jget ".sandboxes | length")" = 0 ]' "kiln run removed its sandboxes"
  unset KILN_SOCKET
  # A Debian template build takes minutes in the nested harness (a boot,
  # gcc, npm, a checkpoint per step): in `make test-debian`, not `make test`.
  if [ -n "${KILN_TEST_DEBIAN_TEMPLATE:-}" ]; then
    debian_template_checks || { kd_stop; return 1; }
  fi
  kd_done
}

# The egress CA in a Debian guest (docs/agent-protocol.md,
# configure.trust_ca), placed as the egress proxy's setup would: Python's
# default TLS context loads it (SSL_CERT_FILE), the image's bundle holds it
# in its marked block with the anchor beside it, update-ca-certificates
# keeps it there (from the anchor) once, and the next boot's configure
# still leaves it once.
test_kilnd_debian_egress_ca_trusted() {
  kd_start --image debian="$KILN_DEBIAN_IMAGE" || return 1
  local why='' d ca b=/etc/ssl/certs/ca-certificates.crt key=MIIBkTCCATegAwIBAgIUbMvzJj
  ca=$(cat tests/integration/test-ca.pem)
  kd_create '{"image":"debian","memory_mib":512}' || { kd_stop; return 1; }
  d=$kd/state/sandboxes/$sid
  api POST "/v1/sandboxes/$sid/stop"
  kd_check '[ $status = 200 ]' "stop"
  mkdir -m 0700 "$d/egress" && printf '%s\n' "$ca" >"$d/egress/ca.pem"
  api POST "/v1/sandboxes/$sid/start"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = running ]' "start with the CA"
  kd_sh "$sid" 'python3 -c "import ssl; print(sum(dict(x[0] for x in c[\"subject\"]).get(\"commonName\") == \"kiln test egress CA\" for c in ssl.create_default_context().get_ca_certs()))"'
  kd_check '[ "$(kd_out)" = 1 ]' "Python's default context has the CA: $(kd_out) $(jget .stderr 2>/dev/null)"
  kd_sh "$sid" "grep -c '^# kiln egress CA' $b; grep -c $key $b; grep -c $key /usr/local/share/ca-certificates/kiln-egress.crt"
  kd_check '[ "$(kd_outw)" = "2 1 1" ]' "the image's bundle has the block, the anchor the CA: $(kd_outw)"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","update-ca-certificates >/dev/null 2>&1; echo rc=$?; grep -c \"^# kiln egress CA\" '"$b"'; grep -c '"$key"' '"$b"'"],"user":"root"}'
  kd_check '[ "$(kd_outw)" = "rc=0 0 1" ]' "update-ca-certificates keeps the CA once, from the anchor: $(kd_outw)"
  api POST "/v1/sandboxes/$sid/stop"
  api POST "/v1/sandboxes/$sid/start"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = running ]' "start again"
  kd_sh "$sid" "grep -c '^# kiln egress CA' $b; grep -c $key $b; grep -c $key /run/kiln/ca-bundle.pem"
  kd_check '[ "$(kd_outw)" = "2 1 1" ]' "after a rebuilt bundle and a boot, the CA stands once: $(kd_outw)"
  kd_done
}

# A template on the Debian image (docs/api.md, "Templates"), steps that need
# no network: a C program compiled from the build context, an npm package
# installed from a tarball in the context; a sandbox from it has both.
debian_template_checks() {
  local c=$kd/dctx
  heartbeat "debian template build"
  mkdir -p "$c/package"
  printf '#include <stdio.h>\nint main(void) { puts("hello from c"); return 0; }\n' >"$c/hello.c"
  printf '{"name":"kiln-tpl-pkg","version":"1.0.0","main":"index.js"}\n' >"$c/package/package.json"
  printf 'module.exports = { answer: 42 };\n' >"$c/package/index.js"
  tar czf "$c/pkg.tgz" -C "$c" package && rm -r "$c/package"
  cat >"$c/Kilnfile" <<'KF'
FROM debian
COPY hello.c pkg.tgz /src/
RUN gcc -O2 -o /usr/local/bin/hello-kiln /src/hello.c
WORKDIR /app
RUN npm install --offline --no-audit --no-fund --loglevel=error /src/pkg.tgz
KF
  # curl blocks for the whole build: a beat meanwhile, for the harness
  (while :; do heartbeat "debian template build"; sleep 5; done) &
  local hb=$!
  tpl_build dtpl "$c" "&memory_mib=512"
  kill "$hb" 2>/dev/null
  wait "$hb" 2>/dev/null
  kd_check '[ $status = 200 ] && printf "%s" "$body" | grep -q "\"type\": *\"result\""' "the Debian template builds (gcc, npm install from the context): ${body: -400}"
  kd_create '{"template":"dtpl"}' || return 1
  kd_sh "$sid" 'hello-kiln; node -e "console.log(require(\"kiln-tpl-pkg\").answer)"; pwd'
  kd_check '[ "$(kd_outw)" = "hello from c 42 /app" ]' "a sandbox from it runs the compiled program and requires the installed package in /app"
  api DELETE "/v1/sandboxes/$sid"
  api DELETE /v1/templates/dtpl
  kd_check '[ $status = 204 ]' "the Debian template deleted"
}

# kd_run LANG CODE [EXTRA_JSON] [QUERY]: POST .../run on $sid; $body, $status.
kd_run() {
  local b
  b=$(python3 -c 'import json, sys; d = json.loads(sys.argv[3] or "{}"); d.update(language=sys.argv[1], code=sys.argv[2]); print(json.dumps(d))' "$1" "$2" "${3:-}")
  api POST "/v1/sandboxes/$sid/run${4:-}" -d "$b"
}

# run (docs/api.md, POST .../run) in one Debian sandbox: values through
# result.set, errors through result.error and uncaught exceptions, in
# Python, JavaScript and TypeScript (esbuild in the guest); a timeout;
# the streaming form; kiln run-code.
test_kilnd_debian_run_code() {
  kd_start --image debian="$KILN_DEBIAN_IMAGE" || return 1
  local why='' o ev
  kd_create '{"image":"debian","memory_mib":512}' || { kd_stop; return 1; }
  kd_run python $'print("py-out")\nresult.set({"lang": "python", "n": [1, 2]})'
  kd_check '[ $status = 200 ] && [ "$(jget ".stdout == \"py-out\\n\" and .result == {lang: \"python\", n: [1, 2]} and has(\"error\") and .error == null and .exit_code == 0")" = true ]' "python result.set"
  kd_run python $'import result\nresult.set(1)\ndef f():\n    raise ValueError("boom")\nf()'
  kd_check '[ "$(jget ".exit_code == 1 and .result == 1 and .error.type == \"ValueError\" and .error.message == \"boom\" and (.error.traceback | contains(\"line 5\")) and (.stderr | contains(\"ValueError: boom\"))")" = true ]' "python uncaught exception: type, message, traceback line, stderr"
  kd_run python 'result.error("no luck")'
  kd_check '[ "$(jget ".exit_code == 0 and has(\"result\") and .result == null and .error == {type: \"ResultError\", message: \"no luck\", traceback: null}")" = true ]' "python result.error"
  kd_run javascript $'console.log("js-out"); result.set([1, "two"]);\nthrow new TypeError("bad js");'
  kd_check '[ "$(jget ".stdout == \"js-out\\n\" and .exit_code == 1 and .result == [1, \"two\"] and .error.type == \"TypeError\" and .error.message == \"bad js\"")" = true ]' "javascript result.set and uncaught exception"
  kd_run javascript 'result.error("js says no")'
  kd_check '[ "$(jget ".exit_code == 0 and .error.type == \"ResultError\" and .error.message == \"js says no\"")" = true ]' "javascript result.error"
  kd_run typescript $'interface P { n: number }\nconst p: P = { n: 6 * 7 };\nresult.set(p);\nfunction f(x: string): never {\n  throw new RangeError("ts " + x);\n}\nf("z");'
  kd_check '[ "$(jget ".exit_code == 1 and .result == {n: 42} and .error.type == \"RangeError\" and .error.message == \"ts z\" and (.error.traceback | contains(\"main.ts:5\"))")" = true ]' "typescript through esbuild: value, exception with TypeScript line numbers"
  kd_run typescript 'result.error("ts says no")'
  kd_check '[ "$(jget ".error.type == \"ResultError\" and .exit_code == 0")" = true ]' "typescript result.error"
  # Like exec's: the whole process group killed, 124.
  kd_run bash 'sleep 300 & result set "\"before\""; sleep 300' '{"timeout_ms":3000}'
  kd_check '[ "$(jget ".exit_code == 124 and .timed_out")" = true ]' "a run past timeout_ms is 124"
  kd_run python $'import sys\nprint("streamed")\nresult.set("done")' '' '?stream=1'
  ev=$(jq -rs "$JQ_DEFS"'[([.[] | select(.type == "stdout") | .data] | add | strip), .[-2].type, .[-2].exit_code, .[-1].type, .[-1].result] | words' <<<"$body")
  kd_check '[ "$ev" = "streamed exit 0 result done" ] && [ "$(jq -s ".[-1] | has(\"error\") and .error == null" <<<"$body")" = true ]' "streamed run ends with exit, then the result event: $ev"
  o=$(printf abc | KILN_SOCKET=$kds build/kiln run-code "$sid" --language python -i -c $'import sys\nprint(7)\nresult.set({"ok": sys.stdin.read()})\nsys.exit(3)' 2>&1)
  rc=$? body=$o
  kd_check '[ $rc = 3 ] && [ "$o" = "$(printf "7\n{\"ok\":\"abc\"}")" ]' "kiln run-code -i: the output, then the result; exit 3 (rc $rc)"
  o=$(printf 'throw new Error("cli")' | KILN_SOCKET=$kds build/kiln run-code "$sid" --language javascript --stream - 2>&1)
  rc=$? body=$o
  kd_check '[ $rc = 1 ] && printf "%s" "$o" | grep -q "^kiln: run-code: Error: cli$" && [ "$(printf "%s" "$o" | tail -1)" = null ]' "kiln run-code --stream from stdin: the error, then null (rc $rc)"
  kd_done
}

# egress_static DIR: what the egress clients test's server serves: a bare
# git repository for git's dumb HTTP (repo.git, one commit with README
# "kiln egress git") and a pip simple index with one wheel (kilnpkg 1.0).
egress_static() {
  local d=$1 w
  mkdir -p "$d/work" "$d/simple/kilnpkg" &&
    git -C "$d/work" init -q -b main &&
    echo "kiln egress git" >"$d/work/README" &&
    git -C "$d/work" add README &&
    git -C "$d/work" -c user.name=kiln -c user.email=kiln@test commit -qm one &&
    git clone -q --bare "$d/work" "$d/repo.git" &&
    git -C "$d/repo.git" update-server-info || return 1
  w=kilnpkg-1.0-py3-none-any.whl
  "$PY3" - "$d/simple/kilnpkg/$w" <<'PY' || return 1
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("kilnpkg/__init__.py", "answer = 42\n")
    z.writestr("kilnpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: kilnpkg\nVersion: 1.0\n")
    z.writestr("kilnpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: kiln-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("kilnpkg-1.0.dist-info/RECORD", "")
PY
  printf '<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>\n' "$w" "$w" >"$d/simple/kilnpkg/index.html"
}

# Real clients through the egress proxy on the Debian image (issue 37):
# curl, git (dumb HTTP) and pip reach api.test over HTTPS through the
# proxy, trusting the sandbox's CA as kiln-init installed it (no
# --insecure anywhere), and every request reaches the server with the
# secret the proxy injected, which the guest never sees.
test_kilnd_debian_egress_clients() {
  local why='' kd_wrap tdir secret=kiln-deb-s3cret-41c2
  net_ns_make kde && net_ns_uplink || { net_cleanup; return 1; }
  tdir=$(mktemp -d /tmp/kde.XXXXXX)
  { egress_test_certs "$tdir" api.test && egress_static "$tdir/static"; } ||
    { fail "cannot make the test's certificates or content: $(cat "$tdir/openssl.err" 2>/dev/null)"; rm -rf "$tdir"; net_cleanup; return 1; }
  net_hosts_start --https 203.0.113.10:443 --tls-cert "$tdir/srv.pem" --tls-key "$tdir/srv.key" \
    --static "$tdir/static" --dns 10.78.3.53 --zone api.test=203.0.113.10 ||
    { rm -rf "$tdir"; net_cleanup; return 1; }
  kd_wrap=(ip netns exec "$ns" sh -c 'mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec "$@"' kd-cgroup)
  kd_start --image debian="$KILN_DEBIAN_IMAGE" --dns-resolver 10.78.3.53 --egress-upstream-ca "$tdir/ca.pem" ||
    { rm -rf "$tdir"; net_cleanup; return 1; }
  api PUT /v1/secrets/deb -d "{\"value\":\"$secret\"}"
  kd_check '[ $status = 201 ]' "PUT /v1/secrets/deb"
  kd_create '{"image":"debian","memory_mib":512,"network":"passt","firewall":{"http":[{"host":"api.test","intercept":true,"inject":[{"header":"authorization","secret":"deb","format":"Bearer {}"}]}]}}' ||
    { kd_stop; rm -rf "$tdir"; net_cleanup; return 1; }
  kd_sh "$sid" 'curl -sS https://api.test/curl 2>&1'
  kd_check '[ "$(kd_out)" = "kiln-net-tls 203.0.113.10:443 GET /curl" ]' "curl, verifying: '$(kd_out)'"
  kd_sh "$sid" 'git clone -q https://api.test/repo.git /tmp/r 2>&1; cat /tmp/r/README 2>&1'
  kd_check '[ "$(kd_out)" = "kiln egress git" ]' "git clone over dumb HTTP: '$(kd_out)'"
  kd_sh "$sid" 'PIP_DISABLE_PIP_VERSION_CHECK=1 pip download -q --no-deps -d /tmp/dl --index-url https://api.test/simple kilnpkg 2>&1; ls /tmp/dl 2>&1'
  kd_check '[ "$(kd_out)" = kilnpkg-1.0-py3-none-any.whl ]' "pip download: '$(kd_out)'"
  kd_check '[ "$(grep -c "authorization=Bearer $secret" "$hlog")" -ge 4 ] && ! grep "^https" "$hlog" | grep -vq "authorization=Bearer $secret"' \
    "every request reached the server with the injected secret ($(grep "^https" "$hlog" | sed "s/$secret/SECRET/g" | head -8))"
  kd_sh "$sid" "grep -rls $secret /proc/[0-9]*/environ /etc /run /tmp /root /home 2>/dev/null | head -3; echo done"
  kd_check '[ "$(kd_out)" = done ]' "the secret is in no file or environment of the guest: '$(kd_out)'"
  api DELETE "/v1/sandboxes/$sid"
  kd_done
  local r=$?
  rm -rf "$tdir"
  net_cleanup
  return $r
}
