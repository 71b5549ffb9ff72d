/*
 * fuzz_json_text: the one JSON writer (lib/base/json_text.c) over any
 * document jansson reads: what kilnd, the CLI, the agent and kiln-vmm
 * write back out of what a client or a guest sent.
 *
 * Input: JSON text (any value, NUL in strings allowed).
 * Invariants, for each flag set kiln writes with: the text is written
 * (nothing jansson reads is refused), parses again to an equal value
 * (every real the same double, still a real: json_equal keeps 5 and 5.0
 * apart), and writing that again gives the same bytes. A document
 * without reals is written byte for byte as jansson's json_dumps.
 */
#include <stdbool.h>

#include "lib/base/json_text.h"
#include "fuzz.h"

static const size_t flag_sets[] = {
	JSON_ENCODE_ANY | JSON_COMPACT,
	JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS,
	JSON_ENCODE_ANY | JSON_INDENT(2),
	JSON_ENCODE_ANY,
};

static bool has_real(const json_t *v)
{
	const char *k;
	json_t *m;
	size_t i;

	if (json_is_real(v))
		return true;
	json_array_foreach(v, i, m)
	{
		if (has_real(m))
			return true;
	}
	json_object_foreach((json_t *)v, k, m)
	{
		if (has_real(m))
			return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	bool reals;

	if (!v)
		return 0;
	reals = has_real(v);
	for (size_t f = 0; f < sizeof(flag_sets) / sizeof(flag_sets[0]); f++) {
		char *s = json_text(v, flag_sets[f]), *s2;
		json_error_t je;
		json_t *back;

		FUZZ_ASSERT(s);
		back = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		if (!back)
			fprintf(stderr, "written text does not parse: %s\n%s\n", je.text, s);
		FUZZ_ASSERT(back && json_equal(v, back));
		s2 = json_text(back, flag_sets[f]);
		FUZZ_ASSERT(s2 && strcmp(s, s2) == 0);
		if (!reals) {
			char *j = json_dumps(v, flag_sets[f]);

			FUZZ_ASSERT(j && strcmp(s, j) == 0);
			free(j);
		}
		free(s2);
		free(s);
		json_decref(back);
	}
	json_decref(v);
	return 0;
}
