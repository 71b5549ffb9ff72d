/*
 * net_filter: kiln's stateful packet filter between a guest's virtio-net
 * device and its backend (TAP or passt). Every frame the guest sends goes
 * through net_filter_egress(), every frame toward the guest through
 * net_filter_ingress(); the answer is pass or drop.
 *
 * Pipeline (docs/architecture.md, "Packet filter"): rate limit (token
 * buckets, per direction; not for steered segments:
 * net_filter_rate_exempt) -> parse (pkt_parse.h: malformed frames drop) ->
 * layer 2 and anti-spoofing (source MAC, source IP of the guest) ->
 * infrastructure (ARP, NDP, DHCP; ICMP errors about a tracked flow) ->
 * later IP fragments (only after their first fragment passed) ->
 * connection tracking (conntrack.h: packets of a known flow pass both
 * ways) -> for the first packet of a new egress flow, the rules
 * (net_rules.h: deny beats allow, the always-deny set, host rules through
 * dns_bind.h) -> DNS: queries to the resolvers are remembered, their
 * answers bind names to addresses. Inbound packets that belong to no flow
 * (unsolicited) drop: nothing from outside opens a flow.
 *
 * Steering (issue 37, docs/architecture.md "Packet filter"): a guest SYN
 * opening a TCP flow to a port net_rules_steers() lists gets the verdict
 * NF_STEER after the layer-2 and source checks: only a matching deny rule
 * and the always-deny set (reserved ranges, cfg.host_deny) still drop it;
 * allow rules, outbound_internet and the private and host-address checks
 * do not apply, since the egress proxy decides those flows. The caller
 * hands NF_STEER frames to its TCP endpoint (tcp_term.h), which keeps the
 * steered flows in a table of its own: later segments of such a flow
 * (cfg.steered says which) are NF_STEER too, whatever the rules say by
 * then, so a rule change steers new flows only.
 *
 * Contract:
 *  - Pure and bounded: no syscalls, no allocation after net_filter_create()
 *    (rule sets are parsed, and so allocated, by the caller, outside the
 *    packet path); per-packet work is bounded by the frame length, one hash
 *    chain walk, CONNTRACK_SWEEP_STEP expiries and, for a new flow only, the rule
 *    count times DNS_BIND_PER_ADDR names.
 *  - Not thread-safe: the caller serialises all calls (virtio-net's device
 *    mutex), so net_filter_replace_rules() is atomic for the packet path:
 *    every packet is decided entirely under the old rules or the new.
 *  - Replacing the rules re-decides every tracked flow under the new rules
 *    and removes the flows they deny, so later packets of those flows drop
 *    in both directions; rule counters start from zero.
 *  - Time is the caller's monotonic clock in nanoseconds.
 *  - What passes is not modified: the filter never rewrites frames.
 *  - Anti-spoofing (docs/security.md, "Network confinement"): egress frames
 *    carry the guest's MAC (Ethernet source, ARP sender, NDP link-layer
 *    options); IPv4 packets come from the guest's ip4, or from 0.0.0.0
 *    for DHCP and ARP probes; IPv6 packets from the guest's ip6, or, for
 *    neighbour discovery, MLD and DHCPv6 only, from :: or the link-local
 *    address derived from the MAC (EUI-64, RFC 4291 appendix A). Without
 *    an ip4/ip6 nothing but that infrastructure leaves in that family; a
 *    neighbour advertisement speaks only for the guest's own addresses.
 *  - The host's own addresses (cfg.host_addrs) are a class of their own:
 *    only a rule naming one of them opens it (net_rules.h, NET_DENY_HOST).
 */
#ifndef KILN_NET_FILTER_H
#define KILN_NET_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "devices/net/dns_bind.h"
#include "lib/base/err.h"
#include "lib/netrules/net_addr.h"
#include "lib/netrules/net_host_addrs.h"
#include "devices/net/conntrack.h"
#include "lib/netrules/net_rules.h"
#include "devices/net/pkt_parse.h"
#include "devices/net/rate_limit.h"

enum nf_dir {
	NF_EGRESS = CONNTRACK_EGRESS,   /* guest -> backend */
	NF_INGRESS = CONNTRACK_INGRESS, /* backend -> guest */
};

enum nf_verdict {
	NF_PASS,
	NF_DROP,
	NF_STEER, /* to the caller's TCP endpoint, then the egress proxy */
};

/* Why: every packet counts under exactly one reason. */
enum nf_reason {
	NF_PASS_NEW,      /* first packet of a flow a rule allowed */
	NF_PASS_FLOW,     /* a packet of a tracked flow */
	NF_PASS_RELATED,  /* an ICMP error about a tracked flow */
	NF_PASS_FRAGMENT, /* a later fragment of a datagram whose first fragment passed */
	NF_PASS_DNS,      /* first packet of a flow to a resolver of `dns`, port 53 */
	NF_PASS_ARP,
	NF_PASS_NDP, /* neighbour/router discovery, MLD */
	NF_PASS_DHCP,
	NF_DROP_RATE,        /* over the rate limit */
	NF_DROP_MALFORMED,   /* pkt_parse refused it (see nf_decision.parse_error) */
	NF_DROP_L2,          /* VLAN, other ethertypes, a frame not for the guest's MAC */
	NF_DROP_SPOOF,       /* source MAC or IP not the guest's */
	NF_DROP_PROTO,       /* a protocol or ICMP type the filter does not pass */
	NF_DROP_RULE,        /* a deny rule */
	NF_DROP_RESERVED,    /* always-deny: loopback, link-local, metadata, multicast */
	NF_DROP_PRIVATE,     /* always-deny: a private range no CIDR rule allowed */
	NF_DROP_DEFAULT,     /* no rule allowed it */
	NF_DROP_UNSOLICITED, /* inbound, and no flow it belongs to */
	NF_DROP_TCP_STATE,   /* a TCP packet other than SYN opening a flow */
	NF_DROP_TABLE_FULL,  /* the connection-tracking table is full */
	NF_DROP_FRAGMENT,    /* a later fragment whose first fragment did not pass */
	NF_DROP_HOST,        /* one of the host's own addresses, and no rule named it */
	NF_STEER_NEW,        /* a SYN to a port `http` rules steer */
	NF_STEER_FLOW,       /* a later segment of a steered flow (cfg.steered) */
	NF_REASON_COUNT
};

struct nf_decision {
	enum nf_verdict verdict;
	enum nf_reason reason;
	struct net_rule_ref rule; /* the rule that decided, NET_REF_NONE if none */
	int parse_error;          /* enum pkt_error for NF_DROP_MALFORMED */
};

struct nf_counters {
	uint64_t packets[2][NF_REASON_COUNT]; /* [enum nf_dir][reason] */
	uint64_t bytes[2][NF_REASON_COUNT];
	uint64_t flows_cut;      /* flows removed by rule replacement */
	uint64_t log_suppressed; /* denied-flow log lines the log's rate limit dropped */
};

/* One line of the denied-flow log. */
struct nf_log_entry {
	enum nf_dir dir;
	enum nf_reason reason;
	struct net_rule_ref rule;
	bool cut; /* an established flow cut by new rules */
	uint8_t proto;
	struct net_addr src, dst;
	uint16_t sport, dport; /* or the ICMP type in sport */
	uint64_t suppressed;   /* lines dropped by the rate limit since the last one */
};

typedef void (*nf_log_fn)(void *ctx, const struct nf_log_entry *e);
/* The guest's TCP flow k is a steered one the caller's endpoint holds. */
typedef bool (*nf_steered_fn)(void *ctx, const struct conntrack_key *k);

#define NF_HOST_DENY_MAX 4
#define NF_HOST_ADDRS_MAX NET_HOST_ADDRS_MAX

struct net_filter_config {
	uint8_t guest_mac[6];
	/* The guest's addresses, when kiln assigned them: egress must come from
	 * them (NDP and DHCP may also use the unspecified address and the
	 * link-local one derived from guest_mac). Without one, only that
	 * infrastructure leaves in its family. */
	bool has_ip4, has_ip6;
	struct net_addr ip4, ip6;
	uint32_t conntrack_capacity; /* 0: CONNTRACK_DEFAULT_CAPACITY */
	uint32_t dns_capacity;       /* 0: DNS_DEFAULT_CAPACITY */
	uint64_t hash_key[2];        /* random, from the caller (getrandom) */
	/* Token buckets (size 0: unlimited). tx = guest to network. */
	struct rate_bucket_cfg tx_bytes, tx_packets, rx_bytes, rx_packets;
	/* Addresses that reach the host itself beyond the always-deny set (passt
	 * maps its gateway address to the host's loopback): never allowed. */
	struct net_cidr host_deny[NF_HOST_DENY_MAX];
	size_t n_host_deny;
	/* The host's own addresses (net_host_addrs.h finds them), copied at
	 * create: reached only by a rule naming one (net_rules.h). */
	const struct net_addr *host_addrs;
	size_t n_host_addrs; /* at most NF_HOST_ADDRS_MAX */
	/* Denied-flow log: at most log_burst lines, refilled at log_per_s. The
	 * callback runs inside the filter call (the device thread, under its
	 * lock): it must not block or call back into the filter. */
	nf_log_fn log;
	void *log_ctx;
	uint32_t log_per_s, log_burst; /* 0, 0: 10 per second, bursts of 20 */
	/* Steered flows (NULL: none live; SYNs to steered ports still get
	 * NF_STEER). Runs inside the filter call, like log. */
	nf_steered_fn steered;
	void *steered_ctx;
};

struct net_filter;

/*
 * Create a filter. rules (may be NULL: deny everything but the
 * infrastructure) is owned by the filter from now on, also on failure.
 * 0, or -EINVAL (bad config, message in e) or -ENOMEM.
 */
int net_filter_create(const struct net_filter_config *cfg, struct net_rules *rules, uint64_t now_ns,
		      struct net_filter **out, struct err *e);
void net_filter_destroy(struct net_filter *f);

/* Decide one frame. d (may be NULL) says why. */
enum nf_verdict net_filter_egress(struct net_filter *f, const uint8_t *frame, size_t len,
				  uint64_t now_ns, struct nf_decision *d);
enum nf_verdict net_filter_ingress(struct net_filter *f, const uint8_t *frame, size_t len,
				   uint64_t now_ns, struct nf_decision *d);

/*
 * Nanoseconds until a frame of len bytes in dir would pass the rate limit
 * (0: now). A device that prefers backpressure to drops (Firecracker's
 * behaviour) stops taking frames from the guest until then, and only then
 * calls net_filter_egress().
 */
uint64_t net_filter_rate_wait_ns(struct net_filter *f, enum nf_dir dir, size_t len,
				 uint64_t now_ns);

/*
 * The guest's frame takes no rate tokens (and so never waits for any):
 * a TCP segment for the steering endpoint (a SYN to a port the rules
 * steer, or a segment of a flow cfg.steered holds), with an endpoint.
 * Its own windows pace those flows, and the backend never sees them.
 */
bool net_filter_rate_exempt(struct net_filter *f, const uint8_t *frame, size_t len,
			    uint64_t now_ns);

/*
 * Replace the rule set (owned by the filter from now on; NULL denies
 * all). Tracked flows the new rules deny are removed (and logged as cut).
 * Returns how many were cut.
 */
size_t net_filter_replace_rules(struct net_filter *f, struct net_rules *rules, uint64_t now_ns);

/* The current rule set (counters included); valid until the next replacement. */
const struct net_rules *net_filter_rules(const struct net_filter *f);
void net_filter_counters(const struct net_filter *f, struct nf_counters *out);
size_t net_filter_flow_count(const struct net_filter *f);

/* Who says which TCP flows are steered (cfg.steered), once the endpoint exists. */
void net_filter_set_steered(struct net_filter *f, nf_steered_fn fn, void *ctx);

/*
 * The guest's MAC is now mac (and so its IPv6 link-local address): a
 * restored device takes the one the guest had when the snapshot was
 * taken, whatever the new VM was given, and the guest goes on using it.
 */
void net_filter_set_guest_mac(struct net_filter *f, const uint8_t mac[6]);

/*
 * The guest's live TCP flows that carry data (established, or closing: one
 * side sent FIN), at most max of them into out: how many. A snapshot keeps
 * them so the restored device can make the guest reset them
 * (tcp_reset.h): the host side of every one ends with the old VMM.
 */
size_t net_filter_tcp_flows(struct net_filter *f, struct conntrack_key *out, size_t max,
			    uint64_t now_ns);

/*
 * For GET /v1/sandboxes/{id}/firewall: {"rules": <net_rules_to_json>,
 * "counters": {"rules": <net_rules_counters_json>, "egress": {reason:
 * {"packets","bytes"}}, "ingress": {...}, "flows": N, "flows_cut": N,
 * "dns_bindings": N, "log_suppressed": N}}. NULL out of memory.
 */
json_t *net_filter_to_json(const struct net_filter *f);

/*
 * The first of the names the guest resolved to a (live bindings first,
 * then expired ones) into out (NET_HOST_MAX + 1 bytes): true, or false
 * with out "" when it resolved none. For the PROXY header's AUTHORITY.
 */
bool net_filter_name_of(struct net_filter *f, const struct net_addr *a, uint64_t now_ns, char *out);
/* All of them (live bindings, else expired ones), the first as above,
 * at most cap: their count. For the PROXY header's AUTHORITY and the
 * other names of one destination (KILN_NAMES). */
size_t net_filter_names_of(struct net_filter *f, const struct net_addr *a, uint64_t now_ns,
			   char (*out)[NET_HOST_MAX + 1], size_t cap);

const char *nf_reason_name(enum nf_reason r);
/* "egress drop default tcp 10.0.2.15:40000 -> 203.0.113.9:443" (+ rule, cut, suppressed). */
void nf_log_format(const struct nf_log_entry *e, char *buf, size_t cap);

#endif
