/*
 * net_backend: where virtio-net's frames go. A backend moves whole
 * Ethernet frames (no virtio header) and exposes one fd that becomes
 * readable when a frame is waiting. TAP is the first backend; passt and the
 * packet filter plug in here (the filter sits between the device and any
 * backend, so it is the same for all of them).
 */
#ifndef KILN_NET_BACKEND_H
#define KILN_NET_BACKEND_H

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define NET_MAX_FRAME 65536

struct net_backend {
	const char *name;
	int fd; /* readable when a frame can be received */
	/* Send one frame; -errno (-EAGAIN: backend full, frame dropped). */
	ssize_t (*send)(struct net_backend *b, const void *frame, size_t len);
	/* Receive one frame into buf; bytes, 0 when none, -errno. */
	ssize_t (*recv)(struct net_backend *b, void *buf, size_t cap);
	void (*close)(struct net_backend *b);
};

/*
 * Attach to TAP device `ifname`, creating it when it does not exist (needs
 * CAP_NET_ADMIN). The device is used without IFF_VNET_HDR: no offloads.
 */
int net_tap_open(const char *ifname, struct net_backend **out, struct kiln_error *e);

#endif
