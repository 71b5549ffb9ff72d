/*
 * api/kilnd/sandbox/jail_ids.c: a sandbox's jail uid is the lowest id of
 * the --jail-ids range no live sandbox holds; never 0, never past the
 * range, never 2^32 - 1 (the "no id" of setresuid), and ids outside the
 * range or given twice do not confuse it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "api/kilnd/sandbox/jail_ids.h"

static void test_lowest_free(void **state)
{
	uint32_t used[] = { 1002, 1000, 5, 1000, 99999 };
	uint32_t more[] = { 1002, 1000, 1001, 1003 };

	(void)state;
	assert_int_equal(jail_id_pick(1000, 10, NULL, 0), 1000);
	assert_int_equal(jail_id_pick(1000, 10, used, 5), 1001);
	assert_int_equal(jail_id_pick(1000, 10, more, 4), 1004);
}

static void test_full_range(void **state)
{
	uint32_t used[] = { 12, 10, 11 };

	(void)state;
	assert_int_equal(jail_id_pick(10, 3, used, 3), 0);
	assert_int_equal(jail_id_pick(10, 4, used, 3), 13);
}

static void test_bad_ranges(void **state)
{
	(void)state;
	assert_int_equal(jail_id_pick(0, 10, NULL, 0), 0);             /* root is never a jail */
	assert_int_equal(jail_id_pick(10, 0, NULL, 0), 0);             /* empty */
	assert_int_equal(jail_id_pick(UINT32_MAX - 1, 2, NULL, 0), 0); /* would reach (uid_t)-1 */
	assert_int_equal(jail_id_pick(UINT32_MAX - 1, 1, NULL, 0), UINT32_MAX - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lowest_free),
		cmocka_unit_test(test_full_range),
		cmocka_unit_test(test_bad_ranges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
