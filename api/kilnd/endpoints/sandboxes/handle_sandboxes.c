/* Sandbox lifecycle endpoints (docs/api.md, "POST /v1/sandboxes" ...). */
#include <stdio.h>

#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"

/* 200/201 with the view, or the error (rc != 0). */
static void answer(struct http_req *r, int rc, unsigned status, json_t *view, const struct api_err *e)
{
	struct api_err oom;

	if (rc) {
		http_error(r, e);
	} else if (!view) {
		api_err_set(&oom, API_E_INTERNAL, "out of memory rendering the answer");
		http_error(r, &oom);
	} else {
		http_json(r, status, view);
	}
}

void handle_sandbox_list(struct http_req *r)
{
	struct list_filter f;
	struct api_err e;

	if (query_list(r->kv, r->nkv, &f, &e)) {
		http_error(r, &e);
		return;
	}
	answer(r, 0, 200, sandbox_list(r->d, &r->peer, &f), NULL);
}

void handle_sandbox_create(struct http_req *r)
{
	struct api_err e;
	json_t *body = NULL, *view = NULL;
	char location[64];
	int rc;

	rc = query_none(r->kv, r->nkv, "sandbox create", &e);
	if (!rc)
		rc = http_body_json(r, false, &body, &e);
	if (!rc)
		rc = sandbox_create(r->d, body, &r->peer, &view, &e);
	json_decref(body);
	if (rc || !view) {
		answer(r, rc, 201, view, &e);
		return;
	}
	snprintf(location, sizeof(location), "/v1/sandboxes/%s", json_string_value(json_object_get(view, "id")));
	http_json_located(r, 201, view, location);
}

struct sandbox *http_sandbox_target(struct http_req *r, const char *what)
{
	struct sandbox *sb;
	struct api_err e;

	if (query_none(r->kv, r->nkv, what, &e)) {
		http_error(r, &e);
		return NULL;
	}
	sb = sandbox_get(r->d, &r->peer, r->rm.id, &e);
	if (!sb)
		http_error(r, &e);
	return sb;
}

void handle_sandbox_get(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "sandbox get");

	if (!sb)
		return;
	answer(r, 0, 200, sandbox_view(sb), NULL);
	sandbox_put(sb);
}

void handle_sandbox_delete(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "sandbox delete");
	struct api_err e;

	if (!sb)
		return;
	if (sandbox_delete(sb, &e))
		http_error(r, &e);
	else
		http_no_content(r);
	sandbox_put(sb);
}

void handle_sandbox_start(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "sandbox start");
	struct api_err e;
	json_t *body = NULL, *view = NULL;
	int rc;

	if (!sb)
		return;
	rc = http_body_json(r, true, &body, &e);
	if (!rc)
		rc = sandbox_start_body_parse(body, &e);
	if (!rc)
		rc = sandbox_start(sb, &view, &e);
	json_decref(body);
	answer(r, rc, 200, view, &e);
	sandbox_put(sb);
}

void handle_sandbox_stop(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "sandbox stop");
	struct api_err e;
	json_t *body = NULL, *view = NULL;
	int grace, rc;

	if (!sb)
		return;
	rc = http_body_json(r, true, &body, &e);
	if (!rc)
		rc = sandbox_stop_body_parse(body, &grace, &e);
	if (!rc)
		rc = sandbox_stop(sb, grace, "stopped", &view, &e);
	json_decref(body);
	answer(r, rc, 200, view, &e);
	sandbox_put(sb);
}
