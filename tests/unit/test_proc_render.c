/*
 * Unit tests of api/kilnd/bodies/proc_render.c: background processes as
 * JSON (docs/api.md, "Processes"): the process object, the exit object of
 * wait, and the NDJSON events of GET .../output.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/proc_render.h"

/* ---- output events ---- */

static json_t *line_json(const char *line, size_t len, size_t *used)
{
	const char *nl = memchr(line, '\n', len);
	json_error_t je;
	json_t *j;

	assert_non_null(nl);
	j = json_loadb(line, (size_t)(nl - line), 0, &je);
	assert_non_null(j);
	*used = (size_t)(nl - line) + 1;
	return j;
}

static void test_output_events(void **state)
{
	struct proc_out_enc enc;
	const uint8_t euro[] = { 0xe2, 0x82, 0xac };
	size_t len, used;
	char *line;
	json_t *j;

	(void)state;
	proc_out_enc_init(&enc, false);
	/* "a" + the first byte of a euro sign: the cut byte waits. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 100, (const uint8_t *)"a\xe2", 2,
					   &line, &len),
			 0);
	j = line_json(line, len, &used);
	assert_int_equal(used, len);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "stdout");
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 100);
	assert_string_equal(json_string_value(json_object_get(j, "data")), "a");
	json_decref(j);
	free(line);
	/* The rest of it: one text event from seq 101. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 102, euro + 1, 2, &line, &len), 0);
	j = line_json(line, len, &used);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 101);
	assert_string_equal(json_string_value(json_object_get(j, "data")), "\xe2\x82\xac");
	json_decref(j);
	free(line);
	/* A cut character, then the other stream: the held byte goes first (base64), seq order kept. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 104, euro, 1, &line, &len), 0);
	assert_null(line);
	assert_int_equal(proc_event_output(&enc, AGENT_STDERR, 105, (const uint8_t *)"err", 3,
					   &line, &len),
			 0);
	j = line_json(line, len, &used);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 104);
	assert_string_equal(json_string_value(json_object_get(j, "data_base64")), "4g==");
	json_decref(j);
	j = line_json(line + used, len - used, &used);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "stderr");
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 105);
	assert_string_equal(json_string_value(json_object_get(j, "data")), "err");
	json_decref(j);
	free(line);
	/* Binary output is base64. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 108, (const uint8_t *)"\xff\x00", 2,
					   &line, &len),
			 0);
	j = line_json(line, len, &used);
	assert_string_equal(json_string_value(json_object_get(j, "data_base64")), "/wA=");
	json_decref(j);
	free(line);
	/* A held byte goes out before a gap. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 110, euro, 2, &line, &len), 0);
	assert_null(line);
	line = proc_event_gap(&enc, 112, 5000, &len);
	j = line_json(line, len, &used);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 110);
	assert_string_equal(json_string_value(json_object_get(j, "data_base64")), "4oI=");
	json_decref(j);
	j = line_json(line + used, len - used, &used);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "gap");
	assert_int_equal(json_integer_value(json_object_get(j, "bytes")), 5000);
	json_decref(j);
	free(line);
}

static void test_exit_and_view(void **state)
{
	struct kiln_exit_status ex = {
		.size = sizeof(ex), .id = 3, .pid = 64, .exit_code = -1, .signal = 15, .wall_us = 7
	};
	struct kiln_proc_info a = {
		.size = sizeof(a), .id = 3, .pid = 64, .pty = 1, .running = 1, .seq = 17
	};
	const char *argv[] = { "sleep", "100" };
	struct kiln_proc_entry p = { .size = sizeof(p),
				     .id = 3,
				     .pid = 64,
				     .argv = argv,
				     .argc = 2,
				     .running = 0,
				     .exit_code = -1,
				     .signal = 15,
				     .seq = 9,
				     .attached = 1 };
	struct proc_out_enc enc;
	size_t len, used;
	char *line, *s;
	json_t *j;

	(void)state;
	proc_out_enc_init(&enc, true);
	line = proc_event_exit(&enc, &ex, &len);
	j = line_json(line, len, &used);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "exit");
	assert_true(json_is_null(json_object_get(j, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(j, "signal")), 15);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 3);
	json_decref(j);
	free(line);
	line = proc_event_attached(&a, &len);
	assert_string_equal(
		line,
		"{\"type\":\"attached\",\"id\":3,\"pid\":64,\"pty\":true,\"running\":true,\"seq\":17}\n");
	free(line);
	j = proc_render_view(&p);
	s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(
		s,
		"{\"id\":3,\"pid\":64,\"argv\":[\"sleep\",\"100\"],\"pty\":false,\"running\":false,"
		"\"exit_code\":null,\"signal\":15,\"timed_out\":false,\"output_bytes\":9,\"attached\":1}");
	free(s);
	json_decref(j);
	p.signal = 0;
	p.exit_code = 0;
	j = proc_render_view(&p);
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 0);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_events),
		cmocka_unit_test(test_exit_and_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
