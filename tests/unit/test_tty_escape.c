/*
 * Unit tests of api/kilnd/bodies/tty_escape.c: the in-band resize escape of
 * kilnd's raw terminal stream (GET .../processes/{proc}/tty, docs/api.md
 * "The tty stream").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/tty_escape.h"

/* ---- the resize escape ---- */

struct tty_out {
	uint8_t data[4096];
	size_t len;
	int resizes;
	uint16_t rows[8], cols[8];
	size_t data_at[8]; /* data length when each resize happened: ordering */
	int bad;
};

/* Feed s in pieces of `step` bytes (0: all at once). */
static void tty_run(struct tty_esc *p, const char *s, size_t n, size_t step, struct tty_out *o)
{
	const uint8_t *in = (const uint8_t *)s;

	while (n) {
		size_t piece = step && step < n ? step : n;

		while (piece) {
			uint8_t out[256 + TTY_ESC_MAX];
			size_t olen = 0, k;
			enum tty_esc_ev ev;
			uint16_t r = 0, c = 0;

			assert_true(piece <= 256);
			k = tty_esc_feed(p, in, piece, out, &olen, &ev, &r, &c);
			assert_true(k >= 1 && k <= piece);
			memcpy(o->data + o->len, out, olen);
			o->len += olen;
			if (ev == TTY_ESC_RESIZE) {
				o->rows[o->resizes] = r;
				o->cols[o->resizes] = c;
				o->data_at[o->resizes++] = o->len;
			} else if (ev == TTY_ESC_BAD_SIZE) {
				o->bad++;
			}
			in += k;
			n -= k;
			piece -= k;
		}
	}
}

static void test_tty_escape_any_split(void **state)
{
	static const char s[] =
		"ls -l\r\x1b]kiln;resize;40;120\x07stty size\r\x1b]kiln;resize;7;65535\x07";
	size_t n = sizeof(s) - 1;

	(void)state;
	for (size_t step = 0; step <= n; step++) {
		struct tty_out o = { 0 };
		struct tty_esc p;

		tty_esc_init(&p);
		tty_run(&p, s, n, step, &o);
		assert_int_equal(tty_esc_pending(&p), 0);
		assert_int_equal(o.resizes, 2);
		assert_int_equal(o.rows[0], 40);
		assert_int_equal(o.cols[0], 120);
		assert_int_equal(o.data_at[0], 6);
		assert_int_equal(o.rows[1], 7);
		assert_int_equal(o.cols[1], 65535);
		assert_int_equal(o.len, strlen("ls -l\rstty size\r"));
		assert_memory_equal(o.data, "ls -l\rstty size\r", o.len);
	}
}

/* Everything that is not exactly the sequence reaches the process as it was. */
static void test_tty_escape_leaves_other_input(void **state)
{
	static const char *const inputs[] = {
		"\x1b[A\x1b[B",                   /* arrow keys */
		"\x1b]11;rgb:0000/0000/0000\x07", /* an OSC answer of a terminal */
		"\x1b]kiln;resize;40;\x07",       /* no COLS */
		"\x1b]kiln;resize;;80\x07",       /* no ROWS */
		"\x1b]kiln;resize;123456;80\x07", /* 6 digits */
		"\x1b]kiln;resize;40;80\x1b\\",   /* ST instead of BEL */
		"\x1b]kiln;resize;40,80\x07",
		"\x1b]kiln;size;40;80\x07",
		"\x1b]KILN;resize;40;80\x07",
		"\x1b\x1b\x1b",
		"plain text, no escape at all",
		"\x1b]kiln;resize;40;80x\x07",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		for (size_t step = 0; step <= 3; step++) {
			struct tty_out o = { 0 };
			struct tty_esc p;
			uint8_t rest[TTY_ESC_MAX];
			size_t rl = 0;

			tty_esc_init(&p);
			tty_run(&p, inputs[i], strlen(inputs[i]), step, &o);
			tty_esc_flush(&p, rest, &rl);
			memcpy(o.data + o.len, rest, rl);
			o.len += rl;
			if (o.resizes || o.bad)
				fail_msg("input %zu taken as a resize", i);
			assert_int_equal(o.len, strlen(inputs[i]));
			assert_memory_equal(o.data, inputs[i], o.len);
		}
	}
}

static void test_tty_escape_after_a_false_start(void **state)
{
	/* ESC ESC ] ...: the first ESC is input, the second begins the sequence. */
	static const char s[] = "\x1b\x1b]kiln;resize;3;4\x07"
				"\x1b]ki\x1b]kiln;resize;5;6\x07";

	(void)state;
	for (size_t step = 0; step <= 4; step++) {
		struct tty_out o = { 0 };
		struct tty_esc p;

		tty_esc_init(&p);
		tty_run(&p, s, sizeof(s) - 1, step, &o);
		assert_int_equal(o.resizes, 2);
		assert_int_equal(o.rows[0], 3);
		assert_int_equal(o.cols[0], 4);
		assert_int_equal(o.rows[1], 5);
		assert_int_equal(o.cols[1], 6);
		assert_int_equal(o.len, 5);
		assert_memory_equal(o.data, "\x1b\x1b]ki", 5);
	}
}

static void test_tty_escape_bad_sizes_are_dropped(void **state)
{
	static const char s[] = "a\x1b]kiln;resize;0;80\x07"
				"b\x1b]kiln;resize;24;65536\x07"
				"c\x1b]kiln;resize;99999;1\x07";
	struct tty_out o = { 0 };
	struct tty_esc p;

	(void)state;
	tty_esc_init(&p);
	tty_run(&p, s, sizeof(s) - 1, 0, &o);
	assert_int_equal(o.bad, 3);
	assert_int_equal(o.resizes, 0);
	assert_int_equal(o.len, 3);
	assert_memory_equal(o.data, "abc", 3);
}

static void test_tty_escape_held_prefix_flushes(void **state)
{
	struct tty_out o = { 0 };
	struct tty_esc p;
	uint8_t rest[TTY_ESC_MAX];
	size_t rl = 0;

	(void)state;
	tty_esc_init(&p);
	/* A lone Escape key press is held until the caller gives up on it. */
	tty_run(&p, "x\x1b", 2, 0, &o);
	assert_int_equal(o.len, 1);
	assert_int_equal(tty_esc_pending(&p), 1);
	tty_esc_flush(&p, rest, &rl);
	assert_int_equal(rl, 1);
	assert_int_equal(rest[0], 0x1b);
	assert_int_equal(tty_esc_pending(&p), 0);
	/* The longest prefix still fits. */
	tty_run(&p, "\x1b]kiln;resize;12345;12345", 25, 1, &o);
	assert_int_equal(tty_esc_pending(&p), 25);
	tty_run(&p, "\x07", 1, 0, &o);
	assert_int_equal(o.bad, 0);
	assert_int_equal(o.resizes, 1);
	assert_int_equal(o.rows[0], 12345);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tty_escape_any_split),
		cmocka_unit_test(test_tty_escape_leaves_other_input),
		cmocka_unit_test(test_tty_escape_after_a_false_start),
		cmocka_unit_test(test_tty_escape_bad_sizes_are_dropped),
		cmocka_unit_test(test_tty_escape_held_prefix_flushes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
