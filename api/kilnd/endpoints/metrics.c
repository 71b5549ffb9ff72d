/* GET /metrics (docs/api.md, "Metrics"): Prometheus text, the request
 * counters with the sandboxes' states, firewall totals and the count
 * of secrets. */
#include "api/kilnd/core/firewall_spec.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/supervision/egress_proxy.h"
#include "api/kilnd/registry/secrets.h"
#include "api/kilnd/supervision/zygote.h"

void handle_metrics(struct http_req *r)
{
	unsigned counts[SANDBOX_STATE_COUNT];
	struct kiln_metrics m;
	struct fw_totals fw;
	struct egress_counts ec;
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
	m.zygotes_parked = zygote_pool_ready(r->d->zygotes);
	egress_proxies_counts(r->d, &m.egress_proxies, &m.egress_proxy_restarts, &ec);
	for (int by = 0; by < EGRESS_BY_COUNT; by++) {
		m.egress_decisions[0][by] = ec.allow[by];
		m.egress_decisions[1][by] = ec.deny[by];
	}
	m.secrets = (unsigned)secrets_total(r->d);
	text = metrics_render(&m, counts, &len);
	if (!text) {
		api_err_set(&e, API_E_INTERNAL, "metrics: out of memory");
		http_error(r, &e);
		return;
	}
	http_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}
