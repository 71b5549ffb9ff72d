/*
 * sandbox_egress: a passt sandbox's egress table (lib/egress) on its
 * cgroup, so the kernel holds passt to the sandbox's rules even when
 * kiln-vmm, which runs the packet filter, is compromised
 * (docs/security.md, "Network confinement").
 *
 * Contract:
 *  - The table is built from the sandbox's stored rules (firewall.json,
 *    or what its first boot writes), the host's addresses at that moment
 *    and passt's resolver (--dns-resolver, else the first IPv4 nameserver
 *    of the host's /etc/resolv.conf, which passt forwards to).
 *  - Attached to the VMM's fresh cgroup before every kiln-vmm start (boot,
 *    restore, wake, fork, pool refill: all go through spawn_and_wait),
 *    replaced when the rules change, and applied again when kilnd
 *    reattaches to a running VMM (the programs live with the cgroup; this
 *    refreshes the host's addresses and covers a VMM an older kilnd
 *    started).
 *  - A jailed kilnd that cannot load cgroup programs starts, says so once,
 *    and refuses passt sandboxes (a failed start, spawn_failed, naming the
 *    reason); with --no-jail (VMMs unconfined by choice) it logs and goes
 *    without. Sandboxes without a network are not touched.
 */
#ifndef KILN_SANDBOX_EGRESS_H
#define KILN_SANDBOX_EGRESS_H

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/kilnd.h"

struct sandbox;

/* At start, with cgroups on: whether this kilnd can attach egress programs (cfg->egress, cfg->egress_off). */
void sandbox_egress_probe(struct kilnd_config *cfg);

/* The resolver passt and the egress proxies ask: --dns-resolver, else the
 * host's first IPv4 nameserver; into *a, NULL when there is none. */
struct net_addr;
const struct net_addr *sandbox_egress_resolver(const struct kilnd *d, struct net_addr *a);

/*
 * The table for canon (the sandbox's canonical rules; NULL: its stored
 * ones) on the cgroup directory cgroup_dir, in place of the one there.
 * 0 (also when the sandbox has no network, or egress is off by
 * --no-jail), or -1 with e.
 */
int sandbox_egress_apply(struct sandbox *sb, const char *cgroup_dir, const json_t *canon,
			 struct api_err *e);

#endif
