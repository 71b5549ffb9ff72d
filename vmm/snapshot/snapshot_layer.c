#include "vmm/snapshot/snapshot_layer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/base/file_copy.h"
#include "lib/base/fd_io.h"
#include "lib/base/le.h"
#include "vmm/snapshot/page_bits.h"
#include "vmm/snapshot/snapshot_io.h"

/* memory.layer header offsets (the table in snapshot_layer.h). */
#define L_MAGIC 0
#define L_VERSION 8
#define L_PAGE 12
#define L_MEM_SIZE 16
#define L_DEPTH 24
#define L_RESERVED 28
#define L_PARENT_ID 32
#define L_PARENT 48
#define L_PAGES 112
#define L_HEADER_CRC 120
#define L_BITMAP_CRC 124

_Static_assert(L_BITMAP_CRC + 4 == SNAP_LAYER_HEADER_SIZE, "memory.layer header layout");
_Static_assert(L_PARENT_ID + SNAP_ID_LEN == L_PARENT, "memory.layer parent id");
_Static_assert(L_PARENT + SNAP_LAYER_NAME_MAX + 1 == L_PAGES, "memory.layer parent name");

/*
 * Bytes of RAM a merge moves at once: its buffer stays this size
 * whatever the RAM, and the 4 KiB pages of a chunk are whole.
 */
#define MERGE_CHUNK (1u << 20)
_Static_assert(MERGE_CHUNK % SNAP_PAGE == 0, "merge chunks are whole pages");

size_t snap_layer_words(uint64_t mem_size)
{
	return page_bits_words(mem_size / SNAP_PAGE);
}

/* The file's length for `mem_size` bytes of RAM (check_size passed). */
static size_t layer_len(uint64_t mem_size)
{
	return SNAP_LAYER_HEADER_SIZE + 8 * snap_layer_words(mem_size);
}

/*
 * RAM a layer can describe: whole pages, a file as large as RAM that
 * off_t can size, and a layer file (plus the reader's one extra byte)
 * whose length size_t can hold.
 */
static int check_size(uint64_t size, const char *what, struct err *e)
{
	if (size == 0 || size % SNAP_PAGE || size > (uint64_t)INT64_MAX ||
	    snap_layer_words(size) > (SIZE_MAX - SNAP_LAYER_HEADER_SIZE - 1) / 8)
		return err_set(e, EINVAL,
			       "snapshot %s: %llu bytes of RAM is not a whole number of pages",
			       what, (unsigned long long)size);
	return 0;
}

bool snap_layer_name_valid(const char *s)
{
	size_t n = strnlen(s, SNAP_LAYER_NAME_MAX + 1);

	/* A sibling directory's name: never a path, ".", ".." or empty, so it cannot leave the folder. */
	if (n == 0 || n > SNAP_LAYER_NAME_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

int snap_layer_init(struct snap_layer *l, uint64_t mem_size)
{
	memset(l, 0, sizeof(*l));
	if (check_size(mem_size, SNAP_LAYER_FILE, NULL))
		return -EINVAL;
	l->bits = calloc(snap_layer_words(mem_size), sizeof(*l->bits));
	if (!l->bits)
		return -ENOMEM;
	l->mem_size = mem_size;
	return 0;
}

void snap_layer_free(struct snap_layer *l)
{
	free(l->bits);
	l->bits = NULL;
}

/* Bits set past the last page: the last word's high bits when RAM is not a multiple of 64 pages. */
static uint64_t tail_bits(const uint64_t *bits, uint64_t mem_size)
{
	uint64_t pages = mem_size / SNAP_PAGE;

	if (pages % 64 == 0)
		return 0;
	return bits[snap_layer_words(mem_size) - 1] & (~0ull << (pages % 64));
}

int snap_layer_encode(const struct snap_layer *l, uint8_t **buf, size_t *len, struct err *e)
{
	uint64_t pages = 0;
	size_t words, n;
	uint8_t *b;
	int r;

	*buf = NULL;
	*len = 0;
	if ((r = check_size(l->mem_size, SNAP_LAYER_FILE, e)))
		return r;
	if (!snap_layer_name_valid(l->parent))
		return err_set(e, EINVAL,
			       "snapshot memory.layer: the parent's name is not a snapshot name");
	if (l->depth < 1 || l->depth > SNAP_LAYER_DEPTH_MAX)
		return err_set(e, EINVAL, "snapshot memory.layer: depth %u is not 1-%u", l->depth,
			       SNAP_LAYER_DEPTH_MAX);
	if (!l->bits || tail_bits(l->bits, l->mem_size))
		return err_set(e, EINVAL,
			       "snapshot memory.layer: the bitmap marks pages past the end of RAM");
	words = snap_layer_words(l->mem_size);
	n = layer_len(l->mem_size);
	b = calloc(1, n);
	if (!b)
		return err_set(e, ENOMEM, "snapshot memory.layer: out of memory");
	for (size_t w = 0; w < words; w++) {
		le_put64(b + SNAP_LAYER_HEADER_SIZE + 8 * w, l->bits[w]);
		pages += (uint64_t)__builtin_popcountll(l->bits[w]);
	}
	memcpy(b + L_MAGIC, SNAP_LAYER_MAGIC, 8);
	le_put32(b + L_VERSION, SNAP_LAYER_VERSION);
	le_put32(b + L_PAGE, SNAP_PAGE);
	le_put64(b + L_MEM_SIZE, l->mem_size);
	le_put32(b + L_DEPTH, l->depth);
	memcpy(b + L_PARENT_ID, l->parent_id, SNAP_ID_LEN);
	memcpy(b + L_PARENT, l->parent, strlen(l->parent)); /* the rest of the field stays zero */
	le_put64(b + L_PAGES, pages);
	le_put32(b + L_BITMAP_CRC, (uint32_t)crc32_z(0, b + SNAP_LAYER_HEADER_SIZE, 8 * words));
	le_put32(b + L_HEADER_CRC, (uint32_t)crc32_z(0, b, L_HEADER_CRC));
	*buf = b;
	*len = n;
	return 0;
}

/* Magic, length, checksums, version and RAM size: whether the bytes are this RAM's layer file at all. */
static int check_frame(const uint8_t *b, size_t len, uint64_t mem_size, struct err *e)
{
	size_t want = layer_len(mem_size);

	if (len && memcmp(b, SNAP_LAYER_MAGIC, len < 8 ? len : 8))
		return err_set(e, -SNAP_ERR_MAGIC,
			       "not a kiln memory layer file (no KILNLAYR magic)");
	if (len < SNAP_LAYER_HEADER_SIZE)
		return err_set(e, -SNAP_ERR_TRUNCATED, "snapshot memory.layer truncated: %zu bytes",
			       len);
	if (le_get32(b + L_HEADER_CRC) != (uint32_t)crc32_z(0, b, L_HEADER_CRC))
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot memory.layer damaged: header checksum mismatch");
	if (le_get32(b + L_VERSION) != SNAP_LAYER_VERSION)
		return err_set(e, -SNAP_ERR_FORMAT,
			       "snapshot memory.layer has format version %u, this kiln reads %u",
			       le_get32(b + L_VERSION), SNAP_LAYER_VERSION);
	if (le_get32(b + L_PAGE) != SNAP_PAGE)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.layer has %u-byte pages, kiln's are %u",
			       le_get32(b + L_PAGE), SNAP_PAGE);
	if (le_get32(b + L_RESERVED))
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.layer has a malformed header (reserved field set)");
	/* Before the length: a layer of other RAM is told as such, not as damage. */
	if (le_get64(b + L_MEM_SIZE) != mem_size)
		return err_set(
			e, -SNAP_ERR_MALFORMED,
			"snapshot memory.layer describes %llu bytes of RAM, the snapshot's RAM is %llu",
			(unsigned long long)le_get64(b + L_MEM_SIZE), (unsigned long long)mem_size);
	if (len < want)
		return err_set(e, -SNAP_ERR_TRUNCATED,
			       "snapshot memory.layer truncated: %zu bytes, needs %zu", len, want);
	if (len > want)
		return err_set(
			e, -SNAP_ERR_CHECKSUM,
			"snapshot memory.layer damaged: %zu bytes, a layer over this RAM is %zu bytes",
			len, want);
	if (le_get32(b + L_BITMAP_CRC) !=
	    (uint32_t)crc32_z(0, b + SNAP_LAYER_HEADER_SIZE, want - SNAP_LAYER_HEADER_SIZE))
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot memory.layer damaged: bitmap checksum mismatch");
	return 0;
}

/* Depth and parent name (checksummed, but written by someone: still checked). */
static int check_fields(const uint8_t *b, struct snap_layer *out, struct err *e)
{
	const uint8_t *name = b + L_PARENT;
	size_t n = strnlen((const char *)name, SNAP_LAYER_NAME_MAX + 1);
	uint32_t depth = le_get32(b + L_DEPTH);

	if (depth < 1 || depth > SNAP_LAYER_DEPTH_MAX)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.layer: depth %u is not 1-%u", depth,
			       SNAP_LAYER_DEPTH_MAX);
	/* The name is not echoed: it is a stranger's bytes, and a path to nowhere good. */
	if (n > SNAP_LAYER_NAME_MAX)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.layer: the parent's name is not terminated");
	memcpy(out->parent, name, n);
	out->parent[n] = 0;
	if (!snap_layer_name_valid(out->parent))
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.layer: the parent's name is not a snapshot name");
	/* Zero padding, so one layer has one encoding and a re-encode is byte for byte. */
	for (size_t i = n; i <= SNAP_LAYER_NAME_MAX; i++)
		if (name[i])
			return err_set(
				e, -SNAP_ERR_MALFORMED,
				"snapshot memory.layer: bytes after the parent's name are not zero");
	out->depth = depth;
	memcpy(out->parent_id, b + L_PARENT_ID, SNAP_ID_LEN);
	return 0;
}

/* Decode the bitmap into out->bits; it may mark only pages of RAM, and as many as the header counts. */
static int decode_bits(const uint8_t *b, uint64_t mem_size, struct snap_layer *out, struct err *e)
{
	size_t words = snap_layer_words(mem_size);
	uint64_t pages = 0;

	/* words is bounded by the buffer the caller holds: check_frame matched its length. */
	out->bits = malloc(words * sizeof(*out->bits));
	if (!out->bits)
		return err_set(e, ENOMEM, "snapshot memory.layer: out of memory");
	for (size_t w = 0; w < words; w++) {
		out->bits[w] = le_get64(b + SNAP_LAYER_HEADER_SIZE + 8 * w);
		pages += (uint64_t)__builtin_popcountll(out->bits[w]);
	}
	if (tail_bits(out->bits, mem_size))
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.layer marks pages past the end of RAM");
	if (pages != le_get64(b + L_PAGES))
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.layer marks %llu pages, its header counts %llu",
			       (unsigned long long)pages,
			       (unsigned long long)le_get64(b + L_PAGES));
	out->pages = pages;
	return 0;
}

int snap_layer_parse(const uint8_t *buf, size_t len, uint64_t mem_size, struct snap_layer *out,
		     struct err *e)
{
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = check_size(mem_size, SNAP_LAYER_FILE, e)))
		return r;
	if ((r = check_frame(buf, len, mem_size, e)) || (r = check_fields(buf, out, e)) ||
	    (r = decode_bits(buf, mem_size, out, e))) {
		snap_layer_free(out);
		memset(out, 0, sizeof(*out));
		return r;
	}
	out->mem_size = mem_size;
	return 0;
}

int snap_layer_read(int dirfd, uint64_t mem_size, struct snap_layer *out, struct err *e)
{
	int fd = snap_file_openat(dirfd, SNAP_LAYER_FILE);

	return snap_layer_read_fd(fd == -ENOENT ? fd : snap_file_check(fd, SNAP_LAYER_FILE, e),
				  mem_size, out, e);
}

int snap_layer_read_fd(int fd, uint64_t mem_size, struct snap_layer *out, struct err *e)
{
	uint8_t *buf;
	size_t len;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = check_size(mem_size, SNAP_LAYER_FILE, e))) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	/* One byte over the exact size: parse tells "longer", a larger file is never read. */
	r = snap_read_fd(fd, SNAP_LAYER_FILE, layer_len(mem_size) + 1, &buf, &len, e);
	if (r == -EFBIG)
		return err_set(
			e, -SNAP_ERR_CHECKSUM,
			"snapshot memory.layer damaged: larger than the %zu bytes of a layer over %llu bytes of RAM",
			layer_len(mem_size), (unsigned long long)mem_size);
	if (r)
		return r;
	r = snap_layer_parse(buf, len, mem_size, out, e);
	free(buf);
	return r;
}

int snap_layer_write(int dirfd, const struct snap_layer *l, struct err *e)
{
	uint8_t *buf;
	size_t len;
	int r = snap_layer_encode(l, &buf, &len, e);

	if (r)
		return r;
	r = snap_write_atomic(dirfd, SNAP_LAYER_FILE, buf, len, e);
	free(buf);
	return r;
}

/* Write the nonzero pages of `buf` (len bytes, whole pages, belonging at `off`), a run per write. -errno. */
static int write_nonzero(int fd, const uint8_t *buf, uint64_t len, uint64_t off,
			 struct snap_mem_stats *s)
{
	uint64_t start = 0, end;
	int r;

	while (start < len) {
		if (snap_page_zero(buf + start)) {
			start += SNAP_PAGE;
			continue;
		}
		for (end = start + SNAP_PAGE; end < len && !snap_page_zero(buf + end);
		     end += SNAP_PAGE)
			;
		if ((r = fd_io_pwrite_all(fd, buf + start, end - start, off + start)))
			return r;
		s->runs++;
		s->stored += end - start;
		start = end;
	}
	return 0;
}

int snap_mem_write_pages(int fd, const void *mem, uint64_t size, const uint64_t *bits,
			 struct snap_mem_stats *st, struct err *e)
{
	struct snap_mem_stats s = { 0 };
	uint64_t page = 0, n;
	int r = check_size(size, "memory", e);

	if (r)
		return r;
	/* The length first: every page not written stays a hole that reads as zeros. */
	if (ftruncate(fd, (off_t)size) < 0)
		return err_set(e, errno, "snapshot memory: sizing the file: %s", strerror(errno));
	while ((n = page_bits_next_run(bits, size / SNAP_PAGE, &page))) {
		r = write_nonzero(fd, (const uint8_t *)mem + page * SNAP_PAGE, n * SNAP_PAGE,
				  page * SNAP_PAGE, &s);
		if (r)
			return err_set(e, -r, "snapshot memory: writing: %s", strerror(-r));
		s.pages += n;
		page += n;
	}
	if (st)
		*st = s;
	return 0;
}

/* `fd` must be a regular file of exactly `size` bytes: a short one would read as EOF mid-RAM. */
static int check_mem_file(int fd, uint64_t size, const char *whose, struct err *e)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return err_set(e, errno, "snapshot memory%s: %s", whose, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return err_set(e, -SNAP_ERR_MALFORMED, "snapshot memory%s is not a regular file",
			       whose);
	if ((uint64_t)st.st_size != size)
		return err_set(e,
			       (uint64_t)st.st_size < size ? -SNAP_ERR_TRUNCATED
							   : -SNAP_ERR_MALFORMED,
			       "snapshot memory%s is %lld bytes, the snapshot's RAM is %llu", whose,
			       (long long)st.st_size, (unsigned long long)size);
	return 0;
}

int snap_layer_apply(int fd, const struct snap_layer *l, void *mem, struct err *e)
{
	uint64_t page = 0, n;
	int r = check_size(l->mem_size, SNAP_LAYER_FILE, e);

	if (r)
		return r;
	if (!l->bits)
		return err_set(e, EINVAL, "snapshot memory.layer: no bitmap");
	if ((r = check_mem_file(fd, l->mem_size, " of the layer", e)))
		return r;
	while ((n = page_bits_next_run(l->bits, l->mem_size / SNAP_PAGE, &page))) {
		r = fd_io_pread_all(fd, (uint8_t *)mem + page * SNAP_PAGE, n * SNAP_PAGE,
				    page * SNAP_PAGE);
		if (r)
			return err_set(e, -r,
				       "snapshot memory: reading the layer's pages at %#llx: %s",
				       (unsigned long long)(page * SNAP_PAGE), strerror(-r));
		page += n;
	}
	return 0;
}

/* Runs of marked pages in `l`, counted up to limit + 1. */
static unsigned count_runs(const struct snap_layer *l, unsigned limit)
{
	uint64_t page = 0, n;
	unsigned runs = 0;

	while (runs <= limit && (n = page_bits_next_run(l->bits, l->mem_size / SNAP_PAGE, &page))) {
		runs++;
		page += n;
	}
	return runs;
}

int snap_layer_map(int fd, const struct snap_layer *l, void *mem, unsigned *budget, struct err *e)
{
	uint64_t page = 0, n;
	unsigned runs;
	int r = check_size(l->mem_size, SNAP_LAYER_FILE, e);

	if (r)
		return r;
	if (!l->bits)
		return err_set(e, EINVAL, "snapshot memory.layer: no bitmap");
	runs = count_runs(l, *budget);
	/* Too fragmented for the mappings left: copied, as before. */
	if (runs > *budget)
		return snap_layer_apply(fd, l, mem, e);
	if ((r = check_mem_file(fd, l->mem_size, " of the layer", e)))
		return r;
	while ((n = page_bits_next_run(l->bits, l->mem_size / SNAP_PAGE, &page))) {
		void *at = (uint8_t *)mem + page * SNAP_PAGE;

		if (mmap(at, n * SNAP_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
			 (off_t)(page * SNAP_PAGE)) == MAP_FAILED)
			return err_set(e, errno,
				       "snapshot memory: mapping the layer's pages at %#llx: %s",
				       (unsigned long long)(page * SNAP_PAGE), strerror(errno));
		page += n;
	}
	*budget -= runs;
	return 0;
}

/* ---- snapshot ids ---- */

int snap_id_put(struct snap_writer *w, const uint8_t id[SNAP_ID_LEN], struct err *e)
{
	/* Errors stick to the writer: snap_end returns the first. */
	snap_begin(w, SNAP_SEC_SNAP_ID, 0, "snap_id", e);
	snap_put_u32(w, SNAP_ID_VERSION, e);
	snap_put(w, id, SNAP_ID_LEN, e);
	return snap_end(w, e);
}

int snap_id_get(const struct snap_view *v, uint8_t id[SNAP_ID_LEN], struct err *e)
{
	const struct snap_section *s = snap_find(v, SNAP_SEC_SNAP_ID, 0);
	uint8_t got[SNAP_ID_LEN];
	struct snap_cursor c;
	uint32_t version;
	int r;

	if (!s)
		return err_set(
			e, -SNAP_ERR_MALFORMED,
			"snapshot state has no snapshot id: it cannot be a parent of incremental snapshots");
	snap_cursor_init(&c, s);
	version = snap_get_u32(&c);
	if (c.bad)
		return snap_cursor_end(&c, e);
	/* Another version may be laid out otherwise: its length means nothing here. */
	if (version != SNAP_ID_VERSION)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot state: id version %u, this kiln reads %u", version,
			       SNAP_ID_VERSION);
	snap_get(&c, got, sizeof(got));
	if ((r = snap_cursor_end(&c, e)))
		return r;
	memcpy(id, got, SNAP_ID_LEN);
	return 0;
}

int snap_id_read(int dirfd, uint8_t id[SNAP_ID_LEN], struct err *e)
{
	return snap_id_read_fd(snap_file_open(dirfd, SNAP_STATE_FILE, e), id, e);
}

int snap_id_read_fd(int fd, uint8_t id[SNAP_ID_LEN], struct err *e)
{
	struct snap_view v = { 0 };
	uint8_t *buf;
	size_t len;
	int r = snap_read_fd(fd, SNAP_STATE_FILE, SNAP_STATE_MAX, &buf, &len, e);

	if (r)
		return r;
	/* No host check: an id is wanted even from a snapshot this host could not restore. */
	r = snap_parse(buf, len, NULL, &v, e);
	if (!r) {
		r = snap_id_get(&v, id, e);
		snap_view_free(&v);
	}
	free(buf);
	return r;
}

/* ---- deleting a parent ---- */

/* The raw memory file of a snapshot and its size (the RAM's). The fd, or -errno. */
static int open_mem(int dirfd, uint64_t *size, struct err *e)
{
	struct stat st;
	int fd = snap_file_open(dirfd, SNAP_MEM_FILE, e), r;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = err_set(e, errno, "snapshot memory: %s", strerror(errno));
		close(fd);
		return r;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

/* The parent's raw memory, as large as the child's RAM. A compressed one cannot be copied page by page. */
static int open_parent_mem(int parentfd, const struct snap_layer *child, struct err *e)
{
	struct stat st;
	uint64_t size;
	int fd = open_mem(parentfd, &size, e), r;

	if (fd == -ENOENT && fstatat(parentfd, SNAP_MEMZ_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return err_set(
			e, ENOTSUP,
			"snapshot '%s' keeps its memory compressed (memory.z), so a layered snapshot cannot be folded into it: restore and snapshot it again uncompressed",
			child->parent);
	if (fd < 0)
		return fd;
	if ((r = check_mem_file(fd, child->mem_size, " of the parent", e))) {
		close(fd);
		return r;
	}
	return fd;
}

/*
 * One chunk of the child's pages, `len` bytes at `off`, from `from` over
 * the parent's bytes in `to`. A page the child wrote back to zeros must
 * replace the parent's data too: the chunk is punched to a hole first and
 * its nonzero pages written, or (a filesystem that cannot punch) written
 * whole.
 */
static int merge_chunk(int from, int to, uint8_t *buf, size_t len, uint64_t off,
		       struct snap_mem_stats *s, struct err *e)
{
	int r = fd_io_pread_all(from, buf, len, off);

	if (r)
		return err_set(e, -r, "snapshot memory: reading the child's pages at %#llx: %s",
			       (unsigned long long)off, strerror(-r));
	if (fallocate(to, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		r = write_nonzero(to, buf, len, off, s);
	else if (errno == EOPNOTSUPP || errno == ENOSYS)
		r = fd_io_pwrite_all(to, buf, len, off);
	else
		r = -errno;
	if (r)
		return err_set(e, -r, "snapshot memory: writing the merged pages at %#llx: %s",
			       (unsigned long long)off, strerror(-r));
	return 0;
}

/* Every page `child` marks, from the child's memory `from` into the copy of the parent's `to`. */
static int merge_pages(int from, int to, const struct snap_layer *child, struct err *e)
{
	struct snap_mem_stats s = { 0 };
	uint64_t page = 0, n;
	uint8_t *buf = malloc(MERGE_CHUNK);
	int r = 0;

	if (!buf)
		return err_set(e, ENOMEM, "snapshot memory: out of memory");
	while (!r && (n = page_bits_next_run(child->bits, child->mem_size / SNAP_PAGE, &page))) {
		uint64_t off = page * SNAP_PAGE, end = (page + n) * SNAP_PAGE;

		for (; !r && off < end; off += MERGE_CHUNK)
			r = merge_chunk(from, to, buf,
					end - off < MERGE_CHUNK ? (size_t)(end - off) : MERGE_CHUNK,
					off, &s, e);
		page += n;
	}
	free(buf);
	return r;
}

/*
 * A file kilnd (root) writes into a checkpoint belongs to the checkpoint
 * directory's owner, the jailed kiln-vmm that reads it at its next
 * snapshot. Best effort: without the right to, the file is the writer's.
 */
static void give_to_owner(int childfd, int fd, const char *name)
{
	struct stat st;

	if (fstat(childfd, &st) < 0)
		return;
	if (fd >= 0)
		(void)!fchown(fd, st.st_uid, st.st_gid);
	else
		(void)!fchownat(childfd, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
}

/* The child's new layer: the parent's place in the chain, both sets of pages. */
static int fold_layer(int childfd, struct snap_layer *child, const struct snap_layer *parent,
		      struct err *e)
{
	int r;

	for (size_t w = 0; w < snap_layer_words(child->mem_size); w++)
		child->bits[w] |= parent->bits[w];
	child->depth = parent->depth;
	memcpy(child->parent_id, parent->parent_id, SNAP_ID_LEN);
	memcpy(child->parent, parent->parent, sizeof(child->parent));
	r = snap_layer_write(childfd, child, e);
	if (r == 0)
		give_to_owner(childfd, -1, SNAP_LAYER_FILE);
	return r;
}

/* The child is full now: no layer, and the removal on disk before the parent goes. */
static int drop_layer(int childfd, struct err *e)
{
	if (unlinkat(childfd, SNAP_LAYER_FILE, 0) < 0)
		return err_set(e, errno, "snapshot: removing memory.layer: %s", strerror(errno));
	if (fsync(childfd) < 0)
		return err_set(e, errno,
			       "snapshot: syncing the directory after removing memory.layer: %s",
			       strerror(errno));
	return 0;
}

/*
 * The child's layer, when it has one: -ENOENT when it is full. Its RAM
 * size is its memory file's (a layered snapshot's memory is raw and as
 * large as RAM); *mem is that file, left open.
 */
static int child_layer(int childfd, struct snap_layer *l, int *mem, struct err *e)
{
	struct stat st;
	uint64_t size;
	int r;

	*mem = -1;
	if (fstatat(childfd, SNAP_LAYER_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT
			? -ENOENT
			: err_set(e, errno, "snapshot: memory.layer: %s", strerror(errno));
	r = open_mem(childfd, &size, e);
	if (r < 0)
		return r == -ENOENT
			? err_set(e, -SNAP_ERR_MALFORMED,
				  "snapshot: a layered snapshot without its raw memory file")
			: r;
	*mem = r;
	if (check_size(size, SNAP_MEM_FILE, NULL))
		r = err_set(e, -SNAP_ERR_MALFORMED,
			    "snapshot memory is %llu bytes, not a whole number of pages",
			    (unsigned long long)size);
	else
		r = snap_layer_read(childfd, size, l, e);
	if (r) {
		close(*mem);
		*mem = -1;
	}
	return r;
}

/* Whether the two directory fds are one directory: a snapshot is not its own parent. */
static int same_dir(int a, int b, struct err *e)
{
	struct stat sa, sb;

	if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
		return err_set(e, errno, "snapshot: %s", strerror(errno));
	if (sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino)
		return err_set(e, EINVAL, "snapshot: the parent and the child are one directory");
	return 0;
}

int snap_layer_merge(int parentfd, int childfd, struct snap_merge_result *res, struct err *e)
{
	struct snap_layer child = { 0 }, parent = { 0 };
	uint8_t pid[SNAP_ID_LEN];
	struct stat st;
	bool full;
	int cmem = -1, pmem = -1, tmp, r;

	memset(res, 0, sizeof(*res));
	if ((r = same_dir(parentfd, childfd, e)))
		return r;
	r = child_layer(childfd, &child, &cmem, e);
	if (r)
		return r == -ENOENT ? 0 : r; /* a full child stands on nothing */
	if ((r = snap_id_read(parentfd, pid, e)))
		goto out;
	/* A snapshot of the same name taken again is not the one the child was layered on. */
	if (memcmp(pid, child.parent_id, SNAP_ID_LEN))
		goto out;
	if ((pmem = open_parent_mem(parentfd, &child, e)) < 0) {
		r = pmem;
		goto out;
	}
	r = snap_layer_read(parentfd, child.mem_size, &parent, e);
	full = r == -ENOENT;
	if (r && !full)
		goto out;
	if ((tmp = snap_tmp_open(childfd, SNAP_MEM_FILE, e)) < 0) {
		r = tmp;
		goto out;
	}
	r = file_copy_sparse(pmem, tmp, NULL);
	if (r)
		r = err_set(e, -r, "snapshot memory: copying the parent's: %s", strerror(-r));
	if (!r)
		r = merge_pages(cmem, tmp, &child, e);
	if (r) {
		snap_tmp_abort(childfd, SNAP_MEM_FILE, tmp);
		goto out;
	}
	if (fstat(tmp, &st) == 0)
		res->stored = (uint64_t)st.st_blocks * 512;
	give_to_owner(childfd, tmp, SNAP_MEM_FILE ".tmp");
	/* The memory first: the old layer over it still gives the child's RAM, through the parent. */
	if ((r = snap_tmp_commit(childfd, SNAP_MEM_FILE, tmp, e)))
		goto out;
	r = full ? drop_layer(childfd, e) : fold_layer(childfd, &child, &parent, e);
	if (r)
		goto out;
	res->merged = true;
	res->full = full;
	if (!full)
		memcpy(res->parent, parent.parent, sizeof(res->parent));
out:
	if (r)
		res->stored = 0;
	if (cmem >= 0)
		close(cmem);
	if (pmem >= 0)
		close(pmem);
	snap_layer_free(&child);
	snap_layer_free(&parent);
	return r;
}
