/*
 * api/kilnd/supervision/egress_proxy_plan.c and egress_proxy_log.c: the
 * proxy's uid is one to one with the jail id and never a jail's or the
 * importer's; its command line is the plan's; its
 * decision lines are hostile and come back only as known fields of their
 * documented types.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/supervision/egress_proxy_log.h"
#include "api/kilnd/supervision/egress_proxy_plan.h"
#include "lib/base/json_text.h"

static void test_ids(void **state)
{
	char why[256];

	(void)state;
	/* The defaults: jail 2000000000:65536, import 2000065536, proxies after it. */
	assert_int_equal(egress_ids_check(2000065537u, 2000000000u, 65536, 2000065536u, why,
					  sizeof(why)),
			 0);
	assert_int_equal(egress_id_of(2000000000u, 2000000000u, 65536, 2000065537u), 2000065537u);
	assert_int_equal(egress_id_of(2000065535u, 2000000000u, 65536, 2000065537u), 2000131072u);
	/* Outside the jail range: none. */
	assert_int_equal(egress_id_of(1999999999u, 2000000000u, 65536, 2000065537u), 0);
	assert_int_equal(egress_id_of(2000065536u, 2000000000u, 65536, 2000065537u), 0);
	/* Overlapping the jail range, either side. */
	assert_int_equal(egress_ids_check(2000000100u, 2000000000u, 65536, 1, why, sizeof(why)),
			 -1);
	assert_non_null(strstr(why, "overlaps --jail-ids"));
	assert_int_equal(egress_ids_check(1999990000u, 2000000000u, 65536, 1, why, sizeof(why)),
			 -1);
	/* Just below it is fine. */
	assert_int_equal(egress_ids_check(1999934464u, 2000000000u, 65536, 1, why, sizeof(why)), 0);
	/* Holding the import id. */
	assert_int_equal(egress_ids_check(3000000000u, 2000000000u, 65536, 3000000005u, why,
					  sizeof(why)),
			 -1);
	assert_non_null(strstr(why, "--import-id"));
	/* Reaching the last uid, or 0. */
	assert_int_equal(egress_ids_check(UINT32_MAX - 10, 1000, 65536, 1, why, sizeof(why)), -1);
	assert_int_equal(egress_ids_check(0, 1000, 10, 1, why, sizeof(why)), -1);
}

static void expect_argv(const struct egress_argv *a, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		assert_non_null(a->argv[i]);
		assert_string_equal(a->argv[i], want[i]);
	}
	assert_null(a->argv[i]);
}

static void test_argv(void **state)
{
	static const char *const plan[] = { "/usr/lib/kiln/kiln-egress",
					    "--listen-fd",
					    "3",
					    "--policy-fd",
					    "4",
					    "--rules",
					    "/tmp/egress/rules.json",
					    "--ca",
					    "/tmp/egress",
					    "--secrets",
					    "/tmp/egress/secrets.json",
					    NULL };
	static const char *const upstream[] = { "/usr/lib/kiln/kiln-egress",
						"--listen-fd",
						"3",
						"--policy-fd",
						"4",
						"--rules",
						"/tmp/egress/rules.json",
						"--ca",
						"/tmp/egress",
						"--secrets",
						"/tmp/egress/secrets.json",
						"--upstream-ca",
						"/tmp/egress/upstream-ca.pem",
						NULL };
	static const char *const init[] = { "/usr/lib/kiln/kiln-egress", "--init-ca", "/tmp/egress",
					    NULL };
	struct egress_argv a;

	(void)state;
	assert_int_equal(egress_argv_serve("/usr/lib/kiln/kiln-egress", false, &a), 0);
	expect_argv(&a, plan);
	assert_int_equal(egress_argv_serve("/usr/lib/kiln/kiln-egress", true, &a), 0);
	expect_argv(&a, upstream);
	assert_int_equal(egress_argv_init_ca("/usr/lib/kiln/kiln-egress", &a), 0);
	expect_argv(&a, init);
	/* Only an absolute program path. */
	assert_int_equal(egress_argv_serve("kiln-egress", false, &a), -1);
	assert_int_equal(egress_argv_serve(NULL, false, &a), -1);
	assert_int_equal(egress_argv_init_ca("./kiln-egress", &a), -1);
}

/* The entry line as compact JSON text (keys sorted), or "(dropped)". */
static char *entry_text(const char *line)
{
	json_t *e = egress_log_entry(line, strlen(line));
	char *s = e ? json_text(e, JSON_COMPACT | JSON_SORT_KEYS) : strdup("(dropped)");

	json_decref(e);
	return s;
}

static void expect_entry(const char *line, const char *want)
{
	char *got = entry_text(line);

	assert_string_equal(got, want);
	free(got);
}

static void test_entry(void **state)
{
	char big[EGRESS_LOG_LINE_MAX + 64];

	(void)state;
	/* A full line comes back as it was. */
	expect_entry(
		"{\"time\":\"2026-11-30T17:00:00Z\",\"src\":\"10.0.2.15:40000\",\"dst\":\"140.82.112.6:443\","
		"\"name\":\"api.github.com\",\"sni\":\"api.github.com\",\"host\":\"api.github.com\","
		"\"method\":\"GET\",\"path\":\"/repos/x\",\"decision\":\"allow\",\"rule\":0,"
		"\"reason\":\"rule\",\"bytes_up\":120,\"bytes_down\":4096,\"injected\":[\"authorization\"]}",
		"{\"bytes_down\":4096,\"bytes_up\":120,\"decision\":\"allow\",\"dst\":\"140.82.112.6:443\","
		"\"host\":\"api.github.com\",\"injected\":[\"authorization\"],\"method\":\"GET\","
		"\"name\":\"api.github.com\",\"path\":\"/repos/x\",\"reason\":\"rule\",\"rule\":0,"
		"\"sni\":\"api.github.com\",\"src\":\"10.0.2.15:40000\",\"time\":\"2026-11-30T17:00:00Z\"}");
	/* Unknown keys, wrong types, negative counts: dropped, the rest kept. */
	expect_entry("{\"decision\":\"deny\",\"secret\":\"hunter2\",\"bytes_up\":-1,\"bytes_down\":\"9\","
		     "\"path\":7,\"rule\":\"r1\",\"injected\":[\"x-a\",5,{\"v\":1}]}",
		     "{\"decision\":\"deny\",\"injected\":[\"x-a\"],\"rule\":\"r1\"}");
	/* Control characters cannot forge a terminal or a log line. */
	expect_entry("{\"decision\":\"allow\\u001b[2J\\nx\",\"host\":\"a\\u009bb\"}",
		     "{\"decision\":\"allow?[2J?x\",\"host\":\"a??b\"}"); /* one ? per byte */
	/* A NUL in a string is refused by the strict load: the line goes. */
	expect_entry("{\"decision\":\"allow\",\"host\":\"a\\u0000b\"}", "(dropped)");
	/* Not an object with a string decision, not JSON, two values, too long: dropped. */
	expect_entry("[1,2]", "(dropped)");
	expect_entry("{\"decision\":1}", "(dropped)");
	expect_entry("{\"host\":\"a\"}", "(dropped)");
	expect_entry("{\"decision\":\"allow\"", "(dropped)");
	expect_entry("{\"decision\":\"a\"} {\"decision\":\"b\"}", "(dropped)");
	expect_entry("", "(dropped)");
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"decision\":\"a\"}", 16);
	big[sizeof(big) - 1] = '\0';
	expect_entry(big, "(dropped)");
}

static void test_entry_caps(void **state)
{
	char line[EGRESS_LOG_LINE_MAX], *p = line;
	json_t *e;

	(void)state;
	/* A field is cut to EGRESS_LOG_FIELD_MAX bytes; injected to EGRESS_LOG_INJECTED_MAX names. */
	p += sprintf(p, "{\"decision\":\"a\",\"path\":\"/");
	for (int i = 0; i < 3000; i++)
		*p++ = 'x';
	p += sprintf(p, "\",\"injected\":[");
	for (int i = 0; i < 40; i++)
		p += sprintf(p, "%s\"h%d\"", i ? "," : "", i);
	sprintf(p, "]}");
	e = egress_log_entry(line, strlen(line));
	assert_non_null(e);
	assert_int_equal(strlen(json_string_value(json_object_get(e, "path"))),
			 EGRESS_LOG_FIELD_MAX);
	assert_int_equal(json_array_size(json_object_get(e, "injected")), EGRESS_LOG_INJECTED_MAX);
	json_decref(e);
}

static void test_tail(void **state)
{
	const char log[] = "tial\",\"decision\":\"x\"}\n"
			   "{\"decision\":\"a\"}\n"
			   "garbage\n"
			   "\n"
			   "{\"decision\":\"b\"}\n"
			   "{\"decision\":\"c\"}\n"
			   "{\"decision\":\"d\""; /* being written */
	json_t *t;
	char *s;

	(void)state;
	t = egress_log_tail((const uint8_t *)log, strlen(log), false, 10);
	s = json_text(t, JSON_COMPACT);
	assert_string_equal(s, "[{\"decision\":\"a\"},{\"decision\":\"b\"},{\"decision\":\"c\"}]");
	free(s);
	json_decref(t);
	t = egress_log_tail((const uint8_t *)log, strlen(log), false, 2);
	s = json_text(t, JSON_COMPACT);
	assert_string_equal(s, "[{\"decision\":\"b\"},{\"decision\":\"c\"}]");
	free(s);
	json_decref(t);
	t = egress_log_tail((const uint8_t *)"", 0, true, 10);
	assert_int_equal(json_array_size(t), 0);
	json_decref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),   cmocka_unit_test(test_argv),
		cmocka_unit_test(test_entry), cmocka_unit_test(test_entry_caps),
		cmocka_unit_test(test_tail),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
