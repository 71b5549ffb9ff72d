/* Typed request fields; see json_fields.h. */
#include "api/kilnd/core/json_fields.h"

#include <string.h>

int json_fields_only(const json_t *obj, const char *const *allowed, const char *what, struct api_err *e)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		bool ok = false;

		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = strcmp(allowed[i], key) == 0;
		if (!ok) {
			api_err_set(e, API_E_UNKNOWN_FIELD, "%s: unknown field '%.100s'", what, key);
			return -1;
		}
	}
	return 0;
}

int json_fields_uint(const json_t *obj, const char *key, bool required, uint64_t min, uint64_t max,
	    uint64_t def, uint64_t *out, const char *what, struct api_err *e)
{
	json_t *v = json_object_get(obj, key);
	json_int_t n;

	if (!v) {
		if (required) {
			api_err_set(e, API_E_MISSING_FIELD, "%s: '%s' is required", what, key);
			return -1;
		}
		*out = def;
		return 0;
	}
	if (!json_is_integer(v)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be an integer", what, key);
		return -1;
	}
	n = json_integer_value(v);
	if (n < 0 || (uint64_t)n < min || (uint64_t)n > max) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be from %llu to %llu, not %lld", what, key,
			    (unsigned long long)min, (unsigned long long)max, (long long)n);
		return -1;
	}
	*out = (uint64_t)n;
	return 0;
}

int json_fields_bool(const json_t *obj, const char *key, bool def, bool *out, const char *what,
	    struct api_err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be true or false", what, key);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

int json_fields_string(const json_t *obj, const char *key, bool required, size_t max, const char **out,
	      const char *what, struct api_err *e)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v) {
		if (required) {
			api_err_set(e, API_E_MISSING_FIELD, "%s: '%s' is required", what, key);
			return -1;
		}
		return 0;
	}
	if (!json_is_string(v)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be a string", what, key);
		return -1;
	}
	if (json_string_length(v) > max) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' is longer than %zu bytes", what, key, max);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}
