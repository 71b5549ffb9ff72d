/*
 * net_rules: a sandbox's firewall rule set, parsed from the JSON of
 * `GET/PUT /v1/sandboxes/{id}/firewall`, and the decision for a new flow.
 *
 *   {"outbound_internet": false,
 *    "allow": [{"cidr": "10.0.0.0/8", "proto": "tcp", "ports": "80-443"},
 *              {"host": "*.example.com", "ports": 443}],
 *    "deny":  [{"cidr": "203.0.113.7"}],
 *    "dns":   ["10.0.2.3"]}
 *
 * Every field is optional; {} denies everything but the infrastructure
 * (ARP, NDP, DHCP). A rule has exactly one of `cidr` (IPv4 or IPv6 block, a
 * bare address is a /32 or /128) and `host` (a DNS name, or "*.suffix" for
 * any name below suffix but not suffix itself), and optionally `proto`
 * ("tcp", "udp", "icmp", "icmpv6", "any": the default) and `ports` (one
 * port or "LO-HI", 1..65535, as a string or an integer; only with tcp, udp
 * or any, where it means tcp and udp). `dns` lists the resolvers the guest
 * may query (UDP and TCP port 53) whose answers bind host rules. `http`
 * is the HTTP(S) egress rules (lib/netrules/http_rules.h: the egress
 * proxy decides them): guest TCP to a port an `http` rule lists (80 and
 * 443 when it lists none) is steered to the proxy (net_rules_steers),
 * before any allow or deny rule, and the names those rules match are
 * bound from DNS answers like a host rule's.
 *
 * Contract:
 *  - Parsing is strict and every error names its field, for a 400:
 *    `allow[2].ports "80-": not a port or a range LO-HI of 1..65535`.
 *    The error's code says whether a field is unknown, missing or bad.
 *  - At most NET_RULES_MAX rules in each list, NET_DNS_MAX resolvers.
 *  - `dns` entries are rule targets like any other: one inside a reserved
 *    range (loopback, link-local and metadata, IPv4-mapped or NAT64 forms
 *    of them, multicast, ...) is refused at parse, naming the entry.
 *  - Decision for a new flow (net_rules_decide): a matching deny rule wins;
 *    then a reserved destination (net_addr.h) is denied whatever allows
 *    it, a resolver in `dns` included; then TCP/UDP port 53 of a resolver
 *    in `dns` is allowed (also a private address or one of the host's:
 *    the entry names it); then one of the host's own addresses
 *    (net_flow_dst.host_addrs) is denied unless a CIDR allow rule names
 *    that one address (a bare address, /32 or /128: NET_DENY_HOST; no
 *    wider block, no host rule, no `outbound_internet`); a private one is
 *    allowed only by a matching CIDR allow rule lying inside a private
 *    range (so `outbound_internet` and 0.0.0.0/0 never open the host's
 *    LAN, and host rules never do: DNS rebinding); any other destination
 *    by the first matching allow rule, then by `outbound_internet`; else
 *    the default deny.
 *  - A host rule matches a destination when the caller says the guest
 *    resolved one of the names bound to it (dns_bind.h).
 *  - Counters live in the rule set, so replacing the rules starts them
 *    again; the set is otherwise read-only after parsing.
 */
#ifndef KILN_NET_RULES_H
#define KILN_NET_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/netrules/net_addr.h"
#include "lib/base/err.h"

#define NET_RULES_MAX 256
#define NET_DNS_MAX 4
#define NET_HOST_MAX 253 /* longest DNS name in text form */
#define NET_RULES_TEXT_MAX (256 * 1024)

enum net_rule_action {
	NET_RULE_ALLOW,
	NET_RULE_DENY,
};

struct net_rule_counters {
	uint64_t flows;   /* new flows this rule decided */
	uint64_t packets; /* packets of those flows (both ways), or packets it denied */
	uint64_t bytes;
};

struct net_rule {
	uint8_t proto;             /* 0 any, else an IP protocol number */
	uint16_t port_lo, port_hi; /* 0, 0: every port */
	bool is_host;
	bool wildcard;      /* host "*.suffix" */
	bool lifts_private; /* cidr lies inside a private range */
	struct net_cidr cidr;
	char host[NET_HOST_MAX + 1]; /* lower case, without "*." */
	struct net_rule_counters ctr;
};

/* Which rule decided (for counters and logs). */
enum net_ref_list {
	NET_REF_NONE, /* the default deny, or the always-deny set */
	NET_REF_ALLOW,
	NET_REF_DENY,
	NET_REF_INTERNET, /* outbound_internet */
	NET_REF_DNS,      /* a resolver in `dns`, port 53 */
	NET_REF_INFRA,    /* ARP, NDP, DHCP */
};

struct net_rule_ref {
	uint8_t list; /* enum net_ref_list */
	uint16_t index;
};

struct http_rules;

struct net_rules {
	bool outbound_internet;
	struct http_rules *http; /* NULL: no "http" key */
	size_t n_allow, n_deny, n_dns;
	struct net_rule *allow, *deny;
	struct net_addr dns[NET_DNS_MAX];
	struct net_rule_counters internet_ctr, dns_ctr;
};

enum net_rules_ecode {
	NET_RULES_E_BAD_JSON = 1,
	NET_RULES_E_UNKNOWN_FIELD,
	NET_RULES_E_MISSING_FIELD,
	NET_RULES_E_BAD_FIELD,
	NET_RULES_E_NOMEM,
};

struct net_rules_err {
	enum net_rules_ecode code;
	char msg[ERR_MSG_MAX];
};

/* Fill e (when not NULL) with "firewall: " and the message; -ENOMEM for
 * NET_RULES_E_NOMEM, else -EINVAL. Every parser of the firewall JSON
 * words its errors through it. */
int net_rules_fail(struct net_rules_err *e, enum net_rules_ecode code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Parse a rule set; *out is freed with net_rules_free. 0, -EINVAL or -ENOMEM (with e filled). */
int net_rules_parse(const json_t *j, struct net_rules **out, struct net_rules_err *e);
int net_rules_parse_text(const char *text, size_t len, struct net_rules **out,
			 struct net_rules_err *e);
/* JSON text of at most max bytes, strictly loaded (json_strict_loadb), for
 * the parsers of the firewall's parts; NULL with e filled ("<what> is
 * larger than N bytes", "invalid JSON at line L column C: ..."). */
json_t *net_rules_load(const char *text, size_t len, size_t max, const char *what,
		       struct net_rules_err *e);
/* The rule set as JSON (what PUT would take back), or NULL out of memory. */
json_t *net_rules_to_json(const struct net_rules *r);
/* The counters: {"allow":[{flows,packets,bytes}...],"deny":[...],"outbound_internet":{...},"dns":{...}}. */
json_t *net_rules_counters_json(const struct net_rules *r);
void net_rules_free(struct net_rules *r);

/* A new flow's destination, as the filter sees its first packet. */
struct net_flow_dst {
	const struct net_addr *addr;
	uint8_t proto;
	uint16_t port; /* TCP/UDP destination port, 0 otherwise */
	/* Names the guest resolved to addr through an allowed resolver (dns_bind). */
	const char *const *names;
	size_t n_names;
	/* The host's own addresses (every address of its interfaces, found by
	 * the caller): reached only through a rule that names one of them. */
	const struct net_addr *host_addrs;
	size_t n_host_addrs;
};

enum net_decision {
	NET_ALLOW,
	NET_DENY_RULE,     /* a deny rule matched */
	NET_DENY_RESERVED, /* always-deny: reserved destination */
	NET_DENY_PRIVATE,  /* always-deny: private destination no CIDR rule lifted */
	NET_DENY_HOST,     /* one of the host's own addresses no rule named */
	NET_DENY_DEFAULT,  /* nothing allowed it */
};

/* Decide a new flow. rules may be NULL (no rules: deny). */
enum net_decision net_rules_decide(const struct net_rules *r, const struct net_flow_dst *d,
				   struct net_rule_ref *ref);

/* The counters of a reference, or NULL (NET_REF_NONE, NET_REF_INFRA, out of range). */
struct net_rule_counters *net_rules_counters(struct net_rules *r, struct net_rule_ref ref);

/* a is one of the n addresses of list. */
bool net_addr_in_list(const struct net_addr *a, const struct net_addr *list, size_t n);

/* addr is a resolver of the set. */
bool net_rules_is_resolver(const struct net_rules *r, const struct net_addr *addr);
/* Some host rule (allow or deny) or `http` rule matches name: its answers
 * are worth binding. */
bool net_rules_wants_name(const struct net_rules *r, const char *name);
/* Guest TCP to port goes to the egress proxy: some `http` rule lists it
 * (80 and 443 for a rule that lists none). */
bool net_rules_steers(const struct net_rules *r, uint16_t port);
/*
 * A host rule's name: a DNS name in text form (RFC 1035 2.3.1, plus '_'),
 * lower-cased into out (NET_HOST_MAX + 1 bytes), one trailing dot dropped,
 * optionally "*." first (*wildcard, not copied). 0 or -EINVAL.
 */
int net_host_parse(const char *s, char *out, bool *wildcard);
/* What net_host_parse takes, for the message of a refused host. */
#define NET_HOST_FORM \
	"not a DNS name or \"*.suffix\" (labels of 1..63 letters, digits, '-' or '_'; 253 bytes at most)"
/* Rule `rule` (a host rule) matches the lower-case name: the same name, or
 * for "*.suffix" a name of one or more labels more ending in ".suffix"
 * (so "*.example.com" matches a.example.com and a.b.example.com, never
 * example.com or badexample.com). */
bool net_rule_host_matches(const struct net_rule *rule, const char *name);

/* Rule `rule` is a CIDR rule for exactly one address (a bare address, /32
 * or /128): the only kind that opens one of the host's own addresses. */
bool net_rule_names_one(const struct net_rule *rule);

/* "tcp", "udp", "icmp", "icmpv6", "any"; "proto 47" for others. */
const char *net_proto_name(uint8_t proto, char *buf, size_t cap);

#endif
