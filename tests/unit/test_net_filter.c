/*
 * net_filter: the whole pipeline on hand-built frames. Default-deny
 * egress; replies of allowed flows pass and unsolicited inbound drops;
 * deny beats allow; the always-deny set holds; host rules allow an address
 * only after the guest resolved the name through an allowed resolver and
 * the filter saw the answer; ARP/NDP/DHCP work; spoofing drops; the
 * connection table is bounded; replacing the rules cuts the flows they
 * deny; steering to the egress proxy (SYNs to `http` ports, later
 * segments of the flows the caller's endpoint holds); rate limits,
 * counters and the denied-flow log; and every
 * malformed or truncated frame drops without a sanitizer report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "devices/net/net_filter.h"

#define S 1000000000ULL
#define GUEST "10.0.2.15"
#define GUEST6 "fd00::15"
/* The link-local address of fr_guest_mac (modified EUI-64). */
#define GUEST_LL "fe80::5054:ff:fe12:3456"
#define RESOLVER "10.0.2.3"

struct logged {
	int n;
	struct nf_log_entry last;
	char line[256];
};

static void log_cb(void *ctx, const struct nf_log_entry *e)
{
	struct logged *l = ctx;

	l->n++;
	l->last = *e;
	nf_log_format(e, l->line, sizeof(l->line));
}

static struct net_rules *rules(const char *json)
{
	struct net_rules_err e = { 0 };
	struct net_rules *r;

	if (net_rules_parse_text(json, strlen(json), &r, &e) < 0)
		fail_msg("rules refused: %s", e.msg);
	return r;
}

static struct net_filter_config config(struct logged *log)
{
	struct net_filter_config c = { .has_ip4 = true, .has_ip6 = true, .hash_key = { 1, 2 } };

	memcpy(c.guest_mac, fr_guest_mac, 6);
	net_addr_parse(GUEST, &c.ip4);
	net_addr_parse(GUEST6, &c.ip6);
	c.log = log_cb;
	c.log_ctx = log;
	return c;
}

static struct net_filter *filter_cfg(const struct net_filter_config *c, const char *json)
{
	struct net_filter *f;
	struct err e;

	if (net_filter_create(c, json ? rules(json) : NULL, 0, &f, &e) < 0)
		fail_msg("create: %s", e.msg);
	return f;
}

static struct logged lg;

static struct net_filter *filter(const char *json)
{
	struct net_filter_config c = config(&lg);

	memset(&lg, 0, sizeof(lg));
	return filter_cfg(&c, json);
}

/* Send a frame built from s (egress when from the guest), on a heap copy of exact size. */
static enum nf_reason send_frame(struct net_filter *f, bool egress, const uint8_t *frame, size_t n,
				 uint64_t now)
{
	uint8_t *c = fr_exact(frame, n);
	struct nf_decision d;
	enum nf_verdict v = egress ? net_filter_egress(f, c, n, now, &d)
				   : net_filter_ingress(f, c, n, now, &d);

	free(c);
	assert_int_equal(v,
			 d.reason >= NF_STEER_NEW          ? NF_STEER
				 : d.reason < NF_DROP_RATE ? NF_PASS
							   : NF_DROP);
	return d.reason;
}

static enum nf_reason out(struct net_filter *f, struct fr s, uint64_t now)
{
	uint8_t fr[2048];

	if (!s.src)
		s.src = strchr(s.dst, ':') ? GUEST6 : GUEST;
	return send_frame(f, true, fr, fr_build(fr, &s), now);
}

static enum nf_reason in(struct net_filter *f, struct fr s, uint64_t now)
{
	uint8_t fr[2048];

	if (!s.dst)
		s.dst = strchr(s.src, ':') ? GUEST6 : GUEST;
	if (!s.src_mac)
		s.src_mac = fr_gw_mac;
	if (!s.dst_mac)
		s.dst_mac = fr_guest_mac;
	return send_frame(f, false, fr, fr_build(fr, &s), now);
}

static void reason_at(enum nf_reason got, enum nf_reason want, int line)
{
	if (got != want)
		fail_msg("line %d: reason %s, expected %s", line, nf_reason_name(got),
			 nf_reason_name(want));
}
#define reason_is(got, want) reason_at(got, want, __LINE__)

#define SYN(d, p)     \
	((struct fr){ \
		.dst = d, .proto = FR_TCP, .sport = 40000, .dport = p, .tcp_flags = PKT_TCP_SYN })

static void test_stateful_tcp(void **state)
{
	struct net_filter *f = filter(
		"{\"allow\":[{\"cidr\":\"93.184.216.0/24\",\"proto\":\"tcp\",\"ports\":443}]}");
	struct fr synack = { .src = "93.184.216.34",
			     .proto = FR_TCP,
			     .sport = 443,
			     .dport = 40000,
			     .tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK };
	struct fr ack = { .dst = "93.184.216.34",
			  .proto = FR_TCP,
			  .sport = 40000,
			  .dport = 443,
			  .tcp_flags = PKT_TCP_ACK };

	(void)state;
	/* Unsolicited inbound drops: nothing opened a flow yet. */
	reason_is(in(f, synack, 0), NF_DROP_UNSOLICITED);
	/* Default deny: another port, another address. */
	reason_is(out(f, SYN("93.184.216.34", 80), 0), NF_DROP_DEFAULT);
	reason_is(out(f, SYN("1.1.1.1", 443), 0), NF_DROP_DEFAULT);
	/* A non-SYN segment opens nothing. */
	reason_is(out(f, ack, 0), NF_DROP_TCP_STATE);
	reason_is(out(f, SYN("93.184.216.34", 443), 0), NF_PASS_NEW);
	reason_is(in(f, synack, 1), NF_PASS_FLOW);
	reason_is(out(f, ack, 2), NF_PASS_FLOW);
	/* The reply has to come from the flow's remote end and port. */
	synack.sport = 444;
	reason_is(in(f, synack, 3), NF_DROP_UNSOLICITED);
	synack.sport = 443;
	synack.src = "93.184.216.35";
	reason_is(in(f, synack, 3), NF_DROP_UNSOLICITED);
	assert_int_equal(net_filter_flow_count(f), 1);
	{
		const struct net_rules *r = net_filter_rules(f);

		assert_int_equal(r->allow[0].ctr.flows, 1);
		assert_int_equal(r->allow[0].ctr.packets, 3);
	}
	/* Idle past the established timeout: gone, replies drop. */
	synack.src = "93.184.216.34";
	reason_is(in(f, synack, 2 + CONNTRACK_TO_TCP_ESTABLISHED + 1), NF_DROP_UNSOLICITED);
	net_filter_destroy(f);
}

static void test_tcp_close_and_reuse(void **state)
{
	struct net_filter *f = filter("{\"outbound_internet\":true}");
	struct fr rst = { .src = "1.1.1.1",
			  .proto = FR_TCP,
			  .sport = 443,
			  .dport = 40000,
			  .tcp_flags = PKT_TCP_RST | PKT_TCP_ACK };

	(void)state;
	reason_is(out(f, SYN("1.1.1.1", 443), 0), NF_PASS_NEW);
	reason_is(in(f, rst, S), NF_PASS_FLOW);
	/* After a RST the flow lingers CONNTRACK_TO_TCP_CLOSED, and the peer cannot prolong it. */
	reason_is(in(f, rst, S + CONNTRACK_TO_TCP_CLOSED - 1), NF_PASS_FLOW);
	reason_is(in(f, rst, S + CONNTRACK_TO_TCP_CLOSED + 1), NF_DROP_UNSOLICITED);
	/* A SYN on the same ports is a new flow, decided again. */
	reason_is(out(f, SYN("1.1.1.1", 443), 20 * S), NF_PASS_NEW);
	reason_is(out(f, SYN("1.1.1.1", 443), 21 * S), NF_PASS_FLOW); /* a retransmission */
	net_filter_destroy(f);
}

static void test_udp_and_icmp(void **state)
{
	struct net_filter *f = filter("{\"outbound_internet\":true}");
	struct fr q = { .dst = "9.9.9.9", .proto = FR_UDP, .sport = 5000, .dport = 123 };
	struct fr r = { .src = "9.9.9.9", .proto = FR_UDP, .sport = 123, .dport = 5000 };
	struct fr ping = { .dst = "1.1.1.1", .proto = FR_ICMP, .icmp_type = 8, .icmp_id = 77 };
	struct fr pong = { .src = "1.1.1.1", .proto = FR_ICMP, .icmp_type = 0, .icmp_id = 77 };
	struct fr ping6 = {
		.dst = "2606:4700::1111", .proto = FR_ICMP6, .icmp_type = 128, .icmp_id = 5
	};
	struct fr pong6 = {
		.src = "2606:4700::1111", .proto = FR_ICMP6, .icmp_type = 129, .icmp_id = 5
	};

	(void)state;
	reason_is(in(f, r, 0), NF_DROP_UNSOLICITED);
	reason_is(out(f, q, 0), NF_PASS_NEW);
	reason_is(in(f, r, S), NF_PASS_FLOW);
	/* Unreplied UDP expires after CONNTRACK_TO_UDP_NEW, replied after CONNTRACK_TO_UDP_REPLIED. */
	reason_is(in(f, r, S + CONNTRACK_TO_UDP_REPLIED - 1), NF_PASS_FLOW);
	reason_is(in(f, r, 2 * S + 2 * CONNTRACK_TO_UDP_REPLIED), NF_DROP_UNSOLICITED);

	reason_is(in(f, pong, 0), NF_DROP_UNSOLICITED);
	reason_is(out(f, ping, 0), NF_PASS_NEW);
	reason_is(in(f, pong, 1), NF_PASS_FLOW);
	pong.icmp_id = 78;
	reason_is(in(f, pong, 1), NF_DROP_UNSOLICITED);
	/* An echo request from outside opens nothing. */
	reason_is(in(f,
		     (struct fr){ .src = "1.1.1.1", .proto = FR_ICMP, .icmp_type = 8, .icmp_id = 9 },
		     1),
		  NF_DROP_UNSOLICITED);
	/* ICMP types other than echo do not leave the guest. */
	reason_is(out(f, (struct fr){ .dst = "1.1.1.1", .proto = FR_ICMP, .icmp_type = 13 }, 1),
		  NF_DROP_PROTO);
	reason_is(out(f, ping6, 0), NF_PASS_NEW);
	reason_is(in(f, pong6, 1), NF_PASS_FLOW);
	/* Other protocols (GRE) do not leave the guest either. */
	reason_is(out(f, (struct fr){ .dst = "1.1.1.1", .proto = 47 }, 1), NF_DROP_PROTO);
	net_filter_destroy(f);
}

/* An ICMP error (type, code) from `from` to `to` quoting ip[0..qlen). */
static enum nf_reason icmp_error(struct net_filter *f, bool egress, const char *from,
				 const char *to, uint8_t type, const uint8_t *ip, size_t qlen)
{
	struct fr e = { .src = from,
			.dst = to,
			.proto = strchr(from, ':') ? FR_ICMP6 : FR_ICMP,
			.icmp_type = type,
			.payload = ip,
			.payload_len = qlen };
	uint8_t fr[2048];

	if (!egress) {
		e.src_mac = fr_gw_mac;
		e.dst_mac = fr_guest_mac;
	}
	return send_frame(f, egress, fr, fr_build(fr, &e), 1);
}

static void test_related_icmp_errors(void **state)
{
	struct net_filter *f = filter("{\"outbound_internet\":true}");
	struct fr q = { .src = GUEST,
			.dst = "9.9.9.9",
			.proto = FR_UDP,
			.sport = 5000,
			.dport = 123,
			.payload = "0123456789",
			.payload_len = 10 };
	struct fr other = q,
		  back = { .src = "9.9.9.9",
			   .dst = GUEST,
			   .proto = FR_UDP,
			   .sport = 123,
			   .dport = 5000 };
	uint8_t ip[256], ip2[256], ipb[256];
	size_t n, n2, nb;

	(void)state;
	n = fr_ip(ip, &q);
	other.dport = 124;
	n2 = fr_ip(ip2, &other);
	nb = fr_ip(ipb, &back);
	/* Before the flow exists, an error about it is unsolicited. */
	reason_is(icmp_error(f, false, "192.0.2.1", GUEST, 3, ip, 28), NF_DROP_UNSOLICITED);
	reason_is(out(f, q, 0), NF_PASS_NEW);
	/* From any router on the path, as long as it quotes the flow and comes to the guest. */
	reason_is(icmp_error(f, false, "192.0.2.1", GUEST, 3, ip, 28), NF_PASS_RELATED);
	reason_is(icmp_error(f, false, "192.0.2.1", GUEST, 11, ip, n), NF_PASS_RELATED);
	reason_is(icmp_error(f, false, "192.0.2.1", GUEST, 3, ip2, n2), NF_DROP_UNSOLICITED);
	reason_is(icmp_error(f, false, "192.0.2.1", GUEST, 3, ip, 20),
		  NF_DROP_UNSOLICITED); /* no ports quoted */
	/* The guest may answer the flow's remote with an error about its packet... */
	reason_is(icmp_error(f, true, GUEST, "9.9.9.9", 3, ipb, nb), NF_PASS_RELATED);
	/* ...but not send such an "error" anywhere else (it would carry data out). */
	reason_is(icmp_error(f, true, GUEST, "6.6.6.6", 3, ipb, nb), NF_DROP_PROTO);
	net_filter_destroy(f);
}

static void test_always_deny(void **state)
{
	struct net_filter *f = filter(
		"{\"outbound_internet\":true,\"allow\":[{\"cidr\":\"0.0.0.0/0\"},"
		"{\"cidr\":\"::/0\"},{\"cidr\":\"192.168.7.0/24\",\"ports\":22}]}");

	(void)state;
	reason_is(out(f, SYN("169.254.169.254", 80), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("127.0.0.1", 22), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("64:ff9b::a9fe:a9fe", 80), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("fe80::1", 80), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("10.0.2.2", 22), 0), NF_DROP_PRIVATE);
	reason_is(out(f, SYN("fd00::1", 22), 0), NF_DROP_PRIVATE);
	reason_is(out(f, SYN("192.168.7.9", 80), 0), NF_DROP_PRIVATE);
	reason_is(out(f, SYN("192.168.7.9", 22), 0), NF_PASS_NEW); /* explicitly allowed */
	reason_is(out(f, SYN("8.8.8.8", 22), 0), NF_PASS_NEW);
	reason_is(out(f,
		      (struct fr){
			      .dst = "255.255.255.255", .proto = FR_UDP, .sport = 9, .dport = 9 },
		      0),
		  NF_DROP_RESERVED);
	assert_int_equal(lg.n, 8);
	assert_non_null(
		strstr(lg.line, "egress drop_reserved udp 10.0.2.15:9 -> 255.255.255.255:9"));
	net_filter_destroy(f);
}

/* Addresses that reach the host (passt's gateway mapping): never, whatever the rules. */
static void test_host_deny(void **state)
{
	struct net_filter_config c = config(&lg);
	struct net_filter *f;

	(void)state;
	net_cidr_parse("10.0.2.2", &c.host_deny[0], NULL);
	c.n_host_deny = 1;
	f = filter_cfg(&c, "{\"allow\":[{\"cidr\":\"10.0.0.0/8\"}],\"dns\":[\"10.0.2.2\"]}");
	reason_is(out(f, SYN("10.0.2.2", 80), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("10.0.2.2", 53), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("10.0.2.9", 80), 0), NF_PASS_NEW);
	net_filter_destroy(f);
}

/* The host's own addresses: "everything public" does not reach them. */
static void test_host_addrs(void **state)
{
	struct net_filter_config c = config(&lg);
	struct net_addr host[2];
	struct net_filter *f;

	(void)state;
	net_addr_parse("203.0.113.5", &host[0]);
	net_addr_parse("2606:4700::5", &host[1]);
	c.host_addrs = host;
	c.n_host_addrs = 2;
	f = filter_cfg(&c,
		       "{\"outbound_internet\":true,\"allow\":[{\"cidr\":\"::/0\"},"
		       "{\"cidr\":\"203.0.113.5\",\"proto\":\"tcp\",\"ports\":8443}]}");
	memset(host, 0, sizeof(host)); /* the filter keeps its own copy */
	reason_is(out(f, SYN("203.0.113.5", 22), 0), NF_DROP_HOST);
	assert_non_null(strstr(lg.line, "egress drop_host tcp 10.0.2.15:40000 -> 203.0.113.5:22"));
	reason_is(out(f, SYN("2606:4700::5", 22), 0), NF_DROP_HOST);
	reason_is(out(f, SYN("203.0.113.5", 8443), 0), NF_PASS_NEW);
	reason_is(out(f, SYN("203.0.113.6", 22), 0), NF_PASS_NEW);
	/* New rules that stop naming it cut the flow. */
	assert_int_equal(net_filter_replace_rules(f, rules("{\"outbound_internet\":true}"), 1), 1);
	reason_is(out(f, SYN("203.0.113.6", 22), 2), NF_PASS_FLOW);
	net_filter_destroy(f);
	/* Too many addresses: refused with the limit. */
	{
		struct net_filter *g;
		struct err e;

		c.n_host_addrs = NF_HOST_ADDRS_MAX + 1;
		assert_int_equal(net_filter_create(&c, NULL, 0, &g, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "1024 host addresses"));
	}
}

/*
 * Without an address in a family (TAP with no ip=, IPv6 kiln did not
 * assign), only DHCP, ARP probes and neighbour discovery from :: or the
 * guest's own link-local address leave: no source is the guest's.
 */
static void test_source_without_address(void **state)
{
	struct net_filter_config c = config(&lg);
	struct net_filter *f;
	uint8_t fr[128];

	(void)state;
	c.has_ip4 = false;
	c.has_ip6 = false;
	f = filter_cfg(&c, "{\"outbound_internet\":true}");
	reason_is(out(f,
		      (struct fr){ .src = "10.0.2.15",
				   .dst = "1.1.1.1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	reason_is(out(f,
		      (struct fr){ .src = "198.51.100.7",
				   .dst = "1.1.1.1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	reason_is(out(f,
		      (struct fr){ .src = "2001:db8::99",
				   .dst = "2606:4700::1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	reason_is(out(f,
		      (struct fr){ .src = "0.0.0.0",
				   .dst = "255.255.255.255",
				   .proto = FR_UDP,
				   .sport = 68,
				   .dport = 67 },
		      0),
		  NF_PASS_DHCP);
	/* ARP: a probe only; claiming any address is spoofing. */
	reason_is(send_frame(f, true, fr,
			     fr_arp(fr, fr_guest_mac, 1, fr_guest_mac, "0.0.0.0", GUEST), 0),
		  NF_PASS_ARP);
	reason_is(send_frame(f, true, fr,
			     fr_arp(fr, fr_guest_mac, 2, fr_guest_mac, "10.0.2.2", GUEST), 0),
		  NF_DROP_SPOOF);
	reason_is(out(f,
		      (struct fr){ .src = GUEST_LL,
				   .dst = "ff02::1:2",
				   .proto = FR_UDP,
				   .sport = 546,
				   .dport = 547 },
		      0),
		  NF_PASS_DHCP);
	net_filter_destroy(f);
	/* With an IPv6 address too, a global source other than it is refused. */
	f = filter("{\"outbound_internet\":true}");
	reason_is(out(f,
		      (struct fr){ .src = "2001:db8::99",
				   .dst = "2606:4700::1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	reason_is(out(f,
		      (struct fr){ .dst = "2606:4700::1", .proto = FR_UDP, .sport = 1, .dport = 2 },
		      0),
		  NF_PASS_NEW);
	net_filter_destroy(f);
}

/* An NDP message of type from src to dst with body (len bytes), hop limit 255. */
static enum nf_reason ndp_out(struct net_filter *f, const char *src, const char *dst, uint8_t type,
			      const uint8_t *body, size_t len)
{
	return out(f,
		   (struct fr){ .src = src,
				.dst = dst,
				.proto = FR_ICMP6,
				.icmp_type = type,
				.ttl = 255,
				.payload = body,
				.payload_len = len },
		   0);
}

/* Neighbour discovery speaks for the guest's own link-local address, targets and MAC only. */
static void test_ndp_spoofing(void **state)
{
	static const uint8_t other_mac[6] = { 0x52, 0x54, 0, 0, 0, 9 };
	struct net_filter *f = filter(NULL);
	uint8_t body[32];
	struct net_addr a;

	(void)state;
	/* A link-local source other than the guest's (EUI-64 of its MAC). */
	net_addr_parse("fe80::2", &a);
	memcpy(body, a.b, 16);
	reason_is(ndp_out(f, "fe80::15", "ff02::1:ff00:2", 135, body, 16), NF_DROP_SPOOF);
	/* An advertisement for the router's address: neighbour cache poisoning. */
	net_addr_parse("fe80::1", &a);
	memcpy(body, a.b, 16);
	reason_is(ndp_out(f, GUEST_LL, "ff02::1", 136, body, 16), NF_DROP_SPOOF);
	/* An advertisement for its own address with another MAC in the target option. */
	net_addr_parse(GUEST_LL, &a);
	memcpy(body, a.b, 16);
	body[16] = 2;
	body[17] = 1;
	memcpy(body + 18, other_mac, 6);
	reason_is(ndp_out(f, GUEST_LL, "ff02::1", 136, body, 24), NF_DROP_SPOOF);
	memcpy(body + 18, fr_guest_mac, 6);
	reason_is(ndp_out(f, GUEST_LL, "ff02::1", 136, body, 24), NF_PASS_NDP);
	/* An option of length 0 (RFC 4861 4.6: invalid), and one running past the end. */
	body[17] = 0;
	reason_is(ndp_out(f, GUEST_LL, "ff02::1", 136, body, 24), NF_DROP_SPOOF);
	body[17] = 2;
	reason_is(ndp_out(f, GUEST_LL, "ff02::1", 136, body, 24), NF_DROP_SPOOF);
	/* A router solicitation's source link-layer option: the guest's MAC. */
	body[0] = 1;
	body[1] = 1;
	memcpy(body + 2, other_mac, 6);
	reason_is(ndp_out(f, GUEST_LL, "ff02::2", 133, body, 8), NF_DROP_SPOOF);
	memcpy(body + 2, fr_guest_mac, 6);
	reason_is(ndp_out(f, GUEST_LL, "ff02::2", 133, body, 8), NF_PASS_NDP);
	/* A solicitation without its target is malformed. */
	reason_is(ndp_out(f, GUEST_LL, "ff02::1:ff00:2", 135, NULL, 0), NF_DROP_SPOOF);
	net_filter_destroy(f);
}

static void test_deny_beats_allow(void **state)
{
	struct net_filter *f = filter(
		"{\"outbound_internet\":true,\"allow\":[{\"cidr\":\"203.0.113.0/24\"}],"
		"\"deny\":[{\"cidr\":\"203.0.113.7\",\"proto\":\"tcp\",\"ports\":\"1-1024\"}]}");
	struct nf_counters c;

	(void)state;
	reason_is(out(f, SYN("203.0.113.7", 443), 0), NF_DROP_RULE);
	reason_is(out(f, SYN("203.0.113.7", 8443), 0), NF_PASS_NEW);
	reason_is(out(f, SYN("203.0.113.8", 443), 0), NF_PASS_NEW);
	assert_int_equal(net_filter_rules(f)->deny[0].ctr.packets, 1);
	assert_int_equal(net_filter_rules(f)->allow[0].ctr.flows, 2);
	assert_non_null(strstr(lg.line, "rule deny[0]"));
	net_filter_counters(f, &c);
	assert_int_equal(c.packets[NF_EGRESS][NF_DROP_RULE], 1);
	assert_int_equal(c.packets[NF_EGRESS][NF_PASS_NEW], 2);
	net_filter_destroy(f);
}

static void test_spoofing(void **state)
{
	static const uint8_t other_mac[6] = { 0x52, 0x54, 0, 0, 0, 9 };
	struct net_filter *f = filter("{\"outbound_internet\":true}");
	uint8_t fr[128];

	(void)state;
	reason_is(out(f,
		      (struct fr){ .src = "10.0.2.16",
				   .dst = "1.1.1.1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	reason_is(out(f,
		      (struct fr){ .src_mac = other_mac,
				   .dst = "1.1.1.1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	reason_is(out(f,
		      (struct fr){ .src = "fd00::16",
				   .dst = "2606:4700::1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	/* Link-local and unspecified sources are for NDP/DHCP only. */
	reason_is(out(f,
		      (struct fr){ .src = "fe80::1",
				   .dst = "2606:4700::1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	reason_is(out(f,
		      (struct fr){ .src = "0.0.0.0",
				   .dst = "1.1.1.1",
				   .proto = FR_UDP,
				   .sport = 1,
				   .dport = 2 },
		      0),
		  NF_DROP_SPOOF);
	/* ARP: the guest's own MAC and address, or a probe from 0.0.0.0. */
	reason_is(send_frame(f, true, fr,
			     fr_arp(fr, fr_guest_mac, 1, fr_guest_mac, GUEST, "10.0.2.2"), 0),
		  NF_PASS_ARP);
	reason_is(send_frame(f, true, fr,
			     fr_arp(fr, fr_guest_mac, 1, fr_guest_mac, "0.0.0.0", GUEST), 0),
		  NF_PASS_ARP);
	reason_is(send_frame(f, true, fr,
			     fr_arp(fr, fr_guest_mac, 2, fr_guest_mac, "10.0.2.2", GUEST), 0),
		  NF_DROP_SPOOF);
	reason_is(send_frame(f, true, fr, fr_arp(fr, fr_guest_mac, 2, other_mac, GUEST, "10.0.2.2"),
			     0),
		  NF_DROP_SPOOF);
	reason_is(send_frame(f, false, fr, fr_arp(fr, fr_gw_mac, 2, fr_gw_mac, "10.0.2.2", GUEST),
			     0),
		  NF_PASS_ARP);
	/* Toward the guest: frames for another unicast MAC drop; for another IP, too. */
	reason_is(in(f,
		     (struct fr){ .src = "1.1.1.1",
				  .dst_mac = other_mac,
				  .proto = FR_UDP,
				  .sport = 1,
				  .dport = 2 },
		     0),
		  NF_DROP_L2);
	reason_is(in(f,
		     (struct fr){ .src = "1.1.1.1",
				  .dst = "10.0.2.99",
				  .proto = FR_UDP,
				  .sport = 1,
				  .dport = 2 },
		     0),
		  NF_DROP_UNSOLICITED);
	net_filter_destroy(f);
}

/* An NS/NA body: the target address (RFC 4861 4.3, 4.4), then opts. */
static const uint8_t *ndp_target(const char *target, uint8_t *buf)
{
	struct net_addr a;

	assert_int_equal(net_addr_parse(target, &a), 0);
	memcpy(buf, a.b, 16);
	return buf;
}

static void test_infrastructure(void **state)
{
	struct net_filter *f = filter(NULL); /* no rules at all */
	uint8_t t[16];

	(void)state;
	/* DHCPv4: discover from 0.0.0.0 to broadcast; the offer comes back. */
	reason_is(out(f,
		      (struct fr){ .src = "0.0.0.0",
				   .dst = "255.255.255.255",
				   .proto = FR_UDP,
				   .sport = 68,
				   .dport = 67 },
		      0),
		  NF_PASS_DHCP);
	reason_is(in(f,
		     (struct fr){ .src = "10.0.2.2",
				  .dst = "255.255.255.255",
				  .dst_mac = (const uint8_t *)"\xff\xff\xff\xff\xff\xff",
				  .proto = FR_UDP,
				  .sport = 67,
				  .dport = 68 },
		     0),
		  NF_PASS_DHCP);
	/* Not to any other address on port 67 (that would be a way out). */
	reason_is(out(f, (struct fr){ .dst = "1.2.3.4", .proto = FR_UDP, .sport = 68, .dport = 67 },
		      0),
		  NF_DROP_DEFAULT);
	/* DHCPv6 to its multicast group. */
	reason_is(out(f,
		      (struct fr){ .src = GUEST_LL,
				   .dst = "ff02::1:2",
				   .proto = FR_UDP,
				   .sport = 546,
				   .dport = 547 },
		      0),
		  NF_PASS_DHCP);
	/* NDP: hop limit 255 only; the guest solicits, it does not advertise routes. */
	reason_is(out(f,
		      (struct fr){ .src = GUEST_LL,
				   .dst = "ff02::1:ff00:2",
				   .proto = FR_ICMP6,
				   .icmp_type = 135,
				   .ttl = 255,
				   .payload = ndp_target("fe80::2", t),
				   .payload_len = 16 },
		      0),
		  NF_PASS_NDP);
	reason_is(out(f,
		      (struct fr){ .src = "::",
				   .dst = "ff02::1:ff00:15",
				   .proto = FR_ICMP6,
				   .icmp_type = 135,
				   .ttl = 255,
				   .payload = ndp_target(GUEST6, t),
				   .payload_len = 16 },
		      0),
		  NF_PASS_NDP);
	/* A neighbour solicitation to a routed address could carry data out: no. */
	reason_is(out(f,
		      (struct fr){ .dst = "2606:4700::1",
				   .proto = FR_ICMP6,
				   .icmp_type = 135,
				   .ttl = 255 },
		      0),
		  NF_DROP_PROTO);
	reason_is(out(f,
		      (struct fr){ .src = GUEST_LL,
				   .dst = "fe80::1",
				   .proto = FR_ICMP6,
				   .icmp_type = 136,
				   .ttl = 255,
				   .payload = ndp_target(GUEST6, t),
				   .payload_len = 16 },
		      0),
		  NF_PASS_NDP);
	reason_is(out(f,
		      (struct fr){ .src = GUEST_LL,
				   .dst = "ff02::2",
				   .proto = FR_ICMP6,
				   .icmp_type = 133,
				   .ttl = 64 },
		      0),
		  NF_DROP_PROTO);
	reason_is(out(f,
		      (struct fr){ .src = GUEST_LL,
				   .dst = "ff02::1",
				   .proto = FR_ICMP6,
				   .icmp_type = 134,
				   .ttl = 255 },
		      0),
		  NF_DROP_PROTO);
	reason_is(out(f,
		      (struct fr){ .src = GUEST_LL,
				   .dst = "ff02::16",
				   .proto = FR_ICMP6,
				   .icmp_type = 143,
				   .ttl = 1 },
		      0),
		  NF_PASS_NDP);
	reason_is(in(f,
		     (struct fr){ .src = "fe80::1",
				  .dst = "ff02::1",
				  .dst_mac = (const uint8_t *)"\x33\x33\0\0\0\1",
				  .proto = FR_ICMP6,
				  .icmp_type = 134,
				  .ttl = 255 },
		     0),
		  NF_PASS_NDP);
	reason_is(in(f,
		     (struct fr){ .src = "fe80::1",
				  .dst = GUEST6,
				  .proto = FR_ICMP6,
				  .icmp_type = 137,
				  .ttl = 255 },
		     0),
		  NF_DROP_PROTO);
	net_filter_destroy(f);
}

/* The guest's DNS query for name (A) from port, id; and the resolver's answer with one A record. */
static enum nf_reason query(struct net_filter *f, const char *resolver, uint16_t port, uint16_t id,
			    const char *name)
{
	uint8_t m[512];
	size_t n = dns_msg(m, id, false, name, 1, 0);

	return out(f,
		   (struct fr){ .dst = resolver,
				.proto = FR_UDP,
				.sport = port,
				.dport = 53,
				.payload = m,
				.payload_len = n },
		   0);
}

static enum nf_reason reply(struct net_filter *f, const char *resolver, uint16_t port, uint16_t id,
			    const char *qname, const char *owner, const char *addr)
{
	uint8_t m[512];
	size_t n = dns_msg(m, id, true, qname, 1, 1);

	n = dns_rr_a(m, n, owner, addr, 300);
	return in(f,
		  (struct fr){ .src = resolver,
			       .proto = FR_UDP,
			       .sport = 53,
			       .dport = port,
			       .payload = m,
			       .payload_len = n },
		  S);
}

static const char dns_rules[] =
	"{\"allow\":[{\"host\":\"api.github.com\",\"proto\":\"tcp\",\"ports\":443},"
	"{\"host\":\"*.example.com\"}],\"dns\":[\"" RESOLVER "\"]}";

static void test_dns_binding(void **state)
{
	struct net_filter *f = filter(dns_rules);

	(void)state;
	/* Nothing resolved yet: the address is just an address. */
	reason_is(out(f, SYN("140.82.112.5", 443), S), NF_DROP_DEFAULT);
	reason_is(query(f, RESOLVER, 40000, 0x1234, "api.github.com"), NF_PASS_DNS);
	reason_is(reply(f, RESOLVER, 40000, 0x1234, "api.github.com", NULL, "140.82.112.5"),
		  NF_PASS_FLOW);
	reason_is(out(f, SYN("140.82.112.5", 443), 2 * S), NF_PASS_NEW);
	assert_int_equal(net_filter_rules(f)->allow[0].ctr.flows, 1);
	/* The rule's port and protocol still apply. */
	reason_is(out(f, SYN("140.82.112.5", 22), 2 * S), NF_DROP_DEFAULT);
	/* A wildcard rule. */
	reason_is(query(f, RESOLVER, 40001, 7, "cdn.example.com"), NF_PASS_DNS);
	reason_is(reply(f, RESOLVER, 40001, 7, "cdn.example.com", NULL, "93.184.216.34"),
		  NF_PASS_FLOW);
	reason_is(out(f, SYN("93.184.216.34", 8080), 2 * S), NF_PASS_NEW);
	/* After the binding's TTL (clamped to at least a minute) new flows drop again. */
	reason_is(out(f, SYN("140.82.112.5", 443), S + 301 * S), NF_DROP_DEFAULT);
	net_filter_destroy(f);
}

static void test_dns_spoofing(void **state)
{
	struct net_filter *f = filter(
		"{\"outbound_internet\":true,\"allow\":[{\"host\":\"api.github.com\"},"
		"{\"host\":\"internal.example.com\"}],\"dns\":[\"" RESOLVER "\"]}");

	(void)state;
	/* What reaches the guest: answers on its flow to the resolver pass whatever
	 * they say (the next test shows they bind nothing). */
	reason_is(query(f, RESOLVER, 40000, 0x1234, "api.github.com"), NF_PASS_DNS);
	/* Wrong id: passes to the guest (its flow), binds nothing. */
	reason_is(reply(f, RESOLVER, 40000, 0x1235, "api.github.com", NULL, "1.2.3.4"),
		  NF_PASS_FLOW);
	/* An answer about another name; a record for another owner. */
	reason_is(reply(f, RESOLVER, 40000, 0x1234, "evil.com", NULL, "1.2.3.5"), NF_PASS_FLOW);
	reason_is(reply(f, RESOLVER, 40000, 0x1234, "api.github.com", "evil.com", "1.2.3.6"),
		  NF_PASS_FLOW);
	/* The genuine answer, after those, still binds (nothing consumed the query). */
	reason_is(reply(f, RESOLVER, 40000, 0x1234, "api.github.com", NULL, "1.2.3.7"),
		  NF_PASS_FLOW);
	/* A resolver the rules do not name: its answers bind nothing, even matching a query. */
	reason_is(query(f, "8.8.8.8", 40002, 0x4444, "api.github.com"), NF_PASS_NEW);
	reason_is(reply(f, "8.8.8.8", 40002, 0x4444, "api.github.com", NULL, "1.2.3.8"),
		  NF_PASS_FLOW);
	/* An answer nobody asked for is unsolicited before it is anything else. */
	reason_is(reply(f, RESOLVER, 40999, 0x1234, "api.github.com", NULL, "1.2.3.9"),
		  NF_DROP_UNSOLICITED);
	/* DNS rebinding: a name bound to a private or reserved address opens nothing. */
	reason_is(query(f, RESOLVER, 40003, 9, "internal.example.com"), NF_PASS_DNS);
	reason_is(reply(f, RESOLVER, 40003, 9, "internal.example.com", NULL, "169.254.169.254"),
		  NF_PASS_FLOW);
	reason_is(out(f, SYN("169.254.169.254", 80), 2 * S), NF_DROP_RESERVED);
	net_filter_destroy(f);
}

/* Without outbound_internet, what an answer bound shows in the verdicts of new flows. */
static void test_dns_spoofing_binds_nothing(void **state)
{
	struct net_filter *f = filter(
		"{\"allow\":[{\"host\":\"api.github.com\"},{\"cidr\":\"8.8.8.8\",\"ports\":53}],"
		"\"dns\":[\"" RESOLVER "\"]}");

	(void)state;
	reason_is(query(f, RESOLVER, 40000, 0x1234, "api.github.com"), NF_PASS_DNS);
	reply(f, RESOLVER, 40000, 0x1235, "api.github.com", NULL, "1.2.3.4"); /* wrong id */
	reply(f, RESOLVER, 40000, 0x1234, "evil.com", NULL, "1.2.3.5");       /* other question */
	reason_is(query(f, "8.8.8.8", 40002, 0x4444, "api.github.com"), NF_PASS_NEW);
	reply(f, "8.8.8.8", 40002, 0x4444, "api.github.com", NULL, "1.2.3.8"); /* not a resolver */
	reason_is(out(f, SYN("1.2.3.4", 443), 2 * S), NF_DROP_DEFAULT);
	reason_is(out(f, SYN("1.2.3.5", 443), 2 * S), NF_DROP_DEFAULT);
	reason_is(out(f, SYN("1.2.3.6", 443), 2 * S), NF_DROP_DEFAULT);
	reason_is(out(f, SYN("1.2.3.8", 443), 2 * S), NF_DROP_DEFAULT);
	/* The genuine answer binds; the same answer replayed binds no other address. */
	reply(f, RESOLVER, 40000, 0x1234, "api.github.com", NULL, "1.2.3.7");
	reply(f, RESOLVER, 40000, 0x1234, "api.github.com", NULL, "1.2.3.10");
	reason_is(out(f, SYN("1.2.3.7", 443), 2 * S), NF_PASS_NEW);
	reason_is(out(f, SYN("1.2.3.10", 443), 2 * S), NF_DROP_DEFAULT);
	/* A genuine answer whose record belongs to another name binds nothing (and answers the query). */
	reason_is(query(f, RESOLVER, 40004, 0x2222, "api.github.com"), NF_PASS_DNS);
	reply(f, RESOLVER, 40004, 0x2222, "api.github.com", "evil.com", "1.2.3.6");
	reply(f, RESOLVER, 40004, 0x2222, "api.github.com", NULL, "1.2.3.12");
	reason_is(out(f, SYN("1.2.3.12", 443), 2 * S), NF_DROP_DEFAULT);
	/* Names no host rule wants are not even remembered. */
	reason_is(query(f, RESOLVER, 40005, 5, "other.org"), NF_PASS_DNS);
	reply(f, RESOLVER, 40005, 5, "other.org", NULL, "1.2.3.11");
	reason_is(out(f, SYN("1.2.3.11", 443), 2 * S), NF_DROP_DEFAULT);
	net_filter_destroy(f);
}

static void test_table_full(void **state)
{
	struct net_filter_config c = config(&lg);
	struct net_filter *f;
	struct fr s = SYN("1.1.1.1", 443);

	(void)state;
	c.conntrack_capacity = 8;
	f = filter_cfg(&c, "{\"outbound_internet\":true}");
	for (int i = 0; i < 8; i++) {
		s.sport = (uint16_t)(1000 + i);
		reason_is(out(f, s, 0), NF_PASS_NEW);
	}
	s.sport = 2000;
	reason_is(out(f, s, S), NF_DROP_TABLE_FULL);
	assert_non_null(strstr(lg.line, "drop_table_full"));
	/* Established flows are not evicted for new ones: they keep working. */
	reason_is(in(f,
		     (struct fr){ .src = "1.1.1.1",
				  .proto = FR_TCP,
				  .sport = 443,
				  .dport = 1000,
				  .tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK },
		     S),
		  NF_PASS_FLOW);
	assert_int_equal(net_filter_flow_count(f), 8);
	/* Once the unanswered ones time out, there is room again. */
	reason_is(out(f, s, CONNTRACK_TO_TCP_SYN_SENT + 1), NF_PASS_NEW);
	net_filter_destroy(f);
}

static void test_replace_cuts_flows(void **state)
{
	struct net_filter *f = filter(
		"{\"allow\":[{\"cidr\":\"1.1.1.0/24\"},{\"cidr\":\"2.2.2.2\"}]}");
	struct fr r1 = { .src = "1.1.1.1",
			 .proto = FR_TCP,
			 .sport = 443,
			 .dport = 40000,
			 .tcp_flags = PKT_TCP_ACK };
	struct fr r2 = r1,
		  o1 = { .dst = "1.1.1.1",
			 .proto = FR_TCP,
			 .sport = 40000,
			 .dport = 443,
			 .tcp_flags = PKT_TCP_ACK };
	struct nf_counters c;

	(void)state;
	r2.src = "2.2.2.2";
	reason_is(out(f, SYN("1.1.1.1", 443), 0), NF_PASS_NEW);
	reason_is(out(f, SYN("2.2.2.2", 443), 0), NF_PASS_NEW);
	reason_is(in(f, r1, 1), NF_PASS_FLOW);
	reason_is(in(f, r2, 1), NF_PASS_FLOW);
	lg.n = 0;
	/* 2.2.2.2 is now denied: its flow is cut, the other one stays (under its new rule). */
	assert_int_equal(net_filter_replace_rules(f,
						  rules("{\"allow\":[{\"cidr\":\"1.0.0.0/8\"}],"
							"\"deny\":[{\"cidr\":\"2.2.2.2\"}]}"),
						  2),
			 1);
	assert_int_equal(lg.n, 1);
	assert_true(lg.last.cut);
	assert_non_null(
		strstr(lg.line, "egress cut tcp 10.0.2.15:40000 -> 2.2.2.2:443 rule deny[0]"));
	reason_is(in(f, r2, 3), NF_DROP_UNSOLICITED);
	reason_is(in(f, r1, 3), NF_PASS_FLOW);
	reason_is(out(f, o1, 3), NF_PASS_FLOW);
	assert_int_equal(net_filter_rules(f)->allow[0].ctr.flows, 1);
	/* Nothing allows anything: the last flow is cut too. */
	assert_int_equal(net_filter_replace_rules(f, NULL, 4), 1);
	reason_is(out(f, o1, 5), NF_DROP_TCP_STATE);
	reason_is(in(f, r1, 5), NF_DROP_UNSOLICITED);
	net_filter_counters(f, &c);
	assert_int_equal(c.flows_cut, 2);
	assert_int_equal(net_filter_flow_count(f), 0);
	net_filter_destroy(f);
}

/* Flows to a host rule survive a replacement that keeps the rule, even after the TTL. */
static void test_replace_keeps_host_flows(void **state)
{
	struct net_filter *f = filter(dns_rules);

	(void)state;
	query(f, RESOLVER, 40000, 1, "api.github.com");
	reply(f, RESOLVER, 40000, 1, "api.github.com", NULL, "140.82.112.5");
	reason_is(out(f, SYN("140.82.112.5", 443), 2 * S), NF_PASS_NEW);
	reason_is(in(f,
		     (struct fr){ .src = "140.82.112.5",
				  .proto = FR_TCP,
				  .sport = 443,
				  .dport = 40000,
				  .tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK },
		     3 * S),
		  NF_PASS_FLOW);
	assert_int_equal(net_filter_replace_rules(f, rules(dns_rules), 4000 * S), 0);
	assert_int_equal(net_filter_replace_rules(f, rules("{\"dns\":[\"" RESOLVER "\"]}"),
						  4001 * S),
			 1);
	net_filter_destroy(f);
}

/* An IPv4 UDP datagram in two fragments: first (with ports) and second. */
static size_t fragment(uint8_t *fr, const char *src, const char *dst, bool first, uint16_t id,
		       const uint8_t *dmac)
{
	struct fr s = { .src = src,
			.dst = dst,
			.proto = FR_UDP,
			.sport = 5000,
			.dport = 7000,
			.payload = "0123456789abcdef",
			.payload_len = 16 };
	size_t n;

	if (dmac) {
		s.src_mac = fr_gw_mac;
		s.dst_mac = dmac;
		s.sport = 7000;
		s.dport = 5000;
	}
	n = fr_build(fr, &s);
	fr_put16(fr + 18, id);
	if (first) {
		fr_put16(fr + 38, 100); /* the datagram is longer than this fragment */
		fr_put16(fr + 20, 0x2000);
	} else {
		fr_put16(fr + 20, 3); /* offset 24 */
	}
	return n;
}

static void test_fragments(void **state)
{
	struct net_filter *f = filter("{\"allow\":[{\"cidr\":\"9.9.9.9\",\"proto\":\"udp\"}]}");
	uint8_t fr[2048];
	size_t n;

	(void)state;
	/* A later fragment whose first did not pass drops. */
	n = fragment(fr, GUEST, "9.9.9.9", false, 77, NULL);
	reason_is(send_frame(f, true, fr, n, 0), NF_DROP_FRAGMENT);
	n = fragment(fr, GUEST, "9.9.9.9", true, 77, NULL);
	reason_is(send_frame(f, true, fr, n, 0), NF_PASS_NEW);
	n = fragment(fr, GUEST, "9.9.9.9", false, 77, NULL);
	reason_is(send_frame(f, true, fr, n, 0), NF_PASS_FRAGMENT);
	/* The first fragment's word holds for its own datagram only. */
	n = fragment(fr, GUEST, "9.9.9.9", false, 78, NULL);
	reason_is(send_frame(f, true, fr, n, 0), NF_DROP_FRAGMENT);
	n = fragment(fr, GUEST, "9.9.9.8", false, 77, NULL);
	reason_is(send_frame(f, true, fr, n, 0), NF_DROP_FRAGMENT);
	/* A denied first fragment lets no later one through. */
	n = fragment(fr, GUEST, "9.9.9.8", true, 79, NULL);
	reason_is(send_frame(f, true, fr, n, 0), NF_DROP_DEFAULT);
	n = fragment(fr, GUEST, "9.9.9.8", false, 79, NULL);
	reason_is(send_frame(f, true, fr, n, 0), NF_DROP_FRAGMENT);
	/* Inbound: the reply's fragments follow its first fragment. */
	n = fragment(fr, "9.9.9.9", GUEST, true, 500, fr_guest_mac);
	reason_is(send_frame(f, false, fr, n, 1), NF_PASS_FLOW);
	n = fragment(fr, "9.9.9.9", GUEST, false, 500, fr_guest_mac);
	reason_is(send_frame(f, false, fr, n, 1), NF_PASS_FRAGMENT);
	/* Replacing the rules forgets what fragments were allowed, and they expire. */
	net_filter_replace_rules(f, rules("{\"allow\":[{\"cidr\":\"9.9.9.9\",\"proto\":\"udp\"}]}"),
				 2);
	reason_is(send_frame(f, false, fr, n, 2), NF_DROP_FRAGMENT);
	n = fragment(fr, GUEST, "9.9.9.9", true, 90, NULL);
	reason_is(send_frame(f, true, fr, n, 3), NF_PASS_FLOW);
	n = fragment(fr, GUEST, "9.9.9.9", false, 90, NULL);
	reason_is(send_frame(f, true, fr, n, 3 + CONNTRACK_TO_FRAG + 1), NF_DROP_FRAGMENT);
	net_filter_destroy(f);
}

/* IPv6: a fragment header, then destination options, then UDP; the later fragment names the options. */
static size_t fragment6(uint8_t *fr, bool first, uint32_t id)
{
	struct fr s = { .src = GUEST6,
			.dst = "2606:4700::9",
			.proto = FR_UDP,
			.sport = 5000,
			.dport = 7000,
			.payload = "0123456789abcdef",
			.payload_len = 16 };
	size_t n = fr_build(fr, &s); /* 54 + 24 */
	uint8_t ext[16] = { 60, 0, 0, 1, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0 };

	fr_put32(ext + 4, id);
	if (!first)
		fr_put16(ext + 2, 24); /* offset 24, last */
	memmove(fr + 70, fr + 54, n - 54);
	memcpy(fr + 54, ext, 16);
	fr[20] = 44;
	fr_put16(fr + 18, (uint16_t)(n - 54 + 16));
	if (first)
		fr_put16(fr + 70 + 4, 200); /* the UDP datagram is longer than this fragment */
	return n + 16;
}

static void test_fragments6(void **state)
{
	struct net_filter *f = filter(
		"{\"allow\":[{\"cidr\":\"2606:4700::/32\",\"proto\":\"udp\"}]}");
	uint8_t fr[2048];

	(void)state;
	reason_is(send_frame(f, true, fr, fragment6(fr, false, 1), 0), NF_DROP_FRAGMENT);
	reason_is(send_frame(f, true, fr, fragment6(fr, true, 1), 0), NF_PASS_NEW);
	reason_is(send_frame(f, true, fr, fragment6(fr, false, 1), 0), NF_PASS_FRAGMENT);
	reason_is(send_frame(f, true, fr, fragment6(fr, false, 2), 0), NF_DROP_FRAGMENT);
	net_filter_destroy(f);
}

static void test_rate_limit(void **state)
{
	struct net_filter_config c = config(&lg);
	struct net_filter *f;
	struct fr s = { .dst = "1.1.1.1", .proto = FR_UDP, .sport = 1, .dport = 2 };

	(void)state;
	c.tx_packets = (struct rate_bucket_cfg){ .size = 5, .refill_ms = 1000 };
	c.rx_bytes = (struct rate_bucket_cfg){ .size = 100, .refill_ms = 1000 };
	f = filter_cfg(&c, "{\"outbound_internet\":true}");
	for (int i = 0; i < 5; i++)
		reason_is(out(f, s, 0), i ? NF_PASS_FLOW : NF_PASS_NEW);
	reason_is(out(f, s, 0), NF_DROP_RATE);
	assert_int_equal(net_filter_rate_wait_ns(f, NF_EGRESS, 60, 0), 200000000);
	reason_is(out(f, s, 200000000), NF_PASS_FLOW);
	/* Inbound bytes: a 42-byte frame twice, not a third time (100 bytes). */
	s = (struct fr){ .src = "1.1.1.1", .proto = FR_UDP, .sport = 2, .dport = 1 };
	reason_is(in(f, s, 0), NF_PASS_FLOW);
	reason_is(in(f, s, 0), NF_PASS_FLOW);
	reason_is(in(f, s, 0), NF_DROP_RATE);
	net_filter_destroy(f);

	/* A bad configuration is refused with its field named; the rules are freed. */
	c.rx_bytes.refill_ms = 0;
	{
		struct net_filter *g;
		struct err e;

		assert_int_equal(net_filter_create(&c, rules("{}"), 0, &g, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "rx bytes"));
	}
}

static void test_log_rate_limit(void **state)
{
	struct net_filter_config c = config(&lg);
	struct net_filter *f;

	(void)state;
	memset(&lg, 0, sizeof(lg));
	c.log_per_s = 1;
	c.log_burst = 2;
	f = filter_cfg(&c, "{}");
	for (int i = 0; i < 5; i++)
		reason_is(out(f, SYN("1.1.1.1", 443), 0), NF_DROP_DEFAULT);
	assert_int_equal(lg.n, 2);
	reason_is(out(f, SYN("1.1.1.2", 80), S), NF_DROP_DEFAULT);
	assert_int_equal(lg.n, 3);
	assert_int_equal(lg.last.suppressed, 3);
	assert_non_null(
		strstr(lg.line,
		       "egress drop_default tcp 10.0.2.15:40000 -> 1.1.1.2:80 (3 more not logged)"));
	{
		struct nf_counters k;

		net_filter_counters(f, &k);
		assert_int_equal(k.log_suppressed, 3);
		assert_int_equal(k.packets[NF_EGRESS][NF_DROP_DEFAULT], 6);
	}
	net_filter_destroy(f);
}

static void test_json(void **state)
{
	struct net_filter *f = filter(
		"{\"outbound_internet\":true,\"deny\":[{\"cidr\":\"1.1.1.1\"}]}");
	json_t *j, *v;

	(void)state;
	out(f, SYN("1.1.1.1", 443), 0);
	out(f, SYN("1.1.1.2", 443), 0);
	j = net_filter_to_json(f);
	assert_non_null(j);
	v = json_object_get(json_object_get(j, "rules"), "outbound_internet");
	assert_true(json_is_true(v));
	v = json_object_get(json_object_get(json_object_get(j, "counters"), "egress"), "drop_rule");
	assert_int_equal(json_integer_value(json_object_get(v, "packets")), 1);
	v = json_object_get(json_object_get(json_object_get(j, "counters"), "rules"),
			    "outbound_internet");
	assert_int_equal(json_integer_value(json_object_get(v, "flows")), 1);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(j, "counters"), "flows")),
			 1);
	json_decref(j);
	net_filter_destroy(f);
}

/* Valid frames of many kinds, both ways, for the truncation and fuzz loops. */
static size_t sample(int i, uint8_t *fr, bool *egress)
{
	uint8_t m[128];
	size_t n;
	struct fr s;

	*egress = i % 2 == 0;
	switch (i) {
	case 0:
		n = dns_msg(m, 0x1234, false, "api.github.com", 1, 0);
		s = (struct fr){ .src = GUEST,
				 .dst = RESOLVER,
				 .proto = FR_UDP,
				 .sport = 40000,
				 .dport = 53,
				 .payload = m,
				 .payload_len = n };
		break;
	case 1:
		n = dns_msg(m, 0x1234, true, "api.github.com", 1, 1);
		n = dns_rr_a(m, n, NULL, "140.82.112.5", 300);
		s = (struct fr){ .src = RESOLVER,
				 .dst = GUEST,
				 .src_mac = fr_gw_mac,
				 .dst_mac = fr_guest_mac,
				 .proto = FR_UDP,
				 .sport = 53,
				 .dport = 40000,
				 .payload = m,
				 .payload_len = n };
		break;
	case 2:
		s = SYN("140.82.112.5", 443);
		s.src = GUEST;
		break;
	case 3:
		s = (struct fr){ .src = "140.82.112.5",
				 .dst = GUEST,
				 .src_mac = fr_gw_mac,
				 .dst_mac = fr_guest_mac,
				 .proto = FR_TCP,
				 .sport = 443,
				 .dport = 40000,
				 .tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK };
		break;
	case 4:
		s = (struct fr){ .src = GUEST6,
				 .dst = "2606:4700::1",
				 .proto = FR_ICMP6,
				 .icmp_type = 128,
				 .icmp_id = 1 };
		break;
	case 5:
		s = (struct fr){ .src = "fe80::1",
				 .dst = "ff02::1",
				 .src_mac = fr_gw_mac,
				 .dst_mac = fr_guest_mac,
				 .proto = FR_ICMP6,
				 .icmp_type = 134,
				 .ttl = 255 };
		break;
	case 6:
		return fr_arp(fr, fr_guest_mac, 1, fr_guest_mac, GUEST, "10.0.2.2");
	default: {
		struct fr q = { .src = GUEST,
				.dst = "140.82.112.5",
				.proto = FR_TCP,
				.sport = 40000,
				.dport = 443 };

		n = fr_ip(m, &q);
		s = (struct fr){ .src = "192.0.2.1",
				 .dst = GUEST,
				 .src_mac = fr_gw_mac,
				 .dst_mac = fr_guest_mac,
				 .proto = FR_ICMP,
				 .icmp_type = 3,
				 .payload = m,
				 .payload_len = 28 };
	}
	}
	return fr_build(fr, &s);
}
#define SAMPLES 8

/* Every sample, cut at every length short of whole, drops; the filter is none the worse. */
static void test_truncated_frames(void **state)
{
	struct net_filter *f = filter(dns_rules);
	uint8_t fr[2048];
	bool egress;

	(void)state;
	for (int i = 0; i < SAMPLES; i++) {
		size_t n = sample(i, fr, &egress);

		for (size_t cut = 0; cut < n; cut++) {
			enum nf_reason r = send_frame(f, egress, fr, cut, 0);

			if (r < NF_DROP_RATE)
				fail_msg("sample %d cut to %zu of %zu bytes passed (%s)", i, cut, n,
					 nf_reason_name(r));
		}
	}
	/* The whole samples still do what they should afterwards. */
	reason_is(send_frame(f, true, fr, sample(0, fr, &egress), 0), NF_PASS_DNS);
	reason_is(send_frame(f, false, fr, sample(1, fr, &egress), 0), NF_PASS_FLOW);
	reason_is(send_frame(f, true, fr, sample(2, fr, &egress), 0), NF_PASS_NEW);
	reason_is(send_frame(f, false, fr, sample(3, fr, &egress), 0), NF_PASS_FLOW);
	reason_is(send_frame(f, false, fr, sample(7, fr, &egress), 0), NF_PASS_RELATED);
	net_filter_destroy(f);
}

/* Random mutations both ways: no sanitizer report, tables within their bounds. */
static void test_fuzz(void **state)
{
	struct net_filter_config c = config(&lg);
	struct net_filter *f;
	uint64_t seed = 0x7365656473656564ULL;
	uint8_t fr[2048];
	bool egress;

	(void)state;
	c.conntrack_capacity = 64;
	c.dns_capacity = 32;
	f = filter_cfg(&c,
		       "{\"outbound_internet\":true,\"allow\":[{\"host\":\"*.github.com\"},"
		       "{\"cidr\":\"10.0.0.0/8\"}],\"dns\":[\"" RESOLVER "\"]}");
	for (int it = 0; it < 100000; it++) {
		size_t n = sample((int)(fr_rand(&seed) % SAMPLES), fr, &egress);
		int flips = (int)(fr_rand(&seed) % 4);

		for (int k = 0; k < flips; k++)
			fr[14 + fr_rand(&seed) % (n - 14)] = (uint8_t)fr_rand(&seed);
		if (fr_rand(&seed) % 4 == 0)
			n = fr_rand(&seed) % (n + 1);
		send_frame(f, egress, fr, n, (uint64_t)it * 1000000);
	}
	assert_true(net_filter_flow_count(f) <= 64);
	net_filter_destroy(f);
}

/* The caller's steered flows, for cfg.steered: one 4-tuple. */
struct steered_set {
	bool on;
	struct conntrack_key key;
	int asked;
};

static bool steered_cb(void *ctx, const struct conntrack_key *k)
{
	struct steered_set *s = ctx;

	s->asked++;
	return s->on && !memcmp(&s->key, k, sizeof(*k));
}

static void steered_key(struct steered_set *s, const char *dst, uint16_t dport)
{
	struct net_addr g, r;

	memset(&s->key, 0, sizeof(s->key));
	net_addr_parse(GUEST, &g);
	net_addr_parse(dst, &r);
	s->key.family = g.family;
	s->key.proto = PKT_PROTO_TCP;
	memcpy(s->key.guest, g.b, 16);
	memcpy(s->key.remote, r.b, 16);
	s->key.gport = 40000;
	s->key.rport = dport;
	s->on = true;
}

#define ACK(d, p)     \
	((struct fr){ \
		.dst = d, .proto = FR_TCP, .sport = 40000, .dport = p, .tcp_flags = PKT_TCP_ACK })

static const char steer_rules[] =
	"{\"http\":[{\"host\":\"web.test\"},{\"host\":\"api.test\",\"ports\":[8080]}],"
	"\"deny\":[{\"cidr\":\"203.0.113.7\"}],\"dns\":[\"" RESOLVER "\"]}";

/*
 * SYNs to the ports `http` rules list are steered: past the allow rules,
 * outbound_internet and the private and host-address checks (the proxy
 * decides those), never past a deny rule, the reserved set, host_deny or
 * the source checks.
 */
static void test_steer_verdict(void **state)
{
	struct net_filter_config c = config(&lg);
	struct net_addr host;
	struct net_filter *f;
	struct nf_counters ctr;

	(void)state;
	memset(&lg, 0, sizeof(lg));
	net_addr_parse("198.51.100.5", &host);
	c.host_addrs = &host;
	c.n_host_addrs = 1;
	net_cidr_parse("10.0.2.2", &c.host_deny[0], NULL);
	c.n_host_deny = 1;
	f = filter_cfg(&c, steer_rules);
	reason_is(out(f, SYN("93.184.216.34", 80), 0), NF_STEER_NEW);
	reason_is(out(f, SYN("93.184.216.34", 443), 0), NF_STEER_NEW);
	reason_is(out(f, SYN("93.184.216.34", 8080), 0), NF_STEER_NEW);
	reason_is(out(f, SYN("2606:4700::1111", 443), 0), NF_STEER_NEW);
	/* Private and host addresses: the proxy's to decide (--allow-private). */
	reason_is(out(f, SYN("192.168.1.9", 80), 0), NF_STEER_NEW);
	reason_is(out(f, SYN("198.51.100.5", 443), 0), NF_STEER_NEW);
	/* Other ports and protocols: the rules, here the default deny. */
	reason_is(out(f, SYN("93.184.216.34", 22), 0), NF_DROP_DEFAULT);
	reason_is(out(f,
		      (struct fr){
			      .dst = "93.184.216.34", .proto = FR_UDP, .sport = 5000, .dport = 443 },
		      0),
		  NF_DROP_DEFAULT);
	/* Still dropped: a deny rule, the reserved set, host_deny, spoofing. */
	reason_is(out(f, SYN("203.0.113.7", 443), 0), NF_DROP_RULE);
	assert_int_equal(net_filter_rules(f)->deny[0].ctr.packets, 1);
	reason_is(out(f, SYN("169.254.169.254", 80), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("127.0.0.1", 443), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("64:ff9b::a9fe:a9fe", 80), 0), NF_DROP_RESERVED);
	reason_is(out(f, SYN("10.0.2.2", 80), 0), NF_DROP_RESERVED);
	{
		struct fr s = SYN("93.184.216.34", 80);

		s.src = "10.0.2.16";
		reason_is(out(f, s, 0), NF_DROP_SPOOF);
		s.src = NULL;
		s.src_mac = fr_gw_mac;
		reason_is(out(f, s, 0), NF_DROP_SPOOF);
	}
	/* Nothing tracked: steered flows are the caller's endpoint's. */
	assert_int_equal(net_filter_flow_count(f), 0);
	net_filter_counters(f, &ctr);
	assert_int_equal(ctr.packets[NF_EGRESS][NF_STEER_NEW], 6);
	assert_true(ctr.bytes[NF_EGRESS][NF_STEER_NEW] > 6 * 54);
	assert_string_equal(nf_reason_name(NF_STEER_NEW), "steer_new");
	assert_string_equal(nf_reason_name(NF_STEER_FLOW), "steer_flow");
	net_filter_destroy(f);
}

/* Later segments: to the endpoint when it holds the flow, else as before (a reset). */
static void test_steer_later_segments(void **state)
{
	struct net_filter_config c = config(&lg);
	struct steered_set set = { 0 };
	struct net_filter *f;

	(void)state;
	f = filter_cfg(&c, steer_rules);
	/* No callback: a segment of no flow is a TCP state drop (the device resets it). */
	reason_is(out(f, ACK("93.184.216.34", 80), 0), NF_DROP_TCP_STATE);
	net_filter_destroy(f);

	c.steered = steered_cb;
	c.steered_ctx = &set;
	f = filter_cfg(&c, steer_rules);
	reason_is(out(f, ACK("93.184.216.34", 80), 0), NF_DROP_TCP_STATE);
	assert_true(set.asked >= 1);
	steered_key(&set, "93.184.216.34", 80);
	reason_is(out(f, SYN("93.184.216.34", 80), 0), NF_STEER_NEW);
	reason_is(out(f, ACK("93.184.216.34", 80), 0), NF_STEER_FLOW);
	{
		struct fr fin = ACK("93.184.216.34", 80);

		fin.tcp_flags |= PKT_TCP_FIN;
		reason_is(out(f, fin, 0), NF_STEER_FLOW);
		fin.tcp_flags = PKT_TCP_RST;
		reason_is(out(f, fin, 0), NF_STEER_FLOW);
		/* Spoofed, it never reaches the endpoint. */
		fin.tcp_flags = PKT_TCP_ACK;
		fin.src = "10.0.2.16";
		reason_is(out(f, fin, 0), NF_DROP_SPOOF);
	}
	/* Another 4-tuple is not the endpoint's. */
	reason_is(out(f, ACK("93.184.216.35", 80), 0), NF_DROP_TCP_STATE);
	/* New rules without `http`: new flows follow them, the live one goes on. */
	assert_int_equal(net_filter_replace_rules(f, rules("{\"outbound_internet\":true}"), S), 0);
	reason_is(out(f, ACK("93.184.216.34", 80), S), NF_STEER_FLOW);
	{
		struct fr s = SYN("93.184.216.35", 80);

		reason_is(out(f, s, S), NF_PASS_NEW);
		/* That flow is tracked: its segments pass, not asked of the endpoint. */
		set.asked = 0;
		reason_is(out(f, ACK("93.184.216.35", 80), S), NF_PASS_FLOW);
		assert_int_equal(set.asked, 0);
	}
	/* The port steered again: the tracked flow's segments still pass, a
	 * new SYN on its 4-tuple is steered and ends the tracked flow. */
	assert_int_equal(net_filter_replace_rules(f, rules(steer_rules), 2 * S), 1);
	assert_int_equal(net_filter_flow_count(f), 0);
	net_filter_destroy(f);
	f = filter_cfg(&c, "{\"outbound_internet\":true}");
	reason_is(out(f, SYN("93.184.216.36", 443), 0), NF_PASS_NEW);
	reason_is(in(f,
		     (struct fr){ .src = "93.184.216.36",
				  .proto = FR_TCP,
				  .sport = 443,
				  .dport = 40000,
				  .tcp_flags = PKT_TCP_SYN | PKT_TCP_ACK },
		     0),
		  NF_PASS_FLOW);
	net_filter_replace_rules(
		f, rules("{\"outbound_internet\":true,\"http\":[{\"host\":\"web.test\"}]}"), S);
	reason_is(out(f, ACK("93.184.216.36", 443), S), NF_PASS_FLOW);
	assert_int_equal(net_filter_flow_count(f), 1);
	reason_is(out(f, SYN("93.184.216.36", 443), 2 * S), NF_STEER_NEW);
	assert_int_equal(net_filter_flow_count(f), 0);
	net_filter_destroy(f);
}

/* Steered segments take no rate tokens (with an endpoint): tcp_term's windows pace them. */
static void test_steered_segments_are_not_rate_limited(void **state)
{
	struct net_filter_config c = config(&lg);
	struct steered_set set = { 0 };
	struct fr u = { .src = GUEST, .dst = "1.1.1.1", .proto = FR_UDP, .sport = 1, .dport = 2 };
	struct fr syn = SYN("93.184.216.34", 443);
	struct net_filter *f;
	uint8_t fr[2048];
	size_t n;

	(void)state;
	c.tx_packets = (struct rate_bucket_cfg){ .size = 2, .refill_ms = 1000 };
	c.steered = steered_cb;
	c.steered_ctx = &set;
	f = filter_cfg(&c, "{\"outbound_internet\":true,\"http\":[{\"host\":\"web.test\"}]}");
	reason_is(out(f, u, 0), NF_PASS_NEW);
	reason_is(out(f, u, 0), NF_PASS_FLOW);
	reason_is(out(f, u, 0), NF_DROP_RATE);
	steered_key(&set, "93.184.216.34", 443);
	for (int i = 0; i < 10; i++) {
		reason_is(out(f, SYN("93.184.216.34", 443), 0), NF_STEER_NEW);
		reason_is(out(f, ACK("93.184.216.34", 443), 0), NF_STEER_FLOW);
	}
	syn.src = GUEST;
	n = fr_build(fr, &syn);
	fr[14 + 15] = 16;                                 /* from 10.0.2.16 */
	assert_true(net_filter_rate_exempt(f, fr, n, 0)); /* a candidate only: */
	reason_is(send_frame(f, true, fr, n, 0), NF_DROP_SPOOF);
	/* Anything else still waits: another port, a flow not the endpoint's, UDP. */
	reason_is(out(f, SYN("93.184.216.34", 22), 0), NF_DROP_RATE);
	reason_is(out(f, ACK("93.184.216.35", 443), 0), NF_DROP_RATE);
	n = fr_build(fr, &u);
	assert_false(net_filter_rate_exempt(f, fr, n, 0));
	net_filter_destroy(f);
	/* Without an endpoint nothing is exempt (a steered SYN is reset by the device). */
	c.steered = NULL;
	f = filter_cfg(&c, "{\"http\":[{\"host\":\"web.test\"}]}");
	n = fr_build(fr, &syn);
	assert_false(net_filter_rate_exempt(f, fr, n, 0));
	net_filter_destroy(f);
}

/* The name the guest resolved to an address, for the PROXY header's AUTHORITY. */
static void test_name_of(void **state)
{
	struct net_filter *f = filter(steer_rules);
	struct net_addr a;
	char name[NET_HOST_MAX + 1] = "x";

	(void)state;
	net_addr_parse("93.184.216.34", &a);
	assert_false(net_filter_name_of(f, &a, S, name));
	assert_string_equal(name, "");
	reason_is(query(f, RESOLVER, 40000, 9, "web.test"), NF_PASS_DNS);
	reason_is(reply(f, RESOLVER, 40000, 9, "web.test", NULL, "93.184.216.34"), NF_PASS_FLOW);
	assert_true(net_filter_name_of(f, &a, 2 * S, name));
	assert_string_equal(name, "web.test");
	/* Expired bindings still name it (the guest resolved it). */
	assert_true(net_filter_name_of(f, &a, 3600 * S, name));
	assert_string_equal(name, "web.test");
	net_filter_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stateful_tcp),
		cmocka_unit_test(test_tcp_close_and_reuse),
		cmocka_unit_test(test_udp_and_icmp),
		cmocka_unit_test(test_related_icmp_errors),
		cmocka_unit_test(test_always_deny),
		cmocka_unit_test(test_host_deny),
		cmocka_unit_test(test_host_addrs),
		cmocka_unit_test(test_source_without_address),
		cmocka_unit_test(test_ndp_spoofing),
		cmocka_unit_test(test_deny_beats_allow),
		cmocka_unit_test(test_spoofing),
		cmocka_unit_test(test_infrastructure),
		cmocka_unit_test(test_dns_binding),
		cmocka_unit_test(test_dns_spoofing),
		cmocka_unit_test(test_dns_spoofing_binds_nothing),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_replace_cuts_flows),
		cmocka_unit_test(test_replace_keeps_host_flows),
		cmocka_unit_test(test_fragments),
		cmocka_unit_test(test_fragments6),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_log_rate_limit),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_truncated_frames),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_steer_verdict),
		cmocka_unit_test(test_steer_later_segments),
		cmocka_unit_test(test_steered_segments_are_not_rate_limited),
		cmocka_unit_test(test_name_of),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
