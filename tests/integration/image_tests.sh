# Integration test of image import (docs/api.md, "Images"): archives made by
# tests/integration/oci_image.py, imported through a real kilnd, one of
# them booted. Source after kilnd_lib.sh (kd_start, api, kd_check, ...).

# kd_import NAME FILE: POST /v1/images?name=NAME with FILE as the body.
kd_import() {
  api POST "/v1/images?name=$1" --data-binary "@$2" -H 'Content-Type: application/x-tar'
}

test_kilnd_oci_import() {
  kd_start || return 1
  local why='' a=$kd/archives k
  mkdir "$a"
  for k in oci docker dotdot symlink-escape through-symlink; do
    python3 tests/integration/oci_image.py "$k" "$a/$k.tar" || { kd_stop; fail "oci_image.py $k failed"; return 1; }
  done
  # Hostile archives: refused with the member named, nothing registered.
  kd_import bad1 "$a/dotdot.tar"
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_archive ] && [[ "$(jget .error.message)" == "layer 1 (sha256:"*"member \"../etc/x\": "* ]]' \
    "a ../ member is 400 bad_archive naming the layer and the member"
  kd_import bad2 "$a/symlink-escape.tar"
  kd_check '[ $status = 400 ] && [[ "$(jget .error.message)" == *"member \"up\": symlink to '"'"'../../..'"'"' leaves the image root"* ]]' \
    "a symlink leaving the tree is refused, named"
  kd_import bad3 "$a/through-symlink.tar"
  kd_check '[ $status = 400 ] && [[ "$(jget .error.message)" == *"member \"etc2/passwd\": "*"symlink"* ]]' \
    "a member through a symlink is refused, named"
  # The docker save variant: imported, its record says so (no boot).
  kd_import dock "$a/docker.tar"
  kd_check '[ $status = 201 ] && [ "$(jget "[.format, .source, .config.env.GREETING] | words")" = "docker oci hello" ]' \
    "a docker save tarball imports"
  kd_import ocitest "$a/oci.tar"
  kd_check '[ $status = 201 ] && [ "$(jget "[.format, .layers, .config.working_dir] | words")" = "oci 2 /srv/work" ]' \
    "the OCI tarball imports"
  kd_import ocitest "$a/oci.tar"
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = exists ]' "a second import under a taken name is 409 exists"
  api GET /v1/images
  kd_check '[ "$(jget "[.images[] | .name] | sort")" = "[\"dock\",\"minimal\",\"ocitest\"]" ]' \
    "GET /v1/images lists the two imports and minimal, no refused one"
  kd_check '[ "$(jget "[.images[] | select(.name | IN(\"minimal\", \"ocitest\")) | [.source, .digest[:7], (.digest | length), .size_bytes > 0, .created[4:5], (.manifest_digest // \"-\")[:7]]]")" = "[[\"option\",\"sha256:\",71,true,\"-\",\"-\"],[\"oci\",\"sha256:\",71,true,\"-\",\"sha256:\"]]" ]' \
    "records show digest, size, source, created (and the manifest digest of an import)"
  # Boot it: layers, whiteout, opaque dir, links, owner and mode, and the
  # config's Env and WorkingDir as exec's defaults.
  kd_create '{"image":"ocitest"}' || { kd_stop; return 1; }
  kd_sh "$sid" 'echo $GREETING; pwd; test -e /etc/gone.txt || echo whited-out; ls /opq; readlink /link; cat /link; stat -c "%u:%g %a %h" /data/owned.txt; id -u'
  kd_check '[ "$(kd_outw)" = "hello /srv/work whited-out new.txt data/owned.txt owned by user 1000:1000 640 2 1000" ]' \
    "the imported image boots with its files, whiteouts, links, owners and defaults: $(kd_outw)"
  # The request's own cwd and env win over the image's.
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["sh","-c","echo $GREETING; pwd"],"cwd":"/tmp","env":{"GREETING":"mine"}}'
  kd_check '[ "$(kd_outw)" = "mine /tmp" ]' "the request's env and cwd win: $(kd_outw)"
  api DELETE /v1/images/ocitest
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = in_use ]' "an image in use cannot be deleted"
  api DELETE /v1/images/minimal
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = read_only ]' "an --image image cannot be deleted"
  api DELETE "/v1/sandboxes/$sid"
  api DELETE /v1/images/ocitest
  kd_check '[ $status = 204 ]' "with its sandbox gone the image is deleted"
  api GET /v1/images/ocitest
  kd_check '[ $status = 404 ]' "a deleted image is gone"
  kd_done
}
