#include "devices/blk/virtio_blk.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <linux/virtio_blk.h>
#include <stdlib.h>
#include <string.h>

#include "devices/blk/blk_backend.h"

#define SECTOR 512ULL

/*
 * Config space: the layout of struct virtio_blk_config (virtio 1.2,
 * 5.2.4) up to write_zeroes_may_unmap and its padding; the secure-erase
 * and zoned fields after it belong to features kiln does not offer.
 */
#define VBLK_CONFIG_LEN 60
_Static_assert(offsetof(struct virtio_blk_config, write_zeroes_may_unmap) + 4 == VBLK_CONFIG_LEN &&
		       sizeof(struct virtio_blk_config) >= VBLK_CONFIG_LEN,
	       "config space layout");

/* seg_max: data buffers per request. A chain holds at most
 * VIRTQ_MAX_CHAIN buffers, two of which are the header and the status. */
#define VBLK_SEG_MAX (VIRTQ_MAX_CHAIN - 2)
/* Per-range and per-request limits for DISCARD and WRITE_ZEROES: 1 GiB
 * and 32 ranges bound the work one request makes the device thread do. */
#define VBLK_MAX_ZERO_SECTORS (1u << 21)
#define VBLK_MAX_ZERO_SEG 32

struct vblk {
	struct blk *blk;
	uint64_t capacity; /* in 512-byte sectors */
	uint8_t serial[VIRTIO_BLK_SERIAL_MAX];
	struct virtio_blk_config config;
	struct virtq_chain chain; /* ~8 KiB: kept here, not on the stack */
};

/* Snapshot state: nothing is in flight after a quiesce (requests complete
 * inside notify), so only a version and the capacity, which lets restore
 * refuse a disk that is not the one the guest saw. */
#define VBLK_STATE_VERSION 1
#define VBLK_STATE_LEN 16

static uint64_t vblk_features(struct virtio_dev *d)
{
	struct vblk *v = d->priv;
	uint64_t f = 1ULL << VIRTIO_BLK_F_SEG_MAX | 1ULL << VIRTIO_BLK_F_FLUSH;

	if (blk_read_only(v->blk))
		f |= 1ULL << VIRTIO_BLK_F_RO;
	else
		f |= 1ULL << VIRTIO_BLK_F_DISCARD | 1ULL << VIRTIO_BLK_F_WRITE_ZEROES;
	return f;
}

static void vblk_read_config(struct virtio_dev *d, uint32_t off, void *buf, uint32_t len)
{
	struct vblk *v = d->priv;

	/* The transport checked the range already; a second check is free. */
	if (off > VBLK_CONFIG_LEN || len > VBLK_CONFIG_LEN - off) {
		memset(buf, 0, len);
		return;
	}
	memcpy(buf, (const uint8_t *)&v->config + off, len);
}

/* Nothing in the config space is writable without VIRTIO_BLK_F_CONFIG_WCE,
 * which kiln does not offer: writes are ignored. */
static void vblk_write_config(struct virtio_dev *d, uint32_t off, const void *buf, uint32_t len)
{
	(void)d;
	(void)off;
	(void)buf;
	(void)len;
}

/*
 * Data of an IN or OUT request: bytes [skip, skip + len) of the chain's
 * buffers `b` go to or come from the disk at `disk_off`, buffer by buffer,
 * with no copy in between.
 */
static int vblk_rw(struct blk *blk, const struct virtq_buf *b, int n, uint64_t skip, uint64_t len,
		   uint64_t disk_off, int write)
{
	for (int i = 0; i < n && len; i++) {
		uint64_t take;
		int r;

		if (skip >= b[i].len) {
			skip -= b[i].len;
			continue;
		}
		take = b[i].len - skip < len ? b[i].len - skip : len;
		r = write ? blk_write(blk, disk_off, b[i].host + skip, (size_t)take)
			  : blk_read(blk, disk_off, b[i].host + skip, (size_t)take);
		if (r)
			return r;
		disk_off += take;
		len -= take;
		skip = 0;
	}
	return 0;
}

/* 1 with the byte offset of `sector` in *off when whole sectors
 * [sector, sector + len bytes) lie on the disk; 0 otherwise. Comparing in
 * sectors first means sector * 512 cannot overflow. */
static int vblk_range(const struct vblk *v, uint64_t sector, uint64_t len, uint64_t *off)
{
	if (len % SECTOR || sector > v->capacity || len / SECTOR > v->capacity - sector)
		return 0;
	*off = sector * SECTOR; /* sector <= capacity = size / 512 */
	return 1;
}

static uint8_t vblk_inout(struct vblk *v, const struct virtq_chain *c, uint64_t sector, int write)
{
	uint64_t len = write ? c->out_len - sizeof(struct virtio_blk_outhdr) : c->in_len - 1;
	uint64_t off;

	/* 5.2.6.2: a write to a read-only device fails and writes nothing. */
	if (write && blk_read_only(v->blk))
		return VIRTIO_BLK_S_IOERR;
	if (!vblk_range(v, sector, len, &off))
		return VIRTIO_BLK_S_IOERR;
	if (write)
		return vblk_rw(v->blk, c->out, c->nout, sizeof(struct virtio_blk_outhdr), len, off,
			       1)
			? VIRTIO_BLK_S_IOERR
			: VIRTIO_BLK_S_OK;
	return vblk_rw(v->blk, c->in, c->nin, 0, len, off, 0) ? VIRTIO_BLK_S_IOERR
							      : VIRTIO_BLK_S_OK;
}

/*
 * DISCARD and WRITE_ZEROES: an array of 16-byte ranges after the header.
 * All ranges are checked before any is carried out, so a bad request
 * changes nothing.
 */
static uint8_t vblk_zeroes(struct virtio_dev *d, struct vblk *v, const struct virtq_chain *c,
			   uint32_t type)
{
	uint64_t bytes = c->out_len - sizeof(struct virtio_blk_outhdr);
	uint64_t n = bytes / sizeof(struct virtio_blk_discard_write_zeroes);
	int feature = type == VIRTIO_BLK_T_DISCARD ? VIRTIO_BLK_F_DISCARD
						   : VIRTIO_BLK_F_WRITE_ZEROES;

	if (!virtio_has(d, feature) || blk_read_only(v->blk))
		return VIRTIO_BLK_S_UNSUPP;
	if (bytes == 0 || bytes % sizeof(struct virtio_blk_discard_write_zeroes) ||
	    n > VBLK_MAX_ZERO_SEG)
		return VIRTIO_BLK_S_IOERR;
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t i = 0; i < n; i++) {
			struct virtio_blk_discard_write_zeroes r;
			uint32_t num, flags;
			uint64_t sector, off;

			virtq_chain_read(c, sizeof(struct virtio_blk_outhdr) + i * sizeof(r), &r,
					 sizeof(r));
			sector = le64toh(r.sector);
			num = le32toh(r.num_sectors);
			flags = le32toh(r.flags);
			/* 5.2.6.2: unknown flags, or unmap on a discard, are UNSUPP. */
			if (flags & ~(uint32_t)VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP ||
			    (type == VIRTIO_BLK_T_DISCARD && flags))
				return VIRTIO_BLK_S_UNSUPP;
			if (!vblk_range(v, sector, (uint64_t)num * SECTOR, &off) ||
			    num > VBLK_MAX_ZERO_SECTORS)
				return VIRTIO_BLK_S_IOERR;
			if (pass == 0)
				continue;
			/* A discarded range reads as zeros too: the backend
			 * makes both requests the same guarantee. */
			if ((type == VIRTIO_BLK_T_DISCARD ||
			     (flags & VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP))
				    ? blk_discard(v->blk, off, (uint64_t)num * SECTOR)
				    : blk_write_zeroes(v->blk, off, (uint64_t)num * SECTOR))
				return VIRTIO_BLK_S_IOERR;
		}
	}
	return VIRTIO_BLK_S_OK;
}

/*
 * Serve one request. Returns 0 with the used length in *written, or
 * -EINVAL with *why set when the chain is beyond answering (the device is
 * then broken). Buffer framing is free (virtio 1.2, 2.7.4.1): the header
 * may share a buffer with data, data may span buffers; the status is the
 * last device-writable byte.
 */
static int vblk_request(struct virtio_dev *d, struct vblk *v, const struct virtq_chain *c,
			uint32_t *written, const char **why)
{
	struct virtio_blk_outhdr hdr;
	uint64_t data_in;
	uint8_t status;

	if (c->out_len < sizeof(hdr)) {
		*why = "block request header shorter than 16 bytes";
		return -EINVAL;
	}
	if (c->in_len < 1) {
		*why = "block request without a status byte";
		return -EINVAL;
	}
	virtq_chain_read(c, 0, &hdr, sizeof(hdr));
	data_in = c->in_len - 1;

	switch (le32toh(hdr.type)) {
	case VIRTIO_BLK_T_IN:
		status = vblk_inout(v, c, le64toh(hdr.sector), 0);
		break;
	case VIRTIO_BLK_T_OUT:
		status = vblk_inout(v, c, le64toh(hdr.sector), 1);
		break;
	case VIRTIO_BLK_T_FLUSH:
		status = blk_flush(v->blk) ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
		break;
	case VIRTIO_BLK_T_GET_ID:
		/* 5.2.6: 20 bytes, NUL-padded (no NUL when all 20 are used). */
		virtq_chain_write(c, 0, v->serial,
				  data_in < sizeof(v->serial) ? (size_t)data_in
							      : sizeof(v->serial));
		status = VIRTIO_BLK_S_OK;
		break;
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
		status = vblk_zeroes(d, v, c, le32toh(hdr.type));
		break;
	default:
		status = VIRTIO_BLK_S_UNSUPP;
		break;
	}
	virtq_chain_write(c, (size_t)data_in, &status, 1);
	/* The status byte ends the writable area, so the used length must
	 * reach it: the whole writable area (capped at the field's width). */
	*written = c->in_len > UINT32_MAX ? UINT32_MAX : (uint32_t)c->in_len;
	return 0;
}

static void vblk_notify(struct virtio_dev *d, int qi)
{
	struct vblk *v = d->priv;
	struct virtq *q = &d->vq[0];
	int pushed = 0;

	if (qi != 0 || d->broken || !q->ready)
		return;
	for (;;) {
		const char *why = NULL;
		uint32_t written;
		int r = virtq_pop_or_arm(q, &v->chain);

		if (r < 0) {
			virtio_dev_fail(
				d, "malformed descriptor chain or avail ring on the request queue");
			break;
		}
		if (r == 0)
			break;
		if (vblk_request(d, v, &v->chain, &written, &why)) {
			virtio_dev_fail(d, why);
			break;
		}
		if (virtq_push(q, v->chain.head, written)) {
			virtio_dev_fail(d, "used ring unusable on the request queue");
			break;
		}
		pushed++;
	}
	if (pushed)
		virtio_dev_interrupt(d, 0);
}

/* Requests complete inside notify(), so a reset has nothing to drop. */
static void vblk_reset(struct virtio_dev *d)
{
	(void)d;
}

static long vblk_save(struct virtio_dev *d, void *buf, size_t len)
{
	struct vblk *v = d->priv;
	uint8_t *p = buf;
	uint64_t cap = htole64(v->capacity);
	int r;

	if (len < VBLK_STATE_LEN)
		return -ENOSPC;
	/* Bitmap pages of an overlay live in memory until a flush: write
	 * them now, or the snapshot's copy of the overlay would lack them. */
	r = blk_flush(v->blk);
	if (r)
		return r;
	memset(p, 0, VBLK_STATE_LEN);
	p[0] = VBLK_STATE_VERSION;
	memcpy(p + 8, &cap, 8);
	return VBLK_STATE_LEN;
}

static int vblk_restore(struct virtio_dev *d, const void *buf, size_t len)
{
	struct vblk *v = d->priv;
	const uint8_t *p = buf;
	uint64_t cap;

	if (len != VBLK_STATE_LEN || p[0] != VBLK_STATE_VERSION)
		return -EINVAL;
	for (int i = 1; i < 8; i++)
		if (p[i])
			return -EINVAL;
	memcpy(&cap, p + 8, 8);
	if (le64toh(cap) != v->capacity)
		return -EINVAL; /* not the disk the guest was using */
	return 0;
}

static void vblk_destroy(struct virtio_dev *d)
{
	struct vblk *v = d->priv;

	if (v) {
		blk_close(v->blk);
		free(v);
	}
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static void vblk_config(struct vblk *v);

static const struct virtio_dev_ops vblk_ops = {
	.name = "virtio-blk",
	.device_id = VIRTIO_ID_BLOCK,
	.num_queues = 1,
	.queue_max = VIRTIO_BLK_QUEUE_MAX,
	.features = vblk_features,
	.config_len = VBLK_CONFIG_LEN,
	.read_config = vblk_read_config,
	.write_config = vblk_write_config,
	.notify = vblk_notify,
	.reset = vblk_reset,
	.save = vblk_save,
	.restore = vblk_restore,
	.destroy = vblk_destroy,
};

int virtio_blk_create(const struct virtio_blk_params *p, struct virtio_dev **out, struct err *e)
{
	const char *name = p->overlay ? p->overlay : p->path;
	struct virtio_dev *d;
	struct vblk *v;
	size_t slen = p->serial ? strlen(p->serial) : 0;
	int r;

	*out = NULL;
	if (slen > VIRTIO_BLK_SERIAL_MAX)
		return err_set(e, EINVAL,
			       "disk '%s': serial '%s' is longer than %d bytes: shorten it", name,
			       p->serial, VIRTIO_BLK_SERIAL_MAX);
	d = calloc(1, sizeof(*d));
	v = calloc(1, sizeof(*v));
	if (!d || !v) {
		free(d);
		free(v);
		return err_set(e, ENOMEM, "disk '%s': out of memory", name);
	}
	if (p->overlay) {
		struct blk_cow_opts o = {
			.read_only = p->read_only,
			.create = p->create_overlay,
			.block_size = p->overlay_block_size,
			.size = p->overlay_size,
			.defer = p->defer_overlay,
		};

		r = blk_open_cow(p->path, p->overlay, &o, &v->blk, e);
	} else {
		r = blk_open_raw(p->path, p->read_only, &v->blk, e);
	}
	if (r) {
		free(d);
		free(v);
		return r;
	}
	memcpy(v->serial, p->serial ? p->serial : "", slen);
	vblk_config(v);
	d->ops = &vblk_ops;
	d->priv = v;
	pthread_mutex_init(&d->lock, NULL);
	*out = d;
	return 0;
}

int virtio_blk_load(struct virtio_dev *d, struct err *e)
{
	struct vblk *v = d->priv;
	int r;

	if (d->ops != &vblk_ops)
		return err_set(e, EINVAL, "internal error: %s is not a disk", d->ops->name);
	if ((r = blk_cow_load(v->blk, e)))
		return r;
	vblk_config(v);
	return 0;
}

/* Capacity and config space from the backend (again once it is loaded). */
static void vblk_config(struct vblk *v)
{
	uint32_t align;

	v->capacity = blk_size(v->blk) / SECTOR;
	/* Discard granularity: an overlay block, else a 4 KiB page. */
	align = blk_cow_block_size(v->blk) ? blk_cow_block_size(v->blk) / SECTOR : 8;
	v->config.capacity = htole64(v->capacity);
	v->config.seg_max = htole32(VBLK_SEG_MAX);
	v->config.max_discard_sectors = htole32(VBLK_MAX_ZERO_SECTORS);
	v->config.max_discard_seg = htole32(VBLK_MAX_ZERO_SEG);
	v->config.discard_sector_alignment = htole32(align);
	v->config.max_write_zeroes_sectors = htole32(VBLK_MAX_ZERO_SECTORS);
	v->config.max_write_zeroes_seg = htole32(VBLK_MAX_ZERO_SEG);
	v->config.write_zeroes_may_unmap = 1;
}
