#include "devices/vsock/vsock_proto.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_vsock.h>

#include "lib/base/mem_grow.h"

_Static_assert(sizeof(struct virtio_vsock_hdr) == VSOCK_HDR_SIZE, "vsock header is 44 bytes");
_Static_assert(VSOCK_TYPE_STREAM == VIRTIO_VSOCK_TYPE_STREAM, "type");
_Static_assert(VSOCK_OP_REQUEST == VIRTIO_VSOCK_OP_REQUEST &&
		       VSOCK_OP_RESPONSE == VIRTIO_VSOCK_OP_RESPONSE &&
		       VSOCK_OP_RST == VIRTIO_VSOCK_OP_RST &&
		       VSOCK_OP_SHUTDOWN == VIRTIO_VSOCK_OP_SHUTDOWN &&
		       VSOCK_OP_RW == VIRTIO_VSOCK_OP_RW &&
		       VSOCK_OP_CREDIT_UPDATE == VIRTIO_VSOCK_OP_CREDIT_UPDATE &&
		       VSOCK_OP_CREDIT_REQUEST == VIRTIO_VSOCK_OP_CREDIT_REQUEST,
	       "ops");
_Static_assert(VSOCK_SHUTDOWN_RCV == VIRTIO_VSOCK_SHUTDOWN_RCV &&
		       VSOCK_SHUTDOWN_SEND == VIRTIO_VSOCK_SHUTDOWN_SEND,
	       "shutdown flags");
_Static_assert(VSOCK_EVENT_TRANSPORT_RESET == VIRTIO_VSOCK_EVENT_TRANSPORT_RESET, "event id");

void vsock_hdr_decode(struct vsock_hdr *h, const void *raw)
{
	struct virtio_vsock_hdr w;

	memcpy(&w, raw, sizeof(w));
	h->src_cid = le64toh(w.src_cid);
	h->dst_cid = le64toh(w.dst_cid);
	h->src_port = le32toh(w.src_port);
	h->dst_port = le32toh(w.dst_port);
	h->len = le32toh(w.len);
	h->type = le16toh(w.type);
	h->op = le16toh(w.op);
	h->flags = le32toh(w.flags);
	h->buf_alloc = le32toh(w.buf_alloc);
	h->fwd_cnt = le32toh(w.fwd_cnt);
}

void vsock_hdr_encode(void *raw, const struct vsock_hdr *h)
{
	struct virtio_vsock_hdr w;

	w.src_cid = htole64(h->src_cid);
	w.dst_cid = htole64(h->dst_cid);
	w.src_port = htole32(h->src_port);
	w.dst_port = htole32(h->dst_port);
	w.len = htole32(h->len);
	w.type = htole16(h->type);
	w.op = htole16(h->op);
	w.flags = htole32(h->flags);
	w.buf_alloc = htole32(h->buf_alloc);
	w.fwd_cnt = htole32(h->fwd_cnt);
	memcpy(raw, &w, sizeof(w));
}

int vsock_hdr_check(const struct vsock_hdr *h, uint64_t guest_cid, uint64_t payload_avail)
{
	int bad;

	/* A spoofed source: an RST "back" would go to an address the guest
	 * chose, so the packet is simply dropped. */
	if (h->src_cid != guest_cid)
		return VSOCK_PKT_DROP;
	bad = h->dst_cid != VSOCK_HOST_CID || h->type != VSOCK_TYPE_STREAM ||
		h->op < VSOCK_OP_REQUEST || h->op > VSOCK_OP_CREDIT_REQUEST ||
		h->len > VSOCK_MAX_PAYLOAD || h->len > payload_avail;
	if (!bad)
		return VSOCK_PKT_OK;
	/* Never answer an RST with an RST: two peers could ping-pong forever. */
	return h->op == VSOCK_OP_RST ? VSOCK_PKT_DROP : VSOCK_PKT_RST;
}

void vsock_table_init(struct vsock_table *t, uint64_t guest_cid)
{
	memset(t, 0, sizeof(*t));
	t->guest_cid = guest_cid;
	t->next_port = VSOCK_LOCAL_PORT_BASE;
}

struct vsock_conn *vsock_conn_find(struct vsock_table *t, uint32_t local_port, uint32_t peer_port)
{
	for (int i = 0; i < VSOCK_MAX_CONNS; i++) {
		struct vsock_conn *c = t->conn[i];

		/* A host client still in HELLO has no guest port yet. */
		if (c && c->state > VSOCK_HOST_HELLO && c->local_port == local_port &&
		    c->peer_port == peer_port)
			return c;
	}
	return NULL;
}

struct vsock_conn *vsock_conn_find_fd(struct vsock_table *t, int fd)
{
	if (fd < 0)
		return NULL;
	for (int i = 0; i < VSOCK_MAX_CONNS; i++)
		if (t->conn[i] && t->conn[i]->fd == fd)
			return t->conn[i];
	return NULL;
}

/* A new connection in the first free slot (state VSOCK_FREE until the
 * caller sets one); NULL when all VSOCK_MAX_CONNS are taken or out of
 * memory. */
static struct vsock_conn *slot_new(struct vsock_table *t)
{
	struct vsock_conn *c;
	unsigned i;

	if (t->count >= VSOCK_MAX_CONNS)
		return NULL;
	for (i = 0; i < VSOCK_MAX_CONNS && t->conn[i]; i++)
		;
	if (i == VSOCK_MAX_CONNS || !(c = calloc(1, sizeof(*c))))
		return NULL;
	c->fd = -1;
	c->slot = i;
	t->conn[i] = c;
	t->count++;
	return c;
}

static int local_port_used(const struct vsock_table *t, uint32_t port)
{
	for (int i = 0; i < VSOCK_MAX_CONNS; i++)
		if (t->conn[i] && t->conn[i]->local_port == port)
			return 1;
	return 0;
}

struct vsock_conn *vsock_conn_new_host(struct vsock_table *t, int fd)
{
	struct vsock_conn *c = slot_new(t);

	if (!c)
		return NULL;
	/* At most VSOCK_MAX_CONNS ports are taken, so this ends quickly. */
	while (local_port_used(t, t->next_port))
		t->next_port = t->next_port == UINT32_MAX ? VSOCK_LOCAL_PORT_BASE
							  : t->next_port + 1;
	c->local_port = t->next_port;
	t->next_port = t->next_port == UINT32_MAX ? VSOCK_LOCAL_PORT_BASE : t->next_port + 1;
	c->state = VSOCK_HOST_HELLO;
	c->fd = fd;
	return c;
}

void vsock_conn_connect(struct vsock_conn *c, uint32_t port)
{
	c->peer_port = port;
	c->state = VSOCK_CONNECTING;
	c->send_ctl |= VSOCK_SEND_REQUEST;
}

void vsock_conn_accepted(struct vsock_conn *c, int fd)
{
	c->fd = fd;
	c->state = VSOCK_ESTABLISHED;
	c->send_ctl |= VSOCK_SEND_RESPONSE;
}

void vsock_conn_free(struct vsock_table *t, struct vsock_conn *c)
{
	if (!c)
		return;
	t->conn[c->slot] = NULL;
	free(c->buf);
	free(c);
	t->count--;
}

/* Double the full RST ring (up to VSOCK_RST_QUEUE). 0 or -ENOSPC. */
static int rst_grow(struct vsock_table *t)
{
	size_t cap = t->rst_cap * sizeof(*t->rst);
	struct vsock_rst *r = mem_grow(t->rst, &cap, cap + sizeof(*r), VSOCK_RST_FIRST * sizeof(*r),
				       VSOCK_RST_QUEUE * sizeof(*r));

	if (!r)
		return -ENOSPC;
	/* Full, so it wraps at the old end: [head, old cap) then [0, head).
	 * The second part moves after the first. */
	memcpy(r + t->rst_cap, r, t->rst_head * sizeof(*r));
	t->rst = r;
	t->rst_cap = (unsigned)(cap / sizeof(*r));
	return 0;
}

static int rst_push(struct vsock_table *t, uint64_t src_cid, uint32_t src_port, uint32_t dst_port)
{
	struct vsock_rst *r;

	if (t->rst_len == t->rst_cap && (t->rst_cap == VSOCK_RST_QUEUE || rst_grow(t) < 0)) {
		t->rst_dropped++;
		return -ENOSPC;
	}
	r = &t->rst[(t->rst_head + t->rst_len) % t->rst_cap];
	r->src_cid = src_cid;
	r->src_port = src_port;
	r->dst_port = dst_port;
	t->rst_len++;
	return 0;
}

void vsock_conn_reset(struct vsock_table *t, struct vsock_conn *c)
{
	if (!c)
		return;
	/* A host client in HELLO was never announced to the guest. */
	if (c->state != VSOCK_HOST_HELLO)
		rst_push(t, VSOCK_HOST_CID, c->local_port, c->peer_port);
	vsock_conn_free(t, c);
}

void vsock_table_clear(struct vsock_table *t)
{
	uint64_t cid = t->guest_cid;
	uint32_t port = t->next_port;

	for (int i = 0; i < VSOCK_MAX_CONNS; i++)
		vsock_conn_free(t, t->conn[i]);
	free(t->rst);
	vsock_table_init(t, cid);
	t->next_port = port; /* a fresh port is less confusing for host clients */
}

int vsock_table_rst_reply(struct vsock_table *t, const struct vsock_hdr *h)
{
	if (h->op == VSOCK_OP_RST)
		return 0;
	/* Mirror the addresses, so the guest matches it to its socket even
	 * when it aimed at a CID that is not ours. */
	return rst_push(t, h->dst_cid, h->dst_port, h->src_port);
}

int vsock_table_next_rst(struct vsock_table *t, struct vsock_hdr *h)
{
	const struct vsock_rst *r;

	if (!t->rst_len)
		return 0;
	r = &t->rst[t->rst_head];
	memset(h, 0, sizeof(*h));
	h->src_cid = r->src_cid;
	h->dst_cid = t->guest_cid;
	h->src_port = r->src_port;
	h->dst_port = r->dst_port;
	h->type = VSOCK_TYPE_STREAM;
	h->op = VSOCK_OP_RST;
	t->rst_head = (t->rst_head + 1) % t->rst_cap;
	t->rst_len--;
	return 1;
}

uint32_t vsock_conn_credit(const struct vsock_conn *c)
{
	/* 5.10.6.3: peer_free = buf_alloc - (tx_cnt - fwd_cnt), all modulo
	 * 2^32. A guest reporting fwd_cnt ahead of what we sent makes
	 * in_flight huge, which gives it no credit rather than unbounded. */
	uint32_t in_flight = c->tx_cnt - c->peer_fwd_cnt;
	uint32_t free_b;

	if (in_flight >= c->peer_buf_alloc)
		return 0;
	free_b = c->peer_buf_alloc - in_flight;
	return free_b > VSOCK_MAX_PAYLOAD ? VSOCK_MAX_PAYLOAD : free_b;
}

uint32_t vsock_conn_room(const struct vsock_conn *c)
{
	uint32_t used = c->rx_cnt - c->fwd_cnt;

	return used >= VSOCK_BUF_SIZE ? 0 : VSOCK_BUF_SIZE - used;
}

void vsock_conn_hdr(struct vsock_table *t, struct vsock_conn *c, uint16_t op, uint32_t len,
		    struct vsock_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->src_cid = VSOCK_HOST_CID;
	h->dst_cid = t->guest_cid;
	h->src_port = c->local_port;
	h->dst_port = c->peer_port;
	h->len = len;
	h->type = VSOCK_TYPE_STREAM;
	h->op = op;
	h->buf_alloc = VSOCK_BUF_SIZE;
	h->fwd_cnt = c->fwd_cnt;
	/* Every header carries our credit: no separate update is owed now. */
	c->fwd_cnt_sent = c->fwd_cnt;
	c->send_ctl &= ~VSOCK_SEND_CREDIT;
	if (op == VSOCK_OP_RW)
		c->tx_cnt += len;
}

int vsock_conn_next_ctl(struct vsock_table *t, struct vsock_conn *c, struct vsock_hdr *h)
{
	if (c->send_ctl & VSOCK_SEND_REQUEST) {
		c->send_ctl &= ~VSOCK_SEND_REQUEST;
		vsock_conn_hdr(t, c, VSOCK_OP_REQUEST, 0, h);
	} else if (c->send_ctl & VSOCK_SEND_RESPONSE) {
		c->send_ctl &= ~VSOCK_SEND_RESPONSE;
		vsock_conn_hdr(t, c, VSOCK_OP_RESPONSE, 0, h);
	} else if (c->send_ctl & VSOCK_SEND_SHUTDOWN) {
		c->send_ctl &= ~VSOCK_SEND_SHUTDOWN;
		vsock_conn_hdr(t, c, VSOCK_OP_SHUTDOWN, 0, h);
		h->flags = VSOCK_SHUTDOWN_SEND;
	} else if (c->send_ctl & VSOCK_SEND_CREDIT) {
		vsock_conn_hdr(t, c, VSOCK_OP_CREDIT_UPDATE, 0, h);
	} else {
		return 0;
	}
	return 1;
}

int vsock_conn_want_send(const struct vsock_conn *c)
{
	return c->state == VSOCK_ESTABLISHED && c->host_readable && !c->host_eof &&
		!(c->peer_shutdown & VSOCK_SHUTDOWN_RCV) && vsock_conn_credit(c) > 0;
}

void vsock_conn_forwarded(struct vsock_conn *c, uint32_t n)
{
	uint32_t unadvertised, guest_view_used;

	c->fwd_cnt += n;
	unadvertised = c->fwd_cnt - c->fwd_cnt_sent;
	if (!unadvertised)
		return;
	/* The guest believes only VSOCK_BUF_SIZE - guest_view_used is free.
	 * Tell it about freed space before that drops below one full packet
	 * (it would stall), or once a quarter of the buffer was freed, so
	 * updates are neither per byte nor too late. */
	guest_view_used = c->rx_cnt - c->fwd_cnt_sent;
	if (guest_view_used > VSOCK_BUF_SIZE - VSOCK_MAX_PAYLOAD ||
	    unadvertised >= VSOCK_BUF_SIZE / 4)
		c->send_ctl |= VSOCK_SEND_CREDIT;
}

void vsock_conn_host_eof(struct vsock_conn *c)
{
	if (c->host_eof)
		return;
	c->host_eof = 1;
	c->host_readable = 0;
	c->send_ctl |= VSOCK_SEND_SHUTDOWN;
}

int vsock_conn_done(const struct vsock_conn *c)
{
	const uint32_t both = VSOCK_SHUTDOWN_RCV | VSOCK_SHUTDOWN_SEND;

	if (c->state != VSOCK_ESTABLISHED || c->buf_len)
		return 0;
	if ((c->peer_shutdown & both) == both)
		return 1;
	return (c->peer_shutdown & VSOCK_SHUTDOWN_SEND) && c->host_eof;
}

enum vsock_action vsock_table_recv(struct vsock_table *t, const struct vsock_hdr *h,
				   uint64_t payload_avail, struct vsock_conn **cp)
{
	struct vsock_conn *c;
	int verdict = vsock_hdr_check(h, t->guest_cid, payload_avail);

	*cp = NULL;
	if (verdict == VSOCK_PKT_DROP)
		return VSOCK_ACT_NONE;
	if (verdict == VSOCK_PKT_RST) {
		vsock_table_rst_reply(t, h);
		return VSOCK_ACT_RESET;
	}
	c = vsock_conn_find(t, h->dst_port, h->src_port);
	if (!c) {
		if (h->op == VSOCK_OP_RST)
			return VSOCK_ACT_NONE;
		/* A packet for no connection is answered with RST (what the
		 * spec's stream section and Linux do); so is a REQUEST when
		 * the table is full. */
		if (h->op != VSOCK_OP_REQUEST || !(c = slot_new(t))) {
			vsock_table_rst_reply(t, h);
			return VSOCK_ACT_RESET;
		}
		c->state = VSOCK_CONNECTING;
		c->guest_initiated = 1;
		c->local_port = h->dst_port;
		c->peer_port = h->src_port;
		c->peer_buf_alloc = h->buf_alloc;
		c->peer_fwd_cnt = h->fwd_cnt;
		*cp = c;
		return VSOCK_ACT_CONNECT;
	}
	*cp = c;
	/* 5.10.6.3: every packet carries the sender's current credit. */
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;

	switch (h->op) {
	case VSOCK_OP_RESPONSE:
		if (c->state == VSOCK_CONNECTING && !c->guest_initiated) {
			c->state = VSOCK_ESTABLISHED;
			return VSOCK_ACT_ESTABLISHED;
		}
		break; /* a RESPONSE nobody asked for */
	case VSOCK_OP_RST:
		return VSOCK_ACT_CLOSE;
	case VSOCK_OP_SHUTDOWN:
		if (c->state != VSOCK_ESTABLISHED)
			break;
		c->peer_shutdown |= h->flags & (VSOCK_SHUTDOWN_RCV | VSOCK_SHUTDOWN_SEND);
		return VSOCK_ACT_UPDATE;
	case VSOCK_OP_RW:
		/* Data before RESPONSE, after the guest's own SHUTDOWN(SEND), or
		 * beyond the credit we granted: the stream cannot be trusted,
		 * and buffering it would be unbounded. */
		if (c->state != VSOCK_ESTABLISHED || (c->peer_shutdown & VSOCK_SHUTDOWN_SEND) ||
		    h->len > vsock_conn_room(c))
			break;
		c->rx_cnt += h->len;
		return VSOCK_ACT_DATA;
	case VSOCK_OP_CREDIT_UPDATE:
		return VSOCK_ACT_NONE; /* credit taken above; the rx pump may send now */
	case VSOCK_OP_CREDIT_REQUEST:
		c->send_ctl |= VSOCK_SEND_CREDIT;
		return VSOCK_ACT_NONE;
	default:
		break; /* REQUEST for a connection that exists */
	}
	rst_push(t, VSOCK_HOST_CID, c->local_port, c->peer_port);
	return VSOCK_ACT_RESET;
}

int vsock_conn_buf_put(struct vsock_conn *c, const void *src, uint32_t n)
{
	const uint8_t *s = src;
	uint32_t tail, first;

	if (n > VSOCK_BUF_SIZE - c->buf_len)
		return -ENOSPC;
	if (!n)
		return 0;
	if (!c->buf && !(c->buf = malloc(VSOCK_BUF_SIZE)))
		return -ENOMEM;
	tail = (c->buf_head + c->buf_len) % VSOCK_BUF_SIZE;
	first = VSOCK_BUF_SIZE - tail < n ? VSOCK_BUF_SIZE - tail : n;
	memcpy(c->buf + tail, s, first);
	memcpy(c->buf, s + first, n - first);
	c->buf_len += n;
	return 0;
}

uint32_t vsock_conn_buf_peek(const struct vsock_conn *c, const uint8_t **p)
{
	uint32_t n;

	if (!c->buf_len)
		return 0;
	n = VSOCK_BUF_SIZE - c->buf_head;
	*p = c->buf + c->buf_head;
	return n < c->buf_len ? n : c->buf_len;
}

void vsock_conn_buf_consume(struct vsock_conn *c, uint32_t n)
{
	if (n > c->buf_len)
		n = c->buf_len;
	c->buf_head = (c->buf_head + n) % VSOCK_BUF_SIZE;
	c->buf_len -= n;
	if (!c->buf_len) {
		/* Idle connections hold no buffer: 256 of them cost nothing. */
		free(c->buf);
		c->buf = NULL;
		c->buf_head = 0;
	}
}

long vsock_connect_parse(const char *buf, size_t len, uint32_t *port)
{
	static const char verb[] = "CONNECT ";
	const size_t vlen = sizeof(verb) - 1;
	uint64_t v = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];

		if (i >= VSOCK_CONNECT_MAX)
			return -EINVAL;
		if (i < vlen) {
			if (ch != verb[i])
				return -EINVAL;
			continue;
		}
		if (ch == '\n') {
			if (i == vlen)
				return -EINVAL; /* no digits */
			*port = (uint32_t)v;
			return (long)i + 1;
		}
		if (ch < '0' || ch > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(ch - '0');
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	/* No newline yet: wait for more, but not for ever. */
	return len >= VSOCK_CONNECT_MAX ? -EINVAL : 0;
}
