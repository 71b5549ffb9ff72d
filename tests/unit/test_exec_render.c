/*
 * Unit tests of api/kilnd/bodies/exec_render.c: exec and run results as
 * JSON (docs/api.md, "POST .../exec", "POST .../run"): the buffered result
 * object and the streaming NDJSON events.
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
#include "api/kilnd/bodies/exec_render.h"
#include "api/proto/agent_proto.h"
#include "tests/unit/bytes.h"

static void test_exec_result(void **state)
{
	char bin[] = { 'a', (char)0xff, 0 };
	struct exec_result res = {
		.st = { .size = sizeof(res.st),
			.pid = 57,
			.exit_code = 3,
			.stdout_bytes = 10,
			.stderr_bytes = 2,
			.stderr_truncated = 1,
			.wall_us = 1830 },
		.out = "got hello\n",
		.out_len = 10,
		.err = bin,
		.err_len = 2,
	};
	json_t *o;

	(void)state;
	o = exec_render_result(&res, false, 2.5);
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 3);
	assert_true(json_is_null(json_object_get(o, "signal")));
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "got hello\n");
	assert_string_equal(json_string_value(json_object_get(o, "stdout_encoding")), "utf-8");
	assert_string_equal(json_string_value(json_object_get(o, "stderr")), "Yf8=");
	assert_string_equal(json_string_value(json_object_get(o, "stderr_encoding")), "base64");
	assert_true(json_is_true(json_object_get(o, "stderr_truncated")));
	assert_int_equal(json_integer_value(json_object_get(o, "stdout_bytes")), 10);
	assert_int_equal(json_integer_value(json_object_get(o, "wall_us")), 1830);
	json_decref(o);

	/* A signal: exit_code null; no output at all: empty strings. */
	res.st.signal = 9;
	res.st.exit_code = -1;
	res.out = res.err = NULL;
	res.out_len = res.err_len = 0;
	o = exec_render_result(&res, true, 1);
	assert_true(json_is_null(json_object_get(o, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(o, "signal")), 9);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "");
	assert_string_equal(json_string_value(json_object_get(o, "stdout_encoding")), "base64");
	json_decref(o);
}

static void expect_line(char *line, size_t len, const char *want)
{
	assert_non_null(line);
	assert_int_equal(len, strlen(want));
	assert_string_equal(line, want);
	free(line);
}

static void test_stream_events(void **state)
{
	struct exec_stream_enc enc;
	char *line;
	size_t len;

	(void)state;
	exec_stream_enc_init(&enc, false);
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("hi\n"), 3, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data\":\"hi\\n\"}\n");
	/* "€" = e2 82 ac split across three chunks, interleaved with stderr. */
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("x\xe2"), 2, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data\":\"x\"}\n");
	assert_int_equal(exec_event_output(&enc, AGENT_STDERR, U("e"), 1, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stderr\",\"data\":\"e\"}\n");
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("\x82"), 1, &line, &len), 0);
	assert_null(line); /* still incomplete: nothing to send */
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("\xac!"), 2, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data\":\"\xe2\x82\xac!\"}\n");
	/* Not UTF-8: base64, nothing held. */
	assert_int_equal(exec_event_output(&enc, AGENT_STDERR, U("\xff\xe2"), 2, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stderr\",\"data_base64\":\"/+I=\"}\n");
	/* An incomplete character at the very end is flushed as base64. */
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("\xf0\x9d"), 2, &line, &len), 0);
	assert_null(line);
	assert_int_equal(exec_event_flush(&enc, AGENT_STDERR, &line, &len), 0);
	assert_null(line);
	assert_int_equal(exec_event_flush(&enc, AGENT_STDOUT, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data_base64\":\"8J0=\"}\n");
	/* NUL bytes are valid UTF-8 and JSON-escaped. */
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("a\0b"), 3, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data\":\"a\\u0000b\"}\n");

	exec_stream_enc_init(&enc, true);
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("hi"), 2, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data_base64\":\"aGk=\"}\n");

	struct kiln_exit_status ex = {
		.size = sizeof(ex), .pid = 5, .exit_code = 0, .stdout_bytes = 2
	};

	line = exec_event_exit(&ex, 1.5, &len);
	assert_non_null(line);
	assert_int_equal(line[len - 1], '\n');
	assert_non_null(
		strstr(line,
		       "{\"type\":\"exit\",\"exit_code\":0,\"signal\":null,\"timed_out\":false,"));
	free(line);

	struct api_err e;

	api_err_set(&e, API_E_AGENT_UNAVAILABLE, "the VM went away");
	line = exec_event_error(&e, &len);
	expect_line(
		line, len,
		"{\"type\":\"error\",\"error\":{\"code\":\"agent_unavailable\",\"message\":\"the VM went away\"}}\n");
}

/* The response members and the stream's last event. */
static void test_render(void **state)
{
	struct kiln_run_result res = { .size = sizeof(res) };
	const char *file = "{\"value\":[1]}";
	json_t *o = json_object();
	size_t len;
	char *line;

	(void)state;
	res.data = (char *)file;
	res.len = res.file_size = strlen(file);
	assert_int_equal(exec_render_run_result(o, &res), 0);
	assert_true(json_is_array(json_object_get(o, "result")));
	assert_true(json_is_null(json_object_get(o, "error")));
	json_decref(o);
	line = exec_event_result(&res, &len);
	assert_non_null(line);
	assert_string_equal(line, "{\"type\":\"result\",\"result\":[1],\"error\":null}\n");
	assert_int_equal(len, strlen(line));
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_result),
		cmocka_unit_test(test_stream_events),
		cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
