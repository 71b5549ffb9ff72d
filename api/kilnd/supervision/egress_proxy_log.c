/* The egress proxy's decision lines, re-made; see egress_proxy_log.h. */
#include "api/kilnd/supervision/egress_proxy_log.h"

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/supervision/vmm_output.h"
#include "lib/base/json.h"
#include "lib/base/text_clean.h"

static const char *const string_keys[] = {
	"time",   "src",  "dst",      "name", "sni",    "host",
	"method", "path", "decision", "rule", "reason", "policy"
};
static const char *const count_keys[] = { "bytes_up", "bytes_down" };

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* A copy of string v, cut and cleaned, or NULL (out of memory). */
static json_t *clean_string(const json_t *v)
{
	char buf[EGRESS_LOG_FIELD_MAX + 1];

	text_clean_term(buf, sizeof(buf), json_string_value(v), json_string_length(v));
	return json_string(buf);
}

/* Set key to val (taken) unless val is NULL; false when out of memory. */
static bool put(json_t *o, const char *key, json_t *val)
{
	return val && json_object_set_new(o, key, val) == 0;
}

static bool copy_injected(json_t *out, const json_t *arr)
{
	json_t *names = json_array(), *v;
	size_t i;

	if (!names)
		return false;
	json_array_foreach(arr, i, v)
	{
		if (json_array_size(names) == EGRESS_LOG_INJECTED_MAX)
			break;
		if (json_is_string(v) && json_array_append_new(names, clean_string(v)))
			goto oom;
	}
	return put(out, "injected", names);
oom:
	json_decref(names);
	return false;
}

json_t *egress_log_entry(const char *line, size_t len)
{
	json_t *in, *out, *v;
	json_error_t je;
	bool ok = true;

	if (len > EGRESS_LOG_LINE_MAX)
		return NULL;
	in = json_strict_loadb(line, len, &je);
	if (!json_is_object(in) || !json_is_string(json_object_get(in, "decision"))) {
		json_decref(in);
		return NULL;
	}
	out = json_object();
	for (size_t i = 0; out && ok && i < N(string_keys); i++) {
		v = json_object_get(in, string_keys[i]);
		if (json_is_string(v))
			ok = put(out, string_keys[i], clean_string(v));
		else if (json_is_integer(v) && !strcmp(string_keys[i], "rule") &&
			 json_integer_value(v) >= 0)
			ok = put(out, "rule", json_integer(json_integer_value(v)));
	}
	for (size_t i = 0; out && ok && i < N(count_keys); i++) {
		v = json_object_get(in, count_keys[i]);
		if (json_is_integer(v) && json_integer_value(v) >= 0)
			ok = put(out, count_keys[i], json_integer(json_integer_value(v)));
	}
	v = json_object_get(in, "injected");
	if (out && ok && json_is_array(v))
		ok = copy_injected(out, v);
	json_decref(in);
	if (!ok) {
		json_decref(out);
		return NULL;
	}
	return out;
}

struct tail {
	json_t *arr;
	size_t max;
	bool oom;
};

static bool tail_line(void *arg, const uint8_t *l, size_t len)
{
	struct tail *t = arg;
	json_t *e = egress_log_entry((const char *)l, len);

	if (e && json_array_insert_new(t->arr, 0, e)) {
		t->oom = true;
		return false;
	}
	return json_array_size(t->arr) < t->max;
}

json_t *egress_log_tail(const uint8_t *buf, size_t n, bool whole, size_t lines)
{
	struct tail t = { .arr = json_array(), .max = lines };

	if (!t.arr)
		return NULL;
	if (lines)
		vmm_output_lines_backwards(buf, n, whole, tail_line, &t);
	if (t.oom) {
		json_decref(t.arr);
		return NULL;
	}
	return t.arr;
}
