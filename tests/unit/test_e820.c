/*
 * e820: the memory map the kernel trusts for where RAM is. A wrong entry
 * means the kernel allocates over the MP table or into the MMIO hole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "vmm/boot/e820.h"
#include "vmm/boot/layout.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

/* Only the layout matters: e820_build never touches guest memory. */
static struct guest_mem layout(uint64_t size)
{
	struct guest_mem gm = { 0 };

	guest_mem_layout(&gm, size);
	return gm;
}

static void expect(const struct e820_entry *e, uint64_t addr, uint64_t size, uint32_t type)
{
	assert_int_equal(e->addr, addr);
	assert_int_equal(e->size, size);
	assert_int_equal(e->type, type);
}

/* 128 MiB: base memory, the reserved EBDA..1 MiB, then RAM to the end. */
static void test_128m(void **state)
{
	struct guest_mem gm = layout(128 * MIB);
	struct e820_entry map[E820_MAX];

	(void)state;
	assert_int_equal(e820_build(&gm, map, E820_MAX), 3);
	expect(&map[0], 0, LAYOUT_EBDA_START, E820_RAM);
	expect(&map[1], LAYOUT_EBDA_START, MIB - LAYOUT_EBDA_START, E820_RESERVED);
	expect(&map[2], MIB, 127 * MIB, E820_RAM);
}

/* 5 GiB: low RAM stops at the MMIO hole, the rest is RAM at 4 GiB. */
static void test_above_4g(void **state)
{
	struct guest_mem gm = layout(5 * GIB);
	struct e820_entry map[E820_MAX];

	(void)state;
	assert_int_equal(e820_build(&gm, map, E820_MAX), 4);
	expect(&map[2], MIB, GUEST_MEM_MMIO_HOLE_START - MIB, E820_RAM);
	expect(&map[3], GUEST_MEM_HIGH_START, 5 * GIB - GUEST_MEM_MMIO_HOLE_START, E820_RAM);
	/* Nothing claims the hole. */
	for (int i = 0; i < 4; i++)
		assert_true(map[i].addr + map[i].size <= GUEST_MEM_MMIO_HOLE_START ||
			    map[i].addr >= GUEST_MEM_HIGH_START);
}

/* Exactly at the hole: no high entry. */
static void test_exactly_hole(void **state)
{
	struct guest_mem gm = layout(GUEST_MEM_MMIO_HOLE_START);
	struct e820_entry map[E820_MAX];

	(void)state;
	assert_int_equal(e820_build(&gm, map, E820_MAX), 3);
	expect(&map[2], MIB, GUEST_MEM_MMIO_HOLE_START - MIB, E820_RAM);
}

/* Less than 1 MiB above the boot area is refused; exactly 2 MiB is the minimum. */
static void test_too_small(void **state)
{
	struct guest_mem gm = layout(2 * MIB - 4096);
	struct e820_entry map[E820_MAX];

	(void)state;
	assert_int_equal(e820_build(&gm, map, E820_MAX), -EINVAL);
	gm = layout(0);
	assert_int_equal(e820_build(&gm, map, E820_MAX), -EINVAL);
	gm = layout(2 * MIB);
	assert_int_equal(e820_build(&gm, map, E820_MAX), 3);
	expect(&map[2], MIB, MIB, E820_RAM);
}

/* A short output array gives -ENOSPC, never a write past it (the arrays are
 * heap blocks of exactly `max` entries, so ASan would catch one). */
static void test_max_too_small(void **state)
{
	struct guest_mem low = layout(128 * MIB), high = layout(5 * GIB);
	struct e820_entry *map = malloc(3 * sizeof(*map));

	(void)state;
	assert_non_null(map);
	assert_int_equal(e820_build(&low, map, 2), -ENOSPC);
	assert_int_equal(e820_build(&low, map, 0), -ENOSPC);
	assert_int_equal(e820_build(&low, map, 3), 3);
	assert_int_equal(e820_build(&high, map, 3), -ENOSPC);
	free(map);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_128m),          cmocka_unit_test(test_above_4g),
		cmocka_unit_test(test_exactly_hole),  cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_max_too_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
