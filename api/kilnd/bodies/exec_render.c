/* Exec results and events as JSON; see exec_render.h. */
#include "api/kilnd/bodies/exec_render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/run_result.h"
#include "lib/base/base64.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/base/utf8.h"

/* bytes -> a JSON string value, as text or base64. */
static json_t *bytes_value(const uint8_t *d, size_t n, bool base64, bool *is_b64)
{
	char *b;
	json_t *v;

	*is_b64 = base64 || !utf8_valid(d, n);
	if (!*is_b64)
		return json_stringn_nocheck(d ? (const char *)d : "", n);
	b = malloc(base64_encoded_size(n));
	if (!b)
		return NULL;
	base64_encode(d, n, b);
	v = json_string_nocheck(b);
	free(b);
	return v;
}

/* exit_code, signal, timed_out, byte counts and times, shared by both forms. */
int exit_render_status(json_t *o, const struct kiln_exit_status *ex)
{
	int r = 0;

	r |= json_object_set_new(o, "exit_code",
				 ex->signal ? json_null() : json_integer(ex->exit_code));
	r |= json_object_set_new(o, "signal", ex->signal ? json_integer(ex->signal) : json_null());
	r |= json_object_set_new(o, "timed_out", json_boolean(ex->timed_out));
	r |= json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)ex->stdout_bytes));
	r |= json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)ex->stderr_bytes));
	return r ? -ENOMEM : 0;
}

int exit_render_times(json_t *o, const struct kiln_exit_status *ex)
{
	int r = 0;

	r |= json_object_set_new(o, "wall_us", json_integer((json_int_t)ex->wall_us));
	r |= json_object_set_new(o, "user_us", json_integer((json_int_t)ex->user_us));
	r |= json_object_set_new(o, "sys_us", json_integer((json_int_t)ex->sys_us));
	return r ? -ENOMEM : 0;
}

static int put_exit(json_t *o, const struct kiln_exit_status *ex, bool truncation,
		    double duration_ms)
{
	int r = 0;

	if (exit_render_status(o, ex))
		return -ENOMEM;
	if (truncation) {
		r |= json_object_set_new(o, "stdout_truncated", json_boolean(ex->stdout_truncated));
		r |= json_object_set_new(o, "stderr_truncated", json_boolean(ex->stderr_truncated));
	}
	r |= json_object_set_new(o, "pid", json_integer(ex->pid));
	r |= json_object_set_new(o, "duration_ms", json_real(duration_ms));
	return r || exit_render_times(o, ex) ? -ENOMEM : 0;
}

static int put_stream(json_t *o, const char *name, const uint8_t *d, size_t n, bool base64)
{
	char key[32];
	bool b64;
	json_t *v = bytes_value(d, n, base64, &b64);

	if (!v || json_object_set_new(o, name, v))
		return -ENOMEM;
	snprintf(key, sizeof(key), "%s_encoding", name);
	return json_object_set_new(o, key, json_string(b64 ? "base64" : "utf-8")) ? -ENOMEM : 0;
}

void exec_result_init(struct exec_result *r)
{
	memset(r, 0, sizeof(*r));
	r->st.size = sizeof(r->st);
	r->run.size = sizeof(r->run);
}

void exec_result_free(struct exec_result *r)
{
	kiln_free(r->out);
	kiln_free(r->err);
	kiln_free(r->run.data);
	exec_result_init(r);
}

json_t *exec_render_result(const struct exec_result *res, bool base64, double duration_ms)
{
	json_t *o = json_object();

	if (!o || put_exit(o, &res->st, true, duration_ms) ||
	    put_stream(o, "stdout", (const uint8_t *)res->out, res->out_len, base64) ||
	    put_stream(o, "stderr", (const uint8_t *)res->err, res->err_len, base64)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void exec_stream_enc_init(struct exec_stream_enc *enc, bool base64)
{
	memset(enc, 0, sizeof(*enc));
	enc->base64 = base64;
}

static char *dump_line(json_t *o, size_t *len);

/* One output event line for d[0..n), as text or base64. */
static int output_line(enum agent_stream st, const uint8_t *d, size_t n, bool base64, char **line,
		       size_t *len)
{
	bool b64;
	json_t *v = bytes_value(d, n, base64, &b64), *o;

	if (!v)
		return -ENOMEM;
	o = json_pack("{s:s,s:o}", "type", st == AGENT_STDERR ? "stderr" : "stdout",
		      b64 ? "data_base64" : "data", v);
	*line = dump_line(o, len);
	return *line ? 0 : -ENOMEM;
}

int exec_event_output(struct exec_stream_enc *enc, enum agent_stream st, const uint8_t *d, size_t n,
		      char **line, size_t *len)
{
	int s = st == AGENT_STDERR;
	size_t h = enc->hold_len[s], total = h + n, keep;
	uint8_t *buf;
	int r;

	*line = NULL;
	*len = 0;
	if (enc->base64)
		return n ? output_line(st, d, n, true, line, len) : 0;
	buf = malloc(total ? total : 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, enc->hold[s], h);
	if (n)
		memcpy(buf + h, d, n);
	keep = utf8_complete_prefix(buf, total);
	/* Hold the tail back only when the rest is text: base64 needs no
	 * character boundaries. */
	if (!utf8_valid(buf, keep))
		keep = total;
	enc->hold_len[s] = total - keep;
	memcpy(enc->hold[s], buf + keep, total - keep);
	r = keep ? output_line(st, buf, keep, false, line, len) : 0;
	free(buf);
	return r;
}

int exec_event_flush(struct exec_stream_enc *enc, enum agent_stream st, char **line, size_t *len)
{
	int s = st == AGENT_STDERR;
	size_t h = enc->hold_len[s];

	*line = NULL;
	*len = 0;
	if (!h)
		return 0;
	enc->hold_len[s] = 0;
	return output_line(st, enc->hold[s], h, enc->base64, line, len);
}

/* Compact JSON plus '\n'; consumes o (NULL is fine: out of memory). */
static char *dump_line(json_t *o, size_t *len)
{
	char *s = o ? json_text(o, JSON_COMPACT) : NULL, *l;

	json_decref(o);
	if (!s)
		return NULL;
	*len = strlen(s);
	l = realloc(s, *len + 2);
	if (!l) {
		free(s);
		return NULL;
	}
	l[(*len)++] = '\n';
	l[*len] = '\0';
	return l;
}

char *exec_event_exit(const struct kiln_exit_status *ex, double duration_ms, size_t *len)
{
	json_t *o = json_pack("{s:s}", "type", "exit");

	if (!o || put_exit(o, ex, true, duration_ms)) {
		json_decref(o);
		return NULL;
	}
	return dump_line(o, len);
}

int exec_render_run_result(json_t *o, const struct kiln_run_result *res)
{
	json_t *value, *error;

	if (run_result_parse((const uint8_t *)res->data, res->len, res->file_size, &value, &error))
		return -ENOMEM;
	if (json_object_set_new(o, "result", value)) {
		json_decref(error);
		return -ENOMEM;
	}
	return json_object_set_new(o, "error", error) ? -ENOMEM : 0;
}

char *exec_event_result(const struct kiln_run_result *res, size_t *len)
{
	json_t *o = json_pack("{s:s}", "type", "result");

	if (!o || exec_render_run_result(o, res)) {
		json_decref(o);
		return NULL;
	}
	return dump_line(o, len);
}

char *exec_event_error(const struct api_err *e, size_t *len)
{
	char *body = api_error_body(e);
	json_t *err, *o;

	if (!body)
		return NULL;
	err = json_strict_loads(body, NULL);
	free(body);
	if (!err)
		return NULL;
	o = json_object();
	if (!o || json_object_set_new(o, "type", json_string("error")) ||
	    json_object_update(o, err)) {
		json_decref(err);
		json_decref(o);
		return NULL;
	}
	json_decref(err);
	return dump_line(o, len);
}

char *exec_event_json(json_t *o, size_t *len)
{
	return dump_line(o, len);
}
