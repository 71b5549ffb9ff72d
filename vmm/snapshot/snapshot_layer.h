/*
 * snapshot_layer: incremental snapshots. A layered snapshot stores only
 * the RAM pages written since its parent, a sibling snapshot directory
 * (docs/architecture.md, "Incremental snapshots").
 *
 * Contract:
 *  - Every snapshot has an id: 16 random bytes in its state file
 *    (section SNAP_SEC_SNAP_ID). A layer names its parent by directory
 *    name (a sibling in the same folder) and by id; a parent whose id
 *    differs is not the parent (it was deleted and taken again).
 *  - A layered snapshot's `memory` is a sparse raw file as large as RAM
 *    holding only its own pages (at their RAM offsets; a page written
 *    back to zeros is a hole, which reads as zeros), and `memory.layer`
 *    says which pages those are: a header and a bitmap, one bit per 4 KiB
 *    page, both checksummed. A full snapshot has no `memory.layer`.
 *  - RAM of a layered snapshot = its parent's RAM, with the pages the
 *    bitmap marks read from its own `memory`. Chains are at most
 *    SNAP_LAYER_DEPTH_MAX layers above a full snapshot whose memory is
 *    raw (never memory.z).
 *  - Files are never modified in place (a restored VM maps them):
 *    snap_layer_merge writes replacements and renames them in, in an
 *    order where a crash at any point leaves the child's RAM the same.
 *  - Every field read from a file is checked before use; a damaged,
 *    truncated or foreign file is refused with the SNAP_ERR_* codes of
 *    snapshot_file.h and a message naming what is wrong.
 */
#ifndef KILN_SNAPSHOT_LAYER_H
#define KILN_SNAPSHOT_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_mem.h"

#define SNAP_LAYER_FILE "memory.layer"
#define SNAP_LAYER_MAGIC "KILNLAYR"
#define SNAP_LAYER_VERSION 1
#define SNAP_LAYER_HEADER_SIZE 128
#define SNAP_LAYER_DEPTH_MAX 32
#define SNAP_LAYER_NAME_MAX 63
#define SNAP_ID_LEN 16
#define SNAP_ID_VERSION 1

/*
 * memory.layer, little endian:
 *   0  magic "KILNLAYR"       8
 *   8  version (1)            4
 *  12  page size (4096)       4
 *  16  RAM bytes              8   (a whole number of pages, > 0)
 *  24  depth                  4   (1 on a full snapshot; <= SNAP_LAYER_DEPTH_MAX)
 *  28  reserved, 0            4
 *  32  parent id             16
 *  48  parent name           64   (1..63 bytes, NUL-padded: snap_layer_name_valid)
 * 112  pages marked           8   (the bitmap's population count)
 * 120  header CRC-32          4   (bytes 0..119)
 * 124  bitmap CRC-32          4
 * 128  bitmap: RAM / 4096 bits in u64 words (bit i of word w is page
 *      64 * w + i); bits past the last page are 0.
 */
struct snap_layer {
	uint64_t mem_size;
	uint32_t depth;
	uint8_t parent_id[SNAP_ID_LEN];
	char parent[SNAP_LAYER_NAME_MAX + 1];
	uint64_t pages;
	uint64_t *bits; /* snap_layer_words(mem_size) words, malloc'd */
};

/* u64 words of a bitmap for `mem_size` bytes of RAM (one bit per page). */
size_t snap_layer_words(uint64_t mem_size);

/* A parent name: 1..63 bytes of [A-Za-z0-9._-], not "." or "..". */
bool snap_layer_name_valid(const char *s);

/* Allocate l->bits (zeroed) for mem_size; other fields zeroed. 0 or -ENOMEM/-EINVAL. */
int snap_layer_init(struct snap_layer *l, uint64_t mem_size);

/* Free the bitmap; safe on a zeroed struct. */
void snap_layer_free(struct snap_layer *l);

/*
 * Encode `l` (pages is recounted from the bitmap) into a malloc'd buffer.
 * -EINVAL for a bad name, depth, size or a bit past the last page.
 */
int snap_layer_encode(const struct snap_layer *l, uint8_t **buf, size_t *len, struct err *e);

/*
 * Parse a memory.layer file. `mem_size` is the RAM the caller expects
 * (another size is SNAP_ERR_MALFORMED). Refuses, with a message: magic
 * (SNAP_ERR_MAGIC), short (SNAP_ERR_TRUNCATED), longer than the bitmap
 * or CRC wrong (SNAP_ERR_CHECKSUM), version (SNAP_ERR_FORMAT), page size,
 * reserved, depth, name, bits past the end, a count that is not the
 * bitmap's (SNAP_ERR_MALFORMED). On success free `out` with
 * snap_layer_free.
 */
int snap_layer_parse(const uint8_t *buf, size_t len, uint64_t mem_size, struct snap_layer *out,
		     struct err *e);

/* DIRFD/memory.layer, read (capped by its expected size) and parsed. -ENOENT when there is none. */
int snap_layer_read(int dirfd, uint64_t mem_size, struct snap_layer *out, struct err *e);
/* The same from an opened memory.layer (snap_read_fd's fd: closed here, -errno passed on). */
int snap_layer_read_fd(int fd, uint64_t mem_size, struct snap_layer *out, struct err *e);

/* Write DIRFD/memory.layer atomically (snapshot_io). */
int snap_layer_write(int dirfd, const struct snap_layer *l, struct err *e);

/*
 * The layer's memory file: `fd` (empty, open for writing) becomes a
 * sparse file of `size` bytes holding the pages of `mem` that `bits`
 * marks; marked pages that are all zero stay holes. Runs of marked pages
 * go out in one write. st->pages counts marked pages, st->stored the
 * bytes written. 0 or -errno.
 */
int snap_mem_write_pages(int fd, const void *mem, uint64_t size, const uint64_t *bits,
			 struct snap_mem_stats *st, struct err *e);

/*
 * Copy the pages `l` marks from the layer's memory file `fd` (exactly
 * l->mem_size bytes, else SNAP_ERR_TRUNCATED / SNAP_ERR_MALFORMED) into
 * `mem` (l->mem_size bytes). 0 or -errno.
 */
int snap_layer_apply(int fd, const struct snap_layer *l, void *mem, struct err *e);

/* Mappings a restore may add for its layers' page runs (snap_layer_map):
 * well under vm.max_map_count (65530 by default), whatever the chain. */
#define SNAP_LAYER_MAP_RUNS_MAX 4096u

/*
 * As snap_layer_apply, but each run of marked pages is mapped from `fd`
 * (MAP_PRIVATE | MAP_FIXED, at the same offset: a layer's memory file
 * holds a page where it is in RAM) instead of copied, so every restore
 * of the layer shares its pages through the page cache, as a full
 * snapshot's `memory` is shared. `mem` must be page-aligned memory
 * mapped by the caller (the VM's RAM). Mapped only when the layer's runs
 * fit in *budget (then taken from it); else copied as snap_layer_apply.
 * 0 or -errno.
 */
int snap_layer_map(int fd, const struct snap_layer *l, void *mem, unsigned *budget, struct err *e);

/* ---- snapshot ids (the state file's SNAP_SEC_SNAP_ID section) ---- */

/* Add the id section (version u32, then the 16 bytes) to a state file being written. */
int snap_id_put(struct snap_writer *w, const uint8_t id[SNAP_ID_LEN], struct err *e);

/* The id of a parsed state file: SNAP_ERR_MALFORMED when it has none or a bad one. */
int snap_id_get(const struct snap_view *v, uint8_t id[SNAP_ID_LEN], struct err *e);

/*
 * The id of the snapshot in directory DIRFD: its state file read
 * (capped at SNAP_STATE_MAX), parsed without a host check, and the id
 * section decoded. 0 or -errno / SNAP_ERR_*.
 */
int snap_id_read(int dirfd, uint8_t id[SNAP_ID_LEN], struct err *e);
/* The same from an opened state file (snap_read_fd's fd). */
int snap_id_read_fd(int fd, uint8_t id[SNAP_ID_LEN], struct err *e);

/* ---- deleting a parent ---- */

struct snap_merge_result {
	bool merged; /* the child was layered on this parent and is not any more */
	bool full;   /* the child is a full snapshot now */
	char parent[SNAP_LAYER_NAME_MAX + 1]; /* its new parent when layered, else "" */
	uint64_t stored;                      /* bytes of page data in its new memory file */
};

/*
 * Before the snapshot in PARENTFD is deleted: when the snapshot in
 * CHILDFD is layered on it (its layer names the parent's id), fold the
 * parent into the child so that the child stays whole without it: the
 * child's new memory is the parent's memory with the child's pages over
 * it (written as memory.tmp, synced, renamed over memory), and its new
 * layer is the parent's layer (parent, id and depth) with both bitmaps
 * or'ed together, or none when the parent was full. The memory file
 * goes first: until the layer changes, the old layer over the new memory
 * still gives the same RAM through the (undeleted) parent. A child on
 * another parent is left alone (res->merged false). The new files go to
 * the child directory's owner. 0 or -errno; on failure the child has the
 * same RAM as before (through the parent, which the caller must then
 * keep), and merging again finishes the job.
 */
int snap_layer_merge(int parentfd, int childfd, struct snap_merge_result *res, struct err *e);

#endif
