/*
 * Unit tests of api/kilnd/core/metrics.c: kilnd's counters and histograms,
 * rendered in the Prometheus text exposition format 0.0.4 (docs/api.md,
 * "GET /metrics").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/metrics.h"

static void test_metrics_text(void **state)
{
	struct kiln_metrics m;
	unsigned states[SANDBOX_STATE_COUNT] = { [SANDBOX_RUNNING] = 2, [SANDBOX_CRASHED] = 1 };
	char *t;
	size_t len;

	(void)state;
	metrics_init(&m);
	m.boots = 3;
	histogram_observe(&m.boot_seconds, 0.004);
	histogram_observe(&m.boot_seconds, 0.005); /* le is inclusive */
	histogram_observe(&m.boot_seconds, 0.3);
	histogram_observe(&m.boot_seconds, 1000);
	histogram_observe(&m.exec_seconds, -1); /* clock trouble counts as 0 */
	metrics_http(&m, 201);
	metrics_http(&m, 404);
	metrics_http(&m, 999);
	m.hibernations = 4;
	m.wake_cold_boots = 1;
	m.boot_retries = 2;
	histogram_observe(&m.restore_seconds, 0.02);
	t = metrics_render(&m, states, &len);
	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"running\"} 2\n"));
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"booting\"} 0\n"));
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"crashed\"} 1\n"));
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"paused\"} 0\n"));
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"hibernated\"} 0\n"));
	assert_non_null(strstr(t, "kiln_hibernations_total 4\n"));
	assert_non_null(strstr(t, "kiln_wake_cold_boots_total 1\n"));
	assert_non_null(
		strstr(t, "# TYPE kiln_boot_retries_total counter\nkiln_boot_retries_total 2\n"));
	assert_non_null(strstr(t, "kiln_pauses_total 0\n"));
	assert_non_null(strstr(t, "kiln_restore_seconds_bucket{le=\"0.025\"} 1\n"));
	assert_non_null(strstr(t, "# TYPE kiln_boots_total counter\nkiln_boots_total 3\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"0.005\"} 2\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"0.25\"} 2\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"0.5\"} 3\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"120\"} 3\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"+Inf\"} 4\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_count 4\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_sum 1000.309000\n"));
	assert_non_null(strstr(t, "kiln_exec_seconds_bucket{le=\"0.0005\"} 1\n"));
	assert_non_null(strstr(t, "kiln_http_requests_total{class=\"2xx\"} 1\n"));
	assert_non_null(strstr(t, "kiln_http_requests_total{class=\"4xx\"} 1\n"));
	assert_non_null(strstr(t, "kiln_http_requests_total{class=\"5xx\"} 0\n"));
	assert_int_equal(t[len - 1], '\n');
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
