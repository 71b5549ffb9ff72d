/*
 * io_bus: every guest port or MMIO access goes through here with an
 * address and size the guest chose. A device must only ever see accesses
 * that lie wholly inside its own range, with offsets relative to its base.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/core/io_bus.h"

struct dev {
	int calls;
	uint64_t off;
	uint32_t size;
	int is_write;
	uint8_t last[8];
};

static void dev_io(void *opaque, uint64_t off, uint8_t *data, uint32_t size, int is_write)
{
	struct dev *d = opaque;

	d->calls++;
	d->off = off;
	d->size = size;
	d->is_write = is_write;
	if (is_write)
		memcpy(d->last, data, size);
	else
		memset(data, 0x11 * (int)(off + 1), size);
}

static int setup(void **state)
{
	struct io_bus *bus = calloc(1, sizeof(*bus));

	assert_non_null(bus);
	*state = bus;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

/* Accesses reach the right device with offsets relative to its base. */
static void test_dispatch(void **state)
{
	struct io_bus *bus = *state;
	struct dev a = { 0 }, b = { 0 };
	uint8_t v[4] = { 1, 2, 3, 4 };

	assert_int_equal(io_bus_add(bus, 0x3f8, 8, dev_io, &a), 0);
	assert_int_equal(io_bus_add(bus, 0xd0000000, 0x200, dev_io, &b), 0);
	assert_int_equal(io_bus_access(bus, 0x3fc, v, 4, 1), 0);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.off, 4);
	assert_int_equal(a.size, 4);
	assert_int_equal(a.is_write, 1);
	assert_memory_equal(a.last, v, 4);
	assert_int_equal(io_bus_access(bus, 0xd00001fc, v, 4, 0), 0);
	assert_int_equal(b.calls, 1);
	assert_int_equal(b.off, 0x1fc);
	assert_int_equal(a.calls, 1);
}

/* Any overlap with an existing range is refused, touching ends are not. */
static void test_overlap(void **state)
{
	struct io_bus *bus = *state;
	struct dev d = { 0 };

	assert_int_equal(io_bus_add(bus, 0x3f8, 8, dev_io, &d), 0);
	assert_int_equal(io_bus_add(bus, 0x3f8, 8, dev_io, &d), -EEXIST);     /* same */
	assert_int_equal(io_bus_add(bus, 0x3ff, 1, dev_io, &d), -EEXIST);     /* last byte */
	assert_int_equal(io_bus_add(bus, 0x3f0, 9, dev_io, &d), -EEXIST);     /* first byte */
	assert_int_equal(io_bus_add(bus, 0x3fa, 2, dev_io, &d), -EEXIST);     /* inside */
	assert_int_equal(io_bus_add(bus, 0x300, 0x200, dev_io, &d), -EEXIST); /* around */
	assert_int_equal(bus->n, 1);
	assert_int_equal(io_bus_add(bus, 0x3f0, 8, dev_io, &d), 0); /* ends at 0x3f8 */
	assert_int_equal(io_bus_add(bus, 0x400, 1, dev_io, &d), 0); /* starts at the end */
	assert_int_equal(bus->n, 3);
}

/* The table is fixed: the 33rd device gets -ENOSPC, not a write past it. */
static void test_full(void **state)
{
	struct io_bus *bus = *state;
	struct dev d = { 0 };

	for (int i = 0; i < IO_BUS_MAX; i++)
		assert_int_equal(io_bus_add(bus, 0x1000 + (uint64_t)i * 16, 16, dev_io, &d), 0);
	assert_int_equal(io_bus_add(bus, 0x9000, 16, dev_io, &d), -ENOSPC);
	assert_int_equal(bus->n, IO_BUS_MAX);
	/* Overlap is still reported as such on a full bus. */
	assert_int_equal(io_bus_add(bus, 0x1000, 1, dev_io, &d), -EEXIST);
}

/* Empty ranges, ranges wrapping 2^64 and missing handlers are invalid. */
static void test_invalid(void **state)
{
	struct io_bus *bus = *state;
	struct dev d = { 0 };

	assert_int_equal(io_bus_add(bus, 0x100, 0, dev_io, &d), -EINVAL);
	assert_int_equal(io_bus_add(bus, UINT64_MAX, 2, dev_io, &d), -EINVAL);
	assert_int_equal(io_bus_add(bus, 0x100, UINT64_MAX, dev_io, &d), -EINVAL);
	assert_int_equal(io_bus_add(bus, 0x100, 1, NULL, &d), -EINVAL);
	assert_int_equal(bus->n, 0);
	/* The last byte below 2^64 is a valid one-byte range. */
	assert_int_equal(io_bus_add(bus, UINT64_MAX - 1, 1, dev_io, &d), 0);
}

/* Accesses that begin inside a range but run past its end (or begin just
 * before it) reach no device; reads float high like an open bus. */
static void test_straddle(void **state)
{
	struct io_bus *bus = *state;
	struct dev d = { 0 };
	uint8_t v[8];

	assert_int_equal(io_bus_add(bus, 0x3f8, 8, dev_io, &d), 0);
	memset(v, 0, sizeof(v));
	assert_int_equal(io_bus_access(bus, 0x3fe, v, 4, 0), -ENOENT);
	assert_memory_equal(v, "\xff\xff\xff\xff\0\0\0\0", 8);
	assert_int_equal(io_bus_access(bus, 0x3f7, v, 2, 0), -ENOENT);
	assert_int_equal(io_bus_access(bus, 0x3ff, v, 2, 1), -ENOENT);
	assert_int_equal(io_bus_access(bus, 0x3f8, v, 8, 0), 0); /* the whole range is fine */
	assert_int_equal(d.calls, 1);
	assert_int_equal(io_bus_access(bus, 0x3ff, v, 1, 0), 0); /* and its last byte */
	assert_int_equal(d.off, 7);
	assert_int_equal(d.calls, 2);
}

/* Nothing mapped: reads are all ones, writes are dropped. */
static void test_unmapped(void **state)
{
	struct io_bus *bus = *state;
	uint64_t v = 0;

	assert_int_equal(io_bus_access(bus, 0x80, (uint8_t *)&v, 8, 0), -ENOENT);
	assert_int_equal(v, UINT64_MAX);
	v = 0x1234;
	assert_int_equal(io_bus_access(bus, 0x80, (uint8_t *)&v, 8, 1), -ENOENT);
	assert_int_equal(v, 0x1234);
	assert_int_equal(io_bus_access(bus, UINT64_MAX, (uint8_t *)&v, 4, 0), -ENOENT);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_dispatch), T(test_overlap),  T(test_full),
		T(test_invalid),  T(test_straddle), T(test_unmapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
