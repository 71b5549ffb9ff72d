/*
 * guest_mem: guest_mem_ptr() is the one gate between guest-physical addresses and
 * host memory, so every edge of it is checked here: the ends of RAM, ranges
 * that wrap 2^64, ranges across the MMIO hole and the high region at 4 GiB.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/guest/guest_mem.h"

#define GIB (1ULL << 30)
#define SMALL (1ULL << 20)

/*
 * For layouts of several GiB nothing is allocated: the host pointer is a
 * made-up address that is only compared, never dereferenced.
 */
#define FAKE_HOST ((uint8_t *)(uintptr_t)0x100000000000ULL)

static int small_setup(void **state)
{
	struct guest_mem *gm = calloc(1, sizeof(*gm));

	assert_non_null(gm);
	gm->host = calloc(1, SMALL);
	assert_non_null(gm->host);
	guest_mem_layout(gm, SMALL);
	*state = gm;
	return 0;
}

static int small_teardown(void **state)
{
	struct guest_mem *gm = *state;

	free(gm->host);
	free(gm);
	return 0;
}

/* Offset of p from the host mapping, or -1 for NULL. */
static int64_t off(const struct guest_mem *gm, const void *p)
{
	return p ? (int64_t)((uintptr_t)p - (uintptr_t)gm->host) : -1;
}

static struct guest_mem fake(uint64_t size)
{
	struct guest_mem gm = { .host = FAKE_HOST };

	guest_mem_layout(&gm, size);
	return gm;
}

/* Below the hole, all RAM is low; above it the rest moves to 4 GiB. */
static void test_layout_split(void **state)
{
	struct guest_mem gm;

	(void)state;
	gm = fake(128ULL << 20);
	assert_int_equal(gm.low_size, 128ULL << 20);
	assert_int_equal(gm.high_size, 0);
	gm = fake(GUEST_MEM_MMIO_HOLE_START);
	assert_int_equal(gm.low_size, GUEST_MEM_MMIO_HOLE_START);
	assert_int_equal(gm.high_size, 0);
	gm = fake(GUEST_MEM_MMIO_HOLE_START + 4096);
	assert_int_equal(gm.low_size, GUEST_MEM_MMIO_HOLE_START);
	assert_int_equal(gm.high_size, 4096);
	assert_int_equal(gm.size, GUEST_MEM_MMIO_HOLE_START + 4096);
}

/* Plain in-bounds ranges map to host + gpa. */
static void test_inside(void **state)
{
	struct guest_mem *gm = *state;

	assert_int_equal(off(gm, guest_mem_ptr(gm, 0, 1)), 0);
	assert_int_equal(off(gm, guest_mem_ptr(gm, 0x1000, 16)), 0x1000);
	assert_int_equal(off(gm, guest_mem_ptr(gm, 0, SMALL)), 0);
}

/* A range whose last byte is the last byte of RAM. */
static void test_exactly_at_end(void **state)
{
	struct guest_mem *gm = *state;

	assert_int_equal(off(gm, guest_mem_ptr(gm, SMALL - 16, 16)), SMALL - 16);
	assert_int_equal(off(gm, guest_mem_ptr(gm, SMALL - 1, 1)), SMALL - 1);
}

/* One byte further is refused, however it is asked for. */
static void test_one_past_end(void **state)
{
	struct guest_mem *gm = *state;

	assert_null(guest_mem_ptr(gm, SMALL - 15, 16));
	assert_null(guest_mem_ptr(gm, SMALL, 1));
	assert_null(guest_mem_ptr(gm, 0, SMALL + 1));
	assert_null(guest_mem_ptr(gm, SMALL + 4096, 1));
}

/* gpa + len wrapping 2^64 must not look like a small in-bounds range. */
static void test_wraparound(void **state)
{
	struct guest_mem *gm = *state;

	assert_null(guest_mem_ptr(gm, UINT64_MAX, 1));
	assert_null(guest_mem_ptr(gm, UINT64_MAX, 2));  /* end wraps to 1 */
	assert_null(guest_mem_ptr(gm, 16, UINT64_MAX)); /* end wraps to 15 */
	assert_null(guest_mem_ptr(gm, 1, UINT64_MAX));  /* end wraps to 0 */
	assert_null(guest_mem_ptr(gm, UINT64_MAX - 15, 32));
	assert_null(guest_mem_ptr(gm, UINT64_MAX, 0));
}

/* len 0 is checked as one byte: at the end of RAM it is already outside. */
static void test_len_zero(void **state)
{
	struct guest_mem *gm = *state;

	assert_int_equal(off(gm, guest_mem_ptr(gm, 0, 0)), 0);
	assert_int_equal(off(gm, guest_mem_ptr(gm, SMALL - 1, 0)), SMALL - 1);
	assert_null(guest_mem_ptr(gm, SMALL, 0));
}

/* A guest_mem that was never mapped gives nothing. */
static void test_unmapped(void **state)
{
	struct guest_mem gm = { 0 };

	(void)state;
	guest_mem_layout(&gm, SMALL);
	assert_null(guest_mem_ptr(&gm, 0, 1));
	assert_int_equal(guest_mem_write(&gm, 0, "x", 1), -EFAULT);
}

/* Ranges that start in low RAM and run into the MMIO hole, or lie in it. */
static void test_straddles_low_end(void **state)
{
	struct guest_mem gm = fake(4 * GIB);

	(void)state;
	assert_int_equal(gm.low_size, GUEST_MEM_MMIO_HOLE_START);
	assert_int_equal(off(&gm, guest_mem_ptr(&gm, GUEST_MEM_MMIO_HOLE_START - 8, 8)),
			 GUEST_MEM_MMIO_HOLE_START - 8);
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_MMIO_HOLE_START - 8, 16));
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_MMIO_HOLE_START, 1));
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_HIGH_START - 1, 1));
	/* Low RAM through the hole into high RAM: the host bytes are not contiguous. */
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_MMIO_HOLE_START - 8,
				  GUEST_MEM_HIGH_START - GUEST_MEM_MMIO_HOLE_START + 16));
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_HIGH_START - 8, 16));
}

/* The high region: 4 GiB maps right after low RAM in the host mapping. */
static void test_high_region(void **state)
{
	const uint64_t size = 5 * GIB;
	struct guest_mem gm = fake(size);
	const uint64_t high = size - GUEST_MEM_MMIO_HOLE_START;

	(void)state;
	assert_int_equal(gm.high_size, high);
	assert_int_equal(off(&gm, guest_mem_ptr(&gm, GUEST_MEM_HIGH_START, 1)),
			 GUEST_MEM_MMIO_HOLE_START);
	assert_int_equal(off(&gm, guest_mem_ptr(&gm, GUEST_MEM_HIGH_START + 0x1234, 8)),
			 GUEST_MEM_MMIO_HOLE_START + 0x1234);
	assert_int_equal(off(&gm, guest_mem_ptr(&gm, GUEST_MEM_HIGH_START + high - 1, 1)),
			 size - 1);
	assert_int_equal(off(&gm, guest_mem_ptr(&gm, GUEST_MEM_HIGH_START, high)),
			 GUEST_MEM_MMIO_HOLE_START);
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_HIGH_START + high, 1));
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_HIGH_START + high - 8, 16));
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_HIGH_START, high + 1));
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_HIGH_START,
				  UINT64_MAX - GUEST_MEM_HIGH_START + 1)); /* wraps to 0 */
	assert_null(guest_mem_ptr(&gm, UINT64_MAX - 7, 8));
}

/* Without high RAM, addresses at 4 GiB are outside RAM. */
static void test_no_high_region(void **state)
{
	struct guest_mem gm = fake(GUEST_MEM_MMIO_HOLE_START);

	(void)state;
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_HIGH_START, 1));
	assert_null(guest_mem_ptr(&gm, GUEST_MEM_HIGH_START, 0));
}

/* guest_mem_write/guest_mem_read refuse out-of-bounds ranges without touching anything. */
static void test_write_read_bounds(void **state)
{
	struct guest_mem *gm = *state;
	uint8_t buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, back[8];

	assert_int_equal(guest_mem_write(gm, SMALL - 8, buf, 8), 0);
	assert_int_equal(guest_mem_read(gm, SMALL - 8, back, 8), 0);
	assert_memory_equal(buf, back, 8);
	assert_int_equal(guest_mem_write(gm, SMALL - 7, buf, 8), -EFAULT);
	assert_int_equal(gm->host[SMALL - 1], 8); /* no partial write */
	memset(back, 0xee, sizeof(back));
	assert_int_equal(guest_mem_read(gm, SMALL - 4, back, 8), -EFAULT);
	assert_int_equal(back[0], 0xee);
	assert_int_equal(guest_mem_write(gm, UINT64_MAX - 3, buf, 8), -EFAULT);
}

/*
 * RAM sits at a 2 MiB-aligned host address (so KVM can map it with 2 MiB
 * nested pages where the host gives transparent huge pages), all of it
 * usable, and a size that is not a whole number of pages is refused.
 */
static void test_map_is_2m_aligned(void **state)
{
	struct guest_mem gm;
	uint64_t sizes[] = { 6ULL << 20, (6ULL << 20) + 4096, 4096 };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(guest_mem_map(&gm, sizes[i], 0), 0);
		assert_int_equal((uintptr_t)gm.host % (2ULL << 20), 0);
		assert_int_equal(gm.size, sizes[i]);
		gm.host[0] = 1;
		gm.host[sizes[i] - 1] = 2;
		assert_ptr_equal(guest_mem_ptr(&gm, sizes[i] - 1, 1), gm.host + sizes[i] - 1);
		assert_null(guest_mem_ptr(&gm, sizes[i], 1));
		guest_mem_unmap(&gm);
		assert_null(gm.host);
	}
	assert_int_equal(guest_mem_map(&gm, 4097, 0), -EINVAL);
	assert_int_equal(guest_mem_map(&gm, 0, 0), -EINVAL);
}

/* Bit `page` of a marks bitmap. */
static int marked(const uint64_t *bits, uint64_t page)
{
	return (int)((bits[page / 64] >> (page % 64)) & 1);
}

/*
 * The VMM's own writes are marked page by page at RAM offsets (the high
 * region follows the low one), taken once, and nothing is marked while
 * not tracking or out of bounds.
 */
static void test_marks(void **state)
{
	struct guest_mem *gm = *state;
	uint64_t bits[SMALL / 4096 / 64];

	guest_mem_mark(gm, gm->host, 1); /* not tracking: nothing to mark */
	assert_null(gm->dirty);
	assert_int_equal(guest_mem_track(gm), 0);
	assert_int_equal(guest_mem_track(gm), 0);                    /* idempotent */
	guest_mem_mark(gm, guest_mem_ptr(gm, 4095, 2), 2);           /* straddles pages 0 and 1 */
	guest_mem_mark(gm, guest_mem_ptr(gm, 5 * 4096, 4096), 4096); /* exactly page 5 */
	guest_mem_mark(gm, guest_mem_ptr(gm, SMALL - 1, 1), 1);      /* the last page */
	guest_mem_mark(gm, guest_mem_ptr(gm, SMALL, 1), 1); /* outside RAM: NULL, not marked */
	guest_mem_mark(gm, gm->host + SMALL - 1, 2);        /* runs past the mapping: not marked */
	guest_mem_mark(gm, gm->host - 1, 1);                /* before it: not marked */
	guest_mem_mark(gm, guest_mem_ptr(gm, 9 * 4096, 0), 0); /* len 0 is a byte */
	memset(bits, 0, sizeof(bits));
	guest_mem_take_marks(gm, bits);
	for (uint64_t p = 0; p < SMALL / 4096; p++)
		assert_int_equal(marked(bits, p),
				 p == 0 || p == 1 || p == 5 || p == 9 || p == SMALL / 4096 - 1);
	/* Taken: the next take starts empty, and ORs into what it is given. */
	memset(bits, 0, sizeof(bits));
	bits[0] = 1ull << 3;
	guest_mem_take_marks(gm, bits);
	assert_int_equal(bits[0], 1ull << 3);
	guest_mem_untrack(gm);
	assert_null(gm->dirty);
}

/* In a layout with high RAM, an address at 4 GiB is marked after all of low RAM. */
static void test_marks_high_region(void **state)
{
	struct guest_mem gm = fake(GUEST_MEM_MMIO_HOLE_START + 2 * SMALL);
	uint64_t *bits;
	uint64_t low_pages = GUEST_MEM_MMIO_HOLE_START / 4096;

	(void)state;
	assert_int_equal(guest_mem_track(&gm), 0);
	bits = calloc((gm.size / 4096 + 63) / 64, sizeof(*bits));
	assert_non_null(bits);
	guest_mem_mark(&gm, guest_mem_ptr(&gm, GUEST_MEM_HIGH_START + 4096, 4097), 4097);
	guest_mem_mark(&gm, guest_mem_ptr(&gm, GUEST_MEM_MMIO_HOLE_START, 1),
		       1); /* the hole: NULL */
	guest_mem_take_marks(&gm, bits);
	assert_int_equal(marked(bits, low_pages), 0);
	assert_int_equal(marked(bits, low_pages + 1), 1);
	assert_int_equal(marked(bits, low_pages + 2), 1);
	assert_int_equal(marked(bits, low_pages + 3), 0);
	assert_int_equal(marked(bits, low_pages - 1), 0);
	free(bits);
	guest_mem_untrack(&gm);
}

#define S(fn) cmocka_unit_test_setup_teardown(fn, small_setup, small_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_split),
		S(test_inside),
		S(test_exactly_at_end),
		S(test_one_past_end),
		S(test_wraparound),
		S(test_len_zero),
		cmocka_unit_test(test_unmapped),
		cmocka_unit_test(test_straddles_low_end),
		cmocka_unit_test(test_high_region),
		cmocka_unit_test(test_no_high_region),
		cmocka_unit_test(test_map_is_2m_aligned),
		S(test_marks),
		cmocka_unit_test(test_marks_high_region),
		S(test_write_read_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
