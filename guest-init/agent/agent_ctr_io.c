/*
 * A container's stdio over its own vsock connections (docs/agent-protocol.md,
 * 7.9 `ctr_stdio`): raw bytes, nothing dropped. A direction reads its source
 * only when its buffer is empty, so a host that does not read stalls the
 * process as a full pipe would (vsock's credit carries that to the host),
 * and a process that does not read stalls the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest-init/agent/agent_ctr.h"
#include "guest-init/agent/agent.h"
#include "guest-init/agent/agent_serve.h"

/* One direction of a relay. */
struct dir {
	int from, to;
	uint8_t *buf;
	size_t cap, off, end;
	bool eof;                /* the source ended (or failed) */
	bool done;               /* and all of it was delivered, or the destination failed */
	bool lost;               /* the host's side (from or to) failed, not the process's */
	bool host_from, host_to; /* which end is the host's connection */
};

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* An error that means the host's connection was reset (a restore's
 * transport reset, a host gone without closing), not closed: EPIPE and
 * EOF are the host's own end, and end the stream. */
static bool reset(int err)
{
	return err == ECONNRESET || err == ENOTCONN || err == ECONNABORTED;
}

/* Move what can move now in d; revents of its source and destination. */
static void step(struct dir *d, short rin, short rout)
{
	ssize_t n;

	if (d->off < d->end && rout) {
		n = write(d->to, d->buf + d->off, d->end - d->off);
		if (n > 0)
			d->off += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			/* the destination is gone: a process's, drop the rest; the
			 * host's, keep it for the next connection */
			d->done = d->eof = true;
			d->lost = d->host_to && reset(errno);
			return;
		}
	}
	if (d->off == d->end && !d->eof && rin) {
		n = read(d->from, d->buf, d->cap);
		d->off = 0;
		d->end = n > 0 ? (size_t)n : 0;
		/* A terminal's master reads EIO once no process holds the slave. */
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			d->eof = true;
			/* a reset, not the host's EOF: the process reads no EOF */
			d->lost = n < 0 && d->host_from && reset(errno);
			d->done = d->lost;
		}
	}
	if (d->eof && d->off == d->end)
		d->done = true;
}

/*
 * Run dirs until the first (the one the stream is for) is done, the
 * host's connection conn is reset (POLLERR, even while nothing is to be
 * sent: a restore's transport reset) or stop is readable. The second,
 * when there is one, is a terminal's input: its end ends nothing, but
 * its loss does.
 */
static void run(struct dir *d, int nd, int conn, int stop)
{
	while (!d[0].done) {
		struct pollfd p[6] = { { .fd = stop, .events = POLLIN }, { .fd = conn } };
		int np = 2, in[2] = { -1, -1 }, out[2] = { -1, -1 };

		for (int i = 0; i < nd; i++) {
			if (d[i].done)
				continue;
			if (d[i].off == d[i].end) {
				in[i] = np;
				p[np++] = (struct pollfd){ .fd = d[i].from, .events = POLLIN };
			} else {
				out[i] = np;
				p[np++] = (struct pollfd){ .fd = d[i].to, .events = POLLOUT };
			}
		}
		if (poll(p, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (p[0].revents)
			return;
		if (p[1].revents & POLLERR) {
			d[0].lost = true;
			return;
		}
		for (int i = 0; i < nd; i++)
			if (!d[i].done)
				step(&d[i], in[i] >= 0 ? p[in[i]].revents : 0,
				     out[i] >= 0 ? p[out[i]].revents : 0);
		if (nd > 1 && d[1].lost) {
			d[0].lost = true;
			return;
		}
	}
}

/* What d[0] (an output) had not sent when the host was lost, for the
 * next connection (out of memory: dropped). */
static void hold(struct ctr_stream *io, const struct dir *d)
{
	size_t n = d->end - d->off;

	if (!n || !(io->held = malloc(n)))
		return;
	memcpy(io->held, d->buf + d->off, n);
	io->held_len = n;
}

bool ctr_io_relay(struct ctr_proc *p, struct agent_conn *c, enum agent_ctr_stream s, int fd)
{
	/* Host -> process runs through the connection's own buffer, starting
	 * with what arrived behind the request line. */
	struct dir host = { .from = c->fd,
			    .to = fd,
			    .buf = c->rbuf,
			    .cap = sizeof(c->rbuf),
			    .off = c->roff,
			    .end = c->roff + c->rlen,
			    .host_from = true };
	struct ctr_stream *io = &p->io[s];
	struct dir d[2];
	uint8_t *back = NULL;
	bool lost;

	c->rlen = 0;
	set_nonblock(fd);
	set_nonblock(c->fd);
	if (s == AGENT_CTR_STDIN) {
		d[0] = host;
		run(d, 1, c->fd, p->stop[0]);
		return d[0].lost; /* else the caller closes fd: the process reads its EOF */
	}
	back = malloc(AGENT_CONN_RBUF);
	if (!back)
		return false;
	d[0] = (struct dir){
		.from = fd, .to = c->fd, .buf = back, .cap = AGENT_CONN_RBUF, .host_to = true
	};
	/* what the last connection did not take goes first */
	if (io->held_len <= AGENT_CONN_RBUF && io->held_len) {
		memcpy(back, io->held, io->held_len);
		d[0].end = io->held_len;
	}
	free(io->held);
	io->held = NULL;
	io->held_len = 0;
	d[1] = host;
	run(d, s == AGENT_CTR_PTY ? 2 : 1, c->fd, p->stop[0]);
	lost = d[0].lost;
	if (lost)
		hold(io, &d[0]);
	else if (d[0].done) /* the process's side ended and everything was sent: say so */
		shutdown(c->fd, SHUT_WR);
	free(back);
	return lost;
}

void agent_ctr_stdio(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	const struct agent_ctr_req *r = &m->u.ctr;
	const char *name = agent_ctr_stream_name(r->stream);
	struct ctr_proc *p = ctr_get(t, c, "ctr_stdio", r->cid, r->exec);
	char who[AGENT_CID_MAX + 48];
	const char *why = NULL;
	bool lost = false;
	int fd = -1;

	if (!p)
		return;
	pthread_mutex_lock(&t->lock);
	if ((r->stream == AGENT_CTR_PTY) != p->terminal)
		why = p->terminal ? "has a terminal: its stream is \"pty\""
				  : "has no terminal: its streams are stdin, stdout and stderr";
	else if (p->io[r->stream].done)
		why = "has that stream ended"; /* its EOF was delivered: nothing to connect */
	else if (p->io[r->stream].connected)
		why = "has that stream connected already";
	else {
		fd = p->io[r->stream].fd;
		p->io[r->stream].fd = -1;
		p->io[r->stream].connected = true;
	}
	pthread_mutex_unlock(&t->lock);
	if (why) {
		ctr_proc_name(p, who, sizeof(who));
		agent_reply_error(c, AGENT_E_INVALID_STATE, "ctr_stdio %s: %s %s", name, who, why);
		ctr_put(p);
		return;
	}
	/* a reply that cannot be sent is a connection already lost */
	if (fd >= 0)
		lost = agent_reply_ok(c) == 0 ? ctr_io_relay(p, c, r->stream, fd) : true;
	pthread_mutex_lock(&t->lock);
	if (lost) {
		/* the host is gone (a restore reset the connection): the
		 * process keeps its end, for the next ctr_stdio */
		p->io[r->stream].fd = fd;
		p->io[r->stream].connected = false;
	} else {
		if (fd >= 0)
			close(fd);
		p->io[r->stream].done = true;
	}
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	ctr_put(p);
}
