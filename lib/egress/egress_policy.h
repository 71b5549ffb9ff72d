/*
 * egress_policy: where passt may connect on a sandbox's behalf, as an
 * ordered table the kernel checks outside the VMM (egress_prog.h turns it
 * into cgroup programs; docs/security.md, "Network confinement").
 *
 * kiln-vmm's packet filter decides every guest frame, but it runs inside
 * the process a guest attacks first. A compromised kiln-vmm writes frames
 * straight to passt's socket, and passt, in the host's network namespace,
 * connects wherever a frame points: host loopback, the host's own
 * addresses, the metadata service, the LAN. This table is the part of the
 * filter's decision that holds without the VMM, checked by the kernel on
 * every connect() and sendmsg() of the sandbox's cgroup (passt and the VMM).
 *
 * Contract:
 *  - Pure: the rule set, the host's addresses and passt's resolver are
 *    data; nothing here asks the system.
 *  - The first entry that matches a destination (address, IP protocol,
 *    port) decides; none matching: default_allow.
 *  - Without a rule set (kiln-vmm or libkiln without --firewall), the
 *    table denies the reserved classes (net_addr.h: loopback, "this
 *    network", link-local and the metadata services, multicast,
 *    broadcast) and the host's own addresses, and allows the rest.
 *  - With one, it follows net_rules_decide() as far as a destination
 *    alone can tell: deny rules by CIDR, the reserved classes, the `dns`
 *    resolvers' port 53, the host's addresses (open only through an allow
 *    rule naming that one address), private ranges (open only through a
 *    CIDR allow rule inside one), the CIDR allow rules, then
 *    outbound_internet. A host-name rule cannot be checked here (the names
 *    are bound from DNS answers inside the VMM): an allow rule by name
 *    opens its protocol and ports to every public address, a deny rule by
 *    name is left to the VMM. So the table never denies what the filter
 *    allows, and never allows what the filter always denies.
 *  - TCP to every port the rule set steers to the egress proxy
 *    (net_rules_steers: the ports its `http` rules list) is denied first,
 *    before any allow, to every address: kiln-vmm hands those flows to
 *    kiln-egress, so passt never has a reason to open one, and a
 *    compromised kiln-vmm cannot send a raw flow to such a port past the
 *    proxy. (A rule set that steers TCP port 53 so denies passt's TCP
 *    DNS too: the guest's TCP DNS goes to the proxy then, as asked.)
 *  - passt's own resolver (resolver=, else the first nameserver of the
 *    host's resolv.conf), port 53 over UDP and TCP, comes next: passt
 *    forwards the guest's DNS there, and it may be a loopback resolver
 *    such as 127.0.0.53.
 *  - The NAT64 (64:ff9b::/96) and 6to4 (2002::/16) forms of every denied
 *    IPv4 class are denied too; an IPv4-mapped IPv6 destination
 *    (::ffff:a.b.c.d) is decided as the IPv4 address it maps.
 */
#ifndef KILN_EGRESS_POLICY_H
#define KILN_EGRESS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"
#include "lib/netrules/net_addr.h"
#include "lib/netrules/net_rules.h"

/* The most entries a table holds (a full rule set and 1024 host addresses take about 4,500). */
#define EGRESS_ENTRIES_MAX 8192

struct egress_entry {
	struct net_cidr cidr;
	uint8_t proto;             /* 0: any; else an IP protocol number */
	uint16_t port_lo, port_hi; /* 0, 0: every port; else TCP or UDP ports in range */
	bool allow;
};

struct egress_policy {
	struct egress_entry *e;
	size_t n;
	bool default_allow;
};

/*
 * The table for rules (NULL: no firewall), the host's n_host addresses
 * (net_host_addrs) and passt's resolver (NULL: none). 0, or -ENOMEM /
 * -E2BIG (more than EGRESS_ENTRIES_MAX entries) with e.
 */
int egress_policy_build(const struct net_rules *rules, const struct net_addr *host, size_t n_host,
			const struct net_addr *resolver, struct egress_policy *out, struct err *e);
void egress_policy_free(struct egress_policy *p);

/* How many runs of consecutive ports r steers (each is one range, two entries). */
size_t egress_steered_runs(const struct net_rules *r);

/* The table's decision for one destination (what the cgroup programs compute). */
bool egress_policy_allows(const struct egress_policy *p, const struct net_addr *dst, uint8_t proto,
			  uint16_t port);

#endif
