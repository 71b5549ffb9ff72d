/*
 * /v1/sandboxes/{id}/checkpoints (docs/api.md, "Pause, checkpoints, forks,
 * hibernation"): a sandbox's checkpoints, listed, taken, read, deleted
 * and restored. Parsing and answers; the work is sandbox_snap.c's (pause,
 * resume, hibernate and wake are sandboxes.c's; forks are POST
 * /v1/sandboxes).
 */
#include <stdio.h>

#include "api/kilnd/registry/checkpoint.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"

void handle_checkpoint_list(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "checkpoint list");

	if (!sb)
		return;
	http_answer(r, 0, 200, sandbox_checkpoint_list(sb), NULL);
	sandbox_put(sb);
}

void handle_checkpoint_create(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "checkpoint");
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
		http_answer(r, rc, 201, cp, &e);
	} else {
		snprintf(location, sizeof(location), "/v1/sandboxes/%s/checkpoints/%s", r->rm.id,
			 req.name);
		http_json_located(r, 201, cp, location);
	}
	sandbox_put(sb);
}

/* The {cp} segment: a name that cannot be a checkpoint's is not found. */
static bool cp_name(struct http_req *r, struct sandbox *sb, struct api_err *e)
{
	if (checkpoint_name_valid(r->rm.sub))
		return true;
	api_err_set(e, API_E_CHECKPOINT_NOT_FOUND,
		    "sandbox %s has no checkpoint '%.64s' (GET .../checkpoints lists them)",
		    r->rm.id, r->rm.sub);
	(void)sb;
	return false;
}

void handle_checkpoint_get(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "checkpoint");
	struct api_err e;
	json_t *cp = NULL;
	int rc;

	if (!sb)
		return;
	rc = cp_name(r, sb, &e) ? sandbox_checkpoint_get(sb, r->rm.sub, &cp, &e) : -1;
	http_answer(r, rc, 200, cp, &e);
	sandbox_put(sb);
}

void handle_checkpoint_delete(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "checkpoint delete");
	struct api_err e;

	if (!sb)
		return;
	if (!cp_name(r, sb, &e) || sandbox_checkpoint_delete(sb, r->rm.sub, &e))
		http_error(r, &e);
	else
		http_no_content(r);
	sandbox_put(sb);
}

void handle_checkpoint_restore(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_action_target(r, "checkpoint restore");
	struct api_err e;
	json_t *view = NULL;
	int rc;

	if (!sb)
		return;
	rc = cp_name(r, sb, &e) ? sandbox_checkpoint_restore(sb, r->rm.sub, &view, &e) : -1;
	http_answer(r, rc, 200, view, &e);
	sandbox_put(sb);
}
