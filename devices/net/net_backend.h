/*
 * net_backend: where virtio-net's frames go. A backend moves whole
 * Ethernet frames (no virtio header) and exposes one fd that becomes
 * readable when a frame is waiting (and writable when send() has room
 * again). Backends: TAP (net_tap.c) and passt (net_passt.c). The packet
 * filter sits in virtio_net.c, between the device and any backend, so it
 * is the same for all of them.
 */
#ifndef KILN_NET_BACKEND_H
#define KILN_NET_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/err.h"

#define NET_MAX_FRAME 65536
#define NET_MIN_FRAME 14 /* an Ethernet header */

struct net_backend {
	const char *name;
	int fd; /* readable when a frame can be received */
	/*
	 * Send one frame. len, or -errno: -EAGAIN means the backend is full
	 * and took nothing (retry once fd is writable, after flush()); other
	 * errors drop the frame, and -EPIPE means the backend is gone.
	 */
	ssize_t (*send)(struct net_backend *b, const void *frame, size_t len);
	/* Receive one frame into buf; bytes, 0 when none, -errno (-EPIPE: gone for good). */
	ssize_t (*recv)(struct net_backend *b, void *buf, size_t cap);
	/*
	 * Optional (NULL when send() never buffers): write out what send()
	 * buffered. 0 when nothing is left, -EAGAIN when fd must become
	 * writable first, another -errno when the backend is gone.
	 */
	int (*flush)(struct net_backend *b);
	void (*close)(struct net_backend *b);
	/* Why the backend failed, for the one log line (empty: strerror of the code). */
	char why[200];
};

#endif
