/* Strict JSON reading and typed JSON fields; see json.h. */
#include "lib/base/json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- the strict load ---- */

/* Lines before buf + n, counted from line (1-based, as jansson's). */
static int lines_to(const char *buf, size_t n, int line)
{
	for (const char *p = buf; (p = memchr(p, '\n', n - (size_t)(p - buf))); p++)
		line++;
	return line;
}

static void nul_refused(json_error_t *je, size_t at, int line)
{
	if (!je)
		return;
	memset(je, 0, sizeof(*je));
	je->line = line;
	je->column = -1;
	je->position = (int)at;
	snprintf(je->text, sizeof(je->text), "a NUL byte at byte %zu", at);
}

json_t *json_strict_loadb(const char *buf, size_t len, json_error_t *je)
{
	const char *nul = memchr(buf, 0, len);

	if (nul) {
		nul_refused(je, (size_t)(nul - buf), lines_to(buf, (size_t)(nul - buf), 1));
		return NULL;
	}
	return json_loadb(buf, len, JSON_REJECT_DUPLICATES, je);
}

json_t *json_strict_loads(const char *s, json_error_t *je)
{
	return json_loads(s, JSON_REJECT_DUPLICATES, je);
}

/* jansson's file reading, with a NUL byte ending the read as an error. */
struct file_feed {
	FILE *f;
	size_t at; /* bytes fed so far */
	int line;  /* the line the next byte is on */
	long nul;  /* the first NUL's offset, or -1 */
};

static size_t feed(void *buf, size_t len, void *arg)
{
	struct file_feed *ff = arg;
	size_t n = fread(buf, 1, len, ff->f);
	const char *nul = memchr(buf, 0, n);

	if (nul) {
		ff->nul = (long)(ff->at + (size_t)(nul - (const char *)buf));
		ff->line = lines_to(buf, (size_t)(nul - (const char *)buf), ff->line);
		return (size_t)-1;
	}
	if (!n && ferror(ff->f))
		return (size_t)-1;
	ff->at += n;
	ff->line = lines_to(buf, n, ff->line);
	return n;
}

json_t *json_strict_load_file(const char *path, json_error_t *je)
{
	struct file_feed ff = { .f = fopen(path, "re"), .line = 1, .nul = -1 };
	json_t *v;

	if (!ff.f) {
		if (je) {
			/* jansson's own wording for this, which callers show */
			memset(je, 0, sizeof(*je));
			je->line = -1;
			je->column = -1;
			snprintf(je->text, sizeof(je->text), "unable to open %s: %s", path,
				 strerror(errno));
		}
		return NULL;
	}
	v = json_load_callback(feed, &ff, JSON_REJECT_DUPLICATES, je);
	if (!v && ff.nul >= 0)
		nul_refused(je, (size_t)ff.nul, ff.line);
	fclose(ff.f);
	return v;
}

/* ---- typed fields ---- */

const char *json_field_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static int fail(struct json_field_fail *f, enum json_field_fault fault, enum json_field_want want,
		const char *key, const json_t *v)
{
	f->fault = fault;
	f->want = want;
	f->key = key;
	f->got = v ? json_field_kind(v) : "absent";
	return -1;
}

int json_field_uint(const json_t *obj, const char *key, bool required, uint64_t min, uint64_t max,
		    uint64_t def, uint64_t *out, struct json_field_fail *f)
{
	json_t *v = json_object_get(obj, key);
	json_int_t n;

	*out = def;
	f->min = min;
	f->max = max;
	if (!v)
		return required ? fail(f, JSON_FIELD_MISSING, JSON_FIELD_INTEGER, key, v) : 0;
	if (!json_is_integer(v))
		return fail(f, JSON_FIELD_TYPE, JSON_FIELD_INTEGER, key, v);
	n = json_integer_value(v);
	if (n < 0 || (uint64_t)n < min || (uint64_t)n > max) {
		f->value = (long long)n;
		return fail(f, JSON_FIELD_RANGE, JSON_FIELD_INTEGER, key, v);
	}
	*out = (uint64_t)n;
	return 0;
}

int json_field_bool(const json_t *obj, const char *key, bool required, bool def, bool *out,
		    struct json_field_fail *f)
{
	json_t *v = json_object_get(obj, key);

	*out = def;
	if (!v)
		return required ? fail(f, JSON_FIELD_MISSING, JSON_FIELD_BOOLEAN, key, v) : 0;
	if (!json_is_boolean(v))
		return fail(f, JSON_FIELD_TYPE, JSON_FIELD_BOOLEAN, key, v);
	*out = json_is_true(v);
	return 0;
}

int json_field_string(const json_t *obj, const char *key, bool required, size_t max,
		      const char **out, struct json_field_fail *f)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	f->max = max;
	if (!v)
		return required ? fail(f, JSON_FIELD_MISSING, JSON_FIELD_STRING, key, v) : 0;
	if (!json_is_string(v))
		return fail(f, JSON_FIELD_TYPE, JSON_FIELD_STRING, key, v);
	if (json_string_length(v) > max)
		return fail(f, JSON_FIELD_LENGTH, JSON_FIELD_STRING, key, v);
	*out = json_string_value(v);
	return 0;
}

int json_field_only(const json_t *obj, const char *const *allowed, struct json_field_fail *f)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		size_t i = 0;

		while (allowed[i] && strcmp(allowed[i], key) != 0)
			i++;
		if (!allowed[i])
			return fail(f, JSON_FIELD_UNKNOWN, JSON_FIELD_STRING, key, v);
	}
	return 0;
}
