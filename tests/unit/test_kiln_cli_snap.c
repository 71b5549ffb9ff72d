/*
 * The kiln CLI's checkpoint, restore and fork command lines: every form
 * parses to the request kilnd expects, and each wrong one is refused with
 * its own message before anything is sent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kiln/cli_body.h"

/* argc and argv as getopt takes them: argv[0] is the command's name. */
#define ARGS(...)                                                         \
	(sizeof((char *[]){ "kiln-cmd", __VA_ARGS__ }) / sizeof(char *)), \
		((char *[]){ "kiln-cmd", __VA_ARGS__ })

static void test_checkpoint_forms(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_snap_req r;
	struct err e;

	(void)state;
	assert_int_equal(cli_checkpoint_parse(ARGS("abc123", "before"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_SNAP_ADD);
	assert_string_equal(r.id, "abc123");
	assert_string_equal(r.name, "before");
	assert_false(r.compress);
	assert_int_equal(cli_checkpoint_parse(ARGS("add", "abc123", "v1.2_x-y", "--compress"), &g,
					      &r, &e),
			 0);
	assert_int_equal(r.op, CLI_SNAP_ADD);
	assert_true(r.compress);
	assert_int_equal(cli_checkpoint_parse(ARGS("ls", "abc123", "--json"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_SNAP_LS);
	assert_true(g.json);
	assert_int_equal(cli_checkpoint_parse(ARGS("rm", "abc123", "before"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_SNAP_RM);
	assert_string_equal(r.name, "before");
}

static void test_checkpoint_refused(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_snap_req r;
	struct err e;
	char long_name[80];

	(void)state;
	assert_int_equal(cli_checkpoint_parse(ARGS("abc123"), &g, &r, &e), -1);
	assert_non_null(strstr(e.msg, "NAME"));
	assert_int_equal(cli_checkpoint_parse(ARGS("ls"), &g, &r, &e), -1);
	assert_int_equal(cli_checkpoint_parse(ARGS("ls", "a", "b"), &g, &r, &e), -1);
	assert_int_equal(cli_checkpoint_parse(ARGS("rm", "abc", "x", "--compress"), &g, &r, &e),
			 -1);
	assert_non_null(strstr(e.msg, "--compress"));
	assert_int_equal(cli_checkpoint_parse(ARGS("abc", "../etc"), &g, &r, &e), -1);
	assert_int_equal(cli_checkpoint_parse(ARGS("a/b", "x"), &g, &r, &e), -1);
	assert_int_equal(cli_checkpoint_parse(ARGS("abc", "x", "--frob"), &g, &r, &e), -1);
	memset(long_name, 'n', 65);
	long_name[65] = 0;
	assert_int_equal(cli_checkpoint_parse(ARGS("abc", long_name), &g, &r, &e), -1);
	long_name[64] = 0;
	assert_int_equal(cli_checkpoint_parse(ARGS("abc", long_name), &g, &r, &e), 0);
}

static void test_restore(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_snap_req r;
	struct err e;

	(void)state;
	assert_int_equal(cli_restore_parse(ARGS("abc", "cp1"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_SNAP_RESTORE);
	assert_string_equal(r.name, "cp1");
	assert_int_equal(cli_restore_parse(ARGS("abc"), &g, &r, &e), -1);
	assert_int_equal(cli_restore_parse(ARGS("abc", "cp1", "more"), &g, &r, &e), -1);
	assert_int_equal(cli_restore_parse(ARGS("abc", "c p"), &g, &r, &e), -1);
}

static void test_fork(void **state)
{
	struct cli_globals g = { 0 };
	struct err e;
	json_t *b;

	(void)state;
	assert_int_equal(cli_fork_body(ARGS("abc/cp1", "--hostname", "w1", "--label", "k=v", "-e",
					    "A=1"),
				       &g, &b, &e),
			 0);
	assert_string_equal(json_string_value(json_object_get(b, "from_checkpoint")), "abc/cp1");
	assert_string_equal(json_string_value(json_object_get(b, "hostname")), "w1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "labels"), "k")),
			    "v");
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "env"), "A")),
			    "1");
	json_decref(b);
	assert_int_equal(cli_fork_body(ARGS("abc"), &g, &b, &e), -1);
	assert_non_null(strstr(e.msg, "ID/NAME"));
	assert_null(b);
	assert_int_equal(cli_fork_body(ARGS("/cp1"), &g, &b, &e), -1);
	assert_int_equal(cli_fork_body(ARGS("abc/"), &g, &b, &e), -1);
	assert_int_equal(cli_fork_body(ARGS("abc/cp1", "abc/cp2"), &g, &b, &e), -1);
	assert_int_equal(cli_fork_body(ARGS("abc/cp1", "--label", "novalue"), &g, &b, &e), -1);
	assert_int_equal(cli_fork_body(ARGS(), &g, &b, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint_forms),
		cmocka_unit_test(test_checkpoint_refused),
		cmocka_unit_test(test_restore),
		cmocka_unit_test(test_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
