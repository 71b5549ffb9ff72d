/*
 * agent_conn over a socketpair: messages must come out the same however the
 * peer splits its bytes; a lying len, an endless header line, a silent or
 * trickling peer and an early close must each end in their exact code, and
 * within the deadline; unread payload must be skipped; sends must survive a
 * peer that went away (no SIGPIPE).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "guest-init/agent/agent_conn.h"
#include "lib/base/mono.h"

struct pair {
	struct agent_conn *c; /* the agent's end, heap: the struct holds 64 KiB */
	int peer;             /* the host's end */
};

static void pair_open(struct pair *p)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	p->c = malloc(sizeof(*p->c));
	assert_non_null(p->c);
	agent_conn_init(p->c, sv[0]);
	p->peer = sv[1];
}

static void pair_close(struct pair *p)
{
	agent_conn_close(p->c);
	free(p->c);
	if (p->peer >= 0)
		close(p->peer);
}

static void put(int fd, const void *buf, size_t n)
{
	const uint8_t *b = buf;

	while (n) {
		ssize_t r = write(fd, b, n);

		assert_true(r > 0);
		b += r;
		n -= (size_t)r;
	}
}

static void puts_(int fd, const char *s)
{
	put(fd, s, strlen(s));
}

/* A peer in a thread: writes `buf` in `step`-byte pieces with a pause
 * between them, then shuts its sending side down if asked. */
struct writer {
	pthread_t th;
	int fd;
	const uint8_t *buf;
	size_t n, step;
	useconds_t pause_us;
	bool shut;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	for (size_t off = 0; off < w->n;) {
		size_t k = w->n - off < w->step ? w->n - off : w->step;
		ssize_t r = send(w->fd, w->buf + off, k, MSG_NOSIGNAL);

		if (r <= 0)
			return NULL; /* the agent side closed: stop */
		off += (size_t)r;
		if (w->pause_us)
			usleep(w->pause_us);
	}
	if (w->shut)
		shutdown(w->fd, SHUT_WR);
	return NULL;
}

static void writer_start(struct writer *w, int fd, const void *buf, size_t n, size_t step,
			 useconds_t pause_us, bool shut)
{
	w->fd = fd;
	w->buf = buf;
	w->n = n;
	w->step = step;
	w->pause_us = pause_us;
	w->shut = shut;
	assert_int_equal(pthread_create(&w->th, NULL, writer_main, w), 0);
}

static void writer_join(struct writer *w)
{
	pthread_join(w->th, NULL);
}

/* Read the whole current payload into a fresh buffer in `chunk` steps. */
static char *payload_str(struct agent_conn *c, size_t chunk, size_t *len)
{
	size_t cap = 16, n = 0;
	char *s = malloc(cap);
	struct agent_err err;

	assert_non_null(s);
	for (;;) {
		ssize_t r;

		if (cap - n < chunk + 1) {
			cap = (n + chunk + 1) * 2;
			s = realloc(s, cap);
			assert_non_null(s);
		}
		r = agent_conn_payload(c, s + n, chunk, &err);
		assert_true(r >= 0);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	s[n] = '\0';
	*len = n;
	return s;
}

static const char stream[] = "{\"type\":\"write\",\"path\":\"/a\",\"len\":5}\nhello"
			     "{\"type\":\"data\",\"len\":3}\nabc"
			     "{\"type\":\"data\",\"len\":0}\n"
			     "{\"type\":\"end\"}\n";

/* Reads `stream` back: write + hello, data + abc, empty data, end, EOF. */
static void expect_stream(struct agent_conn *c, size_t chunk)
{
	struct agent_msg m;
	struct agent_err err;
	size_t n;
	char *s;

	assert_int_equal(agent_conn_next(c, AGENT_CTX_REQUEST, &m, &err), 0);
	assert_int_equal(m.type, AGENT_T_WRITE);
	assert_string_equal(m.u.file.path, "/a");
	assert_int_equal(m.len, 5);
	s = payload_str(c, chunk, &n);
	assert_string_equal(s, "hello");
	free(s);
	agent_msg_free(&m);

	assert_int_equal(agent_conn_next(c, AGENT_CTX_UPLOAD, &m, &err), 0);
	assert_int_equal(m.type, AGENT_T_DATA);
	s = payload_str(c, chunk, &n);
	assert_string_equal(s, "abc");
	free(s);
	agent_msg_free(&m);

	assert_int_equal(agent_conn_next(c, AGENT_CTX_UPLOAD, &m, &err), 0);
	assert_int_equal(m.type, AGENT_T_DATA);
	assert_int_equal(m.len, 0);
	s = payload_str(c, chunk, &n);
	assert_int_equal(n, 0);
	free(s);
	agent_msg_free(&m);

	assert_int_equal(agent_conn_next(c, AGENT_CTX_UPLOAD, &m, &err), 0);
	assert_int_equal(m.type, AGENT_T_END);
	agent_msg_free(&m);

	/* The peer shut down between messages: a clean end. */
	assert_int_equal(agent_conn_next(c, AGENT_CTX_UPLOAD, &m, &err), 1);
}

static void test_whole_stream(void **state)
{
	struct pair p;

	(void)state;
	pair_open(&p);
	puts_(p.peer, stream);
	shutdown(p.peer, SHUT_WR);
	expect_stream(p.c, 4096);
	pair_close(&p);
}

/* The same messages one byte per send, and in 7-byte pieces read 2 bytes
 * at a time: the split must not matter. */
static void test_split_stream(void **state)
{
	static const size_t steps[] = { 1, 7, 13 };
	static const size_t chunks[] = { 1, 2, 64 };

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		struct pair p;
		struct writer w;

		pair_open(&p);
		agent_conn_deadline(p.c, mono_ms() + 10000);
		writer_start(&w, p.peer, stream, strlen(stream), steps[i], 200, true);
		expect_stream(p.c, chunks[i]);
		writer_join(&w);
		pair_close(&p);
	}
}

/* len says 100, the peer sends 20 and closes: `truncated`, after the 20
 * bytes were handed out. */
static void test_lying_len(void **state)
{
	struct pair p;
	struct agent_msg m;
	struct agent_err err;
	char buf[200];
	ssize_t r;
	size_t got = 0;

	(void)state;
	pair_open(&p);
	puts_(p.peer, "{\"type\":\"write\",\"path\":\"/x\",\"len\":100}\nonly 20 bytes here..");
	shutdown(p.peer, SHUT_WR);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 0);
	while ((r = agent_conn_payload(p.c, buf + got, sizeof(buf) - got, &err)) > 0)
		got += (size_t)r;
	assert_int_equal(r, -1);
	assert_int_equal(got, 20);
	assert_int_equal(err.code, AGENT_E_TRUNCATED);
	assert_string_equal(
		err.msg,
		"connection closed after 20 of 100 payload bytes; send exactly 'len' bytes after the header");
	agent_msg_free(&m);

	/* payload_all sees the same. */
	pair_close(&p);
	pair_open(&p);
	puts_(p.peer, "{\"type\":\"write\",\"path\":\"/x\",\"len\":100}\nonly 20 bytes here..");
	shutdown(p.peer, SHUT_WR);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 0);
	assert_int_equal(agent_conn_payload_all(p.c, buf, sizeof(buf), &err), -1);
	assert_int_equal(err.code, AGENT_E_TRUNCATED);
	agent_msg_free(&m);

	/* And a next() that has to skip the missing payload. */
	pair_close(&p);
	pair_open(&p);
	puts_(p.peer, "{\"type\":\"write\",\"path\":\"/x\",\"len\":100}\nonly 20 bytes here..");
	shutdown(p.peer, SHUT_WR);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 0);
	agent_msg_free(&m);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_UPLOAD, &m, &err), -1);
	assert_int_equal(err.code, AGENT_E_TRUNCATED);
	pair_close(&p);
}

/* 70 000 bytes and no newline: header_too_long at once, not at the
 * deadline and not after waiting for a '\n' that never comes. */
static void test_oversize_header(void **state)
{
	struct pair p;
	struct agent_msg m;
	struct agent_err err;
	struct writer w;
	char *big = malloc(70000);
	int64_t t0;

	(void)state;
	assert_non_null(big);
	memset(big, ' ', 70000);
	big[0] = '{';
	pair_open(&p);
	agent_conn_deadline(p.c, mono_ms() + 20000);
	writer_start(&w, p.peer, big, 70000, 70000, 0, false);
	t0 = mono_ms();
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), -1);
	assert_int_equal(err.code, AGENT_E_HEADER_TOO_LONG);
	assert_true(mono_ms() - t0 < 5000);
	/* Unblock the writer if it still has bytes in flight. */
	agent_conn_close(p.c);
	writer_join(&w);
	free(p.c);
	close(p.peer);
	free(big);
}

/* A silent peer: timeout when the deadline passes, not before. */
static void test_deadline(void **state)
{
	struct pair p;
	struct agent_msg m;
	struct agent_err err;
	char buf[8];
	int64_t t0;

	(void)state;
	pair_open(&p);
	t0 = mono_ms();
	agent_conn_deadline(p.c, t0 + 100);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), -1);
	assert_int_equal(err.code, AGENT_E_TIMEOUT);
	assert_true(mono_ms() - t0 >= 100);
	assert_true(mono_ms() - t0 < 2000);

	pair_close(&p);

	/* In a payload too. */
	pair_open(&p);
	puts_(p.peer, "{\"type\":\"write\",\"path\":\"/x\",\"len\":10}\nabc");
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 0);
	assert_int_equal(agent_conn_payload(p.c, buf, sizeof(buf), &err), 3);
	t0 = mono_ms();
	agent_conn_deadline(p.c, t0 + 100);
	assert_int_equal(agent_conn_payload(p.c, buf, sizeof(buf), &err), -1);
	assert_int_equal(err.code, AGENT_E_TIMEOUT);
	assert_true(mono_ms() - t0 < 2000);
	agent_msg_free(&m);

	/* A deadline already in the past fails without waiting. */
	agent_conn_deadline(p.c, mono_ms() - 1);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_UPLOAD, &m, &err), -1);
	assert_int_equal(err.code, AGENT_E_TIMEOUT);
	pair_close(&p);
}

/* One byte every 20 ms of a header that never ends: the absolute deadline
 * still ends it. */
static void test_trickle_cannot_extend_deadline(void **state)
{
	struct pair p;
	struct agent_msg m;
	struct agent_err err;
	struct writer w;
	char slow[400];
	int64_t t0;

	(void)state;
	memset(slow, ' ', sizeof(slow));
	slow[0] = '{';
	pair_open(&p);
	writer_start(&w, p.peer, slow, sizeof(slow), 1, 20000, false);
	t0 = mono_ms();
	agent_conn_deadline(p.c, t0 + 200);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), -1);
	assert_int_equal(err.code, AGENT_E_TIMEOUT);
	assert_true(mono_ms() - t0 >= 200);
	assert_true(mono_ms() - t0 < 2000);
	agent_conn_close(p.c);
	writer_join(&w);
	free(p.c);
	close(p.peer);
}

static void test_eof(void **state)
{
	struct pair p;
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	/* Nothing at all: a clean end. */
	pair_open(&p);
	shutdown(p.peer, SHUT_WR);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 1);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 1);
	pair_close(&p);

	/* Inside a header line: truncated. */
	pair_open(&p);
	puts_(p.peer, "{\"type\":\"pi");
	shutdown(p.peer, SHUT_WR);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), -1);
	assert_int_equal(err.code, AGENT_E_TRUNCATED);
	pair_close(&p);

	/* The peer closed completely (not only its sending side). */
	pair_open(&p);
	puts_(p.peer, "{\"type\":\"ping\"}\n");
	close(p.peer);
	p.peer = -1;
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 0);
	assert_int_equal(m.type, AGENT_T_PING);
	agent_msg_free(&m);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 1);
	pair_close(&p);
}

/* Payload the caller did not read (all of it, or the rest after a partial
 * read) is skipped by the next next(), including payloads far larger than
 * the read buffer. */
static void test_skip_payload(void **state)
{
	const size_t big = 3 * AGENT_CONN_RBUF + 123;
	uint8_t *s = malloc(2 * big + 256);
	size_t n = 0;
	struct pair p;
	struct writer w;
	struct agent_msg m;
	struct agent_err err;
	char small[10];

	(void)state;
	assert_non_null(s);
	/* The first payload looks like headers: it must never be parsed. */
	n += (size_t)sprintf((char *)s + n, "{\"type\":\"data\",\"len\":%zu}\n", big);
	memset(s + n, '{', big);
	n += big;
	n += (size_t)sprintf((char *)s + n, "{\"type\":\"data\",\"len\":%zu}\n", big);
	memset(s + n, 'x', big);
	n += big;
	n += (size_t)sprintf((char *)s + n, "{\"type\":\"end\"}\n");

	pair_open(&p);
	agent_conn_deadline(p.c, mono_ms() + 10000);
	writer_start(&w, p.peer, s, n, 5000, 0, true);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_UPLOAD, &m, &err), 0);
	assert_int_equal(m.len, big);
	agent_msg_free(&m);
	/* ... skipped whole */
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_UPLOAD, &m, &err), 0);
	assert_int_equal(m.type, AGENT_T_DATA);
	assert_int_equal(m.len, big);
	assert_int_equal(agent_conn_payload(p.c, small, sizeof(small), &err), 10);
	assert_memory_equal(small, "xxxxxxxxxx", 10);
	agent_msg_free(&m);
	/* ... skipped after a partial read */
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_UPLOAD, &m, &err), 0);
	assert_int_equal(m.type, AGENT_T_END);
	agent_msg_free(&m);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_UPLOAD, &m, &err), 1);
	writer_join(&w);
	pair_close(&p);
	free(s);
}

static void test_payload_all(void **state)
{
	struct pair p;
	struct agent_msg m;
	struct agent_err err;
	char buf[64];

	(void)state;
	pair_open(&p);
	puts_(p.peer, "{\"type\":\"write\",\"path\":\"/x\",\"len\":12}\nhello world!");
	puts_(p.peer, "{\"type\":\"data\",\"len\":100}\n");
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 0);
	assert_int_equal(agent_conn_payload_all(p.c, buf, sizeof(buf), &err), 12);
	assert_memory_equal(buf, "hello world!", 12);
	assert_int_equal(agent_conn_payload(p.c, buf, sizeof(buf), &err), 0);
	agent_msg_free(&m);
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_UPLOAD, &m, &err), 0);
	assert_int_equal(agent_conn_payload_all(p.c, buf, sizeof(buf), &err), -1);
	assert_int_equal(err.code, AGENT_E_TOO_LARGE);
	agent_msg_free(&m);
	pair_close(&p);
}

/* Framing and validation errors come back as the framer/parser's codes. */
static void test_errors_pass_through(void **state)
{
	static const struct {
		const char *in;
		enum agent_ctx ctx;
		enum agent_code code;
	} cases[] = {
		{ "{\"type\":\"ping\"}\n", AGENT_CTX_UPLOAD, AGENT_E_UNEXPECTED_TYPE },
		{ "{\"type\":\"data\",\"len\":1}\nx", AGENT_CTX_REQUEST, AGENT_E_UNEXPECTED_TYPE },
		{ "[1,2]\n", AGENT_CTX_REQUEST, AGENT_E_BAD_JSON },
		{ "{\"type\":\"ping\",\"x\":1}\n", AGENT_CTX_REQUEST, AGENT_E_UNKNOWN_FIELD },
		{ "{\"type\":\"data\",\"len\":2000000}\n", AGENT_CTX_UPLOAD, AGENT_E_TOO_LARGE },
		{ "{\"type\":\"nope\"}\n", AGENT_CTX_REQUEST, AGENT_E_UNKNOWN_TYPE },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pair p;
		struct agent_msg m;
		struct agent_err err;

		pair_open(&p);
		puts_(p.peer, cases[i].in);
		agent_conn_deadline(p.c, mono_ms() + 5000);
		assert_int_equal(agent_conn_next(p.c, cases[i].ctx, &m, &err), -1);
		assert_int_equal(err.code, cases[i].code);
		pair_close(&p);
	}
}

static size_t drain(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n < cap && (r = read(fd, buf + n, cap - n)) > 0)
		n += (size_t)r;
	return n;
}

static void test_send(void **state)
{
	struct pair p;
	struct agent_line l;
	struct agent_err e;
	char buf[512];
	size_t n;

	(void)state;
	pair_open(&p);
	assert_int_equal(agent_line_chunk(&l, AGENT_DATA, -1, 5), 0);
	assert_int_equal(agent_conn_send(p.c, &l, "hello", 5), 0);
	agent_line_free(&l);
	assert_int_equal(agent_conn_send_line(p.c, &l, agent_line_ok(&l, NULL, 0)), 0);
	assert_null(l.data);
	agent_err_set(&e, AGENT_E_NOT_FOUND, "read '/x': no such file");
	assert_int_equal(agent_conn_send_err(p.c, &e), 0);
	/* A failed build is returned and nothing is sent. */
	l.data = malloc(4);
	l.len = 4;
	assert_int_equal(agent_conn_send_line(p.c, &l, -E2BIG), -E2BIG);
	assert_null(l.data);
	agent_conn_close(p.c);
	n = drain(p.peer, buf, sizeof(buf) - 1);
	buf[n] = '\0';
	assert_string_equal(
		buf,
		"{\"type\":\"data\",\"len\":5}\nhello"
		"{\"type\":\"ok\"}\n"
		"{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"read '/x': no such file\"}\n");
	free(p.c);
	close(p.peer);
}

/* A large send goes out whole even though the socket takes it in pieces. */
static void *reader_main(void *arg)
{
	int fd = *(int *)arg;
	size_t total = 0;
	char buf[4096];
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0)
		total += (size_t)r;
	return (void *)total;
}

static void test_send_large(void **state)
{
	const size_t n = 4u << 20;
	uint8_t *payload = calloc(1, n);
	struct pair p;
	struct agent_line l;
	pthread_t th;
	void *got;

	(void)state;
	assert_non_null(payload);
	pair_open(&p);
	assert_int_equal(pthread_create(&th, NULL, reader_main, &p.peer), 0);
	assert_int_equal(agent_line_chunk(&l, AGENT_DATA, -1, 1000), 0);
	assert_int_equal(agent_conn_send(p.c, &l, payload, n), 0);
	agent_conn_close(p.c);
	pthread_join(th, &got);
	assert_int_equal((size_t)got, l.len + n);
	agent_line_free(&l);
	free(p.c);
	close(p.peer);
	free(payload);
}

static void test_send_peer_gone(void **state)
{
	struct pair p;
	struct agent_line l;

	(void)state;
	pair_open(&p);
	close(p.peer);
	p.peer = -1;
	/* MSG_NOSIGNAL: an error, not a SIGPIPE that kills the process. */
	assert_int_equal(agent_conn_send_line(p.c, &l, agent_line_pong(&l)), -EPIPE);
	pair_close(&p);
}

static void test_peer_gone(void **state)
{
	struct pair p;
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	pair_open(&p);
	assert_false(agent_conn_peer_gone(p.c));
	/* Bytes waiting: the peer is there, and the bytes stay readable. */
	puts_(p.peer, "{\"type\":\"ping\"}\n");
	assert_false(agent_conn_peer_gone(p.c));
	assert_int_equal(agent_conn_next(p.c, AGENT_CTX_REQUEST, &m, &err), 0);
	assert_int_equal(m.type, AGENT_T_PING);
	agent_msg_free(&m);
	assert_false(agent_conn_peer_gone(p.c));
	shutdown(p.peer, SHUT_WR);
	assert_true(agent_conn_peer_gone(p.c));
	pair_close(&p);

	pair_open(&p);
	close(p.peer);
	p.peer = -1;
	assert_true(agent_conn_peer_gone(p.c));
	pair_close(&p);
}

/* shutdown's linger: the peer gets the reply and EOF; the agent goes on
 * at once when the peer closes, or after the timeout when it does not. */
static void test_linger(void **state)
{
	struct pair p;
	char buf[64];
	int64_t t0;

	(void)state;
	pair_open(&p);
	puts_(p.c->fd, "{\"type\":\"ok\"}\n");
	t0 = mono_ms();
	agent_conn_linger(p.c, 300); /* the peer has not closed: the timeout */
	assert_true(mono_ms() - t0 >= 290);
	assert_int_equal(read(p.peer, buf, sizeof(buf)), 14); /* the reply ... */
	assert_int_equal(read(p.peer, buf, sizeof(buf)), 0);  /* ... then EOF */
	pair_close(&p);

	pair_open(&p);
	puts_(p.peer, "late bytes are discarded");
	close(p.peer);
	p.peer = -1;
	t0 = mono_ms();
	agent_conn_linger(p.c, 5000); /* closed: no wait */
	assert_true(mono_ms() - t0 < 1000);
	pair_close(&p);
}

/* Only the host may talk to the agent: a guest process reaching port 1024
 * over vsock loopback (CID 1, or the guest's own CID) must not be served. */
static void test_peer_is_host(void **state)
{
	struct sockaddr_vm vm = { .svm_family = AF_VSOCK, .svm_port = 1234 };
	struct sockaddr_un un = { .sun_family = AF_UNIX };

	(void)state;
	vm.svm_cid = VMADDR_CID_HOST;
	assert_true(agent_peer_is_host((struct sockaddr *)&vm, sizeof(vm)));
	vm.svm_cid = VMADDR_CID_LOCAL;
	assert_false(agent_peer_is_host((struct sockaddr *)&vm, sizeof(vm)));
	vm.svm_cid = 3; /* the guest's own CID */
	assert_false(agent_peer_is_host((struct sockaddr *)&vm, sizeof(vm)));
	vm.svm_cid = VMADDR_CID_ANY;
	assert_false(agent_peer_is_host((struct sockaddr *)&vm, sizeof(vm)));
	vm.svm_cid = VMADDR_CID_HOST;
	assert_false(agent_peer_is_host((struct sockaddr *)&vm, sizeof(vm) - 1));
	assert_false(agent_peer_is_host((struct sockaddr *)&vm, 0));
	assert_false(agent_peer_is_host((struct sockaddr *)&un, sizeof(un)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_stream),
		cmocka_unit_test(test_split_stream),
		cmocka_unit_test(test_lying_len),
		cmocka_unit_test(test_oversize_header),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_trickle_cannot_extend_deadline),
		cmocka_unit_test(test_eof),
		cmocka_unit_test(test_skip_payload),
		cmocka_unit_test(test_payload_all),
		cmocka_unit_test(test_errors_pass_through),
		cmocka_unit_test(test_send),
		cmocka_unit_test(test_send_large),
		cmocka_unit_test(test_send_peer_gone),
		cmocka_unit_test(test_peer_gone),
		cmocka_unit_test(test_peer_is_host),
		cmocka_unit_test(test_linger),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
