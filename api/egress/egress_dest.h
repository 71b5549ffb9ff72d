/*
 * egress_dest: whether kiln-egress may connect to the destination a
 * steered flow's PROXY v2 header names. kiln-vmm is assumed compromised,
 * so the header's destination is a claim: the proxy resolves the flow's
 * name itself (the host's resolver) and connects only to an address among
 * the answers, and never to the classes kiln never lets a guest reach
 * (lib/netrules/net_addr.h: reserved, loopback, link-local and metadata
 * included, and private), whatever the DNS says, unless an override CIDR
 * (kiln-egress --allow-private, for tests) holds the address; nor to one
 * of the host's own addresses (lib/netrules/net_host_addrs.h; also in its
 * NAT64 or 6to4 form), public or not, unless an override names exactly
 * that one address, as the packet filter's NET_DENY_HOST holds: a name
 * a rule allows that resolves to the host must not reach a service the
 * host runs.
 *
 * Contract: pure, no I/O, no allocation.
 */
#ifndef KILN_EGRESS_DEST_H
#define KILN_EGRESS_DEST_H

#include <stddef.h>

#include "lib/netrules/net_addr.h"
#include "lib/netrules/proxy_v2.h"

/* The header's destination address as a net_addr. */
void egress_dest_of(const struct proxy_v2 *hdr, struct net_addr *out);

/*
 * NULL when dst may be connected to: it is one of the n resolved
 * addresses; not one of the n_host host addresses unless an override
 * block is exactly that address; and public or inside one of the n_allow
 * override blocks. Otherwise a fixed reason for the log and the 403 body.
 */
const char *egress_dest_check(const struct net_addr *dst, const struct net_addr *resolved, size_t n,
			      const struct net_cidr *allow, size_t n_allow,
			      const struct net_addr *host, size_t n_host);

#endif
