#include "api/agent-client/agent_client.h"
#include "api/agent-client/agent_client_impl.h"
#include "lib/base/fd_io.h"
#include "lib/base/json.h"
#include "lib/base/text_clean.h"
#include "lib/base/utf8.h"

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

/* Backoff of wait_ready (docs/agent-protocol.md, section 1). */
#define READY_PAUSE_MIN_MS 10
#define READY_PAUSE_MAX_MS 100
/* While kiln-vmm has not bound its vsock socket yet (ENOENT, or
 * ECONNREFUSED between bind and listen) a try costs one failed connect
 * and nothing in the guest: try at this pace, so a restore, whose agent
 * answers as soon as the socket exists, is not left waiting out a
 * backoff step (up to READY_PAUSE_MAX_MS) started while kiln-vmm loaded. */
#define READY_PAUSE_NO_SOCKET_MS 2
/* A full listen backlog makes a non-blocking AF_UNIX connect fail with
 * EAGAIN (kiln-vmm accepts only once the guest's vsock driver is up);
 * retry at this pace until the deadline. */
#define CONNECT_RETRY_MS 5

/* ---- time ---- */

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- errors ---- */

void agent_client_err_clear(struct agent_client_err *err)
{
	err->fail = AGENT_FAIL_NONE;
	err->code = AGENT_OK;
	err->errnum = 0;
	err->msg[0] = '\0';
}

/* Fill err and return -errnum. */
int agent_client_efail(struct agent_client_err *err, enum agent_fail fail, enum agent_code code,
		       int errnum, const char *fmt, ...)
{
	va_list ap;

	err->fail = fail;
	err->code = code;
	err->errnum = errnum;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -errnum;
}

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
int agent_client_wait_fd(int fd, short events, int64_t dl)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int t = -1, r;

		if (dl) {
			int64_t left = dl - mono_ms();

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
static int deadline_wait(void *arg, int fd, short events)
{
	return agent_client_wait_fd(fd, events, *(const int64_t *)arg);
}

static int send_iov(int fd, struct iovec *iov, int n, int64_t dl, size_t *sent)
{
	/* MSG_NOSIGNAL (fd_io): a library must not kill its host with
	 * SIGPIPE when the guest goes away. */
	return fd_io_sendv_all(fd, iov, n, &(struct fd_io_waiter){ deadline_wait, &dl }, sent);
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
		int w = agent_client_wait_fd(fd, POLLIN, dl);

		if (w == -ETIMEDOUT)
			return agent_client_efail(
				err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
				"no answer to CONNECT %u from kiln-vmm within %d ms (is the guest still booting?)",
				c->port, c->timeout_ms);
		if (w < 0)
			return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -w,
						  "poll: %s", strerror(-w));
		n = recv(fd, line + got, cap - 1 - got, MSG_PEEK);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return agent_client_efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, errno,
						  "reading kiln-vmm's answer to CONNECT %u: %s",
						  c->port, strerror(errno));
		}
		if (n == 0)
			return agent_client_efail(
				err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, ECONNRESET,
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
			return agent_client_efail(
				err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, EPROTO,
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
		return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, ENAMETOOLONG,
					  "vsock socket path is empty or too long for a Unix socket");
	memcpy(sa.sun_path, c->uds_path, n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, errno,
					  "socket: %s", strerror(errno));
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && (!dl || mono_ms() < dl)) {
			sleep_ms(CONNECT_RETRY_MS);
			continue;
		}
		r = errno == EAGAIN
			? agent_client_efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
					     "connect to '%s': kiln-vmm's backlog stayed full for %d ms",
					     c->uds_path, c->timeout_ms)
			: agent_client_efail(
				  err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, errno,
				  "connect to '%s': %s (is kiln-vmm running with --vsock %s?)",
				  c->uds_path, strerror(errno), c->uds_path);
		close(fd);
		return r;
	}
	iov.iov_base = hello;
	iov.iov_len = (size_t)snprintf(hello, sizeof(hello), "CONNECT %u\n", c->port);
	r = send_iov(fd, &iov, 1, dl, NULL);
	if (r < 0) {
		r = r == -ETIMEDOUT
			? agent_client_efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
					     "sending CONNECT to '%s': timed out", c->uds_path)
			: agent_client_efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, -r,
					     "sending CONNECT to '%s': %s", c->uds_path,
					     strerror(-r));
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
	/* Printable: the line is untrusted (kiln-vmm relays what it got). */
	text_clean_ascii(shown, sizeof(shown), line, len);
	if (strncmp(line, "ERROR ", 6) == 0)
		r = agent_client_efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, EPROTO,
				       "kiln-vmm refused CONNECT %u: %s", c->port, shown + 6);
	else
		r = agent_client_efail(
			err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, EPROTO,
			"unexpected answer to CONNECT %u: '%s' (expected 'OK <port>'); is %s a kiln-vmm --vsock socket?",
			c->port, shown, c->uds_path);
	close(fd);
	return r;
}

int agent_client_connect(const struct agent_client *c, int *fd_out, struct agent_client_err *err)
{
	ERR_INIT(err);
	return connect_by(c, mono_deadline_ms(c->timeout_ms), fd_out, err);
}

/* ---- one connection: framed replies ---- */

int agent_client_conn_open(const struct agent_client *c, int64_t dl, const char *what,
			   struct agent_client_conn *k, struct agent_client_err *err)
{
	int r;

	memset(k, 0, sizeof(*k));
	k->fd = -1;
	k->what = what;
	agent_frame_init(&k->fr);
	k->buf = malloc(AGENT_CLIENT_CONN_RBUF);
	if (!k->buf)
		return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
					  "%s: out of memory", what);
	r = connect_by(c, dl, &k->fd, err);
	if (r < 0) {
		free(k->buf);
		k->buf = NULL;
	}
	return r;
}

void agent_client_conn_close(struct agent_client_conn *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	agent_frame_free(&k->fr);
	free(k->buf);
	k->buf = NULL;
}

/* Reads from now on must complete within ms (<= 0: no limit). */
void agent_client_conn_wait(struct agent_client_conn *k, int64_t ms)
{
	k->deadline = mono_deadline_ms(ms);
	k->window_ms = ms;
}

void agent_client_conn_wait_until(struct agent_client_conn *k, int64_t dl)
{
	k->deadline = dl;
	k->window_ms = dl ? dl - mono_ms() : 0;
}

static int conn_fill(struct agent_client_conn *k, struct agent_client_err *err)
{
	for (;;) {
		ssize_t n = recv(k->fd, k->buf, AGENT_CLIENT_CONN_RBUF, 0);
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
			return agent_client_efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, errno,
						  "%s: reading the agent's reply: %s", k->what,
						  strerror(errno));
		w = agent_client_wait_fd(k->fd, POLLIN, k->deadline);
		if (w == -ETIMEDOUT)
			return agent_client_efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT,
						  ETIMEDOUT,
						  "%s: no reply from the agent within %lld ms",
						  k->what, (long long)k->window_ms);
		if (w < 0)
			return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -w,
						  "poll: %s", strerror(-w));
	}
}

static int frame_fail(struct agent_client_conn *k, const struct agent_err *fe,
		      struct agent_client_err *err)
{
	/* The framer's codes describe exactly what the agent got wrong. */
	return agent_client_efail(err, AGENT_FAIL_PROTOCOL, fe->code, EPROTO,
				  "%s: bad reply from the agent: %s", k->what, fe->msg);
}

/* The framer's next event from k's bytes: 0 with *ev, 1 at the end of the
 * connection (*ev what the framer says of it), < 0 when reading failed. */
static int conn_event(struct agent_client_conn *k, struct agent_event *ev,
		      struct agent_client_err *err)
{
	size_t used;
	int r;

	while (k->len == 0) {
		if (k->eof) {
			agent_frame_eof(&k->fr, ev);
			return 1;
		}
		r = conn_fill(k, err);
		if (r < 0)
			return r;
	}
	used = agent_frame_feed(&k->fr, k->buf + k->off, k->len, ev);
	k->off += used;
	k->len -= used;
	return 0;
}

/*
 * Next header. 0: *hdr (caller owns it) and *len; 1: the agent closed the
 * connection at a message boundary; < 0: error. Skips the unread payload
 * of the previous message.
 */
int agent_client_conn_next(struct agent_client_conn *k, json_t **hdr, uint64_t *len,
			   struct agent_client_err *err)
{
	struct agent_event ev;

	*hdr = NULL;
	*len = 0;
	for (;;) {
		int r = conn_event(k, &ev, err);

		if (r < 0)
			return r;
		if (ev.kind == AGENT_EV_ERROR)
			return frame_fail(k, ev.err, err);
		if (r == 1)
			return 1;
		if (ev.kind == AGENT_EV_HEADER) {
			*hdr = ev.header;
			*len = ev.len;
			k->in_payload = ev.len > 0;
			return 0;
		}
		if (ev.kind == AGENT_EV_PAYLOAD && ev.last)
			k->in_payload = false;
	}
}

/*
 * Next slice of the current payload: 0 with *p and *n (valid until the next
 * read on k), 1 when the payload is complete, < 0 on error.
 */
int agent_client_conn_payload(struct agent_client_conn *k, const uint8_t **p, size_t *n,
			      struct agent_client_err *err)
{
	struct agent_event ev;

	*p = NULL;
	*n = 0;
	while (k->in_payload) {
		int r = conn_event(k, &ev, err);

		if (r < 0)
			return r;
		if (r == 1) /* closed inside a payload */
			return frame_fail(k, ev.err ? ev.err : &k->fr.err, err);
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

int agent_client_conn_send(struct agent_client_conn *k, const void *a, size_t an, const void *b,
			   size_t bn, int64_t dl, size_t *sent, struct agent_client_err *err)
{
	struct iovec iov[2] = { { (void *)a, an }, { (void *)b, bn } };
	int r = send_iov(k->fd, iov, 2, dl, sent);

	if (r == -ETIMEDOUT)
		return agent_client_efail(
			err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
			"%s: the agent did not take the request in time (is the guest stalled?)",
			k->what);
	if (r < 0)
		return agent_client_efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, -r,
					  "%s: sending to the agent: %s", k->what, strerror(-r));
	return 0;
}

/* ---- requests ---- */

void agent_client_req_init(struct agent_client_req *r, const char *type)
{
	r->o = json_object();
	r->type = type;
	r->nomem = !r->o;
	r->bad_key = NULL;
	if (r->o && json_object_set_new(r->o, "type", json_string(type)) < 0)
		r->nomem = true;
}

void agent_client_req_set(struct agent_client_req *r, const char *k, json_t *v)
{
	if (!r->o || !v || json_object_set_new(r->o, k, v) < 0)
		r->nomem = true;
}

/* jansson refuses non-UTF-8 strings; say which field instead of "no memory". */
json_t *agent_client_req_string(struct agent_client_req *r, const char *key, const char *s)
{
	if (!utf8_valid((const uint8_t *)s, strlen(s))) {
		if (!r->bad_key)
			r->bad_key = key;
		return NULL;
	}
	return json_string(s);
}

void agent_client_req_str(struct agent_client_req *r, const char *k, const char *s)
{
	json_t *v = agent_client_req_string(r, k, s);

	if (v)
		agent_client_req_set(r, k, v);
}

void agent_client_req_int(struct agent_client_req *r, const char *k, int64_t v)
{
	agent_client_req_set(r, k, json_integer((json_int_t)v));
}

void agent_client_req_true(struct agent_client_req *r, const char *k)
{
	agent_client_req_set(r, k, json_true());
}

void agent_client_req_user(struct agent_client_req *r, enum agent_user u)
{
	/* "user" is the default: leave it out, as the agent would read it. */
	if (u == AGENT_USER_ROOT)
		agent_client_req_str(r, "user", "root");
}

/*
 * Check the request with the agent's own parser, as it will arrive in
 * `ctx` with `len` payload bytes, and serialise it. Frees r->o.
 */
int agent_client_req_finish(struct agent_client_req *r, enum agent_ctx ctx, uint64_t len,
			    struct agent_line *line, struct agent_client_err *err)
{
	struct agent_msg msg;
	struct agent_err pe;
	int ret = 0;

	line->data = NULL;
	line->len = 0;
	if (r->bad_key) {
		ret = agent_client_efail(
			err, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD, EINVAL,
			"%s: '%s' is not valid UTF-8; the protocol carries names and paths as UTF-8 text",
			r->type, r->bad_key);
		goto out;
	}
	if (len)
		agent_client_req_int(r, "len", (int64_t)len);
	if (r->nomem) {
		ret = agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
					 "%s: out of memory", r->type);
		goto out;
	}
	if (agent_msg_parse(r->o, ctx, &msg, &pe) != AGENT_OK) {
		ret = agent_client_efail(err, AGENT_FAIL_REQUEST, pe.code, EINVAL, "%s", pe.msg);
		goto out;
	}
	agent_msg_free(&msg);
	ret = agent_line_json(line, r->o);
	if (ret == -E2BIG)
		ret = agent_client_efail(
			err, AGENT_FAIL_REQUEST, AGENT_E_TOO_LARGE, E2BIG,
			"%s: the request is longer than %d bytes (argv, env or paths too long)",
			r->type, AGENT_HEADER_MAX);
	else if (ret < 0)
		ret = agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, -ret,
					 "%s: out of memory", r->type);
out:
	json_decref(r->o);
	r->o = NULL;
	return ret;
}

/* ---- replies ---- */

static bool is_payload_type(const char *t)
{
	return strcmp(t, "stdout") == 0 || strcmp(t, "stderr") == 0 || strcmp(t, "data") == 0 ||
		strcmp(t, "result") == 0;
}

/* An error line becomes the caller's typed error. */
static int agent_error(struct agent_client_conn *k, json_t *h, struct agent_client_err *err)
{
	json_t *cv = json_object_get(h, "code"), *mv = json_object_get(h, "message");
	const char *code;
	int c;

	if (!json_is_string(cv) || !json_is_string(mv))
		return AGENT_CLIENT_PROTO_FAIL(
			err, "%s: the agent's error line lacks a string 'code' or 'message'",
			k->what);
	code = json_string_value(cv);
	for (c = AGENT_E_BAD_JSON; c < AGENT_CODE_COUNT; c++)
		if (strcmp(agent_code_name((enum agent_code)c), code) == 0)
			break;
	if (c == AGENT_CODE_COUNT)
		return AGENT_CLIENT_PROTO_FAIL(
			err, "%s: the agent sent an unknown error code '%.64s': %.400s", k->what,
			code, json_string_value(mv));
	/* an empty message still gives the caller one that says something */
	if (!json_string_value(mv)[0])
		return agent_client_efail(err, AGENT_FAIL_AGENT, (enum agent_code)c, EREMOTEIO,
					  "%s: the agent refused (%s) without a message", k->what,
					  code);
	return agent_client_efail(err, AGENT_FAIL_AGENT, (enum agent_code)c, EREMOTEIO, "%s",
				  json_string_value(mv));
}

/*
 * The type of a reply. Error lines are turned into err here (-EREMOTEIO),
 * as is a missing type or a payload on a type that carries none.
 */
int agent_client_reply_type(struct agent_client_conn *k, json_t *h, uint64_t len, const char **type,
			    struct agent_client_err *err)
{
	json_t *t = json_object_get(h, "type");

	*type = NULL;
	if (!json_is_string(t))
		return AGENT_CLIENT_PROTO_FAIL(err, "%s: the agent's reply has no string 'type'",
					       k->what);
	*type = json_string_value(t);
	if (strcmp(*type, "error") == 0)
		return agent_error(k, h, err);
	if (len && !is_payload_type(*type))
		return AGENT_CLIENT_PROTO_FAIL(
			err,
			"%s: the agent's '%.64s' reply carries %llu payload bytes; it has none",
			k->what, *type, (unsigned long long)len);
	return 0;
}

int agent_client_unexpected(struct agent_client_conn *k, const char *type, const char *want,
			    struct agent_client_err *err)
{
	return AGENT_CLIENT_PROTO_FAIL(err, "%s: the agent replied '%.64s' where %s belongs",
				       k->what, type, want);
}

int agent_client_closed_early(struct agent_client_conn *k, const char *before,
			      struct agent_client_err *err)
{
	return agent_client_efail(
		err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, ECONNRESET,
		"%s: the agent closed the connection before %s (guest shutting down or gone?)",
		k->what, before);
}

static int field_missing(struct agent_client_conn *k, const char *key, const char *what,
			 struct agent_client_err *err)
{
	return AGENT_CLIENT_PROTO_FAIL(err, "%s: the agent's reply lacks '%s' (%s)", k->what, key,
				       what);
}

/* A reply field lib/base/json refused: the agent broke the protocol. */
static int field_refused(struct agent_client_conn *k, const struct json_field_fail *f,
			 const char *what, struct agent_client_err *err)
{
	if (f->fault == JSON_FIELD_MISSING)
		return field_missing(k, f->key, what, err);
	return AGENT_CLIENT_PROTO_FAIL(err, "%s: the agent's '%s' is not %s", k->what, f->key,
				       what);
}

int agent_client_r_uint(struct agent_client_conn *k, json_t *h, const char *key, uint64_t max,
			uint64_t *out, struct agent_client_err *err)
{
	struct json_field_fail f;
	char what[48];

	if (!json_field_uint(h, key, true, 0, max, 0, out, &f))
		return 0;
	if (f.fault == JSON_FIELD_MISSING)
		return field_missing(k, key, "an integer", err);
	snprintf(what, sizeof(what), "an integer from 0 to %llu", (unsigned long long)max);
	return field_refused(k, &f, what, err);
}

int agent_client_r_u32(struct agent_client_conn *k, json_t *h, const char *key, uint32_t max,
		       uint32_t *out, struct agent_client_err *err)
{
	uint64_t v = 0;
	int r = agent_client_r_uint(k, h, key, max, &v, err);

	*out = (uint32_t)v;
	return r;
}

int agent_client_r_u64(struct agent_client_conn *k, json_t *h, const char *key, uint64_t *out,
		       struct agent_client_err *err)
{
	return agent_client_r_uint(k, h, key, INT64_MAX, out, err);
}

int agent_client_r_sint(struct agent_client_conn *k, json_t *h, const char *key, int64_t *out,
			struct agent_client_err *err)
{
	json_t *v = json_object_get(h, key);

	if (!v)
		return field_missing(k, key, "an integer", err);
	if (!json_is_integer(v))
		return AGENT_CLIENT_PROTO_FAIL(err, "%s: the agent's '%s' is not an integer",
					       k->what, key);
	*out = json_integer_value(v);
	return 0;
}

int agent_client_r_bool(struct agent_client_conn *k, json_t *h, const char *key, bool *out,
			struct agent_client_err *err)
{
	struct json_field_fail f;

	return json_field_bool(h, key, true, false, out, &f)
		? field_refused(k, &f, "true or false", err)
		: 0;
}

int agent_client_r_str(struct agent_client_conn *k, json_t *h, const char *key, const char **out,
		       struct agent_client_err *err)
{
	struct json_field_fail f;

	return json_field_string(h, key, true, SIZE_MAX, out, &f)
		? field_refused(k, &f, "a string", err)
		: 0;
}

/* exit_code (0..255 or null) and signal (1..64 or null). */
int agent_client_r_status(struct agent_client_conn *k, json_t *h, int *code, int *signo,
			  struct agent_client_err *err)
{
	json_t *c = json_object_get(h, "exit_code"), *s = json_object_get(h, "signal");

	if (!c || !s)
		return field_missing(k, c ? "signal" : "exit_code", "an integer or null", err);
	if (!json_is_null(c) &&
	    (!json_is_integer(c) || json_integer_value(c) < 0 || json_integer_value(c) > 255))
		return AGENT_CLIENT_PROTO_FAIL(err,
					       "%s: the agent's 'exit_code' is not 0..255 or null",
					       k->what);
	if (!json_is_null(s) &&
	    (!json_is_integer(s) || json_integer_value(s) < 1 || json_integer_value(s) > 64))
		return AGENT_CLIENT_PROTO_FAIL(err, "%s: the agent's 'signal' is not 1..64 or null",
					       k->what);
	*code = json_is_null(c) ? -1 : (int)json_integer_value(c);
	*signo = json_is_null(s) ? 0 : (int)json_integer_value(s);
	return 0;
}

int agent_client_r_pid(struct agent_client_conn *k, json_t *h, int *pid,
		       struct agent_client_err *err)
{
	uint64_t v = 0;
	int r = agent_client_r_uint(k, h, "pid", INT_MAX, &v, err);

	*pid = (int)v;
	return r;
}

int agent_client_parse_exit(struct agent_client_conn *k, json_t *h, bool exec,
			    struct agent_client_exit *ex, struct agent_client_err *err)
{
	int r;

	memset(ex, 0, sizeof(*ex));
	if (!exec && json_object_get(h, "id") &&
	    (r = agent_client_r_u32(k, h, "id", UINT32_MAX, &ex->id, err)))
		return r;
	if ((r = agent_client_r_pid(k, h, &ex->pid, err)) ||
	    (r = agent_client_r_status(k, h, &ex->exit_code, &ex->signal, err)) ||
	    (r = agent_client_r_bool(k, h, "timed_out", &ex->timed_out, err)) ||
	    (r = agent_client_r_u64(k, h, "stdout_bytes", &ex->stdout_bytes, err)) ||
	    (r = agent_client_r_u64(k, h, "stderr_bytes", &ex->stderr_bytes, err)) ||
	    (r = agent_client_r_u64(k, h, "wall_us", &ex->wall_us, err)) ||
	    (r = agent_client_r_u64(k, h, "user_us", &ex->user_us, err)) ||
	    (r = agent_client_r_u64(k, h, "sys_us", &ex->sys_us, err)))
		return r;
	if (exec &&
	    ((r = agent_client_r_bool(k, h, "stdout_truncated", &ex->stdout_truncated, err)) ||
	     (r = agent_client_r_bool(k, h, "stderr_truncated", &ex->stderr_truncated, err))))
		return r;
	/* An exited process has a status: one of the two is set. */
	if (ex->exit_code < 0 && ex->signal == 0)
		return AGENT_CLIENT_PROTO_FAIL(
			err, "%s: the agent's exit line has neither exit_code nor signal", k->what);
	return 0;
}

int agent_client_conn_call(const struct agent_client *c, struct agent_client_req *rq,
			   const void *payload, size_t n, const char *want, int64_t dl,
			   int64_t reply_dl, struct agent_client_conn *k, json_t **reply,
			   struct agent_client_err *err)
{
	struct agent_line line;
	const char *type;
	json_t *h = NULL;
	uint64_t len;
	int r;

	*reply = NULL;
	*k = agent_client_msg_ctx(rq->type);
	r = agent_client_req_finish(rq, AGENT_CTX_REQUEST, n, &line, err);
	if (r < 0)
		return r;
	r = agent_client_conn_open(c, dl, rq->type, k, err);
	if (r == 0)
		r = agent_client_conn_send(k, line.data, line.len, payload, n, dl, NULL, err);
	agent_line_free(&line);
	if (r < 0)
		return r;
	agent_client_conn_wait_until(k, reply_dl);
	r = agent_client_conn_next(k, &h, &len, err);
	if (r == 1)
		r = agent_client_closed_early(k, "replying", err);
	if (r == 0)
		r = agent_client_reply_type(k, h, len, &type, err);
	if (r == 0 && strcmp(type, want) != 0)
		r = agent_client_unexpected(k, type, want, err);
	if (r < 0) {
		json_decref(h);
		return r;
	}
	*reply = h;
	return 0;
}

int agent_client_call(const struct agent_client *c, struct agent_client_req *rq,
		      const void *payload, size_t n, const char *want, int64_t dl, int64_t reply_dl,
		      json_t **reply, struct agent_client_err *err)
{
	struct agent_client_conn k;
	int r = agent_client_conn_call(c, rq, payload, n, want, dl, reply_dl, &k, reply, err);

	agent_client_conn_close(&k);
	return r;
}

/* An immediate request: everything within the context's timeout. */
int agent_client_call_now(const struct agent_client *c, struct agent_client_req *rq,
			  const char *want, json_t **reply, struct agent_client_err *err)
{
	int64_t dl = mono_deadline_ms(c->timeout_ms);

	return agent_client_call(c, rq, NULL, 0, want, dl, dl, reply, err);
}

/* A request answered by {"type":"ok"} whose fields do not matter. */
int agent_client_call_ok(const struct agent_client *c, struct agent_client_req *rq,
			 struct agent_client_err *err)
{
	json_t *h;
	int r = agent_client_call_now(c, rq, "ok", &h, err);

	json_decref(h);
	return r;
}

/* A stand-in connection that only names the request, so that the reply
 * parsers can word their messages after the real one is closed. */
struct agent_client_conn agent_client_msg_ctx(const char *what)
{
	struct agent_client_conn k = { .fd = -1, .what = what };

	return k;
}

/* ---- simple requests ---- */

static int ping_by(const struct agent_client *c, int64_t dl, int *protocol,
		   struct agent_client_err *err)
{
	struct agent_client_req rq;
	struct agent_client_conn k = agent_client_msg_ctx("ping");
	json_t *h;
	int64_t v = 0;
	int r;

	agent_client_req_init(&rq, "ping");
	r = agent_client_call(c, &rq, NULL, 0, "pong", dl, dl, &h, err);
	if (r < 0)
		return r;
	r = agent_client_r_sint(&k, h, "protocol", &v, err);
	json_decref(h);
	if (r == 0 && (v < 0 || v > INT_MAX))
		r = AGENT_CLIENT_PROTO_FAIL(err,
					    "ping: the agent's protocol number %lld is out of range",
					    (long long)v);
	*protocol = (int)v;
	return r;
}

int agent_client_ping(const struct agent_client *c, int *protocol, struct agent_client_err *err)
{
	int p = 0, r;

	ERR_INIT(err);
	r = ping_by(c, mono_deadline_ms(c->timeout_ms), &p, err);
	if (protocol)
		*protocol = p;
	return r;
}

int agent_client_wait_ready(const struct agent_client *c, int timeout_ms,
			    struct agent_client_err *err)
{
	return agent_client_wait_ready_hold(c, timeout_ms, 0, err);
}

int agent_client_wait_ready_hold(const struct agent_client *c, int timeout_ms, int hold_ms,
				 struct agent_client_err *err)
{
	int64_t dl = mono_deadline_ms(timeout_ms > 0 ? timeout_ms : 1);
	int64_t pause = READY_PAUSE_MIN_MS;
	struct agent_client_err last, reason;
	int attempts = 0;

	ERR_INIT(err);
	agent_client_err_clear(&last);
	agent_client_err_clear(&reason);
	for (;;) {
		int proto = 0, r;
		int64_t left;

		attempts++;
		/* An attempt kiln-vmm holds (in its backlog, or waiting for the
		 * guest's answer) is worth more than a new one behind it. */
		r = ping_by(c, hold_ms > 0 && mono_ms() + hold_ms > dl ? mono_ms() + hold_ms : dl,
			    &proto, &last);
		if (r == 0) {
			if (proto != AGENT_PROTOCOL)
				return agent_client_efail(
					err, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR, EPROTONOSUPPORT,
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
		if (last.fail != AGENT_FAIL_TIMEOUT || !reason.msg[0])
			reason = last;
		left = dl - mono_ms();
		if (left <= 0)
			return agent_client_efail(
				err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT, ETIMEDOUT,
				"the agent was not ready within %d ms (%d attempts; last: %s)",
				timeout_ms, attempts, reason.msg);
		if (last.fail == AGENT_FAIL_CONNECT &&
		    (last.errnum == ENOENT || last.errnum == ECONNREFUSED)) {
			sleep_ms(READY_PAUSE_NO_SOCKET_MS < left ? READY_PAUSE_NO_SOCKET_MS : left);
			continue;
		}
		sleep_ms(pause < left ? pause : left);
		pause = pause * 2 > READY_PAUSE_MAX_MS ? READY_PAUSE_MAX_MS : pause * 2;
	}
}

/* Copy an untrusted string into a fixed buffer, cut at a character boundary. */
static void copy_str(char *out, size_t cap, const char *s)
{
	utf8_lossy(out, cap, (const uint8_t *)s, strlen(s), 0, NULL);
}

int agent_client_info(const struct agent_client *c, struct agent_client_info *info,
		      struct agent_client_err *err)
{
	struct agent_client_req rq;
	struct agent_client_conn k = agent_client_msg_ctx("info");
	const char *ver, *kern, *host;
	json_t *h;
	int64_t proto = 0;
	int r;

	ERR_INIT(err);
	memset(info, 0, sizeof(*info));
	agent_client_req_init(&rq, "info");
	r = agent_client_call_now(c, &rq, "info", &h, err);
	if (r < 0)
		return r;
	if ((r = agent_client_r_sint(&k, h, "protocol", &proto, err)) ||
	    (r = agent_client_r_str(&k, h, "agent_version", &ver, err)) ||
	    (r = agent_client_r_str(&k, h, "kernel", &kern, err)) ||
	    (r = agent_client_r_str(&k, h, "hostname", &host, err)) ||
	    (r = agent_client_r_u32(&k, h, "cpus", UINT32_MAX, &info->cpus, err)) ||
	    (r = agent_client_r_u64(&k, h, "mem_total", &info->mem_total, err)) ||
	    (r = agent_client_r_u64(&k, h, "mem_available", &info->mem_available, err)) ||
	    (r = agent_client_r_u64(&k, h, "uptime_ms", &info->uptime_ms, err)) ||
	    (r = agent_client_r_sint(&k, h, "time_ns", &info->time_ns, err)) ||
	    (r = agent_client_r_u32(&k, h, "processes", UINT32_MAX, &info->processes, err)))
		goto out;
	if (proto < 0 || proto > INT_MAX) {
		r = AGENT_CLIENT_PROTO_FAIL(err,
					    "info: the agent's protocol number is out of range");
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

/* ---- listings ---- */

/*
 * Connect and send a request whose reply is a sequence of messages; the
 * caller reads them from *k (conn_next with the context's idle timeout)
 * and closes it.
 */
int agent_client_open_listing(const struct agent_client *c, struct agent_client_req *rq,
			      struct agent_client_conn *k, struct agent_client_err *err)
{
	struct agent_line line;
	int64_t dl;
	int r;

	r = agent_client_req_finish(rq, AGENT_CTX_REQUEST, 0, &line, err);
	if (r < 0)
		return r;
	dl = mono_deadline_ms(c->timeout_ms);
	r = agent_client_conn_open(c, dl, rq->type, k, err);
	if (r < 0) {
		agent_line_free(&line);
		return r;
	}
	r = agent_client_conn_send(k, line.data, line.len, NULL, 0, dl, NULL, err);
	agent_line_free(&line);
	if (r < 0)
		agent_client_conn_close(k);
	return r;
}

/* Next message of a listing: each must arrive within the idle timeout. */
int agent_client_next_reply(const struct agent_client *c, struct agent_client_conn *k, json_t **h,
			    uint64_t *len, const char **type, const char *before,
			    struct agent_client_err *err)
{
	int r;

	agent_client_conn_wait(k, c->timeout_ms);
	r = agent_client_conn_next(k, h, len, err);
	if (r == 1)
		return agent_client_closed_early(k, before, err);
	if (r < 0)
		return r;
	r = agent_client_reply_type(k, *h, *len, type, err);
	if (r < 0) {
		json_decref(*h);
		*h = NULL;
	}
	return r;
}

/* ---- lifecycle ---- */

int agent_client_configure(const struct agent_client *c, const struct agent_client_configure *cfg,
			   struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "configure");
	if (cfg->hostname)
		agent_client_req_str(&rq, "hostname", cfg->hostname);
	if (cfg->interface)
		agent_client_req_str(&rq, "interface", cfg->interface);
	if (cfg->address)
		agent_client_req_str(&rq, "address", cfg->address);
	if (cfg->gateway)
		agent_client_req_str(&rq, "gateway", cfg->gateway);
	if (cfg->set_dns) {
		json_t *dns = json_array();

		if (!dns)
			rq.nomem = true;
		for (size_t i = 0; dns && i < cfg->dns_n; i++) {
			json_t *v = agent_client_req_string(&rq, "dns", cfg->dns[i]);

			if (v && json_array_append_new(dns, v) < 0)
				rq.nomem = true;
		}
		agent_client_req_set(&rq, "dns", dns);
	}
	if (cfg->mtu)
		agent_client_req_int(&rq, "mtu", cfg->mtu);
	if (cfg->trust_ca)
		agent_client_req_str(&rq, "trust_ca", cfg->trust_ca);
	return agent_client_call_ok(c, &rq, err);
}

int agent_client_sync_clock(const struct agent_client *c, int64_t time_ns, int64_t *delta_ns,
			    struct agent_client_err *err)
{
	return agent_client_sync_clock_seed(c, time_ns, NULL, 0, delta_ns, err);
}

int agent_client_sync_clock_seed(const struct agent_client *c, int64_t time_ns, const uint8_t *seed,
				 size_t n, int64_t *delta_ns, struct agent_client_err *err)
{
	struct agent_client_conn k = agent_client_msg_ctx("sync_clock");
	char hex[2 * AGENT_ENTROPY_MAX + 1];
	struct agent_client_req rq;
	int64_t d = 0;
	json_t *h;
	int r;

	ERR_INIT(err);
	if (seed && (n == 0 || n > AGENT_ENTROPY_MAX))
		return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BAD_FIELD, EINVAL,
					  "sync_clock: entropy is 1..%d bytes, not %zu",
					  AGENT_ENTROPY_MAX, n);
	agent_client_req_init(&rq, "sync_clock");
	agent_client_req_int(&rq, "time_ns", time_ns);
	if (seed) {
		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", seed[i]);
		agent_client_req_str(&rq, "entropy", hex);
		explicit_bzero(hex, sizeof(hex));
	}
	r = agent_client_call_now(c, &rq, "ok", &h, err);
	if (r < 0)
		return r;
	r = agent_client_r_sint(&k, h, "delta_ns", &d, err);
	json_decref(h);
	if (delta_ns)
		*delta_ns = d;
	return r;
}

int agent_client_shutdown(const struct agent_client *c, int grace_ms, struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "shutdown");
	if (grace_ms >= 0)
		agent_client_req_int(&rq, "grace_ms", grace_ms);
	return agent_client_call_ok(c, &rq, err);
}
