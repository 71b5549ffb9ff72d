/*
 * egress_log: kiln-egress's decision lines: one JSON object a line with
 * exactly the plan's fields, null for what is not known, injected header
 * names and nothing else, a path with quotes and backslashes escaped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "api/egress/egress_log.h"

/* l written through a pipe, read back as JSON. */
static json_t *line_of(const struct egress_log *l, char *text, size_t cap)
{
	struct egress_logger g = { .lock = PTHREAD_MUTEX_INITIALIZER };
	int p[2];
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	g.fd = p[1];
	egress_log_write(&g, l);
	close(p[1]);
	n = read(p[0], text, cap - 1);
	close(p[0]);
	assert_true(n > 0);
	text[n] = '\0';
	assert_int_equal(text[n - 1], '\n');
	assert_null(memchr(text, '\n', (size_t)n - 1));
	return json_loads(text, 0, NULL);
}

static void test_request_line(void **state)
{
	struct proxy_v2 h = { .family = AF_INET, .sport = 40000, .dport = 443 };
	struct egress_log l = { .hdr = &h,
				.name = "api.test",
				.sni = "api.test",
				.host = "api.test",
				.method = "GET",
				.path = "/a\"b\\c",
				.decision = "allow",
				.reason = "",
				.policy = "callback",
				.rule = 2,
				.up = 312,
				.injected = { "authorization" },
				.n_injected = 1 };
	static const char *const keys[] = {
		"time",     "src",  "dst",    "name",   "sni",      "host",       "method",  "path",
		"decision", "rule", "reason", "policy", "bytes_up", "bytes_down", "injected"
	};
	char text[2048];
	json_t *j;

	(void)state;
	memcpy(h.src, (uint8_t[]){ 10, 0, 2, 15 }, 4);
	memcpy(h.dst, (uint8_t[]){ 140, 82, 112, 6 }, 4);
	j = line_of(&l, text, sizeof(text));
	assert_non_null(j);
	assert_int_equal(json_object_size(j), sizeof(keys) / sizeof(keys[0]));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(json_object_get(j, keys[i]));
	assert_string_equal(json_string_value(json_object_get(j, "src")), "10.0.2.15:40000");
	assert_string_equal(json_string_value(json_object_get(j, "dst")), "140.82.112.6:443");
	assert_string_equal(json_string_value(json_object_get(j, "path")), "/a\"b\\c");
	assert_int_equal(json_integer_value(json_object_get(j, "rule")), 2);
	assert_string_equal(json_string_value(json_object_get(j, "policy")), "callback");
	assert_int_equal(json_integer_value(json_object_get(j, "bytes_up")), 312);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "injected"), 0)),
			    "authorization");
	assert_int_equal(json_array_size(json_object_get(j, "injected")), 1);
	json_decref(j);
}

static void test_unknowns_are_null(void **state)
{
	struct egress_log l = { .decision = "deny",
				.reason = "bad PROXY v2 header",
				.rule = SIZE_MAX };
	char text[2048];
	json_t *j;

	(void)state;
	j = line_of(&l, text, sizeof(text));
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "src")));
	assert_true(json_is_null(json_object_get(j, "name")));
	assert_true(json_is_null(json_object_get(j, "method")));
	assert_true(json_is_null(json_object_get(j, "rule")));
	assert_true(json_is_null(json_object_get(j, "policy")));
	assert_int_equal(json_array_size(json_object_get(j, "injected")), 0);
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "bad PROXY v2 header");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_line),
		cmocka_unit_test(test_unknowns_are_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
