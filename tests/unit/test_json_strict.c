/*
 * lib/base/json_strict.c, the one strict JSON reading: an object that
 * names a key twice is refused wherever it sits and however the key is
 * spelled, by each of the three readings; what jansson refuses anyway
 * (trailing bytes, NUL, bad UTF-8) stays refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/json_strict.h"

static const char *const dups[] = {
	"{\"id\":\"abc\",\"id\":\"../x\"}",
	"{\"id\":\"abc\",\"x\":1,\"id\":\"abc\"}",     /* the same value twice: still two keys */
	"{\"a\":1,\"\\u0061\":2}",                     /* one key spelled two ways */
	"{\"error\":{\"code\":\"a\",\"code\":\"b\"}}", /* nested */
	"[{\"ok\":1},{\"type\":\"exit\",\"type\":\"stdout\"}]", /* in an array */
};

static void test_duplicates_refused(void **state)
{
	json_error_t je;

	(void)state;
	for (size_t i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
		memset(&je, 0, sizeof(je));
		if (json_strict_loads(dups[i], &je))
			fail_msg("accepted: %s", dups[i]);
		assert_non_null(strstr(je.text, "duplicate object key"));
		assert_null(json_strict_loadb(dups[i], strlen(dups[i]), &je));
		assert_non_null(strstr(je.text, "duplicate object key"));
		/* je is optional */
		assert_null(json_strict_loads(dups[i], NULL));
		/* what jansson alone does: the last value wins */
		json_t *lax = json_loads(dups[i], 0, NULL);
		assert_non_null(lax);
		json_decref(lax);
	}
}

static void test_distinct_keys_read(void **state)
{
	/* The same key in two objects is two keys, not a repeat. */
	const char *ok = "{\"a\":{\"id\":1},\"b\":{\"id\":2},\"c\":[{\"id\":3},{\"id\":4}]}";
	json_t *v = json_strict_loads(ok, NULL);

	(void)state;
	assert_non_null(v);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "b"), "id")), 2);
	json_decref(v);
	/* loadb reads len bytes, not up to a NUL. */
	v = json_strict_loadb("{\"n\":1}garbage", 7, NULL);
	assert_non_null(v);
	json_decref(v);
}

static void test_other_refusals_kept(void **state)
{
	static const char *const bad[] = {
		"{\"a\":1} x", "{\"a\":\"\\u0000\"}", "{\"a\":\"\xff\"}", "", "{", "1"
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (json_strict_loads(bad[i], NULL))
			fail_msg("accepted: %s", bad[i]);
}

static void test_file(void **state)
{
	char path[] = "/tmp/kiln-json-strict-XXXXXX";
	json_error_t je;
	json_t *v;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\n\"state\": \"running\",\n\"state\": \"stopped\"\n}\n", 43),
			 43);
	close(fd);
	assert_null(json_strict_load_file(path, &je));
	assert_non_null(strstr(je.text, "duplicate object key"));
	assert_int_equal(je.line, 3);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{\"state\": \"running\"}", 20), 20);
	close(fd);
	v = json_strict_load_file(path, &je);
	assert_non_null(v);
	json_decref(v);
	unlink(path);
	assert_null(json_strict_load_file(path, &je));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duplicates_refused),
		cmocka_unit_test(test_distinct_keys_read),
		cmocka_unit_test(test_other_refusals_kept),
		cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
