/*
 * snapshot_mem: guest memory in a snapshot, as one of two files.
 *
 * Contract:
 *  - raw ("memory"): a file exactly as large as guest RAM whose all-zero
 *    4 KiB pages are holes (never written, so they take no disk); adjacent
 *    nonzero pages go out in one write. Restore maps it MAP_PRIVATE: pages
 *    load lazily on first touch, every restore of one snapshot shares the
 *    page cache, and guest writes stay private. The file must never be
 *    modified while anything maps it (snapshots are immutable once
 *    committed).
 *  - compressed ("memory.z"): a header, the nonzero runs (at most 1 MiB of
 *    RAM each) as zlib streams, an index of runs, each part checksummed;
 *    restore decompresses into zero-filled anonymous memory.
 * Memory sizes are whole pages. Every offset and length read from a
 * compressed file is checked before use; a file that is not one, is cut
 * short, damaged or describes other RAM is refused with the SNAP_ERR_*
 * codes of snapshot_file.h and a message.
 */
#ifndef KILN_SNAPSHOT_MEM_H
#define KILN_SNAPSHOT_MEM_H

#include <stdint.h>

#include "lib/base/err.h"

#define SNAP_PAGE 4096
#define SNAP_MEMZ_MAGIC "KILNMEMZ"
#define SNAP_MEMZ_VERSION 1
#define SNAP_MEMZ_HEADER_SIZE 48
#define SNAP_MEMZ_INDEX_ENTRY 32
#define SNAP_MEMZ_RUN_MAX (1u << 20) /* RAM bytes per zlib stream */

/* 1 when the 4 KiB page at p is all zeros (such pages are holes in a memory file). */
int snap_page_zero(const uint8_t *p);

struct snap_mem_stats {
	uint64_t pages;  /* nonzero pages saved */
	uint64_t runs;   /* writes (raw) or zlib streams (compressed) */
	uint64_t stored; /* bytes of page data in the file (compressed size for memory.z) */
};

/*
 * Write `size` bytes of RAM at `mem` to `fd` (an empty file open for
 * writing) as a sparse raw memory file. `st` may be NULL. Returns 0 or
 * -errno (-EINVAL for a size that is not whole pages).
 */
int snap_mem_write_raw(int fd, const void *mem, uint64_t size, struct snap_mem_stats *st,
		       struct err *e);

/* The same as a compressed memory file, zlib `level` 1..9 (1 is fast and usually enough). */
int snap_mem_write_z(int fd, const void *mem, uint64_t size, int level, struct snap_mem_stats *st,
		     struct err *e);

/*
 * Write the memory file DIRFD/NAME atomically (snapshot_io's NAME.tmp,
 * fsync, rename): raw when `level` is 0, else compressed at that level.
 * On failure (a full disk) NAME is untouched and NAME.tmp removed.
 */
int snap_mem_save(int dirfd, const char *name, const void *mem, uint64_t size, int level,
		  struct snap_mem_stats *st, struct err *e);

/*
 * Open the raw memory file DIRFD/NAME for restore: a regular file of
 * exactly `size` bytes. Returns a read-only fd, or SNAP_ERR_TRUNCATED
 * (smaller), SNAP_ERR_MALFORMED (larger, or not a regular file), -errno.
 */
int snap_mem_open_raw(int dirfd, const char *name, uint64_t size, struct err *e);
/* The same checks on an opened file (snap_file_check's fd: closed when refused). */
int snap_mem_check_raw(int fd, const char *name, uint64_t size, struct err *e);

/*
 * Map that file MAP_PRIVATE, readable and writable: at `at` (MAP_FIXED,
 * replacing what is there) when not NULL, else anywhere. *out is the
 * mapping. Returns 0 or -errno.
 */
int snap_mem_map_raw(int fd, uint64_t size, void *at, void **out, struct err *e);

/*
 * Decompress the compressed memory file `fd` into `mem` (`size` bytes,
 * zero-filled: only the saved runs are written). The file must describe
 * exactly `size` bytes of RAM. Returns 0, a SNAP_ERR_* code (magic,
 * truncated, checksum/damaged, format version, malformed index) or -errno.
 * On failure `mem` may hold part of the image.
 */
int snap_mem_read_z(int fd, void *mem, uint64_t size, struct err *e);

#endif
