# kiln-runtime under Podman (issue 34). Source after lib.sh and oci_lib.sh.

# The engine itself works in the outer VM with a runtime it ships (crun):
# when a kiln-runtime flow fails, this says whether the harness or kiln is
# to blame.
test_oci_podman_crun_baseline() {
  oci_start || { oci_stop; return 1; }
  local r=0
  oci_flows /usr/bin/crun || r=1
  oci_stop
  return $r
}
