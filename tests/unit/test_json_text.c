/*
 * lib/base/json_text, the one JSON writer.
 *
 * Reals: the shortest text that reads back as the same double, with the
 * digits and the layout of Python's repr (3.142, not jansson's
 * 3.1419999999999999; 1e+300; 5e-324; -0.0), always still a real when
 * read back, at powers of two too (where the nearest text of the fewest
 * digits does not read back and its neighbour does); NaN and infinities
 * refused. Everything else byte for byte jansson's json_dumps for the
 * flags kiln uses: escapes, key order, indentation, bare values. Refused:
 * flags kiln does not use, a bare value without JSON_ENCODE_ANY, a string
 * that is not UTF-8, nesting past the cap (a value that contains itself).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/json_text.h"

static void assert_real(double x, const char *want)
{
	char out[JSON_TEXT_REAL_MAX];
	size_t n = json_text_real(x, out);

	if (strcmp(out, want) != 0)
		fail_msg("%.17g: got %s, want %s", x, out, want);
	assert_int_equal(n, strlen(want));
	/* reads back as the same double, sign of a zero included */
	assert_true(strtod(out, NULL) == x);
	assert_int_equal(!!signbit(strtod(out, NULL)), !!signbit(x));
}

static void test_real_shortest(void **state)
{
	(void)state;
	assert_real(3.142, "3.142"); /* jansson: 3.1419999999999999 */
	assert_real(round(M_PI * 1000) / 1000, "3.142");
	assert_real(0.1, "0.1");
	assert_real(0.1 + 0.2, "0.30000000000000004");
	assert_real(440763456 / 1e6, "440.763456"); /* jansson: 440.76345600000002 */
	assert_real(1e300, "1e+300");
	assert_real(5e-324, "5e-324");
	assert_real(-0.0, "-0.0");
	assert_real(0.0, "0.0");
	assert_real(5.0, "5.0");
	assert_real(-12.5, "-12.5");
	assert_real(1.7976931348623157e308, "1.7976931348623157e+308");
	assert_real(2.2250738585072014e-308, "2.2250738585072014e-308");
	/* Python repr's plain range: exponents -4..15 */
	assert_real(1e-4, "0.0001");
	assert_real(1e-5, "1e-05");
	assert_real(1.5e-7, "1.5e-07");
	assert_real(1e15, "1000000000000000.0");
	assert_real(1e16, "1e+16");
	assert_real(1234567890123456.8, "1234567890123456.8");
	assert_real(9007199254740993.0, "9007199254740992.0");
	/* powers of two whose nearest 16-digit text falls out below */
	assert_real(7.120236347223045e-307, "7.120236347223045e-307");
	assert_real(5.966672584960166e-154, "5.966672584960166e-154");
	assert_real(7.854549544476363e-90, "7.854549544476363e-90");
}

static void test_real_refused(void **state)
{
	char out[JSON_TEXT_REAL_MAX];

	(void)state;
	assert_int_equal(json_text_real(NAN, out), 0);
	assert_int_equal(json_text_real(INFINITY, out), 0);
	assert_int_equal(json_text_real(-INFINITY, out), 0);
}

/* Random doubles and every power of two read back, as a real, in at most
 * 17 significant digits (24 bytes: "-2.2250738585072014e-308"). (Against
 * Python's repr itself: 500000 such doubles gave the same text, checked
 * when this was written.) */
static void test_real_round_trip(void **state)
{
	char out[JSON_TEXT_REAL_MAX];
	uint64_t s = 0x9e3779b97f4a7c15u;

	(void)state;
	for (int i = 0; i < 200000 + 2098; i++) {
		double x;

		if (i < 2098) {
			x = ldexp(1.0, i - 1074);
		} else {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			memcpy(&x, &s, sizeof(x));
			if (!isfinite(x))
				continue;
		}
		assert_true(json_text_real(x, out) > 0);
		if (strtod(out, NULL) != x)
			fail_msg("%.17g wrote %s", x, out);
		assert_true(strlen(out) <= 24);
		assert_true(strpbrk(out, ".e") != NULL);
	}
}

/* ---- documents ---- */

static json_t *load(const char *text)
{
	json_error_t je;
	json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);

	if (!v)
		fail_msg("test JSON does not parse: %s: %s", text, je.text);
	return v;
}

static void assert_text(const json_t *v, size_t flags, const char *want)
{
	char *s = json_text(v, flags);

	assert_non_null(s);
	if (strcmp(s, want) != 0)
		fail_msg("got  %s\nwant %s", s, want);
	free(s);
}

static void test_reals_in_documents(void **state)
{
	json_t *v = load("{\"pi\": 3.142, \"ms\": 440.763456, \"n\": [1, 2.5, -0.0, 1e300, 5e-324, "
			 "0.1, 5.0, -7], \"big\": 12345678901234567890.0}");

	(void)state;
	assert_text(v, JSON_COMPACT,
		    "{\"pi\":3.142,\"ms\":440.763456,\"n\":[1,2.5,-0.0,1e+300,5e-324,0.1,5.0,-7],"
		    "\"big\":1.2345678901234567e+19}");
	json_decref(v);
	v = json_real(round(M_PI * 1000) / 1000);
	assert_text(v, JSON_ENCODE_ANY, "3.142");
	json_decref(v);
}

/* Documents without reals: what jansson writes, for every flag set kiln uses. */
static const char *const docs[] = {
	"{}",
	"[]",
	"{\"a\": {}, \"b\": [], \"c\": [{}], \"d\": [[[]]]}",
	"{\"s\": \"quote \\\" backslash \\\\ slash / tab \\t nl \\n cr \\r bs \\b ff \\f "
	"ctl \\u0001 \\u001f del \\u007f\"}",
	"{\"utf8\": \"h\\u00e9llo \\u2028 \\ud83d\\ude00 \\u65e5\\u672c\", \"nul\": \"a\\u0000b\"}",
	"{\"k\\\"ey\\n\": 1, \"\": 2, \"\\u0001\": 3}",
	"{\"b\": 1, \"a\": 2, \"ab\": 3, \"A\": 4, \"a\\u0001\": 5, \"\\u00e9\": 6, \"aa\": 7}",
	"[true, false, null, 0, -1, 9223372036854775807, -9223372036854775808, \"x\"]",
	"{\"nested\": {\"deep\": {\"er\": [1, {\"x\": [null, []]}, \"s\"]}}, \"z\": 0}",
	"\"a bare string\"",
	"42",
	"null",
	"true",
};

static const size_t flag_sets[] = {
	JSON_ENCODE_ANY,
	JSON_ENCODE_ANY | JSON_COMPACT,
	JSON_ENCODE_ANY | JSON_INDENT(2),
	JSON_ENCODE_ANY | JSON_INDENT(4) | JSON_SORT_KEYS,
	JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS,
	JSON_ENCODE_ANY | JSON_INDENT(2) | JSON_COMPACT,
	JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_COMPACT,
};

static void test_as_jansson_writes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		json_t *v = load(docs[i]);

		for (size_t f = 0; f < sizeof(flag_sets) / sizeof(flag_sets[0]); f++) {
			char *want = json_dumps(v, flag_sets[f]);

			assert_non_null(want);
			assert_text(v, flag_sets[f], want);
			free(want);
		}
		json_decref(v);
	}
}

static void test_escapes_and_order(void **state)
{
	json_t *v = load(docs[3]);
	char *s;

	(void)state;
	assert_text(v, JSON_COMPACT,
		    "{\"s\":\"quote \\\" backslash \\\\ slash / tab \\t nl \\n cr \\r bs \\b ff \\f "
		    "ctl \\u0001 \\u001F del \x7f\"}");
	json_decref(v);
	v = load(docs[6]);
	assert_text(v, JSON_COMPACT | JSON_SORT_KEYS,
		    "{\"A\":4,\"a\":2,\"a\\u0001\":5,\"aa\":7,\"ab\":3,\"b\":1,\"\xc3\xa9\":6}");
	assert_text(v, JSON_INDENT(1) | JSON_SORT_KEYS,
		    "{\n \"A\": 4,\n \"a\": 2,\n \"a\\u0001\": 5,\n \"aa\": 7,\n \"ab\": 3,\n "
		    "\"b\": 1,\n \"\xc3\xa9\": 6\n}");
	json_decref(v);
	/* a key holding a NUL (jansson 2.14's json_object_setn) */
	v = json_object();
	json_object_setn_new(v, "a\0b", 3, json_integer(1));
	json_object_setn_new(v, "a", 1, json_integer(2));
	assert_text(v, JSON_COMPACT | JSON_SORT_KEYS, "{\"a\":2,\"a\\u0000b\":1}");
	s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	assert_text(v, JSON_COMPACT | JSON_SORT_KEYS, s);
	free(s);
	json_decref(v);
	v = load("[1, {\"a\": 2.5}]");
	assert_text(v, 0, "[1, {\"a\": 2.5}]");
	assert_text(v, JSON_INDENT(2), "[\n  1,\n  {\n    \"a\": 2.5\n  }\n]");
	json_decref(v);
}

static void test_refused(void **state)
{
	json_t *v = json_string("bare"), *o = json_object(), *a, *b;
	char *s;

	(void)state;
	/* a bare value wants JSON_ENCODE_ANY, as with jansson */
	assert_null(json_text(v, JSON_COMPACT));
	assert_null(json_text(NULL, JSON_ENCODE_ANY));
	/* flags kiln does not use */
	assert_null(json_text(o, JSON_ENSURE_ASCII));
	assert_null(json_text(o, JSON_ESCAPE_SLASH));
	assert_null(json_text(o, JSON_EMBED));
	/* JSON_REAL_PRECISION is accepted and ignored */
	json_object_set_new(o, "x", json_real(3.142));
	s = json_text(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
	assert_string_equal(s, "{\"x\":3.142}");
	free(s);
	json_decref(v);
	/* not UTF-8, in a value and in a key */
	v = json_string_nocheck("\xff\xfe");
	assert_null(json_text(v, JSON_ENCODE_ANY));
	json_decref(v);
	json_object_set_new_nocheck(o, "\xc3(", json_true());
	assert_null(json_text(o, JSON_COMPACT));
	json_decref(o);
	/* a value that contains itself: refused at the depth cap, not a crash */
	a = json_array();
	b = json_array();
	json_array_append(a, b);
	json_array_append(b, a);
	assert_null(json_text(a, JSON_COMPACT));
	json_array_clear(b);
	json_decref(a);
	json_decref(b);
}

/* Nesting to the cap is written; one more level with members is not. */
static void test_depth(void **state)
{
	json_t *top = json_array(), *cur = top;
	char *s;

	(void)state;
	for (int d = 1; d < JSON_TEXT_DEPTH_MAX; d++) {
		json_t *n = json_array();

		json_array_append_new(cur, n);
		cur = n;
	}
	json_array_append_new(cur, json_array()); /* empty at depth 2048 */
	s = json_text(top, JSON_COMPACT);
	assert_non_null(s);
	assert_int_equal(strlen(s), 2 * (JSON_TEXT_DEPTH_MAX + 1));
	free(s);
	json_array_append_new(json_array_get(cur, 0), json_integer(1));
	assert_null(json_text(top, JSON_COMPACT));
	json_decref(top);
}

static void test_file_and_stdio(void **state)
{
	char path[] = "/tmp/kiln-json-text-XXXXXX", buf[64] = { 0 };
	json_t *v = load("{\"pi\": 3.142}");
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(json_text_file(v, path, JSON_COMPACT), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	assert_string_equal(buf, "{\"pi\":3.142}");
	rewind(f);
	fclose(f);
	f = fopen(path, "w+");
	assert_int_equal(json_text_stdio(v, f, JSON_COMPACT), 0);
	rewind(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	assert_string_equal(buf, "{\"pi\":3.142}");
	fclose(f);
	/* refused: nothing written, -1 */
	assert_int_equal(json_text_file(v, path, JSON_ENSURE_ASCII), -1);
	assert_int_equal(json_text_file(v, "/nonexistent-dir/x.json", JSON_COMPACT), -1);
	unlink(path);
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_shortest),     cmocka_unit_test(test_real_refused),
		cmocka_unit_test(test_real_round_trip),   cmocka_unit_test(test_reals_in_documents),
		cmocka_unit_test(test_as_jansson_writes), cmocka_unit_test(test_escapes_and_order),
		cmocka_unit_test(test_refused),           cmocka_unit_test(test_depth),
		cmocka_unit_test(test_file_and_stdio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
