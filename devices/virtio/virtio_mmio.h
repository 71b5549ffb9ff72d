/*
 * virtio_mmio: the virtio-mmio transport, version 2 (virtio 1.2, 4.2).
 *
 * Contract: one 4 KiB register window per device, announced to the guest
 * on the kernel command line (virtio_mmio.device=4K@BASE:GSI). The transport
 * owns feature negotiation, device status and queue setup and knows nothing
 * device-specific: it calls the device's ops (virtio_dev.h). Every
 * guest-written value is checked: QueueSel beyond the device's queues
 * selects nothing, queue addresses only change while the queue is off, a
 * queue whose rings fall outside RAM is refused and the device marked
 * DEVICE_NEEDS_RESET.
 *
 * virtio_mmio_io() is a pure io_bus handler (unit-testable); kiln-vmm
 * additionally routes QueueNotify through KVM ioeventfds into the device
 * thread and interrupts through an irqfd (virtio_mmio_attach_kvm).
 */
#ifndef KILN_VIRTIO_MMIO_H
#define KILN_VIRTIO_MMIO_H

#include <stdint.h>

#include "devices/virtio/virtio_dev.h"

#define VIRTIO_MMIO_SIZE 0x1000
#define VIRTIO_MMIO_MAGIC 0x74726976  /* "virt" */
#define VIRTIO_MMIO_VENDOR 0x4e4c494b /* "KILN" */

/* Register offsets (virtio 1.2, 4.2.2). */
enum {
	VMMIO_MAGIC = 0x000,
	VMMIO_VERSION = 0x004,
	VMMIO_DEVICE_ID = 0x008,
	VMMIO_VENDOR_ID = 0x00c,
	VMMIO_DEVICE_FEATURES = 0x010,
	VMMIO_DEVICE_FEATURES_SEL = 0x014,
	VMMIO_DRIVER_FEATURES = 0x020,
	VMMIO_DRIVER_FEATURES_SEL = 0x024,
	VMMIO_QUEUE_SEL = 0x030,
	VMMIO_QUEUE_NUM_MAX = 0x034,
	VMMIO_QUEUE_NUM = 0x038,
	VMMIO_QUEUE_READY = 0x044,
	VMMIO_QUEUE_NOTIFY = 0x050,
	VMMIO_INTERRUPT_STATUS = 0x060,
	VMMIO_INTERRUPT_ACK = 0x064,
	VMMIO_STATUS = 0x070,
	VMMIO_QUEUE_DESC_LOW = 0x080,
	VMMIO_QUEUE_DESC_HIGH = 0x084,
	VMMIO_QUEUE_DRIVER_LOW = 0x090,
	VMMIO_QUEUE_DRIVER_HIGH = 0x094,
	VMMIO_QUEUE_DEVICE_LOW = 0x0a0,
	VMMIO_QUEUE_DEVICE_HIGH = 0x0a4,
	VMMIO_CONFIG_GENERATION = 0x0fc,
	VMMIO_CONFIG = 0x100,
};

struct virtio_mmio {
	struct virtio_dev *dev;
	uint64_t base;
	uint32_t gsi;
	uint32_t dev_feat_sel, drv_feat_sel, queue_sel;
	int irqfd;                      /* -1 until attached */
	int kick_fd[VIRTIO_MAX_QUEUES]; /* ioeventfds, -1 when absent */
	int vm_fd;
	struct event_loop *loop;
};

/* Set up the transport state for `dev` (pure). The device's features get
 * the transport bits (VERSION_1, EVENT_IDX, INDIRECT_DESC) added. */
void virtio_mmio_init(struct virtio_mmio *m, struct virtio_dev *dev, const struct guest_mem *mem,
		      uint64_t base, uint32_t gsi);

/* io_bus handler for the register window. */
void virtio_mmio_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write);

struct event_loop;
/*
 * Route the device's interrupt through an irqfd on `gsi` and each queue's
 * QueueNotify write through an ioeventfd into `loop`. 0 or -errno.
 */
int virtio_mmio_attach_kvm(struct virtio_mmio *m, int vm_fd, struct event_loop *loop);
void virtio_mmio_detach(struct virtio_mmio *m);

/* Transport state for snapshots: plain data, no pointers. */
struct virtio_mmio_state {
	uint32_t version; /* VIRTIO_MMIO_STATE_VERSION */
	uint32_t status, isr, config_generation;
	uint32_t dev_feat_sel, drv_feat_sel, queue_sel;
	uint64_t driver_features;
	struct {
		uint16_t size, last_avail, used_idx, signalled_used;
		uint8_t ready, event_idx, signalled_valid, pad;
		uint64_t desc, avail, used;
	} q[VIRTIO_MAX_QUEUES];
};
#define VIRTIO_MMIO_STATE_VERSION 1

void virtio_mmio_save(const struct virtio_mmio *m, struct virtio_mmio_state *s);
/* Restore; queues that were ready are re-validated against guest RAM.
 * 0 or -EINVAL (wrong version, or rings outside RAM). */
int virtio_mmio_restore(struct virtio_mmio *m, const struct virtio_mmio_state *s);

#endif
