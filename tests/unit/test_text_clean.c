/*
 * lib/base/text_clean.c: a hostile guest or client cannot drive a
 * terminal or forge a log line through the scrubbers. ESC sequences, C1
 * controls (raw 0x9b and UTF-8 U+009B), DEL, newlines and invalid UTF-8
 * (overlong, surrogate, cut short, stray continuation) come out as '?',
 * one per byte; valid UTF-8 is kept by the term rule; the ascii rule
 * keeps only 0x20..0x7e; copies never split a character or overrun cap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/text_clean.h"
#include "lib/base/utf8.h"

static void term_is(const char *in, size_t n, const char *want)
{
	char out[256], buf[256];
	FILE *f;
	char *mem = NULL;
	size_t memlen = 0;

	/* the copy */
	assert_int_equal(text_clean_term(out, sizeof(out), in, n), strlen(want));
	assert_string_equal(out, want);
	/* in place (NUL-terminated input only) */
	if (strlen(in) == n) {
		memcpy(buf, in, n + 1);
		text_clean_term_inplace(buf);
		assert_string_equal(buf, want);
		f = open_memstream(&mem, &memlen);
		assert_non_null(f);
		text_clean_term_fput(f, in);
		fclose(f);
		assert_string_equal(mem, want);
		free(mem);
	}
	/* whatever came in, what comes out is valid UTF-8 without controls */
	assert_true(utf8_valid((const uint8_t *)out, strlen(out)));
	assert_int_equal(text_clean_control_at(out, strlen(out)), strlen(out));
}

#define TERM(in, want) term_is(in, sizeof(in) - 1, want)

static void test_term_keeps_text(void **state)
{
	(void)state;
	TERM("", "");
	TERM("plain ascii ~!", "plain ascii ~!");
	TERM("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80",
	     "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80");
	TERM("\xc2\xa0nbsp", "\xc2\xa0nbsp"); /* U+00A0: the first character after C1 */
}

static void test_term_controls(void **state)
{
	(void)state;
	TERM("\x1b[31mred\x1b[0m", "?[31mred?[0m"); /* ESC (CSI) */
	TERM("\x1b]0;title\x07", "?]0;title?");     /* OSC + BEL */
	TERM("a\nforged log line\r\n", "a?forged log line??");
	TERM("tab\there", "tab?here");
	TERM("del\x7f", "del?");
	TERM("\x9b"
	     "31m",
	     "?31m"); /* raw 8-bit CSI */
	TERM("\xc2\x9b"
	     "31m",
	     "??31m");                    /* U+009B, CSI as UTF-8 */
	TERM("\xc2\x80\xc2\x9f", "????"); /* C1's ends */
	TERM("\x01\x1f", "??");
}

static void test_term_invalid_utf8(void **state)
{
	(void)state;
	TERM("\x80", "?");                /* stray continuation */
	TERM("\xc0\xaf", "??");           /* overlong '/' */
	TERM("\xe0\x80\xaf", "???");      /* overlong, 3 bytes */
	TERM("\xed\xa0\x80", "???");      /* surrogate U+D800 */
	TERM("\xf4\x90\x80\x80", "????"); /* above U+10FFFF */
	TERM("\xf5", "?");
	TERM("\xff\xfe", "??");
	TERM("ab\xe2\x82", "ab??"); /* cut short at the end */
	TERM("\xe2\x82"
	     "x",
	     "??x");               /* cut short in the middle */
	term_is("a\0b", 3, "a?b"); /* NUL inside a counted copy */
}

static void test_term_copy_bounds(void **state)
{
	char out[8];

	(void)state;
	/* cap 0: nothing written, not even the NUL */
	out[0] = 'x';
	assert_int_equal(text_clean_term(out, 0, "abc", 3), 0);
	assert_int_equal(out[0], 'x');
	assert_int_equal(text_clean_term(out, 1, "abc", 3), 0);
	assert_string_equal(out, "");
	assert_int_equal(text_clean_term(out, 4, "abcdef", 6), 3);
	assert_string_equal(out, "abc");
	/* A 4-byte character that does not fit is left out whole. */
	assert_int_equal(text_clean_term(out, 6, "ab\xf0\x9f\x98\x80", 6), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(text_clean_term(out, 7, "ab\xf0\x9f\x98\x80", 6), 6);
	/* n stops the read: the bytes after it are not looked at */
	assert_int_equal(text_clean_term(out, sizeof(out), "abc\x1b", 3), 3);
	assert_string_equal(out, "abc");
}

static void test_ascii(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(text_clean_ascii(out, sizeof(out), "GET /v1/x?a=b", 13), 13);
	assert_string_equal(out, "GET /v1/x?a=b");
	text_clean_ascii(out, sizeof(out), "/p\n200 GET /forged", 18);
	assert_string_equal(out, "/p?200 GET /forged");
	text_clean_ascii(out, sizeof(out), "h\xc3\xa9\x7f\x1b\x9b", 6);
	assert_string_equal(out, "h?????");
	text_clean_ascii(out, sizeof(out), "a\0b", 3);
	assert_string_equal(out, "a?b");
	assert_int_equal(text_clean_ascii(out, 4, "abcdef", 6), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(text_clean_ascii(out, 0, "abc", 3), 0);
}

static void test_control_at(void **state)
{
	(void)state;
	assert_int_equal(text_clean_control_at("", 0), 0);
	assert_int_equal(text_clean_control_at("/snap/dir", 9), 9);
	assert_int_equal(text_clean_control_at("/snap\ndir", 9), 5);
	assert_int_equal(text_clean_control_at("x\x7f", 2), 1); /* DEL too */
	assert_int_equal(text_clean_control_at("\x1b", 1), 0);
	assert_int_equal(text_clean_control_at("a\0", 2), 1);
	/* UTF-8 is not a control: the refusal checks let names through */
	assert_int_equal(text_clean_control_at("h\xc3\xa9", 3), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_term_keeps_text),
		cmocka_unit_test(test_term_controls),
		cmocka_unit_test(test_term_invalid_utf8),
		cmocka_unit_test(test_term_copy_bounds),
		cmocka_unit_test(test_ascii),
		cmocka_unit_test(test_control_at),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
