/*
 * Unit tests of api/kilnd/core/agent_error.c: what libkiln's agent API
 * reports of a failure (kind, code, message), as kilnd's API errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/agent_error.h"
#include "api/proto/agent_proto.h"

static void test_agent_errors_map(void **state)
{
	struct api_err e;

	(void)state;
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "not_found",
						 "exec: 'nope' not found", "exec"),
			 API_E_NOT_FOUND);
	assert_string_equal(e.msg, "exec: 'nope' not found");
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "not_found", "",
						 "exec"),
			 API_E_NOT_FOUND);
	assert_string_equal(e.msg, "exec failed");
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "not_found", NULL, "x"),
			 API_E_NOT_FOUND);
	assert_string_equal(e.msg, "x failed");
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "permission_denied",
						 "m", "x"),
			 API_E_PERMISSION_DENIED);
	assert_int_equal(api_code_status(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT,
								 "no_space", "m", "x")),
			 507);
	/* A request kilnd built wrong: its bug. So is a code no agent sends. */
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "unknown_type", "m",
						 "x"),
			 API_E_INTERNAL);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "made_up", "m", "x"),
			 API_E_INTERNAL);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_REQUEST, "too_large", "m",
						 "x"),
			 API_E_TOO_LARGE);
	/* The agent's own timeout is the API's; a host-side deadline is an
	 * agent that does not answer. */
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "timeout", "m", "x"),
			 API_E_TIMEOUT);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_TIMEOUT, "timeout", "m", "x"),
			 API_E_AGENT_UNAVAILABLE);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_UNREACHABLE, "unreachable",
						 "m", "x"),
			 API_E_AGENT_UNAVAILABLE);
	assert_int_equal(api_code_status(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_PROTOCOL,
								 "protocol_error", "m", "x")),
			 502);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_HOST, "host_error", "m", "x"),
			 API_E_INTERNAL);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_NONE, "", "m", "x"),
			 API_E_INTERNAL);
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
		{ AGENT_E_BUSY, 409, "busy" },
		{ AGENT_E_IO_ERROR, 500, "io_error" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct api_err e;

		/* libkiln names the agent's code; kilnd maps the name. */
		api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, agent_code_name(want[i].agent),
					"m", "x");
		assert_string_equal(api_code_name(e.code), want[i].name);
		assert_int_equal(api_code_status(e.code), want[i].status);
		assert_string_equal(e.msg, "m");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agent_errors_map),
		cmocka_unit_test(test_agent_codes_to_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
