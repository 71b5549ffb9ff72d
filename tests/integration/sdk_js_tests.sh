# Integration test of the JavaScript SDK (sdk/js, docs in sdk/js/README.md)
# against a real kilnd: the package as `npm install ./sdk/js` lays it out
# (a link in a scratch project's node_modules: the unit test runs the real
# npm install, which costs 80 s of npm in the nested harness), the README's
# quickstart run as it is written, then sdk_js_coverage.mjs: every call
# group on one sandbox and its fork, a streamed download with its RSS, an
# MCP session with kiln-mcp (a cancelled exec's process killed in the
# guest), and kilnd SIGKILLed mid-stream. One kilnd,
# two boots (the quickstart's sandbox and the coverage's; forks resume).
# KILN_SDK_DOWNLOAD_MIB (here 8) sizes the download: the nested harness
# moves about 1 MiB/s out of a guest; the unit test downloads 100 MiB from
# a fake kilnd and holds the SDK's RSS growth under 32 MiB.
# Source after lib.sh and kilnd_lib.sh.

test_sdk_js() {
  command -v node >/dev/null ||
    { fail "node is needed (scripts/install-deps installs nodejs)"; return 1; }
  local why='' t0=$SECONDS sdk_home proj sbid root=$PWD
  sdk_home=$(mktemp -d /tmp/sdkjs.XXXXXX)
  proj=$sdk_home/proj
  mkdir -p "$proj" "$sdk_home/work"
  printf '{"name":"sdk-js-test","version":"1.0.0","private":true,"type":"module"}\n' >"$proj/package.json"
  mkdir -p "$proj/node_modules/@kiln"
  ln -s "$root/sdk/js" "$proj/node_modules/@kiln/sdk"

  # The quickstart, extracted from the README: the first ```js block after
  # "## Quickstart".
  awk '/^## Quickstart/ {q=1} q && /^```js$/ {c=1; next} c && /^```$/ {exit} c {print}' sdk/js/README.md >"$proj/quickstart.mjs"
  [ -s "$proj/quickstart.mjs" ] || { fail "no quickstart block in sdk/js/README.md"; rm -rf "$sdk_home"; return 1; }
  cp tests/integration/sdk_js_coverage.mjs "$proj/coverage.mjs"

  kd_start || { rm -rf "$sdk_home"; return 1; }
  local t1=$SECONDS
  heartbeat "sdk_js: quickstart"
  out=$(cd "$proj" && KILN_SOCKET=$kds timeout -k 5 600 node quickstart.mjs 2>&1) rc=$?
  echo "    sdk_js: quickstart took $((SECONDS - t1)) s"
  kd_check '[ "$rc" = 0 ]' "the README quickstart ran (exit $rc): ${out: -600}"
  kd_check 'printf "%s\n" "$out" | grep -q "^exit 0: Linux$"' "quickstart: exec output: ${out:0:300}"
  kd_check 'printf "%s\n" "$out" | grep -q "^hello from the host$"' "quickstart: the file read back"
  kd_check 'printf "%s\n" "$out" | grep -q "^tick 3$"' "quickstart: the streamed command"
  kd_check 'printf "%s\n" "$out" | grep -q "^fork .* reads: hello from the host$"' "quickstart: the fork sees the file"
  api GET /v1/sandboxes
  kd_check '[ "$(jget ".sandboxes | length")" = 0 ]' "the quickstart deleted its sandboxes"

  t1=$SECONDS
  heartbeat "sdk_js: coverage"
  out=$(cd "$proj" && KILN_SOCKET=$kds KILND_PID=$kdpid WORK=$sdk_home/work KILN_SDK_DOWNLOAD_MIB=${KILN_SDK_DOWNLOAD_MIB:-8} \
        MCP_BIN=$proj/node_modules/@kiln/sdk/bin/kiln-mcp.js timeout -k 5 900 node coverage.mjs 2>&1) rc=$?
  printf '%s\n' "$out" | grep '^sdk_js:' | sed 's/^/    /'
  echo "    sdk_js: coverage took $((SECONDS - t1)) s"
  kd_check '[ "$rc" = 0 ]' "the coverage script (exit $rc): ${out: -1500}"
  sbid=$(printf '%s\n' "$out" | sed -n 's/^SANDBOX //p')

  # The coverage script SIGKILLed kilnd (its sandbox runs on under its
  # keeper): a new kilnd on the same state reattaches it; delete it, stop.
  if ! kill -0 "$kdpid" 2>/dev/null; then
    wait "$kdpid" 2>/dev/null
    kd_keep=$kd kd_start || { rm -rf "$sdk_home"; return 1; }
    if [ -n "$sbid" ]; then
      api DELETE "/v1/sandboxes/$sbid"
      kd_check '[ $status = 204 ]' "delete the coverage sandbox after kilnd's restart"
    fi
  fi
  kd_done || { rm -rf "$sdk_home"; return 1; }
  rm -rf "$sdk_home"
  echo "    sdk_js: $((SECONDS - t0)) s in all"
}
