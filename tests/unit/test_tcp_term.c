/*
 * tcp_term: the TCP endpoint for steered guest flows, driven segment by
 * segment as a guest would (and as a hostile one would): the handshake,
 * data both ways, windows, FINs, resets (RFC 5961's exact-RST and
 * challenge ACKs), a full table, timeouts. Every frame the module makes is
 * parsed back and its checksums recomputed here, independently.
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
#include "devices/net/pkt_parse.h"
#include "devices/net/siphash.h"
#include "devices/net/tcp_term.h"

#define GUEST4 "10.0.2.15"
#define REMOTE4 "203.0.113.7"
#define GUEST6 "fd00::15"
#define REMOTE6 "2001:db8::7"
#define GPORT 40000
#define RPORT 80
#define GISN 1000u /* the guest's ISN */
#define SEC 1000000000ULL

#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_PSH 0x08
#define F_ACK 0x10

struct tb {
	struct tcp_term t;
	uint64_t now;
	const char *guest, *remote;
	uint16_t gport;
	uint32_t iss;  /* ours, learnt from the SYN-ACK */
	uint32_t gseq; /* the guest's next sequence number */
};

/* What the guest received. */
struct seg {
	uint8_t flags;
	uint32_t seq, ack;
	uint16_t window, mss;
	uint8_t data[2048];
	size_t len;
	struct pkt p;
};

static uint32_t pseudo(const struct pkt *p, size_t l4_len)
{
	size_t alen = p->l3 == PKT_L3_IP4 ? 4 : 16;

	return fr_csum(0, p->src.b, alen) + fr_csum(0, p->dst.b, alen) + PKT_PROTO_TCP +
		(uint32_t)l4_len;
}

static void tb_init(struct tb *b, uint32_t capacity, uint32_t rx, uint32_t tx, bool v6)
{
	struct tcp_term_config c = {
		.capacity = capacity, .rx_buf = rx, .tx_buf = tx, .key = { 1, 2 }
	};

	memset(b, 0, sizeof(*b));
	memcpy(c.guest_mac, fr_guest_mac, 6);
	memcpy(c.gw_mac, fr_gw_mac, 6);
	assert_int_equal(tcp_term_init(&b->t, &c), 0);
	b->now = 5 * SEC;
	b->guest = v6 ? GUEST6 : GUEST4;
	b->remote = v6 ? REMOTE6 : REMOTE4;
	b->gport = GPORT;
	b->gseq = GISN;
}

/* The guest sends a segment; opts (a multiple of 4 bytes) go after the header. */
static void send_raw(struct tb *b, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd,
		     const void *data, size_t len, const uint8_t *opts, size_t olen, bool bad_sum)
{
	static uint8_t f[70000];
	struct fr s = { .src = b->guest,
			.dst = b->remote,
			.proto = FR_TCP,
			.sport = b->gport,
			.dport = RPORT,
			.tcp_flags = flags };
	size_t l3 = strchr(b->guest, ':') ? 40 : 20, n, l4len;
	uint8_t *ip = f + 14, *th = ip + l3;
	struct pkt p;

	n = fr_build(f, &s);
	assert_int_equal(n, 14 + l3 + 20);
	if (olen)
		memcpy(th + 20, opts, olen);
	if (len)
		memcpy(th + 20 + olen, data, len);
	l4len = 20 + olen + len;
	n += olen + len;
	if (l3 == 20) {
		fr_put16(ip + 2, (uint16_t)(20 + l4len));
		ip[10] = ip[11] = 0;
		fr_put16(ip + 10, (uint16_t)~fr_csum(0, ip, 20));
	} else {
		fr_put16(ip + 4, (uint16_t)l4len);
	}
	fr_put32(th + 4, seq);
	fr_put32(th + 8, ack);
	th[12] = (uint8_t)((20 + olen) / 4) << 4;
	fr_put16(th + 14, wnd);
	th[16] = th[17] = 0;
	assert_int_equal(pkt_parse(f, n, &p), 0);
	fr_put16(th + 16, (uint16_t)(~fr_csum(pseudo(&p, l4len), th, l4len) ^ (bad_sum ? 1 : 0)));
	assert_int_equal(tcp_term_input(&b->t, &p, b->now), 0);
}

static void gsend_at(struct tb *b, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd,
		     const void *data, size_t len)
{
	send_raw(b, flags, seq, ack, wnd, data, len, NULL, 0, false);
}

/* The guest's next in-order segment (seq advanced by what it carries). */
static void gsend(struct tb *b, uint8_t flags, uint32_t ack, uint16_t wnd, const void *data,
		  size_t len)
{
	gsend_at(b, flags, b->gseq, ack, wnd, data, len);
	b->gseq += (uint32_t)len + !!(flags & F_SYN) + !!(flags & F_FIN);
}

/* The next frame for the guest, checked: addresses, MACs, every checksum. False: none. */
static bool recv_seg(struct tb *b, struct seg *s)
{
	static uint8_t f[TCP_TERM_MAX_FRAME + 100];
	size_t n = tcp_term_next_frame(&b->t, f, sizeof(f), b->now), doff;
	struct net_addr g, r;

	memset(s, 0, sizeof(*s));
	if (!n)
		return false;
	assert_true(n <= TCP_TERM_MAX_FRAME);
	assert_int_equal(pkt_parse(f, n, &s->p), 0);
	assert_int_equal(s->p.proto, PKT_PROTO_TCP);
	assert_memory_equal(s->p.dst_mac, fr_guest_mac, 6);
	assert_memory_equal(s->p.src_mac, fr_gw_mac, 6);
	assert_int_equal(net_addr_parse(b->guest, &g), 0);
	assert_int_equal(net_addr_parse(b->remote, &r), 0);
	assert_true(net_addr_equal(&s->p.dst, &g));
	assert_true(net_addr_equal(&s->p.src, &r));
	assert_int_equal(s->p.sport, RPORT);
	assert_int_equal(s->p.dport, b->gport);
	if (s->p.l3 == PKT_L3_IP4) {
		assert_int_equal(fr_csum(0, s->p.ip, 20), 0xffff);
		assert_int_equal(fr_get32(s->p.ip + 0) & 0xffff, s->p.ip_len);
	}
	assert_int_equal(fr_csum(pseudo(&s->p, s->p.l4_len), s->p.l4, s->p.l4_len), 0xffff);
	s->flags = s->p.l4[13];
	s->seq = fr_get32(s->p.l4 + 4);
	s->ack = fr_get32(s->p.l4 + 8);
	s->window = (uint16_t)(s->p.l4[14] << 8 | s->p.l4[15]);
	doff = (size_t)(s->p.l4[12] >> 4) * 4;
	if (doff == 24 && s->p.l4[20] == 2 && s->p.l4[21] == 4)
		s->mss = (uint16_t)(s->p.l4[22] << 8 | s->p.l4[23]);
	s->len = s->p.payload_len;
	memcpy(s->data, s->p.payload, s->len);
	return true;
}

static void no_frame(struct tb *b)
{
	struct seg s;

	assert_false(recv_seg(b, &s));
}

static struct tcp_term_flow *expect_event(struct tb *b, enum tcp_term_event_kind kind, bool reset)
{
	struct tcp_term_event ev;

	assert_true(tcp_term_event(&b->t, &ev));
	assert_int_equal(ev.kind, kind);
	if (kind == TCP_TERM_EV_CLOSED)
		assert_int_equal(ev.reset, reset);
	return ev.flow;
}

static void no_event(struct tb *b)
{
	struct tcp_term_event ev;

	assert_false(tcp_term_event(&b->t, &ev));
}

static const uint8_t mss1460[4] = { 2, 4, 0x05, 0xb4 };

/* SYN with these 4 bytes of options, SYN-ACK, ACK with window wnd; the flow from the OPEN event. */
static struct tcp_term_flow *open_flow_with(struct tb *b, const uint8_t opts[4], uint16_t wnd)
{
	struct seg s;
	struct tcp_term_flow *f;

	send_raw(b, F_SYN, b->gseq, 0, 64240, NULL, 0, opts, 4, false);
	b->gseq++;
	assert_true(recv_seg(b, &s));
	assert_int_equal(s.flags, F_SYN | F_ACK);
	assert_int_equal(s.ack, b->gseq);
	b->iss = s.seq;
	no_event(b); /* nothing reported before the handshake is done */
	gsend(b, F_ACK, b->iss + 1, wnd, NULL, 0);
	f = expect_event(b, TCP_TERM_EV_OPEN, false);
	assert_int_equal(f->state, TCP_TERM_ESTABLISHED);
	no_frame(b);
	return f;
}

static struct tcp_term_flow *open_flow_wnd(struct tb *b, uint16_t wnd)
{
	return open_flow_with(b, mss1460, wnd);
}

static struct tcp_term_flow *open_flow(struct tb *b)
{
	return open_flow_wnd(b, 65535);
}

/* The next guest port, a fresh ISN: another flow. */
static struct tcp_term_flow *another_flow(struct tb *b, const uint8_t opts[4])
{
	b->gport++;
	b->gseq = GISN;
	return open_flow_with(b, opts, 65535);
}

static void test_handshake_answers_syn_ack_with_mss_only(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_event ev;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	send_raw(&b, F_SYN, GISN, 0, 64240, NULL, 0, mss1460, 4, false);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_SYN | F_ACK);
	assert_int_equal(s.ack, GISN + 1);
	assert_int_equal(s.mss, TCP_TERM_MSS4);
	assert_int_equal((s.p.l4[12] >> 4) * 4, 24); /* MSS alone: no WS, SACK, timestamps */
	assert_int_equal(s.window, 65535);
	assert_int_equal(s.len, 0);
	no_frame(&b);
	assert_int_equal(tcp_term_count(&b.t), 1);
	/* The guest's SYN again (our SYN-ACK was late): the same SYN-ACK. */
	send_raw(&b, F_SYN, GISN, 0, 64240, NULL, 0, mss1460, 4, false);
	b.iss = s.seq;
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_SYN | F_ACK);
	assert_int_equal(s.seq, b.iss);
	gsend_at(&b, F_ACK, GISN + 1, b.iss + 1, 65535, NULL, 0);
	assert_true(tcp_term_event(&b.t, &ev));
	assert_int_equal(ev.kind, TCP_TERM_EV_OPEN);
	assert_int_equal(ev.key.family, NET_AF4);
	assert_int_equal(ev.key.gport, GPORT);
	assert_int_equal(ev.key.rport, RPORT);
	assert_int_equal(ev.key.remote[0], 203);
	assert_int_equal(ev.key.remote[3], 7);
	assert_int_equal(ev.key.guest[3], 15);
	/* The ISN is not the table's hash of the 4-tuple plus the clock: the
	 * guest sees ISNs, and must not learn which of its ports share a bucket. */
	assert_int_not_equal(b.iss,
			     (uint32_t)siphash24(b.t.cfg.key, &ev.key, sizeof(ev.key)) +
				     (uint32_t)(b.now / 4000));
	assert_int_equal(tcp_term_state_name(ev.flow->state)[0], 'e');
	no_event(&b);
	no_frame(&b);
	tcp_term_free(&b.t);
}

static void test_guest_data_is_taken_acked_and_read(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	uint8_t buf[256];

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	gsend(&b, F_ACK | F_PSH, b.iss + 1, 65535, "GET / HTTP/1.1\r\n\r\n", 18);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(s.seq, b.iss + 1);
	/* The window is the free space, its right edge kept. */
	assert_int_equal(s.window, 65535 - 18);
	assert_ptr_equal(expect_event(&b, TCP_TERM_EV_READABLE, false), f);
	assert_int_equal(tcp_term_readable(f), 18);
	assert_int_equal(tcp_term_read(&b.t, f, buf, sizeof(buf), b.now), 18);
	assert_memory_equal(buf, "GET / HTTP/1.1\r\n\r\n", 18);
	assert_int_equal(tcp_term_read(&b.t, f, buf, sizeof(buf), b.now), 0);
	/* 18 bytes freed are less than the SWS step: no window update. */
	no_frame(&b);
	tcp_term_free(&b.t);
}

static void test_host_data_goes_in_mss_segments_within_the_window(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[5000];

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	tb_init(&b, 0, 0, 0, false);
	f = open_flow_wnd(&b, 3000);
	assert_int_equal(tcp_term_write(&b.t, f, data, sizeof(data), b.now), sizeof(data));
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.seq, b.iss + 1);
	assert_int_equal(s.len, 1460);
	assert_memory_equal(s.data, data, 1460);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.seq, b.iss + 1 + 1460);
	assert_int_equal(s.len, 1460);
	/* 80 bytes of window left: less than an MSS, less than half the
	 * window: held back (sender SWS avoidance). */
	no_frame(&b);
	/* The guest takes 2920 and opens 4000 more. */
	gsend(&b, F_ACK, b.iss + 1 + 2920, 4000, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.seq, b.iss + 1 + 2920);
	assert_int_equal(s.len, 1460);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 5000 - 4380);
	assert_true(s.flags & F_PSH); /* the last of what was written */
	assert_memory_equal(s.data, data + 4380, 620);
	no_frame(&b);
	gsend(&b, F_ACK, b.iss + 1 + 5000, 65535, NULL, 0);
	no_frame(&b);
	no_event(&b);
	tcp_term_free(&b.t);
}

static void test_a_full_tx_says_writable_once_acked(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[8192];
	uint32_t sent = 0;

	(void)state;
	tb_init(&b, 0, 0, 4096, false);
	f = open_flow(&b);
	assert_int_equal(tcp_term_write(&b.t, f, data, sizeof(data), b.now), 4096);
	assert_int_equal(tcp_term_write(&b.t, f, data, 1, b.now), 0);
	while (recv_seg(&b, &s))
		sent += (uint32_t)s.len;
	assert_int_equal(sent, 4096);
	no_event(&b);
	gsend(&b, F_ACK, b.iss + 1 + 1000, 65535, NULL, 0);
	no_event(&b); /* a quarter free is not yet worth a wake-up */
	gsend(&b, F_ACK, b.iss + 1 + 4096, 65535, NULL, 0);
	assert_ptr_equal(expect_event(&b, TCP_TERM_EV_WRITABLE, false), f);
	assert_int_equal(tcp_term_write(&b.t, f, data, sizeof(data), b.now), 4096);
	tcp_term_free(&b.t);
}

static void test_a_full_rx_closes_the_window_and_a_read_reopens_it(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[4096], buf[4096];

	(void)state;
	memset(data, 'x', sizeof(data));
	tb_init(&b, 0, 4096, 0, false);
	f = open_flow(&b);
	gsend(&b, F_ACK, b.iss + 1, 65535, NULL, 0);
	gsend(&b, F_ACK, b.iss + 1, 65535, data, 1460);
	gsend(&b, F_ACK, b.iss + 1, 65535, data, 1460);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.window, 4096 - 2920);
	no_frame(&b); /* the ACK for both went as one */
	/* 1176 left; the guest sends 1460: only 1176 are taken. */
	gsend_at(&b, F_ACK, b.gseq, b.iss + 1, 65535, data, 1460);
	b.gseq += 1176;
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(s.window, 0);
	assert_int_equal(tcp_term_readable(f), 4096);
	/* Anything more on a zero window is not taken; an ACK says so. */
	gsend_at(&b, F_ACK, b.gseq, b.iss + 1, 65535, data, 100);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(s.window, 0);
	assert_int_equal(tcp_term_readable(f), 4096);
	/* ... but the ACK such a segment carries counts (RFC 9293 3.10.7.4). */
	assert_int_equal(tcp_term_write(&b.t, f, data, 500, b.now), 500);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 500);
	gsend_at(&b, F_ACK, b.gseq, b.iss + 1 + 500, 65535, data, 100);
	assert_int_equal(f->snd_una, b.iss + 1 + 500);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.window, 0);
	assert_int_equal(tcp_term_readable(f), 4096);
	/* A small read does not announce a silly window ... */
	assert_int_equal(tcp_term_read(&b.t, f, buf, 100, b.now), 100);
	no_frame(&b);
	/* ... a read that frees an SWS step sends a window update. */
	assert_int_equal(tcp_term_read(&b.t, f, buf, 3996, b.now), 3996);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(s.window, 4096);
	gsend(&b, F_ACK, b.iss + 1, 65535, data, 1000);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.window, 3096);
	tcp_term_free(&b.t);
}

static void test_rings_wrap_both_ways(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[5000], buf[5000];

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 11 + i / 256);
	tb_init(&b, 0, 4096, 4096, false);
	f = open_flow(&b);
	/* guest -> host: 3000 in and out, then 2000 across the end of rx. */
	gsend(&b, F_ACK, b.iss + 1, 65535, data, 1460);
	gsend(&b, F_ACK, b.iss + 1, 65535, data + 1460, 1460);
	gsend(&b, F_ACK, b.iss + 1, 65535, data + 2920, 80);
	assert_int_equal(tcp_term_read(&b.t, f, buf, sizeof(buf), b.now), 3000);
	assert_memory_equal(buf, data, 3000);
	while (recv_seg(&b, &s))
		;
	gsend(&b, F_ACK, b.iss + 1, 65535, data + 3000, 1460);
	gsend(&b, F_ACK, b.iss + 1, 65535, data + 4460, 540);
	assert_int_equal(tcp_term_read(&b.t, f, buf, sizeof(buf), b.now), 2000);
	assert_memory_equal(buf, data + 3000, 2000);
	while (recv_seg(&b, &s))
		;
	/* host -> guest: the same across the end of tx, sent in two pieces. */
	assert_int_equal(tcp_term_write(&b.t, f, data, 3000, b.now), 3000);
	for (int i = 0; i < 3; i++)
		assert_true(recv_seg(&b, &s));
	gsend(&b, F_ACK, b.iss + 1 + 3000, 65535, NULL, 0);
	assert_int_equal(tcp_term_write(&b.t, f, data + 3000, 2000, b.now), 2000);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.seq, b.iss + 1 + 3000);
	assert_int_equal(s.len, 1460);
	assert_memory_equal(s.data, data + 3000, 1460);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 540);
	assert_memory_equal(s.data, data + 4460, 540);
	tcp_term_free(&b.t);
}

/*
 * Both sequence spaces cross 2^32 mid-stream (RFC 9293 3.4: arithmetic
 * modulo 2^32), data and FINs both ways. The ISN is a hash of the 4-tuple
 * plus a 4 us clock, so the test learns the hash from one flow and opens
 * the same 4-tuple again when the clock puts the ISN 3000 below 2^32.
 */
static void test_sequence_numbers_wrap_both_ways(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[5000], buf[5000];
	uint32_t hash;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 300);
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	hash = b.iss - (uint32_t)(b.now / 4000);
	tcp_term_abort(&b.t, f);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(tcp_term_count(&b.t), 0);
	b.now += (uint64_t)(uint32_t)(0u - 3000 - hash - (uint32_t)(b.now / 4000)) * 4000;
	b.gseq = 0u - 2000;
	f = open_flow(&b);
	assert_int_equal(b.iss, 0u - 3000);
	/* guest -> host across its wrap. */
	for (size_t off = 0; off < sizeof(data); off += 1000)
		gsend(&b, F_ACK, b.iss + 1, 65535, data + off, 1000);
	assert_int_equal(tcp_term_read(&b.t, f, buf, sizeof(buf), b.now), sizeof(data));
	assert_memory_equal(buf, data, sizeof(data));
	while (recv_seg(&b, &s))
		assert_int_equal(s.ack, b.gseq);
	/* host -> guest across ours, within the guest's window of 2000. */
	assert_int_equal(tcp_term_write(&b.t, f, data, sizeof(data), b.now), sizeof(data));
	for (uint32_t got = 0; got < sizeof(data);) {
		gsend(&b, F_ACK, b.iss + 1 + got, 2000, NULL, 0);
		while (recv_seg(&b, &s)) {
			assert_int_equal(s.seq, b.iss + 1 + got);
			assert_true((uint32_t)(s.seq + s.len - (b.iss + 1)) <= got + 2000);
			assert_memory_equal(s.data, data + (s.seq - (b.iss + 1)), s.len);
			got += (uint32_t)s.len;
			if (got == 2000 || s.len < 1460)
				break;
		}
	}
	/* FINs both ways, past the wrap: TIME-WAIT, then gone. */
	tcp_term_shutdown(&b.t, f, b.now);
	gsend(&b, F_ACK, b.iss + 1 + sizeof(data), 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK | F_FIN);
	assert_int_equal(s.seq, (uint32_t)(b.iss + 1 + sizeof(data)));
	gsend(&b, F_ACK | F_FIN, s.seq + 1, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(f->state, TCP_TERM_TIME_WAIT);
	tcp_term_free(&b.t);
}

static void test_guest_fin_then_host_fin(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	gsend(&b, F_ACK | F_FIN, b.iss + 1, 65535, "bye", 3);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq); /* data and FIN */
	expect_event(&b, TCP_TERM_EV_READABLE, false);
	expect_event(&b, TCP_TERM_EV_EOF, false);
	assert_int_equal(f->state, TCP_TERM_CLOSE_WAIT);
	/* The host answers, then closes: the FIN rides on the data. */
	assert_int_equal(tcp_term_write(&b.t, f, (const uint8_t *)"ok", 2, b.now), 2);
	tcp_term_shutdown(&b.t, f, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK | F_PSH | F_FIN);
	assert_int_equal(s.len, 2);
	assert_int_equal(f->state, TCP_TERM_LAST_ACK);
	assert_int_equal(tcp_term_write(&b.t, f, (const uint8_t *)"x", 1, b.now), 0);
	no_event(&b);
	gsend(&b, F_ACK, b.iss + 1 + 3, 65535, NULL, 0);
	assert_ptr_equal(expect_event(&b, TCP_TERM_EV_CLOSED, false), f);
	/* The bytes the guest sent stay readable until the release. */
	assert_int_equal(tcp_term_readable(f), 3);
	assert_int_equal(tcp_term_count(&b.t), 1);
	tcp_term_release(&b.t, f, b.now);
	assert_int_equal(tcp_term_count(&b.t), 0);
	no_frame(&b);
	tcp_term_free(&b.t);
}

static void test_host_fin_first_ends_in_time_wait(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	tcp_term_shutdown(&b.t, f, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK | F_FIN);
	assert_int_equal(s.seq, b.iss + 1);
	assert_int_equal(f->state, TCP_TERM_FIN_WAIT_1);
	gsend(&b, F_ACK, b.iss + 2, 65535, NULL, 0);
	assert_int_equal(f->state, TCP_TERM_FIN_WAIT_2);
	no_frame(&b);
	/* The guest still sends; then its FIN. */
	gsend(&b, F_ACK, b.iss + 2, 65535, "late", 4);
	assert_true(recv_seg(&b, &s));
	gsend(&b, F_ACK | F_FIN, b.iss + 2, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(f->state, TCP_TERM_TIME_WAIT);
	expect_event(&b, TCP_TERM_EV_READABLE, false);
	expect_event(&b, TCP_TERM_EV_EOF, false);
	expect_event(&b, TCP_TERM_EV_CLOSED, false);
	/* A retransmitted FIN in TIME-WAIT is acknowledged again. */
	gsend_at(&b, F_ACK | F_FIN, b.gseq - 1, b.iss + 2, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	tcp_term_release(&b.t, f, b.now);
	assert_int_equal(tcp_term_count(&b.t), 1);
	b.now += TCP_TERM_TO_TIME_WAIT - 1;
	tcp_term_expire(&b.t, b.now);
	assert_int_equal(tcp_term_count(&b.t), 1);
	b.now += 1;
	tcp_term_expire(&b.t, b.now);
	assert_int_equal(tcp_term_count(&b.t), 0);
	no_frame(&b);
	tcp_term_free(&b.t);
}

static void test_simultaneous_close_goes_through_closing(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	tcp_term_shutdown(&b.t, f, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK | F_FIN);
	/* The guest's FIN crosses ours: it has not acknowledged ours yet. */
	gsend(&b, F_ACK | F_FIN, b.iss + 1, 65535, NULL, 0);
	assert_int_equal(f->state, TCP_TERM_CLOSING);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	gsend(&b, F_ACK, b.iss + 2, 65535, NULL, 0);
	assert_int_equal(f->state, TCP_TERM_TIME_WAIT);
	expect_event(&b, TCP_TERM_EV_EOF, false);
	expect_event(&b, TCP_TERM_EV_CLOSED, false);
	tcp_term_release(&b.t, f, b.now);
	/* A new SYN on the TIME-WAIT 4-tuple starts a new flow at once. */
	b.gseq = GISN + 100000;
	f = open_flow(&b);
	assert_int_equal(tcp_term_count(&b.t), 1);
	assert_int_equal(f->irs, GISN + 100000);
	tcp_term_free(&b.t);
}

static void test_a_full_table_reclaims_time_wait_first(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 1, 0, 0, false);
	f = open_flow(&b);
	tcp_term_shutdown(&b.t, f, b.now);
	assert_true(recv_seg(&b, &s));
	gsend(&b, F_ACK | F_FIN, b.iss + 2, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(f->state, TCP_TERM_TIME_WAIT);
	expect_event(&b, TCP_TERM_EV_EOF, false);
	expect_event(&b, TCP_TERM_EV_CLOSED, false);
	/* Held by the caller: not reclaimed, the new SYN is refused. */
	b.gport++;
	gsend_at(&b, F_SYN, GISN, 0, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST | F_ACK);
	/* Released: the TIME-WAIT flow gives way. */
	tcp_term_release(&b.t, f, b.now);
	b.gseq = GISN;
	open_flow(&b);
	assert_int_equal(tcp_term_count(&b.t), 1);
	tcp_term_free(&b.t);
}

static void test_resets_of_no_flow_and_of_ended_flows(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	/* A reset in SYN-RECEIVED at rcv.nxt: the flow goes, nothing reported. */
	gsend(&b, F_SYN, 0, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	gsend_at(&b, F_RST, b.gseq, 0, 0, NULL, 0);
	assert_int_equal(tcp_term_count(&b.t), 0);
	no_event(&b);
	no_frame(&b);
	/* A reset of no flow: never answered. */
	gsend_at(&b, F_RST | F_ACK, 5, 5, 0, NULL, 0);
	no_frame(&b);
	/* A segment on a flow that ended (reset, not yet released): a reset back. */
	b.gseq = GISN;
	f = open_flow(&b);
	gsend_at(&b, F_RST, b.gseq, 0, 0, NULL, 0);
	expect_event(&b, TCP_TERM_EV_CLOSED, true);
	gsend_at(&b, F_ACK, b.gseq, b.iss + 1, 65535, "x", 1);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST);
	assert_int_equal(s.seq, b.iss + 1);
	tcp_term_release(&b.t, f, b.now);
	/* The queue of such resets is bounded: the rest go unanswered. */
	for (int i = 0; i < TCP_TERM_RST_QUEUE + 4; i++)
		gsend_at(&b, F_ACK, 1, (uint32_t)i, 65535, NULL, 0);
	for (int i = 0; i < TCP_TERM_RST_QUEUE; i++) {
		assert_true(recv_seg(&b, &s));
		assert_int_equal(s.seq, (uint32_t)i);
	}
	no_frame(&b);
	assert_int_equal(b.t.stats.rst_queue_full, 4);
	tcp_term_free(&b.t);
}

static void test_rst_only_at_rcv_nxt_else_challenge_ack(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	/* In the window but not exact: a challenge ACK, the flow lives. */
	gsend_at(&b, F_RST, b.gseq + 1, 0, 0, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(f->state, TCP_TERM_ESTABLISHED);
	no_event(&b);
	/* Outside the window: dropped without a word. */
	gsend_at(&b, F_RST, b.gseq + 70000, 0, 0, NULL, 0);
	gsend_at(&b, F_RST, b.gseq - 1, 0, 0, NULL, 0);
	no_frame(&b);
	assert_int_equal(f->state, TCP_TERM_ESTABLISHED);
	/* Exactly rcv.nxt: the flow is reset. */
	gsend_at(&b, F_RST, b.gseq, 0, 0, NULL, 0);
	assert_ptr_equal(expect_event(&b, TCP_TERM_EV_CLOSED, true), f);
	no_frame(&b); /* never reset a reset */
	tcp_term_release(&b.t, f, b.now);
	assert_int_equal(tcp_term_count(&b.t), 0);
	tcp_term_free(&b.t);
}

static void test_syn_on_an_established_flow_gets_a_challenge_ack(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	gsend_at(&b, F_SYN, b.gseq, 0, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(s.seq, b.iss + 1);
	assert_int_equal(f->state, TCP_TERM_ESTABLISHED);
	/* SYN+FIN too: a SYN first. */
	gsend_at(&b, F_SYN | F_FIN, b.gseq, 0, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(f->state, TCP_TERM_ESTABLISHED);
	assert_int_equal(b.t.stats.challenge_acks, 2);
	no_event(&b);
	tcp_term_free(&b.t);
}

static void test_a_full_table_answers_syn_with_rst(void **state)
{
	struct tb b;
	struct seg s;

	(void)state;
	tb_init(&b, 2, 0, 0, false);
	open_flow(&b);
	b.gport++;
	open_flow(&b);
	b.gport++;
	gsend_at(&b, F_SYN, 777, 0, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(s.seq, 0);
	assert_int_equal(s.ack, 778);
	assert_int_equal(tcp_term_count(&b.t), 2);
	assert_int_equal(b.t.stats.refused_full, 1);
	tcp_term_free(&b.t);
}

static void test_timeouts(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	/* SYN-RECEIVED: gone quietly after its bound. */
	gsend_at(&b, F_SYN, GISN, 0, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	b.now += TCP_TERM_TO_SYN_RECEIVED - 1;
	tcp_term_expire(&b.t, b.now);
	assert_int_equal(tcp_term_count(&b.t), 1);
	b.now += 1;
	tcp_term_expire(&b.t, b.now);
	assert_int_equal(tcp_term_count(&b.t), 0);
	no_frame(&b);
	no_event(&b);
	/* The late ACK finds no flow: a reset at its ACK. */
	gsend_at(&b, F_ACK, GISN + 1, s.seq + 1, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST);
	/* Established and idle: reset toward the guest, CLOSED for the host. */
	f = another_flow(&b, mss1460);
	b.now += TCP_TERM_TO_ESTABLISHED - 1;
	tcp_term_expire(&b.t, b.now);
	no_frame(&b);
	b.now += 1;
	tcp_term_expire(&b.t, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(s.seq, b.iss + 1);
	assert_ptr_equal(expect_event(&b, TCP_TERM_EV_CLOSED, true), f);
	tcp_term_release(&b.t, f, b.now);
	assert_int_equal(tcp_term_count(&b.t), 0);
	/* Keepalives (SEG.SEQ = rcv.nxt - 1) are answered and keep the flow. */
	f = another_flow(&b, mss1460);
	b.now += TCP_TERM_TO_ESTABLISHED - SEC;
	gsend_at(&b, F_ACK, b.gseq - 1, b.iss + 1, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.ack, b.gseq);
	b.now += 2 * SEC;
	tcp_term_expire(&b.t, b.now);
	no_frame(&b);
	no_event(&b);
	assert_int_equal(f->state, TCP_TERM_ESTABLISHED);
	tcp_term_abort(&b.t, f);
	assert_true(recv_seg(&b, &s));
	/* Half-closed and idle: a shorter bound. */
	f = another_flow(&b, mss1460);
	tcp_term_shutdown(&b.t, f, b.now);
	assert_true(recv_seg(&b, &s));
	gsend(&b, F_ACK, b.iss + 2, 65535, NULL, 0);
	b.now += TCP_TERM_TO_HALF_CLOSED;
	tcp_term_expire(&b.t, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST | F_ACK);
	expect_event(&b, TCP_TERM_EV_CLOSED, true);
	tcp_term_free(&b.t);
}

/* A second without the guest's progress: one window probe, below snd.una, and nothing else. */
static void probed_after_a_stall(struct tb *b, uint32_t snd_una)
{
	struct seg s;

	tcp_term_expire(&b->t, b->now);
	b->now += SEC;
	tcp_term_expire(&b->t, b->now);
	assert_true(recv_seg(b, &s));
	assert_int_equal(s.seq, snd_una - 1);
	assert_int_equal(s.len, 0);
	no_frame(b);
}

static void test_a_stalled_flow_is_sent_again_and_a_zero_window_probed(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[3000];

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	assert_int_equal(tcp_term_write(&b.t, f, data, 2000, b.now), 2000);
	assert_true(recv_seg(&b, &s));
	assert_true(recv_seg(&b, &s));
	/* The guest dropped both: it acknowledges nothing for a second. */
	tcp_term_expire(&b.t, b.now);
	no_frame(&b);
	b.now += SEC;
	tcp_term_expire(&b.t, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.seq, b.iss + 1);
	assert_int_equal(s.len, 1460);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 540);
	no_frame(&b);
	/* It takes it all, and closes its window. */
	gsend(&b, F_ACK, b.iss + 2001, 0, NULL, 0);
	assert_int_equal(tcp_term_write(&b.t, f, data, 100, b.now), 100);
	no_frame(&b);
	probed_after_a_stall(&b, b.iss + 2001);
	gsend(&b, F_ACK, b.iss + 2001, 1000, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 100);
	assert_int_equal(b.t.stats.rewinds, 2);
	tcp_term_free(&b.t);
}

/*
 * Data the sender's SWS rule holds back (the guest's window is open, but
 * shorter than an MSS and half its largest) with nothing in flight: if the
 * guest's window update is lost, nothing would ever ask again. A probe
 * after a stall brings its window back, as for a zero window.
 */
static void test_data_held_by_a_short_window_is_probed(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[8000];

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow_wnd(&b, 4000);
	assert_int_equal(tcp_term_write(&b.t, f, data, 3100, b.now), 3100);
	assert_true(recv_seg(&b, &s));
	assert_true(recv_seg(&b, &s));
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 180);
	/* All taken, none read yet: 900 bytes of window left (its edge kept). */
	gsend(&b, F_ACK, b.iss + 3101, 900, NULL, 0);
	assert_int_equal(tcp_term_write(&b.t, f, data, 5000, b.now), 5000);
	no_frame(&b); /* 900 < the MSS and < half of 4000: held (RFC 9293 3.8.6.2.1) */
	/* The guest reads; its window update to 4000 is lost. */
	probed_after_a_stall(&b, b.iss + 3101);
	gsend(&b, F_ACK, b.iss + 3101, 4000, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.seq, b.iss + 3101);
	assert_int_equal(s.len, 1460);
	tcp_term_free(&b.t);
}

static void test_hostile_segments(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[2000];

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	/* Data before any handshake: a reset at its ACK. */
	gsend_at(&b, F_ACK | F_PSH, 5, 12345, 65535, "hello", 5);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST);
	assert_int_equal(s.seq, 12345);
	/* SYN+FIN on no flow: dropped, nothing opened. */
	gsend_at(&b, F_SYN | F_FIN, 5, 0, 65535, NULL, 0);
	no_frame(&b);
	assert_int_equal(tcp_term_count(&b.t), 0);
	/* A bad checksum: not even looked at. */
	send_raw(&b, F_SYN, GISN, 0, 65535, NULL, 0, NULL, 0, true);
	no_frame(&b);
	assert_int_equal(b.t.stats.bad_checksum, 1);
	/* The handshake's ACK with the wrong number: a reset at it, the flow kept. */
	gsend_at(&b, F_SYN, GISN, 0, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	b.iss = s.seq;
	b.gseq = GISN + 1;
	gsend_at(&b, F_ACK, b.gseq, b.iss + 7, 65535, NULL, 0);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST);
	assert_int_equal(s.seq, b.iss + 7);
	no_event(&b);
	gsend(&b, F_ACK, b.iss + 1, 65535, NULL, 0);
	f = expect_event(&b, TCP_TERM_EV_OPEN, false);
	/* An ACK of bytes never sent: an ACK back, nothing taken with it. */
	gsend_at(&b, F_ACK, b.gseq, b.iss + 100, 65535, "zz", 2);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK);
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(tcp_term_readable(f), 0);
	/* An ACK far below snd.una (a blind guess): a challenge ACK. */
	gsend_at(&b, F_ACK, b.gseq, b.iss - 100000, 65535, "zz", 2);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(tcp_term_readable(f), 0);
	/* Data beyond the window, and out of order: a duplicate ACK, nothing kept. */
	gsend_at(&b, F_ACK, b.gseq + 70000, b.iss + 1, 65535, "zz", 2);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	gsend_at(&b, F_ACK, b.gseq + 10, b.iss + 1, 65535, "zz", 2);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(tcp_term_readable(f), 0);
	/* Without ACK: dropped. */
	gsend_at(&b, F_PSH, b.gseq, 0, 65535, "zz", 2);
	no_frame(&b);
	assert_int_equal(tcp_term_readable(f), 0);
	no_event(&b);
	/* Old data overlapping new: only the new part is taken. */
	gsend(&b, F_ACK, b.iss + 1, 65535, "abc", 3);
	gsend_at(&b, F_ACK, b.gseq - 3, b.iss + 1, 65535, "abcdef", 6);
	b.gseq += 3;
	assert_int_equal(tcp_term_readable(f), 6);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	expect_event(&b, TCP_TERM_EV_READABLE, false);
	/* A guest MSS of 1: held to TCP_TERM_MIN_MSS. */
	f = another_flow(&b, (const uint8_t[4]){ 2, 4, 0, 1 });
	assert_int_equal(tcp_term_write(&b.t, f, data, 200, b.now), 200);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, TCP_TERM_MIN_MSS);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, TCP_TERM_MIN_MSS);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, TCP_TERM_MIN_MSS);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 200 - 3 * TCP_TERM_MIN_MSS);
	/* Malformed options (a length past the header): the default MSS. */
	f = another_flow(&b, (const uint8_t[4]){ 1, 2, 9, 4 });
	assert_int_equal(tcp_term_write(&b.t, f, data, 2000, b.now), 2000);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, TCP_TERM_DEFAULT_MSS4);
	tcp_term_free(&b.t);
}

static void test_abort_and_release_with_unread_data_reset(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	f = open_flow(&b);
	assert_int_equal(tcp_term_write(&b.t, f, (const uint8_t *)"abc", 3, b.now), 3);
	tcp_term_abort(&b.t, f);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(s.seq, b.iss + 1); /* the bytes never went: the guest expects iss+1 */
	assert_int_equal(tcp_term_count(&b.t), 0);
	no_event(&b);
	/* Released with bytes unread: reset. */
	f = another_flow(&b, mss1460);
	gsend(&b, F_ACK, b.iss + 1, 65535, "data", 4);
	assert_true(recv_seg(&b, &s));
	tcp_term_release(&b.t, f, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(tcp_term_count(&b.t), 0);
	no_event(&b);
	/* Released clean: FIN, and data arriving after it resets. */
	f = another_flow(&b, mss1460);
	tcp_term_release(&b.t, f, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK | F_FIN);
	gsend(&b, F_ACK, b.iss + 2, 65535, "more", 4);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(tcp_term_count(&b.t), 0);
	no_event(&b);
	tcp_term_free(&b.t);
}

/*
 * A flow the host released is the guest's to finish, not to keep: neither
 * a zero window answered probe after probe nor keepalives hold it past
 * TCP_TERM_TO_HALF_CLOSED without progress (else a guest pins every slot
 * the egress proxy has let go, and the table refuses its new flows).
 */
static void test_a_released_flow_ends_without_progress(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	uint64_t end;

	(void)state;
	tb_init(&b, 0, 0, 0, false);
	/* The guest's window is closed: the host's last bytes and FIN wait. */
	f = open_flow_wnd(&b, 0);
	assert_int_equal(tcp_term_write(&b.t, f, (const uint8_t *)"bye", 3, b.now), 3);
	tcp_term_release(&b.t, f, b.now);
	no_frame(&b);
	end = b.now + TCP_TERM_TO_HALF_CLOSED;
	while (b.now < end + 2 * SEC && tcp_term_count(&b.t)) {
		b.now += SEC;
		tcp_term_expire(&b.t, b.now);
		while (recv_seg(&b, &s))
			if (!(s.flags & F_RST)) /* a probe: answered, the window still closed */
				gsend(&b, F_ACK, b.iss + 1, 0, NULL, 0);
	}
	assert_int_equal(tcp_term_count(&b.t), 0);
	assert_true(b.now <= end + SEC);
	/* FIN-WAIT-2 (our FIN acknowledged), the guest sending keepalives only. */
	f = another_flow(&b, mss1460);
	tcp_term_release(&b.t, f, b.now);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_ACK | F_FIN);
	gsend(&b, F_ACK, b.iss + 2, 65535, NULL, 0);
	assert_int_equal(f->state, TCP_TERM_FIN_WAIT_2);
	end = b.now + TCP_TERM_TO_HALF_CLOSED;
	while (b.now < end + 2 * SEC && f->state == TCP_TERM_FIN_WAIT_2) {
		b.now += 60 * SEC;
		gsend_at(&b, F_ACK, b.gseq - 1, b.iss + 2, 65535, NULL, 0);
		assert_true(recv_seg(&b, &s)); /* answered */
		tcp_term_expire(&b.t, b.now);
	}
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_RST | F_ACK);
	assert_int_equal(tcp_term_count(&b.t), 0);
	no_event(&b);
	tcp_term_free(&b.t);
}

static void test_ipv6(void **state)
{
	struct tb b;
	struct seg s;
	struct tcp_term_flow *f;
	static uint8_t data[3000];

	(void)state;
	tb_init(&b, 0, 0, 0, true);
	send_raw(&b, F_SYN, GISN, 0, 65535, NULL, 0, (const uint8_t[4]){ 2, 4, 0x05, 0xa0 }, 4,
		 false);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.p.l3, PKT_L3_IP6);
	assert_int_equal(s.mss, TCP_TERM_MSS6);
	f = another_flow(&b, (const uint8_t[4]){ 2, 4, 0x05, 0xa0 });
	assert_int_equal(f->key.family, NET_AF6);
	gsend(&b, F_ACK, b.iss + 1, 65535, "x", 1);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.ack, b.gseq);
	assert_int_equal(tcp_term_write(&b.t, f, data, 3000, b.now), 3000);
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 1440);
	assert_true(recv_seg(&b, &s));
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.len, 120);
	tcp_term_free(&b.t);
}

static void test_config_limits_and_small_buffers(void **state)
{
	struct tcp_term t;
	struct tcp_term_config c = { 0 };
	struct tb b;
	struct seg s;
	uint8_t small[57]; /* the SYN-ACK with its MSS option is 58 */

	(void)state;
	c.capacity = TCP_TERM_MAX_CAPACITY + 1;
	assert_int_equal(tcp_term_init(&t, &c), -EINVAL);
	assert_non_null(tcp_term_config_error(&c));
	c.capacity = 1;
	c.rx_buf = 65537;
	assert_int_equal(tcp_term_init(&t, &c), -EINVAL);
	c.rx_buf = 0;
	c.tx_buf = 100;
	assert_int_equal(tcp_term_init(&t, &c), -EINVAL);
	c.tx_buf = TCP_TERM_MAX_TX_BUF;
	assert_int_equal(tcp_term_init(&t, &c), 0);
	assert_null(tcp_term_config_error(&c));
	tcp_term_free(&t);
	/* A frame buffer too small for the SYN-ACK: it waits, nothing is lost. */
	tb_init(&b, 0, 0, 0, false);
	gsend_at(&b, F_SYN, GISN, 0, 65535, NULL, 0);
	assert_int_equal(tcp_term_next_frame(&b.t, small, sizeof(small), b.now), 0);
	assert_true(tcp_term_pending(&b.t));
	assert_true(recv_seg(&b, &s));
	assert_int_equal(s.flags, F_SYN | F_ACK);
	tcp_term_free(&b.t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake_answers_syn_ack_with_mss_only),
		cmocka_unit_test(test_guest_data_is_taken_acked_and_read),
		cmocka_unit_test(test_host_data_goes_in_mss_segments_within_the_window),
		cmocka_unit_test(test_a_full_tx_says_writable_once_acked),
		cmocka_unit_test(test_a_full_rx_closes_the_window_and_a_read_reopens_it),
		cmocka_unit_test(test_rings_wrap_both_ways),
		cmocka_unit_test(test_sequence_numbers_wrap_both_ways),
		cmocka_unit_test(test_guest_fin_then_host_fin),
		cmocka_unit_test(test_host_fin_first_ends_in_time_wait),
		cmocka_unit_test(test_simultaneous_close_goes_through_closing),
		cmocka_unit_test(test_a_full_table_reclaims_time_wait_first),
		cmocka_unit_test(test_resets_of_no_flow_and_of_ended_flows),
		cmocka_unit_test(test_rst_only_at_rcv_nxt_else_challenge_ack),
		cmocka_unit_test(test_syn_on_an_established_flow_gets_a_challenge_ack),
		cmocka_unit_test(test_a_full_table_answers_syn_with_rst),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_a_stalled_flow_is_sent_again_and_a_zero_window_probed),
		cmocka_unit_test(test_data_held_by_a_short_window_is_probed),
		cmocka_unit_test(test_hostile_segments),
		cmocka_unit_test(test_abort_and_release_with_unread_data_reset),
		cmocka_unit_test(test_a_released_flow_ends_without_progress),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_config_limits_and_small_buffers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
