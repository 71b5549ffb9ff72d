/* Background process requests; see proc_spec.h. */
#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/bodies/proc_spec.h"

#include <errno.h>
#include <string.h>

#include "api/kilnd/core/json_fields.h"
#include "lib/base/num_parse.h"

static const char what[] = "process";

int proc_spec_parse(json_t *body, struct proc_spec *s, struct api_err *e)
{
	static const char *const fields[] = { "argv",    "shell",      "env",   "cwd",
					      "user",    "timeout_ms", "stdin", "stdin_base64",
					      "pty",     "rows",       "cols",  "ring_bytes",
					      "confine", NULL };
	static const char *const own[] = { "pty", "rows", "cols", "ring_bytes" };
	json_t *rest;
	uint64_t n;
	int r;

	memset(s, 0, sizeof(*s));
	if (!json_is_object(body)) {
		api_err_set(e, API_E_BAD_JSON, "%s: the body must be a JSON object", what);
		return -1;
	}
	if (json_fields_only(body, fields, what, e))
		return -1;
	/* exec's fields through exec's parser; a shallow copy shares the
	 * strings, and the spec keeps the copy alive. */
	rest = json_copy(body);
	if (!rest) {
		api_err_set(e, API_E_INTERNAL, "%s: out of memory", what);
		return -1;
	}
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		json_object_del(rest, own[i]);
	r = exec_spec_parse_as(rest, false, what, &s->x, e);
	json_decref(rest);
	if (r)
		return -1;
	if (json_fields_bool(body, "pty", false, &s->pty, what, e))
		return -1;
	if (json_fields_uint(body, "rows", false, 1, UINT16_MAX, 0, &n, what, e))
		return -1;
	s->rows = (uint16_t)n;
	if (json_fields_uint(body, "cols", false, 1, UINT16_MAX, 0, &n, what, e))
		return -1;
	s->cols = (uint16_t)n;
	if ((s->rows || s->cols) && !s->pty) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: 'rows' and 'cols' size a terminal; they need \"pty\": true", what);
		return -1;
	}
	if (json_fields_uint(body, "ring_bytes", false, AGENT_RING_MIN, AGENT_RING_MAX, 0, &n, what,
			     e))
		return -1;
	s->ring_bytes = (uint32_t)n;
	return 0;
}

int proc_shell_parse(const json_t *body, struct proc_spec *s, struct api_err *e)
{
	static const char *const fields[] = { "rows",       "cols",       "user",    "cwd", "env",
					      "timeout_ms", "ring_bytes", "confine", NULL };
	json_t *full;
	int r;

	memset(s, 0, sizeof(*s));
	if (body && !json_is_object(body)) {
		api_err_set(e, API_E_BAD_JSON, "shell: the body must be a JSON object");
		return -1;
	}
	if (body && json_fields_only(body, fields, "shell", e))
		return -1;
	full = body ? json_copy((json_t *)body) : json_object();
	if (!full || json_object_set_new(full, "argv", json_pack("[s]", "sh")) ||
	    json_object_set_new(full, "pty", json_true())) {
		json_decref(full);
		api_err_set(e, API_E_INTERNAL, "shell: out of memory");
		return -1;
	}
	r = proc_spec_parse(full, s, e);
	json_decref(full);
	return r;
}

void proc_spec_opts(const struct proc_spec *s, struct kiln_exec_opts *o)
{
	exec_spec_opts(&s->x, o);
	o->stdin_data = NULL;
	o->stdin_len = 0;
	o->output_cap = 0;
	o->flags &= ~(unsigned)KILN_AGENT_DISCARD;
	if (s->pty)
		o->flags |= KILN_AGENT_PTY;
	o->rows = s->rows;
	o->cols = s->cols;
	o->ring_bytes = s->ring_bytes;
}

void proc_spec_free(struct proc_spec *s)
{
	exec_spec_free(&s->x);
	memset(s, 0, sizeof(*s));
}

/* A decimal integer without sign, spaces or leading zeros (one spelling
 * per value: these are ids and sequence numbers in URLs and bodies), at
 * most max. */
static bool parse_dec(const char *v, uint64_t max, uint64_t *out)
{
	return v && !(v[0] == '0' && v[1]) && num_parse_u64(v, 10, 0, max, out) == 0;
}

int proc_id_parse(const char *seg, uint32_t *id, struct api_err *e)
{
	uint64_t x;

	if (!parse_dec(seg, UINT32_MAX, &x) || x == 0) {
		api_err_set(e, API_E_PROCESS_NOT_FOUND,
			    "no process '%.64s': process ids are the positive integers POST .../processes returns",
			    seg);
		return -1;
	}
	*id = (uint32_t)x;
	return 0;
}

void proc_err_from_agent_fail(struct api_err *e, enum kiln_agent_fail kind, const char *code,
			      const char *msg, const char *what)
{
	api_err_from_agent_fail(e, kind, code, msg, what);
	if ((kind == KILN_AGENT_FAIL_AGENT || kind == KILN_AGENT_FAIL_REQUEST) &&
	    strcmp(code, "not_found") == 0)
		e->code = API_E_PROCESS_NOT_FOUND;
}

void proc_err_from_agent(struct api_err *e, const kiln_agent *a, const char *what)
{
	proc_err_from_agent_fail(e, kiln_agent_errkind(a), kiln_agent_errcode(a),
				 kiln_agent_errmsg(a), what);
}

int proc_signal_parse(const json_t *body, int *signo, bool *group, struct api_err *e)
{
	static const char *const fields[] = { "signal", "group", NULL };
	const json_t *v;

	if (json_fields_only(body, fields, "signal", e))
		return -1;
	v = json_object_get(body, "signal");
	if (!v) {
		api_err_set(e, API_E_MISSING_FIELD,
			    "signal: 'signal' is required (a name like \"TERM\" or a number)");
		return -1;
	}
	*signo = agent_signal_number(v);
	if (!*signo) {
		api_err_set(
			e, API_E_BAD_FIELD,
			"signal: 'signal' must be a signal name (\"TERM\", \"SIGKILL\", ...) or a number 1..64");
		return -1;
	}
	return json_fields_bool(body, "group", false, group, "signal", e);
}

int proc_resize_parse(const json_t *body, uint16_t *rows, uint16_t *cols, struct api_err *e)
{
	static const char *const fields[] = { "rows", "cols", NULL };
	uint64_t r, c;

	if (json_fields_only(body, fields, "resize", e) ||
	    json_fields_uint(body, "rows", true, 1, UINT16_MAX, 0, &r, "resize", e) ||
	    json_fields_uint(body, "cols", true, 1, UINT16_MAX, 0, &c, "resize", e))
		return -1;
	*rows = (uint16_t)r;
	*cols = (uint16_t)c;
	return 0;
}

/* ---- query parameters ---- */

static const struct query_kv *find(const struct query_kv *kv, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(kv[i].key, key) == 0)
			return &kv[i];
	return NULL;
}

static int get_from(const struct query_kv *kv, size_t n, struct proc_from *f, const char *w,
		    struct api_err *e)
{
	const struct query_kv *p = find(kv, n, "from");

	f->from = KILN_ATTACH_OLDEST;
	f->seq = 0;
	if (!p)
		return 0;
	if (p->value && strcmp(p->value, "now") == 0) {
		f->from = KILN_ATTACH_NOW;
		return 0;
	}
	/* The agent takes seq as a JSON integer: at most INT64_MAX. */
	if (!parse_dec(p->value, INT64_MAX, &f->seq)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: from must be a byte sequence number (0, 1, ...) or \"now\"", w);
		return -1;
	}
	f->from = KILN_ATTACH_SEQ;
	return 0;
}

int proc_query_output(const struct query_kv *kv, size_t n, struct proc_from *f, bool *base64,
		      struct api_err *e)
{
	static const char *const known[] = { "from", "encoding", NULL };
	const struct query_kv *p;

	*base64 = false;
	if (query_check_keys(kv, n, known, NULL, "output", e) || get_from(kv, n, f, "output", e))
		return -1;
	p = find(kv, n, "encoding");
	if (!p)
		return 0;
	if (p->value && strcmp(p->value, "base64") == 0) {
		*base64 = true;
	} else if (!p->value || strcmp(p->value, "auto") != 0) {
		api_err_set(e, API_E_BAD_FIELD, "output: encoding must be auto or base64");
		return -1;
	}
	return 0;
}

int proc_query_tty(const struct query_kv *kv, size_t n, struct proc_from *f, struct api_err *e)
{
	static const char *const known[] = { "from", NULL };

	if (query_check_keys(kv, n, known, NULL, "tty", e))
		return -1;
	return get_from(kv, n, f, "tty", e);
}

int proc_query_stdin(const struct query_kv *kv, size_t n, bool *close, struct api_err *e)
{
	static const char *const known[] = { "close", NULL };
	const struct query_kv *p;

	*close = false;
	if (query_check_keys(kv, n, known, NULL, "stdin", e))
		return -1;
	p = find(kv, n, "close");
	if (!p)
		return 0;
	if (p->value && (strcmp(p->value, "1") == 0 || strcmp(p->value, "true") == 0)) {
		*close = true;
	} else if (!p->value || (strcmp(p->value, "0") != 0 && strcmp(p->value, "false") != 0)) {
		api_err_set(e, API_E_BAD_FIELD, "stdin: close must be true, false, 1 or 0");
		return -1;
	}
	return 0;
}

int proc_query_wait(const struct query_kv *kv, size_t n, uint32_t *timeout_ms, struct api_err *e)
{
	static const char *const known[] = { "timeout_ms", NULL };
	const struct query_kv *p;
	uint64_t x;

	*timeout_ms = 0;
	if (query_check_keys(kv, n, known, NULL, "wait", e))
		return -1;
	p = find(kv, n, "timeout_ms");
	if (!p)
		return 0;
	if (!parse_dec(p->value, AGENT_TIMEOUT_MAX_MS, &x)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "wait: timeout_ms must be an integer 0..%u (0: no limit)",
			    (unsigned)AGENT_TIMEOUT_MAX_MS);
		return -1;
	}
	*timeout_ms = (uint32_t)x;
	return 0;
}
