/*
 * control_proto: kiln-vmm's control commands. Every command and its
 * arguments parse exactly; anything else is refused with a reason; reply
 * messages are valid JSON strings whatever they hold.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vmm/control/control_proto.h"

static int parse(const char *in, struct control_cmd *c, char *why)
{
	static char line[CONTROL_LINE_MAX];

	snprintf(line, sizeof(line), "%s", in);
	return control_parse(line, c, why, 256);
}

static void test_simple_commands(void **state)
{
	struct control_cmd c;
	char why[256];

	(void)state;
	assert_int_equal(parse("pause", &c, why), 0);
	assert_int_equal(c.op, CTL_PAUSE);
	assert_int_equal(parse("resume", &c, why), 0);
	assert_int_equal(c.op, CTL_RESUME);
	assert_int_equal(parse("status\r", &c, why), 0);
	assert_int_equal(c.op, CTL_STATUS);
}

static void test_snapshot_arguments(void **state)
{
	struct control_cmd c;
	char why[256];

	(void)state;
	assert_int_equal(parse("snapshot /var/lib/kiln/a b", &c, why), 0);
	assert_int_equal(c.op, CTL_SNAPSHOT);
	assert_int_equal(c.compress, 0);
	assert_string_equal(c.dir, "/var/lib/kiln/a b");
	assert_int_equal(parse("snapshot --compress /s", &c, why), 0);
	assert_int_equal(c.compress, 1);
	assert_string_equal(c.dir, "/s");
	assert_int_equal(parse("snapshot", &c, why), -EINVAL);
	assert_non_null(strstr(why, "needs a directory"));
	assert_int_equal(parse("snapshot --compress ", &c, why), -EINVAL);
	assert_int_equal(parse("snapshot rel/dir", &c, why), -EINVAL);
	assert_non_null(strstr(why, "absolute"));
}

static void test_refusals(void **state)
{
	struct control_cmd c;
	char why[256];

	(void)state;
	assert_int_equal(parse("", &c, why), -EINVAL);
	assert_int_equal(parse("PAUSE", &c, why), -EINVAL);
	assert_non_null(strstr(why, "unknown command"));
	assert_int_equal(parse("pause now", &c, why), -EINVAL);
	assert_non_null(strstr(why, "takes no argument"));
	assert_int_equal(parse("snapshot /a\tb", &c, why), -EINVAL);
	assert_non_null(strstr(why, "control characters"));
	assert_int_equal(parse("resume\x1b[2J", &c, why), -EINVAL);
}

static void test_error_reply_is_json(void **state)
{
	const char *msgs[] = { "plain", "quote \" and \\ backslash", "tab\tnew\nline\x01", "" };
	char buf[128];

	(void)state;
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		json_error_t je;
		size_t n = control_reply_error(buf, sizeof(buf), msgs[i]);
		json_t *j;

		assert_int_equal(n, strlen(buf));
		assert_int_equal(buf[n - 1], '\n');
		j = json_loads(buf, 0, &je);
		assert_non_null(j);
		assert_true(json_is_false(json_object_get(j, "ok")));
		assert_string_equal(json_string_value(json_object_get(j, "error")), msgs[i]);
		json_decref(j);
	}
}

static void test_escape_truncates_safely(void **state)
{
	char small[8], big[600];

	(void)state;
	memset(big, '"', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	/* Never half an escape, always terminated. */
	assert_int_equal(control_json_escape(small, sizeof(small), big), 6);
	assert_string_equal(small, "\\\"\\\"\\\"");
	assert_int_equal(control_json_escape(small, sizeof(small), "\x01"), 6);
	assert_string_equal(small, "\\u0001");
	assert_int_equal(control_json_escape(small, 1, "x"), 0);
	assert_string_equal(small, "");
}

static void test_firewall_commands(void **state)
{
	struct control_cmd c;
	char why[256];
	static char big[CONTROL_LINE_MAX];

	(void)state;
	assert_int_equal(parse("firewall-set {\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-443\"}]}", &c, why), 0);
	assert_int_equal(c.op, CTL_FIREWALL_SET);
	assert_string_equal(c.json, "{\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-443\"}]}");
	/* The JSON is the rest of the line, spaces and all. */
	assert_int_equal(parse("firewall-set { \"outbound_internet\": true }", &c, why), 0);
	assert_string_equal(c.json, "{ \"outbound_internet\": true }");
	assert_int_equal(parse("firewall-get", &c, why), 0);
	assert_int_equal(c.op, CTL_FIREWALL_GET);
	assert_int_equal(parse("firewall-get now", &c, why), -EINVAL);
	assert_non_null(strstr(why, "takes no argument"));
	assert_int_equal(parse("firewall-set", &c, why), -EINVAL);
	assert_non_null(strstr(why, "firewall-set needs a rule set"));
	assert_int_equal(parse("firewall-set ", &c, why), -EINVAL);
	/* One line: a raw newline or tab inside is refused (JSON escapes them). */
	assert_int_equal(parse("firewall-set {\"dns\":\t[]}", &c, why), -EINVAL);
	assert_non_null(strstr(why, "control characters"));
	/* A whole rule set's worth fits on the line. */
	memset(big, ' ', sizeof(big) - 1);
	memcpy(big, "firewall-set {", 14);
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = 0;
	assert_int_equal(control_parse(big, &c, why, sizeof(why)), 0);
	assert_int_equal(strlen(c.json), CONTROL_LINE_MAX - 1 - 13);
	assert_true(CONTROL_LINE_MAX > 256 * 1024);
}

static void test_object_reply(void **state)
{
	json_error_t je;
	json_t *j;
	char *r;

	(void)state;
	r = control_reply_object("{\"rules\":{\"allow\":[]},\"counters\":{\"flows\":3}}");
	assert_non_null(r);
	assert_int_equal(r[strlen(r) - 1], '\n');
	assert_ptr_equal(strchr(r, '\n'), r + strlen(r) - 1); /* one line */
	j = json_loads(r, 0, &je);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "counters"), "flows")), 3);
	json_decref(j);
	free(r);
	r = control_reply_object("{}");
	assert_string_equal(r, "{\"ok\":true}\n");
	free(r);
	assert_null(control_reply_object("[1]"));
	assert_null(control_reply_object("{"));
	assert_null(control_reply_object(""));
	assert_null(control_reply_object(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_commands),
		cmocka_unit_test(test_snapshot_arguments),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_error_reply_is_json),
		cmocka_unit_test(test_escape_truncates_safely),
		cmocka_unit_test(test_firewall_commands),
		cmocka_unit_test(test_object_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
