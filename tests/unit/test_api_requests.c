/*
 * Request validation for kilnd (sandbox create, exec, query parameters):
 * every client-supplied value is checked and refused with the exact code
 * docs/api.md gives, the first failing check in table order, before
 * anything reaches kiln-vmm or the agent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/exec_spec.h"
#include "api/kilnd/core/query.h"
#include "api/kilnd/core/sandbox_spec.h"

static const struct sandbox_limits lim = { .max_cpus = 8,
					   .max_memory_mib = 4096,
					   .max_disk_mib = SPEC_DISK_MAX_MIB };

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", text, je.text);
	return j;
}

/* Parse a create body; returns the error code (API_OK on success). */
static enum api_code create(const char *text, struct sandbox_spec *s, char *msg)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = sandbox_spec_parse(j, &lim, s, &e);

	json_decref(j);
	if (msg)
		strcpy(msg, r ? e.msg : "");
	return r ? e.code : API_OK;
}

static void test_create_defaults(void **state)
{
	struct sandbox_spec s;

	(void)state;
	assert_int_equal(create("{\"image\":\"minimal\"}", &s, NULL), API_OK);
	assert_string_equal(s.image, "minimal");
	assert_int_equal(s.cpus, 1);
	assert_int_equal(s.memory_mib, 128);
	assert_string_equal(s.hostname, "kiln");
	assert_int_equal(json_object_size(s.env), 0);
	assert_int_equal(json_object_size(s.labels), 0);
	assert_int_equal(s.nshares, 0);
	assert_int_equal(s.timeout_s, 0);
	assert_int_equal(s.idle_timeout_s, 0); /* this test's limits: no --idle-timeout */
	assert_true(s.console);
	sandbox_spec_free(&s);
}

/* idle_timeout_s: the daemon's default unless given; 0 is never. */
static void test_create_idle_timeout(void **state)
{
	static const struct sandbox_limits idle = { .max_cpus = 8,
						    .max_memory_mib = 4096,
						    .max_disk_mib = SPEC_DISK_MAX_MIB,
						    .idle_timeout_default_s = 300 };
	struct sandbox_spec s, t;
	struct api_err e;
	json_t *b, *j;

	(void)state;
	b = json_loads("{\"image\":\"m\"}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &idle, &s, &e), 0);
	assert_int_equal(s.idle_timeout_s, 300);
	json_decref(b);
	/* The canonical JSON says it, so a later default does not change it. */
	j = sandbox_spec_to_json(&s);
	assert_int_equal(json_integer_value(json_object_get(j, "idle_timeout_s")), 300);
	assert_int_equal(sandbox_spec_parse(j, &lim, &t, &e), 0);
	assert_int_equal(t.idle_timeout_s, 300);
	json_decref(j);
	sandbox_spec_free(&t);
	sandbox_spec_free(&s);
	b = json_loads("{\"image\":\"m\",\"idle_timeout_s\":0}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &idle, &s, &e), 0);
	assert_int_equal(s.idle_timeout_s, 0);
	json_decref(b);
	sandbox_spec_free(&s);
	b = json_loads("{\"image\":\"m\",\"idle_timeout_s\":604801}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &idle, &s, &e), -1);
	assert_non_null(strstr(e.msg, "idle_timeout_s"));
	json_decref(b);
}

/* disk_mib: up to --max-disk; a record restored under a smaller one keeps its disk. */
static void test_create_disk_within_max_disk(void **state)
{
	static const struct sandbox_limits small = { .max_cpus = 8,
						     .max_memory_mib = 4096,
						     .max_disk_mib = 2048 };
	struct sandbox_spec s;
	struct api_err e;
	json_t *b;

	(void)state;
	b = json_loads("{\"image\":\"m\",\"disk_mib\":2048}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &small, &s, &e), 0);
	assert_int_equal(s.disk_mib, 2048);
	sandbox_spec_free(&s);
	json_decref(b);
	b = json_loads("{\"image\":\"m\",\"disk_mib\":2049}", 0, NULL);
	assert_int_equal(sandbox_spec_parse(b, &small, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "'disk_mib' must be from 0 to 2048"));
	json_decref(b);
}

static void test_create_everything_and_round_trip(void **state)
{
	const char *body =
		"{\"image\":\"debian\",\"cpus\":8,\"memory_mib\":4096,\"hostname\":\"box1\","
		"\"env\":{\"A\":\"1\",\"LANG\":\"C.UTF-8\"},\"labels\":{\"job\":\"42\"},"
		"\"shares\":[{\"host_path\":\"/srv/data\",\"guest_path\":\"/mnt/data\",\"read_only\":true},"
		"{\"host_path\":\"/srv/out\",\"guest_path\":\"/mnt/out\"}],"
		"\"timeout_s\":604800,\"console\":false,\"disk_mib\":4096}";
	struct sandbox_spec s, t;
	struct api_err e;
	json_t *j;

	(void)state;
	assert_int_equal(create(body, &s, NULL), API_OK);
	assert_int_equal(s.cpus, 8);
	assert_int_equal(s.memory_mib, 4096);
	assert_int_equal(s.disk_mib, 4096);
	assert_string_equal(s.hostname, "box1");
	assert_string_equal(json_string_value(json_object_get(s.env, "LANG")), "C.UTF-8");
	assert_int_equal(s.nshares, 2);
	assert_true(s.shares[0].read_only);
	assert_false(s.shares[1].read_only);
	assert_string_equal(s.shares[1].guest_path, "/mnt/out");
	assert_int_equal(s.timeout_s, 604800);
	assert_false(s.console);
	/* Canonical JSON parses back to the same spec. */
	j = sandbox_spec_to_json(&s);
	assert_non_null(j);
	assert_int_equal(sandbox_spec_parse(j, &lim, &t, &e), 0);
	assert_int_equal(t.nshares, 2);
	assert_int_equal(t.disk_mib, 4096);
	assert_string_equal(t.shares[0].host_path, "/srv/data");
	assert_true(json_equal(t.env, s.env));
	assert_true(json_equal(t.labels, s.labels));
	assert_false(t.console);
	json_decref(j);
	sandbox_spec_free(&t);
	sandbox_spec_free(&s);
}

static void test_create_rejects(void **state)
{
	static const struct {
		const char *body;
		enum api_code code;
		const char *in_message;
	} cases[] = {
		{ "[]", API_E_BAD_JSON, "JSON object" },
		{ "{}", API_E_MISSING_FIELD, "'image'" },
		{ "{\"image\":\"m\",\"cpu\":1}", API_E_UNKNOWN_FIELD, "'cpu'" },
		/* Unknown fields are found before field errors. */
		{ "{\"image\":7,\"x\":1}", API_E_UNKNOWN_FIELD, "'x'" },
		{ "{\"image\":7}", API_E_BAD_FIELD, "'image' must be a string" },
		{ "{\"image\":\"../etc\"}", API_E_BAD_FIELD, "not an image name" },
		{ "{\"image\":\"m\",\"cpus\":0}", API_E_BAD_FIELD, "from 1 to 8" },
		{ "{\"image\":\"m\",\"cpus\":9}", API_E_BAD_FIELD, "from 1 to 8" },
		{ "{\"image\":\"m\",\"cpus\":-1}", API_E_BAD_FIELD, "'cpus'" },
		{ "{\"image\":\"m\",\"cpus\":1.0}", API_E_BAD_FIELD, "integer" },
		{ "{\"image\":\"m\",\"cpus\":\"2\"}", API_E_BAD_FIELD, "integer" },
		{ "{\"image\":\"m\",\"memory_mib\":31}", API_E_BAD_FIELD, "from 32 to 4096" },
		{ "{\"image\":\"m\",\"memory_mib\":4097}", API_E_BAD_FIELD, "'memory_mib'" },
		{ "{\"image\":\"m\",\"disk_mib\":1048577}", API_E_BAD_FIELD,
		  "'disk_mib' must be from 0 to 1048576" },
		{ "{\"image\":\"m\",\"disk_mib\":-5}", API_E_BAD_FIELD, "'disk_mib'" },
		{ "{\"image\":\"m\",\"disk_mib\":\"4G\"}", API_E_BAD_FIELD,
		  "'disk_mib' must be an integer" },
		{ "{\"image\":\"m\",\"hostname\":\"a b\"}", API_E_BAD_FIELD, "hostname" },
		{ "{\"image\":\"m\",\"hostname\":\"x kiln.exec=reboot\"}", API_E_BAD_FIELD,
		  "hostname" },
		{ "{\"image\":\"m\",\"hostname\":\"\"}", API_E_BAD_FIELD, "hostname" },
		{ "{\"image\":\"m\",\"env\":[]}", API_E_BAD_FIELD, "'env' must be an object" },
		{ "{\"image\":\"m\",\"env\":{\"A=B\":\"1\"}}", API_E_BAD_FIELD, "env key" },
		{ "{\"image\":\"m\",\"env\":{\"\":\"1\"}}", API_E_BAD_FIELD, "env key" },
		{ "{\"image\":\"m\",\"env\":{\"A\":1}}", API_E_BAD_FIELD, "env['A']" },
		{ "{\"image\":\"m\",\"env\":{\"A\":null}}", API_E_BAD_FIELD, "env['A']" },
		{ "{\"image\":\"m\",\"labels\":{\"/x\":\"1\"}}", API_E_BAD_FIELD, "labels key" },
		{ "{\"image\":\"m\",\"shares\":{}}", API_E_BAD_FIELD, "array" },
		{ "{\"image\":\"m\",\"shares\":[1]}", API_E_BAD_FIELD,
		  "shares[0] must be an object" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\"}]}", API_E_MISSING_FIELD,
		  "guest_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b\",\"ro\":true}]}",
		  API_E_UNKNOWN_FIELD, "'ro'" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"a\",\"guest_path\":\"/b\"}]}",
		  API_E_BAD_FIELD, "host_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\\nb\",\"guest_path\":\"/b\"}]}",
		  API_E_BAD_FIELD, "host_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/\"}]}",
		  API_E_BAD_FIELD, "guest_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b c\"}]}",
		  API_E_BAD_FIELD, "guest_path" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b\",\"read_only\":1}]}",
		  API_E_BAD_FIELD, "read_only" },
		{ "{\"image\":\"m\",\"shares\":[{\"host_path\":\"/a\",\"guest_path\":\"/b\"},"
		  "{\"host_path\":\"/c\",\"guest_path\":\"/b\"}]}",
		  API_E_BAD_FIELD, "same guest_path" },
		{ "{\"image\":\"m\",\"timeout_s\":604801}", API_E_BAD_FIELD, "timeout_s" },
		{ "{\"image\":\"m\",\"console\":\"yes\"}", API_E_BAD_FIELD, "console" },
	};
	struct sandbox_spec s;
	char msg[ERR_MSG_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum api_code c = create(cases[i].body, &s, msg);

		if (c != cases[i].code || !strstr(msg, cases[i].in_message))
			fail_msg("%s: got %s '%s', want %s with '%s'", cases[i].body,
				 api_code_name(c), msg, api_code_name(cases[i].code),
				 cases[i].in_message);
		assert_null(s.env); /* nothing left to free after a failure */
	}
}

static void test_create_counts(void **state)
{
	json_t *body = J("{\"image\":\"m\"}"), *env = json_object(), *shares = json_array();
	struct sandbox_spec s;
	struct api_err e;

	(void)state;
	for (int i = 0; i <= SPEC_ENV_MAX; i++) {
		char k[16];

		snprintf(k, sizeof(k), "K%d", i);
		json_object_set_new(env, k, json_string("v"));
	}
	json_object_set_new(body, "env", env);
	assert_int_equal(sandbox_spec_parse(body, &lim, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "more than 256"));
	json_object_del(env, "K0");
	assert_int_equal(sandbox_spec_parse(body, &lim, &s, &e), 0);
	sandbox_spec_free(&s);
	for (int i = 0; i <= SPEC_MAX_SHARES; i++) {
		char g[16];

		snprintf(g, sizeof(g), "/g%d", i);
		json_array_append_new(shares,
				      json_pack("{s:s,s:s}", "host_path", "/h", "guest_path", g));
	}
	json_object_set_new(body, "shares", shares);
	assert_int_equal(sandbox_spec_parse(body, &lim, &s, &e), -1);
	assert_non_null(strstr(e.msg, "at most 8 shares"));
	json_array_remove(shares, 0);
	assert_int_equal(sandbox_spec_parse(body, &lim, &s, &e), 0);
	assert_int_equal(s.nshares, 8);
	sandbox_spec_free(&s);
	json_decref(body);
}

static enum api_code exec(const char *text, bool streaming, struct exec_spec *s, char *msg)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = exec_spec_parse(j, streaming, s, &e);

	json_decref(j);
	if (msg)
		strcpy(msg, r ? e.msg : "");
	return r ? e.code : API_OK;
}

static void test_exec_fields(void **state)
{
	struct kiln_exec_opts o;
	struct exec_spec s;

	(void)state;
	assert_int_equal(exec("{\"argv\":[\"echo\",\"hi\"]}", false, &s, NULL), API_OK);
	assert_int_equal(s.argc, 2);
	assert_string_equal(s.argv[1], "hi");
	assert_null(s.argv[2]);
	assert_int_equal(s.user, AGENT_USER_USER);
	assert_int_equal(s.output_cap, AGENT_OUTPUT_CAP_DEFAULT);
	assert_null(s.stdin_data);
	exec_spec_free(&s);

	assert_int_equal(
		exec("{\"argv\":[\"cat\"],\"shell\":true,\"cwd\":\"/tmp\",\"user\":\"root\","
		     "\"timeout_ms\":500,\"stdin\":\"hello\\n\",\"output_cap\":0,\"output_encoding\":\"base64\"}",
		     false, &s, NULL),
		API_OK);
	assert_true(s.shell);
	assert_string_equal(s.cwd, "/tmp");
	assert_int_equal(s.user, AGENT_USER_ROOT);
	assert_int_equal(s.timeout_ms, 500);
	assert_int_equal(s.stdin_len, 6);
	assert_memory_equal(s.stdin_data, "hello\n", 6);
	assert_true(s.base64_output);
	exec_spec_opts(&s, &o);
	assert_true(o.flags & KILN_AGENT_DISCARD); /* a cap of 0 keeps nothing */
	assert_true(o.flags & KILN_AGENT_SHELL);
	assert_true(o.flags & KILN_AGENT_AS_ROOT);
	assert_int_equal(o.stdin_len, 6);
	exec_spec_free(&s);

	/* confine: off by default, passed on; a cwd inside /workspace. */
	assert_int_equal(exec("{\"argv\":[\"cat\",\"/etc/passwd\"]}", false, &s, NULL), API_OK);
	assert_false(s.confine);
	exec_spec_opts(&s, &o);
	assert_int_equal(o.flags, 0);
	assert_null(o.env);
	assert_null(o.lang);
	exec_spec_free(&s);
	assert_int_equal(exec("{\"argv\":[\"ls\"],\"confine\":true,\"cwd\":\"/workspace/src\"}",
			      true, &s, NULL),
			 API_OK);
	assert_true(s.confine);
	exec_spec_opts(&s, &o);
	assert_true(o.flags & KILN_AGENT_CONFINE);
	assert_string_equal(o.cwd, "/workspace/src");
	exec_spec_free(&s);
	assert_int_equal(exec("{\"argv\":[\"ls\"],\"confine\":false,\"cwd\":\"/tmp\"}", false, &s,
			      NULL),
			 API_OK);
	exec_spec_free(&s);

	/* Binary stdin through base64, NUL bytes included. */
	assert_int_equal(exec("{\"argv\":[\"cat\"],\"stdin_base64\":\"AP8A\"}", false, &s, NULL),
			 API_OK);
	assert_int_equal(s.stdin_len, 3);
	assert_memory_equal(s.stdin_data, "\x00\xff\x00", 3);
	exec_spec_free(&s);
}

static void test_exec_rejects(void **state)
{
	static const struct {
		const char *body;
		bool streaming;
		enum api_code code;
		const char *in_message;
	} cases[] = {
		{ "{}", false, API_E_MISSING_FIELD, "'argv'" },
		{ "{\"argv\":[\"a\"],\"tty\":true}", false, API_E_UNKNOWN_FIELD, "'tty'" },
		{ "{\"argv\":\"ls\"}", false, API_E_BAD_FIELD, "array of strings" },
		{ "{\"argv\":[]}", false, API_E_BAD_FIELD, "1 to 1024" },
		{ "{\"argv\":[\"\"]}", false, API_E_BAD_FIELD, "argv[0] must not be empty" },
		{ "{\"argv\":[\"a\",1]}", false, API_E_BAD_FIELD, "argv[1]" },
		{ "{\"argv\":[\"a\"],\"shell\":1}", false, API_E_BAD_FIELD, "'shell'" },
		{ "{\"argv\":[\"a\"],\"env\":{\"A=B\":\"x\"}}", false, API_E_BAD_FIELD, "env key" },
		{ "{\"argv\":[\"a\"],\"env\":{\"A\":5}}", false, API_E_BAD_FIELD,
		  "string or null" },
		{ "{\"argv\":[\"a\"],\"cwd\":\"tmp\"}", false, API_E_BAD_FIELD, "absolute" },
		{ "{\"argv\":[\"a\"],\"user\":\"nobody\"}", false, API_E_BAD_FIELD, "user" },
		{ "{\"argv\":[\"a\"],\"timeout_ms\":604800001}", false, API_E_BAD_FIELD,
		  "timeout_ms" },
		{ "{\"argv\":[\"a\"],\"timeout_ms\":-5}", false, API_E_BAD_FIELD, "timeout_ms" },
		{ "{\"argv\":[\"a\"],\"stdin\":\"x\",\"stdin_base64\":\"eA==\"}", false,
		  API_E_BAD_FIELD, "not both" },
		{ "{\"argv\":[\"a\"],\"stdin_base64\":\"eA\"}", false, API_E_BAD_FIELD,
		  "canonical base64" },
		{ "{\"argv\":[\"a\"],\"stdin_base64\":\"e A=\"}", false, API_E_BAD_FIELD,
		  "canonical base64" },
		{ "{\"argv\":[\"a\"],\"stdin_base64\":\"eB==\"}", false, API_E_BAD_FIELD,
		  "canonical base64" },
		{ "{\"argv\":[\"a\"],\"output_cap\":16777217}", false, API_E_BAD_FIELD,
		  "output_cap" },
		{ "{\"argv\":[\"a\"],\"output_cap\":268435457}", true, API_E_BAD_FIELD,
		  "output_cap" },
		{ "{\"argv\":[\"a\"],\"output_encoding\":\"hex\"}", false, API_E_BAD_FIELD,
		  "output_encoding" },
		{ "{\"argv\":[\"a\"],\"confine\":\"yes\"}", false, API_E_BAD_FIELD,
		  "exec: 'confine' must be true or false" },
		{ "{\"argv\":[\"a\"],\"confine\":1}", true, API_E_BAD_FIELD, "'confine'" },
		{ "{\"argv\":[\"a\"],\"confine\":null}", false, API_E_BAD_FIELD, "'confine'" },
		{ "{\"argv\":[\"a\"],\"confine\":true,\"cwd\":\"/tmp\"}", false, API_E_BAD_FIELD,
		  "exec: cwd '/tmp' is not visible to a confined process; give /workspace or a directory below it" },
		{ "{\"argv\":[\"a\"],\"confine\":true,\"cwd\":\"/workspace/../etc\"}", true,
		  API_E_BAD_FIELD, "not visible to a confined process" },
		{ "{\"argv\":[\"a\"],\"confine\":true,\"cwd\":\"/workspaces\"}", false,
		  API_E_BAD_FIELD, "not visible to a confined process" },
	};
	char msg[ERR_MSG_MAX];
	struct exec_spec s;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum api_code c = exec(cases[i].body, cases[i].streaming, &s, msg);

		if (c != cases[i].code || !strstr(msg, cases[i].in_message))
			fail_msg("%s: got %s '%s', want %s with '%s'", cases[i].body,
				 api_code_name(c), msg, api_code_name(cases[i].code),
				 cases[i].in_message);
		exec_spec_free(&s);
	}
	/* Streaming raises the cap to the agent's maximum. */
	assert_int_equal(exec("{\"argv\":[\"a\"],\"output_cap\":268435456}", true, &s, NULL),
			 API_OK);
	exec_spec_free(&s);
}

static void test_exec_argv_limits(void **state)
{
	json_t *body = json_object(), *argv = json_array();
	struct exec_spec s;
	struct api_err e;

	(void)state;
	for (int i = 0; i < AGENT_ARGV_MAX; i++)
		json_array_append_new(argv, json_string("x"));
	json_object_set_new(body, "argv", argv);
	assert_int_equal(exec_spec_parse(body, false, &s, &e), 0);
	exec_spec_free(&s);
	/* With shell the agent adds /bin/sh -c: two fewer. */
	json_object_set_new(body, "shell", json_true());
	assert_int_equal(exec_spec_parse(body, false, &s, &e), -1);
	assert_non_null(strstr(e.msg, "at most 1022"));
	exec_spec_free(&s);
	json_object_del(body, "shell");
	json_array_append_new(argv, json_string("x"));
	assert_int_equal(exec_spec_parse(body, false, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	exec_spec_free(&s);
	json_decref(body);
}

static void test_exec_env_merge(void **state)
{
	json_t *base = J("{\"A\":\"base\",\"B\":\"base\",\"C\":\"base\"}");
	struct exec_spec s;
	struct api_err e;
	int seen = 0;

	(void)state;
	assert_int_equal(exec("{\"argv\":[\"env\"],\"env\":{\"B\":\"mine\",\"C\":null,\"D\":\"new\"}}",
			      false, &s, NULL),
			 API_OK);
	assert_int_equal(exec_env_merge(&s, base, &e), 0);
	assert_int_equal(s.nmerged, 4);
	for (size_t i = 0; i < s.nmerged; i++) {
		const char *k = s.merged[i].key, *v = s.merged[i].value;

		if (strcmp(k, "A") == 0) {
			assert_string_equal(v, "base");
			seen |= 1;
		} else if (strcmp(k, "B") == 0) {
			assert_string_equal(v, "mine"); /* the exec's value wins */
			seen |= 2;
		} else if (strcmp(k, "C") == 0) {
			assert_null(v); /* null unsets the base variable */
			seen |= 4;
		} else if (strcmp(k, "D") == 0) {
			assert_string_equal(v, "new");
			seen |= 8;
		}
	}
	assert_int_equal(seen, 15);
	/* The same as libkiln takes it: "K=V" sets, a bare "K" unsets. */
	{
		struct kiln_exec_opts o;
		char all[64] = "";

		exec_spec_opts(&s, &o);
		for (size_t i = 0; o.env[i]; i++) {
			strcat(all, o.env[i]);
			strcat(all, " ");
		}
		assert_non_null(strstr(all, "A=base "));
		assert_non_null(strstr(all, "B=mine "));
		assert_non_null(strstr(all, "C "));
		assert_null(strstr(all, "C="));
		assert_non_null(strstr(all, "D=new "));
		assert_null(o.env[4]);
	}
	exec_spec_free(&s);
	json_decref(base);

	/* 1024 from the sandbox plus one from the exec: too many together. */
	base = json_object();
	for (int i = 0; i < AGENT_ENV_MAX; i++) {
		char k[16];

		snprintf(k, sizeof(k), "K%d", i);
		json_object_set_new(base, k, json_string("v"));
	}
	assert_int_equal(exec("{\"argv\":[\"env\"],\"env\":{\"NEW\":\"1\"}}", false, &s, NULL),
			 API_OK);
	assert_int_equal(exec_env_merge(&s, base, &e), -1);
	assert_int_equal(e.code, API_E_TOO_LARGE);
	exec_spec_free(&s);
	assert_int_equal(exec("{\"argv\":[\"env\"],\"env\":{\"K1\":\"override\"}}", false, &s,
			      NULL),
			 API_OK);
	assert_int_equal(exec_env_merge(&s, base, &e), 0);
	assert_int_equal(s.nmerged, AGENT_ENV_MAX);
	exec_spec_free(&s);
	json_decref(base);
}

static void test_stop_and_start_bodies(void **state)
{
	struct api_err e;
	json_t *j;
	int grace = -1;

	(void)state;
	assert_int_equal(sandbox_stop_body_parse(NULL, &grace, &e), 0);
	assert_int_equal(grace, AGENT_GRACE_DEFAULT_MS);
	j = J("{\"grace_ms\":60000}");
	assert_int_equal(sandbox_stop_body_parse(j, &grace, &e), 0);
	assert_int_equal(grace, 60000);
	json_decref(j);
	j = J("{\"grace_ms\":60001}");
	assert_int_equal(sandbox_stop_body_parse(j, &grace, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	json_decref(j);
	j = J("{\"grace\":1}");
	assert_int_equal(sandbox_stop_body_parse(j, &grace, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	json_decref(j);
	assert_int_equal(sandbox_start_body_parse(NULL, &e), 0);
	j = J("{}");
	assert_int_equal(sandbox_start_body_parse(j, &e), 0);
	json_decref(j);
	j = J("{\"cpus\":2}");
	assert_int_equal(sandbox_start_body_parse(j, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	json_decref(j);
}

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

static void test_unescape_keeps_nul_out(void **state)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "/a%20b", "/a b" },   { "%2Fetc%2fpasswd", "/etc/passwd" },
		{ "/x%00y", "/x%00y" }, { "%zz%4", "%zz%4" },
		{ "100%", "100%" },     { "%C3%A9", "\xc3\xa9" },
		{ "%%41", "%A" },       { "", "" },
	};
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		strcpy(buf, v[i].in);
		assert_int_equal(query_unescape(buf), strlen(v[i].out));
		assert_string_equal(buf, v[i].out);
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

/* An imported image's WorkingDir and User are defaults only: the
 * request's own cwd and user win; a user kiln cannot run as is ignored;
 * a confined process keeps /workspace unless the default is under it. */
static void test_exec_image_defaults(void **state)
{
	json_t *def = J("{\"working_dir\":\"/srv/work\",\"user\":\"0:0\"}");
	json_t *odd = J("{\"working_dir\":\"/srv\",\"user\":\"www-data\"}");
	json_t *ws = J("{\"working_dir\":\"/workspace/app\",\"user\":\"1000\"}");
	struct exec_spec s;

	(void)state;
	assert_int_equal(exec("{\"argv\":[\"pwd\"]}", false, &s, NULL), API_OK);
	exec_spec_image_defaults(&s, def);
	assert_string_equal(s.cwd, "/srv/work");
	assert_int_equal(s.user, AGENT_USER_ROOT);
	exec_spec_image_defaults(&s, NULL); /* none: unchanged */
	assert_string_equal(s.cwd, "/srv/work");
	exec_spec_free(&s);
	assert_int_equal(exec("{\"argv\":[\"pwd\"],\"cwd\":\"/tmp\",\"user\":\"user\"}", false, &s,
			      NULL),
			 API_OK);
	exec_spec_image_defaults(&s, def);
	assert_string_equal(s.cwd, "/tmp");
	assert_int_equal(s.user, AGENT_USER_USER);
	exec_spec_free(&s);
	assert_int_equal(exec("{\"argv\":[\"pwd\"]}", false, &s, NULL), API_OK);
	exec_spec_image_defaults(&s, odd);
	assert_string_equal(s.cwd, "/srv");
	assert_int_equal(s.user, AGENT_USER_USER);
	exec_spec_free(&s);
	assert_int_equal(exec("{\"argv\":[\"pwd\"],\"confine\":true}", false, &s, NULL), API_OK);
	exec_spec_image_defaults(&s, def);
	assert_null(s.cwd); /* /srv/work is not visible to a confined process */
	exec_spec_image_defaults(&s, ws);
	assert_string_equal(s.cwd, "/workspace/app");
	exec_spec_free(&s);
	json_decref(def);
	json_decref(odd);
	json_decref(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_image_defaults),
		cmocka_unit_test(test_create_defaults),
		cmocka_unit_test(test_create_idle_timeout),
		cmocka_unit_test(test_create_disk_within_max_disk),
		cmocka_unit_test(test_create_everything_and_round_trip),
		cmocka_unit_test(test_create_rejects),
		cmocka_unit_test(test_create_counts),
		cmocka_unit_test(test_exec_fields),
		cmocka_unit_test(test_exec_rejects),
		cmocka_unit_test(test_exec_argv_limits),
		cmocka_unit_test(test_exec_env_merge),
		cmocka_unit_test(test_stop_and_start_bodies),
		cmocka_unit_test(test_query_files),
		cmocka_unit_test(test_unescape_keeps_nul_out),
		cmocka_unit_test(test_query_exec_and_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
