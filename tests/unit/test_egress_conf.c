/*
 * egress_conf: kiln-egress's rules and secrets files: the rules as a
 * whole rule set or a bare array, each refusal in one line, and secrets
 * whose refusals never quote a value.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/egress/egress_conf.h"

static char dir[] = "/tmp/test_egress_conf.XXXXXX";

static const char *put(const char *name, const char *text)
{
	static char path[2][256];
	static int which;
	char *p = path[which++ % 2];
	FILE *f;

	snprintf(p, 256, "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static void test_rules_forms(void **state)
{
	struct egress_conf *c = NULL;
	struct err e = { { 0 } };
	const char *rules, *secrets;

	(void)state;
	rules = put("a.json", " [{\"host\":\"a.test\"}]");
	assert_int_equal(egress_conf_load(rules, NULL, &c, &e), 0);
	assert_int_equal(c->rules->n, 1);
	assert_null(egress_conf_secret(c, "x"));
	egress_conf_drop(c);
	rules = put("set.json",
		    "{\"outbound_internet\":false,\"http\":[{\"host\":\"a.test\"},"
		    "{\"host\":\"b.test\"}]}");
	secrets = put("s.json", "{\"tok\":\"v-1\",\"other\":\"\"}");
	assert_int_equal(egress_conf_load(rules, secrets, &c, &e), 0);
	assert_int_equal(c->rules->n, 2);
	assert_string_equal(egress_conf_secret(c, "tok"), "v-1");
	/* Held by a flow, dropped by the reload: freed by the last. */
	assert_ptr_equal(egress_conf_hold(c), c);
	egress_conf_drop(c);
	egress_conf_drop(c);
	rules = put("none.json", "{\"outbound_internet\":true}");
	assert_int_equal(egress_conf_load(rules, NULL, &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "the rule set has no \"http\" key"));
	rules = put("bad.json", "{\"http\":[{\"host\":\"a.test\",\"methods\":[\"get\"]}]}");
	assert_int_equal(egress_conf_load(rules, NULL, &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--rules "));
	assert_non_null(strstr(e.msg, "http[0].methods[0] \"get\""));
	assert_int_equal(egress_conf_load("/nonexistent/r.json", NULL, &c, &e), -ENOENT);
	assert_string_equal(e.msg, "--rules /nonexistent/r.json: No such file or directory");
}

static void secrets_refused(const char *text, const char *want, const char *never)
{
	json_t *j = NULL;
	struct err e = { { 0 } };

	assert_int_equal(egress_conf_parse_secrets(text, strlen(text), &j, &e), -EINVAL);
	assert_null(j);
	if (strcmp(e.msg, want) != 0)
		fail_msg("%s: \"%s\", want \"%s\"", text, e.msg, want);
	if (never)
		assert_null(strstr(e.msg, never));
}

static void test_secrets_refused(void **state)
{
	char big[EGRESS_SECRET_MAX + 32];

	(void)state;
	secrets_refused("[\"a\"]", "not a JSON object of secret names to values", NULL);
	secrets_refused("{\"a\":1}", "secret a: its value is not a string", NULL);
	secrets_refused("{\"A\":\"x\"}", "a secret's name is not 1..64 of a-z, 0-9, '_' and '-'",
			NULL);
	secrets_refused("{\"tok\":\"hunter2\\r\\nX-Evil: 1\"}",
			"secret tok: its value holds a control character (CR, LF, ...), which no "
			"header value may",
			"hunter2");
	/* jansson's own message would quote the bytes near the fault. */
	secrets_refused("{\"tok\":\"hunter2\", hunter3}", "not valid JSON at line 1, column 24",
			"hunter");
	secrets_refused("{\"a\":\"x\",\"a\":\"y\"}", "not valid JSON at line 1, column 12", NULL);
	snprintf(big, sizeof(big), "{\"a\":\"%0*d\"}", EGRESS_SECRET_MAX + 1, 0);
	secrets_refused(big, "secret a: its value is over 8192 bytes", NULL);
}

static void test_secrets_file_refused(void **state)
{
	struct egress_conf *c = NULL;
	struct err e = { { 0 } };
	const char *rules = put("r.json", "[{\"host\":\"a.test\"}]");
	const char *secrets = put("bad-s.json", "{\"tok\":\"hunter2\\n\"}");
	char want[512];

	(void)state;
	assert_int_equal(egress_conf_load(rules, secrets, &c, &e), -EINVAL);
	snprintf(want, sizeof(want),
		 "--secrets %s: secret tok: its value holds a control character (CR, LF, ...), "
		 "which no header value may",
		 secrets);
	assert_string_equal(e.msg, want);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_forms),
		cmocka_unit_test(test_secrets_refused),
		cmocka_unit_test(test_secrets_file_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
