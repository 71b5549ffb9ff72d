/*
 * snapshot_workingset: the `workingset` file of a snapshot, the guest
 * pages a restore prefetches (docs/architecture.md, "Working set").
 *
 * Contract:
 *  - A working set is a sorted list of page ranges of guest RAM (RAM
 *    offsets / 4096, as the memory file): each range at least one page,
 *    inside RAM, and apart from the next by at least one page (adjacent
 *    ranges are one range), so one set has one encoding.
 *  - The file is a hint: a restore that finds it missing, damaged,
 *    foreign or describing other RAM stays lazy, as without one. Every
 *    field is checked before use all the same (the file comes from a
 *    directory a jailed VMM writes), and refusals carry the SNAP_ERR_*
 *    codes of snapshot_file.h and a message.
 *  - Written atomically (snapshot_io) into the snapshot directory being
 *    built, like every other file of it; never changed after.
 *
 * workingset, little endian:
 *   0  magic "KILNWSET"   8
 *   8  version (1)        4
 *  12  page size (4096)   4
 *  16  RAM bytes          8   (a whole number of pages, > 0)
 *  24  ranges             8   (n; at most snap_workingset_max_ranges(RAM))
 *  32  pages              8   (the ranges' total)
 *  40  ranges CRC-32      4
 *  44  header CRC-32      4   (bytes 0..43)
 *  48  n ranges: first page u64, page count u64
 */
#ifndef KILN_SNAPSHOT_WORKINGSET_H
#define KILN_SNAPSHOT_WORKINGSET_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

#define SNAP_WORKINGSET_FILE "workingset"
#define SNAP_WORKINGSET_MAGIC "KILNWSET"
#define SNAP_WORKINGSET_VERSION 1
#define SNAP_WORKINGSET_HEADER_SIZE 48
#define SNAP_WORKINGSET_RANGE_SIZE 16

struct snap_workingset_range {
	uint64_t first; /* page index: RAM offset / 4096 */
	uint64_t count; /* pages, >= 1 */
};

struct snap_workingset {
	uint64_t mem_size;
	uint64_t pages;                  /* sum of the counts */
	uint64_t n;                      /* ranges */
	struct snap_workingset_range *r; /* n ranges, malloc'd (NULL when n is 0) */
};

/* The most ranges a set over `mem_size` bytes of RAM can have: every other page. */
uint64_t snap_workingset_max_ranges(uint64_t mem_size);

/*
 * The working set of the pages `bits` marks (a page_bits bitmap of
 * mem_size / 4096 pages; bits past the last page are ignored) into
 * `out`. 0, or -EINVAL (RAM not whole pages) / -ENOMEM with a message.
 */
int snap_workingset_from_bits(const uint64_t *bits, uint64_t mem_size, struct snap_workingset *out,
			      struct err *e);

/* Free the ranges; safe on a zeroed struct. */
void snap_workingset_free(struct snap_workingset *ws);

/*
 * Encode `ws` into a malloc'd buffer (pages is recounted). -EINVAL, with
 * a message, for a set the parser would refuse (ranges empty, out of
 * order, touching or outside RAM).
 */
int snap_workingset_encode(const struct snap_workingset *ws, uint8_t **buf, size_t *len,
			   struct err *e);

/*
 * Parse a workingset file for `mem_size` bytes of RAM (another size is
 * SNAP_ERR_MALFORMED). Refuses, with a message: magic (SNAP_ERR_MAGIC),
 * short (SNAP_ERR_TRUNCATED), longer than its ranges or a CRC wrong
 * (SNAP_ERR_CHECKSUM), version (SNAP_ERR_FORMAT), page size, more ranges
 * than RAM allows, a range empty, outside RAM, out of order or touching
 * the one before, a page total that is not the ranges' (SNAP_ERR_MALFORMED).
 * On success free `out` with snap_workingset_free.
 */
int snap_workingset_parse(const uint8_t *buf, size_t len, uint64_t mem_size,
			  struct snap_workingset *out, struct err *e);

/*
 * DIRFD/workingset, read (capped at the largest file a set over this
 * RAM can be) and parsed. -ENOENT when there is none.
 */
int snap_workingset_read(int dirfd, uint64_t mem_size, struct snap_workingset *out, struct err *e);
/* The same from an opened workingset file (snap_read_fd's fd). */
int snap_workingset_read_fd(int fd, uint64_t mem_size, struct snap_workingset *out, struct err *e);

/* Write DIRFD/workingset atomically (snapshot_io). */
int snap_workingset_write(int dirfd, const struct snap_workingset *ws, struct err *e);

#endif
