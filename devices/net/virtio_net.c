#include "devices/net/virtio_net.h"
#include "lib/base/mono.h"
#include "devices/net/pkt_parse.h"
#include "devices/net/net_state.h"
#include "devices/net/net_steer.h"
#include "devices/net/tcp_reset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <time.h>

#define VIRTIO_NET_F_MAC 5
#define NET_HDR_LEN 12 /* struct virtio_net_hdr_v1: VERSION_1 always has num_buffers */
#define RXQ 0
#define TXQ 1
/*
 * Frames taken from the backend per wake-up: frames the filter drops use
 * no receive buffer, so without a budget a host-side flood of them would
 * keep the device thread (every device of the VM) in one loop.
 */
#define RX_BUDGET 256

/*
 * Resets the device makes up for the guest (tcp_reset.h) wait here for a
 * receive buffer, ahead of the backend's frames. One per dropped guest
 * segment at most, and the guest's segments are rate-limited: a full ring
 * drops the newest (the guest's next segment asks again).
 */
#define RESET_SLOTS 8

struct vnet {
	struct virtio_dev dev;
	struct net_backend *be;
	struct event_loop *loop;
	struct net_filter *filter; /* NULL: every frame passes */
	uint8_t mac[6];
	int registered;   /* the backend fd is in the event loop */
	uint32_t events;  /* ... watched for these */
	int rx_stalled;   /* no receive buffers: wait for the guest's kick */
	int rx_throttled; /* the pending frame waits for rx tokens (timer) */
	int out_blocked;  /* the backend is full: wait for EPOLLOUT */
	int be_dead;      /* the backend failed: logged, frames dropped */
	int timer_armed;
	size_t pending;      /* bytes of a received frame (header included) */
	int pending_checked; /* ... that the filter has passed */
	int tx_held;         /* a transmit chain waits for tx tokens or backend room */
	int tx_checked;      /* ... after the filter passed its frame */
	uint16_t tx_head;
	size_t tx_len; /* its frame bytes in txbuf, after the header */
	struct virtio_net_stats st;
	uint8_t resets[RESET_SLOTS][TCP_RESET_MAX_FRAME];
	size_t reset_len[RESET_SLOTS];
	unsigned reset_head, reset_count;
	/* A restore's flows: probed once each (probe_next counts the probes
	 * sent), and kept, so a snapshot taken before the guest answered
	 * keeps them too (their host side is gone either way). */
	struct conntrack_key *probes;
	size_t nprobes, probe_next;
	/* Egress steering (net_steer.h); NULL: off. steer_gw: the Ethernet
	 * destination of the guest's steered frames (its gateway's MAC),
	 * the source of the frames answering them. */
	struct net_steer *steer;
	int steer_timer;
	uint8_t steer_gw[6];
	uint8_t frame[NET_HDR_LEN + NET_MAX_FRAME];
	uint8_t txbuf[NET_HDR_LEN + NET_MAX_FRAME];
};

static const struct virtio_dev_ops net_ops;

int net_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char end;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &end) != 6 ||
	    strlen(s) != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return (mac[0] & 1) ? -EINVAL : 0; /* multicast bit: not a station address */
}

static uint64_t net_features(struct virtio_dev *d)
{
	(void)d;
	return 1ULL << VIRTIO_NET_F_MAC;
}

static void net_read_config(struct virtio_dev *d, uint32_t off, void *buf, uint32_t len)
{
	struct vnet *n = d->priv;
	uint8_t cfg[8] = { 0 };

	memcpy(cfg, n->mac, 6);
	cfg[6] = 1;                  /* status: VIRTIO_NET_S_LINK_UP */
	memcpy(buf, cfg + off, len); /* the transport bounds off+len by config_len */
}

static int queues_live(struct vnet *n, int qi)
{
	struct virtio_dev *d = &n->dev;

	return (d->status & VIRTIO_STATUS_DRIVER_OK) && d->vq[qi].ready && !d->broken;
}

/* Watch the backend for what the device wants now: frames (EPOLLIN) and room (EPOLLOUT). */
static void update_watch(struct vnet *n)
{
	uint32_t ev = 0;

	if (!n->registered)
		return;
	if (!n->rx_stalled && !n->rx_throttled)
		ev |= EPOLLIN;
	if (n->out_blocked)
		ev |= EPOLLOUT;
	if (ev != n->events && event_loop_mod(n->loop, n->be->fd, ev) == 0)
		n->events = ev;
}

static void unregister(struct vnet *n)
{
	if (n->registered)
		event_loop_del(n->loop, n->be->fd);
	n->registered = 0;
	n->events = 0;
}

/* The backend is gone (passt exited, the TAP broke): say so once, then drop frames. */
static void backend_failed(struct vnet *n, long err)
{
	if (!n->be_dead)
		virtio_dev_log(&n->dev,
			       "virtio-net: %s backend failed: %s; the guest's network is down",
			       n->be->name, n->be->why[0] ? n->be->why : strerror((int)-err));
	n->be_dead = 1;
	n->out_blocked = 0;
	unregister(n);
}

static void timer_fired(void *ctx);

/*
 * Carry on in `wait_ns` (rate-limit backpressure); one timer at a time.
 * 0, or -errno when no timer can be had (the loop's watch table is full):
 * then the caller lets the filter decide now, which drops over the limit.
 */
static int arm_timer(struct vnet *n, uint64_t wait_ns)
{
	uint64_t ms = (wait_ns + 999999) / 1000000;
	int r;

	if (n->timer_armed)
		return 0;
	/* A long debt (a big frame through a small bucket) is re-checked each second. */
	if (ms > 1000)
		ms = 1000;
	r = event_loop_timer(n->loop, (unsigned)(ms ? ms : 1), timer_fired, n);
	if (r == 0)
		n->timer_armed = 1;
	return r;
}

/* The Ethernet source of a probe: a locally administered address of no one. */
static const uint8_t probe_mac[6] = { 0x02, 0x6b, 0x69, 0x6c, 0x6e, 0x00 };

static void probes_free(struct vnet *n)
{
	free(n->probes);
	n->probes = NULL;
	n->nprobes = n->probe_next = 0;
}

/*
 * The next segment the device made up (a reset, then a restore's probes,
 * then a steered flow's) as the pending frame, past the filter and its
 * rate limit (it is the device's own): 1, or 0 when there is none.
 */
static int take_made_up(struct vnet *n)
{
	uint8_t *f = n->frame + NET_HDR_LEN;
	size_t len = 0;

	if (n->reset_count) {
		len = n->reset_len[n->reset_head];
		memcpy(f, n->resets[n->reset_head], len);
		n->reset_head = (n->reset_head + 1) % RESET_SLOTS;
		n->reset_count--;
	}
	/* probe_next counts probes: TCP_RESET_PROBES per flow. */
	while (!len && n->probe_next < n->nprobes * TCP_RESET_PROBES) {
		len = tcp_reset_probe(&n->probes[n->probe_next / TCP_RESET_PROBES],
				      n->probe_next % TCP_RESET_PROBES, n->mac, probe_mac, f,
				      NET_MAX_FRAME);
		n->probe_next++;
		n->st.tcp_probes += len != 0;
	}
	/* Steered flows' frames: answers as their remote end would give them. */
	if (!len && n->steer &&
	    (len = net_steer_next_frame(n->steer, f, NET_MAX_FRAME, mono_ns()))) {
		memcpy(f, n->mac, 6);
		memcpy(f + 6, n->steer_gw, 6);
		n->st.rx_steered++;
	}
	if (!len)
		return 0;
	memset(n->frame, 0, NET_HDR_LEN);
	n->frame[10] = 1; /* num_buffers = 1 */
	n->pending = NET_HDR_LEN + len;
	n->pending_checked = 1;
	return 1;
}

/* The guest sent a TCP segment of no tracked flow: queue the reset that answers it. */
static void rx_fill(struct vnet *n);

static void queue_reset(struct vnet *n, const uint8_t *frame, size_t len)
{
	struct pkt p;
	unsigned i;

	if (pkt_parse(frame, len, &p) < 0)
		return;
	/* A burst (the answers to a restore's probes come in one transmit
	 * pass): hand what waits to the guest's receive buffers first. */
	if (n->reset_count == RESET_SLOTS)
		rx_fill(n);
	if (n->reset_count == RESET_SLOTS) {
		n->st.tcp_resets_lost++;
		return;
	}
	i = (n->reset_head + n->reset_count) % RESET_SLOTS;
	n->reset_len[i] = tcp_reset_reply(&p, n->resets[i], TCP_RESET_MAX_FRAME);
	if (n->reset_len[i]) {
		n->reset_count++;
		n->st.tcp_resets++;
	}
}

/* Move frames from the backend into receive buffers while both exist. */
static void rx_fill(struct vnet *n)
{
	struct virtio_dev *d = &n->dev;
	struct virtq *q = &d->vq[RXQ];
	struct virtq_chain c;
	int pushed = 0, budget = RX_BUDGET;

	if (!queues_live(n, RXQ))
		return;
	for (;;) {
		int r;

		if (!n->pending && !take_made_up(n)) {
			ssize_t got;

			if (n->be_dead)
				break;
			if (!budget--) {
				/* Carry on soon, after the loop's other fds (frames may wait
				 * in a backend's own buffer, where epoll cannot see them). */
				arm_timer(n, 1);
				break;
			}
			got = n->be->recv(n->be, n->frame + NET_HDR_LEN, NET_MAX_FRAME);
			if (got == 0)
				break;
			if (got < 0) {
				backend_failed(n, got);
				break;
			}
			memset(n->frame, 0, NET_HDR_LEN);
			n->frame[10] = 1; /* num_buffers = 1 (little endian) */
			n->pending = NET_HDR_LEN + (size_t)got;
			n->pending_checked = !n->filter;
		}
		if (!n->pending_checked) {
			uint64_t now = mono_ns(), wait;
			size_t len = n->pending - NET_HDR_LEN;

			wait = net_filter_rate_wait_ns(n->filter, NF_INGRESS, len, now);
			if (wait && arm_timer(n, wait) == 0) {
				/* Stop reading the backend until the tokens are there. */
				n->rx_throttled = 1;
				n->st.rx_throttled++;
				break;
			}
			if (net_filter_ingress(n->filter, n->frame + NET_HDR_LEN, len, now, NULL) ==
			    NF_DROP) {
				n->st.rx_filtered++;
				n->pending = 0;
				continue;
			}
			n->pending_checked = 1;
		}
		r = virtq_pop_or_arm(q, &c);
		if (r < 0) {
			virtio_dev_fail(d, "malformed descriptor chain on the receive queue");
			return;
		}
		if (r == 0) {
			/* No buffers: stop reading the backend until the guest adds some. */
			n->rx_stalled = 1;
			break;
		}
		if (c.in_len < n->pending) {
			n->st.rx_dropped++; /* buffer too small for this frame */
			virtq_push(q, c.head, 0);
		} else {
			virtq_chain_write(&c, 0, n->frame, n->pending);
			virtq_push(q, c.head, (uint32_t)n->pending);
			n->st.rx_frames++;
		}
		n->pending = 0;
		pushed = 1;
	}
	update_watch(n);
	if (pushed)
		virtio_dev_interrupt(d, RXQ);
}

/* --- egress steering (net_steer.h) --- */

static void steer_tick(void *ctx);

/* tcp_term's timeouts once a second while it holds flows. */
static void steer_arm(struct vnet *n)
{
	if (!n->steer_timer && tcp_term_count(&n->steer->term) &&
	    event_loop_timer(n->loop, 1000, steer_tick, n) == 0)
		n->steer_timer = 1;
}

static void steer_tick(void *ctx)
{
	struct vnet *n = ctx;

	pthread_mutex_lock(&n->dev.lock);
	n->steer_timer = 0;
	if (n->steer) {
		net_steer_tick(n->steer, mono_ns());
		steer_arm(n);
		if (net_steer_pending(n->steer))
			rx_fill(n);
	}
	pthread_mutex_unlock(&n->dev.lock);
}

static void steer_input(struct vnet *n, const uint8_t *f, size_t len, uint64_t now)
{
	memcpy(n->steer_gw, f, 6);
	n->st.tx_steered++;
	net_steer_input(n->steer, f, len, now);
	steer_arm(n);
}

static void steer_ready(void *ctx, int fd, uint32_t events)
{
	struct vnet *n = ctx;

	pthread_mutex_lock(&n->dev.lock);
	if (n->steer) {
		net_steer_ready(n->steer, fd, events, mono_ns());
		if (net_steer_pending(n->steer))
			rx_fill(n);
	}
	pthread_mutex_unlock(&n->dev.lock);
}

static int steer_watch(void *ctx, int fd, uint32_t events, bool add)
{
	struct vnet *n = ctx;

	return add ? event_loop_add(n->loop, fd, events, steer_ready, n)
		   : event_loop_mod(n->loop, fd, events);
}

static void steer_unwatch(void *ctx, int fd)
{
	struct vnet *n = ctx;

	event_loop_del(n->loop, fd);
}

static size_t steer_names_of(void *ctx, const struct net_addr *dst, char (*out)[NET_HOST_MAX + 1],
			     size_t cap)
{
	struct vnet *n = ctx;

	return net_filter_names_of(n->filter, dst, mono_ns(), out, cap);
}

static bool steer_holds(void *ctx, const struct conntrack_key *k)
{
	struct vnet *n = ctx;

	return net_steer_holds(n->steer, k);
}

static int steer_create(struct vnet *n, const char *path, struct err *e)
{
	struct tcp_term_config tc = { 0 };
	struct net_steer_io io = {
		.watch = steer_watch, .unwatch = steer_unwatch, .names_of = steer_names_of, .ctx = n
	};
	int r;

	if (!n->filter)
		return err_set(e, EINVAL,
			       "--egress-proxy needs --firewall: the filter steers flows");
	/* The table's chains and the ISNs: keyed so the guest cannot aim at them. */
	if (getrandom(tc.key, sizeof(tc.key), 0) != (ssize_t)sizeof(tc.key))
		return err_set(e, EIO, "getrandom: %s", strerror(errno));
	memcpy(tc.guest_mac, n->mac, 6);
	tc.capacity = NET_STEER_FLOWS;
	if (!(n->steer = calloc(1, sizeof(*n->steer))))
		return err_set(e, ENOMEM, "out of memory");
	if ((r = net_steer_init(n->steer, path, &tc, &io, e)) < 0) {
		free(n->steer);
		n->steer = NULL;
		return r;
	}
	net_filter_set_steered(n->filter, steer_holds, n);
	return 0;
}

/*
 * Send the held frame. 1 when it is done with (sent, filtered or dropped:
 * complete its descriptor), 0 when it must wait (tokens or backend room).
 */
static int tx_one(struct vnet *n)
{
	uint8_t *f = n->txbuf + NET_HDR_LEN;
	ssize_t s;

	if (n->be_dead) {
		n->st.tx_dropped++;
		return 1;
	}
	if (n->filter && !n->tx_checked) {
		uint64_t now = mono_ns(), wait;
		struct nf_decision dec;

		/* Steered segments are paced by tcp_term's windows, not tokens. */
		wait = net_filter_rate_exempt(n->filter, f, n->tx_len, now)
			? 0
			: net_filter_rate_wait_ns(n->filter, NF_EGRESS, n->tx_len, now);
		if (wait && arm_timer(n, wait) == 0) {
			n->st.tx_throttled++;
			return 0;
		}
		switch (net_filter_egress(n->filter, f, n->tx_len, now, &dec)) {
		case NF_PASS:
			break;
		case NF_STEER:
			if (n->steer) {
				steer_input(n, f, n->tx_len, now);
				return 1;
			}
			/* Nothing to steer to (rules with `http` set at runtime
			 * on a device without a proxy): refused, as a closed port. */
			n->st.tx_filtered++;
			queue_reset(n, f, n->tx_len);
			return 1;
		default:
			n->st.tx_filtered++;
			if (dec.reason == NF_DROP_TCP_STATE)
				queue_reset(n, f, n->tx_len);
			return 1;
		}
		n->tx_checked = 1;
	}
	s = n->be->send(n->be, f, n->tx_len);
	if (s == -EAGAIN) {
		n->st.tx_backend_full++;
		n->out_blocked = 1;
		return 0;
	}
	if (s == -EPIPE || s == -EPROTO) {
		backend_failed(n, s);
		n->st.tx_dropped++;
	} else if (s < 0) {
		n->st.tx_dropped++;
	} else {
		n->st.tx_frames++;
	}
	return 1;
}

static void tx_drain(struct vnet *n)
{
	struct virtio_dev *d = &n->dev;
	struct virtq *q = &d->vq[TXQ];
	struct virtq_chain c;
	int r = 0, pushed = 0;

	if (!queues_live(n, TXQ))
		return;
	for (;;) {
		if (!n->tx_held) {
			if ((r = virtq_pop_or_arm(q, &c)) <= 0)
				break;
			/* A frame is header + at most NET_MAX_FRAME bytes, and the
			 * guest gives nothing to write back. */
			if (c.out_len < NET_HDR_LEN + NET_MIN_FRAME ||
			    c.out_len > NET_HDR_LEN + NET_MAX_FRAME || c.nin) {
				n->st.tx_dropped++;
				virtq_push(q, c.head, 0);
				pushed = 1;
				continue;
			}
			n->tx_len = virtq_chain_read(&c, 0, n->txbuf, c.out_len) - NET_HDR_LEN;
			n->tx_head = c.head;
			n->tx_held = 1;
			n->tx_checked = 0;
		}
		if (!tx_one(n))
			break; /* held: the timer or EPOLLOUT carries on */
		virtq_push(q, n->tx_head, 0);
		n->tx_held = 0;
		pushed = 1;
	}
	if (r < 0)
		virtio_dev_fail(d, "malformed descriptor chain on the transmit queue");
	/* Frames a buffering backend (passt) could not write whole yet. */
	if (!n->be_dead && !n->out_blocked && n->be->flush) {
		int fr = n->be->flush(n->be);

		if (fr == -EAGAIN)
			n->out_blocked = 1;
		else if (fr < 0)
			backend_failed(n, fr);
	}
	if (n->reset_count || (n->steer && net_steer_pending(n->steer)))
		rx_fill(n);
	update_watch(n);
	if (pushed)
		virtio_dev_interrupt(d, TXQ);
}

static void timer_fired(void *ctx)
{
	struct vnet *n = ctx;

	pthread_mutex_lock(&n->dev.lock);
	n->timer_armed = 0;
	n->rx_throttled = 0;
	if (n->tx_held)
		tx_drain(n);
	rx_fill(n);
	update_watch(n);
	pthread_mutex_unlock(&n->dev.lock);
}

static void net_notify(struct virtio_dev *d, int q)
{
	struct vnet *n = d->priv;

	if (q == TXQ) {
		tx_drain(n);
	} else if (q == RXQ) {
		n->rx_stalled = 0;
		rx_fill(n);
		update_watch(n);
	}
}

static void backend_ready(void *ctx, int fd, uint32_t events)
{
	struct vnet *n = ctx;

	(void)fd;
	pthread_mutex_lock(&n->dev.lock);
	if (n->out_blocked && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		int r = n->be->flush ? n->be->flush(n->be) : 0;

		if (r == 0) {
			n->out_blocked = 0;
			tx_drain(n);
		} else if (r != -EAGAIN) {
			backend_failed(n, r);
			tx_drain(n); /* the held frame is dropped, its descriptor completed */
		}
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		rx_fill(n);
	/*
	 * A hang-up is reported whatever we watch for: with no receive buffers
	 * (or tokens) to read the rest with, stop watching instead of spinning;
	 * the guest's next buffers read what is left and then the end.
	 */
	if ((events & (EPOLLERR | EPOLLHUP)) && n->registered &&
	    (n->rx_stalled || n->rx_throttled || !queues_live(n, RXQ)))
		unregister(n);
	update_watch(n);
	pthread_mutex_unlock(&n->dev.lock);
}

static int net_activate(struct virtio_dev *d)
{
	struct vnet *n = d->priv;
	int err;

	if (n->be_dead)
		return 0;
	err = event_loop_add(n->loop, n->be->fd, EPOLLIN, backend_ready, n);
	n->registered = err == 0;
	n->events = err == 0 ? EPOLLIN : 0;
	return err;
}

static void net_reset(struct virtio_dev *d)
{
	struct vnet *n = d->priv;

	/* Frames in flight are lost, as on a wire; a pending timer finds no queues. */
	n->pending = 0;
	n->tx_held = 0;
	n->rx_stalled = 0;
	n->rx_throttled = 0;
	n->reset_count = 0;
	probes_free(n);
	if (n->steer)
		net_steer_reset(n->steer);
	unregister(n);
}

/*
 * State (net_state.h): the MAC, the transmit chain held for tokens or
 * backend room, if any (its frame is dropped, as a wire would lose it, but
 * its descriptor must come back to the guest: the transport saved the
 * queue with that chain taken), and the guest's TCP flows that carry data
 * (with those of the restore this device came from, probed or not): the
 * restored device probes each so the guest resets it (tcp_reset.h), since
 * their host side ends with this VMM and its passt. save and restore run
 * while the device thread is stopped (vm_pause; before the VM starts), as
 * every device's do. The filter's other state and its counters are not saved: a
 * restored VM starts with the rules it is given (--firewall) and no
 * tracked flows. Steered flows are not saved either: their 4-tuples join
 * the probed flows, so the guest's answer to a probe gets its reset.
 */
static long net_save(struct virtio_dev *d, void *buf, size_t len)
{
	struct vnet *n = d->priv;
	struct net_state st = { .held = n->tx_held, .head = n->tx_head };
	size_t max = 0, out;

	memcpy(st.mac, n->mac, 6);
	if (n->filter) {
		max = net_filter_flow_count(n->filter) + n->nprobes +
			(n->steer ? tcp_term_count(&n->steer->term) : 0);
		if (max > NET_STATE_FLOWS_MAX)
			max = NET_STATE_FLOWS_MAX;
		if (max && !(st.flows = malloc(max * sizeof(*st.flows))))
			return -ENOMEM;
		for (; st.nflows < max && st.nflows < n->nprobes; st.nflows++)
			st.flows[st.nflows] = n->probes[st.nflows];
		if (max)
			st.nflows += net_filter_tcp_flows(n->filter, st.flows + st.nflows,
							  max - st.nflows, mono_ns());
		/* Steered flows are not saved: their proxy connections end with
		 * this VMM, so the restored device probes them like the rest. */
		if (n->steer)
			st.nflows += net_steer_flows(n->steer, st.flows + st.nflows,
						     max - st.nflows);
	}
	out = net_state_encode(&st, buf, len);
	free(st.flows);
	return out ? (long)out : -ENOSPC;
}

static int net_restore(struct virtio_dev *d, const void *buf, size_t len)
{
	struct vnet *n = d->priv;
	struct net_state st;
	int r = net_state_decode(buf, len, &st);

	if (r < 0)
		return r;
	if (st.held && (!d->vq[TXQ].ready || st.head >= d->vq[TXQ].size)) {
		free(st.flows);
		return -EINVAL;
	}
	memcpy(n->mac, st.mac, 6);
	/* The guest keeps the MAC it had: the filter holds it to that one. */
	if (n->filter)
		net_filter_set_guest_mac(n->filter, st.mac);
	if (st.held)
		virtq_push(&d->vq[TXQ], st.head, 0);
	probes_free(n);
	if (n->filter) { /* without the filter nothing would answer the guest's reply */
		n->probes = st.flows;
		n->nprobes = st.nflows;
	} else {
		free(st.flows);
	}
	/* The transport restored DRIVER_OK: take frames from the backend again. */
	if ((d->status & VIRTIO_STATUS_DRIVER_OK) && !n->registered) {
		if (net_activate(d) < 0)
			return -EINVAL;
		rx_fill(n); /* the probes go out now, not at the backend's first frame */
		update_watch(n);
	}
	return 0;
}

static void net_destroy(struct virtio_dev *d)
{
	struct vnet *n = d->priv;

	net_reset(d);
	n->be->close(n->be);
	if (n->steer)
		net_steer_free(n->steer);
	free(n->steer);
	net_filter_destroy(n->filter);
	pthread_mutex_destroy(&d->lock);
	free(n);
}

static const struct virtio_dev_ops net_ops = {
	.name = "virtio-net",
	.device_id = VIRTIO_ID_NET,
	.num_queues = 2,
	.queue_max = 256,
	.features = net_features,
	.config_len = 8,
	.read_config = net_read_config,
	.activate = net_activate,
	.notify = net_notify,
	.reset = net_reset,
	.save = net_save,
	.restore = net_restore,
	.destroy = net_destroy,
};

int virtio_net_create(const struct virtio_net_params *p, struct event_loop *loop,
		      struct virtio_dev **out, struct err *e)
{
	struct vnet *n = calloc(1, sizeof(*n));
	int r;

	if (!n) {
		p->backend->close(p->backend);
		net_filter_destroy(p->filter);
		return err_set(e, ENOMEM, "out of memory");
	}
	n->be = p->backend;
	n->filter = p->filter;
	n->loop = loop;
	memcpy(n->mac, p->mac, 6);
	if (p->egress_proxy && (r = steer_create(n, p->egress_proxy, e)) < 0) {
		p->backend->close(p->backend);
		net_filter_destroy(p->filter);
		free(n);
		return r;
	}
	n->dev.ops = &net_ops;
	n->dev.priv = n;
	pthread_mutex_init(&n->dev.lock, NULL);
	*out = &n->dev;
	return 0;
}

int virtio_net_is(const struct virtio_dev *d)
{
	return d && d->ops == &net_ops;
}

void virtio_net_stats(struct virtio_dev *d, struct virtio_net_stats *out)
{
	struct vnet *n = d->priv;

	pthread_mutex_lock(&d->lock);
	*out = n->st;
	pthread_mutex_unlock(&d->lock);
}

int virtio_net_filter_replace(struct virtio_dev *d, struct net_rules *rules, size_t *cut)
{
	struct vnet *n = d->priv;

	pthread_mutex_lock(&d->lock);
	if (!n->filter) {
		pthread_mutex_unlock(&d->lock);
		net_rules_free(rules);
		return -ENODEV;
	}
	*cut = net_filter_replace_rules(n->filter, rules, mono_ns());
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* Egress steering's counters, under counters.device (all 0 without --egress-proxy). */
static int steer_json(const struct vnet *n, json_t *dev)
{
	struct net_steer_stats z = { 0 };
	const struct net_steer_stats *s = n->steer ? &n->steer->st : &z;
	const struct tcp_term_stats *t = n->steer ? &n->steer->term.stats : NULL;
	json_t *j = json_pack("{sIsIsIsIsIsIsIsIsIsI}", "tx_steered", (json_int_t)n->st.tx_steered,
			      "rx_steered", (json_int_t)n->st.rx_steered, "steered_flows",
			      (json_int_t)s->flows, "steered_live",
			      (json_int_t)(n->steer ? n->steer->live : 0), "steer_connect_failed",
			      (json_int_t)s->connect_failed, "steer_proxy_errors",
			      (json_int_t)s->proxy_errors, "steer_refused_full",
			      (json_int_t)(t ? t->refused_full : 0), "steer_expired",
			      (json_int_t)(t ? t->expired : 0), "steer_bytes_up",
			      (json_int_t)s->bytes_up, "steer_bytes_down",
			      (json_int_t)s->bytes_down);

	int r = j ? json_object_update(dev, j) : -1;

	json_decref(j);
	return r;
}

json_t *virtio_net_filter_json(struct virtio_dev *d)
{
	struct vnet *n = d->priv;
	json_t *j = NULL, *dev;

	pthread_mutex_lock(&d->lock);
	if (!n->filter) {
		pthread_mutex_unlock(&d->lock);
		errno = ENODEV;
		return NULL;
	}
	j = net_filter_to_json(n->filter);
	dev = json_pack("{sIsIsIsIsIsIsIsIsIsIsIsI}", "rx_frames", (json_int_t)n->st.rx_frames,
			"tx_frames", (json_int_t)n->st.tx_frames, "rx_dropped",
			(json_int_t)n->st.rx_dropped, "tx_dropped", (json_int_t)n->st.tx_dropped,
			"rx_filtered", (json_int_t)n->st.rx_filtered, "tx_filtered",
			(json_int_t)n->st.tx_filtered, "rx_throttled",
			(json_int_t)n->st.rx_throttled, "tx_throttled",
			(json_int_t)n->st.tx_throttled, "tx_backend_full",
			(json_int_t)n->st.tx_backend_full, "tcp_resets",
			(json_int_t)n->st.tcp_resets, "tcp_resets_lost",
			(json_int_t)n->st.tcp_resets_lost, "tcp_probes",
			(json_int_t)n->st.tcp_probes);
	if (dev && steer_json(n, dev) < 0) {
		json_decref(dev);
		dev = NULL;
	}
	pthread_mutex_unlock(&d->lock);
	if (!j || !dev) {
		json_decref(j);
		json_decref(dev);
		errno = ENOMEM;
		return NULL;
	}
	if (json_object_set_new(json_object_get(j, "counters"), "device", dev) < 0) {
		json_decref(j);
		errno = ENOMEM;
		return NULL;
	}
	return j;
}
