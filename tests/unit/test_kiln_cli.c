/*
 * kiln CLI, pure parts: command lines (getopt_long) into kilnd
 * request bodies, kilnd's errors into one line and an exit status, exec
 * results and NDJSON streams into output and exit statuses, and the
 * tables. Malformed and hostile answers from the "daemon" are fed in too:
 * a CLI must not trust the socket's other end more than kilnd trusts a
 * guest.
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

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_error.h"
#include "api/kiln/cli_exec_out.h"
#include "api/kiln/cli_format.h"
#include "api/kiln/cli_getopt.h"

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
}

static void assert_json(const json_t *v, const char *want)
{
	char *s = dump(v);

	assert_non_null(s);
	assert_string_equal(s, want);
	free(s);
}

/* --- getopt_long's reading, as every command sees it --- */

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

/* Each command's own messages for getopt's failures, its "--" and its order. */
static void test_command_lines(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_exec_req x;
	struct cli_cp_req cp;
	char q[256];
	struct err e;
	json_t *b;

	(void)state;
	/* A wrong flag, a missing value: getopt's failure, the command's line. */
	assert_int_equal(cli_create_body(2, ARGV("create", "--cpu-count"), &g, &b, &e), -1);
	assert_string_equal(e.msg, "unknown option '--cpu-count'");
	assert_int_equal(cli_exec_parse(3, ARGV("exec", "abc", "--user"), &g, &x, &e), -1);
	assert_string_equal(e.msg, "option '--user' needs a value");
	assert_int_equal(cli_list_query(2, ARGV("ls", "-x"), &g, q, sizeof(q), &e), -1);
	assert_string_equal(e.msg, "unknown option '-x'");
	/* Short options bundle and take their value attached, as getopt's do. */
	assert_int_equal(cli_exec_parse(5, ARGV("exec", "-iuroot", "abc", "--", "id"), &g, &x, &e),
			 0);
	assert_true(x.send_stdin);
	assert_string_equal(json_string_value(json_object_get(x.body, "user")), "root");
	json_decref(x.body);
	/* "--": create takes no words at all; ls neither. */
	assert_int_equal(cli_create_body(2, ARGV("create", "--"), &g, &b, &e), -1);
	assert_string_equal(e.msg, "unexpected '--' (create takes only options)");
	assert_int_equal(cli_list_query(2, ARGV("ls", "--"), &g, q, sizeof(q), &e), -1);
	assert_string_equal(e.msg, "unexpected argument '--' (ls takes only options)");
	/* Options after the words, as before: cp's flags anywhere; exec's
	 * only before the program, whose own flags are its. */
	assert_int_equal(cli_cp_parse(5, ARGV("cp", "a", "box:/b", "-p", "--json"), &g, &cp, &e),
			 0);
	assert_true(cp.parents);
	assert_true(g.json);
	g.json = false;
	assert_int_equal(cli_exec_parse(5, ARGV("exec", "abc", "ls", "-u", "x"), &g, &x, &e), 0);
	assert_json(x.body, "{\"argv\":[\"ls\",\"-u\",\"x\"],\"output_cap\":268435456}");
	json_decref(x.body);
	/* Every command line starts afresh: getopt's state does not leak
	 * from a line cut short by an error into the next one. */
	assert_int_equal(cli_exec_parse(3, ARGV("exec", "-iq", "abc"), &g, &x, &e), -1);
	assert_string_equal(e.msg, "unknown option '-q'");
	assert_int_equal(cli_exec_parse(4, ARGV("exec", "abc", "--", "true"), &g, &x, &e), 0);
	assert_false(x.send_stdin);
	json_decref(x.body);
}

static void test_kv_and_share(void **state)
{
	json_t *o = json_object(), *a = json_array();
	struct err e;

	(void)state;
	assert_int_equal(cli_put_kv(o, "A=b=c", false, "--env", &e), 0);
	assert_int_equal(cli_put_kv(o, "E=", false, "--env", &e), 0);
	assert_int_equal(cli_put_kv(o, "U", true, "--env", &e), 0);
	assert_json(o, "{\"A\":\"b=c\",\"E\":\"\",\"U\":null}");
	assert_int_equal(cli_put_kv(o, "U", false, "--label", &e), -EINVAL);
	assert_string_equal(e.msg, "--label 'U': expected KEY=VALUE");
	assert_int_equal(cli_put_kv(o, "=v", true, "--env", &e), -EINVAL);
	assert_string_equal(e.msg, "--env '=v': empty key (expected KEY=VALUE)");
	assert_int_equal(cli_put_kv(o, "K=\xff", false, "--env", &e), -EINVAL);

	assert_int_equal(cli_put_share(a, "/srv:/mnt/d", &e), 0);
	assert_int_equal(cli_put_share(a, "/srv:/mnt/d:ro", &e), 0);
	assert_int_equal(cli_put_share(a, "rel:/m:rw", &e), 0);
	assert_json(a,
		    "[{\"guest_path\":\"/mnt/d\",\"host_path\":\"/srv\",\"read_only\":false},"
		    "{\"guest_path\":\"/mnt/d\",\"host_path\":\"/srv\",\"read_only\":true},"
		    "{\"guest_path\":\"/m\",\"host_path\":\"rel\",\"read_only\":false}]");
	static const char *const bad[] = { "/srv",      ":/m",        "/srv:", "/srv::ro",
					   "/a:/b:rox", "/a:/b:ro:x", "/a:/b:" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cli_put_share(a, bad[i], &e), -EINVAL);
	assert_int_equal(json_array_size(a), 3);
	json_decref(o);
	json_decref(a);
}

/* --- request bodies --- */

static void test_create_body(void **state)
{
	struct cli_globals g = { 0 };
	struct err e;
	json_t *b;

	(void)state;
	assert_int_equal(cli_create_body(1, ARGV("create"), &g, &b, &e), 0);
	assert_json(b, "{\"image\":\"minimal\"}");
	json_decref(b);

	char **av = ARGV("create", "--image", "alpine", "--cpus", "2", "--memory=256", "--env",
			 "A=1", "-e", "B=2", "--hostname", "box1", "--label", "job=42", "--share",
			 "/srv:/mnt/s:ro", "--timeout", "600", "--no-console", "--json", "--disk",
			 "4096");
	assert_int_equal(cli_create_body(22, av, &g, &b, &e), 0);
	assert_json(b,
		    "{\"console\":false,\"cpus\":2,\"disk_mib\":4096,\"env\":{\"A\":\"1\",\"B\":\"2\"},\"hostname\":\"box1\","
		    "\"image\":\"alpine\",\"labels\":{\"job\":\"42\"},\"memory_mib\":256,"
		    "\"shares\":[{\"guest_path\":\"/mnt/s\",\"host_path\":\"/srv\",\"read_only\":true}],"
		    "\"timeout_s\":600}");
	assert_true(g.json);
	json_decref(b);

	b = (json_t *)1;
	assert_int_equal(cli_create_body(3, ARGV("create", "--cpus", "two"), &g, &b, &e), -1);
	assert_string_equal(e.msg, "--cpus 'two': expected a whole number");
	assert_int_equal(cli_create_body(3, ARGV("create", "--disk", "4G"), &g, &b, &e), -1);
	assert_string_equal(e.msg, "--disk '4G': expected a whole number");
	assert_ptr_equal(b, (json_t *)1); /* nothing handed out on failure */
	assert_int_equal(cli_create_body(2, ARGV("create", "box"), &g, &b, &e), -1);
	assert_string_equal(e.msg, "unexpected argument 'box' (create takes only options)");
	assert_int_equal(cli_create_body(3, ARGV("create", "--label", "nokey"), &g, &b, &e), -1);
	assert_string_equal(e.msg, "--label 'nokey': expected KEY=VALUE");
}

static void test_exec_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_exec_req x;
	struct err e;

	(void)state;
	/* The program starts at the first word after the id: its own
	 * options (-l, --json) are its, not kiln's. */
	assert_int_equal(cli_exec_parse(6, ARGV("exec", "abc123", "--user", "root", "ls", "-l"), &g,
					&x, &e),
			 0);
	assert_string_equal(x.id, "abc123");
	/* Streamed by default, with the agent's largest output_cap. */
	assert_true(x.stream);
	assert_json(x.body,
		    "{\"argv\":[\"ls\",\"-l\"],\"output_cap\":268435456,\"user\":\"root\"}");
	json_decref(x.body);
	assert_int_equal(cli_exec_parse(5, ARGV("exec", "abc123", "--buffered", "--", "ls"), &g, &x,
					&e),
			 0);
	assert_false(x.stream);
	assert_json(x.body, "{\"argv\":[\"ls\"]}");
	json_decref(x.body);

	char **av = ARGV("exec", "--stream", "abc", "--cwd", "/w", "--env", "A=1", "--env", "B",
			 "--timeout-ms", "500", "-i", "--shell", "--", "echo $A", "--json");
	assert_int_equal(cli_exec_parse(16, av, &g, &x, &e), 0);
	assert_true(x.stream);
	assert_true(x.send_stdin);
	assert_false(g.json);
	assert_json(x.body,
		    "{\"argv\":[\"echo $A\",\"--json\"],\"cwd\":\"/w\",\"env\":{\"A\":\"1\",\"B\":null},"
		    "\"output_cap\":268435456,\"shell\":true,\"timeout_ms\":500}");
	json_decref(x.body);

	/* --confine: a flag, before the program only. */
	assert_int_equal(cli_exec_parse(6,
					ARGV("exec", "abc", "--confine", "--", "cat", "--confine"),
					&g, &x, &e),
			 0);
	assert_json(x.body,
		    "{\"argv\":[\"cat\",\"--confine\"],\"confine\":true,\"output_cap\":268435456}");
	json_decref(x.body);
	assert_int_equal(cli_exec_parse(4, ARGV("exec", "abc", "--confine=yes", "ls"), &g, &x, &e),
			 -1);

	assert_int_equal(cli_exec_parse(2, ARGV("exec", "abc"), &g, &x, &e), -1);
	assert_string_equal(e.msg,
			    "missing the program to run (kiln exec ID [options] -- PROGRAM [ARG...])");
	assert_int_equal(cli_exec_parse(3, ARGV("exec", "abc", "--"), &g, &x, &e), -1);
	assert_int_equal(cli_exec_parse(3, ARGV("exec", "--", "ls"), &g, &x, &e), -1);
	assert_string_equal(e.msg,
			    "missing sandbox id (kiln exec ID [options] -- PROGRAM [ARG...])");
	/* An id is a path segment: nothing that could address another endpoint. */
	assert_int_equal(cli_exec_parse(4, ARGV("exec", "../x", "--", "ls"), &g, &x, &e), -1);
	assert_string_equal(e.msg, "'../x' is not a sandbox id (see `kiln ls`)");
	assert_int_equal(cli_exec_parse(4, ARGV("exec", "a?b", "--", "ls"), &g, &x, &e), -1);
	assert_int_equal(cli_exec_parse(5, ARGV("exec", "abc", "--timeout-ms", "-5", "ls"), &g, &x,
					&e),
			 -1);
	assert_int_equal(cli_exec_parse(5, ARGV("exec", "abc", "--", "ls", "\xc3\x28"), &g, &x, &e),
			 -1);
	assert_string_equal(e.msg, "argument 2 is not valid UTF-8");
}

static void test_list_query_encodes(void **state)
{
	struct cli_globals g = { 0 };
	char q[256];
	struct err e;

	(void)state;
	assert_int_equal(cli_list_query(1, ARGV("ls"), &g, q, sizeof(q), &e), 0);
	assert_string_equal(q, "");
	assert_int_equal(cli_list_query(5, ARGV("ls", "--state", "running", "-l", "a b=c&d+e"), &g,
					q, sizeof(q), &e),
			 0);
	/* '=' inside the label value, '&' and '+' are encoded: kilnd decodes
	 * '+' as a space and '&' would start a new parameter. */
	assert_string_equal(q, "?state=running&label=a%20b%3Dc%26d%2Be");
	assert_int_equal(cli_list_query(3, ARGV("ls", "--label", "x"), &g, q, sizeof(q), &e), -1);
	assert_int_equal(cli_list_query(2, ARGV("ls", "stray"), &g, q, sizeof(q), &e), -1);
	assert_string_equal(e.msg, "unexpected argument 'stray' (ls takes only options)");
	char small[16];
	assert_int_equal(cli_list_query(3, ARGV("ls", "--state", "runningrunningrunning"), &g,
					small, sizeof(small), &e),
			 -1);
	assert_string_equal(e.msg, "the filters are too long");
}

static void test_one_id(void **state)
{
	struct cli_globals g = { 0 };
	char id[CLI_ID_MAX + 1];
	struct err e;

	(void)state;
	assert_int_equal(cli_one_id(3, ARGV("inspect", "3f9a1c2b7d4e", "--json"), &g, id, &e), 0);
	assert_string_equal(id, "3f9a1c2b7d4e");
	assert_int_equal(cli_one_id(1, ARGV("inspect"), &g, id, &e), -1);
	assert_int_equal(cli_one_id(3, ARGV("inspect", "a", "b"), &g, id, &e), -1);
	assert_string_equal(e.msg, "expected one sandbox id, got more ('b')");
	assert_int_equal(cli_one_id(2, ARGV("inspect", "a/stop"), &g, id, &e), -1);
	char longid[CLI_ID_MAX + 2];
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = 0;
	assert_int_equal(cli_one_id(2, ARGV("inspect", longid), &g, id, &e), -1);
}

static void test_cp_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_cp_req cp;
	struct err e;

	(void)state;
	assert_int_equal(cli_cp_parse(3, ARGV("cp", "a.txt", "box:/home/user/"), &g, &cp, &e), 0);
	assert_true(cp.upload);
	assert_string_equal(cp.id, "box");
	assert_string_equal(cp.guest_path, "/home/user/");
	assert_string_equal(cp.local, "a.txt");

	assert_int_equal(cli_cp_parse(6, ARGV("cp", "--user", "root", "box:/etc/shadow", "-", "-p"),
				      &g, &cp, &e),
			 0);
	assert_false(cp.upload);
	assert_string_equal(cp.local, "-");
	assert_string_equal(cp.user, "root");
	assert_true(cp.parents);

	/* A local path with ':' is local when a '/' comes first. */
	assert_int_equal(cli_cp_parse(3, ARGV("cp", "./a:b", "box:/x"), &g, &cp, &e), 0);
	assert_string_equal(cp.local, "./a:b");
	assert_int_equal(cli_cp_parse(4, ARGV("cp", "--", "-weird", "box:/x"), &g, &cp, &e), 0);
	assert_string_equal(cp.local, "-weird");

	assert_int_equal(cli_cp_parse(3, ARGV("cp", "a", "b"), &g, &cp, &e), -1);
	assert_string_equal(e.msg, "neither operand is ID:/path (one side must be the sandbox)");
	assert_int_equal(cli_cp_parse(3, ARGV("cp", "x:/a", "y:/b"), &g, &cp, &e), -1);
	assert_string_equal(e.msg, "both operands are ID:/path (copy through a local file)");
	assert_int_equal(cli_cp_parse(3, ARGV("cp", "a", "box:rel"), &g, &cp, &e), -1);
	assert_string_equal(e.msg, "'box:rel': the guest path must be absolute (ID:/path)");
	assert_int_equal(cli_cp_parse(2, ARGV("cp", "box:/a"), &g, &cp, &e), -1);
	assert_int_equal(cli_cp_parse(4, ARGV("cp", "a", "box:/a", "c"), &g, &cp, &e), -1);
	assert_string_equal(e.msg,
			    "expected two operands: kiln cp LOCAL ID:/path, or kiln cp ID:/path LOCAL");
	assert_int_equal(cli_cp_parse(3, ARGV("cp", "a", "b.d:/x"), &g, &cp, &e), -1);
	assert_string_equal(e.msg, "'b.d' is not a sandbox id (see `kiln ls`)");
}

static void test_url_encode(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(cli_url_encode("/home/user/a b%.txt", out, sizeof(out)), 0);
	assert_string_equal(out, "/home/user/a%20b%25.txt");
	assert_int_equal(cli_url_encode("/x?y=1&z#\xc3\xa9", out, sizeof(out)), 0);
	assert_string_equal(out, "/x%3Fy%3D1%26z%23%C3%A9");
	assert_int_equal(cli_url_encode("\xff\xff\xff", out, 9), -ENAMETOOLONG);
	assert_int_equal(cli_url_encode("\xff\xff\xff", out, 10), 0);
	assert_int_equal(cli_url_encode("abc", out, 3), -ENAMETOOLONG);
}

/* --- errors --- */

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

/* --- exec output --- */

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

/* --- tables --- */

static char *fmt(int (*f)(FILE *, const json_t *), const char *json, int *rc)
{
	json_t *v = json_loads(json, 0, NULL);
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	assert_non_null(v);
	*rc = f(m, v);
	fclose(m);
	json_decref(v);
	return buf;
}

static void test_format(void **state)
{
	char *out;
	int rc;

	(void)state;
	out = fmt(cli_format_health,
		  "{\"status\":\"ok\",\"version\":\"0.1.0\",\"uptime_s\":42,\"sandboxes\":1}", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "ok  kilnd 0.1.0  up 42s  1 sandbox\n");
	free(out);
	out = fmt(cli_format_health,
		  "{\"status\":\"ok\",\"version\":\"0.1.0\",\"uptime_s\":42,\"sandboxes\":0,\"pools\":["
		  "{\"image\":\"py\",\"size\":4,\"ready\":3,\"hits\":12,\"misses\":1,\"last_error\":null},"
		  "{\"image\":\"m\",\"size\":1,\"ready\":0,\"hits\":0,\"misses\":0,\"last_error\":\"boot\\nfailed\"}]}",
		  &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out,
			    "ok  kilnd 0.1.0  up 42s  0 sandboxes\n"
			    "pool py: 3/4 ready, 12 served, 1 missed\n"
			    "pool m: 0/1 ready, 0 served, 0 missed; filling failed: boot?failed\n");
	free(out);
	out = fmt(cli_format_health, "{\"status\":\"ok\"}", &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(out, "");
	free(out);

	out = fmt(cli_format_images,
		  "{\"images\":[{\"name\":\"minimal\",\"path\":\"/i/m.ext4\",\"size_bytes\":33554432,\"source\":\"option\"},"
		  "{\"name\":\"py\",\"path\":\"/i/py.ext4\",\"size_bytes\":1048576,\"source\":\"oci\","
		  "\"digest\":\"sha256:2c09fe1eeac0e10d8bc6d003fb3835fe00dc23b6110ae87beb1343c13639455b\"}],"
		  "\"kernel\":{\"path\":\"/k\",\"size_bytes\":1000}}",
		  &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out,
			    "NAME     SIZE        SOURCE     DIGEST               PATH\n"
			    "minimal  32.0 MiB    option     -                    /i/m.ext4\n"
			    "py       1.0 MiB     oci        sha256:2c09fe1eeac0  /i/py.ext4\n"
			    "kernel: /k (1000 B)\n");
	free(out);
	out = fmt(cli_format_images, "{\"images\":[{\"name\":\"x\"}]}", &rc);
	assert_int_equal(rc, -1);
	free(out);

	out = fmt(cli_format_list,
		  "{\"sandboxes\":[{\"id\":\"3f9a1c2b7d4e\",\"state\":\"running\",\"image\":\"minimal\",\"cpus\":2,"
		  "\"memory_mib\":256,\"created_at\":\"2024-11-22T10:00:00.123Z\",\"labels\":{\"job\":\"4\\u001b2\",\"t\":\"ci\"}}]}",
		  &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(
		out,
		"ID            STATE     IMAGE    CPUS  MEMORY    CREATED                   LABELS\n"
		"3f9a1c2b7d4e  running   minimal  2     256 MiB   2024-11-22T10:00:00.123Z  job=4?2,t=ci\n");
	free(out);
	out = fmt(cli_format_list, "{\"sandboxes\":{}}", &rc);
	assert_int_equal(rc, -1);
	free(out);

	out = fmt(cli_format_state,
		  "{\"id\":\"abc\",\"state\":\"crashed\",\"last_exit\":{\"reason\":\"boot_failed\",\"message\":\"kiln-vmm: no kvm\"}}",
		  &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "abc crashed (boot_failed: kiln-vmm: no kvm)\n");
	free(out);

	char size[32];
	cli_format_size(size, sizeof(size), 1536);
	assert_string_equal(size, "1.5 KiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_getopt_globals_anywhere),
		cmocka_unit_test(test_getopt_errors),
		cmocka_unit_test(test_command_lines),
		cmocka_unit_test(test_kv_and_share),
		cmocka_unit_test(test_create_body),
		cmocka_unit_test(test_exec_parse),
		cmocka_unit_test(test_list_query_encodes),
		cmocka_unit_test(test_one_id),
		cmocka_unit_test(test_cp_parse),
		cmocka_unit_test(test_url_encode),
		cmocka_unit_test(test_error_body),
		cmocka_unit_test(test_unreachable_messages),
		cmocka_unit_test(test_exec_status),
		cmocka_unit_test(test_exec_result_decodes),
		cmocka_unit_test(test_ndjson_stream),
		cmocka_unit_test(test_ndjson_failures),
		cmocka_unit_test(test_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
