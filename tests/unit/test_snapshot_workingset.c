/*
 * snapshot_workingset: a working set written from a bitmap must read
 * back as exactly those pages, in the fewest ranges; a workingset file
 * that is cut, damaged, foreign, or sealed but lying (ranges out of
 * order, touching, empty, past RAM, a count that overflows) must be
 * refused with its own code, and the encoder must refuse to write what
 * the parser would refuse.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "bytes.h"
#include "tmpdir.h"
#include "vmm/snapshot/page_bits.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_io.h"
#include "vmm/snapshot/snapshot_mem.h"
#include "vmm/snapshot/snapshot_workingset.h"

#define PG SNAP_PAGE
#define NPG 130
#define RAM ((uint64_t)NPG * PG) /* three bitmap words, the last with 62 bits past the end */

/* workingset offsets the tests patch (the table in snapshot_workingset.h). */
#define W_VERSION 8
#define W_PAGE 12
#define W_MEM_SIZE 16
#define W_RANGES 24
#define W_PAGES 32
#define W_RANGES_CRC 40
#define W_HEADER_CRC 44
#define W_R0 48

/* Pages 0-2, 5, 63-64 (across a word), 66, 129 (the last). */
static const uint64_t MARKED[] = { 0, 1, 2, 5, 63, 64, 66, 129 };
static const struct snap_workingset_range WANT[] = {
	{ 0, 3 }, { 5, 1 }, { 63, 2 }, { 66, 1 }, { 129, 1 }
};
#define NWANT (sizeof(WANT) / sizeof(WANT[0]))

static void sample_bits(uint64_t *bits)
{
	memset(bits, 0, 8 * page_bits_words(NPG));
	for (size_t i = 0; i < sizeof(MARKED) / sizeof(MARKED[0]); i++)
		page_bits_set(bits, MARKED[i]);
}

/* The encoded sample set. */
static uint8_t *sample(size_t *len)
{
	uint64_t bits[3];
	struct snap_workingset ws;
	struct err e = { { 0 } };
	uint8_t *b;

	sample_bits(bits);
	assert_int_equal(snap_workingset_from_bits(bits, RAM, &ws, &e), 0);
	assert_int_equal(snap_workingset_encode(&ws, &b, len, &e), 0);
	snap_workingset_free(&ws);
	return b;
}

/* Seal a patched file again: the range list's CRC (over whatever follows the header), then the header's. */
static void reseal(uint8_t *b, size_t len)
{
	put32(b + W_RANGES_CRC, (uint32_t)crc32(0, b + W_R0, (uInt)(len - W_R0)));
	put32(b + W_HEADER_CRC, (uint32_t)crc32(0, b, W_HEADER_CRC));
}

static void test_page_bits_runs(void **state)
{
	uint64_t bits[3], page = 0, n;
	size_t i = 0;

	(void)state;
	assert_int_equal(page_bits_words(0), 0);
	assert_int_equal(page_bits_words(64), 1);
	assert_int_equal(page_bits_words(65), 2);
	sample_bits(bits);
	/* Bits past the last page are not pages: a run stops at npages. */
	bits[2] |= ~0ull << 2;
	while ((n = page_bits_next_run(bits, NPG, &page))) {
		assert_true(i < NWANT);
		assert_int_equal(page, WANT[i].first);
		assert_int_equal(n, WANT[i].count);
		page += n;
		i++;
	}
	assert_int_equal(i, NWANT);
	assert_int_equal(page, NPG);
}

static void test_from_bits_round_trip(void **state)
{
	uint64_t bits[3];
	struct snap_workingset ws, back;
	struct err e = { { 0 } };
	uint8_t *b;
	size_t len;

	(void)state;
	sample_bits(bits);
	bits[2] |= ~0ull << 2; /* ignored */
	assert_int_equal(snap_workingset_from_bits(bits, RAM, &ws, &e), 0);
	assert_int_equal(ws.n, NWANT);
	assert_int_equal(ws.pages, sizeof(MARKED) / sizeof(MARKED[0]));
	assert_memory_equal(ws.r, WANT, sizeof(WANT));
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), 0);
	assert_int_equal(len, SNAP_WORKINGSET_HEADER_SIZE + NWANT * SNAP_WORKINGSET_RANGE_SIZE);
	assert_memory_equal(b, "KILNWSET", 8);
	assert_int_equal(get64(b + W_PAGES), ws.pages);
	assert_int_equal(snap_workingset_parse(b, len, RAM, &back, &e), 0);
	assert_int_equal(back.mem_size, RAM);
	assert_int_equal(back.n, NWANT);
	assert_int_equal(back.pages, ws.pages);
	assert_memory_equal(back.r, WANT, sizeof(WANT));
	snap_workingset_free(&back);
	snap_workingset_free(&ws);
	free(b);
}

static void test_empty_and_full(void **state)
{
	uint64_t bits[3] = { 0 };
	struct snap_workingset ws, back;
	struct err e = { { 0 } };
	uint8_t *b;
	size_t len;

	(void)state;
	/* Nothing touched: a valid file that prefetches nothing. */
	assert_int_equal(snap_workingset_from_bits(bits, RAM, &ws, &e), 0);
	assert_int_equal(ws.n, 0);
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), 0);
	assert_int_equal(len, SNAP_WORKINGSET_HEADER_SIZE);
	assert_int_equal(snap_workingset_parse(b, len, RAM, &back, &e), 0);
	assert_int_equal(back.n, 0);
	assert_null(back.r);
	snap_workingset_free(&ws);
	free(b);
	/* Everything: one range. */
	memset(bits, 0xff, sizeof(bits));
	assert_int_equal(snap_workingset_from_bits(bits, RAM, &ws, &e), 0);
	assert_int_equal(ws.n, 1);
	assert_int_equal(ws.r[0].first, 0);
	assert_int_equal(ws.r[0].count, NPG);
	snap_workingset_free(&ws);
	/* Every other page: the most ranges RAM allows, and accepted. */
	memset(bits, 0x55, sizeof(bits));
	assert_int_equal(snap_workingset_from_bits(bits, RAM, &ws, &e), 0);
	assert_int_equal(ws.n, snap_workingset_max_ranges(RAM));
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), 0);
	assert_int_equal(snap_workingset_parse(b, len, RAM, &back, &e), 0);
	assert_int_equal(back.n, NPG / 2);
	snap_workingset_free(&back);
	snap_workingset_free(&ws);
	free(b);
}

static void test_truncated_and_longer(void **state)
{
	struct snap_workingset ws;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = sample(&len), *big;

	(void)state;
	for (size_t n = 0; n < len; n++) {
		memset(&e, 0, sizeof(e));
		assert_int_equal(snap_workingset_parse(b, n, RAM, &ws, &e), SNAP_ERR_TRUNCATED);
		assert_non_null(strstr(e.msg, "truncated"));
		assert_null(ws.r);
	}
	big = calloc(1, len + 1);
	assert_non_null(big);
	memcpy(big, b, len);
	assert_int_equal(snap_workingset_parse(big, len + 1, RAM, &ws, &e), SNAP_ERR_CHECKSUM);
	assert_non_null(strstr(e.msg, "damaged"));
	free(big);
	free(b);
}

static void test_flipped_byte_every_offset(void **state)
{
	struct snap_workingset ws;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = sample(&len);

	(void)state;
	for (size_t i = 0; i < len; i++) {
		int r;

		b[i] ^= 0x10;
		r = snap_workingset_parse(b, len, RAM, &ws, &e);
		assert_int_equal(r, i < 8 ? SNAP_ERR_MAGIC : SNAP_ERR_CHECKSUM);
		assert_null(ws.r);
		b[i] ^= 0x10;
	}
	free(b);
}

/* The sample with the field at `off` (`width` 4 or 8 bytes) set to v and resealed: parse must give `want`, naming `what`. */
static void sealed_lie(uint64_t off, int width, uint64_t v, int want, const char *what)
{
	struct snap_workingset ws;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = sample(&len);

	if (width == 4)
		put32(b + off, (uint32_t)v);
	else
		put64(b + off, v);
	reseal(b, len);
	assert_int_equal(snap_workingset_parse(b, len, RAM, &ws, &e), want);
	assert_non_null(strstr(e.msg, what));
	assert_null(ws.r);
	free(b);
}

static void test_sealed_but_wrong(void **state)
{
	struct snap_workingset ws;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = sample(&len);

	(void)state;
	/* Another VM's RAM, before any length is looked at. */
	assert_int_equal(snap_workingset_parse(b, len, RAM + PG, &ws, &e), SNAP_ERR_MALFORMED);
	assert_non_null(strstr(e.msg, "the snapshot's RAM is"));
	/* The sample itself is fine. */
	reseal(b, len);
	assert_int_equal(snap_workingset_parse(b, len, RAM, &ws, &e), 0);
	snap_workingset_free(&ws);
	free(b);

	sealed_lie(W_VERSION, 4, 2, SNAP_ERR_FORMAT, "version 2");
	sealed_lie(W_PAGE, 4, 8192, SNAP_ERR_MALFORMED, "8192-byte pages");
	/* Range counts that would overflow a length, or cannot fit apart in RAM. */
	sealed_lie(W_RANGES, 8, ~0ull, SNAP_ERR_MALFORMED, "more than");
	sealed_lie(W_RANGES, 8, 1ull << 60, SNAP_ERR_MALFORMED, "more than");
	sealed_lie(W_RANGES, 8, NPG / 2 + 1, SNAP_ERR_MALFORMED, "more than");
	/* One range more or fewer than the file holds. */
	sealed_lie(W_RANGES, 8, NWANT + 1, SNAP_ERR_TRUNCATED, "truncated");
	sealed_lie(W_RANGES, 8, NWANT - 1, SNAP_ERR_CHECKSUM, "damaged");
	/* The ranges themselves (range 0 at 48, 1 at 64, ...; first then count). */
	sealed_lie(W_R0 + 8, 8, 0, SNAP_ERR_MALFORMED, "range 0 is empty");
	sealed_lie(W_R0 + 16, 8, 3, SNAP_ERR_MALFORMED, "range 1");     /* touches range 0's end */
	sealed_lie(W_R0 + 16, 8, 1, SNAP_ERR_MALFORMED, "range 1");     /* overlaps it */
	sealed_lie(W_R0 + 32, 8, 4, SNAP_ERR_MALFORMED, "range 2");     /* before range 1 */
	sealed_lie(W_R0 + 64 + 8, 8, 2, SNAP_ERR_MALFORMED, "range 4"); /* 129 + 2 past the end */
	sealed_lie(W_R0 + 64, 8, NPG, SNAP_ERR_MALFORMED, "range 4");   /* starts past it */
	sealed_lie(W_R0 + 64, 8, ~0ull, SNAP_ERR_MALFORMED, "range 4"); /* first + count wraps */
	sealed_lie(W_R0 + 64 + 8, 8, ~0ull, SNAP_ERR_MALFORMED, "range 4");
	/* A page total that is not the ranges'. */
	sealed_lie(W_PAGES, 8, 9, SNAP_ERR_MALFORMED, "holds 8 pages, its header counts 9");
	sealed_lie(W_PAGES, 8, 0, SNAP_ERR_MALFORMED, "header counts 0");
}

static void test_bad_ram_sizes(void **state)
{
	uint64_t bits[3] = { 0 };
	struct snap_workingset ws;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b = sample(&len);

	(void)state;
	assert_int_equal(snap_workingset_parse(b, len, 0, &ws, &e), -EINVAL);
	assert_int_equal(snap_workingset_parse(b, len, RAM + 1, &ws, &e), -EINVAL);
	assert_int_equal(snap_workingset_parse(b, len, ~0ull & ~(uint64_t)(PG - 1), &ws, &e),
			 -EINVAL);
	assert_int_equal(snap_workingset_from_bits(bits, PG + 1, &ws, &e), -EINVAL);
	assert_int_equal(snap_workingset_max_ranges(PG), 1);
	assert_int_equal(snap_workingset_max_ranges(2 * PG), 1);
	assert_int_equal(snap_workingset_max_ranges(3 * PG), 2);
	free(b);
}

static void test_encode_refuses(void **state)
{
	struct snap_workingset_range r[2] = { { 0, 3 }, { 5, 1 } };
	struct snap_workingset ws = { .mem_size = RAM, .n = 2, .r = r };
	struct err e = { { 0 } };
	uint8_t *b = (uint8_t *)&ws;
	size_t len = 7;

	(void)state;
	r[1].first = 3; /* touching */
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), -EINVAL);
	assert_null(b);
	assert_int_equal(len, 0);
	assert_non_null(strstr(e.msg, "range 1"));
	r[1].first = 5;
	r[1].count = 0; /* empty */
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), -EINVAL);
	r[1].count = NPG; /* past RAM */
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), -EINVAL);
	r[1].count = 1;
	ws.n = NPG; /* more than can lie apart */
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), -EINVAL);
	ws.n = 2;
	ws.mem_size = RAM - 1;
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), -EINVAL);
	ws.mem_size = RAM;
	ws.r = NULL;
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), -EINVAL);
	ws.r = r;
	assert_int_equal(snap_workingset_encode(&ws, &b, &len, &e), 0);
	free(b);
}

static void test_read_write_file(void **state)
{
	struct tmpdir_fx *f = *state;
	uint64_t bits[3];
	struct snap_workingset ws, back;
	struct err e = { { 0 } };
	size_t len;
	uint8_t *b;
	int fd;

	assert_int_equal(snap_workingset_read(f->dfd, RAM, &back, &e), -ENOENT);
	sample_bits(bits);
	assert_int_equal(snap_workingset_from_bits(bits, RAM, &ws, &e), 0);
	assert_int_equal(snap_workingset_write(f->dfd, &ws, &e), 0);
	assert_int_equal(faccessat(f->dfd, SNAP_WORKINGSET_FILE ".tmp", F_OK, 0), -1);
	assert_int_equal(snap_workingset_read(f->dfd, RAM, &back, &e), 0);
	assert_int_equal(back.n, NWANT);
	assert_memory_equal(back.r, WANT, sizeof(WANT));
	snap_workingset_free(&back);
	/* Read for other RAM: refused as such. */
	assert_int_equal(snap_workingset_read(f->dfd, 2 * RAM, &back, &e), SNAP_ERR_MALFORMED);
	snap_workingset_free(&ws);

	/* Larger than any working set of this RAM: refused before it is read. */
	assert_int_equal(unlinkat(f->dfd, SNAP_WORKINGSET_FILE, 0), 0);
	fd = openat(f->dfd, SNAP_WORKINGSET_FILE, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd,
				   SNAP_WORKINGSET_HEADER_SIZE +
					   (NPG / 2 + 1) * SNAP_WORKINGSET_RANGE_SIZE + 1),
			 0);
	close(fd);
	assert_int_equal(snap_workingset_read(f->dfd, RAM, &back, &e), SNAP_ERR_CHECKSUM);
	assert_non_null(strstr(e.msg, "larger than"));

	/* Never through a symlink planted in its place. */
	b = sample(&len);
	assert_int_equal(unlinkat(f->dfd, SNAP_WORKINGSET_FILE, 0), 0);
	assert_int_equal(snap_write_atomic(f->dfd, "elsewhere", b, len, &e), 0);
	assert_int_equal(symlinkat("elsewhere", f->dfd, SNAP_WORKINGSET_FILE), 0);
	assert_int_equal(snap_workingset_read(f->dfd, RAM, &back, &e), -ELOOP);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_bits_runs),
		cmocka_unit_test(test_from_bits_round_trip),
		cmocka_unit_test(test_empty_and_full),
		cmocka_unit_test(test_truncated_and_longer),
		cmocka_unit_test(test_flipped_byte_every_offset),
		cmocka_unit_test(test_sealed_but_wrong),
		cmocka_unit_test(test_bad_ram_sizes),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test_setup_teardown(test_read_write_file, tmpdir_setup,
						tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
