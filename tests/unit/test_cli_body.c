/*
 * Unit tests of api/kiln/cli_body.c: the kiln CLI's command lines turned
 * into kilnd requests (docs/api.md): create, exec and run bodies, list
 * filters, cp operands, limits on what it echoes (cli_body.c); processes,
 * the shell and attach (cli_body_proc.c); guest file metadata, watch,
 * ports and previews (cli_body_fs.c); firewall rules (cli_body_firewall.c);
 * checkpoints, restore and fork (cli_body_snap.c).
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
#include "tests/unit/json_load.h"
#include "tests/unit/argv.h"

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

/* --- run, spawn, shell --- */

static void test_run_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_run_req r;
	struct err e;

	(void)state;
	/* --env is the sandbox's; --user is the command's; the program's own
	 * options after it are its. */
	assert_int_equal(cli_run_parse(12,
				       ARGV("run", "--cpus", "2", "-e", "A=1", "--user", "root",
					    "minimal", "ls", "-l", "--json", "-e"),
				       &g, &r, &e),
			 0);
	assert_json(r.create, "{\"cpus\":2,\"env\":{\"A\":\"1\"},\"image\":\"minimal\"}");
	assert_json(
		r.exec.body,
		"{\"argv\":[\"ls\",\"-l\",\"--json\",\"-e\"],\"output_cap\":268435456,\"user\":\"root\"}");
	assert_true(r.exec.stream);
	assert_false(g.json);
	assert_string_equal(r.exec.id, "");
	json_decref(r.create);
	json_decref(r.exec.body);

	/* --confine is the command's. */
	assert_int_equal(cli_run_parse(5, ARGV("run", "--confine", "debian", "--", "ls"), &g, &r,
				       &e),
			 0);
	assert_json(r.create, "{\"image\":\"debian\"}");
	assert_json(r.exec.body, "{\"argv\":[\"ls\"],\"confine\":true,\"output_cap\":268435456}");
	json_decref(r.create);
	json_decref(r.exec.body);

	assert_int_equal(cli_run_parse(7,
				       ARGV("run", "--buffered", "-i", "--label", "a=b", "debian",
					    "--"),
				       &g, &r, &e),
			 -1);
	assert_string_equal(
		e.msg, "missing the program to run (kiln run [options] IMAGE -- PROGRAM [ARG...])");
	assert_int_equal(cli_run_parse(3, ARGV("run", "--", "ls"), &g, &r, &e), -1);
	assert_string_equal(
		e.msg,
		"missing the image (kiln run [options] IMAGE -- PROGRAM [ARG...]; see `kiln images`)");
	/* The image is the operand, not an option. */
	assert_int_equal(cli_run_parse(5, ARGV("run", "--image", "x", "--", "ls"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "unknown option '--image'");
	assert_int_equal(cli_run_parse(5, ARGV("run", "--env", "NOEQ", "minimal", "ls"), &g, &r,
				       &e),
			 -1);
	assert_string_equal(e.msg, "--env 'NOEQ': expected KEY=VALUE");

	assert_int_equal(cli_run_parse(6, ARGV("run", "--buffered", "-i", "debian", "--", "true"),
				       &g, &r, &e),
			 0);
	assert_false(r.exec.stream);
	assert_true(r.exec.send_stdin);
	assert_json(r.exec.body, "{\"argv\":[\"true\"]}");
	json_decref(r.create);
	json_decref(r.exec.body);
}

static void test_spawn_and_shell_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_spawn_req s;
	struct cli_shell_req sh;
	struct err e;

	(void)state;
	char **av = ARGV("spawn", "abc", "--pty", "--rows", "40", "--cols=100", "--ring-bytes",
			 "8192", "-i", "--shell", "--", "top", "-b");
	assert_int_equal(cli_spawn_parse(13, av, &g, &s, &e), 0);
	assert_string_equal(s.id, "abc");
	assert_true(s.send_stdin);
	assert_json(s.body,
		    "{\"argv\":[\"top\",\"-b\"],\"cols\":100,\"pty\":true,\"ring_bytes\":8192,\"rows\":40,"
		    "\"shell\":true}");
	json_decref(s.body);
	assert_int_equal(cli_spawn_parse(3, ARGV("spawn", "abc", "--pty"), &g, &s, &e), -1);
	assert_string_equal(e.msg,
			    "missing the program to run (kiln spawn ID [options] -- PROGRAM [ARG...])");
	assert_int_equal(cli_spawn_parse(5, ARGV("spawn", "abc", "--rows", "x", "sh"), &g, &s, &e),
			 -1);
	assert_string_equal(e.msg, "--rows 'x': expected a whole number");
	assert_int_equal(cli_spawn_parse(3, ARGV("spawn", "--", "sh"), &g, &s, &e), -1);
	assert_string_equal(e.msg,
			    "missing sandbox id (kiln spawn ID [options] -- PROGRAM [ARG...])");

	/* No program: POST .../shell with only the options. */
	assert_int_equal(cli_shell_parse(4, ARGV("shell", "abc", "--user", "root"), &g, &sh, &e),
			 0);
	assert_false(sh.has_argv);
	assert_json(sh.body, "{\"user\":\"root\"}");
	json_decref(sh.body);
	/* A program: .../processes on a PTY; it starts at the first word. */
	assert_int_equal(cli_shell_parse(6, ARGV("shell", "abc", "-e", "X=1", "vi", "-R"), &g, &sh,
					 &e),
			 0);
	assert_true(sh.has_argv);
	assert_json(sh.body, "{\"argv\":[\"vi\",\"-R\"],\"env\":{\"X\":\"1\"},\"pty\":true}");
	json_decref(sh.body);
	/* --confine on spawn and shell. */
	assert_int_equal(cli_shell_parse(3, ARGV("shell", "abc", "--confine"), &g, &sh, &e), 0);
	assert_json(sh.body, "{\"confine\":true}");
	json_decref(sh.body);
	assert_int_equal(cli_spawn_parse(5, ARGV("spawn", "abc", "--confine", "--", "sleep"), &g,
					 &s, &e),
			 0);
	assert_json(s.body, "{\"argv\":[\"sleep\"],\"confine\":true}");
	json_decref(s.body);
	/* The shell endpoint has no "shell" option. */
	assert_int_equal(cli_shell_parse(3, ARGV("shell", "abc", "--shell"), &g, &sh, &e), -1);
	assert_string_equal(e.msg, "unknown option '--shell'");
	assert_int_equal(cli_shell_parse(1, ARGV("shell"), &g, &sh, &e), -1);
}

/* --- logs, attach, kill, wait, stdin --- */

static void test_proc_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_proc_req p;
	struct err e;

	(void)state;
	assert_int_equal(cli_proc_parse("logs", 4, ARGV("logs", "abc", "3", "-f"), &g, &p, &e), 0);
	assert_string_equal(p.id, "abc");
	assert_int_equal(p.proc, 3);
	assert_true(p.follow);
	assert_string_equal(p.query, "?encoding=base64");
	assert_int_equal(cli_proc_parse("logs", 5, ARGV("logs", "--from", "120", "abc", "3"), &g,
					&p, &e),
			 0);
	assert_false(p.follow);
	assert_string_equal(p.query, "?encoding=base64&from=120");
	assert_int_equal(cli_proc_parse("logs", 5, ARGV("logs", "abc", "3", "--from", "-1"), &g, &p,
					&e),
			 -1);
	assert_string_equal(e.msg, "--from '-1': expected a byte offset (seq) or 'now'");
	assert_int_equal(cli_proc_parse("attach", 5, ARGV("attach", "abc", "3", "--from", "now"),
					&g, &p, &e),
			 0);
	assert_string_equal(p.query, "?from=now");
	/* attach has no --follow. */
	assert_int_equal(cli_proc_parse("attach", 4, ARGV("attach", "abc", "3", "-f"), &g, &p, &e),
			 -1);

	assert_int_equal(cli_proc_parse("kill", 3, ARGV("kill", "abc", "7"), &g, &p, &e), 0);
	assert_json(p.body, "{\"signal\":\"TERM\"}");
	json_decref(p.body);
	assert_int_equal(cli_proc_parse("kill", 6,
					ARGV("kill", "abc", "7", "-s", "SIGKILL", "--group"), &g,
					&p, &e),
			 0);
	assert_json(p.body, "{\"group\":true,\"signal\":\"SIGKILL\"}");
	json_decref(p.body);
	assert_int_equal(cli_proc_parse("kill", 4, ARGV("kill", "abc", "7", "--signal=9"), &g, &p,
					&e),
			 0);
	assert_json(p.body, "{\"signal\":9}");
	json_decref(p.body);
	assert_int_equal(cli_proc_parse("kill", 5, ARGV("kill", "abc", "7", "-s", "T\"RM"), &g, &p,
					&e),
			 -1);
	assert_null(p.body); /* nothing handed out on failure */

	assert_int_equal(cli_proc_parse("wait", 5, ARGV("wait", "abc", "7", "--timeout-ms", "500"),
					&g, &p, &e),
			 0);
	assert_string_equal(p.query, "?timeout_ms=500");
	assert_int_equal(cli_proc_parse("stdin", 5, ARGV("stdin", "abc", "7", "--close", "in.txt"),
					&g, &p, &e),
			 0);
	assert_true(p.close);
	assert_string_equal(p.file, "in.txt");
	assert_int_equal(cli_proc_parse("stdin", 4, ARGV("stdin", "abc", "7", "-"), &g, &p, &e), 0);
	assert_string_equal(p.file, "-");
	assert_int_equal(cli_proc_parse("stdin", 5, ARGV("stdin", "abc", "7", "a", "b"), &g, &p,
					&e),
			 -1);
	assert_string_equal(e.msg, "unexpected argument 'b'");
	assert_int_equal(cli_proc_parse("wait", 4, ARGV("wait", "abc", "7", "x"), &g, &p, &e), -1);

	/* The process id: a positive 32-bit number, nothing else. */
	assert_int_equal(cli_proc_parse("wait", 2, ARGV("wait", "abc"), &g, &p, &e), -1);
	assert_string_equal(e.msg,
			    "expected a sandbox id and a process id (`kiln ps ID` lists them)");
	assert_int_equal(cli_proc_parse("wait", 3, ARGV("wait", "abc", "0"), &g, &p, &e), -1);
	assert_string_equal(e.msg,
			    "'0' is not a process id (a number from `kiln ps ID` or `kiln spawn`)");
	assert_int_equal(cli_proc_parse("wait", 3, ARGV("wait", "abc", "4294967296"), &g, &p, &e),
			 -1);
	assert_int_equal(cli_proc_parse("wait", 3, ARGV("wait", "abc", "4294967295"), &g, &p, &e),
			 0);
	assert_int_equal(cli_proc_parse("wait", 3, ARGV("wait", "a/b", "1"), &g, &p, &e), -1);
}

/* --- fs and port --- */

static void test_fs_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_fs_req *r = malloc(sizeof(*r));
	struct err e;

	(void)state;
	assert_non_null(r);
	assert_int_equal(cli_fs_parse(6, ARGV("ls", "-d", "2", "box:/home/a b", "--user", "root"),
				      &g, r, &e),
			 0);
	assert_int_equal(r->op, CLI_FS_LS);
	assert_string_equal(r->id, "box");
	assert_string_equal(r->endpoint, "files/list");
	assert_string_equal(r->query, "?path=/home/a%20b&depth=2&user=root");
	assert_null(r->body);
	assert_int_equal(cli_fs_parse(3, ARGV("stat", "--no-follow", "box:/bin/sh"), &g, r, &e), 0);
	assert_string_equal(r->query, "?path=/bin/sh&follow=false");
	assert_string_equal(r->endpoint, "files/stat");

	assert_int_equal(cli_fs_parse(5, ARGV("mkdir", "-p", "-m", "700", "box:/a/b"), &g, r, &e),
			 0);
	assert_string_equal(r->endpoint, "files/mkdir");
	assert_json(r->body, "{\"mode\":448,\"parents\":true,\"path\":\"/a/b\"}");
	json_decref(r->body);
	assert_int_equal(cli_fs_parse(3, ARGV("rm", "-r", "box:/a"), &g, r, &e), 0);
	assert_string_equal(r->endpoint, "files/remove");
	assert_json(r->body, "{\"path\":\"/a\",\"recursive\":true}");
	json_decref(r->body);
	assert_int_equal(cli_fs_parse(4, ARGV("mv", "-f", "box:/a", "box:/b"), &g, r, &e), 0);
	assert_string_equal(r->endpoint, "files/rename");
	assert_json(r->body, "{\"from\":\"/a\",\"overwrite\":true,\"to\":\"/b\"}");
	json_decref(r->body);
	assert_int_equal(cli_fs_parse(5, ARGV("mv", "box:/a", "/c", "--user", "root"), &g, r, &e),
			 0);
	assert_json(r->body, "{\"from\":\"/a\",\"to\":\"/c\",\"user\":\"root\"}");
	json_decref(r->body);

	assert_int_equal(cli_fs_parse(3, ARGV("mv", "box:/a", "other:/b"), &g, r, &e), -1);
	assert_string_equal(e.msg,
			    "mv stays within one sandbox (box and other differ); use kiln cp");
	assert_int_equal(cli_fs_parse(3, ARGV("mv", "box:/a", "rel"), &g, r, &e), -1);
	assert_string_equal(e.msg, "'rel': the destination must be absolute (/TO or ID:/TO)");
	assert_int_equal(cli_fs_parse(2, ARGV("ls", "./local"), &g, r, &e), -1);
	assert_string_equal(e.msg, "'./local' is not ID:/PATH (a path in a sandbox)");
	assert_int_equal(cli_fs_parse(2, ARGV("ls", "box:rel"), &g, r, &e), -1);
	assert_string_equal(e.msg, "'box:rel': the guest path must be absolute (ID:/path)");
	assert_int_equal(cli_fs_parse(3, ARGV("ls", "box:/a", "box:/b"), &g, r, &e), -1);
	assert_string_equal(e.msg, "unexpected argument 'box:/b'");
	assert_int_equal(cli_fs_parse(4, ARGV("mkdir", "--mode", "0789", "box:/a"), &g, r, &e), -1);
	assert_string_equal(e.msg, "--mode '0789': expected octal permission bits (0755)");
	assert_int_equal(cli_fs_parse(4, ARGV("mkdir", "--mode", "17777", "box:/a"), &g, r, &e),
			 -1);
	/* Options belong to their subcommand. */
	assert_int_equal(cli_fs_parse(3, ARGV("stat", "-r", "box:/a"), &g, r, &e), -1);
	assert_string_equal(e.msg, "unknown option '-r'");
	assert_int_equal(cli_fs_parse(4, ARGV("ls", "--depth", "0", "box:/"), &g, r, &e), -1);
	assert_int_equal(cli_fs_parse(2, ARGV("cat", "box:/a"), &g, r, &e), -1);
	assert_string_equal(e.msg, "unknown subcommand 'cat' (ls, stat, mkdir, rm, mv or watch)");
	assert_int_equal(cli_fs_parse(0, ARGV(NULL), &g, r, &e), -1);
	assert_int_equal(cli_fs_parse(1, ARGV("rm"), &g, r, &e), -1);
	assert_string_equal(e.msg, "expected ID:/PATH");
	/* A path that is not UTF-8 cannot be a JSON string. */
	assert_int_equal(cli_fs_parse(2, ARGV("rm", "box:/\xff"), &g, r, &e), -1);
	assert_string_equal(e.msg, "the guest path is not valid UTF-8");
	free(r);
}

static void test_port_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_port_req r;
	struct err e;

	(void)state;
	assert_int_equal(cli_port_parse(3, ARGV("port", "abc", "8080"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_PORT_ADD);
	assert_string_equal(r.id, "abc");
	assert_json(r.body, "{\"guest_port\":8080}");
	json_decref(r.body);
	assert_int_equal(cli_port_parse(5, ARGV("port", "add", "abc", "8080", "0"), &g, &r, &e), 0);
	assert_json(r.body, "{\"guest_port\":8080,\"host_port\":0}");
	json_decref(r.body);
	assert_int_equal(cli_port_parse(3, ARGV("port", "ls", "abc"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_PORT_LS);
	assert_null(r.body);
	assert_int_equal(cli_port_parse(4, ARGV("port", "rm", "abc", "18080"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_PORT_RM);
	assert_int_equal(r.host_port, 18080);

	assert_int_equal(cli_port_parse(3, ARGV("port", "abc", "0"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "GUEST_PORT '0': expected a port number 1..65535");
	assert_int_equal(cli_port_parse(4, ARGV("port", "abc", "80", "65536"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "HOST_PORT '65536': expected a port number 0..65535");
	assert_int_equal(cli_port_parse(2, ARGV("port", "ls"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "expected: kiln port ls ID");
	assert_int_equal(cli_port_parse(3, ARGV("port", "rm", "abc"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "expected: kiln port rm ID HOST_PORT");
	assert_int_equal(cli_port_parse(2, ARGV("port", "abc"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "expected ID GUEST_PORT [HOST_PORT]");
	assert_int_equal(cli_port_parse(3, ARGV("port", "abc", "--bogus"), &g, &r, &e), -1);
}

static void test_preview_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_preview_req r;
	struct err e;

	(void)state;
	assert_int_equal(cli_preview_parse(3, ARGV("preview", "abc", "8080"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_PREVIEW_ADD);
	assert_string_equal(r.id, "abc");
	assert_json(r.body, "{\"port\":8080,\"public\":false}");
	json_decref(r.body);
	assert_int_equal(cli_preview_parse(5, ARGV("preview", "add", "abc", "--public", "3000"), &g,
					   &r, &e),
			 0);
	assert_json(r.body, "{\"port\":3000,\"public\":true}");
	json_decref(r.body);
	assert_int_equal(cli_preview_parse(3, ARGV("preview", "ls", "abc"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_PREVIEW_LS);
	assert_null(r.body);
	assert_int_equal(cli_preview_parse(4, ARGV("preview", "rm", "abc", "8080"), &g, &r, &e), 0);
	assert_int_equal(r.op, CLI_PREVIEW_RM);
	assert_int_equal(r.port, 8080);
	assert_null(r.body);

	assert_int_equal(cli_preview_parse(3, ARGV("preview", "abc", "0"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "PORT '0': expected a port number 1..65535");
	assert_int_equal(cli_preview_parse(4, ARGV("preview", "abc", "80", "81"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "expected: kiln preview ID PORT [--public]");
	assert_int_equal(cli_preview_parse(4, ARGV("preview", "ls", "abc", "--public"), &g, &r, &e),
			 -1);
	assert_string_equal(e.msg, "expected: kiln preview ls ID");
	assert_int_equal(cli_preview_parse(3, ARGV("preview", "rm", "abc"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "expected: kiln preview rm ID PORT");
	assert_int_equal(cli_preview_parse(3, ARGV("preview", "abc", "--bogus"), &g, &r, &e), -1);
	assert_int_equal(cli_preview_parse(5, ARGV("preview", "a", "b", "c", "d"), &g, &r, &e), -1);
}

static char *rule_text(const char *spec)
{
	struct err e;
	json_t *r = cli_firewall_rule(spec, &e);
	char *s;

	if (!r)
		fail_msg("'%s': %s", spec, e.msg);
	s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(r);
	return s;
}

static void expect_rule(const char *spec, const char *want)
{
	char *s = rule_text(spec);

	assert_string_equal(s, want);
	free(s);
}

static void test_rule(void **state)
{
	(void)state;
	expect_rule("10.0.0.0/8", "{\"cidr\":\"10.0.0.0/8\"}");
	expect_rule("203.0.113.7", "{\"cidr\":\"203.0.113.7\"}");
	expect_rule("10.77.1.0/24:9090/tcp",
		    "{\"cidr\":\"10.77.1.0/24\",\"ports\":9090,\"proto\":\"tcp\"}");
	expect_rule("example.com:443", "{\"host\":\"example.com\",\"ports\":443}");
	expect_rule("*.example.com:80-443/tcp",
		    "{\"host\":\"*.example.com\",\"ports\":\"80-443\",\"proto\":\"tcp\"}");
	expect_rule("1password.com", "{\"host\":\"1password.com\"}");
	expect_rule("2001:db8::/32", "{\"cidr\":\"2001:db8::/32\"}");
	expect_rule("[2001:db8::1]:53/udp",
		    "{\"cidr\":\"2001:db8::1\",\"ports\":53,\"proto\":\"udp\"}");
	expect_rule("0.0.0.0/0/icmp", "{\"cidr\":\"0.0.0.0/0\",\"proto\":\"icmp\"}");
}

static void test_rule_errors(void **state)
{
	static const char *const bad[] = { "",
					   "example.com:",
					   "example.com:0",
					   "example.com:65536",
					   "example.com:443-80",
					   "example.com:80-",
					   "x:abc",
					   "[2001:db8::1",
					   "[2001:db8::1]443",
					   ":443",
					   "[]:53" };
	struct err e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *r = cli_firewall_rule(bad[i], &e);

		if (r)
			fail_msg("'%s' was accepted", bad[i]);
	}
	assert_null(cli_firewall_rule("example.com:80-", &e));
	assert_string_equal(
		e.msg,
		"rule 'example.com:80-': ports '80-' is not a port or a range LO-HI of 1..65535");
}

static int parse(struct cli_firewall_req *r, struct err *e, int argc, ...)
{
	char *argv[8] = { "firewall" };
	struct cli_globals g;
	va_list ap;

	memset(&g, 0, sizeof(g));
	va_start(ap, argc);
	for (int i = 0; i < argc; i++)
		argv[i + 1] = va_arg(ap, char *);
	va_end(ap);
	return cli_firewall_parse(argc + 1, argv, &g, r, e);
}

static void test_parse(void **state)
{
	struct cli_firewall_req r;
	struct err e;

	(void)state;
	assert_int_equal(parse(&r, &e, 2, "show", "abc123"), 0);
	assert_int_equal(r.op, CLI_FW_SHOW);
	assert_string_equal(r.id, "abc123");
	assert_int_equal(parse(&r, &e, 2, "log", "abc123"), 0);
	assert_int_equal(r.op, CLI_FW_LOG);
	assert_null(r.rule);
	assert_int_equal(parse(&r, &e, 3, "log", "abc123", "x"), -1);
	assert_string_equal(e.msg, "firewall log takes ID");
	assert_int_equal(parse(&r, &e, 3, "set", "abc123", "-"), 0);
	assert_int_equal(r.op, CLI_FW_SET);
	assert_string_equal(r.file, "-");
	assert_int_equal(parse(&r, &e, 3, "allow", "abc123", "example.com:443"), 0);
	assert_int_equal(r.op, CLI_FW_ALLOW);
	assert_string_equal(json_string_value(json_object_get(r.rule, "host")), "example.com");
	json_decref(r.rule);
	assert_int_equal(parse(&r, &e, 3, "deny", "abc123", "203.0.113.0/24"), 0);
	assert_int_equal(r.op, CLI_FW_DENY);
	json_decref(r.rule);

	assert_int_equal(parse(&r, &e, 0), -1);
	assert_int_equal(parse(&r, &e, 1, "show"), -1);
	assert_string_equal(e.msg, "firewall show takes ID");
	assert_int_equal(parse(&r, &e, 3, "show", "a", "b"), -1);
	assert_int_equal(parse(&r, &e, 2, "set", "a"), -1);
	assert_string_equal(e.msg, "firewall set takes ID FILE|-");
	assert_int_equal(parse(&r, &e, 2, "open", "a"), -1);
	assert_string_equal(e.msg, "unknown firewall command 'open' (show, log, set, allow, deny)");
	assert_int_equal(parse(&r, &e, 2, "show", "../x"), -1);
	assert_int_equal(parse(&r, &e, 3, "allow", "a", "x:0"), -1);
	assert_null(r.rule);
}

static void test_add(void **state)
{
	json_t *rules = json_pack("{s:b,s:[],s:[]}", "outbound_internet", 0, "allow", "deny");
	json_t *rule = json_pack("{s:s}", "cidr", "10.0.0.0/8");
	struct err e;

	(void)state;
	assert_int_equal(cli_firewall_add(rules, CLI_FW_ALLOW, rule, &e), 0);
	assert_int_equal(cli_firewall_add(rules, CLI_FW_DENY, rule, &e), 0);
	assert_int_equal(cli_firewall_add(rules, CLI_FW_ALLOW, rule, &e), 0);
	assert_int_equal(json_array_size(json_object_get(rules, "allow")), 2);
	assert_int_equal(json_array_size(json_object_get(rules, "deny")), 1);
	json_object_del(rules, "deny");
	assert_int_equal(cli_firewall_add(rules, CLI_FW_DENY, rule, &e), 0);
	assert_int_equal(json_array_size(json_object_get(rules, "deny")), 1);
	json_object_set_new(rules, "allow", json_string("x"));
	assert_int_equal(cli_firewall_add(rules, CLI_FW_ALLOW, rule, &e), -1);
	assert_int_equal(cli_firewall_add(json_null(), CLI_FW_ALLOW, rule, &e), -1);
	json_decref(rules);
	json_decref(rule);
}

static void test_create_options(void **state)
{
	char path[] = "/tmp/kiln-fw-test-XXXXXX";
	struct err e;
	char *argv[6] = { "create", "--network", "passt", "--firewall", path, NULL };
	struct cli_globals g;
	json_t *b;
	int fd;

	(void)state;
	memset(&g, 0, sizeof(g));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"outbound_internet\": true}\n", 28), 28);
	close(fd);
	assert_int_equal(cli_create_body(5, argv, &g, &b, &e), 0);
	assert_string_equal(json_string_value(json_object_get(b, "network")), "passt");
	assert_true(
		json_is_true(json_object_get(json_object_get(b, "firewall"), "outbound_internet")));
	json_decref(b);
	/* A file that is not JSON, or missing: a usage error naming it. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{oops", 5), 5);
	close(fd);
	assert_int_equal(cli_create_body(5, argv, &g, &b, &e), -1);
	assert_non_null(strstr(e.msg, "--firewall /tmp/kiln-fw-test-"));
	unlink(path);
	assert_int_equal(cli_create_body(5, argv, &g, &b, &e), -1);
}

static char *big_word(size_t n, const char *prefix)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, 'x', n);
	s[n] = 0;
	memcpy(s, prefix, strlen(prefix));
	return s;
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

/* ---- kiln fs watch ---- */

static void test_cli_parse(void **state)
{
	struct cli_globals g = { 0 };
	struct cli_fs_req r;
	struct err e;

	(void)state;
	assert_int_equal(cli_fs_parse(3, ARGV("watch", "-r", "box:/work space"), &g, &r, &e), 0);
	assert_string_equal(r.id, "box");
	assert_string_equal(r.path, "/work space");
	assert_string_equal(r.query, "?path=/work%20space&recursive=true");
	assert_int_equal(cli_fs_parse(9,
				      ARGV("watch", "box", "/w", "--max-watches", "5", "--queue",
					   "64", "--user", "root"),
				      &g, &r, &e),
			 0);
	assert_string_equal(r.query, "?path=/w&max_watches=5&queue=64&user=root");

	assert_int_equal(cli_fs_parse(1, ARGV("watch"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "expected ID:/DIR (or ID /DIR): the guest directory to watch");
	assert_int_equal(cli_fs_parse(2, ARGV("watch", "./local"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "'./local' is not ID:/PATH (a path in a sandbox)");
	assert_int_equal(cli_fs_parse(3, ARGV("watch", "box", "rel"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "'rel': the guest directory must be absolute");
	assert_int_equal(cli_fs_parse(3, ARGV("watch", "bad/id", "/w"), &g, &r, &e), -1);
	assert_int_equal(cli_fs_parse(4, ARGV("watch", "box", "/w", "/x"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "unexpected argument '/x'");
	assert_int_equal(cli_fs_parse(4, ARGV("watch", "--queue", "lots", "box:/w"), &g, &r, &e),
			 -1);
	assert_string_equal(e.msg, "--queue 'lots': expected a whole number");
	assert_int_equal(cli_fs_parse(4, ARGV("watch", "--max-watches", "0", "box:/w"), &g, &r, &e),
			 -1);
	assert_int_equal(cli_fs_parse(3, ARGV("watch", "--depth", "box:/w"), &g, &r, &e), -1);
	assert_string_equal(e.msg, "unknown option '--depth'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_lines),
		cmocka_unit_test(test_kv_and_share),
		cmocka_unit_test(test_create_body),
		cmocka_unit_test(test_exec_parse),
		cmocka_unit_test(test_list_query_encodes),
		cmocka_unit_test(test_one_id),
		cmocka_unit_test(test_cp_parse),
		cmocka_unit_test(test_url_encode),
		cmocka_unit_test(test_run_parse),
		cmocka_unit_test(test_spawn_and_shell_parse),
		cmocka_unit_test(test_proc_parse),
		cmocka_unit_test(test_fs_parse),
		cmocka_unit_test(test_port_parse),
		cmocka_unit_test(test_preview_parse),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_rule_errors),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_create_options),
		cmocka_unit_test(test_answer_limits),
		cmocka_unit_test(test_echo_cut),
		cmocka_unit_test(test_firewall_file),
		cmocka_unit_test(test_checkpoint_forms),
		cmocka_unit_test(test_checkpoint_refused),
		cmocka_unit_test(test_restore),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_cli_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
