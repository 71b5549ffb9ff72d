/*
 * virtio_rng: entropy for the guest (virtio 1.2, 5.4), from getrandom().
 * One queue; each device-writable buffer is filled, at most
 * VIRTIO_RNG_MAX_PER_REQUEST bytes per request so a guest cannot make one
 * notification cost unbounded host work.
 */
#ifndef KILN_VIRTIO_RNG_H
#define KILN_VIRTIO_RNG_H

#include "lib/base/err.h"
#include "devices/virtio/virtio_dev.h"

#define VIRTIO_RNG_MAX_PER_REQUEST 65536

int virtio_rng_create(struct virtio_dev **out, struct err *e);

#endif
