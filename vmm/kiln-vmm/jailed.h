/*
 * jailed: what kiln-vmm --jail does around libkiln's jail step
 * (kiln/jail.h) that only a whole program can: a pid namespace of its own
 * and a descriptor table holding nothing it was not given on purpose.
 */
#ifndef KILN_VMM_JAILED_H
#define KILN_VMM_JAILED_H

#include "lib/base/err.h"

/*
 * Become pid 1 of a new pid namespace: unshare it and fork. The parent
 * stays outside, passes SIGINT, SIGTERM and SIGHUP on, and exits with
 * the child's status (128 + N for a signal); only the child returns, 0.
 * -errno with e when the namespace or the fork cannot be made.
 */
int jailed_fork_pid1(struct err *e);

/* Close every descriptor above stderr except keep[0..n). */
void jailed_close_fds(const int *keep, int n);

#endif
