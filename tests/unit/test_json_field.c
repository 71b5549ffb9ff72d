/*
 * lib/base/json_field: the typed field checks every JSON protocol of kiln
 * uses. Mistyped, negative, fractional, out-of-range, oversize and unknown
 * fields must each be refused with the fault, key and bounds a caller
 * words its message from; absent fields take their defaults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lib/base/json_field.h"

static json_t *obj(const char *text)
{
	json_error_t je;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);

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
		cmocka_unit_test(test_uint),
		cmocka_unit_test(test_bool),
		cmocka_unit_test(test_string),
		cmocka_unit_test(test_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
