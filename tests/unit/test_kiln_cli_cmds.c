/*
 * kiln CLI, the pure parts of the newer commands: run, spawn, shell and
 * the process commands' command lines, kiln fs and kiln port, the tty
 * stream's request, answer head and resize escape (checked against
 * kilnd's own parser of it), output streams read up to a seq, and the
 * tables of processes, ports and guest files.
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
#include "api/kiln/cli_exec_out.h"
#include "api/kiln/cli_format.h"
#include "api/kiln/cli_tty.h"
#include "api/kilnd/bodies/tty_escape.h"

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

static void assert_json(const json_t *v, const char *want)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

	assert_non_null(s);
	assert_string_equal(s, want);
	free(s);
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

/* --- the tty stream --- */

static void test_tty_request(void **state)
{
	char buf[256];
	const char *want = "GET /v1/sandboxes/ab/processes/2/tty?from=now HTTP/1.1\r\n"
			   "Host: kiln\r\nConnection: Upgrade\r\nUpgrade: kiln-tty\r\n\r\n";

	(void)state;
	assert_int_equal(cli_tty_request(buf, sizeof(buf),
					 "/v1/sandboxes/ab/processes/2/tty?from=now"),
			 (int)strlen(want));
	assert_string_equal(buf, want);
	assert_int_equal(cli_tty_request(buf, 40, "/v1/sandboxes/ab/processes/2/tty"),
			 -ENAMETOOLONG);
}

static void test_http_head_parse(void **state)
{
	const char *ok =
		"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nupgrade:  Kiln-TTY \r\n\r\n$ ";
	const char *err =
		"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 80\r\n\r\n{";
	struct cli_http_head h;
	char big[CLI_TTY_HEAD_MAX + 100];

	(void)state;
	assert_int_equal(cli_http_head_parse(ok, strlen(ok), &h), 1);
	assert_int_equal(h.status, 101);
	assert_true(h.upgrade);
	assert_int_equal(h.content_length, -1);
	assert_int_equal(h.len, strlen(ok) - 2); /* "$ " is the terminal's */
	/* Any split: incomplete until the blank line. */
	for (size_t n = 0; n < strlen(ok) - 2; n++)
		assert_int_equal(cli_http_head_parse(ok, n, &h), 0);

	assert_int_equal(cli_http_head_parse(err, strlen(err), &h), 1);
	assert_int_equal(h.status, 404);
	assert_false(h.upgrade);
	assert_int_equal(h.content_length, 80);
	assert_int_equal(h.len, strlen(err) - 1);

	/* Bare LF line ends, a chunked body, another protocol. */
	const char *lf = "HTTP/1.0 200 OK\nTransfer-Encoding: gzip, chunked\nUpgrade: h2c\n\n";

	assert_int_equal(cli_http_head_parse(lf, strlen(lf), &h), 1);
	assert_int_equal(h.status, 200);
	assert_true(h.chunked);
	assert_false(h.upgrade);

	/* Not HTTP: said as soon as the first bytes show it. */
	assert_int_equal(cli_http_head_parse("SSH-2.0", 7, &h), -1);
	assert_int_equal(cli_http_head_parse("HTTP/2 200\r\n\r\n", 14, &h), -1);
	assert_int_equal(cli_http_head_parse("HTTP/1.1 2000 OK\r\n\r\n", 20, &h), -1);
	assert_int_equal(cli_http_head_parse("HTTP/1.1 099 X\r\n\r\n", 18, &h), -1);
	assert_int_equal(cli_http_head_parse("HTTP/1.1 200 OK\r\nno colon\r\n\r\n", 29, &h), -1);
	assert_int_equal(cli_http_head_parse("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", 39,
					     &h),
			 -1);
	assert_int_equal(
		cli_http_head_parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n",
				    54, &h),
		-1);
	/* A head that never ends is bounded. */
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	memset(big + 20, 'a', sizeof(big) - 20);
	assert_int_equal(cli_http_head_parse(big, CLI_TTY_HEAD_MAX, &h), 0);
	assert_int_equal(cli_http_head_parse(big, sizeof(big), &h), -1);
}

/* The escape we send is the one kilnd's parser takes out as a resize. */
static void expect_resize(unsigned rows, unsigned cols, uint16_t want_rows, uint16_t want_cols)
{
	char esc[CLI_TTY_ESC_MAX];
	uint8_t out[64];
	size_t n = cli_tty_resize_escape(esc, rows, cols), olen = 0;
	struct tty_esc p;
	enum tty_esc_ev ev;
	uint16_t r = 0, c = 0;

	tty_esc_init(&p);
	assert_int_equal(tty_esc_feed(&p, (const uint8_t *)esc, n, out, &olen, &ev, &r, &c), n);
	assert_int_equal(ev, TTY_ESC_RESIZE);
	assert_int_equal(olen, 0);
	assert_int_equal(r, want_rows);
	assert_int_equal(c, want_cols);
}

static void test_tty_resize_escape(void **state)
{
	char esc[CLI_TTY_ESC_MAX], eof[2];

	(void)state;
	assert_int_equal(cli_tty_resize_escape(esc, 40, 120), 21);
	assert_memory_equal(esc, "\x1b]kiln;resize;40;120\x07", 21);
	expect_resize(40, 120, 40, 120);
	expect_resize(65535, 65535, 65535, 65535);
	/* Out of range: clamped, never a sequence kilnd passes through as input. */
	expect_resize(0, 0, 1, 1);
	expect_resize(70000, 100000, 65535, 65535);

	assert_int_equal(cli_tty_eof_bytes(-1, eof), 1);
	assert_int_equal(eof[0], 4);
	assert_int_equal(cli_tty_eof_bytes('\n', eof), 1);
	assert_int_equal(cli_tty_eof_bytes('\r', eof), 1);
	assert_int_equal(cli_tty_eof_bytes('x', eof), 2);
	assert_memory_equal(eof, "\n\x04", 2);
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

static void test_format_new(void **state)
{
	char *s;
	int rc;

	(void)state;
	s = fmt(cli_format_procs,
		"{\"processes\":[{\"id\":1,\"pid\":61,\"argv\":[\"sh\",\"-c\",\"echo \\u001b[2J\"],\"pty\":true,"
		"\"running\":false,\"exit_code\":null,\"signal\":15,\"timed_out\":false,\"output_bytes\":2048,"
		"\"attached\":0},{\"id\":2,\"pid\":70,\"argv\":[\"sleep\"],\"pty\":false,\"running\":true,"
		"\"exit_code\":null,\"signal\":null,\"timed_out\":false,\"output_bytes\":0,\"attached\":1}]}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s,
			    "ID     PID     STATE      PTY  OUTPUT     ARGV\n"
			    "1      61      signal 15  yes  2.0 KiB    sh -c echo ?[2J\n"
			    "2      70      running    no   0 B        sleep\n");
	free(s);
	s = fmt(cli_format_procs, "{\"processes\":[{\"id\":1}]}", &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(s, "");
	free(s);

	s = fmt(cli_format_exit, "{\"id\":1,\"exit_code\":3,\"signal\":null,\"timed_out\":false}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "exit 3\n");
	free(s);
	s = fmt(cli_format_exit, "{\"id\":1,\"exit_code\":124,\"signal\":null,\"timed_out\":true}",
		&rc);
	assert_string_equal(s, "timed out\n");
	free(s);

	s = fmt(cli_format_port,
		"{\"host_address\":\"127.0.0.1\",\"host_port\":40123,\"guest_port\":8080,\"target\":\"tcp\"}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "127.0.0.1:40123 -> guest port 8080 (tcp)\n");
	free(s);
	s = fmt(cli_format_ports,
		"{\"ports\":[{\"host_address\":\"127.0.0.1\",\"host_port\":40123,\"guest_port\":8080,"
		"\"connections\":1,\"connections_total\":7}]}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s,
			    "HOST                  GUEST      TARGET  OPEN     TOTAL\n"
			    "127.0.0.1:40123       8080       -       1        7\n");
	free(s);

	s = fmt(cli_format_fs_list,
		"{\"path\":\"/srv\",\"entries\":[{\"path\":\"/srv/app\",\"kind\":\"dir\",\"size\":4096,\"mode\":1005,"
		"\"uid\":1000,\"gid\":1000,\"mtime\":\"2024-11-22T10:00:00.000Z\"},{\"path\":\"/srv/l\",\"kind\":"
		"\"symlink\",\"size\":3,\"mode\":511,\"uid\":0,\"gid\":0,\"mtime\":\"2024-11-22T10:00:00.000Z\","
		"\"target\":\"app\"}],\"count\":2,\"truncated\":false,\"skipped\":0}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(
		s,
		"drwxr-xr-t  1000  1000         4096 2024-11-22T10:00:00.000Z /srv/app\n"
		"lrwxrwxrwx     0     0            3 2024-11-22T10:00:00.000Z /srv/l -> app\n");
	free(s);

	s = fmt(cli_format_stat,
		"{\"path\":\"/bin/sh\",\"kind\":\"file\",\"size\":7,\"mode\":2541,\"mode_octal\":\"04755\",\"uid\":0,"
		"\"gid\":0,\"nlink\":1,\"mtime\":\"2024-11-22T18:26:40.123Z\"}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s,
			    "path:  /bin/sh\nkind:  file\nsize:  7\nmode:  4755 (-rwsr-xr-x)\nowner: 0:0\n"
			    "links: 1\nmtime: 2024-11-22T18:26:40.123Z\n");
	free(s);
	s = fmt(cli_format_stat, "{\"path\":\"/x\",\"kind\":\"file\"}", &rc);
	assert_int_equal(rc, -1);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_parse),
		cmocka_unit_test(test_spawn_and_shell_parse),
		cmocka_unit_test(test_proc_parse),
		cmocka_unit_test(test_fs_parse),
		cmocka_unit_test(test_port_parse),
		cmocka_unit_test(test_preview_parse),
		cmocka_unit_test(test_tty_request),
		cmocka_unit_test(test_http_head_parse),
		cmocka_unit_test(test_tty_resize_escape),
		cmocka_unit_test(test_ndjson_until),
		cmocka_unit_test(test_format_new),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
