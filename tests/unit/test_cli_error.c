/*
 * Unit tests of api/kiln/cli_error.c: what the kiln CLI says when something
 * fails, and the exit status it says it with.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "api/kiln/cli_error.h"

static char *print_fail(const char *what, const struct cli_fail *f)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	cli_fail_print(m, what, f);
	fclose(m);
	return buf;
}

static void test_error_body(void **state)
{
	struct cli_fail f;
	char *line;
	const char *body =
		"{\"error\":{\"code\":\"wrong_state\",\"message\":\"sandbox x is stopped; start it first\"}}";

	(void)state;
	cli_fail_from_response(409, body, strlen(body), &f);
	assert_int_equal(f.exit, CLI_EXIT_API);
	line = print_fail("exec x", &f);
	assert_string_equal(line,
			    "kiln: exec x: sandbox x is stopped; start it first (wrong_state)\n");
	free(line);
	/* kilnd's message already names the command: said once, not twice */
	body = "{\"error\":{\"code\":\"internal\",\"message\":\"image import: kiln-init /x: No such file or directory\"}}";
	cli_fail_from_response(500, body, strlen(body), &f);
	line = print_fail("image import", &f);
	assert_string_equal(line,
			    "kiln: image import: kiln-init /x: No such file or directory (internal)\n");
	free(line);
	line = print_fail("image", &f); /* a shorter word is no prefix of it */
	assert_non_null(strstr(line, "kiln: image: image import: "));
	free(line);

	body = "{\"error\":{\"code\":\"sandbox_not_found\",\"message\":\"no sandbox\"}}";
	cli_fail_from_response(404, body, strlen(body), &f);
	assert_int_equal(f.exit, CLI_EXIT_NOT_FOUND);
	assert_int_equal(cli_exit_for_code("image_not_found"), CLI_EXIT_NOT_FOUND);
	assert_int_equal(cli_exit_for_code("not_found"), CLI_EXIT_NOT_FOUND);
	/* An endpoint this kilnd lacks is not the user's missing object. */
	assert_int_equal(cli_exit_for_code("route_not_found"), CLI_EXIT_API);

	/* Not kilnd's error object: the status still says something. */
	cli_fail_from_response(502, "<html>", 6, &f);
	assert_string_equal(f.msg, "kilnd answered HTTP 502 without an error body");
	assert_string_equal(f.code, "");
	cli_fail_from_response(500, NULL, 0, &f);
	assert_int_equal(f.exit, CLI_EXIT_API);
	cli_fail_from_response(404, "{\"error\":{\"code\":\"\",\"message\":\"m\"}}", 34, &f);
	assert_string_equal(f.code, "http_404");
	cli_fail_from_response(400, "{\"error\":{\"code\":5}}", 20, &f);
	assert_string_equal(f.msg, "kilnd answered HTTP 400 without an error body");
	/* An error object with a code given twice is no error object: neither
	 * code is believed (the last would make a 404 of an internal error). */
	body = "{\"error\":{\"code\":\"internal\",\"message\":\"m\",\"code\":\"sandbox_not_found\"}}";
	cli_fail_from_response(500, body, strlen(body), &f);
	assert_string_equal(f.msg, "kilnd answered HTTP 500 without an error body");
	assert_string_equal(f.code, "");
	assert_int_equal(f.exit, CLI_EXIT_API);

	/* Escape sequences from a guest's console cannot reach the terminal. */
	body = "{\"error\":{\"code\":\"boot_failed\",\"message\":\"panic\\u001b[2J\\r\\nx\"}}";
	cli_fail_from_response(500, body, strlen(body), &f);
	line = print_fail("create", &f);
	assert_string_equal(line, "kiln: create: panic?[2J??x (boot_failed)\n");
	free(line);
}

static void test_unreachable_messages(void **state)
{
	struct cli_fail f;

	(void)state;
	cli_fail_unreachable("/run/k.sock", ENOENT, NULL, &f);
	assert_int_equal(f.exit, CLI_EXIT_UNREACHABLE);
	assert_non_null(strstr(f.msg, "no socket at /run/k.sock"));
	assert_non_null(strstr(f.msg, "kilnd must run"));
	cli_fail_unreachable("/run/k.sock", ECONNREFUSED, NULL, &f);
	assert_non_null(strstr(f.msg, "connection refused at /run/k.sock"));
	cli_fail_unreachable("/run/k.sock", EACCES, NULL, &f);
	assert_non_null(strstr(f.msg, "permission denied on /run/k.sock"));
	cli_fail_unreachable("/run/k.sock", 0, "Could not connect", &f);
	assert_string_equal(f.msg, "cannot reach kilnd at /run/k.sock: Could not connect");
	assert_int_equal(f.exit, CLI_EXIT_UNREACHABLE);
}

static void test_timeout_messages(void **state)
{
	struct cli_fail f;

	(void)state;
	cli_fail_timeout("/run/k.sock", true, 90, &f);
	assert_int_equal(f.exit, CLI_EXIT_TIMEOUT);
	assert_string_equal(f.code, "");
	assert_non_null(strstr(f.msg, "kilnd did not answer within 90 s at /run/k.sock"));
	assert_non_null(strstr(f.msg, "may still take effect"));
	assert_non_null(
		strstr(f.msg, "--request-timeout SECONDS or KILN_REQUEST_TIMEOUT (0: no limit)"));
	cli_fail_timeout("/run/k.sock", false, 30, &f);
	assert_int_equal(f.exit, CLI_EXIT_UNREACHABLE);
	assert_non_null(
		strstr(f.msg, "cannot reach kilnd: no connection within 30 s at /run/k.sock"));
	assert_non_null(strstr(f.msg, "--request-timeout"));
}

static void test_socket_path(void **state)
{
	char path[300];
	struct cli_fail f;

	(void)state;
	memset(path, 'a', sizeof(path));
	path[0] = '/';
	path[107] = 0; /* 107 bytes and the NUL: sun_path's 108 exactly */
	assert_int_equal(cli_fail_socket_path(path, &f), 0);
	path[107] = 'a';
	path[108] = 0;
	assert_int_equal(cli_fail_socket_path(path, &f), -1);
	assert_int_equal(f.exit, CLI_EXIT_UNREACHABLE);
	assert_non_null(
		strstr(f.msg,
		       "the socket path is 108 bytes, longer than a Unix socket address holds (108"));
	assert_non_null(strstr(f.msg, "use a shorter path"));
	path[108] = 'a';
	path[299] = 0;
	assert_int_equal(cli_fail_socket_path(path, &f), -1);
	assert_non_null(strstr(f.msg, "299 bytes"));
	/* The path is cut in the message, the advice after it kept. */
	assert_non_null(strstr(f.msg, "aaa...'"));
	assert_true(strlen(f.msg) < 300);
}

static void test_answer_shape(void **state)
{
	struct cli_fail f;
	json_t *v;

	(void)state;
	v = json_pack("{s:s, s:i, s:s}", "id", "3f9a1c2b7d4e", "pid", 5, "empty", "");
	assert_int_equal(cli_answer_need(v, "id", JSON_STRING, &f), 0);
	assert_int_equal(cli_answer_need(v, "pid", JSON_INTEGER, &f), 0);
	/* A 201 with {} is not a created sandbox. */
	assert_int_equal(cli_answer_need(v, "state", JSON_STRING, &f), -1);
	assert_int_equal(f.exit, CLI_EXIT_API);
	assert_non_null(strstr(f.msg, "kilnd answered without a string 'state' (missing;"));
	assert_int_equal(cli_answer_need(v, "pid", JSON_STRING, &f), -1);
	assert_non_null(strstr(f.msg, "without a string 'pid' (wrong type;"));
	assert_int_equal(cli_answer_need(v, "id", JSON_INTEGER, &f), -1);
	assert_non_null(strstr(f.msg, "without an integer 'id'"));
	assert_int_equal(cli_answer_need(v, "empty", JSON_STRING, &f), -1);
	json_decref(v);
	assert_int_equal(cli_answer_need(NULL, "id", JSON_STRING, &f), -1);
	assert_non_null(strstr(f.msg, "(no body;"));
	v = json_pack("[s]", "id");
	assert_int_equal(cli_answer_need(v, "id", JSON_STRING, &f), -1);
	assert_non_null(strstr(f.msg, "(not a JSON object;"));
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_body),
		cmocka_unit_test(test_unreachable_messages),
		cmocka_unit_test(test_timeout_messages),
		cmocka_unit_test(test_socket_path),
		cmocka_unit_test(test_answer_shape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
