/* agent_client: connections that become raw byte streams after the
 * agent's answer: the TCP bridge (tcp_connect) and a container's stdio
 * (ctr_stdio); see agent_client.h. */
#include "api/agent-client/agent_client.h"
#include "api/agent-client/agent_client_impl.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(AGENT_CLIENT_CONN_RBUF >= AGENT_HEADER_MAX,
	       "the answer line is read into the connection's buffer");

/*
 * The agent's answer line, read without consuming a byte past its '\n':
 * the guest connection's bytes follow it at once, and a server that
 * speaks first (SSH, SMTP) must not lose its greeting to our buffer.
 * Peek, then take exactly through the newline; at most AGENT_HEADER_MAX
 * bytes, like any header. 0 with k->buf[0 .. *n) ending in '\n'.
 */
static int read_answer(struct agent_client_conn *k, int64_t dl, int timeout_ms, size_t *n,
		       struct agent_client_err *err)
{
	size_t got = 0;

	for (;;) {
		ssize_t r, m;
		uint8_t *nl;
		size_t take;
		int w;

		if (got == AGENT_HEADER_MAX)
			return agent_client_efail(
				err, AGENT_FAIL_PROTOCOL, AGENT_E_HEADER_TOO_LONG, EPROTO,
				"%s: the agent's answer is longer than %d bytes without a newline",
				k->what, AGENT_HEADER_MAX);
		r = recv(k->fd, k->buf + got, AGENT_HEADER_MAX - got, MSG_PEEK | MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return agent_client_efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR,
							  errno,
							  "%s: reading the agent's answer: %s",
							  k->what, strerror(errno));
			w = agent_client_wait_fd(k->fd, POLLIN, dl);
			if (w == -ETIMEDOUT)
				return agent_client_efail(err, AGENT_FAIL_TIMEOUT, AGENT_E_TIMEOUT,
							  ETIMEDOUT,
							  "%s: no answer from the agent within %d ms",
							  k->what, timeout_ms);
			if (w < 0)
				return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR,
							  -w, "poll: %s", strerror(-w));
			continue;
		}
		if (r == 0) {
			if (!got)
				return agent_client_closed_early(k, "answering", err);
			return agent_client_efail(
				err, AGENT_FAIL_PROTOCOL, AGENT_E_TRUNCATED, EPROTO,
				"%s: the agent closed the connection inside its answer (%zu bytes, no newline)",
				k->what, got);
		}
		nl = memchr(k->buf + got, '\n', (size_t)r);
		take = nl ? (size_t)(nl - (k->buf + got)) + 1 : (size_t)r;
		m = recv(k->fd, k->buf + got, take, MSG_DONTWAIT);
		if (m < 0 && errno != EINTR && errno != EAGAIN)
			return agent_client_efail(err, AGENT_FAIL_CONNECT, AGENT_E_IO_ERROR, errno,
						  "%s: reading the agent's answer: %s", k->what,
						  strerror(errno));
		if (m <= 0)
			continue; /* the peeked bytes are still there */
		got += (size_t)m;
		if (nl && (size_t)m == take) {
			*n = got;
			return 0;
		}
	}
}

int agent_client_raw_open(const struct agent_client *c, struct agent_client_req *rq, int *fd,
			  struct agent_client_err *err)
{
	struct agent_line line;
	struct agent_err fe;
	struct agent_client_conn k;
	const char *type;
	json_t *h = NULL;
	uint64_t len;
	size_t n = 0;
	int64_t dl;
	int r;

	*fd = -1;
	r = agent_client_req_finish(rq, AGENT_CTX_REQUEST, 0, &line, err);
	if (r < 0)
		return r;
	dl = mono_deadline_ms(c->timeout_ms);
	r = agent_client_conn_open(c, dl, rq->type, &k, err);
	if (r < 0) {
		agent_line_free(&line);
		return r;
	}
	r = agent_client_conn_send(&k, line.data, line.len, NULL, 0, dl, NULL, err);
	agent_line_free(&line);
	if (r < 0 || (r = read_answer(&k, dl, c->timeout_ms, &n, err)) < 0)
		goto out;
	if (agent_header_decode((const char *)k.buf, n - 1, &h, &len, &fe) != AGENT_OK) {
		r = agent_client_efail(err, AGENT_FAIL_PROTOCOL, fe.code, EPROTO,
				       "%s: bad reply from the agent: %s", k.what, fe.msg);
		goto out;
	}
	r = agent_client_reply_type(&k, h, len, &type, err);
	if (r == 0 && strcmp(type, "ok") != 0)
		r = agent_client_unexpected(&k, type, "ok", err);
	if (r == 0) {
		*fd = k.fd;
		k.fd = -1;
	}
out:
	json_decref(h);
	agent_client_conn_close(&k);
	return r;
}

int agent_client_tcp_connect(const struct agent_client *c, uint32_t port, const char *address,
			     int *fd, struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	*fd = -1;
	agent_client_req_init(&rq, "tcp_connect");
	agent_client_req_int(&rq, "port", port);
	if (address)
		agent_client_req_str(&rq, "address", address);
	return agent_client_raw_open(c, &rq, fd, err);
}
