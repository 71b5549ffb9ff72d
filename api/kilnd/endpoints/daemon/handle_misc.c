/* GET /v1/health, GET /metrics, GET /v1/images (docs/api.md). */
#include <stdlib.h>

#include "api/kilnd/core/firewall_spec.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/images/images.h"
#include "api/kilnd/registry/sandbox.h"
#include "lib/base/version.h"

static void json_or_oom(struct http_req *r, json_t *o, const char *what)
{
	struct api_err e;

	if (o) {
		http_json(r, 200, o);
		return;
	}
	api_err_set(&e, API_E_INTERNAL, "%s: out of memory", what);
	http_error(r, &e);
}

void handle_health(struct http_req *r)
{
	unsigned counts[SANDBOX_STATE_COUNT];
	size_t total;

	if (!http_no_query(r, "health"))
		return;
	const struct kilnd_config *c = &r->d->cfg;
	bool jailed = !c->no_jail && !c->jail_unavailable[0];
	/* Programs go on each sandbox's cgroup: none without cgroups. */
	json_t *egress_why = !c->cgroups ? json_string("kilnd runs without cgroups (see cgroups.reason)")
			     : c->egress ? json_null()
					 : json_string(c->egress_off);

	sandboxes_count(r->d, counts, &total);
	json_or_oom(r,
		    json_pack("{s:s,s:s,s:I,s:I,s:{s:b,s:s,s:o},s:{s:b,s:o,s:o},s:{s:b,s:o},s:o*}", "status", "ok", "version",
			      KILN_VERSION, "uptime_s", (json_int_t)((mono_ms() - r->d->started_mono_ms) / 1000),
			      "sandboxes", (json_int_t)total, "jail", "enabled", jailed, "mode",
			      jailed ? "jailed" : c->no_jail ? "off (--no-jail)" : "unavailable", "reason",
			      c->jail_unavailable[0] ? json_string(c->jail_unavailable) : json_null(), "cgroups",
			      "used", c->cgroups, "parent", c->cgroups ? json_string(c->cgroup_parent) : json_null(),
			      "reason", c->cgroups ? json_null() : json_string(c->cgroup_off), "egress", "used",
			      c->cgroups && c->egress, "reason", egress_why, "pools",
			      sandbox_pools_view(r->d)),
		    "health");
}

void handle_metrics(struct http_req *r)
{
	unsigned counts[SANDBOX_STATE_COUNT];
	struct kiln_metrics m;
	struct fw_totals fw;
	unsigned fw_n;
	struct api_err e;
	size_t total, len;
	char *text;

	if (!http_no_query(r, "metrics"))
		return;
	sandboxes_count(r->d, counts, &total);
	sandboxes_firewall_totals(r->d, &fw, &fw_n);
	pthread_mutex_lock(&r->d->metrics_mu);
	m = r->d->metrics;
	pthread_mutex_unlock(&r->d->metrics_mu);
	m.fw_sandboxes = fw_n;
	m.fw_pass_packets = fw.pass_packets;
	m.fw_drop_packets = fw.drop_packets;
	m.fw_flows_cut = fw.flows_cut;
	text = metrics_render(&m, counts, &len);
	if (!text) {
		api_err_set(&e, API_E_INTERNAL, "metrics: out of memory");
		http_error(r, &e);
		return;
	}
	http_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

void handle_images(struct http_req *r)
{
	if (http_no_query(r, "images"))
		json_or_oom(r, images_list(r->d), "images");
}
