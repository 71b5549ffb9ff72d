/*
 * blk_backend: the storage behind a virtio-blk disk. Pure file I/O; knows
 * nothing of virtio.
 *
 * Three kinds of disk:
 *   raw read-write   one image file (or block device) the VM owns;
 *   raw read-only    the same, opened O_RDONLY, every write refused;
 *   copy-on-write    a read-only base image, shared by any number of VMs
 *                    and never opened for writing, plus a per-VM sparse
 *                    overlay file (format: docs/overlay-format.md).
 *
 * Contract:
 *   - Every function returns 0 or -errno; opens also fill a struct err
 *     with one line "disk 'PATH': what failed: what to do".
 *   - Offsets and lengths are bytes; blk_read/blk_write/blk_discard refuse
 *     any range outside [0, blk_size()) with -EINVAL (overflow-safe), so
 *     a caller may pass guest-derived values after its own checks without
 *     trusting them.
 *   - Writes are visible to later reads at once; they are durable only
 *     after blk_flush(). Data that was flushed survives any later crash
 *     intact (the copy-on-write ordering that guarantees it is in
 *     blk_backend.c and docs/overlay-format.md).
 *   - After blk_discard() or blk_write_zeroes() the range reads as zeros.
 *   - Not thread-safe: one caller at a time (the VM's device thread).
 *   - Locks: a writable raw image or an overlay is locked exclusively
 *     (flock), a read-only image or a base shared, so two VMs cannot write
 *     one file and nobody writes a base while overlays depend on it.
 *     Filesystems without flock support are used unlocked.
 */
#ifndef KILN_BLK_BACKEND_H
#define KILN_BLK_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

#define BLK_COW_DEFAULT_BLOCK (64u << 10)
#define BLK_COW_MIN_BLOCK (4u << 10)
#define BLK_COW_MAX_BLOCK (1u << 20)

struct blk;

struct blk_cow_opts {
	int read_only;       /* open the overlay O_RDONLY; writes get -EROFS */
	int create;          /* create the overlay when the file does not exist */
	uint32_t block_size; /* new overlay: power of two 4 KiB..1 MiB; 0 = 64 KiB */
	uint64_t size;       /* new overlay: virtual disk size; 0 = the base's size */
	int defer;           /* open and lock only: blk_cow_load reads the header */
};

/*
 * Open a raw image (regular file or block device). `read_only` opens it
 * O_RDONLY. 0, or -errno with `e` filled.
 */
int blk_open_raw(const char *path, int read_only, struct blk **out, struct err *e);

/*
 * Open the copy-on-write disk `overlay_path` over the read-only base
 * `base_path`. With o->create, a missing overlay is created (sparse, so
 * nothing is copied) for this base; an existing overlay must carry this
 * base's identity (device, inode, size, mtime) or it is refused with
 * -ESTALE, since reading it over another base would return garbage.
 * `o` may be NULL (defaults: read-write, no create). 0 or -errno with `e`
 * filled.
 */
int blk_open_cow(const char *base_path, const char *overlay_path, const struct blk_cow_opts *o,
		 struct blk **out, struct err *e);

/*
 * Read and check the overlay's header and bitmap, for a disk opened with
 * o->defer (a no-op otherwise, or once loaded). Until then the disk has
 * size 0 and serves no I/O. For kiln-vmm's restore: the overlay is the
 * snapshot's copy only once it is written into the open file, and its
 * header is bytes a jailed VMM wrote, read in the jail. 0 or -errno with
 * e filled; after a failure the disk stays without I/O.
 */
int blk_cow_load(struct blk *b, struct err *e);

/* Read `len` bytes at `off`. 0, -EINVAL (out of range) or -EIO/-errno. */
int blk_read(struct blk *b, uint64_t off, void *buf, size_t len);

/* Write `len` bytes at `off`. 0, -EROFS (read-only), -EINVAL or -errno. */
int blk_write(struct blk *b, uint64_t off, const void *buf, size_t len);

/* Make every completed write durable. 0 or -errno; 0 on read-only disks. */
int blk_flush(struct blk *b);

/*
 * The range reads as zeros afterwards, and its space may be given back
 * (holes punched). 0, -EROFS, -EINVAL or -errno.
 */
int blk_discard(struct blk *b, uint64_t off, uint64_t len);

/*
 * The range reads as zeros afterwards; a raw image keeps its allocation
 * (FALLOC_FL_ZERO_RANGE), an overlay frees it as blk_discard() does.
 */
int blk_write_zeroes(struct blk *b, uint64_t off, uint64_t len);

/* Virtual disk size in bytes. */
uint64_t blk_size(const struct blk *b);

/* 1 when writes are refused. */
int blk_read_only(const struct blk *b);

/* Copy-on-write block size, or 0 for a raw image (an alignment hint). */
uint32_t blk_cow_block_size(const struct blk *b);

/* Flush, close and free; safe on NULL. Returns blk_flush()'s result. */
int blk_close(struct blk *b);

#endif
