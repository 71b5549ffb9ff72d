/*
 * net_host_addrs: the host's own addresses, for the packet filter's host
 * class (net_filter_config.host_addrs, net_rules.h NET_DENY_HOST) and the
 * egress table kilnd attaches outside the VMM (lib/egress).
 *
 * Contract:
 *  - Every IPv4 and IPv6 address of every interface of the network
 *    namespace the caller runs in, as getifaddrs(3) lists them now (up or
 *    down, loopback and link-local included), each once. Addresses the
 *    host gains later are not seen: the list is taken when a VM is
 *    created, before kiln-vmm leaves the host's network namespace.
 *  - The only part of the filter that asks the system; the filter itself
 *    takes the list as data, so its logic is tested with any list.
 */
#ifndef KILN_NET_HOST_ADDRS_H
#define KILN_NET_HOST_ADDRS_H

#include <stddef.h>

#include "lib/base/err.h"
#include "lib/netrules/net_addr.h"

/* The most addresses a list holds: a host with more is refused rather than half-listed. */
#define NET_HOST_ADDRS_MAX 1024

/* *out (free() it; NULL when n is 0) and its length n. 0, or -errno with e filled. */
int net_host_addrs(struct net_addr **out, size_t *n, struct err *e);

/* Add a to list (of *n, room for cap) unless it is there. 0, or -ENOSPC when full. */
int net_host_addrs_add(struct net_addr *list, size_t *n, size_t cap, const struct net_addr *a);

#endif
