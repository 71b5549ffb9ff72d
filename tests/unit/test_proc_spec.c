/*
 * Unit tests of api/kilnd/bodies/proc_spec.c: the requests of kilnd's
 * background processes (docs/api.md, "Processes"): the create and shell
 * bodies, the signal and resize bodies, the {proc} path segment and the
 * query parameters of output, tty, stdin and wait, validated into what the
 * agent client takes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/proc_spec.h"
#include "tests/unit/json_load.h"

static enum api_code create(const char *text, struct proc_spec *s, char *msg)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = proc_spec_parse(j, s, &e);

	json_decref(j);
	if (msg)
		strcpy(msg, e.msg);
	return r ? e.code : API_OK;
}

static void test_create_fields(void **state)
{
	struct kiln_exec_opts o;
	struct proc_spec s;

	(void)state;
	assert_int_equal(create("{\"argv\":[\"sh\"],\"confine\":true}", &s, NULL), API_OK);
	proc_spec_opts(&s, &o);
	assert_true(o.flags & KILN_AGENT_CONFINE);
	assert_null(o.cwd);
	proc_spec_free(&s);
	assert_int_equal(create("{\"argv\":[\"sleep\",\"9\"]}", &s, NULL), API_OK);
	assert_false(s.pty);
	assert_int_equal(s.rows, 0);
	assert_int_equal(s.ring_bytes, 0);
	assert_string_equal(s.x.argv[1], "9");
	proc_spec_free(&s);

	assert_int_equal(
		create("{\"argv\":[\"sh\"],\"pty\":true,\"rows\":40,\"cols\":120,\"ring_bytes\":4096,"
		       "\"user\":\"root\",\"cwd\":\"/tmp\",\"env\":{\"A\":\"1\"},\"timeout_ms\":5000,"
		       "\"stdin\":\"hi\\n\"}",
		       &s, NULL),
		API_OK);
	assert_int_equal(exec_env_merge(&s.x, NULL, NULL), 0);
	proc_spec_opts(&s, &o);
	assert_int_equal(o.flags, KILN_AGENT_PTY | KILN_AGENT_AS_ROOT);
	assert_int_equal(o.rows, 40);
	assert_int_equal(o.cols, 120);
	assert_int_equal(o.ring_bytes, 4096);
	assert_int_equal(o.timeout_ms, 5000);
	assert_string_equal(o.cwd, "/tmp");
	assert_string_equal(o.env[0], "A=1");
	assert_null(o.env[1]);
	/* stdin is sent after the spawn, not as part of it */
	assert_null(o.stdin_data);
	assert_int_equal(s.x.stdin_len, 3);
	assert_memory_equal(s.x.stdin_data, "hi\n", 3);
	proc_spec_free(&s);
}

static void test_create_rejects(void **state)
{
	static const struct {
		const char *body;
		enum api_code code;
		const char *msg;
	} cases[] = {
		{ "{}", API_E_MISSING_FIELD,
		  "process: 'argv' is required (argv[0] is the program)" },
		{ "{\"argv\":[\"x\"],\"output_cap\":5}", API_E_UNKNOWN_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"output_encoding\":\"base64\"}", API_E_UNKNOWN_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"tty\":true}", API_E_UNKNOWN_FIELD, NULL },
		{ "{\"argv\":[]}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"pty\":1}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"rows\":30}", API_E_BAD_FIELD,
		  "process: 'rows' and 'cols' size a terminal; they need \"pty\": true" },
		{ "{\"argv\":[\"x\"],\"pty\":false,\"cols\":30}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"pty\":true,\"rows\":0}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"pty\":true,\"cols\":65536}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"pty\":true,\"rows\":24.0}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"ring_bytes\":4095}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"ring_bytes\":4194305}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"cwd\":\"rel\"}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"user\":\"nobody\"}", API_E_BAD_FIELD, NULL },
		{ "{\"argv\":[\"x\"],\"stdin\":\"a\",\"stdin_base64\":\"YQ==\"}", API_E_BAD_FIELD,
		  NULL },
		{ "{\"argv\":[\"x\"],\"timeout_ms\":604800001}", API_E_BAD_FIELD, NULL },
		{ "[1]", API_E_BAD_JSON, NULL },
		{ "{\"argv\":[\"x\"],\"confine\":\"yes\"}", API_E_BAD_FIELD,
		  "process: 'confine' must be true or false" },
		{ "{\"argv\":[\"x\"],\"confine\":true,\"cwd\":\"/home/user\"}", API_E_BAD_FIELD,
		  NULL },
	};
	char msg[ERR_MSG_MAX];
	struct proc_spec s;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum api_code c = create(cases[i].body, &s, msg);

		if (c != cases[i].code)
			fail_msg("%s: got %s (%s), want %s", cases[i].body, api_code_name(c), msg,
				 api_code_name(cases[i].code));
		if (cases[i].msg)
			assert_string_equal(msg, cases[i].msg);
		proc_spec_free(&s);
	}
}

static void test_shell(void **state)
{
	struct api_err e;
	struct proc_spec s;
	json_t *j;

	(void)state;
	assert_int_equal(proc_shell_parse(NULL, &s, &e), 0);
	assert_true(s.pty);
	assert_int_equal(s.x.argc, 1);
	assert_string_equal(s.x.argv[0], "sh");
	proc_spec_free(&s);

	j = J("{\"rows\":50,\"cols\":200,\"user\":\"root\"}");
	assert_int_equal(proc_shell_parse(j, &s, &e), 0);
	assert_int_equal(s.rows, 50);
	assert_int_equal(s.x.user, AGENT_USER_ROOT);
	proc_spec_free(&s);
	json_decref(j);

	/* A confined terminal: confine reaches the spawn options. */
	j = J("{\"confine\":true,\"cwd\":\"/workspace\"}");
	assert_int_equal(proc_shell_parse(j, &s, &e), 0);
	{
		struct kiln_exec_opts o;

		proc_spec_opts(&s, &o);
		assert_int_equal(o.flags & (KILN_AGENT_CONFINE | KILN_AGENT_PTY),
				 KILN_AGENT_CONFINE | KILN_AGENT_PTY);
	}
	proc_spec_free(&s);
	json_decref(j);
	j = J("{\"confine\":true,\"cwd\":\"/root\"}");
	assert_int_equal(proc_shell_parse(j, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	proc_spec_free(&s);
	json_decref(j);

	j = J("{\"argv\":[\"bash\"]}");
	assert_int_equal(proc_shell_parse(j, &s, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	proc_spec_free(&s);
	json_decref(j);
	j = J("{\"pty\":false}");
	assert_int_equal(proc_shell_parse(j, &s, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	proc_spec_free(&s);
	json_decref(j);
	j = J("{\"rows\":0}");
	assert_int_equal(proc_shell_parse(j, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	proc_spec_free(&s);
	json_decref(j);
}

static void test_proc_id(void **state)
{
	static const char *const bad[] = { "0",   "01",  "-1",         "+1",
					   "1.0", "abc", "4294967296", "99999999999999999999",
					   " 1",  "1 " };
	struct api_err e;
	uint32_t id;

	(void)state;
	assert_int_equal(proc_id_parse("7", &id, &e), 0);
	assert_int_equal(id, 7);
	assert_int_equal(proc_id_parse("4294967295", &id, &e), 0);
	assert_int_equal(id, UINT32_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.code = API_OK;
		if (proc_id_parse(bad[i], &id, &e) == 0)
			fail_msg("'%s' accepted as a process id", bad[i]);
		assert_int_equal(e.code, API_E_PROCESS_NOT_FOUND);
		assert_int_equal(api_code_status(e.code), 404);
	}
}

static void test_agent_not_found_is_process_not_found(void **state)
{
	struct api_err e;

	(void)state;
	proc_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "not_found", "attach: no process 9",
				 "output");
	assert_int_equal(e.code, API_E_PROCESS_NOT_FOUND);
	assert_string_equal(e.msg, "attach: no process 9");
	assert_string_equal(api_code_name(e.code), "process_not_found");
	proc_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "invalid_state", "m", "stdin");
	assert_int_equal(e.code, API_E_INVALID_STATE);
	assert_int_equal(api_code_status(e.code), 409);
	proc_err_from_agent_fail(&e, KILN_AGENT_FAIL_UNREACHABLE, "unreachable", "m", "stdin");
	assert_int_equal(e.code, API_E_AGENT_UNAVAILABLE);
	/* Another not_found than the agent's: a file, not the process. */
	proc_err_from_agent_fail(&e, KILN_AGENT_FAIL_HOST, "not_found", "m", "stdin");
	assert_int_equal(e.code, API_E_INTERNAL);
}

static enum api_code signal_of(const char *text, int *signo, bool *group)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = proc_signal_parse(j, signo, group, &e);

	json_decref(j);
	return r ? e.code : API_OK;
}

static void test_signal_body(void **state)
{
	bool group = true;
	int signo = 0;

	(void)state;
	assert_int_equal(signal_of("{\"signal\":\"TERM\"}", &signo, &group), API_OK);
	assert_int_equal(signo, 15);
	assert_false(group);
	assert_int_equal(signal_of("{\"signal\":\"SIGKILL\",\"group\":true}", &signo, &group),
			 API_OK);
	assert_int_equal(signo, 9);
	assert_true(group);
	assert_int_equal(signal_of("{\"signal\":10}", &signo, &group), API_OK);
	assert_int_equal(signo, 10);
	assert_int_equal(signal_of("{}", &signo, &group), API_E_MISSING_FIELD);
	assert_int_equal(signal_of("{\"signal\":0}", &signo, &group), API_E_BAD_FIELD);
	assert_int_equal(signal_of("{\"signal\":65}", &signo, &group), API_E_BAD_FIELD);
	assert_int_equal(signal_of("{\"signal\":\"NOPE\"}", &signo, &group), API_E_BAD_FIELD);
	assert_int_equal(signal_of("{\"signal\":\"TERM\",\"group\":\"yes\"}", &signo, &group),
			 API_E_BAD_FIELD);
	assert_int_equal(signal_of("{\"signal\":\"TERM\",\"pid\":1}", &signo, &group),
			 API_E_UNKNOWN_FIELD);
}

static enum api_code resize_of(const char *text, uint16_t *r, uint16_t *c)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int rc = proc_resize_parse(j, r, c, &e);

	json_decref(j);
	return rc ? e.code : API_OK;
}

static void test_resize_body(void **state)
{
	uint16_t r, c;

	(void)state;
	assert_int_equal(resize_of("{\"rows\":50,\"cols\":200}", &r, &c), API_OK);
	assert_int_equal(r, 50);
	assert_int_equal(c, 200);
	assert_int_equal(resize_of("{\"rows\":65535,\"cols\":1}", &r, &c), API_OK);
	assert_int_equal(resize_of("{\"rows\":50}", &r, &c), API_E_MISSING_FIELD);
	assert_int_equal(resize_of("{\"cols\":50}", &r, &c), API_E_MISSING_FIELD);
	assert_int_equal(resize_of("{\"rows\":0,\"cols\":5}", &r, &c), API_E_BAD_FIELD);
	assert_int_equal(resize_of("{\"rows\":5,\"cols\":65536}", &r, &c), API_E_BAD_FIELD);
	assert_int_equal(resize_of("{\"rows\":\"5\",\"cols\":5}", &r, &c), API_E_BAD_FIELD);
	assert_int_equal(resize_of("{\"rows\":5,\"cols\":5,\"x\":1}", &r, &c), API_E_UNKNOWN_FIELD);
}

static void test_queries(void **state)
{
	struct query_kv kv[3] = { { 0 } };
	struct proc_from f;
	struct api_err e;
	uint32_t t;
	bool b;

	(void)state;
	assert_int_equal(proc_query_output(kv, 0, &f, &b, &e), 0);
	assert_int_equal(f.from, KILN_ATTACH_OLDEST);
	assert_false(b);
	kv[0] = (struct query_kv){ "from", "now" };
	kv[1] = (struct query_kv){ "encoding", "base64" };
	assert_int_equal(proc_query_output(kv, 2, &f, &b, &e), 0);
	assert_int_equal(f.from, KILN_ATTACH_NOW);
	assert_true(b);
	kv[0] = (struct query_kv){ "from", "12345" };
	assert_int_equal(proc_query_output(kv, 1, &f, &b, &e), 0);
	assert_int_equal(f.from, KILN_ATTACH_SEQ);
	assert_int_equal(f.seq, 12345);
	kv[0] = (struct query_kv){ "from", "0" };
	assert_int_equal(proc_query_tty(kv, 1, &f, &e), 0);
	assert_int_equal(f.from, KILN_ATTACH_SEQ);
	assert_int_equal(f.seq, 0);
	{
		static const char *const bad[] = { "-1",   "x",  "", "9223372036854775808",
						   "now1", "1e3" };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			kv[0] = (struct query_kv){ "from", bad[i] };
			assert_int_equal(proc_query_output(kv, 1, &f, &b, &e), -1);
			assert_int_equal(e.code, API_E_BAD_FIELD);
		}
	}
	kv[0] = (struct query_kv){ "from", NULL };
	assert_int_equal(proc_query_tty(kv, 1, &f, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[0] = (struct query_kv){ "encoding", "hex" };
	assert_int_equal(proc_query_output(kv, 1, &f, &b, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[0] = (struct query_kv){ "encoding", "base64" };
	assert_int_equal(proc_query_tty(kv, 1, &f, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	kv[0] = (struct query_kv){ "from", "1" };
	kv[1] = (struct query_kv){ "from", "2" };
	assert_int_equal(proc_query_output(kv, 2, &f, &b, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);

	assert_int_equal(proc_query_stdin(kv, 0, &b, &e), 0);
	assert_false(b);
	kv[0] = (struct query_kv){ "close", "1" };
	assert_int_equal(proc_query_stdin(kv, 1, &b, &e), 0);
	assert_true(b);
	kv[0] = (struct query_kv){ "close", "false" };
	assert_int_equal(proc_query_stdin(kv, 1, &b, &e), 0);
	assert_false(b);
	kv[0] = (struct query_kv){ "close", "yes" };
	assert_int_equal(proc_query_stdin(kv, 1, &b, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[0] = (struct query_kv){ "eof", "1" };
	assert_int_equal(proc_query_stdin(kv, 1, &b, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);

	assert_int_equal(proc_query_wait(kv, 0, &t, &e), 0);
	assert_int_equal(t, 0);
	kv[0] = (struct query_kv){ "timeout_ms", "604800000" };
	assert_int_equal(proc_query_wait(kv, 1, &t, &e), 0);
	assert_int_equal(t, 604800000u);
	kv[0] = (struct query_kv){ "timeout_ms", "604800001" };
	assert_int_equal(proc_query_wait(kv, 1, &t, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[0] = (struct query_kv){ "timeout_ms", "-5" };
	assert_int_equal(proc_query_wait(kv, 1, &t, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_fields),
		cmocka_unit_test(test_create_rejects),
		cmocka_unit_test(test_shell),
		cmocka_unit_test(test_proc_id),
		cmocka_unit_test(test_agent_not_found_is_process_not_found),
		cmocka_unit_test(test_signal_body),
		cmocka_unit_test(test_resize_body),
		cmocka_unit_test(test_queries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
