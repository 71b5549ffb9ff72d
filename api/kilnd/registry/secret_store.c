/* kilnd's named secrets, pure logic; see secret_store.h. */
#include "api/kilnd/registry/secret_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/time_text.h"
#include "lib/base/file_replace.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/base/mem_grow.h"
#include "lib/base/utf8.h"

int secret_name_check(const char *name, struct api_err *e)
{
	if (http_secret_name_ok(name))
		return 0;
	api_err_set(e, API_E_BAD_FIELD,
		    "secret name '%.80s': must be 1..%d of a-z, 0-9, '_' and '-' (what a firewall http rule's inject \"secret\" names)",
		    name, SECRET_NAME_MAX);
	return -1;
}

int secret_value_check(const char *value, size_t len, struct api_err *e)
{
	if (len == 0) {
		api_err_set(e, API_E_BAD_FIELD, "secret value: empty (give 1..%d bytes)",
			    SECRET_VALUE_MAX);
		return -1;
	}
	if (len > SECRET_VALUE_MAX) {
		api_err_set(e, API_E_TOO_LARGE,
			    "secret value: %zu bytes, more than %d (a header value that long is refused by most servers)",
			    len, SECRET_VALUE_MAX);
		return -1;
	}
	/* A header field's value ends at CR or LF, and a NUL ends it for C
	 * servers: a value holding one would split into a header of the
	 * guest's choosing (RFC 9110 5.5). Named by position, never shown. */
	for (size_t i = 0; i < len; i++) {
		if (value[i] == '\0' || value[i] == '\r' || value[i] == '\n') {
			api_err_set(e, API_E_BAD_FIELD,
				    "secret value: byte %zu is %s; an HTTP header value cannot hold NUL, CR or LF (strip the trailing newline: `printf %%s`, not `echo`)",
				    i,
				    value[i] == '\0'           ? "NUL"
					    : value[i] == '\r' ? "CR"
							       : "LF");
			return -1;
		}
	}
	if (!utf8_valid((const uint8_t *)value, len)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "secret value: not valid UTF-8 (a JSON string's bytes)");
		return -1;
	}
	return 0;
}

static struct secret *find(const struct secret_store *s, uid_t owner, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].owner == owner && !strcmp(s->v[i].name, name))
			return &s->v[i];
	return NULL;
}

const struct secret *secret_store_find(const struct secret_store *s, uid_t owner, const char *name)
{
	return find(s, owner, name);
}

static char *value_dup(const char *value, size_t len)
{
	char *v = malloc(len + 1);

	if (v) {
		memcpy(v, value, len);
		v[len] = '\0';
	}
	return v;
}

static void value_wipe(struct secret *x)
{
	if (x->value) {
		explicit_bzero(x->value, x->len);
		free(x->value);
	}
	x->value = NULL;
	x->len = 0;
}

int secret_store_set(struct secret_store *s, uid_t owner, const char *name, const char *value,
		     size_t len, int64_t now_ms, bool *created, struct api_err *e)
{
	struct secret *x, *grown = NULL;
	char *v;

	if (secret_name_check(name, e) || secret_value_check(value, len, e))
		return -1;
	if (!(v = value_dup(value, len))) {
		api_err_set(e, API_E_INTERNAL, "secret '%s': out of memory", name);
		return -1;
	}
	x = find(s, owner, name);
	*created = !x;
	if (x) {
		value_wipe(x);
		x->value = v;
		x->len = len;
		x->updated_ms = now_ms;
		return 0;
	}
	if (s->n >= SECRETS_MAX) {
		explicit_bzero(v, len);
		free(v);
		api_err_set(e, API_E_LIMIT_REACHED,
			    "secret '%s': kilnd holds %d secrets already (DELETE /v1/secrets/NAME those no rule names)",
			    name, SECRETS_MAX);
		return -1;
	}
	if ((s->n + 1) * sizeof(*s->v) > s->cap &&
	    !(grown = mem_grow(s->v, &s->cap, (s->n + 1) * sizeof(*s->v), 16 * sizeof(*s->v),
			       SECRETS_MAX * sizeof(*s->v)))) {
		explicit_bzero(v, len);
		free(v);
		api_err_set(e, API_E_INTERNAL, "secret '%s': out of memory", name);
		return -1;
	}
	if (grown)
		s->v = grown;
	x = &s->v[s->n++];
	memset(x, 0, sizeof(*x));
	x->owner = owner;
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->value = v;
	x->len = len;
	x->created_ms = x->updated_ms = now_ms;
	return 0;
}

int secret_store_restore(struct secret_store *s, const struct secret *x, struct api_err *e)
{
	struct secret *back;
	bool created;

	if (secret_store_set(s, x->owner, x->name, x->value, x->len, x->created_ms, &created, e))
		return -1;
	back = find(s, x->owner, x->name);
	back->created_ms = x->created_ms;
	back->updated_ms = x->updated_ms;
	return 0;
}

int secret_store_delete(struct secret_store *s, uid_t owner, const char *name, struct api_err *e)
{
	struct secret *x = find(s, owner, name);
	size_t i;

	if (!x) {
		api_err_set(e, API_E_NOT_FOUND, "no secret '%.80s' (GET /v1/secrets lists them)",
			    name);
		return -1;
	}
	value_wipe(x);
	i = (size_t)(x - s->v);
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
	s->n--;
	return 0;
}

size_t secret_store_count(const struct secret_store *s, uid_t owner)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += owner == (uid_t)-1 || s->v[i].owner == owner;
	return n;
}

void secret_store_free(struct secret_store *s)
{
	for (size_t i = 0; i < s->n; i++)
		value_wipe(&s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

json_t *secret_view(const struct secret *x)
{
	char created[40], updated[40];

	format_time_ms(x->created_ms, created, sizeof(created));
	format_time_ms(x->updated_ms, updated, sizeof(updated));
	return json_pack("{s:s, s:I, s:s, s:s}", "name", x->name, "owner", (json_int_t)x->owner,
			 "created", created, "updated", updated);
}

json_t *secret_store_list(const struct secret_store *s, uid_t owner)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->n; i++) {
		if (owner != (uid_t)-1 && s->v[i].owner != owner)
			continue;
		if (json_array_append_new(a, secret_view(&s->v[i]))) {
			json_decref(a);
			return NULL;
		}
	}
	return a ? json_pack("{s:o}", "secrets", a) : NULL;
}

/* ---- the stored file ---- */

static const char *const file_keys[] = { "version", "secrets", NULL };
static const char *const entry_keys[] = {
	"owner", "name", "value", "created_ms", "updated_ms", NULL
};

/* One entry of the file into s: 0, or -1 with e. No message quotes the
 * value: a file's fault is shown in kilnd's log. */
static int file_entry(const json_t *o, size_t i, struct secret_store *s, struct err *e)
{
	struct json_field_fail f;
	uint64_t owner, created, updated;
	const char *name, *value;
	struct api_err ae;
	struct secret x;

	if (!json_is_object(o))
		return err_set(e, EINVAL, "secrets[%zu]: %s, not an object", i, json_field_kind(o)),
		       -1;
	if (json_field_only(o, entry_keys, &f))
		return err_set(e, EINVAL,
			       "secrets[%zu]: unknown field \"%.40s\" (expected owner, name, value, created_ms, updated_ms)",
			       i, f.key),
		       -1;
	if (json_field_uint(o, "owner", true, 0, UINT32_MAX - 1, 0, &owner, &f) ||
	    json_field_string(o, "name", true, SIZE_MAX, &name, &f) ||
	    json_field_uint(o, "created_ms", true, 0, INT64_MAX, 0, &created, &f) ||
	    json_field_uint(o, "updated_ms", true, 0, INT64_MAX, 0, &updated, &f))
		return err_set(e, EINVAL, "secrets[%zu].%s: missing, or not %s", i, f.key,
			       f.key[0] == 'n' ? "a string" : "an integer in range"),
		       -1;
	if (!json_is_string(json_object_get(o, "value")))
		return err_set(e, EINVAL, "secrets[%zu].value: missing, or not a string", i), -1;
	value = json_string_value(json_object_get(o, "value"));
	if (secret_name_check(name, &ae))
		return err_set(e, EINVAL, "secrets[%zu].name: %s", i, ae.msg), -1;
	if (find(s, (uid_t)owner, name))
		return err_set(e, EINVAL, "secrets[%zu]: owner %llu's '%s' is there twice", i,
			       (unsigned long long)owner, name),
		       -1;
	x = (struct secret){ .owner = (uid_t)owner,
			     .value = (char *)value,
			     .len = json_string_length(json_object_get(o, "value")),
			     .created_ms = (int64_t)created,
			     .updated_ms = (int64_t)updated };
	snprintf(x.name, sizeof(x.name), "%s", name);
	if (secret_store_restore(s, &x, &ae))
		return err_set(e, EINVAL, "secrets[%zu] ('%s'): %s", i, name, ae.msg), -1;
	return 0;
}

int secret_file_parse(const char *text, size_t len, struct secret_store *s, struct err *e)
{
	struct json_field_fail f;
	json_error_t je;
	json_t *j, *arr;
	uint64_t version;
	int r = -1;

	memset(s, 0, sizeof(*s));
	if (len > SECRETS_FILE_MAX)
		return err_set(e, EFBIG, "%zu bytes, more than %d", len, SECRETS_FILE_MAX), -1;
	/* jansson's message quotes the text near the fault: a value's bytes,
	 * so only the position is told. */
	if (!(j = json_strict_loadb(text, len, &je)))
		return err_set(e, EINVAL, "not valid JSON (line %d, column %d)", je.line,
			       je.column),
		       -1;
	arr = json_object_get(j, "secrets");
	if (!json_is_object(j))
		err_set(e, EINVAL, "not a JSON object");
	else if (json_field_only(j, file_keys, &f))
		err_set(e, EINVAL, "unknown field \"%.40s\" (expected version, secrets)", f.key);
	else if (json_field_uint(j, "version", true, 0, UINT32_MAX, 0, &version, &f))
		err_set(e, EINVAL, "\"version\": missing, or not an integer");
	else if (version != SECRETS_FILE_VERSION)
		err_set(e, EINVAL,
			"version %llu: this kilnd reads version %d (written by a newer kilnd?)",
			(unsigned long long)version, SECRETS_FILE_VERSION);
	else if (!json_is_array(arr))
		err_set(e, EINVAL, "\"secrets\": missing, or not an array");
	else if (json_array_size(arr) > SECRETS_MAX)
		err_set(e, EINVAL, "%zu secrets, more than %d", json_array_size(arr), SECRETS_MAX);
	else
		r = 0;
	for (size_t i = 0; r == 0 && i < json_array_size(arr); i++)
		r = file_entry(json_array_get(arr, i), i, s, e);
	json_decref(j);
	if (r)
		secret_store_free(s);
	return r;
}

char *secret_file_render(const struct secret_store *s, size_t *len)
{
	json_t *arr = json_array(), *j;
	char *text = NULL;

	for (size_t i = 0; arr && i < s->n; i++) {
		const struct secret *x = &s->v[i];

		if (json_array_append_new(arr,
					  json_pack("{s:I, s:s, s:s%, s:I, s:I}", "owner",
						    (json_int_t)x->owner, "name", x->name, "value",
						    x->value, x->len, "created_ms",
						    (json_int_t)x->created_ms, "updated_ms",
						    (json_int_t)x->updated_ms))) {
			json_decref(arr);
			return NULL;
		}
	}
	j = arr ? json_pack("{s:i, s:o}", "version", SECRETS_FILE_VERSION, "secrets", arr) : NULL;
	if (j)
		text = json_text(j, JSON_INDENT(1));
	json_decref(j);
	if (text)
		*len = strlen(text);
	return text;
}

/* ---- a proxy's file ---- */

bool secret_rules_name(const struct http_rules *r, const char *name)
{
	for (size_t i = 0; r && i < r->n; i++)
		for (size_t k = 0; k < r->rules[i].n_inject; k++)
			if (!strcmp(r->rules[i].inject[k].secret, name))
				return true;
	return false;
}

int secret_file_for_rules(const struct secret_store *s, uid_t owner, const struct http_rules *r,
			  int dirfd, const char *file, uid_t uid, gid_t gid, size_t *missing,
			  struct err *e)
{
	json_t *o = json_object(), *miss = json_object();
	char *text = NULL;
	int rc;

	for (size_t i = 0; o && miss && r && i < r->n; i++) {
		for (size_t k = 0; o && k < r->rules[i].n_inject; k++) {
			const char *name = r->rules[i].inject[k].secret;
			const struct secret *x = find(s, owner, name);

			/* A name no secret has: the proxy refuses its requests. */
			if (!x && json_object_set_new(miss, name, json_true()))
				break;
			if (x && json_object_set_new(o, name, json_stringn(x->value, x->len))) {
				json_decref(o);
				o = NULL;
			}
		}
	}
	if (o && miss)
		text = json_text(o, JSON_INDENT(1));
	/* jansson does not wipe what it frees: o's copies of the values are
	 * left to the allocator, as the request bodies' are (secrets.h). */
	json_decref(o);
	if (missing)
		*missing = miss ? json_object_size(miss) : 0;
	json_decref(miss);
	if (!text)
		return err_set(e, ENOMEM, "secrets file %s: out of memory", file), -ENOMEM;
	rc = file_replace_owned_at(dirfd, file, text, strlen(text), 0600, uid, gid);
	explicit_bzero(text, strlen(text));
	free(text);
	if (rc)
		return err_set(e, -rc, "secrets file %s: %s", file, strerror(-rc)), rc;
	return 0;
}
