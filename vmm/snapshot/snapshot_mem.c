#include "vmm/snapshot/snapshot_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/base/fd_io.h"
#include "lib/base/le.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_io.h"

/* memory.z header offsets (docs/architecture.md, "Snapshot files"). */
#define Z_MAGIC 0
#define Z_VERSION 8
#define Z_PAGE 12
#define Z_MEM_SIZE 16
#define Z_INDEX_OFF 24
#define Z_RUNS 32
#define Z_INDEX_CRC 36
#define Z_RESERVED 40
#define Z_HEADER_CRC 44

_Static_assert(Z_HEADER_CRC + 4 == SNAP_MEMZ_HEADER_SIZE, "memory.z header layout");

/*
 * One index entry. The CRC covers the compressed bytes: zlib's own adler32
 * covers only what they inflate to, and misses damage to the unused bits
 * of a stream's last byte.
 */
struct zrun {
	uint64_t mem_off, file_off;
	uint32_t mem_len, file_len, crc, reserved;
};

_Static_assert(sizeof(struct zrun) == SNAP_MEMZ_INDEX_ENTRY, "memory.z index entry");

int snap_page_zero(const uint8_t *p)
{
	for (size_t i = 0; i < SNAP_PAGE; i += 64) {
		uint64_t w[8];

		memcpy(w, p + i, sizeof(w));
		if (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7])
			return 0;
	}
	return 1;
}

/* The next run of nonzero pages at or after *off, at most `max` bytes; 0 length at the end. */
static uint64_t next_run(const uint8_t *mem, uint64_t size, uint64_t *off, uint64_t max)
{
	uint64_t start, end;

	for (start = *off; start < size && snap_page_zero(mem + start); start += SNAP_PAGE)
		;
	for (end = start; end < size && end - start < max && !snap_page_zero(mem + end);
	     end += SNAP_PAGE)
		;
	*off = start;
	return end - start;
}

static int check_size(uint64_t size, struct err *e)
{
	if (size == 0 || size % SNAP_PAGE || size > (uint64_t)INT64_MAX)
		return err_set(e, EINVAL,
			       "snapshot memory: %llu bytes is not a whole number of pages",
			       (unsigned long long)size);
	return 0;
}

int snap_mem_write_raw(int fd, const void *mem, uint64_t size, struct snap_mem_stats *st,
		       struct err *e)
{
	struct snap_mem_stats s = { 0 };
	uint64_t off = 0, len;
	int r = check_size(size, e);

	if (r)
		return r;
	/* The length first: every page never written stays a hole that reads as zeros. */
	if (ftruncate(fd, (off_t)size) < 0)
		return err_set(e, errno, "snapshot memory: sizing the file: %s", strerror(errno));
	while ((len = next_run(mem, size, &off, size))) {
		r = fd_io_pwrite_all(fd, (const uint8_t *)mem + off, len, off);
		if (r)
			return err_set(e, -r, "snapshot memory: writing: %s", strerror(-r));
		s.pages += len / SNAP_PAGE;
		s.runs++;
		s.stored += len;
		off += len;
	}
	if (st)
		*st = s;
	return 0;
}

int snap_mem_write_z(int fd, const void *mem, uint64_t size, int level, struct snap_mem_stats *st,
		     struct err *e)
{
	struct snap_mem_stats s = { 0 };
	struct zrun *runs = NULL;
	size_t nruns = 0, cap = 0;
	uint8_t hdr[SNAP_MEMZ_HEADER_SIZE] = { 0 }, *out = NULL;
	uint64_t off = 0, len, file_off = SNAP_MEMZ_HEADER_SIZE;
	uLong bound;
	z_stream z = { 0 };
	int r = check_size(size, e);

	if (r)
		return r;
	if (level < 1 || level > 9)
		return err_set(e, EINVAL, "snapshot memory: compression level %d is not 1-9",
			       level);
	if (deflateInit(&z, level) != Z_OK)
		return err_set(e, ENOMEM, "snapshot memory: cannot start zlib");
	bound = deflateBound(&z, SNAP_MEMZ_RUN_MAX);
	out = malloc(bound);
	if (!out) {
		r = err_set(e, ENOMEM, "snapshot memory: out of memory");
		goto out;
	}
	while ((len = next_run(mem, size, &off, SNAP_MEMZ_RUN_MAX))) {
		if (nruns == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct zrun *nr = realloc(runs, ncap * sizeof(*runs));

			if (!nr) {
				r = err_set(e, ENOMEM, "snapshot memory: out of memory");
				goto out;
			}
			runs = nr;
			cap = ncap;
		}
		deflateReset(&z);
		z.next_in = (Bytef *)((const uint8_t *)mem + off);
		z.avail_in = (uInt)len;
		z.next_out = out;
		z.avail_out = (uInt)bound;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
			r = err_set(e, EIO, "snapshot memory: zlib could not compress a run");
			goto out;
		}
		r = fd_io_pwrite_all(fd, out, z.total_out, file_off);
		if (r) {
			r = err_set(e, -r, "snapshot memory: writing: %s", strerror(-r));
			goto out;
		}
		runs[nruns++] = (struct zrun){ .mem_off = off,
					       .file_off = file_off,
					       .mem_len = (uint32_t)len,
					       .file_len = (uint32_t)z.total_out,
					       .crc = (uint32_t)crc32_z(0, out, z.total_out) };
		file_off += z.total_out;
		s.pages += len / SNAP_PAGE;
		s.runs++;
		s.stored += z.total_out;
		off += len;
	}
	r = fd_io_pwrite_all(fd, runs, nruns * sizeof(*runs), file_off);
	if (r) {
		r = err_set(e, -r, "snapshot memory: writing the index: %s", strerror(-r));
		goto out;
	}
	/* The header last: a file cut short anywhere has no valid header. */
	memcpy(hdr + Z_MAGIC, SNAP_MEMZ_MAGIC, 8);
	le_put32(hdr + Z_VERSION, SNAP_MEMZ_VERSION);
	le_put32(hdr + Z_PAGE, SNAP_PAGE);
	le_put64(hdr + Z_MEM_SIZE, size);
	le_put64(hdr + Z_INDEX_OFF, file_off);
	le_put32(hdr + Z_RUNS, (uint32_t)nruns);
	le_put32(hdr + Z_INDEX_CRC,
		 (uint32_t)crc32_z(0, (const uint8_t *)runs, nruns * sizeof(*runs)));
	le_put32(hdr + Z_HEADER_CRC, (uint32_t)crc32_z(0, hdr, Z_HEADER_CRC));
	r = fd_io_pwrite_all(fd, hdr, sizeof(hdr), 0);
	if (r) {
		r = err_set(e, -r, "snapshot memory: writing the header: %s", strerror(-r));
		goto out;
	}
	if (st)
		*st = s;
out:
	deflateEnd(&z);
	free(out);
	free(runs);
	return r;
}

int snap_mem_save(int dirfd, const char *name, const void *mem, uint64_t size, int level,
		  struct snap_mem_stats *st, struct err *e)
{
	int fd = snap_tmp_open(dirfd, name, e), r;

	if (fd < 0)
		return fd;
	r = level ? snap_mem_write_z(fd, mem, size, level, st, e)
		  : snap_mem_write_raw(fd, mem, size, st, e);
	if (r) {
		snap_tmp_abort(dirfd, name, fd);
		return r;
	}
	return snap_tmp_commit(dirfd, name, fd, e);
}

int snap_mem_open_raw(int dirfd, const char *name, uint64_t size, struct err *e)
{
	return snap_mem_check_raw(snap_file_open(dirfd, name, e), name, size, e);
}

int snap_mem_check_raw(int fd, const char *name, uint64_t size, struct err *e)
{
	struct stat st;
	int r = check_size(size, e);

	if (fd < 0)
		return fd;
	if (r) {
		close(fd);
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = err_set(e, errno, "snapshot memory '%s': %s", name, strerror(errno));
	} else if ((uint64_t)st.st_size != size) {
		/* Mapped short, the guest would take SIGBUS-backed faults in the middle of its RAM. */
		r = err_set(e,
			    (uint64_t)st.st_size < size ? -SNAP_ERR_TRUNCATED : -SNAP_ERR_MALFORMED,
			    "snapshot memory '%s' is %lld bytes, the snapshot's RAM is %llu", name,
			    (long long)st.st_size, (unsigned long long)size);
	}
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

int snap_mem_map_raw(int fd, uint64_t size, void *at, void **out, struct err *e)
{
	void *p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | (at ? MAP_FIXED : 0), fd, 0);

	if (p == MAP_FAILED)
		return err_set(e, errno, "snapshot memory: mapping %llu bytes: %s",
			       (unsigned long long)size, strerror(errno));
	*out = p;
	return 0;
}

/* Check the index against the header and itself: runs in order, inside RAM and tiling the file's data. */
static int check_runs(const struct zrun *runs, uint32_t n, uint64_t size, uint64_t index_off,
		      uLong max_zlen, struct err *e)
{
	uint64_t mem_end = 0, file_off = SNAP_MEMZ_HEADER_SIZE;

	for (uint32_t i = 0; i < n; i++) {
		const struct zrun *r = &runs[i];

		if (r->mem_off % SNAP_PAGE || r->mem_len % SNAP_PAGE || r->mem_len == 0 ||
		    r->reserved || r->mem_len > SNAP_MEMZ_RUN_MAX || r->mem_off < mem_end ||
		    r->mem_len > size || r->mem_off > size - r->mem_len)
			return err_set(
				e, -SNAP_ERR_MALFORMED,
				"snapshot memory.z: run %u ([%#llx, +%#llx)) is outside RAM, unaligned or out of order",
				i, (unsigned long long)r->mem_off, (unsigned long long)r->mem_len);
		if (r->file_off != file_off || r->file_len == 0 || r->file_len > max_zlen ||
		    r->file_len > index_off - file_off)
			return err_set(e, -SNAP_ERR_MALFORMED,
				       "snapshot memory.z: run %u's data is not where the index says",
				       i);
		mem_end = r->mem_off + r->mem_len;
		file_off += r->file_len;
	}
	if (file_off != index_off)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.z: the runs do not end at the index");
	return 0;
}

int snap_mem_read_z(int fd, void *mem, uint64_t size, struct err *e)
{
	uint8_t hdr[SNAP_MEMZ_HEADER_SIZE];
	struct zrun *runs = NULL;
	uint8_t *in = NULL;
	uint64_t fsize, index_off, want;
	uint32_t n;
	uLong max_zlen;
	z_stream z = { 0 };
	struct stat st;
	int r = check_size(size, e);

	if (r)
		return r;
	if (fstat(fd, &st) < 0)
		return err_set(e, errno, "snapshot memory.z: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return err_set(e, -SNAP_ERR_MALFORMED, "snapshot memory.z is not a regular file");
	fsize = (uint64_t)st.st_size;
	memset(hdr, 0, sizeof(hdr));
	r = fd_io_pread_all(fd, hdr, fsize < sizeof(hdr) ? fsize : sizeof(hdr), 0);
	if (r)
		return err_set(e, -r, "snapshot memory.z: reading: %s", strerror(-r));
	if (memcmp(hdr, SNAP_MEMZ_MAGIC, fsize < 8 ? fsize : 8))
		return err_set(e, -SNAP_ERR_MAGIC,
			       "not a kiln compressed memory file (no KILNMEMZ magic)");
	if (fsize < sizeof(hdr))
		return err_set(e, -SNAP_ERR_TRUNCATED, "snapshot memory.z truncated: %llu bytes",
			       (unsigned long long)fsize);
	if (le_get32(hdr + Z_HEADER_CRC) != (uint32_t)crc32_z(0, hdr, Z_HEADER_CRC))
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot memory.z damaged: header checksum mismatch");
	if (le_get32(hdr + Z_VERSION) != SNAP_MEMZ_VERSION)
		return err_set(e, -SNAP_ERR_FORMAT,
			       "snapshot memory.z has format version %u, this kiln reads %u",
			       le_get32(hdr + Z_VERSION), SNAP_MEMZ_VERSION);
	if (le_get32(hdr + Z_PAGE) != SNAP_PAGE || le_get32(hdr + Z_RESERVED))
		return err_set(e, -SNAP_ERR_MALFORMED, "snapshot memory.z has a malformed header");
	if (le_get64(hdr + Z_MEM_SIZE) != size)
		return err_set(e, -SNAP_ERR_MALFORMED,
			       "snapshot memory.z holds %llu bytes of RAM, the snapshot's RAM is %llu",
			       (unsigned long long)le_get64(hdr + Z_MEM_SIZE),
			       (unsigned long long)size);
	n = le_get32(hdr + Z_RUNS);
	index_off = le_get64(hdr + Z_INDEX_OFF);
	/* At most one run per page, so n * 32 cannot overflow for any RAM that fits in 64 bits. */
	if (n > size / SNAP_PAGE || index_off < SNAP_MEMZ_HEADER_SIZE ||
	    index_off > (uint64_t)INT64_MAX)
		return err_set(e, -SNAP_ERR_MALFORMED, "snapshot memory.z has a malformed header");
	want = index_off + (uint64_t)n * SNAP_MEMZ_INDEX_ENTRY;
	if (want > fsize)
		return err_set(e, -SNAP_ERR_TRUNCATED,
			       "snapshot memory.z truncated: %llu bytes, needs %llu",
			       (unsigned long long)fsize, (unsigned long long)want);
	if (want < fsize)
		return err_set(e, -SNAP_ERR_CHECKSUM,
			       "snapshot memory.z damaged: %llu bytes, header says %llu",
			       (unsigned long long)fsize, (unsigned long long)want);

	/* The index is within the file that exists: its size bounds this allocation. */
	runs = malloc(n ? (size_t)n * sizeof(*runs) : 1);
	if (!runs)
		return err_set(e, ENOMEM, "snapshot memory.z: out of memory");
	r = fd_io_pread_all(fd, runs, (size_t)n * sizeof(*runs), index_off);
	if (r) {
		r = err_set(e, -r, "snapshot memory.z: reading the index: %s", strerror(-r));
		goto out;
	}
	if (le_get32(hdr + Z_INDEX_CRC) !=
	    (uint32_t)crc32_z(0, (const uint8_t *)runs, (size_t)n * sizeof(*runs))) {
		r = err_set(e, -SNAP_ERR_CHECKSUM,
			    "snapshot memory.z damaged: index checksum mismatch");
		goto out;
	}
	if (inflateInit(&z) != Z_OK) {
		r = err_set(e, ENOMEM, "snapshot memory.z: cannot start zlib");
		goto out;
	}
	/* zlib's worst case for one run: anything longer was not written by kiln. */
	max_zlen = compressBound(SNAP_MEMZ_RUN_MAX);
	r = check_runs(runs, n, size, index_off, max_zlen, e);
	if (r)
		goto out_z;
	in = malloc(max_zlen);
	if (!in) {
		r = err_set(e, ENOMEM, "snapshot memory.z: out of memory");
		goto out_z;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct zrun *run = &runs[i];

		r = fd_io_pread_all(fd, in, run->file_len, run->file_off);
		if (r) {
			r = err_set(e, -r, "snapshot memory.z: reading run %u: %s", i,
				    strerror(-r));
			goto out_z;
		}
		if ((uint32_t)crc32_z(0, in, run->file_len) != run->crc) {
			r = err_set(e, -SNAP_ERR_CHECKSUM,
				    "snapshot memory.z damaged: run %u checksum mismatch", i);
			goto out_z;
		}
		inflateReset(&z);
		z.next_in = in;
		z.avail_in = (uInt)run->file_len;
		z.next_out = (Bytef *)mem + run->mem_off;
		z.avail_out = (uInt)run->mem_len;
		/* Exactly the run: its stream must end (adler32 checked) with no input or room left. */
		if (inflate(&z, Z_FINISH) != Z_STREAM_END || z.avail_in || z.avail_out) {
			r = err_set(e, -SNAP_ERR_CHECKSUM,
				    "snapshot memory.z damaged: run %u does not decompress to its %llu bytes",
				    i, (unsigned long long)run->mem_len);
			goto out_z;
		}
	}
	r = 0;
out_z:
	inflateEnd(&z);
out:
	free(in);
	free(runs);
	return r;
}
