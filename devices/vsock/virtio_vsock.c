#include "devices/vsock/virtio_vsock.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/guest/event_loop.h"
#include "devices/vsock/vsock_proto.h"

enum { Q_RX = 0, Q_TX = 1, Q_EVENT = 2, NUM_QUEUES = 3 };

#define VSOCK_QUEUE_MAX 256
#define ACCEPT_BATCH 16   /* host clients accepted per listener wake-up */
#define EVENT_RETRY_MS 10 /* after restore: retry delivering the reset event */
#define EVENT_RETRIES 500
#define ACCEPT_PAUSE_MS 100     /* out of file descriptors: accept again later */
#define STATE_MAGIC 0x4b53564bu /* "KVSK" */
/*
 * Host data goes straight into as many rx chains as the guest's credit
 * and the data fill, up to RX_BATCH, with one readv: a bulk transfer to
 * the guest costs one system call per RX_BATCH of its (4 KiB) buffers
 * instead of one per buffer. 64 of Linux's 4 KiB buffers are its default
 * credit (256 KiB, SO_VM_SOCKETS_BUFFER_SIZE): a whole window in one
 * readv; kiln's agent grants 1 MiB, four.
 */
#define RX_BATCH 64
/*
 * A held rx chain keeps its writable buffers in its slot when it has at
 * most RX_INLINE (Linux's have one). 64 whole struct virtq_chain (8 KiB
 * each, 256 buffers of each kind) were 526 KiB of which every pop
 * touched two pages: 308 KiB private per kiln-vmm after one exchange.
 * A longer chain's buffers go to rx_long, and it is held alone.
 */
#define RX_INLINE 4
/* 2 adds next_port; a version 1 state (without it) still restores */
#define STATE_VERSION 2
#define STATE_VERSION_NO_PORT 1

/*
 * Host sockets are watched edge-triggered for everything at once: an edge
 * only sets host_readable or triggers a flush, and the rx pump reads while
 * the guest grants credit. So a socket the guest is not ready for is not
 * reported again and again (no busy loop), and nothing is read that the
 * guest cannot take (no unbounded buffer).
 */
#define HOST_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

/* A popped rx chain waiting for host data; `in` is its buffers: `inl`,
 * or rx_long for a chain longer than RX_INLINE. */
struct rx_held {
	uint16_t head;
	int nin;
	uint64_t in_len;
	const struct virtq_buf *in;
	struct virtq_buf inl[RX_INLINE];
};

struct vsock_dev {
	struct virtio_dev dev;
	struct event_loop *loop;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	int accepting;
	int accept_paused; /* accept_resume() timer pending */
	struct vsock_table t;
	unsigned rr; /* round-robin start for the rx pump */
	/*
	 * rx chains popped but not yet used, oldest first: a ring of RX_BATCH
	 * from rx_first. They are always the rx queue's latest pops, so a
	 * snapshot hands them back to the avail ring (virtq_unpop).
	 */
	struct rx_held rxh[RX_BATCH];
	unsigned rx_first, rx_held;
	/* The buffers of a held rx chain longer than RX_INLINE (held alone):
	 * allocated at the first one, VIRTQ_MAX_CHAIN of them. */
	struct virtq_buf *rx_long;
	/*
	 * Where every chain is popped (8 KiB: one, not one per queue). A tx
	 * or event chain is done with within the call that popped it; a
	 * held rx chain's buffers are copied out (rxh, rx_long).
	 */
	struct virtq_chain pop;
	int reset_event_pending; /* TRANSPORT_RESET owed to the guest (after restore) */
	int draining;            /* last_words(): no new host connections */
	void (*mark)(void *ctx, const char *name);
	void *mark_ctx;
	int marked_connect, marked_ok; /* each mark once */
	int event_retries;
	uint32_t irq_owed; /* queues pushed on since the last irq_flush() */
	struct iovec iov[VIRTQ_MAX_CHAIN];
};

/*
 * next_port: the local port the next host client gets. A restored guest
 * may still hold sockets of the host ports it saw before the snapshot (a
 * closed connection lingers in Linux's table for up to 8 s): a port
 * handed out again would meet such a socket and be reset ("nothing
 * listens"). The restored device goes on after them.
 */
struct vsock_saved {
	uint32_t magic, version;
	uint64_t guest_cid;
	uint32_t next_port, pad;
};

/* Version 1's: no next_port. */
#define SAVED_V1_LEN offsetof(struct vsock_saved, next_port)

static struct vsock_dev *to_vsock(struct virtio_dev *d)
{
	return d->priv;
}

static int active(const struct vsock_dev *v)
{
	return (v->dev.status & VIRTIO_STATUS_DRIVER_OK) && !v->dev.broken;
}

static void stop_accepting(struct vsock_dev *v)
{
	v->accept_paused = 0;
	if (v->accepting)
		event_loop_del(v->loop, v->listen_fd);
	v->accepting = 0;
}

/*
 * Interrupts are owed while the device works and raised once when it is
 * done (irq_flush at the end of every entry point that pushes): a guest
 * tx kick that carries a credit update and lets rx data through costs one
 * injection, after both, rather than one for tx that wakes the guest
 * before the data is there and a second one for rx.
 */
static void irq_owe(struct vsock_dev *v, int q)
{
	v->irq_owed |= 1u << q;
}

static void irq_flush(struct vsock_dev *v)
{
	uint32_t owed = v->irq_owed;

	v->irq_owed = 0;
	if (owed)
		virtio_dev_interrupt_queues(&v->dev, owed);
}

static void conn_close(struct vsock_dev *v, struct vsock_conn *c, int rst)
{
	if (c->fd >= 0) {
		event_loop_del(v->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	if (rst)
		vsock_conn_reset(&v->t, c);
	else
		vsock_conn_free(&v->t, c);
}

static void drop_all(struct vsock_dev *v)
{
	for (int i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct vsock_conn *c = v->t.conn[i];

		if (c && c->fd >= 0) {
			event_loop_del(v->loop, c->fd);
			close(c->fd);
			c->fd = -1;
		}
	}
	vsock_table_clear(&v->t);
	v->rx_first = v->rx_held = 0;
	v->irq_owed = 0;
}

/* The guest broke the protocol: mark the device and let go of the host
 * side, whose clients would otherwise wait on a device that ignores them. */
static void fail(struct vsock_dev *v, const char *why)
{
	virtio_dev_fail(&v->dev, why);
	stop_accepting(v);
	drop_all(v);
}

/* Pop the next chain of `qi` (virtq_pop_or_arm). 1, 0, or -1 after
 * failing the device. */
static int pop(struct vsock_dev *v, int qi, struct virtq_chain *c, const char *why)
{
	int r = virtq_pop_or_arm(&v->dev.vq[qi], c);

	if (r < 0) {
		fail(v, why);
		return -1;
	}
	return r;
}

/* iovecs over the chain buffers `b` for bytes [off, off + len). */
static int chain_iov(const struct virtq_buf *b, int n, size_t off, size_t len, struct iovec *iov)
{
	int k = 0;

	for (int i = 0; i < n && len; i++) {
		size_t take;

		if (off >= b[i].len) {
			off -= b[i].len;
			continue;
		}
		take = b[i].len - off;
		if (take > len)
			take = len;
		iov[k].iov_base = b[i].host + off;
		iov[k].iov_len = take;
		k++;
		len -= take;
		off = 0;
	}
	return k;
}

/* ---- guest → host ---------------------------------------------------- */

/* Write buffered guest data to the host socket. 0, or -1 when the
 * connection was reset (the host end is gone). */
static int flush(struct vsock_dev *v, struct vsock_conn *c)
{
	while (c->buf_len) {
		const uint8_t *p;
		uint32_t n = vsock_conn_buf_peek(c, &p);
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0; /* EPOLLOUT edge comes when the host reads */
		if (w <= 0) {
			conn_close(v, c, 1);
			return -1;
		}
		vsock_conn_buf_consume(c, (uint32_t)w);
		vsock_conn_forwarded(c, (uint32_t)w);
	}
	return 0;
}

/* After a state change: flush, pass the guest's SHUTDOWN(SEND) on once
 * everything is written, and finish the connection when both sides are. */
static void settle(struct vsock_dev *v, struct vsock_conn *c)
{
	if (c->state != VSOCK_ESTABLISHED)
		return;
	if (flush(v, c) < 0)
		return;
	if ((c->peer_shutdown & VSOCK_SHUTDOWN_SEND) && !c->buf_len && !c->host_shut_wr) {
		shutdown(c->fd, SHUT_WR);
		c->host_shut_wr = 1;
	}
	if (vsock_conn_done(c))
		conn_close(v, c, 1); /* the guest waits for our RST to free its socket */
}

/* Guest payload for the host: straight to the socket when nothing is queued
 * before it, the rest into the connection's bounded buffer (room for it
 * was checked against the credit we granted). */
static void host_write(struct vsock_dev *v, struct vsock_conn *c, uint32_t len)
{
	size_t off = VSOCK_HDR_SIZE, done = 0;
	int n;

	if (!c->buf_len && len) {
		struct msghdr m = { .msg_iov = v->iov };
		ssize_t w;

		m.msg_iovlen = (size_t)chain_iov(v->pop.out, v->pop.nout, off, len, v->iov);
		do
			w = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (w < 0 && errno == EINTR);
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			conn_close(v, c, 1);
			return;
		}
		if (w > 0) {
			done = (size_t)w;
			vsock_conn_forwarded(c, (uint32_t)w);
		}
	}
	n = chain_iov(v->pop.out, v->pop.nout, off + done, len - done, v->iov);
	for (int i = 0; i < n; i++) {
		if (vsock_conn_buf_put(c, v->iov[i].iov_base, (uint32_t)v->iov[i].iov_len) < 0) {
			conn_close(v, c, 1); /* out of memory: cannot keep the stream whole */
			return;
		}
	}
	settle(v, c);
}

static void mark_once(struct vsock_dev *v, int *done, const char *name)
{
	if (v->mark && !*done) {
		*done = 1;
		v->mark(v->mark_ctx, name);
	}
}

static void host_reply_ok(struct vsock_dev *v, struct vsock_conn *c)
{
	char line[24];
	int n = snprintf(line, sizeof(line), "OK %u\n", c->local_port);

	mark_once(v, &v->marked_ok, "vsock_first_ok");

	/* A fresh socket has an empty send buffer: a short write means the
	 * client is gone. */
	if (send(c->fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
		conn_close(v, c, 1);
	else
		settle(v, c);
}

static void host_event(void *ctx, int fd, uint32_t events);

/* Guest REQUEST to CID 2 port X: connect to "<uds_path>_X". */
static void guest_connect(struct vsock_dev *v, struct vsock_conn *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, n;

	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", v->path, c->local_port);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* AF_UNIX connects at once or fails (ENOENT, ECONNREFUSED, EAGAIN
	 * with a full backlog): every failure is "nobody listens", RST. */
	if (fd < 0 || n < 0 || (size_t)n >= sizeof(sa.sun_path) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    event_loop_add(v->loop, fd, HOST_EVENTS, host_event, v) < 0) {
		if (fd >= 0)
			close(fd);
		vsock_conn_reset(&v->t, c);
		return;
	}
	vsock_conn_accepted(c, fd);
}

static void tx_packet(struct vsock_dev *v, const struct vsock_hdr *h, uint64_t payload_avail)
{
	struct vsock_conn *c;

	switch (vsock_table_recv(&v->t, h, payload_avail, &c)) {
	case VSOCK_ACT_NONE:
		break;
	case VSOCK_ACT_RESET: /* the RST is queued already */
	case VSOCK_ACT_CLOSE:
		if (c)
			conn_close(v, c, 0);
		break;
	case VSOCK_ACT_CONNECT:
		/* At teardown nothing new starts (and the tearing-down thread's
		 * seccomp role may not make sockets): refused as nobody listening. */
		if (v->draining)
			vsock_conn_reset(&v->t, c);
		else
			guest_connect(v, c);
		break;
	case VSOCK_ACT_ESTABLISHED:
		host_reply_ok(v, c);
		break;
	case VSOCK_ACT_DATA:
		host_write(v, c, h->len);
		break;
	case VSOCK_ACT_UPDATE:
		settle(v, c);
		break;
	}
}

static void tx_process(struct vsock_dev *v)
{
	int r, pushed = 0;

	while ((r = pop(v, Q_TX, &v->pop, "malformed descriptor chain on the tx queue")) > 0) {
		uint8_t raw[VSOCK_HDR_SIZE];
		struct vsock_hdr h;

		if (virtq_chain_read(&v->pop, 0, raw, sizeof(raw)) < sizeof(raw)) {
			fail(v, "tx packet shorter than a vsock header");
			return;
		}
		vsock_hdr_decode(&h, raw);
		tx_packet(v, &h, v->pop.out_len - VSOCK_HDR_SIZE);
		if (virtq_push(&v->dev.vq[Q_TX], v->pop.head, 0) < 0) {
			fail(v, "tx used ring unusable");
			return;
		}
		pushed = 1;
	}
	if (r < 0)
		return;
	if (pushed)
		irq_owe(v, Q_TX);
}

/* ---- host → guest ---------------------------------------------------- */

static int rx_has_work(const struct vsock_dev *v)
{
	if (v->t.rst_len)
		return 1;
	for (int i = 0; i < VSOCK_MAX_CONNS; i++) {
		const struct vsock_conn *c = v->t.conn[i];

		if (c && c->state > VSOCK_HOST_HELLO && (c->send_ctl || vsock_conn_want_send(c)))
			return 1;
	}
	return 0;
}

/* The i-th held rx chain (0: the oldest). */
static struct rx_held *rx_slot(struct vsock_dev *v, unsigned i)
{
	return &v->rxh[(v->rx_first + i) % RX_BATCH];
}

/*
 * Hold one more rx chain: 1, 0 (none, RX_BATCH held, or a long chain:
 * held alone, so it waits for the ones before it to be filled), -1 the
 * device failed. Held chains stay the rx queue's latest pops either way.
 */
static int rx_hold(struct vsock_dev *v)
{
	struct virtq_chain *c = &v->pop;
	struct virtq_buf *in;
	struct rx_held *h;
	int r;

	if (v->rx_held == RX_BATCH || (v->rx_held && rx_slot(v, 0)->in == v->rx_long))
		return 0;
	r = pop(v, Q_RX, c, "malformed descriptor chain on the rx queue");
	if (r <= 0)
		return r;
	if (c->in_len < VSOCK_HDR_SIZE) {
		fail(v, "rx buffer smaller than a vsock header");
		return -1;
	}
	h = rx_slot(v, v->rx_held);
	in = h->inl;
	if (c->nin > RX_INLINE) {
		/* Given back while others are held, or without memory for
		 * its list: a later pump takes it again. */
		if (!v->rx_long)
			v->rx_long = malloc(VIRTQ_MAX_CHAIN * sizeof(*v->rx_long));
		if (v->rx_held || !v->rx_long) {
			virtq_unpop(&v->dev.vq[Q_RX], 1);
			return 0;
		}
		in = v->rx_long;
	}
	memcpy(in, c->in, (size_t)c->nin * sizeof(c->in[0]));
	h->head = c->head;
	h->nin = c->nin;
	h->in_len = c->in_len;
	h->in = in;
	v->rx_held++;
	return 1;
}

/* Hand the oldest held rx chain to the guest with header `h` (its data already in place). */
static int rx_push(struct vsock_dev *v, const struct vsock_hdr *h)
{
	struct rx_held *c = rx_slot(v, 0);
	uint8_t raw[VSOCK_HDR_SIZE];

	vsock_hdr_encode(raw, h);
	virtq_bufs_write(c->in, c->nin, 0, raw, sizeof(raw));
	/* Held since an earlier call, perhaps since before a snapshot. */
	virtq_bufs_mark(&v->dev.vq[Q_RX], c->in, c->nin);
	v->rx_first = (v->rx_first + 1) % RX_BATCH;
	v->rx_held--;
	if (virtq_push(&v->dev.vq[Q_RX], c->head, VSOCK_HDR_SIZE + h->len) < 0) {
		fail(v, "rx used ring unusable");
		return -1;
	}
	return 1;
}

/*
 * Read host bytes for `c` straight into held rx chains, no more than the
 * guest's credit: the held ones first, then more popped while the credit
 * reaches past them, all in one readv; each chain that got bytes is
 * pushed in order, the rest stay held. 1 pushed, 0 nothing to send
 * (EAGAIN or EOF), -1 the connection was reset or the device failed.
 */
static int rx_read(struct vsock_dev *v, struct vsock_conn *c)
{
	uint32_t want = vsock_conn_credit(c), room = 0, lens[RX_BATCH];
	struct vsock_hdr h;
	unsigned n;
	int niov = 0;
	ssize_t r;

	for (n = 0; room < want; n++) {
		struct rx_held *ch;
		uint64_t take;

		if (n == v->rx_held) {
			int held = rx_hold(v);

			if (held < 0)
				return -1;
			if (held == 0)
				break;
		}
		ch = rx_slot(v, n);
		take = ch->in_len - VSOCK_HDR_SIZE;
		if (take > want - room)
			take = want - room;
		/* A chain with room for the header only, or more iovecs than we keep. */
		if (!take || niov + ch->nin > VIRTQ_MAX_CHAIN)
			break;
		lens[n] = (uint32_t)take;
		niov += chain_iov(ch->in, ch->nin, VSOCK_HDR_SIZE, take, v->iov + niov);
		room += (uint32_t)take;
	}
	if (!room)
		return 0;
	do
		r = readv(c->fd, v->iov, niov);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		c->host_readable = 0;
		return 0;
	}
	if (r < 0) {
		conn_close(v, c, 1);
		return -1;
	}
	if (r == 0) {
		vsock_conn_host_eof(c);
		settle(v, c);
		return 0;
	}
	/* readv filled the chains in order: each takes what it was given. */
	for (unsigned i = 0; i < n && r > 0; i++) {
		uint32_t len = (uint64_t)r < lens[i] ? (uint32_t)r : lens[i];

		vsock_conn_hdr(&v->t, c, VSOCK_OP_RW, len, &h);
		if (rx_push(v, &h) < 0)
			return -1;
		r -= len;
	}
	return 1;
}

/* Fill the held rx chain with one packet: queued RSTs first, then each
 * connection's control packets and data in turn. 1 pushed, 0 nothing,
 * -1 device failed. */
static int rx_fill_one(struct vsock_dev *v)
{
	struct vsock_hdr h;

	if (vsock_table_next_rst(&v->t, &h))
		return rx_push(v, &h);
	for (unsigned i = 0; i < VSOCK_MAX_CONNS; i++) {
		unsigned idx = (v->rr + i) % VSOCK_MAX_CONNS;
		struct vsock_conn *c;

		/* Looked up again after each read: an EOF may have finished
		 * the connection, and freed it. */
		while ((c = v->t.conn[idx]) && c->state > VSOCK_HOST_HELLO) {
			int r;

			if (vsock_conn_next_ctl(&v->t, c, &h)) {
				v->rr = idx + 1;
				return rx_push(v, &h);
			}
			/* A buffer with room for the header alone (a guest's
			 * choice; Linux's are 4 KiB) carries no data: rx_read
			 * would read nothing and change nothing, and this loop
			 * would spin with the device lock held. */
			if (!vsock_conn_want_send(c) || rx_slot(v, 0)->in_len == VSOCK_HDR_SIZE)
				break;
			r = rx_read(v, c);
			if (r > 0) {
				v->rr = idx + 1;
				return r;
			}
			if (r < 0) {
				if (v->dev.broken)
					return -1;
				/* reset: its RST is queued; send it now */
				if (vsock_table_next_rst(&v->t, &h))
					return rx_push(v, &h);
				break;
			}
			/* EAGAIN or EOF: look at its control packets once more
			 * (unless EOF finished it: its RST is queued) */
		}
	}
	if (vsock_table_next_rst(&v->t, &h))
		return rx_push(v, &h);
	return 0;
}

static void rx_pump(struct vsock_dev *v)
{
	int pushed = 0;

	if (!active(v) || !v->dev.vq[Q_RX].ready)
		return;
	while (rx_has_work(v)) {
		int r;

		if (!v->rx_held) {
			r = rx_hold(v);
			if (r < 0)
				return;
			if (r == 0)
				break; /* no buffer: the guest's next rx kick resumes */
		}
		r = rx_fill_one(v);
		if (r < 0)
			return;
		if (r == 0)
			break;
		pushed = 1;
	}
	if (pushed)
		irq_owe(v, Q_RX);
}

/* ---- event queue ----------------------------------------------------- */

static void deliver_event(struct vsock_dev *v)
{
	uint32_t id = htole32(VSOCK_EVENT_TRANSPORT_RESET);

	if (!v->reset_event_pending || !active(v) || !v->dev.vq[Q_EVENT].ready)
		return;
	if (pop(v, Q_EVENT, &v->pop, "malformed descriptor chain on the event queue") <= 0)
		return;
	if (v->pop.in_len < sizeof(id)) {
		fail(v, "event buffer smaller than an event");
		return;
	}
	virtq_chain_write(&v->pop, 0, &id, sizeof(id));
	if (virtq_push(&v->dev.vq[Q_EVENT], v->pop.head, sizeof(id)) < 0) {
		fail(v, "event used ring unusable");
		return;
	}
	v->reset_event_pending = 0;
	irq_owe(v, Q_EVENT);
}

/* After restore the transport may finish restoring queues after us, and the
 * guest will not kick its event queue on its own: try from the loop. */
static void restore_kick(void *ctx)
{
	struct vsock_dev *v = ctx;

	pthread_mutex_lock(&v->dev.lock);
	deliver_event(v);
	if (v->reset_event_pending && !v->dev.broken && ++v->event_retries < EVENT_RETRIES)
		event_loop_timer(v->loop, EVENT_RETRY_MS, restore_kick, v);
	rx_pump(v);
	irq_flush(v);
	pthread_mutex_unlock(&v->dev.lock);
}

/* ---- host sockets ---------------------------------------------------- */

static void hello_reject(struct vsock_dev *v, struct vsock_conn *c, const char *line)
{
	if (send(c->fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* best effort: the client is closed either way */
	}
	conn_close(v, c, 0);
}

/* Read the client's CONNECT line without consuming a byte past its '\n':
 * what follows is already data for the guest. */
static void hello_read(struct vsock_dev *v, struct vsock_conn *c)
{
	for (;;) {
		char *at = c->hello + c->hello_len;
		size_t room = sizeof(c->hello) - c->hello_len;
		ssize_t n = recv(c->fd, at, room, MSG_PEEK);
		const char *nl;
		uint32_t port;
		long r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_close(v, c, 0); /* gone before asking for anything */
			return;
		}
		nl = memchr(at, '\n', (size_t)n);
		n = recv(c->fd, at, nl ? (size_t)(nl - at + 1) : (size_t)n, 0);
		if (n <= 0) {
			conn_close(v, c, 0);
			return;
		}
		c->hello_len += (uint32_t)n;
		r = vsock_connect_parse(c->hello, c->hello_len, &port);
		if (r < 0) {
			hello_reject(v, c,
				     "ERROR expected \"CONNECT <port>\\n\" with a decimal port\n");
			return;
		}
		if (r > 0) {
			mark_once(v, &v->marked_connect, "vsock_first_connect");
			vsock_conn_connect(c, port);
			c->host_readable = 1; /* bytes after the line raise no new edge */
			return;
		}
	}
}

static void host_event(void *ctx, int fd, uint32_t events)
{
	struct vsock_dev *v = ctx;
	struct vsock_conn *c;

	pthread_mutex_lock(&v->dev.lock);
	/* Looked up by fd: the connection may have been closed (and its slot
	 * reused) between epoll_wait and now. */
	c = vsock_conn_find_fd(&v->t, fd);
	if (!c || v->dev.broken)
		goto out;
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->host_readable = 1; /* the read itself finds data, EOF or the error */
	switch (c->state) {
	case VSOCK_HOST_HELLO:
		hello_read(v, c);
		break;
	case VSOCK_CONNECTING:
		/* Keep the edge (host_readable) until the guest answers. */
		if ((events & EPOLLERR) && (c->send_ctl & VSOCK_SEND_REQUEST))
			conn_close(v, c, 0);
		else if (events & EPOLLERR)
			conn_close(v, c, 1);
		break;
	case VSOCK_ESTABLISHED:
		settle(v, c); /* flushes on EPOLLOUT */
		break;
	default:
		break;
	}
	rx_pump(v);
	irq_flush(v);
out:
	pthread_mutex_unlock(&v->dev.lock);
}

static int start_accepting(struct vsock_dev *v);

static void accept_resume(void *ctx)
{
	struct vsock_dev *v = ctx;

	pthread_mutex_lock(&v->dev.lock);
	if (v->accept_paused && !v->dev.broken) {
		v->accept_paused = 0;
		start_accepting(v);
	}
	pthread_mutex_unlock(&v->dev.lock);
}

static void listen_event(void *ctx, int fd, uint32_t events)
{
	struct vsock_dev *v = ctx;

	(void)events;
	pthread_mutex_lock(&v->dev.lock);
	for (int i = 0; i < ACCEPT_BATCH && v->accepting; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct vsock_conn *c;

		if (cfd < 0) {
			/* Out of fds the listener stays readable: polling it again
			 * at once would spin. Pause, and let the backlog wait. */
			if ((errno == EMFILE || errno == ENFILE) &&
			    event_loop_timer(v->loop, ACCEPT_PAUSE_MS, accept_resume, v) == 0) {
				stop_accepting(v);
				v->accept_paused = 1;
			}
			break;
		}
		c = vsock_conn_new_host(&v->t, cfd);
		if (!c) {
			static const char full[] = "ERROR too many vsock connections\n";

			if (send(cfd, full, sizeof(full) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* best effort */
			}
			close(cfd);
			continue;
		}
		if (event_loop_add(v->loop, cfd, HOST_EVENTS, host_event, v) < 0) {
			static const char busy[] = "ERROR kiln-vmm event loop full\n";

			if (send(cfd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* best effort */
			}
			conn_close(v, c, 0);
		}
	}
	pthread_mutex_unlock(&v->dev.lock);
}

static int start_accepting(struct vsock_dev *v)
{
	int err;

	if (v->accepting)
		return 0;
	if ((err = event_loop_add(v->loop, v->listen_fd, EPOLLIN, listen_event, v)) < 0)
		return err;
	v->accepting = 1;
	return 0;
}

/* ---- virtio ops ------------------------------------------------------ */

static uint64_t vsock_features(struct virtio_dev *d)
{
	(void)d;
	return 0; /* stream only: no VIRTIO_VSOCK_F_SEQPACKET */
}

static void vsock_read_config(struct virtio_dev *d, uint32_t off, void *buf, uint32_t len)
{
	uint64_t cid = htole64(to_vsock(d)->t.guest_cid);

	memcpy(buf, (uint8_t *)&cid + off, len); /* bounds checked by the transport */
}

static int vsock_activate(struct virtio_dev *d)
{
	struct vsock_dev *v = to_vsock(d);
	int err = start_accepting(v);

	if (err)
		return err;
	deliver_event(v);
	rx_pump(v); /* host clients that connected before the driver was ready */
	irq_flush(v);
	return 0;
}

static void vsock_notify(struct virtio_dev *d, int q)
{
	struct vsock_dev *v = to_vsock(d);

	if (q == Q_TX)
		tx_process(v);
	else if (q == Q_EVENT)
		deliver_event(v);
	rx_pump(v); /* rx kick: new buffers; tx: replies to send */
	irq_flush(v);
}

static void vsock_reset(struct virtio_dev *d)
{
	struct vsock_dev *v = to_vsock(d);

	stop_accepting(v);
	drop_all(v);
	v->reset_event_pending = 0;
}

/*
 * Before the transport's state is saved (vmm/snapshot/vm_snapshot.c saves the
 * device first): held rx chains go back to the avail ring, where the
 * guest still has them, so the snapshot's queue state does not count
 * them as taken. Without this every snapshot would cost the restored
 * guest up to RX_BATCH rx buffers for good. This device takes them again
 * at its next rx pump.
 */
static long vsock_save(struct virtio_dev *d, void *buf, size_t len)
{
	struct vsock_dev *v = to_vsock(d);
	struct vsock_saved s = { STATE_MAGIC, STATE_VERSION, v->t.guest_cid, v->t.next_port, 0 };

	if (len < sizeof(s))
		return -ENOSPC;
	virtq_unpop(&d->vq[Q_RX], (uint16_t)v->rx_held);
	v->rx_first = v->rx_held = 0;
	memcpy(buf, &s, sizeof(s));
	return (long)sizeof(s);
}

static int vsock_restore(struct virtio_dev *d, const void *buf, size_t len)
{
	struct vsock_dev *v = to_vsock(d);
	struct vsock_saved s;

	memset(&s, 0, sizeof(s));
	if (len != sizeof(s) && len != SAVED_V1_LEN)
		return -EINVAL;
	memcpy(&s, buf, len);
	/* The guest read its CID at probe time; another one would make every
	 * packet it sends look spoofed. */
	if (s.magic != STATE_MAGIC || s.guest_cid != v->t.guest_cid ||
	    !(s.version == STATE_VERSION
		      ? len == sizeof(s)
		      : s.version == STATE_VERSION_NO_PORT && len == SAVED_V1_LEN))
		return -EINVAL;
	drop_all(v);
	/* drop_all keeps the table's next port: the saved one (never below
	 * the first a host client gets) */
	if (s.version == STATE_VERSION)
		v->t.next_port = s.next_port < VSOCK_LOCAL_PORT_BASE ? VSOCK_LOCAL_PORT_BASE
								     : s.next_port;
	v->reset_event_pending = 1;
	v->event_retries = 0;
	if (start_accepting(v) < 0)
		return -EINVAL;
	if (event_loop_timer(v->loop, EVENT_RETRY_MS, restore_kick, v) < 0)
		return -EINVAL;
	return 0;
}

/*
 * The guest's last words. A guest that answers and then powers off (the
 * agent's reply to `shutdown`) can stop its vCPUs before the event loop
 * served the tx kick, so the answer would still sit in the tx ring, or in
 * a connection's buffer behind a full host socket. Pass on what is there,
 * without waiting: a host that does not read loses only what it did not
 * read. Only a live driver's queues are read; the ring is bounded. A
 * guest's new connection request is refused, not connected.
 */
static void last_words(struct vsock_dev *v)
{
	if (!active(v) || !v->dev.vq[Q_TX].ready)
		return;
	/* Data, shutdowns and resets of connections that exist: send, close
	 * and epoll_ctl, which the control role's filter allows. */
	v->draining = 1;
	tx_process(v);
	for (int i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct vsock_conn *c = v->t.conn[i];

		if (c && c->state == VSOCK_ESTABLISHED && c->fd >= 0)
			flush(v, c);
	}
	irq_flush(v);
}

static void vsock_destroy(struct virtio_dev *d)
{
	struct vsock_dev *v = to_vsock(d);

	stop_accepting(v);
	last_words(v);
	drop_all(v);
	if (v->listen_fd >= 0) {
		close(v->listen_fd);
		unlink(v->path);
	}
	pthread_mutex_destroy(&d->lock);
	free(v->rx_long);
	free(v);
}

static const struct virtio_dev_ops vsock_ops = {
	.name = "virtio-vsock",
	.device_id = VIRTIO_ID_VSOCK,
	.num_queues = NUM_QUEUES,
	.queue_max = VSOCK_QUEUE_MAX,
	.features = vsock_features,
	.config_len = sizeof(uint64_t),
	.read_config = vsock_read_config,
	.activate = vsock_activate,
	.notify = vsock_notify,
	.reset = vsock_reset,
	.save = vsock_save,
	.restore = vsock_restore,
	.destroy = vsock_destroy,
};

/* Bind `path`, replacing a stale socket file from an earlier run but not a
 * live one, nor anything that is not a socket. */
static int listen_at(const char *path, struct err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, err;

	strcpy(sa.sun_path, path); /* length checked by the caller */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return err_set(
				e, EEXIST,
				"vsock socket '%s': exists and is not a socket; remove it or pick another path",
				path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(fd);
			return err_set(
				e, EADDRINUSE,
				"vsock socket '%s': another process is listening there; pick another path",
				path);
		}
		if (fd >= 0)
			close(fd);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(e, errno, "vsock socket '%s': socket: %s", path, strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, SOMAXCONN) < 0) {
		err = errno;
		close(fd);
		return err_set(
			e, err,
			"vsock socket '%s': %s (is the directory writable and on a filesystem that allows sockets?)",
			path, strerror(err));
	}
	return fd;
}

int virtio_vsock_create(const struct virtio_vsock_config *cfg, struct event_loop *loop,
			struct virtio_dev **out, struct err *e)
{
	struct vsock_dev *v;
	size_t plen;
	int fd;

	/* vsock(7): 0 hypervisor, 1 local, 2 host; -1U is VMADDR_CID_ANY. */
	if (cfg->guest_cid < 3 || cfg->guest_cid >= UINT32_MAX)
		return err_set(e, EINVAL,
			       "vsock: guest CID %llu is reserved or too large; use 3 .. 4294967294",
			       (unsigned long long)cfg->guest_cid);
	if (!cfg->uds_path || !*cfg->uds_path)
		return err_set(e, EINVAL, "vsock: no Unix socket path given");
	plen = strlen(cfg->uds_path);
	/* Room for "_4294967295", the longest guest-port suffix, plus NUL. */
	if (plen + 11 >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return err_set(e, ENAMETOOLONG,
			       "vsock socket '%s': path too long for a Unix socket (max %zu bytes)",
			       cfg->uds_path, sizeof(((struct sockaddr_un *)0)->sun_path) - 12);
	v = calloc(1, sizeof(*v));
	if (!v)
		return err_set(e, ENOMEM, "vsock: out of memory");
	fd = listen_at(cfg->uds_path, e);
	if (fd < 0) {
		free(v);
		return fd;
	}
	v->listen_fd = fd;
	memcpy(v->path, cfg->uds_path, plen + 1);
	v->loop = loop;
	v->mark = cfg->mark;
	v->mark_ctx = cfg->mark_ctx;
	vsock_table_init(&v->t, cfg->guest_cid);
	v->dev.ops = &vsock_ops;
	v->dev.priv = v;
	pthread_mutex_init(&v->dev.lock, NULL);
	*out = &v->dev;
	return 0;
}
