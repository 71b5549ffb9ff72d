/*
 * snapshot_prefetch: the pagemap must report exactly the pages of a
 * mapping this process touched (reads of a MAP_PRIVATE file mapping and
 * writes alike) without itself touching any, must never show frame
 * numbers even to root, and must leave the opener's capabilities as
 * they were; a prefetch must read the working set's pages into a cold
 * page cache without mapping any (or changing a byte of guest memory),
 * and say where it failed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vmm/snapshot/page_bits.h"
#include "vmm/snapshot/snapshot_mem.h"
#include "vmm/snapshot/snapshot_prefetch.h"
#include "vmm/snapshot/snapshot_workingset.h"

#define PG SNAP_PAGE
#define NPG 256 /* 1 MiB: far wider than the kernel's 64 KiB fault-around */

static int bit(const uint64_t *bits, uint64_t p)
{
	return (int)(bits[p / 64] >> (p % 64) & 1);
}

/* The pages of [mem, mem + NPG pages) this process touched. */
static void touched(int fd, const void *mem, uint64_t *bits)
{
	struct err e = { { 0 } };

	memset(bits, 0, 8 * page_bits_words(NPG));
	assert_int_equal(snap_pagemap_touched(fd, mem, (uint64_t)NPG * PG, bits, &e), 0);
}

static uint64_t count(const uint64_t *bits)
{
	uint64_t n = 0;

	for (size_t w = 0; w < page_bits_words(NPG); w++)
		n += (uint64_t)__builtin_popcountll(bits[w]);
	return n;
}

/* A memory file of NPG pages, page p all (p + 1) bytes, mapped MAP_PRIVATE as a restore maps one. */
static uint8_t *map_memory(int *fdp)
{
	uint8_t page[PG];
	struct err e = { { 0 } };
	void *mem;
	int fd = memfd_create("kiln-test-memory", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)NPG * PG), 0);
	for (int p = 0; p < NPG; p++) {
		memset(page, p + 1, PG);
		assert_int_equal(pwrite(fd, page, PG, (off_t)p * PG), PG);
	}
	assert_int_equal(snap_mem_map_raw(fd, (uint64_t)NPG * PG, NULL, &mem, &e), 0);
	*fdp = fd;
	return mem;
}

static void test_mark(void **state)
{
	const uint64_t ent[] = { 0,
				 SNAP_PAGEMAP_PRESENT | 0x1234,
				 SNAP_PAGEMAP_SWAPPED,
				 0x7fffffffffffffull,
				 1ull << 61,
				 SNAP_PAGEMAP_PRESENT };
	uint64_t bits[2] = { 0 };

	(void)state;
	/* Entries 1, 2 and 5 at pages 60 + i: across a word. A frame number or the file bit alone is not a touch. */
	snap_pagemap_mark(ent, 6, 60, bits);
	assert_int_equal(bits[0], 1ull << 61 | 1ull << 62);
	assert_int_equal(bits[1], 1ull << 1);
}

static void test_open_hides_frames(void **state)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct before[2], after[2];
	uint64_t ent;
	uint8_t *page = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd;

	(void)state;
	assert_true(page != MAP_FAILED);
	page[0] = 1;
	assert_int_equal(syscall(SYS_capget, &h, before), 0);
	fd = snap_pagemap_open();
	assert_true(fd >= 0);
	assert_int_equal(syscall(SYS_capget, &h, after), 0);
	assert_memory_equal(before, after, sizeof(before));
	assert_int_equal(pread(fd, &ent, 8, (off_t)((uintptr_t)page / PG * 8)), 8);
	/* Present, and bits 0-54 (the frame number) zero, even when this test runs as root. */
	assert_true(ent & SNAP_PAGEMAP_PRESENT);
	assert_int_equal(ent & ((1ull << 55) - 1), 0);
	close(fd);
	munmap(page, PG);
}

static void test_touched_anonymous(void **state)
{
	uint64_t bits[NPG / 64];
	uint8_t *mem = mmap(NULL, (size_t)NPG * PG, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = snap_pagemap_open();

	(void)state;
	assert_true(mem != MAP_FAILED && fd >= 0);
	/* 4 KiB pages only: a huge page would make 512 present at once. */
	madvise(mem, (size_t)NPG * PG, MADV_NOHUGEPAGE);
	touched(fd, mem, bits);
	assert_int_equal(count(bits), 0);
	mem[0] = 1;
	mem[3 * PG + 17] = 1;
	mem[(NPG - 1) * PG + PG - 1] = 1;
	touched(fd, mem, bits);
	assert_int_equal(count(bits), 3);
	assert_true(bit(bits, 0) && bit(bits, 3) && bit(bits, NPG - 1));
	/* Asking did not touch anything. */
	touched(fd, mem, bits);
	assert_int_equal(count(bits), 3);
	close(fd);
	munmap(mem, (size_t)NPG * PG);
}

static void test_touched_file_mapping(void **state)
{
	uint64_t bits[NPG / 64];
	volatile uint8_t v;
	int mfd, fd = snap_pagemap_open();
	uint8_t *mem = map_memory(&mfd);

	(void)state;
	assert_true(fd >= 0);
	touched(fd, mem, bits);
	assert_int_equal(count(bits), 0);
	/* A read at page 5 (fault-around may map its cached neighbours in its 64 KiB, pages 0-15) and a write at 200. */
	v = mem[5 * PG];
	assert_int_equal(v, 6);
	mem[200 * PG] = 0xaa;
	touched(fd, mem, bits);
	assert_true(bit(bits, 5) && bit(bits, 200));
	for (uint64_t p = 0; p < NPG; p++)
		if (bit(bits, p))
			assert_true(p < 16 || p == 200);
	close(fd);
	close(mfd);
	munmap(mem, (size_t)NPG * PG);
}

/* A file of NPG pages on a filesystem with a page cache of its own (not tmpfs), or -1 when there is none. */
static int disk_file(void)
{
	static const char *dirs[] = { "/var/tmp", ".", "/tmp" };
	uint8_t page[PG];
	struct statfs sf;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		int fd;

		if (statfs(dirs[i], &sf) < 0 || sf.f_type == TMPFS_MAGIC)
			continue;
		fd = open(dirs[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd < 0)
			continue;
		for (int p = 0; p < NPG; p++) {
			memset(page, p + 1, PG);
			assert_int_equal(pwrite(fd, page, PG, (off_t)p * PG), PG);
		}
		assert_int_equal(fsync(fd), 0);
		return fd;
	}
	return -1;
}

/* Whether page p of the file mapped at mem is in the page cache and read (mincore on a file we own). */
static int cached(uint8_t *mem, uint64_t p)
{
	unsigned char v = 0;

	assert_int_equal(mincore(mem + p * PG, PG, &v), 0);
	return v & 1;
}

static void test_prefetch(void **state)
{
	struct snap_workingset_range r[] = { { 2, 2 }, { 40, 5 }, { 100, NPG - 100 } };
	struct snap_workingset ws = {
		.mem_size = (uint64_t)NPG * PG, .n = 3, .r = r, .pages = 2 + 5 + NPG - 100
	};
	struct err e = { { 0 } };
	uint64_t bits[NPG / 64];
	int fd = snap_pagemap_open(), mfd = disk_file(), all = 0;
	void *mem;

	(void)state;
	assert_true(fd >= 0);
	if (mfd < 0) {
		print_message(
			"no disk filesystem for a page cache test: only the calls are checked\n");
		mem = map_memory(&mfd);
	} else {
		/* Cold: nothing of the file cached. */
		assert_int_equal(posix_fadvise(mfd, 0, 0, POSIX_FADV_DONTNEED), 0);
		assert_int_equal(snap_mem_map_raw(mfd, (uint64_t)NPG * PG, NULL, &mem, &e), 0);
		assert_false(cached(mem, 41));
	}
	assert_int_equal(snap_prefetch(mem, &ws, &e), 0);
	/* No page-table entry made: the next sample still says what the guest touched. */
	touched(fd, mem, bits);
	assert_int_equal(count(bits), 0);
	/* Every listed page is read in the background (the reads are not waited for). */
	for (int tries = 0; tries < 500 && !all && mfd >= 0; tries++) {
		all = 1;
		for (size_t i = 0; i < 3 && all; i++)
			for (uint64_t p = r[i].first; p < r[i].first + r[i].count && all; p++)
				all = cached(mem, p);
		if (!all)
			usleep(10000);
	}
	assert_true(all);
	for (int p = 0; p < NPG; p++)
		assert_int_equal(((uint8_t *)mem)[p * PG + 123], (uint8_t)(p + 1));
	/* An empty set does nothing. */
	ws.n = 0;
	assert_int_equal(snap_prefetch(mem, &ws, &e), 0);
	/* A range the mapping does not cover: the failure, with where. */
	ws.n = 3;
	assert_int_equal(munmap((uint8_t *)mem + 100 * PG, (size_t)(NPG - 100) * PG), 0);
	assert_int_equal(snap_prefetch(mem, &ws, &e), -ENOMEM);
	assert_non_null(strstr(e.msg, "readahead of RAM at 0x64000"));
	munmap(mem, 100 * PG);
	close(mfd);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mark),
		cmocka_unit_test(test_open_hides_frames),
		cmocka_unit_test(test_touched_anonymous),
		cmocka_unit_test(test_touched_file_mapping),
		cmocka_unit_test(test_prefetch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
