# Integration test of templates (docs/api.md, "Templates"): build one from
# a build file on the minimal test image, start a sandbox from its ready
# snapshot, rebuild with a cached prefix, the refusals. One kilnd and the
# fewest boots that cover it: the first build boots the image once; the
# second build, the fork and the cold start resume or boot from it.
# Source after kilnd_lib.sh.

# tpl_build NAME DIR [QUERY]: POST the tar.gz of DIR; $status, $body (the NDJSON log).
tpl_build() {
  tar czf "$kd/ctx.tgz" -C "$2" . || return 1
  api POST "/v1/templates?name=$1${3:-}" --data-binary @"$kd/ctx.tgz"
}

test_kilnd_templates() {
  kd_start || return 1
  local why='' c=$kd/ctx fork cold=''
  mkdir -p "$c/app/sub"
  echo 'hello from the context' >"$c/app/hello.txt"
  echo nested >"$c/app/sub/n.txt"

  # Refused before anything boots: the line number and what to use instead.
  printf 'FROM minimal\nRUN true\n# a comment\nADD app /app\n' >"$c/Kilnfile"
  tpl_build t1 "$c"
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "ADD is refused"
  kd_check 'jget .error.message | grep -q "line 4: ADD is not supported: use COPY"' "the refusal names line 4"
  api GET /v1/sandboxes
  kd_check '[ "$(jget ".sandboxes | length")" = 0 ]' "a refused build boots nothing"

  # A build: files written by RUN, COPY from the context, ENV/WORKDIR/USER,
  # a service started by RUN that READY waits for.
  cat >"$c/Kilnfile" <<'KF'
# the template of test_kilnd_templates
from minimal
RUN echo built >/etc/built-by-kiln && \
    mkdir -p /srv
COPY app/ /srv/app/
COPY --chown=user app/hello.txt /srv/owned.txt
ENV GREETING="hello world" MODE=test
WORKDIR /srv/work
RUN setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i >/tmp/beat.new; mv /tmp/beat.new /tmp/beat; sleep 1; done' </dev/null >/dev/null 2>&1 &
READY --timeout=300 test -s /tmp/beat
KF
  tpl_build t1 "$c"
  kd_check '[ $status = 200 ]' "the build streams its log"
  kd_check 'printf "%s" "$body" | grep -q "\"type\": *\"result\""' "the log ends with a result: ${body: -400}"
  kd_check '[ $(printf "%s\n" "$body" | grep -c "\"type\": *\"step_end\"") = 8 ]' "a step_end per step (8)"
  api GET /v1/templates/t1
  kd_check '[ $status = 200 ] && [ "$(jget .cache_entries)" = 4 ]' "t1: 4 cache entries (RUN, COPY, COPY, RUN)"
  kd_check '[ "$(jget .defaults.working_dir)" = /srv/work ]' "t1: its working_dir (made by WORKDIR)"

  # A sandbox from it: a fork of the ready snapshot, with the build's
  # files, env and cwd, and the READY service already running.
  kd_create '{"template":"t1","env":{"MODE":"mine"}}' || { kd_stop; return 1; }
  fork=$sid
  kd_check '[ "$(jget .boot.from)" = template ] && [ "$(jget .template)" = t1 ]' "boot.from template"
  kd_sh "$sid" 'b1=$(cat /tmp/beat); cat /etc/built-by-kiln /srv/app/hello.txt /srv/app/sub/n.txt; echo "$GREETING/$MODE/$(pwd)"; stat -c %u /srv/owned.txt; sleep 2; b2=$(cat /tmp/beat); [ "$b2" -gt "$b1" ] && echo beating'
  kd_check '[ "$(kd_outw)" = "built hello from the context nested hello world/mine//srv/work 1000 beating" ]' "the fork sees the build"
  kd_check '[ "$(jget .stdout)" != "" ]' "exec answered"

  # Rebuild under another name with one more step: the prefix is cached.
  printf 'RUN echo v2 >/etc/version\n' >>"$c/Kilnfile"
  sed -i 's/^READY.*//' "$c/Kilnfile"
  printf 'READY --timeout=300 test -s /tmp/beat\n' >>"$c/Kilnfile"
  tpl_build t2 "$c"
  kd_check '[ $status = 200 ] && printf "%s" "$body" | grep -q "\"type\": *\"result\""' "second build: ${body: -400}"
  kd_check '[ $(printf "%s\n" "$body" | grep -c "\"type\": *\"cached\"") = 7 ]' "steps 1-7 cached"
  kd_check 'printf "%s\n" "$body" | grep "\"type\": *\"step\"" | grep -q "echo v2"' "the new step ran"

  # Other cpus or memory: the template's disk, booted cold, and it says so.
  # A kernel boot more (about 40 s in the nested harness): only when asked.
  if [ -n "${KILN_TEST_TEMPLATE_COLD:-}" ]; then
    kd_create '{"template":"t2","memory_mib":192}' || { kd_stop; return 1; }
    cold=$sid
    kd_check '[ "$(jget .boot.from)" = template_cold ]' "boot.from template_cold"
    kd_check 'jget .boot.snapshot_error | grep -q memory_mib' "the reason is given"
    kd_sh "$cold" 'cat /etc/version /etc/built-by-kiln'
    kd_check '[ "$(kd_outw)" = "v2 built" ]' "the cold start has the template's disk"
  fi

  # Delete: refused while a sandbox uses the template, then works.
  api DELETE /v1/templates/t1
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = in_use ]' "t1 in use"
  api DELETE "/v1/sandboxes/$fork"
  [ -z "$cold" ] || api DELETE "/v1/sandboxes/$cold"
  api DELETE /v1/templates/t1
  kd_check '[ $status = 204 ]' "t1 deleted once unused"
  api DELETE /v1/templates/t2
  kd_check '[ $status = 204 ]' "t2 deleted"
  api GET /v1/templates
  kd_check '[ "$(jget ".templates | length")" = 0 ]' "no template left"
  kd_check '[ -z "$(ls "$kd/state/sandboxes")" ]' "their sandboxes are gone"
  kd_done
}
