#include "agent_client.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* One read buffer per connection: the framer hands out payload as slices
 * of it, so a 1 MiB chunk never needs 1 MiB of memory. */
#define CONN_RBUF 65536
/* Backoff of wait_ready (docs/agent-protocol.md, section 1). */
#define READY_PAUSE_MIN_MS 10
#define READY_PAUSE_MAX_MS 100
/* A full listen backlog makes a non-blocking AF_UNIX connect fail with
 * EAGAIN (kiln-vmm accepts only once the guest's vsock driver is up);
 * retry at this pace until the deadline. */
#define CONNECT_RETRY_MS 5

/* ---- time ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Absolute deadline `ms` from now; 0 (none) when ms <= 0. */
static int64_t deadline_in(int64_t ms)
{
	return ms > 0 ? now_ms() + ms : 0;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- errors ---- */

static void err_clear(struct agent_client_err *err)
{
	err->fail = AGENT_FAIL_NONE;
	err->code = AGENT_OK;
	err->errnum = 0;
	err->message[0] = '\0';
}

/* Fill err and return -errnum. */
static int __attribute__((format(printf, 5, 6)))
efail(struct agent_client_err *err, enum agent_fail fail, enum agent_code code, int errnum,
      const char *fmt, ...)
{
	va_list ap;

	err->fail = fail;
	err->code = code;
	err->errnum = errnum;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -errnum;
}

#define PROTO_FAIL(err, ...) efail((err), AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR, EPROTO, __VA_ARGS__)

/* Public entry points accept err == NULL. */
#define ERR_INIT(err)                                   \
	struct agent_client_err err##_local;            \
	if (!(err))                                     \
		(err) = &err##_local;                   \
	err_clear(err)

int agent_client_init(struct agent_client *c, const char *uds_path)
{
	size_t n = strlen(uds_path);

	memset(c, 0, sizeof(*c));
	if (n == 0 || n >= sizeof(c->uds_path))
		return -ENAMETOOLONG;
	memcpy(c->uds_path, uds_path, n + 1);
	c->port = AGENT_PORT;
	c->timeout_ms = AGENT_CLIENT_TIMEOUT_DEFAULT_MS;
	return 0;
}

const char *agent_client_err_name(const struct agent_client_err *err)
{
	switch (err->fail) {
	case AGENT_FAIL_NONE:
		return "ok";
	case AGENT_FAIL_AGENT:
	case AGENT_FAIL_REQUEST:
		return agent_code_name(err->code) ? agent_code_name(err->code) : "io_error";
	case AGENT_FAIL_CONNECT:
		return "unreachable";
	case AGENT_FAIL_TIMEOUT:
		return "timeout";
	case AGENT_FAIL_PROTOCOL:
		return "protocol_error";
	default:
		return "host_error";
	}
}

/* ---- socket I/O ---- */

/* Wait for `events` on fd until the absolute deadline (0: none). */
static int wait_fd(int fd, short events, int64_t dl)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int t = -1, r;

		if (dl) {
			int64_t left = dl - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			t = left > INT_MAX ? INT_MAX : (int)left;
		}
		r = poll(&p, 1, t);
		/* POLLHUP/POLLERR count as ready: the next recv/send reports them. */
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * Send iov[0..n) completely by the deadline. *sent (may be NULL) gets the
 * bytes that went out, so a stream can tell a half-sent message.
 */
static int send_iov(int fd, struct iovec *iov, int n, int64_t dl, size_t *sent)
{
	size_t done = 0;

	while (n > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t r;

		if (iov[0].iov_len == 0) {
			iov++;
			n--;
			continue;
		}
		/* MSG_NOSIGNAL: a library must not kill its host with SIGPIPE
		 * when the guest goes away. */
		r = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				int w = wait_fd(fd, POLLOUT, dl);

				if (w < 0) {
					if (sent)
						*sent = done;
					return w;
				}
				continue;
			}
			if (sent)
				*sent = done;
			return -errno;
		}
		done += (size_t)r;
		while (r > 0 && n > 0) {
			size_t k = (size_t)r < iov[0].iov_len ? (size_t)r : iov[0].iov_len;

			iov[0].iov_base = (char *)iov[0].iov_base + k;
			iov[0].iov_len -= k;
			r -= (ssize_t)k;
			if (iov[0].iov_len == 0) {
				iov++;
				n--;
			}
		}
	}
	if (sent)
		*sent = done;
	return 0;
}

/* Printable copy of an untrusted handshake line for a message. */
static void printable(char *out, size_t outlen, const char *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < outlen; i++)
		out[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[o] = '\0';
}

/* Read kiln-vmm's one-line answer to CONNECT without consuming a byte past
 * its '\n': whatever follows belongs to the agent protocol. */
static int read_handshake(int fd, char *line, size_t cap, size_t *len, int64_t dl,
			  const struct agent_client *c, struct agent_client_err *err)
{
	size_t got = 0;

	for (;;) {
		ssize_t n, m;
		char *nl;
		size_t take;
		int w = wait_fd(fd, POLLIN, dl);

		if (w == -ETIMEDOUT)
			return efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
				     "no answer to CONNECT %u from kiln-vmm within %d ms (is the guest still booting?)",
				     c->port, c->timeout_ms);
		if (w < 0)
			return efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -w, "poll: %s",
				     strerror(-w));
		n = recv(fd, line + got, cap - 1 - got, MSG_PEEK);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, errno,
				     "reading kiln-vmm's answer to CONNECT %u: %s", c->port,
				     strerror(errno));
		}
		if (n == 0)
			return efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, ECONNRESET,
				     "kiln-vmm closed the connection without OK: nothing listens on guest vsock port %u (agent not started yet, or the guest is gone)",
				     c->port);
		nl = memchr(line + got, '\n', (size_t)n);
		take = nl ? (size_t)(nl - (line + got)) + 1 : (size_t)n;
		m = recv(fd, line + got, take, 0);
		if (m <= 0)
			continue; /* the peeked bytes are still there: the next round reports */
		got += (size_t)m;
		if (nl && (size_t)m == take)
			break;
		if (got >= cap - 1)
			return efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, EPROTO,
				     "kiln-vmm's answer to CONNECT is longer than %zu bytes; is %s a kiln-vmm --vsock socket?",
				     cap - 1, c->uds_path);
	}
	line[got] = '\0';
	*len = got;
	return 0;
}

static int connect_by(const struct agent_client *c, int64_t dl, int *fd_out,
		      struct agent_client_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[AGENT_CLIENT_HANDSHAKE_MAX], shown[AGENT_CLIENT_HANDSHAKE_MAX];
	char hello[32];
	struct iovec iov;
	size_t len = 0, n;
	int fd, r;

	*fd_out = -1;
	n = strnlen(c->uds_path, sizeof(c->uds_path));
	if (n == 0 || n >= sizeof(sa.sun_path))
		return efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, ENAMETOOLONG,
			     "vsock socket path is empty or too long for a Unix socket");
	memcpy(sa.sun_path, c->uds_path, n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, errno, "socket: %s",
			     strerror(errno));
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && (!dl || now_ms() < dl)) {
			sleep_ms(CONNECT_RETRY_MS);
			continue;
		}
		r = errno == EAGAIN
			    ? efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
				    "connect to '%s': kiln-vmm's backlog stayed full for %d ms",
				    c->uds_path, c->timeout_ms)
			    : efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, errno,
				    "connect to '%s': %s (is kiln-vmm running with --vsock %s?)",
				    c->uds_path, strerror(errno), c->uds_path);
		close(fd);
		return r;
	}
	iov.iov_base = hello;
	iov.iov_len = (size_t)snprintf(hello, sizeof(hello), "CONNECT %u\n", c->port);
	r = send_iov(fd, &iov, 1, dl, NULL);
	if (r < 0) {
		r = r == -ETIMEDOUT ? efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
					    "sending CONNECT to '%s': timed out", c->uds_path)
				    : efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, -r,
					    "sending CONNECT to '%s': %s", c->uds_path, strerror(-r));
		close(fd);
		return r;
	}
	r = read_handshake(fd, line, sizeof(line), &len, dl, c, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	len--; /* the '\n' */
	if (len > 3 && len <= 3 + 10 && memcmp(line, "OK ", 3) == 0 &&
	    strspn(line + 3, "0123456789") == len - 3) {
		*fd_out = fd;
		return 0;
	}
	printable(shown, sizeof(shown), line, len);
	if (strncmp(line, "ERROR ", 6) == 0)
		r = efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, EPROTO,
			  "kiln-vmm refused CONNECT %u: %s", c->port, shown + 6);
	else
		r = efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, EPROTO,
			  "unexpected answer to CONNECT %u: '%s' (expected 'OK <port>'); is %s a kiln-vmm --vsock socket?",
			  c->port, shown, c->uds_path);
	close(fd);
	return r;
}

int agent_client_connect(const struct agent_client *c, int *fd_out, struct agent_client_err *err)
{
	ERR_INIT(err);
	return connect_by(c, deadline_in(c->timeout_ms), fd_out, err);
}

/* ---- one connection: framed replies ---- */

struct conn {
	int fd;
	struct agent_frame fr;
	uint8_t *buf;       /* CONN_RBUF bytes; buf[off .. off + len) not yet framed */
	size_t off, len;
	bool eof;
	bool in_payload;    /* the last header's payload is not consumed yet */
	int64_t deadline;   /* reads: absolute ms, 0: none */
	int64_t window_ms;  /* what the deadline allowed, for messages */
	const char *what;   /* request type, for messages */
};

static int conn_open(const struct agent_client *c, int64_t dl, const char *what, struct conn *k,
		     struct agent_client_err *err)
{
	int r;

	memset(k, 0, sizeof(*k));
	k->fd = -1;
	k->what = what;
	agent_frame_init(&k->fr);
	k->buf = malloc(CONN_RBUF);
	if (!k->buf)
		return efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM, "%s: out of memory", what);
	r = connect_by(c, dl, &k->fd, err);
	if (r < 0) {
		free(k->buf);
		k->buf = NULL;
	}
	return r;
}

static void conn_close(struct conn *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	agent_frame_free(&k->fr);
	free(k->buf);
	k->buf = NULL;
}

/* Reads from now on must complete within ms (<= 0: no limit). */
static void conn_wait(struct conn *k, int64_t ms)
{
	k->deadline = deadline_in(ms);
	k->window_ms = ms;
}

static void conn_wait_until(struct conn *k, int64_t dl)
{
	k->deadline = dl;
	k->window_ms = dl ? dl - now_ms() : 0;
}

static int conn_fill(struct conn *k, struct agent_client_err *err)
{
	for (;;) {
		ssize_t n = recv(k->fd, k->buf, CONN_RBUF, 0);
		int w;

		if (n > 0) {
			k->off = 0;
			k->len = (size_t)n;
			return 0;
		}
		if (n == 0) {
			k->eof = true;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, errno,
				     "%s: reading the agent's reply: %s", k->what, strerror(errno));
		w = wait_fd(k->fd, POLLIN, k->deadline);
		if (w == -ETIMEDOUT)
			return efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
				     "%s: no reply from the agent within %lld ms", k->what,
				     (long long)k->window_ms);
		if (w < 0)
			return efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -w, "poll: %s",
				     strerror(-w));
	}
}

static int frame_fail(struct conn *k, const struct agent_err *fe, struct agent_client_err *err)
{
	/* The framer's codes describe exactly what the agent got wrong. */
	return efail(err, AGENT_FAIL_PROTOCOL, fe->code, EPROTO, "%s: bad reply from the agent: %s",
		     k->what, fe->message);
}

/*
 * Next header. 0: *hdr (caller owns it) and *len; 1: the agent closed the
 * connection at a message boundary; < 0: error. Skips the unread payload
 * of the previous message.
 */
static int conn_next(struct conn *k, json_t **hdr, uint64_t *len, struct agent_client_err *err)
{
	struct agent_event ev;

	*hdr = NULL;
	*len = 0;
	for (;;) {
		size_t used;
		int r;

		if (k->len == 0) {
			if (k->eof) {
				agent_frame_eof(&k->fr, &ev);
				if (ev.kind == AGENT_EV_ERROR)
					return frame_fail(k, ev.err, err);
				return 1;
			}
			r = conn_fill(k, err);
			if (r < 0)
				return r;
			continue;
		}
		used = agent_frame_feed(&k->fr, k->buf + k->off, k->len, &ev);
		k->off += used;
		k->len -= used;
		switch (ev.kind) {
		case AGENT_EV_HEADER:
			*hdr = ev.header;
			*len = ev.len;
			k->in_payload = ev.len > 0;
			return 0;
		case AGENT_EV_PAYLOAD:
			if (ev.last)
				k->in_payload = false;
			break;
		case AGENT_EV_ERROR:
			return frame_fail(k, ev.err, err);
		default:
			break;
		}
	}
}

/*
 * Next slice of the current payload: 0 with *p and *n (valid until the next
 * read on k), 1 when the payload is complete, < 0 on error.
 */
static int conn_payload(struct conn *k, const uint8_t **p, size_t *n, struct agent_client_err *err)
{
	struct agent_event ev;

	*p = NULL;
	*n = 0;
	while (k->in_payload) {
		size_t used;
		int r;

		if (k->len == 0) {
			if (k->eof) {
				agent_frame_eof(&k->fr, &ev);
				return frame_fail(k, ev.err ? ev.err : &k->fr.err, err);
			}
			r = conn_fill(k, err);
			if (r < 0)
				return r;
			continue;
		}
		used = agent_frame_feed(&k->fr, k->buf + k->off, k->len, &ev);
		k->off += used;
		k->len -= used;
		if (ev.kind == AGENT_EV_ERROR)
			return frame_fail(k, ev.err, err);
		if (ev.kind != AGENT_EV_PAYLOAD)
			continue;
		if (ev.last)
			k->in_payload = false;
		*p = ev.data;
		*n = ev.data_len;
		return 0;
	}
	return 1;
}

static int conn_send(struct conn *k, const void *a, size_t an, const void *b, size_t bn, int64_t dl,
		     size_t *sent, struct agent_client_err *err)
{
	struct iovec iov[2] = { { (void *)a, an }, { (void *)b, bn } };
	int r = send_iov(k->fd, iov, 2, dl, sent);

	if (r == -ETIMEDOUT)
		return efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
			     "%s: the agent did not take the request in time (is the guest stalled?)",
			     k->what);
	if (r < 0)
		return efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, -r,
			     "%s: sending to the agent: %s", k->what, strerror(-r));
	return 0;
}

/* ---- requests ---- */

struct req {
	json_t *o;
	const char *type;
	bool nomem;
	const char *bad_key; /* a string field that is not UTF-8 */
};

static void req_init(struct req *r, const char *type)
{
	r->o = json_object();
	r->type = type;
	r->nomem = !r->o;
	r->bad_key = NULL;
	if (r->o && json_object_set_new(r->o, "type", json_string(type)) < 0)
		r->nomem = true;
}

static void req_set(struct req *r, const char *k, json_t *v)
{
	if (!r->o || !v || json_object_set_new(r->o, k, v) < 0)
		r->nomem = true;
}

/* jansson refuses non-UTF-8 strings; say which field instead of "no memory". */
static json_t *req_string(struct req *r, const char *key, const char *s)
{
	if (!agent_utf8_valid(s, strlen(s))) {
		if (!r->bad_key)
			r->bad_key = key;
		return NULL;
	}
	return json_string(s);
}

static void req_str(struct req *r, const char *k, const char *s)
{
	json_t *v = req_string(r, k, s);

	if (v)
		req_set(r, k, v);
}

static void req_int(struct req *r, const char *k, int64_t v)
{
	req_set(r, k, json_integer((json_int_t)v));
}

static void req_true(struct req *r, const char *k)
{
	req_set(r, k, json_true());
}

static void req_user(struct req *r, enum agent_user u)
{
	/* "user" is the default: leave it out, as the agent would read it. */
	if (u == AGENT_USER_ROOT)
		req_str(r, "user", "root");
}

/*
 * Check the request with the agent's own parser, as it will arrive in
 * `ctx` with `len` payload bytes, and serialise it. Frees r->o.
 */
static int req_finish(struct req *r, enum agent_ctx ctx, uint64_t len, struct agent_line *line,
		      struct agent_client_err *err)
{
	struct agent_msg msg;
	struct agent_err pe;
	int ret = 0;

	line->data = NULL;
	line->len = 0;
	if (r->bad_key) {
		ret = efail(err, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD, EINVAL,
			    "%s: '%s' is not valid UTF-8; the protocol carries names and paths as UTF-8 text",
			    r->type, r->bad_key);
		goto out;
	}
	if (len)
		req_int(r, "len", (int64_t)len);
	if (r->nomem) {
		ret = efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM, "%s: out of memory", r->type);
		goto out;
	}
	if (agent_msg_parse(r->o, ctx, &msg, &pe) != AGENT_OK) {
		ret = efail(err, AGENT_FAIL_REQUEST, pe.code, EINVAL, "%s", pe.message);
		goto out;
	}
	agent_msg_free(&msg);
	ret = agent_line_json(line, r->o);
	if (ret == -E2BIG)
		ret = efail(err, AGENT_FAIL_REQUEST, AGENT_E_TOO_LARGE, E2BIG,
			    "%s: the request is longer than %d bytes (argv, env or paths too long)",
			    r->type, AGENT_HEADER_MAX);
	else if (ret < 0)
		ret = efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, -ret, "%s: out of memory", r->type);
out:
	json_decref(r->o);
	r->o = NULL;
	return ret;
}

/* ---- replies ---- */

static bool is_payload_type(const char *t)
{
	return strcmp(t, "stdout") == 0 || strcmp(t, "stderr") == 0 || strcmp(t, "data") == 0;
}

/* An error line becomes the caller's typed error. */
static int agent_error(struct conn *k, json_t *h, struct agent_client_err *err)
{
	json_t *cv = json_object_get(h, "code"), *mv = json_object_get(h, "message");
	const char *code;
	int c;

	if (!json_is_string(cv) || !json_is_string(mv))
		return PROTO_FAIL(err, "%s: the agent's error line lacks a string 'code' or 'message'",
				  k->what);
	code = json_string_value(cv);
	for (c = AGENT_E_BAD_JSON; c < AGENT_CODE_COUNT; c++)
		if (strcmp(agent_code_name((enum agent_code)c), code) == 0)
			break;
	if (c == AGENT_CODE_COUNT)
		return PROTO_FAIL(err, "%s: the agent sent an unknown error code '%.64s': %.400s",
				  k->what, code, json_string_value(mv));
	return efail(err, AGENT_FAIL_AGENT, (enum agent_code)c, EREMOTEIO, "%s",
		     json_string_value(mv));
}

/*
 * The type of a reply. Error lines are turned into err here (-EREMOTEIO),
 * as is a missing type or a payload on a type that carries none.
 */
static int reply_type(struct conn *k, json_t *h, uint64_t len, const char **type,
		      struct agent_client_err *err)
{
	json_t *t = json_object_get(h, "type");

	*type = NULL;
	if (!json_is_string(t))
		return PROTO_FAIL(err, "%s: the agent's reply has no string 'type'", k->what);
	*type = json_string_value(t);
	if (strcmp(*type, "error") == 0)
		return agent_error(k, h, err);
	if (len && !is_payload_type(*type))
		return PROTO_FAIL(err, "%s: the agent's '%.64s' reply carries %llu payload bytes; it has none",
				  k->what, *type, (unsigned long long)len);
	return 0;
}

static int unexpected(struct conn *k, const char *type, const char *want, struct agent_client_err *err)
{
	return PROTO_FAIL(err, "%s: the agent replied '%.64s' where %s belongs", k->what, type, want);
}

static int closed_early(struct conn *k, const char *before, struct agent_client_err *err)
{
	return efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, ECONNRESET,
		     "%s: the agent closed the connection before %s (guest shutting down or gone?)",
		     k->what, before);
}

static int field_missing(struct conn *k, const char *key, const char *what, struct agent_client_err *err)
{
	return PROTO_FAIL(err, "%s: the agent's reply lacks '%s' (%s)", k->what, key, what);
}

static int r_uint(struct conn *k, json_t *h, const char *key, uint64_t max, uint64_t *out,
		  struct agent_client_err *err)
{
	json_t *v = json_object_get(h, key);

	if (!v)
		return field_missing(k, key, "an integer", err);
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return PROTO_FAIL(err, "%s: the agent's '%s' is not an integer from 0 to %llu", k->what,
				  key, (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int r_u32(struct conn *k, json_t *h, const char *key, uint32_t max, uint32_t *out,
		 struct agent_client_err *err)
{
	uint64_t v = 0;
	int r = r_uint(k, h, key, max, &v, err);

	*out = (uint32_t)v;
	return r;
}

static int r_u64(struct conn *k, json_t *h, const char *key, uint64_t *out, struct agent_client_err *err)
{
	return r_uint(k, h, key, INT64_MAX, out, err);
}

static int r_sint(struct conn *k, json_t *h, const char *key, int64_t *out, struct agent_client_err *err)
{
	json_t *v = json_object_get(h, key);

	if (!v)
		return field_missing(k, key, "an integer", err);
	if (!json_is_integer(v))
		return PROTO_FAIL(err, "%s: the agent's '%s' is not an integer", k->what, key);
	*out = json_integer_value(v);
	return 0;
}

static int r_bool(struct conn *k, json_t *h, const char *key, bool *out, struct agent_client_err *err)
{
	json_t *v = json_object_get(h, key);

	if (!v)
		return field_missing(k, key, "true or false", err);
	if (!json_is_boolean(v))
		return PROTO_FAIL(err, "%s: the agent's '%s' is not true or false", k->what, key);
	*out = json_is_true(v);
	return 0;
}

static int r_str(struct conn *k, json_t *h, const char *key, const char **out,
		 struct agent_client_err *err)
{
	json_t *v = json_object_get(h, key);

	if (!v)
		return field_missing(k, key, "a string", err);
	if (!json_is_string(v))
		return PROTO_FAIL(err, "%s: the agent's '%s' is not a string", k->what, key);
	*out = json_string_value(v);
	return 0;
}

/* exit_code (0..255 or null) and signal (1..64 or null). */
static int r_status(struct conn *k, json_t *h, int *code, int *signo, struct agent_client_err *err)
{
	json_t *c = json_object_get(h, "exit_code"), *s = json_object_get(h, "signal");

	if (!c || !s)
		return field_missing(k, c ? "signal" : "exit_code", "an integer or null", err);
	if (!json_is_null(c) &&
	    (!json_is_integer(c) || json_integer_value(c) < 0 || json_integer_value(c) > 255))
		return PROTO_FAIL(err, "%s: the agent's 'exit_code' is not 0..255 or null", k->what);
	if (!json_is_null(s) &&
	    (!json_is_integer(s) || json_integer_value(s) < 1 || json_integer_value(s) > 64))
		return PROTO_FAIL(err, "%s: the agent's 'signal' is not 1..64 or null", k->what);
	*code = json_is_null(c) ? -1 : (int)json_integer_value(c);
	*signo = json_is_null(s) ? 0 : (int)json_integer_value(s);
	return 0;
}

static int r_pid(struct conn *k, json_t *h, int *pid, struct agent_client_err *err)
{
	uint64_t v = 0;
	int r = r_uint(k, h, "pid", INT_MAX, &v, err);

	*pid = (int)v;
	return r;
}

static int parse_exit(struct conn *k, json_t *h, bool exec, struct agent_client_exit *ex,
		      struct agent_client_err *err)
{
	int r;

	memset(ex, 0, sizeof(*ex));
	if (!exec && json_object_get(h, "id") &&
	    (r = r_u32(k, h, "id", UINT32_MAX, &ex->id, err)))
		return r;
	if ((r = r_pid(k, h, &ex->pid, err)) || (r = r_status(k, h, &ex->exit_code, &ex->signal, err)) ||
	    (r = r_bool(k, h, "timed_out", &ex->timed_out, err)) ||
	    (r = r_u64(k, h, "stdout_bytes", &ex->stdout_bytes, err)) ||
	    (r = r_u64(k, h, "stderr_bytes", &ex->stderr_bytes, err)) ||
	    (r = r_u64(k, h, "wall_us", &ex->wall_us, err)) ||
	    (r = r_u64(k, h, "user_us", &ex->user_us, err)) ||
	    (r = r_u64(k, h, "sys_us", &ex->sys_us, err)))
		return r;
	if (exec && ((r = r_bool(k, h, "stdout_truncated", &ex->stdout_truncated, err)) ||
		     (r = r_bool(k, h, "stderr_truncated", &ex->stderr_truncated, err))))
		return r;
	/* An exited process has a status: one of the two is set. */
	if (ex->exit_code < 0 && ex->signal == 0)
		return PROTO_FAIL(err, "%s: the agent's exit line has neither exit_code nor signal",
				  k->what);
	return 0;
}

/*
 * Connect, send one request line (+ payload), read one reply of type
 * `want` and hand it to the caller (*reply, to json_decref). `dl` bounds
 * the connect and the send, `reply_dl` the reply (0: none).
 */
static int call(const struct agent_client *c, struct req *rq, const void *payload, size_t n,
		const char *want, int64_t dl, int64_t reply_dl, json_t **reply,
		struct agent_client_err *err)
{
	struct agent_line line;
	struct conn k;
	const char *type;
	json_t *h = NULL;
	uint64_t len;
	int r;

	*reply = NULL;
	r = req_finish(rq, AGENT_CTX_REQUEST, n, &line, err);
	if (r < 0)
		return r;
	r = conn_open(c, dl, rq->type, &k, err);
	if (r < 0) {
		agent_line_free(&line);
		return r;
	}
	r = conn_send(&k, line.data, line.len, payload, n, dl, NULL, err);
	agent_line_free(&line);
	if (r < 0)
		goto out;
	conn_wait_until(&k, reply_dl);
	r = conn_next(&k, &h, &len, err);
	if (r == 1)
		r = closed_early(&k, "replying", err);
	if (r < 0)
		goto out;
	r = reply_type(&k, h, len, &type, err);
	if (r == 0 && strcmp(type, want) != 0)
		r = unexpected(&k, type, want, err);
	if (r == 0) {
		*reply = h;
		h = NULL;
	}
out:
	json_decref(h);
	conn_close(&k);
	return r;
}

/* An immediate request: everything within the context's timeout. */
static int call_now(const struct agent_client *c, struct req *rq, const char *want, json_t **reply,
		    struct agent_client_err *err)
{
	int64_t dl = deadline_in(c->timeout_ms);

	return call(c, rq, NULL, 0, want, dl, dl, reply, err);
}

/* A request answered by {"type":"ok"} whose fields do not matter. */
static int call_ok(const struct agent_client *c, struct req *rq, struct agent_client_err *err)
{
	json_t *h;
	int r = call_now(c, rq, "ok", &h, err);

	json_decref(h);
	return r;
}

/* A stand-in connection that only names the request, so that the reply
 * parsers can word their messages after the real one is closed. */
static struct conn msg_ctx(const char *what)
{
	struct conn k = { .fd = -1, .what = what };

	return k;
}

/* ---- simple requests ---- */

static int ping_by(const struct agent_client *c, int64_t dl, int *protocol,
		   struct agent_client_err *err)
{
	struct req rq;
	struct conn k = msg_ctx("ping");
	json_t *h;
	int64_t v = 0;
	int r;

	req_init(&rq, "ping");
	r = call(c, &rq, NULL, 0, "pong", dl, dl, &h, err);
	if (r < 0)
		return r;
	r = r_sint(&k, h, "protocol", &v, err);
	json_decref(h);
	if (r == 0 && (v < 0 || v > INT_MAX))
		r = PROTO_FAIL(err, "ping: the agent's protocol number %lld is out of range", (long long)v);
	*protocol = (int)v;
	return r;
}

int agent_client_ping(const struct agent_client *c, int *protocol, struct agent_client_err *err)
{
	int p = 0, r;

	ERR_INIT(err);
	r = ping_by(c, deadline_in(c->timeout_ms), &p, err);
	if (protocol)
		*protocol = p;
	return r;
}

int agent_client_wait_ready(const struct agent_client *c, int timeout_ms,
			    struct agent_client_err *err)
{
	int64_t dl = deadline_in(timeout_ms > 0 ? timeout_ms : 1);
	int64_t pause = READY_PAUSE_MIN_MS;
	struct agent_client_err last, reason;
	int attempts = 0;

	ERR_INIT(err);
	err_clear(&last);
	err_clear(&reason);
	for (;;) {
		int proto = 0, r;
		int64_t left;

		attempts++;
		r = ping_by(c, dl, &proto, &last);
		if (r == 0) {
			if (proto != AGENT_PROTOCOL)
				return efail(err, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR, EPROTONOSUPPORT,
					     "the agent speaks protocol %d, this host speaks %d; boot a kiln-init built from the same tree",
					     proto, AGENT_PROTOCOL);
			return 0;
		}
		/* Not yet: kiln-vmm not listening, agent not listening (no OK,
		 * closed), or the agent full of connections. */
		if (!(last.fail == AGENT_FAIL_CONNECT || last.fail == AGENT_FAIL_TIMEOUT ||
		      (last.fail == AGENT_FAIL_AGENT && last.code == AGENT_E_BUSY))) {
			*err = last;
			return r;
		}
		/* An attempt cut short by the overall deadline says less than
		 * the refusal before it: report that one. */
		if (last.fail != AGENT_FAIL_TIMEOUT || !reason.message[0])
			reason = last;
		left = dl - now_ms();
		if (left <= 0)
			return efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
				     "the agent was not ready within %d ms (%d attempts; last: %s)",
				     timeout_ms, attempts, reason.message);
		sleep_ms(pause < left ? pause : left);
		pause = pause * 2 > READY_PAUSE_MAX_MS ? READY_PAUSE_MAX_MS : pause * 2;
	}
}

/* Copy an untrusted string into a fixed buffer, cut at a character boundary. */
static void copy_str(char *out, size_t cap, const char *s)
{
	agent_utf8_lossy(s, strlen(s), out, cap);
}

int agent_client_info(const struct agent_client *c, struct agent_client_info *info,
		      struct agent_client_err *err)
{
	struct req rq;
	struct conn k = msg_ctx("info");
	const char *ver, *kern, *host;
	json_t *h;
	int64_t proto = 0;
	int r;

	ERR_INIT(err);
	memset(info, 0, sizeof(*info));
	req_init(&rq, "info");
	r = call_now(c, &rq, "info", &h, err);
	if (r < 0)
		return r;
	if ((r = r_sint(&k, h, "protocol", &proto, err)) ||
	    (r = r_str(&k, h, "agent_version", &ver, err)) || (r = r_str(&k, h, "kernel", &kern, err)) ||
	    (r = r_str(&k, h, "hostname", &host, err)) ||
	    (r = r_u32(&k, h, "cpus", UINT32_MAX, &info->cpus, err)) ||
	    (r = r_u64(&k, h, "mem_total", &info->mem_total, err)) ||
	    (r = r_u64(&k, h, "mem_available", &info->mem_available, err)) ||
	    (r = r_u64(&k, h, "uptime_ms", &info->uptime_ms, err)) ||
	    (r = r_sint(&k, h, "time_ns", &info->time_ns, err)) ||
	    (r = r_u32(&k, h, "processes", UINT32_MAX, &info->processes, err)))
		goto out;
	if (proto < 0 || proto > INT_MAX) {
		r = PROTO_FAIL(err, "info: the agent's protocol number is out of range");
		goto out;
	}
	info->protocol = (int)proto;
	copy_str(info->agent_version, sizeof(info->agent_version), ver);
	copy_str(info->kernel, sizeof(info->kernel), kern);
	copy_str(info->hostname, sizeof(info->hostname), host);
out:
	json_decref(h);
	return r;
}

/* ---- processes ---- */

/* The fields exec and spawn share. */
static void req_proc(struct req *rq, const struct agent_client_proc_opts *o)
{
	json_t *argv = json_array();

	if (!argv)
		rq->nomem = true;
	for (size_t i = 0; argv && o->argv && o->argv[i]; i++) {
		json_t *v = req_string(rq, "argv", o->argv[i]);

		if (v && json_array_append_new(argv, v) < 0)
			rq->nomem = true;
	}
	req_set(rq, "argv", argv);
	if (o->shell)
		req_true(rq, "shell");
	if (o->envc) {
		json_t *env = json_object();

		if (!env)
			rq->nomem = true;
		for (size_t i = 0; env && i < o->envc; i++) {
			json_t *v = o->env[i].value ? req_string(rq, "env", o->env[i].value)
						    : json_null();

			if (!agent_utf8_valid(o->env[i].key, strlen(o->env[i].key))) {
				json_decref(v);
				if (!rq->bad_key)
					rq->bad_key = "env";
				continue;
			}
			if (v && json_object_set_new(env, o->env[i].key, v) < 0)
				rq->nomem = true;
		}
		req_set(rq, "env", env);
	}
	if (o->cwd)
		req_str(rq, "cwd", o->cwd);
	req_user(rq, o->user);
	if (o->timeout_ms)
		req_int(rq, "timeout_ms", o->timeout_ms);
}

/* Output of one exec stream: collected up to the cap, or passed on. */
struct sink {
	uint8_t **buf;
	size_t *len;
	size_t alloc;
	uint64_t kept; /* bytes accepted so far (the cap counts these) */
	bool truncated;
};

static int sink_add(struct sink *s, const struct agent_client_proc_opts *o, enum agent_stream st,
		    uint64_t cap, const uint8_t *d, size_t n, struct agent_client_err *err)
{
	size_t take = cap - s->kept < n ? (size_t)(cap - s->kept) : n;

	/* A hostile agent may send more than the cap it was given; the
	 * excess is dropped as the agent itself should have. */
	if (take < n)
		s->truncated = true;
	if (!take)
		return 0;
	s->kept += take;
	if (o->on_output) {
		int r = o->on_output(o->on_output_arg, st, d, take);

		if (r < 0)
			return efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -r,
				     "exec: the output callback failed: %s", strerror(-r));
		return 0;
	}
	if (*s->len + take + 1 > s->alloc) {
		size_t want = s->alloc ? s->alloc : 4096;
		uint8_t *nb;

		while (want < *s->len + take + 1)
			want *= 2;
		if (want > cap + 1)
			want = (size_t)cap + 1;
		nb = realloc(*s->buf, want);
		if (!nb)
			return efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
				     "exec: out of memory for %zu bytes of output", want);
		*s->buf = nb;
		s->alloc = want;
	}
	memcpy(*s->buf + *s->len, d, take);
	*s->len += take;
	(*s->buf)[*s->len] = '\0';
	return 0;
}

void agent_client_exec_result_free(struct agent_client_exec_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
}

int agent_client_exec(const struct agent_client *c, const struct agent_client_proc_opts *o,
		      struct agent_client_exec_result *res, struct agent_client_err *err)
{
	uint64_t start = now_us();
	uint64_t cap = o->discard_output ? 0 : o->output_cap ? o->output_cap : AGENT_OUTPUT_CAP_DEFAULT;
	struct sink so = { .buf = &res->out, .len = &res->out_len };
	struct sink se = { .buf = &res->err, .len = &res->err_len };
	struct agent_line line;
	struct req rq;
	struct conn k;
	int64_t dl;
	int r;

	ERR_INIT(err);
	memset(res, 0, sizeof(*res));
	req_init(&rq, "exec");
	req_proc(&rq, o);
	if (cap != AGENT_OUTPUT_CAP_DEFAULT)
		req_int(&rq, "output_cap", (int64_t)cap);
	r = req_finish(&rq, AGENT_CTX_REQUEST, o->stdin_len, &line, err);
	if (r < 0)
		return r;
	dl = deadline_in(c->timeout_ms);
	r = conn_open(c, dl, "exec", &k, err);
	if (r < 0) {
		agent_line_free(&line);
		return r;
	}
	r = conn_send(&k, line.data, line.len, o->stdin_data, o->stdin_len, dl, NULL, err);
	agent_line_free(&line);
	if (r < 0)
		goto out;
	if (o->wait_ms)
		conn_wait(&k, o->wait_ms);
	else if (o->timeout_ms && c->timeout_ms > 0)
		conn_wait(&k, (int64_t)o->timeout_ms + AGENT_DRAIN_MS + c->timeout_ms);
	else
		conn_wait(&k, 0);

	for (;;) {
		const char *type;
		json_t *h;
		uint64_t len;
		struct sink *s;
		enum agent_stream st;

		r = conn_next(&k, &h, &len, err);
		if (r == 1)
			r = closed_early(&k, "the process's exit line", err);
		if (r < 0)
			goto out;
		r = reply_type(&k, h, len, &type, err);
		if (r == 0 && strcmp(type, "exit") == 0) {
			r = parse_exit(&k, h, true, &res->exit, err);
			json_decref(h);
			break;
		}
		if (r == 0 && strcmp(type, "stdout") != 0 && strcmp(type, "stderr") != 0)
			r = unexpected(&k, type, "stdout, stderr or exit", err);
		st = r == 0 && strcmp(type, "stderr") == 0 ? AGENT_STDERR : AGENT_STDOUT;
		json_decref(h);
		if (r < 0)
			goto out;
		s = st == AGENT_STDERR ? &se : &so;
		for (;;) {
			const uint8_t *p;
			size_t n;

			r = conn_payload(&k, &p, &n, err);
			if (r == 1)
				break;
			if (r < 0)
				goto out;
			r = sink_add(s, o, st, cap, p, n, err);
			if (r < 0)
				goto out;
		}
	}
	if (r == 0) {
		res->exit.stdout_truncated |= so.truncated;
		res->exit.stderr_truncated |= se.truncated;
	}
out:
	res->host_us = now_us() - start;
	/* Closing an unfinished exec is how the agent learns to kill it. */
	conn_close(&k);
	return r;
}

struct agent_client_stream {
	struct conn k;
	int timeout_ms;       /* for sends */
	enum agent_stream cur; /* stream of the payload being delivered */
	uint64_t seq;         /* seq of the next payload byte */
	bool exited;          /* EXIT delivered; only the close is left */
	bool done;
	bool send_broken;     /* a message went out half: nothing more may follow */
	char what[16];
};

/* Connect, send a spawn/attach request, read its first reply into *hdr. */
static int stream_open(const struct agent_client *c, struct req *rq, const char *want,
		       struct agent_client_stream **out, json_t **hdr, struct agent_client_err *err)
{
	struct agent_client_stream *s;
	struct agent_line line;
	const char *type;
	uint64_t len;
	int64_t dl;
	int r;

	*out = NULL;
	*hdr = NULL;
	r = req_finish(rq, AGENT_CTX_REQUEST, 0, &line, err);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s) {
		agent_line_free(&line);
		return efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM, "%s: out of memory", rq->type);
	}
	snprintf(s->what, sizeof(s->what), "%s", rq->type);
	s->timeout_ms = c->timeout_ms;
	dl = deadline_in(c->timeout_ms);
	r = conn_open(c, dl, s->what, &s->k, err);
	if (r < 0) {
		agent_line_free(&line);
		free(s);
		return r;
	}
	r = conn_send(&s->k, line.data, line.len, NULL, 0, dl, NULL, err);
	agent_line_free(&line);
	if (r == 0) {
		conn_wait_until(&s->k, dl);
		r = conn_next(&s->k, hdr, &len, err);
		if (r == 1)
			r = closed_early(&s->k, "replying", err);
	}
	if (r == 0) {
		r = reply_type(&s->k, *hdr, len, &type, err);
		if (r == 0 && strcmp(type, want) != 0)
			r = unexpected(&s->k, type, want, err);
	}
	if (r < 0) {
		json_decref(*hdr);
		*hdr = NULL;
		agent_client_stream_close(s);
		return r;
	}
	*out = s;
	return 0;
}

int agent_client_spawn(const struct agent_client *c, const struct agent_client_proc_opts *o,
		       struct agent_client_stream **stream, struct agent_client_attached *info,
		       struct agent_client_err *err)
{
	struct agent_client_attached local;
	struct agent_client_stream *s;
	struct req rq;
	json_t *h;
	int r;

	ERR_INIT(err);
	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	*stream = NULL;
	req_init(&rq, "spawn");
	req_proc(&rq, o);
	if (o->pty) {
		req_true(&rq, "pty");
		if (o->rows)
			req_int(&rq, "rows", o->rows);
		if (o->cols)
			req_int(&rq, "cols", o->cols);
	}
	if (o->ring_bytes)
		req_int(&rq, "ring_bytes", o->ring_bytes);
	r = stream_open(c, &rq, "spawned", &s, &h, err);
	if (r < 0)
		return r;
	if ((r = r_u32(&s->k, h, "id", UINT32_MAX, &info->id, err)) == 0 && info->id == 0)
		r = PROTO_FAIL(err, "spawn: the agent handed out process id 0");
	if (r == 0)
		r = r_pid(&s->k, h, &info->pid, err);
	json_decref(h);
	if (r < 0) {
		agent_client_stream_close(s);
		return r;
	}
	info->pty = o->pty;
	info->running = true;
	*stream = s;
	return 0;
}

int agent_client_attach(const struct agent_client *c, uint32_t id, enum agent_client_from from,
			uint64_t seq, struct agent_client_stream **stream,
			struct agent_client_attached *info, struct agent_client_err *err)
{
	struct agent_client_attached local;
	struct agent_client_stream *s;
	struct req rq;
	json_t *h;
	int r;

	ERR_INIT(err);
	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	*stream = NULL;
	req_init(&rq, "attach");
	req_int(&rq, "id", id);
	if (from == AGENT_FROM_NOW)
		req_str(&rq, "from", "now");
	else if (from == AGENT_FROM_SEQ)
		req_int(&rq, "from", seq > INT64_MAX ? INT64_MAX : (int64_t)seq);
	r = stream_open(c, &rq, "attached", &s, &h, err);
	if (r < 0)
		return r;
	if (!(r = r_u32(&s->k, h, "id", UINT32_MAX, &info->id, err)) &&
	    !(r = r_pid(&s->k, h, &info->pid, err)) && !(r = r_bool(&s->k, h, "pty", &info->pty, err)) &&
	    !(r = r_bool(&s->k, h, "running", &info->running, err)) &&
	    !(r = r_u64(&s->k, h, "seq", &info->seq, err)) && info->id != id)
		r = PROTO_FAIL(err, "attach: asked for process %u, the agent attached %u", id, info->id);
	json_decref(h);
	if (r < 0) {
		agent_client_stream_close(s);
		return r;
	}
	s->seq = info->seq;
	*stream = s;
	return 0;
}

int agent_client_stream_next(struct agent_client_stream *s, int timeout_ms,
			     struct agent_client_event *ev, struct agent_client_err *err)
{
	struct conn *k = &s->k;

	ERR_INIT(err);
	memset(ev, 0, sizeof(*ev));
	if (s->done)
		return 1;
	conn_wait(k, timeout_ms < 0 ? 0 : timeout_ms > 0 ? timeout_ms : 1);
	for (;;) {
		const char *type;
		json_t *h;
		uint64_t len, seq;
		int r;

		if (k->in_payload) {
			const uint8_t *p;
			size_t n;

			r = conn_payload(k, &p, &n, err);
			if (r < 0)
				return r;
			if (r == 0) {
				ev->kind = s->cur == AGENT_STDERR ? AGENT_EVENT_STDERR : AGENT_EVENT_STDOUT;
				ev->seq = s->seq;
				ev->data = p;
				ev->len = n;
				s->seq += n;
				return 0;
			}
		}
		r = conn_next(k, &h, &len, err);
		if (r == 1) {
			if (s->exited) {
				s->done = true;
				return 1;
			}
			return closed_early(k, "the process's exit line", err);
		}
		if (r < 0)
			return r;
		if (s->exited) {
			json_decref(h);
			return PROTO_FAIL(err, "%s: the agent sent a message after the exit line", s->what);
		}
		r = reply_type(k, h, len, &type, err);
		if (r < 0) {
			json_decref(h);
			return r;
		}
		if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
			s->cur = type[3] == 'e' ? AGENT_STDERR : AGENT_STDOUT;
			if (json_object_get(h, "seq")) {
				r = r_u64(k, h, "seq", &seq, err);
				if (r == 0)
					s->seq = seq;
			}
			json_decref(h);
			if (r < 0)
				return r;
			continue; /* its payload, if any, comes next */
		}
		if (strcmp(type, "gap") == 0) {
			r = r_u64(k, h, "seq", &ev->seq, err);
			if (r == 0)
				r = r_u64(k, h, "bytes", &ev->gap_bytes, err);
			json_decref(h);
			if (r < 0)
				return r;
			ev->kind = AGENT_EVENT_GAP;
			s->seq = ev->seq + ev->gap_bytes;
			return 0;
		}
		if (strcmp(type, "exit") == 0) {
			r = parse_exit(k, h, false, &ev->exit, err);
			json_decref(h);
			if (r < 0)
				return r;
			ev->kind = AGENT_EVENT_EXIT;
			s->exited = true;
			return 0;
		}
		r = unexpected(k, type, "stdout, stderr, gap or exit", err);
		json_decref(h);
		return r;
	}
}

/* One control message on an attached stream. */
static int stream_send(struct agent_client_stream *s, struct req *rq, const void *payload, size_t n,
		       struct agent_client_err *err)
{
	struct agent_line line;
	size_t sent = 0;
	int r;

	if (s->send_broken) {
		json_decref(rq->o);
		return efail(err, AGENT_FAIL_LOCAL, AGENT_E_INVALID_STATE, EPIPE,
			     "%s: an earlier message was only half sent; this stream can no longer send (reading still works)",
			     s->what);
	}
	r = req_finish(rq, AGENT_CTX_ATTACHED, n, &line, err);
	if (r < 0)
		return r;
	r = conn_send(&s->k, line.data, line.len, payload, n, deadline_in(s->timeout_ms), &sent, err);
	if (r < 0 && sent > 0)
		s->send_broken = true;
	agent_line_free(&line);
	return r;
}

int agent_client_stream_stdin(struct agent_client_stream *s, const void *data, size_t n, bool close,
			      struct agent_client_err *err)
{
	size_t off = 0;

	ERR_INIT(err);
	if (n == 0 && !close)
		return 0;
	do {
		size_t chunk = n - off < AGENT_CHUNK_MAX ? n - off : AGENT_CHUNK_MAX;
		struct req rq;
		int r;

		req_init(&rq, "stdin");
		if (close && off + chunk == n)
			req_true(&rq, "close");
		/* No arithmetic on a NULL `data` when only closing. */
		r = stream_send(s, &rq, chunk ? (const uint8_t *)data + off : NULL, chunk, err);
		if (r < 0)
			return r;
		off += chunk;
	} while (off < n);
	return 0;
}

int agent_client_stream_signal(struct agent_client_stream *s, int signo, bool group,
			       struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "signal");
	req_int(&rq, "signal", signo);
	if (group)
		req_true(&rq, "group");
	return stream_send(s, &rq, NULL, 0, err);
}

int agent_client_stream_resize(struct agent_client_stream *s, uint16_t rows, uint16_t cols,
			       struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "resize");
	req_int(&rq, "rows", rows);
	req_int(&rq, "cols", cols);
	return stream_send(s, &rq, NULL, 0, err);
}

int agent_client_stream_fd(const struct agent_client_stream *s)
{
	return s->k.fd;
}

bool agent_client_stream_pending(const struct agent_client_stream *s)
{
	return s->k.len > 0 || s->k.eof;
}

void agent_client_stream_close(struct agent_client_stream *s)
{
	if (!s)
		return;
	conn_close(&s->k);
	free(s);
}

int agent_client_wait(const struct agent_client *c, uint32_t id, uint32_t timeout_ms,
		      struct agent_client_exit *ex, struct agent_client_err *err)
{
	struct conn k = msg_ctx("wait");
	struct req rq;
	int64_t dl, reply_dl = 0;
	json_t *h;
	int r;

	ERR_INIT(err);
	memset(ex, 0, sizeof(*ex));
	req_init(&rq, "wait");
	req_int(&rq, "id", id);
	if (timeout_ms)
		req_int(&rq, "timeout_ms", timeout_ms);
	dl = deadline_in(c->timeout_ms);
	if (timeout_ms && c->timeout_ms > 0)
		reply_dl = deadline_in((int64_t)timeout_ms + c->timeout_ms);
	r = call(c, &rq, NULL, 0, "exit", dl, reply_dl, &h, err);
	if (r < 0)
		return r;
	r = parse_exit(&k, h, false, ex, err);
	json_decref(h);
	return r;
}

int agent_client_signal(const struct agent_client *c, uint32_t id, int signo, bool group,
			struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "signal");
	req_int(&rq, "id", id);
	req_int(&rq, "signal", signo);
	if (group)
		req_true(&rq, "group");
	return call_ok(c, &rq, err);
}

int agent_client_stdin(const struct agent_client *c, uint32_t id, const void *data, size_t n,
		       bool close, struct agent_client_err *err)
{
	size_t off = 0;

	ERR_INIT(err);
	if (n == 0 && !close)
		return 0;
	do {
		size_t chunk = n - off < AGENT_LEN_MAX ? n - off : AGENT_LEN_MAX;
		int64_t dl = deadline_in(c->timeout_ms);
		struct req rq;
		json_t *h;
		int r;

		req_init(&rq, "stdin");
		req_int(&rq, "id", id);
		if (close && off + chunk == n)
			req_true(&rq, "close");
		r = call(c, &rq, chunk ? (const uint8_t *)data + off : NULL, chunk, "ok", dl, dl, &h, err);
		json_decref(h);
		if (r < 0)
			return r;
		off += chunk;
	} while (off < n);
	return 0;
}

int agent_client_resize(const struct agent_client *c, uint32_t id, uint16_t rows, uint16_t cols,
			struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "resize");
	req_int(&rq, "id", id);
	req_int(&rq, "rows", rows);
	req_int(&rq, "cols", cols);
	return call_ok(c, &rq, err);
}

/*
 * Connect and send a request whose reply is a sequence of messages; the
 * caller reads them from *k (conn_next with the context's idle timeout)
 * and closes it.
 */
static int open_listing(const struct agent_client *c, struct req *rq, struct conn *k,
			struct agent_client_err *err)
{
	struct agent_line line;
	int64_t dl;
	int r;

	r = req_finish(rq, AGENT_CTX_REQUEST, 0, &line, err);
	if (r < 0)
		return r;
	dl = deadline_in(c->timeout_ms);
	r = conn_open(c, dl, rq->type, k, err);
	if (r < 0) {
		agent_line_free(&line);
		return r;
	}
	r = conn_send(k, line.data, line.len, NULL, 0, dl, NULL, err);
	agent_line_free(&line);
	if (r < 0)
		conn_close(k);
	return r;
}

/* Next message of a listing: each must arrive within the idle timeout. */
static int next_reply(const struct agent_client *c, struct conn *k, json_t **h, uint64_t *len,
		      const char **type, const char *before, struct agent_client_err *err)
{
	int r;

	conn_wait(k, c->timeout_ms);
	r = conn_next(k, h, len, err);
	if (r == 1)
		return closed_early(k, before, err);
	if (r < 0)
		return r;
	r = reply_type(k, *h, *len, type, err);
	if (r < 0) {
		json_decref(*h);
		*h = NULL;
	}
	return r;
}

static int parse_process(struct conn *k, json_t *h, struct agent_client_process *p,
			 struct agent_client_err *err)
{
	json_t *argv = json_object_get(h, "argv");
	int r;

	memset(p, 0, sizeof(*p));
	if ((r = r_u32(k, h, "id", UINT32_MAX, &p->id, err)) || (r = r_pid(k, h, &p->pid, err)) ||
	    (r = r_bool(k, h, "pty", &p->pty, err)) || (r = r_bool(k, h, "running", &p->running, err)) ||
	    (r = r_status(k, h, &p->exit_code, &p->signal, err)) ||
	    (r = r_bool(k, h, "timed_out", &p->timed_out, err)) ||
	    (r = r_u64(k, h, "seq", &p->seq, err)) ||
	    (r = r_u32(k, h, "attached", UINT32_MAX, &p->attached, err)))
		return r;
	if (!argv) {
		const char *a0;

		if ((r = r_str(k, h, "argv0", &a0, err)) ||
		    (r = r_bool(k, h, "argv_truncated", &p->argv_truncated, err)))
			return r;
		argv = json_object_get(h, "argv0");
		p->argc = 1;
	} else if (!json_is_array(argv)) {
		return PROTO_FAIL(err, "list_processes: the agent's 'argv' is not an array");
	} else {
		p->argc = json_array_size(argv);
	}
	/* Bounded by the 64 KiB header: at most ~22k entries. */
	p->argv = calloc(p->argc + 1, sizeof(*p->argv));
	if (!p->argv)
		return efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM, "list_processes: out of memory");
	if (json_is_string(argv)) {
		p->argv[0] = json_string_value(argv);
		return 0;
	}
	for (size_t i = 0; i < p->argc; i++) {
		json_t *v = json_array_get(argv, i);

		if (!json_is_string(v)) {
			free(p->argv);
			p->argv = NULL;
			return PROTO_FAIL(err, "list_processes: the agent's 'argv[%zu]' is not a string", i);
		}
		p->argv[i] = json_string_value(v);
	}
	return 0;
}

int agent_client_list_processes(const struct agent_client *c,
				int (*fn)(void *arg, const struct agent_client_process *p),
				void *arg, uint64_t *count, struct agent_client_err *err)
{
	struct req rq;
	struct conn k;
	uint64_t seen = 0;
	int r;

	ERR_INIT(err);
	req_init(&rq, "list_processes");
	r = open_listing(c, &rq, &k, err);
	if (r < 0)
		return r;
	for (;;) {
		struct agent_client_process p;
		const char *type;
		uint64_t len, n;
		json_t *h;

		r = next_reply(c, &k, &h, &len, &type, "the end of the list", err);
		if (r < 0)
			break;
		if (strcmp(type, "end") == 0) {
			r = r_u64(&k, h, "count", &n, err);
			if (r == 0 && n != seen)
				r = PROTO_FAIL(err, "list_processes: the agent counted %llu processes but sent %llu",
					       (unsigned long long)n, (unsigned long long)seen);
			json_decref(h);
			break;
		}
		if (strcmp(type, "process") != 0) {
			r = unexpected(&k, type, "process or end", err);
			json_decref(h);
			break;
		}
		r = parse_process(&k, h, &p, err);
		if (r == 0) {
			seen++;
			r = fn(arg, &p);
			if (r < 0)
				efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -r,
				      "list_processes: stopped by the caller: %s", strerror(-r));
			free(p.argv);
		}
		json_decref(h);
		if (r < 0)
			break;
	}
	conn_close(&k);
	if (count)
		*count = seen;
	return r;
}

/* ---- files ---- */

/* Write all of buf to a local fd, waiting when it is non-blocking. */
static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				int r = wait_fd(fd, POLLOUT, 0);

				if (r < 0)
					return r;
				continue;
			}
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fd_sink(void *arg, const void *data, size_t n)
{
	return write_all(*(int *)arg, data, n);
}

/*
 * Stream `data` replies to fn until `end`; *got counts the bytes. `end`
 * is returned for the caller to check (json_decref).
 */
static int download(const struct agent_client *c, struct conn *k, agent_client_data_fn fn,
		    void *arg, uint64_t limit, uint64_t *got, json_t **end, struct agent_client_err *err)
{
	*end = NULL;
	for (;;) {
		const char *type;
		uint64_t len;
		json_t *h;
		int r;

		r = next_reply(c, k, &h, &len, &type, "the end of the transfer", err);
		if (r < 0)
			return r;
		if (strcmp(type, "end") == 0) {
			*end = h;
			return 0;
		}
		if (strcmp(type, "data") != 0) {
			r = unexpected(k, type, "data or end", err);
			json_decref(h);
			return r;
		}
		json_decref(h);
		if (len > limit - *got)
			return PROTO_FAIL(err, "%s: the agent sent more than the %llu bytes asked for",
					  k->what, (unsigned long long)limit);
		for (;;) {
			const uint8_t *p;
			size_t n;

			conn_wait(k, c->timeout_ms);
			r = conn_payload(k, &p, &n, err);
			if (r == 1)
				break;
			if (r < 0)
				return r;
			*got += n;
			r = fn(arg, p, n);
			if (r < 0)
				return efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -r,
					     "%s: storing the data failed: %s", k->what, strerror(-r));
		}
	}
}

int agent_client_read(const struct agent_client *c, const char *path,
		      const struct agent_client_read_opts *o, agent_client_data_fn fn, void *arg,
		      struct agent_client_read_info *info, struct agent_client_err *err)
{
	static const struct agent_client_read_opts defaults;
	struct agent_client_read_info local;
	const char *type;
	struct req rq;
	struct conn k;
	uint64_t len, bytes = 0;
	json_t *h = NULL, *end = NULL;
	int r;

	ERR_INIT(err);
	if (!o)
		o = &defaults;
	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	req_init(&rq, "read");
	req_str(&rq, "path", path);
	if (o->offset)
		req_int(&rq, "offset", o->offset > INT64_MAX ? INT64_MAX : (int64_t)o->offset);
	if (o->has_length)
		req_int(&rq, "length", o->length > INT64_MAX ? INT64_MAX : (int64_t)o->length);
	req_user(&rq, o->user);
	r = open_listing(c, &rq, &k, err);
	if (r < 0)
		return r;
	r = next_reply(c, &k, &h, &len, &type, "replying", err);
	if (r == 0 && strcmp(type, "file") != 0)
		r = unexpected(&k, type, "file", err);
	if (r == 0)
		r = r_u64(&k, h, "size", &info->size, err);
	if (r == 0)
		r = download(c, &k, fn, arg, o->has_length ? o->length : UINT64_MAX, &info->bytes, &end, err);
	if (r == 0)
		r = r_u64(&k, end, "bytes", &bytes, err);
	if (r == 0 && bytes != info->bytes)
		r = PROTO_FAIL(err, "read: the agent reported %llu bytes but sent %llu",
			       (unsigned long long)bytes, (unsigned long long)info->bytes);
	json_decref(h);
	json_decref(end);
	conn_close(&k);
	return r;
}

int agent_client_read_fd(const struct agent_client *c, const char *path,
			 const struct agent_client_read_opts *o, int fd,
			 struct agent_client_read_info *info, struct agent_client_err *err)
{
	return agent_client_read(c, path, o, fd_sink, &fd, info, err);
}

/* Where an upload's bytes come from: returns bytes, 0 at the end, -errno. */
typedef ssize_t (*source_fn)(void *arg, void *buf, size_t n);

struct buf_src {
	const uint8_t *p;
	size_t n, off;
};

static ssize_t buf_source(void *arg, void *buf, size_t n)
{
	struct buf_src *s = arg;
	size_t k = s->n - s->off < n ? s->n - s->off : n;

	memcpy(buf, s->p + s->off, k);
	s->off += k;
	return (ssize_t)k;
}

/* Whatever one read() gives: a slow pipe must not hold back bytes it
 * already produced until a whole chunk is full (the agent's upload idle
 * timeout is per message). */
static ssize_t fd_source(void *arg, void *buf, size_t n)
{
	int fd = *(int *)arg;

	for (;;) {
		ssize_t r = read(fd, buf, n);

		if (r >= 0)
			return r;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		r = wait_fd(fd, POLLIN, 0);
		if (r < 0)
			return r;
	}
}

/*
 * The agent answered in the middle of an upload (it never does unless it
 * failed): read that answer and turn it into the error.
 */
static int upload_answer(const struct agent_client *c, struct conn *k, int fallback,
			 struct agent_client_err *err)
{
	struct agent_client_err saved = *err;
	const char *type;
	uint64_t len;
	json_t *h;
	int r;

	/* A send that timed out means a stalled agent: no answer is coming. */
	if (fallback == -ETIMEDOUT)
		return fallback;
	r = next_reply(c, k, &h, &len, &type, "the end of the upload", err);

	if (r == -EREMOTEIO)
		return r;
	if (r == 0) {
		r = unexpected(k, type, "nothing before 'end'", err);
		json_decref(h);
		return r;
	}
	if (fallback) {
		*err = saved;
		return fallback;
	}
	return r;
}

static bool readable_now(struct conn *k)
{
	struct pollfd p = { .fd = k->fd, .events = POLLIN };

	return k->len > 0 || k->eof || poll(&p, 1, 0) > 0;
}

/* write / tar_upload: the request, data chunks from src, end; *reply gets the ok line. */
static int upload(const struct agent_client *c, struct req *rq, source_fn src, void *arg,
		  json_t **reply, struct agent_client_err *err)
{
	struct agent_line line;
	struct conn k;
	const char *type;
	uint64_t len;
	uint8_t *chunk = NULL;
	int r;

	*reply = NULL;
	r = open_listing(c, rq, &k, err);
	if (r < 0)
		return r;
	chunk = malloc(AGENT_CHUNK_MAX);
	if (!chunk) {
		r = efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM, "%s: out of memory", k.what);
		goto out;
	}
	for (;;) {
		ssize_t n = src(arg, chunk, AGENT_CHUNK_MAX);

		if (n < 0) {
			/* Closing mid-upload stops the agent; what it wrote stays. */
			r = efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, (int)-n,
				  "%s: reading the local data: %s", k.what, strerror((int)-n));
			goto out;
		}
		if (n == 0)
			break;
		/* The agent refuses at open (not_found, ...) and closes: stop
		 * sending into a dead connection and report its reason. */
		if (readable_now(&k)) {
			r = upload_answer(c, &k, 0, err);
			goto out;
		}
		r = agent_line_chunk(&line, AGENT_DATA, -1, (uint64_t)n);
		if (r < 0) {
			r = efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, -r, "%s: out of memory", k.what);
			goto out;
		}
		r = conn_send(&k, line.data, line.len, chunk, (size_t)n, deadline_in(c->timeout_ms), NULL, err);
		agent_line_free(&line);
		if (r < 0) {
			r = upload_answer(c, &k, r, err);
			goto out;
		}
	}
	r = agent_line_end(&line, NULL, 0);
	if (r < 0) {
		r = efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, -r, "%s: out of memory", k.what);
		goto out;
	}
	r = conn_send(&k, line.data, line.len, NULL, 0, deadline_in(c->timeout_ms), NULL, err);
	agent_line_free(&line);
	if (r < 0) {
		r = upload_answer(c, &k, r, err);
		goto out;
	}
	r = next_reply(c, &k, reply, &len, &type, "replying to 'end'", err);
	if (r == 0 && strcmp(type, "ok") != 0) {
		r = unexpected(&k, type, "ok", err);
		json_decref(*reply);
		*reply = NULL;
	}
out:
	free(chunk);
	conn_close(&k);
	return r;
}

static int write_by(const struct agent_client *c, const char *path,
		    const struct agent_client_write_opts *o, source_fn src, void *arg, uint64_t *bytes,
		    struct agent_client_err *err)
{
	static const struct agent_client_write_opts defaults;
	struct conn k = msg_ctx("write");
	struct req rq;
	uint64_t b = 0;
	json_t *h;
	int r;

	if (!o)
		o = &defaults;
	req_init(&rq, "write");
	req_str(&rq, "path", path);
	if (o->no_create)
		req_set(&rq, "create", json_false());
	if (o->exclusive)
		req_true(&rq, "exclusive");
	if (o->append)
		req_true(&rq, "append");
	if (o->has_mode)
		req_int(&rq, "mode", o->mode);
	if (o->parents)
		req_true(&rq, "parents");
	req_user(&rq, o->user);
	r = upload(c, &rq, src, arg, &h, err);
	if (r < 0)
		return r;
	r = r_u64(&k, h, "bytes", &b, err);
	json_decref(h);
	if (bytes)
		*bytes = b;
	return r;
}

int agent_client_write(const struct agent_client *c, const char *path,
		       const struct agent_client_write_opts *o, const void *data, size_t n,
		       uint64_t *bytes, struct agent_client_err *err)
{
	struct buf_src s = { .p = data, .n = n };

	ERR_INIT(err);
	return write_by(c, path, o, buf_source, &s, bytes, err);
}

int agent_client_write_fd(const struct agent_client *c, const char *path,
			  const struct agent_client_write_opts *o, int fd, uint64_t *bytes,
			  struct agent_client_err *err)
{
	ERR_INIT(err);
	return write_by(c, path, o, fd_source, &fd, bytes, err);
}

static const char *const kind_names[] = {
	[AGENT_KIND_FILE] = "file",	[AGENT_KIND_DIR] = "dir",   [AGENT_KIND_SYMLINK] = "symlink",
	[AGENT_KIND_FIFO] = "fifo",	[AGENT_KIND_SOCKET] = "socket", [AGENT_KIND_CHAR] = "char",
	[AGENT_KIND_BLOCK] = "block", [AGENT_KIND_UNKNOWN] = "unknown",
};

const char *agent_client_kind_name(enum agent_client_kind k)
{
	return (unsigned)k <= AGENT_KIND_UNKNOWN ? kind_names[k] : "unknown";
}

static enum agent_client_kind kind_of(const char *s)
{
	for (int i = 0; i < AGENT_KIND_UNKNOWN; i++)
		if (strcmp(kind_names[i], s) == 0)
			return (enum agent_client_kind)i;
	return AGENT_KIND_UNKNOWN;
}

/* A stat or entry line; strings point into h. */
static int parse_stat(struct conn *k, json_t *h, bool entry, struct agent_client_stat *st,
		      struct agent_client_err *err)
{
	const char *kind;
	json_t *lossy = json_object_get(h, "lossy");
	int r;

	memset(st, 0, sizeof(*st));
	if ((r = r_str(k, h, "path", &st->path, err)) || (r = r_str(k, h, "kind", &kind, err)) ||
	    (r = r_u64(k, h, "size", &st->size, err)) || (r = r_u32(k, h, "mode", 07777, &st->mode, err)) ||
	    (r = r_u32(k, h, "uid", UINT32_MAX, &st->uid, err)) ||
	    (r = r_u32(k, h, "gid", UINT32_MAX, &st->gid, err)) ||
	    (r = r_u64(k, h, "nlink", &st->nlink, err)) ||
	    (r = r_sint(k, h, "mtime_ns", &st->mtime_ns, err)))
		return r;
	if (entry && (r = r_u32(k, h, "depth", AGENT_LIST_DEPTH_MAX, &st->depth, err)))
		return r;
	if (json_object_get(h, "target") && (r = r_str(k, h, "target", &st->target, err)))
		return r;
	if (lossy && (r = r_bool(k, h, "lossy", &st->lossy, err)))
		return r;
	st->kind = kind_of(kind);
	return 0;
}

void agent_client_stat_free(struct agent_client_stat *st)
{
	free((char *)st->path);
	free((char *)st->target);
	st->path = st->target = NULL;
}

int agent_client_stat(const struct agent_client *c, const char *path, bool follow,
		      enum agent_user user, struct agent_client_stat *st,
		      struct agent_client_err *err)
{
	struct conn k = msg_ctx("stat");
	struct agent_client_stat tmp;
	struct req rq;
	json_t *h;
	int r;

	ERR_INIT(err);
	memset(st, 0, sizeof(*st));
	req_init(&rq, "stat");
	req_str(&rq, "path", path);
	if (!follow)
		req_set(&rq, "follow", json_false());
	req_user(&rq, user);
	r = call_now(c, &rq, "stat", &h, err);
	if (r < 0)
		return r;
	r = parse_stat(&k, h, false, &tmp, err);
	if (r == 0) {
		*st = tmp;
		st->path = strdup(tmp.path);
		st->target = tmp.target ? strdup(tmp.target) : NULL;
		if (!st->path || (tmp.target && !st->target)) {
			agent_client_stat_free(st);
			r = efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM, "stat: out of memory");
		}
	}
	json_decref(h);
	return r;
}

int agent_client_exists(const struct agent_client *c, const char *path, bool follow,
			enum agent_user user, bool *exists, enum agent_client_kind *kind,
			struct agent_client_err *err)
{
	struct conn k = msg_ctx("exists");
	struct req rq;
	const char *ks = NULL;
	json_t *h;
	bool e = false;
	int r;

	ERR_INIT(err);
	req_init(&rq, "exists");
	req_str(&rq, "path", path);
	if (!follow)
		req_set(&rq, "follow", json_false());
	req_user(&rq, user);
	r = call_now(c, &rq, "exists", &h, err);
	if (r < 0)
		return r;
	r = r_bool(&k, h, "exists", &e, err);
	if (r == 0 && e)
		r = r_str(&k, h, "kind", &ks, err);
	if (exists)
		*exists = r == 0 && e;
	if (kind)
		*kind = ks ? kind_of(ks) : AGENT_KIND_UNKNOWN;
	json_decref(h);
	return r;
}

int agent_client_list_dir(const struct agent_client *c, const char *path,
			  const struct agent_client_list_opts *o,
			  int (*fn)(void *arg, const struct agent_client_stat *e), void *arg,
			  struct agent_client_list_end *end, struct agent_client_err *err)
{
	static const struct agent_client_list_opts defaults;
	struct agent_client_list_end local;
	uint64_t seen = 0;
	struct req rq;
	struct conn k;
	int r;

	ERR_INIT(err);
	if (!o)
		o = &defaults;
	if (!end)
		end = &local;
	memset(end, 0, sizeof(*end));
	req_init(&rq, "list_dir");
	req_str(&rq, "path", path);
	if (o->depth)
		req_int(&rq, "depth", o->depth);
	if (o->limit)
		req_int(&rq, "limit", o->limit);
	req_user(&rq, o->user);
	r = open_listing(c, &rq, &k, err);
	if (r < 0)
		return r;
	for (;;) {
		struct agent_client_stat e;
		const char *type;
		uint64_t len;
		json_t *h;

		r = next_reply(c, &k, &h, &len, &type, "the end of the listing", err);
		if (r < 0)
			break;
		if (strcmp(type, "end") == 0) {
			if ((r = r_u64(&k, h, "count", &end->count, err)) == 0 &&
			    (r = r_bool(&k, h, "truncated", &end->truncated, err)) == 0)
				r = r_u64(&k, h, "skipped", &end->skipped, err);
			if (r == 0 && end->count != seen)
				r = PROTO_FAIL(err, "list_dir: the agent counted %llu entries but sent %llu",
					       (unsigned long long)end->count, (unsigned long long)seen);
			json_decref(h);
			break;
		}
		if (strcmp(type, "entry") != 0)
			r = unexpected(&k, type, "entry or end", err);
		else
			r = parse_stat(&k, h, true, &e, err);
		if (r == 0) {
			seen++;
			r = fn(arg, &e);
			if (r < 0)
				efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -r,
				      "list_dir: stopped by the caller: %s", strerror(-r));
		}
		json_decref(h);
		if (r < 0)
			break;
	}
	conn_close(&k);
	return r;
}

int agent_client_mkdir(const struct agent_client *c, const char *path, bool parents, int mode,
		       enum agent_user user, struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "mkdir");
	req_str(&rq, "path", path);
	if (parents)
		req_true(&rq, "parents");
	if (mode >= 0)
		req_int(&rq, "mode", mode);
	req_user(&rq, user);
	return call_ok(c, &rq, err);
}

int agent_client_remove(const struct agent_client *c, const char *path, bool recursive,
			enum agent_user user, struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "remove");
	req_str(&rq, "path", path);
	if (recursive)
		req_true(&rq, "recursive");
	req_user(&rq, user);
	return call_ok(c, &rq, err);
}

int agent_client_rename(const struct agent_client *c, const char *from, const char *to,
			bool overwrite, enum agent_user user, struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "rename");
	req_str(&rq, "from", from);
	req_str(&rq, "to", to);
	if (overwrite)
		req_true(&rq, "overwrite");
	req_user(&rq, user);
	return call_ok(c, &rq, err);
}

int agent_client_tar_upload(const struct agent_client *c, const char *path, enum agent_user user,
			    int fd, struct agent_client_tar_stats *stats,
			    struct agent_client_err *err)
{
	struct conn k = msg_ctx("tar_upload");
	struct agent_client_tar_stats local;
	struct req rq;
	json_t *h;
	int r;

	ERR_INIT(err);
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	req_init(&rq, "tar_upload");
	req_str(&rq, "path", path);
	req_user(&rq, user);
	r = upload(c, &rq, fd_source, &fd, &h, err);
	if (r < 0)
		return r;
	if (!(r = r_u64(&k, h, "files", &stats->files, err)) &&
	    !(r = r_u64(&k, h, "dirs", &stats->dirs, err)) &&
	    !(r = r_u64(&k, h, "symlinks", &stats->symlinks, err)) &&
	    !(r = r_u64(&k, h, "hardlinks", &stats->hardlinks, err)) &&
	    !(r = r_u64(&k, h, "skipped", &stats->skipped, err)))
		r = r_u64(&k, h, "bytes", &stats->bytes, err);
	json_decref(h);
	return r;
}

int agent_client_tar_download(const struct agent_client *c, const char *path, enum agent_user user,
			      int fd, struct agent_client_tar_stats *stats,
			      struct agent_client_err *err)
{
	struct agent_client_tar_stats local;
	struct req rq;
	struct conn k;
	uint64_t got = 0;
	json_t *end = NULL;
	int r;

	ERR_INIT(err);
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	req_init(&rq, "tar_download");
	req_str(&rq, "path", path);
	req_user(&rq, user);
	r = open_listing(c, &rq, &k, err);
	if (r < 0)
		return r;
	r = download(c, &k, fd_sink, &fd, UINT64_MAX, &got, &end, err);
	if (r == 0 && !(r = r_u64(&k, end, "bytes", &stats->bytes, err)) &&
	    !(r = r_u64(&k, end, "files", &stats->files, err)) &&
	    !(r = r_u64(&k, end, "dirs", &stats->dirs, err)) &&
	    !(r = r_u64(&k, end, "symlinks", &stats->symlinks, err)) &&
	    !(r = r_u64(&k, end, "skipped", &stats->skipped, err)) && stats->bytes != got)
		r = PROTO_FAIL(err, "tar_download: the agent reported %llu bytes but sent %llu",
			       (unsigned long long)stats->bytes, (unsigned long long)got);
	json_decref(end);
	conn_close(&k);
	return r;
}

/* ---- lifecycle ---- */

int agent_client_configure(const struct agent_client *c, const struct agent_client_configure *cfg,
			   struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "configure");
	if (cfg->hostname)
		req_str(&rq, "hostname", cfg->hostname);
	if (cfg->interface)
		req_str(&rq, "interface", cfg->interface);
	if (cfg->address)
		req_str(&rq, "address", cfg->address);
	if (cfg->gateway)
		req_str(&rq, "gateway", cfg->gateway);
	if (cfg->set_dns) {
		json_t *dns = json_array();

		if (!dns)
			rq.nomem = true;
		for (size_t i = 0; dns && i < cfg->dns_n; i++) {
			json_t *v = req_string(&rq, "dns", cfg->dns[i]);

			if (v && json_array_append_new(dns, v) < 0)
				rq.nomem = true;
		}
		req_set(&rq, "dns", dns);
	}
	if (cfg->mtu)
		req_int(&rq, "mtu", cfg->mtu);
	return call_ok(c, &rq, err);
}

int agent_client_sync_clock(const struct agent_client *c, int64_t time_ns, int64_t *delta_ns,
			    struct agent_client_err *err)
{
	struct conn k = msg_ctx("sync_clock");
	struct req rq;
	int64_t d = 0;
	json_t *h;
	int r;

	ERR_INIT(err);
	req_init(&rq, "sync_clock");
	req_int(&rq, "time_ns", time_ns);
	r = call_now(c, &rq, "ok", &h, err);
	if (r < 0)
		return r;
	r = r_sint(&k, h, "delta_ns", &d, err);
	json_decref(h);
	if (delta_ns)
		*delta_ns = d;
	return r;
}

int agent_client_shutdown(const struct agent_client *c, int grace_ms, struct agent_client_err *err)
{
	struct req rq;

	ERR_INIT(err);
	req_init(&rq, "shutdown");
	if (grace_ms >= 0)
		req_int(&rq, "grace_ms", grace_ms);
	return call_ok(c, &rq, err);
}
