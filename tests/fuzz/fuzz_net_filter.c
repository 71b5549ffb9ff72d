/*
 * fuzz_net_filter: frames both ways through the packet filter
 * (devices/net/net_filter.c) and what it stands on: the frame parser
 * (pkt_parse.c), connection tracking (net_conntrack.c), DNS answer binding
 * (dns_bind.c), rate limits, and a rule set (lib/netrules/) the input
 * picks from a list or writes itself, replaced midway like PUT /firewall.
 *
 * Input: rule choice (1 byte: < 0x80 a canned set, else a length-prefixed
 * JSON text follows), config byte (addresses, rate limits), then frames:
 * [flags: bit 0 ingress, bit 1 replace the rules with canned set (byte
 * 2 >> 2), bits 2..7 time step][len: 2][frame].
 * Invariants: the verdict follows the reason; every frame counts under
 * exactly one reason; a malformed drop names a parse error; the flow
 * table never holds more than its capacity, and a rule replacement cuts
 * no more flows than there were; whatever pkt_parse accepts points inside
 * the frame; the filter's JSON and log lines are well formed; the reset
 * answering an untracked guest segment (tcp_reset.c) parses as a TCP
 * reset back to the guest, ports swapped; the flows a snapshot would keep
 * are live TCP ones, and each makes a probe that parses.
 */
#include <errno.h>

#include "devices/net/net_filter.h"
#include "devices/net/pkt_parse.h"
#include "devices/net/tcp_reset.h"
#include "fuzz.h"
#include "net_canned.h"

static void log_cb(void *ctx, const struct nf_log_entry *e)
{
	char line[256];

	(void)ctx;
	FUZZ_ASSERT(e->reason >= NF_DROP_RATE && e->reason < NF_STEER_NEW);
	nf_log_format(e, line, sizeof(line));
	FUZZ_ASSERT(memchr(line, 0, sizeof(line)));
}

/* The caller's steered flows, as tcp_term would hold some: any TCP flow from an odd port. */
static bool steered_cb(void *ctx, const struct conntrack_key *k)
{
	(void)ctx;
	FUZZ_ASSERT(k->proto == PKT_PROTO_TCP);
	return k->gport & 1;
}

/* Whatever pkt_parse accepted lies inside the frame. */
static void check_parse(const uint8_t *fr, size_t len)
{
	struct pkt p;
	int r = pkt_parse(fr, len, &p);

	FUZZ_ASSERT(r <= 0 && r > -PKT_E_COUNT);
	FUZZ_ASSERT(pkt_strerror(r));
	if (r < 0 || p.l3 == PKT_L3_ARP)
		return;
	FUZZ_ASSERT(p.ip >= fr && p.ip_len <= len && (size_t)(p.ip - fr) <= len - p.ip_len);
	if (p.l4) {
		FUZZ_ASSERT(p.l4 >= p.ip && (size_t)(p.l4 - p.ip) <= p.ip_len &&
			    p.l4_len <= p.ip_len - (size_t)(p.l4 - p.ip));
	}
	if (p.payload && p.payload_len) {
		FUZZ_ASSERT(p.payload >= fr && (size_t)(p.payload - fr) <= len &&
			    p.payload_len <= len - (size_t)(p.payload - fr));
	}
}

/* The reset the device would answer an untracked guest segment with. */
static void check_reset(const uint8_t *fr, size_t len)
{
	uint8_t out[TCP_RESET_MAX_FRAME];
	struct pkt p, q;
	size_t n;

	if (pkt_parse(fr, len, &p) < 0)
		return;
	n = tcp_reset_reply(&p, out, sizeof(out));
	if (!n)
		return;
	FUZZ_ASSERT(n <= sizeof(out));
	FUZZ_ASSERT(pkt_parse(out, n, &q) == 0);
	FUZZ_ASSERT(q.proto == PKT_PROTO_TCP && (q.tcp_flags & PKT_TCP_RST));
	FUZZ_ASSERT(q.sport == p.dport && q.dport == p.sport);
	FUZZ_ASSERT(net_addr_equal(&q.src, &p.dst) && net_addr_equal(&q.dst, &p.src));
	FUZZ_ASSERT(!memcmp(q.dst_mac, p.src_mac, 6));
}

/* What a snapshot would keep, and the probes a restore would send. */
static void check_flows(struct net_filter *f, const struct net_filter_config *c, uint64_t now)
{
	static struct conntrack_key keys[64];
	uint8_t out[TCP_RESET_MAX_FRAME];
	struct pkt q;
	size_t n = net_filter_tcp_flows(f, keys, 64, now);

	FUZZ_ASSERT(n <= 64 && n <= net_filter_flow_count(f));
	for (size_t i = 0; i < n; i++) {
		size_t len = tcp_reset_probe(&keys[i], (unsigned)i & 1, c->guest_mac, c->guest_mac,
					     out, sizeof(out));

		FUZZ_ASSERT(keys[i].proto == PKT_PROTO_TCP);
		FUZZ_ASSERT(len);
		FUZZ_ASSERT(pkt_parse(out, len, &q) == 0 && q.tcp_flags == PKT_TCP_ACK &&
			    q.dport == keys[i].gport);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct net_filter_config c;
	struct net_filter *f = NULL;
	struct net_rules *r = NULL;
	struct err e = { { 0 } };
	uint64_t frames[2] = { 0, 0 }, now = 1;
	uint8_t pick = take8(&in), conf;

	if (pick & 0x80) {
		size_t n, got;
		const uint8_t *t;
		char *text;

		n = take16(&in) % 4096;
		t = take_bytes(&in, n, &got);
		text = malloc(got + 1);
		if (!text)
			return 0;
		memcpy(text, t, got);
		text[got] = 0;
		r = fuzz_rules_text(text, got);
		free(text);
	}
	if (!r)
		r = fuzz_rules_canned(pick);
	conf = take8(&in);
	fuzz_filter_config(&c, conf);
	c.log = log_cb;
	c.steered = steered_cb; /* later segments of "steered" flows: odd guest ports */
	if (net_filter_create(&c, r, 0, &f, &e) < 0)
		return 0;

	while (in.n) {
		uint8_t fl = take8(&in);
		size_t len = take16(&in) % 2048, got;
		const uint8_t *fr = take_bytes(&in, len, &got);
		struct nf_decision d;
		enum nf_verdict v;
		int dir = fl & 1;

		now += (uint64_t)(fl >> 2) * (fl & 0x80 ? CONNTRACK_NS(60) : 1000000ULL);
		if (fl & 2) {
			size_t before = net_filter_flow_count(f);

			FUZZ_ASSERT(net_filter_replace_rules(f, fuzz_rules_canned(fl >> 2), now) <=
				    before);
		}
		check_parse(fr, got);
		v = dir ? net_filter_ingress(f, fr, got, now, &d)
			: net_filter_egress(f, fr, got, now, &d);
		frames[dir]++;
		FUZZ_ASSERT(v == d.verdict);
		FUZZ_ASSERT(d.reason < NF_REASON_COUNT);
		FUZZ_ASSERT((d.reason < NF_DROP_RATE) == (v == NF_PASS));
		/* Steered: only what the guest sends. */
		FUZZ_ASSERT((d.reason >= NF_STEER_NEW) == (v == NF_STEER));
		FUZZ_ASSERT(v != NF_STEER || !dir);
		if (d.reason == NF_DROP_MALFORMED)
			FUZZ_ASSERT(d.parse_error > 0 && d.parse_error < PKT_E_COUNT);
		FUZZ_ASSERT(net_filter_flow_count(f) <= c.conntrack_capacity);
		if (!dir && d.reason == NF_DROP_TCP_STATE)
			check_reset(fr, got);
		net_filter_rate_wait_ns(f, dir ? NF_INGRESS : NF_EGRESS, got, now);
	}

	check_flows(f, &c, now);
	{
		struct nf_counters k;
		json_t *j = net_filter_to_json(f);

		net_filter_counters(f, &k);
		for (int dir = 0; dir < 2; dir++) {
			uint64_t sum = 0;

			for (int i = 0; i < NF_REASON_COUNT; i++)
				sum += k.packets[dir][i];
			FUZZ_ASSERT(sum == frames[dir]);
		}
		FUZZ_ASSERT(j);
		json_decref(j);
	}
	net_filter_destroy(f);
	return 0;
}
