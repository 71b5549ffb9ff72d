/*
 * Unit tests of api/kiln/cli_getopt.c: the kiln CLI's option parser:
 * global options anywhere among a command's words, --request-timeout and
 * KILN_REQUEST_TIMEOUT, and the exact usage error of each mistake.
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

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_getopt.h"
#include "tests/unit/argv.h"

static void test_getopt_globals_anywhere(void **state)
{
	static const struct option opts[] = { { "cpus", required_argument, NULL, CLI_OPT_LONG },
					      CLI_GLOBAL_OPTIONS };
	struct cli_globals g = { .socket = "/default" };
	char **av = ARGV("create", "--json", "--cpus=2", "--socket", "/s", "pos", "-", "--",
			 "--cpus");
	struct cli_getopt s;
	struct err e;

	(void)state;
	cli_getopt_init(&s, 9, av, opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_OPT_LONG);
	assert_string_equal(s.value, "2");
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_WORD);
	assert_string_equal(s.value, "pos");
	assert_true(g.json);
	assert_string_equal(g.socket, "/s");
	/* A lone "-" is an operand (stdin), not an option. */
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_WORD);
	assert_string_equal(s.value, "-");
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_REST);
	assert_int_equal(s.next, 8);
	assert_string_equal(s.argv[s.next], "--cpus");
	/* What follows "--" is never read as an option. */
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_DONE);
	/* Nothing permuted: getopt left the words where they were. */
	assert_string_equal(av[5], "pos");
	assert_string_equal(av[8], "--cpus");
}

static void test_getopt_errors(void **state)
{
	static const struct option opts[] = { { "cpus", required_argument, NULL, 'c' },
					      { "stream", no_argument, NULL, CLI_OPT_LONG },
					      { "stdin", no_argument, NULL, 'i' },
					      CLI_GLOBAL_OPTIONS };
	struct cli_globals g = { 0 };
	struct cli_getopt s;
	struct err e;

	(void)state;
	cli_getopt_init(&s, 2, ARGV("x", "--cpux"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_string_equal(e.msg, "unknown option '--cpux'");
	cli_getopt_init(&s, 2, ARGV("x", "-q"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_string_equal(e.msg, "unknown option '-q'");
	/* The word as written when it is an option's, else its letter. */
	cli_getopt_init(&s, 2, ARGV("x", "--cpus"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_string_equal(e.msg, "option '--cpus' needs a value");
	cli_getopt_init(&s, 2, ARGV("x", "-ic"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), 'i');
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_string_equal(e.msg, "option '-c' needs a value");
	cli_getopt_init(&s, 2, ARGV("x", "--stream=yes"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_string_equal(e.msg, "option '--stream' takes no value");
	/* An abbreviation that fits two names names them. */
	cli_getopt_init(&s, 2, ARGV("x", "--st"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_string_equal(e.msg, "ambiguous option '--st' (--stream, --stdin)");
	cli_getopt_init(&s, 2, ARGV("x", "--socket="), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_string_equal(e.msg, "--socket: empty path");
	/* A value may start with '-': it is the option's, whatever it looks like. */
	cli_getopt_init(&s, 3, ARGV("x", "--cpus", "--json"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), 'c');
	assert_string_equal(s.value, "--json");
	assert_false(g.json);
	/* "--" as a value is not the end of the options. */
	cli_getopt_init(&s, 4, ARGV("x", "-c", "--", "w"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), 'c');
	assert_string_equal(s.value, "--");
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_WORD);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_DONE);
	/* --help ends the reading with no message, and says so in g. */
	cli_getopt_init(&s, 3, ARGV("x", "-h", "--cpus"), opts, &g, &e);
	assert_int_equal(cli_getopt_next(&s), CLI_GETOPT_ERROR);
	assert_true(g.help);
	assert_string_equal(e.msg, "");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_getopt_globals_anywhere),
		cmocka_unit_test(test_getopt_errors),
		cmocka_unit_test(test_timeout_option),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
