/*
 * oci_seccomp: ctr_create's `seccomp` (docs/agent-protocol.md, 7.9) as a
 * classic BPF program for seccomp(2), the way libseccomp lays out runc's
 * filter, for the guest's own architecture (x86_64):
 *
 *   another architecture's call (i386's int 0x80) and an x32 call:
 *   ENOSYS; then each rule in order, the first whose syscall number and
 *   argument conditions all match deciding; else the default action.
 *
 * Contract: oci_seccomp_compile is pure (unit-tested by running what it
 * builds) and runs in the agent, which may allocate; the program is at
 * most BPF_MAXINSNS instructions, else it fails naming the count.
 * oci_seccomp_install runs in the container's child, raw system calls
 * only: a filter needs no_new_privs or CAP_SYS_ADMIN, so the child
 * installs it last before its execve with no_new_privileges, and before
 * it drops its capabilities without (runc's order).
 */
#ifndef KILN_OCI_SECCOMP_H
#define KILN_OCI_SECCOMP_H

#include <stddef.h>
#include <linux/filter.h>

#include "api/proto/agent_proto.h"

struct oci_seccomp {
	struct sock_fprog prog; /* filter: malloc'd */
	unsigned flags;         /* SECCOMP_FILTER_FLAG_* */
};

/* s into out (oci_seccomp_free it). 0, or -1 with why[whysz] saying what
 * (-E2BIG: too long, -ENOMEM). */
int oci_seccomp_compile(const struct agent_seccomp *s, struct oci_seccomp *out, char *why,
			size_t whysz);
void oci_seccomp_free(struct oci_seccomp *f);

/* In the child: seccomp(SECCOMP_SET_MODE_FILTER); nothing when f is NULL. */
int oci_seccomp_install(const struct oci_seccomp *f);

#endif
