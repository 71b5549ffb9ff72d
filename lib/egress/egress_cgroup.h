/*
 * egress_cgroup: an egress table (egress_policy.h) enforced by the kernel
 * on every process of a cgroup v2: the generated programs (egress_prog.h)
 * loaded with bpf(2) and attached to the cgroup's connect4, connect6,
 * sendmsg4 and sendmsg6 hooks (docs/security.md, "Network confinement").
 *
 * Contract:
 *  - Needs CAP_BPF and CAP_NET_ADMIN (root) and a kernel with
 *    CONFIG_CGROUP_BPF; egress_cgroup_probe() says whether this process
 *    has them, without touching any cgroup.
 *  - Programs are attached with BPF_F_ALLOW_MULTI, so they add to what
 *    the cgroup's ancestors run (every program on the path must allow a
 *    call) and a process inside cannot lift them: it has no capability,
 *    and a child cgroup it made would still run its parents' programs.
 *  - Attached programs live as long as the cgroup, whoever loaded them:
 *    nothing to keep open, nothing to restore when kilnd restarts.
 *  - egress_cgroup_apply() replaces: the new programs are attached first,
 *    then the cgroup's earlier kiln programs (named EGRESS_PROG_NAME*) are
 *    detached, so while both run a call passes only when both tables
 *    allow it. A failure leaves what was attached before, plus the new
 *    programs already attached: never less than either table denies.
 *  - Errors are values: -errno with a one-line message in e.
 */
#ifndef KILN_EGRESS_CGROUP_H
#define KILN_EGRESS_CGROUP_H

#include <stdbool.h>

#include "lib/base/err.h"
#include "lib/egress/egress_policy.h"

/* The name of every program kiln attaches (bpf_prog_info.name, 15 characters at most). */
#define EGRESS_PROG_NAME "kiln_egress"

/* 0 when this process can load and attach cgroup sock_addr programs; else -errno with e saying why. */
int egress_cgroup_probe(struct err *e);

/* Attach p's programs to the cgroup directory `cgroup` (an open descriptor) in place of earlier ones. 0 or -errno. */
int egress_cgroup_apply(int cgroup, const struct egress_policy *p, struct err *e);

/* Whether the programs the cgroup runs (its own and its ancestors') include kiln's. */
bool egress_cgroup_holds(int cgroup);

/* Detach every kiln program from the cgroup; 0 or -errno. */
int egress_cgroup_clear(int cgroup, struct err *e);

#endif
