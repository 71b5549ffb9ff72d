/*
 * GET/PUT /v1/sandboxes/{id}/firewall, GET .../firewall/log and GET
 * .../egress/log (docs/api.md, "Networking and firewall"): parsing and
 * answers; the work is sandbox_firewall.c's and egress_proxy.c's.
 */
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/supervision/egress_proxy.h"
#include "api/kilnd/supervision/egress_proxy_log.h"

void handle_firewall_get(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "firewall get");
	json_t *out = NULL;
	struct api_err e;

	if (!sb)
		return;
	if (sandbox_firewall_get(sb, &out, &e))
		http_error(r, &e);
	else
		http_json(r, 200, out);
	sandbox_put(sb);
}

void handle_firewall_put(struct http_req *r)
{
	struct sandbox *sb = http_sandbox_target(r, "firewall set");
	json_t *body = NULL, *out = NULL;
	struct api_err e;

	if (!sb)
		return;
	if (http_body_json(r, false, &body, &e) || sandbox_firewall_set(sb, body, &out, &e))
		http_error(r, &e);
	else
		http_json(r, 200, out);
	json_decref(body);
	sandbox_put(sb);
}

void handle_firewall_log(struct http_req *r)
{
	struct sandbox *sb;
	json_t *out = NULL;
	struct api_err e;

	if (query_none(r->kv, r->nkv, "firewall log", &e)) {
		http_error(r, &e);
		return;
	}
	sb = http_sandbox_target(r, "firewall log");
	if (!sb)
		return;
	if (sandbox_firewall_log(sb, &out, &e))
		http_error(r, &e);
	else
		http_json(r, 200, out);
	sandbox_put(sb);
}

/* GET /v1/sandboxes/{id}/egress/log[?lines=N]: the egress proxy's decisions. */
void handle_egress_log(struct http_req *r)
{
	struct sandbox *sb;
	json_t *out = NULL;
	struct api_err e;
	size_t lines;

	if (query_egress_log(r->kv, r->nkv, EGRESS_LOG_LINES_DEFAULT, EGRESS_LOG_LINES_MAX, &lines,
			     &e)) {
		http_error(r, &e);
		return;
	}
	/* Not http_sandbox_target: that one takes no query. */
	sb = sandbox_get(r->d, &r->peer, r->rm.id, &e);
	if (!sb) {
		http_error(r, &e);
		return;
	}
	if (egress_proxy_log(sb, lines, &out, &e))
		http_error(r, &e);
	else
		http_json(r, 200, out);
	sandbox_put(sb);
}
