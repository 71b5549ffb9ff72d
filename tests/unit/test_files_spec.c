/*
 * Unit tests of api/kilnd/bodies/files_spec.c: the bodies of kilnd's file
 * metadata endpoints (docs/api.md: POST .../files/mkdir, .../files/remove,
 * .../files/rename), validated into agent client arguments, and the JSON
 * that describes a guest file (stat, list entries).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/files_spec.h"
#include "tests/unit/json_load.h"

static enum api_code mkdir_code(const char *text, struct mkdir_spec *s)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = mkdir_spec_parse(j, s, &e);

	json_decref(j);
	return r ? e.code : API_OK;
}

static void test_mkdir_body(void **state)
{
	struct mkdir_spec s;

	(void)state;
	assert_int_equal(mkdir_code("{\"path\":\"/a/b\"}", &s), API_OK);
	assert_false(s.parents);
	assert_int_equal(s.mode, -1);
	assert_int_equal(s.user, AGENT_USER_USER);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"parents\":true,\"mode\":448,\"user\":\"root\"}",
				    &s),
			 API_OK);
	assert_true(s.parents);
	assert_int_equal(s.mode, 0700);
	assert_int_equal(s.user, AGENT_USER_ROOT);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"mode\":0}", &s), API_OK);
	assert_int_equal(s.mode, 0);

	assert_int_equal(mkdir_code("{}", &s), API_E_MISSING_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"a/b\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":7}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"mode\":4096}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"mode\":-1}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"mode\":\"0755\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"parents\":1}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"user\":\"daemon\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"parent\":true}", &s), API_E_UNKNOWN_FIELD);
}

static void test_long_path_refused(void **state)
{
	size_t n = AGENT_PATH_MAX + 1;
	char *p = malloc(n + 1);
	struct remove_spec s;
	struct api_err e = { 0 };
	json_t *j;

	(void)state;
	memset(p, 'a', n);
	p[0] = '/';
	p[n] = '\0';
	j = json_pack("{s:s}", "path", p);
	assert_int_equal(remove_spec_parse(j, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	json_decref(j);
	p[n - 1] = '\0'; /* exactly AGENT_PATH_MAX bytes: fine */
	j = json_pack("{s:s}", "path", p);
	assert_int_equal(remove_spec_parse(j, &s, &e), 0);
	json_decref(j);
	free(p);
}

static void test_remove_and_rename_bodies(void **state)
{
	struct remove_spec rm;
	struct rename_spec mv;
	struct api_err e = { 0 };
	json_t *j;

	(void)state;
	j = J("{\"path\":\"/tmp/x\",\"recursive\":true}");
	assert_int_equal(remove_spec_parse(j, &rm, &e), 0);
	assert_true(rm.recursive);
	assert_string_equal(rm.path, "/tmp/x");
	json_decref(j);
	j = J("{\"path\":\"/tmp/x\",\"force\":true}");
	assert_int_equal(remove_spec_parse(j, &rm, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	json_decref(j);

	j = J("{\"from\":\"/a\",\"to\":\"/b\",\"overwrite\":true}");
	assert_int_equal(rename_spec_parse(j, &mv, &e), 0);
	assert_string_equal(mv.from, "/a");
	assert_string_equal(mv.to, "/b");
	assert_true(mv.overwrite);
	json_decref(j);
	j = J("{\"from\":\"/a\"}");
	assert_int_equal(rename_spec_parse(j, &mv, &e), -1);
	assert_int_equal(e.code, API_E_MISSING_FIELD);
	assert_non_null(strstr(e.msg, "'to'"));
	json_decref(j);
	j = J("{\"from\":\"a\",\"to\":\"/b\"}");
	assert_int_equal(rename_spec_parse(j, &mv, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	json_decref(j);
}

static void test_stat_json(void **state)
{
	struct kiln_file_info st = { .size = sizeof(st),
				     .path = "/bin/sh",
				     .target = "busybox",
				     .kind = KILN_FILE_SYMLINK,
				     .file_size = 7,
				     .mode = 0777,
				     .uid = 0,
				     .gid = 0,
				     .nlink = 1,
				     .mtime_ns = 1732300000123456789LL,
				     .depth = 2 };
	json_t *o = file_stat_json(&st, false);
	char *s;

	(void)state;
	assert_non_null(o);
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(
		s,
		"{\"gid\":0,\"kind\":\"symlink\",\"mode\":511,\"mode_octal\":\"0777\","
		"\"mtime\":\"2024-11-22T18:26:40.123Z\",\"mtime_ns\":1732300000123456789,"
		"\"nlink\":1,\"path\":\"/bin/sh\",\"size\":7,\"target\":\"busybox\",\"uid\":0}");
	free(s);
	json_decref(o);
	st.target = NULL;
	st.kind = KILN_FILE_REGULAR;
	st.lossy = 1;
	st.mtime_ns = -1; /* 1 ns before the epoch: floor, not truncation */
	o = file_stat_json(&st, true);
	assert_int_equal(json_integer_value(json_object_get(o, "depth")), 2);
	assert_true(json_is_true(json_object_get(o, "lossy")));
	assert_null(json_object_get(o, "target"));
	assert_string_equal(json_string_value(json_object_get(o, "mtime")),
			    "1970-01-01T00:00:00.000Z");
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkdir_body),
		cmocka_unit_test(test_long_path_refused),
		cmocka_unit_test(test_remove_and_rename_bodies),
		cmocka_unit_test(test_stat_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
