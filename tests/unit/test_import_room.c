/* api/kilnd/images/import_room.c: what an import of a declared size needs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kilnd/images/import_room.h"

#define MiB (1ull << 20)

static void test_room(void **state)
{
	struct api_err e;

	(void)state;
	/* 100 MiB needs 3 x 100 + 64 */
	assert_int_equal(import_room_check("image import", "x", 100 * MiB, 364 * MiB, "/s", &e), 0);
	assert_int_equal(import_room_check("image import", "x", 100 * MiB, 364 * MiB - 1, "/s", &e),
			 -1);
	assert_int_equal(e.code, API_E_NO_SPACE);
	assert_non_null(strstr(e.msg, "about 364 MiB free in /s"));
	assert_non_null(strstr(e.msg, "and 363 MiB are"));
	/* an empty body still needs the slack; a full disk takes nothing */
	assert_int_equal(import_room_check("image import", "x", 0, 64 * MiB, "/s", &e), 0);
	assert_int_equal(import_room_check("image import", "x", 0, 0, "/s", &e), -1);
	/* no overflow at the top: the need saturates, nothing fits it but all */
	assert_int_equal(import_room_check("image import", "x", UINT64_MAX, UINT64_MAX - 1, "/s",
					   &e),
			 -1);
	assert_int_equal(import_room_check("image import", "x", UINT64_MAX / 3, UINT64_MAX - 1,
					   "/s", &e),
			 -1);
	assert_int_equal(import_room_check("image import", "x", UINT64_MAX / 3, UINT64_MAX, "/s",
					   &e),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
