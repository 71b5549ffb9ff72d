/*
 * seccomp_filter: the seccomp-bpf allowlist of each kiln-vmm thread role
 * (docs/security.md, "seccomp filters per thread").
 *
 * A role's filter is built once with libseccomp, before any VM thread
 * starts, into a plain BPF program (seccomp_filter_build); each thread
 * then loads its role's program on itself at its own start
 * (seccomp_filter_load: PR_SET_NO_NEW_PRIVS and SECCOMP_SET_MODE_FILTER on
 * the calling thread only, no TSYNC), so its first guest-reachable work
 * already runs filtered. Filters are inherited by threads created later
 * and stack (the strictest answer wins): a thread that creates VM threads
 * must load its own filter only after creating them.
 *
 * Anything outside a role's list kills the whole process (SIGSYS) in
 * SECCOMP_FILTER_KILL mode; SECCOMP_FILTER_LOG lets it run and has the
 * kernel log it, for finding a missing rule, never for production.
 */
#ifndef KILN_SECCOMP_FILTER_H
#define KILN_SECCOMP_FILTER_H

#include <linux/filter.h>

#include "lib/base/err.h"

enum seccomp_role {
	SECCOMP_ROLE_VCPU,    /* KVM_RUN and the device work an MMIO/PIO exit does inline */
	SECCOMP_ROLE_DEVICE,  /* the device thread (event loop): disks, shares, sockets */
	SECCOMP_ROLE_CONTROL, /* vm_run's caller, control socket, snapshots, teardown */
	SECCOMP_ROLE_RESTORE, /* reading overlay headers and a restore's snapshot, before the VM runs */
	SECCOMP_ROLE_COUNT,
};

enum seccomp_filter_mode {
	SECCOMP_FILTER_KILL, /* default: a call outside the list kills the process */
	SECCOMP_FILTER_LOG,  /* diagnosis only: allowed, and logged by the kernel */
};

/* A built filter: BPF instructions (malloc'd) ready for seccomp(2). */
struct seccomp_prog {
	struct sock_filter *insns;
	unsigned short len;
};

/*
 * Build role's filter for this process (tgkill is limited to its own pid,
 * so build after any fork into a pid namespace). 0 or -errno with e set.
 */
int seccomp_filter_build(enum seccomp_role role, enum seccomp_filter_mode mode,
			 struct seccomp_prog *out, struct err *e);

/*
 * Install p on the calling thread (and the threads it creates later):
 * PR_SET_NO_NEW_PRIVS, then the filter. 0 or -errno. Calls only prctl and
 * seccomp, so it can run in a forked child of a sanitized test.
 */
int seccomp_filter_load(const struct seccomp_prog *p);

void seccomp_prog_free(struct seccomp_prog *p);

/* "vcpu", "device", "control", "restore". */
const char *seccomp_role_name(enum seccomp_role role);

#endif
