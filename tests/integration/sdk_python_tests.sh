# The Python SDK (sdk/python) against a real kilnd: installed as a user
# would (a venv, pip with no index), its README's quickstart run as it is
# written, every call group on one sandbox and its fork
# (sdk_python_cover.py), a template built from a local directory and a
# sandbox from it (about 11 s in the nested harness), a streamed download under 32 MiB of RSS (8 MiB
# here, where a guest sends a few MiB/s; the unit test streams 100 MiB
# from a fake kilnd), and kilnd SIGKILLed during a stream: one
# KilnConnectionError, no hang.
# One kilnd, one test: sourced by run-all after lib.sh and kilnd_lib.sh.

test_sdk_python() {
  local why='' v py t0 vmm_pid i status='' body='' venv
  v=$(mktemp -d /tmp/sdkpy.XXXXXX)
  t0=$SECONDS
  # The SDK as a user installs it (python3 -m venv, pip install with no
  # index: sdk/python/tools/install-venv). `make unit` made this venv on
  # the host moments ago (sdk/python/tests/unit_test); it is reused when
  # its stamp matches the sources, since pip takes minutes in the
  # emulated outer VM. Otherwise it is made here, with heartbeats.
  venv=build/sdk-python/venv
  sdk/python/tools/install-venv "$venv" >"$v/pip.log" 2>&1 &
  i=$!
  while kill -0 "$i" 2>/dev/null; do heartbeat "sdk python: venv and pip install"; sleep 5; done
  wait "$i" ||
    { rc=$? out=$(cat "$v/pip.log") err=''; rm -rf "$v"; fail "sdk/python/tools/install-venv $venv"; return 1; }
  py=$PWD/$venv/bin/python
  # From the scratch directory: the installed package, not the checkout's.
  (cd "$v" && "$py" -c 'import kiln, kiln.aio, sys; assert kiln.__file__.startswith(sys.prefix), kiln.__file__') ||
    why="the venv imports kiln from its site-packages"
  echo "    install: $((SECONDS - t0)) s"

  kd_start --keeper-grace 5 || { rm -rf "$v"; return 1; }
  export KILN_SOCKET=$kds

  # The README's quickstart, extracted as it is written: the coverage
  # script runs it first, in its own interpreter (one start less).
  sed -n '/^<!-- quickstart -->$/,/^```$/p' sdk/python/README.md | sed '1,2d;$d' >"$v/quickstart.py"
  [ "$(wc -l <"$v/quickstart.py")" -gt 10 ] || why="the quickstart was not found in sdk/python/README.md"

  heartbeat "sdk python: every call group"
  mkdir -p "$v/work"
  rc=0
  (cd "$v" && KILN_SDK_DOWNLOAD_MIB=${KILN_SDK_DOWNLOAD_MIB:-8} \
    timeout -k 5 900 "$py" "$OLDPWD/tests/integration/sdk_python_cover.py" "$kdpid" "$v/work" quickstart.py) \
    >"$v/cover.out" 2>"$v/cover.err" || rc=$?
  out=$(cat "$v/cover.out") err=$(cat "$v/cover.err")
  grep -E '^(measure|--)' "$v/cover.out" | sed 's/^/    /'
  kd_check '[ "$(grep -c "^qs| .*hello from the host" "$v/cover.out")" = 2 ] && grep -q "^qs| tick 3$" "$v/cover.out" &&
    grep -q "^qs| exit code: 0$" "$v/cover.out" && grep -q "^qs| fork worker1 reads:" "$v/cover.out"' \
    "the README quickstart's output: $(grep "^qs|" "$v/cover.out" | head -12)"
  kd_check '[ "$rc" = 0 ] && grep -q "^[1-9][0-9]* passed, 0 failed$" "$v/cover.out"' \
    "the coverage script (rc $rc): $(grep -E '^\[  FAILED  \]' "$v/cover.out" | head -5) $(tail -c 800 "$v/cover.err")"
  kd_check '! kill -0 "$kdpid" 2>/dev/null' "kilnd was SIGKILLed during the stream"
  echo "    total: $((SECONDS - t0)) s"

  # kilnd is gone; its keepers stop their VMMs at once when the state
  # directory goes (kd_stop removes it).
  vmm_pid=$(sed -n 's/^fork pid \([0-9]*\)$/\1/p' "$v/cover.out")
  unset KILN_SOCKET
  kd_stop
  for i in $(seq 1 100); do
    [ -n "$vmm_pid" ] && kill -0 "$vmm_pid" 2>/dev/null || break
    sleep 0.2
  done
  rm -rf "$v"
  [ -z "$why" ] || { fail "$why"; return 1; }
}
