#include "virtio_net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define VIRTIO_NET_F_MAC 5
#define NET_HDR_LEN 12 /* struct virtio_net_hdr_v1: VERSION_1 always has num_buffers */
#define RXQ 0
#define TXQ 1

struct vnet {
	struct virtio_dev dev;
	struct net_backend *be;
	struct event_loop *loop;
	uint8_t mac[6];
	int watching;     /* backend fd registered for EPOLLIN */
	size_t pending;   /* bytes of a received frame waiting for a buffer */
	struct virtio_net_stats st;
	uint8_t frame[NET_HDR_LEN + NET_MAX_FRAME];
};

int net_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char end;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &end) != 6 ||
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
	cfg[6] = 1; /* status: VIRTIO_NET_S_LINK_UP */
	memcpy(buf, cfg + off, len); /* the transport bounds off+len by config_len */
}

static void watch(struct vnet *n, int on)
{
	if (on == n->watching)
		return;
	event_loop_mod(n->loop, n->be->fd, on ? EPOLLIN : 0);
	n->watching = on;
}

/* Move frames from the backend into receive buffers while both exist. */
static void rx_fill(struct vnet *n)
{
	struct virtio_dev *d = &n->dev;
	struct virtq *q = &d->vq[RXQ];
	struct virtq_chain c;
	int pushed = 0;

	if (!(d->status & VIRTIO_STATUS_DRIVER_OK) || !q->ready || d->broken)
		return;
	for (;;) {
		int r;

		if (!n->pending) {
			ssize_t got = n->be->recv(n->be, n->frame + NET_HDR_LEN, NET_MAX_FRAME);

			if (got <= 0)
				break;
			memset(n->frame, 0, NET_HDR_LEN);
			n->frame[10] = 1; /* num_buffers = 1 (little endian) */
			n->pending = NET_HDR_LEN + (size_t)got;
		}
		r = virtq_pop(q, &c);
		if (r < 0) {
			virtio_dev_fail(d, "malformed descriptor chain on the receive queue");
			return;
		}
		if (r == 0) {
			/* No buffers: stop reading the backend until the guest adds some. */
			watch(n, 0);
			virtq_set_avail_event(q);
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
	if (pushed)
		virtio_dev_interrupt(d, RXQ);
}

static void tx_drain(struct vnet *n)
{
	struct virtio_dev *d = &n->dev;
	struct virtq *q = &d->vq[TXQ];
	struct virtq_chain c;
	int r, pushed = 0;

	while ((r = virtq_pop(q, &c)) > 0) {
		/* A frame is header + at most NET_MAX_FRAME bytes, and the guest
		 * gives nothing to write back. */
		if (c.out_len < NET_HDR_LEN || c.out_len > NET_HDR_LEN + NET_MAX_FRAME || c.nin) {
			n->st.tx_dropped++;
		} else {
			size_t len = virtq_chain_read(&c, 0, n->frame, c.out_len);

			if (n->be->send(n->be, n->frame + NET_HDR_LEN, len - NET_HDR_LEN) < 0)
				n->st.tx_dropped++;
			else
				n->st.tx_frames++;
		}
		virtq_push(q, c.head, 0);
		pushed = 1;
	}
	if (r < 0)
		virtio_dev_fail(d, "malformed descriptor chain on the transmit queue");
	virtq_set_avail_event(q);
	if (pushed)
		virtio_dev_interrupt(d, TXQ);
}

static void net_notify(struct virtio_dev *d, int q)
{
	struct vnet *n = d->priv;

	if (q == TXQ) {
		tx_drain(n);
	} else if (q == RXQ) {
		watch(n, 1);
		rx_fill(n);
	}
}

static void backend_ready(void *ctx, int fd, uint32_t events)
{
	struct vnet *n = ctx;

	(void)fd;
	(void)events;
	pthread_mutex_lock(&n->dev.lock);
	rx_fill(n);
	pthread_mutex_unlock(&n->dev.lock);
}

static int net_activate(struct virtio_dev *d)
{
	struct vnet *n = d->priv;
	int err = event_loop_add(n->loop, n->be->fd, EPOLLIN, backend_ready, n);

	n->watching = err == 0;
	return err;
}

static void net_reset(struct virtio_dev *d)
{
	struct vnet *n = d->priv;

	n->pending = 0;
	if (n->watching)
		event_loop_del(n->loop, n->be->fd);
	n->watching = 0;
}

static long net_save(struct virtio_dev *d, void *buf, size_t len)
{
	struct vnet *n = d->priv;

	/* MAC only: frames in flight are dropped by a snapshot, as on a wire. */
	if (len < 7)
		return -ENOSPC;
	((uint8_t *)buf)[0] = 1; /* state version */
	memcpy((uint8_t *)buf + 1, n->mac, 6);
	return 7;
}

static int net_restore(struct virtio_dev *d, const void *buf, size_t len)
{
	struct vnet *n = d->priv;

	if (len != 7 || ((const uint8_t *)buf)[0] != 1)
		return -EINVAL;
	memcpy(n->mac, (const uint8_t *)buf + 1, 6);
	return 0;
}

static void net_destroy(struct virtio_dev *d)
{
	struct vnet *n = d->priv;

	net_reset(d);
	n->be->close(n->be);
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

int virtio_net_create(const struct virtio_net_params *p, struct event_loop *loop, struct virtio_dev **out,
		      struct kiln_error *e)
{
	struct vnet *n = calloc(1, sizeof(*n));

	if (!n) {
		p->backend->close(p->backend);
		return kiln_errf(e, ENOMEM, "out of memory");
	}
	n->be = p->backend;
	n->loop = loop;
	memcpy(n->mac, p->mac, 6);
	n->dev.ops = &net_ops;
	n->dev.priv = n;
	pthread_mutex_init(&n->dev.lock, NULL);
	*out = &n->dev;
	return 0;
}

void virtio_net_stats(struct virtio_dev *d, struct virtio_net_stats *out)
{
	struct vnet *n = d->priv;

	pthread_mutex_lock(&d->lock);
	*out = n->st;
	pthread_mutex_unlock(&d->lock);
}
