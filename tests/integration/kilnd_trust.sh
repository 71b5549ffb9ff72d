# kilnd and the sandbox's egress CA (docs/agent-protocol.md,
# configure.trust_ca; docs/architecture.md, "The guest's trust in the
# egress CA"): <state-dir>/sandboxes/<id>/egress/ca.pem, which the egress
# proxy's setup writes for sandboxes with http rules, is placed here by
# hand (tests/integration/test-ca.pem, tests/unit/test_ca_pem.h's).

# The CA goes into the guest with the next boot (a start after a stop),
# and what kilnd starts there sees SSL_CERT_FILE; a symbolic link in its
# place fails the start, naming the file; the file gone, the next boot
# has no CA.
test_kilnd_egress_ca_reaches_the_guest() {
  kd_start || return 1
  local why='' d ca
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  d=$kd/state/sandboxes/$sid
  ca=$(cat tests/integration/test-ca.pem)
  kd_sh "$sid" '[ -e /run/kiln/egress-ca.pem ] && echo ca || echo none; echo ${SSL_CERT_FILE:-unset}'
  kd_check '[ "$(kd_outw)" = "none unset" ]' "no CA before there is one: $(kd_outw)"
  api POST "/v1/sandboxes/$sid/stop"
  kd_check '[ $status = 200 ]' "stop"
  mkdir -m 0700 "$d/egress" && printf '%s\n' "$ca" >"$d/egress/ca.pem"
  api POST "/v1/sandboxes/$sid/start"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = running ]' "start with a CA"
  kd_sh "$sid" 'cat /run/kiln/egress-ca.pem'
  kd_check '[ "$(kd_out)" = "$ca" ]' "the guest has the CA: $(kd_out)"
  kd_sh "$sid" 'echo $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS; grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE"'
  kd_check '[ "$(kd_outw)" = "/run/kiln/ca-bundle.pem /run/kiln/egress-ca.pem 1" ]' "exec sees the bundle: $(kd_outw)"
  api POST "/v1/sandboxes/$sid/stop"
  mv "$d/egress/ca.pem" "$d/egress/real.pem" && ln -s real.pem "$d/egress/ca.pem"
  api POST "/v1/sandboxes/$sid/start"
  kd_check '[ $status != 200 ] && jget .error.message | grep -q "egress/ca.pem.*symbolic link"' "a link as the CA fails the start"
  rm "$d/egress/ca.pem" "$d/egress/real.pem"
  api POST "/v1/sandboxes/$sid/start"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = running ]' "start without the CA"
  kd_sh "$sid" '[ -e /run/kiln/egress-ca.pem ] && echo ca || echo none'
  kd_check '[ "$(kd_out)" = none ]' "no CA once the file is gone: $(kd_out)"
  kd_done
}

# A warm pool's sandbox handed to a create with its own hostname: the
# configure that renames it carries the CA too (placed while it waited;
# the pool's directories are its template's and its ready sandbox's).
test_kilnd_egress_ca_with_a_pool_handover() {
  kd_start --pool minimal=1 || return 1
  local why='' id d
  kd_pool_ready 1
  for d in "$kd"/state/sandboxes/*/; do
    mkdir -m 0700 "$d/egress" && cp tests/integration/test-ca.pem "$d/egress/ca.pem"
  done
  api POST /v1/sandboxes -d '{"image":"minimal","hostname":"alpha"}'
  kd_check '[ $status = 201 ] && [ "$(jget .boot.from)" = pool ]' "the create takes the pooled sandbox"
  id=$(jget .id)
  kd_sh "$id" 'hostname; cat /run/kiln/egress-ca.pem; echo $SSL_CERT_FILE'
  kd_check '[ "$(kd_out)" = "$(printf "alpha\n%s\n/run/kiln/ca-bundle.pem" "$(cat tests/integration/test-ca.pem)")" ]' "the renamed guest has the CA: $(kd_outw)"
  api DELETE "/v1/sandboxes/$id"
  kd_done
}

# Restores: a CA replaced while the sandbox was hibernated is the one the
# woken guest has (and only it); a fork of a checkpoint taken with a CA,
# with no CA of its own, trusts none (its snapshot's guest had one).
test_kilnd_egress_ca_on_wake_and_fork() {
  kd_start || return 1
  local why='' d f
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }
  d=$kd/state/sandboxes/$sid
  mkdir -m 0700 "$d/egress" && cp tests/integration/test-ca.pem "$d/egress/ca.pem"
  api POST "/v1/sandboxes/$sid/stop"
  api POST "/v1/sandboxes/$sid/start"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = running ]' "start with the CA"
  api POST "/v1/sandboxes/$sid/checkpoints" -d '{"name":"withca"}'
  kd_check '[ $status = 201 ]' "checkpoint"
  api POST "/v1/sandboxes/$sid/hibernate"
  kd_check '[ $status = 200 ] && [ "$(jget .state)" = hibernated ]' "hibernate"
  cp tests/integration/test-ca2.pem "$d/egress/ca.pem"
  api POST "/v1/sandboxes/$sid/wake"
  kd_check '[ $status = 200 ] && [ "$(jget "[.state, .boot.from] | words")" = "running hibernate" ]' "wake from the snapshot"
  kd_sh "$sid" 'cat /run/kiln/egress-ca.pem; grep -c "BEGIN CERTIFICATE" /run/kiln/ca-bundle.pem'
  kd_check '[ "$(kd_out)" = "$(cat tests/integration/test-ca2.pem; echo 1)" ]' "the woken guest has the new CA, alone: $(kd_outw)"
  api POST /v1/sandboxes -d '{"from_checkpoint":"'"$sid"'/withca"}'
  kd_check '[ $status = 201 ] && [ "$(jget .boot.from)" = checkpoint ]' "a fork of the checkpoint"
  f=$(jget .id)
  kd_sh "$f" '[ -e /run/kiln/egress-ca.pem ] && echo ca || echo none; echo ${SSL_CERT_FILE:-unset}'
  kd_check '[ "$(kd_outw)" = "none unset" ]' "the fork trusts no CA: $(kd_outw)"
  kd_done
}
