/*
 * api/image-import/import_attrs.c: the importer's attributes by inode
 * number. Every one put is found again after the table grows, an inode
 * number taken again gets the new attributes (a replaced entry's must
 * never reach what replaced it), inode 0 is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <cmocka.h>

#include "api/image-import/import_attrs.h"

static void test_put_get_grow(void **state)
{
	struct import_attrs m = { 0 };
	struct import_attrs_slot s = { 0 };
	const struct import_attrs_slot *g;

	(void)state;
	assert_null(import_attrs_get(&m, 5));
	/* inode numbers in runs and strides, as a file system hands them out */
	for (uint64_t i = 1; i <= 100000; i++) {
		s.ino = i % 2 ? i : i << 20;
		s.uid = (uint32_t)i;
		s.mode = 0100644;
		assert_int_equal(import_attrs_put(&m, &s), 0);
	}
	assert_int_equal(m.n, 100000);
	assert_true(m.cap >= 2 * m.n);
	for (uint64_t i = 1; i <= 100000; i++) {
		g = import_attrs_get(&m, i % 2 ? i : i << 20);
		assert_non_null(g);
		assert_int_equal(g->uid, i);
	}
	assert_null(import_attrs_get(&m, 2));
	assert_null(import_attrs_get(&m, 0));
	import_attrs_free(&m);
	assert_null(import_attrs_get(&m, 1));
}

static void test_reused_inode(void **state)
{
	struct import_attrs m = { 0 };
	struct import_attrs_slot dir = { .ino = 42, .uid = 7, .mode = 040500, .mtime = 5 },
				 file = { .ino = 42,
					  .uid = 1000,
					  .mode = 0100644,
					  .mtime = IMPORT_NO_MTIME };
	const struct import_attrs_slot *g;

	(void)state;
	assert_int_equal(import_attrs_put(&m, &dir), 0);
	assert_int_equal(import_attrs_put(&m, &file), 0);
	assert_int_equal(m.n, 1);
	g = import_attrs_get(&m, 42);
	assert_int_equal(g->mode, 0100644);
	assert_int_equal(g->uid, 1000);
	assert_true(g->mtime == IMPORT_NO_MTIME);
	file.ino = 0;
	assert_int_equal(import_attrs_put(&m, &file), -EINVAL);
	import_attrs_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_grow),
		cmocka_unit_test(test_reused_inode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
