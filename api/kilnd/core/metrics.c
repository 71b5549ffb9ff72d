/* Counters, histograms and their Prometheus text; see metrics.h. */
#include "api/kilnd/core/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Boot: real KVM boots in milliseconds, the nested harness in minutes. */
static const double boot_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
				      1,     2.5,  5,     10,   30,  60,   120 };
/* Exec round trip: the target is 1 ms for /bin/true. */
static const double exec_bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
				      0.25,   0.5,   1,      2.5,   5,    10,    30,   60 };

void metrics_init(struct kiln_metrics *m)
{
	memset(m, 0, sizeof(*m));
	m->boot_seconds.bounds = boot_bounds;
	m->boot_seconds.nbounds = sizeof(boot_bounds) / sizeof(boot_bounds[0]);
	m->exec_seconds.bounds = exec_bounds;
	m->exec_seconds.nbounds = sizeof(exec_bounds) / sizeof(exec_bounds[0]);
	/* Restores and snapshots: milliseconds on real KVM, like boots. */
	m->restore_seconds.bounds = boot_bounds;
	m->restore_seconds.nbounds = sizeof(boot_bounds) / sizeof(boot_bounds[0]);
	m->snapshot_seconds.bounds = boot_bounds;
	m->snapshot_seconds.nbounds = sizeof(boot_bounds) / sizeof(boot_bounds[0]);
}

void histogram_observe(struct histogram *h, double v)
{
	size_t i;

	if (!(v > 0))
		v = 0; /* also NaN */
	for (i = 0; i < h->nbounds && v > h->bounds[i]; i++)
		;
	h->counts[i]++;
	h->count++;
	h->sum += v;
}

void metrics_http(struct kiln_metrics *m, unsigned status)
{
	unsigned c = status / 100;

	if (c >= 1 && c <= 5)
		m->http[c]++;
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
		(unsigned long long)v);
}

static void hist(FILE *f, const char *name, const char *help, const struct histogram *h)
{
	uint64_t cum = 0;

	fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (size_t i = 0; i < h->nbounds; i++) {
		cum += h->counts[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i],
			(unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
	fprintf(f, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name,
		(unsigned long long)h->count);
}

char *metrics_render(const struct kiln_metrics *m, const unsigned states[SANDBOX_STATE_COUNT],
		     size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return NULL;
	fprintf(f, "# HELP kiln_sandboxes Sandboxes by state.\n# TYPE kiln_sandboxes gauge\n");
	for (int s = 0; s < SANDBOX_STATE_COUNT; s++)
		fprintf(f, "kiln_sandboxes{state=\"%s\"} %u\n",
			sandbox_state_name((enum sandbox_state)s), states[s]);
	counter(f, "kiln_boots_total", "Boots that reached the guest agent.", m->boots);
	counter(f, "kiln_boot_failures_total", "Boots that did not reach the guest agent.",
		m->boot_failures);
	counter(f, "kiln_boot_retries_total",
		"Cold boots tried once more because the guest triple-faulted before its agent answered.",
		m->boot_retries);
	counter(f, "kiln_sandbox_crashes_total",
		"Running sandboxes whose VMM ended without being asked.", m->crashes);
	hist(f, "kiln_boot_seconds", "Time from spawning kiln-vmm to the agent's first answer.",
	     &m->boot_seconds);
	counter(f, "kiln_exec_total", "Execs that ran, whatever their exit status.", m->execs);
	counter(f, "kiln_exec_errors_total", "Execs that could not run or lost their result.",
		m->exec_errors);
	hist(f, "kiln_exec_seconds", "Exec round trip through the API, request to exit.",
	     &m->exec_seconds);
	counter(f, "kiln_pauses_total", "Sandboxes paused.", m->pauses);
	counter(f, "kiln_resumes_total", "Paused sandboxes resumed.", m->resumes);
	counter(f, "kiln_checkpoints_total", "Checkpoints taken.", m->checkpoints);
	counter(f, "kiln_checkpoint_failures_total", "Checkpoints kiln-vmm could not take.",
		m->checkpoint_failures);
	counter(f, "kiln_restores_total", "Checkpoints restored in place.", m->restores);
	counter(f, "kiln_forks_total", "Sandboxes forked from a checkpoint.", m->forks);
	counter(f, "kiln_pool_creates_total",
		"Creates served by a warm pool's ready sandbox (kilnd --pool).", m->pool_creates);
	counter(f, "kiln_zygote_claims_total",
		"kiln-vmm starts (boots, wakes, forks) that claimed a parked zygote (kilnd --zygotes).",
		m->zygote_claims);
	counter(f, "kiln_zygote_misses_total",
		"kiln-vmm starts that found no parked zygote, or whose claim failed, and started kiln-vmm themselves.",
		m->zygote_misses);
	fprintf(f,
		"# HELP kiln_zygotes_parked Zygotes parked and ready to be claimed.\n"
		"# TYPE kiln_zygotes_parked gauge\nkiln_zygotes_parked %u\n",
		m->zygotes_parked);
	counter(f, "kiln_hibernations_total", "Sandboxes hibernated (on request or idle).",
		m->hibernations);
	counter(f, "kiln_idle_hibernations_total", "Hibernations by the idle timeout.",
		m->idle_hibernations);
	counter(f, "kiln_wakes_total",
		"Hibernated sandboxes woken (on request or by a request that needed the agent).",
		m->wakes);
	counter(f, "kiln_wake_cold_boots_total",
		"Wakes that booted the kernel because the snapshot was unusable.",
		m->wake_cold_boots);
	hist(f, "kiln_restore_seconds",
	     "Time from spawning kiln-vmm on a snapshot to the agent's first answer.",
	     &m->restore_seconds);
	hist(f, "kiln_snapshot_seconds",
	     "Time the guest was paused for a checkpoint or hibernation snapshot.",
	     &m->snapshot_seconds);
	fprintf(f,
		"# HELP kiln_secrets Named secrets kilnd holds for the egress proxy (every owner's).\n"
		"# TYPE kiln_secrets gauge\nkiln_secrets %u\n",
		m->secrets);
	counter(f, "kiln_firewall_updates_total", "Firewall rule sets replaced (PUT .../firewall).",
		m->firewall_updates);
	fprintf(f,
		"# HELP kiln_firewall_sandboxes Running sandboxes with a network whose filter answered this scrape.\n"
		"# TYPE kiln_firewall_sandboxes gauge\nkiln_firewall_sandboxes %u\n",
		m->fw_sandboxes);
	fprintf(f,
		"# HELP kiln_firewall_packets Packets the filters of those sandboxes passed or dropped (both ways, since each boot or rule change).\n"
		"# TYPE kiln_firewall_packets gauge\n"
		"kiln_firewall_packets{verdict=\"pass\"} %llu\nkiln_firewall_packets{verdict=\"drop\"} %llu\n",
		(unsigned long long)m->fw_pass_packets, (unsigned long long)m->fw_drop_packets);
	fprintf(f,
		"# HELP kiln_firewall_flows_cut Established flows cut by rule changes, over those sandboxes.\n"
		"# TYPE kiln_firewall_flows_cut gauge\nkiln_firewall_flows_cut %llu\n",
		(unsigned long long)m->fw_flows_cut);
	fprintf(f,
		"# HELP kiln_egress_proxies Egress proxies (kiln-egress) running, one per sandbox with http rules.\n"
		"# TYPE kiln_egress_proxies gauge\nkiln_egress_proxies %u\n",
		m->egress_proxies);
	counter(f, "kiln_egress_proxy_restarts_total",
		"Egress proxies started again after they ended while their sandbox ran.",
		m->egress_proxy_restarts);
	fprintf(f,
		"# HELP kiln_egress_decisions_total The egress proxies' decisions on flows and "
		"requests, by verdict and by who decided (the rules, a policy callback, its "
		"timeout).\n# TYPE kiln_egress_decisions_total counter\n");
	for (int v = 0; v < 2; v++)
		for (int by = 0; by < 3; by++)
			fprintf(f, "kiln_egress_decisions_total{decision=\"%s\",by=\"%s\"} %llu\n",
				v ? "deny" : "allow",
				(const char *const[]){ "rules", "callback", "timeout" }[by],
				(unsigned long long)m->egress_decisions[v][by]);
	fprintf(f,
		"# HELP kiln_http_requests_total HTTP responses by status class.\n"
		"# TYPE kiln_http_requests_total counter\n");
	for (int c = 1; c <= 5; c++)
		fprintf(f, "kiln_http_requests_total{class=\"%dxx\"} %llu\n", c,
			(unsigned long long)m->http[c]);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}
