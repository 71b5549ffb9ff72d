/*
 * Secrets (docs/api.md, "Secrets"): PUT /v1/secrets/{name} (and POST
 * /v1/secrets with the name in the body), GET /v1/secrets, GET and DELETE
 * /v1/secrets/{name}. The store is registry/secrets.c's. A value
 * comes in and never goes out: every answer is metadata, and no message
 * here quotes a body (the request log has the method and path only).
 */
#include <string.h>

#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/secrets.h"
#include "lib/base/json.h"
#include "lib/base/num_parse.h"

/*
 * Whose secrets a request acts on: the client's own, or with ?owner=UID
 * another uid's, for root alone (as root reaches every sandbox,
 * docs/security.md). all (may be NULL): root's list without ?owner shows
 * every owner's. 0, or -1 with e.
 */
static int secret_owner(struct http_req *r, const char *what, uid_t *owner, bool *all,
			struct api_err *e)
{
	static const char *const known[] = { "owner", NULL };
	const char *v = NULL;
	uint64_t u;

	if (query_check_keys(r->kv, r->nkv, known, NULL, what, e))
		return -1;
	for (size_t i = 0; i < r->nkv; i++)
		v = r->kv[i].value ? r->kv[i].value : "";
	*owner = r->peer.uid;
	if (all)
		*all = !v && r->peer.uid == 0;
	if (!v)
		return 0;
	if (num_parse_u64(v, 10, 0, UINT32_MAX - 1, &u)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: owner '%.32s' is not a uid", what, v);
		return -1;
	}
	if (u != r->peer.uid && r->peer.uid != 0) {
		api_err_set(e, API_E_FORBIDDEN,
			    "%s: only root may name another owner's secrets (leave out ?owner)",
			    what);
		return -1;
	}
	*owner = (uid_t)u;
	return 0;
}

/* The request's bytes held a value: not left in freed memory (jansson's
 * copy, freed by json_decref, is: docs/security.md "Secrets"). */
static void body_wipe(struct http_req *r)
{
	if (r->body)
		explicit_bzero(r->body, r->body_len);
}

/* The body as a JSON object; a refusal of it without jansson's text, which
 * quotes the bytes near the fault: the value's. 0, or -1 with e. */
static int secret_body(struct http_req *r, json_t **body, struct api_err *e)
{
	if (http_body_json(r, false, body, e) == 0)
		return 0;
	if (e->code == API_E_BAD_JSON && r->body_len)
		api_err_set(
			e, API_E_BAD_JSON,
			"secret: the body is not a valid JSON object (not quoted here: it may hold the value); send {\"value\": \"...\"}, the value escaped as a JSON string");
	return -1;
}

static const char *const put_fields[] = { "value", NULL };
static const char *const post_fields[] = { "name", "value", NULL };

/* PUT's and POST's common end: name and value from the request. */
static void secret_put(struct http_req *r, const char *name, const json_t *body, uid_t owner)
{
	const json_t *value = json_object_get(body, "value");
	char location[128];
	struct api_err e;
	json_t *view;
	bool created;

	if (!value) {
		api_err_set(&e, API_E_MISSING_FIELD, "secret: needs \"value\", a string");
	} else if (!json_is_string(value)) {
		api_err_set(&e, API_E_BAD_FIELD, "secret: \"value\" must be a string, not %s",
			    json_field_kind(value));
	} else if (secrets_put(r->d, owner, name, json_string_value(value),
			       json_string_length(value), &created, &view, &e) == 0) {
		snprintf(location, sizeof(location), "/v1/secrets/%s", name);
		if (created)
			http_json_located(r, 201, view, location);
		else
			http_json(r, 200, view);
		return;
	}
	http_error(r, &e);
}

void handle_secret_put(struct http_req *r)
{
	struct api_err e;
	json_t *body = NULL;
	uid_t owner;

	if (secret_owner(r, "secret", &owner, NULL, &e) || secret_name_check(r->rm.id, &e) ||
	    secret_body(r, &body, &e) || json_fields_only(body, put_fields, "secret", &e))
		http_error(r, &e);
	else
		secret_put(r, r->rm.id, body, owner);
	json_decref(body);
	body_wipe(r);
}

void handle_secret_create(struct http_req *r)
{
	struct api_err e;
	json_t *body = NULL;
	const char *name = NULL;
	uid_t owner;

	if (secret_owner(r, "secret", &owner, NULL, &e) || secret_body(r, &body, &e) ||
	    json_fields_only(body, post_fields, "secret", &e) ||
	    json_fields_string(body, "name", true, SECRET_NAME_MAX + 16, &name, "secret", &e) ||
	    secret_name_check(name, &e))
		http_error(r, &e);
	else
		secret_put(r, name, body, owner);
	json_decref(body);
	body_wipe(r);
}

void handle_secret_list(struct http_req *r)
{
	struct api_err e;
	json_t *view;
	uid_t owner;
	bool all;

	if (secret_owner(r, "secret list", &owner, &all, &e)) {
		http_error(r, &e);
	} else if (!(view = secrets_list(r->d, all ? (uid_t)-1 : owner))) {
		api_err_set(&e, API_E_INTERNAL, "secret list: out of memory rendering the answer");
		http_error(r, &e);
	} else {
		http_json(r, 200, view);
	}
}

void handle_secret_get(struct http_req *r)
{
	struct api_err e;
	json_t *view;
	uid_t owner;

	if (secret_owner(r, "secret", &owner, NULL, &e) ||
	    secrets_get(r->d, owner, r->rm.id, &view, &e))
		http_error(r, &e);
	else
		http_json(r, 200, view);
}

void handle_secret_delete(struct http_req *r)
{
	struct api_err e;
	uid_t owner;

	if (secret_owner(r, "secret removal", &owner, NULL, &e) ||
	    secrets_remove(r->d, owner, r->rm.id, &e))
		http_error(r, &e);
	else
		http_no_content(r);
}
