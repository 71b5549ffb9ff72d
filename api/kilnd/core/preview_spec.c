/* Preview URLs as data; see preview_spec.h. */
#include "api/kilnd/core/preview_spec.h"

#include <stdio.h>
#include <string.h>

#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/core/names.h"

int preview_body_parse(const json_t *body, uint16_t *port, bool *public_, struct api_err *e)
{
	static const char *const allowed[] = { "port", "public", NULL };
	static const char what[] = "preview";
	uint64_t p;

	if (json_fields_only(body, allowed, what, e) ||
	    json_fields_uint(body, "port", true, 1, 65535, 0, &p, what, e) ||
	    json_fields_bool(body, "public", false, public_, what, e))
		return -1;
	*port = (uint16_t)p;
	return 0;
}

json_t *preview_entry_new(uint16_t port, bool public_, const uint8_t token_raw[PREVIEW_TOKEN_BYTES],
			  const char *created_at)
{
	static const char hex[] = "0123456789abcdef";
	char token[PREVIEW_TOKEN_LEN + 1];
	json_t *o = json_pack("{s:i,s:b,s:s}", "port", (int)port, "public", public_, "created_at",
			      created_at);

	if (!o || public_)
		return o;
	for (size_t i = 0; i < PREVIEW_TOKEN_BYTES; i++) {
		token[2 * i] = hex[token_raw[i] >> 4];
		token[2 * i + 1] = hex[token_raw[i] & 15];
	}
	token[PREVIEW_TOKEN_LEN] = '\0';
	if (json_object_set_new(o, "token", json_string(token))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static bool token_valid(const char *s)
{
	return s && strlen(s) == PREVIEW_TOKEN_LEN &&
		strspn(s, "0123456789abcdef") == PREVIEW_TOKEN_LEN;
}

int preview_entry_check(const json_t *entry, struct api_err *e)
{
	static const char *const allowed[] = { "port", "public", "token", "created_at", NULL };
	static const char what[] = "meta.json: preview";
	const char *token, *created;
	uint64_t port;
	bool pub;

	if (!json_is_object(entry)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: not an object", what);
		return -1;
	}
	if (json_fields_only(entry, allowed, what, e) ||
	    json_fields_uint(entry, "port", true, 1, 65535, 0, &port, what, e) ||
	    json_fields_bool(entry, "public", false, &pub, what, e) ||
	    json_fields_string(entry, "token", false, PREVIEW_TOKEN_LEN, &token, what, e) ||
	    json_fields_string(entry, "created_at", true, 40, &created, what, e))
		return -1;
	if (pub ? token != NULL : !token_valid(token)) {
		api_err_set(e, API_E_BAD_FIELD, "%s of port %u: %s", what, (unsigned)port,
			    pub ? "a public preview has no token"
				: "'token' must be 48 lowercase hex digits");
		return -1;
	}
	return 0;
}

json_t *preview_list_find(const json_t *list, uint16_t port, size_t *index)
{
	size_t i;
	json_t *p;

	json_array_foreach(list, i, p)
	{
		if (json_integer_value(json_object_get(p, "port")) == port) {
			if (index)
				*index = i;
			return p;
		}
	}
	return NULL;
}

int preview_list_check(const json_t *list, struct api_err *e)
{
	size_t i;
	json_t *p;

	if (!list)
		return 0;
	if (!json_is_array(list) || json_array_size(list) > PREVIEWS_MAX) {
		api_err_set(e, API_E_BAD_FIELD,
			    "meta.json: 'previews' must be an array of at most %d previews",
			    PREVIEWS_MAX);
		return -1;
	}
	json_array_foreach(list, i, p)
	{
		if (preview_entry_check(p, e))
			return -1;
		if (preview_list_find(list,
				      (uint16_t)json_integer_value(json_object_get(p, "port")),
				      NULL) != p) {
			api_err_set(e, API_E_BAD_FIELD, "meta.json: two previews of port %lld",
				    (long long)json_integer_value(json_object_get(p, "port")));
			return -1;
		}
	}
	return 0;
}

json_t *preview_view(const json_t *entry, const char *sandbox_id, const struct preview_where *where)
{
	int port = (int)json_integer_value(json_object_get(entry, "port"));
	const char *token = json_string_value(json_object_get(entry, "token"));
	char id[96], url[PREVIEW_DOMAIN_MAX + 64], path_url[160];
	json_t *o;

	snprintf(id, sizeof(id), "%s/%d", sandbox_id, port);
	o = json_pack("{s:s,s:s,s:i,s:b,s:O}", "id", id, "sandbox", sandbox_id, "port", port,
		      "public", !token, "created_at", json_object_get(entry, "created_at"));
	if (!o)
		return NULL;
	if (where) {
		snprintf(url, sizeof(url), "http://%d-%s.%s:%u/", port, sandbox_id, where->domain,
			 (unsigned)where->port);
		snprintf(path_url, sizeof(path_url), "http://%s:%u/preview/%s/%d/", where->addr,
			 (unsigned)where->port, sandbox_id, port);
	}
	if (json_object_set_new(o, "url", where ? json_string(url) : json_null()) ||
	    json_object_set_new(o, "path_url", where ? json_string(path_url) : json_null()) ||
	    (token && json_object_set_new(o, "token", json_string(token)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

bool preview_token_equal(const char *a, size_t n, const char *token)
{
	unsigned char diff = 0;

	/* The length is no secret (every token has it); the bytes are. */
	if (!token || n != PREVIEW_TOKEN_LEN || strlen(token) != PREVIEW_TOKEN_LEN)
		return false;
	for (size_t i = 0; i < PREVIEW_TOKEN_LEN; i++)
		diff |= (unsigned char)(a[i] ^ token[i]);
	return diff == 0;
}

bool preview_domain_valid(const char *s)
{
	return dns_name_valid(s, PREVIEW_DOMAIN_MAX, true);
}
