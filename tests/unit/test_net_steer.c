/*
 * net_steer: steered guest flows relayed to a real Unix listener (the
 * test's own "proxy"), the guest played segment by segment: the PROXY v2
 * header's fields, bytes both ways, FINs both ways, a proxy that is not
 * there (the guest gets a reset), a guest reset, a proxy that closes while
 * the guest still sends, and backpressure both ways (a proxy that does
 * not read closes the guest's window; a guest that does not acknowledge
 * stops the proxy's socket being read).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frames.h"
#include "devices/net/net_steer.h"
#include "devices/net/pkt_parse.h"
#include "lib/netrules/proxy_v2.h"

#define GUEST4 "10.0.2.15"
#define REMOTE4 "203.0.113.7"
#define GUEST6 "fd00::15"
#define REMOTE6 "2001:db8::7"
#define SEC 1000000000ULL

#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_ACK 0x10

#define WATCH_MAX 8

/* The test's guest, its proxy and the device's event loop, all in one. */
struct tb {
	struct net_steer s;
	uint64_t now;
	const char *guest, *remote;
	uint16_t gport, rport;
	uint32_t gseq;        /* the guest's next sequence number */
	uint32_t rcv_nxt;     /* the next byte it expects */
	uint16_t wnd;         /* the window the guest announces */
	bool fin, rst;        /* what it received */
	uint16_t last_window; /* the window tcp_term announced last */
	uint8_t *got;         /* the bytes it received, in order */
	size_t got_len, got_cap;
	/* The loop: fds net_steer watches, and for what. */
	int fd[WATCH_MAX];
	uint32_t ev[WATCH_MAX];
	int watch_fail; /* io.watch fails (a full loop) */
	/* The proxy. */
	char dir[64], path[108];
	int listener;
	const char *name, *name2; /* what names_of answers */
};

static int io_watch(void *ctx, int fd, uint32_t events, bool add)
{
	struct tb *b = ctx;

	assert_true(events != 0);
	if (b->watch_fail)
		return -ENOSPC;
	for (int i = 0; i < WATCH_MAX; i++) {
		if (b->fd[i] == fd) {
			assert_false(add);
			b->ev[i] = events;
			return 0;
		}
	}
	assert_true(add);
	for (int i = 0; i < WATCH_MAX; i++) {
		if (b->fd[i] < 0) {
			b->fd[i] = fd;
			b->ev[i] = events;
			return 0;
		}
	}
	return -ENOSPC;
}

static void io_unwatch(void *ctx, int fd)
{
	struct tb *b = ctx;

	for (int i = 0; i < WATCH_MAX; i++)
		if (b->fd[i] == fd) {
			b->fd[i] = -1;
			return;
		}
	fail_msg("unwatch of fd %d, not watched", fd);
}

static size_t io_names_of(void *ctx, const struct net_addr *dst, char (*out)[NET_HOST_MAX + 1],
			  size_t cap)
{
	struct tb *b = ctx;
	struct net_addr r;
	size_t n = 0;

	net_addr_parse(b->remote, &r);
	if (!net_addr_equal(dst, &r))
		return 0;
	if (b->name && n < cap)
		strcpy(out[n++], b->name);
	if (b->name2 && n < cap)
		strcpy(out[n++], b->name2);
	return n;
}

/* What the socket fd is watched for; 0: not in the loop. */
static uint32_t watched(struct tb *b, int fd)
{
	for (int i = 0; i < WATCH_MAX; i++)
		if (b->fd[i] == fd)
			return b->ev[i];
	return 0;
}

static void tb_init_at(struct tb *b, const char *path, bool v6)
{
	struct tcp_term_config tc = { .key = { 3, 4 } };
	struct net_steer_io io = {
		.watch = io_watch, .unwatch = io_unwatch, .names_of = io_names_of, .ctx = b
	};
	struct err e;

	memset(b, 0, sizeof(*b));
	for (int i = 0; i < WATCH_MAX; i++)
		b->fd[i] = -1;
	b->listener = -1;
	strcpy(b->dir, "/tmp/test_net_steer.XXXXXX");
	assert_non_null(mkdtemp(b->dir));
	snprintf(b->path, sizeof(b->path), "%s/%s", b->dir, path);
	memcpy(tc.guest_mac, fr_guest_mac, 6);
	memcpy(tc.gw_mac, fr_gw_mac, 6);
	assert_int_equal(net_steer_init(&b->s, b->path, &tc, &io, &e), 0);
	b->now = 5 * SEC;
	b->guest = v6 ? GUEST6 : GUEST4;
	b->remote = v6 ? REMOTE6 : REMOTE4;
	b->gport = 40000;
	b->rport = 443;
	b->gseq = 1000;
	b->wnd = 65535;
	b->got_cap = 4 << 20;
	b->got = malloc(b->got_cap);
	assert_non_null(b->got);
}

/* A proxy listening at b->path. */
static void proxy_listen(struct tb *b)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	strcpy(sa.sun_path, b->path);
	b->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(b->listener >= 0);
	assert_int_equal(bind(b->listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(b->listener, 4), 0);
}

static void tb_init(struct tb *b, bool v6)
{
	tb_init_at(b, "egress.sock", v6);
	proxy_listen(b);
}

static void tb_free(struct tb *b)
{
	net_steer_free(&b->s);
	for (int i = 0; i < WATCH_MAX; i++)
		assert_int_equal(b->fd[i], -1); /* every socket left the loop */
	if (b->listener >= 0)
		close(b->listener);
	unlink(b->path);
	rmdir(b->dir);
	free(b->got);
}

static uint32_t pseudo(const struct pkt *p, size_t l4_len)
{
	size_t alen = p->l3 == PKT_L3_IP4 ? 4 : 16;

	return fr_csum(0, p->src.b, alen) + fr_csum(0, p->dst.b, alen) + PKT_PROTO_TCP +
		(uint32_t)l4_len;
}

/* The guest sends a segment at its next sequence number. */
static void gsend(struct tb *b, uint8_t flags, const void *data, size_t len)
{
	static uint8_t f[2048];
	struct fr s = { .src = b->guest,
			.dst = b->remote,
			.proto = FR_TCP,
			.sport = b->gport,
			.dport = b->rport,
			.tcp_flags = flags,
			.payload = data,
			.payload_len = len };
	size_t n = fr_build(f, &s), l3 = strchr(b->guest, ':') ? 40 : 20, l4len = 20 + len;
	uint8_t *ip = f + 14, *th = ip + l3;
	struct pkt p;

	if (l3 == 20)
		fr_put16(ip + 10, (uint16_t)~fr_csum(0, ip, 20));
	fr_put32(th + 4, b->gseq);
	fr_put32(th + 8, (flags & F_ACK) ? b->rcv_nxt : 0);
	fr_put16(th + 14, b->wnd);
	assert_int_equal(pkt_parse(f, n, &p), 0);
	fr_put16(th + 16, (uint16_t)~fr_csum(pseudo(&p, l4len), th, l4len));
	b->gseq += (uint32_t)len + !!(flags & F_SYN) + !!(flags & F_FIN);
	net_steer_input(&b->s, f, n, b->now);
}

/* The guest takes every frame for it; in-order data is kept. true: something new came. */
static bool grecv(struct tb *b)
{
	uint8_t f[TCP_TERM_MAX_FRAME];
	bool news = false;
	size_t n;

	while ((n = net_steer_next_frame(&b->s, f, sizeof(f), b->now))) {
		struct pkt p;
		uint8_t flags;
		uint32_t seq;

		assert_int_equal(pkt_parse(f, n, &p), 0);
		assert_int_equal(fr_csum(pseudo(&p, p.l4_len), p.l4, p.l4_len), 0xffff);
		flags = p.l4[13];
		seq = fr_get32(p.l4 + 4);
		b->last_window = (uint16_t)(p.l4[14] << 8 | p.l4[15]);
		if (flags & F_RST) {
			b->rst = true;
			continue;
		}
		if (flags & F_SYN) {
			b->rcv_nxt = seq + 1;
			continue;
		}
		if (seq == b->rcv_nxt && p.payload_len) {
			assert_true(b->got_len + p.payload_len <= b->got_cap);
			memcpy(b->got + b->got_len, p.payload, p.payload_len);
			b->got_len += p.payload_len;
			b->rcv_nxt += (uint32_t)p.payload_len;
			news = true;
		}
		if ((flags & F_FIN) && seq + p.payload_len == b->rcv_nxt && !b->fin) {
			b->fin = true;
			b->rcv_nxt++;
			news = true;
		}
	}
	return news;
}

/* The device's loop, once: every watched fd that is ready. */
static void loop_once(struct tb *b)
{
	struct pollfd pf[WATCH_MAX];
	int n = 0;

	for (int i = 0; i < WATCH_MAX; i++) {
		if (b->fd[i] < 0)
			continue;
		pf[n].fd = b->fd[i];
		pf[n].events = (short)((b->ev[i] & EPOLLIN ? POLLIN : 0) |
				       (b->ev[i] & EPOLLOUT ? POLLOUT : 0));
		pf[n].revents = 0;
		n++;
	}
	if (n <= 0 || poll(pf, (nfds_t)n, 0) <= 0)
		return;
	for (int i = 0; i < n; i++) {
		uint32_t ev = (pf[i].revents & POLLIN ? EPOLLIN : 0) |
			(pf[i].revents & POLLOUT ? EPOLLOUT : 0) |
			(pf[i].revents & POLLHUP ? EPOLLHUP : 0) |
			(pf[i].revents & POLLERR ? EPOLLERR : 0);

		if (ev)
			net_steer_ready(&b->s, pf[i].fd, ev, b->now);
	}
}

/* Run the loop and the guest (acknowledging what it got) until quiet. */
static void settle(struct tb *b, bool ack)
{
	for (int i = 0; i < 64; i++) {
		loop_once(b);
		if (grecv(b) && ack)
			gsend(b, F_ACK, NULL, 0);
	}
}

/* SYN, SYN-ACK, ACK: the flow opens, net_steer connects. */
static void handshake(struct tb *b)
{
	gsend(b, F_SYN, NULL, 0);
	grecv(b);
	assert_false(b->rst);
	assert_true(b->rcv_nxt != 0);
	gsend(b, F_ACK, NULL, 0);
}

/* The proxy accepts the connection and reads the PROXY v2 header. */
static int proxy_accept(struct tb *b, struct proxy_v2 *h)
{
	uint8_t buf[PROXY_V2_MAX];
	size_t have = 0, need = 16;
	struct err e;
	int fd = accept4(b->listener, NULL, NULL, SOCK_CLOEXEC), r;

	assert_true(fd >= 0);
	for (;;) {
		ssize_t k = read(fd, buf + have, need - have);

		assert_true(k > 0);
		have += (size_t)k;
		if (have < need)
			continue;
		r = proxy_v2_decode(buf, have, h, &need, &e);
		assert_true(r >= 0);
		if (r > 0) {
			assert_int_equal((size_t)r, have); /* nothing of the guest's before it */
			return fd;
		}
	}
}

/* Read exactly n bytes from fd (the proxy's end). */
static void proxy_read(int fd, uint8_t *buf, size_t n)
{
	size_t have = 0;

	while (have < n) {
		ssize_t k = read(fd, buf + have, n - have);

		assert_true(k > 0);
		have += (size_t)k;
	}
}

static void test_header_and_bytes_both_ways(void **state)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: web.test\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	struct tb b;
	struct proxy_v2 h;
	uint8_t buf[256];
	int pfd;

	(void)state;
	tb_init(&b, false);
	b.name = "web.test";
	/* Another name the guest resolved to the same address (a CDN's) */
	b.name2 = "cdn.test";
	handshake(&b);
	assert_int_equal(b.s.st.flows, 1);
	assert_int_equal(b.s.live, 1);
	pfd = proxy_accept(&b, &h);
	assert_int_equal(h.family, AF_INET);
	{
		static const uint8_t g[4] = { 10, 0, 2, 15 }, r[4] = { 203, 0, 113, 7 };

		assert_memory_equal(h.src, g, 4);
		assert_memory_equal(h.dst, r, 4);
	}
	assert_int_equal(h.sport, 40000);
	assert_int_equal(h.dport, 443);
	assert_string_equal(h.authority, "web.test");
	assert_int_equal(h.n_also, 1);
	assert_string_equal(h.also[0], "cdn.test");
	/* Guest to proxy. */
	gsend(&b, F_ACK, req, strlen(req));
	settle(&b, true);
	proxy_read(pfd, buf, strlen(req));
	assert_memory_equal(buf, req, strlen(req));
	/* Proxy to guest, then its EOF: the guest gets the bytes and a FIN. */
	assert_int_equal(write(pfd, resp, strlen(resp)), (ssize_t)strlen(resp));
	assert_int_equal(shutdown(pfd, SHUT_WR), 0);
	settle(&b, true);
	assert_int_equal(b.got_len, strlen(resp));
	assert_memory_equal(b.got, resp, strlen(resp));
	assert_true(b.fin);
	assert_int_equal(b.s.live, 1); /* the guest has not closed yet */
	/* The guest's FIN: the proxy reads EOF, the flow ends. */
	gsend(&b, F_FIN | F_ACK, NULL, 0);
	settle(&b, true);
	assert_int_equal(read(pfd, buf, sizeof(buf)), 0);
	assert_int_equal(b.s.live, 0);
	assert_int_equal(b.s.st.closed, 1);
	assert_int_equal(b.s.st.bytes_up, strlen(req));
	assert_int_equal(b.s.st.bytes_down, strlen(resp));
	assert_int_equal(b.s.st.connect_failed + b.s.st.proxy_errors, 0);
	assert_false(b.rst);
	close(pfd);
	tb_free(&b);
}

/* IPv6, and a destination the guest resolved no name for: no AUTHORITY. */
static void test_ipv6_without_a_name(void **state)
{
	struct tb b;
	struct proxy_v2 h;
	int pfd;

	(void)state;
	tb_init(&b, true);
	b.rport = 80;
	handshake(&b);
	pfd = proxy_accept(&b, &h);
	assert_int_equal(h.family, AF_INET6);
	assert_int_equal(h.src[0], 0xfd);
	assert_int_equal(h.src[15], 0x15);
	assert_int_equal(h.dst[0], 0x20);
	assert_int_equal(h.dst[15], 0x07);
	assert_int_equal(h.dport, 80);
	assert_string_equal(h.authority, "");
	/* The proxy closes at once: the guest gets a FIN, then its own close ends it. */
	close(pfd);
	settle(&b, true);
	assert_true(b.fin);
	gsend(&b, F_FIN | F_ACK, NULL, 0);
	settle(&b, true);
	assert_int_equal(b.s.live, 0);
	assert_false(b.rst);
	tb_free(&b);
}

/* The guest's flow, as tcp_term keys it. */
static struct conntrack_key key_of(const struct tb *b)
{
	struct conntrack_key k = { .proto = PKT_PROTO_TCP, .gport = b->gport, .rport = b->rport };
	struct net_addr g, r;

	net_addr_parse(b->guest, &g);
	net_addr_parse(b->remote, &r);
	k.family = g.family;
	memcpy(k.guest, g.b, 16);
	memcpy(k.remote, r.b, 16);
	return k;
}

/* The handshake is answered, then the connection is reset at once: one connect failure. */
static void expect_refused(struct tb *b)
{
	struct conntrack_key k = key_of(b);

	gsend(b, F_SYN, NULL, 0);
	grecv(b);
	assert_true(net_steer_holds(&b->s, &k));
	gsend(b, F_ACK, NULL, 0);
	grecv(b);
	assert_true(b->rst);
	assert_int_equal(b->s.st.flows, 1);
	assert_int_equal(b->s.st.connect_failed, 1);
	assert_int_equal(b->s.live, 0);
	/* The flow is gone: the guest's next segment is answered as a closed port's. */
	assert_false(net_steer_holds(&b->s, &k));
	tb_free(b);
}

/* No proxy at the path, or one that does not accept: the guest's connection is reset. */
static void test_refused_connect_resets_the_guest(void **state)
{
	struct tb b;

	(void)state;
	tb_init_at(&b, "nobody.sock", false);
	expect_refused(&b);
	/* A socket whose listener is gone (ECONNREFUSED). */
	tb_init(&b, false);
	close(b.listener);
	b.listener = -1;
	expect_refused(&b);
	/* The loop cannot watch another socket. */
	tb_init(&b, false);
	b.watch_fail = 1;
	expect_refused(&b);
}

/* The guest resets: the proxy sees its socket close. */
static void test_guest_reset_closes_the_socket(void **state)
{
	struct tb b;
	struct proxy_v2 h;
	uint8_t c;
	int pfd;

	(void)state;
	tb_init(&b, false);
	handshake(&b);
	pfd = proxy_accept(&b, &h);
	gsend(&b, F_RST | F_ACK, NULL, 0);
	settle(&b, false);
	assert_int_equal(read(pfd, &c, 1), 0);
	assert_int_equal(b.s.live, 0);
	close(pfd);
	tb_free(&b);
}

/* The proxy closed its socket and the guest still sends: a reset, as close() gives. */
static void test_proxy_gone_while_the_guest_sends(void **state)
{
	struct tb b;
	struct proxy_v2 h;
	int pfd;

	(void)state;
	tb_init(&b, false);
	handshake(&b);
	pfd = proxy_accept(&b, &h);
	close(pfd);
	settle(&b, true);
	assert_true(b.fin);
	gsend(&b, F_ACK, "more", 4);
	settle(&b, true);
	assert_true(b.rst);
	assert_int_equal(b.s.st.proxy_errors, 1);
	assert_int_equal(b.s.live, 0);
	tb_free(&b);
}

/* A proxy that does not read closes the guest's window; reading opens it, nothing lost. */
static void test_backpressure_guest_to_proxy(void **state)
{
	struct tb b;
	struct proxy_v2 h;
	static uint8_t chunk[1400], all[4 << 20];
	size_t sent = 0, have = 0;
	int pfd, sz = 4096;

	(void)state;
	tb_init(&b, false);
	handshake(&b);
	pfd = proxy_accept(&b, &h);
	assert_int_equal(setsockopt(pfd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
	/* The guest sends while the window lets it. */
	b.last_window = 65535;
	for (int i = 0; i < 2000 && b.last_window >= sizeof(chunk); i++) {
		for (size_t k = 0; k < sizeof(chunk); k++)
			chunk[k] = (uint8_t)(sent + k);
		gsend(&b, F_ACK, chunk, sizeof(chunk));
		sent += sizeof(chunk);
		settle(&b, false);
	}
	assert_true(b.last_window <
		    sizeof(chunk)); /* closed: the proxy's socket and tcp_term's rx are full */
	assert_true(sent < sizeof(all));
	assert_true(watched(&b, b.s.conns[0].fd) & EPOLLOUT);
	/* The proxy reads everything; the window opens again. */
	{
		struct pollfd p = { .fd = pfd, .events = POLLIN };

		while (have < sent) {
			ssize_t k;

			settle(&b, false);
			if (poll(&p, 1, 100) <= 0)
				break;
			k = read(pfd, all + have, sizeof(all) - have);
			assert_true(k > 0);
			have += (size_t)k;
		}
	}
	assert_int_equal(have, sent);
	for (size_t k = 0; k < have; k++)
		if (all[k] != (uint8_t)k)
			fail_msg("byte %zu differs", k);
	gsend(&b, F_ACK, NULL, 0); /* a window probe, as the guest would send */
	settle(&b, false);
	assert_true(b.last_window >= sizeof(chunk));
	assert_int_equal(b.s.st.bytes_up, sent);
	close(pfd);
	tb_free(&b);
}

/* A guest that does not acknowledge: tcp_term's tx fills, the proxy's socket is not read. */
static void test_backpressure_proxy_to_guest(void **state)
{
	struct tb b;
	struct proxy_v2 h;
	static uint8_t data[1 << 20];
	size_t put = 0;
	int pfd, fl;

	(void)state;
	tb_init(&b, false);
	handshake(&b);
	pfd = proxy_accept(&b, &h);
	for (size_t k = 0; k < sizeof(data); k++)
		data[k] = (uint8_t)(k * 7);
	fl = fcntl(pfd, F_GETFL);
	assert_int_equal(fcntl(pfd, F_SETFL, fl | O_NONBLOCK), 0);
	/* The proxy writes until its socket is full; the guest takes frames but never acknowledges. */
	for (int i = 0; i < 200; i++) {
		ssize_t k = put < sizeof(data) ? write(pfd, data + put, sizeof(data) - put) : 0;

		if (k > 0)
			put += (size_t)k;
		loop_once(&b);
		grecv(&b);
	}
	assert_true(put < sizeof(data)); /* the proxy was held back */
	assert_true(b.s.conns[0].down_blocked);
	assert_false(watched(&b, b.s.conns[0].fd) & EPOLLIN);
	assert_true(b.got_len <= 65535); /* the guest's window */
	/* The guest acknowledges as it reads: everything comes, in order. */
	for (int i = 0; i < 100000 && b.got_len < sizeof(data); i++) {
		ssize_t k = put < sizeof(data) ? write(pfd, data + put, sizeof(data) - put) : 0;

		if (k > 0)
			put += (size_t)k;
		gsend(&b, F_ACK, NULL, 0);
		settle(&b, true);
	}
	assert_int_equal(b.got_len, sizeof(data));
	assert_memory_equal(b.got, data, sizeof(data));
	assert_int_equal(b.s.st.bytes_down, sizeof(data));
	close(pfd);
	tb_free(&b);
}

/* A device reset: every socket closed, every flow forgotten, nothing sent. */
static void test_reset_drops_every_flow(void **state)
{
	struct tb b;
	struct proxy_v2 h;
	uint8_t c[16];
	int pfd;

	(void)state;
	tb_init(&b, false);
	handshake(&b);
	pfd = proxy_accept(&b, &h);
	gsend(&b, F_ACK, "abc", 3);
	net_steer_reset(&b.s);
	assert_int_equal(b.s.live, 0);
	assert_int_equal(tcp_term_count(&b.s.term), 0);
	assert_false(net_steer_pending(&b.s));
	assert_int_equal(read(pfd, c, sizeof(c)), 3); /* what was sent before */
	assert_int_equal(read(pfd, c, sizeof(c)), 0);
	/* The guest's next segment is of no flow: answered with a reset. */
	gsend(&b, F_ACK, "d", 1);
	grecv(&b);
	assert_true(b.rst);
	/* And a new flow works. */
	b.rst = false;
	b.gport++;
	handshake(&b);
	close(pfd);
	pfd = proxy_accept(&b, &h);
	assert_int_equal(h.sport, b.gport);
	close(pfd);
	tb_free(&b);
}

static void test_init_refuses_a_long_path(void **state)
{
	struct net_steer s;
	struct tcp_term_config tc = { 0 };
	struct net_steer_io io = { 0 };
	char path[200];
	struct err e;

	(void)state;
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(net_steer_init(&s, path, &tc, &io, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a Unix socket path"));
	tc.capacity = TCP_TERM_MAX_CAPACITY + 1;
	assert_int_equal(net_steer_init(&s, "/x", &tc, &io, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_and_bytes_both_ways),
		cmocka_unit_test(test_ipv6_without_a_name),
		cmocka_unit_test(test_refused_connect_resets_the_guest),
		cmocka_unit_test(test_guest_reset_closes_the_socket),
		cmocka_unit_test(test_proxy_gone_while_the_guest_sends),
		cmocka_unit_test(test_backpressure_guest_to_proxy),
		cmocka_unit_test(test_backpressure_proxy_to_guest),
		cmocka_unit_test(test_reset_drops_every_flow),
		cmocka_unit_test(test_init_refuses_a_long_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
