/*
 * egress_decision: the decision stream's lines read strictly (every
 * field of an answer accepted at its bound and refused one past it, of
 * the wrong type, or with the wrong decision), an answer made into JSON
 * and read back the same, kilnd's attach and detach lines, the query's
 * parameters, and a question from kiln-egress cleaned (good ones pass
 * unchanged, each malformed field refused).
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

#include "lib/base/json.h"
#include "lib/netrules/egress_decision.h"

/* The answer in text: parse's result, with *a filled. */
static int answer(const char *text, struct egress_answer *a)
{
	struct err e = { { 0 } };
	json_t *j = json_strict_loads(text, NULL);
	int rc;

	assert_non_null(j);
	rc = egress_answer_parse(j, a, &e);
	json_decref(j);
	assert_true(rc == 0 || e.msg[0]);
	return rc;
}

static int refused(const char *text)
{
	struct egress_answer a;

	return answer(text, &a) == -EINVAL;
}

/* {"id":1,"decision":"allow",<field>:<v>} with v a string of n bytes of c. */
static int allow_with_string(const char *fmt, size_t n, char c)
{
	char *v = malloc(n + 1), *text = malloc(n + 256);
	struct egress_answer a;
	int rc;

	assert_non_null(v);
	assert_non_null(text);
	memset(v, c, n);
	v[n] = '\0';
	snprintf(text, n + 256, fmt, v);
	rc = answer(text, &a);
	free(v);
	free(text);
	return rc;
}

static void test_answer_decisions(void **state)
{
	struct egress_answer a;

	(void)state;
	assert_int_equal(answer("{\"id\":8,\"decision\":\"allow\"}", &a), 0);
	assert_int_equal(a.id, 8);
	assert_int_equal(a.verdict, EGRESS_VERDICT_ALLOW);
	assert_int_equal(a.n_set + a.n_remove, 0);
	assert_int_equal(answer("{\"id\":1,\"decision\":\"rules\"}", &a), 0);
	assert_int_equal(a.verdict, EGRESS_VERDICT_RULES);
	assert_int_equal(answer("{\"id\":9007199254740992,\"decision\":\"deny\"}", &a), 0);
	assert_int_equal(a.verdict, EGRESS_VERDICT_DENY);
	assert_int_equal(a.status, 403);
	assert_string_equal(a.reason, "");
	assert_int_equal(a.id, 9007199254740992ULL);

	/* id: an integer 1..2^53. */
	assert_true(refused("{\"decision\":\"allow\"}"));
	assert_true(refused("{\"id\":0,\"decision\":\"allow\"}"));
	assert_true(refused("{\"id\":-1,\"decision\":\"allow\"}"));
	assert_true(refused("{\"id\":9007199254740993,\"decision\":\"allow\"}"));
	assert_true(refused("{\"id\":1.0,\"decision\":\"allow\"}"));
	assert_true(refused("{\"id\":\"1\",\"decision\":\"allow\"}"));
	assert_true(refused("{\"id\":null,\"decision\":\"allow\"}"));
	/* decision: one of three words. */
	assert_true(refused("{\"id\":1}"));
	assert_true(refused("{\"id\":1,\"decision\":\"Allow\"}"));
	assert_true(refused("{\"id\":1,\"decision\":\"\"}"));
	assert_true(refused("{\"id\":1,\"decision\":true}"));
	assert_true(refused("{\"id\":1,\"decision\":null}"));
	assert_true(refused("{\"id\":1,\"decision\":[\"allow\"]}"));
	/* Unknown fields, and not an object. */
	assert_true(refused("{\"id\":1,\"decision\":\"allow\",\"Decision\":\"deny\"}"));
	assert_true(refused("{\"id\":1,\"decision\":\"allow\",\"kind\":\"answer\"}"));
	assert_true(refused("[{\"id\":1,\"decision\":\"allow\"}]"));
}

static void test_answer_deny_fields(void **state)
{
	struct egress_answer a;

	(void)state;
	assert_int_equal(answer("{\"id\":2,\"decision\":\"deny\",\"status\":451,"
				"\"reason\":\"no: not today ~\"}",
				&a),
			 0);
	assert_int_equal(a.status, 451);
	assert_string_equal(a.reason, "no: not today ~");
	assert_int_equal(answer("{\"id\":2,\"decision\":\"deny\",\"status\":400}", &a), 0);
	assert_int_equal(answer("{\"id\":2,\"decision\":\"deny\",\"status\":599}", &a), 0);
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"status\":399}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"status\":600}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"status\":403.0}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"status\":\"403\"}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"status\":null}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"reason\":5}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"reason\":null}"));
	/* Only with deny. */
	assert_true(refused("{\"id\":2,\"decision\":\"allow\",\"status\":403}"));
	assert_true(refused("{\"id\":2,\"decision\":\"rules\",\"status\":403}"));
	assert_true(refused("{\"id\":2,\"decision\":\"allow\",\"reason\":\"x\"}"));
	assert_true(refused("{\"id\":2,\"decision\":\"rules\",\"reason\":\"\"}"));
	/* reason: 200 bytes of printable ASCII; no tab, control or non-ASCII byte. */
	assert_int_equal(allow_with_string("{\"id\":2,\"decision\":\"deny\",\"reason\":\"%s\"}",
					   200, 'r'),
			 0);
	assert_int_equal(allow_with_string("{\"id\":2,\"decision\":\"deny\",\"reason\":\"%s\"}",
					   201, 'r'),
			 -EINVAL);
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"reason\":\"a\\tb\"}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"reason\":\"a\\r\\nb\"}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"reason\":\"a\\u007fb\"}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"reason\":\"caf\\u00e9\"}"));
	/* Header changes are allow's only. */
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"set_headers\":{}}"));
	assert_true(refused("{\"id\":2,\"decision\":\"deny\",\"remove_headers\":[]}"));
	assert_true(refused("{\"id\":2,\"decision\":\"rules\",\"set_headers\":{\"x-a\":\"1\"}}"));
	assert_true(refused("{\"id\":2,\"decision\":\"rules\",\"remove_headers\":[\"x-a\"]}"));
}

static void test_answer_set_headers(void **state)
{
	struct egress_answer a;
	char name[EGRESS_DECISION_NAME_MAX + 2];
	char text[512];

	(void)state;
	assert_int_equal(answer("{\"id\":3,\"decision\":\"allow\",\"set_headers\":"
				"{\"x-agent\":\"a1\",\"user-agent\":\"k \\t~\",\"x-empty\":\"\"}}",
				&a),
			 0);
	assert_int_equal(a.n_set, 3);
	assert_string_equal(a.set[0].name, "x-agent");
	assert_string_equal(a.set[0].value, "a1");
	assert_string_equal(a.set[1].name, "user-agent");
	assert_string_equal(a.set[1].value, "k \t~");
	assert_string_equal(a.set[2].value, "");
	assert_int_equal(answer("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{}}", &a), 0);
	assert_int_equal(a.n_set, 0);
	/* Types. */
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":[]}"));
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":null}"));
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-a\":1}}"));
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-a\":null}}"));
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-a\":[\"1\"]}}"));
	/* Names: lower-case tokens, not one kiln-egress owns. */
	assert_true(
		refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"X-Agent\":\"a\"}}"));
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"\":\"a\"}}"));
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x a\":\"a\"}}"));
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x:a\":\"a\"}}"));
	assert_true(
		refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x\\r\\na\":\"a\"}}"));
	assert_true(refused(
		"{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"caf\\u00e9\":\"a\"}}"));
	assert_true(refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"host\":\"a\"}}"));
	assert_true(refused(
		"{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"content-length\":\"0\"}}"));
	assert_true(refused(
		"{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"transfer-encoding\":\"x\"}}"));
	assert_true(refused(
		"{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"connection\":\"close\"}}"));
	/* A name of 64 bytes, not 65. */
	memset(name, 'n', sizeof(name));
	name[EGRESS_DECISION_NAME_MAX] = '\0';
	snprintf(text, sizeof(text),
		 "{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"%s\":\"v\"}}", name);
	assert_int_equal(answer(text, &a), 0);
	assert_string_equal(a.set[0].name, name);
	name[EGRESS_DECISION_NAME_MAX] = 'n';
	name[EGRESS_DECISION_NAME_MAX + 1] = '\0';
	snprintf(text, sizeof(text),
		 "{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"%s\":\"v\"}}", name);
	assert_true(refused(text));
	/* Values: 4096 bytes of visible ASCII, space and tab. */
	assert_int_equal(allow_with_string("{\"id\":3,\"decision\":\"allow\",\"set_headers\":"
					   "{\"x-v\":\"%s\"}}",
					   EGRESS_DECISION_VALUE_MAX, 'v'),
			 0);
	assert_int_equal(allow_with_string("{\"id\":3,\"decision\":\"allow\",\"set_headers\":"
					   "{\"x-v\":\"%s\"}}",
					   EGRESS_DECISION_VALUE_MAX + 1, 'v'),
			 -EINVAL);
	assert_true(
		refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-v\":\"a\\rb\"}}"));
	assert_true(
		refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-v\":\"a\\nb\"}}"));
	assert_true(refused(
		"{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-v\":\"a\\r\\nX-Evil: 1\"}}"));
	/* NUL never gets this far: the strict load refuses it. */
	assert_null(json_strict_loads(
		"{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-v\":\"a\\u0000\"}}", NULL));
	assert_true(
		refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-v\":\"\\u007f\"}}"));
	assert_true(
		refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-v\":\"\\u00e9\"}}"));
	assert_true(
		refused("{\"id\":3,\"decision\":\"allow\",\"set_headers\":{\"x-v\":\"\\u0001\"}}"));
}

/* {"id":4,"decision":"allow","set_headers":{...n...},"remove_headers":[...n...]} */
static int n_fields(size_t n_set, size_t n_remove)
{
	char text[4096];
	size_t at;
	struct egress_answer a;
	int rc;

	at = (size_t)snprintf(text, sizeof(text),
			      "{\"id\":4,\"decision\":\"allow\",\"set_headers\":{");
	for (size_t i = 0; i < n_set; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "%s\"x-s%zu\":\"%zu\"",
				       i ? "," : "", i, i);
	at += (size_t)snprintf(text + at, sizeof(text) - at, "},\"remove_headers\":[");
	for (size_t i = 0; i < n_remove; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "%s\"x-r%zu\"", i ? "," : "",
				       i);
	snprintf(text + at, sizeof(text) - at, "]}");
	rc = answer(text, &a);
	if (rc == 0) {
		assert_int_equal(a.n_set, n_set);
		assert_int_equal(a.n_remove, n_remove);
	}
	return rc;
}

static void test_answer_remove_headers(void **state)
{
	struct egress_answer a;

	(void)state;
	assert_int_equal(answer("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":"
				"[\"user-agent\",\"x-b\",\"user-agent\"]}",
				&a),
			 0);
	assert_int_equal(a.n_remove, 3);
	assert_string_equal(a.remove[0], "user-agent");
	assert_string_equal(a.remove[1], "x-b");
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":{}}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":\"x-a\"}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[1]}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[null]}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[\"X-A\"]}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[\"\"]}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[\"a b\"]}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[\"host\"]}"));
	assert_true(refused(
		"{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[\"content-length\"]}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[\"\\u00e9\"]}"));
	assert_true(refused("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":[\"a\\u007f\"]}"));
	assert_true(refused(
		"{\"id\":5,\"decision\":\"allow\",\"remove_headers\":"
		"[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}"));
	assert_int_equal(
		answer("{\"id\":5,\"decision\":\"allow\",\"remove_headers\":"
		       "[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}",
		       &a),
		0);
	/* 16 of each, not 17. */
	assert_int_equal(n_fields(EGRESS_DECISION_FIELDS, EGRESS_DECISION_FIELDS), 0);
	assert_int_equal(n_fields(EGRESS_DECISION_FIELDS + 1, 0), -EINVAL);
	assert_int_equal(n_fields(0, EGRESS_DECISION_FIELDS + 1), -EINVAL);
	assert_int_equal(n_fields(0, 0), 0);
}

/* a made into JSON and read back: the same answer. */
static void round_trip(const struct egress_answer *a)
{
	struct egress_answer b;
	struct err e = { { 0 } };
	json_t *j = egress_answer_json(a);

	assert_non_null(j);
	assert_int_equal(egress_answer_parse(j, &b, &e), 0);
	json_decref(j);
	assert_int_equal(b.id, a->id);
	assert_int_equal(b.verdict, a->verdict);
	assert_int_equal(b.status, a->status);
	assert_string_equal(b.reason, a->reason);
	assert_int_equal(b.n_set, a->n_set);
	assert_int_equal(b.n_remove, a->n_remove);
	for (size_t i = 0; i < a->n_set; i++) {
		assert_string_equal(b.set[i].name, a->set[i].name);
		assert_string_equal(b.set[i].value, a->set[i].value);
	}
	for (size_t i = 0; i < a->n_remove; i++)
		assert_string_equal(b.remove[i], a->remove[i]);
}

static void test_answer_round_trip(void **state)
{
	static const char *const lines[] = {
		"{\"id\":1,\"decision\":\"rules\"}",
		"{\"id\":2,\"decision\":\"deny\"}",
		"{\"id\":3,\"decision\":\"deny\",\"status\":599,\"reason\":\"\\\"quoted\\\" \\\\\"}",
		"{\"id\":4,\"decision\":\"allow\",\"set_headers\":{\"z\":\"1\",\"a\":\"\\t2\"},"
		"\"remove_headers\":[\"b\",\"b\",\"c\"]}",
		"{\"id\":9007199254740992,\"decision\":\"allow\"}",
	};
	struct egress_answer a;

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		assert_int_equal(answer(lines[i], &a), 0);
		round_trip(&a);
	}
}

/* The control line text: its kind, *a / *at filled; or -EINVAL. */
static int control(const char *text, enum egress_control *kind, struct egress_answer *a,
		   struct egress_attach *at)
{
	struct err e = { { 0 } };
	json_t *j = json_strict_loads(text, NULL);
	int rc;

	assert_non_null(j);
	rc = egress_control_parse(j, kind, a, at, &e);
	json_decref(j);
	assert_true(rc == 0 || e.msg[0]);
	return rc;
}

static void test_control(void **state)
{
	static const char *const bad[] = {
		"[]",
		"{}",
		"{\"attach\":null}",
		"{\"attach\":true}",
		"{\"attach\":{}}",
		"{\"attach\":{\"deadline_ms\":2000}}",
		"{\"attach\":{\"on_timeout\":\"deny\"}}",
		"{\"attach\":{\"deadline_ms\":\"2000\",\"on_timeout\":\"deny\"}}",
		"{\"attach\":{\"deadline_ms\":2000.0,\"on_timeout\":\"deny\"}}",
		"{\"attach\":{\"deadline_ms\":9,\"on_timeout\":\"deny\"}}",
		"{\"attach\":{\"deadline_ms\":60001,\"on_timeout\":\"deny\"}}",
		"{\"attach\":{\"deadline_ms\":-1,\"on_timeout\":\"deny\"}}",
		"{\"attach\":{\"deadline_ms\":4294967306,\"on_timeout\":\"deny\"}}",
		"{\"attach\":{\"deadline_ms\":2000,\"on_timeout\":\"allow\"}}",
		"{\"attach\":{\"deadline_ms\":2000,\"on_timeout\":null}}",
		"{\"attach\":{\"deadline_ms\":2000,\"on_timeout\":\"deny\",\"x\":1}}",
		"{\"attach\":{\"deadline_ms\":2000,\"on_timeout\":\"deny\"},\"id\":1}",
		"{\"detach\":false}",
		"{\"detach\":1}",
		"{\"detach\":null}",
		"{\"detach\":true,\"id\":1}",
		"{\"detach\":true,\"attach\":{\"deadline_ms\":2000,\"on_timeout\":\"deny\"}}",
		"{\"id\":1}",
	};
	struct egress_attach at, back;
	struct egress_answer a;
	enum egress_control kind;
	char *text;
	json_t *j;

	(void)state;
	assert_int_equal(control("{\"attach\":{\"deadline_ms\":2000,\"on_timeout\":\"deny\"}}",
				 &kind, &a, &at),
			 0);
	assert_int_equal(kind, EGRESS_CONTROL_ATTACH);
	assert_int_equal(at.deadline_ms, 2000);
	assert_false(at.on_timeout_rules);
	assert_int_equal(control("{\"attach\":{\"on_timeout\":\"rules\",\"deadline_ms\":10}}",
				 &kind, &a, &at),
			 0);
	assert_int_equal(at.deadline_ms, 10);
	assert_true(at.on_timeout_rules);
	assert_int_equal(control("{\"attach\":{\"deadline_ms\":60000,\"on_timeout\":\"deny\"}}",
				 &kind, &a, &at),
			 0);
	assert_int_equal(at.deadline_ms, 60000);
	assert_int_equal(control("{\"detach\":true}", &kind, &a, &at), 0);
	assert_int_equal(kind, EGRESS_CONTROL_DETACH);
	assert_int_equal(control("{\"id\":7,\"decision\":\"deny\",\"status\":404}", &kind, &a, &at),
			 0);
	assert_int_equal(kind, EGRESS_CONTROL_ANSWER);
	assert_int_equal(a.id, 7);
	assert_int_equal(a.status, 404);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (control(bad[i], &kind, &a, &at) != -EINVAL)
			fail_msg("control line accepted: %s", bad[i]);

	/* What kilnd writes, kiln-egress reads back. */
	at = (struct egress_attach){ .deadline_ms = 1234, .on_timeout_rules = true };
	j = egress_attach_json(&at);
	assert_non_null(j);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	assert_non_null(text);
	assert_int_equal(control(text, &kind, &a, &back), 0);
	free(text);
	assert_int_equal(kind, EGRESS_CONTROL_ATTACH);
	assert_int_equal(back.deadline_ms, 1234);
	assert_true(back.on_timeout_rules);
}

static void test_attach_query(void **state)
{
	static const char *const bad_ms[] = { "9",
					      "60001",
					      "0",
					      "-10",
					      "",
					      "2000x",
					      " 2000",
					      "2e3",
					      "0x10",
					      "+100",
					      "18446744073709551617" };
	struct egress_attach at;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(egress_attach_parse_query(NULL, NULL, &at, &e), 0);
	assert_int_equal(at.deadline_ms, EGRESS_DECISION_DEADLINE_DEFAULT);
	assert_false(at.on_timeout_rules);
	assert_int_equal(egress_attach_parse_query("10", "rules", &at, &e), 0);
	assert_int_equal(at.deadline_ms, 10);
	assert_true(at.on_timeout_rules);
	assert_int_equal(egress_attach_parse_query("60000", "deny", &at, &e), 0);
	assert_int_equal(at.deadline_ms, 60000);
	assert_false(at.on_timeout_rules);
	for (size_t i = 0; i < sizeof(bad_ms) / sizeof(bad_ms[0]); i++) {
		e.msg[0] = '\0';
		if (egress_attach_parse_query(bad_ms[i], NULL, &at, &e) != -EINVAL)
			fail_msg("deadline_ms '%s' accepted", bad_ms[i]);
		assert_non_null(strstr(e.msg, "deadline_ms"));
	}
	assert_int_equal(egress_attach_parse_query(NULL, "allow", &at, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "on_timeout"));
	assert_int_equal(egress_attach_parse_query(NULL, "", &at, &e), -EINVAL);
	assert_int_equal(egress_attach_parse_query(NULL, "Deny", &at, &e), -EINVAL);
	assert_int_equal(egress_attach_parse_query(NULL, "rules ", &at, &e), -EINVAL);
}

static const char CONNECT[] =
	"{\"kind\":\"connect\",\"id\":7,\"src\":\"10.0.2.15:40312\",\"dst\":\"10.0.2.2:443\","
	"\"name\":\"api.test\",\"proto\":\"tls\",\"static\":\"allow\",\"rule\":0,"
	"\"intercept\":true}";
static const char REQUEST[] =
	"{\"kind\":\"request\",\"id\":8,\"flow\":7,\"src\":\"10.0.2.15:40312\","
	"\"dst\":\"10.0.2.2:443\",\"name\":\"api.test\",\"proto\":\"tls\",\"static\":\"deny\","
	"\"reason\":\"no rule matches\",\"rule\":null,\"method\":\"GET\",\"path\":\"/v1/x?a=b\","
	"\"headers\":[[\"user-agent\",\"curl/7.88\"],[\"x-tab\",\"a\\tb\"]],"
	"\"inject\":[\"authorization\"]}";

/* text cleaned: 0 with the copy equal to text, or -EINVAL. */
static int clean(const char *text)
{
	struct err e = { { 0 } };
	json_t *in = json_strict_loads(text, NULL), *out = NULL;
	int rc;

	assert_non_null(in);
	rc = egress_decision_question_clean(in, &out, &e);
	if (rc == 0) {
		assert_true(json_equal(in, out));
		assert_ptr_not_equal(in, out);
	} else {
		assert_null(out);
		assert_true(e.msg[0]);
	}
	json_decref(in);
	json_decref(out);
	return rc;
}

/* base with its field k replaced by the JSON v (or added). */
static int clean_with(const char *base, const char *k, const char *v)
{
	json_t *j = json_strict_loads(base, NULL), *x = json_loads(v, JSON_DECODE_ANY, NULL);
	char *text;
	int rc;

	assert_non_null(j);
	assert_non_null(x);
	assert_int_equal(json_object_set_new(j, k, x), 0);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	assert_non_null(text);
	rc = clean(text);
	free(text);
	return rc;
}

static void test_question_clean_good(void **state)
{
	(void)state;
	assert_int_equal(clean(CONNECT), 0);
	assert_int_equal(clean(REQUEST), 0);
	assert_int_equal(clean_with(REQUEST, "flow", "null"), 0);
	assert_int_equal(clean_with(REQUEST, "proto", "\"http\""), 0);
	assert_int_equal(clean_with(REQUEST, "headers", "[]"), 0);
	assert_int_equal(clean_with(REQUEST, "inject", "[]"), 0);
	assert_int_equal(clean_with(CONNECT, "rule", "null"), 0);
	assert_int_equal(clean_with(CONNECT, "rule", "9007199254740992"), 0);
	assert_int_equal(clean_with(CONNECT, "intercept", "false"), 0);
	assert_int_equal(clean_with(CONNECT, "static", "\"deny\""), 0);
}

static void test_question_clean_refused(void **state)
{
	static const struct {
		const char *base, *k, *v;
	} bad[] = {
		{ CONNECT, "kind", "\"answer\"" },
		{ CONNECT, "kind", "null" },
		{ CONNECT, "id", "0" },
		{ CONNECT, "id", "\"7\"" },
		{ CONNECT, "id", "9007199254740993" },
		{ CONNECT, "src", "5" },
		{ CONNECT, "src", "\"10.0.2.15:1\\n\"" },
		{ CONNECT, "dst",
		  "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"" },
		{ CONNECT, "name", "\"a\\u00e9.test\"" },
		{ CONNECT, "name", "null" },
		{ CONNECT, "proto", "\"udp\"" },
		{ CONNECT, "static", "\"rules\"" },
		{ CONNECT, "static", "true" },
		{ CONNECT, "rule", "-1" },
		{ CONNECT, "rule", "1.5" },
		{ CONNECT, "rule", "\"0\"" },
		{ CONNECT, "rule", "9007199254740993" },
		{ CONNECT, "intercept", "1" },
		{ CONNECT, "intercept", "null" },
		{ CONNECT, "reason", "\"a\\tb\"" },
		{ CONNECT, "reason", "7" },
		/* A request's fields are not a connect's. */
		{ CONNECT, "method", "\"GET\"" },
		{ CONNECT, "flow", "null" },
		{ CONNECT, "headers", "[]" },
		{ CONNECT, "secret", "\"x\"" },
		{ REQUEST, "intercept", "true" },
		{ REQUEST, "flow", "-1" },
		{ REQUEST, "flow", "\"7\"" },
		{ REQUEST, "method", "\"G T\"" },
		{ REQUEST, "method", "\"\"" },
		{ REQUEST, "method", "\"GETGETGETGETGETGETGETGETGETGETGET\"" },
		{ REQUEST, "path", "\"/a\\r\\nb\"" },
		{ REQUEST, "path", "\"/\\u00e9\"" },
		{ REQUEST, "path", "null" },
		{ REQUEST, "headers", "{}" },
		{ REQUEST, "headers", "[[\"a\"]]" },
		{ REQUEST, "headers", "[[\"a\",\"b\",\"c\"]]" },
		{ REQUEST, "headers", "[[\"\",\"b\"]]" },
		{ REQUEST, "headers", "[[\"a b\",\"b\"]]" },
		{ REQUEST, "headers", "[[1,\"b\"]]" },
		{ REQUEST, "headers", "[[\"a\",1]]" },
		{ REQUEST, "headers", "[[\"a\",\"b\\r\\nc\"]]" },
		{ REQUEST, "headers", "[[\"a\",\"\\u00e9\"]]" },
		{ REQUEST, "headers", "[\"a\"]" },
		{ REQUEST, "inject", "{}" },
		{ REQUEST, "inject", "[\"\"]" },
		{ REQUEST, "inject", "[\"a b\"]" },
		{ REQUEST, "inject", "[1]" },
		{ REQUEST, "inject",
		  "[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]" },
		{ REQUEST, "inject",
		  "[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
		  "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]" },
		{ REQUEST, "value", "\"secret\"" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (clean_with(bad[i].base, bad[i].k, bad[i].v) != -EINVAL)
			fail_msg("question with %s: %s accepted", bad[i].k, bad[i].v);
	assert_int_equal(clean("[]"), -EINVAL);
	assert_int_equal(clean("{}"), -EINVAL);
	assert_int_equal(clean("{\"kind\":\"connect\"}"), -EINVAL);
	assert_int_equal(clean("{\"id\":1,\"decision\":\"allow\"}"), -EINVAL);
}

/* A request question with n headers of value v (n at most 200). */
static int clean_headers(size_t n, size_t value_len)
{
	json_t *j = json_strict_loads(REQUEST, NULL), *h = json_array();
	char *v = malloc(value_len + 1), *text;
	int rc;

	assert_non_null(j);
	assert_non_null(v);
	memset(v, 'v', value_len);
	v[value_len] = '\0';
	for (size_t i = 0; i < n; i++)
		assert_int_equal(json_array_append_new(h, json_pack("[ss]", "x-h", v)), 0);
	assert_int_equal(json_object_set_new(j, "headers", h), 0);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	free(v);
	rc = clean(text);
	free(text);
	return rc;
}

/* base without its field k. */
static int clean_without(const char *base, const char *k)
{
	json_t *j = json_strict_loads(base, NULL);
	char *text;
	int rc;

	assert_non_null(j);
	assert_int_equal(json_object_del(j, k), 0);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	assert_non_null(text);
	rc = clean(text);
	free(text);
	return rc;
}

/* A question without a field a client reads is refused (a compromised
 * proxy's partial line never reaches a callback); reason is optional. */
static void test_question_clean_missing(void **state)
{
	static const char *const connect[] = { "src",    "dst",  "name",      "proto",
					       "static", "rule", "intercept", NULL };
	static const char *const request[] = { "src",    "dst",     "name",   "proto",
					       "static", "rule",    "flow",   "method",
					       "path",   "headers", "inject", NULL };

	(void)state;
	for (const char *const *k = connect; *k; k++)
		assert_int_equal(clean_without(CONNECT, *k), -EINVAL);
	for (const char *const *k = request; *k; k++)
		assert_int_equal(clean_without(REQUEST, *k), -EINVAL);
}

static void test_question_clean_bounds(void **state)
{
	(void)state;
	assert_int_equal(clean_headers(EGRESS_DECISION_HEADERS_MAX, 1), 0);
	assert_int_equal(clean_headers(EGRESS_DECISION_HEADERS_MAX + 1, 1), -EINVAL);
	assert_int_equal(clean_headers(1, EGRESS_DECISION_VALUE_MAX), 0);
	assert_int_equal(clean_headers(1, EGRESS_DECISION_VALUE_MAX + 1), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer_decisions),
		cmocka_unit_test(test_answer_deny_fields),
		cmocka_unit_test(test_answer_set_headers),
		cmocka_unit_test(test_answer_remove_headers),
		cmocka_unit_test(test_answer_round_trip),
		cmocka_unit_test(test_control),
		cmocka_unit_test(test_attach_query),
		cmocka_unit_test(test_question_clean_good),
		cmocka_unit_test(test_question_clean_refused),
		cmocka_unit_test(test_question_clean_missing),
		cmocka_unit_test(test_question_clean_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
