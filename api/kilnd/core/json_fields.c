/* Typed request fields in kilnd's words (docs/api.md); the checks are
 * lib/base/json's typed fields. See json_fields.h. */
#include "api/kilnd/core/json_fields.h"

#include "lib/base/json.h"

/* A field lib/base/json refused, worded as docs/api.md documents it. */
static int refused(const struct json_field_fail *f, const char *what, struct api_err *e)
{
	static const char *const must[] = {
		[JSON_FIELD_INTEGER] = "an integer",
		[JSON_FIELD_BOOLEAN] = "true or false",
		[JSON_FIELD_STRING] = "a string",
	};

	switch (f->fault) {
	case JSON_FIELD_MISSING:
		api_err_set(e, API_E_MISSING_FIELD, "%s: '%s' is required", what, f->key);
		break;
	case JSON_FIELD_UNKNOWN:
		api_err_set(e, API_E_UNKNOWN_FIELD, "%s: unknown field '%.100s'", what, f->key);
		break;
	case JSON_FIELD_RANGE:
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be from %llu to %llu, not %lld",
			    what, f->key, (unsigned long long)f->min, (unsigned long long)f->max,
			    f->value);
		break;
	case JSON_FIELD_LENGTH:
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' is longer than %zu bytes", what, f->key,
			    (size_t)f->max);
		break;
	default:
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be %s", what, f->key, must[f->want]);
		break;
	}
	return -1;
}

int json_fields_only(const json_t *obj, const char *const *allowed, const char *what,
		     struct api_err *e)
{
	struct json_field_fail f;

	return json_field_only(obj, allowed, &f) ? refused(&f, what, e) : 0;
}

int json_fields_uint(const json_t *obj, const char *key, bool required, uint64_t min, uint64_t max,
		     uint64_t def, uint64_t *out, const char *what, struct api_err *e)
{
	struct json_field_fail f;

	return json_field_uint(obj, key, required, min, max, def, out, &f) ? refused(&f, what, e)
									   : 0;
}

int json_fields_bool(const json_t *obj, const char *key, bool def, bool *out, const char *what,
		     struct api_err *e)
{
	struct json_field_fail f;

	return json_field_bool(obj, key, false, def, out, &f) ? refused(&f, what, e) : 0;
}

int json_fields_string(const json_t *obj, const char *key, bool required, size_t max,
		       const char **out, const char *what, struct api_err *e)
{
	struct json_field_fail f;

	return json_field_string(obj, key, required, max, out, &f) ? refused(&f, what, e) : 0;
}
