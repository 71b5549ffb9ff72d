/*
 * virtio_net: the device end to end, without KVM, on the passt backend over
 * a socketpair (the test plays the guest driver on the queues and passt on
 * the socket), with and without the packet filter. Frames cross whole both
 * ways; a frame the filter drops still completes its transmit descriptor,
 * and one it drops inbound uses no receive buffer; the rate limit holds
 * frames (never drops them) and a timer lets them go; replacing the rules
 * cuts an established flow; a full backend makes the device wait for room
 * instead of dropping or splitting frames; a backend that goes away is
 * logged and its frames dropped; steered flows (`http` rules with an
 * egress proxy) are answered by the device and relayed to the proxy's
 * socket, past the backend.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vmm/kiln-vmm/control.h"
#include "lib/guest/event_loop.h"
#include "frames.h"
#include "lib/guest/guest_mem.h"
#include "devices/net/net_filter.h"
#include "devices/net/net_passt.h"
#include "devices/net/net_state.h"
#include "devices/net/pkt_parse.h"
#include "devices/net/virtio_net.h"
#include "vmm/core/vm_internal.h"
#include "libkiln/handles.h"

#define RAM (4u << 20)
#define QSZ 64
#define RXQ 0
#define TXQ 1
#define HDR 12
#define BUF_GPA 0x100000u
#define RXBUF 2048
#define GUEST "10.0.2.15"
#define SERVER "10.0.2.99"

struct gq {
	uint64_t desc, avail, used;
	uint16_t avail_idx, used_seen, next_desc;
};

struct fx {
	struct guest_mem gm;
	struct event_loop *loop;
	struct virtio_dev *d;
	int peer;  /* passt's end of the socket */
	int devfd; /* the device's end */
	struct gq q[2];
	uint64_t next_buf;
	int irqs;
};

static void count_irq(void *ctx)
{
	struct fx *f = ctx;

	__atomic_add_fetch(&f->irqs, 1, __ATOMIC_SEQ_CST);
}

static uint8_t *gpa(struct fx *f, uint64_t a)
{
	return f->gm.host + a;
}

static uint64_t alloc_buf(struct fx *f, uint32_t len)
{
	uint64_t a = f->next_buf;

	f->next_buf += (len + 15) & ~15u;
	assert_true(f->next_buf < RAM);
	return a;
}

/* One-buffer chain on queue qi (caller holds d->lock). */
static void add_buf(struct fx *f, int qi, uint64_t addr, uint32_t len, int write)
{
	struct gq *q = &f->q[qi];
	uint16_t id = q->next_desc;
	uint8_t *dsc = gpa(f, q->desc + 16u * id);
	uint16_t flags = write ? 2 : 0, next = 0;

	memcpy(dsc, &addr, 8);
	memcpy(dsc + 8, &len, 4);
	memcpy(dsc + 12, &flags, 2);
	memcpy(dsc + 14, &next, 2);
	q->next_desc = (uint16_t)((id + 1) % QSZ);
	memcpy(gpa(f, q->avail + 4 + 2u * (q->avail_idx % QSZ)), &id, 2);
	q->avail_idx++;
	__atomic_store_n((uint16_t *)gpa(f, q->avail + 2), q->avail_idx, __ATOMIC_RELEASE);
}

static void post_rx(struct fx *f, int n)
{
	pthread_mutex_lock(&f->d->lock);
	for (int i = 0; i < n; i++)
		add_buf(f, RXQ, alloc_buf(f, RXBUF), RXBUF, 1);
	f->d->ops->notify(f->d, RXQ);
	pthread_mutex_unlock(&f->d->lock);
}

/* The guest sends one frame (header + frame in one buffer) and kicks. */
static void guest_tx(struct fx *f, const uint8_t *frame, size_t len)
{
	uint64_t a = alloc_buf(f, (uint32_t)(HDR + len));

	memset(gpa(f, a), 0, HDR);
	memcpy(gpa(f, a + HDR), frame, len);
	pthread_mutex_lock(&f->d->lock);
	add_buf(f, TXQ, a, (uint32_t)(HDR + len), 0);
	f->d->ops->notify(f->d, TXQ);
	pthread_mutex_unlock(&f->d->lock);
}

/* Used entries on queue qi not yet seen. */
static int used_new(struct fx *f, int qi)
{
	uint16_t idx;

	pthread_mutex_lock(&f->d->lock);
	idx = __atomic_load_n((uint16_t *)gpa(f, f->q[qi].used + 2), __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&f->d->lock);
	return (uint16_t)(idx - f->q[qi].used_seen);
}

/* Wait (3 s at most) for the next used element of qi: its buffer and length. */
static uint8_t *next_used(struct fx *f, int qi, uint32_t *len)
{
	struct gq *q = &f->q[qi];

	for (int t = 0; t < 3000; t++) {
		if (used_new(f, qi)) {
			uint8_t *e = gpa(f, q->used + 4 + 8u * (q->used_seen % QSZ));
			uint32_t id;
			uint64_t a;

			memcpy(&id, e, 4);
			memcpy(len, e + 4, 4);
			memcpy(&a, gpa(f, q->desc + 16u * id), 8);
			q->used_seen++;
			return gpa(f, a);
		}
		usleep(1000);
	}
	fail_msg("no used buffer on queue %d", qi);
	return NULL;
}

/* Read one framed frame from passt's end, waiting up to ms; its length or -1. */
static ssize_t peer_read(struct fx *f, uint8_t *buf, int ms)
{
	uint8_t h[4];
	size_t got = 0, len;
	struct pollfd p = { .fd = f->peer, .events = POLLIN };

	if (poll(&p, 1, ms) <= 0)
		return -1;
	while (got < 4) {
		ssize_t k = recv(f->peer, h + got, 4 - got, 0);

		assert_true(k > 0);
		got += (size_t)k;
	}
	len = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
	assert_true(len >= 14 && len <= NET_MAX_FRAME);
	for (got = 0; got < len;) {
		ssize_t k = recv(f->peer, buf + got, len - got, 0);

		assert_true(k > 0);
		got += (size_t)k;
	}
	return (ssize_t)len;
}

static void peer_write(struct fx *f, const uint8_t *frame, size_t len)
{
	uint8_t h[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
			 (uint8_t)len };

	assert_int_equal(send(f->peer, h, 4, MSG_NOSIGNAL), 4);
	assert_int_equal(send(f->peer, frame, len, MSG_NOSIGNAL), (ssize_t)len);
}

static struct net_rules *rules(const char *json)
{
	struct net_rules_err e = { 0 };
	struct net_rules *r;

	if (net_rules_parse_text(json, strlen(json), &r, &e) < 0)
		fail_msg("rules refused: %s", e.msg);
	return r;
}

/* The device, on a fresh socketpair; filter (may be NULL) owned by the device; egress_proxy: steering. */
static struct fx *make_with(struct net_filter *filter, const char *egress_proxy)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct virtio_net_params p = { .filter = filter, .egress_proxy = egress_proxy };
	struct err e = { { 0 } };
	int sv[2];

	assert_non_null(f);
	f->gm.host = aligned_alloc(4096, RAM);
	assert_non_null(f->gm.host);
	memset(f->gm.host, 0, RAM);
	guest_mem_layout(&f->gm, RAM);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f->peer = sv[1];
	f->devfd = sv[0];
	assert_int_equal(net_passt_attach(sv[0], 0, &p.backend, &e), 0);
	memcpy(p.mac, fr_guest_mac, 6);
	assert_int_equal(event_loop_create(&f->loop), 0);
	assert_int_equal(virtio_net_create(&p, f->loop, &f->d, &e), 0);
	f->d->mem = &f->gm;
	f->d->raise_irq = count_irq;
	f->d->irq_ctx = f;
	for (int i = 0; i < 2; i++) {
		struct virtq *vq = &f->d->vq[i];

		f->q[i].desc = 0x1000u * (uint64_t)(1 + 3 * i);
		f->q[i].avail = f->q[i].desc + 0x1000;
		f->q[i].used = f->q[i].desc + 0x2000;
		vq->size = QSZ;
		vq->desc_gpa = f->q[i].desc;
		vq->avail_gpa = f->q[i].avail;
		vq->used_gpa = f->q[i].used;
		assert_int_equal(virtq_enable(vq, &f->gm), 0);
	}
	f->next_buf = BUF_GPA;
	f->d->driver_features = 1ULL << VIRTIO_F_VERSION_1;
	f->d->status = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
		VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK;
	pthread_mutex_lock(&f->d->lock);
	assert_int_equal(f->d->ops->activate(f->d), 0);
	pthread_mutex_unlock(&f->d->lock);
	assert_int_equal(event_loop_start(f->loop), 0);
	return f;
}

static struct fx *make(struct net_filter *filter)
{
	return make_with(filter, NULL);
}

static struct net_filter_config filter_config(void)
{
	struct net_filter_config c = { .has_ip4 = true, .hash_key = { 3, 4 } };

	memcpy(c.guest_mac, fr_guest_mac, 6);
	net_addr_parse(GUEST, &c.ip4);
	return c;
}

static struct fx *make_filtered(const struct net_filter_config *c, const char *json)
{
	struct net_filter *nf;
	struct err e = { { 0 } };

	if (net_filter_create(c, rules(json), 0, &nf, &e) < 0)
		fail_msg("filter: %s", e.msg);
	return make(nf);
}

static void destroy(struct fx *f)
{
	event_loop_stop(f->loop);
	f->d->ops->destroy(f->d);
	event_loop_destroy(f->loop);
	if (f->peer >= 0)
		close(f->peer);
	free(f->gm.host);
	free(f);
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static size_t tcp(uint8_t *out, const char *src, const char *dst, uint16_t sport, uint16_t dport,
		  uint8_t flags, bool inbound)
{
	struct fr s = { .src = src,
			.dst = dst,
			.proto = FR_TCP,
			.sport = sport,
			.dport = dport,
			.tcp_flags = flags };

	if (inbound) {
		s.src_mac = fr_gw_mac;
		s.dst_mac = fr_guest_mac;
	}
	return fr_build(out, &s);
}

static size_t udp(uint8_t *out, const char *src, const char *dst, uint16_t sport, uint16_t dport,
		  bool inbound, const char *payload)
{
	struct fr s = { .src = src,
			.dst = dst,
			.proto = FR_UDP,
			.sport = sport,
			.dport = dport,
			.payload = payload,
			.payload_len = strlen(payload) };

	if (inbound) {
		s.src_mac = fr_gw_mac;
		s.dst_mac = fr_guest_mac;
	}
	return fr_build(out, &s);
}

#define SYN 0x02
#define ACK 0x10

static void test_frames_cross_both_ways_without_a_filter(void **state)
{
	struct fx *f = make(NULL);
	uint8_t fr[2048], got[NET_MAX_FRAME], *b;
	struct virtio_net_stats st;
	size_t n = udp(fr, GUEST, "203.0.113.9", 4000, 9, false, "anything goes");
	uint32_t len;

	(void)state;
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	assert_memory_equal(got, fr, n);
	next_used(f, TXQ, &len);
	assert_int_equal(len, 0);

	n = udp(fr, "203.0.113.9", GUEST, 9, 4000, true, "unsolicited is fine without a filter");
	post_rx(f, 1);
	peer_write(f, fr, n);
	b = next_used(f, RXQ, &len);
	assert_int_equal(len, HDR + n);
	assert_int_equal(b[10], 1); /* num_buffers */
	assert_memory_equal(b + HDR, fr, n);
	virtio_net_stats(f->d, &st);
	assert_int_equal(st.tx_frames, 1);
	assert_int_equal(st.rx_frames, 1);
	/* No filter: nothing to replace or show. */
	assert_null(virtio_net_filter_json(f->d));
	assert_int_equal(errno, ENODEV);
	{
		size_t cut = 7;

		assert_int_equal(virtio_net_filter_replace(f->d, rules("{}"), &cut), -ENODEV);
	}
	destroy(f);
}

static void test_egress_drops_complete_their_descriptor(void **state)
{
	struct net_filter_config c = filter_config();
	struct fx *f = make_filtered(
		&c, "{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":80}]}");
	uint8_t fr[2048], got[NET_MAX_FRAME];
	struct virtio_net_stats st;
	uint32_t len;
	size_t n;

	(void)state;
	n = tcp(fr, GUEST, SERVER, 40000, 80, SYN, false);
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	next_used(f, TXQ, &len);
	/* Another port, another (private) network: completed, never sent. */
	n = tcp(fr, GUEST, SERVER, 40001, 81, SYN, false);
	guest_tx(f, fr, n);
	next_used(f, TXQ, &len);
	assert_int_equal(len, 0);
	n = tcp(fr, GUEST, "10.0.3.1", 40002, 80, SYN, false);
	guest_tx(f, fr, n);
	next_used(f, TXQ, &len);
	/* A spoofed source is dropped too. */
	n = tcp(fr, "10.0.2.16", SERVER, 40003, 80, SYN, false);
	guest_tx(f, fr, n);
	next_used(f, TXQ, &len);
	assert_int_equal(peer_read(f, got, 200), -1);
	virtio_net_stats(f->d, &st);
	assert_int_equal(st.tx_frames, 1);
	assert_int_equal(st.tx_filtered, 3);
	assert_int_equal(st.tx_dropped, 0);
	destroy(f);
}

static void test_ingress_drops_use_no_receive_buffer(void **state)
{
	struct net_filter_config c = filter_config();
	struct fx *f = make_filtered(
		&c, "{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":80}]}");
	uint8_t fr[2048], got[NET_MAX_FRAME], *b;
	struct virtio_net_stats st;
	uint32_t len;
	size_t n;

	(void)state;
	post_rx(f, 1);
	/* Unsolicited: nothing opened this flow. */
	n = tcp(fr, SERVER, GUEST, 80, 40000, SYN | ACK, true);
	peer_write(f, fr, n);
	usleep(200 * 1000);
	assert_int_equal(used_new(f, RXQ), 0);
	/* The guest opens it; the same reply now comes in, into that one buffer. */
	n = tcp(fr, GUEST, SERVER, 40000, 80, SYN, false);
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	n = tcp(fr, SERVER, GUEST, 80, 40000, SYN | ACK, true);
	peer_write(f, fr, n);
	b = next_used(f, RXQ, &len);
	assert_int_equal(len, HDR + n);
	assert_memory_equal(b + HDR, fr, n);
	virtio_net_stats(f->d, &st);
	assert_int_equal(st.rx_filtered, 1);
	assert_int_equal(st.rx_frames, 1);
	destroy(f);
}

static void test_a_flood_of_dropped_frames_drains_in_turns(void **state)
{
	struct net_filter_config c = filter_config();
	struct fx *f = make_filtered(
		&c, "{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":80}]}");
	static uint8_t burst[1000 * (4 + 80)];
	uint8_t fr[2048], got[NET_MAX_FRAME], *b;
	struct virtio_net_stats st;
	size_t n, off = 0;
	uint32_t len;

	(void)state;
	post_rx(f, 1);
	n = tcp(fr, GUEST, SERVER, 40000, 80, SYN, false);
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	/* 1000 unsolicited frames in one write (more than a wake-up takes),
	 * then the reply the guest waits for. */
	for (int i = 0; i < 1000; i++) {
		n = tcp(fr, "10.0.2.98", GUEST, 80, (uint16_t)(20000 + i), SYN | ACK, true);
		assert_true(n <= 80);
		burst[off] = 0;
		burst[off + 1] = 0;
		burst[off + 2] = (uint8_t)(n >> 8);
		burst[off + 3] = (uint8_t)n;
		memcpy(burst + off + 4, fr, n);
		off += 4 + n;
	}
	for (size_t w = 0; w < off;) {
		ssize_t k = send(f->peer, burst + w, off - w, MSG_NOSIGNAL);

		assert_true(k > 0);
		w += (size_t)k;
	}
	n = tcp(fr, SERVER, GUEST, 80, 40000, SYN | ACK, true);
	peer_write(f, fr, n);
	b = next_used(f, RXQ, &len);
	assert_int_equal(len, HDR + n);
	assert_memory_equal(b + HDR, fr, n);
	virtio_net_stats(f->d, &st);
	assert_int_equal(st.rx_filtered, 1000);
	destroy(f);
}

static void test_rate_limit_holds_frames_instead_of_dropping(void **state)
{
	struct net_filter_config c = filter_config();
	struct fx *f;
	uint8_t fr[2048], got[NET_MAX_FRAME];
	struct virtio_net_stats st;
	uint64_t t0, t;
	uint32_t len;
	size_t n;

	(void)state;
	/* One packet per 300 ms each way. */
	c.tx_packets = (struct rate_bucket_cfg){ .size = 1, .refill_ms = 300 };
	c.rx_packets = (struct rate_bucket_cfg){ .size = 1, .refill_ms = 300 };
	f = make_filtered(&c,
			  "{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"udp\",\"ports\":5000}]}");
	t0 = ms_now();
	for (int i = 0; i < 3; i++) {
		char p[8];

		snprintf(p, sizeof(p), "tx%d", i);
		n = udp(fr, GUEST, SERVER, 4000, 5000, false, p);
		guest_tx(f, fr, n);
	}
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	/* The other two wait in the queue: not completed, not dropped. */
	usleep(50 * 1000);
	assert_int_equal(used_new(f, TXQ), 1);
	for (int i = 1; i < 3; i++) {
		assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
		assert_memory_equal(got + n - 3, i == 1 ? "tx1" : "tx2", 3);
	}
	t = ms_now() - t0;
	assert_true(t >= 550);
	for (int i = 0; i < 3; i++)
		next_used(f, TXQ, &len);

	/* Inbound: three replies, one receive buffer each, one per 300 ms. */
	post_rx(f, 3);
	t0 = ms_now();
	for (int i = 0; i < 3; i++) {
		n = udp(fr, SERVER, GUEST, 5000, 4000, true, "rx");
		peer_write(f, fr, n);
	}
	for (int i = 0; i < 3; i++)
		next_used(f, RXQ, &len);
	t = ms_now() - t0;
	assert_true(t >= 550);
	virtio_net_stats(f->d, &st);
	assert_int_equal(st.tx_frames, 3);
	assert_int_equal(st.rx_frames, 3);
	assert_int_equal(st.tx_filtered + st.rx_filtered + st.tx_dropped + st.rx_dropped, 0);
	assert_true(st.tx_throttled >= 1);
	assert_true(st.rx_throttled >= 1);
	destroy(f);
}

static void test_replacing_rules_cuts_an_established_flow(void **state)
{
	struct net_filter_config c = filter_config();
	struct fx *f = make_filtered(
		&c, "{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":80}]}");
	uint8_t fr[2048], got[NET_MAX_FRAME], *b;
	struct virtio_net_stats st;
	json_t *j;
	size_t n, cut = 0;
	uint32_t len;

	(void)state;
	post_rx(f, 2);
	n = tcp(fr, GUEST, SERVER, 40000, 80, SYN, false);
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	n = tcp(fr, SERVER, GUEST, 80, 40000, SYN | ACK, true);
	peer_write(f, fr, n);
	b = next_used(f, RXQ, &len);
	assert_non_null(b);

	/* Rules that no longer allow port 80: the flow is cut both ways. */
	assert_int_equal(
		virtio_net_filter_replace(
			f->d,
			rules("{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":443}]}"),
			&cut),
		0);
	assert_int_equal(cut, 1);
	n = tcp(fr, GUEST, SERVER, 40000, 80, ACK, false);
	guest_tx(f, fr, n);
	next_used(f, TXQ, &len);
	next_used(f, TXQ, &len);
	assert_int_equal(peer_read(f, got, 200), -1);
	/* ... and the guest's segment on it is answered with a reset (tcp_reset.h). */
	b = next_used(f, RXQ, &len);
	assert_int_equal(len, HDR + 54);
	assert_int_equal(b[HDR + 14 + 20 + 13], 0x04);
	n = tcp(fr, SERVER, GUEST, 80, 40000, ACK, true);
	peer_write(f, fr, n);
	usleep(200 * 1000);
	assert_int_equal(used_new(f, RXQ), 0);
	virtio_net_stats(f->d, &st);
	assert_int_equal(st.tx_filtered, 1);
	assert_int_equal(st.rx_filtered, 1);
	assert_int_equal(st.tcp_resets, 1);

	j = virtio_net_filter_json(f->d);
	assert_non_null(j);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(j, "counters"), "flows_cut")),
			 1);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(json_object_get(j, "counters"),
								 "device"),
						 "tx_filtered")),
			 1);
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "rules"), "allow")), 1);
	json_decref(j);
	destroy(f);
}

static void test_full_backend_waits_for_room(void **state)
{
	struct fx *f = make(NULL);
	static uint8_t fr[9000], got[NET_MAX_FRAME];
	struct virtio_net_stats st;
	int small = 4096, frames = 48, seen = 0;
	uint32_t len;

	(void)state;
	setsockopt(f->peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	setsockopt(f->devfd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	/* passt reads nothing for a while: the device's buffer fills and it
	 * stops taking frames from the queue. */
	for (int i = 0; i < frames; i++) {
		memset(fr, 0, sizeof(fr));
		memcpy(fr, fr_gw_mac, 6);
		memcpy(fr + 6, fr_guest_mac, 6);
		fr[12] = 0x08;
		fr[14] = (uint8_t)i;
		fr[sizeof(fr) - 1] = (uint8_t)i;
		guest_tx(f, fr, sizeof(fr));
	}
	usleep(200 * 1000);
	assert_true(used_new(f, TXQ) < frames);
	virtio_net_stats(f->d, &st);
	assert_true(st.tx_backend_full >= 1);
	/* Now it reads: every frame arrives, whole and in order. */
	while (seen < frames) {
		ssize_t k = peer_read(f, got, 3000);

		assert_int_equal(k, sizeof(fr));
		assert_int_equal(got[14], (uint8_t)seen);
		assert_int_equal(got[sizeof(fr) - 1], (uint8_t)seen);
		seen++;
	}
	for (int i = 0; i < frames; i++)
		next_used(f, TXQ, &len);
	virtio_net_stats(f->d, &st);
	assert_int_equal(st.tx_frames, frames);
	assert_int_equal(st.tx_dropped, 0);
	destroy(f);
}

static void test_backend_gone_drops_frames(void **state)
{
	struct fx *f = make(NULL);
	uint8_t fr[2048];
	struct virtio_net_stats st;
	uint32_t len;
	size_t n = udp(fr, GUEST, SERVER, 4000, 5000, false, "into the void");

	(void)state;
	post_rx(f, 2);
	close(f->peer);
	f->peer = -1;
	usleep(100 * 1000);
	guest_tx(f, fr, n);
	next_used(f, TXQ, &len);
	guest_tx(f, fr, n);
	next_used(f, TXQ, &len);
	virtio_net_stats(f->d, &st);
	assert_int_equal(st.tx_frames, 0);
	assert_int_equal(st.tx_dropped, 2);
	assert_int_equal(used_new(f, RXQ), 0);
	destroy(f);
}

static void test_state_versions(void **state)
{
	struct fx *f = make(NULL);
	uint8_t buf[64];
	const uint8_t v1[7] = { 1, 0x02, 0, 0, 0, 0, 0x09 };
	uint8_t v2[10] = { 2, 0x02, 0, 0, 0, 0, 0x09, 1, QSZ, 0 };
	long n;

	(void)state;
	pthread_mutex_lock(&f->d->lock);
	n = f->d->ops->save(f->d, buf, sizeof(buf));
	assert_int_equal(n, 14);
	assert_int_equal(buf[0], 3);
	assert_memory_equal(buf + 1, fr_guest_mac, 6);
	assert_int_equal(buf[7], 0);                                /* nothing held */
	assert_int_equal(buf[10] | buf[11] | buf[12] | buf[13], 0); /* no flows without a filter */
	assert_int_equal(f->d->ops->save(f->d, buf, 13), -ENOSPC);
	assert_int_equal(f->d->ops->restore(f->d, buf, 14), 0);
	assert_int_equal(f->d->ops->restore(f->d, v1, sizeof(v1)), 0);
	/* A held chain beyond the queue. */
	assert_int_equal(f->d->ops->restore(f->d, v2, sizeof(v2)), -EINVAL);
	assert_int_equal(f->d->ops->restore(f->d, v2, 9), -EINVAL);
	/* A held chain comes back to the guest as used. */
	v2[8] = 5;
	assert_int_equal(f->d->ops->restore(f->d, v2, sizeof(v2)), 0);
	pthread_mutex_unlock(&f->d->lock);
	assert_int_equal(used_new(f, TXQ), 1);
	destroy(f);
}

/* Established 10.0.2.15:40000 <-> SERVER:80 through the filter of f (one receive buffer used). */
static void establish(struct fx *f)
{
	uint8_t fr[2048], got[NET_MAX_FRAME];
	uint32_t len;
	size_t n;

	n = tcp(fr, GUEST, SERVER, 40000, 80, SYN, false);
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	n = tcp(fr, SERVER, GUEST, 80, 40000, SYN | ACK, true);
	peer_write(f, fr, n);
	next_used(f, RXQ, &len);
	n = tcp(fr, GUEST, SERVER, 40000, 80, ACK, false);
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
}

/* The guest sends an ACK whose ACK field is ack, on 40000 -> SERVER:80. */
static void guest_ack(struct fx *f, uint32_t ack)
{
	uint8_t fr[2048];
	size_t n = tcp(fr, GUEST, SERVER, 40000, 80, ACK, false);

	fr_put32(fr + 14 + 20 + 8, ack);
	guest_tx(f, fr, n);
}

/*
 * A segment of a flow the filter does not track is answered with a reset
 * at its ACK, before the backend's frames and past the filter; a reset is
 * never answered, and a guest sending faster than it gives receive buffers
 * loses resets (counted), never memory.
 */
static void test_untracked_segments_get_resets(void **state)
{
	struct net_filter_config c = filter_config();
	struct fx *f = make_filtered(
		&c, "{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":80}]}");
	uint8_t fr[2048], *b;
	struct virtio_net_stats st;
	uint32_t len;
	size_t n;

	(void)state;
	post_rx(f, 1);
	guest_ack(f, 0x11223344);
	b = next_used(f, RXQ, &len);
	assert_int_equal(len, HDR + 54);
	assert_memory_equal(b + HDR, fr_guest_mac, 6);
	assert_int_equal(b[HDR + 14 + 20 + 13], 0x04);                 /* RST */
	assert_int_equal(fr_get32(b + HDR + 14 + 20 + 4), 0x11223344); /* SEQ = the segment's ACK */
	assert_int_equal(b[HDR + 14 + 20 + 1], 80);                    /* from the server's port */
	n = tcp(fr, GUEST, SERVER, 40000, 80, 0x04, false);            /* a reset: not answered */
	guest_tx(f, fr, n);
	for (int i = 0; i < 20; i++)
		guest_ack(f, (uint32_t)i);
	for (int i = 0; i < 22; i++)
		next_used(f, TXQ, &len);
	virtio_net_stats(f->d, &st);
	/* RESET_SLOTS waiting, and one more as the frame waiting for a buffer. */
	assert_int_equal(st.tcp_resets, 1 + 9);
	assert_int_equal(st.tcp_resets_lost, 11);
	post_rx(f, 10);
	for (int i = 0; i < 9; i++) {
		b = next_used(f, RXQ, &len);
		assert_int_equal(fr_get32(b + HDR + 14 + 20 + 4), (uint32_t)i);
	}
	usleep(100 * 1000);
	assert_int_equal(used_new(f, RXQ), 0);
	destroy(f);
}

/*
 * A snapshot keeps the established flows; the restored device probes each
 * with an out-of-window ACK (its first frame, no backend frame needed),
 * and the guest's answer, untracked by the new filter, gets the reset
 * that ends the connection in the guest. The restored MAC is the filter's
 * too.
 */
static void test_restore_probes_the_flows_the_snapshot_kept(void **state)
{
	struct net_filter_config c = filter_config();
	const char *allow =
		"{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":80}]}";
	struct fx *f = make_filtered(&c, allow), *g;
	uint8_t buf[256], *b;
	struct virtio_net_stats st;
	uint32_t len;
	long n;

	(void)state;
	post_rx(f, 1);
	establish(f);
	pthread_mutex_lock(&f->d->lock);
	n = f->d->ops->save(f->d, buf, sizeof(buf));
	pthread_mutex_unlock(&f->d->lock);
	assert_int_equal(n, 14 + 37);
	assert_int_equal(buf[10], 1);
	destroy(f);

	/* The new VM was given another MAC: the guest keeps its own, and the
	 * filter must hold it to that one, or its answer drops as spoofed. */
	c.guest_mac[5] ^= 0xff;
	g = make_filtered(&c, allow);
	pthread_mutex_lock(&g->d->lock);
	g->d->ops->reset(g->d); /* as a restore finds it: not yet registered */
	pthread_mutex_unlock(&g->d->lock);
	post_rx(g, 3);
	pthread_mutex_lock(&g->d->lock);
	assert_int_equal(g->d->ops->restore(g->d, buf, (size_t)n), 0);
	pthread_mutex_unlock(&g->d->lock);
	for (uint32_t half = 0; half < 2; half++) {
		b = next_used(g, RXQ, &len);
		assert_int_equal(len, HDR + 54);
		assert_memory_equal(b + HDR, fr_guest_mac, 6);
		assert_int_equal(b[HDR + 14 + 20 + 13], 0x10); /* a bare ACK */
		assert_int_equal(b[HDR + 14 + 20 + 3], 0x40);  /* to 40000 (0x9c40) */
		assert_int_equal(fr_get32(b + HDR + 14 + 20 + 4), half << 31);
	}
	guest_ack(g, 0x0badcafe);
	b = next_used(g, RXQ, &len);
	assert_int_equal(b[HDR + 14 + 20 + 13], 0x04);
	assert_int_equal(fr_get32(b + HDR + 14 + 20 + 4), 0x0badcafe);
	virtio_net_stats(g->d, &st);
	assert_int_equal(st.tcp_probes, 2);
	assert_int_equal(st.tcp_resets, 1);
	/* Hostile state: refused whole. */
	buf[14] = 9;
	pthread_mutex_lock(&g->d->lock);
	assert_int_equal(g->d->ops->restore(g->d, buf, (size_t)n), -EINVAL);
	assert_int_equal(g->d->ops->restore(g->d, buf, (size_t)n - 1), -EINVAL);
	pthread_mutex_unlock(&g->d->lock);
	destroy(g);
}

/*
 * Twenty connections restored at once: the guest answers every probe in
 * one transmit pass, and every answer gets its reset (the queue hands
 * what waits to the receive buffers when it fills), none lost.
 */
static void test_a_burst_of_answers_after_a_restore_loses_no_reset(void **state)
{
	struct net_filter_config c = filter_config();
	struct fx *g = make_filtered(
		&c, "{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":80}]}");
	struct conntrack_key keys[20];
	struct net_state ns = { .nflows = 20, .flows = keys };
	struct virtio_net_stats st;
	uint8_t buf[1024], fr[2048];
	uint32_t len;
	size_t n;

	(void)state;
	memcpy(ns.mac, fr_guest_mac, 6);
	for (int i = 0; i < 20; i++) {
		struct net_addr a;

		memset(&keys[i], 0, sizeof(keys[i]));
		keys[i].family = NET_AF4;
		keys[i].proto = PKT_PROTO_TCP;
		net_addr_parse(GUEST, &a);
		memcpy(keys[i].guest, a.b, 16);
		net_addr_parse(SERVER, &a);
		memcpy(keys[i].remote, a.b, 16);
		keys[i].gport = (uint16_t)(40000 + i);
		keys[i].rport = 80;
	}
	n = net_state_encode(&ns, buf, sizeof(buf));
	assert_true(n > 0);
	pthread_mutex_lock(&g->d->lock);
	g->d->ops->reset(g->d);
	pthread_mutex_unlock(&g->d->lock);
	post_rx(g, 60);
	pthread_mutex_lock(&g->d->lock);
	assert_int_equal(g->d->ops->restore(g->d, buf, n), 0);
	pthread_mutex_unlock(&g->d->lock);
	for (int i = 0; i < 40; i++)
		next_used(g, RXQ, &len);
	/* The twenty answers, one kick. */
	pthread_mutex_lock(&g->d->lock);
	for (int i = 0; i < 20; i++) {
		size_t m = tcp(fr, GUEST, SERVER, (uint16_t)(40000 + i), 80, ACK, false);
		uint64_t a = alloc_buf(g, (uint32_t)(HDR + m));

		fr_put32(fr + 14 + 20 + 8, 1000u + (uint32_t)i);
		memset(gpa(g, a), 0, HDR);
		memcpy(gpa(g, a + HDR), fr, m);
		add_buf(g, TXQ, a, (uint32_t)(HDR + m), 0);
	}
	g->d->ops->notify(g->d, TXQ);
	pthread_mutex_unlock(&g->d->lock);
	for (int i = 0; i < 20; i++) {
		uint8_t *b = next_used(g, RXQ, &len);

		assert_int_equal(b[HDR + 14 + 20 + 13], 0x04);
		assert_int_equal(fr_get32(b + HDR + 14 + 20 + 4), 1000u + (uint32_t)i);
	}
	virtio_net_stats(g->d, &st);
	assert_int_equal(st.tcp_probes, 40);
	assert_int_equal(st.tcp_resets, 20);
	assert_int_equal(st.tcp_resets_lost, 0);
	destroy(g);
}

/* One command on the control socket at path; the reply line (malloc'd). */
static char *control_call(const char *path, const char *line)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char reply[1 << 20];
	size_t have = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = 5 };

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(send(fd, line, strlen(line), MSG_NOSIGNAL), (ssize_t)strlen(line));
	assert_int_equal(send(fd, "\n", 1, MSG_NOSIGNAL), 1);
	while (!have || reply[have - 1] != '\n') {
		ssize_t k = recv(fd, reply + have, sizeof(reply) - 1 - have, 0);

		assert_true(k > 0);
		have += (size_t)k;
	}
	reply[have] = 0;
	close(fd);
	return strdup(reply);
}

/* line is refused ({"ok":false}) with an error holding needle. */
static void control_refused(const char *path, const char *line, const char *needle)
{
	char *r = control_call(path, line);
	json_t *j = json_loads(r, 0, NULL);

	assert_non_null(j);
	assert_true(json_is_false(json_object_get(j, "ok")));
	assert_non_null(strstr(json_string_value(json_object_get(j, "error")), needle));
	json_decref(j);
	free(r);
}

/*
 * The control socket's firewall commands on a VM whose only device is a
 * filtered virtio-net (no KVM needed: the commands touch nothing else).
 */
static void test_control_socket_firewall_commands(void **state)
{
	static const char first[] =
		"{\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":80}]}";
	struct net_filter_config c = filter_config();
	struct vm *vm = calloc(1, sizeof(*vm));
	struct kiln_vm *kv =
		calloc(1, sizeof(*kv)); /* libkiln's handle, as kiln-vmm's control sees it */
	struct control *ctl;
	struct err e = { { 0 } };
	struct fx *f = make_filtered(&c, first);
	uint8_t fr[2048], got[NET_MAX_FRAME];
	char dir[] = "/tmp/kiln-net-ctl-XXXXXX", path[64], *r;
	json_t *j;
	uint32_t len;
	size_t n;

	(void)state;
	assert_non_null(vm);
	assert_non_null(kv);
	kv->vm = vm;
	/* The control thread would filter itself: no syscall of ASan's
	 * runtime is on its list (tests/unit/test_seccomp_filter.c tests them). */
	kv->seccomp = KILN_SECCOMP_OFF;
	pthread_mutex_init(&kv->lk, NULL);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ctl", dir);
	vm->cfg.firewall = first;
	vm->cfg.firewall_len = strlen(first);
	vm->nvirtio = 1;
	vm->virtio[0].dev = f->d;
	assert_int_equal(control_open(kv, path, &ctl, &e), 0);
	assert_int_equal(control_start(ctl, &e), 0);

	/* An established flow on port 80... */
	n = tcp(fr, GUEST, SERVER, 40000, 80, SYN, false);
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	next_used(f, TXQ, &len);

	/* ...a bad rule set changes nothing and says what is wrong... */
	control_refused(path, "firewall-set {\"allow\":[{\"cidr\":\"10.0.0.1/8\"}]}",
			"did you mean 10.0.0.0/8?");
	/* ...as do `http` rules on a kiln-vmm without --egress-proxy... */
	control_refused(path, "firewall-set {\"http\":[{\"host\":\"web.test\"}]}",
			"--egress-proxy PATH");

	/* ...new rules without port 80 cut it... */
	r = control_call(
		path,
		"firewall-set {\"allow\":[{\"cidr\":\"10.0.2.0/24\",\"proto\":\"tcp\",\"ports\":443}]}");
	assert_string_equal(r, "{\"ok\":true,\"cut\":1}\n");
	free(r);
	n = tcp(fr, GUEST, SERVER, 40000, 80, ACK, false);
	guest_tx(f, fr, n);
	next_used(f, TXQ, &len);
	assert_int_equal(peer_read(f, got, 200), -1);
	/* ...and allow 443 from now on. */
	n = tcp(fr, GUEST, SERVER, 40001, 443, SYN, false);
	guest_tx(f, fr, n);
	assert_int_equal(peer_read(f, got, 3000), (ssize_t)n);
	next_used(f, TXQ, &len);

	r = control_call(path, "firewall-get");
	j = json_loads(r, 0, NULL);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "rules"), "allow")), 1);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(j, "counters"), "flows_cut")),
			 1);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(json_object_get(j, "counters"),
								 "device"),
						 "tx_filtered")),
			 1);
	assert_true(
		json_integer_value(
			json_object_get(json_object_get(json_object_get(json_object_get(j,
											"counters"),
									"egress"),
							"pass_new"),
					"packets")) >= 1);
	json_decref(j);
	free(r);

	control_stop(ctl);
	/* Without --firewall the commands say so. */
	vm->cfg.firewall = NULL;
	assert_int_equal(control_open(kv, path, &ctl, &e), 0);
	assert_int_equal(control_start(ctl, &e), 0);
	r = control_call(path, "firewall-get");
	assert_non_null(strstr(r, "\"ok\":false"));
	assert_non_null(strstr(r, "without --firewall"));
	free(r);
	r = control_call(path, "firewall-set {}");
	assert_non_null(strstr(r, "without --firewall"));
	free(r);
	control_stop(ctl);
	rmdir(dir);
	pthread_mutex_destroy(&kv->lk);
	free(kv);
	free(vm);
	destroy(f);
}

/* An IPv4 TCP frame with payload, seq and ack, its checksums right (tcp_term checks them). */
static size_t tcp_seg(uint8_t *out, uint16_t sport, uint8_t flags, uint32_t seq, uint32_t ack,
		      const char *data)
{
	struct fr s = { .src = GUEST,
			.dst = SERVER,
			.proto = FR_TCP,
			.sport = sport,
			.dport = 80,
			.tcp_flags = flags,
			.payload = data,
			.payload_len = data ? strlen(data) : 0 };
	size_t n = fr_build(out, &s), l4 = n - 14 - 20;
	uint8_t *ip = out + 14, *th = ip + 20;

	fr_put16(ip + 10, (uint16_t)~fr_csum(0, ip, 20));
	fr_put32(th + 4, seq);
	fr_put32(th + 8, ack);
	fr_put16(th + 16, (uint16_t)~fr_csum(fr_csum(0, ip + 12, 8) + 6 + (uint32_t)l4, th, l4));
	return n;
}

/* A listening Unix socket in a fresh directory: the egress proxy. */
static int proxy_listen(char *dir, char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	strcpy(dir, "/tmp/test_virtio_net.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, 108, "%s/egress.sock", dir);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static json_int_t device_counter(struct fx *f, const char *name)
{
	json_t *j = virtio_net_filter_json(f->d);
	json_int_t v;

	assert_non_null(j);
	v = json_integer_value(
		json_object_get(json_object_get(json_object_get(j, "counters"), "device"), name));
	json_decref(j);
	return v;
}

/*
 * `http` rules with an egress proxy: the guest's SYN to port 80 is
 * answered by the device (from the MAC the guest sent it to), the flow is
 * relayed to the proxy behind a PROXY v2 header, bytes cross both ways,
 * nothing reaches the backend; with the proxy gone the next flow is reset.
 */
static void test_steered_flows_go_to_the_proxy(void **state)
{
	struct net_filter_config c = filter_config();
	struct net_filter *nf;
	struct err e = { { 0 } };
	char dir[64], path[108];
	int lfd = proxy_listen(dir, path), pfd;
	uint8_t fr[2048], got[NET_MAX_FRAME], *b;
	struct pollfd pl = { .fd = lfd, .events = POLLIN };
	uint32_t len, iss;
	size_t n;
	struct fx *f;

	(void)state;
	assert_int_equal(net_filter_create(&c, rules("{\"http\":[{\"host\":\"web.test\"}]}"), 0,
					   &nf, &e),
			 0);
	f = make_with(nf, path);
	post_rx(f, 8);
	n = tcp_seg(fr, 40000, SYN, 1000, 0, NULL);
	guest_tx(f, fr, n);
	b = next_used(f, RXQ, &len);
	assert_int_equal(b[HDR + 14 + 20 + 13], SYN | ACK);
	assert_memory_equal(b + HDR, fr_guest_mac, 6);
	assert_memory_equal(b + HDR + 6, fr_gw_mac, 6); /* where the guest sent its SYN */
	assert_int_equal(fr_get32(b + HDR + 14 + 20 + 8), 1001);
	iss = fr_get32(b + HDR + 14 + 20 + 4);
	n = tcp_seg(fr, 40000, ACK, 1001, iss + 1, NULL);
	guest_tx(f, fr, n);
	assert_int_equal(poll(&pl, 1, 3000), 1);
	pfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(pfd >= 0);
	n = tcp_seg(fr, 40000, ACK, 1001, iss + 1, "GET / HTTP/1.0\r\n\r\n");
	guest_tx(f, fr, n);
	{
		/* The header (IPv4: 16 + 12 bytes, no AUTHORITY: nothing resolved), then the bytes. */
		uint8_t h[64];
		size_t have = 0;
		struct pollfd pp = { .fd = pfd, .events = POLLIN };

		while (have < 28 + 18 && poll(&pp, 1, 3000) == 1) {
			ssize_t k = read(pfd, h + have, sizeof(h) - have);

			assert_true(k > 0);
			have += (size_t)k;
		}
		assert_int_equal(have, 28 + 18);
		assert_int_equal(h[12], 0x21);
		assert_int_equal(h[13], 0x11);
		assert_memory_equal(h + 28, "GET / HTTP/1.0\r\n\r\n", 18);
	}
	assert_int_equal(write(pfd, "HTTP/1.0 200 OK\r\n\r\n", 19), 19);
	for (;;) {
		b = next_used(f, RXQ, &len);
		if (len > HDR + 54)
			break;
	}
	assert_int_equal(len, HDR + 54 + 19);
	assert_memory_equal(b + HDR + 54, "HTTP/1.0 200 OK\r\n\r\n", 19);
	/* Nothing went to passt. */
	assert_int_equal(peer_read(f, got, 100), -1);
	assert_int_equal(device_counter(f, "steered_flows"), 1);
	assert_int_equal(device_counter(f, "steered_live"), 1);
	assert_int_equal(device_counter(f, "steer_bytes_up"), 18);
	assert_int_equal(device_counter(f, "steer_bytes_down"), 19);
	assert_true(device_counter(f, "tx_steered") >= 3);
	/* A snapshot keeps the steered flow among those the restored device probes. */
	{
		uint8_t st[256];
		struct net_state ns;
		long k;

		pthread_mutex_lock(&f->d->lock);
		k = f->d->ops->save(f->d, st, sizeof(st));
		pthread_mutex_unlock(&f->d->lock);
		assert_true(k > 0);
		assert_int_equal(net_state_decode(st, (size_t)k, &ns), 0);
		assert_int_equal(ns.nflows, 1);
		assert_int_equal(ns.flows[0].gport, 40000);
		assert_int_equal(ns.flows[0].rport, 80);
		free(ns.flows);
	}

	/* The proxy is gone: the next flow is reset once its handshake is done. */
	close(lfd);
	unlink(path);
	n = tcp_seg(fr, 40001, SYN, 5000, 0, NULL);
	guest_tx(f, fr, n);
	b = next_used(f, RXQ, &len);
	assert_int_equal(b[HDR + 14 + 20 + 13], SYN | ACK);
	iss = fr_get32(b + HDR + 14 + 20 + 4);
	n = tcp_seg(fr, 40001, ACK, 5001, iss + 1, NULL);
	guest_tx(f, fr, n);
	b = next_used(f, RXQ, &len);
	assert_true(b[HDR + 14 + 20 + 13] & 0x04); /* RST */
	assert_int_equal(device_counter(f, "steer_connect_failed"), 1);
	close(pfd);
	destroy(f);
	rmdir(dir);
}

/* `http` rules set on a device without a proxy: a steered SYN is refused with a reset. */
static void test_steered_without_a_proxy_is_reset(void **state)
{
	struct net_filter_config c = filter_config();
	struct fx *f =
		make_filtered(&c,
			      "{\"outbound_internet\":true,\"http\":[{\"host\":\"web.test\"}]}");
	uint8_t fr[2048], got[NET_MAX_FRAME], *b;
	uint32_t len;
	size_t n;

	(void)state;
	post_rx(f, 2);
	n = tcp_seg(fr, 40000, SYN, 1000, 0, NULL);
	guest_tx(f, fr, n);
	b = next_used(f, RXQ, &len);
	assert_int_equal(b[HDR + 14 + 20 + 13], 0x04 | ACK);
	assert_int_equal(peer_read(f, got, 100), -1);
	assert_int_equal(device_counter(f, "tx_filtered"), 1);
	assert_int_equal(device_counter(f, "steered_flows"), 0);
	destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_cross_both_ways_without_a_filter),
		cmocka_unit_test(test_egress_drops_complete_their_descriptor),
		cmocka_unit_test(test_ingress_drops_use_no_receive_buffer),
		cmocka_unit_test(test_a_flood_of_dropped_frames_drains_in_turns),
		cmocka_unit_test(test_rate_limit_holds_frames_instead_of_dropping),
		cmocka_unit_test(test_replacing_rules_cuts_an_established_flow),
		cmocka_unit_test(test_full_backend_waits_for_room),
		cmocka_unit_test(test_backend_gone_drops_frames),
		cmocka_unit_test(test_state_versions),
		cmocka_unit_test(test_untracked_segments_get_resets),
		cmocka_unit_test(test_restore_probes_the_flows_the_snapshot_kept),
		cmocka_unit_test(test_a_burst_of_answers_after_a_restore_loses_no_reset),
		cmocka_unit_test(test_control_socket_firewall_commands),
		cmocka_unit_test(test_steered_flows_go_to_the_proxy),
		cmocka_unit_test(test_steered_without_a_proxy_is_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
