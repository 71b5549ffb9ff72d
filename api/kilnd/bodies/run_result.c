/* The result file of a run; see run_result.h. */
#include "api/kilnd/bodies/run_result.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/proto/agent_proto.h"
#include "lib/base/json.h"
#include "lib/base/utf8.h"

/* {"type": type, "message": msg, "traceback": null}, or NULL. */
static json_t *invalid(const char *type, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static json_t *invalid(const char *type, const char *fmt, ...)
{
	char msg[512], clean[3 * sizeof(msg) + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The message quotes guest bytes (a member's name cut at 64 bytes,
	 * jansson's excerpt): cut mid-character or invalid, they would make
	 * the string unpackable, and the run's answer a 500. */
	utf8_lossy(clean, sizeof(clean), (const uint8_t *)msg, strlen(msg), 0, NULL);
	return json_pack("{s:s,s:s,s:n}", "type", type, "message", clean, "traceback");
}

/* A string member cut to max bytes at a character boundary; NULL when
 * absent or not a string (*bad set then), json null for allow_null. */
static json_t *text_member(json_t *o, const char *key, size_t max, bool allow_null,
			   const char **bad)
{
	json_t *v = json_object_get(o, key);
	size_t n;

	if (allow_null && json_is_null(v))
		return json_null();
	if (!json_is_string(v)) {
		*bad = key;
		return NULL;
	}
	n = json_string_length(v);
	if (n <= max)
		return json_incref(v);
	/* A valid string cut at max: drop the character the cut split. */
	n = utf8_complete_prefix((const uint8_t *)json_string_value(v), max);
	return json_stringn(json_string_value(v), n);
}

/* The "error" member, checked and copied with only its three members;
 * *bad_shape when it is not what the helpers write. */
static json_t *error_object(json_t *e, bool *bad_shape)
{
	const char *bad = NULL, *k;
	json_t *type, *msg, *tb, *v;

	*bad_shape = true;
	if (!json_is_object(e))
		return invalid("ResultInvalid", "the result's 'error' is not an object");
	json_object_foreach(e, k, v)
	{
		if (strcmp(k, "type") && strcmp(k, "message") && strcmp(k, "traceback"))
			return invalid("ResultInvalid",
				       "the result's 'error' has an unknown member '%.64s'", k);
	}
	type = text_member(e, "type", RUN_RESULT_TYPE_MAX, false, &bad);
	msg = text_member(e, "message", RUN_RESULT_TEXT_MAX, false, &bad);
	tb = json_object_get(e, "traceback")
		? text_member(e, "traceback", RUN_RESULT_TEXT_MAX, true, &bad)
		: json_null();
	if (bad) {
		json_decref(type);
		json_decref(msg);
		json_decref(tb);
		return invalid("ResultInvalid", "the result's 'error.%s' is not a string", bad);
	}
	*bad_shape = false;
	v = json_object();
	if (!v || !type || !msg || !tb || json_object_set_new(v, "type", type) ||
	    json_object_set_new(v, "message", msg) || json_object_set_new(v, "traceback", tb)) {
		json_decref(v);
		return NULL;
	}
	return v;
}

int run_result_parse(const uint8_t *buf, size_t len, uint64_t size, json_t **value, json_t **error)
{
	json_t *doc = NULL, *val = NULL, *err = NULL, *v;
	bool bad_shape = false;
	json_error_t je;
	const char *k;

	if (size > len || len > AGENT_RUN_RESULT_MAX) {
		err = invalid(
			"ResultTooLarge",
			"the result file is %llu bytes; at most %u are read back (result.set takes values up to 960 KiB)",
			(unsigned long long)(size > len ? size : len), AGENT_RUN_RESULT_MAX);
	} else if (len == 0) {
		val = json_null();
		err = json_null();
	} else if (!(doc = json_strict_loadb((const char *)buf, len, &je))) {
		err = invalid(
			"ResultInvalid",
			"the result is not valid JSON (%s, at byte %d); bash's `result set` takes JSON text, such as '\"text\"' or 42",
			je.text, je.position);
	} else if (!json_is_object(doc)) {
		err = invalid(
			"ResultInvalid",
			"the result file is not a JSON object (only kiln's result helpers should write it)");
	} else {
		json_object_foreach(doc, k, v)
		{
			if (strcmp(k, "value") && strcmp(k, "error")) {
				err = invalid("ResultInvalid",
					      "the result file has an unknown member '%.64s'", k);
				break;
			}
		}
		if (!err) {
			v = json_object_get(doc, "error");
			err = v ? error_object(v, &bad_shape) : json_null();
			/* A file that is not the helpers' gives no value either. */
			if (!bad_shape) {
				v = json_object_get(doc, "value");
				val = json_incref(v ? v : json_null());
			}
		}
	}
	json_decref(doc);
	if (!val && err)
		val = json_null();
	if (!val || !err) {
		json_decref(val);
		json_decref(err);
		return -ENOMEM;
	}
	*value = val;
	*error = err;
	return 0;
}
