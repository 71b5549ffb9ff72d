/*
 * json_load: JSON fixtures for unit tests of bodies and options: J parses
 * a test's JSON text (duplicate keys refused, as kilnd's reader does) and
 * fails the test, naming the text, if it does not parse; assert_json
 * compares a value with its expected compact, key-sorted text.
 */
#ifndef KILN_TEST_JSON_LOAD_H
#define KILN_TEST_JSON_LOAD_H

#include <stdlib.h>

#include <jansson.h>

static inline json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", text, je.text);
	return j;
}

static inline void assert_json(const json_t *v, const char *want)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

	assert_non_null(s);
	assert_string_equal(s, want);
	free(s);
}

#endif
