/*
 * tcp_reset and net_state: the resets and probes the network device makes
 * up (addresses and ports swapped, RFC 9293's sequence numbers, every
 * checksum right, what is never answered), and virtio-net's saved state
 * (round trip, every older version, hostile bytes refused).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "devices/net/net_state.h"
#include "devices/net/pkt_parse.h"
#include "devices/net/tcp_reset.h"

#define GUEST4 "10.0.2.15"
#define SERVER4 "93.184.216.34"
#define GUEST6 "fd00::15"
#define SERVER6 "2001:db8::34"

/* Parse a made-up frame and check its checksums; the parsed packet. */
static struct pkt parse_checked(const uint8_t *f, size_t len)
{
	struct pkt p;
	uint32_t pseudo;
	size_t alen;

	assert_int_equal(pkt_parse(f, len, &p), 0);
	assert_int_equal(p.proto, PKT_PROTO_TCP);
	assert_int_equal(p.l4_len, 20);
	assert_int_equal(p.payload_len, 0);
	alen = p.l3 == PKT_L3_IP4 ? 4 : 16;
	if (p.l3 == PKT_L3_IP4)
		assert_int_equal(fr_csum(0, p.ip, 20), 0xffff);
	pseudo = fr_csum(0, p.src.b, alen) + fr_csum(0, p.dst.b, alen) + PKT_PROTO_TCP + 20;
	assert_int_equal(fr_csum(pseudo, p.l4, 20), 0xffff);
	return p;
}

/* A guest TCP segment with these flags, SEQ 1000, ACK ack, payload_len bytes. */
static size_t guest_seg(uint8_t *out, const char *src, const char *dst, uint8_t flags, uint32_t ack,
			size_t payload_len)
{
	static const uint8_t data[64];
	struct fr s = { .src = src,
			.dst = dst,
			.proto = FR_TCP,
			.sport = 40000,
			.dport = 443,
			.tcp_flags = flags,
			.payload = data,
			.payload_len = payload_len };
	size_t n = fr_build(out, &s), l3 = strchr(src, ':') ? 40 : 20;

	fr_put32(out + 14 + l3 + 8, ack);
	return n;
}

static void check_reply(const char *guest, const char *server, uint8_t flags, uint32_t ack,
			size_t plen, uint8_t want_flags, uint32_t want_seq, uint32_t want_ack)
{
	uint8_t in[2048], out[TCP_RESET_MAX_FRAME];
	struct pkt p, r;
	struct net_addr g, s;
	size_t n = guest_seg(in, guest, server, flags, ack, plen);

	assert_int_equal(pkt_parse(in, n, &p), 0);
	n = tcp_reset_reply(&p, out, sizeof(out));
	assert_int_equal(n, strchr(guest, ':') ? 74 : 54);
	r = parse_checked(out, n);
	assert_memory_equal(r.dst_mac, fr_guest_mac, 6);
	assert_memory_equal(r.src_mac, fr_gw_mac, 6);
	net_addr_parse(guest, &g);
	net_addr_parse(server, &s);
	assert_true(net_addr_equal(&r.dst, &g));
	assert_true(net_addr_equal(&r.src, &s));
	assert_int_equal(r.sport, 443);
	assert_int_equal(r.dport, 40000);
	assert_int_equal(r.tcp_flags, want_flags);
	assert_int_equal(fr_get32(r.l4 + 4), want_seq);
	assert_int_equal(fr_get32(r.l4 + 8), want_ack);
}

static void test_a_segment_with_ack_gets_rst_at_its_ack(void **state)
{
	(void)state;
	check_reply(GUEST4, SERVER4, 0x10, 0xdeadbeef, 0, PKT_TCP_RST, 0xdeadbeef, 0);
	check_reply(GUEST4, SERVER4, 0x18, 7, 33, PKT_TCP_RST, 7, 0); /* PSH|ACK with data */
	check_reply(GUEST6, SERVER6, 0x10, 0x01020304, 10, PKT_TCP_RST, 0x01020304, 0);
}

static void test_a_segment_without_ack_gets_rst_ack_past_it(void **state)
{
	(void)state;
	/* SEG.LEN counts the payload and SYN and FIN as one each. */
	check_reply(GUEST4, SERVER4, 0x02, 0, 0, PKT_TCP_RST | PKT_TCP_ACK, 0, 1001);
	check_reply(GUEST4, SERVER4, 0x01, 0, 5, PKT_TCP_RST | PKT_TCP_ACK, 0, 1006);
	check_reply(GUEST6, SERVER6, 0x00, 0, 12, PKT_TCP_RST | PKT_TCP_ACK, 0, 1012);
}

static void test_resets_udp_fragments_and_small_buffers_are_never_answered(void **state)
{
	uint8_t in[2048], out[TCP_RESET_MAX_FRAME];
	struct pkt p;
	size_t n;
	struct fr u = { .src = GUEST4, .dst = SERVER4, .proto = FR_UDP, .sport = 5000, .dport = 53 };

	(void)state;
	n = guest_seg(in, GUEST4, SERVER4, PKT_TCP_RST | PKT_TCP_ACK, 1, 0);
	assert_int_equal(pkt_parse(in, n, &p), 0);
	assert_int_equal(tcp_reset_reply(&p, out, sizeof(out)), 0);
	n = guest_seg(in, GUEST4, SERVER4, PKT_TCP_ACK, 1, 0);
	assert_int_equal(pkt_parse(in, n, &p), 0);
	assert_int_equal(tcp_reset_reply(&p, out, 53), 0);
	p.flags |= PKT_F_FRAG;
	assert_int_equal(tcp_reset_reply(&p, out, sizeof(out)), 0);
	n = fr_build(in, &u);
	assert_int_equal(pkt_parse(in, n, &p), 0);
	assert_int_equal(tcp_reset_reply(&p, out, sizeof(out)), 0);
}

static struct conntrack_key key(const char *guest, const char *remote, uint16_t gport,
				uint16_t rport)
{
	struct conntrack_key k;
	struct net_addr g, r;

	memset(&k, 0, sizeof(k));
	assert_int_equal(net_addr_parse(guest, &g), 0);
	assert_int_equal(net_addr_parse(remote, &r), 0);
	k.family = g.family;
	k.proto = PKT_PROTO_TCP;
	memcpy(k.guest, g.b, 16);
	memcpy(k.remote, r.b, 16);
	k.gport = gport;
	k.rport = rport;
	return k;
}

static void test_a_probe_is_an_ack_from_the_remote_to_the_guest(void **state)
{
	static const uint8_t src_mac[6] = { 2, 0, 0, 0, 0, 9 };
	uint8_t out[TCP_RESET_MAX_FRAME];
	struct conntrack_key k = key(GUEST6, SERVER6, 40000, 443);
	struct net_addr g;
	struct pkt r;
	size_t n;

	(void)state;
	n = tcp_reset_probe(&k, 0, fr_guest_mac, src_mac, out, sizeof(out));
	assert_int_equal(n, 74);
	r = parse_checked(out, n);
	assert_memory_equal(r.dst_mac, fr_guest_mac, 6);
	assert_memory_equal(r.src_mac, src_mac, 6);
	net_addr_parse(GUEST6, &g);
	assert_true(net_addr_equal(&r.dst, &g));
	assert_int_equal(r.sport, 443);
	assert_int_equal(r.dport, 40000);
	assert_int_equal(r.tcp_flags, PKT_TCP_ACK);
	assert_int_equal(fr_get32(r.l4 + 4), 0);
	/* The second half of the sequence space: one of the two is outside any window. */
	n = tcp_reset_probe(&k, 1, fr_guest_mac, src_mac, out, sizeof(out));
	r = parse_checked(out, n);
	assert_int_equal(fr_get32(r.l4 + 4), 0x80000000u);
	k = key(GUEST4, SERVER4, 40000, 443);
	assert_int_equal(tcp_reset_probe(&k, 0, fr_guest_mac, src_mac, out, sizeof(out)), 54);
	parse_checked(out, 54);
	assert_int_equal(tcp_reset_probe(&k, 0, fr_guest_mac, src_mac, out, 53), 0);
	k.proto = PKT_PROTO_UDP;
	assert_int_equal(tcp_reset_probe(&k, 0, fr_guest_mac, src_mac, out, sizeof(out)), 0);
	k = key(GUEST4, SERVER4, 0, 443);
	assert_int_equal(tcp_reset_probe(&k, 0, fr_guest_mac, src_mac, out, sizeof(out)), 0);
	k = key(GUEST4, SERVER4, 1, 443);
	k.family = 5;
	assert_int_equal(tcp_reset_probe(&k, 0, fr_guest_mac, src_mac, out, sizeof(out)), 0);
}

static void test_state_round_trips_with_flows(void **state)
{
	struct conntrack_key flows[2] = { key(GUEST4, SERVER4, 40000, 443),
					  key(GUEST6, SERVER6, 40001, 80) };
	struct net_state s = {
		.mac = { 2, 1, 2, 3, 4, 5 }, .held = true, .head = 300, .nflows = 2, .flows = flows
	};
	struct net_state d;
	uint8_t buf[256];
	size_t n = net_state_encode(&s, buf, sizeof(buf));

	(void)state;
	assert_int_equal(n, net_state_size(2));
	assert_int_equal(net_state_encode(&s, buf, n - 1), 0);
	assert_int_equal(net_state_decode(buf, n, &d), 0);
	assert_int_equal(d.version, 3);
	assert_memory_equal(d.mac, s.mac, 6);
	assert_true(d.held);
	assert_int_equal(d.head, 300);
	assert_int_equal(d.nflows, 2);
	assert_memory_equal(d.flows, flows, sizeof(flows));
	free(d.flows);
	s.nflows = 0;
	n = net_state_encode(&s, buf, sizeof(buf));
	assert_int_equal(n, 14);
	assert_int_equal(net_state_decode(buf, n, &d), 0);
	assert_null(d.flows);
	assert_int_equal(d.nflows, 0);
}

static void test_state_reads_versions_one_and_two(void **state)
{
	const uint8_t v1[7] = { 1, 2, 0, 0, 0, 0, 9 };
	const uint8_t v2[10] = { 2, 2, 0, 0, 0, 0, 9, 1, 5, 0 };
	struct net_state d;

	(void)state;
	assert_int_equal(net_state_decode(v1, sizeof(v1), &d), 0);
	assert_int_equal(d.version, 1);
	assert_false(d.held);
	assert_int_equal(d.mac[5], 9);
	assert_int_equal(net_state_decode(v2, sizeof(v2), &d), 0);
	assert_int_equal(d.version, 2);
	assert_true(d.held);
	assert_int_equal(d.head, 5);
}

static void test_hostile_state_is_refused(void **state)
{
	struct conntrack_key flows[1] = { key(GUEST4, SERVER4, 40000, 443) };
	struct net_state s = { .mac = { 2, 0, 0, 0, 0, 7 }, .nflows = 1, .flows = flows };
	struct net_state d;
	uint8_t buf[128], *x;
	size_t n = net_state_encode(&s, buf, sizeof(buf));

	(void)state;
	assert_int_equal(net_state_decode(buf, n, &d), 0);
	free(d.flows);
	buf[1] = 3; /* a multicast MAC: the filter would hold the guest to it */
	assert_int_equal(net_state_decode(buf, n, &d), -EINVAL);
	memset(buf + 1, 0, 6);
	assert_int_equal(net_state_decode(buf, n, &d), -EINVAL);
	buf[1] = 2;
	assert_int_equal(net_state_decode(buf, 0, &d), -EINVAL);
	assert_int_equal(net_state_decode(buf, n - 1, &d), -EINVAL); /* a flow cut short */
	assert_int_equal(net_state_decode(buf, 13, &d), -EINVAL);
	assert_int_equal(net_state_decode(buf, 10, &d),
			 -EINVAL); /* version 3 in version 2's length */
	buf[0] = 4;
	assert_int_equal(net_state_decode(buf, n, &d), -EINVAL);
	buf[0] = 2;
	assert_int_equal(net_state_decode(buf, n, &d), -EINVAL); /* version 2 is 10 bytes */
	buf[0] = 3;
	buf[7] = 2; /* held is 0 or 1 */
	assert_int_equal(net_state_decode(buf, n, &d), -EINVAL);
	buf[7] = 0;
	buf[13] = 0x80; /* a count far beyond the bytes */
	assert_int_equal(net_state_decode(buf, n, &d), -EINVAL);
	buf[13] = 0;
	buf[14] = 5; /* family */
	assert_int_equal(net_state_decode(buf, n, &d), -EINVAL);
	buf[14] = 4;
	buf[14 + 33] = buf[14 + 34] = 0; /* guest port 0 */
	assert_int_equal(net_state_decode(buf, n, &d), -EINVAL);
	/* Exactly the bytes it is given: a copy of exactly n on the heap. */
	buf[14] = 4;
	buf[14 + 33] = 0x9c;
	x = fr_exact(buf, 14);
	x[10] = 1;
	assert_int_equal(net_state_decode(x, 14, &d), -EINVAL);
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_segment_with_ack_gets_rst_at_its_ack),
		cmocka_unit_test(test_a_segment_without_ack_gets_rst_ack_past_it),
		cmocka_unit_test(test_resets_udp_fragments_and_small_buffers_are_never_answered),
		cmocka_unit_test(test_a_probe_is_an_ack_from_the_remote_to_the_guest),
		cmocka_unit_test(test_state_round_trips_with_flows),
		cmocka_unit_test(test_state_reads_versions_one_and_two),
		cmocka_unit_test(test_hostile_state_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
