#include "devices/blk/blk_backend.h"
#include "lib/base/fd_io.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

/*
 * Overlay layout (docs/overlay-format.md is the reference; keep in sync):
 *
 *   [0, 4096)                   header, little-endian, fields below
 *   [bitmap_off, +bitmap_bytes) allocation bitmap, bit i = block i is in
 *                               the overlay (byte i/8, bit i%8), page aligned
 *   [data_off, +nblocks*bs)     block i at data_off + i*bs; a sparse file,
 *                               so blocks never written take no space
 */
#define COW_MAGIC "KILNCOW\0"
#define COW_VERSION 1
#define COW_HEADER_SIZE 4096u
#define COW_PAGE 4096u
#define COW_CRC_LEN 96 /* zlib's CRC-32 (IEEE 802.3) covers header bytes [0, 96) */
/* A bitmap of 64 MiB maps 2 TiB of 4 KiB blocks or 32 TiB of 64 KiB ones;
 * beyond that the header is more likely garbage than a real disk, and the
 * whole bitmap is held in memory. */
#define COW_MAX_BITMAP (64ULL << 20)

enum {
	H_MAGIC = 0,
	H_VERSION = 8,
	H_HEADER_SIZE = 12,
	H_BLOCK_SIZE = 16,
	H_FLAGS = 20,
	H_SIZE = 24,
	H_BASE_SIZE = 32,
	H_BASE_DEV = 40,
	H_BASE_INO = 48,
	H_BASE_MTIME_SEC = 56,
	H_BASE_MTIME_NSEC = 64,
	H_BITMAP_OFF = 72,
	H_BITMAP_BYTES = 80,
	H_DATA_OFF = 88,
	H_CRC = 96,
};

enum blk_kind { BLK_RAW, BLK_COW };

struct base_id {
	uint64_t size, dev, ino;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

struct blk {
	enum blk_kind kind;
	int ro;
	int fd;        /* the raw image, or the overlay */
	uint64_t size; /* virtual disk size */
	int sync_err;  /* sticky: a failed fsync may have dropped dirty pages */

	/* copy-on-write only */
	int base_fd;
	uint64_t base_size;
	uint32_t bs;    /* block size */
	unsigned shift; /* log2(bs) */
	uint64_t nblocks;
	uint64_t bitmap_off, bitmap_bytes, data_off;
	uint8_t *bitmap; /* in-memory bitmap: the truth while running */
	uint8_t *dirty;  /* bit p = bitmap page p differs from the file */
	int data_dirty;  /* data written since the last data sync */
	int punched;     /* holes punched since then: needs fsync, not fdatasync */
	uint8_t *bounce; /* one block, for copy-up (bounce_map) */
	/* blk_cow_load's: until it ran (deferred open), no I/O is served */
	struct base_id id;
	char *path, *base_path;
	int loaded;
};

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static int range_ok(const struct blk *b, uint64_t off, uint64_t len)
{
	uint64_t end;

	return !__builtin_add_overflow(off, len, &end) && end <= b->size;
}

/* flock, but a filesystem without locks (some network filesystems) is
 * used unlocked rather than refused. */
static int lock_file(int fd, int exclusive)
{
	if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK)
		return -EBUSY;
	if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)
		return 0;
	return -errno;
}

/* Size of a regular file or block device; anything else is refused. */
static int file_size(int fd, const struct stat *st, uint64_t *size)
{
	if (S_ISREG(st->st_mode)) {
		*size = (uint64_t)st->st_size;
		return 0;
	}
	if (S_ISBLK(st->st_mode))
		return ioctl(fd, BLKGETSIZE64, size) ? -errno : 0;
	return -EINVAL;
}

/* Open `path` and take its lock; fills `e` in the "disk 'x': ..." style. */
static int open_image(const char *path, const char *what, int rw, int *fdp, struct stat *st,
		      uint64_t *size, struct err *e)
{
	int fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	int r;

	if (fd < 0) {
		r = errno;
		return err_set(e, r,
			       "disk '%s': cannot open %s%s: %s: check the path and permissions",
			       path, what, rw ? " for writing" : "", strerror(r));
	}
	if (fstat(fd, st)) {
		r = errno;
		close(fd);
		return err_set(e, r, "disk '%s': cannot stat %s: %s", path, what, strerror(r));
	}
	r = file_size(fd, st, size);
	if (r == -EINVAL) {
		close(fd);
		return err_set(e, EINVAL,
			       "disk '%s': %s is not a regular file or block device: pass an image file",
			       path, what);
	}
	if (r) {
		close(fd);
		return err_set(e, -r, "disk '%s': cannot get the size of %s: %s", path, what,
			       strerror(-r));
	}
	r = lock_file(fd, rw);
	if (r == -EBUSY) {
		close(fd);
		return err_set(e, EBUSY,
			       "disk '%s': %s is in use by another process: stop the other VM%s",
			       path, what,
			       rw ? " or give each VM its own copy-on-write overlay" : "");
	}
	if (r) {
		close(fd);
		return err_set(e, -r, "disk '%s': cannot lock %s: %s", path, what, strerror(-r));
	}
	*fdp = fd;
	return 0;
}

int blk_open_raw(const char *path, int read_only, struct blk **out, struct err *e)
{
	struct blk *b;
	struct stat st;
	uint64_t size;
	int fd, r;

	*out = NULL;
	r = open_image(path, "the image", !read_only, &fd, &st, &size, e);
	if (r)
		return r;
	b = calloc(1, sizeof(*b));
	if (!b) {
		close(fd);
		return err_set(e, ENOMEM, "disk '%s': out of memory", path);
	}
	b->kind = BLK_RAW;
	b->ro = read_only;
	b->fd = fd;
	b->base_fd = -1;
	b->size = size;
	*out = b;
	return 0;
}

/* ---- copy-on-write ---- */

static int bit_get(const struct blk *b, uint64_t i)
{
	return (b->bitmap[i >> 3] >> (i & 7)) & 1;
}

/* Only ever 0 -> 1 (nothing clears a bit), so a torn bitmap page write
 * on crash leaves each bit either old or new, and both are consistent. */
static void bit_set(struct blk *b, uint64_t i)
{
	uint64_t page = (i >> 3) / COW_PAGE;

	b->bitmap[i >> 3] |= (uint8_t)(1u << (i & 7));
	b->dirty[page >> 3] |= (uint8_t)(1u << (page & 7));
}

/* Geometry of an overlay from size and block size; -EINVAL when it does
 * not fit the limits or 63-bit file offsets. */
static int cow_geometry(uint64_t size, uint32_t bs, uint64_t *nblocks, uint64_t *bitmap_bytes,
			uint64_t *data_off)
{
	uint64_t n, bytes, data, end;

	if (bs < BLK_COW_MIN_BLOCK || bs > BLK_COW_MAX_BLOCK || (bs & (bs - 1)))
		return -EINVAL;
	n = size / bs + (size % bs != 0);
	bytes = (n / 8 + (n % 8 != 0) + COW_PAGE - 1) / COW_PAGE * COW_PAGE;
	if (bytes > COW_MAX_BITMAP)
		return -EINVAL;
	data = (COW_HEADER_SIZE + bytes + bs - 1) / bs * bs;
	if (__builtin_mul_overflow(n, (uint64_t)bs, &end) ||
	    __builtin_add_overflow(end, data, &end) || end > (uint64_t)INT64_MAX)
		return -EINVAL;
	*nblocks = n;
	*bitmap_bytes = bytes;
	*data_off = data;
	return 0;
}

static void base_identity(const struct stat *st, uint64_t size, struct base_id *id)
{
	id->size = size;
	id->dev = (uint64_t)st->st_dev;
	id->ino = (uint64_t)st->st_ino;
	id->mtime_sec = (int64_t)st->st_mtim.tv_sec;
	id->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
}

static void fsync_parent(const char *path)
{
	char *copy = strdup(path), *slash;
	int fd;

	if (!copy)
		return;
	slash = strrchr(copy, '/');
	if (!slash)
		strcpy(copy, ".");
	else if (slash == copy)
		slash[1] = 0;
	else
		*slash = 0;
	fd = open(copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(copy);
}

/*
 * Create a new overlay: header and a sparse file of the full size, built
 * under a temporary name and linked into place only when complete and
 * synced, so a crash never leaves a half-written overlay at `path`, and
 * link() (unlike rename) never replaces an overlay another process just
 * created.
 */
static int cow_create(const char *path, const struct base_id *id, uint64_t size, uint32_t bs,
		      struct err *e)
{
	uint8_t hdr[COW_HEADER_SIZE] = { 0 };
	uint64_t nblocks, bitmap_bytes, data_off;
	size_t plen = strlen(path);
	char *tmp;
	int fd, r;

	if (size < id->size)
		return err_set(
			e, EINVAL,
			"disk '%s': overlay size %llu is smaller than its base (%llu bytes): give a larger size or none",
			path, (unsigned long long)size, (unsigned long long)id->size);
	if (cow_geometry(size, bs, &nblocks, &bitmap_bytes, &data_off))
		return err_set(
			e, EINVAL,
			"disk '%s': cannot make an overlay of %llu bytes with %u-byte blocks: block size must be a power of two from 4 KiB to 1 MiB, and the bitmap at most 64 MiB",
			path, (unsigned long long)size, bs);
	memcpy(hdr + H_MAGIC, COW_MAGIC, 8);
	put32(hdr + H_VERSION, COW_VERSION);
	put32(hdr + H_HEADER_SIZE, COW_HEADER_SIZE);
	put32(hdr + H_BLOCK_SIZE, bs);
	put32(hdr + H_FLAGS, 0);
	put64(hdr + H_SIZE, size);
	put64(hdr + H_BASE_SIZE, id->size);
	put64(hdr + H_BASE_DEV, id->dev);
	put64(hdr + H_BASE_INO, id->ino);
	put64(hdr + H_BASE_MTIME_SEC, (uint64_t)id->mtime_sec);
	put32(hdr + H_BASE_MTIME_NSEC, id->mtime_nsec);
	put64(hdr + H_BITMAP_OFF, COW_HEADER_SIZE);
	put64(hdr + H_BITMAP_BYTES, bitmap_bytes);
	put64(hdr + H_DATA_OFF, data_off);
	put32(hdr + H_CRC, (uint32_t)crc32_z(0, hdr, COW_CRC_LEN));

	tmp = malloc(plen + 8);
	if (!tmp)
		return err_set(e, ENOMEM, "disk '%s': out of memory", path);
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".XXXXXX", 8);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = errno;
		free(tmp);
		return err_set(
			e, r,
			"disk '%s': cannot create the overlay: %s: check the directory exists and is writable",
			path, strerror(r));
	}
	r = fd_io_pwrite_all(fd, hdr, sizeof(hdr), 0);
	if (!r && ftruncate(fd, (off_t)(data_off + nblocks * bs)))
		r = -errno;
	if (!r && fsync(fd))
		r = -errno;
	close(fd);
	if (!r && link(tmp, path)) {
		r = -errno;
		/* Filesystems without hard links: rename is still atomic. */
		if (r == -EPERM || r == -EOPNOTSUPP || r == -EMLINK)
			r = rename(tmp, path) ? -errno : 0;
	}
	unlink(tmp);
	free(tmp);
	if (r == -EEXIST)
		return r; /* created concurrently: the caller opens that one */
	if (r)
		return err_set(e, -r, "disk '%s': cannot create the overlay: %s", path,
			       strerror(-r));
	fsync_parent(path);
	return 0;
}

/* Check a header read from `path` and fill the geometry into `b`. */
static int cow_parse(struct blk *b, const char *path, const uint8_t *hdr, size_t got,
		     uint64_t file_size, const struct base_id *id, const char *base_path,
		     struct err *e)
{
	uint64_t nblocks, bitmap_bytes, data_off;
	uint32_t version, bs, flags;

	if (got < COW_HEADER_SIZE)
		return err_set(
			e, EINVAL,
			"disk '%s': overlay header is truncated (%zu of %u bytes): delete it and let kiln create a new one",
			path, got, COW_HEADER_SIZE);
	if (memcmp(hdr + H_MAGIC, COW_MAGIC, 8))
		return err_set(
			e, EINVAL,
			"disk '%s': not a kiln overlay (bad magic): pass an overlay kiln created, or a path that does not exist yet",
			path);
	version = get32(hdr + H_VERSION);
	if (version != COW_VERSION)
		return err_set(
			e, ENOTSUP,
			"disk '%s': overlay format version %u, this kiln reads version %u: use the kiln that created it",
			path, version, COW_VERSION);
	if (get32(hdr + H_CRC) != (uint32_t)crc32_z(0, hdr, COW_CRC_LEN))
		return err_set(
			e, EINVAL,
			"disk '%s': overlay header checksum mismatch (corrupted): the overlay cannot be used",
			path);
	flags = get32(hdr + H_FLAGS);
	if (flags)
		return err_set(e, ENOTSUP,
			       "disk '%s': overlay has unknown flags 0x%x: use the kiln that created it",
			       path, flags);
	bs = get32(hdr + H_BLOCK_SIZE);
	b->size = get64(hdr + H_SIZE);
	b->base_size = get64(hdr + H_BASE_SIZE);
	b->bitmap_off = get64(hdr + H_BITMAP_OFF);
	b->bitmap_bytes = get64(hdr + H_BITMAP_BYTES);
	b->data_off = get64(hdr + H_DATA_OFF);
	/* Only the layout this version writes is accepted: everything is
	 * derived from size and block size, so any other value is damage. */
	if (get32(hdr + H_HEADER_SIZE) != COW_HEADER_SIZE || b->size < b->base_size ||
	    cow_geometry(b->size, bs, &nblocks, &bitmap_bytes, &data_off) ||
	    b->bitmap_off != COW_HEADER_SIZE || b->bitmap_bytes != bitmap_bytes ||
	    b->data_off != data_off)
		return err_set(
			e, EINVAL,
			"disk '%s': overlay header is inconsistent (corrupted): the overlay cannot be used",
			path);
	if (file_size < data_off + nblocks * bs)
		return err_set(
			e, EINVAL,
			"disk '%s': overlay is truncated (%llu of %llu bytes): the overlay cannot be used",
			path, (unsigned long long)file_size,
			(unsigned long long)(data_off + nblocks * bs));
	if (b->base_size != id->size || get64(hdr + H_BASE_DEV) != id->dev ||
	    get64(hdr + H_BASE_INO) != id->ino ||
	    (int64_t)get64(hdr + H_BASE_MTIME_SEC) != id->mtime_sec ||
	    get32(hdr + H_BASE_MTIME_NSEC) != id->mtime_nsec)
		return err_set(
			e, ESTALE,
			"disk '%s': overlay was made for a different base than '%s' (or the base changed since): use the base it was created over, or a new overlay",
			path, base_path);
	b->bs = bs;
	b->shift = (unsigned)__builtin_ctz(bs);
	b->nblocks = nblocks;
	return 0;
}

int blk_open_cow(const char *base_path, const char *overlay_path, const struct blk_cow_opts *o,
		 struct blk **out, struct err *e)
{
	static const struct blk_cow_opts defaults;
	struct base_id id;
	struct stat st;
	struct blk *b;
	int r;

	*out = NULL;
	if (!o)
		o = &defaults;
	b = calloc(1, sizeof(*b));
	if (!b)
		return err_set(e, ENOMEM, "disk '%s': out of memory", overlay_path);
	b->kind = BLK_COW;
	b->ro = o->read_only;
	b->fd = b->base_fd = -1;

	r = open_image(base_path, "the base image", 0, &b->base_fd, &st, &b->base_size, e);
	if (r)
		goto fail;
	base_identity(&st, b->base_size, &id);

	for (int tries = 0;; tries++) {
		b->fd = open(overlay_path, (b->ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
		if (b->fd >= 0 || errno != ENOENT || !o->create || tries == 2)
			break;
		r = cow_create(overlay_path, &id, o->size ? o->size : id.size,
			       o->block_size ? o->block_size : BLK_COW_DEFAULT_BLOCK, e);
		if (r && r != -EEXIST)
			goto fail;
	}
	if (b->fd < 0) {
		r = errno;
		r = err_set(e, r, "disk '%s': cannot open the overlay%s: %s: %s", overlay_path,
			    b->ro ? "" : " for writing", strerror(r),
			    r == ENOENT ? "create it first or allow creation"
					: "check the path and permissions");
		goto fail;
	}
	if (fstat(b->fd, &st) || !S_ISREG(st.st_mode)) {
		r = err_set(e, EINVAL,
			    "disk '%s': the overlay is not a regular file: pass an overlay kiln created",
			    overlay_path);
		goto fail;
	}
	r = lock_file(b->fd, !b->ro);
	if (r) {
		r = err_set(e, -r,
			    "disk '%s': overlay is in use by another process%s: each VM needs its own overlay",
			    overlay_path, r == -EBUSY ? "" : " (cannot lock it)");
		goto fail;
	}
	b->id = id;
	b->path = strdup(overlay_path);
	b->base_path = strdup(base_path);
	if (!b->path || !b->base_path) {
		r = err_set(e, ENOMEM, "disk '%s': out of memory", overlay_path);
		goto fail;
	}
	if (!o->defer && (r = blk_cow_load(b, e)))
		goto fail;
	*out = b;
	return 0;
fail:
	b->ro = 1; /* nothing to flush */
	blk_close(b);
	return r;
}

/*
 * The copy-up block has pages of its own, given back after each copy-up
 * (MADV_DONTNEED): a block is copied up once, when it is first written
 * in part, and an idle kiln-vmm would otherwise keep the whole block
 * (64 KiB by default) dirty for its life.
 */
static uint8_t *bounce_map(uint32_t bs)
{
	void *p = mmap(NULL, bs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int blk_cow_load(struct blk *b, struct err *e)
{
	uint8_t hdr[COW_HEADER_SIZE];
	struct stat st;
	ssize_t got;
	int r;

	if (b->kind != BLK_COW || b->loaded)
		return 0;
	if (fstat(b->fd, &st) < 0)
		return err_set(e, errno, "disk '%s': cannot stat the overlay: %s", b->path,
			       strerror(errno));
	got = pread(b->fd, hdr, sizeof(hdr), 0);
	if (got < 0)
		return err_set(e, errno, "disk '%s': cannot read the overlay header: %s", b->path,
			       strerror(errno));
	r = cow_parse(b, b->path, hdr, (size_t)got, (uint64_t)st.st_size, &b->id, b->base_path, e);
	if (r) {
		b->size = 0; /* still no I/O: every range is out of bounds */
		return r;
	}
	b->bitmap = calloc(1, b->bitmap_bytes ? b->bitmap_bytes : 1);
	b->dirty = calloc(1, b->bitmap_bytes / COW_PAGE / 8 + 1);
	b->bounce = bounce_map(b->bs);
	r = !b->bitmap || !b->dirty || !b->bounce
		? -ENOMEM
		: fd_io_pread_all(b->fd, b->bitmap, b->bitmap_bytes, b->bitmap_off);
	if (r) {
		b->size = 0;
		if (r == -ENOMEM)
			return err_set(e, ENOMEM, "disk '%s': out of memory for the overlay bitmap",
				       b->path);
		return err_set(e, -r, "disk '%s': cannot read the overlay bitmap: %s", b->path,
			       strerror(-r));
	}
	b->loaded = 1;
	return 0;
}

/* Read [off, off + len) of the base as the overlay's view of it: zeros
 * past the base's end (an overlay may be larger than its base). */
static int base_read(struct blk *b, uint64_t off, uint8_t *buf, size_t len)
{
	size_t from_base = 0;

	if (off < b->base_size)
		from_base = b->base_size - off < len ? (size_t)(b->base_size - off) : len;
	memset(buf + from_base, 0, len - from_base);
	return from_base ? fd_io_pread_all(b->base_fd, buf, from_base, off) : 0;
}

/* Bytes from `off` (at most len) covered by blocks whose bit equals that
 * of the first block, so a run costs one system call. */
static size_t cow_run(const struct blk *b, uint64_t off, size_t len)
{
	uint64_t i = off >> b->shift;
	int state = bit_get(b, i);
	size_t n = b->bs - (size_t)(off & (b->bs - 1));

	if (n >= len)
		return len;
	while (n < len && bit_get(b, ++i) == state)
		n += len - n < b->bs ? len - n : b->bs;
	return n;
}

static int cow_read(struct blk *b, uint64_t off, uint8_t *buf, size_t len)
{
	while (len) {
		size_t n = cow_run(b, off, len);
		int r = bit_get(b, off >> b->shift)
			? fd_io_pread_all(b->fd, buf, n, b->data_off + off)
			: base_read(b, off, buf, n);

		if (r)
			return r;
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/* Block i copied up with n bytes of src (zeros when NULL) at in. */
static int cow_copy_up(struct blk *b, uint64_t i, size_t in, const uint8_t *src, size_t n)
{
	int r = base_read(b, i << b->shift, b->bounce, b->bs);

	if (!r) {
		if (src)
			memcpy(b->bounce + in, src, n);
		else
			memset(b->bounce + in, 0, n);
		r = fd_io_pwrite_all(b->fd, b->bounce, b->bs, b->data_off + (i << b->shift));
	}
	madvise(b->bounce, b->bs, MADV_DONTNEED);
	return r;
}

/*
 * Write `len` bytes at `off` (src == NULL: zeros) into the overlay.
 *
 * Crash-safety ordering: a block's bitmap bit is set in memory only after
 * its data was written, and the bitmap reaches the file only in
 * blk_flush(), after an fdatasync of the data. So a bit that is on disk
 * always describes data that is on disk. A crash can lose writes made
 * since the last flush (the block then reads from the base again, as
 * before the write) but never exposes a block whose data is missing.
 * A block not yet allocated is written whole (copy-up: the base's block
 * merged with the new bytes) to a place no on-disk bit points at, so the
 * base's view of it stays valid until the bit is durable.
 */
static int cow_write(struct blk *b, uint64_t off, const uint8_t *src, size_t len)
{
	while (len) {
		uint64_t i = off >> b->shift;
		size_t in = (size_t)(off & (b->bs - 1));
		size_t n;
		int r;

		if (bit_get(b, i)) {
			/* Allocated: in place. A hole punched in the overlay
			 * reads as zeros, so discarding frees the space. */
			n = cow_run(b, off, len);
			r = src ? fd_io_pwrite_all(b->fd, src, n, b->data_off + off)
				: fd_io_zero_range(b->fd, FALLOC_FL_PUNCH_HOLE, b->data_off + off,
						   n);
			if (r)
				return r;
		} else {
			if (in == 0 && len >= b->bs) {
				/* Whole unallocated blocks: nothing to copy up. */
				n = cow_run(b, off, len) & ~(size_t)(b->bs - 1);
				r = src ? fd_io_pwrite_all(b->fd, src, n, b->data_off + off)
					: fd_io_zero_range(b->fd, FALLOC_FL_PUNCH_HOLE,
							   b->data_off + off, n);
			} else {
				n = b->bs - in < len ? b->bs - in : len;
				r = cow_copy_up(b, i, in, src, n);
			}
			if (r)
				return r;
			/* The data is written: only now may the bits say so. */
			for (uint64_t k = i; k <= (off + n - 1) >> b->shift; k++)
				bit_set(b, k);
		}
		b->data_dirty = 1;
		if (!src)
			b->punched = 1;
		off += n;
		if (src)
			src += n;
		len -= n;
	}
	return 0;
}

/*
 * Flush ordering (see cow_write): 1. fdatasync the overlay, making every
 * block written so far durable; 2. write the dirty bitmap pages;
 * 3. fdatasync again, making the bits durable. A crash between 1 and 3
 * leaves bits unset for data already on disk: those writes are lost, the
 * blocks read from the base as before, and nothing flushed earlier is
 * touched.
 */
static int cow_flush(struct blk *b)
{
	uint64_t pages = b->bitmap_bytes / COW_PAGE;
	int wrote = 0, r;

	if (b->data_dirty) {
		if (b->punched ? fsync(b->fd) : fdatasync(b->fd))
			return -errno;
		b->data_dirty = b->punched = 0;
	}
	for (uint64_t p = 0; p < pages; p++) {
		if (!((b->dirty[p >> 3] >> (p & 7)) & 1))
			continue;
		r = fd_io_pwrite_all(b->fd, b->bitmap + p * COW_PAGE, COW_PAGE,
				     b->bitmap_off + p * COW_PAGE);
		if (r)
			return r;
		wrote = 1;
	}
	if (!wrote)
		return 0;
	if (fdatasync(b->fd))
		return -errno;
	memset(b->dirty, 0, pages / 8 + 1);
	return 0;
}

/* ---- the public operations ---- */

int blk_read(struct blk *b, uint64_t off, void *buf, size_t len)
{
	if (!range_ok(b, off, len))
		return -EINVAL;
	if (b->kind == BLK_COW)
		return cow_read(b, off, buf, len);
	return fd_io_pread_all(b->fd, buf, len, off);
}

int blk_write(struct blk *b, uint64_t off, const void *buf, size_t len)
{
	if (b->ro)
		return -EROFS;
	if (!range_ok(b, off, len))
		return -EINVAL;
	if (b->kind == BLK_COW)
		return cow_write(b, off, buf, len);
	return fd_io_pwrite_all(b->fd, buf, len, off);
}

int blk_flush(struct blk *b)
{
	int r;

	if (b->ro)
		return 0;
	/*
	 * After a failed fsync Linux may already have marked the lost pages
	 * clean, so a retry would "succeed" without the data: once failed,
	 * every later flush fails too.
	 */
	if (b->sync_err)
		return b->sync_err;
	if (b->kind == BLK_COW)
		r = cow_flush(b);
	else
		r = fdatasync(b->fd) ? -errno : 0;
	if (r == -EIO || r == -ENOSPC || r == -EDQUOT)
		b->sync_err = r;
	return r;
}

static int zeroes(struct blk *b, uint64_t off, uint64_t len, int mode)
{
	if (b->ro)
		return -EROFS;
	if (!range_ok(b, off, len))
		return -EINVAL;
	if (b->kind == BLK_COW)
		return len ? cow_write(b, off, NULL, (size_t)len) : 0;
	return fd_io_zero_range(b->fd, mode, off, len);
}

int blk_discard(struct blk *b, uint64_t off, uint64_t len)
{
	return zeroes(b, off, len, FALLOC_FL_PUNCH_HOLE);
}

int blk_write_zeroes(struct blk *b, uint64_t off, uint64_t len)
{
	return zeroes(b, off, len, FALLOC_FL_ZERO_RANGE);
}

uint64_t blk_size(const struct blk *b)
{
	return b->size;
}

int blk_read_only(const struct blk *b)
{
	return b->ro;
}

uint32_t blk_cow_block_size(const struct blk *b)
{
	return b->kind == BLK_COW ? b->bs : 0;
}

int blk_close(struct blk *b)
{
	int r;

	if (!b)
		return 0;
	r = b->fd >= 0 ? blk_flush(b) : 0;
	if (b->fd >= 0)
		close(b->fd);
	if (b->base_fd >= 0)
		close(b->base_fd);
	free(b->bitmap);
	free(b->dirty);
	if (b->bounce)
		munmap(b->bounce, b->bs);
	free(b->path);
	free(b->base_path);
	free(b);
	return r;
}
