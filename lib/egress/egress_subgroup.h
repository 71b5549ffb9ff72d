/*
 * egress_subgroup: the egress table around a process kiln-vmm starts
 * itself (passt) when nobody attached one around kiln-vmm: kiln-vmm or a
 * libkiln program run by hand, as root (docs/security.md, "Network
 * confinement").
 *
 * Contract:
 *  - The table is the one without a firewall (egress_policy.h): the
 *    reserved classes and the host's addresses at this moment shut, passt's
 *    resolver's port 53 open, everything else open. Rules set with
 *    --firewall stay the packet filter's: the jailed VMM cannot change
 *    cgroup programs later, so they are not copied here.
 *  - The cgroup is <the caller's cgroup>/kiln-passt-<pid> (the pid as
 *    /proc names it: the host's, also inside a pid namespace): below the
 *    caller's own, so what passt uses is still counted where kiln-vmm's
 *    is. The child joins it by writing "0" to *procs_fd between fork and
 *    exec. A jailed kiln-vmm cannot remove it when it ends: each call
 *    first removes the empty ones whose kiln-vmm is gone.
 *  - Nothing is made when the caller's cgroup already runs kiln's
 *    programs (kilnd attached them to the sandbox's cgroup: a cgroup
 *    made below it would keep kilnd from removing the sandbox's).
 *  - Returns 1 with *procs_fd (O_CLOEXEC) when passt will be held; 0 when
 *    not, with e->msg saying why (not root, no cgroup v2 or none it may
 *    make, no cgroup BPF; "" when kilnd holds it already); -errno with e
 *    when attaching failed after the cgroup was made (it is removed again,
 *    nothing is left open).
 */
#ifndef KILN_EGRESS_SUBGROUP_H
#define KILN_EGRESS_SUBGROUP_H

#include "lib/base/err.h"
#include "lib/netrules/net_addr.h"

/* resolver: passt's upstream nameserver (resolver=), or NULL for the host's (egress_host_resolver). */
int egress_subgroup_open(const struct net_addr *resolver, int *procs_fd, struct err *e);

/* The first IPv4 nameserver of /etc/resolv.conf, the one passt forwards to. 0, or -ENOENT. */
int egress_host_resolver(struct net_addr *out);

#endif
