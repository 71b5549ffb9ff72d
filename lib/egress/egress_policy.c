/* The ordered egress table of a sandbox; see egress_policy.h. */
#include "lib/egress/egress_policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PROTO_TCP 6
#define PROTO_UDP 17
#define DNS_PORT 53

struct builder {
	struct egress_policy *p;
	size_t cap;
	int err; /* the first -E2BIG */
};

static void put(struct builder *b, const struct net_cidr *c, uint8_t proto, uint16_t lo,
		uint16_t hi, bool allow)
{
	if (b->p->n == b->cap) {
		b->err = -E2BIG;
		return;
	}
	b->p->e[b->p->n++] = (struct egress_entry){ *c, proto, lo, hi, allow };
}

/*
 * c, and for an IPv4 block also its NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16) forms: the filter classifies those by the address they
 * embed (net_addr.h), and a dual-stack socket reaches them through a
 * NAT64 gateway or a 6to4 relay of the host's network.
 */
static void put_forms(struct builder *b, const struct net_cidr *c, uint8_t proto, uint16_t lo,
		      uint16_t hi, bool allow)
{
	struct net_cidr f;

	put(b, c, proto, lo, hi, allow);
	if (c->addr.family != NET_AF4)
		return;
	memset(&f, 0, sizeof(f));
	f.addr.family = NET_AF6;
	f.addr.b[1] = 0x64;
	f.addr.b[2] = 0xff;
	f.addr.b[3] = 0x9b;
	memcpy(f.addr.b + 12, c->addr.b, 4);
	f.prefix = (uint8_t)(96 + c->prefix);
	put(b, &f, proto, lo, hi, allow);
	memset(&f, 0, sizeof(f));
	f.addr.family = NET_AF6;
	f.addr.b[0] = 0x20;
	f.addr.b[1] = 0x02;
	memcpy(f.addr.b + 2, c->addr.b, 4);
	f.prefix = (uint8_t)(16 + c->prefix);
	put(b, &f, proto, lo, hi, allow);
}

static void put_rule(struct builder *b, const struct net_rule *r, const struct net_cidr *c,
		     bool allow)
{
	put(b, c, r->proto, r->port_lo, r->port_hi, allow);
}

/* addr:53 over UDP and TCP. */
static void put_dns(struct builder *b, const struct net_addr *a)
{
	struct net_cidr c = { *a, (uint8_t)(a->family == NET_AF4 ? 32 : 128) };

	put(b, &c, PROTO_UDP, DNS_PORT, DNS_PORT, true);
	put(b, &c, PROTO_TCP, DNS_PORT, DNS_PORT, true);
}

static void put_class(struct builder *b, enum net_addr_class want)
{
	enum net_addr_class cls;
	struct net_cidr c;

	for (size_t i = 0; net_addr_class_range(i, &c, &cls); i++)
		if (cls == want)
			put_forms(b, &c, 0, 0, 0, false);
}

static void put_host(struct builder *b, const struct net_addr *host, size_t n_host)
{
	for (size_t i = 0; i < n_host; i++) {
		struct net_cidr c = { host[i], (uint8_t)(host[i].family == NET_AF4 ? 32 : 128) };

		put_forms(b, &c, 0, 0, 0, false);
	}
}

/* Every address of both families, for a rule by host name. */
static void put_anywhere(struct builder *b, const struct net_rule *r)
{
	struct net_cidr any4 = { { NET_AF4, { 0 } }, 0 }, any6 = { { NET_AF6, { 0 } }, 0 };

	put_rule(b, r, &any4, true);
	put_rule(b, r, &any6, true);
}

/* The rule set's part, in net_rules_decide()'s order (egress_policy.h). */
static void put_rules(struct builder *b, const struct net_rules *r, const struct net_addr *host,
		      size_t n_host)
{
	for (size_t i = 0; i < r->n_deny; i++)
		if (!r->deny[i].is_host)
			put_rule(b, &r->deny[i], &r->deny[i].cidr, false);
	put_class(b, NET_CLASS_RESERVED);
	for (size_t i = 0; i < r->n_dns; i++)
		put_dns(b, &r->dns[i]);
	/* A host address opens only through a rule naming it. */
	for (size_t i = 0; i < r->n_allow; i++)
		if (net_rule_names_one(&r->allow[i]) &&
		    net_addr_in_list(&r->allow[i].cidr.addr, host, n_host))
			put_rule(b, &r->allow[i], &r->allow[i].cidr, true);
	put_host(b, host, n_host);
	for (size_t i = 0; i < r->n_allow; i++)
		if (!r->allow[i].is_host && r->allow[i].lifts_private)
			put_rule(b, &r->allow[i], &r->allow[i].cidr, true);
	put_class(b, NET_CLASS_PRIVATE);
	for (size_t i = 0; i < r->n_allow; i++) {
		if (r->allow[i].is_host)
			put_anywhere(b, &r->allow[i]);
		else if (!r->allow[i].lifts_private)
			put_rule(b, &r->allow[i], &r->allow[i].cidr, true);
	}
	b->p->default_allow = r->outbound_internet;
}

/*
 * TCP to every port the rule set steers to the egress proxy, anywhere:
 * kiln-vmm hands those flows to kiln-egress, never to passt, so a
 * compromised kiln-vmm that writes such a SYN straight into passt's
 * socket must not get it past the proxy (docs/security.md, "Outside the
 * VMM: what passt may reach"). Runs of steered ports make one range each.
 */
static void put_steered(struct builder *b, const struct net_rules *r)
{
	struct net_cidr any4 = { { NET_AF4, { 0 } }, 0 }, any6 = { { NET_AF6, { 0 } }, 0 };
	uint32_t lo = 0;

	for (uint32_t port = 1; port <= 65536; port++) {
		bool steered = port <= 65535 && net_rules_steers(r, (uint16_t)port);

		if (steered && !lo)
			lo = port;
		if (!steered && lo) {
			put(b, &any4, PROTO_TCP, (uint16_t)lo, (uint16_t)(port - 1), false);
			put(b, &any6, PROTO_TCP, (uint16_t)lo, (uint16_t)(port - 1), false);
			lo = 0;
		}
	}
}

size_t egress_steered_runs(const struct net_rules *r)
{
	size_t runs = 0;
	bool in = false;

	for (uint32_t port = 1; port <= 65535; port++) {
		bool steered = net_rules_steers(r, (uint16_t)port);

		runs += steered && !in;
		in = steered;
	}
	return runs;
}

/* An upper bound of the entries: every list at its most. */
static size_t entries_bound(const struct net_rules *r, size_t n_host)
{
	enum net_addr_class cls;
	struct net_cidr c;
	size_t n = 2 + 3 * n_host;

	for (size_t i = 0; net_addr_class_range(i, &c, &cls); i++)
		n += 3;
	if (r)
		n += r->n_deny + 2 * r->n_dns + 3 * r->n_allow + 2 * egress_steered_runs(r);
	return n;
}

int egress_policy_build(const struct net_rules *rules, const struct net_addr *host, size_t n_host,
			const struct net_addr *resolver, struct egress_policy *out, struct err *e)
{
	size_t bound = entries_bound(rules, n_host);
	struct builder b = { out, bound < EGRESS_ENTRIES_MAX ? bound : EGRESS_ENTRIES_MAX, 0 };

	memset(out, 0, sizeof(*out));
	out->e = calloc(b.cap, sizeof(*out->e));
	if (!out->e)
		return err_set(e, ENOMEM, "egress: out of memory");
	/* First of all: a steered flow is the proxy's, whatever allows it. */
	if (rules)
		put_steered(&b, rules);
	/* Then passt's own resolver, which gets the guest's DNS (a loopback one too). */
	if (resolver)
		put_dns(&b, resolver);
	if (rules) {
		put_rules(&b, rules, host, n_host);
	} else {
		put_class(&b, NET_CLASS_RESERVED);
		put_host(&b, host, n_host);
		out->default_allow = true;
	}
	if (b.err) {
		egress_policy_free(out);
		return err_set(
			e, E2BIG,
			"egress: the rules and the host's %zu addresses make more than %d entries for the cgroup filter; use fewer rules",
			n_host, EGRESS_ENTRIES_MAX);
	}
	return 0;
}

void egress_policy_free(struct egress_policy *p)
{
	free(p->e);
	p->e = NULL;
	p->n = 0;
}

static bool entry_matches(const struct egress_entry *x, const struct net_addr *dst, uint8_t proto,
			  uint16_t port)
{
	if (!net_cidr_contains(&x->cidr, dst))
		return false;
	if (x->proto && x->proto != proto)
		return false;
	if (x->port_lo &&
	    ((proto != PROTO_TCP && proto != PROTO_UDP) || port < x->port_lo || port > x->port_hi))
		return false;
	return true;
}

bool egress_policy_allows(const struct egress_policy *p, const struct net_addr *dst, uint8_t proto,
			  uint16_t port)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct net_addr v4;

	/* A dual-stack socket's ::ffff:a.b.c.d is a connection to a.b.c.d. */
	if (dst->family == NET_AF6 && memcmp(dst->b, mapped, 12) == 0) {
		net_addr_set(&v4, NET_AF4, dst->b + 12);
		dst = &v4;
	}
	for (size_t i = 0; i < p->n; i++)
		if (entry_matches(&p->e[i], dst, proto, port))
			return p->e[i].allow;
	return p->default_allow;
}
