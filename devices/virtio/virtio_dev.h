/*
 * virtio_dev: what a virtio device model gives the transport, and what the
 * transport gives it. One ops table per device type (blk, net, vsock, fs,
 * rng); the virtio-mmio transport (virtio_mmio.h) knows nothing else about
 * a device.
 *
 * Threading: the transport calls ops from the VM's device thread
 * (event_loop.h) for queue notifications and from vCPU threads for config
 * space and status; `lock` serialises them. A device calls
 * virtio_dev_interrupt() after pushing used buffers and
 * virtio_dev_fail() when the guest broke the protocol.
 */
#ifndef KILN_VIRTIO_DEV_H
#define KILN_VIRTIO_DEV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/virtio/virtq.h"

#define VIRTIO_MAX_QUEUES 8

/* Device IDs (virtio 1.2, 5). */
#define VIRTIO_ID_NET 1
#define VIRTIO_ID_BLOCK 2
#define VIRTIO_ID_RNG 4
#define VIRTIO_ID_VSOCK 19
#define VIRTIO_ID_FS 26

/* Feature bits every kiln device offers or understands (virtio 1.2, 6). */
#define VIRTIO_F_RING_INDIRECT_DESC 28
#define VIRTIO_F_RING_EVENT_IDX 29
#define VIRTIO_F_VERSION_1 32

/* Device status bits (virtio 1.2, 2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE 1
#define VIRTIO_STATUS_DRIVER 2
#define VIRTIO_STATUS_DRIVER_OK 4
#define VIRTIO_STATUS_FEATURES_OK 8
#define VIRTIO_STATUS_NEEDS_RESET 0x40
#define VIRTIO_STATUS_FAILED 0x80

struct virtio_dev;

struct virtio_dev_ops {
	const char *name; /* "virtio-blk", for log lines */
	uint32_t device_id;
	int num_queues;
	uint16_t queue_max; /* largest size offered for every queue */
	/* Device-specific feature bits offered (transport bits are added). */
	uint64_t (*features)(struct virtio_dev *d);
	/* Config space: bounds already checked against config_len. */
	size_t config_len;
	void (*read_config)(struct virtio_dev *d, uint32_t off, void *buf, uint32_t len);
	void (*write_config)(struct virtio_dev *d, uint32_t off, const void *buf, uint32_t len);
	/* The driver set DRIVER_OK: queues are enabled, features final. 0 or -errno. */
	int (*activate)(struct virtio_dev *d);
	/* The driver kicked queue `q`. */
	void (*notify)(struct virtio_dev *d, int q);
	/* The driver reset the device: drop in-flight state, keep the backend. */
	void (*reset)(struct virtio_dev *d);
	/*
	 * Snapshots: the device-specific state as plain bytes (no pointers),
	 * versioned by the device. save() returns the bytes written or -ENOSPC;
	 * restore() returns 0 or -EINVAL for bytes it does not recognise.
	 * Queue and transport state are saved by the transport, after save()
	 * (which may hand chains it holds back to a queue: virtq_unpop). May
	 * be NULL for a device with no state of its own.
	 */
	long (*save)(struct virtio_dev *d, void *buf, size_t len);
	int (*restore)(struct virtio_dev *d, const void *buf, size_t len);
	/* Free the device model's state and close its backend. */
	void (*destroy)(struct virtio_dev *d);
};

struct virtio_dev {
	const struct virtio_dev_ops *ops;
	void *priv; /* the device model's own state */
	const struct guest_mem *mem;
	pthread_mutex_t lock;

	uint64_t device_features; /* offered: ops->features() | transport bits */
	uint64_t driver_features; /* accepted by the driver */
	uint32_t status;
	uint32_t isr; /* bit 0 used buffer, bit 1 config change */
	uint32_t config_generation;
	struct virtq vq[VIRTIO_MAX_QUEUES];
	int broken; /* DEVICE_NEEDS_RESET was raised */

	/* Set by the transport: inject the device's interrupt. */
	void (*raise_irq)(void *ctx);
	void *irq_ctx;

	/*
	 * Set by the VM when it adds the device: where the device's log lines
	 * go (one line, no newline; the VM adds its prefix). NULL: nowhere.
	 * A device never writes to stderr itself: libkiln's embedder chooses
	 * the fd (kiln_vm_config_set_log, KILN_LOG_DEVICE).
	 */
	void (*log)(void *ctx, const char *line);
	void *log_ctx;
};

/* 1 when the driver accepted feature `bit`. */
static inline int virtio_has(const struct virtio_dev *d, int bit)
{
	return (d->driver_features >> bit) & 1;
}

/*
 * After pushing used buffers on queue `q`: set ISR bit 0 and inject the
 * interrupt if the guest asked for one (EVENT_IDX / NO_INTERRUPT).
 */
void virtio_dev_interrupt(struct virtio_dev *d, int q);

/*
 * The same for every queue q with bit q set in `qmask`, with one interrupt
 * for all of them: the transport has one line per device and the driver's
 * handler looks at every queue, so a device that pushed on several queues
 * in one go (vsock: a tx credit update and the rx data it let through)
 * costs the guest one injection, not one per queue.
 */
void virtio_dev_interrupt_queues(struct virtio_dev *d, uint32_t qmask);

/*
 * The guest broke the protocol (malformed chain, bad request): set
 * DEVICE_NEEDS_RESET, signal a config change, log `why` once. The device
 * then ignores its queues until the driver resets it; the VMM runs on.
 */
void virtio_dev_fail(struct virtio_dev *d, const char *why);

/* One line to the device's log (d->log), printf-style; nothing when there is none. */
void virtio_dev_log(struct virtio_dev *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
