/*
 * agent_client against a scripted fake agent: a thread behind a real Unix
 * socket that plays kiln-vmm's CONNECT handshake and then the agent's side
 * of docs/agent-protocol.md, byte for byte as each test scripts it. The
 * fake records what the client sent, so the tests check both directions.
 * The agent is hostile here: lying lengths, garbage, oversize headers,
 * wrong field types, early closes, silence. The client must answer each
 * with the right typed error, within its deadline, without crashing or
 * allocating without bound.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"
#include "lib/base/mono.h"
#include "lib/base/version.h"
#include "tests/unit/test_ca_pem.h"

/* ---- the fake agent ---- */

#define FAKE_CONNS 64
#define FAKE_ACCEPT_WAIT_MS 5000

struct fake_step {
	const char *hello;   /* answer to CONNECT; NULL: close without reading it */
	const char *reply;   /* after the request (and upload); NULL: none */
	size_t reply_len;    /* 0: strlen(reply) */
	void (*gen)(int fd); /* writes the reply instead of `reply` */
	bool no_request;     /* reply right after the handshake */
	bool read_upload;    /* read data messages up to `end` before replying */
	bool trickle;        /* write the reply one byte at a time */
	bool hold;           /* afterwards read (and record) until the client closes */
	int expect_msgs;     /* then read this many more messages ... */
	const char *reply2;  /* ... and send this */
	int hello_delay_ms;  /* wait this long before answering CONNECT (a slow guest) */
};

struct fake_log {
	char *hdrs; /* each header the client sent, compact JSON, '\n' after each */
	size_t hdrs_len;
	char *data; /* every payload byte the client sent, concatenated */
	size_t data_len;
	size_t msgs;
};

struct fake {
	char dir[64];
	char path[108];
	int lfd;
	int listen_delay_ms;
	pthread_t th;
	const struct fake_step *steps;
	size_t nsteps;
	size_t served;
	volatile int stop;
	char bad[256]; /* what went wrong inside the thread (no asserts there) */
	struct fake_log log[FAKE_CONNS];
};

static void fk_write(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the client went away: fine for a fake */
		b += w;
		n -= (size_t)w;
	}
}

static void log_add(char **buf, size_t *len, const void *p, size_t n)
{
	char *nb = realloc(*buf, *len + n + 1);

	if (!nb)
		abort();
	memcpy(nb + *len, p, n);
	*len += n;
	nb[*len] = '\0';
	*buf = nb;
}

struct freader {
	int fd;
	struct agent_frame fr;
	uint8_t buf[65536];
	size_t off, len;
	bool eof;
};

/* Next whole message into the log; *type gets a copy of its type. 0, 1 at EOF, -1 on error. */
static int fr_next(struct freader *r, struct fake_log *lg, char *type, size_t tcap)
{
	struct agent_event ev;
	bool have_hdr = false;

	for (;;) {
		size_t used;

		if (r->len == 0) {
			ssize_t n;

			if (r->eof)
				return have_hdr ? -1 : 1;
			n = read(r->fd, r->buf, sizeof(r->buf));
			if (n <= 0) {
				r->eof = true;
				continue;
			}
			r->off = 0;
			r->len = (size_t)n;
		}
		used = agent_frame_feed(&r->fr, r->buf + r->off, r->len, &ev);
		r->off += used;
		r->len -= used;
		if (ev.kind == AGENT_EV_ERROR)
			return -1;
		if (ev.kind == AGENT_EV_HEADER) {
			char *s = json_dumps(ev.header, JSON_COMPACT);
			json_t *t = json_object_get(ev.header, "type");

			snprintf(type, tcap, "%s", json_is_string(t) ? json_string_value(t) : "?");
			log_add(&lg->hdrs, &lg->hdrs_len, s, strlen(s));
			log_add(&lg->hdrs, &lg->hdrs_len, "\n", 1);
			lg->msgs++;
			free(s);
			json_decref(ev.header);
			if (ev.len == 0)
				return 0;
			have_hdr = true;
		}
		if (ev.kind == AGENT_EV_PAYLOAD) {
			log_add(&lg->data, &lg->data_len, ev.data, ev.data_len);
			if (ev.last)
				return 0;
		}
	}
}

static void fk_send_reply(int fd, const char *reply, size_t n, bool trickle)
{
	if (!reply)
		return;
	if (!n)
		n = strlen(reply);
	if (!trickle) {
		fk_write(fd, reply, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		fk_write(fd, reply + i, 1);
}

static void serve(struct fake *f, const struct fake_step *st, int fd, struct fake_log *lg)
{
	struct freader *r;
	char line[64], type[32];
	size_t n = 0;

	if (!st->hello)
		return;
	while (n < sizeof(line) - 1) {
		if (read(fd, line + n, 1) != 1)
			return;
		if (line[n++] == '\n')
			break;
	}
	line[n] = '\0';
	if (strcmp(line, "CONNECT 1024\n") != 0)
		snprintf(f->bad, sizeof(f->bad), "handshake line was '%s'", line);
	if (st->hello_delay_ms)
		usleep((useconds_t)st->hello_delay_ms * 1000);
	fk_write(fd, st->hello, strlen(st->hello));
	r = calloc(1, sizeof(*r));
	if (!r)
		abort();
	r->fd = fd;
	agent_frame_init(&r->fr);
	if (!st->no_request && fr_next(r, lg, type, sizeof(type)) == 0 && st->read_upload) {
		while (fr_next(r, lg, type, sizeof(type)) == 0 && strcmp(type, "end") != 0)
			;
	}
	if (st->gen)
		st->gen(fd);
	else
		fk_send_reply(fd, st->reply, st->reply_len, st->trickle);
	if (st->expect_msgs) {
		for (int i = 0; i < st->expect_msgs; i++)
			if (fr_next(r, lg, type, sizeof(type)) != 0)
				break;
		fk_send_reply(fd, st->reply2, 0, false);
	}
	if (st->hold)
		while (fr_next(r, lg, type, sizeof(type)) == 0)
			;
	agent_frame_free(&r->fr);
	free(r);
}

static int fk_listen(struct fake *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		snprintf(f->bad, sizeof(f->bad), "listen: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;

	if (f->listen_delay_ms) {
		usleep((useconds_t)f->listen_delay_ms * 1000);
		f->lfd = fk_listen(f);
		if (f->lfd < 0)
			return NULL;
	}
	while (f->served < f->nsteps && !f->stop) {
		struct pollfd p = { .fd = f->lfd, .events = POLLIN };
		int waited = 0, fd;

		while (!f->stop && waited < FAKE_ACCEPT_WAIT_MS && poll(&p, 1, 20) == 0)
			waited += 20;
		if (f->stop || waited >= FAKE_ACCEPT_WAIT_MS)
			break;
		fd = accept(f->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		serve(f, &f->steps[f->served], fd,
		      &f->log[f->served < FAKE_CONNS ? f->served : FAKE_CONNS - 1]);
		f->served++;
		close(fd);
	}
	return NULL;
}

static void fake_start_late(struct fake *f, const struct fake_step *steps, size_t n, int delay_ms)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/kiln-agent-client-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/v.sock", f->dir);
	f->steps = steps;
	f->nsteps = n;
	f->lfd = -1;
	f->listen_delay_ms = delay_ms;
	if (!delay_ms) {
		f->lfd = fk_listen(f);
		assert_true(f->lfd >= 0);
	}
	assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_start(struct fake *f, const struct fake_step *steps, size_t n)
{
	fake_start_late(f, steps, n, 0);
}

/* Join the thread; the logs stay readable until fake_free. */
static void fake_stop(struct fake *f)
{
	f->stop = 1;
	pthread_join(f->th, NULL);
	if (f->lfd >= 0)
		close(f->lfd);
	f->lfd = -1;
	unlink(f->path);
	rmdir(f->dir);
	if (f->bad[0])
		fail_msg("fake agent: %s", f->bad);
}

static void fake_free(struct fake *f)
{
	for (size_t i = 0; i < FAKE_CONNS; i++) {
		free(f->log[i].hdrs);
		free(f->log[i].data);
	}
}

static struct agent_client client_for(const struct fake *f, int timeout_ms)
{
	struct agent_client c;

	assert_int_equal(agent_client_init(&c, f->path), 0);
	c.timeout_ms = timeout_ms;
	return c;
}

static void assert_err(const struct agent_client_err *e, enum agent_fail fail, enum agent_code code)
{
	if (e->fail != fail || e->code != code)
		fail_msg("error fail=%d code=%s (%s), wanted fail=%d code=%s", e->fail,
			 agent_code_name(e->code), e->msg, fail, agent_code_name(code));
}

#define OK_HELLO "OK 1073741824\n"
#define EXIT_3 \
	"{\"type\":\"exit\",\"pid\":57,\"exit_code\":3,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":10,\"stderr_bytes\":5,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":1830,\"user_us\":412,\"sys_us\":907}\n"

/* ---- handshake ---- */

static void test_init_path_too_long(void **state)
{
	struct agent_client c;
	char path[200];

	(void)state;
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(agent_client_init(&c, path), -ENAMETOOLONG);
	assert_int_equal(agent_client_init(&c, ""), -ENAMETOOLONG);
}

static void test_no_socket(void **state)
{
	struct agent_client c;
	struct agent_client_err e;

	(void)state;
	assert_int_equal(agent_client_init(&c, "/tmp/kiln-no-such-dir/v.sock"), 0);
	assert_int_equal(agent_client_ping(&c, NULL, &e), -ENOENT);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	assert_string_equal(agent_client_err_name(&e), "unreachable");
	assert_non_null(strstr(e.msg, "/tmp/kiln-no-such-dir/v.sock"));
}

static void test_handshake_closed(void **state)
{
	static const struct fake_step steps[] = { { .hello = NULL },
						  { .hello = "", .no_request = true } };
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int r;

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	/* Closed before CONNECT was even read: the send or the read notices. */
	r = agent_client_ping(&c, NULL, &e);
	assert_true(r == -ECONNRESET || r == -EPIPE);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	/* CONNECT read, then closed without OK: the agent is not listening. */
	r = agent_client_ping(&c, NULL, &e);
	assert_int_equal(r, -ECONNRESET);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	assert_non_null(strstr(e.msg, "without OK"));
	fake_stop(&f);
	fake_free(&f);
}

static void test_handshake_garbage(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = "HELLO\x01 there\n" },
		{ .hello = "ERROR too many vsock connections\n" },
		{ .hello = "OK 12x\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int fd = -1;

	(void)state;
	fake_start(&f, steps, 3);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_connect(&c, &fd, &e), -EPROTO);
	assert_int_equal(fd, -1);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	assert_non_null(strstr(e.msg, "'HELLO? there'"));
	assert_int_equal(agent_client_connect(&c, &fd, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "refused CONNECT 1024: too many vsock connections"));
	assert_int_equal(agent_client_connect(&c, &fd, &e), -EPROTO);
	fake_stop(&f);
	fake_free(&f);
}

/* An endless handshake line: refused at the limit, not buffered forever. */
static void gen_long_hello(int fd)
{
	char buf[1024];

	memset(buf, 'O', sizeof(buf));
	fk_write(fd, buf, sizeof(buf));
}

static void test_handshake_too_long(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = "", .no_request = true, .gen = gen_long_hello, .hold = true }
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int fd = -1;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_connect(&c, &fd, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "longer than"));
	fake_stop(&f);
	fake_free(&f);
}

static void test_handshake_timeout(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = "", .no_request = true, .hold = true }
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int64_t t0;
	int fd = -1;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 150);
	t0 = mono_ms();
	assert_int_equal(agent_client_connect(&c, &fd, &e), -ETIMEDOUT);
	assert_true(mono_ms() - t0 >= 140);
	assert_true(mono_ms() - t0 < 3000);
	assert_err(&e, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT);
	fake_stop(&f);
	fake_free(&f);
}

/* After OK, the fd is at the first protocol byte even when the agent's
 * bytes arrive in the same segment as OK. */
static void test_connect_leaves_protocol_bytes(void **state)
{
	static const struct fake_step steps[] = { { .hello = OK_HELLO "{\"type\":\"pong\"",
						    .no_request = true } };
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	char buf[64];
	ssize_t n = 0;
	int fd = -1;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_connect(&c, &fd, &e), 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	for (int i = 0; i < 200 && n <= 0; i++) {
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			usleep(5000);
	}
	assert_int_equal(n, strlen("{\"type\":\"pong\""));
	buf[n] = '\0';
	assert_string_equal(buf, "{\"type\":\"pong\"");
	close(fd);
	fake_stop(&f);
	fake_free(&f);
}

/* ---- simple requests ---- */

static void test_ping(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"pong\",\"protocol\":1}\n",
		  .trickle = true },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int proto = 0;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_ping(&c, &proto, &e), 0);
	assert_int_equal(proto, 1);
	assert_int_equal(e.fail, AGENT_FAIL_NONE);
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs, "{\"type\":\"ping\"}\n");
	fake_free(&f);
}

static void test_info(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"info\",\"protocol\":1,\"agent_version\":\"0.1.0\",\"kernel\":\"6.1.0-kiln\",\"hostname\":\"kiln\",\"cpus\":2,\"mem_total\":130023424,\"mem_available\":110100480,\"uptime_ms\":412,\"time_ns\":1732312345123456789,\"processes\":0,\"future_field\":[1]}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"info\",\"protocol\":1,\"agent_version\":\"0.1.0\",\"kernel\":\"6.1.0-kiln\",\"hostname\":\"kiln\",\"cpus\":-2,\"mem_total\":1,\"mem_available\":1,\"uptime_ms\":1,\"time_ns\":1,\"processes\":0}\n" },
	};
	struct agent_client_info info;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_info(&c, &info, &e), 0);
	assert_int_equal(info.protocol, 1);
	assert_string_equal(info.agent_version, KILN_VERSION);
	assert_string_equal(info.kernel, "6.1.0-kiln");
	assert_string_equal(info.hostname, "kiln");
	assert_int_equal(info.cpus, 2);
	assert_int_equal(info.mem_total, 130023424);
	assert_int_equal(info.mem_available, 110100480);
	assert_int_equal(info.uptime_ms, 412);
	assert_true(info.time_ns == 1732312345123456789LL);
	/* A negative count is a lie, not a huge number. */
	assert_int_equal(agent_client_info(&c, &info, &e), -EPROTO);
	assert_err(&e, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR);
	assert_non_null(strstr(e.msg, "'cpus'"));
	fake_stop(&f);
	fake_free(&f);
}

/* Every error code the agent can send comes back as the same typed code. */
static void test_error_codes(void **state)
{
	static struct fake_step steps[AGENT_CODE_COUNT];
	static char replies[AGENT_CODE_COUNT][160];
	struct agent_client_stat st;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	for (int i = AGENT_E_BAD_JSON; i < AGENT_CODE_COUNT; i++) {
		snprintf(replies[i], sizeof(replies[i]),
			 "{\"type\":\"error\",\"code\":\"%s\",\"message\":\"stat '/x': code %d\"}\n",
			 agent_code_name((enum agent_code)i), i);
		steps[i - 1] = (struct fake_step){ .hello = OK_HELLO, .reply = replies[i] };
	}
	fake_start(&f, steps, AGENT_CODE_COUNT - 1);
	c = client_for(&f, 2000);
	for (int i = AGENT_E_BAD_JSON; i < AGENT_CODE_COUNT; i++) {
		char want[64];

		assert_int_equal(agent_client_stat(&c, "/x", true, AGENT_USER_USER, &st, &e),
				 -EREMOTEIO);
		assert_err(&e, AGENT_FAIL_AGENT, (enum agent_code)i);
		assert_int_equal(e.errnum, EREMOTEIO);
		snprintf(want, sizeof(want), "stat '/x': code %d", i);
		assert_string_equal(e.msg, want);
		assert_string_equal(agent_client_err_name(&e), agent_code_name((enum agent_code)i));
		assert_null(st.path);
	}
	fake_stop(&f);
	fake_free(&f);
}

static void test_error_line_malformed(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"error\",\"code\":\"launch_failed\",\"message\":\"x\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"error\",\"code\":\"busy\"}\n" },
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"error\",\"code\":7,\"message\":\"x\"}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 3);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_ping(&c, NULL, &e), -EPROTO);
	assert_err(&e, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR);
	assert_non_null(strstr(e.msg, "unknown error code 'launch_failed'"));
	assert_int_equal(agent_client_ping(&c, NULL, &e), -EPROTO);
	assert_int_equal(agent_client_ping(&c, NULL, &e), -EPROTO);
	fake_stop(&f);
	fake_free(&f);
}

/* Replies that break the protocol in each way the framer or the field
 * checks catch. */
static void test_hostile_replies(void **state)
{
	static const struct {
		const char *reply;
		enum agent_code code;
		const char *needle;
	} cases[] = {
		{ "this is not json\n", AGENT_E_BAD_JSON, "not valid JSON" },
		{ "[1,2,3]\n", AGENT_E_BAD_JSON, "not a JSON object" },
		{ "{\"type\":\"pong\",\"protocol\":1,\"protocol\":2}\n", AGENT_E_BAD_JSON,
		  "duplicate" },
		{ "{\"type\":\"pong\",\"protocol\":1,\"len\":3}\nabc", AGENT_E_IO_ERROR,
		  "payload" },
		{ "{\"type\":\"pong\",\"protocol\":\"1\"}\n", AGENT_E_IO_ERROR, "'protocol'" },
		{ "{\"protocol\":1}\n", AGENT_E_IO_ERROR, "no string 'type'" },
		{ "{\"type\":\"ok\"}\n", AGENT_E_IO_ERROR, "replied 'ok'" },
		{ "{\"type\":\"pong\",\"len\":-1}\n", AGENT_E_BAD_FIELD, "'len'" },
		{ "{\"type\":\"pong\",\"len\":1048577}\n", AGENT_E_TOO_LARGE, "'len'" },
		{ "{\"type\":\"pong\",\"protocol\":1}", AGENT_E_TRUNCATED, "inside a header" },
	};
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	static struct fake_step steps[N];
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	for (size_t i = 0; i < N; i++)
		steps[i] = (struct fake_step){ .hello = OK_HELLO, .reply = cases[i].reply };
	fake_start(&f, steps, N);
	c = client_for(&f, 2000);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(agent_client_ping(&c, NULL, &e), -EPROTO);
		assert_err(&e, AGENT_FAIL_PROTOCOL, cases[i].code);
		if (!strstr(e.msg, cases[i].needle))
			fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].needle);
		assert_string_equal(agent_client_err_name(&e), "protocol_error");
	}
	fake_stop(&f);
	fake_free(&f);
}

/* 100 KiB without a newline: refused at 64 KiB, not waited for. */
static void gen_endless_header(int fd)
{
	static char buf[100 << 10];

	memset(buf, ' ', sizeof(buf));
	buf[0] = '{';
	fk_write(fd, buf, sizeof(buf));
}

static void test_header_too_long(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .gen = gen_endless_header, .hold = true }
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int64_t t0;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 5000);
	t0 = mono_ms();
	assert_int_equal(agent_client_ping(&c, NULL, &e), -EPROTO);
	assert_err(&e, AGENT_FAIL_PROTOCOL, AGENT_E_HEADER_TOO_LONG);
	assert_true(mono_ms() - t0 < 4000);
	fake_stop(&f);
	fake_free(&f);
}

static void test_closed_before_reply(void **state)
{
	static const struct fake_step steps[] = { { .hello = OK_HELLO } };
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_mkdir(&c, "/a", true, -1, AGENT_USER_ROOT, &e), -ECONNRESET);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	assert_non_null(strstr(e.msg, "mkdir"));
	fake_stop(&f);
	assert_string_equal(
		f.log[0].hdrs,
		"{\"type\":\"mkdir\",\"path\":\"/a\",\"parents\":true,\"user\":\"root\"}\n");
	fake_free(&f);
}

static void test_reply_timeout(void **state)
{
	static const struct fake_step steps[] = { { .hello = OK_HELLO, .hold = true } };
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int64_t t0;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 150);
	t0 = mono_ms();
	assert_int_equal(agent_client_remove(&c, "/tmp/x", false, AGENT_USER_USER, &e), -ETIMEDOUT);
	assert_err(&e, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT);
	assert_string_equal(agent_client_err_name(&e), "timeout");
	assert_true(mono_ms() - t0 >= 140);
	assert_true(mono_ms() - t0 < 3000);
	fake_stop(&f);
	fake_free(&f);
}

/* Requests the agent would refuse never leave the host. */
static void test_invalid_requests(void **state)
{
	static const struct agent_env bad_env[] = { { "A=B", "x" } };
	static const struct fake_step steps[] = { { .hello = OK_HELLO } };
	const char *no_argv[] = { NULL };
	const char *argv[] = { "true", NULL };
	const char *bad_utf8[] = { "\xff", NULL };
	struct agent_client_proc_opts o = { .argv = no_argv };
	struct agent_client_exec_result res;
	struct agent_client_configure cfg = { 0 };
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	char *big;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_string_equal(e.msg,
			    "exec: 'argv' must have at least one entry (argv[0] is the program)");
	agent_client_exec_result_free(&res);

	o.argv = argv;
	o.env = bad_env;
	o.envc = 1;
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	agent_client_exec_result_free(&res);

	o.env = NULL;
	o.envc = 0;
	o.argv = bad_utf8;
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "UTF-8"));
	agent_client_exec_result_free(&res);

	big = malloc(AGENT_LEN_MAX + 1);
	assert_non_null(big);
	o.argv = argv;
	o.stdin_data = big;
	o.stdin_len = AGENT_LEN_MAX + 1;
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_TOO_LARGE);
	agent_client_exec_result_free(&res);
	free(big);

	assert_int_equal(agent_client_remove(&c, "/..", true, AGENT_USER_ROOT, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_UNSAFE_PATH);
	assert_int_equal(agent_client_stat(&c, "relative", true, AGENT_USER_USER,
					   &(struct agent_client_stat){ 0 }, &e),
			 -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_sync_clock(&c, 5, NULL, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_configure(&c, &cfg, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_MISSING_FIELD);
	cfg.hostname = "-bad-";
	assert_int_equal(agent_client_configure(&c, &cfg, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_signal(&c, 0, 15, false, &e), -EINVAL);
	assert_int_equal(agent_client_signal(&c, 1, 65, false, &e), -EINVAL);
	fake_stop(&f);
	/* Nothing above connected. */
	assert_int_equal(f.served, 0);
	fake_free(&f);
}

/* ---- wait_ready ---- */

static void test_wait_ready_retry(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = NULL },
		{ .hello = "", .no_request = true },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"busy\",\"message\":\"128 connections\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"pong\",\"protocol\":1}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 4);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_wait_ready(&c, 5000, &e), 0);
	assert_int_equal(e.fail, AGENT_FAIL_NONE);
	fake_stop(&f);
	assert_int_equal(f.served, 4);
	fake_free(&f);
}

/* kiln-vmm has not created its socket yet: keep trying. */
static void test_wait_ready_socket_late(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .reply = "{\"type\":\"pong\",\"protocol\":1}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start_late(&f, steps, 1, 150);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_wait_ready(&c, 5000, &e), 0);
	fake_stop(&f);
	assert_int_equal(f.served, 1);
	fake_free(&f);
}

static void test_wait_ready_wrong_protocol(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .reply = "{\"type\":\"pong\",\"protocol\":2}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"pong\",\"protocol\":1}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_wait_ready(&c, 5000, &e), -EPROTONOSUPPORT);
	assert_int_equal(e.fail, AGENT_FAIL_PROTOCOL);
	assert_non_null(strstr(e.msg, "protocol 2"));
	fake_stop(&f);
	/* No retry after an incompatible answer. */
	assert_int_equal(f.served, 1);
	fake_free(&f);
}

/* Garbage is not "not ready yet": it ends the wait at once. */
static void test_wait_ready_garbage(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .reply = "garbage\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"pong\",\"protocol\":1}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_wait_ready(&c, 5000, &e), -EPROTO);
	assert_err(&e, AGENT_FAIL_PROTOCOL, AGENT_E_BAD_JSON);
	fake_stop(&f);
	assert_int_equal(f.served, 1);
	fake_free(&f);
}

static void test_wait_ready_timeout(void **state)
{
	static struct fake_step steps[FAKE_CONNS];
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int64_t t0;

	(void)state;
	for (size_t i = 0; i < FAKE_CONNS; i++)
		steps[i] = (struct fake_step){ .hello = "", .no_request = true };
	fake_start(&f, steps, FAKE_CONNS);
	c = client_for(&f, 2000);
	t0 = mono_ms();
	assert_int_equal(agent_client_wait_ready(&c, 300, &e), -ETIMEDOUT);
	assert_err(&e, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT);
	assert_non_null(strstr(e.msg, "without OK"));
	assert_true(mono_ms() - t0 >= 290);
	assert_true(mono_ms() - t0 < 3000);
	fake_stop(&f);
	/* Backoff: 10, 20, 40, 80, 100, ... ms, so a handful of attempts. */
	assert_true(f.served >= 3 && f.served <= 12);
	fake_free(&f);
}

/* A guest 300 ms slow to answer CONNECT (a restore faulting its memory
 * in), waited for in 50 ms slices with `hold_ms`: the result, *served
 * the connections the fake took, *ms the wait. */
static int slow_guest_ready(int hold_ms, struct agent_client_err *e, size_t *served, int64_t *ms)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .hello_delay_ms = 300,
		  .reply = "{\"type\":\"pong\",\"protocol\":1}\n" },
	};
	struct agent_client c;
	struct fake f;
	int64_t t0;
	int r;

	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	t0 = mono_ms();
	r = agent_client_wait_ready_hold(&c, 50, hold_ms, e);
	*ms = mono_ms() - t0;
	fake_stop(&f);
	*served = f.served;
	fake_free(&f);
	return r;
}

/* The held attempt gets its answer although each slice is shorter; without
 * the hold the slice gives up on it (and kilnd's next slice would leave
 * another connection behind it). */
static void test_wait_ready_hold_keeps_slow_attempt(void **state)
{
	struct agent_client_err e;
	size_t served;
	int64_t ms;

	(void)state;
	assert_int_equal(slow_guest_ready(0, &e, &served, &ms), -ETIMEDOUT);
	assert_err(&e, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT);
	assert_int_equal(slow_guest_ready(2000, &e, &served, &ms), 0);
	assert_true(ms >= 250);
	assert_int_equal(served, 1);
}

/* No socket yet (kiln-vmm still loading): tried every few ms, not on the
 * backoff, so a restore's agent is reached as soon as its socket exists. */
static void test_wait_ready_no_socket_polls_fast(void **state)
{
	struct agent_client_err e;
	struct agent_client c;
	const char *at;
	int64_t t0;

	(void)state;
	assert_int_equal(agent_client_init(&c, "/nonexistent-kiln-test/vsock.sock"), 0);
	t0 = mono_ms();
	assert_int_equal(agent_client_wait_ready(&c, 300, &e), -ETIMEDOUT);
	assert_err(&e, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT);
	assert_true(mono_ms() - t0 >= 290);
	assert_true(mono_ms() - t0 < 3000);
	assert_non_null(strstr(e.msg, "No such file"));
	at = strstr(e.msg, "ms (");
	assert_non_null(at);
	/* The backoff would give about 6 attempts in 300 ms; 2 ms steps about 150. */
	assert_true(atoi(at + 4) >= 30);
}

/* ---- exec ---- */

static void test_exec_interleaved(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"stdout\",\"len\":4}\ngot "
			   "{\"type\":\"stderr\",\"len\":3}\noop"
			   "{\"type\":\"stdout\",\"len\":0}\n"
			   "{\"type\":\"stdout\",\"len\":6}\nhello\n"
			   "{\"type\":\"stderr\",\"len\":2}\ns\n" EXIT_3,
		  .trickle = true },
	};
	static const struct agent_env env[] = { { "FOO", "bar" }, { "HOME", NULL } };
	const char *argv[] = { "read x; echo got $x; echo oops >&2; exit 3", NULL };
	struct agent_client_proc_opts o = {
		.argv = argv,
		.shell = true,
		.env = env,
		.envc = 2,
		.cwd = "/tmp",
		.timeout_ms = 5000,
		.stdin_data = "hello\n",
		.stdin_len = 6,
	};
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), 0);
	assert_int_equal(res.out_len, 10);
	assert_string_equal((char *)res.out, "got hello\n");
	assert_int_equal(res.err_len, 5);
	assert_string_equal((char *)res.err, "oops\n");
	assert_int_equal(res.exit.pid, 57);
	assert_int_equal(res.exit.exit_code, 3);
	assert_int_equal(res.exit.signal, 0);
	assert_false(res.exit.timed_out);
	assert_int_equal(res.exit.stdout_bytes, 10);
	assert_int_equal(res.exit.stderr_bytes, 5);
	assert_false(res.exit.stdout_truncated);
	assert_int_equal(res.exit.wall_us, 1830);
	assert_int_equal(res.exit.user_us, 412);
	assert_int_equal(res.exit.sys_us, 907);
	assert_true(res.host_us > 0);
	agent_client_exec_result_free(&res);
	agent_client_exec_result_free(&res);
	fake_stop(&f);
	assert_string_equal(
		f.log[0].hdrs,
		"{\"type\":\"exec\",\"argv\":[\"read x; echo got $x; echo oops >&2; exit 3\"],\"shell\":true,\"env\":{\"FOO\":\"bar\",\"HOME\":null},\"cwd\":\"/tmp\",\"timeout_ms\":5000,\"len\":6}\n");
	assert_int_equal(f.log[0].data_len, 6);
	assert_memory_equal(f.log[0].data, "hello\n", 6);
	fake_free(&f);
}

static void test_exec_signal_and_timeout(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"exit\",\"pid\":58,\"exit_code\":124,\"signal\":null,\"timed_out\":true,\"stdout_bytes\":0,\"stderr_bytes\":0,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":500412,\"user_us\":0,\"sys_us\":310}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"exit\",\"pid\":59,\"exit_code\":null,\"signal\":9,\"timed_out\":false,\"stdout_bytes\":0,\"stderr_bytes\":0,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":5,\"user_us\":0,\"sys_us\":0}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"exit\",\"pid\":59,\"exit_code\":null,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":0,\"stderr_bytes\":0,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":5,\"user_us\":0,\"sys_us\":0}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"exit\",\"pid\":59,\"exit_code\":256,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":0,\"stderr_bytes\":0,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":5,\"user_us\":0,\"sys_us\":0}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"exit\",\"pid\":59,\"exit_code\":0,\"signal\":null,\"timed_out\":\"no\",\"stdout_bytes\":0,\"stderr_bytes\":0,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":5,\"user_us\":0,\"sys_us\":0}\n" },
	};
	const char *argv[] = { "sleep 60", NULL };
	struct agent_client_proc_opts o = {
		.argv = argv, .shell = true, .timeout_ms = 500, .confine = true
	};
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 5);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), 0);
	assert_int_equal(res.exit.exit_code, 124);
	assert_true(res.exit.timed_out);
	assert_null(res.out);
	agent_client_exec_result_free(&res);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), 0);
	assert_int_equal(res.exit.exit_code, -1);
	assert_int_equal(res.exit.signal, 9);
	agent_client_exec_result_free(&res);
	/* Neither status, an out-of-range code, a string for a bool. */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EPROTO);
		assert_int_equal(e.fail, AGENT_FAIL_PROTOCOL);
		agent_client_exec_result_free(&res);
	}
	fake_stop(&f);
	/* confine goes out as a bool after the other process fields. */
	assert_string_equal(
		f.log[0].hdrs,
		"{\"type\":\"exec\",\"argv\":[\"sleep 60\"],\"shell\":true,\"timeout_ms\":500,\"confine\":true}\n");
	fake_free(&f);
}

#define EXIT_0_RUN \
	"{\"type\":\"exit\",\"pid\":61,\"exit_code\":0,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":3,\"stderr_bytes\":0,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":5,\"user_us\":0,\"sys_us\":0}\n"

/* run: the request carries language, code_len and code + stdin; the
 * result line's bytes come back; a result line that lies is refused. */
static void test_run(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"stdout\",\"len\":3}\nhi\n{\"type\":\"result\",\"size\":11,\"len\":11}\n{\"value\":1}" EXIT_0_RUN,
		  .trickle = true },
		/* Over the cap: the size only. */
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"result\",\"size\":2000000,\"len\":0}\n" EXIT_0_RUN },
		/* More bytes than the size, bytes beside an over-cap size, two results. */
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"result\",\"size\":1,\"len\":2}\nab" EXIT_0_RUN },
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"result\",\"size\":2000000,\"len\":2}\nab" EXIT_0_RUN },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"result\",\"size\":0}\n{\"type\":\"result\",\"size\":1,\"len\":1}\nx" EXIT_0_RUN },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"result\",\"len\":0}\n" EXIT_0_RUN },
	};
	struct agent_client_proc_opts o = {
		.lang = AGENT_LANG_PYTHON,
		.code = "print(1)",
		.code_len = 8,
		.stdin_data = "in",
		.stdin_len = 2,
	};
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 6);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_run(&c, &o, &res, &e), 0);
	assert_string_equal((char *)res.out, "hi\n");
	assert_int_equal(res.result_len, 11);
	assert_int_equal(res.result_size, 11);
	assert_string_equal((char *)res.result, "{\"value\":1}");
	agent_client_exec_result_free(&res);
	assert_int_equal(agent_client_run(&c, &o, &res, &e), 0);
	assert_null(res.result);
	assert_int_equal(res.result_size, 2000000);
	agent_client_exec_result_free(&res);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(agent_client_run(&c, &o, &res, &e), -EPROTO);
		assert_int_equal(e.fail, AGENT_FAIL_PROTOCOL);
		agent_client_exec_result_free(&res);
	}
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs,
			    "{\"type\":\"run\",\"language\":\"python\",\"code_len\":8,\"len\":10}\n");
	assert_int_equal(f.log[0].data_len, 10);
	assert_memory_equal(f.log[0].data, "print(1)in", 10);
	fake_free(&f);
	/* No language, or code and stdin over one message. */
	o.lang = AGENT_LANG_NONE;
	assert_int_equal(agent_client_run(&c, &o, &res, &e), -EINVAL);
	o.lang = AGENT_LANG_BASH;
	o.code_len = AGENT_LEN_MAX;
	assert_int_equal(agent_client_run(&c, &o, &res, &e), -E2BIG);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_TOO_LARGE);
}

static void test_exec_start_error(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"exec: 'nope' not found in PATH\"}\n" },
	};
	const char *argv[] = { "nope", NULL };
	struct agent_client_proc_opts o = { .argv = argv, .user = AGENT_USER_ROOT };
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_NOT_FOUND);
	assert_string_equal(e.msg, "exec: 'nope' not found in PATH");
	agent_client_exec_result_free(&res);
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs,
			    "{\"type\":\"exec\",\"argv\":[\"nope\"],\"user\":\"root\"}\n");
	fake_free(&f);
}

/* An honest agent stops at the cap and flags it; a lying one sends more,
 * and the client still keeps only the cap. */
static void test_exec_output_cap(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"stdout\",\"len\":8}\n01234567"
			  "{\"type\":\"exit\",\"pid\":1,\"exit_code\":0,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":20,\"stderr_bytes\":0,\"stdout_truncated\":true,\"stderr_truncated\":false,\"wall_us\":1,\"user_us\":0,\"sys_us\":0}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"stdout\",\"len\":6}\n012345"
			  "{\"type\":\"stderr\",\"len\":3}\nabc"
			  "{\"type\":\"stdout\",\"len\":14}\n6789abcdefghij"
			  "{\"type\":\"exit\",\"pid\":1,\"exit_code\":0,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":20,\"stderr_bytes\":3,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":1,\"user_us\":0,\"sys_us\":0}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"stdout\",\"len\":3}\nabc"
			  "{\"type\":\"exit\",\"pid\":1,\"exit_code\":0,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":3,\"stderr_bytes\":0,\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":1,\"user_us\":0,\"sys_us\":0}\n" },
	};
	const char *argv[] = { "yes", NULL };
	struct agent_client_proc_opts o = { .argv = argv, .output_cap = 8 };
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 3);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), 0);
	assert_int_equal(res.out_len, 8);
	assert_string_equal((char *)res.out, "01234567");
	assert_true(res.exit.stdout_truncated);
	assert_int_equal(res.exit.stdout_bytes, 20);
	agent_client_exec_result_free(&res);

	assert_int_equal(agent_client_exec(&c, &o, &res, &e), 0);
	assert_int_equal(res.out_len, 8);
	assert_string_equal((char *)res.out, "01234567");
	assert_true(res.exit.stdout_truncated);
	assert_string_equal((char *)res.err, "abc");
	assert_false(res.exit.stderr_truncated);
	agent_client_exec_result_free(&res);

	/* discard_output: cap 0 on the wire, nothing kept. */
	o.discard_output = true;
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), 0);
	assert_null(res.out);
	assert_int_equal(res.out_len, 0);
	assert_true(res.exit.stdout_truncated);
	agent_client_exec_result_free(&res);
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs,
			    "{\"type\":\"exec\",\"argv\":[\"yes\"],\"output_cap\":8}\n");
	assert_string_equal(f.log[2].hdrs,
			    "{\"type\":\"exec\",\"argv\":[\"yes\"],\"output_cap\":0}\n");
	fake_free(&f);
}

/* 16 MiB of output in 1 MiB messages against a 1 KiB cap. */
static void gen_flood(int fd)
{
	static const char exit_line[] =
		"{\"type\":\"exit\",\"pid\":1,\"exit_code\":0,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":16777216,\"stderr_bytes\":0,\"stdout_truncated\":true,\"stderr_truncated\":false,\"wall_us\":1,\"user_us\":0,\"sys_us\":0}\n";
	static const char hdr[] = "{\"type\":\"stdout\",\"len\":1048576}\n";
	char *chunk = malloc(AGENT_LEN_MAX);

	if (!chunk)
		abort();
	memset(chunk, 'y', AGENT_LEN_MAX);
	for (int i = 0; i < 16; i++) {
		fk_write(fd, hdr, sizeof(hdr) - 1);
		fk_write(fd, chunk, AGENT_LEN_MAX);
	}
	fk_write(fd, exit_line, sizeof(exit_line) - 1);
	free(chunk);
}

static void test_exec_flood(void **state)
{
	static const struct fake_step steps[] = { { .hello = OK_HELLO, .gen = gen_flood } };
	const char *argv[] = { "yes", NULL };
	struct agent_client_proc_opts o = { .argv = argv, .output_cap = 1024 };
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 5000);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), 0);
	assert_int_equal(res.out_len, 1024);
	assert_int_equal(res.exit.stdout_bytes, 16777216);
	assert_true(res.exit.stdout_truncated);
	agent_client_exec_result_free(&res);
	fake_stop(&f);
	fake_free(&f);
}

struct seen {
	char buf[64];
	size_t len;
	int calls;
	int fail_at;
};

static int on_output(void *arg, enum agent_stream s, const void *data, size_t n)
{
	struct seen *sn = arg;

	sn->calls++;
	if (sn->fail_at && sn->calls == sn->fail_at)
		return -EPIPE;
	sn->buf[sn->len++] = s == AGENT_STDERR ? 'E' : 'O';
	memcpy(sn->buf + sn->len, data, n);
	sn->len += n;
	sn->buf[sn->len] = '\0';
	return 0;
}

static void test_exec_callback(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"stdout\",\"len\":2}\nab{\"type\":\"stderr\",\"len\":2}\ncd"
			   "{\"type\":\"stdout\",\"len\":2}\nef" EXIT_3 },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"stdout\",\"len\":2}\nab{\"type\":\"stderr\",\"len\":2}\ncd" EXIT_3 },
	};
	const char *argv[] = { "x", NULL };
	struct seen sn = { 0 };
	struct agent_client_proc_opts o = {
		.argv = argv, .on_output = on_output, .on_output_arg = &sn, .output_cap = 3
	};
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), 0);
	/* The cap applies to what the callback sees too. */
	assert_string_equal(sn.buf, "OabEcdOe");
	assert_null(res.out);
	assert_true(res.exit.stdout_truncated);
	agent_client_exec_result_free(&res);
	memset(&sn, 0, sizeof(sn));
	sn.fail_at = 2;
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EPIPE);
	assert_int_equal(e.fail, AGENT_FAIL_LOCAL);
	agent_client_exec_result_free(&res);
	fake_stop(&f);
	fake_free(&f);
}

static void test_exec_lying_len(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .reply = "{\"type\":\"stdout\",\"len\":1000}\nonly ten b" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"stdout\",\"len\":4}\nabcd" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"data\",\"len\":4}\nabcd" EXIT_3 },
	};
	const char *argv[] = { "x", NULL };
	struct agent_client_proc_opts o = { .argv = argv };
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 3);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EPROTO);
	assert_err(&e, AGENT_FAIL_PROTOCOL, AGENT_E_TRUNCATED);
	assert_non_null(strstr(e.msg, "after 10 of 1000 payload bytes"));
	agent_client_exec_result_free(&res);
	/* Output, then the connection ends without an exit line. */
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -ECONNRESET);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	assert_non_null(strstr(e.msg, "exit line"));
	agent_client_exec_result_free(&res);
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "'data'"));
	agent_client_exec_result_free(&res);
	fake_stop(&f);
	fake_free(&f);
}

/* wait_ms bounds an exec whose agent never answers. */
static void test_exec_wait_timeout(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .reply = "{\"type\":\"stdout\",\"len\":2}\nab", .hold = true },
	};
	const char *argv[] = { "sleep", "9", NULL };
	struct agent_client_proc_opts o = { .argv = argv, .wait_ms = 200 };
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int64_t t0;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	t0 = mono_ms();
	assert_int_equal(agent_client_exec(&c, &o, &res, &e), -ETIMEDOUT);
	assert_err(&e, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT);
	assert_true(mono_ms() - t0 >= 190);
	assert_true(mono_ms() - t0 < 3000);
	/* What arrived before the deadline is still there. */
	assert_string_equal((char *)res.out, "ab");
	agent_client_exec_result_free(&res);
	fake_stop(&f);
	fake_free(&f);
}

/* ---- streams ---- */

static void test_spawn_stream(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"spawned\",\"id\":1,\"pid\":61}\n"
			   "{\"type\":\"stdout\",\"seq\":0,\"len\":2}\n$ "
			   "{\"type\":\"gap\",\"seq\":2,\"bytes\":100}\n"
			   "{\"type\":\"stderr\",\"seq\":102,\"len\":3}\nerr",
		  .expect_msgs = 3,
		  .reply2 =
			  "{\"type\":\"stdout\",\"seq\":105,\"len\":4}\nhi\r\n"
			  "{\"type\":\"exit\",\"id\":1,\"pid\":61,\"exit_code\":null,\"signal\":15,\"timed_out\":false,\"stdout_bytes\":6,\"stderr_bytes\":3,\"wall_us\":9,\"user_us\":1,\"sys_us\":2}\n" },
	};
	const char *argv[] = { "sh", NULL };
	struct agent_client_proc_opts o = {
		.argv = argv, .pty = true, .rows = 40, .cols = 120, .ring_bytes = 8192
	};
	struct agent_client_attached info;
	struct agent_client_stream *s;
	struct agent_client_event ev;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 1);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_spawn(&c, &o, &s, &info, &e), 0);
	assert_int_equal(info.id, 1);
	assert_int_equal(info.pid, 61);
	assert_true(agent_client_stream_fd(s) >= 0);

	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 0);
	assert_int_equal(ev.kind, AGENT_EVENT_STDOUT);
	assert_int_equal(ev.seq, 0);
	assert_int_equal(ev.len, 2);
	assert_memory_equal(ev.data, "$ ", 2);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 0);
	assert_int_equal(ev.kind, AGENT_EVENT_GAP);
	assert_int_equal(ev.seq, 2);
	assert_int_equal(ev.gap_bytes, 100);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 0);
	assert_int_equal(ev.kind, AGENT_EVENT_STDERR);
	assert_int_equal(ev.seq, 102);
	assert_memory_equal(ev.data, "err", 3);

	assert_int_equal(agent_client_stream_stdin(s, "ls\r", 3, true, &e), 0);
	assert_int_equal(agent_client_stream_signal(s, 15, true, &e), 0);
	assert_int_equal(agent_client_stream_resize(s, 50, 200, &e), 0);
	/* Invalid control messages are refused locally, the stream goes on. */
	assert_int_equal(agent_client_stream_signal(s, 0, false, &e), -EINVAL);
	assert_int_equal(agent_client_stream_resize(s, 0, 200, &e), -EINVAL);

	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 0);
	assert_int_equal(ev.kind, AGENT_EVENT_STDOUT);
	assert_int_equal(ev.seq, 105);
	assert_memory_equal(ev.data, "hi\r\n", 4);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 0);
	assert_int_equal(ev.kind, AGENT_EVENT_EXIT);
	assert_int_equal(ev.exit.id, 1);
	assert_int_equal(ev.exit.signal, 15);
	assert_int_equal(ev.exit.exit_code, -1);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 1);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 1);
	agent_client_stream_close(s);
	fake_stop(&f);
	assert_string_equal(
		f.log[0].hdrs,
		"{\"type\":\"spawn\",\"argv\":[\"sh\"],\"pty\":true,\"rows\":40,\"cols\":120,\"ring_bytes\":8192}\n"
		"{\"type\":\"stdin\",\"close\":true,\"len\":3}\n"
		"{\"type\":\"signal\",\"signal\":15,\"group\":true}\n"
		"{\"type\":\"resize\",\"rows\":50,\"cols\":200}\n");
	assert_int_equal(f.log[0].data_len, 3);
	assert_memory_equal(f.log[0].data, "ls\r", 3);
	fake_free(&f);
}

/* A timeout leaves the stream usable; a large chunk comes in slices with
 * consecutive seq numbers. */
static void gen_attached_big(int fd)
{
	static const char hdr[] =
		"{\"type\":\"attached\",\"id\":7,\"pid\":70,\"pty\":false,\"running\":true,\"seq\":1000}\n"
		"{\"type\":\"stdout\",\"seq\":1000,\"len\":200000}\n";
	char *big = malloc(200000);

	if (!big)
		abort();
	for (size_t i = 0; i < 200000; i++)
		big[i] = (char)('a' + i % 26);
	fk_write(fd, hdr, sizeof(hdr) - 1);
	fk_write(fd, big, 200000);
	free(big);
}

static void test_attach_stream(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .gen = gen_attached_big,
		  .expect_msgs = 1,
		  .reply2 =
			  "{\"type\":\"exit\",\"id\":7,\"pid\":70,\"exit_code\":0,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":201000,\"stderr_bytes\":0,\"wall_us\":9,\"user_us\":1,\"sys_us\":2}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"attached\",\"id\":8,\"pid\":70,\"pty\":false,\"running\":true,\"seq\":0}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"attach: no process 9\"}\n" },
	};
	struct agent_client_attached info;
	struct agent_client_stream *s;
	struct agent_client_event ev;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	uint64_t next = 1000, total = 0;

	(void)state;
	fake_start(&f, steps, 3);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_attach(&c, 7, AGENT_FROM_NOW, 0, &s, &info, &e), 0);
	assert_int_equal(info.seq, 1000);
	assert_true(info.running);
	while (total < 200000) {
		assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 0);
		assert_int_equal(ev.kind, AGENT_EVENT_STDOUT);
		assert_int_equal(ev.seq, next);
		assert_true(ev.len > 0 && ev.len <= 65536);
		assert_int_equal(ev.data[0], 'a' + total % 26);
		next += ev.len;
		total += ev.len;
	}
	assert_int_equal(total, 200000);
	assert_int_equal(agent_client_stream_next(s, 100, &ev, &e), -ETIMEDOUT);
	assert_err(&e, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT);
	assert_int_equal(agent_client_stream_signal(s, 9, false, &e), 0);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 0);
	assert_int_equal(ev.kind, AGENT_EVENT_EXIT);
	assert_int_equal(ev.exit.exit_code, 0);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 1);
	agent_client_stream_close(s);

	/* The agent attached another process than asked. */
	assert_int_equal(agent_client_attach(&c, 7, AGENT_FROM_SEQ, 5, &s, &info, &e), -EPROTO);
	assert_null(s);
	assert_int_equal(agent_client_attach(&c, 9, AGENT_FROM_OLDEST, 0, &s, NULL, &e),
			 -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_NOT_FOUND);
	assert_null(s);
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs,
			    "{\"type\":\"attach\",\"id\":7,\"from\":\"now\"}\n"
			    "{\"type\":\"signal\",\"signal\":9}\n");
	assert_string_equal(f.log[1].hdrs, "{\"type\":\"attach\",\"id\":7,\"from\":5}\n");
	assert_string_equal(f.log[2].hdrs, "{\"type\":\"attach\",\"id\":9}\n");
	fake_free(&f);
}

static void test_stream_ends_early(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"spawned\",\"id\":2,\"pid\":3}\n{\"type\":\"stdout\",\"seq\":0,\"len\":1}\nx" },
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"spawned\",\"id\":2,\"pid\":3}\n{\"type\":\"launch\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"spawned\",\"id\":0,\"pid\":3}\n" },
	};
	const char *argv[] = { "x", NULL };
	struct agent_client_proc_opts o = { .argv = argv };
	struct agent_client_stream *s;
	struct agent_client_event ev;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 3);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_spawn(&c, &o, &s, NULL, &e), 0);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), 0);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), -ECONNRESET);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	agent_client_stream_close(s);
	assert_int_equal(agent_client_spawn(&c, &o, &s, NULL, &e), 0);
	assert_int_equal(agent_client_stream_next(s, 2000, &ev, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "'launch'"));
	agent_client_stream_close(s);
	assert_int_equal(agent_client_spawn(&c, &o, &s, NULL, &e), -EPROTO);
	assert_null(s);
	fake_stop(&f);
	fake_free(&f);
}

static void test_wait_and_controls(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"exit\",\"id\":3,\"pid\":64,\"exit_code\":null,\"signal\":15,\"timed_out\":false,\"stdout_bytes\":0,\"stderr_bytes\":0,\"wall_us\":2210900,\"user_us\":0,\"sys_us\":800}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"timeout\",\"message\":\"wait: process 3 still running after 5000 ms\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"resize: process 3 has no terminal\"}\n" },
	};
	struct agent_client_exit ex;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 5);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_wait(&c, 3, 5000, &ex, &e), 0);
	assert_int_equal(ex.id, 3);
	assert_int_equal(ex.signal, 15);
	assert_int_equal(ex.wall_us, 2210900);
	assert_int_equal(agent_client_wait(&c, 3, 5000, &ex, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_TIMEOUT);
	assert_int_equal(agent_client_signal(&c, 3, 15, false, &e), 0);
	assert_int_equal(agent_client_stdin(&c, 3, "42\n", 3, true, &e), 0);
	assert_int_equal(agent_client_resize(&c, 3, 30, 100, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_INVALID_STATE);
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs, "{\"type\":\"wait\",\"id\":3,\"timeout_ms\":5000}\n");
	assert_string_equal(f.log[2].hdrs, "{\"type\":\"signal\",\"id\":3,\"signal\":15}\n");
	assert_string_equal(f.log[3].hdrs,
			    "{\"type\":\"stdin\",\"id\":3,\"close\":true,\"len\":3}\n");
	assert_memory_equal(f.log[3].data, "42\n", 3);
	assert_string_equal(f.log[4].hdrs,
			    "{\"type\":\"resize\",\"id\":3,\"rows\":30,\"cols\":100}\n");
	fake_free(&f);
}

struct procs {
	int n;
	char argv0[2][32];
	size_t argc[2];
	bool truncated[2];
};

static int on_process(void *arg, const struct agent_client_process *p)
{
	struct procs *ps = arg;

	if (ps->n >= 2)
		return -E2BIG;
	snprintf(ps->argv0[ps->n], sizeof(ps->argv0[0]), "%s", p->argv[0]);
	ps->argc[ps->n] = p->argc;
	ps->truncated[ps->n] = p->argv_truncated;
	ps->n++;
	return 0;
}

/* A hostile agent's list_processes: one entry more than the agent's
 * process table holds, a repeated id, an argv longer than spawn accepts,
 * a process line carrying a payload. */
static void proc_line(int fd, unsigned id, unsigned argc, unsigned payload)
{
	char line[65536];
	size_t n = (size_t)snprintf(line, sizeof(line),
				    "{\"type\":\"process\",\"id\":%u,\"pid\":%u,\"argv\":[", id,
				    id + 100);

	for (unsigned i = 0; i < argc; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s\"a\"", i ? "," : "");
	n += (size_t)snprintf(
		line + n, sizeof(line) - n,
		"],\"pty\":false,\"running\":true,\"exit_code\":null,\"signal\":null,\"timed_out\":false,\"seq\":0,\"attached\":0%s}\n",
		payload ? ",\"len\":4" : "");
	assert_true(n < sizeof(line));
	fk_write(fd, line, n);
	if (payload)
		fk_write(fd, "abcd", 4);
}

static void gen_too_many(int fd)
{
	for (unsigned i = 1; i <= AGENT_MAX_PROCS + 1; i++)
		proc_line(fd, i, 2, 0);
	fk_write(fd, "{\"type\":\"end\",\"count\":129}\n",
		 strlen("{\"type\":\"end\",\"count\":129}\n"));
}

static void gen_at_cap(int fd)
{
	for (unsigned i = 1; i <= AGENT_MAX_PROCS; i++)
		proc_line(fd, i, 2, 0);
	fk_write(fd, "{\"type\":\"end\",\"count\":128}\n",
		 strlen("{\"type\":\"end\",\"count\":128}\n"));
}

static void gen_repeated_id(int fd)
{
	proc_line(fd, 7, 1, 0);
	proc_line(fd, 7, 1, 0);
	fk_write(fd, "{\"type\":\"end\",\"count\":2}\n",
		 strlen("{\"type\":\"end\",\"count\":2}\n"));
}

static void gen_long_argv(int fd)
{
	proc_line(fd, 1, AGENT_ARGV_MAX + 1, 0);
	fk_write(fd, "{\"type\":\"end\",\"count\":1}\n",
		 strlen("{\"type\":\"end\",\"count\":1}\n"));
}

static void gen_payload(int fd)
{
	proc_line(fd, 1, 1, 1);
	fk_write(fd, "{\"type\":\"end\",\"count\":1}\n",
		 strlen("{\"type\":\"end\",\"count\":1}\n"));
}

static int count_process(void *arg, const struct agent_client_process *p)
{
	(void)p;
	(*(int *)arg)++;
	return 0;
}

static void test_list_processes_caps(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .gen = gen_too_many },
		{ .hello = OK_HELLO, .gen = gen_at_cap },
		{ .hello = OK_HELLO, .gen = gen_repeated_id },
		{ .hello = OK_HELLO, .gen = gen_long_argv },
		{ .hello = OK_HELLO, .gen = gen_payload },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	uint64_t count = 0;
	int n = 0;

	(void)state;
	fake_start(&f, steps, 5);
	c = client_for(&f, 5000);
	assert_int_equal(agent_client_list_processes(&c, count_process, &n, &count, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "more than 128 processes"));
	assert_int_equal(n, AGENT_MAX_PROCS);
	n = 0;
	assert_int_equal(agent_client_list_processes(&c, count_process, &n, &count, &e), 0);
	assert_int_equal(n, AGENT_MAX_PROCS);
	n = 0;
	assert_int_equal(agent_client_list_processes(&c, count_process, &n, &count, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "process 7 twice"));
	assert_int_equal(agent_client_list_processes(&c, count_process, &n, &count, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "more than 1024"));
	assert_int_equal(agent_client_list_processes(&c, count_process, &n, &count, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "payload"));
	fake_stop(&f);
	fake_free(&f);
}

static void test_list_processes(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"process\",\"id\":1,\"pid\":61,\"argv\":[\"sh\",\"-i\"],\"pty\":true,\"running\":true,\"exit_code\":null,\"signal\":null,\"timed_out\":false,\"seq\":17,\"attached\":0}\n"
			  "{\"type\":\"process\",\"id\":3,\"pid\":64,\"argv0\":\"sleep\",\"argv_truncated\":true,\"pty\":false,\"running\":false,\"exit_code\":null,\"signal\":15,\"timed_out\":false,\"seq\":0,\"attached\":0}\n"
			  "{\"type\":\"end\",\"count\":2}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"end\",\"count\":5}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"process\",\"id\":1,\"pid\":61,\"argv\":[\"sh\",7],\"pty\":true,\"running\":true,\"exit_code\":null,\"signal\":null,\"timed_out\":false,\"seq\":17,\"attached\":0}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"process\",\"id\":1,\"pid\":61,\"argv\":[\"sh\"],\"pty\":true,\"running\":true,\"exit_code\":null,\"signal\":null,\"timed_out\":false,\"seq\":17,\"attached\":0}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct procs ps = { 0 };
	struct fake f;
	uint64_t count = 0;

	(void)state;
	fake_start(&f, steps, 4);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_list_processes(&c, on_process, &ps, &count, &e), 0);
	assert_int_equal(count, 2);
	assert_string_equal(ps.argv0[0], "sh");
	assert_int_equal(ps.argc[0], 2);
	assert_string_equal(ps.argv0[1], "sleep");
	assert_true(ps.truncated[1]);
	assert_int_equal(agent_client_list_processes(&c, on_process, &ps, &count, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "counted 5"));
	assert_int_equal(agent_client_list_processes(&c, on_process, &ps, &count, &e), -EPROTO);
	/* The list ends without `end`. */
	ps.n = 0;
	assert_int_equal(agent_client_list_processes(&c, on_process, &ps, &count, &e), -ECONNRESET);
	fake_stop(&f);
	fake_free(&f);
}

/* ---- files ---- */

struct collect {
	uint8_t buf[64];
	size_t len;
};

static int collect(void *arg, const void *data, size_t n)
{
	struct collect *cl = arg;

	if (cl->len + n > sizeof(cl->buf))
		return -ENOSPC;
	memcpy(cl->buf + cl->len, data, n);
	cl->len += n;
	return 0;
}

static void test_read(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"file\",\"size\":5}\n{\"type\":\"data\",\"len\":3}\niln{\"type\":\"end\",\"bytes\":3}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"file\",\"size\":5}\n{\"type\":\"data\",\"len\":3}\niln{\"type\":\"end\",\"bytes\":4}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"file\",\"size\":5}\n{\"type\":\"data\",\"len\":5}\nkiln\n{\"type\":\"end\",\"bytes\":5}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"file\",\"size\":5}\n{\"type\":\"data\",\"len\":2}\nki{\"type\":\"error\",\"code\":\"io_error\",\"message\":\"read '/etc/hostname': Input/output error\"}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"is_directory\",\"message\":\"read '/etc': is a directory\"}\n" },
	};
	struct agent_client_read_opts o = { .offset = 1, .length = 3, .has_length = true };
	struct agent_client_read_info info;
	struct agent_client_err e;
	struct collect cl = { 0 };
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 5);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_read(&c, "/etc/hostname", &o, collect, &cl, &info, &e), 0);
	assert_int_equal(cl.len, 3);
	assert_memory_equal(cl.buf, "iln", 3);
	assert_int_equal(info.size, 5);
	assert_int_equal(info.bytes, 3);
	assert_int_equal(agent_client_read(&c, "/etc/hostname", &o, collect, &cl, &info, &e),
			 -EPROTO);
	assert_non_null(strstr(e.msg, "reported 4 bytes but sent 3"));
	/* More than `length` asked for. */
	assert_int_equal(agent_client_read(&c, "/etc/hostname", &o, collect, &cl, &info, &e),
			 -EPROTO);
	assert_int_equal(agent_client_read(&c, "/etc/hostname", NULL, collect, &cl, NULL, &e),
			 -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_IO_ERROR);
	assert_int_equal(agent_client_read(&c, "/etc", NULL, collect, &cl, NULL, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_IS_DIRECTORY);
	fake_stop(&f);
	assert_string_equal(
		f.log[0].hdrs,
		"{\"type\":\"read\",\"path\":\"/etc/hostname\",\"offset\":1,\"length\":3}\n");
	assert_string_equal(f.log[3].hdrs, "{\"type\":\"read\",\"path\":\"/etc/hostname\"}\n");
	fake_free(&f);
}

static void test_write_chunks(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .read_upload = true,
		  .reply = "{\"type\":\"ok\",\"bytes\":150000}\n" },
		{ .hello = OK_HELLO,
		  .read_upload = true,
		  .reply = "{\"type\":\"ok\",\"bytes\":0}\n" },
	};
	struct agent_client_write_opts o = {
		.has_mode = true, .mode = 0600, .parents = true, .append = true
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	uint8_t *buf = malloc(150000);
	uint64_t bytes = 0;

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < 150000; i++)
		buf[i] = (uint8_t)(i * 7);
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_write(&c, "/home/user/a.bin", &o, buf, 150000, &bytes, &e),
			 0);
	assert_int_equal(bytes, 150000);
	assert_int_equal(agent_client_write(&c, "/home/user/empty", NULL, "", 0, &bytes, &e), 0);
	assert_int_equal(bytes, 0);
	fake_stop(&f);
	assert_string_equal(
		f.log[0].hdrs,
		"{\"type\":\"write\",\"path\":\"/home/user/a.bin\",\"append\":true,\"mode\":384,\"parents\":true}\n"
		"{\"type\":\"data\",\"len\":65536}\n{\"type\":\"data\",\"len\":65536}\n"
		"{\"type\":\"data\",\"len\":18928}\n{\"type\":\"end\"}\n");
	assert_int_equal(f.log[0].data_len, 150000);
	assert_memory_equal(f.log[0].data, buf, 150000);
	assert_string_equal(f.log[1].hdrs,
			    "{\"type\":\"write\",\"path\":\"/home/user/empty\"}\n{\"type\":\"end\"}\n");
	free(buf);
	fake_free(&f);
}

/* The agent refuses the file at open and closes without reading the
 * upload: the client reports the agent's reason, not a broken pipe. */
static void test_write_refused(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"permission_denied\",\"message\":\"write '/etc/x': permission denied\"}\n" },
		{ .hello = OK_HELLO,
		  .read_upload = true,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"no_space\",\"message\":\"write '/x': no space left\"}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	size_t n = 4 << 20;
	uint8_t *buf = calloc(1, n);

	(void)state;
	assert_non_null(buf);
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_write(&c, "/etc/x", NULL, buf, n, NULL, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_PERMISSION_DENIED);
	assert_int_equal(agent_client_write(&c, "/x", NULL, buf, 1000, NULL, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_NO_SPACE);
	fake_stop(&f);
	free(buf);
	fake_free(&f);
}

static int tmpfile_with(const void *data, size_t n)
{
	char path[] = "/tmp/kiln-agent-client-file-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	if (n)
		assert_int_equal(write(fd, data, n), (ssize_t)n);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static void test_tar_upload(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .read_upload = true,
		  .reply =
			  "{\"type\":\"ok\",\"files\":2,\"dirs\":1,\"symlinks\":0,\"hardlinks\":0,\"skipped\":0,\"bytes\":70000}\n" },
		{ .hello = OK_HELLO,
		  .read_upload = true,
		  .reply =
			  "{\"type\":\"error\",\"code\":\"unsafe_path\",\"message\":\"tar member '../../etc/passwd': '..' would leave /home/user/proj\"}\n" },
	};
	struct agent_client_tar_stats st;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	uint8_t *buf = malloc(70000);
	int fd;

	(void)state;
	assert_non_null(buf);
	memset(buf, 'T', 70000);
	fd = tmpfile_with(buf, 70000);
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_tar_upload(&c, "/home/user/proj", AGENT_USER_ROOT, fd, &st,
						 &e),
			 0);
	assert_int_equal(st.files, 2);
	assert_int_equal(st.dirs, 1);
	assert_int_equal(st.bytes, 70000);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(agent_client_tar_upload(&c, "/home/user/proj", AGENT_USER_USER, fd, NULL,
						 &e),
			 -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_UNSAFE_PATH);
	close(fd);
	fake_stop(&f);
	assert_string_equal(
		f.log[0].hdrs,
		"{\"type\":\"tar_upload\",\"path\":\"/home/user/proj\",\"user\":\"root\"}\n"
		"{\"type\":\"data\",\"len\":65536}\n{\"type\":\"data\",\"len\":4464}\n{\"type\":\"end\"}\n");
	assert_int_equal(f.log[0].data_len, 70000);
	free(buf);
	fake_free(&f);
}

static void test_tar_download(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"data\",\"len\":5}\nustar{\"type\":\"data\",\"len\":3}\n..."
			  "{\"type\":\"end\",\"bytes\":8,\"files\":2,\"dirs\":1,\"symlinks\":0,\"skipped\":0}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"data\",\"len\":5}\nustar{\"type\":\"error\",\"code\":\"io_error\",\"message\":\"tar_download: EIO\"}\n" },
	};
	struct agent_client_tar_stats st;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	char got[16] = { 0 };
	int fd = tmpfile_with(NULL, 0);

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_tar_download(&c, "/home/user/proj", AGENT_USER_USER, fd, &st,
						   &e),
			 0);
	assert_int_equal(st.bytes, 8);
	assert_int_equal(st.files, 2);
	assert_int_equal(pread(fd, got, sizeof(got), 0), 8);
	assert_string_equal(got, "ustar...");
	assert_int_equal(agent_client_tar_download(&c, "/home/user/proj", AGENT_USER_USER, fd, &st,
						   &e),
			 -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_IO_ERROR);
	close(fd);
	fake_stop(&f);
	fake_free(&f);
}

static void test_stat_exists(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"stat\",\"path\":\"/bin/sh\",\"kind\":\"symlink\",\"size\":7,\"mode\":511,\"uid\":0,\"gid\":0,\"nlink\":1,\"mtime_ns\":1732300000000000000,\"target\":\"busybox\"}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"stat\",\"path\":\"/x\",\"kind\":\"file\",\"size\":7,\"mode\":4096,\"uid\":0,\"gid\":0,\"nlink\":1,\"mtime_ns\":1}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"exists\",\"exists\":false}\n" },
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"exists\",\"exists\":true,\"kind\":\"dir\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"exists\",\"exists\":true}\n" },
	};
	struct agent_client_stat st;
	enum agent_client_kind kind;
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	bool ex = true;

	(void)state;
	fake_start(&f, steps, 5);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_stat(&c, "/bin/sh", false, AGENT_USER_USER, &st, &e), 0);
	assert_string_equal(st.path, "/bin/sh");
	assert_int_equal(st.kind, AGENT_KIND_SYMLINK);
	assert_string_equal(agent_client_kind_name(st.kind), "symlink");
	assert_string_equal(st.target, "busybox");
	assert_int_equal(st.mode, 0777);
	assert_int_equal(st.size, 7);
	agent_client_stat_free(&st);
	agent_client_stat_free(&st);
	/* mode beyond 07777 */
	assert_int_equal(agent_client_stat(&c, "/x", true, AGENT_USER_USER, &st, &e), -EPROTO);
	assert_null(st.path);
	assert_int_equal(agent_client_exists(&c, "/nope", true, AGENT_USER_USER, &ex, &kind, &e),
			 0);
	assert_false(ex);
	assert_int_equal(agent_client_exists(&c, "/srv", true, AGENT_USER_ROOT, &ex, &kind, &e), 0);
	assert_true(ex);
	assert_int_equal(kind, AGENT_KIND_DIR);
	assert_int_equal(agent_client_exists(&c, "/srv", true, AGENT_USER_USER, &ex, &kind, &e),
			 -EPROTO);
	assert_false(ex);
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs,
			    "{\"type\":\"stat\",\"path\":\"/bin/sh\",\"follow\":false}\n");
	assert_string_equal(f.log[3].hdrs,
			    "{\"type\":\"exists\",\"path\":\"/srv\",\"user\":\"root\"}\n");
	fake_free(&f);
}

struct entries {
	int n;
	char paths[4][32];
	uint32_t depth[4];
};

static int on_entry(void *arg, const struct agent_client_stat *st)
{
	struct entries *en = arg;

	if (en->n >= 4)
		return -E2BIG;
	snprintf(en->paths[en->n], sizeof(en->paths[0]), "%s", st->path);
	en->depth[en->n++] = st->depth;
	return 0;
}

static void test_list_dir(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"entry\",\"path\":\"/srv/app\",\"depth\":1,\"kind\":\"dir\",\"size\":4096,\"mode\":493,\"uid\":1000,\"gid\":1000,\"nlink\":2,\"mtime_ns\":1732300000000000000}\n"
			  "{\"type\":\"entry\",\"path\":\"/srv/app/main.py\",\"depth\":2,\"kind\":\"file\",\"size\":12,\"mode\":420,\"uid\":1000,\"gid\":1000,\"nlink\":1,\"mtime_ns\":1732300000000000000}\n"
			  "{\"type\":\"end\",\"count\":2,\"truncated\":false,\"skipped\":1}\n" },
		{ .hello = OK_HELLO,
		  .reply =
			  "{\"type\":\"entry\",\"path\":\"/srv/app\",\"kind\":\"dir\",\"size\":4096,\"mode\":493,\"uid\":1000,\"gid\":1000,\"nlink\":2,\"mtime_ns\":1}\n" },
	};
	struct agent_client_list_opts o = { .depth = 2 };
	struct agent_client_list_end end;
	struct agent_client_err e;
	struct entries en = { 0 };
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_list_dir(&c, "/srv", &o, on_entry, &en, &end, &e), 0);
	assert_int_equal(en.n, 2);
	assert_string_equal(en.paths[1], "/srv/app/main.py");
	assert_int_equal(en.depth[1], 2);
	assert_int_equal(end.count, 2);
	assert_int_equal(end.skipped, 1);
	/* An entry line without its depth. */
	assert_int_equal(agent_client_list_dir(&c, "/srv", NULL, on_entry, &en, NULL, &e), -EPROTO);
	assert_non_null(strstr(e.msg, "'depth'"));
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs,
			    "{\"type\":\"list_dir\",\"path\":\"/srv\",\"depth\":2}\n");
	fake_free(&f);
}

/* configure.trust_ca: sent as one JSON string, "" too (removal); a
 * certificate the codec refuses never leaves the host. */
static void test_configure_trust_ca(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
	};
	struct agent_client_configure cfg = { .trust_ca = TEST_CA_PEM };
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_configure(&c, &cfg, &e), 0);
	cfg.trust_ca = "";
	cfg.hostname = "box1";
	assert_int_equal(agent_client_configure(&c, &cfg, &e), 0);
	cfg.hostname = NULL;
	cfg.trust_ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\ntrailing";
	assert_int_equal(agent_client_configure(&c, &cfg, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "only one certificate"));
	fake_stop(&f);
	assert_int_equal(f.served, 2);
	assert_string_equal(f.log[0].hdrs,
			    "{\"type\":\"configure\",\"trust_ca\":\"" TEST_CA_PEM_JSON "\"}\n");
	assert_string_equal(f.log[1].hdrs,
			    "{\"type\":\"configure\",\"hostname\":\"box1\",\"trust_ca\":\"\"}\n");
	fake_free(&f);
}

static void test_lifecycle(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\",\"delta_ns\":86400000312345}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
		{ .hello = OK_HELLO,
		  .reply = "{\"type\":\"ok\",\"delta_ns\":5,\"reseeded\":true}\n" },
	};
	static const uint8_t seed[3] = { 0x00, 0x9f, 0xff };
	const char *dns[] = { "10.0.2.3" };
	struct agent_client_configure cfg = { .hostname = "box1",
					      .address = "10.0.2.15/24",
					      .gateway = "10.0.2.2",
					      .dns = dns,
					      .dns_n = 1,
					      .set_dns = true };
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int64_t delta = 0;

	(void)state;
	fake_start(&f, steps, 7);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_configure(&c, &cfg, &e), 0);
	assert_int_equal(agent_client_sync_clock(&c, 1732312345123456789LL, &delta, &e), 0);
	assert_true(delta == 86400000312345LL);
	assert_int_equal(agent_client_shutdown(&c, 2000, &e), 0);
	assert_int_equal(agent_client_rename(&c, "/tmp/a", "/tmp/b", true, AGENT_USER_USER, &e), 0);
	assert_int_equal(agent_client_remove(&c, "/tmp/b", true, AGENT_USER_USER, &e), 0);
	assert_int_equal(agent_client_mkdir(&c, "/tmp/d", false, 0700, AGENT_USER_USER, &e), 0);
	assert_int_equal(agent_client_sync_clock_seed(&c, 1732312345123456789LL, seed, 3, &delta,
						      &e),
			 0);
	assert_true(delta == 5);
	/* Too much or no entropy is refused before anything is sent. */
	assert_int_equal(agent_client_sync_clock_seed(&c, 1732312345123456789LL, seed, 0, NULL, &e),
			 -EINVAL);
	assert_int_equal(agent_client_sync_clock_seed(&c, 1732312345123456789LL, seed,
						      AGENT_ENTROPY_MAX + 1, NULL, &e),
			 -EINVAL);
	fake_stop(&f);
	assert_string_equal(
		f.log[0].hdrs,
		"{\"type\":\"configure\",\"hostname\":\"box1\",\"address\":\"10.0.2.15/24\",\"gateway\":\"10.0.2.2\",\"dns\":[\"10.0.2.3\"]}\n");
	assert_string_equal(f.log[1].hdrs,
			    "{\"type\":\"sync_clock\",\"time_ns\":1732312345123456789}\n");
	assert_string_equal(f.log[2].hdrs, "{\"type\":\"shutdown\",\"grace_ms\":2000}\n");
	assert_string_equal(
		f.log[3].hdrs,
		"{\"type\":\"rename\",\"from\":\"/tmp/a\",\"to\":\"/tmp/b\",\"overwrite\":true}\n");
	assert_string_equal(f.log[4].hdrs,
			    "{\"type\":\"remove\",\"path\":\"/tmp/b\",\"recursive\":true}\n");
	assert_string_equal(f.log[5].hdrs,
			    "{\"type\":\"mkdir\",\"path\":\"/tmp/d\",\"mode\":448}\n");
	assert_string_equal(
		f.log[6].hdrs,
		"{\"type\":\"sync_clock\",\"time_ns\":1732312345123456789,\"entropy\":\"009fff\"}\n");
	fake_free(&f);
}

/* ---- TCP bridge ---- */

/*
 * The agent's side of a tcp_connect bridge: ok with a server greeting in
 * the same write (the client must not swallow it), then an echo until the
 * client half-closes, then a count, then the server's own close.
 */
static void gen_tcp_bridge(int fd)
{
	static const char hi[] = "{\"type\":\"ok\"}\nHELLO\n";
	char b[4096], bye[64];
	size_t total = 0;
	ssize_t n;

	fk_write(fd, hi, sizeof(hi) - 1);
	while ((n = read(fd, b, sizeof(b))) > 0) {
		fk_write(fd, b, (size_t)n);
		total += (size_t)n;
	}
	snprintf(bye, sizeof(bye), "BYE %zu\n", total);
	fk_write(fd, bye, strlen(bye));
}

/* Everything readable on a non-blocking fd until EOF (bounded wait). */
static size_t read_to_eof(int fd, char *buf, size_t cap)
{
	size_t got = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		assert_true(poll(&p, 1, 5000) == 1);
		n = recv(fd, buf + got, cap - 1 - got, 0);
		if (n == 0)
			break;
		if (n < 0 && errno == EAGAIN)
			continue;
		assert_true(n > 0);
		got += (size_t)n;
		assert_true(got < cap - 1);
	}
	buf[got] = '\0';
	return got;
}

static void test_tcp_connect_bridge(void **state)
{
	static const struct fake_step steps[] = {
		{ .hello = OK_HELLO, .gen = gen_tcp_bridge },
		{ .hello = OK_HELLO, .reply = "{\"type\":\"ok\"}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	char buf[256];
	int fd = -1;

	(void)state;
	fake_start(&f, steps, 2);
	c = client_for(&f, 2000);
	assert_int_equal(agent_client_tcp_connect(&c, 8080, NULL, &fd, &e), 0);
	assert_int_equal(e.fail, AGENT_FAIL_NONE);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* Both directions, then the half-close each way: the greeting came
	 * behind the ok line, the echo, and the server's answer to our EOF. */
	assert_int_equal(send(fd, "ping 1234", 9, MSG_NOSIGNAL), 9);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	read_to_eof(fd, buf, sizeof(buf));
	assert_string_equal(buf, "HELLO\nping 1234BYE 9\n");
	close(fd);
	/* The loopback's other spelling. */
	fd = -1;
	assert_int_equal(agent_client_tcp_connect(&c, 65535, "::1", &fd, &e), 0);
	assert_true(fd >= 0);
	assert_int_equal(read_to_eof(fd, buf, sizeof(buf)), 0);
	close(fd);
	fake_stop(&f);
	assert_string_equal(f.log[0].hdrs, "{\"type\":\"tcp_connect\",\"port\":8080}\n");
	assert_int_equal(f.log[0].data_len, 0);
	assert_string_equal(f.log[1].hdrs,
			    "{\"type\":\"tcp_connect\",\"port\":65535,\"address\":\"::1\"}\n");
	fake_free(&f);
}

static void test_tcp_connect_errors(void **state)
{
	static const struct {
		const char *reply;
		int ret;
		enum agent_fail fail;
		enum agent_code code;
		const char *needle;
	} cases[] = {
		{ "{\"type\":\"error\",\"code\":\"refused\",\"message\":\"tcp_connect: nothing listens on 127.0.0.1:8080 in the guest\"}\n",
		  -EREMOTEIO, AGENT_FAIL_AGENT, AGENT_E_REFUSED, "nothing listens" },
		{ "{\"type\":\"error\",\"code\":\"timeout\",\"message\":\"tcp_connect: slow\"}\n",
		  -EREMOTEIO, AGENT_FAIL_AGENT, AGENT_E_TIMEOUT, "slow" },
		{ "{\"type\":\"pong\",\"protocol\":1}\n", -EPROTO, AGENT_FAIL_PROTOCOL,
		  AGENT_E_IO_ERROR, "replied 'pong'" },
		{ "{\"type\":\"ok\",\"len\":3}\nabc", -EPROTO, AGENT_FAIL_PROTOCOL,
		  AGENT_E_IO_ERROR, "payload" },
		{ "not json\n", -EPROTO, AGENT_FAIL_PROTOCOL, AGENT_E_BAD_JSON, "not valid JSON" },
		{ "{\"type\":\"ok\"}", -EPROTO, AGENT_FAIL_PROTOCOL, AGENT_E_TRUNCATED,
		  "inside its answer" },
		{ NULL, -ECONNRESET, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR,
		  "closed the connection before answering" },
	};
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	static struct fake_step steps[N + 2];
	struct agent_client_err e;
	struct agent_client c;
	struct fake f;
	int64_t t0;
	int fd;

	(void)state;
	for (size_t i = 0; i < N; i++)
		steps[i] = (struct fake_step){ .hello = OK_HELLO, .reply = cases[i].reply };
	/* An endless answer, then silence. */
	steps[N] = (struct fake_step){ .hello = OK_HELLO, .gen = gen_endless_header, .hold = true };
	steps[N + 1] = (struct fake_step){ .hello = OK_HELLO, .hold = true };
	fake_start(&f, steps, N + 2);
	c = client_for(&f, 2000);
	for (size_t i = 0; i < N; i++) {
		fd = 7;
		assert_int_equal(agent_client_tcp_connect(&c, 8080, NULL, &fd, &e), cases[i].ret);
		assert_err(&e, cases[i].fail, cases[i].code);
		assert_int_equal(fd, -1);
		if (!strstr(e.msg, cases[i].needle))
			fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].needle);
	}
	assert_string_equal(agent_client_err_name(&(struct agent_client_err){
				    .fail = AGENT_FAIL_AGENT, .code = AGENT_E_REFUSED }),
			    "refused");
	assert_int_equal(agent_client_tcp_connect(&c, 8080, NULL, &fd, &e), -EPROTO);
	assert_err(&e, AGENT_FAIL_PROTOCOL, AGENT_E_HEADER_TOO_LONG);
	c.timeout_ms = 150;
	t0 = mono_ms();
	assert_int_equal(agent_client_tcp_connect(&c, 8080, NULL, &fd, &e), -ETIMEDOUT);
	assert_err(&e, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT);
	assert_true(mono_ms() - t0 >= 140);
	assert_true(mono_ms() - t0 < 3000);
	/* What the agent would refuse never leaves the host (the fake has no
	 * step left: a connection would fail differently). */
	assert_int_equal(agent_client_tcp_connect(&c, 0, NULL, &fd, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_tcp_connect(&c, 65536, NULL, &fd, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_tcp_connect(&c, 80, "10.0.2.2", &fd, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "loopback"));
	assert_int_equal(fd, -1);
	fake_stop(&f);
	assert_int_equal(f.served, N + 2);
	fake_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_path_too_long),
		cmocka_unit_test(test_no_socket),
		cmocka_unit_test(test_handshake_closed),
		cmocka_unit_test(test_handshake_garbage),
		cmocka_unit_test(test_handshake_too_long),
		cmocka_unit_test(test_handshake_timeout),
		cmocka_unit_test(test_connect_leaves_protocol_bytes),
		cmocka_unit_test(test_ping),
		cmocka_unit_test(test_info),
		cmocka_unit_test(test_error_codes),
		cmocka_unit_test(test_error_line_malformed),
		cmocka_unit_test(test_hostile_replies),
		cmocka_unit_test(test_header_too_long),
		cmocka_unit_test(test_closed_before_reply),
		cmocka_unit_test(test_reply_timeout),
		cmocka_unit_test(test_invalid_requests),
		cmocka_unit_test(test_wait_ready_retry),
		cmocka_unit_test(test_wait_ready_socket_late),
		cmocka_unit_test(test_wait_ready_wrong_protocol),
		cmocka_unit_test(test_wait_ready_garbage),
		cmocka_unit_test(test_wait_ready_timeout),
		cmocka_unit_test(test_wait_ready_no_socket_polls_fast),
		cmocka_unit_test(test_wait_ready_hold_keeps_slow_attempt),
		cmocka_unit_test(test_exec_interleaved),
		cmocka_unit_test(test_exec_signal_and_timeout),
		cmocka_unit_test(test_exec_start_error),
		cmocka_unit_test(test_run),
		cmocka_unit_test(test_exec_output_cap),
		cmocka_unit_test(test_exec_flood),
		cmocka_unit_test(test_exec_callback),
		cmocka_unit_test(test_exec_lying_len),
		cmocka_unit_test(test_exec_wait_timeout),
		cmocka_unit_test(test_spawn_stream),
		cmocka_unit_test(test_attach_stream),
		cmocka_unit_test(test_stream_ends_early),
		cmocka_unit_test(test_wait_and_controls),
		cmocka_unit_test(test_list_processes),
		cmocka_unit_test(test_list_processes_caps),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_write_chunks),
		cmocka_unit_test(test_write_refused),
		cmocka_unit_test(test_tar_upload),
		cmocka_unit_test(test_tar_download),
		cmocka_unit_test(test_stat_exists),
		cmocka_unit_test(test_list_dir),
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_configure_trust_ca),
		cmocka_unit_test(test_tcp_connect_bridge),
		cmocka_unit_test(test_tcp_connect_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
