#include "devices/net/net_filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ICMP types (RFC 792, RFC 4443, RFC 4861, RFC 3810). */
#define ICMP4_ECHO_REPLY 0
#define ICMP4_UNREACH 3
#define ICMP4_ECHO 8
#define ICMP4_TIME_EXCEEDED 11
#define ICMP4_PARAM_PROBLEM 12
#define ICMP6_UNREACH 1
#define ICMP6_TOO_BIG 2
#define ICMP6_TIME_EXCEEDED 3
#define ICMP6_PARAM_PROBLEM 4
#define ICMP6_ECHO 128
#define ICMP6_ECHO_REPLY 129
#define ICMP6_MLD_QUERY 130
#define ICMP6_MLD_REPORT 131
#define ICMP6_MLD_DONE 132
#define ICMP6_RS 133
#define ICMP6_RA 134
#define ICMP6_NS 135
#define ICMP6_NA 136
#define ICMP6_MLD2_REPORT 143

struct net_filter {
	struct net_filter_config cfg;
	struct net_addr *host_addrs; /* cfg.host_addrs points here */
	struct net_addr ip6_ll;      /* fe80:: + the EUI-64 of guest_mac */
	struct net_rules *rules;
	struct conntrack_table ct;
	struct dns_bind dns;
	struct rate_limiter rl[2];
	struct rate_bucket log_rl;
	uint64_t log_pending_suppressed;
	struct nf_counters ctr;
};

/* The modified EUI-64 link-local address of mac (RFC 4291 2.5.1, appendix A). */
static void link_local_of(const uint8_t mac[6], struct net_addr *a)
{
	uint8_t b[16] = { 0xfe, 0x80 };

	b[8] = mac[0] ^ 0x02;
	b[9] = mac[1];
	b[10] = mac[2];
	b[11] = 0xff;
	b[12] = 0xfe;
	b[13] = mac[3];
	b[14] = mac[4];
	b[15] = mac[5];
	net_addr_set(a, NET_AF6, b);
}

int net_filter_create(const struct net_filter_config *cfg, struct net_rules *rules, uint64_t now_ns,
		      struct net_filter **out, struct err *e)
{
	struct rate_bucket_cfg log_cfg = { 0 };
	struct net_filter *f;
	int rc;

	*out = NULL;
	if ((rc = rate_bucket_cfg_check(&cfg->tx_bytes, "tx bytes", e)) < 0 ||
	    (rc = rate_bucket_cfg_check(&cfg->tx_packets, "tx packets", e)) < 0 ||
	    (rc = rate_bucket_cfg_check(&cfg->rx_bytes, "rx bytes", e)) < 0 ||
	    (rc = rate_bucket_cfg_check(&cfg->rx_packets, "rx packets", e)) < 0)
		goto fail;
	if (cfg->conntrack_capacity > CONNTRACK_MAX_CAPACITY ||
	    cfg->dns_capacity > DNS_MAX_CAPACITY || cfg->n_host_deny > NF_HOST_DENY_MAX ||
	    cfg->n_host_addrs > NF_HOST_ADDRS_MAX) {
		rc = err_set(e, EINVAL,
			     "packet filter: at most %u tracked flows, %u DNS bindings, %d denied host blocks and %d host addresses",
			     CONNTRACK_MAX_CAPACITY, DNS_MAX_CAPACITY, NF_HOST_DENY_MAX,
			     NF_HOST_ADDRS_MAX);
		goto fail;
	}
	if ((cfg->has_ip4 && cfg->ip4.family != NET_AF4) ||
	    (cfg->has_ip6 && cfg->ip6.family != NET_AF6)) {
		rc = err_set(e, EINVAL, "packet filter: the guest's ip4/ip6 have the wrong family");
		goto fail;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		rc = err_set(e, ENOMEM, "packet filter: out of memory");
		goto fail;
	}
	f->cfg = *cfg;
	f->cfg.host_addrs = NULL;
	f->cfg.n_host_addrs = 0;
	if (cfg->n_host_addrs) {
		f->host_addrs = calloc(cfg->n_host_addrs, sizeof(*f->host_addrs));
		if (!f->host_addrs) {
			net_filter_destroy(f);
			rc = err_set(e, ENOMEM, "packet filter: out of memory");
			goto fail;
		}
		memcpy(f->host_addrs, cfg->host_addrs, cfg->n_host_addrs * sizeof(*f->host_addrs));
		f->cfg.host_addrs = f->host_addrs;
		f->cfg.n_host_addrs = cfg->n_host_addrs;
	}
	link_local_of(cfg->guest_mac, &f->ip6_ll);
	if (!f->cfg.log_per_s || !f->cfg.log_burst) {
		f->cfg.log_per_s = 10;
		f->cfg.log_burst = 20;
	}
	if ((rc = conntrack_init(&f->ct, cfg->conntrack_capacity, cfg->hash_key)) < 0 ||
	    (rc = dns_bind_init(&f->dns, cfg->dns_capacity, cfg->hash_key)) < 0) {
		net_filter_destroy(f);
		rc = err_set(e, -rc, "packet filter: cannot allocate its tables");
		goto fail;
	}
	rate_limiter_init(&f->rl[NF_EGRESS], &cfg->tx_bytes, &cfg->tx_packets, now_ns);
	rate_limiter_init(&f->rl[NF_INGRESS], &cfg->rx_bytes, &cfg->rx_packets, now_ns);
	/* log_burst lines, refilled at log_per_s. */
	log_cfg.size = f->cfg.log_burst;
	log_cfg.refill_ms = (uint64_t)f->cfg.log_burst * 1000 / f->cfg.log_per_s;
	if (!log_cfg.refill_ms)
		log_cfg.refill_ms = 1;
	rate_bucket_init(&f->log_rl, &log_cfg, now_ns);
	f->rules = rules;
	*out = f;
	return 0;
fail:
	net_rules_free(rules);
	return rc;
}

void net_filter_destroy(struct net_filter *f)
{
	if (!f)
		return;
	conntrack_free(&f->ct);
	dns_bind_free(&f->dns);
	net_rules_free(f->rules);
	free(f->host_addrs);
	free(f);
}

const char *nf_reason_name(enum nf_reason r)
{
	static const char *const names[NF_REASON_COUNT] = {
		[NF_PASS_NEW] = "pass_new",
		[NF_PASS_FLOW] = "pass_flow",
		[NF_PASS_RELATED] = "pass_related",
		[NF_PASS_FRAGMENT] = "pass_fragment",
		[NF_PASS_DNS] = "pass_dns",
		[NF_PASS_ARP] = "pass_arp",
		[NF_PASS_NDP] = "pass_ndp",
		[NF_PASS_DHCP] = "pass_dhcp",
		[NF_DROP_RATE] = "drop_rate",
		[NF_DROP_MALFORMED] = "drop_malformed",
		[NF_DROP_L2] = "drop_l2",
		[NF_DROP_SPOOF] = "drop_spoof",
		[NF_DROP_PROTO] = "drop_proto",
		[NF_DROP_RULE] = "drop_rule",
		[NF_DROP_RESERVED] = "drop_reserved",
		[NF_DROP_PRIVATE] = "drop_private",
		[NF_DROP_DEFAULT] = "drop_default",
		[NF_DROP_UNSOLICITED] = "drop_unsolicited",
		[NF_DROP_TCP_STATE] = "drop_tcp_state",
		[NF_DROP_TABLE_FULL] = "drop_table_full",
		[NF_DROP_FRAGMENT] = "drop_fragment",
		[NF_DROP_HOST] = "drop_host",
		[NF_STEER_NEW] = "steer_new",
		[NF_STEER_FLOW] = "steer_flow",
	};

	return (unsigned)r < NF_REASON_COUNT ? names[r] : "unknown";
}

static void rule_ref_format(struct net_rule_ref ref, char *buf, size_t cap)
{
	switch (ref.list) {
	case NET_REF_ALLOW:
		snprintf(buf, cap, " rule allow[%u]", ref.index);
		break;
	case NET_REF_DENY:
		snprintf(buf, cap, " rule deny[%u]", ref.index);
		break;
	case NET_REF_INTERNET:
		snprintf(buf, cap, " rule outbound_internet");
		break;
	case NET_REF_DNS:
		snprintf(buf, cap, " rule dns");
		break;
	default:
		buf[0] = '\0';
	}
}

static void endpoint(const struct net_addr *a, uint16_t port, bool with_port, char *buf, size_t cap)
{
	char t[NET_ADDR_STRLEN];

	net_addr_format(a, t, sizeof(t));
	if (!with_port)
		snprintf(buf, cap, "%s", t);
	else if (a->family == NET_AF6)
		snprintf(buf, cap, "[%s]:%u", t, port);
	else
		snprintf(buf, cap, "%s:%u", t, port);
}

void nf_log_format(const struct nf_log_entry *e, char *buf, size_t cap)
{
	char src[NET_ADDR_STRLEN + 8], dst[NET_ADDR_STRLEN + 8], rule[40], pb[16], sup[40] = "";
	bool ports = e->proto == PKT_PROTO_TCP || e->proto == PKT_PROTO_UDP;

	endpoint(&e->src, e->sport, ports, src, sizeof(src));
	endpoint(&e->dst, e->dport, ports, dst, sizeof(dst));
	rule_ref_format(e->rule, rule, sizeof(rule));
	if (e->suppressed)
		snprintf(sup, sizeof(sup), " (%llu more not logged)",
			 (unsigned long long)e->suppressed);
	snprintf(buf, cap, "%s %s %s %s -> %s%s%s%s", e->dir == NF_EGRESS ? "egress" : "ingress",
		 e->cut ? "cut" : nf_reason_name(e->reason),
		 net_proto_name(e->proto, pb, sizeof(pb)), src, dst, rule,
		 e->cut ? " (established flow denied by new rules)" : "", sup);
}

static void log_flow(struct net_filter *f, struct nf_log_entry *le, uint64_t now_ns)
{
	if (!f->cfg.log)
		return;
	if (!rate_bucket_take(&f->log_rl, 1, now_ns)) {
		f->ctr.log_suppressed++;
		f->log_pending_suppressed++;
		return;
	}
	le->suppressed = f->log_pending_suppressed;
	f->log_pending_suppressed = 0;
	f->cfg.log(f->cfg.log_ctx, le);
}

/* Reasons worth a line in the denied-flow log: a flow the guest tried to open and could not. */
static bool loggable(enum nf_reason r)
{
	return r == NF_DROP_SPOOF || r == NF_DROP_RULE || r == NF_DROP_RESERVED ||
		r == NF_DROP_PRIVATE || r == NF_DROP_HOST || r == NF_DROP_DEFAULT ||
		r == NF_DROP_TABLE_FULL;
}

static void count_rule(struct net_filter *f, struct net_rule_ref ref, size_t len, bool new_flow)
{
	struct net_rule_counters *c = net_rules_counters(f->rules, ref);

	if (!c)
		return;
	c->packets++;
	c->bytes += len;
	if (new_flow)
		c->flows++;
}

static enum nf_verdict finish(struct net_filter *f, enum nf_dir dir, size_t len,
			      const struct pkt *p, enum nf_reason reason, struct net_rule_ref ref,
			      uint64_t now_ns, struct nf_decision *d)
{
	enum nf_verdict v = reason >= NF_STEER_NEW ? NF_STEER
		: reason < NF_DROP_RATE            ? NF_PASS
						   : NF_DROP;

	f->ctr.packets[dir][reason]++;
	f->ctr.bytes[dir][reason] += len;
	d->verdict = v;
	d->reason = reason;
	d->rule = ref;
	if (v == NF_DROP && p && loggable(reason)) {
		struct nf_log_entry le = {
			.dir = dir,
			.reason = reason,
			.rule = ref,
			.proto = p->proto,
			.src = p->src,
			.dst = p->dst,
			.sport = p->sport,
			.dport = p->dport,
		};

		if (p->l3 == PKT_L3_ARP)
			le.proto = 0;
		log_flow(f, &le, now_ns);
	}
	return v;
}

static const struct net_rule_ref no_rule = { NET_REF_NONE, 0 };
static const struct net_rule_ref infra_rule = { NET_REF_INFRA, 0 };

static uint8_t icmp_proto(const struct pkt *p)
{
	return p->l3 == PKT_L3_IP4 ? PKT_PROTO_ICMP : PKT_PROTO_ICMP6;
}

static bool is_icmp_error(const struct pkt *p)
{
	if (p->proto != icmp_proto(p))
		return false;
	if (p->l3 == PKT_L3_IP4)
		return p->icmp_type == ICMP4_UNREACH || p->icmp_type == ICMP4_TIME_EXCEEDED ||
			p->icmp_type == ICMP4_PARAM_PROBLEM;
	return p->icmp_type >= ICMP6_UNREACH && p->icmp_type <= ICMP6_PARAM_PROBLEM;
}

static bool is_echo(const struct pkt *p, bool request)
{
	if (p->proto != icmp_proto(p))
		return false;
	if (p->l3 == PKT_L3_IP4)
		return p->icmp_type == (request ? ICMP4_ECHO : ICMP4_ECHO_REPLY);
	return p->icmp_type == (request ? ICMP6_ECHO : ICMP6_ECHO_REPLY);
}

static bool is_ff02(const struct net_addr *a)
{
	return a->family == NET_AF6 && a->b[0] == 0xff && a->b[1] == 0x02;
}

/*
 * A flow's key. `guest_is_src`: the packet goes from the guest (egress,
 * or a quoted packet the guest sent). ICMP echo: the identifier is the
 * guest "port", the remote port 0.
 */
static void flow_key(const struct pkt *p, bool guest_is_src, struct conntrack_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = p->src.family;
	k->proto = p->proto;
	memcpy(k->guest, guest_is_src ? p->src.b : p->dst.b, 16);
	memcpy(k->remote, guest_is_src ? p->dst.b : p->src.b, 16);
	if (p->proto == PKT_PROTO_TCP || p->proto == PKT_PROTO_UDP) {
		k->gport = guest_is_src ? p->sport : p->dport;
		k->rport = guest_is_src ? p->dport : p->sport;
	} else {
		k->gport = p->icmp_id;
	}
}

/* Infrastructure the guest's network needs, egress: a reason, or NF_REASON_COUNT. */
static enum nf_reason infra_egress(const struct pkt *p)
{
	static const uint8_t dhcp6_servers[16] = { 0xff,
						   0x02, [13] = 0x01, [15] = 0x02 }; /* ff02::1:2 */

	if (p->proto == PKT_PROTO_UDP) {
		if (p->l3 == PKT_L3_IP4 && p->sport == 68 && p->dport == 67 &&
		    !memcmp(p->dst.b, (const uint8_t[4]){ 255, 255, 255, 255 }, 4))
			return NF_PASS_DHCP;
		if (p->l3 == PKT_L3_IP6 && p->sport == 546 && p->dport == 547 &&
		    !memcmp(p->dst.b, dhcp6_servers, 16))
			return NF_PASS_DHCP;
		return NF_REASON_COUNT;
	}
	if (p->proto != PKT_PROTO_ICMP6 || p->l3 != PKT_L3_IP6 || !(p->flags & PKT_F_L4))
		return NF_REASON_COUNT;
	switch (p->icmp_type) {
	case ICMP6_RS:
	case ICMP6_NS:
	case ICMP6_NA:
		/* Hop limit 255 as RFC 4861 (6.1, 7.1) requires; and only to
		 * link-local or link-scope multicast addresses, so a neighbour
		 * message cannot carry data to a routed address. */
		if (p->ttl != 255 || !(net_addr_is_link_local6(&p->dst) || is_ff02(&p->dst)))
			return NF_DROP_PROTO;
		return NF_PASS_NDP;
	case ICMP6_MLD_REPORT:
	case ICMP6_MLD_DONE:
	case ICMP6_MLD2_REPORT:
		return is_ff02(&p->dst) ? NF_PASS_NDP : NF_DROP_PROTO;
	case ICMP6_RA: /* the guest is no router */
	case 137:      /* redirect */
		return NF_DROP_PROTO;
	default:
		return NF_REASON_COUNT;
	}
}

static enum nf_reason infra_ingress(const struct pkt *p)
{
	if (p->proto == PKT_PROTO_UDP) {
		if (p->l3 == PKT_L3_IP4 && p->sport == 67 && p->dport == 68)
			return NF_PASS_DHCP;
		if (p->l3 == PKT_L3_IP6 && p->sport == 547 && p->dport == 546)
			return NF_PASS_DHCP;
		return NF_REASON_COUNT;
	}
	if (p->proto != PKT_PROTO_ICMP6 || p->l3 != PKT_L3_IP6 || !(p->flags & PKT_F_L4))
		return NF_REASON_COUNT;
	switch (p->icmp_type) {
	case ICMP6_RA:
	case ICMP6_NS:
	case ICMP6_NA:
		return p->ttl == 255 ? NF_PASS_NDP : NF_DROP_PROTO;
	case ICMP6_MLD_QUERY:
		return NF_PASS_NDP;
	case 137: /* redirect: kiln's guest has one route, nothing to redirect */
		return NF_DROP_PROTO;
	default:
		return NF_REASON_COUNT;
	}
}

/*
 * An ICMP error about a tracked flow. The quoted packet went the other way
 * (the guest sent it when the error comes in), and the error must go back
 * to the quoted packet's sender, so an "error" cannot carry data anywhere
 * else.
 */
static bool related(struct net_filter *f, enum nf_dir dir, const struct pkt *p, uint64_t now_ns)
{
	struct pkt q;
	struct conntrack_key k;

	if (pkt_parse_quoted(p->src.family, p->payload, p->payload_len, &q) < 0)
		return false;
	if (!net_addr_equal(&p->dst, &q.src))
		return false;
	if (dir == NF_EGRESS && !net_addr_equal(&p->src, &q.dst))
		return false;
	if (q.proto == icmp_proto(&q) && !is_echo(&q, dir == NF_INGRESS))
		return false;
	flow_key(&q, dir == NF_INGRESS, &k);
	return conntrack_lookup(&f->ct, &k, now_ns) != NULL;
}

static bool host_denied(const struct net_filter *f, const struct net_addr *a)
{
	for (size_t i = 0; i < f->cfg.n_host_deny; i++)
		if (net_cidr_contains(&f->cfg.host_deny[i], a))
			return true;
	return false;
}

/* Decide a flow to remote (proto, remote port). any_binding: expired bindings count. */
static enum net_decision decide(struct net_filter *f, const struct net_addr *remote, uint8_t proto,
				uint16_t rport, bool any_binding, uint64_t now_ns,
				struct net_rule_ref *ref)
{
	const char *names[DNS_BIND_PER_ADDR];
	struct net_flow_dst d = { .addr = remote,
				  .proto = proto,
				  .port = rport,
				  .names = names,
				  .host_addrs = f->cfg.host_addrs,
				  .n_host_addrs = f->cfg.n_host_addrs };

	if (host_denied(f, remote)) {
		*ref = no_rule;
		return NET_DENY_RESERVED;
	}
	d.n_names = any_binding ? dns_bind_names_any(&f->dns, remote, names, DNS_BIND_PER_ADDR)
				: dns_bind_names(&f->dns, remote, now_ns, names, DNS_BIND_PER_ADDR);
	return net_rules_decide(f->rules, &d, ref);
}

static enum nf_reason deny_reason(enum net_decision dec)
{
	switch (dec) {
	case NET_DENY_RULE:
		return NF_DROP_RULE;
	case NET_DENY_RESERVED:
		return NF_DROP_RESERVED;
	case NET_DENY_PRIVATE:
		return NF_DROP_PRIVATE;
	case NET_DENY_HOST:
		return NF_DROP_HOST;
	default:
		return NF_DROP_DEFAULT;
	}
}

/*
 * The guest's own source address, or one infrastructure may use. Without
 * a known address in a family, nothing but infrastructure leaves in it: a
 * guest on a TAP link with no ip= (or any guest in IPv6, which kiln does
 * not assign) could otherwise send as any host of the network.
 */
static enum nf_reason check_source(const struct net_filter *f, const struct pkt *p,
				   enum nf_reason infra)
{
	bool v4 = p->l3 == PKT_L3_IP4;
	const struct net_addr *mine = v4 ? &f->cfg.ip4 : &f->cfg.ip6;
	bool known = v4 ? f->cfg.has_ip4 : f->cfg.has_ip6;

	/* DHCP before an address, DAD and router solicitation before one, link-local NDP and MLD. */
	if (net_addr_is_unspecified(&p->src) ||
	    (net_addr_is_link_local6(&p->src) && net_addr_equal(&p->src, &f->ip6_ll)))
		return infra != NF_REASON_COUNT ? infra : NF_DROP_SPOOF;
	if (!known || !net_addr_equal(&p->src, mine))
		return NF_DROP_SPOOF;
	return infra;
}

/* addr is one of the guest's own IPv6 addresses. */
static bool own_addr6(const struct net_filter *f, const uint8_t *addr)
{
	return !memcmp(addr, f->ip6_ll.b, 16) ||
		(f->cfg.has_ip6 && !memcmp(addr, f->cfg.ip6.b, 16));
}

/*
 * A neighbour discovery message the guest may send (RFC 4861 4.1-4.4):
 * an advertisement only for its own addresses, and every link-layer
 * address option (source, target) its own MAC, so it cannot claim the
 * router's address or point neighbours at another MAC.
 */
static bool ndp_own(const struct net_filter *f, const struct pkt *p)
{
	const uint8_t *o = p->payload;
	size_t n = p->payload_len, off = 0;

	if (p->icmp_type == ICMP6_NS || p->icmp_type == ICMP6_NA) {
		if (n < 16) /* the target address */
			return false;
		if (p->icmp_type == ICMP6_NA && !own_addr6(f, o))
			return false;
		off = 16;
	}
	while (off < n) {
		size_t olen;

		if (n - off < 2)
			return false;
		olen = (size_t)o[off + 1] * 8;
		if (olen == 0 || olen > n - off) /* RFC 4861 4.6: length 0 is invalid */
			return false;
		if ((o[off] == 1 || o[off] == 2) &&
		    (olen != 8 || memcmp(o + off + 2, f->cfg.guest_mac, 6)))
			return false;
		off += olen;
	}
	return true;
}

static void dns_query_seen(struct net_filter *f, const struct pkt *p,
			   const struct conntrack_flow *flow, uint64_t now_ns)
{
	struct dns_question q;

	if (p->proto != PKT_PROTO_UDP || p->dport != 53 || flow->rule.list != NET_REF_DNS ||
	    (p->flags & PKT_F_FRAG))
		return;
	if (dns_parse_query(p->payload, p->payload_len, &q) < 0 ||
	    !net_rules_wants_name(f->rules, q.name))
		return;
	dns_bind_query(&f->dns, &p->dst, p->sport, &q, now_ns);
}

/*
 * The protocol a datagram's fragments are remembered under. IPv6: none,
 * because a later fragment names the header after the fragment header,
 * which need not be the upper-layer protocol the first fragment reached.
 */
static uint8_t frag_proto(const struct pkt *p)
{
	return p->l3 == PKT_L3_IP6 ? 0 : p->proto;
}

static void frag_seen(struct net_filter *f, enum nf_dir dir, const struct pkt *p, uint64_t now_ns)
{
	if (p->flags & PKT_F_FRAG)
		conntrack_frag_add(&f->ct, (enum conntrack_dir)dir, p->src.family, frag_proto(p),
				   p->src.b, p->dst.b, p->frag_id, now_ns);
}

/*
 * A guest TCP segment bound for the steering endpoint if the other checks
 * pass: a SYN to a steered port, or a segment of no tracked flow that the
 * endpoint holds. Only with an endpoint (cfg.steered).
 */
bool net_filter_rate_exempt(struct net_filter *f, const uint8_t *frame, size_t len, uint64_t now_ns)
{
	struct conntrack_key k;
	struct pkt p;

	if (!f->cfg.steered || pkt_parse(frame, len, &p) < 0 || p.proto != PKT_PROTO_TCP ||
	    (p.flags & PKT_F_FRAG))
		return false;
	if ((p.tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK | PKT_TCP_RST | PKT_TCP_FIN)) == PKT_TCP_SYN)
		return net_rules_steers(f->rules, p.dport);
	flow_key(&p, true, &k);
	return !conntrack_lookup(&f->ct, &k, now_ns) && f->cfg.steered(f->cfg.steered_ctx, &k);
}

/* Steps both directions share: rate, parse, layer 2, later fragments. NF_REASON_COUNT: go on. */
static enum nf_reason common(struct net_filter *f, enum nf_dir dir, const uint8_t *frame,
			     size_t len, uint64_t now_ns, struct pkt *p, struct nf_decision *d)
{
	int r;

	memset(d, 0, sizeof(*d));
	conntrack_sweep(&f->ct, now_ns, CONNTRACK_SWEEP_STEP);
	if ((dir == NF_INGRESS || !net_filter_rate_exempt(f, frame, len, now_ns)) &&
	    !rate_limiter_take(&f->rl[dir], len, now_ns))
		return NF_DROP_RATE;
	r = pkt_parse(frame, len, p);
	if (r < 0) {
		d->parse_error = -r;
		return r == -PKT_E_VLAN || r == -PKT_E_ETHERTYPE ? NF_DROP_L2 : NF_DROP_MALFORMED;
	}
	if (dir == NF_EGRESS && memcmp(p->src_mac, f->cfg.guest_mac, 6))
		return NF_DROP_SPOOF;
	/* Toward the guest: its own MAC, broadcast or multicast (bit 0 of the first byte). */
	if (dir == NF_INGRESS && memcmp(p->dst_mac, f->cfg.guest_mac, 6) && !(p->dst_mac[0] & 1))
		return NF_DROP_L2;
	if (p->l3 == PKT_L3_ARP) {
		const struct pkt_arp *a = &p->arp;

		if (dir == NF_INGRESS)
			return NF_PASS_ARP;
		/* The guest speaks for its own MAC and address only (or probes:
		 * 0.0.0.0, all it may say before it has an address). */
		if (memcmp(a->sha, f->cfg.guest_mac, 6))
			return NF_DROP_SPOOF;
		if (memcmp(a->spa, (const uint8_t[4]){ 0 }, 4) &&
		    (!f->cfg.has_ip4 || memcmp(a->spa, f->cfg.ip4.b, 4)))
			return NF_DROP_SPOOF;
		return NF_PASS_ARP;
	}
	if (p->flags & PKT_F_FRAG_LATER) {
		if (dir == NF_EGRESS) {
			enum nf_reason s = check_source(f, p, NF_REASON_COUNT);

			if (s != NF_REASON_COUNT)
				return s;
		}
		return conntrack_frag_known(&f->ct, (enum conntrack_dir)dir, p->src.family,
					    frag_proto(p), p->src.b, p->dst.b, p->frag_id, now_ns)
			? NF_PASS_FRAGMENT
			: NF_DROP_FRAGMENT;
	}
	return NF_REASON_COUNT;
}

/*
 * A SYN to a steered port: the egress proxy decides it, so of the rules
 * only a deny rule and the always-deny set (reserved ranges, host_deny)
 * drop it here (net_rules_decide checks those first, in that order).
 * A tracked flow of the same 4-tuple (the port was not steered when it
 * began) is over: the guest opens it again.
 */
static enum nf_verdict steer(struct net_filter *f, const struct pkt *p, struct conntrack_flow *flow,
			     size_t len, uint64_t now_ns, struct nf_decision *d)
{
	struct net_rule_ref ref = no_rule;
	enum net_decision dec = decide(f, &p->dst, p->proto, p->dport, false, now_ns, &ref);

	if (flow)
		conntrack_remove(&f->ct, flow);
	if (dec == NET_DENY_RULE || dec == NET_DENY_RESERVED) {
		count_rule(f, ref, len, false);
		return finish(f, NF_EGRESS, len, p, deny_reason(dec), ref, now_ns, d);
	}
	return finish(f, NF_EGRESS, len, NULL, NF_STEER_NEW, no_rule, now_ns, d);
}

enum nf_verdict net_filter_egress(struct net_filter *f, const uint8_t *frame, size_t len,
				  uint64_t now_ns, struct nf_decision *d)
{
	struct nf_decision tmp;
	struct pkt p;
	struct conntrack_key k;
	struct conntrack_flow *flow;
	struct net_rule_ref ref = no_rule;
	enum net_decision dec;
	enum nf_reason r;

	if (!d)
		d = &tmp;
	r = common(f, NF_EGRESS, frame, len, now_ns, &p, d);
	if (r != NF_REASON_COUNT)
		return finish(f, NF_EGRESS, len, r == NF_DROP_SPOOF ? &p : NULL, r,
			      r == NF_PASS_ARP ? infra_rule : no_rule, now_ns, d);
	r = check_source(f, &p, infra_egress(&p));
	if (r == NF_PASS_NDP && !ndp_own(f, &p))
		r = NF_DROP_SPOOF;
	if (r != NF_REASON_COUNT)
		return finish(f, NF_EGRESS, len, &p, r, r < NF_DROP_RATE ? infra_rule : no_rule,
			      now_ns, d);
	if (is_icmp_error(&p))
		return finish(f, NF_EGRESS, len, NULL,
			      related(f, NF_EGRESS, &p, now_ns) ? NF_PASS_RELATED : NF_DROP_PROTO,
			      no_rule, now_ns, d);
	if (p.proto != PKT_PROTO_TCP && p.proto != PKT_PROTO_UDP && !is_echo(&p, true))
		return finish(f, NF_EGRESS, len, NULL, NF_DROP_PROTO, no_rule, now_ns, d);

	flow_key(&p, true, &k);
	flow = conntrack_lookup(&f->ct, &k, now_ns);
	/* A SYN on a known flow opens it again (port reuse): decide it anew. */
	if (flow &&
	    !(p.proto == PKT_PROTO_TCP &&
	      (p.tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == PKT_TCP_SYN &&
	      flow->state != CONNTRACK_TCP_SYN_SENT)) {
		conntrack_track(flow, CONNTRACK_EGRESS, p.tcp_flags, len, now_ns);
		count_rule(f, flow->rule, len, false);
		dns_query_seen(f, &p, flow, now_ns);
		frag_seen(f, NF_EGRESS, &p, now_ns);
		return finish(f, NF_EGRESS, len, NULL, NF_PASS_FLOW, flow->rule, now_ns, d);
	}
	if (p.proto == PKT_PROTO_TCP &&
	    (p.tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK | PKT_TCP_RST | PKT_TCP_FIN)) != PKT_TCP_SYN)
		return finish(f, NF_EGRESS, len, NULL,
			      !flow && f->cfg.steered && f->cfg.steered(f->cfg.steered_ctx, &k)
				      ? NF_STEER_FLOW
				      : NF_DROP_TCP_STATE,
			      no_rule, now_ns, d);
	if (p.proto == PKT_PROTO_TCP && net_rules_steers(f->rules, p.dport))
		return steer(f, &p, flow, len, now_ns, d);
	dec = decide(f, &p.dst, p.proto,
		     p.proto == PKT_PROTO_TCP || p.proto == PKT_PROTO_UDP ? p.dport : 0, false,
		     now_ns, &ref);
	if (dec != NET_ALLOW) {
		if (flow)
			conntrack_remove(&f->ct, flow);
		count_rule(f, ref, len, false);
		return finish(f, NF_EGRESS, len, &p, deny_reason(dec), ref, now_ns, d);
	}
	if (flow)
		conntrack_start(flow, now_ns);
	else
		flow = conntrack_insert(&f->ct, &k, now_ns);
	if (!flow)
		return finish(f, NF_EGRESS, len, &p, NF_DROP_TABLE_FULL, ref, now_ns, d);
	flow->rule = ref;
	conntrack_track(flow, CONNTRACK_EGRESS, p.tcp_flags, len, now_ns);
	count_rule(f, ref, len, true);
	dns_query_seen(f, &p, flow, now_ns);
	frag_seen(f, NF_EGRESS, &p, now_ns);
	return finish(f, NF_EGRESS, len, NULL, ref.list == NET_REF_DNS ? NF_PASS_DNS : NF_PASS_NEW,
		      ref, now_ns, d);
}

enum nf_verdict net_filter_ingress(struct net_filter *f, const uint8_t *frame, size_t len,
				   uint64_t now_ns, struct nf_decision *d)
{
	struct nf_decision tmp;
	struct pkt p;
	struct conntrack_key k;
	struct conntrack_flow *flow;
	enum nf_reason r;
	bool v4;

	if (!d)
		d = &tmp;
	r = common(f, NF_INGRESS, frame, len, now_ns, &p, d);
	if (r != NF_REASON_COUNT)
		return finish(f, NF_INGRESS, len, NULL, r, r == NF_PASS_ARP ? infra_rule : no_rule,
			      now_ns, d);
	r = infra_ingress(&p);
	if (r != NF_REASON_COUNT)
		return finish(f, NF_INGRESS, len, NULL, r, r < NF_DROP_RATE ? infra_rule : no_rule,
			      now_ns, d);
	v4 = p.l3 == PKT_L3_IP4;
	if ((v4 ? f->cfg.has_ip4 : f->cfg.has_ip6) &&
	    !net_addr_equal(&p.dst, v4 ? &f->cfg.ip4 : &f->cfg.ip6))
		return finish(f, NF_INGRESS, len, NULL, NF_DROP_UNSOLICITED, no_rule, now_ns, d);
	if (is_icmp_error(&p))
		return finish(f, NF_INGRESS, len, NULL,
			      related(f, NF_INGRESS, &p, now_ns) ? NF_PASS_RELATED
								 : NF_DROP_UNSOLICITED,
			      no_rule, now_ns, d);
	if (p.proto != PKT_PROTO_TCP && p.proto != PKT_PROTO_UDP && !is_echo(&p, false))
		return finish(f, NF_INGRESS, len, NULL,
			      p.proto == icmp_proto(&p) ? NF_DROP_UNSOLICITED : NF_DROP_PROTO,
			      no_rule, now_ns, d);
	flow_key(&p, false, &k);
	flow = conntrack_lookup(&f->ct, &k, now_ns);
	if (!flow)
		return finish(f, NF_INGRESS, len, NULL, NF_DROP_UNSOLICITED, no_rule, now_ns, d);
	conntrack_track(flow, CONNTRACK_INGRESS, p.tcp_flags, len, now_ns);
	count_rule(f, flow->rule, len, false);
	frag_seen(f, NF_INGRESS, &p, now_ns);
	if (p.proto == PKT_PROTO_UDP && p.sport == 53 && flow->rule.list == NET_REF_DNS)
		dns_bind_answer(&f->dns, &p.src, p.dport, p.payload, p.payload_len,
				(p.flags & PKT_F_FRAG) != 0, now_ns);
	return finish(f, NF_INGRESS, len, NULL, NF_PASS_FLOW, flow->rule, now_ns, d);
}

uint64_t net_filter_rate_wait_ns(struct net_filter *f, enum nf_dir dir, size_t len, uint64_t now_ns)
{
	return rate_limiter_wait_ns(&f->rl[dir], len, now_ns);
}

size_t net_filter_replace_rules(struct net_filter *f, struct net_rules *rules, uint64_t now_ns)
{
	struct net_rules *old = f->rules;
	size_t cut = 0;

	f->rules = rules;
	for (uint32_t i = 0; i < f->ct.capacity; i++) {
		struct conntrack_flow *flow = conntrack_at(&f->ct, i, now_ns);
		struct net_rule_ref ref;
		struct net_addr remote;
		enum net_decision dec;

		if (!flow)
			continue;
		net_addr_set(&remote, flow->key.family, flow->key.remote);
		/* Bindings that expired since the flow began still count: the guest
		 * resolved the name; the flow should not die of the TTL alone. */
		dec = decide(f, &remote, flow->key.proto, flow->key.rport, true, now_ns, &ref);
		if (dec == NET_ALLOW) {
			struct net_rule_counters *c = net_rules_counters(f->rules, ref);

			flow->rule = ref;
			if (c)
				c->flows++;
			continue;
		}
		if (f->cfg.log) {
			struct nf_log_entry le = {
				.dir = NF_EGRESS,
				.reason = deny_reason(dec),
				.rule = ref,
				.cut = true,
				.proto = flow->key.proto,
				.dst = remote,
				.dport = flow->key.rport,
				.sport = flow->key.gport,
			};

			net_addr_set(&le.src, flow->key.family, flow->key.guest);
			log_flow(f, &le, now_ns);
		}
		conntrack_remove(&f->ct, flow);
		cut++;
	}
	/* Later fragments were let through on the old rules' word. */
	conntrack_frag_flush(&f->ct);
	f->ctr.flows_cut += cut;
	net_rules_free(old);
	return cut;
}

size_t net_filter_names_of(struct net_filter *f, const struct net_addr *a, uint64_t now_ns,
			   char (*out)[NET_HOST_MAX + 1], size_t cap)
{
	const char *names[DNS_BIND_PER_ADDR];
	size_t n = dns_bind_names(&f->dns, a, now_ns, names, DNS_BIND_PER_ADDR), got = 0;

	if (!n)
		n = dns_bind_names_any(&f->dns, a, names, DNS_BIND_PER_ADDR);
	for (size_t i = 0; i < n && got < cap; i++)
		if (strlen(names[i]) <= NET_HOST_MAX)
			strcpy(out[got++], names[i]);
	return got;
}

bool net_filter_name_of(struct net_filter *f, const struct net_addr *a, uint64_t now_ns, char *out)
{
	char names[1][NET_HOST_MAX + 1];

	out[0] = '\0';
	if (!net_filter_names_of(f, a, now_ns, names, 1))
		return false;
	strcpy(out, names[0]);
	return true;
}

const struct net_rules *net_filter_rules(const struct net_filter *f)
{
	return f->rules;
}

void net_filter_counters(const struct net_filter *f, struct nf_counters *out)
{
	*out = f->ctr;
}

void net_filter_set_steered(struct net_filter *f, nf_steered_fn fn, void *ctx)
{
	f->cfg.steered = fn;
	f->cfg.steered_ctx = ctx;
}

void net_filter_set_guest_mac(struct net_filter *f, const uint8_t mac[6])
{
	memcpy(f->cfg.guest_mac, mac, 6);
	link_local_of(mac, &f->ip6_ll);
}

size_t net_filter_tcp_flows(struct net_filter *f, struct conntrack_key *out, size_t max,
			    uint64_t now_ns)
{
	size_t n = 0;

	for (uint32_t i = 0; i < f->ct.capacity && n < max; i++) {
		const struct conntrack_flow *fl = conntrack_at(&f->ct, i, now_ns);

		if (fl && fl->key.proto == PKT_PROTO_TCP &&
		    (fl->state == CONNTRACK_TCP_ESTABLISHED || fl->state == CONNTRACK_TCP_FIN_WAIT))
			out[n++] = fl->key;
	}
	return n;
}

size_t net_filter_flow_count(const struct net_filter *f)
{
	return f->ct.count;
}

static json_t *dir_json(const struct net_filter *f, enum nf_dir dir)
{
	json_t *o = json_object();

	for (int r = 0; o && r < NF_REASON_COUNT; r++) {
		json_t *c = json_pack("{sIsI}", "packets", (json_int_t)f->ctr.packets[dir][r],
				      "bytes", (json_int_t)f->ctr.bytes[dir][r]);

		if (json_object_set_new(o, nf_reason_name((enum nf_reason)r), c) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *net_filter_to_json(const struct net_filter *f)
{
	return json_pack("{s:o, s:{s:o, s:o, s:o, s:I, s:I, s:I, s:I}}", "rules",
			 net_rules_to_json(f->rules), "counters", "rules",
			 net_rules_counters_json(f->rules), "egress", dir_json(f, NF_EGRESS),
			 "ingress", dir_json(f, NF_INGRESS), "flows", (json_int_t)f->ct.count,
			 "flows_cut", (json_int_t)f->ctr.flows_cut, "dns_bindings",
			 (json_int_t)f->dns.count, "log_suppressed",
			 (json_int_t)f->ctr.log_suppressed);
}
