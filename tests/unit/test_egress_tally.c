/*
 * egress_tally: kiln-egress's decision lines counted as they come, in
 * chunks of any size; who decided; diagnostics, escaped look-alikes and
 * over-long lines not counted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/supervision/egress_tally.h"

static const char lines[] =
	"{\"time\":\"t\",\"path\":\"/a\",\"decision\":\"allow\",\"rule\":0,\"reason\":\"\",\"policy\":null}\n"
	"kiln-egress: listening on an inherited socket, 1 rules\n"
	"{\"decision\":\"deny\",\"rule\":null,\"reason\":\"x\",\"policy\":\"callback\"}\n"
	"{\"decision\":\"deny\",\"reason\":\"late\",\"policy\":\"timeout\"}\n"
	"{\"decision\":\"allow\",\"policy\":\"callback\"}\n"
	/* a path that spells the fields, as kiln-egress's writer escapes it */
	"{\"path\":\"/\\\"decision\\\":\\\"allow\\\"\",\"decision\":\"deny\",\"policy\":null}\n";

static void test_counts(void **state)
{
	struct egress_tally *t = calloc(1, sizeof(*t));
	struct egress_counts c = { { 0 }, { 0 } };

	(void)state;
	egress_tally_feed(t, lines, strlen(lines), &c);
	assert_int_equal(c.allow[EGRESS_BY_RULES], 1);
	assert_int_equal(c.allow[EGRESS_BY_CALLBACK], 1);
	assert_int_equal(c.deny[EGRESS_BY_CALLBACK], 1);
	assert_int_equal(c.deny[EGRESS_BY_TIMEOUT], 1);
	assert_int_equal(c.deny[EGRESS_BY_RULES], 1);
	assert_int_equal(c.allow[EGRESS_BY_TIMEOUT], 0);
	free(t);
}

static void test_any_split(void **state)
{
	size_t n = strlen(lines);

	(void)state;
	for (size_t cut = 1; cut < 40; cut++) {
		struct egress_tally *t = calloc(1, sizeof(*t));
		struct egress_counts c = { { 0 }, { 0 } };

		for (size_t at = 0; at < n; at += cut)
			egress_tally_feed(t, lines + at, at + cut > n ? n - at : cut, &c);
		assert_int_equal(c.allow[EGRESS_BY_RULES] + c.allow[EGRESS_BY_CALLBACK], 2);
		assert_int_equal(c.deny[EGRESS_BY_RULES] + c.deny[EGRESS_BY_CALLBACK] +
					 c.deny[EGRESS_BY_TIMEOUT],
				 3);
		free(t);
	}
}

static void test_long_line_not_counted(void **state)
{
	struct egress_tally *t = calloc(1, sizeof(*t));
	struct egress_counts c = { { 0 }, { 0 } };
	char *big = malloc(EGRESS_TALLY_LINE_MAX + 64);

	(void)state;
	memset(big, 'x', EGRESS_TALLY_LINE_MAX + 64);
	memcpy(big, "{\"decision\":\"allow\",\"path\":\"", 28);
	egress_tally_feed(t, big, EGRESS_TALLY_LINE_MAX + 64, &c);
	egress_tally_feed(t, "\"}\n", 3, &c);
	assert_int_equal(c.allow[EGRESS_BY_RULES], 0);
	/* The next line counts again. */
	egress_tally_feed(t, "{\"decision\":\"allow\"}\n", 21, &c);
	assert_int_equal(c.allow[EGRESS_BY_RULES], 1);
	free(big);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_any_split),
		cmocka_unit_test(test_long_line_not_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
