/*
 * Unit tests of api/kilnd/bodies/exec_spec.c: the body of POST
 * /v1/sandboxes/{id}/exec (docs/api.md), validated into the agent client's
 * exec options; also run's body (POST .../run: a language and its code
 * instead of argv), which shares every other field, so an option added here
 * reaches both.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/exec_spec.h"
#include "api/proto/agent_proto.h"
#include "tests/unit/json_load.h"

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

static enum api_code run(const char *text, struct exec_spec *s, char *msg)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = run_spec_parse(j, false, s, &e);

	json_decref(j);
	if (msg)
		strcpy(msg, r ? e.msg : "");
	return r ? e.code : API_OK;
}

static void test_run_fields(void **state)
{
	struct kiln_exec_opts o;
	struct exec_spec s;

	(void)state;
	assert_int_equal(run("{\"language\":\"python\",\"code\":\"print(1)\"}", &s, NULL), API_OK);
	assert_int_equal(s.lang, AGENT_LANG_PYTHON);
	assert_int_equal(s.code_len, 8);
	assert_memory_equal(s.code, "print(1)", 8);
	assert_null(s.argv);
	assert_int_equal(s.output_cap, AGENT_OUTPUT_CAP_DEFAULT);
	exec_spec_opts(&s, &o);
	assert_string_equal(o.lang, "python");
	assert_int_equal(o.code_len, 8);
	exec_spec_free(&s);

	assert_int_equal(
		run("{\"language\":\"typescript\",\"code\":\"\",\"env\":{\"A\":\"b\",\"C\":null},"
		    "\"cwd\":\"/workspace\",\"user\":\"root\",\"timeout_ms\":250,\"stdin\":\"in\","
		    "\"output_cap\":10,\"output_encoding\":\"base64\"}",
		    &s, NULL),
		API_OK);
	assert_int_equal(s.lang, AGENT_LANG_TYPESCRIPT);
	assert_int_equal(s.code_len, 0);
	assert_string_equal(s.cwd, "/workspace");
	assert_int_equal(s.user, AGENT_USER_ROOT);
	assert_int_equal(s.timeout_ms, 250);
	assert_int_equal(s.stdin_len, 2);
	assert_int_equal(s.output_cap, 10);
	assert_true(s.base64_output);
	exec_spec_free(&s);

	for (int l = AGENT_LANG_NONE + 1; l < AGENT_LANG_COUNT; l++) {
		char body[128];

		snprintf(body, sizeof(body), "{\"language\":\"%s\",\"code\":\"x\"}",
			 agent_lang_name(l));
		assert_int_equal(run(body, &s, NULL), API_OK);
		assert_int_equal(s.lang, l);
		exec_spec_free(&s);
	}
}

static void test_run_rejects(void **state)
{
	static const struct {
		const char *body;
		enum api_code code;
		const char *in_message;
	} cases[] = {
		{ "[]", API_E_BAD_JSON, "JSON object" },
		{ "{}", API_E_MISSING_FIELD, "language" },
		{ "{\"code\":\"x\"}", API_E_MISSING_FIELD, "language" },
		{ "{\"language\":\"python\"}", API_E_MISSING_FIELD, "'code'" },
		{ "{\"language\":\"ruby\",\"code\":\"x\"}", API_E_BAD_FIELD, "'ruby'" },
		{ "{\"language\":\"Python\",\"code\":\"x\"}", API_E_BAD_FIELD, "\"python\"" },
		{ "{\"language\":\"\",\"code\":\"x\"}", API_E_BAD_FIELD, "language" },
		{ "{\"language\":3,\"code\":\"x\"}", API_E_BAD_FIELD, "language" },
		{ "{\"language\":\"python\",\"code\":[\"x\"]}", API_E_BAD_FIELD,
		  "'code' must be a string" },
		{ "{\"language\":\"python\",\"code\":null}", API_E_BAD_FIELD,
		  "'code' must be a string" },
		/* exec's fields that name the command are not run's. */
		{ "{\"language\":\"python\",\"code\":\"x\",\"argv\":[\"sh\"]}", API_E_UNKNOWN_FIELD,
		  "argv" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"shell\":true}", API_E_UNKNOWN_FIELD,
		  "shell" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"timout_ms\":1}", API_E_UNKNOWN_FIELD,
		  "timout_ms" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"timeout_ms\":-1}", API_E_BAD_FIELD,
		  "timeout_ms" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"timeout_ms\":604800001}",
		  API_E_BAD_FIELD, "timeout_ms" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"user\":\"nobody\"}", API_E_BAD_FIELD,
		  "user" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"cwd\":\"rel\"}", API_E_BAD_FIELD,
		  "cwd" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"env\":{\"A=B\":\"c\"}}",
		  API_E_BAD_FIELD, "env" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"output_cap\":16777217}",
		  API_E_BAD_FIELD, "output_cap" },
		{ "{\"language\":\"python\",\"code\":\"x\",\"stdin\":\"a\",\"stdin_base64\":\"YQ==\"}",
		  API_E_BAD_FIELD, "not both" },
	};
	struct exec_spec s;
	char msg[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum api_code c = run(cases[i].body, &s, msg);

		if (c != cases[i].code || !strstr(msg, cases[i].in_message))
			fail_msg("%s: got code %d '%s', want %d containing '%s'", cases[i].body, c,
				 msg, cases[i].code, cases[i].in_message);
		exec_spec_free(&s);
	}
}

/* Code and stdin share one agent message: 1 MiB together. */
static void test_run_size_caps(void **state)
{
	size_t half = AGENT_LEN_MAX / 2 + 1;
	char *big = malloc(AGENT_LEN_MAX + 2);
	struct api_err e = { 0 };
	struct exec_spec s;
	json_t *body;

	(void)state;
	assert_non_null(big);
	memset(big, 'a', AGENT_LEN_MAX + 1);
	big[AGENT_LEN_MAX + 1] = '\0';
	body = json_pack("{s:s,s:s}", "language", "bash", "code", big);
	assert_int_equal(run_spec_parse(body, false, &s, &e), -1);
	assert_int_equal(e.code, API_E_TOO_LARGE);
	assert_non_null(strstr(e.msg, "'code'"));
	exec_spec_free(&s);
	json_decref(body);

	big[half] = '\0';
	body = json_pack("{s:s,s:s,s:s}", "language", "bash", "code", big, "stdin", big);
	assert_int_equal(run_spec_parse(body, false, &s, &e), -1);
	assert_int_equal(e.code, API_E_TOO_LARGE);
	assert_non_null(strstr(e.msg, "together"));
	exec_spec_free(&s);
	json_decref(body);

	/* Exactly 1 MiB together passes. */
	big[AGENT_LEN_MAX - 1] = '\0';
	memset(big, 'a', AGENT_LEN_MAX - 1);
	body = json_pack("{s:s,s:s,s:s}", "language", "bash", "code", big, "stdin", "b");
	assert_int_equal(run_spec_parse(body, false, &s, &e), 0);
	assert_int_equal(s.code_len + s.stdin_len, AGENT_LEN_MAX);
	exec_spec_free(&s);
	json_decref(body);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_image_defaults), cmocka_unit_test(test_exec_fields),
		cmocka_unit_test(test_exec_rejects),        cmocka_unit_test(test_exec_argv_limits),
		cmocka_unit_test(test_exec_env_merge),      cmocka_unit_test(test_run_fields),
		cmocka_unit_test(test_run_rejects),         cmocka_unit_test(test_run_size_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
