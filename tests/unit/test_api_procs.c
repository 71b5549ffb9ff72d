/*
 * kilnd's background processes: the create/shell/signal/resize bodies,
 * the {proc} segment and query parameters are refused with the exact
 * code docs/api.md gives; the tty stream's resize escape is found in any
 * split and nothing else is taken out of the input; output events keep
 * seq order and UTF-8 characters whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/proc_render.h"
#include "api/kilnd/bodies/proc_spec.h"
#include "api/kilnd/bodies/tty_escape.h"

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", text, je.text);
	return j;
}

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

/* ---- the resize escape ---- */

struct tty_out {
	uint8_t data[4096];
	size_t len;
	int resizes;
	uint16_t rows[8], cols[8];
	size_t data_at[8]; /* data length when each resize happened: ordering */
	int bad;
};

/* Feed s in pieces of `step` bytes (0: all at once). */
static void tty_run(struct tty_esc *p, const char *s, size_t n, size_t step, struct tty_out *o)
{
	const uint8_t *in = (const uint8_t *)s;

	while (n) {
		size_t piece = step && step < n ? step : n;

		while (piece) {
			uint8_t out[256 + TTY_ESC_MAX];
			size_t olen = 0, k;
			enum tty_esc_ev ev;
			uint16_t r = 0, c = 0;

			assert_true(piece <= 256);
			k = tty_esc_feed(p, in, piece, out, &olen, &ev, &r, &c);
			assert_true(k >= 1 && k <= piece);
			memcpy(o->data + o->len, out, olen);
			o->len += olen;
			if (ev == TTY_ESC_RESIZE) {
				o->rows[o->resizes] = r;
				o->cols[o->resizes] = c;
				o->data_at[o->resizes++] = o->len;
			} else if (ev == TTY_ESC_BAD_SIZE) {
				o->bad++;
			}
			in += k;
			n -= k;
			piece -= k;
		}
	}
}

static void test_tty_escape_any_split(void **state)
{
	static const char s[] =
		"ls -l\r\x1b]kiln;resize;40;120\x07stty size\r\x1b]kiln;resize;7;65535\x07";
	size_t n = sizeof(s) - 1;

	(void)state;
	for (size_t step = 0; step <= n; step++) {
		struct tty_out o = { 0 };
		struct tty_esc p;

		tty_esc_init(&p);
		tty_run(&p, s, n, step, &o);
		assert_int_equal(tty_esc_pending(&p), 0);
		assert_int_equal(o.resizes, 2);
		assert_int_equal(o.rows[0], 40);
		assert_int_equal(o.cols[0], 120);
		assert_int_equal(o.data_at[0], 6);
		assert_int_equal(o.rows[1], 7);
		assert_int_equal(o.cols[1], 65535);
		assert_int_equal(o.len, strlen("ls -l\rstty size\r"));
		assert_memory_equal(o.data, "ls -l\rstty size\r", o.len);
	}
}

/* Everything that is not exactly the sequence reaches the process as it was. */
static void test_tty_escape_leaves_other_input(void **state)
{
	static const char *const inputs[] = {
		"\x1b[A\x1b[B",                   /* arrow keys */
		"\x1b]11;rgb:0000/0000/0000\x07", /* an OSC answer of a terminal */
		"\x1b]kiln;resize;40;\x07",       /* no COLS */
		"\x1b]kiln;resize;;80\x07",       /* no ROWS */
		"\x1b]kiln;resize;123456;80\x07", /* 6 digits */
		"\x1b]kiln;resize;40;80\x1b\\",   /* ST instead of BEL */
		"\x1b]kiln;resize;40,80\x07",
		"\x1b]kiln;size;40;80\x07",
		"\x1b]KILN;resize;40;80\x07",
		"\x1b\x1b\x1b",
		"plain text, no escape at all",
		"\x1b]kiln;resize;40;80x\x07",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		for (size_t step = 0; step <= 3; step++) {
			struct tty_out o = { 0 };
			struct tty_esc p;
			uint8_t rest[TTY_ESC_MAX];
			size_t rl = 0;

			tty_esc_init(&p);
			tty_run(&p, inputs[i], strlen(inputs[i]), step, &o);
			tty_esc_flush(&p, rest, &rl);
			memcpy(o.data + o.len, rest, rl);
			o.len += rl;
			if (o.resizes || o.bad)
				fail_msg("input %zu taken as a resize", i);
			assert_int_equal(o.len, strlen(inputs[i]));
			assert_memory_equal(o.data, inputs[i], o.len);
		}
	}
}

static void test_tty_escape_after_a_false_start(void **state)
{
	/* ESC ESC ] ...: the first ESC is input, the second begins the sequence. */
	static const char s[] = "\x1b\x1b]kiln;resize;3;4\x07"
				"\x1b]ki\x1b]kiln;resize;5;6\x07";

	(void)state;
	for (size_t step = 0; step <= 4; step++) {
		struct tty_out o = { 0 };
		struct tty_esc p;

		tty_esc_init(&p);
		tty_run(&p, s, sizeof(s) - 1, step, &o);
		assert_int_equal(o.resizes, 2);
		assert_int_equal(o.rows[0], 3);
		assert_int_equal(o.cols[0], 4);
		assert_int_equal(o.rows[1], 5);
		assert_int_equal(o.cols[1], 6);
		assert_int_equal(o.len, 5);
		assert_memory_equal(o.data, "\x1b\x1b]ki", 5);
	}
}

static void test_tty_escape_bad_sizes_are_dropped(void **state)
{
	static const char s[] = "a\x1b]kiln;resize;0;80\x07"
				"b\x1b]kiln;resize;24;65536\x07"
				"c\x1b]kiln;resize;99999;1\x07";
	struct tty_out o = { 0 };
	struct tty_esc p;

	(void)state;
	tty_esc_init(&p);
	tty_run(&p, s, sizeof(s) - 1, 0, &o);
	assert_int_equal(o.bad, 3);
	assert_int_equal(o.resizes, 0);
	assert_int_equal(o.len, 3);
	assert_memory_equal(o.data, "abc", 3);
}

static void test_tty_escape_held_prefix_flushes(void **state)
{
	struct tty_out o = { 0 };
	struct tty_esc p;
	uint8_t rest[TTY_ESC_MAX];
	size_t rl = 0;

	(void)state;
	tty_esc_init(&p);
	/* A lone Escape key press is held until the caller gives up on it. */
	tty_run(&p, "x\x1b", 2, 0, &o);
	assert_int_equal(o.len, 1);
	assert_int_equal(tty_esc_pending(&p), 1);
	tty_esc_flush(&p, rest, &rl);
	assert_int_equal(rl, 1);
	assert_int_equal(rest[0], 0x1b);
	assert_int_equal(tty_esc_pending(&p), 0);
	/* The longest prefix still fits. */
	tty_run(&p, "\x1b]kiln;resize;12345;12345", 25, 1, &o);
	assert_int_equal(tty_esc_pending(&p), 25);
	tty_run(&p, "\x07", 1, 0, &o);
	assert_int_equal(o.bad, 0);
	assert_int_equal(o.resizes, 1);
	assert_int_equal(o.rows[0], 12345);
}

/* ---- output events ---- */

static json_t *line_json(const char *line, size_t len, size_t *used)
{
	const char *nl = memchr(line, '\n', len);
	json_error_t je;
	json_t *j;

	assert_non_null(nl);
	j = json_loadb(line, (size_t)(nl - line), 0, &je);
	assert_non_null(j);
	*used = (size_t)(nl - line) + 1;
	return j;
}

static void test_output_events(void **state)
{
	struct proc_out_enc enc;
	const uint8_t euro[] = { 0xe2, 0x82, 0xac };
	size_t len, used;
	char *line;
	json_t *j;

	(void)state;
	proc_out_enc_init(&enc, false);
	/* "a" + the first byte of a euro sign: the cut byte waits. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 100, (const uint8_t *)"a\xe2", 2,
					   &line, &len),
			 0);
	j = line_json(line, len, &used);
	assert_int_equal(used, len);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "stdout");
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 100);
	assert_string_equal(json_string_value(json_object_get(j, "data")), "a");
	json_decref(j);
	free(line);
	/* The rest of it: one text event from seq 101. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 102, euro + 1, 2, &line, &len), 0);
	j = line_json(line, len, &used);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 101);
	assert_string_equal(json_string_value(json_object_get(j, "data")), "\xe2\x82\xac");
	json_decref(j);
	free(line);
	/* A cut character, then the other stream: the held byte goes first (base64), seq order kept. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 104, euro, 1, &line, &len), 0);
	assert_null(line);
	assert_int_equal(proc_event_output(&enc, AGENT_STDERR, 105, (const uint8_t *)"err", 3,
					   &line, &len),
			 0);
	j = line_json(line, len, &used);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 104);
	assert_string_equal(json_string_value(json_object_get(j, "data_base64")), "4g==");
	json_decref(j);
	j = line_json(line + used, len - used, &used);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "stderr");
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 105);
	assert_string_equal(json_string_value(json_object_get(j, "data")), "err");
	json_decref(j);
	free(line);
	/* Binary output is base64. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 108, (const uint8_t *)"\xff\x00", 2,
					   &line, &len),
			 0);
	j = line_json(line, len, &used);
	assert_string_equal(json_string_value(json_object_get(j, "data_base64")), "/wA=");
	json_decref(j);
	free(line);
	/* A held byte goes out before a gap. */
	assert_int_equal(proc_event_output(&enc, AGENT_STDOUT, 110, euro, 2, &line, &len), 0);
	assert_null(line);
	line = proc_event_gap(&enc, 112, 5000, &len);
	j = line_json(line, len, &used);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 110);
	assert_string_equal(json_string_value(json_object_get(j, "data_base64")), "4oI=");
	json_decref(j);
	j = line_json(line + used, len - used, &used);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "gap");
	assert_int_equal(json_integer_value(json_object_get(j, "bytes")), 5000);
	json_decref(j);
	free(line);
}

static void test_exit_and_view(void **state)
{
	struct kiln_exit_status ex = {
		.size = sizeof(ex), .id = 3, .pid = 64, .exit_code = -1, .signal = 15, .wall_us = 7
	};
	struct kiln_proc_info a = {
		.size = sizeof(a), .id = 3, .pid = 64, .pty = 1, .running = 1, .seq = 17
	};
	const char *argv[] = { "sleep", "100" };
	struct kiln_proc_entry p = { .size = sizeof(p),
				     .id = 3,
				     .pid = 64,
				     .argv = argv,
				     .argc = 2,
				     .running = 0,
				     .exit_code = -1,
				     .signal = 15,
				     .seq = 9,
				     .attached = 1 };
	struct proc_out_enc enc;
	size_t len, used;
	char *line, *s;
	json_t *j;

	(void)state;
	proc_out_enc_init(&enc, true);
	line = proc_event_exit(&enc, &ex, &len);
	j = line_json(line, len, &used);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "exit");
	assert_true(json_is_null(json_object_get(j, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(j, "signal")), 15);
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 3);
	json_decref(j);
	free(line);
	line = proc_event_attached(&a, &len);
	assert_string_equal(
		line,
		"{\"type\":\"attached\",\"id\":3,\"pid\":64,\"pty\":true,\"running\":true,\"seq\":17}\n");
	free(line);
	j = proc_render_view(&p);
	s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(
		s,
		"{\"id\":3,\"pid\":64,\"argv\":[\"sleep\",\"100\"],\"pty\":false,\"running\":false,"
		"\"exit_code\":null,\"signal\":15,\"timed_out\":false,\"output_bytes\":9,\"attached\":1}");
	free(s);
	json_decref(j);
	p.signal = 0;
	p.exit_code = 0;
	j = proc_render_view(&p);
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 0);
	json_decref(j);
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
		cmocka_unit_test(test_tty_escape_any_split),
		cmocka_unit_test(test_tty_escape_leaves_other_input),
		cmocka_unit_test(test_tty_escape_after_a_false_start),
		cmocka_unit_test(test_tty_escape_bad_sizes_are_dropped),
		cmocka_unit_test(test_tty_escape_held_prefix_flushes),
		cmocka_unit_test(test_output_events),
		cmocka_unit_test(test_exit_and_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
