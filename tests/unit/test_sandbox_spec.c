/*
 * Unit tests of api/kilnd/core/sandbox_spec.c: the body of POST
 * /v1/sandboxes, validated into a struct (docs/api.md, "POST
 * /v1/sandboxes"), and back to canonical JSON for the sandbox object and
 * its metadata file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "api/kilnd/core/sandbox_spec.h"
#include "api/kilnd/core/firewall_spec.h"
#include "tests/unit/json_load.h"

static const struct sandbox_limits lim = { .max_cpus = 8,
					   .max_memory_mib = 4096,
					   .max_disk_mib = SPEC_DISK_MAX_MIB };

/* Parse a create body; returns the error code (API_OK on success). */
static enum api_code create(const char *text, struct sandbox_spec *s, char *msg)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = sandbox_spec_parse(j, &lim, s, &e);

	json_decref(j);
	if (msg)
		strcpy(msg, r ? e.msg : "");
	return r ? e.code : API_OK;
}

static void test_create_defaults(void **state)
{
	struct sandbox_spec s;

	(void)state;
	assert_int_equal(create("{\"image\":\"minimal\"}", &s, NULL), API_OK);
	assert_string_equal(s.image, "minimal");
	assert_int_equal(s.cpus, 1);
	assert_int_equal(s.memory_mib, 128);
	assert_string_equal(s.hostname, "kiln");
	assert_int_equal(json_object_size(s.env), 0);
	assert_int_equal(json_object_size(s.labels), 0);
	assert_int_equal(s.nshares, 0);
	assert_int_equal(s.timeout_s, 0);
	assert_int_equal(s.idle_timeout_s, 0); /* this test's limits: no --idle-timeout */
	assert_true(s.console);
	sandbox_spec_free(&s);
}

/* idle_timeout_s: the daemon's default unless given; 0 is never. */
static void test_create_idle_timeout(void **state)
{
	static const struct sandbox_limits idle = { .max_cpus = 8,
						    .max_memory_mib = 4096,
						    .max_disk_mib = SPEC_DISK_MAX_MIB,
						    .idle_timeout_default_s = 300 };
	struct sandbox_spec s, t;
	struct api_err e;
	json_t *b, *j;

	(void)state;
	b = json_loads("{\"image\":\"m\"}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &idle, &s, &e), 0);
	assert_int_equal(s.idle_timeout_s, 300);
	json_decref(b);
	/* The canonical JSON says it, so a later default does not change it. */
	j = sandbox_spec_to_json(&s);
	assert_int_equal(json_integer_value(json_object_get(j, "idle_timeout_s")), 300);
	assert_int_equal(sandbox_spec_parse(j, &lim, &t, &e), 0);
	assert_int_equal(t.idle_timeout_s, 300);
	json_decref(j);
	sandbox_spec_free(&t);
	sandbox_spec_free(&s);
	b = json_loads("{\"image\":\"m\",\"idle_timeout_s\":0}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &idle, &s, &e), 0);
	assert_int_equal(s.idle_timeout_s, 0);
	json_decref(b);
	sandbox_spec_free(&s);
	b = json_loads("{\"image\":\"m\",\"idle_timeout_s\":604801}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &idle, &s, &e), -1);
	assert_non_null(strstr(e.msg, "idle_timeout_s"));
	json_decref(b);
}

/* disk_mib: up to --max-disk; a record restored under a smaller one keeps its disk. */
static void test_create_disk_within_max_disk(void **state)
{
	static const struct sandbox_limits small = { .max_cpus = 8,
						     .max_memory_mib = 4096,
						     .max_disk_mib = 2048 };
	struct sandbox_spec s;
	struct api_err e;
	json_t *b;

	(void)state;
	b = json_loads("{\"image\":\"m\",\"disk_mib\":2048}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &small, &s, &e), 0);
	assert_int_equal(s.disk_mib, 2048);
	sandbox_spec_free(&s);
	json_decref(b);
	b = json_loads("{\"image\":\"m\",\"disk_mib\":2049}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &small, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "'disk_mib' must be from 0 to 2048"));
	json_decref(b);
}

static void test_create_everything_and_round_trip(void **state)
{
	const char *body =
		"{\"image\":\"debian\",\"cpus\":8,\"memory_mib\":4096,\"hostname\":\"box1\","
		"\"env\":{\"A\":\"1\",\"LANG\":\"C.UTF-8\"},\"labels\":{\"job\":\"42\"},"
		"\"shares\":[{\"host_path\":\"/srv/data\",\"guest_path\":\"/mnt/data\",\"read_only\":true},"
		"{\"host_path\":\"/srv/out\",\"guest_path\":\"/mnt/out\"},"
		"{\"client\":true,\"guest_path\":\"/mnt/mem\",\"timeout_ms\":250}],"
		"\"timeout_s\":604800,\"console\":false,\"disk_mib\":4096}";
	struct sandbox_spec s, t;
	struct api_err e;
	json_t *j;

	(void)state;
	assert_int_equal(create(body, &s, NULL), API_OK);
	assert_int_equal(s.cpus, 8);
	assert_int_equal(s.memory_mib, 4096);
	assert_int_equal(s.disk_mib, 4096);
	assert_string_equal(s.hostname, "box1");
	assert_string_equal(json_string_value(json_object_get(s.env, "LANG")), "C.UTF-8");
	assert_int_equal(s.nshares, 3);
	assert_true(s.shares[2].client);
	assert_int_equal(s.shares[2].timeout_ms, 250);
	assert_string_equal(s.shares[2].host_path, "");
	assert_false(s.shares[0].client);
	assert_true(s.shares[0].read_only);
	assert_false(s.shares[1].read_only);
	assert_string_equal(s.shares[1].guest_path, "/mnt/out");
	assert_int_equal(s.timeout_s, 604800);
	assert_false(s.console);
	/* Canonical JSON parses back to the same spec. */
	j = sandbox_spec_to_json(&s);
	assert_non_null(j);
	assert_int_equal(sandbox_spec_parse(j, &lim, &t, &e), 0);
	assert_int_equal(t.nshares, 3);
	assert_true(t.shares[2].client);
	assert_int_equal(t.shares[2].timeout_ms, 250);
	assert_null(json_object_get(json_array_get(json_object_get(j, "shares"), 2), "host_path"));
	assert_null(json_object_get(json_array_get(json_object_get(j, "shares"), 0), "client"));
	assert_int_equal(t.disk_mib, 4096);
	assert_string_equal(t.shares[0].host_path, "/srv/data");
	assert_true(json_equal(t.env, s.env));
	assert_true(json_equal(t.labels, s.labels));
	assert_false(t.console);
	json_decref(j);
	sandbox_spec_free(&t);
	sandbox_spec_free(&s);
}

static void test_create_rejects(void **state)
{
	static const struct {
		const char *body;
		enum api_code code;
		const char *in_message;
	} cases[] = {
		{ "[]", API_E_BAD_JSON, "JSON object" },
		{ "{}", API_E_MISSING_FIELD, "'image'" },
		{ "{\"image\":\"m\",\"cpu\":1}", API_E_UNKNOWN_FIELD, "'cpu'" },
		/* Unknown fields are found before field errors. */
		{ "{\"image\":7,\"x\":1}", API_E_UNKNOWN_FIELD, "'x'" },
		{ "{\"image\":7}", API_E_BAD_FIELD, "'image' must be a string" },
		{ "{\"image\":\"../etc\"}", API_E_BAD_FIELD, "not an image name" },
		{ "{\"image\":\"m\",\"cpus\":0}", API_E_BAD_FIELD, "from 1 to 8" },
		{ "{\"image\":\"m\",\"cpus\":9}", API_E_BAD_FIELD, "from 1 to 8" },
		{ "{\"image\":\"m\",\"cpus\":-1}", API_E_BAD_FIELD, "'cpus'" },
		{ "{\"image\":\"m\",\"cpus\":1.0}", API_E_BAD_FIELD, "integer" },
		{ "{\"image\":\"m\",\"cpus\":\"2\"}", API_E_BAD_FIELD, "integer" },
		{ "{\"image\":\"m\",\"memory_mib\":31}", API_E_BAD_FIELD, "from 32 to 4096" },
		{ "{\"image\":\"m\",\"memory_mib\":4097}", API_E_BAD_FIELD, "'memory_mib'" },
		{ "{\"image\":\"m\",\"disk_mib\":1048577}", API_E_BAD_FIELD,
		  "'disk_mib' must be from 0 to 1048576" },
		{ "{\"image\":\"m\",\"disk_mib\":-5}", API_E_BAD_FIELD, "'disk_mib'" },
		{ "{\"image\":\"m\",\"disk_mib\":\"4G\"}", API_E_BAD_FIELD,
		  "'disk_mib' must be an integer" },
		{ "{\"image\":\"m\",\"hostname\":\"a b\"}", API_E_BAD_FIELD, "hostname" },
		{ "{\"image\":\"m\",\"hostname\":\"x kiln.exec=reboot\"}", API_E_BAD_FIELD,
		  "hostname" },
		{ "{\"image\":\"m\",\"hostname\":\"\"}", API_E_BAD_FIELD, "hostname" },
		{ "{\"image\":\"m\",\"env\":[]}", API_E_BAD_FIELD, "'env' must be an object" },
		{ "{\"image\":\"m\",\"env\":{\"A=B\":\"1\"}}", API_E_BAD_FIELD, "env key" },
		{ "{\"image\":\"m\",\"env\":{\"\":\"1\"}}", API_E_BAD_FIELD, "env key" },
		{ "{\"image\":\"m\",\"env\":{\"A\":1}}", API_E_BAD_FIELD, "env['A']" },
		{ "{\"image\":\"m\",\"env\":{\"A\":null}}", API_E_BAD_FIELD, "env['A']" },
		{ "{\"image\":\"m\",\"labels\":{\"/x\":\"1\"}}", API_E_BAD_FIELD, "labels key" },
		{ "{\"image\":\"m\",\"shares\":{}}", API_E_BAD_FIELD, "array" },
		{ "{\"image\":\"m\",\"shares\":[1]}", API_E_BAD_FIELD,
		  "shares[0] must be an object" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\"}]}", API_E_MISSING_FIELD,
		  "guest_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b\",\"ro\":true}]}",
		  API_E_UNKNOWN_FIELD, "'ro'" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"a\",\"guest_path\":\"/b\"}]}",
		  API_E_BAD_FIELD, "host_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\\nb\",\"guest_path\":\"/b\"}]}",
		  API_E_BAD_FIELD, "host_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/\"}]}",
		  API_E_BAD_FIELD, "guest_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b c\"}]}",
		  API_E_BAD_FIELD, "guest_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b\",\"read_only\":1}]}",
		  API_E_BAD_FIELD, "read_only" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b\"},"
		  "{\"host_path\":\"/c\",\"guest_path\":\"/b\"}]}",
		  API_E_BAD_FIELD, "same guest_path" },
		/* Client shares (issue 37 item 6). */
		{ "{\"image\":\"m\",\"shares\":[{\"client\":true,\"host_path\":\"/a\",\"guest_path\":\"/b\"}]}",
		  API_E_BAD_FIELD, "a client share (\"client\": true) has no host_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b\",\"timeout_ms\":500}]}",
		  API_E_BAD_FIELD, "timeout_ms is for client shares only" },
		{ "{\"image\":\"m\",\"shares\":[{\"guest_path\":\"/b\"}]}", API_E_MISSING_FIELD,
		  "host_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"client\":\"yes\",\"guest_path\":\"/b\"}]}",
		  API_E_BAD_FIELD, "client" },
		{ "{\"image\":\"m\",\"shares\":[{\"client\":true,\"guest_path\":\"/b\",\"timeout_ms\":99}]}",
		  API_E_BAD_FIELD, "'timeout_ms' must be from 100 to 60000" },
		{ "{\"image\":\"m\",\"shares\":[{\"client\":true,\"guest_path\":\"/b\",\"timeout_ms\":60001}]}",
		  API_E_BAD_FIELD, "timeout_ms" },
		{ "{\"image\":\"m\",\"shares\":[{\"client\":true,\"guest_path\":\"/b\",\"timeout_ms\":300},"
		  "{\"client\":true,\"guest_path\":\"/c\"}]}",
		  API_E_BAD_FIELD, "shares[1] has timeout_ms 5000 but shares[0] 300" },
		{ "{\"image\":\"m\",\"timeout_s\":604801}", API_E_BAD_FIELD, "timeout_s" },
		{ "{\"image\":\"m\",\"console\":\"yes\"}", API_E_BAD_FIELD, "console" },
	};
	struct sandbox_spec s;
	char msg[ERR_MSG_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum api_code c = create(cases[i].body, &s, msg);

		if (c != cases[i].code || !strstr(msg, cases[i].in_message))
			fail_msg("%s: got %s '%s', want %s with '%s'", cases[i].body,
				 api_code_name(c), msg, api_code_name(cases[i].code),
				 cases[i].in_message);
		assert_null(s.env); /* nothing left to free after a failure */
	}
}

static void test_create_counts(void **state)
{
	json_t *body = J("{\"image\":\"m\"}"), *env = json_object(), *shares = json_array();
	struct sandbox_spec s;
	struct api_err e;

	(void)state;
	for (int i = 0; i <= SPEC_ENV_MAX; i++) {
		char k[16];

		snprintf(k, sizeof(k), "K%d", i);
		json_object_set_new(env, k, json_string("v"));
	}
	json_object_set_new(body, "env", env);
	assert_int_equal(sandbox_spec_parse(body, &lim, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "more than 256"));
	json_object_del(env, "K0");
	assert_int_equal(sandbox_spec_parse(body, &lim, &s, &e), 0);
	sandbox_spec_free(&s);
	for (int i = 0; i <= SPEC_MAX_SHARES; i++) {
		char g[16];

		snprintf(g, sizeof(g), "/g%d", i);
		json_array_append_new(shares,
				      json_pack("{s:s,s:s}", "host_path", "/h", "guest_path", g));
	}
	json_object_set_new(body, "shares", shares);
	assert_int_equal(sandbox_spec_parse(body, &lim, &s, &e), -1);
	assert_non_null(strstr(e.msg, "at most 8 shares"));
	json_array_remove(shares, 0);
	assert_int_equal(sandbox_spec_parse(body, &lim, &s, &e), 0);
	assert_int_equal(s.nshares, 8);
	sandbox_spec_free(&s);
	json_decref(body);
}

static void test_stop_and_start_bodies(void **state)
{
	struct api_err e;
	json_t *j;
	int grace = -1;

	(void)state;
	assert_int_equal(sandbox_stop_body_parse(NULL, &grace, &e), 0);
	assert_int_equal(grace, AGENT_GRACE_DEFAULT_MS);
	j = J("{\"grace_ms\":60000}");
	assert_int_equal(sandbox_stop_body_parse(j, &grace, &e), 0);
	assert_int_equal(grace, 60000);
	json_decref(j);
	j = J("{\"grace_ms\":60001}");
	assert_int_equal(sandbox_stop_body_parse(j, &grace, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	json_decref(j);
	j = J("{\"grace\":1}");
	assert_int_equal(sandbox_stop_body_parse(j, &grace, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	json_decref(j);
	assert_int_equal(sandbox_start_body_parse(NULL, &e), 0);
	j = J("{}");
	assert_int_equal(sandbox_start_body_parse(j, &e), 0);
	json_decref(j);
	j = J("{\"cpus\":2}");
	assert_int_equal(sandbox_start_body_parse(j, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	json_decref(j);
}

static void test_spec_network(void **state)
{
	struct sandbox_spec s;
	struct api_err e;
	json_t *b, *j;

	(void)state;
	/* The default: no network, no firewall; to_json says so. */
	b = J("{\"image\":\"minimal\"}");
	assert_int_equal(sandbox_spec_parse(b, &lim, &s, &e), 0);
	assert_int_equal(s.network, SANDBOX_NET_NONE);
	assert_null(s.firewall);
	j = sandbox_spec_to_json(&s);
	assert_string_equal(json_string_value(json_object_get(j, "network")), "none");
	assert_null(json_object_get(j, "firewall"));
	json_decref(j);
	sandbox_spec_free(&s);
	json_decref(b);

	b = J("{\"image\":\"minimal\",\"network\":\"passt\",\"firewall\":{\"allow\":[{\"host\":\"example.com\",\"ports\":443}]}}");
	assert_int_equal(sandbox_spec_parse(b, &lim, &s, &e), 0);
	assert_int_equal(s.network, SANDBOX_NET_PASST);
	assert_non_null(s.firewall);
	assert_int_equal(json_array_size(json_object_get(s.firewall, "dns")), 1);
	j = sandbox_spec_to_json(&s);
	assert_string_equal(json_string_value(json_object_get(j, "network")), "passt");
	assert_null(json_object_get(j, "firewall")); /* firewall.json holds the rules */
	sandbox_spec_free(&s);
	/* Round trip of the rest. */
	assert_int_equal(sandbox_spec_parse(j, &lim, &s, &e), 0);
	assert_int_equal(s.network, SANDBOX_NET_PASST);
	assert_null(s.firewall);
	sandbox_spec_free(&s);
	json_decref(j);
	json_decref(b);

	/* passt without rules: fine (the default rules come at the first boot). */
	b = J("{\"image\":\"minimal\",\"network\":\"passt\"}");
	assert_int_equal(sandbox_spec_parse(b, &lim, &s, &e), 0);
	assert_null(s.firewall);
	sandbox_spec_free(&s);
	json_decref(b);
}

static void test_spec_network_errors(void **state)
{
	static const struct {
		const char *in;
		enum api_code code;
		const char *msg;
	} bad[] = {
		{ "{\"image\":\"minimal\",\"network\":\"tap\"}", API_E_BAD_FIELD,
		  "sandbox create: network 'tap' is not \"none\" or \"passt\"" },
		{ "{\"image\":\"minimal\",\"network\":7}", API_E_BAD_FIELD, NULL },
		{ "{\"image\":\"minimal\",\"firewall\":{}}", API_E_BAD_FIELD,
		  "sandbox create: 'firewall' needs \"network\": \"passt\" (without a network there is nothing to filter)" },
		{ "{\"image\":\"minimal\",\"network\":\"none\",\"firewall\":{}}", API_E_BAD_FIELD,
		  NULL },
		{ "{\"image\":\"minimal\",\"network\":\"passt\",\"firewall\":{\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-\"}]}}",
		  API_E_BAD_FIELD,
		  "firewall: allow[0].ports \"80-\": not a port or a range LO-HI of 1..65535" },
		{ "{\"image\":\"minimal\",\"network\":\"passt\",\"firewall\":{\"allow\":[],\"extra\":1}}",
		  API_E_UNKNOWN_FIELD, NULL },
	};
	struct sandbox_spec s;
	struct api_err e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *b = J(bad[i].in);

		e.code = API_OK;
		if (sandbox_spec_parse(b, &lim, &s, &e) != -1 || e.code != bad[i].code)
			fail_msg("case %zu: code %d, message '%s'", i, (int)e.code, e.msg);
		if (bad[i].msg)
			assert_string_equal(e.msg, bad[i].msg);
		assert_null(s.firewall);
		json_decref(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_defaults),
		cmocka_unit_test(test_create_idle_timeout),
		cmocka_unit_test(test_create_disk_within_max_disk),
		cmocka_unit_test(test_create_everything_and_round_trip),
		cmocka_unit_test(test_create_rejects),
		cmocka_unit_test(test_create_counts),
		cmocka_unit_test(test_stop_and_start_bodies),
		cmocka_unit_test(test_spec_network),
		cmocka_unit_test(test_spec_network_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
