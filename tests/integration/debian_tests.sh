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
  kd_check '[ "$(jget "len(d[\"sandboxes\"])")" = 0 ]' "kiln run removed its sandboxes"
  unset KILN_SOCKET
  kd_done
}
