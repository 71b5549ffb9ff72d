/*
 * lib/base/json, the one JSON module.
 *
 * The strict load: an object that names a key twice is refused wherever
 * it sits and however the key is spelled, by each of the three readings;
 * what jansson refuses anyway (trailing bytes, NUL, bad UTF-8) stays
 * refused.
 *
 * Typed fields, the checks every JSON protocol of kiln uses: mistyped,
 * negative, fractional, out-of-range, oversize and unknown fields must
 * each be refused with the fault, key and bounds a caller words its
 * message from; absent fields take their defaults.
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

#include "lib/base/json.h"

/* ---- the strict load ---- */

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

/* jansson's number and literal scanners stop at a NUL: {"a":1<NUL>} read
 * as {"a":1} (a sandbox's meta.json with a NUL before its '}' loaded). */
static void test_nul_refused(void **state)
{
	static const char *const docs[] = { "{\"a\":1\0}", "{\"a\":true\0}", "[1\0]" };
	static const size_t lens[] = { 8, 11, 4 };
	char path[] = "/tmp/kiln-json-nul-XXXXXX";
	json_error_t je;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		assert_null(json_strict_loadb(docs[i], lens[i], &je));
		assert_non_null(strstr(je.text, "a NUL byte at byte"));
		fd = open(path, O_WRONLY | O_TRUNC);
		assert_int_equal(write(fd, docs[i], lens[i]), (ssize_t)lens[i]);
		close(fd);
		assert_null(json_strict_load_file(path, &je));
		assert_non_null(strstr(je.text, "a NUL byte at byte"));
	}
	assert_null(json_strict_loadb("{\"a\":1}\0", 8, NULL));
	/* The line is named, as for jansson's own refusals. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{\n\"a\":\n1\0}", 10), 10);
	close(fd);
	assert_null(json_strict_load_file(path, &je));
	assert_string_equal(je.text, "a NUL byte at byte 8");
	assert_int_equal(je.line, 3);
	assert_null(json_strict_loadb("{\n\"a\":\n1\0}", 10, &je));
	assert_int_equal(je.line, 3);
	unlink(path);
	assert_null(json_strict_load_file(path, &je));
	assert_non_null(strstr(je.text, "unable to open"));
}

/* ---- typed fields ---- */

static json_t *obj(const char *text)
{
	json_error_t je;
	json_t *o = json_strict_loads(text, &je);

	assert_non_null(o);
	return o;
}

static void test_uint(void **state)
{
	json_t *o = obj(
		"{\"n\":5,\"neg\":-1,\"frac\":5.0,\"s\":\"5\",\"big\":9223372036854775807,\"z\":null}");
	struct json_field_fail f;
	uint64_t v;

	(void)state;
	assert_int_equal(json_field_uint(o, "n", true, 1, 5, 0, &v, &f), 0);
	assert_int_equal(v, 5);
	/* absent: the default, or MISSING when required */
	assert_int_equal(json_field_uint(o, "absent", false, 1, 5, 3, &v, &f), 0);
	assert_int_equal(v, 3);
	assert_int_equal(json_field_uint(o, "absent", true, 1, 5, 3, &v, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_MISSING);
	assert_int_equal(f.want, JSON_FIELD_INTEGER);
	assert_string_equal(f.key, "absent");
	/* out of range: the value and the bounds */
	assert_int_equal(json_field_uint(o, "n", true, 1, 4, 0, &v, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_RANGE);
	assert_int_equal(f.value, 5);
	assert_int_equal(f.min, 1);
	assert_int_equal(f.max, 4);
	assert_int_equal(json_field_uint(o, "n", true, 6, 9, 0, &v, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_RANGE);
	assert_int_equal(json_field_uint(o, "neg", true, 0, UINT64_MAX, 0, &v, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_RANGE);
	assert_int_equal(f.value, -1);
	assert_int_equal(json_field_uint(o, "big", true, 0, UINT64_MAX, 0, &v, &f), 0);
	assert_int_equal(v, 9223372036854775807ull);
	/* 5.0, "5" and null are not integers */
	assert_int_equal(json_field_uint(o, "frac", true, 0, 9, 0, &v, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_TYPE);
	assert_string_equal(f.got, "a number with a fraction");
	assert_int_equal(json_field_uint(o, "s", true, 0, 9, 0, &v, &f), -1);
	assert_string_equal(f.got, "a string");
	assert_int_equal(json_field_uint(o, "z", false, 0, 9, 7, &v, &f), -1);
	assert_string_equal(f.got, "null");
	json_decref(o);
}

static void test_bool(void **state)
{
	json_t *o = obj("{\"t\":true,\"f\":false,\"one\":1,\"s\":\"true\"}");
	struct json_field_fail f;
	bool b;

	(void)state;
	assert_int_equal(json_field_bool(o, "t", false, false, &b, &f), 0);
	assert_true(b);
	assert_int_equal(json_field_bool(o, "f", false, true, &b, &f), 0);
	assert_false(b);
	assert_int_equal(json_field_bool(o, "absent", false, true, &b, &f), 0);
	assert_true(b);
	assert_int_equal(json_field_bool(o, "absent", true, true, &b, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_MISSING);
	assert_int_equal(f.want, JSON_FIELD_BOOLEAN);
	assert_int_equal(json_field_bool(o, "one", false, false, &b, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_TYPE);
	assert_int_equal(f.want, JSON_FIELD_BOOLEAN);
	assert_string_equal(f.got, "an integer");
	assert_int_equal(json_field_bool(o, "s", false, false, &b, &f), -1);
	assert_string_equal(f.got, "a string");
	json_decref(o);
}

static void test_string(void **state)
{
	json_t *o = obj("{\"s\":\"abcd\",\"a\":[],\"o\":{}}");
	struct json_field_fail f;
	const char *s;

	(void)state;
	assert_int_equal(json_field_string(o, "s", true, 4, &s, &f), 0);
	assert_string_equal(s, "abcd");
	assert_int_equal(json_field_string(o, "s", true, 3, &s, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_LENGTH);
	assert_int_equal(f.max, 3);
	assert_null(s);
	assert_int_equal(json_field_string(o, "absent", false, 3, &s, &f), 0);
	assert_null(s);
	assert_int_equal(json_field_string(o, "absent", true, 3, &s, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_MISSING);
	assert_int_equal(f.want, JSON_FIELD_STRING);
	assert_int_equal(json_field_string(o, "a", false, SIZE_MAX, &s, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_TYPE);
	assert_string_equal(f.got, "an array");
	assert_int_equal(json_field_string(o, "o", false, SIZE_MAX, &s, &f), -1);
	assert_string_equal(f.got, "an object");
	json_decref(o);
}

/* The first unknown key in the object's order is named. */
static void test_only(void **state)
{
	static const char *const allowed[] = { "a", "b", NULL };
	static const char *const none[] = { NULL };
	json_t *o = obj("{\"a\":1,\"zz\":true,\"b\":2,\"yy\":3}");
	json_t *empty = obj("{}");
	struct json_field_fail f;

	(void)state;
	assert_int_equal(json_field_only(o, allowed, &f), -1);
	assert_int_equal(f.fault, JSON_FIELD_UNKNOWN);
	assert_string_equal(f.key, "zz");
	assert_int_equal(json_field_only(empty, none, &f), 0);
	assert_int_equal(json_field_only(o, none, &f), -1);
	assert_string_equal(f.key, "a");
	json_object_del(o, "zz");
	json_object_del(o, "yy");
	assert_int_equal(json_field_only(o, allowed, &f), 0);
	json_decref(o);
	json_decref(empty);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duplicates_refused),
		cmocka_unit_test(test_distinct_keys_read),
		cmocka_unit_test(test_other_refusals_kept),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_nul_refused),
		cmocka_unit_test(test_uint),
		cmocka_unit_test(test_bool),
		cmocka_unit_test(test_string),
		cmocka_unit_test(test_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
