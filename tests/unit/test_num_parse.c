/*
 * lib/base/num_parse.c, the one number parser: digits of the base and
 * nothing else. What strtoull would take and the old copies did in five
 * places (" 5", "+5", "-1" wrapped to 2^64-1, "0x10") is -EINVAL; a number
 * too large for 64 bits or outside min..max is -ERANGE; *out is left
 * alone on every error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "lib/base/num_parse.h"

static void test_not_a_number(void **state)
{
	static const char *const bad[] = { "",    "-1",  "+1",  "+5",   " 1",  " 5",
					   "1 ",  "\t1", "1\n", "0x10", "1.0", "1e3",
					   "abc", "1k",  "--1", "٣" /* Arabic-Indic 3 */ };
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(num_parse_u64(bad[i], 10, 0, UINT64_MAX, &v), -EINVAL);
		assert_int_equal(v, 42);
	}
	assert_int_equal(num_parse_u64(NULL, 10, 0, 10, &v), -EINVAL);
	assert_int_equal(num_parse_u64("8", 8, 0, 100, &v), -EINVAL);  /* not an octal digit */
	assert_int_equal(num_parse_u64("1", 16, 0, 100, &v), -EINVAL); /* bases 10 and 8 only */
	/* An overflow followed by junk is not a number, not "too large". */
	assert_int_equal(num_parse_u64("99999999999999999999x", 10, 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(v, 42);
}

static void test_range(void **state)
{
	uint64_t v = 42;

	(void)state;
	assert_int_equal(num_parse_u64("18446744073709551615", 10, 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	v = 42;
	assert_int_equal(num_parse_u64("18446744073709551616", 10, 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(num_parse_u64("99999999999999999999999999", 10, 0, UINT64_MAX, &v),
			 -ERANGE);
	assert_int_equal(num_parse_u64("2000000000000000000000", 8, 0, UINT64_MAX, &v),
			 -ERANGE); /* 2^64 */
	assert_int_equal(num_parse_u64("11", 10, 0, 10, &v), -ERANGE);
	assert_int_equal(num_parse_u64("0", 10, 1, 10, &v), -ERANGE);
	assert_int_equal(num_parse_u64("67", 10, 68, 65535, &v), -ERANGE); /* kiln.mtu */
	assert_int_equal(num_parse_u64("65536", 10, 68, 65535, &v), -ERANGE);
	assert_int_equal(v, 42);
	assert_int_equal(num_parse_u64("68", 10, 68, 65535, &v), 0);
	assert_int_equal(v, 68);
	assert_int_equal(num_parse_u64("65535", 10, 68, 65535, &v), 0);
	assert_int_equal(v, 65535);
}

static void test_values(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(num_parse_u64("0", 10, 0, 0, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(num_parse_u64("007", 10, 0, 10, &v), 0); /* leading zeros allowed */
	assert_int_equal(v, 7);
	assert_int_equal(num_parse_u64("0755", 8, 0, 07777, &v), 0);
	assert_int_equal(v, 0755);
	assert_int_equal(num_parse_u64("1777777777777777777777", 8, 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
}

static void test_counted(void **state)
{
	uint64_t v = 42;

	(void)state;
	/* A segment of a longer string: "tcp:8080-9090" */
	assert_int_equal(num_parse_u64_n("8080-9090", 4, 10, 1, 65535, &v), 0);
	assert_int_equal(v, 8080);
	assert_int_equal(num_parse_u64_n("8080-9090", 5, 10, 1, 65535, &v), -EINVAL);
	assert_int_equal(num_parse_u64_n("8080", 0, 10, 0, 65535, &v), -EINVAL);
	assert_int_equal(num_parse_u64_n("0", 1, 10, 1, 65535, &v), -ERANGE);
	assert_int_equal(num_parse_u64_n("1\0002", 3, 10, 0, 999, &v),
			 -EINVAL); /* a NUL is not a digit */
	assert_int_equal(v, 8080);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_a_number),
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
