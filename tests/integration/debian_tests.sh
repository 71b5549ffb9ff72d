# Integration test of the `debian` image (rootfs/build-debian) through
# kilnd and the kiln CLI. Sourced by run-all only when KILN_DEBIAN_IMAGE
# names the image: `make test` sets it when the image's base is cached
# (building it from the cache takes seconds), `make test-debian` builds it
# first (downloads packages when not cached).

test_kilnd_debian_image_python_node_git() {
  kd_start --image debian="$KILN_DEBIAN_IMAGE" || return 1
  local why='' o
  export KILN_SOCKET=$kds
  heartbeat "kiln run debian python3"
  o=$(build/kiln run debian -- python3 -c 'print(6*7)' 2>&1)
  rc=$? status=- body=$o
  kd_check '[ $rc = 0 ] && [ "$o" = 42 ]' "kiln run debian -- python3 -c 'print(6*7)' printed 42 (exit $rc)"
  heartbeat "kiln run debian node"
  o=$(build/kiln run debian -- node -e 'console.log([1,2,3].map(x => x * 2).join(","))' 2>&1)
  rc=$? body=$o
  kd_check '[ $rc = 0 ] && [ "$o" = 2,4,6 ]' "kiln run debian -- node -e printed 2,4,6 (exit $rc)"
  heartbeat "kiln run debian id/git"
  o=$(build/kiln run debian -- sh -c 'id -un; stat -c %U /workspace; git --version | cut -d" " -f1-2; exit 5' 2>&1)
  rc=$? body=$o
  kd_check '[ $rc = 5 ] && [ "$o" = "$(printf "user\nuser\ngit version")" ]' "runs as user, owns /workspace, git, exit 5 passed on (exit $rc)"
  api GET /v1/sandboxes
  kd_check '[ "$(jget "len(d[\"sandboxes\"])")" = 0 ]' "kiln run removed its sandboxes"
  unset KILN_SOCKET
  kd_done
}
