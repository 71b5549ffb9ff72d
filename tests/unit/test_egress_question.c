/*
 * egress_question: the connect and request questions a flow becomes (the
 * head's fields lower-cased in order, values trimmed, the rule's injected
 * names left out, bytes outside visible ASCII shown as '?', at most 100
 * fields; each one a question kilnd's cleaning passes), what every kind
 * of answer or its absence does to the flow, and an allowed answer's
 * header changes as injection fields (the rule's own names skipped).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "api/egress/egress_question.h"

static struct proxy_v2 hdr(void)
{
	struct proxy_v2 h = { .family = AF_INET, .sport = 40312, .dport = 443 };

	inet_pton(AF_INET, "10.0.2.15", h.src);
	inet_pton(AF_INET, "10.0.2.2", h.dst);
	return h;
}

/* q is the JSON text want, and kilnd's cleaning passes it unchanged. */
static void expect(json_t *q, const char *want)
{
	json_t *w = json_loads(want, 0, NULL), *clean = NULL;
	struct err e = { { 0 } };

	assert_non_null(q);
	assert_non_null(w);
	if (!json_equal(q, w)) {
		char *got = json_dumps(q, JSON_COMPACT);

		fail_msg("question %s, want %s", got, want);
	}
	if (egress_decision_question_clean(q, &clean, &e))
		fail_msg("kilnd refuses the question: %s", e.msg);
	assert_true(json_equal(q, clean));
	json_decref(clean);
	json_decref(w);
	json_decref(q);
}

static void test_connect(void **state)
{
	struct proxy_v2 h = hdr();
	struct egress_flow f = { .status = EGRESS_ALLOW,
				 .proto = EGRESS_PROTO_TLS,
				 .name = "api.test",
				 .intercept = true,
				 .rule = 0,
				 .reason = "" };

	(void)state;
	expect(egress_question_connect(7, &h, &f),
	       "{\"kind\":\"connect\",\"id\":7,\"src\":\"10.0.2.15:40312\",\"dst\":\"10.0.2.2:443\","
	       "\"name\":\"api.test\",\"proto\":\"tls\",\"static\":\"allow\",\"rule\":0,"
	       "\"intercept\":true}");
	/* Denied by the rules: its reason, no rule. */
	f = (struct egress_flow){ .status = EGRESS_DENY,
				  .proto = EGRESS_PROTO_TLS,
				  .name = "b.test",
				  .rule = SIZE_MAX,
				  .reason = "no rule allows b.test" };
	expect(egress_question_connect(9, &h, &f),
	       "{\"kind\":\"connect\",\"id\":9,\"src\":\"10.0.2.15:40312\",\"dst\":\"10.0.2.2:443\","
	       "\"name\":\"b.test\",\"proto\":\"tls\",\"static\":\"deny\",\"rule\":null,"
	       "\"reason\":\"no rule allows b.test\",\"intercept\":false}");
}

static struct http_inject INJECT[] = {
	{ .header = "authorization", .secret = "TOKEN", .format = "Bearer {}" },
	{ .header = "x-auth", .secret = "KEY", .format = "{}" },
};

static const struct http_rule RULE = { .n_inject = 2, .inject = INJECT };

static struct egress_flow request_flow(const char *head, const char *path)
{
	struct egress_flow f = { .status = EGRESS_ALLOW,
				 .proto = EGRESS_PROTO_HTTP,
				 .name = "api.test",
				 .method = "POST",
				 .head_len = strlen(head),
				 .rule = 0,
				 .reason = "" };

	snprintf(f.path, sizeof(f.path), "%s", path);
	return f;
}

static void test_request(void **state)
{
	static const char head[] = "POST /v1/x?a=b HTTP/1.1\r\n"
				   "Host: api.test\r\n"
				   "User-Agent:  curl/7.88 \t \r\n"
				   "Authorization: Bearer guest-own\r\n"
				   "X_Auth: guest\r\n"
				   "X-Bin: a\x80\xff"
				   "b\tc\r\n"
				   "Empty:\r\n"
				   "ACCEPT: */*\r\n"
				   "\r\n";
	struct proxy_v2 h = hdr();
	struct egress_flow f = request_flow(head, "/v1/x?a=b");

	(void)state;
	/* The injected names' fields (any case, '_' for '-') are left out:
	 * their values never reach the client. */
	expect(egress_question_request(8, 7, &h, "api.test", &f, head, &RULE),
	       "{\"kind\":\"request\",\"id\":8,\"flow\":7,\"src\":\"10.0.2.15:40312\","
	       "\"dst\":\"10.0.2.2:443\",\"name\":\"api.test\",\"proto\":\"http\","
	       "\"static\":\"allow\",\"rule\":0,\"method\":\"POST\",\"path\":\"/v1/x?a=b\","
	       "\"headers\":[[\"host\",\"api.test\"],[\"user-agent\",\"curl/7.88\"],"
	       "[\"x-bin\",\"a??b\\tc\"],[\"empty\",\"\"],[\"accept\",\"*/*\"]],"
	       "\"inject\":[\"authorization\",\"x-auth\"]}");
	/* No rule: every field shown, flow null (plain HTTP). */
	expect(egress_question_request(9, 0, &h, "api.test", &f, head, NULL),
	       "{\"kind\":\"request\",\"id\":9,\"flow\":null,\"src\":\"10.0.2.15:40312\","
	       "\"dst\":\"10.0.2.2:443\",\"name\":\"api.test\",\"proto\":\"http\","
	       "\"static\":\"allow\",\"rule\":0,\"method\":\"POST\",\"path\":\"/v1/x?a=b\","
	       "\"headers\":[[\"host\",\"api.test\"],[\"user-agent\",\"curl/7.88\"],"
	       "[\"authorization\",\"Bearer guest-own\"],[\"x_auth\",\"guest\"],"
	       "[\"x-bin\",\"a??b\\tc\"],[\"empty\",\"\"],[\"accept\",\"*/*\"]],"
	       "\"inject\":[]}");
}

/* A request the rules denied gets no rule's secrets even when the
 * callback allows it: its fields of the rule's names go upstream as the
 * guest sent them, so the client sees them, and "inject" is empty. */
static void test_request_denied_shows_all(void **state)
{
	static const char head[] = "GET /repos/../admin HTTP/1.1\r\nHost: api.test\r\n"
				   "Authorization: guest-own\r\n\r\n";
	struct proxy_v2 h = hdr();
	struct egress_flow f = request_flow(head, "/repos/../admin");

	(void)state;
	f.status = EGRESS_DENY;
	f.reason = "request path is not in normal form";
	f.rule = 0;
	f.method[0] = 'G', f.method[1] = 'E', f.method[2] = 'T', f.method[3] = '\0';
	expect(egress_question_request(5, 7, &h, "api.test", &f, head, &RULE),
	       "{\"kind\":\"request\",\"id\":5,\"flow\":7,\"src\":\"10.0.2.15:40312\","
	       "\"dst\":\"10.0.2.2:443\",\"name\":\"api.test\",\"proto\":\"http\","
	       "\"static\":\"deny\",\"rule\":0,\"reason\":\"request path is not in normal form\","
	       "\"method\":\"GET\",\"path\":\"/repos/../admin\","
	       "\"headers\":[[\"host\",\"api.test\"],[\"authorization\",\"guest-own\"]],"
	       "\"inject\":[]}");
}

static void test_request_bounds(void **state)
{
	size_t cap = 200 * 32 + 64, at;
	char *head = malloc(cap), *big = malloc(EGRESS_DECISION_VALUE_MAX + 100);
	struct proxy_v2 h = hdr();
	struct egress_flow f;
	struct err e = { { 0 } };
	json_t *q, *clean, *fields;

	(void)state;
	assert_non_null(head);
	assert_non_null(big);
	/* 150 fields: the first 100 listed. */
	at = (size_t)snprintf(head, cap, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 150; i++)
		at += (size_t)snprintf(head + at, cap - at, "X-F%d: %d\r\n", i, i);
	snprintf(head + at, cap - at, "\r\n");
	f = request_flow(head, "/");
	q = egress_question_request(1, 0, &h, "api.test", &f, head, NULL);
	assert_non_null(q);
	fields = json_object_get(q, "headers");
	assert_int_equal(json_array_size(fields), EGRESS_DECISION_HEADERS_MAX);
	assert_string_equal(json_string_value(json_array_get(json_array_get(fields, 99), 0)),
			    "x-f99");
	assert_int_equal(egress_decision_question_clean(q, &clean, &e), 0);
	json_decref(clean);
	json_decref(q);
	/* A value over 4096 bytes: cut to 4096, still a question kilnd passes. */
	memset(big, 'v', EGRESS_DECISION_VALUE_MAX + 50);
	big[EGRESS_DECISION_VALUE_MAX + 50] = '\0';
	free(head);
	head = malloc(EGRESS_DECISION_VALUE_MAX + 200);
	assert_non_null(head);
	snprintf(head, EGRESS_DECISION_VALUE_MAX + 200, "GET / HTTP/1.1\r\nX-Big: %s\r\n\r\n", big);
	f = request_flow(head, "/");
	q = egress_question_request(2, 0, &h, "api.test", &f, head, NULL);
	assert_non_null(q);
	fields = json_object_get(q, "headers");
	assert_int_equal(json_string_length(json_array_get(json_array_get(fields, 0), 1)),
			 EGRESS_DECISION_VALUE_MAX);
	assert_int_equal(egress_decision_question_clean(q, &clean, &e), 0);
	json_decref(clean);
	json_decref(q);
	free(head);
	free(big);
}

/* A field whose name is longer than a question shows (256 bytes) is
 * listed with its name cut, never left out: the client sees every field
 * the guest sends upstream (the first 100). */
static void test_request_long_name(void **state)
{
	char head[1024], name[301];
	struct proxy_v2 h = hdr();
	struct egress_flow f;
	struct err e = { { 0 } };
	json_t *q, *clean, *fields;

	(void)state;
	memset(name, 'n', 300);
	name[300] = '\0';
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: api.test\r\n%s: hidden?\r\n\r\n",
		 name);
	f = request_flow(head, "/");
	q = egress_question_request(4, 0, &h, "api.test", &f, head, NULL);
	assert_non_null(q);
	fields = json_object_get(q, "headers");
	assert_int_equal(json_array_size(fields), 2);
	name[256] = '\0';
	assert_string_equal(json_string_value(json_array_get(json_array_get(fields, 1), 0)), name);
	assert_string_equal(json_string_value(json_array_get(json_array_get(fields, 1), 1)),
			    "hidden?");
	assert_int_equal(egress_decision_question_clean(q, &clean, &e), 0);
	json_decref(clean);
	json_decref(q);
}

/* A path longer than a header value's cut is shown whole: the client
 * decides on the path that goes upstream, never on a prefix of it. */
static void test_request_long_path(void **state)
{
	static const char head[] = "GET / HTTP/1.1\r\n\r\n";
	struct proxy_v2 h = hdr();
	struct egress_flow f = request_flow(head, "/");
	struct err e = { { 0 } };
	json_t *q, *clean;

	(void)state;
	memset(f.path, 'p', sizeof(f.path) - 1);
	f.path[0] = '/';
	memcpy(f.path + sizeof(f.path) - 7, "/admin", 7);
	q = egress_question_request(3, 0, &h, "api.test", &f, head, NULL);
	assert_non_null(q);
	assert_int_equal(json_string_length(json_object_get(q, "path")), sizeof(f.path) - 1);
	assert_string_equal(json_string_value(json_object_get(q, "path")), f.path);
	assert_int_equal(egress_decision_question_clean(q, &clean, &e), 0);
	json_decref(clean);
	json_decref(q);
}

static struct egress_flow allowed(void)
{
	return (struct egress_flow){ .status = EGRESS_ALLOW,
				     .proto = EGRESS_PROTO_TLS,
				     .intercept = true,
				     .rule = 0,
				     .reason = "" };
}

static void test_apply(void **state)
{
	struct egress_answer a = { .id = 1 };
	struct egress_asked o = { .how = EGRESS_ASKED_NONE, .deadline_ms = 2000 };
	struct egress_flow f = allowed();
	char why[EGRESS_DECISION_REASON_MAX + 64];

	(void)state;
	/* No client: not asked, the rules' decision. */
	assert_null(egress_question_apply(&f, &o, why, sizeof(why)));
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_true(f.intercept);
	/* Timeout, on_timeout deny (the default): denied, saying why. */
	o.how = EGRESS_ASKED_TIMEOUT;
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "timeout");
	assert_int_equal(f.status, EGRESS_DENY);
	assert_int_equal(f.status_code, 403);
	assert_true(f.callback);
	assert_string_equal(f.reason, "the policy callback did not answer within 2000 ms");
	/* Timeout, on_timeout rules: the rules' decision either way. */
	f = allowed();
	o.timeout_rules = true;
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "timeout");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_false(f.callback);
	f = (struct egress_flow){ .status = EGRESS_DENY, .reason = "no rule", .rule = SIZE_MAX };
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "timeout");
	assert_int_equal(f.status, EGRESS_DENY);
	assert_string_equal(f.reason, "no rule");
	assert_false(f.callback);

	/* Answered rules: the rules' decision. */
	o = (struct egress_asked){ .how = EGRESS_ASKED_ANSWER, .a = &a, .deadline_ms = 2000 };
	a.verdict = EGRESS_VERDICT_RULES;
	f = allowed();
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "callback");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_true(f.intercept);
	f = (struct egress_flow){ .status = EGRESS_DENY, .reason = "no rule", .rule = SIZE_MAX };
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "callback");
	assert_int_equal(f.status, EGRESS_DENY);
	/* Allow of an allowed flow: as it was (a rule that decrypts still does). */
	a.verdict = EGRESS_VERDICT_ALLOW;
	f = allowed();
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "callback");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_true(f.intercept);
	/* Allow of a flow the rules denied: allowed, spliced, no reason. */
	f = (struct egress_flow){ .status = EGRESS_DENY,
				  .proto = EGRESS_PROTO_TLS,
				  .intercept = true,
				  .reason = "no rule",
				  .rule = SIZE_MAX };
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "callback");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_false(f.intercept);
	assert_string_equal(f.reason, "");
	assert_false(f.callback);
	/* ... and no rule decided it: the denying rule's secrets do not go
	 * with it (a path rule refuses "/v1/../admin" as not in normal form,
	 * naming itself: allowed by the callback, its secret would reach a
	 * path it never allowed). */
	f = (struct egress_flow){ .status = EGRESS_DENY,
				  .proto = EGRESS_PROTO_HTTP,
				  .decision = HTTP_DENY_BAD_PATH,
				  .reason = "request path is not in normal form",
				  .rule = 1 };
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "callback");
	assert_int_equal(f.status, EGRESS_ALLOW);
	assert_int_equal(f.rule, SIZE_MAX);
	/* An allowed flow keeps its rule (and its secrets). */
	f = allowed();
	egress_question_apply(&f, &o, why, sizeof(why));
	assert_int_equal(f.rule, 0);
	/* Deny: its status and reason, or 403 and a reason of kiln's. */
	a.verdict = EGRESS_VERDICT_DENY;
	a.status = 451;
	snprintf(a.reason, sizeof(a.reason), "not on Sundays");
	f = allowed();
	assert_string_equal(egress_question_apply(&f, &o, why, sizeof(why)), "callback");
	assert_int_equal(f.status, EGRESS_DENY);
	assert_int_equal(f.status_code, 451);
	assert_string_equal(f.reason, "not on Sundays");
	assert_true(f.callback);
	a.status = 403;
	a.reason[0] = '\0';
	f = allowed();
	egress_question_apply(&f, &o, why, sizeof(why));
	assert_int_equal(f.status_code, 403);
	assert_string_equal(f.reason, "denied by the policy callback");
	/* A small why is cut, never overrun. */
	f = allowed();
	egress_question_apply(&f, &o, why, 7);
	assert_string_equal(f.reason, "denied");
}

static void test_changes(void **state)
{
	struct egress_answer a = {
		.id = 1,
		.verdict = EGRESS_VERDICT_ALLOW,
		.n_set = 2,
		.set = { { "x-agent", "a1" }, { "authorization", "Bearer client" } },
		.n_remove = 3,
		.remove = { "user-agent", "x_auth", "cookie" },
	};
	struct egress_inject_field out[2 * EGRESS_DECISION_FIELDS];
	size_t n;

	(void)state;
	/* The rule's own names are skipped: its secret wins. */
	n = egress_question_changes(&a, &RULE, out);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].name, "user-agent");
	assert_null(out[0].format);
	assert_string_equal(out[1].name, "cookie");
	assert_null(out[1].format);
	assert_string_equal(out[2].name, "x-agent");
	assert_string_equal(out[2].format, "{}");
	assert_string_equal(out[2].value, "a1");
	/* No rule: every change. */
	assert_int_equal(egress_question_changes(&a, NULL, out), 5);
	assert_string_equal(out[4].name, "authorization");
	assert_string_equal(out[4].value, "Bearer client");
	/* Only allow changes anything. */
	a.verdict = EGRESS_VERDICT_RULES;
	assert_int_equal(egress_question_changes(&a, NULL, out), 0);
	a.verdict = EGRESS_VERDICT_DENY;
	assert_int_equal(egress_question_changes(&a, NULL, out), 0);
	/* 16 of each: all 32 fit. */
	a = (struct egress_answer){ .verdict = EGRESS_VERDICT_ALLOW,
				    .n_set = EGRESS_DECISION_FIELDS,
				    .n_remove = EGRESS_DECISION_FIELDS };
	for (int i = 0; i < EGRESS_DECISION_FIELDS; i++) {
		snprintf(a.set[i].name, sizeof(a.set[i].name), "x-s%d", i);
		snprintf(a.remove[i], sizeof(a.remove[i]), "x-r%d", i);
	}
	assert_int_equal(egress_question_changes(&a, &RULE, out), 2 * EGRESS_DECISION_FIELDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_request_denied_shows_all),
		cmocka_unit_test(test_request_bounds),
		cmocka_unit_test(test_request_long_path),
		cmocka_unit_test(test_request_long_name),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_changes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
