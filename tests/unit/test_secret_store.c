/*
 * secrets (api/kilnd/registry/secrets.c): the name and value checks, the
 * store's set/delete/lists by owner, the stored file read back and every
 * fault of it named without its values, and a proxy's secrets file for a
 * sandbox's http rules (only the named ones, 0600, its owner).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "api/kilnd/registry/secret_store.h"
#include "lib/base/json.h"
#include "tmpdir.h"

static void set_ok(struct secret_store *s, uid_t owner, const char *name, const char *value,
		   bool want_created)
{
	struct api_err e;
	bool created;

	assert_int_equal(secret_store_set(s, owner, name, value, strlen(value), 1000, &created, &e),
			 0);
	assert_int_equal(created, want_created);
}

static void test_names(void **state)
{
	static const char *const good[] = { "github", "a", "a-b_c9", NULL };
	static const char *const bad[] = { "", "GitHub", "a.b", "a b", "a/b", "../x", NULL };
	char long_name[SECRET_NAME_MAX + 2];
	struct api_err e;

	(void)state;
	for (size_t i = 0; good[i]; i++)
		assert_int_equal(secret_name_check(good[i], &e), 0);
	for (size_t i = 0; bad[i]; i++) {
		assert_int_equal(secret_name_check(bad[i], &e), -1);
		assert_int_equal(e.code, API_E_BAD_FIELD);
		assert_non_null(strstr(e.msg, "a-z, 0-9"));
	}
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[SECRET_NAME_MAX] = '\0';
	assert_int_equal(secret_name_check(long_name, &e), 0);
	long_name[SECRET_NAME_MAX] = 'a';
	long_name[SECRET_NAME_MAX + 1] = '\0';
	assert_int_equal(secret_name_check(long_name, &e), -1);
}

static void test_values(void **state)
{
	static char big[SECRET_VALUE_MAX + 1];
	struct api_err e;

	(void)state;
	assert_int_equal(secret_value_check("ghp_x y\tz", 9, &e), 0);
	assert_int_equal(secret_value_check("", 0, &e), -1);
	assert_string_equal(e.msg, "secret value: empty (give 1..16384 bytes)");
	assert_int_equal(secret_value_check("tok\n", 4, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "byte 3 is LF"));
	assert_null(strstr(e.msg, "tok")); /* never quoted */
	assert_int_equal(secret_value_check("a\rb", 3, &e), -1);
	assert_non_null(strstr(e.msg, "byte 1 is CR"));
	assert_int_equal(secret_value_check("a\0b", 3, &e), -1);
	assert_non_null(strstr(e.msg, "byte 1 is NUL"));
	assert_int_equal(secret_value_check("\xff", 1, &e), -1);
	assert_non_null(strstr(e.msg, "UTF-8"));
	memset(big, 'x', sizeof(big));
	assert_int_equal(secret_value_check(big, SECRET_VALUE_MAX, &e), 0);
	assert_int_equal(secret_value_check(big, SECRET_VALUE_MAX + 1, &e), -1);
	assert_int_equal(e.code, API_E_TOO_LARGE);
}

static void test_store_by_owner(void **state)
{
	struct secret_store s = { 0 };
	const struct secret *x;
	struct api_err e;
	bool created;
	json_t *v;

	(void)state;
	set_ok(&s, 1000, "github", "one", true);
	set_ok(&s, 1001, "github", "other", true);
	set_ok(&s, 1000, "github", "two", false);
	assert_int_equal(secret_store_count(&s, 1000), 1);
	assert_int_equal(secret_store_count(&s, (uid_t)-1), 2);
	x = secret_store_find(&s, 1000, "github");
	assert_non_null(x);
	assert_string_equal(x->value, "two");
	assert_string_equal(secret_store_find(&s, 1001, "github")->value, "other");
	assert_null(secret_store_find(&s, 1002, "github"));
	/* a refused value leaves the old one */
	assert_int_equal(secret_store_set(&s, 1000, "github", "a\nb", 3, 5, &created, &e), -1);
	assert_string_equal(secret_store_find(&s, 1000, "github")->value, "two");

	v = secret_store_list(&s, 1000);
	assert_int_equal(json_array_size(json_object_get(v, "secrets")), 1);
	assert_null(json_object_get(json_array_get(json_object_get(v, "secrets"), 0), "value"));
	assert_string_equal(json_string_value(
				    json_object_get(json_array_get(json_object_get(v, "secrets"), 0),
						    "created")),
			    "1970-01-01T00:00:01.000Z");
	json_decref(v);
	v = secret_store_list(&s, (uid_t)-1);
	assert_int_equal(json_array_size(json_object_get(v, "secrets")), 2);
	json_decref(v);

	assert_int_equal(secret_store_delete(&s, 1002, "github", &e), -1);
	assert_int_equal(e.code, API_E_NOT_FOUND);
	assert_int_equal(secret_store_delete(&s, 1000, "github", &e), 0);
	assert_null(secret_store_find(&s, 1000, "github"));
	assert_non_null(secret_store_find(&s, 1001, "github"));
	secret_store_free(&s);
}

static void test_store_limit(void **state)
{
	struct secret_store s = { 0 };
	struct api_err e;
	char name[16];
	bool created;

	(void)state;
	for (int i = 0; i < SECRETS_MAX; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(secret_store_set(&s, 0, name, "v", 1, 0, &created, &e), 0);
	}
	assert_int_equal(secret_store_set(&s, 0, "one-more", "v", 1, 0, &created, &e), -1);
	assert_int_equal(e.code, API_E_LIMIT_REACHED);
	/* replacing one is not a new one */
	assert_int_equal(secret_store_set(&s, 0, "s7", "w", 1, 0, &created, &e), 0);
	secret_store_free(&s);
}

static void test_file_round_trip(void **state)
{
	struct secret_store s = { 0 }, back;
	struct err e;
	size_t len;
	char *text;

	(void)state;
	set_ok(&s, 0, "github", "ghp_\"quoted\" \\ é", true);
	set_ok(&s, 1000, "npm", "npm_tok", true);
	s.v[1].updated_ms = 5000;
	text = secret_file_render(&s, &len);
	assert_non_null(text);
	assert_int_equal(secret_file_parse(text, len, &back, &e), 0);
	assert_int_equal(back.n, 2);
	assert_string_equal(back.v[0].value, "ghp_\"quoted\" \\ é");
	assert_int_equal(back.v[1].owner, 1000);
	assert_int_equal(back.v[1].created_ms, 1000);
	assert_int_equal(back.v[1].updated_ms, 5000);
	free(text);
	secret_store_free(&back);
	/* an empty store is a file too */
	secret_store_free(&s);
	text = secret_file_render(&s, &len);
	assert_int_equal(secret_file_parse(text, len, &back, &e), 0);
	assert_int_equal(back.n, 0);
	free(text);
}

static void test_file_faults(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "", "not valid JSON" },
		{ "{\"version\":1,\"secrets\":[{\"value\":\"LEAK1\"", "not valid JSON (line" },
		{ "[]", "not a JSON object" },
		{ "{\"version\":1}", "\"secrets\": missing" },
		{ "{\"secrets\":[]}", "\"version\": missing" },
		{ "{\"version\":2,\"secrets\":[]}", "version 2: this kilnd reads version 1" },
		{ "{\"version\":1,\"secrets\":[],\"x\":1}", "unknown field \"x\"" },
		{ "{\"version\":1,\"secrets\":[1]}", "secrets[0]: an integer, not an object" },
		{ "{\"version\":1,\"secrets\":[{\"owner\":0,\"name\":\"a\",\"value\":\"LEAK2\",\"created_ms\":1}]}",
		  "secrets[0].updated_ms: missing" },
		{ "{\"version\":1,\"secrets\":[{\"owner\":0,\"name\":\"A\",\"value\":\"LEAK3\",\"created_ms\":1,\"updated_ms\":1}]}",
		  "secrets[0].name: secret name 'A'" },
		{ "{\"version\":1,\"secrets\":[{\"owner\":0,\"name\":\"a\",\"value\":\"LEAK4\\n\",\"created_ms\":1,\"updated_ms\":1}]}",
		  "secrets[0] ('a'): secret value: byte 5 is LF" },
		{ "{\"version\":1,\"secrets\":[{\"owner\":0,\"name\":\"a\",\"value\":\"\",\"created_ms\":1,\"updated_ms\":1}]}",
		  "secrets[0] ('a'): secret value: empty" },
		{ "{\"version\":1,\"secrets\":[{\"owner\":0,\"name\":\"a\",\"value\":7,\"created_ms\":1,\"updated_ms\":1}]}",
		  "secrets[0].value: missing, or not a string" },
		{ "{\"version\":1,\"secrets\":[{\"owner\":-1,\"name\":\"a\",\"value\":\"LEAK5\",\"created_ms\":1,\"updated_ms\":1}]}",
		  "secrets[0].owner: missing, or not an integer in range" },
		{ "{\"version\":1,\"secrets\":[{\"owner\":0,\"name\":\"a\",\"value\":\"LEAK6\",\"created_ms\":1,\"updated_ms\":1,\"x\":0}]}",
		  "secrets[0]: unknown field \"x\"" },
		{ "{\"version\":1,\"secrets\":[{\"owner\":0,\"name\":\"a\",\"value\":\"LEAK7\",\"created_ms\":1,\"updated_ms\":1},"
		  "{\"owner\":0,\"name\":\"a\",\"value\":\"LEAK8\",\"created_ms\":1,\"updated_ms\":1}]}",
		  "secrets[1]: owner 0's 'a' is there twice" },
		{ "{\"version\":1,\"version\":1,\"secrets\":[]}", "not valid JSON" },
	};
	struct secret_store s;
	struct err e;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&e, 0, sizeof(e));
		assert_int_equal(secret_file_parse(cases[i].text, strlen(cases[i].text), &s, &e),
				 -1);
		if (!strstr(e.msg, cases[i].want))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, e.msg, cases[i].want);
		/* no byte of a value reaches the message */
		assert_null(strstr(e.msg, "LEAK"));
		assert_int_equal(s.n, 0);
		assert_null(s.v);
	}
}

static struct http_rules *rules(const char *text)
{
	struct http_rules *r = NULL;
	struct net_rules_err ne;

	assert_int_equal(http_rules_parse_text(text, strlen(text), &r, &ne), 0);
	return r;
}

static void test_proxy_file(void **state)
{
	struct tmpdir_fx *f = *state;
	struct secret_store s = { 0 };
	struct http_rules *r = rules(
		"[{\"host\":\"api.github.com\",\"intercept\":true,\"inject\":[{\"header\":\"authorization\","
		"\"secret\":\"github\",\"format\":\"Bearer {}\"},{\"header\":\"x-npm\",\"secret\":\"npm\","
		"\"format\":\"{}\"}]},{\"host\":\"x.example.com\",\"intercept\":true,\"inject\":[{\"header\":"
		"\"x-gh\",\"secret\":\"github\",\"format\":\"{}\"},{\"header\":\"x-none\",\"secret\":\"absent\","
		"\"format\":\"{}\"}]}]");
	char buf[4096];
	struct stat st;
	size_t missing = 99;
	struct err e;
	json_t *j;
	ssize_t n;
	int fd;

	set_ok(&s, 1000, "github", "ghp_mine", true);
	set_ok(&s, 1000, "unnamed", "not-for-this-sandbox", true);
	set_ok(&s, 1001, "npm", "another-owners", true);
	assert_true(secret_rules_name(r, "github"));
	assert_true(secret_rules_name(r, "absent"));
	assert_false(secret_rules_name(r, "unnamed"));
	assert_false(secret_rules_name(NULL, "github"));

	assert_int_equal(secret_file_for_rules(&s, 1000, r, f->dfd, "secrets.json", 65534, 65534,
					       &missing, &e),
			 0);
	/* npm is 1001's, absent nobody's: both left out, each counted once */
	assert_int_equal(missing, 2);
	assert_int_equal(fstatat(f->dfd, "secrets.json", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	if (geteuid() == 0) {
		assert_int_equal(st.st_uid, 65534);
		assert_int_equal(st.st_gid, 65534);
	}
	fd = openat(f->dfd, "secrets.json", O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	j = json_strict_loads(buf, NULL);
	assert_non_null(j);
	assert_int_equal(json_object_size(j), 1);
	assert_string_equal(json_string_value(json_object_get(j, "github")), "ghp_mine");
	json_decref(j);
	assert_null(strstr(buf, "not-for-this-sandbox"));
	assert_null(strstr(buf, "another-owners"));

	/* no rules: an empty object, replacing the old file */
	assert_int_equal(secret_file_for_rules(&s, 1000, NULL, f->dfd, "secrets.json", (uid_t)-1,
					       (gid_t)-1, NULL, &e),
			 0);
	fd = openat(f->dfd, "secrets.json", O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	assert_string_equal(buf, "{}");
	/* a directory that is not there: the errno, named */
	assert_int_equal(secret_file_for_rules(&s, 1000, r, f->dfd, "nodir/secrets.json", (uid_t)-1,
					       (gid_t)-1, NULL, &e),
			 -ENOENT);
	assert_non_null(strstr(e.msg, "secrets file nodir/secrets.json"));
	http_rules_free(r);
	secret_store_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_store_by_owner),
		cmocka_unit_test(test_store_limit),
		cmocka_unit_test(test_file_round_trip),
		cmocka_unit_test(test_file_faults),
		cmocka_unit_test_setup_teardown(test_proxy_file, tmpdir_setup, tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
