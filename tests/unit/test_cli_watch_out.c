/*
 * Unit tests of api/kiln/cli_watch_out.c: the NDJSON stream of GET
 * .../files/watch (docs/api.md, "Watching files") turned into kiln fs
 * watch's output, one line per event as it arrives.
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

#include "api/kiln/cli_watch_out.h"

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
		cmocka_unit_test(test_cli_output),
		cmocka_unit_test(test_cli_output_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
