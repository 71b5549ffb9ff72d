/*
 * net_canned: what fuzz_net_filter and fuzz_virtio_mmio's filtered
 * virtio-net give the packet filter: a rule set picked by number (from
 * deny-all to allow-all, with host rules, DNS resolvers, both families,
 * deny beating allow; index modulo NET_CANNED, so every number picks
 * one), and a configuration picked by flag bits, on one guest
 * (52:54:00:12:34:56, 10.0.2.15, fd00::15).
 */
#ifndef KILN_FUZZ_NET_CANNED_H
#define KILN_FUZZ_NET_CANNED_H

#include <string.h>

#include "devices/net/net_filter.h"
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
	/* steered ports (issue 37) */
	"{\"outbound_internet\":true,\"http\":[{\"host\":\"*.example.com\"},{\"host\":\"a.test\",\"ports\":[8080]}],"
	"\"deny\":[{\"cidr\":\"1.1.1.1\"}],\"dns\":[\"10.0.2.3\"]}",
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

/* fuzz_filter_config's flags. */
#define FUZZ_NF_NO_IP4 1
#define FUZZ_NF_NO_IP6 2
#define FUZZ_NF_RATE 4        /* small token buckets: frames wait, or drop */
#define FUZZ_NF_HOST_DENY 8   /* 10.0.2.2 is the host (passt's gateway) */
#define FUZZ_NF_HOST_ADDRS 16 /* the host's own addresses: public, private, IPv6 */

static const uint8_t fuzz_guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static inline void fuzz_filter_config(struct net_filter_config *c, unsigned flags)
{
	static struct net_addr host[3]; /* copied by net_filter_create */

	memset(c, 0, sizeof(*c));
	c->hash_key[0] = 1;
	c->hash_key[1] = 2;
	memcpy(c->guest_mac, fuzz_guest_mac, 6);
	net_addr_parse("10.0.2.15", &c->ip4);
	net_addr_parse("fd00::15", &c->ip6);
	c->has_ip4 = !(flags & FUZZ_NF_NO_IP4);
	c->has_ip6 = !(flags & FUZZ_NF_NO_IP6);
	c->conntrack_capacity = 16;
	c->dns_capacity = 8;
	if (flags & FUZZ_NF_RATE) {
		c->tx_packets.size = 4;
		c->tx_packets.refill_ms = 1000;
		c->rx_bytes.size = 3000;
		c->rx_bytes.refill_ms = 100;
		c->rx_bytes.one_time_burst = 1500;
	}
	if (flags & FUZZ_NF_HOST_DENY) {
		net_cidr_parse("10.0.2.2/32", &c->host_deny[0], NULL);
		c->n_host_deny = 1;
	}
	if (flags & FUZZ_NF_HOST_ADDRS) {
		net_addr_parse("203.0.113.5", &host[0]);
		net_addr_parse("10.0.2.2", &host[1]);
		net_addr_parse("2606:4700::5", &host[2]);
		c->host_addrs = host;
		c->n_host_addrs = 3;
	}
}

#endif
