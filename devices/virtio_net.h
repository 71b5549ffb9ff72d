/*
 * virtio_net: a virtio network device (virtio 1.2, 5.1) on a net_backend.
 *
 * One receive and one transmit queue, no offloads (no checksum or
 * segmentation features are offered, so every frame is a plain Ethernet
 * frame behind a zeroed 12-byte virtio_net_hdr_v1). Frames from the
 * backend wait, one at a time, for receive buffers: when the guest posts
 * none, kiln stops reading the backend instead of queueing without bound.
 */
#ifndef KILN_VIRTIO_NET_H
#define KILN_VIRTIO_NET_H

#include <stdint.h>

#include "error.h"
#include "event_loop.h"
#include "net_backend.h"
#include "virtio_dev.h"

struct virtio_net_params {
	struct net_backend *backend; /* owned by the device from now on */
	uint8_t mac[6];
};

/* Parse "aa:bb:cc:dd:ee:ff" (unicast only). 0 or -EINVAL. */
int net_parse_mac(const char *s, uint8_t mac[6]);

int virtio_net_create(const struct virtio_net_params *p, struct event_loop *loop, struct virtio_dev **out,
		      struct kiln_error *e);

/* Counters for tests and metrics. */
struct virtio_net_stats {
	uint64_t rx_frames, tx_frames, rx_dropped, tx_dropped;
};
void virtio_net_stats(struct virtio_dev *d, struct virtio_net_stats *out);

#endif
