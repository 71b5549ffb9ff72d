/*
 * lib/base/mem_grow: a growable buffer's capacity doubles from its first
 * size until it holds what is asked, is capped at the limit, and a refused
 * step leaves the buffer and its size as they were.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lib/base/mem_grow.h"

static void test_doubling(void **state)
{
	size_t cap = 0;
	char *b = NULL, *nb;

	(void)state;
	b = mem_grow(b, &cap, 10, 256, 4096);
	assert_non_null(b);
	assert_int_equal(cap, 256);
	memset(b, 'x', cap);
	nb = mem_grow(b, &cap, 257, 256, 4096);
	assert_non_null(nb);
	b = nb;
	assert_int_equal(cap, 512);
	assert_int_equal(b[255], 'x'); /* the bytes stay */
	/* several doublings at once */
	b = mem_grow(b, &cap, 3000, 256, 1u << 20);
	assert_non_null(b);
	assert_int_equal(cap, 4096);
	free(b);
}

/* Capped at max: a need at the cap is met exactly, a need above it is
 * refused without touching the buffer. */
static void test_cap(void **state)
{
	size_t cap = 0;
	char *b = mem_grow(NULL, &cap, 100, 256, 300), *nb;

	(void)state;
	assert_non_null(b);
	assert_int_equal(cap, 256);
	nb = mem_grow(b, &cap, 300, 256, 300);
	assert_non_null(nb);
	b = nb;
	assert_int_equal(cap, 300);
	assert_null(mem_grow(b, &cap, 301, 256, 300));
	assert_int_equal(cap, 300);
	assert_null(mem_grow(b, &cap, SIZE_MAX, 256, SIZE_MAX - 1));
	assert_int_equal(cap, 300);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doubling),
		cmocka_unit_test(test_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
