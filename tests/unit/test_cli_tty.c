/*
 * Unit tests of api/kiln/cli_tty.c: the pure parts of `kiln shell` and
 * `kiln attach`: the HTTP/1.1 upgrade request for kilnd's tty stream
 * (docs/api.md, "GET .../processes/{proc}/tty"), the parse of kilnd's
 * answer head, and the in-band resize escape (tty_escape.h is kilnd's
 * parser of it).
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

#include "api/kiln/cli_tty.h"
#include "api/kilnd/bodies/tty_escape.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tty_request),
		cmocka_unit_test(test_http_head_parse),
		cmocka_unit_test(test_tty_resize_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
