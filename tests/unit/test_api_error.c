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
	assert_int_equal(api_code_status(API_CODE_COUNT), 500);
}

static void test_agent_errors_map(void **state)
{
	struct agent_client_err ae = { .fail = AGENT_FAIL_AGENT, .code = AGENT_E_NOT_FOUND };
	struct api_err e;

	(void)state;
	strcpy(ae.msg, "exec: 'nope' not found");
	assert_int_equal(api_err_from_agent(&e, &ae, "exec"), API_E_NOT_FOUND);
	assert_string_equal(e.msg, "exec: 'nope' not found");
	ae.msg[0] = '\0';
	assert_int_equal(api_err_from_agent(&e, &ae, "exec"), API_E_NOT_FOUND);
	assert_string_equal(e.msg, "exec failed");
	ae.code = AGENT_E_PERMISSION_DENIED;
	assert_int_equal(api_err_from_agent(&e, &ae, "x"), API_E_PERMISSION_DENIED);
	ae.code = AGENT_E_NO_SPACE;
	assert_int_equal(api_code_status(api_err_from_agent(&e, &ae, "x")), 507);
	ae.code = AGENT_E_UNKNOWN_TYPE; /* a request kilnd built wrong: its bug */
	assert_int_equal(api_err_from_agent(&e, &ae, "x"), API_E_INTERNAL);
	ae.fail = AGENT_FAIL_REQUEST;
	ae.code = AGENT_E_TOO_LARGE;
	assert_int_equal(api_err_from_agent(&e, &ae, "x"), API_E_TOO_LARGE);
	ae.fail = AGENT_FAIL_CONNECT;
	assert_int_equal(api_err_from_agent(&e, &ae, "x"), API_E_AGENT_UNAVAILABLE);
	ae.fail = AGENT_FAIL_TIMEOUT;
	assert_int_equal(api_err_from_agent(&e, &ae, "x"), API_E_AGENT_UNAVAILABLE);
	ae.fail = AGENT_FAIL_PROTOCOL;
	assert_int_equal(api_code_status(api_err_from_agent(&e, &ae, "x")), 502);
	ae.fail = AGENT_FAIL_LOCAL;
	assert_int_equal(api_err_from_agent(&e, &ae, "x"), API_E_INTERNAL);
}

/* The statuses these endpoints promise in docs/api.md. */
static void test_agent_codes_to_status(void **state)
{
	static const struct {
		enum agent_code agent;
		unsigned status;
		const char *name;
	} want[] = {
		{ AGENT_E_NOT_FOUND, 404, "not_found" },
		{ AGENT_E_EXISTS, 409, "exists" },
		{ AGENT_E_NOT_EMPTY, 409, "not_empty" },
		{ AGENT_E_PERMISSION_DENIED, 403, "permission_denied" },
		{ AGENT_E_UNSAFE_PATH, 400, "unsafe_path" },
		{ AGENT_E_BAD_ARCHIVE, 400, "bad_archive" },
		{ AGENT_E_NOT_DIRECTORY, 400, "not_directory" },
		{ AGENT_E_IS_DIRECTORY, 400, "is_directory" },
		{ AGENT_E_READ_ONLY, 409, "read_only" },
		{ AGENT_E_NO_SPACE, 507, "no_space" },
		{ AGENT_E_BUSY, 503, "busy" },
		{ AGENT_E_IO_ERROR, 500, "io_error" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct agent_client_err ae = { .fail = AGENT_FAIL_AGENT, .code = want[i].agent };
		struct api_err e;

		snprintf(ae.msg, sizeof(ae.msg), "m");
		api_err_from_agent(&e, &ae, "x");
		assert_string_equal(api_code_name(e.code), want[i].name);
		assert_int_equal(api_code_status(e.code), want[i].status);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_bodies),
		cmocka_unit_test(test_agent_errors_map),
		cmocka_unit_test(test_agent_codes_to_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
