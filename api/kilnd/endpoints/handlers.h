/*
 * handlers: what the endpoints' handlers (one file per URL resource,
 * routes.h) share, and what they see of kilnd: the daemon (r->d), the
 * query checks, the peer. Not for use outside endpoints/.
 */
#ifndef KILN_HANDLERS_H
#define KILN_HANDLERS_H

#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/core/listen.h"
#include "api/kilnd/core/query.h"
#include "api/kilnd/endpoints/routes.h"
#include "api/kilnd/http/http.h"
#include <kiln/agent.h>

/* handlers.c: what several endpoints share. */
/* No query parameters: true, or false after answering 400 itself. */
bool http_no_query(struct http_req *r, const char *what);
/* Whether a body of its declared length can fit in state_dir/sub
 * (import_room.h); 0, or -1 with e (no_space). */
int http_room_check(struct http_req *r, const char *sub, const char *what, const char *holds,
		    struct api_err *e);

struct sandbox;

/* The sandbox the path names, as a reference (sandbox_put it), after
 * refusing any query string; NULL when it answered 400/404 itself. */
struct sandbox *http_sandbox_target(struct http_req *r, const char *what);
/* The same for an action (POST .../pause, .../restore): an optional body
 * must be {}, as actions take no options yet. */
struct sandbox *http_sandbox_action_target(struct http_req *r, const char *what);
/* The sandbox the path names (a reference: sandbox_put it) and a new
 * client of its agent in *a, this request's own (kiln_agent_free it): 0,
 * or -1 with e and nothing held (*sb and *a NULL). */
int http_guest_target(struct http_req *r, struct sandbox **sb, kiln_agent **a, struct api_err *e);
/* 200/201 with json, or e's error (rc != 0), or 500 when json is NULL
 * (out of memory rendering it). json is taken over. */
void http_answer(struct http_req *r, int rc, unsigned status, json_t *json,
		 const struct api_err *e);

#endif
