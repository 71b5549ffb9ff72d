/*
 * lib/base/utf8.c, the one UTF-8 decoder both ends of the agent protocol
 * and kilnd's JSON bodies use: RFC 3629 exactly (overlongs, surrogates,
 * code points above U+10FFFF and stray continuation bytes are invalid),
 * incomplete sequences at the end of a chunk are held back, and the lossy
 * copy replaces each invalid byte with U+FFFD, never splits a character
 * at its output limit, reports the loss, and drops console controls only
 * when asked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lib/base/utf8.h"
#include "tests/unit/bytes.h"

static void test_decoder(void **state)
{
	(void)state;
	assert_true(utf8_valid((const uint8_t *)"", 0));
	assert_true(utf8_valid((const uint8_t *)"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
	assert_true(utf8_valid((const uint8_t *)"\xf4\x8f\xbf\xbf", 4)); /* U+10FFFF */
	assert_false(utf8_valid((const uint8_t *)"\xc1\xbf", 2));
	assert_false(utf8_valid((const uint8_t *)"\xed\xb0\x80", 3));
	assert_false(utf8_valid((const uint8_t *)"\xc3", 1));
	assert_int_equal(utf8_seq_len((const uint8_t *)"a", 1), 1);
	assert_int_equal(utf8_seq_len((const uint8_t *)"\xc3", 1), -1);     /* needs 1 more */
	assert_int_equal(utf8_seq_len((const uint8_t *)"\xf0\x9f", 2), -2); /* needs 2 more */
	assert_int_equal(utf8_seq_len((const uint8_t *)"\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(utf8_seq_len((const uint8_t *)"\xf0\x8f", 2),
			 0); /* overlong, known early */
	assert_int_equal(utf8_seq_len((const uint8_t *)"\x80", 1), 0);
}

static void test_valid_more(void **state)
{
	(void)state;
	assert_false(utf8_valid(U("\x80"), 1));
	assert_false(utf8_valid(U("\xe0\x80\xaf"), 3)); /* overlong */
	assert_false(utf8_valid(U("\xf5\x80\x80\x80"), 4));
	assert_false(utf8_valid(U("\xf4\x90\x80\x80"), 4)); /* U+110000 */
	assert_true(utf8_valid(U("a\0b"), 3));              /* NUL is a character */
	assert_false(utf8_valid(U("ok\xc0"), 3));
}

static void test_lossy(void **state)
{
	char out[16];
	bool lossy = false;

	(void)state;
	assert_int_equal(utf8_lossy(out, sizeof(out), U("plain"), 5, 0, &lossy), 5);
	assert_string_equal(out, "plain");
	assert_false(lossy);
	assert_int_equal(utf8_lossy(out, sizeof(out),
				    U("a\xff"
				      "b"),
				    3, 0, &lossy),
			 5);
	assert_string_equal(out,
			    "a\xef\xbf\xbd"
			    "b");
	assert_true(lossy);
	lossy = false;
	utf8_lossy(out, sizeof(out), U("x\xe2\x82"), 3, 0, &lossy); /* cut euro sign */
	assert_string_equal(out, "x\xef\xbf\xbd\xef\xbf\xbd");
	assert_true(lossy);
	/* The output limit never splits a character, nor a replacement. */
	lossy = false;
	assert_int_equal(utf8_lossy(out, 5, U("ab\xe2\x82\xac"), 5, 0, &lossy), 2);
	assert_string_equal(out, "ab");
	assert_false(lossy);
	assert_int_equal(utf8_lossy(out, 5, U("ab\xff"), 3, 0, NULL), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(utf8_lossy(out, 1, U("abc"), 3, 0, NULL), 0);
	assert_string_equal(out, "");
	out[0] = 'x';
	assert_int_equal(utf8_lossy(out, 0, U("abc"), 3, 0, NULL), 0);
	assert_int_equal(out[0], 'x'); /* cap 0: nothing written */
}

static void test_lossy_drop_controls(void **state)
{
	char out[64];
	bool lossy = false;

	(void)state;
	utf8_lossy(out, sizeof(out), U("\x1b[31mred\r\tx\x7f"), 12, UTF8_DROP_CONTROLS, &lossy);
	assert_string_equal(out, "[31mred\tx"); /* tab kept */
	assert_false(lossy);                    /* dropping is not a loss of text */
	utf8_lossy(out, sizeof(out), U("\x1b[31mred\r"), 9, 0, NULL);
	assert_string_equal(out, "\x1b[31mred\r"); /* without the flag: all kept */
	assert_int_equal(utf8_lossy(out, sizeof(out), U("\r\n\x01"), 3, UTF8_DROP_CONTROLS, NULL),
			 0);
}

static void test_complete_prefix(void **state)
{
	(void)state;
	assert_int_equal(utf8_complete_prefix(U("ab\xe2\x82"), 4), 2);
	assert_int_equal(utf8_complete_prefix(U("ab\xe2\x82\xac"), 5), 5);
	assert_int_equal(utf8_complete_prefix(U("\xf0\x9d\x84"), 3), 0);
	assert_int_equal(utf8_complete_prefix(U("ab\xff"), 3), 3);
	assert_int_equal(utf8_complete_prefix(U(""), 0), 0);
}

static void test_utf8(void **state)
{
	(void)state;
	assert_true(utf8_valid(U("héllo €𝄞"), strlen("héllo €𝄞")));
	assert_true(utf8_valid(U(""), 0));
	assert_true(utf8_valid(U("a\0b"), 3));          /* NUL is a character; JSON escapes it */
	assert_false(utf8_valid(U("\xc3"), 1));         /* truncated */
	assert_false(utf8_valid(U("\xc0\xaf"), 2));     /* overlong '/' */
	assert_false(utf8_valid(U("\xe0\x80\xaf"), 3)); /* overlong */
	assert_false(utf8_valid(U("\xed\xa0\x80"), 3)); /* surrogate U+D800 */
	assert_false(utf8_valid(U("\xf4\x90\x80\x80"), 4)); /* above U+10FFFF */
	assert_false(utf8_valid(U("\xff"), 1));
	assert_false(utf8_valid(U("\x80"), 1));

	/* Held back: only an incomplete but valid start. */
	assert_int_equal(utf8_complete_prefix(U("ab\xe2\x82"), 4), 2);
	assert_int_equal(utf8_complete_prefix(U("ab\xe2"), 3), 2);
	assert_int_equal(utf8_complete_prefix(U("ab\xe2\x82\xac"), 5), 5);
	assert_int_equal(utf8_complete_prefix(U("\xf0\x9d\x84"), 3), 0);
	assert_int_equal(utf8_complete_prefix(U("ab\xff"), 3), 3);
	assert_int_equal(utf8_complete_prefix(U("ab\xe2\x28"), 4), 4); /* invalid already */
	assert_int_equal(utf8_complete_prefix(U(""), 0), 0);

	char out[64];

	assert_int_equal(utf8_lossy(out, sizeof(out), U("a\xffz"), 3, 0, NULL), 5);
	assert_string_equal(out, "a\xef\xbf\xbdz");
	utf8_lossy(out, sizeof(out), U("\x1b[31mred\r\tx\x7f"), 12, UTF8_DROP_CONTROLS, NULL);
	assert_string_equal(out, "[31mred\tx");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decoder),         cmocka_unit_test(test_valid_more),
		cmocka_unit_test(test_lossy),           cmocka_unit_test(test_lossy_drop_controls),
		cmocka_unit_test(test_complete_prefix), cmocka_unit_test(test_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
