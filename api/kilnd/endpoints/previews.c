/* Preview URL endpoints (docs/api.md, "Preview URLs"): parsing and
 * answers; the previews are sandbox_previews.c's, the proxy
 * preview_server.c's. */
#include <stdio.h>
#include <string.h>

#include "api/kilnd/core/preview_spec.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "lib/base/num_parse.h"

void handle_preview_add(struct http_req *r)
{
	struct sandbox *sb = NULL;
	struct api_err e;
	json_t *body = NULL, *view = NULL;
	char location[128];
	uint16_t port;
	bool pub;

	if (query_none(r->kv, r->nkv, "preview", &e) || http_body_json(r, false, &body, &e) ||
	    preview_body_parse(body, &port, &pub, &e) ||
	    !(sb = sandbox_get(r->d, &r->peer, r->rm.id, &e)) ||
	    sandbox_preview_add(sb, port, pub, &view, &e)) {
		http_error(r, &e);
	} else {
		snprintf(location, sizeof(location), "/v1/sandboxes/%s/previews/%u", r->rm.id,
			 (unsigned)port);
		http_json_located(r, 201, view, location);
	}
	json_decref(body);
	if (sb)
		sandbox_put(sb);
}

void handle_preview_list(struct http_req *r)
{
	struct sandbox *sb = NULL;
	struct api_err e;
	json_t *view;

	if (query_none(r->kv, r->nkv, "preview list", &e) ||
	    !(sb = sandbox_get(r->d, &r->peer, r->rm.id, &e))) {
		http_error(r, &e);
	} else if (!(view = sandbox_preview_list(sb))) {
		api_err_set(&e, API_E_INTERNAL, "preview list: out of memory rendering the answer");
		http_error(r, &e);
	} else {
		http_json(r, 200, view);
	}
	if (sb)
		sandbox_put(sb);
}

void handle_preview_remove(struct http_req *r)
{
	const char *s = r->rm.sub; /* the {port} segment */
	struct sandbox *sb = NULL;
	struct api_err e;
	uint64_t port = 0;

	if (strlen(s) > 5 || num_parse_u64(s, 10, 1, 65535, &port)) {
		api_err_set(&e, API_E_BAD_FIELD, "preview: '%.16s' is not a guest port (1..65535)",
			    s);
		http_error(r, &e);
		return;
	}
	if (query_none(r->kv, r->nkv, "preview removal", &e) ||
	    !(sb = sandbox_get(r->d, &r->peer, r->rm.id, &e)) ||
	    sandbox_preview_remove(sb, (uint16_t)port, &e))
		http_error(r, &e);
	else
		http_no_content(r);
	if (sb)
		sandbox_put(sb);
}
