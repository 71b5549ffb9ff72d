/*
 * oci_privs: what confines a container's process beyond its mounts
 * (docs/agent-protocol.md, 7.9 `ctr_create` steps 4 to 8, `ctr_exec`):
 * resource limits, OOM score, sysctls, masked and read-only paths,
 * capabilities and no_new_privs, in runc's order. oci_apply.c calls them
 * from the cloned child:
 *
 *   rlimits, oom_score_adj   first (as root, before anything is dropped);
 *   sysctls                  in the container's namespaces, before
 *                            pivot_root (through the guest's /proc);
 *   readonly, masked paths   after pivot_root, inside the new root;
 *   bounding set, keep-caps  before the uid switch; the other sets after;
 *   no_new_privs             last before the child reports ready.
 *
 * Contract: the appliers run in the child of the multithreaded agent:
 * raw system calls only, no allocation, no locks. Each returns 0, or -1
 * with errno set and, for a list, *failed the index of the entry that
 * failed. A masked or read-only path that does not exist is skipped (as
 * runc does: engines pass one list for every kernel). oci_sysctl_path and
 * oci_int_text are pure and unit-tested.
 */
#ifndef KILN_OCI_PRIVS_H
#define KILN_OCI_PRIVS_H

#include <stddef.h>

#include "api/proto/agent_proto.h"

/* "/proc/sys/" + key with every '.' made '/' into out[sz]; -1 when it
 * does not fit. The key was checked (agent_sysctl_key_valid). */
int oci_sysctl_path(const char *key, char *out, size_t sz);

/* v in decimal into buf (no NUL); the length. */
size_t oci_int_text(int v, char buf[12]);

int oci_set_rlimits(const struct agent_ctr_privs *pv, size_t *failed);
int oci_set_oom_score(const struct agent_ctr_privs *pv);
int oci_write_sysctls(const struct agent_sysctl *s, size_t n, size_t *failed);
int oci_readonly_paths(const char *const *paths, size_t n, size_t *failed);
int oci_mask_paths(const char *const *paths, size_t n, size_t *failed);

/* Before the uid switch: the bounding set cut to pv's, and the permitted
 * set kept across the switch. Nothing when pv has no capabilities. */
int oci_caps_bound(const struct agent_ctr_privs *pv);
/* After it: effective, permitted, inheritable and ambient set to pv's. */
int oci_caps_set(const struct agent_ctr_privs *pv);
int oci_no_new_privs(const struct agent_ctr_privs *pv);

#endif
