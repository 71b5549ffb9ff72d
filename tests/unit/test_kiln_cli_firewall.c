/* kiln firewall's command line and rules, kiln create --network/--firewall. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/kiln/cli_body.h"

static char *rule_text(const char *spec)
{
	struct err e;
	json_t *r = cli_firewall_rule(spec, &e);
	char *s;

	if (!r)
		fail_msg("'%s': %s", spec, e.msg);
	s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(r);
	return s;
}

static void expect_rule(const char *spec, const char *want)
{
	char *s = rule_text(spec);

	assert_string_equal(s, want);
	free(s);
}

static void test_rule(void **state)
{
	(void)state;
	expect_rule("10.0.0.0/8", "{\"cidr\":\"10.0.0.0/8\"}");
	expect_rule("203.0.113.7", "{\"cidr\":\"203.0.113.7\"}");
	expect_rule("10.77.1.0/24:9090/tcp",
		    "{\"cidr\":\"10.77.1.0/24\",\"ports\":9090,\"proto\":\"tcp\"}");
	expect_rule("example.com:443", "{\"host\":\"example.com\",\"ports\":443}");
	expect_rule("*.example.com:80-443/tcp",
		    "{\"host\":\"*.example.com\",\"ports\":\"80-443\",\"proto\":\"tcp\"}");
	expect_rule("1password.com", "{\"host\":\"1password.com\"}");
	expect_rule("2001:db8::/32", "{\"cidr\":\"2001:db8::/32\"}");
	expect_rule("[2001:db8::1]:53/udp",
		    "{\"cidr\":\"2001:db8::1\",\"ports\":53,\"proto\":\"udp\"}");
	expect_rule("0.0.0.0/0/icmp", "{\"cidr\":\"0.0.0.0/0\",\"proto\":\"icmp\"}");
}

static void test_rule_errors(void **state)
{
	static const char *const bad[] = { "",
					   "example.com:",
					   "example.com:0",
					   "example.com:65536",
					   "example.com:443-80",
					   "example.com:80-",
					   "x:abc",
					   "[2001:db8::1",
					   "[2001:db8::1]443",
					   ":443",
					   "[]:53" };
	struct err e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *r = cli_firewall_rule(bad[i], &e);

		if (r)
			fail_msg("'%s' was accepted", bad[i]);
	}
	assert_null(cli_firewall_rule("example.com:80-", &e));
	assert_string_equal(
		e.msg,
		"rule 'example.com:80-': ports '80-' is not a port or a range LO-HI of 1..65535");
}

static int parse(struct cli_firewall_req *r, struct err *e, int argc, ...)
{
	char *argv[8] = { "firewall" };
	struct cli_globals g;
	va_list ap;

	memset(&g, 0, sizeof(g));
	va_start(ap, argc);
	for (int i = 0; i < argc; i++)
		argv[i + 1] = va_arg(ap, char *);
	va_end(ap);
	return cli_firewall_parse(argc + 1, argv, &g, r, e);
}

static void test_parse(void **state)
{
	struct cli_firewall_req r;
	struct err e;

	(void)state;
	assert_int_equal(parse(&r, &e, 2, "show", "abc123"), 0);
	assert_int_equal(r.op, CLI_FW_SHOW);
	assert_string_equal(r.id, "abc123");
	assert_int_equal(parse(&r, &e, 2, "log", "abc123"), 0);
	assert_int_equal(r.op, CLI_FW_LOG);
	assert_null(r.rule);
	assert_int_equal(parse(&r, &e, 3, "log", "abc123", "x"), -1);
	assert_string_equal(e.msg, "firewall log takes ID");
	assert_int_equal(parse(&r, &e, 3, "set", "abc123", "-"), 0);
	assert_int_equal(r.op, CLI_FW_SET);
	assert_string_equal(r.file, "-");
	assert_int_equal(parse(&r, &e, 3, "allow", "abc123", "example.com:443"), 0);
	assert_int_equal(r.op, CLI_FW_ALLOW);
	assert_string_equal(json_string_value(json_object_get(r.rule, "host")), "example.com");
	json_decref(r.rule);
	assert_int_equal(parse(&r, &e, 3, "deny", "abc123", "203.0.113.0/24"), 0);
	assert_int_equal(r.op, CLI_FW_DENY);
	json_decref(r.rule);

	assert_int_equal(parse(&r, &e, 0), -1);
	assert_int_equal(parse(&r, &e, 1, "show"), -1);
	assert_string_equal(e.msg, "firewall show takes ID");
	assert_int_equal(parse(&r, &e, 3, "show", "a", "b"), -1);
	assert_int_equal(parse(&r, &e, 2, "set", "a"), -1);
	assert_string_equal(e.msg, "firewall set takes ID FILE|-");
	assert_int_equal(parse(&r, &e, 2, "open", "a"), -1);
	assert_string_equal(e.msg, "unknown firewall command 'open' (show, log, set, allow, deny)");
	assert_int_equal(parse(&r, &e, 2, "show", "../x"), -1);
	assert_int_equal(parse(&r, &e, 3, "allow", "a", "x:0"), -1);
	assert_null(r.rule);
}

static void test_add(void **state)
{
	json_t *rules = json_pack("{s:b,s:[],s:[]}", "outbound_internet", 0, "allow", "deny");
	json_t *rule = json_pack("{s:s}", "cidr", "10.0.0.0/8");
	struct err e;

	(void)state;
	assert_int_equal(cli_firewall_add(rules, CLI_FW_ALLOW, rule, &e), 0);
	assert_int_equal(cli_firewall_add(rules, CLI_FW_DENY, rule, &e), 0);
	assert_int_equal(cli_firewall_add(rules, CLI_FW_ALLOW, rule, &e), 0);
	assert_int_equal(json_array_size(json_object_get(rules, "allow")), 2);
	assert_int_equal(json_array_size(json_object_get(rules, "deny")), 1);
	json_object_del(rules, "deny");
	assert_int_equal(cli_firewall_add(rules, CLI_FW_DENY, rule, &e), 0);
	assert_int_equal(json_array_size(json_object_get(rules, "deny")), 1);
	json_object_set_new(rules, "allow", json_string("x"));
	assert_int_equal(cli_firewall_add(rules, CLI_FW_ALLOW, rule, &e), -1);
	assert_int_equal(cli_firewall_add(json_null(), CLI_FW_ALLOW, rule, &e), -1);
	json_decref(rules);
	json_decref(rule);
}

static void test_create_options(void **state)
{
	char path[] = "/tmp/kiln-fw-test-XXXXXX";
	struct err e;
	char *argv[6] = { "create", "--network", "passt", "--firewall", path, NULL };
	struct cli_globals g;
	json_t *b;
	int fd;

	(void)state;
	memset(&g, 0, sizeof(g));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"outbound_internet\": true}\n", 28), 28);
	close(fd);
	assert_int_equal(cli_create_body(5, argv, &g, &b, &e), 0);
	assert_string_equal(json_string_value(json_object_get(b, "network")), "passt");
	assert_true(
		json_is_true(json_object_get(json_object_get(b, "firewall"), "outbound_internet")));
	json_decref(b);
	/* A file that is not JSON, or missing: a usage error naming it. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{oops", 5), 5);
	close(fd);
	assert_int_equal(cli_create_body(5, argv, &g, &b, &e), -1);
	assert_non_null(strstr(e.msg, "--firewall /tmp/kiln-fw-test-"));
	unlink(path);
	assert_int_equal(cli_create_body(5, argv, &g, &b, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule),           cmocka_unit_test(test_rule_errors),
		cmocka_unit_test(test_parse),          cmocka_unit_test(test_add),
		cmocka_unit_test(test_create_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
