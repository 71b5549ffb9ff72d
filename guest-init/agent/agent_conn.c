/*
 * agent_conn: blocking message I/O on one agent connection. The contract is
 * in agent_conn.h; the notes here are about how the socket is driven.
 *
 * Every read waits in poll() for the time left until the absolute deadline,
 * then takes what recv() has without blocking, so a peer that sends one
 * byte a second keeps no read alive past its deadline. Bytes go through the
 * framer (agent_proto.c), which decides where headers and payloads end; at
 * most AGENT_CONN_RBUF bytes are held here whatever `len` claims.
 */
#include "guest-init/agent/agent_conn.h"
#include "lib/base/fd_io.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

bool agent_peer_is_host(const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_vm *vm = (const struct sockaddr_vm *)addr;

	return len >= (socklen_t)sizeof(*vm) && vm->svm_family == AF_VSOCK &&
		vm->svm_cid == VMADDR_CID_HOST;
}

void agent_conn_init(struct agent_conn *c, int fd)
{
	/* rbuf is left alone: 64 KiB of zeroes per connection buys nothing. */
	c->fd = fd;
	agent_frame_init(&c->fr);
	c->roff = c->rlen = 0;
	c->payload_left = 0;
	c->deadline_ms = 0;
	c->eof = 0;
}

void agent_conn_close(struct agent_conn *c)
{
	agent_frame_free(&c->fr);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void agent_conn_linger(struct agent_conn *c, int timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms;
	char buf[512];

	shutdown(c->fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { c->fd, POLLIN, 0 };
		int64_t left = end - mono_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			return;
		n = read(c->fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return; /* closed, or reset: the peer is done */
	}
}

void agent_conn_deadline(struct agent_conn *c, int64_t abs_ms)
{
	c->deadline_ms = abs_ms;
}

static int conn_timeout(struct agent_err *err)
{
	agent_err_set(
		err, AGENT_E_TIMEOUT,
		"nothing arrived from the client before the deadline (request: %d s after connecting, upload: %d s between messages); send the whole message sooner",
		AGENT_REQUEST_TIMEOUT_MS / 1000, AGENT_UPLOAD_IDLE_MS / 1000);
	return -1;
}

/*
 * Wait until the socket is readable or the deadline passes. 0 when
 * readable (or closed: recv will say), -1 with err set otherwise.
 */
static int conn_wait(struct agent_conn *c, struct agent_err *err)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };

	for (;;) {
		int timeout = -1;
		int r;

		if (c->deadline_ms) {
			int64_t left = c->deadline_ms - mono_ms();

			if (left <= 0)
				return conn_timeout(err);
			timeout = left > 60000 ? 60000 : (int)left;
		}
		r = poll(&p, 1, timeout);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR) {
			agent_err_set(err, AGENT_E_IO_ERROR, "waiting for the client: %s",
				      strerror(errno));
			return -1;
		}
		/* r == 0: a slice of the wait ended; the loop rechecks the deadline. */
	}
}

/*
 * Receive into buf without blocking once poll said readable. Returns the
 * count, 0 at EOF (c->eof set), -1 with err set. A reset is the peer going
 * away, the same as EOF for the framer (it reports `truncated` when that
 * cut a message).
 */
static ssize_t conn_recv(struct agent_conn *c, void *buf, size_t n, struct agent_err *err)
{
	for (;;) {
		ssize_t r;

		if (conn_wait(c, err) < 0)
			return -1;
		r = recv(c->fd, buf, n, MSG_DONTWAIT);
		if (r > 0)
			return r;
		if (r == 0 || errno == ECONNRESET || errno == EPIPE || errno == ENOTCONN) {
			c->eof = 1;
			return 0;
		}
		if (errno == EAGAIN || errno == EINTR)
			continue;
		agent_err_set(err, AGENT_E_IO_ERROR, "reading from the client: %s",
			      strerror(errno));
		return -1;
	}
}

/* Refill rbuf when it is empty and the peer is still there. */
static int conn_fill(struct agent_conn *c, struct agent_err *err)
{
	ssize_t r;

	if (c->rlen || c->eof)
		return 0;
	r = conn_recv(c, c->rbuf, sizeof(c->rbuf), err);
	if (r < 0)
		return -1;
	c->roff = 0;
	c->rlen = (size_t)r;
	return 0;
}

static int frame_error(const struct agent_event *ev, struct agent_err *err)
{
	*err = *ev->err;
	return -1;
}

/*
 * The framer is at the end of the stream with nothing buffered: 1 when that
 * is a message boundary, -1 (truncated) when it cut one.
 */
static int conn_at_eof(struct agent_conn *c, struct agent_err *err)
{
	struct agent_event ev;

	agent_frame_eof(&c->fr, &ev);
	if (ev.kind == AGENT_EV_ERROR)
		return frame_error(&ev, err);
	return 1;
}

/* Pass buffered bytes to the framer as payload; count what it took. */
static size_t conn_feed_payload(struct agent_conn *c, const uint8_t *p, size_t n)
{
	struct agent_event ev;
	size_t used = agent_frame_feed(&c->fr, p, n, &ev);

	if (ev.kind == AGENT_EV_PAYLOAD)
		c->payload_left -= ev.data_len;
	return used;
}

/* Discard what is left of the current payload (the caller did not want it). */
static int conn_skip_payload(struct agent_conn *c, struct agent_err *err)
{
	while (c->payload_left) {
		size_t n, used;

		if (conn_fill(c, err) < 0)
			return -1;
		if (!c->rlen) {
			/* The framer is inside a payload, so this is `truncated`. */
			conn_at_eof(c, err);
			return -1;
		}
		n = c->rlen < c->payload_left ? c->rlen : (size_t)c->payload_left;
		used = conn_feed_payload(c, c->rbuf + c->roff, n);
		c->roff += used;
		c->rlen -= used;
	}
	return 0;
}

int agent_conn_next(struct agent_conn *c, enum agent_ctx ctx, struct agent_msg *msg,
		    struct agent_err *err)
{
	memset(msg, 0, sizeof(*msg));
	if (conn_skip_payload(c, err) < 0)
		return -1;
	for (;;) {
		struct agent_event ev;
		size_t used;
		enum agent_code code;

		if (conn_fill(c, err) < 0)
			return -1;
		if (!c->rlen)
			return conn_at_eof(c, err);
		used = agent_frame_feed(&c->fr, c->rbuf + c->roff, c->rlen, &ev);
		c->roff += used;
		c->rlen -= used;
		switch (ev.kind) {
		case AGENT_EV_ERROR:
			return frame_error(&ev, err);
		case AGENT_EV_HEADER:
			c->payload_left = ev.len;
			code = agent_msg_parse(ev.header, ctx, msg, err);
			json_decref(ev.header); /* msg holds its own reference */
			return code == AGENT_OK ? 0 : -1;
		default:
			/* NEED_MORE: everything buffered was a partial header. No
			 * PAYLOAD can come here: the payload was skipped above. */
			break;
		}
	}
}

ssize_t agent_conn_payload(struct agent_conn *c, void *buf, size_t n, struct agent_err *err)
{
	size_t take;

	if (!c->payload_left || !n)
		return 0;
	take = n < c->payload_left ? n : (size_t)c->payload_left;
	if (!c->rlen && !c->eof) {
		/* Nothing buffered: receive straight into the caller's buffer,
		 * never more than the payload, so no header is read past. */
		ssize_t r = conn_recv(c, buf, take, err);

		if (r < 0)
			return -1;
		if (r > 0) {
			conn_feed_payload(c, buf, (size_t)r);
			return r;
		}
	}
	if (!c->rlen) {
		conn_at_eof(c, err);
		return -1;
	}
	if (take > c->rlen)
		take = c->rlen;
	memcpy(buf, c->rbuf + c->roff, take);
	take = conn_feed_payload(c, c->rbuf + c->roff, take);
	c->roff += take;
	c->rlen -= take;
	return (ssize_t)take;
}

ssize_t agent_conn_payload_all(struct agent_conn *c, void *buf, size_t n, struct agent_err *err)
{
	size_t got = 0;

	if (c->payload_left > n) {
		agent_err_set(err, AGENT_E_TOO_LARGE,
			      "payload of %llu bytes; this message takes at most %zu",
			      (unsigned long long)c->payload_left, n);
		return -1;
	}
	while (c->payload_left) {
		ssize_t r = agent_conn_payload(c, (uint8_t *)buf + got, n - got, err);

		if (r < 0)
			return -1;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int agent_conn_send(struct agent_conn *c, const struct agent_line *line, const void *payload,
		    size_t n)
{
	struct iovec iov[2] = {
		{ .iov_base = line->data, .iov_len = line->len },
		{ .iov_base = (void *)payload, .iov_len = payload ? n : 0 },
	};

	/* MSG_NOSIGNAL (fd_io): a host that went away is an EPIPE for this
	 * connection, not a SIGPIPE that would kill PID 1. */
	return fd_io_sendv_all(c->fd, iov, 2, NULL, NULL);
}

int agent_conn_send_line(struct agent_conn *c, struct agent_line *line, int build_rc)
{
	int r;

	if (build_rc < 0) {
		agent_line_free(line);
		return build_rc;
	}
	r = agent_conn_send(c, line, NULL, 0);
	agent_line_free(line);
	return r;
}

int agent_conn_send_err(struct agent_conn *c, const struct agent_err *err)
{
	struct agent_line l;

	return agent_conn_send_line(c, &l, agent_line_err(&l, err));
}

int agent_conn_peer_gone(struct agent_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	uint8_t b;
	ssize_t r;

	if (c->eof)
		return 1;
	if (c->rlen)
		return 0;
	if (poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
		return 1;
	/* Readable: either bytes (the peer is there; they stay queued for
	 * whoever reads next) or EOF. */
	r = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (r == 0)
		return 1;
	if (r < 0)
		return errno != EAGAIN && errno != EINTR;
	return 0;
}
