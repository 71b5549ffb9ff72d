#include "lib/netrules/net_addr.h"
#include "lib/base/err.h"
#include "lib/base/num_parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A range of the always-deny set. */
struct range {
	struct net_cidr c;
	enum net_addr_class cls;
	const char *why;
};

#define V4(a, b_, c_, d, p)                      \
	{                                        \
		{ NET_AF4, { a, b_, c_, d } }, p \
	}
#define V6(p, ...)                              \
	{                                       \
		{ NET_AF6, { __VA_ARGS__ } }, p \
	}

/*
 * Reserved first: a /32 inside a private range (Alibaba's metadata service
 * in 100.64/10) must classify as reserved. Sources: RFC 6890 (special-
 * purpose registries), the clouds' metadata documentation.
 */
static const struct range ranges[] = {
	{ V4(0, 0, 0, 0, 8), NET_CLASS_RESERVED, "0.0.0.0/8 (this network)" },
	{ V4(127, 0, 0, 0, 8), NET_CLASS_RESERVED, "127.0.0.0/8 (loopback)" },
	{ V4(169, 254, 0, 0, 16), NET_CLASS_RESERVED,
	  "169.254.0.0/16 (link-local, cloud metadata)" },
	{ V4(100, 100, 100, 200, 32), NET_CLASS_RESERVED, "100.100.100.200 (cloud metadata)" },
	{ V4(168, 63, 129, 16, 32), NET_CLASS_RESERVED, "168.63.129.16 (cloud host agent)" },
	{ V4(224, 0, 0, 0, 4), NET_CLASS_RESERVED, "224.0.0.0/4 (multicast)" },
	{ V4(240, 0, 0, 0, 4), NET_CLASS_RESERVED, "240.0.0.0/4 (reserved, broadcast)" },
	{ V4(10, 0, 0, 0, 8), NET_CLASS_PRIVATE, "10.0.0.0/8 (private)" },
	{ V4(172, 16, 0, 0, 12), NET_CLASS_PRIVATE, "172.16.0.0/12 (private)" },
	{ V4(192, 168, 0, 0, 16), NET_CLASS_PRIVATE, "192.168.0.0/16 (private)" },
	{ V4(100, 64, 0, 0, 10), NET_CLASS_PRIVATE, "100.64.0.0/10 (shared address space)" },
	{ V4(192, 0, 0, 0, 24), NET_CLASS_PRIVATE, "192.0.0.0/24 (IETF protocol assignments)" },
	{ V4(198, 18, 0, 0, 15), NET_CLASS_PRIVATE, "198.18.0.0/15 (benchmarking)" },
	/* ::/96 holds :: and ::1 and the deprecated IPv4-compatible addresses. */
	{ V6(96, 0), NET_CLASS_RESERVED, "::/96 (unspecified, loopback, IPv4-compatible)" },
	{ V6(96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff), NET_CLASS_RESERVED,
	  "::ffff:0:0/96 (IPv4-mapped)" },
	{ V6(10, 0xfe, 0x80), NET_CLASS_RESERVED, "fe80::/10 (link-local)" },
	{ V6(8, 0xff), NET_CLASS_RESERVED, "ff00::/8 (multicast)" },
	{ V6(64, 0x01, 0x00), NET_CLASS_RESERVED, "100::/64 (discard-only)" },
	{ V6(128, 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54),
	  NET_CLASS_RESERVED, "fd00:ec2::254 (cloud metadata)" },
	{ V6(7, 0xfc), NET_CLASS_PRIVATE, "fc00::/7 (unique local)" },
	{ V6(10, 0xfe, 0xc0), NET_CLASS_PRIVATE, "fec0::/10 (site-local)" },
	{ V6(48, 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01), NET_CLASS_PRIVATE,
	  "64:ff9b:1::/48 (local NAT64)" },
};

int net_addr_parse(const char *s, struct net_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (strchr(s, ':')) {
		out->family = NET_AF6;
		return inet_pton(AF_INET6, s, out->b) == 1 ? 0 : -EINVAL;
	}
	out->family = NET_AF4;
	return inet_pton(AF_INET, s, out->b) == 1 ? 0 : -EINVAL;
}

void net_addr_set(struct net_addr *a, int family, const uint8_t *bytes)
{
	memset(a, 0, sizeof(*a));
	a->family = (uint8_t)family;
	memcpy(a->b, bytes, family == NET_AF4 ? 4 : 16);
}

static unsigned bits_of(int family)
{
	return family == NET_AF4 ? 32 : 128;
}

/* Zero the bits of a beyond prefix; true when any were set. */
static bool mask_host(struct net_addr *a, unsigned prefix)
{
	bool had = false;

	for (unsigned i = 0; i < 16; i++) {
		uint8_t keep;

		if (prefix >= 8 * (i + 1))
			continue;
		keep = prefix <= 8 * i ? 0 : (uint8_t)(0xff << (8 - (prefix - 8 * i)));
		had |= (a->b[i] & ~keep) != 0;
		a->b[i] &= keep;
	}
	return had;
}

int net_cidr_parse(const char *s, struct net_cidr *out, struct err *e)
{
	char host[NET_ADDR_STRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t hlen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned max, prefix;

	memset(out, 0, sizeof(*out));
	if (hlen == 0 || hlen > NET_ADDR_STRLEN)
		return err_set(e, EINVAL, "not an IPv4 or IPv6 address");
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (net_addr_parse(host, &out->addr) < 0)
		return err_set(e, EINVAL, "'%s' is not an IPv4 or IPv6 address", host);
	max = bits_of(out->addr.family);
	prefix = max;
	if (slash) {
		const char *p = slash + 1;
		uint64_t v;

		/* At most 3 digits ("008" but not "0008"), nothing else. */
		if (strlen(p) > 3 || num_parse_u64(p, 10, 0, max, &v))
			return err_set(e, EINVAL, "prefix length must be 0..%u for %s", max,
				       max == 32 ? "IPv4" : "IPv6");
		prefix = (unsigned)v;
	}
	out->prefix = (uint8_t)prefix;
	if (mask_host(&out->addr, prefix)) {
		char net[NET_CIDR_STRLEN];

		net_cidr_format(out, net, sizeof(net));
		return err_set(e, EINVAL, "host bits are set: did you mean %s?", net);
	}
	return 0;
}

bool net_addr_equal(const struct net_addr *a, const struct net_addr *b)
{
	return a->family == b->family && memcmp(a->b, b->b, 16) == 0;
}

bool net_cidr_contains(const struct net_cidr *c, const struct net_addr *a)
{
	struct net_addr m;

	if (a->family != c->addr.family)
		return false;
	m = *a;
	mask_host(&m, c->prefix);
	return memcmp(m.b, c->addr.b, 16) == 0;
}

bool net_cidr_within(const struct net_cidr *inner, const struct net_cidr *outer)
{
	return inner->addr.family == outer->addr.family && inner->prefix >= outer->prefix &&
		net_cidr_contains(outer, &inner->addr);
}

void net_addr_format(const struct net_addr *a, char *buf, size_t cap)
{
	char t[NET_ADDR_STRLEN];

	if (!inet_ntop(a->family == NET_AF4 ? AF_INET : AF_INET6, a->b, t, sizeof(t)))
		snprintf(t, sizeof(t), "?");
	snprintf(buf, cap, "%s", t);
}

void net_cidr_format(const struct net_cidr *c, char *buf, size_t cap)
{
	char t[NET_ADDR_STRLEN];

	net_addr_format(&c->addr, t, sizeof(t));
	snprintf(buf, cap, "%s/%u", t, c->prefix);
}

bool net_addr_embedded_v4(const struct net_addr *a, struct net_addr *v4)
{
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };

	if (a->family != NET_AF6)
		return false;
	if (memcmp(a->b, nat64, 12) == 0) {
		net_addr_set(v4, NET_AF4, a->b + 12);
		return true;
	}
	if (a->b[0] == 0x20 && a->b[1] == 0x02) {
		net_addr_set(v4, NET_AF4, a->b + 2);
		return true;
	}
	return false;
}

static const struct range *range_of(const struct net_addr *a)
{
	struct net_addr v4;

	if (net_addr_embedded_v4(a, &v4))
		return range_of(&v4);
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (net_cidr_contains(&ranges[i].c, a))
			return &ranges[i];
	return NULL;
}

enum net_addr_class net_addr_classify(const struct net_addr *a)
{
	const struct range *r = range_of(a);

	return r ? r->cls : NET_CLASS_PUBLIC;
}

const char *net_addr_class_why(const struct net_addr *a)
{
	const struct range *r = range_of(a);

	return r ? r->why : "public";
}

static bool cidr_in_class(const struct net_cidr *c, enum net_addr_class cls, const char **why)
{
	struct net_cidr v4;

	/* A block inside NAT64 or 6to4 space is judged by the IPv4 block it embeds. */
	if (net_addr_embedded_v4(&c->addr, &v4.addr)) {
		unsigned off = c->addr.b[0] == 0x20 ? 16 : 96;

		if (c->prefix < off)
			return false;
		v4.prefix = (uint8_t)(c->prefix - off > 32 ? 32 : c->prefix - off);
		mask_host(&v4.addr, v4.prefix);
		return cidr_in_class(&v4, cls, why);
	}
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		if (net_cidr_within(c, &ranges[i].c)) {
			/* The first range containing c decides, as in range_of(). */
			if (ranges[i].cls != cls)
				return false;
			if (why)
				*why = ranges[i].why;
			return true;
		}
	}
	return false;
}

bool net_cidr_in_private(const struct net_cidr *c)
{
	return cidr_in_class(c, NET_CLASS_PRIVATE, NULL);
}

bool net_cidr_in_reserved(const struct net_cidr *c, const char **why)
{
	return cidr_in_class(c, NET_CLASS_RESERVED, why);
}

bool net_addr_class_range(size_t i, struct net_cidr *c, enum net_addr_class *cls)
{
	if (i >= sizeof(ranges) / sizeof(ranges[0]))
		return false;
	*c = ranges[i].c;
	*cls = ranges[i].cls;
	return true;
}

bool net_addr_is_multicast(const struct net_addr *a)
{
	return a->family == NET_AF4 ? (a->b[0] & 0xf0) == 0xe0 : a->b[0] == 0xff;
}

bool net_addr_is_link_local6(const struct net_addr *a)
{
	return a->family == NET_AF6 && a->b[0] == 0xfe && (a->b[1] & 0xc0) == 0x80;
}

bool net_addr_is_unspecified(const struct net_addr *a)
{
	static const uint8_t zero[16];

	return memcmp(a->b, zero, 16) == 0;
}
