# Warm pools (docs/api.md; kilnd --pool). Helpers:
# kilnd_lib.sh.

# kd_pool_ready N: poll GET /v1/health (bounded) until the first pool
# has N sandboxes ready; $body is the health object.
kd_pool_ready() {
  local i
  for i in $(seq 1 600); do
    api GET /v1/health
    [ "$(jget ".pools[0].ready")" = "$1" ] && return 0
    sleep 0.5
  done
  return 1
}

# A warm pool (--pool): its sandboxes are nobody's until a create that
# fits takes one, which then is the client's with the create's hostname,
# env and labels, a clock that ran on while it waited paused, and random
# numbers of its own; a create that does not fit boots; a kilnd stopping
# takes the pool with it.
test_kilnd_warm_pool_serves_fitting_creates() {
  kd_start --pool minimal=1 || return 1
  local why='' a b c now t ua
  kd_pool_ready 1
  kd_check '[ "$(jget "[.pools[0].ready, .pools[0].size, .sandboxes] | words")" = "1 1 0" ]' "the pool fills and its sandboxes are not counted"
  api GET /v1/sandboxes
  kd_check '[ "$(jget ".sandboxes | length")" = 0 ]' "a pool's sandboxes are listed to nobody, root included"
  # Paused a while: its clock must have run on (kilnd does not set it again).
  sleep 10
  api POST /v1/sandboxes -d '{"image":"minimal","hostname":"alpha","env":{"FOO":"bar"},"labels":{"team":"x"},"timeout_s":3600}'
  kd_check '[ $status = 201 ] && [ "$(jget "[.boot.from, .hostname, .labels, .state, .expires_at != null] | words")" = "pool alpha {\"team\":\"x\"} running true" ]' "a fitting create takes the pool's sandbox"
  a=$(jget .id 2>/dev/null)
  now=$(date +%s)
  kd_sh "$a" 'cat /proc/sys/kernel/random/uuid; hostname; echo "$FOO"; date +%s; echo mine >/tmp/mine'
  t=$(kd_out | tail -n 1)
  ua=$(kd_out | head -n 1)
  kd_check '[ "$(kd_out | sed -n 2,3p | paste -sd " " -)" = "alpha bar" ]' "the guest has the create's hostname and env ($(kd_outw))"
  kd_check '[ -n "$t" ] && [ $((now - t)) -le 3 ] && [ $((t - now)) -lt 60 ]' "the guest's clock ran on while it waited paused ($t vs $now)"
  kd_pool_ready 1
  kd_check '[ "$(jget ".pools[0].hits")" = 1 ]' "the pool fills again after a create took one"
  api POST /v1/sandboxes -d '{"image":"minimal"}'
  kd_check '[ $status = 201 ] && [ "$(jget "[.boot.from, .hostname] | words")" = "pool kiln" ]' "a second create from the pool"
  b=$(jget .id 2>/dev/null)
  kd_sh "$b" 'cat /proc/sys/kernel/random/uuid; hostname; cat /tmp/mine 2>/dev/null || echo none'
  kd_check '[ "$(kd_out | sed -n 2,3p | paste -sd " " -)" = "kiln none" ]' "it has the default hostname and none of the first one's files ($(kd_outw))"
  kd_check '[ -n "$ua" ] && [ "$(kd_out | head -n 1)" != "$ua" ]' "the two draw different random numbers (each fork was reseeded)"
  api POST /v1/sandboxes -d '{"image":"minimal","memory_mib":160}'
  kd_check '[ $status = 201 ] && [ "$(jget "[.boot.from, .memory_mib] | words")" = "kernel 160" ]' "a create that does not fit the pool boots"
  c=$(jget .id 2>/dev/null)
  api GET /v1/sandboxes
  kd_check '[ "$(jget "[.sandboxes[] | .id] == [\"$a\", \"$b\", \"$c\"]")" = true ]' "the list has the clients' three, oldest first"
  kd_check '[ "$(kd_metric kiln_pool_creates_total)" = 2 ]' "pool creates counted"
  for t in "$a" "$b" "$c"; do
    api DELETE "/v1/sandboxes/$t"
    kd_check '[ $status = 204 ]' "delete $t"
  done
  kd_pool_ready 1
  kd_stop keep
  kd_check '[ -z "$(ls -A "$kd/state/sandboxes")" ]' "a stopping kilnd removes its pool ($(ls "$kd/state/sandboxes"))"
  rm -rf "$kd"
  [ -z "$why" ] || { fail "$why"; return 1; }
  expect_rc 0
}
