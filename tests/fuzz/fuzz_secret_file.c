/*
 * fuzz_secret_file: kilnd's stored secrets (<state-dir>/secrets.json,
 * api/kilnd/registry/secret_store.c), read back at every start: any bytes
 * the file may hold after a crash, a disk fault or an operator's edit.
 *
 * Input: the file's bytes.
 * Invariants: a refusal has a message, leaves the store empty, and quotes
 * no value: no string at secrets[i].value of 6 bytes or more is in the
 * message, unless it is part of another string or key of the document
 * too (a refused name or an unknown key is quoted, rightly); an accepted store
 * holds no more than SECRETS_MAX secrets, each with a valid name and
 * value and one (owner, name) at most once, and renders to a file that
 * parses back to the same secrets.
 */
#include <string.h>

#include <jansson.h>

#include "api/kilnd/registry/secret_store.h"
#include "fuzz.h"

static void check_store(const struct secret_store *s)
{
	struct api_err ae;

	FUZZ_ASSERT(s->n <= SECRETS_MAX);
	for (size_t i = 0; i < s->n; i++) {
		const struct secret *x = &s->v[i];

		FUZZ_ASSERT(secret_name_check(x->name, &ae) == 0);
		FUZZ_ASSERT(secret_value_check(x->value, x->len, &ae) == 0);
		FUZZ_ASSERT(strlen(x->value) == x->len);
		FUZZ_ASSERT(secret_store_find(s, x->owner, x->name) == x);
	}
}

/* Whether needle is inside any string or key of j but skip (the value itself). */
static bool elsewhere(const json_t *j, const json_t *skip, const char *needle)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_string(j))
		return j != skip && strstr(json_string_value(j), needle);
	if (json_is_array(j)) {
		json_array_foreach(j, i, v) if (elsewhere(v, skip, needle)) return true;
	}
	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, key,
				    v) if (strstr(key, needle) ||
					   elsewhere(v, skip, needle)) return true;
	}
	return false;
}

/* No value of the document (as jansson reads it) is quoted in msg. */
static void check_no_value(const uint8_t *data, size_t size, const char *msg)
{
	json_t *j = json_loadb((const char *)data, size, 0, NULL), *arr, *o;
	size_t i;

	arr = json_object_get(j, "secrets");
	json_array_foreach(arr, i, o)
	{
		const json_t *v = json_object_get(o, "value");
		const char *s = json_string_value(v);

		if (s && strlen(s) >= 6 && !elsewhere(j, v, s))
			FUZZ_ASSERT(!strstr(msg, s));
	}
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct secret_store s, back;
	struct err e = { "" };
	size_t len;
	char *text;

	if (secret_file_parse((const char *)data, size, &s, &e)) {
		FUZZ_ASSERT(e.msg[0]);
		check_no_value(data, size, e.msg);
		FUZZ_ASSERT(s.n == 0 && s.v == NULL);
		return 0;
	}
	check_store(&s);
	text = secret_file_render(&s, &len);
	FUZZ_ASSERT(text);
	FUZZ_ASSERT(secret_file_parse(text, len, &back, &e) == 0);
	FUZZ_ASSERT(back.n == s.n);
	for (size_t i = 0; i < s.n; i++) {
		FUZZ_ASSERT(back.v[i].owner == s.v[i].owner);
		FUZZ_ASSERT(!strcmp(back.v[i].name, s.v[i].name));
		FUZZ_ASSERT(back.v[i].len == s.v[i].len);
		FUZZ_ASSERT(!memcmp(back.v[i].value, s.v[i].value, s.v[i].len));
		FUZZ_ASSERT(back.v[i].created_ms == s.v[i].created_ms);
		FUZZ_ASSERT(back.v[i].updated_ms == s.v[i].updated_ms);
	}
	free(text);
	secret_store_free(&back);
	secret_store_free(&s);
	return 0;
}
