/* Port forwarding endpoints (docs/api.md, .../ports): parsing and answers;
 * the mappings are sandbox_ports.c's, the forwarding port_fwd.c's. */
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/port_spec.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "lib/base/num_parse.h"

void handle_port_add(struct http_req *r)
{
	struct sandbox *sb = NULL;
	struct api_err e;
	json_t *body = NULL, *view = NULL;
	struct port_spec spec;
	char location[128];

	if (query_none(r->kv, r->nkv, "port mapping", &e) || http_body_json(r, false, &body, &e) ||
	    port_spec_parse(body, &spec, &e) || !(sb = sandbox_get(r->d, &r->peer, r->rm.id, &e)) ||
	    sandbox_port_add(sb, &spec, &view, &e)) {
		http_error(r, &e);
	} else if (!view) {
		api_err_set(&e, API_E_INTERNAL, "port mapping: out of memory rendering the answer");
		http_error(r, &e);
	} else {
		snprintf(location, sizeof(location), "/v1/sandboxes/%s/ports/%lld", r->rm.id,
			 (long long)json_integer_value(json_object_get(view, "host_port")));
		http_json_located(r, 201, view, location);
	}
	json_decref(body);
	if (sb)
		sandbox_put(sb);
}

void handle_port_list(struct http_req *r)
{
	struct sandbox *sb = NULL;
	struct api_err e;
	json_t *view;

	if (query_none(r->kv, r->nkv, "port list", &e) ||
	    !(sb = sandbox_get(r->d, &r->peer, r->rm.id, &e))) {
		http_error(r, &e);
	} else if (!(view = sandbox_port_list(sb))) {
		api_err_set(&e, API_E_INTERNAL, "port list: out of memory rendering the answer");
		http_error(r, &e);
	} else {
		http_json(r, 200, view);
	}
	if (sb)
		sandbox_put(sb);
}

void handle_port_remove(struct http_req *r)
{
	const char *s = r->rm.sub; /* the {port} segment */
	struct sandbox *sb = NULL;
	struct api_err e;
	uint64_t port = 0;

	if (strlen(s) <= 5) /* as before: "08080" is a port, "008080" is not */
		num_parse_u64(s, 10, 1, 65535, &port);
	if (port == 0 || port > 65535)
		api_err_set(&e, API_E_BAD_FIELD,
			    "port mapping: '%.16s' is not a host port (1..65535)", s);
	if (port == 0 || port > 65535 || query_none(r->kv, r->nkv, "port removal", &e) ||
	    !(sb = sandbox_get(r->d, &r->peer, r->rm.id, &e)) ||
	    sandbox_port_remove(sb, (uint16_t)port, &e))
		http_error(r, &e);
	else
		http_no_content(r);
	if (sb)
		sandbox_put(sb);
}
