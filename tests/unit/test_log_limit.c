/*
 * log_limit: a flood of one reason is one line a second, the next line
 * carrying the count held back; reasons are independent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api/kilnd/core/log_limit.h"

static void test_flood_is_one_line_a_second(void **state)
{
	struct log_limit l = { 0 };
	unsigned long more = 99;
	int written = 0;

	(void)state;
	/* 10000 refusals over 2.5 s: lines at 0, 1000 and 2000 ms. */
	for (int64_t t = 0; t < 2500; t++) {
		for (int i = 0; i < 4; i++) {
			if (log_limit_pass(&l, 100000 + t, 1000, &more)) {
				written++;
				assert_int_equal(more, written == 1 ? 0 : 3999);
			}
		}
	}
	assert_int_equal(written, 3);
	/* Quiet for a while: the next one is written with what was held. */
	assert_true(log_limit_pass(&l, 200000, 1000, &more));
	assert_int_equal(more, 1999);
	assert_true(log_limit_pass(&l, 201000, 1000, &more));
	assert_int_equal(more, 0);
}

static void test_first_line_and_clock_start(void **state)
{
	struct log_limit l = { 0 };
	unsigned long more;

	(void)state;
	/* A monotonic clock may start near 0: the first line still passes. */
	assert_true(log_limit_pass(&l, 0, 1000, &more));
	assert_int_equal(more, 0);
	assert_false(log_limit_pass(&l, 999, 1000, &more));
	assert_int_equal(more, 0);
	assert_true(log_limit_pass(&l, 1000, 1000, &more));
	assert_int_equal(more, 1);
}

static void test_reasons_independent(void **state)
{
	struct log_limit forbidden = { 0 }, too_many = { 0 };
	unsigned long more;

	(void)state;
	assert_true(log_limit_pass(&forbidden, 5000, 1000, &more));
	assert_false(log_limit_pass(&forbidden, 5001, 1000, &more));
	assert_true(log_limit_pass(&too_many, 5001, 1000, &more));
	assert_int_equal(more, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_is_one_line_a_second),
		cmocka_unit_test(test_first_line_and_clock_start),
		cmocka_unit_test(test_reasons_independent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
