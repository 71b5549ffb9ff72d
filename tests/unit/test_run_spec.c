/*
 * run (docs/api.md, POST .../run; docs/agent-protocol.md, 7.3.1): the
 * request body kilnd validates, the agent message it becomes, and the
 * result file the guest writes, which is hostile input: every shape that
 * is not what kiln's helpers write becomes one clear error, never a crash
 * nor a value.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/exec_render.h"
#include "api/kilnd/bodies/exec_spec.h"
#include "api/kilnd/bodies/run_result.h"
#include "api/proto/agent_proto.h"

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", text, je.text);
	return j;
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

/* The agent's run message: language and code_len within len. */
static void test_agent_run_message(void **state)
{
	static const struct {
		const char *line;
		enum agent_code code;
	} bad[] = {
		{ "{\"type\":\"run\",\"code_len\":0}", AGENT_E_MISSING_FIELD },
		{ "{\"type\":\"run\",\"language\":\"cobol\",\"code_len\":0}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\"}", AGENT_E_MISSING_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":5,\"len\":4}",
		  AGENT_E_BAD_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":-1}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":0,\"argv\":[\"sh\"]}",
		  AGENT_E_UNKNOWN_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":0,\"shell\":true}",
		  AGENT_E_UNKNOWN_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":0,\"user\":\"x\"}",
		  AGENT_E_BAD_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":0,\"len\":1048577}",
		  AGENT_E_TOO_LARGE },
	};
	struct agent_msg m;
	struct agent_err err;
	const char *ok = "{\"type\":\"run\",\"language\":\"javascript\",\"code_len\":3,\"len\":5,"
			 "\"env\":{\"A\":\"1\"},\"timeout_ms\":9,\"output_cap\":7}";

	(void)state;
	assert_int_equal(agent_msg_parse_line(ok, strlen(ok), AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.type, AGENT_T_RUN);
	assert_int_equal(m.u.proc.lang, AGENT_LANG_JAVASCRIPT);
	assert_int_equal(m.u.proc.code_len, 3);
	assert_int_equal(m.len, 5);
	assert_null(m.u.proc.argv);
	assert_int_equal(m.u.proc.envc, 1);
	assert_int_equal(m.u.proc.timeout_ms, 9);
	assert_int_equal(m.u.proc.output_cap, 7);
	agent_msg_free(&m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum agent_code c = agent_msg_parse_line(bad[i].line, strlen(bad[i].line),
							 AGENT_CTX_REQUEST, &m, &err);

		if (c != bad[i].code)
			fail_msg("%s: got %s (%s), want %s", bad[i].line, agent_code_name(c),
				 err.msg, agent_code_name(bad[i].code));
	}
	assert_null(agent_lang_name(AGENT_LANG_NONE));
	assert_null(agent_lang_name(AGENT_LANG_COUNT));
	assert_int_equal(agent_lang_by_name("bash"), AGENT_LANG_BASH);
	assert_int_equal(agent_lang_by_name("sh"), AGENT_LANG_NONE);
}

static void test_agent_result_line(void **state)
{
	struct agent_line l;

	(void)state;
	assert_int_equal(agent_line_result(&l, 12, 12), 0);
	assert_int_equal(l.len, strlen("{\"type\":\"result\",\"size\":12,\"len\":12}\n"));
	assert_memory_equal(l.data, "{\"type\":\"result\",\"size\":12,\"len\":12}\n", l.len);
	agent_line_free(&l);
}

/* Parse a result file; the two members as compact JSON. */
static void parse(const char *file, uint64_t size, char *value, char *error)
{
	json_t *v = NULL, *e = NULL;
	char *s;

	assert_int_equal(run_result_parse((const uint8_t *)file, strlen(file), size, &v, &e), 0);
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
	strcpy(value, s);
	free(s);
	s = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
	snprintf(error, 1024, "%s", s);
	free(s);
	json_decref(v);
	json_decref(e);
}

static void test_result_valid(void **state)
{
	char v[1024], e[1024];

	(void)state;
	parse("", 0, v, e);
	assert_string_equal(v, "null");
	assert_string_equal(e, "null");
	parse("{}", 2, v, e);
	assert_string_equal(v, "null");
	assert_string_equal(e, "null");
	parse("{\"value\":{\"a\":[1,2.5,\"x\"]}}", 26, v, e);
	assert_string_equal(v, "{\"a\":[1,2.5,\"x\"]}");
	assert_string_equal(e, "null");
	parse("{\"value\":false}", 15, v, e);
	assert_string_equal(v, "false");
	/* A value and then an exception: both are reported. */
	parse("{\"value\":1,\"error\":{\"type\":\"ValueError\",\"message\":\"bad\",\"traceback\":\"T\"}}",
	      0, v, e);
	assert_string_equal(v, "1");
	assert_string_equal(e, "{\"message\":\"bad\",\"traceback\":\"T\",\"type\":\"ValueError\"}");
	/* result.error: no traceback (null or absent). */
	parse("{\"error\":{\"type\":\"ResultError\",\"message\":\"m\",\"traceback\":null}}", 0, v,
	      e);
	assert_string_equal(e, "{\"message\":\"m\",\"traceback\":null,\"type\":\"ResultError\"}");
	parse("{\"error\":{\"type\":\"ResultError\",\"message\":\"m\"}}", 0, v, e);
	assert_string_equal(e, "{\"message\":\"m\",\"traceback\":null,\"type\":\"ResultError\"}");
}

static void test_result_hostile(void **state)
{
	static const struct {
		const char *file;
		const char *type;
		const char *in_message;
	} cases[] = {
		{ "not json", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":1", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":1}trailing", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":1,\"value\":2}", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":\"\\u0000\"}", "ResultInvalid", "not valid JSON" },
		{ "{\"value\":\"\xff\"}", "ResultInvalid", "not valid JSON" },
		{ "[1,2]", "ResultInvalid", "not a JSON object" },
		{ "42", "ResultInvalid", "not valid JSON" },
		{ "{\"valu\":1}", "ResultInvalid", "unknown member 'valu'" },
		{ "{\"error\":\"boom\"}", "ResultInvalid", "'error' is not an object" },
		{ "{\"error\":{\"type\":1,\"message\":\"m\"}}", "ResultInvalid", "'error.type'" },
		{ "{\"error\":{\"type\":\"T\"}}", "ResultInvalid", "'error.message'" },
		{ "{\"error\":{\"type\":\"T\",\"message\":\"m\",\"traceback\":5}}", "ResultInvalid",
		  "'error.traceback'" },
		{ "{\"error\":{\"type\":\"T\",\"message\":\"m\",\"extra\":1}}", "ResultInvalid",
		  "unknown member 'extra'" },
		/* A member name cut at 64 bytes in the middle of a character: the
		 * message stays valid UTF-8 (U+FFFD for the cut), not a 500. */
		{ "{\""
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "\xc3\xa9\":1}",
		  "ResultInvalid",
		  "unknown member 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xef\xbf\xbd'" },
		/* A bad error takes the value with it: the file is not the helpers'. */
		{ "{\"value\":7,\"error\":[]}", "ResultInvalid", "not an object" },
	};
	char v[1024], e[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		parse(cases[i].file, strlen(cases[i].file), v, e);
		if (strcmp(v, "null") || !strstr(e, cases[i].type) ||
		    !strstr(e, cases[i].in_message))
			fail_msg("%s: got value %s error %s, want %s with '%s'", cases[i].file, v,
				 e, cases[i].type, cases[i].in_message);
	}
	/* Deeper than jansson's limit: refused, not a stack overflow. */
	{
		size_t depth = 100000;
		char *deep = malloc(2 * depth + 16);

		assert_non_null(deep);
		strcpy(deep, "{\"value\":");
		memset(deep + 9, '[', depth);
		memset(deep + 9 + depth, ']', depth);
		strcpy(deep + 9 + 2 * depth, "}");
		parse(deep, strlen(deep), v, e);
		assert_string_equal(v, "null");
		assert_non_null(strstr(e, "ResultInvalid"));
		free(deep);
	}
}

static void test_result_too_large(void **state)
{
	char v[1024], e[1024];
	json_t *jv, *je;

	(void)state;
	/* The agent left out a file over its cap: only the size came. */
	parse("", (uint64_t)AGENT_RUN_RESULT_MAX + 1, v, e);
	assert_string_equal(v, "null");
	assert_non_null(strstr(e, "ResultTooLarge"));
	assert_non_null(strstr(e, "1048577 bytes"));
	/* A longer buffer than the cap is refused the same way. */
	assert_int_equal(run_result_parse((const uint8_t *)"x", (size_t)AGENT_RUN_RESULT_MAX + 1,
					  (uint64_t)AGENT_RUN_RESULT_MAX + 1, &jv, &je),
			 0);
	assert_true(json_is_null(jv));
	assert_string_equal(json_string_value(json_object_get(je, "type")), "ResultTooLarge");
	json_decref(jv);
	json_decref(je);
}

/* An overlong message or type is cut at a character boundary. */
static void test_result_cuts_text(void **state)
{
	size_t n = RUN_RESULT_TEXT_MAX + 100;
	char *file = malloc(n * 2 + 128), *p;
	json_t *v, *e;
	const char *msg;

	(void)state;
	assert_non_null(file);
	p = file + sprintf(file, "{\"error\":{\"type\":\"T\",\"message\":\"");
	for (size_t i = 0; i < n / 2; i++) {
		memcpy(p, "\xc3\xa9", 2); /* é: two bytes, so the cut may fall inside one */
		p += 2;
	}
	strcpy(p, "x\"}}");
	assert_int_equal(run_result_parse((const uint8_t *)file, strlen(file), strlen(file), &v,
					  &e),
			 0);
	msg = json_string_value(json_object_get(e, "message"));
	assert_non_null(msg);
	assert_true(strlen(msg) <= RUN_RESULT_TEXT_MAX);
	assert_true(strlen(msg) >= RUN_RESULT_TEXT_MAX - 1);
	assert_int_equal(strlen(msg) % 2, 0);
	json_decref(v);
	json_decref(e);
	free(file);
}

/* The response members and the stream's last event. */
static void test_render(void **state)
{
	struct kiln_run_result res = { .size = sizeof(res) };
	const char *file = "{\"value\":[1]}";
	json_t *o = json_object();
	size_t len;
	char *line;

	(void)state;
	res.data = (char *)file;
	res.len = res.file_size = strlen(file);
	assert_int_equal(exec_render_run_result(o, &res), 0);
	assert_true(json_is_array(json_object_get(o, "result")));
	assert_true(json_is_null(json_object_get(o, "error")));
	json_decref(o);
	line = exec_event_result(&res, &len);
	assert_non_null(line);
	assert_string_equal(line, "{\"type\":\"result\",\"result\":[1],\"error\":null}\n");
	assert_int_equal(len, strlen(line));
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_fields),        cmocka_unit_test(test_run_rejects),
		cmocka_unit_test(test_run_size_caps),     cmocka_unit_test(test_agent_run_message),
		cmocka_unit_test(test_agent_result_line), cmocka_unit_test(test_result_valid),
		cmocka_unit_test(test_result_hostile),    cmocka_unit_test(test_result_too_large),
		cmocka_unit_test(test_result_cuts_text),  cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
