/*
 * kiln CLI against a kilnd that misbehaves and a user who mistypes (issue
 * 18): the --request-timeout option and the limits it gives each request,
 * the shape checks of kilnd's answers, the socket path that no Unix
 * socket address holds, rule set files that cannot be read, and user input
 * cut before it is echoed. build/kiln itself against silent and wrong
 * servers: tests/unit/kiln_cli_socket_test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_error.h"
#include "api/kiln/cli_getopt.h"

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

static char *big_word(size_t n, const char *prefix)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, 'x', n);
	s[n] = 0;
	memcpy(s, prefix, strlen(prefix));
	return s;
}

static void test_timeout_option(void **state)
{
	struct cli_globals g = { .timeout_s = CLI_TIMEOUT_DEFAULT };
	struct cli_getopt s;
	char **argv = ARGV("kiln", "ls", "--request-timeout", "5", "--json");
	unsigned long t = 7;
	struct err e;

	(void)state;
	/* A global option: anywhere among the command's words. */
	cli_getopt_init(&s, 5, argv, cli_global_options, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_WORD);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_DONE);
	assert_int_equal(g.timeout_s, 5);
	assert_true(g.json);
	cli_getopt_init(&s, 2, ARGV("ls", "--request-timeout=0"), cli_global_options, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_DONE);
	assert_int_equal(g.timeout_s, 0);
	/* Not whole seconds in range: a usage error naming the option. */
	static const char *const bad[] = { "x",   "-1", "+5",     " 5",
					   "1.5", "",   "604801", "99999999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *a[] = { "ls", "--request-timeout", (char *)bad[i], NULL };

		g.timeout_s = 9;
		cli_getopt_init(&s, 3, a, cli_global_options, &g, &e);
		assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
		assert_non_null(strstr(e.msg, "--request-timeout '"));
		assert_non_null(strstr(e.msg, "0..604800 (0: no limit)"));
		assert_int_equal(g.timeout_s, 9);
	}
	cli_getopt_init(&s, 2, ARGV("ls", "--request-timeout"), cli_global_options, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_string_equal(e.msg, "option '--request-timeout' needs a value");
	/* The environment's spelling names the variable. */
	assert_int_equal(cli_timeout_parse("12", "KILN_REQUEST_TIMEOUT", &t, &e), 0);
	assert_int_equal(t, 12);
	assert_int_equal(cli_timeout_parse("soon", "KILN_REQUEST_TIMEOUT", &t, &e), -1);
	assert_string_equal(
		e.msg,
		"KILN_REQUEST_TIMEOUT 'soon': expected whole seconds 0..604800 (0: no limit)");
	assert_int_equal(t, 12);
	/* create's own --timeout (the sandbox's lifetime) stays create's. */
	{
		json_t *b;

		g.timeout_s = 30;
		assert_int_equal(cli_create_body(3, ARGV("create", "--timeout", "600"), &g, &b, &e),
				 0);
		assert_int_equal(json_integer_value(json_object_get(b, "timeout_s")), 600);
		assert_int_equal(g.timeout_s, 30);
		json_decref(b);
	}
}

static void test_answer_limits(void **state)
{
	struct cli_proc_req p;
	struct err e;

	(void)state;
	/* The base alone, the base plus the request's own time, or none. */
	assert_int_equal(cli_answer_ms(30, 0), 30000);
	assert_int_equal(cli_answer_ms(30, CLI_WAIT_BOOT), 90000);
	assert_int_equal(cli_answer_ms(1, CLI_WAIT_SNAPSHOT), 661000);
	assert_int_equal(cli_answer_ms(0, CLI_WAIT_BOOT), 0);
	assert_int_equal(cli_answer_ms(30, CLI_WAIT_UNBOUNDED), 0);
	assert_int_equal(cli_answer_ms(CLI_TIMEOUT_MAX, 604800 + CLI_WAIT_BOOT),
			 (long long)(CLI_TIMEOUT_MAX + 604800 + CLI_WAIT_BOOT) * 1000);
	/* A process's timeout, rounded up; without one the wait is unbounded:
	 * an exec of `sleep 3600` must not be cut by kiln. */
	assert_int_equal(cli_wait_for_ms(0, CLI_WAIT_BOOT), CLI_WAIT_UNBOUNDED);
	assert_int_equal(cli_wait_for_ms(1, 0), 1);
	assert_int_equal(cli_wait_for_ms(1000, 0), 1);
	assert_int_equal(cli_wait_for_ms(1500, CLI_WAIT_BOOT), 62);
	assert_int_equal(cli_wait_for_ms(604800000ULL, 0), 604800);
	/* kiln wait: its --timeout-ms, else as long as the process runs. */
	struct cli_globals g = { 0 };
	assert_int_equal(cli_proc_parse("wait", 3, ARGV("wait", "abc", "1"), &g, &p, &e), 0);
	assert_int_equal(p.wait_s, CLI_WAIT_UNBOUNDED);
	assert_int_equal(cli_proc_parse("wait", 5, ARGV("wait", "abc", "1", "--timeout-ms", "1500"),
					&g, &p, &e),
			 0);
	assert_int_equal(p.wait_s, 2);
	assert_int_equal(cli_proc_parse("wait", 5, ARGV("wait", "abc", "1", "--timeout-ms", "0"),
					&g, &p, &e),
			 0);
	assert_int_equal(p.wait_s, CLI_WAIT_UNBOUNDED);
	assert_int_equal(cli_proc_parse("kill", 3, ARGV("kill", "abc", "1"), &g, &p, &e), 0);
	assert_int_equal(p.wait_s, 0);
	json_decref(p.body);
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

static void test_echo_cut(void **state)
{
	char *big = big_word(100000, "--"), buf[CLI_ECHO_BUF];
	struct err e;
	struct cli_globals g = { 0 };
	struct cli_getopt s;
	json_t *o = json_object();
	char *a[] = { "inspect", big, NULL };

	(void)state;
	assert_string_equal(cli_echo(buf, "short"), "short");
	/* Exactly the limit: not cut. */
	big[CLI_ECHO_MAX] = 0;
	assert_int_equal(strlen(cli_echo(buf, big)), CLI_ECHO_MAX);
	big[CLI_ECHO_MAX] = 'x';
	assert_int_equal(strlen(cli_echo(buf, big)), CLI_ECHO_MAX + 3);
	assert_string_equal(buf + CLI_ECHO_MAX, "...");
	/* Controls never reach the terminal; a character is never split. */
	assert_string_equal(cli_echo(buf, "a\x1b[2Jb\n"), "a?[2Jb?");
	{
		char u[2 * CLI_ECHO_MAX + 3] = { 0 };

		for (size_t i = 0; i + 1 < sizeof(u) - 1; i += 2)
			memcpy(u + i, "\xc3\xa9", 2);
		cli_echo(buf, u);
		assert_int_equal(strlen(buf), CLI_ECHO_MAX + 3);
		assert_memory_equal(buf + CLI_ECHO_MAX - 2, "\xc3\xa9...", 5);
	}
	/* A 100 KB unknown option: one short line. */
	cli_getopt_init(&s, 2, a, cli_global_options, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_int_equal(strlen(e.msg), strlen("unknown option ''") + CLI_ECHO_MAX + 3);
	assert_non_null(strstr(e.msg, "xxx...'"));
	/* Values too: --env, a sandbox id, a number. */
	memcpy(big, "KEY", 3);
	assert_int_not_equal(cli_put_kv(o, big + 3, false, "--env", &e), 0);
	assert_true(strlen(e.msg) < 2 * CLI_ECHO_MAX);
	assert_int_equal(cli_one_id(2, a, &g, buf, &e), -1);
	assert_true(strlen(e.msg) < 2 * CLI_ECHO_MAX);
	memcpy(big, "12", 2);
	json_decref(o);
	assert_int_equal(cli_create_body(3, ARGV("create", "--cpus", big), &g, &o, &e), -1);
	assert_true(strlen(e.msg) < 2 * CLI_ECHO_MAX);
	assert_non_null(strstr(e.msg, "...': expected a whole number"));
	free(big);
}

static void test_firewall_file(void **state)
{
	char path[] = "/tmp/kiln-fw-limits-XXXXXX";
	struct err e;
	struct cli_globals g = { 0 };
	json_t *j = NULL, *b = NULL;
	int fd;

	(void)state;
	/* A file that cannot be read: strerror, no JSON line number. */
	assert_int_equal(cli_firewall_load("/nonexistent/rules.json", &j, &e), -ENOENT);
	assert_null(j);
	assert_string_equal(e.msg, "/nonexistent/rules.json: No such file or directory");
	assert_int_equal(cli_firewall_load("/", &j, &e), -EISDIR);
	assert_string_equal(e.msg, "/: Is a directory");
	assert_int_equal(cli_create_body(3, ARGV("create", "--firewall", "/nonexistent/rules.json"),
					 &g, &b, &e),
			 -1);
	assert_string_equal(e.msg, "--firewall /nonexistent/rules.json: No such file or directory");
	assert_null(strstr(e.msg, "line"));
	/* Bad JSON: its line. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\n\"allow\": [}\n", 14), 14);
	close(fd);
	assert_int_equal(cli_firewall_load(path, &j, &e), -EINVAL);
	assert_non_null(strstr(e.msg, ": not JSON: "));
	assert_non_null(strstr(e.msg, "(line 2)"));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{\"outbound_internet\": true}", 27), 27);
	close(fd);
	assert_int_equal(cli_firewall_load(path, &j, &e), 0);
	assert_true(json_is_true(json_object_get(j, "outbound_internet")));
	json_decref(j);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeout_option),   cmocka_unit_test(test_answer_limits),
		cmocka_unit_test(test_timeout_messages), cmocka_unit_test(test_socket_path),
		cmocka_unit_test(test_answer_shape),     cmocka_unit_test(test_echo_cut),
		cmocka_unit_test(test_firewall_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
