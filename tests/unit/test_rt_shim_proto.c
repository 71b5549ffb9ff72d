/*
 * api/runtime/rt_shim_proto.c: the lines between kiln-runtime's commands
 * and a container's shim: each request round trips, each odd spelling is
 * refused, replies carry the shim's message as one clean line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "api/runtime/rt_shim_proto.h"

static struct err e;

static void test_requests(void **state)
{
	static const struct rt_shim_req ok[] = {
		{ RT_SHIM_START, 0, false, 0, 0 },     { RT_SHIM_KILL, 15, false, 0, 0 },
		{ RT_SHIM_KILL, 9, true, 0, 0 },       { RT_SHIM_KILL, 0, false, 0, 0 },
		{ RT_SHIM_RESIZE, 0, false, 40, 120 }, { RT_SHIM_RESIZE, 0, false, 65535, 1 },
	};
	char line[RT_SHIM_LINE_MAX];
	struct rt_shim_req r;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t n = rt_shim_req_encode(&ok[i], line);

		assert_int_equal(rt_shim_req_decode(line, n, &r, &e), 0);
		assert_memory_equal(&r, &ok[i], sizeof(r));
	}
	assert_int_equal(rt_shim_req_encode(&ok[2], line), 11);
	assert_string_equal(line, "kill 9 all\n");
	static const char *const bad[] = {
		"",
		"start",
		"start \n",
		"start x\n",
		"kill\n",
		"kill 65\n",
		"kill -1\n",
		"kill 09\n",
		"kill 9 \n",
		"kill 9 al\n",
		"kill 9 all x\n",
		"kill  9\n",
		"resize 0 1\n",
		"resize 1\n",
		"resize 1 65536\n",
		"resize 1 2 \n",
		"stop\n",
		"start\nstart\n",
		"KILL 9\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		if (rt_shim_req_decode(bad[i], strlen(bad[i]), &r, &e) != -EINVAL)
			fail_msg("taken: \"%s\"", bad[i]);
		assert_non_null(strstr(e.msg, "the shim's request is not one of"));
	}
}

static void test_replies(void **state)
{
	char line[RT_SHIM_LINE_MAX], big[2 * ERR_MSG_MAX];
	size_t n;

	(void)state;
	n = rt_shim_reply_encode(NULL, line);
	assert_int_equal(rt_shim_reply_decode(line, n, &e), 0);
	n = rt_shim_reply_encode("container not running", line);
	assert_string_equal(line, "err container not running\n");
	assert_int_equal(rt_shim_reply_decode(line, n, &e), -EIO);
	assert_string_equal(e.msg, "container not running");
	/* the guest's words can hold anything: one clean line */
	n = rt_shim_reply_encode("exec: \"x\"\nlevel=error \x1b[2J", line);
	assert_int_equal(rt_shim_reply_decode(line, n, &e), -EIO);
	assert_string_equal(e.msg, "exec: \"x\"?level=error ?[2J");
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n = rt_shim_reply_encode(big, line);
	assert_int_equal(rt_shim_reply_decode(line, n, &e), -EIO);
	assert_int_equal(strlen(e.msg), ERR_MSG_MAX - 1);
	n = rt_shim_reply_encode("", line);
	assert_int_equal(rt_shim_reply_decode(line, n, &e), -EIO);
	/* the shim died: nothing came */
	assert_int_equal(rt_shim_reply_decode("", 0, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "ended without an answer"));
	assert_int_equal(rt_shim_reply_decode("ok", 2, &e), -EINVAL);
	assert_int_equal(rt_shim_reply_decode("okay\n", 5, &e), -EINVAL);
	assert_int_equal(rt_shim_reply_decode("err \n", 5, &e), -EINVAL);
	assert_int_equal(rt_shim_reply_decode("ok\nok\n", 6, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
