/*
 * params: kiln-init reads its settings from the kernel command line. Keys
 * must match exactly (kiln.execx is not kiln.exec), a quoted value must not
 * leak parameters out of it or into it, and an oversize value is refused
 * instead of truncated.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "guest-init/sys/params.h"

/* Run param_get with out pre-filled with junk, so "" is really written. */
static int get(const char *cmdline, const char *key, char *out, size_t outlen)
{
	memset(out, '#', outlen);
	out[outlen - 1] = '\0';
	return param_get(cmdline, key, out, outlen);
}

static void test_plain_value(void **state)
{
	char v[64];

	(void)state;
	assert_int_equal(get("console=ttyS0 kiln.exec=/bin/sh quiet", "kiln.exec", v, sizeof(v)),
			 1);
	assert_string_equal(v, "/bin/sh");
	assert_int_equal(get("kiln.env=A=B", "kiln.env", v, sizeof(v)), 1); /* first '=' splits */
	assert_string_equal(v, "A=B");
}

/* Quotes hold spaces and are stripped; the parameter after them still parses. */
static void test_quoted_spaces(void **state)
{
	const char *cl = "console=ttyS0 kiln.exec=\"/bin/sh -c 'echo hi'\" kiln.debug";
	char v[64];

	(void)state;
	assert_int_equal(get(cl, "kiln.exec", v, sizeof(v)), 1);
	assert_string_equal(v, "/bin/sh -c 'echo hi'");
	assert_int_equal(get(cl, "kiln.debug", v, sizeof(v)), 1);
	assert_string_equal(v, "");
}

/* A key-looking word inside a quoted value is not a parameter. */
static void test_quoted_no_injection(void **state)
{
	char v[64];

	(void)state;
	assert_int_equal(get("kiln.exec=\"sh kiln.user=root\"", "kiln.user", v, sizeof(v)), 0);
	assert_string_equal(v, "");
}

/* Tabs and newlines separate parameters like spaces (a cmdline file ends in \n). */
static void test_other_whitespace(void **state)
{
	char v[64];

	(void)state;
	assert_int_equal(get("a=1\tkiln.exec=/x\n", "kiln.exec", v, sizeof(v)), 1);
	assert_string_equal(v, "/x");
}

/* Like the kernel's own parameters, the last occurrence wins. */
static void test_last_wins(void **state)
{
	char v[64];

	(void)state;
	assert_int_equal(get("kiln.exec=/a quiet kiln.exec=/b", "kiln.exec", v, sizeof(v)), 1);
	assert_string_equal(v, "/b");
	assert_int_equal(get("kiln.exec=/a kiln.exec", "kiln.exec", v, sizeof(v)), 1);
	assert_string_equal(v, "");
	assert_int_equal(get("kiln.exec kiln.exec=\"/c d\"", "kiln.exec", v, sizeof(v)), 1);
	assert_string_equal(v, "/c d");
}

/* A bare key is present with an empty value; so is key= and key="". */
static void test_bare_flag(void **state)
{
	char v[64];

	(void)state;
	assert_int_equal(get("quiet kiln.debug", "kiln.debug", v, sizeof(v)), 1);
	assert_string_equal(v, "");
	assert_int_equal(get("kiln.debug=", "kiln.debug", v, sizeof(v)), 1);
	assert_string_equal(v, "");
	assert_int_equal(get("kiln.debug=\"\"", "kiln.debug", v, sizeof(v)), 1);
	assert_string_equal(v, "");
}

static void test_absent(void **state)
{
	char v[64];

	(void)state;
	assert_int_equal(get("console=ttyS0 quiet", "kiln.exec", v, sizeof(v)), 0);
	assert_string_equal(v, "");
	assert_int_equal(get("", "kiln.exec", v, sizeof(v)), 0);
	assert_int_equal(get("   ", "kiln.exec", v, sizeof(v)), 0);
	assert_string_equal(v, "");
}

/* Keys that merely share a prefix or suffix do not match, either way round. */
static void test_prefix_keys(void **state)
{
	char v[64];

	(void)state;
	assert_int_equal(get("kiln.execx=/evil", "kiln.exec", v, sizeof(v)), 0);
	assert_string_equal(v, "");
	assert_int_equal(get("kiln.execx", "kiln.exec", v, sizeof(v)), 0);
	assert_int_equal(get("kiln.exec=/sh", "kiln.exe", v, sizeof(v)), 0);
	assert_int_equal(get("xkiln.exec=/sh", "kiln.exec", v, sizeof(v)), 0);
	assert_int_equal(get("kiln.execx=/evil kiln.exec=/ok", "kiln.exec", v, sizeof(v)), 1);
	assert_string_equal(v, "/ok");
}

/* A value needing more than outlen bytes (with its NUL) is -E2BIG and "". */
static void test_too_long(void **state)
{
	char v[4];

	(void)state;
	assert_int_equal(get("k=abcd", "k", v, sizeof(v)), -E2BIG);
	assert_string_equal(v, "");
	assert_int_equal(get("k=abc", "k", v, sizeof(v)), 1); /* exactly fits */
	assert_string_equal(v, "abc");
	assert_int_equal(get("k=\"abc\"", "k", v, sizeof(v)), 1); /* quotes do not count */
	assert_string_equal(v, "abc");
	assert_int_equal(get("k=\"a c d\"", "k", v, sizeof(v)), -E2BIG);
	assert_string_equal(v, "");
}

/* The last occurrence wins even when an earlier one was too long, and a
 * too-long last one is still an error. */
static void test_later_value_that_fits_wins(void **state)
{
	char v[4];

	(void)state;
	assert_int_equal(get("k=toolong k=ok", "k", v, sizeof(v)), 1);
	assert_string_equal(v, "ok");
	assert_int_equal(get("k=ok k=toolong", "k", v, sizeof(v)), -E2BIG);
	assert_string_equal(v, "");
	assert_int_equal(get("k=toolong k", "k", v, sizeof(v)), 1);
	assert_string_equal(v, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_value),
		cmocka_unit_test(test_quoted_spaces),
		cmocka_unit_test(test_quoted_no_injection),
		cmocka_unit_test(test_other_whitespace),
		cmocka_unit_test(test_last_wins),
		cmocka_unit_test(test_bare_flag),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_prefix_keys),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_later_value_that_fits_wins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
