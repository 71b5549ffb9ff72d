/*
 * net_canned: the rule sets a fuzz target picks by number (fuzz_net_filter,
 * and fuzz_virtio_mmio's filtered virtio-net): from deny-all to
 * allow-all, with host rules, DNS resolvers, both families, deny beating
 * allow. Index modulo NET_CANNED, so every number picks one. They match
 * the guest addresses both targets give the filter (10.0.2.15, fd00::15).
 */
#ifndef KILN_FUZZ_NET_CANNED_H
#define KILN_FUZZ_NET_CANNED_H

#include <string.h>

#include "lib/netrules/net_rules.h"
#include "fuzz.h"

static const char *const net_canned[] = {
	"{}",
	"{\"outbound_internet\":true}",
	"{\"allow\":[{\"cidr\":\"93.184.216.0/24\",\"proto\":\"tcp\",\"ports\":443}]}",
	"{\"allow\":[{\"host\":\"api.github.com\",\"proto\":\"tcp\",\"ports\":443},"
	"{\"host\":\"*.example.com\"}],\"dns\":[\"10.0.2.3\"]}",
	"{\"outbound_internet\":true,\"allow\":[{\"cidr\":\"0.0.0.0/0\"},{\"cidr\":\"::/0\"},"
	"{\"cidr\":\"192.168.7.0/24\",\"ports\":22}],\"deny\":[{\"cidr\":\"1.1.1.1\"},{\"host\":\"*.evil.com\"}]}",
	"{\"allow\":[{\"cidr\":\"2606:4700::/32\",\"proto\":\"udp\"},{\"cidr\":\"9.9.9.9\",\"proto\":\"udp\"}],"
	"\"dns\":[\"10.0.2.3\",\"fd00::3\"]}",
	"{\"outbound_internet\":true,\"allow\":[{\"host\":\"*.github.com\"},{\"cidr\":\"10.0.0.0/8\"}],"
	"\"dns\":[\"10.0.2.3\"]}",
	"{\"allow\":[{\"cidr\":\"10.0.2.2\",\"proto\":\"icmp\"},{\"cidr\":\"8.8.8.8\",\"ports\":53}]}",
};
#define NET_CANNED (sizeof(net_canned) / sizeof(net_canned[0]))

/* A rule set from JSON text, or NULL when the parser refuses it. */
static inline struct net_rules *fuzz_rules_text(const char *t, size_t n)
{
	struct net_rules *r = NULL;
	struct net_rules_err e = { 0 };

	if (net_rules_parse_text(t, n, &r, &e) < 0)
		return NULL;
	return r;
}

static inline struct net_rules *fuzz_rules_canned(unsigned i)
{
	const char *t = net_canned[i % NET_CANNED];
	struct net_rules *r = fuzz_rules_text(t, strlen(t));

	FUZZ_ASSERT(r); /* the canned sets are all valid */
	return r;
}

#endif
