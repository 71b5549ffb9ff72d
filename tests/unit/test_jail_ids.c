/*
 * api/kilnd/supervision/jail_ids.c: a sandbox's jail uid is the next id of
 * the --jail-ids range, round it from the last one given, that no live
 * sandbox holds; never 0, never past the
 * range, never 2^32 - 1 (the "no id" of setresuid), and ids outside the
 * range or given twice do not confuse it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "api/kilnd/supervision/jail_ids.h"

static void test_lowest_free(void **state)
{
	uint32_t used[] = { 1002, 1000, 5, 1000, 99999 };
	uint32_t more[] = { 1002, 1000, 1001, 1003 };

	(void)state;
	assert_int_equal(jail_id_pick(1000, 10, NULL, 0, 0), 1000);
	assert_int_equal(jail_id_pick(1000, 10, used, 5, 0), 1001);
	assert_int_equal(jail_id_pick(1000, 10, more, 4, 0), 1004);
}

static void test_full_range(void **state)
{
	uint32_t used[] = { 12, 10, 11 };

	(void)state;
	assert_int_equal(jail_id_pick(10, 3, used, 3, 0), 0);
	assert_int_equal(jail_id_pick(10, 4, used, 3, 0), 13);
}

static void test_bad_ranges(void **state)
{
	(void)state;
	assert_int_equal(jail_id_pick(0, 10, NULL, 0, 0), 0); /* root is never a jail */
	assert_int_equal(jail_id_pick(10, 0, NULL, 0, 0), 0); /* empty */
	assert_int_equal(jail_id_pick(UINT32_MAX - 1, 2, NULL, 0, 0),
			 0); /* would reach (uid_t)-1 */
	assert_int_equal(jail_id_pick(UINT32_MAX - 1, 1, NULL, 0, 0), UINT32_MAX - 1);
}

/* A deleted sandbox's id comes back only after every other id of the
 * range was given once: files its VMM left owned by that uid meet a new
 * sandbox as late as can be. */
static void test_round_the_ring(void **state)
{
	uint32_t none[1], held[] = { 1001, 1003 }, all_but_1000[] = { 1001, 1002, 1003 };

	(void)state;
	/* 1000 was given and its sandbox deleted: not 1000 again, 1001. */
	assert_int_equal(jail_id_pick(1000, 4, none, 0, 1000), 1001);
	assert_int_equal(jail_id_pick(1000, 4, none, 0, 1002), 1003);
	/* After the last id of the range: round to the first. */
	assert_int_equal(jail_id_pick(1000, 4, none, 0, 1003), 1000);
	/* Held ids are skipped, round the end too. */
	assert_int_equal(jail_id_pick(1000, 4, held, 2, 1000), 1002);
	assert_int_equal(jail_id_pick(1000, 4, held, 2, 1002), 1000);
	/* Only the last one given is free: it is given again, rather than none. */
	assert_int_equal(jail_id_pick(1000, 4, all_but_1000, 3, 1000), 1000);
	/* A "last" outside the range (another --jail-ids before): from the first. */
	assert_int_equal(jail_id_pick(1000, 4, none, 0, 77), 1000);
	assert_int_equal(jail_id_pick(1000, 4, none, 0, 5000), 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lowest_free),
		cmocka_unit_test(test_full_range),
		cmocka_unit_test(test_bad_ranges),
		cmocka_unit_test(test_round_the_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
