/*
 * Snapshot endpoints (docs/api.md, "Pause, checkpoints, forks,
 * hibernation"): pause, resume, hibernate, wake and the checkpoints of a
 * sandbox. Parsing and answers; the work is sandbox_snap.c's (forks are
 * POST /v1/sandboxes, handle_sandboxes.c).
 */
#include <stdio.h>

#include "api/kilnd/registry/checkpoint.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/registry/sandbox.h"

/* The sandbox the path names (a reference) after the query check; an
 * optional body must be {} (lifecycle requests take no options yet).
 * Answers the error itself. */
static struct sandbox *target(struct http_req *r, const char *what, bool empty_body)
{
	static const char *const none[] = { NULL };
	struct sandbox *sb;
	struct api_err e;
	json_t *body = NULL;
	int rc;

	sb = http_sandbox_target(r, what);
	if (!sb || !empty_body)
		return sb;
	rc = http_body_json(r, true, &body, &e);
	if (!rc && body && !json_is_object(body)) {
		api_err_set(&e, API_E_BAD_JSON, "%s: the body must be a JSON object", what);
		rc = -1;
	}
	if (!rc && body)
		rc = json_fields_only(body, none, what, &e);
	json_decref(body);
	if (!rc)
		return sb;
	http_error(r, &e);
	sandbox_put(sb);
	return NULL;
}

/* 200/201 with the JSON, or the error (rc != 0). */
static void answer(struct http_req *r, int rc, unsigned status, json_t *json, const struct api_err *e)
{
	struct api_err oom;

	if (rc) {
		http_error(r, e);
	} else if (!json) {
		api_err_set(&oom, API_E_INTERNAL, "out of memory rendering the answer");
		http_error(r, &oom);
	} else {
		http_json(r, status, json);
	}
}

typedef int (*lifecycle_fn)(struct sandbox *sb, json_t **view, struct api_err *e);

static void lifecycle(struct http_req *r, const char *what, lifecycle_fn fn)
{
	struct sandbox *sb = target(r, what, true);
	json_t *view = NULL;
	struct api_err e;
	int rc;

	if (!sb)
		return;
	rc = fn(sb, &view, &e);
	answer(r, rc, 200, view, &e);
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

void handle_checkpoint_list(struct http_req *r)
{
	struct sandbox *sb = target(r, "checkpoint list", false);

	if (!sb)
		return;
	answer(r, 0, 200, sandbox_checkpoint_list(sb), NULL);
	sandbox_put(sb);
}

void handle_checkpoint_create(struct http_req *r)
{
	struct sandbox *sb = target(r, "checkpoint", false);
	struct checkpoint_req req;
	struct api_err e;
	json_t *body = NULL, *cp = NULL;
	char location[192];
	int rc;

	if (!sb)
		return;
	rc = http_body_json(r, false, &body, &e);
	if (!rc)
		rc = checkpoint_req_parse(body, &req, &e);
	if (!rc)
		rc = sandbox_checkpoint_create(sb, &req, &cp, &e);
	json_decref(body);
	if (rc || !cp) {
		answer(r, rc, 201, cp, &e);
	} else {
		snprintf(location, sizeof(location), "/v1/sandboxes/%s/checkpoints/%s", r->rm.id, req.name);
		http_json_located(r, 201, cp, location);
	}
	sandbox_put(sb);
}

/* The {cp} segment: a name that cannot be a checkpoint's is not found. */
static bool cp_name(struct http_req *r, struct sandbox *sb, struct api_err *e)
{
	if (checkpoint_name_valid(r->rm.proc))
		return true;
	api_err_set(e, API_E_CHECKPOINT_NOT_FOUND, "sandbox %s has no checkpoint '%.64s' (GET .../checkpoints lists them)",
		    r->rm.id, r->rm.proc);
	(void)sb;
	return false;
}

void handle_checkpoint_get(struct http_req *r)
{
	struct sandbox *sb = target(r, "checkpoint", false);
	struct api_err e;
	json_t *cp = NULL;
	int rc;

	if (!sb)
		return;
	rc = cp_name(r, sb, &e) ? sandbox_checkpoint_get(sb, r->rm.proc, &cp, &e) : -1;
	answer(r, rc, 200, cp, &e);
	sandbox_put(sb);
}

void handle_checkpoint_delete(struct http_req *r)
{
	struct sandbox *sb = target(r, "checkpoint delete", false);
	struct api_err e;

	if (!sb)
		return;
	if (!cp_name(r, sb, &e) || sandbox_checkpoint_delete(sb, r->rm.proc, &e))
		http_error(r, &e);
	else
		http_no_content(r);
	sandbox_put(sb);
}

void handle_checkpoint_restore(struct http_req *r)
{
	struct sandbox *sb = target(r, "checkpoint restore", true);
	struct api_err e;
	json_t *view = NULL;
	int rc;

	if (!sb)
		return;
	rc = cp_name(r, sb, &e) ? sandbox_checkpoint_restore(sb, r->rm.proc, &view, &e) : -1;
	answer(r, rc, 200, view, &e);
	sandbox_put(sb);
}
