/*
 * virtio_blk: the virtio block device (virtio 1.2, section 5.2) over a
 * blk_backend disk (raw, raw read-only, or copy-on-write overlay).
 *
 * Contract: one request queue (size up to 256). Requests are served
 * synchronously in notify(), in the VM's device thread, straight between
 * the backend and guest memory (no bounce buffer). Supported: IN, OUT,
 * FLUSH, GET_ID, and on writable disks DISCARD and WRITE_ZEROES; any other
 * type gets VIRTIO_BLK_S_UNSUPP. A request outside the disk, a length that
 * is not whole sectors, a write to a read-only disk or a backend error
 * gets VIRTIO_BLK_S_IOERR; the VM runs on. A chain the device cannot even
 * answer (header shorter than 16 bytes, no device-writable status byte,
 * malformed descriptors) marks the device broken (virtio_dev_fail) and the
 * queue is ignored until the driver resets it.
 *
 * The transport must hold d->lock around every op call, as for any
 * virtio_dev; the device takes no lock of its own.
 */
#ifndef KILN_VIRTIO_BLK_H
#define KILN_VIRTIO_BLK_H

#include "lib/base/err.h"
#include "devices/virtio/virtio_dev.h"

#define VIRTIO_BLK_QUEUE_MAX 256
#define VIRTIO_BLK_SERIAL_MAX 20 /* VIRTIO_BLK_ID_BYTES */

/*
 * Named virtio_blk_params, not virtio_blk_config: <linux/virtio_blk.h>
 * already has a struct virtio_blk_config (the config-space layout), which
 * this device uses.
 */
struct virtio_blk_params {
	const char *path;            /* raw image, or the base image when overlay is set */
	const char *overlay;         /* copy-on-write overlay file, or NULL for a raw disk */
	int read_only;               /* the guest sees a read-only disk (VIRTIO_BLK_F_RO) */
	int create_overlay;          /* create a missing overlay (sparse: copies nothing) */
	uint32_t overlay_block_size; /* for a created overlay; 0 = 64 KiB */
	uint64_t overlay_size;       /* a created overlay's virtual size in bytes; 0 = the base's */
	const char *serial;          /* GET_ID answer, at most 20 bytes; NULL = empty */
	int defer_overlay;           /* open the overlay, read its header in virtio_blk_load */
};

/*
 * Open the backend and make the device: *out is a new virtio_dev (ops,
 * priv, lock initialised) for the transport. 0, or -errno with `e` filled
 * ("disk 'PATH': what failed: what to do").
 *
 * ops->destroy(d) closes the backend (flushing it) and frees everything,
 * including d itself: do not touch d afterwards.
 * ops->save() flushes the backend first, so the image or overlay on disk
 * is complete when the snapshot copies it.
 */
int virtio_blk_create(const struct virtio_blk_params *p, struct virtio_dev **out, struct err *e);

/*
 * A disk made with defer_overlay: read its overlay's header now
 * (blk_cow_load) and size the device from it; until then it has no
 * sectors. A no-op for any other disk. 0, or -errno with e filled.
 */
int virtio_blk_load(struct virtio_dev *d, struct err *e);

#endif
