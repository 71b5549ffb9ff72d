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
	bool eof;  /* the source ended (or failed) */
	bool done; /* and all of it was delivered, or the destination failed */
};

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Move what can move now in d; revents of its source and destination. */
static void step(struct dir *d, short rin, short rout)
{
	ssize_t n;

	if (d->off < d->end && rout) {
		n = write(d->to, d->buf + d->off, d->end - d->off);
		if (n > 0)
			d->off += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			d->done = d->eof = true; /* the destination is gone: drop the rest */
	}
	if (d->off == d->end && !d->eof && rin) {
		n = read(d->from, d->buf, d->cap);
		d->off = 0;
		d->end = n > 0 ? (size_t)n : 0;
		/* A terminal's master reads EIO once no process holds the slave. */
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			d->eof = true;
	}
	if (d->eof && d->off == d->end)
		d->done = true;
}

/*
 * Run dirs until the first (the one the stream is for) is done or stop is
 * readable. The second, when there is one, is a terminal's input: its end
 * ends nothing.
 */
static void run(struct dir *d, int nd, int stop)
{
	while (!d[0].done) {
		struct pollfd p[5] = { { .fd = stop, .events = POLLIN } };
		int np = 1, in[2] = { -1, -1 }, out[2] = { -1, -1 };

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
		for (int i = 0; i < nd; i++)
			if (!d[i].done)
				step(&d[i], in[i] >= 0 ? p[in[i]].revents : 0,
				     out[i] >= 0 ? p[out[i]].revents : 0);
	}
}

void ctr_io_relay(struct ctr_proc *p, struct agent_conn *c, enum agent_ctr_stream s, int fd)
{
	/* Host -> process runs through the connection's own buffer, starting
	 * with what arrived behind the request line. */
	struct dir host = { .from = c->fd,
			    .to = fd,
			    .buf = c->rbuf,
			    .cap = sizeof(c->rbuf),
			    .off = c->roff,
			    .end = c->roff + c->rlen };
	struct dir d[2];
	uint8_t *back = NULL;

	c->rlen = 0;
	set_nonblock(fd);
	set_nonblock(c->fd);
	if (s == AGENT_CTR_STDIN) {
		d[0] = host;
		run(d, 1, p->stop[0]);
		return; /* the caller closes fd: the process reads its EOF */
	}
	back = malloc(AGENT_CONN_RBUF);
	if (!back)
		return;
	d[0] = (struct dir){ .from = fd, .to = c->fd, .buf = back, .cap = AGENT_CONN_RBUF };
	d[1] = host;
	run(d, s == AGENT_CTR_PTY ? 2 : 1, p->stop[0]);
	/* The process's side ended and everything was sent: say so. */
	if (d[0].done)
		shutdown(c->fd, SHUT_WR);
	free(back);
}

void agent_ctr_stdio(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	const struct agent_ctr_req *r = &m->u.ctr;
	const char *name = agent_ctr_stream_name(r->stream);
	struct ctr_proc *p = ctr_get(t, c, "ctr_stdio", r->cid, r->exec);
	char who[AGENT_CID_MAX + 48];
	const char *why = NULL;
	int fd = -1;

	if (!p)
		return;
	pthread_mutex_lock(&t->lock);
	if ((r->stream == AGENT_CTR_PTY) != p->terminal)
		why = p->terminal ? "has a terminal: its stream is \"pty\""
				  : "has no terminal: its streams are stdin, stdout and stderr";
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
	if (fd >= 0 && agent_reply_ok(c) == 0)
		ctr_io_relay(p, c, r->stream, fd);
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&t->lock);
	p->io[r->stream].done = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	ctr_put(p);
}
