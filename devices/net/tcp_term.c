/*
 * tcp_term: the TCP endpoint for steered guest flows (tcp_term.h).
 */
#include "devices/net/tcp_term.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devices/net/siphash.h"
#include "devices/net/tcp_reset.h"
#include "lib/netrules/net_addr.h"

/* Sequence-space comparisons (RFC 9293 3.4: arithmetic modulo 2^32). */
static bool seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static bool seq_le(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) <= 0;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* --- rings ---------------------------------------------------------------- */

static void ring_put(struct tcp_term_ring *r, const uint8_t *p, uint32_t n)
{
	uint32_t at = (r->head + r->len) % r->cap, first = min32(n, r->cap - at);

	memcpy(r->buf + at, p, first);
	memcpy(r->buf, p + first, n - first);
	r->len += n;
}

static void ring_get(struct tcp_term_ring *r, uint8_t *p, uint32_t n)
{
	uint32_t first = min32(n, r->cap - r->head);

	memcpy(p, r->buf + r->head, first);
	memcpy(p + first, r->buf, n - first);
	r->head = (r->head + n) % r->cap;
	r->len -= n;
}

static void ring_drop(struct tcp_term_ring *r, uint32_t n)
{
	r->head = (r->head + n) % r->cap;
	r->len -= n;
}

/* n bytes from offset off of r as up to two pieces of s's payload. */
static void ring_pieces(const struct tcp_term_ring *r, uint32_t off, uint32_t n, struct tcp_seg *s)
{
	uint32_t at = (r->head + off) % r->cap, first = min32(n, r->cap - at);

	s->data[0] = r->buf + at;
	s->data_len[0] = first;
	s->data[1] = r->buf;
	s->data_len[1] = n - first;
}

/* --- the table ------------------------------------------------------------ */

const char *tcp_term_config_error(const struct tcp_term_config *cfg)
{
	if (cfg->capacity > TCP_TERM_MAX_CAPACITY)
		return "tcp_term: capacity above TCP_TERM_MAX_CAPACITY (4096 flows)";
	if (cfg->rx_buf && (cfg->rx_buf < TCP_TERM_MIN_BUF || cfg->rx_buf > TCP_TERM_MAX_RX_BUF))
		return "tcp_term: rx buffer must be 4 KiB to 64 KiB (no window scaling)";
	if (cfg->tx_buf && (cfg->tx_buf < TCP_TERM_MIN_BUF || cfg->tx_buf > TCP_TERM_MAX_TX_BUF))
		return "tcp_term: tx buffer must be 4 KiB to 1 MiB";
	return NULL;
}

int tcp_term_init(struct tcp_term *t, const struct tcp_term_config *cfg)
{
	size_t per;

	memset(t, 0, sizeof(*t));
	if (tcp_term_config_error(cfg))
		return -EINVAL;
	t->cfg = *cfg;
	if (!t->cfg.capacity)
		t->cfg.capacity = TCP_TERM_DEFAULT_CAPACITY;
	if (!t->cfg.rx_buf)
		t->cfg.rx_buf = TCP_TERM_DEFAULT_BUF;
	if (!t->cfg.tx_buf)
		t->cfg.tx_buf = TCP_TERM_DEFAULT_BUF;
	t->nbuckets = 1;
	while (t->nbuckets < t->cfg.capacity)
		t->nbuckets <<= 1;
	per = (size_t)t->cfg.rx_buf + t->cfg.tx_buf;
	t->heads = malloc(t->nbuckets * sizeof(*t->heads));
	t->flows = calloc(t->cfg.capacity, sizeof(*t->flows));
	/* calloc of this size maps zero pages: a flow's buffers cost memory once it uses them. */
	t->bufs = calloc(t->cfg.capacity, per);
	if (!t->heads || !t->flows || !t->bufs) {
		tcp_term_free(t);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->nbuckets; i++)
		t->heads[i] = TCP_TERM_NIL;
	for (uint32_t i = 0; i < t->cfg.capacity; i++) {
		struct tcp_term_flow *f = &t->flows[i];

		f->next = i + 1 < t->cfg.capacity ? i + 1 : TCP_TERM_NIL;
		f->rx.buf = t->bufs + i * per;
		f->rx.cap = t->cfg.rx_buf;
		f->tx.buf = f->rx.buf + t->cfg.rx_buf;
		f->tx.cap = t->cfg.tx_buf;
	}
	t->free_head = 0;
	t->txq_head = t->txq_tail = t->evq_head = t->evq_tail = TCP_TERM_NIL;
	return 0;
}

void tcp_term_clear(struct tcp_term *t)
{
	for (uint32_t i = 0; i < t->nbuckets; i++)
		t->heads[i] = TCP_TERM_NIL;
	for (uint32_t i = 0; i < t->cfg.capacity; i++) {
		struct tcp_term_flow *f = &t->flows[i];
		struct tcp_term_ring rx = f->rx, tx = f->tx;

		memset(f, 0, sizeof(*f));
		f->rx = rx;
		f->tx = tx;
		f->rx.head = f->rx.len = f->tx.head = f->tx.len = 0;
		f->next = i + 1 < t->cfg.capacity ? i + 1 : TCP_TERM_NIL;
	}
	t->count = 0;
	t->free_head = 0;
	t->txq_head = t->txq_tail = t->evq_head = t->evq_tail = TCP_TERM_NIL;
	t->rst_head = t->rst_len = 0;
}

void tcp_term_free(struct tcp_term *t)
{
	free(t->heads);
	free(t->flows);
	free(t->bufs);
	t->heads = NULL;
	t->flows = NULL;
	t->bufs = NULL;
}

uint32_t tcp_term_count(const struct tcp_term *t)
{
	return t->count;
}

static uint32_t idx(const struct tcp_term *t, const struct tcp_term_flow *f)
{
	return (uint32_t)(f - t->flows);
}

static uint32_t bucket(const struct tcp_term *t, const struct conntrack_key *k)
{
	return (uint32_t)siphash24(t->cfg.key, k, sizeof(*k)) & (t->nbuckets - 1);
}

static struct tcp_term_flow *lookup(struct tcp_term *t, const struct conntrack_key *k)
{
	for (uint32_t i = t->heads[bucket(t, k)]; i != TCP_TERM_NIL; i = t->flows[i].next)
		if (!memcmp(&t->flows[i].key, k, sizeof(*k)))
			return &t->flows[i];
	return NULL;
}

struct tcp_term_flow *tcp_term_find(struct tcp_term *t, const struct conntrack_key *k)
{
	return lookup(t, k);
}

/*
 * Give f's slot back. The queue links stay: a queue may still name the
 * slot, and finds it empty (or reused, which is as good) when it gets there.
 */
static void flow_free(struct tcp_term *t, struct tcp_term_flow *f)
{
	uint32_t *link = &t->heads[bucket(t, &f->key)], i = idx(t, f);
	struct tcp_term_ring rx = f->rx, tx = f->tx;
	bool in_txq = f->in_txq, in_evq = f->in_evq;
	uint32_t txq_next = f->txq_next, evq_next = f->evq_next;

	while (*link != i)
		link = &t->flows[*link].next;
	*link = f->next;
	memset(f, 0, sizeof(*f));
	f->rx = rx;
	f->tx = tx;
	f->rx.head = f->rx.len = f->tx.head = f->tx.len = 0;
	f->in_txq = in_txq;
	f->in_evq = in_evq;
	f->txq_next = txq_next;
	f->evq_next = evq_next;
	f->next = t->free_head;
	t->free_head = i;
	t->count--;
}

/* A slot for k, or NULL. A full table first gives up a TIME-WAIT flow the
 * caller no longer holds: it waits only for a retransmitted FIN, which a
 * lossless link does not make; a live flow is never evicted for a new one. */
static struct tcp_term_flow *flow_alloc(struct tcp_term *t, const struct conntrack_key *k)
{
	struct tcp_term_flow *f;
	uint32_t i, b;

	if (t->free_head == TCP_TERM_NIL) {
		for (i = 0; i < t->cfg.capacity; i++)
			if (t->flows[i].state == TCP_TERM_TIME_WAIT && !t->flows[i].owned) {
				flow_free(t, &t->flows[i]);
				break;
			}
		if (t->free_head == TCP_TERM_NIL)
			return NULL;
	}
	i = t->free_head;
	f = &t->flows[i];
	t->free_head = f->next;
	f->key = *k;
	b = bucket(t, k);
	f->next = t->heads[b];
	t->heads[b] = i;
	t->count++;
	return f;
}

/* --- queues --------------------------------------------------------------- */

static bool flow_has_output(const struct tcp_term_flow *f);

static void txq_push(struct tcp_term *t, struct tcp_term_flow *f, bool front)
{
	uint32_t i = idx(t, f);

	f->in_txq = true;
	f->txq_next = TCP_TERM_NIL;
	if (t->txq_head == TCP_TERM_NIL) {
		t->txq_head = t->txq_tail = i;
	} else if (front) {
		f->txq_next = t->txq_head;
		t->txq_head = i;
	} else {
		t->flows[t->txq_tail].txq_next = i;
		t->txq_tail = i;
	}
}

static struct tcp_term_flow *txq_pop(struct tcp_term *t)
{
	struct tcp_term_flow *f;

	if (t->txq_head == TCP_TERM_NIL)
		return NULL;
	f = &t->flows[t->txq_head];
	t->txq_head = f->txq_next;
	if (t->txq_head == TCP_TERM_NIL)
		t->txq_tail = TCP_TERM_NIL;
	f->in_txq = false;
	return f;
}

static void want_tx(struct tcp_term *t, struct tcp_term_flow *f)
{
	if (!f->in_txq && flow_has_output(f))
		txq_push(t, f, false);
}

/* Events go only to a caller that holds the flow. */
static void post(struct tcp_term *t, struct tcp_term_flow *f, enum tcp_term_event_kind kind)
{
	uint32_t i = idx(t, f);

	if (!f->owned)
		return;
	f->events |= (uint8_t)(1u << kind);
	if (f->in_evq)
		return;
	f->in_evq = true;
	f->evq_next = TCP_TERM_NIL;
	if (t->evq_head == TCP_TERM_NIL)
		t->evq_head = i;
	else
		t->flows[t->evq_tail].evq_next = i;
	t->evq_tail = i;
}

static void evq_pop(struct tcp_term *t, struct tcp_term_flow *f)
{
	t->evq_head = f->evq_next;
	if (t->evq_head == TCP_TERM_NIL)
		t->evq_tail = TCP_TERM_NIL;
	f->in_evq = false;
}

bool tcp_term_event(struct tcp_term *t, struct tcp_term_event *ev)
{
	while (t->evq_head != TCP_TERM_NIL) {
		struct tcp_term_flow *f = &t->flows[t->evq_head];
		int k;

		if (!f->events) {
			evq_pop(t, f); /* released or freed since */
			continue;
		}
		for (k = TCP_TERM_EV_OPEN; !(f->events & (1u << k)); k++)
			;
		f->events &= (uint8_t) ~(1u << k);
		memset(ev, 0, sizeof(*ev));
		ev->kind = (enum tcp_term_event_kind)k;
		ev->flow = f;
		ev->key = f->key;
		ev->reset = f->reset;
		if (!f->events)
			evq_pop(t, f); /* else the flow's next event comes next */
		return true;
	}
	return false;
}

/* --- windows -------------------------------------------------------------- */

static uint16_t our_mss(const struct tcp_term_flow *f)
{
	return f->key.family == NET_AF4 ? TCP_TERM_MSS4 : TCP_TERM_MSS6;
}

/* The window as announced (its right edge kept), 0 when passed. */
static uint32_t rcv_wnd(const struct tcp_term_flow *f)
{
	return seq_lt(f->rcv_nxt, f->rcv_adv) ? f->rcv_adv - f->rcv_nxt : 0;
}

/* The window rx's free space allows, at most 65535 (no window scaling). */
static uint32_t rcv_room(const struct tcp_term_flow *f)
{
	return min32(f->rx.cap - f->rx.len, 65535);
}

/* Receiver SWS avoidance (RFC 9293 3.8.6.2.2): the right edge moves only
 * by min(half the buffer, an MSS) at a time. */
static uint32_t sws_step(const struct tcp_term_flow *f)
{
	return min32(f->rx.cap / 2, our_mss(f));
}

/* The window to put in a segment now, moving the announced edge if the step is reached. */
static uint16_t announce(struct tcp_term_flow *f)
{
	uint32_t room = rcv_room(f), cur = rcv_wnd(f);

	if (room >= cur + sws_step(f)) {
		f->rcv_adv = f->rcv_nxt + room;
		cur = room;
	}
	return (uint16_t)cur;
}

/* --- output --------------------------------------------------------------- */

static bool synchronized(const struct tcp_term_flow *f)
{
	return f->state >= TCP_TERM_ESTABLISHED && f->state <= TCP_TERM_TIME_WAIT;
}

/* Whether we may still send data or our FIN. */
static bool sending(const struct tcp_term_flow *f)
{
	return f->state == TCP_TERM_ESTABLISHED || f->state == TCP_TERM_CLOSE_WAIT ||
		f->state == TCP_TERM_FIN_WAIT_1 || f->state == TCP_TERM_CLOSING ||
		f->state == TCP_TERM_LAST_ACK;
}

/* Bytes of tx to send next at snd_nxt, *fin whether our FIN goes with them. */
static uint32_t sendable(const struct tcp_term_flow *f, uint32_t room, bool *fin)
{
	uint32_t off = f->snd_nxt - f->snd_data, avail, usable = 0, n;
	uint32_t wnd_end = f->snd_una + f->snd_wnd;

	*fin = false;
	if (!sending(f) || seq_lt(f->snd_nxt, f->snd_data) || off > f->tx.len)
		return 0;
	avail = f->tx.len - off;
	if (seq_lt(f->snd_nxt, wnd_end))
		usable = wnd_end - f->snd_nxt;
	n = min32(min32(avail, usable), min32(f->mss, room));
	/* Sender SWS avoidance (RFC 9293 3.8.6.2.1): a segment smaller than
	 * the MSS goes only when it takes all there is, or half the largest
	 * window the guest has offered. */
	if (n < avail && n < f->mss && n < f->max_snd_wnd / 2 && n < room)
		n = 0;
	/* A FIN takes no room in the guest's buffer: it goes even on a zero
	 * window (Linux takes a bare FIN then). */
	*fin = f->shut && off + n == f->tx.len && f->snd_nxt + n == f->fin_seq;
	return n;
}

static bool flow_has_output(const struct tcp_term_flow *f)
{
	bool fin;

	if (f->state == TCP_TERM_FREE)
		return false;
	if (f->rst_now || f->synack_now)
		return true;
	if (f->state == TCP_TERM_SYN_RECEIVED || f->state == TCP_TERM_CLOSED)
		return false;
	return f->ack_now || f->probe_now || sendable(f, UINT32_MAX, &fin) || fin;
}

bool tcp_term_pending(const struct tcp_term *t)
{
	return t->rst_len || t->txq_head != TCP_TERM_NIL;
}

static void seg_base(const struct tcp_term *t, const struct tcp_term_flow *f, struct tcp_seg *s)
{
	memset(s, 0, sizeof(*s));
	s->family = f->key.family;
	memcpy(s->src_mac, t->cfg.gw_mac, 6);
	memcpy(s->dst_mac, t->cfg.guest_mac, 6);
	memcpy(s->src, f->key.remote, 16);
	memcpy(s->dst, f->key.guest, 16);
	s->sport = f->key.rport;
	s->dport = f->key.gport;
	s->ack = f->rcv_nxt;
	s->flags = PKT_TCP_ACK;
}

static void maybe_free(struct tcp_term *t, struct tcp_term_flow *f)
{
	if (f->state == TCP_TERM_CLOSED && !f->owned && !f->rst_now)
		flow_free(t, f);
}

/* Our FIN went out for the first time (RFC 9293 3.10.4, CLOSE). */
static void fin_out(struct tcp_term_flow *f)
{
	f->fin_sent = true;
	if (f->state == TCP_TERM_ESTABLISHED)
		f->state = TCP_TERM_FIN_WAIT_1;
	else if (f->state == TCP_TERM_CLOSE_WAIT)
		f->state = TCP_TERM_LAST_ACK;
}

/* The segment f sends next into out; its length, 0 when none fits. */
static size_t flow_frame(struct tcp_term *t, struct tcp_term_flow *f, uint8_t *out, size_t cap)
{
	struct tcp_seg s;
	size_t hdr, len;
	uint32_t n = 0;
	bool fin = false;

	seg_base(t, f, &s);
	if (f->rst_now) {
		/* The guest has all we sent (lossless), so snd_max is its rcv.nxt. */
		s.seq = f->snd_max;
		s.flags = PKT_TCP_RST | PKT_TCP_ACK;
		if (!(len = tcp_seg_build(&s, out, cap)))
			return 0;
		f->rst_now = false;
		t->stats.resets_out++;
		maybe_free(t, f);
		return len;
	}
	if (f->synack_now) {
		s.seq = f->iss;
		s.flags = PKT_TCP_SYN | PKT_TCP_ACK;
		s.mss = our_mss(f);
		f->rcv_adv = f->rcv_nxt + rcv_room(f);
		s.window = (uint16_t)rcv_wnd(f);
		if (!(len = tcp_seg_build(&s, out, cap)))
			return 0;
		f->synack_now = false;
		f->snd_nxt = f->snd_max = f->iss + 1;
		return len;
	}
	if (f->probe_now) {
		/* RFC 9293 3.8.6.1: a segment the guest must answer with its window. */
		s.seq = f->snd_una - 1;
		s.window = announce(f);
		if (!(len = tcp_seg_build(&s, out, cap)))
			return 0;
		f->probe_now = false;
		return len;
	}
	hdr = tcp_seg_hdr_len(&s);
	if (cap < hdr)
		return 0;
	n = sendable(f, cap - hdr > UINT32_MAX ? UINT32_MAX : (uint32_t)(cap - hdr), &fin);
	if (!n && !fin && !f->ack_now)
		return 0;
	s.seq = f->snd_nxt;
	ring_pieces(&f->tx, f->snd_nxt - f->snd_data, n, &s);
	if (n && f->snd_nxt - f->snd_data + n == f->tx.len)
		s.flags |= TCP_SEG_PSH;
	if (fin)
		s.flags |= PKT_TCP_FIN;
	s.window = announce(f);
	if (!(len = tcp_seg_build(&s, out, cap)))
		return 0;
	f->ack_now = false;
	f->snd_nxt += n + fin;
	if (seq_lt(f->snd_max, f->snd_nxt))
		f->snd_max = f->snd_nxt;
	if (fin && !f->fin_sent)
		fin_out(f);
	return len;
}

static size_t rst_frame(struct tcp_term *t, uint8_t *out, size_t cap)
{
	size_t len = tcp_seg_build(&t->rsts[t->rst_head], out, cap);

	if (len) {
		t->rst_head = (t->rst_head + 1) % TCP_TERM_RST_QUEUE;
		t->rst_len--;
		t->stats.resets_out++;
	}
	return len;
}

size_t tcp_term_next_frame(struct tcp_term *t, uint8_t *frame, size_t cap, uint64_t now_ns)
{
	struct tcp_term_flow *f;
	size_t len;

	(void)now_ns;
	if (t->rst_len)
		return rst_frame(t, frame, cap);
	while ((f = txq_pop(t))) {
		if (!flow_has_output(f))
			continue; /* freed, or its output went with another segment */
		len = flow_frame(t, f, frame, cap);
		if (!len) {
			txq_push(t, f, true); /* does not fit: it waits at the front */
			return 0;
		}
		want_tx(t, f); /* more: behind the others, so flows take turns */
		return len;
	}
	return 0;
}

/* --- input ---------------------------------------------------------------- */

/* The segment being handled: the fields RFC 9293 3.10.7.4 names. */
struct in_seg {
	uint32_t seq, ack, len; /* len: SEG.LEN, payload plus SYN and FIN */
	uint16_t wnd;
	uint8_t flags;
	const uint8_t *data;
	uint32_t dlen;
};

/* Answer p as a closed port would (RFC 9293 3.10.7.1), from the RST queue. */
static void rst_queue(struct tcp_term *t, const struct pkt *p)
{
	struct tcp_seg *s;

	if (t->rst_len == TCP_TERM_RST_QUEUE) {
		t->stats.rst_queue_full++;
		return;
	}
	s = &t->rsts[(t->rst_head + t->rst_len) % TCP_TERM_RST_QUEUE];
	if (!tcp_reset_seg(p, s))
		return;
	memcpy(s->src_mac, t->cfg.gw_mac, 6);
	memcpy(s->dst_mac, t->cfg.guest_mac, 6);
	t->rst_len++;
}

/* The guest's MSS option in its SYN, or the default; every option's length checked. */
static uint16_t syn_mss(const struct pkt *p)
{
	size_t doff = (size_t)(p->l4[12] >> 4) * 4, i = 20;
	uint16_t mss = p->src.family == NET_AF4 ? TCP_TERM_DEFAULT_MSS4 : TCP_TERM_DEFAULT_MSS6;
	uint16_t ours = p->src.family == NET_AF4 ? TCP_TERM_MSS4 : TCP_TERM_MSS6;

	while (i < doff && p->l4[i] != 0) {
		if (p->l4[i] == 1) {
			i++;
			continue;
		}
		/* A malformed list ends the walk: the rest of it is not trusted. */
		if (i + 1 >= doff || p->l4[i + 1] < 2 || i + p->l4[i + 1] > doff)
			break;
		if (p->l4[i] == 2 && p->l4[i + 1] == 4)
			mss = tcp_seg_get16(p->l4 + i + 2);
		i += p->l4[i + 1];
	}
	if (mss < TCP_TERM_MIN_MSS)
		mss = TCP_TERM_MIN_MSS;
	return mss < ours ? mss : ours;
}

/*
 * RFC 6528: ISN = M + F(4-tuple, secret), M a 4-microsecond timer. F hashes
 * the 4-tuple with a tag byte, not as bucket() does: the guest sees every
 * ISN, and with the table's own hash in it (less a clock it can estimate)
 * it could pick ports that all chain in one bucket.
 */
static uint32_t isn(const struct tcp_term *t, const struct conntrack_key *k, uint64_t now_ns)
{
	uint8_t in[sizeof(*k) + 1];

	memcpy(in, k, sizeof(*k));
	in[sizeof(*k)] = 'I';
	return (uint32_t)siphash24(t->cfg.key, in, sizeof(in)) + (uint32_t)(now_ns / 4000);
}

static void open_flow(struct tcp_term *t, const struct pkt *p, const struct conntrack_key *k,
		      const struct in_seg *g, uint64_t now_ns)
{
	struct tcp_term_flow *f = flow_alloc(t, k);

	if (!f) {
		/* Refused like a closed port, so the guest fails at once
		 * instead of retrying its SYN for a minute. */
		t->stats.refused_full++;
		rst_queue(t, p);
		return;
	}
	f->state = TCP_TERM_SYN_RECEIVED;
	f->irs = g->seq;
	f->rcv_nxt = g->seq +
		1; /* data on a SYN is not taken (no TCP Fast Open): the guest sends it again */
	f->iss = isn(t, k, now_ns);
	f->snd_una = f->snd_nxt = f->snd_max = f->iss;
	f->snd_data = f->iss + 1;
	f->snd_wnd = g->wnd; /* RFC 7323 2.2: a SYN's window is never scaled */
	f->rcv_adv = f->rcv_nxt + rcv_room(f);
	f->mss = syn_mss(p);
	f->idle_since_ns = now_ns;
	f->synack_now = true;
	t->stats.opened++;
	want_tx(t, f);
}

/* The flow is over by a reset (received, or sent when rst is set). */
static void reset_flow(struct tcp_term *t, struct tcp_term_flow *f, bool rst)
{
	f->state = TCP_TERM_CLOSED;
	f->reset = true;
	f->rst_now = rst;
	f->ack_now = f->probe_now = f->synack_now = false;
	f->rx.len = f->rx.head = 0;
	f->tx.len = f->tx.head = 0;
	post(t, f, TCP_TERM_EV_CLOSED);
	want_tx(t, f);
	maybe_free(t, f);
}

/* Both FINs are through: TIME-WAIT (we closed first) or CLOSED. */
static void closed_by_fins(struct tcp_term *t, struct tcp_term_flow *f, uint8_t state,
			   uint64_t now_ns)
{
	f->state = state;
	f->time_wait_ns = now_ns;
	post(t, f, TCP_TERM_EV_CLOSED);
	maybe_free(t, f);
}

/* RFC 9293 3.10.7.4, first check: the segment's sequence numbers in the window. */
static bool acceptable(const struct tcp_term_flow *f, const struct in_seg *g)
{
	uint32_t wnd = rcv_wnd(f), end = g->seq + g->len - 1;

	if (g->len == 0)
		return wnd == 0 ? g->seq == f->rcv_nxt
				: seq_le(f->rcv_nxt, g->seq) && seq_lt(g->seq, f->rcv_nxt + wnd);
	/* A bare FIN at rcv.nxt needs no buffer: taken on a zero window (as Linux does). */
	if (g->seq == f->rcv_nxt && !g->dlen && (g->flags & PKT_TCP_FIN))
		return true;
	if (wnd == 0)
		return false;
	return (seq_le(f->rcv_nxt, g->seq) && seq_lt(g->seq, f->rcv_nxt + wnd)) ||
		(seq_le(f->rcv_nxt, end) && seq_lt(end, f->rcv_nxt + wnd));
}

/*
 * The guest used the flow now: its idle clock restarts. Not for a flow the
 * host released: there only progress counts (take_ack), so keepalives or a
 * zero window answered probe after probe cannot hold the slot (Linux bounds
 * its orphans likewise: tcp_fin_timeout, tcp_orphan_retries).
 */
static void guest_used(struct tcp_term_flow *f, uint64_t now_ns)
{
	if (!f->released)
		f->idle_since_ns = now_ns;
}

/* The fifth check: the ACK field (RFC 9293, RFC 5961 section 5). False: drop the segment. */
static bool take_ack(struct tcp_term *t, struct tcp_term_flow *f, const struct in_seg *g,
		     uint64_t now_ns)
{
	uint32_t acked, data;

	if (seq_lt(f->snd_max, g->ack)) {
		/* It acknowledges what we never sent. */
		f->ack_now = true;
		return false;
	}
	if (seq_lt(g->ack, f->snd_una - f->max_snd_wnd)) {
		/* Too old to be a late duplicate: a blind injection (RFC 5961 5.2). */
		f->ack_now = true;
		t->stats.challenge_acks++;
		return false;
	}
	if (seq_lt(f->snd_una, g->ack)) {
		acked = g->ack - f->snd_una;
		data = min32(g->ack - f->snd_data, f->tx.len);
		if (seq_lt(g->ack, f->snd_data))
			data = 0;
		ring_drop(&f->tx, data);
		f->snd_data += data;
		f->snd_una += acked;
		f->idle_since_ns = now_ns; /* progress, released or not */
		if (seq_lt(f->snd_nxt, f->snd_una))
			f->snd_nxt = f->snd_una;
		/* Half free: the caller wakes for a write worth making, not
		 * for every acknowledged segment. */
		if (f->want_writable && f->tx.cap - f->tx.len >= f->tx.cap / 2) {
			f->want_writable = false;
			post(t, f, TCP_TERM_EV_WRITABLE);
		}
	}
	/* The send window, from the newest segment only (RFC 9293 3.10.7.4, SND.WL1/WL2). */
	if (f->snd_una == g->ack &&
	    (seq_lt(f->snd_wl1, g->seq) || (f->snd_wl1 == g->seq && seq_le(f->snd_wl2, g->ack)))) {
		f->snd_wnd = g->wnd;
		f->snd_wl1 = g->seq;
		f->snd_wl2 = g->ack;
		if (g->wnd > f->max_snd_wnd)
			f->max_snd_wnd = g->wnd;
	}
	/* Our FIN acknowledged. */
	if (f->fin_sent && f->snd_una == f->fin_seq + 1) {
		if (f->state == TCP_TERM_FIN_WAIT_1)
			f->state = TCP_TERM_FIN_WAIT_2;
		else if (f->state == TCP_TERM_CLOSING)
			closed_by_fins(t, f, TCP_TERM_TIME_WAIT, now_ns);
		else if (f->state == TCP_TERM_LAST_ACK)
			closed_by_fins(t, f, TCP_TERM_CLOSED, now_ns);
	}
	return true;
}

/* The seventh and eighth checks: the payload and FIN. */
static void take_data(struct tcp_term *t, struct tcp_term_flow *f, const struct in_seg *g,
		      uint64_t now_ns)
{
	uint32_t skip = 0, take, want;

	if (!g->dlen && !(g->flags & PKT_TCP_FIN))
		return;
	/* After the guest's FIN nothing more is taken (RFC 9293: "This should
	 * not occur since a FIN has been received"); a repeated FIN is
	 * answered by the acceptability check's ACK. */
	if (f->fin_rcvd || f->state == TCP_TERM_CLOSED)
		return;
	if (seq_lt(f->rcv_nxt, g->seq)) {
		/* Out of order: not kept (nothing the guest can fill), a
		 * duplicate ACK says where we are. */
		f->ack_now = true;
		return;
	}
	skip = f->rcv_nxt - g->seq;
	want = g->dlen > skip ? g->dlen - skip : 0;
	if (want && f->released) {
		/* Data for a flow the host closed: RFC 9293 3.10.4 and Linux reset it. */
		reset_flow(t, f, true);
		return;
	}
	take = min32(want, min32(rcv_wnd(f), f->rx.cap - f->rx.len));
	if (take) {
		ring_put(&f->rx, g->data + skip, take);
		f->rcv_nxt += take;
		post(t, f, TCP_TERM_EV_READABLE);
	}
	f->ack_now = true;
	if (!(g->flags & PKT_TCP_FIN) || take < want || g->seq + g->dlen != f->rcv_nxt)
		return;
	f->rcv_nxt++;
	f->fin_rcvd = true;
	post(t, f, TCP_TERM_EV_EOF);
	if (f->state == TCP_TERM_ESTABLISHED)
		f->state = TCP_TERM_CLOSE_WAIT;
	else if (f->state == TCP_TERM_FIN_WAIT_1)
		f->state = TCP_TERM_CLOSING;
	else if (f->state == TCP_TERM_FIN_WAIT_2)
		closed_by_fins(t, f, TCP_TERM_TIME_WAIT, now_ns);
}

/* SYN-RECEIVED: the ACK that completes the handshake (RFC 9293 3.10.7.4). */
static bool handshake(struct tcp_term *t, struct tcp_term_flow *f, const struct pkt *p,
		      const struct in_seg *g)
{
	if (f->snd_max != f->iss + 1 || g->ack != f->iss + 1) {
		/* Not our SYN's: <SEQ=SEG.ACK><CTL=RST>, the flow kept. */
		rst_queue(t, p);
		t->stats.dropped++;
		return false;
	}
	f->state = TCP_TERM_ESTABLISHED;
	f->snd_una = f->iss + 1;
	f->snd_wnd = f->max_snd_wnd = g->wnd;
	f->snd_wl1 = g->seq;
	f->snd_wl2 = g->ack;
	f->owned = true;
	post(t, f, TCP_TERM_EV_OPEN);
	return true;
}

static void flow_input(struct tcp_term *t, struct tcp_term_flow *f, const struct pkt *p,
		       const struct in_seg *g, uint64_t now_ns)
{
	if (f->state == TCP_TERM_SYN_RECEIVED && (g->flags & PKT_TCP_SYN) &&
	    !(g->flags & (PKT_TCP_ACK | PKT_TCP_RST)) && g->seq == f->irs) {
		/* The guest's SYN again: our SYN-ACK was late. The same answer. */
		f->synack_now = true;
		return;
	}
	if (!acceptable(f, g)) {
		/* A reset out of the window is dropped silently; anything else
		 * gets an ACK saying what we expect (RFC 9293 3.10.7.4). */
		if (!(g->flags & PKT_TCP_RST))
			f->ack_now = true;
		t->stats.dropped++;
		/* "Special allowance should be made to accept valid ACKs" on a
		 * zero window: data at rcv.nxt that only our full rx refuses
		 * still acknowledges what we sent, or a guest that sends while
		 * we send would stall both directions. */
		if (g->seq == f->rcv_nxt && rcv_wnd(f) == 0 && synchronized(f) &&
		    (g->flags & (PKT_TCP_ACK | PKT_TCP_RST | PKT_TCP_SYN)) == PKT_TCP_ACK) {
			guest_used(f, now_ns);
			take_ack(t, f, g, now_ns);
		}
		/* A keepalive (RFC 9293 3.8.4: SEG.SEQ = rcv.nxt - 1, at most
		 * one byte) is answered by the ACK above, and says the flow
		 * is in use: it holds the idle timeout off as any segment the
		 * guest could send would. */
		if (g->seq == f->rcv_nxt - 1 && g->dlen <= 1 &&
		    (g->flags & (PKT_TCP_ACK | PKT_TCP_RST | PKT_TCP_SYN | PKT_TCP_FIN)) ==
			    PKT_TCP_ACK)
			guest_used(f, now_ns);
		return;
	}
	if (g->flags & PKT_TCP_RST) {
		/* RFC 5961 section 3: only a reset exactly at rcv.nxt is taken;
		 * one elsewhere in the window gets a challenge ACK, so a blind
		 * guess has to hit one number in 2^32, not one window. */
		if (g->seq != f->rcv_nxt) {
			f->ack_now = true;
			t->stats.challenge_acks++;
			return;
		}
		t->stats.resets_in++;
		if (f->state == TCP_TERM_SYN_RECEIVED) {
			flow_free(t, f); /* back to LISTEN: nothing was reported */
			return;
		}
		reset_flow(t, f, false);
		return;
	}
	if (g->flags & PKT_TCP_SYN) {
		/* RFC 5961 section 4: a SYN in a synchronized state is answered
		 * with a challenge ACK, never a reset (a blind SYN must not cut
		 * the flow). */
		f->ack_now = true;
		t->stats.challenge_acks++;
		return;
	}
	if (!(g->flags & PKT_TCP_ACK)) {
		t->stats.dropped++; /* RFC 9293: without ACK, drop */
		return;
	}
	guest_used(f, now_ns);
	if (f->state == TCP_TERM_SYN_RECEIVED && !handshake(t, f, p, g))
		return;
	if (!take_ack(t, f, g, now_ns))
		return;
	if (f->state != TCP_TERM_FREE)
		take_data(t, f, g, now_ns);
}

int tcp_term_input(struct tcp_term *t, const struct pkt *p, uint64_t now_ns)
{
	struct conntrack_key k;
	struct tcp_term_flow *f;
	struct in_seg g;
	size_t doff;

	if ((p->l3 != PKT_L3_IP4 && p->l3 != PKT_L3_IP6) || p->proto != PKT_PROTO_TCP ||
	    !(p->flags & PKT_F_L4) || (p->flags & (PKT_F_FRAG | PKT_F_FRAG_LATER)) || !p->l4 ||
	    p->l4_len < 20 || p->src.family != p->dst.family) {
		t->stats.not_for_us++;
		return -EINVAL;
	}
	t->stats.segments++;
	doff = (size_t)(p->l4[12] >> 4) * 4;
	if (doff < 20 || doff > p->l4_len || p->payload_len > 0xffff) {
		t->stats.not_for_us++;
		return -EINVAL; /* pkt_parse refuses these: not a segment it parsed */
	}
	if (!tcp_seg_checksum_ok(p)) {
		t->stats.bad_checksum++;
		return 0;
	}
	memset(&k, 0, sizeof(k));
	k.family = p->src.family;
	k.proto = PKT_PROTO_TCP;
	k.gport = p->sport;
	k.rport = p->dport;
	memcpy(k.guest, p->src.b, 16);
	memcpy(k.remote, p->dst.b, 16);
	memset(&g, 0, sizeof(g));
	g.seq = tcp_seg_get32(p->l4 + 4);
	g.ack = tcp_seg_get32(p->l4 + 8);
	g.flags = p->l4[13];
	g.wnd = tcp_seg_get16(p->l4 + 14);
	g.data = p->payload;
	g.dlen = (uint32_t)p->payload_len;
	g.len = g.dlen + !!(g.flags & PKT_TCP_SYN) + !!(g.flags & PKT_TCP_FIN);

	f = lookup(t, &k);
	if (f && (g.flags & PKT_TCP_SYN) && !(g.flags & (PKT_TCP_ACK | PKT_TCP_RST)) &&
	    ((f->state == TCP_TERM_TIME_WAIT && !f->owned) ||
	     (f->state == TCP_TERM_SYN_RECEIVED && g.seq != f->irs))) {
		/* A new connection on a TIME-WAIT 4-tuple (RFC 6191: no old
		 * duplicates here to mistake it for), or a SYN-RECEIVED one
		 * whose guest started over: the old flow goes, nothing of it
		 * was the caller's. */
		flow_free(t, f);
		f = NULL;
	}
	if (f && f->state == TCP_TERM_CLOSED) {
		/* Over: answered as a closed port, unless our reset is about to go. */
		if (!f->rst_now && !(g.flags & PKT_TCP_RST))
			rst_queue(t, p);
		t->stats.dropped++;
		return 0;
	}
	if (f) {
		flow_input(t, f, p, &g, now_ns);
		if (f->state != TCP_TERM_FREE)
			want_tx(t, f);
		return 0;
	}
	if (g.flags & PKT_TCP_RST) {
		t->stats.dropped++; /* never reset a reset */
		return 0;
	}
	if ((g.flags & (PKT_TCP_SYN | PKT_TCP_ACK | PKT_TCP_FIN)) == PKT_TCP_SYN) {
		open_flow(t, p, &k, &g, now_ns);
		return 0;
	}
	/* SYN+FIN is dropped as Linux's LISTEN does (no connection opens and
	 * closes in one segment); anything else of no flow is answered as a
	 * closed port (RFC 9293 3.10.7.1): data before the handshake too. */
	t->stats.dropped++;
	if ((g.flags & (PKT_TCP_SYN | PKT_TCP_FIN)) != (PKT_TCP_SYN | PKT_TCP_FIN))
		rst_queue(t, p);
	return 0;
}

/* --- the host side -------------------------------------------------------- */

size_t tcp_term_readable(const struct tcp_term_flow *f)
{
	return f->rx.len;
}

size_t tcp_term_read(struct tcp_term *t, struct tcp_term_flow *f, uint8_t *buf, size_t cap,
		     uint64_t now_ns)
{
	uint32_t n = (uint32_t)(cap < f->rx.len ? cap : f->rx.len), before = rcv_wnd(f);

	if (!n)
		return 0;
	ring_get(&f->rx, buf, n);
	f->idle_since_ns = now_ns;
	/* A window update when the window grew from too small to send a full
	 * segment into to a useful one (RFC 9293 3.8.6.2.2); otherwise the
	 * guest learns the new edge from our next ACK. */
	if (synchronized(f) && !f->fin_rcvd && before < sws_step(f) &&
	    rcv_room(f) >= before + sws_step(f)) {
		f->ack_now = true;
		want_tx(t, f);
	}
	return n;
}

size_t tcp_term_write(struct tcp_term *t, struct tcp_term_flow *f, const uint8_t *data, size_t len,
		      uint64_t now_ns)
{
	uint32_t n;

	if (f->shut || (f->state != TCP_TERM_ESTABLISHED && f->state != TCP_TERM_CLOSE_WAIT))
		return 0;
	n = (uint32_t)(len < f->tx.cap - f->tx.len ? len : f->tx.cap - f->tx.len);
	if (n < len)
		f->want_writable = true;
	ring_put(&f->tx, data, n);
	f->idle_since_ns = now_ns;
	want_tx(t, f);
	return n;
}

void tcp_term_shutdown(struct tcp_term *t, struct tcp_term_flow *f, uint64_t now_ns)
{
	if (f->shut || (f->state != TCP_TERM_ESTABLISHED && f->state != TCP_TERM_CLOSE_WAIT))
		return;
	f->shut = true;
	f->fin_seq = f->snd_data + f->tx.len;
	f->idle_since_ns = now_ns;
	want_tx(t, f);
}

static void let_go(struct tcp_term_flow *f)
{
	f->owned = false;
	f->released = true;
	f->events = 0;
}

void tcp_term_abort(struct tcp_term *t, struct tcp_term_flow *f)
{
	let_go(f);
	if (f->state == TCP_TERM_CLOSED || f->state == TCP_TERM_TIME_WAIT) {
		maybe_free(t, f);
		return;
	}
	reset_flow(t, f, true);
}

void tcp_term_release(struct tcp_term *t, struct tcp_term_flow *f, uint64_t now_ns)
{
	if (f->rx.len && f->state != TCP_TERM_CLOSED && f->state != TCP_TERM_TIME_WAIT) {
		tcp_term_abort(t, f); /* unread data: the guest must not believe it arrived */
		return;
	}
	tcp_term_shutdown(t, f, now_ns);
	let_go(f);
	maybe_free(t, f);
}

/* --- time ----------------------------------------------------------------- */

/*
 * Sent and unacknowledged, or unsent data the window holds back: closed,
 * or open but too short for the sender's SWS rule (RFC 9293 3.8.6.2.1 has
 * an override timeout for it; a probe does here).
 */
static bool waiting_on_guest(const struct tcp_term_flow *f)
{
	bool fin;

	if (!sending(f) && f->state != TCP_TERM_FIN_WAIT_2)
		return false;
	return f->snd_una != f->snd_max ||
		(f->snd_nxt - f->snd_data < f->tx.len && !sendable(f, UINT32_MAX, &fin));
}

static void stall_check(struct tcp_term *t, struct tcp_term_flow *f, uint64_t now_ns)
{
	if (!waiting_on_guest(f)) {
		f->stall_since_ns = 0;
		return;
	}
	if (!f->stall_since_ns || f->stall_una != f->snd_una) {
		f->stall_una = f->snd_una;
		f->stall_since_ns = now_ns;
		return;
	}
	if (now_ns - f->stall_since_ns < TCP_TERM_STALL_NS)
		return;
	/* Go back to the first byte the guest has not acknowledged. */
	f->snd_nxt = f->snd_una;
	/* The guest answers a probe with its window: for a closed one, and
	 * for a short one whose update the guest sent but we never saw. */
	if (f->snd_wnd == 0 || f->snd_una == f->snd_max)
		f->probe_now = true;
	f->stall_since_ns = now_ns;
	t->stats.rewinds++;
	want_tx(t, f);
}

static uint64_t idle_limit(const struct tcp_term_flow *f)
{
	switch (f->state) {
	case TCP_TERM_SYN_RECEIVED:
		return TCP_TERM_TO_SYN_RECEIVED;
	case TCP_TERM_ESTABLISHED:
		/* Released: only its last bytes and FIN are left to deliver. */
		return f->released ? TCP_TERM_TO_HALF_CLOSED : TCP_TERM_TO_ESTABLISHED;
	case TCP_TERM_CLOSE_WAIT:
	case TCP_TERM_FIN_WAIT_1:
	case TCP_TERM_FIN_WAIT_2:
	case TCP_TERM_CLOSING:
	case TCP_TERM_LAST_ACK:
		return TCP_TERM_TO_HALF_CLOSED;
	default:
		return 0; /* TIME-WAIT and CLOSED: not by idleness */
	}
}

void tcp_term_expire(struct tcp_term *t, uint64_t now_ns)
{
	for (uint32_t i = 0; i < t->cfg.capacity; i++) {
		struct tcp_term_flow *f = &t->flows[i];
		uint64_t limit = idle_limit(f);

		if (f->state == TCP_TERM_FREE)
			continue;
		if (f->state == TCP_TERM_TIME_WAIT) {
			if (now_ns - f->time_wait_ns >= TCP_TERM_TO_TIME_WAIT) {
				f->state = TCP_TERM_CLOSED;
				maybe_free(t, f);
			}
			continue;
		}
		if (limit && now_ns - f->idle_since_ns >= limit) {
			t->stats.expired++;
			if (f->state == TCP_TERM_SYN_RECEIVED)
				flow_free(t, f); /* never the caller's: gone quietly */
			else
				reset_flow(t, f, true);
			continue;
		}
		stall_check(t, f, now_ns);
	}
}

const char *tcp_term_state_name(uint8_t state)
{
	static const char *const names[] = {
		[TCP_TERM_FREE] = "free",
		[TCP_TERM_SYN_RECEIVED] = "syn-received",
		[TCP_TERM_ESTABLISHED] = "established",
		[TCP_TERM_CLOSE_WAIT] = "close-wait",
		[TCP_TERM_FIN_WAIT_1] = "fin-wait-1",
		[TCP_TERM_FIN_WAIT_2] = "fin-wait-2",
		[TCP_TERM_CLOSING] = "closing",
		[TCP_TERM_LAST_ACK] = "last-ack",
		[TCP_TERM_TIME_WAIT] = "time-wait",
		[TCP_TERM_CLOSED] = "closed",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}
