/*
 * /v1/sandboxes and /v1/sandboxes/{id} (docs/api.md, "POST /v1/sandboxes"
 * ...): the sandbox resource and its lifecycle actions, start, stop,
 * pause, resume, hibernate and wake (POST .../{action}), which are no
 * resource of their own. Parsing and answers; the work is the registry's.
 */
#include <stdio.h>

#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"

void handle_sandbox_list(struct http_req *r)
{
	struct list_filter f;
	struct api_err e;

	if (query_list(r->kv, r->nkv, &f, &e)) {
		http_error(r, &e);
		return;
	}
	http_answer(r, 0, 200, sandbox_list(r->d, &r->peer, &f), NULL);
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
		http_answer(r, rc, 201, view, &e);
		return;
	}
	snprintf(location, sizeof(location), "/v1/sandboxes/%s",
		 json_string_value(json_object_get(view, "id")));
	http_json_located(r, 201, view, location);
}

void handle_sandbox_get(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "sandbox get");

	if (!sb)
		return;
	http_answer(r, 0, 200, sandbox_view(sb), NULL);
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
	http_answer(r, rc, 200, view, &e);
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
	http_answer(r, rc, 200, view, &e);
	sandbox_put(sb);
}

typedef int (*lifecycle_fn)(struct sandbox *sb, json_t **view, struct api_err *e);

static void lifecycle(struct http_req *r, const char *what, lifecycle_fn fn)
{
	struct sandbox *sb = http_sandbox_action_target(r, what);
	json_t *view = NULL;
	struct api_err e;
	int rc;

	if (!sb)
		return;
	rc = fn(sb, &view, &e);
	http_answer(r, rc, 200, view, &e);
	sandbox_put(sb);
}

void handle_sandbox_pause(struct http_req *r)
{
	lifecycle(r, "sandbox pause", sandbox_pause);
}

void handle_sandbox_resume(struct http_req *r)
{
	lifecycle(r, "sandbox resume", sandbox_resume);
}

void handle_sandbox_hibernate(struct http_req *r)
{
	lifecycle(r, "sandbox hibernate", sandbox_hibernate);
}

void handle_sandbox_wake(struct http_req *r)
{
	lifecycle(r, "sandbox wake", sandbox_wake);
}
