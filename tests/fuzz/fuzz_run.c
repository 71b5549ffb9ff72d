/*
 * fuzz_run: what run (docs/api.md, POST .../run) parses: kilnd's request
 * body (bodies/exec_spec.c, run_spec_parse), the result file the
 * guest writes (bodies/run_result.c: guest bytes, anything at
 * all), and the agent's run message (api/proto/agent_proto.c).
 *
 * Input: selector byte (0 body, 1 result file, 2 agent header line), then
 * for 0 the body as the HTTP server decodes it (json_loadb with
 * JSON_REJECT_DUPLICATES; what jansson refuses is skipped); for 1 a
 * size-slack byte (the file's size is the bytes given plus that, as when
 * the agent leaves a file over its cap out) and the file's bytes; for 2
 * the header line.
 * Invariants: a refused body is a client error with a message; an
 * accepted one has a language, code and stdin within 1 MiB together and
 * no argv. A result file always gives a value and an error (JSON null or
 * an object with string type and message and a string or null
 * traceback), never a value beside an invalid or too-large file, and
 * renders as the stream's result event. An accepted run message has a
 * language and code_len within len.
 */
#include "api/kilnd/bodies/exec_render.h"
#include "api/kilnd/bodies/exec_spec.h"
#include "api/kilnd/bodies/run_result.h"
#include "api/proto/agent_proto.h"
#include "fuzz.h"

static void fuzz_body(const uint8_t *d, size_t n)
{
	json_t *body = json_loadb((const char *)d, n, JSON_REJECT_DUPLICATES, NULL);
	struct api_err e = { 0 };
	struct exec_spec s;
	int r;

	if (!body)
		return;
	r = run_spec_parse(body, n & 1, &s, &e);
	if (r) {
		FUZZ_ASSERT(r == -1);
		FUZZ_ASSERT(e.code >= API_E_BAD_JSON && e.code <= API_E_TOO_LARGE);
		FUZZ_ASSERT(e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
	} else {
		FUZZ_ASSERT(agent_lang_name(s.lang) && s.code && !s.argv);
		FUZZ_ASSERT(s.code_len + s.stdin_len <= AGENT_LEN_MAX);
		FUZZ_ASSERT(!s.cwd || s.cwd[0] == '/');
	}
	exec_spec_free(&s);
	json_decref(body);
}

static void fuzz_result(const uint8_t *d, size_t n, uint64_t slack)
{
	struct kiln_run_result res = { .size = sizeof(res) };
	json_t *v = NULL, *e = NULL, *t;
	size_t len;
	char *line;

	FUZZ_ASSERT(run_result_parse(d, n, n + slack, &v, &e) == 0);
	FUZZ_ASSERT(v && e);
	if (!json_is_null(e)) {
		FUZZ_ASSERT(json_is_object(e) && json_object_size(e) == 3);
		t = json_object_get(e, "type");
		FUZZ_ASSERT(json_is_string(t) && json_string_length(t) <= RUN_RESULT_TYPE_MAX);
		FUZZ_ASSERT(json_is_string(json_object_get(e, "message")) &&
			    json_string_length(json_object_get(e, "message")) <=
				    RUN_RESULT_TEXT_MAX);
		t = json_object_get(e, "traceback");
		FUZZ_ASSERT(json_is_null(t) ||
			    (json_is_string(t) && json_string_length(t) <= RUN_RESULT_TEXT_MAX));
	}
	if (slack)
		FUZZ_ASSERT(
			json_is_null(v) &&
			!strcmp(json_string_value(json_object_get(e, "type")), "ResultTooLarge"));
	json_decref(v);
	json_decref(e);
	res.data = (char *)d;
	res.len = n;
	res.file_size = n + slack;
	line = exec_event_result(&res, &len);
	FUZZ_ASSERT(line && len && line[len - 1] == '\n' && !memchr(line, '\n', len - 1));
	free(line);
}

static void fuzz_message(const uint8_t *d, size_t n)
{
	struct agent_msg m;
	struct agent_err err;

	if (agent_msg_parse_line((const char *)d, n, AGENT_CTX_REQUEST, &m, &err) != AGENT_OK)
		return;
	if (m.type == AGENT_T_RUN) {
		FUZZ_ASSERT(agent_lang_name(m.u.proc.lang) && m.u.proc.code_len <= m.len);
		FUZZ_ASSERT(!m.u.proc.argv && m.len <= AGENT_LEN_MAX);
	}
	agent_msg_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_body(data + 1, size - 1);
		break;
	case 1:
		if (size >= 2)
			fuzz_result(data + 2, size - 2, data[1] > 250 ? data[1] : 0);
		break;
	default:
		fuzz_message(data + 1, size - 1);
		break;
	}
	return 0;
}
