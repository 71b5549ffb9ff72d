/*
 * fuzz_egress_log: the egress proxy's decision lines (egress.log), read
 * back for GET .../egress/log (api/kilnd/supervision/egress_proxy_log.c).
 * A compromised kiln-egress writes whatever it likes there.
 *
 * Input: byte 0 chooses how many lines to keep (0..255) and whether the
 * buffer is the log's start; the rest is the log.
 * Invariants: at most that many entries; each an object holding only the
 * documented keys, a string "decision", strings of at most
 * EGRESS_LOG_FIELD_MAX bytes with no control character, non-negative
 * counts, at most EGRESS_LOG_INJECTED_MAX injected names; and an entry
 * made again from its own JSON text is the same.
 */
#include "api/kilnd/supervision/egress_proxy_log.h"
#include "lib/base/json_text.h"
#include "fuzz.h"

static const char *const keys[] = { "time",   "src",      "dst",        "name",     "sni",
				    "host",   "method",   "path",       "decision", "rule",
				    "reason", "bytes_up", "bytes_down", "injected" };

static void check_string(const json_t *v)
{
	const char *s = json_string_value(v);

	FUZZ_ASSERT(s && json_string_length(v) <= EGRESS_LOG_FIELD_MAX);
	for (size_t i = 0; s[i]; i++)
		FUZZ_ASSERT((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
}

static void check_entry(const json_t *e)
{
	const char *k;
	json_t *v, *again;
	char *text;

	FUZZ_ASSERT(json_is_object(e));
	FUZZ_ASSERT(json_is_string(json_object_get(e, "decision")));
	json_object_foreach((json_t *)e, k, v)
	{
		bool known = false;

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			known |= !strcmp(k, keys[i]);
		FUZZ_ASSERT(known);
		if (json_is_integer(v)) {
			FUZZ_ASSERT(json_integer_value(v) >= 0);
			FUZZ_ASSERT(!strcmp(k, "rule") || !strncmp(k, "bytes_", 6));
		} else if (json_is_array(v)) {
			size_t i;
			json_t *n;

			FUZZ_ASSERT(!strcmp(k, "injected"));
			FUZZ_ASSERT(json_array_size(v) <= EGRESS_LOG_INJECTED_MAX);
			json_array_foreach(v, i, n) check_string(n);
		} else {
			check_string(v);
		}
	}
	text = json_text(e, JSON_COMPACT);
	FUZZ_ASSERT(text);
	again = egress_log_entry(text, strlen(text));
	FUZZ_ASSERT(again && json_equal(again, (json_t *)e));
	json_decref(again);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t max, i;
	bool whole;
	json_t *t, *e;

	if (size < 1)
		return 0;
	max = data[0] >> 1;
	whole = data[0] & 1;
	t = egress_log_tail(data + 1, size - 1, whole, max);
	if (!t)
		return 0; /* out of memory under libFuzzer's malloc limit */
	FUZZ_ASSERT(json_array_size(t) <= max);
	json_array_foreach(t, i, e) check_entry(e);
	json_decref(t);
	return 0;
}
