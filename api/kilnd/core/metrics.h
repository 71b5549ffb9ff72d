/*
 * metrics: kilnd's counters and histograms, rendered in the Prometheus
 * text exposition format 0.0.4 (docs/api.md, "GET /metrics").
 *
 * Contract: pure data and formatting. No locking here: the daemon keeps
 * one struct kiln_metrics under its own mutex and renders a copy.
 */
#ifndef KILN_METRICS_H
#define KILN_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "api/kilnd/core/sandbox_state.h"

#define HIST_MAX_BUCKETS 16

struct histogram {
	const double *bounds; /* ascending upper bounds, seconds; +Inf is implicit */
	size_t nbounds;
	uint64_t counts[HIST_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last = +Inf */
	uint64_t count;
	double sum;
};

struct kiln_metrics {
	uint64_t boots, boot_failures, boot_retries, crashes;
	uint64_t execs, exec_errors;
	/* snapshots: wake_cold_boots are wakes whose snapshot was unusable */
	uint64_t pauses, resumes, checkpoints, checkpoint_failures, restores, forks;
	uint64_t hibernations, idle_hibernations, wakes, wake_cold_boots;
	uint64_t pool_creates; /* creates a warm pool's sandbox served */
	/* kiln-vmm starts that claimed a parked zygote, and those that found
	 * none (or whose claim failed); the parked count is read at each scrape */
	uint64_t zygote_claims, zygote_misses;
	unsigned zygotes_parked;
	/* firewall: rule sets replaced (PUT .../firewall); the rest is read
	 * from the running VMMs at each scrape (handle_metrics), so gauges */
	uint64_t firewall_updates;
	unsigned fw_sandboxes;
	uint64_t fw_pass_packets, fw_drop_packets, fw_flows_cut;
	/* egress proxies (supervision/egress_proxy.h), read at each scrape */
	unsigned egress_proxies;
	uint64_t egress_proxy_restarts;
	/* their decisions: [0] allowed, [1] denied; by the rules, a policy
	 * callback, its timeout */
	uint64_t egress_decisions[2][3];
	unsigned secrets; /* named secrets held (every owner), read at each scrape; no names */
	uint64_t http[6]; /* responses by status class: [2] = 2xx, ... */
	struct histogram boot_seconds, exec_seconds;
	struct histogram restore_seconds, snapshot_seconds;
};

void metrics_init(struct kiln_metrics *m);

/* Count one observation (negative values count as 0). */
void histogram_observe(struct histogram *h, double v);

/* Count one HTTP response by its status class (1xx..5xx). */
void metrics_http(struct kiln_metrics *m, unsigned status);

/*
 * The exposition text for m and the number of sandboxes in each state.
 * malloc'd, NUL-terminated (free()); *len its length. NULL when out of
 * memory.
 */
char *metrics_render(const struct kiln_metrics *m, const unsigned states[SANDBOX_STATE_COUNT],
		     size_t *len);

#endif
