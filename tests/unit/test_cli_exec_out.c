/*
 * Unit tests of api/kiln/cli_exec_out.c: an exec's result (docs/api.md,
 * POST .../exec) turned into our stdout, stderr and exit status: the
 * buffered JSON object, and the NDJSON stream split into lines and applied
 * event by event.
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

#include "api/kiln/cli_error.h"
#include "api/kiln/cli_exec_out.h"

struct sink {
	char out[2][256];
	size_t len[2];
	int fail; /* -errno to return from writes */
};

static int sink_write(void *arg, int fd, const void *p, size_t n)
{
	struct sink *s = arg;

	assert_true(fd == 1 || fd == 2);
	if (s->fail)
		return s->fail;
	assert_true(s->len[fd - 1] + n < sizeof(s->out[0]));
	memcpy(s->out[fd - 1] + s->len[fd - 1], p, n);
	s->len[fd - 1] += n;
	s->out[fd - 1][s->len[fd - 1]] = 0;
	return 0;
}

static void test_exec_status(void **state)
{
	json_t *r;

	(void)state;
	r = json_pack("{s:i, s:n, s:b}", "exit_code", 3, "signal", "timed_out", 0);
	assert_int_equal(cli_exec_status(r), 3);
	json_decref(r);
	r = json_pack("{s:n, s:i, s:b}", "exit_code", "signal", 9, "timed_out", 0);
	assert_int_equal(cli_exec_status(r), 137);
	json_decref(r);
	r = json_pack("{s:i, s:n, s:b}", "exit_code", 124, "signal", "timed_out", 1);
	assert_int_equal(cli_exec_status(r), 124);
	json_decref(r);
	/* Out of range from a broken daemon: not an exit status to pass on. */
	r = json_pack("{s:i, s:i}", "exit_code", 256, "signal", 200);
	assert_int_equal(cli_exec_status(r), -1);
	json_decref(r);
	assert_int_equal(cli_exec_status(NULL), -1);
}

static void test_exec_result_decodes(void **state)
{
	struct sink s = { 0 };
	struct cli_fail f;
	int status = -1;
	json_t *r;

	(void)state;
	/* "\xff\x00A" as base64 is "/wBB". */
	r = json_pack("{s:i, s:n, s:s, s:s, s:s, s:s, s:b, s:b, s:i}", "exit_code", 3, "signal",
		      "stdout", "got\n", "stdout_encoding", "utf-8", "stderr", "/wBB",
		      "stderr_encoding", "base64", "stdout_truncated", 1, "stderr_truncated", 0,
		      "stdout_bytes", 99);
	assert_int_equal(cli_exec_result(r, sink_write, &s, &status, &f), 0);
	assert_int_equal(status, 3);
	assert_string_equal(s.out[0], "got\n");
	assert_int_equal(s.len[1] > 3, 1);
	assert_memory_equal(s.out[1],
			    "\xff\x00"
			    "A",
			    3);
	assert_non_null(strstr(s.out[1] + 3, "stdout truncated: the process wrote 99 bytes"));
	json_decref(r);

	r = json_pack("{s:i, s:s, s:s, s:s, s:s}", "exit_code", 0, "stdout", "not base64!",
		      "stdout_encoding", "base64", "stderr", "", "stderr_encoding", "utf-8");
	assert_int_equal(cli_exec_result(r, sink_write, &s, &status, &f), -1);
	assert_string_equal(f.msg, "kilnd sent output that is not valid base64");
	json_decref(r);

	r = json_pack("{s:i, s:s, s:s}", "exit_code", 0, "stdout", "x", "stdout_encoding",
		      "latin1");
	assert_int_equal(cli_exec_result(r, sink_write, &s, &status, &f), -1);
	json_decref(r);

	struct sink broken = { .fail = -EPIPE };
	r = json_pack("{s:i, s:s, s:s, s:s, s:s}", "exit_code", 0, "stdout", "x", "stdout_encoding",
		      "utf-8", "stderr", "", "stderr_encoding", "utf-8");
	assert_int_equal(cli_exec_result(r, sink_write, &broken, &status, &f), -1);
	assert_string_equal(f.msg, "writing the process's stdout: Broken pipe");
	json_decref(r);
}

static int feed_all(struct cli_ndjson *n, const char *s, size_t chunk)
{
	size_t len = strlen(s);

	for (size_t i = 0; i < len; i += chunk)
		if (cli_ndjson_feed(n, s + i, len - i < chunk ? len - i : chunk))
			return -1;
	return 0;
}

static void test_ndjson_stream(void **state)
{
	const char *stream =
		"{\"type\":\"stdout\",\"data\":\"got hello\\n\"}\n"
		"{\"type\":\"stderr\",\"data_base64\":\"/wBB\"}\n"
		"{\"type\":\"progress\",\"future\":true}\n"
		"\n"
		"{\"type\":\"exit\",\"exit_code\":null,\"signal\":15,\"timed_out\":false}\n";

	(void)state;
	/* Every split of the bytes gives the same result: lines are joined
	 * across reads however curl cuts them. */
	for (size_t chunk = 1; chunk <= strlen(stream); chunk++) {
		struct sink s = { 0 };
		struct cli_ndjson n;

		cli_ndjson_init(&n, sink_write, &s);
		assert_int_equal(feed_all(&n, stream, chunk), 0);
		assert_int_equal(cli_ndjson_end(&n), 0);
		assert_int_equal(n.status, 143);
		assert_string_equal(s.out[0], "got hello\n");
		assert_int_equal(s.len[1], 3);
		cli_ndjson_free(&n);
	}
}

static void test_ndjson_failures(void **state)
{
	struct sink s = { 0 };
	struct cli_ndjson n;

	(void)state;
	/* Cut off before the exit event: never a success. */
	cli_ndjson_init(&n, sink_write, &s);
	assert_int_equal(feed_all(&n, "{\"type\":\"stdout\",\"data\":\"a\"}\n", 7), 0);
	assert_int_equal(cli_ndjson_end(&n), -1);
	assert_non_null(strstr(n.fail.msg, "without an exit event"));
	cli_ndjson_free(&n);

	cli_ndjson_init(&n, sink_write, &s);
	assert_int_equal(feed_all(&n, "{\"type\":\"stdout\",\"da", 4), 0);
	assert_int_equal(cli_ndjson_end(&n), -1);
	assert_non_null(strstr(n.fail.msg, "ended inside an event"));
	cli_ndjson_free(&n);

	/* The error event's code decides the status. */
	cli_ndjson_init(&n, sink_write, &s);
	assert_int_equal(
		feed_all(&n,
			 "{\"type\":\"error\",\"error\":{\"code\":\"agent_unavailable\",\"message\":\"VM gone\"}}\n",
			 1000),
		-1);
	assert_int_equal(cli_ndjson_end(&n), -1);
	assert_string_equal(n.fail.code, "agent_unavailable");
	assert_string_equal(n.fail.msg, "failed after output was sent: VM gone");
	assert_int_equal(n.fail.exit, CLI_EXIT_API);
	cli_ndjson_free(&n);

	cli_ndjson_init(&n, sink_write, &s);
	assert_int_equal(feed_all(&n, "not json\n", 100), -1);
	cli_ndjson_free(&n);

	/* A key given twice is refused, not read as its last value (which
	 * would make this a successful exit, and another reader a stdout). */
	cli_ndjson_init(&n, sink_write, &s);
	assert_int_equal(
		feed_all(&n,
			 "{\"type\":\"stdout\",\"data\":\"a\",\"type\":\"exit\",\"exit_code\":0}\n",
			 100),
		-1);
	assert_int_equal(cli_ndjson_end(&n), -1);
	assert_string_equal(
		n.fail.msg,
		"kilnd sent a stream line that is not JSON (duplicate object key near '\"type\"')");
	assert_int_equal(n.fail.exit, CLI_EXIT_API);
	cli_ndjson_free(&n);

	cli_ndjson_init(&n, sink_write, &s);
	assert_int_equal(
		feed_all(&n,
			 "{\"type\":\"exit\",\"exit_code\":0}\n{\"type\":\"stdout\",\"data\":\"late\"}\n",
			 100),
		-1);
	assert_string_equal(n.fail.msg, "kilnd sent bytes after the last event");
	cli_ndjson_free(&n);

	cli_ndjson_init(&n, sink_write, &s);
	assert_int_equal(feed_all(&n, "{\"type\":\"stdout\"}\n", 100), -1);
	assert_string_equal(n.fail.msg, "kilnd sent a stdout event without data");
	cli_ndjson_free(&n);

	/* A line without end cannot make the client buffer without end. */
	{
		size_t big = 1 << 20;
		char *junk = malloc(big);

		memset(junk, 'x', big);
		cli_ndjson_init(&n, sink_write, &s);
		int rc = 0;
		for (size_t total = 0; !rc && total <= CLI_NDJSON_LINE_MAX; total += big)
			rc = cli_ndjson_feed(&n, junk, big);
		assert_int_equal(rc, -1);
		assert_true(n.cap <= CLI_NDJSON_LINE_MAX);
		assert_string_equal(n.fail.msg, "kilnd sent a stream line over 16 MiB");
		cli_ndjson_free(&n);
		free(junk);
	}
}

/* --- output streams read up to a seq (kiln logs) --- */

struct outbuf {
	char s[2][512];
	size_t n[2];
};

static int collect(void *arg, int fd, const void *p, size_t n)
{
	struct outbuf *o = arg;

	assert_true(fd == 1 || fd == 2);
	assert_true(o->n[fd - 1] + n < sizeof(o->s[0]));
	memcpy(o->s[fd - 1] + o->n[fd - 1], p, n);
	o->n[fd - 1] += n;
	o->s[fd - 1][o->n[fd - 1]] = 0;
	return 0;
}

static void test_ndjson_until(void **state)
{
	struct cli_ndjson n;
	struct outbuf o = { 0 };
	const char *s = "{\"type\":\"attached\",\"id\":1,\"seq\":0}\n"
			"{\"type\":\"stdout\",\"seq\":0,\"data_base64\":\"aGk=\"}\n"
			"{\"type\":\"gap\",\"seq\":2,\"bytes\":3}\n"
			"{\"type\":\"stderr\",\"seq\":5,\"data_base64\":\"eHl6\"}\n";

	(void)state;
	cli_ndjson_init(&n, collect, &o);
	n.who = "logs";
	n.until = true;
	n.until_seq = 8;
	/* Fed a byte at a time: lines are whole before they count. */
	for (size_t i = 0; i < strlen(s) && !n.reached; i++)
		assert_int_equal(cli_ndjson_feed(&n, s + i, 1), 0);
	assert_true(n.reached);
	assert_true(n.done);
	assert_int_equal(n.status, 0);
	assert_string_equal(o.s[0], "hi");
	assert_string_equal(
		o.s[1],
		"kiln: logs: gap: 3 bytes of output were lost (overwritten in the ring before they "
		"were read)\nxyz");
	cli_ndjson_free(&n);

	/* Nothing new since the mark: the attached event says so. */
	memset(&o, 0, sizeof(o));
	cli_ndjson_init(&n, collect, &o);
	n.until = true;
	n.until_seq = 10;
	assert_int_equal(cli_ndjson_feed(&n, "{\"type\":\"attached\",\"seq\":10}\n", 29), 0);
	assert_true(n.reached);
	assert_int_equal(o.n[0], 0);
	cli_ndjson_free(&n);

	/* An exited process's stream ends with exit before the mark; a
	 * stream of exec's truncated at output_cap is said on stderr. */
	memset(&o, 0, sizeof(o));
	cli_ndjson_init(&n, collect, &o);
	s = "{\"type\":\"exit\",\"exit_code\":3,\"signal\":null,\"timed_out\":false,\"stdout_bytes\":9,"
	    "\"stdout_truncated\":true}\n";
	assert_int_equal(cli_ndjson_feed(&n, s, strlen(s)), 0);
	assert_int_equal(cli_ndjson_end(&n), 0);
	assert_int_equal(n.status, 3);
	assert_string_equal(o.s[1],
			    "kiln: exec: stdout truncated at output_cap: the process wrote 9 bytes\n");
	cli_ndjson_free(&n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_status),   cmocka_unit_test(test_exec_result_decodes),
		cmocka_unit_test(test_ndjson_stream), cmocka_unit_test(test_ndjson_failures),
		cmocka_unit_test(test_ndjson_until),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
