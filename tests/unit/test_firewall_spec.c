/*
 * Unit tests of api/kilnd/core/firewall_spec.c: a sandbox's network and
 * packet-filter rules as the API takes and shows them (docs/api.md,
 * "Networking and firewall").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/firewall_spec.h"
#include "tests/unit/json_load.h"

static char *dump(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	assert_non_null(s);
	return s;
}

static void test_canon_default_dns(void **state)
{
	json_t *in, *out;
	struct api_err e;
	char *s;

	(void)state;
	/* No rule set: DNS to passt's resolver only. */
	assert_int_equal(firewall_rules_canon(NULL, &out, &e), 0);
	assert_string_equal(json_string_value(json_array_get(json_object_get(out, "dns"), 0)),
			    "10.0.2.3");
	assert_int_equal(json_array_size(json_object_get(out, "dns")), 1);
	assert_false(json_is_true(json_object_get(out, "outbound_internet")));
	json_decref(out);
	/* The shorthand: the resolver is added. */
	in = J("{\"outbound_internet\":true}");
	assert_int_equal(firewall_rules_canon(in, &out, &e), 0);
	assert_true(json_is_true(json_object_get(out, "outbound_internet")));
	assert_int_equal(json_array_size(json_object_get(out, "dns")), 1);
	json_decref(in);
	json_decref(out);
	/* "dns":[] stays shut; given resolvers stay as given. */
	in = J("{\"dns\":[]}");
	assert_int_equal(firewall_rules_canon(in, &out, &e), 0);
	assert_int_equal(json_array_size(json_object_get(out, "dns")), 0);
	json_decref(in);
	json_decref(out);
	in = J("{\"dns\":[\"192.0.2.53\"],\"allow\":[{\"cidr\":\"10.77.1.0/24\",\"proto\":\"tcp\",\"ports\":\"80-443\"}]}");
	assert_int_equal(firewall_rules_canon(in, &out, &e), 0);
	s = dump(json_object_get(out, "dns"));
	assert_string_equal(s, "[\"192.0.2.53\"]");
	free(s);
	assert_int_equal(json_array_size(json_object_get(out, "allow")), 1);
	json_decref(in);
	/* Canonical is a fixed point. */
	{
		json_t *again;
		char *a, *b;

		assert_int_equal(firewall_rules_canon(out, &again, &e), 0);
		a = dump(out);
		b = dump(again);
		assert_string_equal(a, b);
		free(a);
		free(b);
		json_decref(again);
	}
	json_decref(out);
}

static void test_canon_errors(void **state)
{
	static const struct {
		const char *in;
		enum api_code code;
		const char *msg;
	} bad[] = {
		{ "{\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-\"}]}", API_E_BAD_FIELD,
		  "firewall: allow[0].ports \"80-\": not a port or a range LO-HI of 1..65535" },
		{ "{\"allow\":[{\"cidr\":\"10.0.0.1/8\"}]}", API_E_BAD_FIELD,
		  "firewall: allow[0].cidr \"10.0.0.1/8\": host bits are set: did you mean 10.0.0.0/8?" },
		{ "{\"alow\":[]}", API_E_UNKNOWN_FIELD, NULL },
		{ "{\"allow\":[{\"proto\":\"tcp\"}]}", API_E_MISSING_FIELD, NULL },
		{ "[1]", API_E_BAD_FIELD, "firewall: the rule set must be a JSON object" },
	};
	struct api_err e;
	json_t *out;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *in = J(bad[i].in);

		e.code = API_OK;
		if (firewall_rules_canon(in, &out, &e) != -1 || e.code != bad[i].code)
			fail_msg("case %zu: code %d, message '%s'", i, (int)e.code, e.msg);
		assert_null(out);
		if (bad[i].msg)
			assert_string_equal(e.msg, bad[i].msg);
		else
			assert_true(strncmp(e.msg, "firewall: ", 10) == 0);
		json_decref(in);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canon_default_dns),
		cmocka_unit_test(test_canon_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
