/*
 * Unit tests of lib/base/base64.c: RFC 4648 base64 with padding, for byte
 * strings in kilnd's JSON bodies and the kiln CLI's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/base64.h"
#include "tests/unit/bytes.h"

static void test_base64(void **state)
{
	static const struct {
		const char *raw;
		size_t n;
		const char *b64;
	} v[] = {
		/* RFC 4648, section 10 */
		{ "", 0, "" },
		{ "f", 1, "Zg==" },
		{ "fo", 2, "Zm8=" },
		{ "foo", 3, "Zm9v" },
		{ "foob", 4, "Zm9vYg==" },
		{ "fooba", 5, "Zm9vYmE=" },
		{ "foobar", 6, "Zm9vYmFy" },
		{ "\x00\xff\xfe", 3, "AP/+" },
	};
	char enc[32];
	uint8_t dec[32];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(base64_encode(U(v[i].raw), v[i].n, enc), strlen(v[i].b64));
		assert_string_equal(enc, v[i].b64);
		assert_int_equal(base64_encoded_size(v[i].n), strlen(v[i].b64) + 1);
		assert_int_equal(base64_decode(v[i].b64, strlen(v[i].b64), dec, &n), 0);
		assert_int_equal(n, v[i].n);
		assert_memory_equal(dec, v[i].raw, n);
	}
	static const char *const bad[] = { "Zg",       "Zg=",  "Z===",   "Zh==", "Zm9=",
					   "Zg==Zg==", "Zm 9", "Zm9v\n", "Zm-_", "=Zg=" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (base64_decode(bad[i], strlen(bad[i]), dec, &n) != -EINVAL)
			fail_msg("'%s' decoded", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
