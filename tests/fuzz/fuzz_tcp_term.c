/*
 * fuzz_tcp_term: the TCP endpoint for steered guest flows
 * (devices/net/tcp_term.c) driven by a guest and a host side the input
 * writes: guest segments built around each flow's real sequence numbers
 * (so they get past the checksum and the window checks often enough to
 * matter), raw frames, host reads, writes, shutdowns, aborts, releases,
 * and time passing.
 *
 * Input: config byte (capacity 1..8; rx and tx buffers of 4 to 8 KiB, so
 * the rings wrap), then ops until the input ends:
 *   [op: low 3 bits the kind, the rest its argument] and the kind's bytes:
 *   0 segment: [tuple 1][flags 1][seq: mode 1, delta 2][ack: mode 1,
 *     delta 2][window 2][payload length 2][options 1 (+2 MSS)]
 *   1 raw frame: [length 2][bytes]
 *   2 read [tuple 1][cap 2]   3 write [tuple 1][length 2]
 *   4 shutdown, 5 abort, 6 release: [tuple 1]
 *   7 time: [step 2], the op's argument picks ms, s or ks; then expire.
 * After each op every event is taken and frames are pulled with a cap the
 * op's argument picks.
 * Payload bytes are a function of the flow and the sequence number, the
 * host's writes likewise, so the target knows what each side must see.
 * Invariants: no frame longer than its cap or TCP_TERM_MAX_FRAME, each
 * parses as TCP from the remote to the guest, MACs and checksum right;
 * data within the MSS and the guest's window;
 * the guest receives at each sequence number the byte the host wrote
 * there, and the host reads the guest's bytes in order, none lost or
 * doubled; flows never exceed the capacity; rings and windows stay within
 * their buffers; snd.una <= snd.nxt <= snd.max; events come only for
 * flows the caller holds, OPEN first; output ends (no endless frames).
 */
#include <errno.h>

#include "devices/net/pkt_parse.h"
#include "devices/net/tcp_term.h"
#include "fuzz.h"
#include "tests/unit/frames.h"

#define TUPLES 6
#define MAX_CAP 8

/* The host's view of one slot, from its OPEN event to its release. */
struct held {
	bool owned;
	uint32_t read_off, write_off;
};

static struct tcp_term t;
static struct held held[MAX_CAP];
static uint64_t now;

/* The byte the guest sends at stream offset i, and the host's. */
static uint8_t gpat(uint16_t gport, uint32_t i)
{
	return (uint8_t)(i * 7 + gport + 1);
}

static uint8_t hpat(uint16_t gport, uint32_t i)
{
	return (uint8_t)(i * 13 + gport);
}

/* Tuple i: IPv4 for even, IPv6 for odd, a guest port each. */
static void tuple_key(unsigned i, struct conntrack_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = (i & 1) ? NET_AF6 : NET_AF4;
	k->proto = PKT_PROTO_TCP;
	k->gport = (uint16_t)(40000 + i);
	k->rport = 443;
	if (k->family == NET_AF4) {
		memcpy(k->guest, (const uint8_t[4]){ 10, 0, 2, 15 }, 4);
		memcpy(k->remote, (const uint8_t[4]){ 203, 0, 113, 7 }, 4);
	} else {
		memcpy(k->guest, (const uint8_t[16]){ 0xfd, [15] = 0x15 }, 16);
		memcpy(k->remote, (const uint8_t[16]){ 0x20, 0x01, 0x0d, 0xb8, [15] = 7 }, 16);
	}
}

static struct tcp_term_flow *find(const struct conntrack_key *k)
{
	for (uint32_t i = 0; i < t.cfg.capacity; i++)
		if (t.flows[i].state != TCP_TERM_FREE && !memcmp(&t.flows[i].key, k, sizeof(*k)))
			return &t.flows[i];
	return NULL;
}

/* The held flow of tuple i, or NULL. */
static struct tcp_term_flow *held_flow(unsigned i)
{
	struct conntrack_key k;
	struct tcp_term_flow *f;

	tuple_key(i % TUPLES, &k);
	f = find(&k);
	return f && held[f - t.flows].owned ? f : NULL;
}

/* A guest segment as the input says, checksummed, through pkt_parse into tcp_term. */
static void op_segment(struct fuzz_in *in)
{
	static uint8_t f[PKT_ETH_HLEN + 40 + 24 + 2048];
	unsigned tu = take8(in) % TUPLES;
	uint8_t flags = take8(in), smode = take8(in), amode, opt;
	uint16_t sdelta = take16(in), adelta, wnd, plen;
	struct conntrack_key k;
	struct tcp_term_flow *fl;
	uint32_t seq, ack, base;
	size_t alen, iplen, thl, l4;
	uint8_t *ip, *th;
	struct pkt p;
	uint32_t s;

	amode = take8(in);
	adelta = take16(in);
	wnd = take16(in);
	plen = take16(in) % 2049;
	opt = take8(in);
	tuple_key(tu, &k);
	fl = find(&k);
	seq = fl ? fl->rcv_nxt : 1000;
	ack = fl ? fl->snd_una : 0;
	if (smode & 1)
		seq += (uint32_t)(int16_t)sdelta;
	if (smode & 2)
		seq = (uint32_t)sdelta << 16 | smode;
	if (amode & 1)
		ack += (uint32_t)(int16_t)adelta;
	if (amode & 2)
		ack = fl ? fl->snd_max : adelta;
	base = fl ? fl->irs + 1 : 1001;
	alen = k.family == NET_AF4 ? 4 : 16;
	iplen = k.family == NET_AF4 ? 20 : 40;
	thl = (opt & 1) ? 24 : 20;
	l4 = thl + plen;
	memset(f, 0, PKT_ETH_HLEN + iplen + thl);
	memcpy(f, fr_gw_mac, 6);
	memcpy(f + 6, fr_guest_mac, 6);
	ip = f + PKT_ETH_HLEN;
	th = ip + iplen;
	if (k.family == NET_AF4) {
		fr_put16(f + 12, PKT_ETH_IP4);
		ip[0] = 0x45;
		fr_put16(ip + 2, (uint16_t)(20 + l4));
		ip[8] = 64;
		ip[9] = PKT_PROTO_TCP;
		memcpy(ip + 12, k.guest, 4);
		memcpy(ip + 16, k.remote, 4);
	} else {
		fr_put16(f + 12, PKT_ETH_IP6);
		ip[0] = 0x60;
		fr_put16(ip + 4, (uint16_t)l4);
		ip[6] = PKT_PROTO_TCP;
		ip[7] = 64;
		memcpy(ip + 8, k.guest, 16);
		memcpy(ip + 24, k.remote, 16);
	}
	fr_put16(th, k.gport);
	fr_put16(th + 2, k.rport);
	fr_put32(th + 4, seq);
	fr_put32(th + 8, ack);
	th[12] = (uint8_t)(thl / 4) << 4;
	th[13] = flags;
	fr_put16(th + 14, wnd);
	if (opt & 1) {
		th[20] = 2;
		th[21] = 4;
		fr_put16(th + 22, take16(in));
	}
	for (uint32_t j = 0; j < plen; j++)
		th[thl + j] = gpat(k.gport, seq + (flags & PKT_TCP_SYN ? 1 : 0) - base + j);
	s = fr_csum(0, k.guest, alen) + fr_csum(0, k.remote, alen) + PKT_PROTO_TCP + (uint32_t)l4;
	fr_put16(th + 16, (uint16_t)~fr_csum(s, th, l4) ^ ((opt & 2) ? 1 : 0));
	if (pkt_parse(f, PKT_ETH_HLEN + iplen + l4, &p) == 0)
		FUZZ_ASSERT(tcp_term_input(&t, &p, now) == 0);
}

static void op_raw(struct fuzz_in *in)
{
	size_t len;
	const uint8_t *fr = take_bytes(in, take16(in), &len);
	struct pkt p;
	int r;

	if (pkt_parse(fr, len, &p) < 0)
		return;
	r = tcp_term_input(&t, &p, now);
	FUZZ_ASSERT(r == 0 || r == -EINVAL);
	FUZZ_ASSERT(r == -EINVAL || (p.proto == PKT_PROTO_TCP && !(p.flags & PKT_F_FRAG)));
}

static void op_read(struct fuzz_in *in)
{
	static uint8_t buf[65536];
	struct tcp_term_flow *f = held_flow(take8(in));
	size_t cap = take16(in), n;
	struct held *h;

	if (!f)
		return;
	h = &held[f - t.flows];
	n = tcp_term_read(&t, f, buf, cap, now);
	FUZZ_ASSERT(n <= cap);
	for (size_t j = 0; j < n; j++)
		FUZZ_ASSERT(buf[j] == gpat(f->key.gport, h->read_off + (uint32_t)j));
	h->read_off += (uint32_t)n;
}

static void op_write(struct fuzz_in *in)
{
	static uint8_t buf[65536];
	struct tcp_term_flow *f = held_flow(take8(in));
	size_t len = take16(in), n;
	struct held *h;

	if (!f)
		return;
	h = &held[f - t.flows];
	for (size_t j = 0; j < len; j++)
		buf[j] = hpat(f->key.gport, h->write_off + (uint32_t)j);
	n = tcp_term_write(&t, f, buf, len, now);
	FUZZ_ASSERT(n <= len);
	h->write_off += (uint32_t)n;
}

static void take_events(void)
{
	struct tcp_term_event ev;

	while (tcp_term_event(&t, &ev)) {
		struct held *h;

		FUZZ_ASSERT(ev.flow >= t.flows && ev.flow < t.flows + t.cfg.capacity);
		h = &held[ev.flow - t.flows];
		FUZZ_ASSERT(ev.kind >= TCP_TERM_EV_OPEN && ev.kind <= TCP_TERM_EV_CLOSED);
		FUZZ_ASSERT(!memcmp(&ev.key, &ev.flow->key, sizeof(ev.key)));
		if (ev.kind == TCP_TERM_EV_OPEN) {
			FUZZ_ASSERT(!h->owned);
			memset(h, 0, sizeof(*h));
			h->owned = true;
		}
		FUZZ_ASSERT(h->owned); /* only for flows the caller holds */
		FUZZ_ASSERT(ev.flow->state != TCP_TERM_FREE);
	}
}

/* One frame toward the guest, checked. */
static void check_frame(const uint8_t *fr, size_t len, size_t cap)
{
	struct conntrack_key k;
	struct tcp_term_flow *f;
	struct pkt p;
	uint32_t seq, off;

	FUZZ_ASSERT(len <= cap && len <= TCP_TERM_MAX_FRAME);
	FUZZ_ASSERT(pkt_parse(fr, len, &p) == 0);
	FUZZ_ASSERT(p.proto == PKT_PROTO_TCP && p.l4 && p.l4_len >= 20);
	FUZZ_ASSERT(!memcmp(p.dst_mac, fr_guest_mac, 6) && !memcmp(p.src_mac, fr_gw_mac, 6));
	FUZZ_ASSERT(tcp_seg_checksum_ok(&p));
	FUZZ_ASSERT(p.dport >= 40000 && p.dport < 40000 + TUPLES && p.sport == 443);
	if (!p.payload_len)
		return;
	/* Data: the host's byte at each sequence number, never beyond what it wrote. */
	tuple_key(p.dport - 40000, &k);
	FUZZ_ASSERT(k.family == p.src.family);
	f = find(&k);
	FUZZ_ASSERT(f);
	seq = tcp_seg_get32(p.l4 + 4);
	off = seq - (f->iss + 1);
	FUZZ_ASSERT(!(p.tcp_flags & (PKT_TCP_SYN | PKT_TCP_RST)));
	FUZZ_ASSERT(p.payload_len <= f->mss);
	/* Within the window the guest offered (RFC 9293 3.8.6: never past its right edge). */
	FUZZ_ASSERT((int32_t)(f->snd_una + f->snd_wnd - (seq + (uint32_t)p.payload_len)) >= 0);
	FUZZ_ASSERT(off + p.payload_len <= held[f - t.flows].write_off);
	for (size_t j = 0; j < p.payload_len; j++)
		FUZZ_ASSERT(p.payload[j] == hpat(k.gport, off + (uint32_t)j));
}

static void pull_frames(unsigned pick)
{
	static const size_t caps[4] = { TCP_TERM_MAX_FRAME, 2048, 58, 300 };
	static uint8_t fr[4096];
	size_t cap = caps[pick & 3], len;
	int n = 0;

	while ((len = tcp_term_next_frame(&t, fr, cap, now))) {
		check_frame(fr, len, cap);
		FUZZ_ASSERT(++n < 100000); /* output ends */
	}
}

static void check_table(void)
{
	uint32_t live = 0;

	FUZZ_ASSERT(tcp_term_count(&t) <= t.cfg.capacity);
	for (uint32_t i = 0; i < t.cfg.capacity; i++) {
		const struct tcp_term_flow *f = &t.flows[i];

		FUZZ_ASSERT(f->rx.len <= f->rx.cap && f->rx.head < f->rx.cap);
		FUZZ_ASSERT(f->tx.len <= f->tx.cap && f->tx.head < f->tx.cap);
		if (f->state == TCP_TERM_FREE) {
			FUZZ_ASSERT(!f->owned && !f->rx.len && !f->tx.len);
			FUZZ_ASSERT(!held[i].owned);
			continue;
		}
		live++;
		FUZZ_ASSERT(f->state <= TCP_TERM_CLOSED);
		FUZZ_ASSERT(f->owned == held[i].owned);
		FUZZ_ASSERT((int32_t)(f->snd_nxt - f->snd_una) >= 0);
		FUZZ_ASSERT((int32_t)(f->snd_max - f->snd_nxt) >= 0);
		FUZZ_ASSERT(f->reset || f->snd_max - f->snd_una <= f->tx.len + 2);
		/* The window never promises more than rx can hold. */
		if ((int32_t)(f->rcv_adv - f->rcv_nxt) > 0)
			FUZZ_ASSERT(f->rcv_adv - f->rcv_nxt <= f->rx.cap - f->rx.len);
		/* Every byte taken is read or waiting, once (a reset drops what waits). */
		if (held[i].owned && !f->reset && f->state != TCP_TERM_SYN_RECEIVED)
			FUZZ_ASSERT(held[i].read_off + f->rx.len + f->fin_rcvd ==
				    f->rcv_nxt - f->irs - 1);
		FUZZ_ASSERT(f->mss >= TCP_TERM_MIN_MSS && f->mss <= TCP_TERM_MSS4);
	}
	FUZZ_ASSERT(live == tcp_term_count(&t));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct tcp_term_config c = { .key = { 7, 9 } };
	uint8_t cfg = take8(&in);

	c.capacity = 1 + (cfg & 7);
	c.rx_buf = 4096 + (uint32_t)((cfg >> 3) & 3) * 1024 + ((cfg >> 3) & 1);
	c.tx_buf = 4096 + (uint32_t)((cfg >> 5) & 7) * 512 + 3;
	memcpy(c.guest_mac, fr_guest_mac, 6);
	memcpy(c.gw_mac, fr_gw_mac, 6);
	if (tcp_term_init(&t, &c))
		return 0;
	memset(held, 0, sizeof(held));
	now = 1000000000ULL;
	while (in.n) {
		uint8_t op = take8(&in);
		struct tcp_term_flow *f;

		switch (op & 7) {
		case 0:
			op_segment(&in);
			break;
		case 1:
			op_raw(&in);
			break;
		case 2:
			op_read(&in);
			break;
		case 3:
			op_write(&in);
			break;
		case 4:
			if ((f = held_flow(take8(&in))))
				tcp_term_shutdown(&t, f, now);
			break;
		case 5:
		case 6:
			if ((f = held_flow(take8(&in)))) {
				held[f - t.flows].owned = false;
				if ((op & 7) == 5)
					tcp_term_abort(&t, f);
				else
					tcp_term_release(&t, f, now);
			}
			break;
		case 7: {
			static const uint64_t unit[4] = { 1000000ULL, 1000000000ULL,
							  1000000000000ULL, 1000ULL };

			now += take16(&in) * unit[(op >> 3) & 3];
			tcp_term_expire(&t, now);
			break;
		}
		}
		take_events();
		pull_frames(op >> 5);
		check_table();
	}
	tcp_term_free(&t);
	return 0;
}
