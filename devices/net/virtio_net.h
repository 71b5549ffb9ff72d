/*
 * virtio_net: a virtio network device (virtio 1.2, 5.1) on a net_backend,
 * optionally through kiln's packet filter (net_filter.h).
 *
 * One receive and one transmit queue, no offloads (no checksum or
 * segmentation features are offered, so every frame is a plain Ethernet
 * frame behind a zeroed 12-byte virtio_net_hdr_v1). Frames from the
 * backend wait, one at a time, for receive buffers: when the guest posts
 * none, kiln stops reading the backend instead of queueing without bound.
 *
 * With a filter, every frame the guest sends goes through
 * net_filter_egress() and every frame toward it through
 * net_filter_ingress(); a dropped transmit frame still completes its
 * descriptor (as a wire would lose it), a dropped receive frame uses no
 * receive buffer. Rate limits are backpressure, not drops: when the
 * filter's token buckets say "wait", the device holds the frame (one per
 * direction), stops taking transmit descriptors or reading the backend,
 * and carries on from a timer, so a flooding guest only fills its own
 * queues. Without a filter every frame passes (no rules, no limits).
 *
 * A backend that is full (-EAGAIN) is waited for the same way (the frame
 * is held until its fd is writable); a backend that fails is logged once
 * and the device then drops what the guest sends.
 *
 * Egress steering (params.egress_proxy): frames the filter steers
 * (NF_STEER) go to the device's net_steer (tcp_term and the relay to the
 * egress proxy), not the backend; the frames it makes for the guest go
 * ahead of the backend's, past the ingress filter and its rate limit, and
 * the guest's steered segments take no transmit tokens
 * (net_filter_rate_exempt): tcp_term's windows pace those flows. Its sockets are watched by the device's
 * loop, its timeouts run from a one-second timer. Steered flows are not
 * saved in a snapshot (their proxy connections end with this VMM): the
 * restored device probes them as it probes the filter's flows, and the
 * guest's answer, or its next segment, is of no flow and gets a reset.
 */
#ifndef KILN_VIRTIO_NET_H
#define KILN_VIRTIO_NET_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/base/err.h"
#include "lib/guest/event_loop.h"
#include "devices/net/net_backend.h"
#include "devices/net/net_filter.h"
#include "devices/virtio/virtio_dev.h"

struct virtio_net_params {
	struct net_backend *backend; /* owned by the device from now on */
	struct net_filter *filter;   /* owned from now on; NULL: no filter */
	uint8_t mac[6];
	/* The egress proxy's Unix socket (net_steer.h); NULL: nothing is
	 * steered (a steered SYN is answered with a reset). Needs a filter. */
	const char *egress_proxy;
};

/* Parse "aa:bb:cc:dd:ee:ff" (unicast only). 0 or -EINVAL. */
int net_parse_mac(const char *s, uint8_t mac[6]);

/* Backend and filter are owned (closed/destroyed) also on failure. */
int virtio_net_create(const struct virtio_net_params *p, struct event_loop *loop,
		      struct virtio_dev **out, struct err *e);

/* Counters for tests and metrics. */
struct virtio_net_stats {
	uint64_t rx_frames, tx_frames, rx_dropped, tx_dropped;
	uint64_t rx_filtered, tx_filtered;   /* the filter dropped them */
	uint64_t rx_throttled, tx_throttled; /* times the rate limit made a frame wait */
	uint64_t tx_backend_full;            /* times the backend said -EAGAIN */
	uint64_t tcp_resets; /* resets answering guest segments of untracked flows (tcp_reset.h) */
	uint64_t tcp_resets_lost; /* ... not made: RESET_SLOTS were waiting for receive buffers */
	uint64_t tcp_probes;      /* a restore's probes of the flows the snapshot kept */
	uint64_t tx_steered;      /* guest frames the filter steered, given to net_steer */
	uint64_t rx_steered;      /* frames net_steer made for the guest */
};
void virtio_net_stats(struct virtio_dev *d, struct virtio_net_stats *out);

/* d is a virtio-net device (made by virtio_net_create). */
int virtio_net_is(const struct virtio_dev *d);

/*
 * Replace the filter's rules (owned from now on, also on failure), under
 * the device lock, so every frame is decided entirely by the old rules or
 * the new. *cut: the tracked flows the new rules deny (removed: their later
 * packets drop both ways). 0, or -ENODEV when the device has no filter.
 */
int virtio_net_filter_replace(struct virtio_dev *d, struct net_rules *rules, size_t *cut);

/* net_filter_to_json() plus the device counters under "device"; NULL (errno ENODEV/ENOMEM). */
json_t *virtio_net_filter_json(struct virtio_dev *d);

#endif
