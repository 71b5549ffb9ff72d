/*
 * The TCP bridge over real sockets: sock_relay between socketpairs (both
 * directions, half-close passed on each way, buffers smaller than the
 * data, stop, the idle limit after a half-close, a peer that vanishes),
 * and the agent's tcp_connect handler against a real TCP server on this
 * machine's loopback (ok, bytes that rode behind the request, half-close
 * through the whole bridge, `refused` when nothing listens); and the host
 * library's agent_client_tcp_connect through a kiln-vmm-like socket to
 * that handler.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"
#include "guest-init/agent/agent_conn.h"
#include "guest-init/agent/agent_tcp.h"
#include "lib/base/sock_relay.h"
#include "lib/base/mono.h"
#include "fake_vmm.h"

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void put(int fd, const void *buf, size_t n)
{
	const uint8_t *b = buf;

	while (n) {
		ssize_t r = send(fd, b, n, MSG_NOSIGNAL);

		assert_true(r > 0);
		b += r;
		n -= (size_t)r;
	}
}

/* Read until EOF (each wait bounded); returns the count. */
static size_t get_all(int fd, uint8_t *buf, size_t cap)
{
	size_t got = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 5000) != 1)
			fail_msg("no EOF within 5 s after %zu bytes", got);
		n = recv(fd, buf + got, cap - got, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		assert_true(n >= 0);
		if (n == 0)
			return got;
		got += (size_t)n;
		assert_true(got < cap);
	}
}

/* Exactly n bytes (each wait bounded). */
static void get_n(int fd, uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 5000) != 1)
			fail_msg("only %zu of %zu bytes within 5 s", got, n);
		r = recv(fd, buf + got, n - got, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		assert_true(r > 0);
		got += (size_t)r;
	}
}

/* ---- sock_relay ---- */

struct run {
	struct sock_relay r;
	enum sock_relay_end end;
	int err;
	int64_t cpu_ms; /* the relay thread's CPU time: a busy loop shows here */
	pthread_t th;
};

static void *run_main(void *arg)
{
	struct run *x = arg;
	struct rusage ru;

	x->end = sock_relay_run(&x->r, &x->err);
	if (getrusage(RUSAGE_THREAD, &ru) == 0)
		x->cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
			(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
	return NULL;
}

/* A relay of fd0 <-> fd1 with `cap`-byte buffers, not started: the caller
 * pre-fills or caps a direction, then starts run_main. */
static void relay_init(struct run *x, int fd0, int fd1, size_t cap)
{
	memset(x, 0, sizeof(*x));
	x->r.fd[0] = fd0;
	x->r.fd[1] = fd1;
	x->r.stop_fd = -1;
	for (int i = 0; i < 2; i++) {
		x->r.dir[i].buf = malloc(cap);
		assert_non_null(x->r.dir[i].buf);
		x->r.dir[i].cap = cap;
	}
}

/* Relay fd0 <-> fd1 on a thread, with buffers of `cap` bytes. */
static void run_start(struct run *x, int fd0, int fd1, size_t cap, int stop_fd, int half_idle_ms)
{
	relay_init(x, fd0, fd1, cap);
	x->r.stop_fd = stop_fd;
	x->r.half_idle_ms = half_idle_ms;
	assert_int_equal(pthread_create(&x->th, NULL, run_main, x), 0);
}

/* Join within 10 s: a relay that never ends is a failure, not a hang. */
static void join_bounded(pthread_t th, const char *what)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if (pthread_timedjoin_np(th, NULL, &ts) != 0)
		fail_msg("%s did not end within 10 s", what); /* the thread is left behind */
}

static void run_join(struct run *x)
{
	join_bounded(x->th, "the relay");
	free(x->r.dir[0].buf);
	free(x->r.dir[1].buf);
}

/* Each EOF reaches the other end while the other direction goes on. */
static void test_relay_half_close(void **state)
{
	int a[2], b[2];
	uint8_t buf[64];
	struct run x;

	(void)state;
	pair(a);
	pair(b);
	run_start(&x, a[1], b[0], 3, -1, 0);
	put(a[0], "hello", 5);
	assert_int_equal(shutdown(a[0], SHUT_WR), 0);
	assert_int_equal(get_all(b[1], buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "hello", 5);
	/* The way back still works after the first EOF. */
	put(b[1], "world!", 6);
	get_n(a[0], buf, 6);
	assert_memory_equal(buf, "world!", 6);
	assert_int_equal(shutdown(b[1], SHUT_WR), 0);
	assert_int_equal(get_all(a[0], buf, sizeof(buf)), 0);
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_DONE);
	assert_int_equal(x.r.dir[0].bytes, 5);
	assert_int_equal(x.r.dir[1].bytes, 6);
	assert_true(x.r.dir[0].done && x.r.dir[1].done);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
}

/* Bytes the caller had already read come out first. */
static void test_relay_prefilled(void **state)
{
	int a[2], b[2];
	uint8_t buf[64];
	struct run x;

	(void)state;
	pair(a);
	pair(b);
	relay_init(&x, a[1], b[0], 16);
	memcpy(x.r.dir[0].buf, "xxearly", 7);
	x.r.dir[0].off = 2;
	x.r.dir[0].end = 7;
	assert_int_equal(pthread_create(&x.th, NULL, run_main, &x), 0);
	put(a[0], "-late", 5);
	shutdown(a[0], SHUT_WR);
	shutdown(b[1], SHUT_WR);
	assert_int_equal(get_all(b[1], buf, sizeof(buf)), 10);
	assert_memory_equal(buf, "early-late", 10);
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_DONE);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
}

/*
 * A capped direction (the preview proxy's client side): the pre-filled
 * bytes and `left` more reach the destination, nothing after them is
 * read, and the destination is not shut for writing, so it still answers;
 * the relay ends when the answer's direction does.
 */
static void test_relay_capped(void **state)
{
	int a[2], b[2];
	uint8_t buf[64];
	struct run x;

	(void)state;
	pair(a);
	pair(b);
	relay_init(&x, a[1], b[0], 16);
	memcpy(x.r.dir[0].buf, "HEAD", 4);
	x.r.dir[0].end = 4;
	x.r.dir[0].capped = true;
	x.r.dir[0].left = 5;
	put(a[0], "body!NEXT REQUEST", 17);
	assert_int_equal(pthread_create(&x.th, NULL, run_main, &x), 0);
	get_n(b[1], buf, 9);
	assert_memory_equal(buf, "HEADbody!", 9);
	/* No EOF toward the destination, and nothing past the cap. */
	usleep(50000);
	assert_int_equal(recv(b[1], buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	put(b[1], "answer", 6);
	shutdown(b[1], SHUT_WR);
	assert_int_equal(get_all(a[0], buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "answer", 6);
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_DONE);
	assert_int_equal(x.r.dir[0].bytes, 9);
	/* What came after the body is still unread in the client's socket. */
	assert_int_equal(recv(a[1], buf, sizeof(buf), MSG_DONTWAIT), 12);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
	/* Nothing but the pre-filled bytes (a request without a body). */
	pair(a);
	pair(b);
	relay_init(&x, a[1], b[0], 16);
	memcpy(x.r.dir[0].buf, "GET", 3);
	x.r.dir[0].end = 3;
	x.r.dir[0].capped = true;
	put(a[0], "x", 1);
	assert_int_equal(pthread_create(&x.th, NULL, run_main, &x), 0);
	get_n(b[1], buf, 3);
	assert_memory_equal(buf, "GET", 3);
	shutdown(b[1], SHUT_WR);
	assert_int_equal(get_all(a[0], buf, sizeof(buf)), 0);
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_DONE);
	assert_int_equal(recv(a[1], buf, sizeof(buf), MSG_DONTWAIT), 1);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
}

struct feeder {
	int fd;
	size_t n;
	uint32_t seed;
	pthread_t th;
};

static uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)((i * 2654435761u) >> 13 ^ seed);
}

static void *feed_main(void *arg)
{
	struct feeder *f = arg;
	uint8_t chunk[7919];
	size_t i = 0;

	while (i < f->n) {
		size_t k = f->n - i < sizeof(chunk) ? f->n - i : sizeof(chunk);
		ssize_t w;

		for (size_t j = 0; j < k; j++)
			chunk[j] = pattern(f->seed, i + j);
		w = send(f->fd, chunk, k, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		i += (size_t)w;
	}
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

/* 3 MiB each way at once through 4 KiB buffers: every byte, in order. */
static void test_relay_bulk_both_ways(void **state)
{
	enum { N = 3 << 20 };
	struct feeder fa = { .n = N, .seed = 0x5a }, fb = { .n = N - 1, .seed = 0xa5 };
	int a[2], b[2];
	uint8_t *got_a = malloc(N + 1), *got_b = malloc(N + 1);
	struct run x;
	size_t na, nb;

	(void)state;
	assert_non_null(got_a);
	assert_non_null(got_b);
	pair(a);
	pair(b);
	run_start(&x, a[1], b[0], 4096, -1, 0);
	fa.fd = a[0];
	fb.fd = b[1];
	assert_int_equal(pthread_create(&fa.th, NULL, feed_main, &fa), 0);
	assert_int_equal(pthread_create(&fb.th, NULL, feed_main, &fb), 0);
	/* The feeders write, this thread reads both ends: a reader on each
	 * side, so neither direction can stall the other. */
	na = nb = 0;
	for (bool ea = false, eb = false; !ea || !eb;) {
		struct pollfd p[2] = { { .fd = ea ? -1 : a[0], .events = POLLIN },
				       { .fd = eb ? -1 : b[1], .events = POLLIN } };
		ssize_t n;

		if (poll(p, 2, 5000) <= 0)
			fail_msg("stalled at %zu / %zu bytes", nb, na);
		if (p[0].revents) {
			n = recv(a[0], got_a + na, N + 1 - na, MSG_DONTWAIT);
			if (n == 0)
				ea = true;
			else if (n > 0)
				na += (size_t)n;
		}
		if (p[1].revents) {
			n = recv(b[1], got_b + nb, N + 1 - nb, MSG_DONTWAIT);
			if (n == 0)
				eb = true;
			else if (n > 0)
				nb += (size_t)n;
		}
	}
	pthread_join(fa.th, NULL);
	pthread_join(fb.th, NULL);
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_DONE);
	assert_int_equal(nb, N);
	assert_int_equal(na, N - 1);
	for (size_t i = 0; i < N; i++)
		if (got_b[i] != pattern(0x5a, i))
			fail_msg("a -> b byte %zu differs", i);
	for (size_t i = 0; i < N - 1; i++)
		if (got_a[i] != pattern(0xa5, i))
			fail_msg("b -> a byte %zu differs", i);
	assert_int_equal(x.r.dir[0].bytes, N);
	assert_int_equal(x.r.dir[1].bytes, N - 1);
	free(got_a);
	free(got_b);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
}

/* stop_fd ends a busy or idle relay at once; no idle limit applies while
 * both directions are open. */
static void test_relay_stop(void **state)
{
	int a[2], b[2], stop = eventfd(0, EFD_CLOEXEC);
	uint64_t one = 1;
	uint8_t buf[8];
	struct run x;
	int64_t t0;

	(void)state;
	assert_true(stop >= 0);
	pair(a);
	pair(b);
	run_start(&x, a[1], b[0], 64, stop, 50);
	put(a[0], "abc", 3);
	get_n(b[1], buf, 3);
	usleep(200 * 1000); /* longer than half_idle_ms: not a reason to end */
	put(b[1], "d", 1);
	get_n(a[0], buf, 1);
	t0 = mono_ms();
	assert_int_equal(write(stop, &one, sizeof(one)), sizeof(one));
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_STOPPED);
	assert_true(mono_ms() - t0 < 2000);
	/* It slept through the pause. */
	if (x.cpu_ms > 100)
		fail_msg("the relay used %lld ms of CPU while idle", (long long)x.cpu_ms);
	close(stop);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
}

/* One side half-closed, the other silent: the relay ends after half_idle_ms. */
static void test_relay_half_idle(void **state)
{
	int a[2], b[2];
	uint8_t buf[8];
	struct run x;
	int64_t t0 = mono_ms();

	(void)state;
	pair(a);
	pair(b);
	run_start(&x, a[1], b[0], 64, -1, 400);
	shutdown(a[0], SHUT_WR);
	assert_int_equal(get_all(b[1], buf, sizeof(buf)), 0);
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_IDLE);
	assert_true(mono_ms() - t0 >= 390);
	assert_true(mono_ms() - t0 < 3000);
	/* The ended side is readable (EOF) for good: it must not be polled. */
	if (x.cpu_ms > 100)
		fail_msg("the relay used %lld ms of CPU while waiting", (long long)x.cpu_ms);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
}

/* Both directions open and silent: the relay ends after idle_ms (kiln-egress's
 * spliced TLS flow a guest holds open and never uses). */
static void test_relay_idle(void **state)
{
	int a[2], b[2];
	uint8_t buf[8];
	struct run x;
	int64_t t0;

	(void)state;
	pair(a);
	pair(b);
	relay_init(&x, a[1], b[0], 64);
	x.r.idle_ms = 300;
	t0 = mono_ms();
	assert_int_equal(pthread_create(&x.th, NULL, run_main, &x), 0);
	put(a[0], "abc", 3);
	get_n(b[1], buf, 3);
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_IDLE);
	assert_true(mono_ms() - t0 >= 290);
	assert_true(mono_ms() - t0 < 3000);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(b[i]);
	}
}

/* A destination that vanished while bytes are due: a failure, not a hang. */
static void test_relay_peer_gone(void **state)
{
	int a[2], b[2];
	struct run x;

	(void)state;
	pair(a);
	pair(b);
	close(b[1]);
	b[1] = -1;
	run_start(&x, a[1], b[0], 64, -1, 0);
	put(a[0], "lost", 4);
	run_join(&x);
	assert_int_equal(x.end, SOCK_RELAY_FAILED);
	assert_true(x.err == EPIPE || x.err == ECONNRESET);
	close(a[0]);
	close(a[1]);
	close(b[0]);
}

/* ---- agent_tcp_serve ---- */

/* A TCP listener on the loopback of `family`; *port gets its port. -1: no such loopback here. */
static int tcp_listener(int family, uint16_t *port, bool do_listen)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr *sa = family == AF_INET6 ? (struct sockaddr *)&in6
						 : (struct sockaddr *)&in4;
	socklen_t len = family == AF_INET6 ? sizeof(in6) : sizeof(in4);
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, sa, len) < 0 || (do_listen && listen(fd, 4) < 0) ||
	    getsockname(fd, sa, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(family == AF_INET6 ? in6.sin6_port : in4.sin_port);
	return fd;
}

struct agent_side {
	int fd;
	int rc;
	pthread_t th;
};

/* What the agent's connection thread does: read the request, serve, close. */
static void *agent_main(void *arg)
{
	struct agent_side *s = arg;
	struct agent_conn *c = malloc(sizeof(*c));
	struct agent_msg m;
	struct agent_err err;

	if (!c) {
		s->rc = -ENOMEM;
		return NULL;
	}
	agent_conn_init(c, s->fd);
	agent_conn_deadline(c, mono_ms() + 5000);
	s->rc = agent_conn_next(c, AGENT_CTX_REQUEST, &m, &err);
	if (s->rc == 0) {
		agent_tcp_serve(c, &m);
		agent_msg_free(&m);
	}
	agent_conn_close(c);
	free(c);
	return NULL;
}

static void agent_start(struct agent_side *s, int host[2])
{
	pair(host);
	s->fd = host[1];
	s->rc = 1;
	assert_int_equal(pthread_create(&s->th, NULL, agent_main, s), 0);
}

/* The reply line the agent sent, read byte by byte so no stream byte is taken. */
static void get_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n < cap - 1) {
		get_n(fd, (uint8_t *)buf + n, 1);
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = '\0';
}

static void bridge_case(int family)
{
	char req[128], line[512];
	uint8_t buf[64];
	struct agent_side ag;
	int host[2], lfd, srv;
	uint16_t port = 0;

	lfd = tcp_listener(family, &port, true);
	if (lfd < 0) {
		if (family == AF_INET6)
			skip(); /* no IPv6 loopback on this machine */
		fail_msg("no TCP listener on 127.0.0.1: %s", strerror(errno));
	}
	agent_start(&ag, host);
	/* Bytes right behind the request line, in the same write: the agent
	 * has read them with the request and must deliver them first. */
	snprintf(req, sizeof(req), "{\"type\":\"tcp_connect\",\"port\":%u%s}\nearly,",
		 (unsigned)port, family == AF_INET6 ? ",\"address\":\"::1\"" : "");
	put(host[0], req, strlen(req));
	srv = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(srv >= 0);
	get_line(host[0], line, sizeof(line));
	assert_string_equal(line, "{\"type\":\"ok\"}\n");
	put(host[0], "late", 4);
	get_n(srv, buf, 10);
	assert_memory_equal(buf, "early,late", 10);
	/* The server answers and closes its side: the host reads it, then EOF. */
	put(srv, "reply", 5);
	assert_int_equal(shutdown(srv, SHUT_WR), 0);
	assert_int_equal(get_all(host[0], buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "reply", 5);
	/* The host's half still goes through, then its EOF reaches the server. */
	put(host[0], "more", 4);
	assert_int_equal(shutdown(host[0], SHUT_WR), 0);
	assert_int_equal(get_all(srv, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "more", 4);
	join_bounded(ag.th, "the agent's connection thread");
	assert_int_equal(ag.rc, 0);
	close(srv);
	close(lfd);
	close(host[0]);
}

static void test_serve_bridge_v4(void **state)
{
	(void)state;
	bridge_case(AF_INET);
}

static void test_serve_bridge_v6(void **state)
{
	(void)state;
	bridge_case(AF_INET6);
}

static void test_serve_refused(void **state)
{
	char req[128], line[1024], want[64];
	struct agent_side ag;
	int host[2], fd;
	uint16_t port = 0;
	uint8_t b;

	(void)state;
	/* A port that is bound but not listening: connect() is refused. */
	fd = tcp_listener(AF_INET, &port, false);
	assert_true(fd >= 0);
	agent_start(&ag, host);
	snprintf(req, sizeof(req), "{\"type\":\"tcp_connect\",\"port\":%u}\n", (unsigned)port);
	put(host[0], req, strlen(req));
	get_line(host[0], line, sizeof(line));
	assert_non_null(strstr(
		line,
		"{\"type\":\"error\",\"code\":\"refused\",\"message\":\"tcp_connect: nothing listens on "));
	snprintf(want, sizeof(want), "127.0.0.1:%u", (unsigned)port);
	assert_non_null(strstr(line, want));
	/* The error is the last line: the agent closed. */
	assert_int_equal(recv(host[0], &b, 1, 0), 0);
	join_bounded(ag.th, "the agent's connection thread");
	close(host[0]);
	close(fd);
}

/* A malformed request never reaches the handler (the parser's codes). */
static void test_serve_bad_request(void **state)
{
	static const char req[] =
		"{\"type\":\"tcp_connect\",\"port\":80,\"address\":\"10.0.2.2\"}\n";
	struct agent_side ag;
	int host[2];

	(void)state;
	agent_start(&ag, host);
	put(host[0], req, sizeof(req) - 1);
	join_bounded(ag.th, "the agent's connection thread");
	assert_int_equal(ag.rc, -1);
	close(host[0]);
}

/* ---- host library -> agent -> TCP server ---- */

/*
 * kiln-vmm's side of the hybrid vsock socket, then the agent's connection
 * thread: one connection, "CONNECT 1024\n" answered "OK 7\n", then the
 * real request parser and tcp_connect handler on the same socket.
 */
struct vmm_agent {
	struct fake_vmm v;
	int rc;
	pthread_t th;
};

static void *vmm_agent_main(void *arg)
{
	struct vmm_agent *v = arg;
	struct agent_side ag = { .rc = 1 };
	int fd = fake_vmm_accept(&v->v);

	v->rc = -1;
	if (fd < 0)
		return NULL;
	ag.fd = fd;
	agent_main(&ag);
	v->rc = ag.rc;
	return NULL;
}

static void vmm_agent_start(struct vmm_agent *v)
{
	memset(v, 0, sizeof(*v));
	fake_vmm_listen(&v->v);
	assert_int_equal(pthread_create(&v->th, NULL, vmm_agent_main, v), 0);
}

static void vmm_agent_stop(struct vmm_agent *v)
{
	join_bounded(v->th, "the fake kiln-vmm + agent");
	fake_vmm_close(&v->v);
}

/* A server that greets at once, then reads until EOF. */
struct greeter {
	int lfd;
	uint8_t got[64];
	ssize_t n;
	pthread_t th;
};

static void *greeter_main(void *arg)
{
	struct greeter *g = arg;
	int fd = accept4(g->lfd, NULL, NULL, SOCK_CLOEXEC);
	ssize_t r;

	g->n = -1;
	if (fd < 0)
		return NULL;
	if (send(fd, "220 hi\r\n", 8, MSG_NOSIGNAL) == 8) {
		g->n = 0;
		while ((r = recv(fd, g->got + g->n, sizeof(g->got) - (size_t)g->n, 0)) > 0)
			g->n += r;
	}
	close(fd);
	return NULL;
}

/* The whole host side: agent_client_tcp_connect through a kiln-vmm-like
 * socket to the real agent handler and a TCP server that speaks first,
 * whose greeting may ride right behind the agent's ok line. */
static void test_client_through_agent(void **state)
{
	struct agent_client_err e;
	struct agent_client c;
	struct vmm_agent v;
	struct greeter g = { 0 };
	uint8_t buf[64];
	uint16_t port = 0;
	int fd = -1;

	(void)state;
	g.lfd = tcp_listener(AF_INET, &port, true);
	assert_true(g.lfd >= 0);
	assert_int_equal(pthread_create(&g.th, NULL, greeter_main, &g), 0);
	vmm_agent_start(&v);
	assert_int_equal(agent_client_init(&c, v.v.path), 0);
	c.timeout_ms = 5000;
	if (agent_client_tcp_connect(&c, port, NULL, &fd, &e) != 0)
		fail_msg("tcp_connect: %s", e.msg);
	get_n(fd, buf, 8);
	assert_memory_equal(buf, "220 hi\r\n", 8);
	put(fd, "QUIT\r\n", 6);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	/* The server read our EOF and closed: its EOF comes back. */
	assert_int_equal(get_all(fd, buf, sizeof(buf)), 0);
	join_bounded(g.th, "the TCP server");
	assert_int_equal(g.n, 6);
	assert_memory_equal(g.got, "QUIT\r\n", 6);
	close(fd);
	vmm_agent_stop(&v);
	assert_int_equal(v.rc, 0);

	/* Nothing listens any more: the agent's `refused` reaches the caller. */
	close(g.lfd);
	vmm_agent_start(&v);
	assert_int_equal(agent_client_init(&c, v.v.path), 0);
	assert_int_equal(agent_client_tcp_connect(&c, port, NULL, &fd, &e), -EREMOTEIO);
	assert_int_equal(e.fail, AGENT_FAIL_AGENT);
	assert_int_equal(e.code, AGENT_E_REFUSED);
	assert_string_equal(agent_client_err_name(&e), "refused");
	assert_int_equal(fd, -1);
	vmm_agent_stop(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relay_half_close),
		cmocka_unit_test(test_relay_prefilled),
		cmocka_unit_test(test_relay_capped),
		cmocka_unit_test(test_relay_bulk_both_ways),
		cmocka_unit_test(test_relay_stop),
		cmocka_unit_test(test_relay_half_idle),
		cmocka_unit_test(test_relay_idle),
		cmocka_unit_test(test_relay_peer_gone),
		cmocka_unit_test(test_serve_bridge_v4),
		cmocka_unit_test(test_serve_bridge_v6),
		cmocka_unit_test(test_serve_refused),
		cmocka_unit_test(test_serve_bad_request),
		cmocka_unit_test(test_client_through_agent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
