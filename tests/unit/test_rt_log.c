/*
 * api/runtime/rt_log.c: --log lines as runc (logrus) writes them, which
 * containerd and Podman read back (the last error line's msg is the
 * error they report); hostile messages stay one line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/runtime/rt_log.h"
#include "lib/base/json.h"

static char line[RT_LOG_LINE_MAX];

static void test_time(void **state)
{
	char t[RT_LOG_TIME_MAX];
	struct timespec ts = { 1795947309, 0 }; /* 2026-11-29T10:15:09Z */

	(void)state;
	rt_log_time(t, &ts, false);
	assert_string_equal(t, "2026-11-29T10:15:09Z");
	rt_log_time(t, &ts, true);
	assert_string_equal(t, "2026-11-29T10:15:09Z"); /* Go drops a zero fraction */
	ts.tv_nsec = 500000000;
	rt_log_time(t, &ts, true);
	assert_string_equal(t, "2026-11-29T10:15:09.5Z");
	ts.tv_nsec = 123456789;
	rt_log_time(t, &ts, true);
	assert_string_equal(t, "2026-11-29T10:15:09.123456789Z");
	ts.tv_nsec = 1000;
	rt_log_time(t, &ts, true);
	assert_string_equal(t, "2026-11-29T10:15:09.000001Z");
	rt_log_time(t, &ts, false);
	assert_string_equal(t, "2026-11-29T10:15:09Z");
}

static void test_json(void **state)
{
	json_t *j;
	int n;

	(void)state;
	n = rt_log_line(line, sizeof(line), RT_LOG_JSON, RT_LOG_ERROR, "2026-11-29T10:15:09Z",
			"container not running");

	assert_int_equal(n, strlen(line));
	assert_string_equal(line,
			    "{\"level\":\"error\",\"msg\":\"container not running\","
			    "\"time\":\"2026-11-29T10:15:09Z\"}\n");
	/* quotes, backslashes, a newline and ESC: JSON that reads back as one line */
	rt_log_line(line, sizeof(line), RT_LOG_JSON, RT_LOG_WARNING, "t",
		    "exec: \"a\\b\"\nlevel=error \x1b[31m");
	assert_int_equal(strchr(line, '\n') - line, (long)strlen(line) - 1);
	j = json_strict_loads(line, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "msg")),
			    "exec: \"a\\b\"?level=error ?[31m");
	assert_string_equal(json_string_value(json_object_get(j, "level")), "warning");
	json_decref(j);
	/* bytes that are not UTF-8 become '?', so the line stays JSON */
	rt_log_line(line, sizeof(line), RT_LOG_JSON, RT_LOG_DEBUG, "t", "bad \xff\xfe end");
	j = json_strict_loads(line, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "msg")), "bad ?? end");
	json_decref(j);
}

static void test_text(void **state)
{
	(void)state;
	rt_log_line(line, sizeof(line), RT_LOG_TEXT, RT_LOG_ERROR, "2026-11-29T10:15:09Z",
		    "container \"c1\" does not exist");
	assert_string_equal(line,
			    "time=\"2026-11-29T10:15:09Z\" level=error "
			    "msg=\"container \\\"c1\\\" does not exist\"\n");
	/* logrus leaves a plain word unquoted */
	rt_log_line(line, sizeof(line), RT_LOG_TEXT, RT_LOG_INFO, "t", "started/c1@x+y^z-1.2_3");
	assert_string_equal(line, "time=\"t\" level=info msg=started/c1@x+y^z-1.2_3\n");
	rt_log_line(line, sizeof(line), RT_LOG_TEXT, RT_LOG_INFO, "t", "");
	assert_string_equal(line, "time=\"t\" level=info msg=\"\"\n");
	rt_log_line(line, sizeof(line), RT_LOG_TEXT, RT_LOG_DEBUG, "t", "a\nb");
	assert_string_equal(line, "time=\"t\" level=debug msg=\"a?b\"\n");
	assert_string_equal(rt_log_level_name((enum rt_log_level)9), "error");
}

/* The longest message, every byte escaped: the line still fits, ends in
 * a newline and is cut at the message's bound. */
static void test_bounds(void **state)
{
	char *msg = malloc(8192);
	char small[64];
	json_t *j;

	(void)state;
	memset(msg, '"', 8191);
	msg[8191] = '\0';
	assert_true(rt_log_line(line, sizeof(line), RT_LOG_JSON, RT_LOG_ERROR, msg, msg) > 0);
	j = json_strict_loads(line, NULL);
	assert_non_null(j);
	assert_int_equal(strlen(json_string_value(json_object_get(j, "msg"))), ERR_MSG_MAX - 1);
	json_decref(j);
	assert_true(rt_log_line(line, sizeof(line), RT_LOG_TEXT, RT_LOG_ERROR, msg, msg) > 0);
	assert_int_equal(line[strlen(line) - 1], '\n');
	assert_int_equal(rt_log_line(small, sizeof(small), RT_LOG_TEXT, RT_LOG_ERROR, "t", "m"),
			 -ENOSPC);
	free(msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
