/*
 * Unit tests of api/kilnd/bodies/run_result.c: the result file of a run
 * (docs/api.md, "POST .../run"), as the guest's `result` helpers wrote it,
 * turned into the response's `result` and `error` members.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/run_result.h"
#include "api/proto/agent_proto.h"

/* Parse a result file; the two members as compact JSON. */
static void parse(const char *file, uint64_t size, char *value, char *error)
{
	json_t *v = NULL, *e = NULL;
	char *s;

	assert_int_equal(run_result_parse((const uint8_t *)file, strlen(file), size, &v, &e), 0);
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
	strcpy(value, s);
	free(s);
	s = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
	snprintf(error, 1024, "%s", s);
	free(s);
	json_decref(v);
	json_decref(e);
}

static void test_result_valid(void **state)
{
	char v[1024], e[1024];

	(void)state;
	parse("", 0, v, e);
	assert_string_equal(v, "null");
	assert_string_equal(e, "null");
	parse("{}", 2, v, e);
	assert_string_equal(v, "null");
	assert_string_equal(e, "null");
	parse("{\"value\":{\"a\":[1,2.5,\"x\"]}}", 26, v, e);
	assert_string_equal(v, "{\"a\":[1,2.5,\"x\"]}");
	assert_string_equal(e, "null");
	parse("{\"value\":false}", 15, v, e);
	assert_string_equal(v, "false");
	/* A value and then an exception: both are reported. */
	parse("{\"value\":1,\"error\":{\"type\":\"ValueError\",\"message\":\"bad\",\"traceback\":\"T\"}}",
	      0, v, e);
	assert_string_equal(v, "1");
	assert_string_equal(e, "{\"message\":\"bad\",\"traceback\":\"T\",\"type\":\"ValueError\"}");
	/* result.error: no traceback (null or absent). */
	parse("{\"error\":{\"type\":\"ResultError\",\"message\":\"m\",\"traceback\":null}}", 0, v,
	      e);
	assert_string_equal(e, "{\"message\":\"m\",\"traceback\":null,\"type\":\"ResultError\"}");
	parse("{\"error\":{\"type\":\"ResultError\",\"message\":\"m\"}}", 0, v, e);
	assert_string_equal(e, "{\"message\":\"m\",\"traceback\":null,\"type\":\"ResultError\"}");
}

static void test_result_hostile(void **state)
{
	static const struct {
		const char *file;
		const char *type;
		const char *in_message;
	} cases[] = {
		{ "not json", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":1", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":1}trailing", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":1,\"value\":2}", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":\"\\u0000\"}", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":\"\xff\"}", "ResultInvalid", "not valid JSON" },
		{ "[1,2]", "ResultInvalid", "not a JSON object" },
		{ "42", "ResultInvalid", "not valid JSON" },
		{ "{\"valu\":1}", "ResultInvalid", "unknown member 'valu'" },
		{ "{\"error\":\"boom\"}", "ResultInvalid", "'error' is not an object" },
		{ "{\"error\":{\"type\":1,\"message\":\"m\"}}", "ResultInvalid", "'error.type'" },
		{ "{\"error\":{\"type\":\"T\"}}", "ResultInvalid", "'error.message'" },
		{ "{\"error\":{\"type\":\"T\",\"message\":\"m\",\"traceback\":5}}", "ResultInvalid",
		  "'error.traceback'" },
		{ "{\"error\":{\"type\":\"T\",\"message\":\"m\",\"extra\":1}}", "ResultInvalid",
		  "unknown member 'extra'" },
		/* A member name cut at 64 bytes in the middle of a character: the
		 * message stays valid UTF-8 (U+FFFD for the cut), not a 500. */
		{ "{\""
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "\xc3\xa9\":1}",
		  "ResultInvalid",
		  "unknown member 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xef\xbf\xbd'" },
		/* A bad error takes the value with it: the file is not the helpers'. */
		{ "{\"value\":7,\"error\":[]}", "ResultInvalid", "not an object" },
	};
	char v[1024], e[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		parse(cases[i].file, strlen(cases[i].file), v, e);
		if (strcmp(v, "null") || !strstr(e, cases[i].type) ||
		    !strstr(e, cases[i].in_message))
			fail_msg("%s: got value %s error %s, want %s with '%s'", cases[i].file, v,
				 e, cases[i].type, cases[i].in_message);
	}
	/* Deeper than jansson's limit: refused, not a stack overflow. */
	{
		size_t depth = 100000;
		char *deep = malloc(2 * depth + 16);

		assert_non_null(deep);
		strcpy(deep, "{\"value\":");
		memset(deep + 9, '[', depth);
		memset(deep + 9 + depth, ']', depth);
		strcpy(deep + 9 + 2 * depth, "}");
		parse(deep, strlen(deep), v, e);
		assert_string_equal(v, "null");
		assert_non_null(strstr(e, "ResultInvalid"));
		free(deep);
	}
}

static void test_result_too_large(void **state)
{
	char v[1024], e[1024];
	json_t *jv, *je;

	(void)state;
	/* The agent left out a file over its cap: only the size came. */
	parse("", (uint64_t)AGENT_RUN_RESULT_MAX + 1, v, e);
	assert_string_equal(v, "null");
	assert_non_null(strstr(e, "ResultTooLarge"));
	assert_non_null(strstr(e, "1048577 bytes"));
	/* A longer buffer than the cap is refused the same way. */
	assert_int_equal(run_result_parse((const uint8_t *)"x", (size_t)AGENT_RUN_RESULT_MAX + 1,
					  (uint64_t)AGENT_RUN_RESULT_MAX + 1, &jv, &je),
			 0);
	assert_true(json_is_null(jv));
	assert_string_equal(json_string_value(json_object_get(je, "type")), "ResultTooLarge");
	json_decref(jv);
	json_decref(je);
}

/* An overlong message or type is cut at a character boundary. */
static void test_result_cuts_text(void **state)
{
	size_t n = RUN_RESULT_TEXT_MAX + 100;
	char *file = malloc(n * 2 + 128), *p;
	json_t *v, *e;
	const char *msg;

	(void)state;
	assert_non_null(file);
	p = file + sprintf(file, "{\"error\":{\"type\":\"T\",\"message\":\"");
	for (size_t i = 0; i < n / 2; i++) {
		memcpy(p, "\xc3\xa9", 2); /* é: two bytes, so the cut may fall inside one */
		p += 2;
	}
	strcpy(p, "x\"}}");
	assert_int_equal(run_result_parse((const uint8_t *)file, strlen(file), strlen(file), &v,
					  &e),
			 0);
	msg = json_string_value(json_object_get(e, "message"));
	assert_non_null(msg);
	assert_true(strlen(msg) <= RUN_RESULT_TEXT_MAX);
	assert_true(strlen(msg) >= RUN_RESULT_TEXT_MAX - 1);
	assert_int_equal(strlen(msg) % 2, 0);
	json_decref(v);
	json_decref(e);
	free(file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_valid),
		cmocka_unit_test(test_result_hostile),
		cmocka_unit_test(test_result_too_large),
		cmocka_unit_test(test_result_cuts_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
