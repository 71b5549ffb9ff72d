#include "vmm/snapshot/snapshot_workingset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/base/le.h"
#include "vmm/snapshot/page_bits.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_io.h"
#include "vmm/snapshot/snapshot_mem.h"

/* workingset header offsets (the table in snapshot_workingset.h). */
#define W_MAGIC 0
#define W_VERSION 8
#define W_PAGE 12
#define W_MEM_SIZE 16
#define W_RANGES 24
#define W_PAGES 32
#define W_RANGES_CRC 40
#define W_HEADER_CRC 44

_Static_assert(W_HEADER_CRC + 4 == SNAP_WORKINGSET_HEADER_SIZE, "workingset header layout");
_Static_assert(sizeof(struct snap_workingset_range) == SNAP_WORKINGSET_RANGE_SIZE,
	       "workingset range");

/*
 * RAM a working set can describe: whole pages, and a largest file (plus
 * the reader's one extra byte) whose length size_t holds.
 */
static int check_size(uint64_t size, struct err *e)
{
	if (size == 0 || size % SNAP_PAGE || size > (uint64_t)INT64_MAX ||
	    snap_workingset_max_ranges(size) >
		    (SIZE_MAX - SNAP_WORKINGSET_HEADER_SIZE - 1) / SNAP_WORKINGSET_RANGE_SIZE)
		return err_set(e, EINVAL,
			       "snapshot workingset: %llu bytes of RAM is not a whole number of pages",
			       (unsigned long long)size);
	return 0;
}

uint64_t snap_workingset_max_ranges(uint64_t mem_size)
{
	return (mem_size / SNAP_PAGE + 1) / 2;
}

/* The file's length for n ranges (n within snap_workingset_max_ranges of a checked size). */
static size_t ws_len(uint64_t n)
{
	return SNAP_WORKINGSET_HEADER_SIZE + (size_t)n * SNAP_WORKINGSET_RANGE_SIZE;
}

void snap_workingset_free(struct snap_workingset *ws)
{
	free(ws->r);
	memset(ws, 0, sizeof(*ws));
}

int snap_workingset_from_bits(const uint64_t *bits, uint64_t mem_size, struct snap_workingset *out,
			      struct err *e)
{
	uint64_t npages = mem_size / SNAP_PAGE, page = 0, n, cap = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = check_size(mem_size, e)))
		return r;
	out->mem_size = mem_size;
	while ((n = page_bits_next_run(bits, npages, &page))) {
		if (out->n == cap) {
			uint64_t ncap = cap ? cap * 2 : 64;
			struct snap_workingset_range *nr;

			if (ncap > snap_workingset_max_ranges(mem_size))
				ncap = snap_workingset_max_ranges(mem_size);
			nr = realloc(out->r, (size_t)ncap * sizeof(*nr));
			if (!nr) {
				snap_workingset_free(out);
				return err_set(e, ENOMEM, "snapshot workingset: out of memory");
			}
			out->r = nr;
			cap = ncap;
		}
		out->r[out->n++] = (struct snap_workingset_range){ .first = page, .count = n };
		out->pages += n;
		page += n;
	}
	return 0;
}

/*
 * The ranges in order, apart, non-empty and inside RAM; their total into
 * *pages. 0, or the index of the first bad one + 1.
 */
static uint64_t bad_range(const struct snap_workingset_range *r, uint64_t n, uint64_t npages,
			  uint64_t *pages)
{
	uint64_t next = 0, total = 0;

	for (uint64_t i = 0; i < n; i++) {
		/* `next` is one past the previous range's end plus the gap page, so a touching range fails too. */
		if (r[i].count == 0 || r[i].first < next || r[i].count > npages ||
		    r[i].first > npages - r[i].count)
			return i + 1;
		next = r[i].first + r[i].count + 1;
		total += r[i].count;
	}
	*pages = total;
	return 0;
}

int snap_workingset_encode(const struct snap_workingset *ws, uint8_t **buf, size_t *len,
			   struct err *e)
{
	uint64_t pages = 0, bad;
	uint8_t *b;
	size_t n;
	int r;

	*buf = NULL;
	*len = 0;
	if ((r = check_size(ws->mem_size, e)))
		return r;
	if (ws->n > snap_workingset_max_ranges(ws->mem_size) || (ws->n && !ws->r))
		return err_set(e, EINVAL,
			       "snapshot workingset: %llu ranges cannot lie apart in %llu bytes of RAM",
			       (unsigned long long)ws->n, (unsigned long long)ws->mem_size);
	if ((bad = bad_range(ws->r, ws->n, ws->mem_size / SNAP_PAGE, &pages)))
		return err_set(
			e, EINVAL,
			"snapshot workingset: range %llu is empty, outside RAM, out of order or touches the one before",
			(unsigned long long)(bad - 1));
	n = ws_len(ws->n);
	b = calloc(1, n);
	if (!b)
		return err_set(e, ENOMEM, "snapshot workingset: out of memory");
	for (uint64_t i = 0; i < ws->n; i++) {
		le_put64(b + SNAP_WORKINGSET_HEADER_SIZE + SNAP_WORKINGSET_RANGE_SIZE * i,
			 ws->r[i].first);
		le_put64(b + SNAP_WORKINGSET_HEADER_SIZE + SNAP_WORKINGSET_RANGE_SIZE * i + 8,
			 ws->r[i].count);
	}
	memcpy(b + W_MAGIC, SNAP_WORKINGSET_MAGIC, 8);
	le_put32(b + W_VERSION, SNAP_WORKINGSET_VERSION);
	le_put32(b + W_PAGE, SNAP_PAGE);
	le_put64(b + W_MEM_SIZE, ws->mem_size);
	le_put64(b + W_RANGES, ws->n);
	le_put64(b + W_PAGES, pages);
	le_put32(b + W_RANGES_CRC,
		 (uint32_t)crc32_z(0, b + SNAP_WORKINGSET_HEADER_SIZE,
				   n - SNAP_WORKINGSET_HEADER_SIZE));
	le_put32(b + W_HEADER_CRC, (uint32_t)crc32_z(0, b, W_HEADER_CRC));
	*buf = b;
	*len = n;
	return 0;
}

/* Magic, header checksum, version, page size, RAM size, range count and length: the frame around the ranges. */
static int check_frame(const uint8_t *b, size_t len, uint64_t mem_size, struct err *e)
{
	uint64_t n;

	if (len && memcmp(b, SNAP_WORKINGSET_MAGIC, len < 8 ? len : 8))
		return err_set(e, -SNAP_ERR_MAGIC,
			       "not a kiln working set file (no KILNWSET magic)");
	if (len < SNAP_WORKINGSET_HEADER_SIZE)
		return err_set(e, -SNAP_ERR_TRUNCATED, "snapshot workingset truncated: %zu bytes",
			       len);
	if (le_get32(b + W_HEADER_CRC) != (uint32_t)crc32_z(0, b, W_HEADER_CRC))
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot workingset damaged: header checksum mismatch");
	if (le_get32(b + W_VERSION) != SNAP_WORKINGSET_VERSION)
		return err_set(e, -SNAP_ERR_FORMAT,
			       "snapshot workingset has format version %u, this kiln reads %u",
			       le_get32(b + W_VERSION), SNAP_WORKINGSET_VERSION);
	if (le_get32(b + W_PAGE) != SNAP_PAGE)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot workingset has %u-byte pages, kiln's are %u",
			       le_get32(b + W_PAGE), SNAP_PAGE);
	/* Before the length: a set over other RAM is told as such, not as damage. */
	if (le_get64(b + W_MEM_SIZE) != mem_size)
		return err_set(
			e, -SNAP_ERR_MALFORMED,
			"snapshot workingset describes %llu bytes of RAM, the snapshot's RAM is %llu",
			(unsigned long long)le_get64(b + W_MEM_SIZE), (unsigned long long)mem_size);
	/* Bounded by RAM before any length is computed from it: n * 16 cannot overflow. */
	n = le_get64(b + W_RANGES);
	if (n > snap_workingset_max_ranges(mem_size))
		return err_set(
			e, -SNAP_ERR_MALFORMED,
			"snapshot workingset claims %llu ranges, more than %llu bytes of RAM can hold",
			(unsigned long long)n, (unsigned long long)mem_size);
	if (len < ws_len(n))
		return err_set(e, -SNAP_ERR_TRUNCATED,
			       "snapshot workingset truncated: %zu bytes, needs %zu", len,
			       ws_len(n));
	if (len > ws_len(n))
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot workingset damaged: %zu bytes, its %llu ranges take %zu",
			       len, (unsigned long long)n, ws_len(n));
	if (le_get32(b + W_RANGES_CRC) !=
	    (uint32_t)crc32_z(0, b + SNAP_WORKINGSET_HEADER_SIZE,
			      len - SNAP_WORKINGSET_HEADER_SIZE))
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot workingset damaged: range list checksum mismatch");
	return 0;
}

int snap_workingset_parse(const uint8_t *buf, size_t len, uint64_t mem_size,
			  struct snap_workingset *out, struct err *e)
{
	uint64_t n, pages = 0, bad;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = check_size(mem_size, e)) || (r = check_frame(buf, len, mem_size, e)))
		return r;
	n = le_get64(buf + W_RANGES);
	/* The file that holds them bounds this allocation. */
	if (n && !(out->r = malloc((size_t)n * sizeof(*out->r))))
		return err_set(e, ENOMEM, "snapshot workingset: out of memory");
	for (uint64_t i = 0; i < n; i++) {
		out->r[i].first = le_get64(buf + SNAP_WORKINGSET_HEADER_SIZE +
					   SNAP_WORKINGSET_RANGE_SIZE * i);
		out->r[i].count = le_get64(buf + SNAP_WORKINGSET_HEADER_SIZE +
					   SNAP_WORKINGSET_RANGE_SIZE * i + 8);
	}
	if ((bad = bad_range(out->r, n, mem_size / SNAP_PAGE, &pages)))
		r = err_set(e, -SNAP_ERR_MALFORMED,
			    "snapshot workingset: range %llu is empty, outside RAM, out of order or touches the one before",
			    (unsigned long long)(bad - 1));
	else if (pages != le_get64(buf + W_PAGES))
		r = err_set(e, -SNAP_ERR_MALFORMED,
			    "snapshot workingset holds %llu pages, its header counts %llu",
			    (unsigned long long)pages, (unsigned long long)le_get64(buf + W_PAGES));
	if (r) {
		snap_workingset_free(out);
		return r;
	}
	out->mem_size = mem_size;
	out->n = n;
	out->pages = pages;
	return 0;
}

int snap_workingset_read(int dirfd, uint64_t mem_size, struct snap_workingset *out, struct err *e)
{
	return snap_workingset_read_fd(snap_file_open(dirfd, SNAP_WORKINGSET_FILE, e), mem_size,
				       out, e);
}

int snap_workingset_read_fd(int fd, uint64_t mem_size, struct snap_workingset *out, struct err *e)
{
	uint8_t *buf;
	size_t len, cap;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = check_size(mem_size, e))) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	/* One byte over the largest: parse tells "longer", a larger file is never read. */
	cap = ws_len(snap_workingset_max_ranges(mem_size)) + 1;
	r = snap_read_fd(fd, SNAP_WORKINGSET_FILE, cap, &buf, &len, e);
	if (r == -EFBIG)
		return err_set(
			e, -SNAP_ERR_CHECKSUM,
			"snapshot workingset damaged: larger than any working set of %llu bytes of RAM",
			(unsigned long long)mem_size);
	if (r)
		return r;
	r = snap_workingset_parse(buf, len, mem_size, out, e);
	free(buf);
	return r;
}

int snap_workingset_write(int dirfd, const struct snap_workingset *ws, struct err *e)
{
	uint8_t *buf;
	size_t len;
	int r = snap_workingset_encode(ws, &buf, &len, e);

	if (r)
		return r;
	r = snap_write_atomic(dirfd, SNAP_WORKINGSET_FILE, buf, len, e);
	free(buf);
	return r;
}
