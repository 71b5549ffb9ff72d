/*
 * snapshot_mem: guest memory must come back bit for bit, zero pages must
 * cost no disk (holes in the raw file), and a compressed file that is cut
 * short, damaged or lies in its index must be refused before it writes
 * outside guest RAM.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "bytes.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_io.h"
#include "vmm/snapshot/snapshot_mem.h"

#define PG SNAP_PAGE
#define MEM_SIZE (8u << 20) /* 2048 pages */

/* memory.z offsets the tests patch (docs/architecture.md, "Snapshot files"). */
#define Z_VERSION 8
#define Z_MEM_SIZE 16
#define Z_INDEX_OFF 24
#define Z_RUNS 32
#define Z_INDEX_CRC 36
#define Z_HEADER_CRC 44
#define I_MEM_OFF 0
#define I_FILE_OFF 8
#define I_MEM_LEN 16
#define I_FILE_LEN 20

struct fx {
	char dir[64];
	int dfd;
	uint8_t *mem;                /* MEM_SIZE bytes of "guest RAM" */
	uint8_t data[MEM_SIZE / PG]; /* 1 where a page holds data */
};

static void *anon(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

/* Nonzero bytes zlib cannot shrink much (xorshift32), so compressed files stay large. */
static void fill_page(struct fx *f, size_t pg, size_t off, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		f->mem[pg * PG + off + i] = (uint8_t)x | 1;
	}
	f->data[pg] = 1;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	strcpy(f->dir, "/tmp/kiln-snapmem-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->dfd = open(f->dir, O_RDONLY | O_DIRECTORY);
	assert_true(f->dfd >= 0);
	f->mem = anon(MEM_SIZE);
	/* Data at odd places: the first and last byte of RAM, lone bytes mid-page, a full run. */
	fill_page(f, 0, 0, 1, 1);
	fill_page(f, 5, PG - 1, 1, 2);
	fill_page(f, 7, 2000, 3, 3);
	fill_page(f, 100, 0, 3 * PG, 4); /* pages 100..102: one write */
	f->data[101] = f->data[102] = 1;
	/* 1.5 MiB of data from page 1000: more than one compressed run. */
	fill_page(f, 1000, 0, 384 * PG, 5);
	for (size_t p = 1000; p < 1384; p++)
		f->data[p] = 1;
	fill_page(f, MEM_SIZE / PG - 1, PG - 1, 1, 6);
	*state = f;
	return 0;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	munmap(f->mem, MEM_SIZE);
	close(f->dfd);
	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static size_t data_pages(const struct fx *f)
{
	size_t n = 0;

	for (size_t p = 0; p < MEM_SIZE / PG; p++)
		n += f->data[p];
	return n;
}

static void test_raw_round_trip(void **state)
{
	struct fx *f = *state;
	struct err e = { { 0 } };
	struct snap_mem_stats st;
	struct stat sb;
	void *map;
	uint8_t byte;
	int fd;

	assert_int_equal(snap_mem_save(f->dfd, SNAP_MEM_FILE, f->mem, MEM_SIZE, 0, &st, &e), 0);
	assert_int_equal(st.pages, data_pages(f));
	assert_int_equal(st.stored, data_pages(f) * PG);
	/* Adjacent data pages went out in one write each: 0, 5, 7, 100-102, 1000-1383, last. */
	assert_int_equal(st.runs, 6);

	fd = snap_mem_open_raw(f->dfd, SNAP_MEM_FILE, MEM_SIZE, &e);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, MEM_SIZE);
	/* Zero pages take no disk: far less than the RAM is allocated. */
	assert_true((uint64_t)sb.st_blocks * 512 < (uint64_t)data_pages(f) * PG + 64 * 1024);
	/* Page by page: data where data was written, holes everywhere else. */
	for (size_t p = 0; p < MEM_SIZE / PG; p++) {
		off_t d = lseek(fd, (off_t)(p * PG), SEEK_DATA);
		int is_data = d == (off_t)(p * PG);

		if (is_data != f->data[p])
			fail_msg("page %zu: data %d in the file, %d in RAM", p, is_data,
				 f->data[p]);
	}

	assert_int_equal(snap_mem_map_raw(fd, MEM_SIZE, NULL, &map, &e), 0);
	assert_memory_equal(map, f->mem, MEM_SIZE);
	/* Guest writes stay private: the file does not change. */
	((uint8_t *)map)[3 * PG] = 0x77;
	assert_int_equal(pread(fd, &byte, 1, 3 * PG), 1);
	assert_int_equal(byte, 0);
	munmap(map, MEM_SIZE);

	/* MAP_FIXED over existing guest RAM, as a restore into a VM's mapping does. */
	map = anon(MEM_SIZE);
	memset(map, 0xee, MEM_SIZE);
	{
		void *at;

		assert_int_equal(snap_mem_map_raw(fd, MEM_SIZE, map, &at, &e), 0);
		assert_ptr_equal(at, map);
	}
	assert_memory_equal(map, f->mem, MEM_SIZE);
	munmap(map, MEM_SIZE);
	close(fd);
	assert_false(faccessat(f->dfd, SNAP_MEM_FILE ".tmp", F_OK, 0) == 0);
}

static void test_raw_wrong_size(void **state)
{
	struct fx *f = *state;
	struct err e = { { 0 } };

	assert_int_equal(snap_mem_save(f->dfd, SNAP_MEM_FILE, f->mem, MEM_SIZE, 0, NULL, &e), 0);
	assert_int_equal(snap_mem_open_raw(f->dfd, SNAP_MEM_FILE, MEM_SIZE + PG, &e),
			 SNAP_ERR_TRUNCATED);
	assert_non_null(strstr(e.msg, "8388608 bytes"));
	assert_int_equal(snap_mem_open_raw(f->dfd, SNAP_MEM_FILE, MEM_SIZE - PG, &e),
			 SNAP_ERR_MALFORMED);
	assert_int_equal(snap_mem_open_raw(f->dfd, "nope", MEM_SIZE, &e), -ENOENT);
	/* A memory file planted as a symlink is refused by name, not followed. */
	assert_int_equal(symlinkat(SNAP_MEM_FILE, f->dfd, "memlink"), 0);
	assert_int_equal(snap_mem_open_raw(f->dfd, "memlink", MEM_SIZE, &e), -ELOOP);
	assert_non_null(strstr(e.msg, "'memlink' is a symbolic link"));
	assert_int_equal(snap_mem_open_raw(f->dfd, SNAP_MEM_FILE, MEM_SIZE + 1, &e), -EINVAL);
	/* Sizes that are not whole pages are refused by the writers too. */
	assert_int_equal(snap_mem_save(f->dfd, "x", f->mem, PG + 1, 0, NULL, &e), -EINVAL);
	assert_int_equal(snap_mem_save(f->dfd, "x", f->mem, 0, 1, NULL, &e), -EINVAL);
	assert_false(faccessat(f->dfd, "x", F_OK, 0) == 0);
	assert_false(faccessat(f->dfd, "x.tmp", F_OK, 0) == 0);
}

/* A full disk while saving memory: the previous memory file survives, no temporary is left. */
static void test_full_disk_keeps_old(void **state)
{
	struct fx *f = *state;
	struct err e = { { 0 } };
	struct rlimit old, lim;
	uint8_t *prev = anon(MEM_SIZE);
	void *map;
	int fd, r1, r2;

	prev[42] = 42;
	assert_int_equal(snap_mem_save(f->dfd, SNAP_MEM_FILE, prev, MEM_SIZE, 0, NULL, &e), 0);
	assert_int_equal(snap_mem_save(f->dfd, SNAP_MEMZ_FILE, prev, MEM_SIZE, 1, NULL, &e), 0);
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 64 * 1024;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	r1 = snap_mem_save(f->dfd, SNAP_MEM_FILE, f->mem, MEM_SIZE, 0, NULL, &e);
	r2 = snap_mem_save(f->dfd, SNAP_MEMZ_FILE, f->mem, MEM_SIZE, 1, NULL, &e);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(r1, -EFBIG);
	assert_int_equal(r2, -EFBIG);
	assert_false(faccessat(f->dfd, SNAP_MEM_FILE ".tmp", F_OK, 0) == 0);
	assert_false(faccessat(f->dfd, SNAP_MEMZ_FILE ".tmp", F_OK, 0) == 0);

	fd = snap_mem_open_raw(f->dfd, SNAP_MEM_FILE, MEM_SIZE, &e);
	assert_true(fd >= 0);
	assert_int_equal(snap_mem_map_raw(fd, MEM_SIZE, NULL, &map, &e), 0);
	assert_memory_equal(map, prev, MEM_SIZE);
	munmap(map, MEM_SIZE);
	close(fd);
	munmap(prev, MEM_SIZE);
}

static int read_z(struct fx *f, const char *name, void *into, uint64_t size, struct err *e)
{
	int fd = openat(f->dfd, name, O_RDONLY), r;

	assert_true(fd >= 0);
	r = snap_mem_read_z(fd, into, size, e);
	close(fd);
	return r;
}

static void test_z_round_trip(void **state)
{
	struct fx *f = *state;
	struct err e = { { 0 } };
	struct snap_mem_stats st;
	struct stat sb;
	uint8_t *back = anon(MEM_SIZE);

	assert_int_equal(snap_mem_save(f->dfd, SNAP_MEMZ_FILE, f->mem, MEM_SIZE, 1, &st, &e), 0);
	assert_int_equal(st.pages, data_pages(f));
	/* 384 data pages from page 1000 are two runs of at most 1 MiB: 7 in all. */
	assert_int_equal(st.runs, 7);
	assert_int_equal(fstatat(f->dfd, SNAP_MEMZ_FILE, &sb, 0), 0);
	assert_int_equal((uint64_t)sb.st_size,
			 SNAP_MEMZ_HEADER_SIZE + st.stored + st.runs * SNAP_MEMZ_INDEX_ENTRY);
	assert_int_equal(read_z(f, SNAP_MEMZ_FILE, back, MEM_SIZE, &e), 0);
	assert_memory_equal(back, f->mem, MEM_SIZE);
	munmap(back, MEM_SIZE);

	/* All-zero RAM: a header and nothing else, and it reads back. */
	back = anon(MEM_SIZE);
	assert_int_equal(snap_mem_save(f->dfd, "zero.z", back, MEM_SIZE, 9, &st, &e), 0);
	assert_int_equal(st.runs, 0);
	assert_int_equal(read_z(f, "zero.z", back, MEM_SIZE, &e), 0);
	munmap(back, MEM_SIZE);
}

/* The RAM size is part of the file: restoring into other RAM is refused. */
static void test_z_wrong_size(void **state)
{
	struct fx *f = *state;
	struct err e = { { 0 } };
	uint8_t *back = anon(2 * MEM_SIZE);

	assert_int_equal(snap_mem_save(f->dfd, SNAP_MEMZ_FILE, f->mem, MEM_SIZE, 1, NULL, &e), 0);
	assert_int_equal(read_z(f, SNAP_MEMZ_FILE, back, 2 * MEM_SIZE, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "8388608"));
	assert_int_equal(snap_mem_save(f->dfd, "bad", f->mem, MEM_SIZE, 10, NULL, &e), -EINVAL);
	munmap(back, 2 * MEM_SIZE);
}

/* A small compressed file (a few pages of RAM) and its bytes, for the damage tests. */
static uint8_t *small_z(struct fx *f, size_t *len)
{
	struct err e = { { 0 } };
	uint8_t *ram = anon(64 * PG), *b;
	int fd;
	struct stat sb;

	memset(ram + 3 * PG, 0xab, 2 * PG);
	memcpy(ram + 40 * PG + 100, "kiln", 4);
	ram[63 * PG + PG - 1] = 9;
	assert_int_equal(snap_mem_save(f->dfd, "small.z", ram, 64 * PG, 6, NULL, &e), 0);
	munmap(ram, 64 * PG);
	fd = openat(f->dfd, "small.z", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	*len = (size_t)sb.st_size;
	b = malloc(*len);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, *len, 0), (ssize_t)*len);
	close(fd);
	return b;
}

static int try_z(struct fx *f, const uint8_t *b, size_t len, struct err *e)
{
	uint8_t *ram = anon(64 * PG);
	int fd = openat(f->dfd, "try.z", O_RDWR | O_CREAT | O_TRUNC, 0600), r;

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, len, 0), (ssize_t)len);
	r = snap_mem_read_z(fd, ram, 64 * PG, e);
	close(fd);
	munmap(ram, 64 * PG);
	return r;
}

static void test_z_truncated_every_length(void **state)
{
	struct fx *f = *state;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = small_z(f, &len);

	assert_int_equal(try_z(f, b, len, &e), 0);
	for (size_t cut = 0; cut < len; cut++) {
		int r = try_z(f, b, cut, &e);

		if (r != SNAP_ERR_TRUNCATED)
			fail_msg("cut at %zu of %zu: got %d (%s)", cut, len, r, e.msg);
	}
	free(b);
}

/* Any byte changed: the magic is foreign, anything else fails a checksum. */
static void test_z_flipped_byte_every_offset(void **state)
{
	static const uint8_t flips[] = { 0x01, 0x80 };
	struct fx *f = *state;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = small_z(f, &len);

	for (size_t off = 0; off < len; off++) {
		for (size_t i = 0; i < sizeof(flips); i++) {
			int r;

			b[off] ^= flips[i];
			r = try_z(f, b, len, &e);
			b[off] ^= flips[i];
			if (r != (off < 8 ? SNAP_ERR_MAGIC : SNAP_ERR_CHECKSUM))
				fail_msg("byte %zu ^ %#x: got %d (%s)", off, flips[i], r, e.msg);
		}
	}
	free(b);
}

/* Re-seal the index (when the header still locates it in the file) and header checksums. */
static void reseal_z(uint8_t *b, size_t len)
{
	uint64_t index_off = get64(b + Z_INDEX_OFF);
	uint64_t n = get32(b + Z_RUNS);

	if (index_off <= len && n * SNAP_MEMZ_INDEX_ENTRY <= len - index_off)
		put32(b + Z_INDEX_CRC,
		      (uint32_t)crc32(0, b + index_off, (uInt)(n * SNAP_MEMZ_INDEX_ENTRY)));
	put32(b + Z_HEADER_CRC, (uint32_t)crc32(0, b, Z_HEADER_CRC));
}

/* A correctly sealed file whose index lies: refused before anything is inflated out of RAM. */
static void test_z_hostile_index(void **state)
{
	struct fx *f = *state;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = small_z(f, &len), *c = malloc(len);
	uint64_t idx;

	assert_non_null(c);
	idx = get64(b + Z_INDEX_OFF);
	assert_int_equal(get32(b + Z_RUNS), 3);

#define PATCH(stmt, want)                                     \
	do {                                                  \
		memcpy(c, b, len);                            \
		stmt;                                         \
		reseal_z(c, len);                             \
		assert_int_equal(try_z(f, c, len, &e), want); \
	} while (0)

	PATCH((void)0, 0);
	/* A run past the end of RAM, or wrapping. */
	PATCH(put64(c + idx + 2 * 32 + I_MEM_OFF, 64 * PG), SNAP_ERR_MALFORMED);
	PATCH(put64(c + idx + 2 * 32 + I_MEM_OFF, UINT64_MAX - PG + 1), SNAP_ERR_MALFORMED);
	/* Unaligned, overlapping, out of order. */
	PATCH(put64(c + idx + I_MEM_OFF, 3 * PG + 1), SNAP_ERR_MALFORMED);
	PATCH(put64(c + idx + 32 + I_MEM_OFF, 4 * PG), SNAP_ERR_MALFORMED);
	PATCH(put64(c + idx + 32 + I_MEM_OFF, 0), SNAP_ERR_MALFORMED);
	/* Lengths: zero, not pages, over the run limit, data not where the index says. */
	PATCH(put32(c + idx + I_MEM_LEN, 0), SNAP_ERR_MALFORMED);
	PATCH(put32(c + idx + I_MEM_LEN, PG + 1), SNAP_ERR_MALFORMED);
	PATCH(put32(c + idx + I_MEM_LEN, 2 * SNAP_MEMZ_RUN_MAX), SNAP_ERR_MALFORMED);
	PATCH(put32(c + idx + I_FILE_LEN, UINT32_MAX), SNAP_ERR_MALFORMED);
	PATCH(put32(c + idx + I_FILE_LEN, get32(c + idx + I_FILE_LEN) + 1), SNAP_ERR_MALFORMED);
	PATCH(put64(c + idx + 32 + I_FILE_OFF, 0), SNAP_ERR_MALFORMED);
	/* A wrong RAM length for good data: the stream does not fill it exactly. */
	PATCH(put32(c + idx + I_MEM_LEN, PG), SNAP_ERR_CHECKSUM);
	/* Header counts that do not match the file. */
	PATCH(put32(c + Z_RUNS, 2), SNAP_ERR_CHECKSUM);
	PATCH(put32(c + Z_RUNS, 4), SNAP_ERR_TRUNCATED);
	PATCH(put32(c + Z_RUNS, UINT32_MAX), SNAP_ERR_MALFORMED);
	PATCH(put64(c + Z_INDEX_OFF, 0), SNAP_ERR_MALFORMED);
	PATCH(put64(c + Z_INDEX_OFF, UINT64_MAX - 8), SNAP_ERR_MALFORMED);
	PATCH(put32(c + Z_VERSION, SNAP_MEMZ_VERSION + 1), SNAP_ERR_FORMAT);
	PATCH(put64(c + Z_MEM_SIZE, 128 * PG), SNAP_ERR_MALFORMED);
	PATCH(memcpy(c, "KILNSNAP", 8), SNAP_ERR_MAGIC);
#undef PATCH
	free(c);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_raw_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_wrong_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_disk_keeps_old, setup, teardown),
		cmocka_unit_test_setup_teardown(test_z_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_z_wrong_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_z_truncated_every_length, setup, teardown),
		cmocka_unit_test_setup_teardown(test_z_flipped_byte_every_offset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_z_hostile_index, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
