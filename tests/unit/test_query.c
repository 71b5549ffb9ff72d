/*
 * Unit tests of api/kilnd/core/query.c: the URL query parameters of each
 * endpoint (docs/api.md), checked and converted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdio.h>

#include "api/kilnd/core/query.h"
#include "tests/unit/json_load.h"

#define KV(...) ((const struct query_kv[]){ __VA_ARGS__ })
#define N(arr) (sizeof(arr) / sizeof((arr)[0]))

static void test_query_files(void **state)
{
	struct kiln_read_opts ro;
	struct kiln_write_opts wo;
	const char *path;
	struct api_err e;

	(void)state;
	{
		const struct query_kv q[] = { { "path", "/etc/hostname" },
					      { "offset", "1" },
					      { "length", "3" },
					      { "user", "root" } };

		assert_int_equal(query_file_get(q, N(q), &path, &ro, &e), 0);
		assert_string_equal(path, "/etc/hostname");
		assert_int_equal(ro.offset, 1);
		assert_true(ro.has_length);
		assert_int_equal(ro.length, 3);
		assert_int_equal(ro.flags, KILN_AGENT_AS_ROOT);
		assert_int_equal(ro.size, sizeof(ro));
	}
	{
		const struct query_kv q[] = { { "path", "/a" } };

		assert_int_equal(query_file_get(q, N(q), &path, &ro, &e), 0);
		assert_false(ro.has_length);
		assert_int_equal(ro.flags, 0);
	}
	{
		const struct query_kv q[] = { { "path", "/a" },
					      { "mode", "0600" },
					      { "parents", "1" },
					      { "append", "false" },
					      { "exclusive", "true" } };

		assert_int_equal(query_file_put(q, N(q), &path, &wo, &e), 0);
		assert_int_equal(wo.mode, 0600);
		assert_int_equal(wo.flags, KILN_AGENT_PARENTS | KILN_AGENT_EXCLUSIVE);
		assert_int_equal(wo.size, sizeof(wo));
	}
	{
		const struct query_kv q[] = { { "path", "/a" },
					      { "create", "false" },
					      { "append", "1" },
					      { "user", "root" } };

		assert_int_equal(query_file_put(q, N(q), &path, &wo, &e), 0);
		assert_int_equal(wo.mode, -1); /* the agent's default */
		assert_int_equal(wo.flags,
				 KILN_AGENT_NO_CREATE | KILN_AGENT_APPEND | KILN_AGENT_AS_ROOT);
	}
	static const struct {
		struct query_kv kv[3];
		size_t n;
		bool put;
		enum api_code code;
		const char *in_message;
	} bad[] = {
		{ { { "offset", "1" } }, 1, false, API_E_MISSING_FIELD, "'path'" },
		{ { { "path", NULL } }, 1, false, API_E_MISSING_FIELD, "'path'" },
		{ { { "path", "etc" } }, 1, false, API_E_BAD_FIELD, "absolute" },
		{ { { "path", "" } }, 1, false, API_E_BAD_FIELD, "absolute" },
		{ { { "path", "/a" }, { "offset", "-1" } }, 2, false, API_E_BAD_FIELD, "'offset'" },
		{ { { "path", "/a" }, { "offset", "0x10" } },
		  2,
		  false,
		  API_E_BAD_FIELD,
		  "'offset'" },
		{ { { "path", "/a" }, { "offset", " 1" } }, 2, false, API_E_BAD_FIELD, "'offset'" },
		{ { { "path", "/a" }, { "length", "99999999999999999999" } },
		  2,
		  false,
		  API_E_BAD_FIELD,
		  "'length'" },
		{ { { "path", "/a" }, { "path", "/b" } }, 2, false, API_E_BAD_FIELD, "given twice" },
		{ { { "path", "/a" }, { "mode", "0644" } },
		  2,
		  false,
		  API_E_UNKNOWN_FIELD,
		  "'mode'" },
		{ { { "path", "/a" }, { "user", "nobody" } }, 2, false, API_E_BAD_FIELD, "user" },
		{ { { "path", "/a" }, { "mode", "0800" } }, 2, true, API_E_BAD_FIELD, "octal" },
		{ { { "path", "/a" }, { "mode", "10000" } }, 2, true, API_E_BAD_FIELD, "octal" },
		{ { { "path", "/a" }, { "parents", "yes" } },
		  2,
		  true,
		  API_E_BAD_FIELD,
		  "'parents'" },
		{ { { "path", "/a" }, { "append", NULL } }, 2, true, API_E_BAD_FIELD, "'append'" },
		{ { { "path", "/a" }, { "create", "false" }, { "exclusive", "1" } },
		  3,
		  true,
		  API_E_BAD_FIELD,
		  "exclusive" },
		{ { { "path", "/a" }, { "offset", "1" } },
		  2,
		  true,
		  API_E_UNKNOWN_FIELD,
		  "'offset'" },
	};
	for (size_t i = 0; i < N(bad); i++) {
		int r = bad[i].put ? query_file_put(bad[i].kv, bad[i].n, &path, &wo, &e)
				   : query_file_get(bad[i].kv, bad[i].n, &path, &ro, &e);

		if (r != -1 || e.code != bad[i].code || !strstr(e.msg, bad[i].in_message))
			fail_msg("case %zu: got %d %s '%s', want %s with '%s'", i, r,
				 api_code_name(e.code), e.msg, api_code_name(bad[i].code),
				 bad[i].in_message);
	}
}

static void test_query_exec_and_list(void **state)
{
	struct list_filter f;
	struct api_err e;
	bool stream;
	json_t *labels = J("{\"job\":\"42\",\"team\":\"ci\"}");

	(void)state;
	assert_int_equal(query_exec(NULL, 0, &stream, &e), 0);
	assert_false(stream);
	assert_int_equal(query_exec(KV({ "stream", "1" }), 1, &stream, &e), 0);
	assert_true(stream);
	assert_int_equal(query_exec(KV({ "stream", "2" }), 1, &stream, &e), -1);
	assert_int_equal(query_exec(KV({ "follow", "1" }), 1, &stream, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	assert_int_equal(query_none(KV({ "x", NULL }), 1, "health", &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);

	assert_int_equal(query_list(KV({ "state", "running" }, { "label", "job=42" },
				       { "label", "team=ci" }),
				    3, &f, &e),
			 0);
	assert_int_equal(f.state, SANDBOX_RUNNING);
	assert_int_equal(f.nlabels, 2);
	assert_true(list_filter_match(&f, SANDBOX_RUNNING, labels));
	assert_false(list_filter_match(&f, SANDBOX_STOPPED, labels));
	assert_int_equal(query_list(KV({ "label", "job=4" }), 1, &f, &e), 0);
	assert_false(list_filter_match(&f, SANDBOX_RUNNING, labels));
	assert_int_equal(query_list(KV({ "label", "job=42=x" }), 1, &f, &e), 0);
	assert_false(list_filter_match(&f, SANDBOX_RUNNING, labels)); /* the value is "42=x" */
	assert_int_equal(query_list(KV({ "state", "asleep" }), 1, &f, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_int_equal(query_list(KV({ "label", "=x" }), 1, &f, &e), -1);
	assert_int_equal(query_list(KV({ "label", "nokey" }), 1, &f, &e), -1);
	assert_int_equal(query_list(KV({ "state", "running" }, { "state", "stopped" }), 2, &f, &e),
			 -1);
	assert_non_null(strstr(e.msg, "given twice"));
	json_decref(labels);
}

static void test_queries(void **state)
{
	struct query_kv kv[4];
	struct file_list_opts lo;
	struct api_err e = { 0 };
	enum agent_user u;
	const char *path;
	bool follow;

	(void)state;
	kv[0] = (struct query_kv){ "path", "/etc" };
	assert_int_equal(query_file_stat(kv, 1, &path, &follow, &u, &e), 0);
	assert_true(follow);
	kv[1] = (struct query_kv){ "follow", "false" };
	assert_int_equal(query_file_stat(kv, 2, &path, &follow, &u, &e), 0);
	assert_false(follow);
	kv[1] = (struct query_kv){ "depth", "2" };
	assert_int_equal(query_file_stat(kv, 2, &path, &follow, &u, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);

	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), 0);
	assert_int_equal(lo.depth, 2);
	assert_int_equal(lo.limit, AGENT_LIST_LIMIT_DEFAULT);
	kv[2] = (struct query_kv){ "limit", "5" };
	assert_int_equal(query_file_list(kv, 3, &path, &lo, &e), 0);
	assert_int_equal(lo.limit, 5);
	kv[1] = (struct query_kv){ "depth", "33" };
	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[1] = (struct query_kv){ "depth", "0" };
	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[1] = (struct query_kv){ "limit", "1000001" };
	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[1] = (struct query_kv){ "limit", "-1" };
	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_int_equal(query_file_list(kv + 1, 1, &path, &lo, &e), -1);

	kv[1] = (struct query_kv){ "user", "root" };
	assert_int_equal(query_archive(kv, 2, &path, &u, &e), 0);
	assert_int_equal(u, AGENT_USER_ROOT);
	kv[0] = (struct query_kv){ "path", "relative/dir" };
	assert_int_equal(query_archive(kv, 2, &path, &u, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_int_equal(query_archive(kv + 1, 1, &path, &u, &e), -1);
	assert_int_equal(e.code, API_E_MISSING_FIELD);
	kv[0] = (struct query_kv){ "path", "/x" };
	kv[1] = (struct query_kv){ "path", "/y" };
	assert_int_equal(query_archive(kv, 2, &path, &u, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
}

static enum api_code watch_q(const struct query_kv *kv, size_t n, struct kiln_watch_opts *o)
{
	struct api_err e = { 0 };
	const char *path;
	int r = query_file_watch(kv, n, &path, o, &e);

	if (r) {
		assert_true(e.msg[0] != '\0');
		return e.code;
	}
	assert_true(path[0] == '/');
	return API_OK;
}

static void test_query(void **state)
{
	struct kiln_watch_opts o;
	struct query_kv kv[6] = {
		{ "path", "/workspace" }, { "recursive", "true" }, { "max_watches", "10" },
		{ "queue", "64" },        { "user", "root" },
	};

	(void)state;
	assert_int_equal(watch_q(kv, 1, &o), API_OK);
	assert_int_equal(o.flags, 0);
	assert_int_equal(o.size, sizeof(o));
	assert_int_equal(o.max_watches, AGENT_WATCH_WATCHES_DEFAULT);
	assert_int_equal(o.queue, AGENT_WATCH_QUEUE_DEFAULT);
	assert_int_equal(watch_q(kv, 5, &o), API_OK);
	assert_int_equal(o.flags, KILN_AGENT_RECURSIVE | KILN_AGENT_AS_ROOT);
	assert_int_equal(o.max_watches, 10);
	assert_int_equal(o.queue, 64);
	kv[1].value = "1";
	assert_int_equal(watch_q(kv, 2, &o), API_OK);
	assert_int_equal(o.flags, KILN_AGENT_RECURSIVE);

	/* Hostile and wrong values: one clear 4xx code each. */
	static const struct {
		const char *key, *value;
	} bad[] = {
		{ "recursive", "yes" },     { "recursive", NULL },   { "max_watches", "0" },
		{ "max_watches", "65537" }, { "max_watches", "-1" }, { "max_watches", "0x10" },
		{ "queue", "15" },          { "queue", "65537" },    { "queue", "" },
		{ "user", "nobody" },       { "follow", "1" },       { "path", "/second" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kv[1] = (struct query_kv){ bad[i].key, bad[i].value };
		if (watch_q(kv, 2, &o) == API_OK)
			fail_msg("%s=%s was accepted", bad[i].key,
				 bad[i].value ? bad[i].value : "(none)");
	}
	kv[1] = (struct query_kv){ "follow", "1" };
	assert_int_equal(watch_q(kv, 2, &o), API_E_UNKNOWN_FIELD);
	kv[0] = (struct query_kv){ "path", "relative" };
	assert_int_equal(watch_q(kv, 1, &o), API_E_BAD_FIELD);
	assert_int_equal(watch_q(kv, 0, &o), API_E_MISSING_FIELD);
}

/* GET .../egress/log: ?lines=1..max, the default without it; nothing else. */
static void test_query_egress_log(void **state)
{
	struct api_err e;
	size_t n = 0;

	(void)state;
	assert_int_equal(query_egress_log(NULL, 0, 100, 1000, &n, &e), 0);
	assert_int_equal(n, 100);
	assert_int_equal(query_egress_log(KV({ "lines", "7" }), 1, 100, 1000, &n, &e), 0);
	assert_int_equal(n, 7);
	assert_int_equal(query_egress_log(KV({ "lines", "1000" }), 1, 100, 1000, &n, &e), 0);
	assert_int_equal(n, 1000);
	assert_int_equal(query_egress_log(KV({ "lines", "1001" }), 1, 100, 1000, &n, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_int_equal(query_egress_log(KV({ "lines", "0" }), 1, 100, 1000, &n, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_int_equal(query_egress_log(KV({ "lines", "-1" }), 1, 100, 1000, &n, &e), -1);
	assert_int_equal(query_egress_log(KV({ "lines", NULL }), 1, 100, 1000, &n, &e), -1);
	assert_int_equal(query_egress_log(KV({ "from", "3" }), 1, 100, 1000, &n, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_files),      cmocka_unit_test(test_query_exec_and_list),
		cmocka_unit_test(test_queries),          cmocka_unit_test(test_query),
		cmocka_unit_test(test_query_egress_log),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
