/* tcp_connect: the guest end of the TCP bridge; see agent_tcp.h. */
#include "guest-init/agent/agent_tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/base/sock_relay.h"

static void send_errno(struct agent_conn *c, const struct agent_tcp_req *t, int e)
{
	struct agent_err err;
	const char *addr = t->address;
	const char *l = t->family == AF_INET6 ? "[" : "", *r = t->family == AF_INET6 ? "]" : "";

	switch (e) {
	case ECONNREFUSED:
		agent_err_set(
			&err, AGENT_E_REFUSED,
			"tcp_connect: nothing listens on %s%s%s:%u in the guest; start the server first (it must listen on the loopback or all addresses)",
			l, addr, r, (unsigned)t->port);
		break;
	case ETIMEDOUT:
		agent_err_set(
			&err, AGENT_E_TIMEOUT,
			"tcp_connect: %s%s%s:%u did not accept within %d ms (is the server's backlog full?)",
			l, addr, r, (unsigned)t->port, AGENT_TCP_CONNECT_MS);
		break;
	case ENETUNREACH:
	case EADDRNOTAVAIL:
		agent_err_set(&err, AGENT_E_IO_ERROR,
			      "tcp_connect: %s%s%s:%u: %s (is the guest's loopback interface up?)",
			      l, addr, r, (unsigned)t->port, strerror(e));
		break;
	default:
		agent_err_set(&err, agent_errno_code(e), "tcp_connect: %s%s%s:%u: %s", l, addr, r,
			      (unsigned)t->port, strerror(e));
		break;
	}
	agent_conn_send_err(c, &err);
}

/* A connected socket, or -errno. Non-blocking, so a full backlog (the
 * kernel drops the SYN and retries) costs at most AGENT_TCP_CONNECT_MS. */
static int tcp_open(const struct agent_tcp_req *t)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET,
				   .sin_port = htons(t->port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(t->port),
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	const struct sockaddr *sa = t->family == AF_INET6 ? (struct sockaddr *)&in6
							  : (struct sockaddr *)&in4;
	socklen_t salen = t->family == AF_INET6 ? sizeof(in6) : sizeof(in4);
	int64_t deadline = mono_ms() + AGENT_TCP_CONNECT_MS;
	int fd = socket(t->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int e = 0;
	socklen_t elen = sizeof(e);

	if (fd < 0)
		return -errno;
	if (connect(fd, sa, salen) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		e = errno;
		close(fd);
		return -e;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int64_t left = deadline - mono_ms();
		int r;

		if (left <= 0) {
			close(fd);
			return -ETIMEDOUT;
		}
		r = poll(&p, 1, (int)left);
		if (r > 0)
			break;
		if (r < 0 && errno != EINTR) {
			e = errno;
			close(fd);
			return -e;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
		e = errno;
	if (e) {
		close(fd);
		return -e;
	}
	return fd;
}

void agent_tcp_serve(struct agent_conn *c, struct agent_msg *req)
{
	const struct agent_tcp_req *t = &req->u.tcp;
	struct sock_relay r = { .stop_fd = -1, .half_idle_ms = AGENT_TCP_HALF_IDLE_MS };
	struct agent_line l;
	struct agent_err err;
	uint8_t *back;
	int fd, e;

	/* Before connecting: a bridge that cannot run must not leave the
	 * guest server an accepted connection that is dropped at once. */
	back = malloc(AGENT_CONN_RBUF);
	if (!back) {
		agent_err_set(&err, AGENT_E_BUSY,
			      "tcp_connect: out of memory for the relay buffer; retry later");
		agent_conn_send_err(c, &err);
		return;
	}
	fd = tcp_open(t);
	if (fd < 0) {
		send_errno(c, t, -fd);
		free(back);
		return;
	}
	if (agent_conn_send_line(c, &l, agent_line_ok(&l, NULL, 0)) < 0)
		goto out; /* the host left */
	r.fd[0] = c->fd;
	r.fd[1] = fd;
	/* Host -> guest runs through the connection's own buffer, starting
	 * with what arrived behind the request line. */
	r.dir[0] = (struct sock_relay_dir){
		.buf = c->rbuf, .cap = sizeof(c->rbuf), .off = c->roff, .end = c->roff + c->rlen
	};
	c->rlen = 0;
	r.dir[1] = (struct sock_relay_dir){ .buf = back, .cap = AGENT_CONN_RBUF };
	sock_relay_run(&r, &e);
out:
	close(fd);
	free(back);
}
