/*
 * File watching outside the guest: kilnd's GET .../files/watch (its route,
 * its query with hostile values, the NDJSON lines it renders) and kiln fs
 * watch (its command line, and the stream turned into output lines: the
 * human format, --json as sent, an end, an error event, broken and
 * oversized lines, names that would drive the terminal).
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
#include "api/kiln/cli_watch_out.h"
#include "api/kilnd/core/query.h"
#include "api/kilnd/bodies/watch_render.h"

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

/* ---- kilnd ---- */

static enum api_code watch_q(const struct query_kv *kv, size_t n, struct kiln_watch_opts *o)
{
	struct api_err e = { 0 };
	const char *path;
	int r = query_file_watch(kv, n, &path, o, &e);

	if (r) {
		assert_true(e.msg[0] != '\0');
		return e.code;
	}
	assert_true(path[0] == '/');
	return API_OK;
}

static void test_query(void **state)
{
	struct kiln_watch_opts o;
	struct query_kv kv[6] = {
		{ "path", "/workspace" }, { "recursive", "true" }, { "max_watches", "10" },
		{ "queue", "64" },        { "user", "root" },
	};

	(void)state;
	assert_int_equal(watch_q(kv, 1, &o), API_OK);
	assert_int_equal(o.flags, 0);
	assert_int_equal(o.size, sizeof(o));
	assert_int_equal(o.max_watches, AGENT_WATCH_WATCHES_DEFAULT);
	assert_int_equal(o.queue, AGENT_WATCH_QUEUE_DEFAULT);
	assert_int_equal(watch_q(kv, 5, &o), API_OK);
	assert_int_equal(o.flags, KILN_AGENT_RECURSIVE | KILN_AGENT_AS_ROOT);
	assert_int_equal(o.max_watches, 10);
	assert_int_equal(o.queue, 64);
	kv[1].value = "1";
	assert_int_equal(watch_q(kv, 2, &o), API_OK);
	assert_int_equal(o.flags, KILN_AGENT_RECURSIVE);

	/* Hostile and wrong values: one clear 4xx code each. */
	static const struct {
		const char *key, *value;
	} bad[] = {
		{ "recursive", "yes" },     { "recursive", NULL },   { "max_watches", "0" },
		{ "max_watches", "65537" }, { "max_watches", "-1" }, { "max_watches", "0x10" },
		{ "queue", "15" },          { "queue", "65537" },    { "queue", "" },
		{ "user", "nobody" },       { "follow", "1" },       { "path", "/second" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kv[1] = (struct query_kv){ bad[i].key, bad[i].value };
		if (watch_q(kv, 2, &o) == API_OK)
			fail_msg("%s=%s was accepted", bad[i].key,
				 bad[i].value ? bad[i].value : "(none)");
	}
	kv[1] = (struct query_kv){ "follow", "1" };
	assert_int_equal(watch_q(kv, 2, &o), API_E_UNKNOWN_FIELD);
	kv[0] = (struct query_kv){ "path", "relative" };
	assert_int_equal(watch_q(kv, 1, &o), API_E_BAD_FIELD);
	assert_int_equal(watch_q(kv, 0, &o), API_E_MISSING_FIELD);
}

static void line_is(char *line, const size_t *len, const char *want)
{
	assert_non_null(line);
	assert_int_equal(*len, strlen(want));
	assert_string_equal(line, want);
	free(line);
}

static void test_render(void **state)
{
	struct kiln_fs_event ev = {
		.size = sizeof(ev), .change = KILN_FS_CREATE, .seq = 0, .path = "src/a.c"
	};
	size_t len;

	(void)state;
	line_is(watch_line_started("/w", true, 3, &len), &len,
		"{\"type\":\"watching\",\"path\":\"/w\",\"recursive\":true,\"watches\":3}\n");
	line_is(watch_line_event(&ev, &len), &len,
		"{\"type\":\"create\",\"seq\":0,\"path\":\"src/a.c\",\"is_dir\":false}\n");
	ev = (struct kiln_fs_event){ .size = sizeof(ev),
				     .change = KILN_FS_RENAME,
				     .seq = 7,
				     .path = "d2",
				     .old_path = "d1",
				     .is_dir = 1,
				     .lossy = 1 };
	line_is(watch_line_event(&ev, &len), &len,
		"{\"type\":\"rename\",\"seq\":7,\"path\":\"d2\",\"old_path\":\"d1\",\"is_dir\":true,\"lossy\":true}\n");
	ev = (struct kiln_fs_event){ .size = sizeof(ev),
				     .change = KILN_FS_OVERFLOW,
				     .seq = 8,
				     .reason = "queue",
				     .dropped = 12 };
	line_is(watch_line_event(&ev, &len), &len,
		"{\"type\":\"overflow\",\"seq\":8,\"reason\":\"queue\",\"dropped\":12}\n");
	ev.change = (enum kiln_fs_change)AGENT_FS_KIND_COUNT;
	assert_null(watch_line_event(&ev, &len));
	line_is(watch_line_end("deleted", NULL, &len), &len,
		"{\"type\":\"end\",\"reason\":\"deleted\"}\n");
	line_is(watch_line_end("sandbox_stopped", "hibernated", &len), &len,
		"{\"type\":\"end\",\"reason\":\"sandbox_stopped\",\"state\":\"hibernated\"}\n");
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

struct sink {
	char out[8192], err[1024];
	size_t nout, nerr;
	bool broken;
};

static int collect(void *arg, int fd, const void *p, size_t n)
{
	struct sink *s = arg;
	char *buf = fd == 1 ? s->out : s->err;
	size_t *len = fd == 1 ? &s->nout : &s->nerr,
	       cap = fd == 1 ? sizeof(s->out) : sizeof(s->err);

	if (s->broken)
		return -EPIPE;
	assert_true(*len + n < cap);
	memcpy(buf + *len, p, n);
	*len += n;
	buf[*len] = '\0';
	return 0;
}

static int feed_str(struct cli_watch_out *o, const char *s)
{
	return cli_watch_out_feed(o, s, strlen(s));
}

static const char stream[] =
	"{\"type\":\"watching\",\"path\":\"/w\",\"recursive\":true,\"watches\":2}\n"
	"{\"type\":\"create\",\"seq\":0,\"path\":\"a.txt\",\"is_dir\":false}\n"
	"{\"type\":\"modify\",\"seq\":1,\"path\":\"a.txt\",\"is_dir\":false}\n"
	"{\"type\":\"rename\",\"seq\":2,\"path\":\"b.txt\",\"old_path\":\"a.txt\",\"is_dir\":false}\n"
	"{\"type\":\"create\",\"seq\":3,\"path\":\"sub\",\"is_dir\":true}\n"
	"{\"type\":\"delete\",\"seq\":4,\"path\":\"b.txt\",\"is_dir\":false}\n"
	"{\"type\":\"overflow\",\"seq\":5,\"reason\":\"queue\",\"dropped\":7}\n"
	"{\"type\":\"future\",\"seq\":6}\n"
	"{\"type\":\"end\",\"reason\":\"deleted\"}\n";

static void test_cli_output(void **state)
{
	struct cli_watch_out o;
	struct sink s = { 0 };

	(void)state;
	/* Any split of the stream gives the same output. */
	cli_watch_out_init(&o, false, collect, &s);
	for (size_t i = 0; i < sizeof(stream) - 1; i += 7)
		assert_int_equal(cli_watch_out_feed(&o, stream + i,
						    i + 7 < sizeof(stream) - 1
							    ? 7
							    : sizeof(stream) - 1 - i),
				 0);
	assert_int_equal(cli_watch_out_end(&o), 0);
	assert_string_equal(
		s.out,
		"create  a.txt\nmodify  a.txt\nrename  a.txt -> b.txt\ncreate  sub/\ndelete  b.txt\n"
		"overflow  7 events lost (queue); rescan to catch up\n");
	assert_string_equal(s.err,
			    "kiln: watching /w (recursive, 2 directories); Ctrl-C ends\n"
			    "kiln: the watch ended: deleted\n");
	cli_watch_out_free(&o);

	/* --json: the lines as sent, nothing on stderr. */
	memset(&s, 0, sizeof(s));
	cli_watch_out_init(&o, true, collect, &s);
	assert_int_equal(cli_watch_out_feed(&o, stream, sizeof(stream) - 1), 0);
	assert_int_equal(cli_watch_out_end(&o), 0);
	assert_string_equal(s.out, stream);
	assert_int_equal(s.nerr, 0);
	cli_watch_out_free(&o);
}

static void test_cli_output_bad(void **state)
{
	struct cli_watch_out o;
	struct sink s = { 0 };
	char *big;

	(void)state;
	/* An error event: kilnd's code and message. */
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(
		feed_str(&o,
			 "{\"type\":\"error\",\"error\":{\"code\":\"agent_unavailable\",\"message\":\"gone\"}}\n"),
		-1);
	assert_string_equal(o.fail.code, "agent_unavailable");
	assert_string_equal(o.fail.msg, "gone");
	assert_int_equal(cli_watch_out_end(&o), -1);
	cli_watch_out_free(&o);
	/* Not JSON; a stream cut without its end; an event after the end. */
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(feed_str(&o, "<html>\n"), -1);
	assert_string_equal(o.fail.code, "bad_stream");
	cli_watch_out_free(&o);
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(
		feed_str(&o,
			 "{\"type\":\"create\",\"seq\":0,\"path\":\"x\",\"is_dir\":false}\n{\"ty"),
		0);
	assert_int_equal(cli_watch_out_end(&o), -1);
	assert_string_equal(o.fail.msg, "kilnd's watch stream is broken: it ended inside a line");
	cli_watch_out_free(&o);
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(cli_watch_out_end(&o), -1);
	assert_string_equal(o.fail.msg,
			    "kilnd's watch stream is broken: it ended without its end event");
	cli_watch_out_free(&o);
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(feed_str(&o, "{\"type\":\"end\",\"reason\":\"x\"}\n{\"type\":\"end\"}\n"),
			 -1);
	cli_watch_out_free(&o);
	/* An event without its path. */
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(feed_str(&o, "{\"type\":\"delete\",\"seq\":0}\n"), -1);
	cli_watch_out_free(&o);
	/* A line that never ends stops at the bound. */
	big = malloc(CLI_WATCH_LINE_MAX + 2);
	assert_non_null(big);
	memset(big, 'a', CLI_WATCH_LINE_MAX + 1);
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(cli_watch_out_feed(&o, big, CLI_WATCH_LINE_MAX + 1), -1);
	assert_string_equal(o.fail.msg,
			    "kilnd's watch stream is broken: a line longer than 64 KiB");
	cli_watch_out_free(&o);
	free(big);
	/* A name with a terminal escape is printed harmless. */
	memset(&s, 0, sizeof(s));
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(
		feed_str(&o,
			 "{\"type\":\"create\",\"seq\":0,\"path\":\"a\\u001b[2Jb\\nc\",\"is_dir\":false}\n"),
		0);
	assert_string_equal(s.out, "create  a?[2Jb?c\n");
	cli_watch_out_free(&o);
	/* Our reader went away. */
	s.broken = true;
	cli_watch_out_init(&o, false, collect, &s);
	assert_int_equal(cli_watch_out_feed(&o, stream + 61, 56), -1);
	assert_int_equal(o.fail.exit, CLI_EXIT_LOCAL);
	cli_watch_out_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query),          cmocka_unit_test(test_render),
		cmocka_unit_test(test_cli_parse),      cmocka_unit_test(test_cli_output),
		cmocka_unit_test(test_cli_output_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
