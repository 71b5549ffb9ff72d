/*
 * Unit tests of lib/base/url_query.c: percent-decoding of a URL's path
 * and query in place, which never lets a %00 become a NUL in the middle of
 * a name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lib/base/url_query.h"

static void test_unescape_keeps_nul_out(void **state)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "/a%20b", "/a b" },   { "%2Fetc%2fpasswd", "/etc/passwd" },
		{ "/x%00y", "/x%00y" }, { "%zz%4", "%zz%4" },
		{ "100%", "100%" },     { "%C3%A9", "\xc3\xa9" },
		{ "%%41", "%A" },       { "", "" },
	};
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		strcpy(buf, v[i].in);
		assert_int_equal(query_unescape(buf), strlen(v[i].out));
		assert_string_equal(buf, v[i].out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unescape_keeps_nul_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
