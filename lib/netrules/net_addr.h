/*
 * net_addr: IPv4/IPv6 addresses and CIDR blocks for the packet filter, and
 * the classes of destination kiln never lets a guest reach on its own.
 *
 * Contract:
 *  - Pure. One representation for both families: `b` holds the address in
 *    network order, IPv4 in b[0..3] with b[4..15] zero, so a struct can be
 *    compared and hashed as bytes. Matching never crosses families: an
 *    IPv4 CIDR never matches an IPv6 address, IPv4-mapped or not.
 *  - Parsing is strict: a CIDR with host bits set ("10.0.0.1/8") is an
 *    error that names the block the caller probably meant.
 *  - net_addr_classify() is the always-deny set (docs/architecture.md,
 *    "Packet filter"): NET_CLASS_RESERVED can never be allowed by a rule
 *    (host loopback, link-local and the cloud metadata services, multicast,
 *    broadcast, "this network", IPv4-mapped IPv6); NET_CLASS_PRIVATE (RFC
 *    1918, CGNAT, ULA, ...) only by a CIDR allow rule that lies inside a
 *    private range. Addresses that embed an IPv4 address (NAT64
 *    64:ff9b::/96, 6to4 2002::/16) take the class of the embedded address,
 *    so 64:ff9b::a9fe:a9fe is the metadata service too.
 */
#ifndef KILN_NET_ADDR_H
#define KILN_NET_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

#define NET_AF4 4
#define NET_AF6 6
#define NET_ADDR_STRLEN 46 /* INET6_ADDRSTRLEN */
#define NET_CIDR_STRLEN (NET_ADDR_STRLEN + 4)

struct net_addr {
	uint8_t family; /* NET_AF4 or NET_AF6 */
	uint8_t b[16];
};

struct net_cidr {
	struct net_addr addr; /* host bits zero */
	uint8_t prefix;       /* 0..32 or 0..128 */
};

enum net_addr_class {
	NET_CLASS_PUBLIC,
	NET_CLASS_PRIVATE,
	NET_CLASS_RESERVED,
};

/* An IPv4 or IPv6 address in text form. 0 or -EINVAL. */
int net_addr_parse(const char *s, struct net_addr *out);

/* Build an address from raw network-order bytes (4 or 16 of them). */
void net_addr_set(struct net_addr *a, int family, const uint8_t *bytes);

/*
 * "ADDR/PREFIX" or a bare address (a /32 or /128). 0, or -EINVAL with a
 * reason in e ("prefix length must be 0..32 for IPv4", "host bits are set:
 * did you mean 10.0.0.0/8?").
 */
int net_cidr_parse(const char *s, struct net_cidr *out, struct err *e);

bool net_addr_equal(const struct net_addr *a, const struct net_addr *b);
bool net_cidr_contains(const struct net_cidr *c, const struct net_addr *a);
/* Every address of inner is in outer (same family). */
bool net_cidr_within(const struct net_cidr *inner, const struct net_cidr *outer);

void net_addr_format(const struct net_addr *a, char *buf, size_t cap);
void net_cidr_format(const struct net_cidr *c, char *buf, size_t cap);

enum net_addr_class net_addr_classify(const struct net_addr *a);
/* What the range of a's class is, for messages ("169.254.0.0/16 (link-local, cloud metadata)"). */
const char *net_addr_class_why(const struct net_addr *a);
/* c lies entirely inside one private range: an allow rule for it lifts that range. */
bool net_cidr_in_private(const struct net_cidr *c);
/* c lies entirely inside one reserved range: no rule can allow it. */
bool net_cidr_in_reserved(const struct net_cidr *c, const char **why);

/*
 * The i-th range of the reserved and private classes (in the order
 * net_addr_classify() tries them: the first one holding an address
 * decides), for a filter that holds them as data (lib/egress). false
 * past the last one. The NAT64 and 6to4 forms of the IPv4 ranges are not
 * listed: they take the class of the address they embed.
 */
bool net_addr_class_range(size_t i, struct net_cidr *c, enum net_addr_class *cls);

/* The IPv4 address an IPv6 one carries (NAT64 64:ff9b::/96, 6to4 2002::/16), if any. */
bool net_addr_embedded_v4(const struct net_addr *a, struct net_addr *v4);

/* Address kinds the filter's infrastructure rules need. */
bool net_addr_is_multicast(const struct net_addr *a);   /* 224/4, ff00::/8 */
bool net_addr_is_link_local6(const struct net_addr *a); /* fe80::/10 */
bool net_addr_is_unspecified(const struct net_addr *a); /* 0.0.0.0, :: */

#endif
