/* What several endpoints share: checks and answers; see handlers.h. */
#include <limits.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/images/import_room.h"
#include "api/kilnd/registry/sandbox.h"

bool http_no_query(struct http_req *r, const char *what)
{
	struct api_err e;

	if (query_none(r->kv, r->nkv, what, &e) == 0)
		return true;
	http_error(r, &e);
	return false;
}

/* A declared length that surely cannot fit in state_dir/sub is refused
 * before the body (import_room.h); where the file system cannot say, the
 * upload goes on and a full disk ends it with no_space as before. */
int http_room_check(struct http_req *r, const char *sub, const char *what, const char *holds,
		    struct api_err *e)
{
	char dir[PATH_MAX + 16];
	struct statvfs fs;

	if (r->head->body != HTTP_BODY_LENGTH)
		return 0;
	/* where the upload is written (a mount of its own, perhaps) */
	snprintf(dir, sizeof(dir), "%.4000s/%s", r->d->cfg.state_dir, sub);
	if (statvfs(dir, &fs) < 0) {
		snprintf(dir, sizeof(dir), "%.4000s", r->d->cfg.state_dir);
		if (statvfs(dir, &fs) < 0)
			return 0;
	}
	return import_room_check(what, holds, r->head->content_length,
				 (uint64_t)fs.f_bavail * fs.f_frsize, dir, e);
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

/* The sandbox the path names, as http_sandbox_target, for an action:
 * an optional body must be {} (actions take no options yet). */
struct sandbox *http_sandbox_action_target(struct http_req *r, const char *what)
{
	static const char *const none[] = { NULL };
	struct sandbox *sb;
	struct api_err e;
	json_t *body = NULL;
	int rc;

	sb = http_sandbox_target(r, what);
	if (!sb)
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

void http_answer(struct http_req *r, int rc, unsigned status, json_t *json, const struct api_err *e)
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

int http_guest_target(struct http_req *r, struct sandbox **sb, kiln_agent **a, struct api_err *e)
{
	json_t *env = NULL; /* the sandbox's environment: only exec and spawn use it */

	*a = NULL;
	*sb = sandbox_get(r->d, &r->peer, r->rm.id, e);
	if (!*sb)
		return -1;
	if (sandbox_agent_new(*sb, a, &env, e)) {
		sandbox_put(*sb);
		*sb = NULL;
		return -1;
	}
	json_decref(env);
	return 0;
}
