/*
 * Unit tests of api/kilnd/core/api_error.c: kilnd's error codes, their HTTP
 * statuses and the JSON error body {"error":{"code":"...","message":"..."}}
 * (docs/api.md, "Conventions").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/api_error.h"

static void test_error_bodies(void **state)
{
	struct api_err e;
	char *body;

	(void)state;
	api_err_set(&e, API_E_WRONG_STATE, "sandbox %s is stopped; start it first", "abc");
	body = api_error_body(&e);
	assert_string_equal(
		body,
		"{\"error\":{\"code\":\"wrong_state\",\"message\":\"sandbox abc is stopped; start it first\"}}");
	free(body);
	/* A message quoting guest bytes that are not UTF-8 still makes JSON. */
	api_err_set(&e, API_E_NOT_FOUND, "read '/tmp/\xff\"x'");
	body = api_error_body(&e);
	assert_string_equal(
		body,
		"{\"error\":{\"code\":\"not_found\",\"message\":\"read '/tmp/\xef\xbf\xbd\\\"x'\"}}");
	free(body);

	/* Every code has a name and a status in its class. */
	for (int c = 1; c < API_CODE_COUNT; c++) {
		unsigned s = api_code_status((enum api_code)c);

		assert_true(s >= 400 && s <= 599);
		assert_string_not_equal(api_code_name((enum api_code)c), "ok");
	}
	assert_int_equal(api_code_status(API_E_BODY_TOO_LARGE), 413);
	assert_int_equal(api_code_status(API_E_AGENT_UNAVAILABLE), 503);
	/* busy is a conflict with what runs right now (docs/api.md: 409) */
	assert_int_equal(api_code_status(API_E_BUSY), 409);
	assert_int_equal(api_code_status(API_CODE_COUNT), 500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_bodies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
