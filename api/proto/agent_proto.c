#include "api/proto/agent_proto.h"
#include "api/proto/agent_proto_parse.h"
#include "lib/base/base64.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/base/mem_grow.h"
#include "lib/base/utf8.h"
#include "lib/base/version.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- error codes ---- */

static const char *const code_names[AGENT_CODE_COUNT] = {
	[AGENT_OK] = "ok",
	[AGENT_E_BAD_JSON] = "bad_json",
	[AGENT_E_HEADER_TOO_LONG] = "header_too_long",
	[AGENT_E_TRUNCATED] = "truncated",
	[AGENT_E_UNKNOWN_TYPE] = "unknown_type",
	[AGENT_E_UNEXPECTED_TYPE] = "unexpected_type",
	[AGENT_E_MISSING_FIELD] = "missing_field",
	[AGENT_E_UNKNOWN_FIELD] = "unknown_field",
	[AGENT_E_BAD_FIELD] = "bad_field",
	[AGENT_E_TOO_LARGE] = "too_large",
	[AGENT_E_NOT_FOUND] = "not_found",
	[AGENT_E_EXISTS] = "exists",
	[AGENT_E_NOT_DIRECTORY] = "not_directory",
	[AGENT_E_IS_DIRECTORY] = "is_directory",
	[AGENT_E_NOT_EMPTY] = "not_empty",
	[AGENT_E_PERMISSION_DENIED] = "permission_denied",
	[AGENT_E_READ_ONLY] = "read_only",
	[AGENT_E_NO_SPACE] = "no_space",
	[AGENT_E_UNSAFE_PATH] = "unsafe_path",
	[AGENT_E_BAD_ARCHIVE] = "bad_archive",
	[AGENT_E_INVALID_STATE] = "invalid_state",
	[AGENT_E_BUSY] = "busy",
	[AGENT_E_TIMEOUT] = "timeout",
	[AGENT_E_IO_ERROR] = "io_error",
	[AGENT_E_REFUSED] = "refused",
};

const char *agent_code_name(enum agent_code code)
{
	if ((unsigned)code >= AGENT_CODE_COUNT)
		return NULL;
	return code_names[code];
}

enum agent_code agent_errno_code(int errnum)
{
	switch (errnum < 0 ? -errnum : errnum) {
	case ENOENT:
	case ESRCH:
		return AGENT_E_NOT_FOUND;
	case EEXIST:
		return AGENT_E_EXISTS;
	case ENOTDIR:
		return AGENT_E_NOT_DIRECTORY;
	case EISDIR:
		return AGENT_E_IS_DIRECTORY;
	case ENOTEMPTY:
		return AGENT_E_NOT_EMPTY;
	case EACCES:
	case EPERM:
		return AGENT_E_PERMISSION_DENIED;
	case EROFS:
		return AGENT_E_READ_ONLY;
	case ENOSPC:
	case EDQUOT:
		return AGENT_E_NO_SPACE;
	case EMFILE:
	case ENFILE:
	case ENOMEM:
	case EAGAIN:
	case EBUSY:
		return AGENT_E_BUSY;
	case ETIMEDOUT:
		return AGENT_E_TIMEOUT;
	case ECONNREFUSED:
		return AGENT_E_REFUSED;
	default:
		return AGENT_E_IO_ERROR;
	}
}

enum agent_code agent_err_set(struct agent_err *err, enum agent_code code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* ---- UTF-8 ---- */

/* ---- framing ---- */

enum { FR_HEADER, FR_PAYLOAD, FR_ERROR };

/* A header is an object whose 'len' is absent (0) or the payload bytes
 * after the header. */
static enum agent_code header_check(const json_t *hdr, uint64_t *len, struct agent_err *err)
{
	json_t *l = json_object_get(hdr, "len");

	*len = 0;
	if (!json_is_object(hdr))
		return agent_err_set(
			err, AGENT_E_BAD_JSON,
			"header is not a JSON object (got %s); every message is one JSON object on one line",
			json_field_kind(hdr));
	if (!l)
		return AGENT_OK;
	if (!json_is_integer(l) || json_integer_value(l) < 0)
		return agent_err_set(
			err, AGENT_E_BAD_FIELD,
			"'len' must be a non-negative integer (the payload bytes after the header)");
	if ((uint64_t)json_integer_value(l) > AGENT_LEN_MAX)
		return agent_err_set(
			err, AGENT_E_TOO_LARGE,
			"'len' is %lld; one message carries at most %u bytes, send more as several data messages",
			(long long)json_integer_value(l), AGENT_LEN_MAX);
	*len = (uint64_t)json_integer_value(l);
	return AGENT_OK;
}

enum agent_code agent_header_decode(const char *line, size_t n, json_t **out, uint64_t *len,
				    struct agent_err *err)
{
	json_error_t je;
	json_t *j;

	*out = NULL;
	*len = 0;
	/*
	 * Duplicate keys are refused: two parsers (agent, host, a proxy) that
	 * resolve {"path":"a","path":"b"} differently are an injection vector.
	 * NUL inside strings stays refused (jansson's default) so a path can
	 * never be cut short at a C string boundary.
	 */
	j = json_strict_loadb(line, n, &je);
	if (!j)
		return agent_err_set(
			err, AGENT_E_BAD_JSON,
			"header is not valid JSON: %s (byte %d); every message is one JSON object on one line",
			je.text, je.position);
	if (header_check(j, len, err)) {
		json_decref(j);
		return err->code;
	}
	*out = j;
	return AGENT_OK;
}

void agent_frame_init(struct agent_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->state = FR_HEADER;
}

void agent_frame_free(struct agent_frame *f)
{
	free(f->line);
	f->line = NULL;
	f->line_len = f->line_cap = 0;
}

static size_t frame_fail(struct agent_frame *f, struct agent_event *ev)
{
	f->state = FR_ERROR;
	f->line_len = 0;
	ev->kind = AGENT_EV_ERROR;
	ev->err = &f->err;
	return 0;
}

/* Append to the partial line; the caller has checked the total limit. */
static int frame_append(struct agent_frame *f, const char *p, size_t n)
{
	if (f->line_len + n > f->line_cap) {
		char *nl = mem_grow(f->line, &f->line_cap, f->line_len + n, 256, AGENT_HEADER_MAX);

		if (!nl)
			return -ENOMEM;
		f->line = nl;
	}
	memcpy(f->line + f->line_len, p, n);
	f->line_len += n;
	return 0;
}

size_t agent_frame_feed(struct agent_frame *f, const void *buf, size_t n, struct agent_event *ev)
{
	const char *p = buf;
	const char *nl;
	size_t upto;
	json_t *hdr;
	uint64_t len;

	memset(ev, 0, sizeof(*ev));
	if (f->state == FR_ERROR) {
		ev->kind = AGENT_EV_ERROR;
		ev->err = &f->err;
		return 0;
	}
	if (n == 0) {
		ev->kind = AGENT_EV_NEED_MORE;
		return 0;
	}
	if (f->state == FR_PAYLOAD) {
		size_t take = n < f->payload_left ? n : (size_t)f->payload_left;

		f->payload_left -= take;
		ev->kind = AGENT_EV_PAYLOAD;
		ev->data = buf;
		ev->data_len = take;
		ev->len = f->payload_len;
		ev->last = f->payload_left == 0;
		if (ev->last)
			f->state = FR_HEADER;
		return take;
	}

	nl = memchr(p, '\n', n);
	upto = nl ? (size_t)(nl - p) : n;
	/* Fail as soon as the limit is passed: a peer that never sends '\n'
	 * must not make us buffer without bound. */
	if (f->line_len + upto > AGENT_HEADER_MAX - 1) {
		agent_err_set(
			&f->err, AGENT_E_HEADER_TOO_LONG,
			"header line longer than %u bytes (its '\\n' included); put bulk data in the payload after 'len'",
			AGENT_HEADER_MAX);
		return frame_fail(f, ev);
	}
	if (!nl || f->line_len) {
		if (frame_append(f, p, upto) < 0) {
			agent_err_set(&f->err, AGENT_E_BUSY,
				      "out of memory for a header line; retry later");
			return frame_fail(f, ev);
		}
		if (!nl) {
			ev->kind = AGENT_EV_NEED_MORE;
			return n;
		}
		p = f->line;
		upto = f->line_len;
	}
	f->line_len = 0;
	if (agent_header_decode(p, upto, &hdr, &len, &f->err) != AGENT_OK)
		return frame_fail(f, ev);
	ev->kind = AGENT_EV_HEADER;
	ev->header = hdr;
	ev->len = len;
	f->payload_len = len;
	f->payload_left = len;
	if (len)
		f->state = FR_PAYLOAD;
	return (size_t)(nl - (const char *)buf) + 1;
}

void agent_frame_eof(struct agent_frame *f, struct agent_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (f->state == FR_HEADER && f->line_len) {
		agent_err_set(
			&f->err, AGENT_E_TRUNCATED,
			"connection closed inside a header line (%zu bytes, no newline); end every header with '\\n'",
			f->line_len);
		frame_fail(f, ev);
		return;
	}
	if (f->state == FR_PAYLOAD) {
		agent_err_set(
			&f->err, AGENT_E_TRUNCATED,
			"connection closed after %llu of %llu payload bytes; send exactly 'len' bytes after the header",
			(unsigned long long)(f->payload_len - f->payload_left),
			(unsigned long long)f->payload_len);
		frame_fail(f, ev);
		return;
	}
	if (f->state == FR_ERROR) {
		ev->kind = AGENT_EV_ERROR;
		ev->err = &f->err;
		return;
	}
	ev->kind = AGENT_EV_NEED_MORE;
}

/* ---- field helpers ---- */

enum agent_code agent_field_missing(struct parse *p, const char *key, const char *what)
{
	return agent_err_set(p->err, AGENT_E_MISSING_FIELD, "%s: missing required field '%s' (%s)",
			     p->name, key, what);
}

/* A field lib/base/json refused, in the protocol's words (docs/agent-protocol.md);
 * `what` names what the field holds ("an absolute path"). */
enum agent_code agent_field_refused(struct parse *p, const struct json_field_fail *f,
				    const char *what)
{
	unsigned long long lo = f->min, hi = f->max;

	switch (f->fault) {
	case JSON_FIELD_MISSING:
		return agent_field_missing(p, f->key, what);
	case JSON_FIELD_RANGE:
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: '%s' must be an integer from %llu to %llu (got %lld)",
				     p->name, f->key, lo, hi, f->value);
	case JSON_FIELD_UNKNOWN:
		return agent_err_set(p->err, AGENT_E_UNKNOWN_FIELD, "%s: unknown field '%.100s'",
				     p->name, f->key);
	default:
		if (f->want == JSON_FIELD_INTEGER)
			return agent_err_set(p->err, AGENT_E_BAD_FIELD,
					     "%s: '%s' must be an integer from %llu to %llu, not %s",
					     p->name, f->key, lo, hi, f->got);
		return agent_err_set(p->err, AGENT_E_BAD_FIELD, "%s: '%s' must be %s, not %s",
				     p->name, f->key, what, f->got);
	}
}

enum agent_code agent_field_bool(struct parse *p, const char *key, bool def, bool *out)
{
	struct json_field_fail f;

	return json_field_bool(p->obj, key, false, def, out, &f)
		? agent_field_refused(p, &f, "true or false")
		: AGENT_OK;
}

/* An integer in [min, max]; `def` when absent and not required. */
enum agent_code agent_field_uint(struct parse *p, const char *key, bool required, uint64_t min,
				 uint64_t max, uint64_t def, uint64_t *out)
{
	struct json_field_fail f;

	return json_field_uint(p->obj, key, required, min, max, def, out, &f)
		? agent_field_refused(p, &f, "integer")
		: AGENT_OK;
}

enum agent_code agent_field_u32(struct parse *p, const char *key, bool required, uint32_t min,
				uint32_t max, uint32_t def, uint32_t *out)
{
	uint64_t v;
	enum agent_code c = agent_field_uint(p, key, required, min, max, def, &v);

	*out = (uint32_t)v;
	return c;
}

enum agent_code agent_field_string(struct parse *p, const char *key, bool required,
				   const char *what, const char **out)
{
	struct json_field_fail f;

	return json_field_string(p->obj, key, required, SIZE_MAX, out, &f)
		? agent_field_refused(p, &f, what)
		: AGENT_OK;
}

/* sync_clock's `entropy`: an even number of hex digits, 1..AGENT_ENTROPY_MAX bytes. */
static enum agent_code parse_entropy(struct parse *p, const char **out)
{
	enum agent_code c = agent_field_string(p, "entropy", false, "a string of hex digits", out);
	size_t n;

	if (c || !*out)
		return c;
	n = strlen(*out);
	if (n == 0 || n % 2 || n > 2 * AGENT_ENTROPY_MAX ||
	    strspn(*out, "0123456789abcdefABCDEF") != n)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'entropy' must be 1..%d bytes as an even number of hex digits",
				     p->name, AGENT_ENTROPY_MAX);
	return AGENT_OK;
}

enum agent_code agent_field_check_path(struct parse *p, const char *key, const char *s, size_t len)
{
	if (len > AGENT_PATH_MAX)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: '%s' is %zu bytes; paths are at most %d bytes", p->name,
				     key, len, AGENT_PATH_MAX);
	if (s[0] != '/')
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: '%s' must be an absolute path (starting with '/'), got '%.200s'",
			p->name, key, s);
	return AGENT_OK;
}

enum agent_code agent_field_path(struct parse *p, const char *key, bool required, const char **out)
{
	enum agent_code c = agent_field_string(p, key, required, "an absolute path", out);

	if (c || !*out)
		return c;
	return agent_field_check_path(p, key, *out,
				      json_string_length(json_object_get(p->obj, key)));
}

static enum agent_code get_user(struct parse *p, enum agent_user *out)
{
	const char *s;
	enum agent_code c = agent_field_string(p, "user", false, "\"user\" or \"root\"", &s);

	*out = AGENT_USER_USER;
	if (c || !s)
		return c;
	if (strcmp(s, "user") == 0)
		return AGENT_OK;
	if (strcmp(s, "root") == 0) {
		*out = AGENT_USER_ROOT;
		return AGENT_OK;
	}
	return agent_err_set(
		p->err, AGENT_E_BAD_FIELD,
		"%s: 'user' must be \"user\" (uid 1000, the default) or \"root\", got '%.100s'",
		p->name, s);
}

/* ---- per-type parsers ---- */

static enum agent_code parse_argv(struct parse *p, struct agent_proc_req *r)
{
	json_t *a = json_object_get(p->obj, "argv"), *v;
	bool shell;
	size_t n, off, i;
	enum agent_code c;

	if (!a)
		return agent_field_missing(p, "argv", "array of strings");
	if (!json_is_array(a))
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'argv' must be an array of strings, not %s", p->name,
				     json_field_kind(a));
	n = json_array_size(a);
	if (n == 0)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'argv' must have at least one entry (argv[0] is the program)",
				     p->name);
	if (n > AGENT_ARGV_MAX)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: 'argv' has %zu entries; at most %d are allowed", p->name,
				     n, AGENT_ARGV_MAX);
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v))
			return agent_err_set(p->err, AGENT_E_BAD_FIELD,
					     "%s: 'argv[%zu]' must be a string, not %s", p->name, i,
					     json_field_kind(v));
	}
	if (json_string_length(json_array_get(a, 0)) == 0)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'argv[0]' must not be empty (it is the program to run)",
				     p->name);
	c = agent_field_bool(p, "shell", false, &shell);
	if (c)
		return c;
	off = shell ? 2 : 0;
	if (n + off > AGENT_ARGV_MAX)
		return agent_err_set(
			p->err, AGENT_E_TOO_LARGE,
			"%s: 'argv' has %zu entries plus /bin/sh -c; at most %d are allowed",
			p->name, n, AGENT_ARGV_MAX);
	r->argv = calloc(n + off + 1, sizeof(*r->argv));
	if (!r->argv)
		return agent_err_set(p->err, AGENT_E_BUSY, "%s: out of memory; retry later",
				     p->name);
	if (shell) {
		r->argv[0] = "/bin/sh";
		r->argv[1] = "-c";
	}
	json_array_foreach(a, i, v) r->argv[off + i] = json_string_value(v);
	r->argc = n + off;
	r->shell = shell;
	return AGENT_OK;
}

static enum agent_code parse_env(struct parse *p, struct agent_proc_req *r)
{
	json_t *e = json_object_get(p->obj, "env"), *v;
	const char *k;
	size_t n, i = 0;

	if (!e)
		return AGENT_OK;
	if (!json_is_object(e))
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'env' must be an object of strings (or null to unset), not %s",
				     p->name, json_field_kind(e));
	n = json_object_size(e);
	if (n > AGENT_ENV_MAX)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: 'env' has %zu entries; at most %d are allowed", p->name,
				     n, AGENT_ENV_MAX);
	json_object_foreach(e, k, v)
	{
		/* execve() splits "K=V" at the first '='; a key holding one
		 * would set a different variable than the host asked for. */
		if (!k[0] || strchr(k, '='))
			return agent_err_set(p->err, AGENT_E_BAD_FIELD,
					     "%s: 'env' key '%.100s' must be non-empty and without '='",
					     p->name, k);
		if (!json_is_string(v) && !json_is_null(v))
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: 'env.%.100s' must be a string (or null to unset), not %s",
				p->name, k, json_field_kind(v));
	}
	if (!n)
		return AGENT_OK;
	r->env = calloc(n, sizeof(*r->env));
	if (!r->env)
		return agent_err_set(p->err, AGENT_E_BUSY, "%s: out of memory; retry later",
				     p->name);
	json_object_foreach(e, k, v)
	{
		r->env[i].key = k;
		r->env[i].value = json_is_string(v) ? json_string_value(v) : NULL;
		i++;
	}
	r->envc = n;
	return AGENT_OK;
}

static const char *const lang_names[AGENT_LANG_COUNT] = {
	[AGENT_LANG_PYTHON] = "python",
	[AGENT_LANG_JAVASCRIPT] = "javascript",
	[AGENT_LANG_TYPESCRIPT] = "typescript",
	[AGENT_LANG_BASH] = "bash",
};

const char *agent_lang_name(enum agent_lang l)
{
	return (unsigned)l < AGENT_LANG_COUNT ? lang_names[l] : NULL;
}

enum agent_lang agent_lang_by_name(const char *name)
{
	for (int l = AGENT_LANG_NONE + 1; l < AGENT_LANG_COUNT; l++)
		if (strcmp(lang_names[l], name) == 0)
			return (enum agent_lang)l;
	return AGENT_LANG_NONE;
}

/* run: `language`, then `code_len` within the payload's `len`. */
static enum agent_code parse_run(struct parse *p, struct agent_proc_req *r, uint64_t len)
{
	const char *lang;
	enum agent_code c =
		agent_field_string(p, "language", true,
				   "\"python\", \"javascript\", \"typescript\" or \"bash\"", &lang);

	if (c)
		return c;
	r->lang = agent_lang_by_name(lang);
	if (r->lang == AGENT_LANG_NONE)
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'language' must be \"python\", \"javascript\", \"typescript\" or \"bash\", got '%.100s'",
			p->name, lang);
	return agent_field_u32(p, "code_len", true, 0, (uint32_t)len, 0, &r->code_len);
}

static enum agent_code parse_proc(struct parse *p, struct agent_proc_req *r, bool spawn)
{
	enum agent_code c;
	bool has_rows, has_cols;
	uint32_t rows, cols;

	if ((!r->lang && (c = parse_argv(p, r))) || (c = parse_env(p, r)))
		return c;
	if ((c = agent_field_path(p, "cwd", false, &r->cwd)) || (c = get_user(p, &r->user)))
		return c;
	if ((c = agent_field_u32(p, "timeout_ms", false, 0, AGENT_TIMEOUT_MAX_MS, 0,
				 &r->timeout_ms)))
		return c;
	if ((c = agent_field_bool(p, "confine", false, &r->confine)))
		return c;
	if (r->confine && !agent_confine_cwd_ok(r->cwd))
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'cwd' '%.200s' is not visible to a confined process; give " AGENT_WORKSPACE
			" or a directory below it (without '..'), or leave it out",
			p->name, r->cwd);
	if (!spawn)
		return agent_field_u32(p, "output_cap", false, 0, AGENT_OUTPUT_CAP_MAX,
				       AGENT_OUTPUT_CAP_DEFAULT, &r->output_cap);

	if ((c = agent_field_bool(p, "pty", false, &r->pty)))
		return c;
	has_rows = json_object_get(p->obj, "rows") != NULL;
	has_cols = json_object_get(p->obj, "cols") != NULL;
	if ((has_rows || has_cols) && !r->pty)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: '%s' needs \"pty\": true (only a terminal has a size)",
				     p->name, has_rows ? "rows" : "cols");
	if ((c = agent_field_u32(p, "rows", false, 1, 65535, AGENT_PTY_ROWS_DEFAULT, &rows)) ||
	    (c = agent_field_u32(p, "cols", false, 1, 65535, AGENT_PTY_COLS_DEFAULT, &cols)))
		return c;
	r->rows = (uint16_t)rows;
	r->cols = (uint16_t)cols;
	return agent_field_u32(p, "ring_bytes", false, AGENT_RING_MIN, AGENT_RING_MAX,
			       AGENT_RING_DEFAULT, &r->ring_bytes);
}

/* `id`: required on its own connection, refused on an attached stream. */
static enum agent_code get_id(struct parse *p, uint32_t *id)
{
	*id = 0;
	if (p->ctx == AGENT_CTX_ATTACHED) {
		if (json_object_get(p->obj, "id"))
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: 'id' is not allowed on an attached stream; the stream's process is implied",
				p->name);
		return AGENT_OK;
	}
	return agent_field_u32(p, "id", true, 1, UINT32_MAX, 0, id);
}

enum agent_code agent_field_signal(struct parse *p, int *signo)
{
	json_t *v = json_object_get(p->obj, "signal");

	if (!v)
		return agent_field_missing(p, "signal", "1..64 or a name such as \"TERM\"");
	*signo = agent_signal_number(v);
	if (*signo <= 0)
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'signal' must be an integer 1..64 or a name such as \"TERM\" or \"SIGKILL\"",
			p->name);
	return AGENT_OK;
}

static enum agent_code parse_ctl(struct parse *p, enum agent_type t, struct agent_ctl_req *r)
{
	enum agent_code c = get_id(p, &r->id);
	uint32_t rows, cols;
	json_t *from;

	if (c)
		return c;
	switch (t) {
	case AGENT_T_ATTACH:
		from = json_object_get(p->obj, "from");
		if (!from)
			return AGENT_OK;
		if (json_is_string(from) && strcmp(json_string_value(from), "now") == 0) {
			r->from_now = true;
			return AGENT_OK;
		}
		if (!json_is_integer(from) || json_integer_value(from) < 0)
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: 'from' must be a sequence number (integer >= 0) or \"now\"",
				p->name);
		r->has_from = true;
		r->from = (uint64_t)json_integer_value(from);
		return AGENT_OK;
	case AGENT_T_STDIN:
		return agent_field_bool(p, "close", false, &r->close);
	case AGENT_T_SIGNAL:
		if ((c = agent_field_signal(p, &r->signo)))
			return c;
		return agent_field_bool(p, "group", false, &r->group);
	case AGENT_T_RESIZE:
		if ((c = agent_field_u32(p, "rows", true, 1, 65535, 0, &rows)) ||
		    (c = agent_field_u32(p, "cols", true, 1, 65535, 0, &cols)))
			return c;
		r->rows = (uint16_t)rows;
		r->cols = (uint16_t)cols;
		return AGENT_OK;
	case AGENT_T_WAIT:
		return agent_field_u32(p, "timeout_ms", false, 0, AGENT_TIMEOUT_MAX_MS, 0,
				       &r->timeout_ms);
	default:
		return AGENT_OK;
	}
}

static enum agent_code parse_file(struct parse *p, enum agent_type t, struct agent_file_req *r)
{
	enum agent_code c;

	r->length = UINT64_MAX;
	if (t == AGENT_T_RENAME) {
		if ((c = agent_field_path(p, "from", true, &r->path)) ||
		    (c = agent_field_path(p, "to", true, &r->to)) ||
		    (c = agent_field_bool(p, "overwrite", false, &r->overwrite)))
			return c;
		return get_user(p, &r->user);
	}
	if ((c = agent_field_path(p, "path", true, &r->path)))
		return c;
	switch (t) {
	case AGENT_T_READ:
		if ((c = agent_field_uint(p, "offset", false, 0, INT64_MAX, 0, &r->offset)) ||
		    (c = agent_field_uint(p, "length", false, 0, INT64_MAX, UINT64_MAX,
					  &r->length)))
			return c;
		break;
	case AGENT_T_WRITE:
		if ((c = agent_field_bool(p, "create", true, &r->create)) ||
		    (c = agent_field_bool(p, "exclusive", false, &r->exclusive)))
			return c;
		if (r->exclusive && !r->create)
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: 'exclusive' needs 'create' (it fails when the file exists)",
				p->name);
		if ((c = agent_field_bool(p, "append", false, &r->append)) ||
		    (c = agent_field_u32(p, "mode", false, 0, 07777, AGENT_FILE_MODE_DEFAULT,
					 &r->mode)) ||
		    (c = agent_field_bool(p, "parents", false, &r->parents)))
			return c;
		break;
	case AGENT_T_STAT:
	case AGENT_T_EXISTS:
		if ((c = agent_field_bool(p, "follow", true, &r->follow)))
			return c;
		break;
	case AGENT_T_LIST_DIR:
		if ((c = agent_field_u32(p, "depth", false, 1, AGENT_LIST_DEPTH_MAX, 1,
					 &r->depth)) ||
		    (c = agent_field_u32(p, "limit", false, 1, AGENT_LIST_LIMIT_MAX,
					 AGENT_LIST_LIMIT_DEFAULT, &r->limit)))
			return c;
		break;
	case AGENT_T_MKDIR:
		if ((c = agent_field_bool(p, "parents", false, &r->parents)) ||
		    (c = agent_field_u32(p, "mode", false, 0, 07777, AGENT_DIR_MODE_DEFAULT,
					 &r->mode)))
			return c;
		break;
	case AGENT_T_REMOVE:
		/* Lexical, before anything touches the disk: no spelling of "/"
		 * may start a recursive delete of the whole guest. */
		if (agent_path_is_root(r->path))
			return agent_err_set(
				p->err, AGENT_E_UNSAFE_PATH,
				"%s: refusing to remove '%.200s', which is the root directory",
				p->name, r->path);
		if ((c = agent_field_bool(p, "recursive", false, &r->recursive)))
			return c;
		break;
	default:
		break;
	}
	return get_user(p, &r->user);
}

static enum agent_code get_addr(struct parse *p, const char *key, bool cidr, struct agent_addr *a)
{
	const char *s;
	enum agent_code c = agent_field_string(p, key, false,
					       cidr ? "an address with /prefix" : "an IP address",
					       &s);

	if (c || !s)
		return c;
	if ((cidr ? agent_parse_cidr(s, a) : agent_parse_ip(s, a)) < 0)
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			cidr ? "%s: '%s' must be an address with a prefix length, like \"10.0.2.15/24\" or \"fd00::2/64\", got '%.100s'"
			     : "%s: '%s' must be an IPv4 or IPv6 address, got '%.100s'",
			p->name, key, s);
	return AGENT_OK;
}

/* configure.trust_ca: "" (remove) or one PEM certificate, checked whole
 * here: kiln-init writes it into the guest's trust stores as it is. */
static enum agent_code get_trust_ca(struct parse *p, const char **out)
{
	enum agent_code c = agent_field_string(p, "trust_ca", false, "a PEM certificate", out);
	const char *why;
	size_t n;

	if (c || !*out || !**out)
		return c;
	n = strlen(*out);
	if (n > AGENT_TRUST_CA_MAX)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: 'trust_ca' is %zu bytes; one PEM certificate is at most %d",
				     p->name, n, AGENT_TRUST_CA_MAX);
	if ((why = agent_pem_cert_check(*out)))
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'trust_ca' is not one PEM certificate (%s); send the CA's .pem file as it is, or \"\" to remove it",
			p->name, why);
	return AGENT_OK;
}

static enum agent_code parse_configure(struct parse *p, struct agent_configure_req *r)
{
	enum agent_code c;
	json_t *dns, *v;
	size_t i;

	if ((c = agent_field_string(p, "hostname", false, "a hostname", &r->hostname)))
		return c;
	if (r->hostname && !agent_hostname_valid(r->hostname))
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'hostname' '%.100s' is not a valid hostname (1..64 bytes; labels of letters, digits and '-')",
			p->name, r->hostname);
	if ((c = agent_field_string(p, "interface", false, "an interface name", &r->iface)))
		return c;
	if (r->iface && !agent_ifname_valid(r->iface))
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'interface' '%.100s' is not a valid interface name (1..15 bytes, no '/', ':' or spaces)",
			p->name, r->iface);
	if ((c = get_addr(p, "address", true, &r->address)))
		return c;
	r->has_address = json_object_get(p->obj, "address") != NULL;
	if ((c = get_addr(p, "gateway", false, &r->gateway)))
		return c;
	r->has_gateway = json_object_get(p->obj, "gateway") != NULL;
	if (r->has_address && r->has_gateway && r->address.family != r->gateway.family)
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'gateway' and 'address' must be the same family (both IPv4 or both IPv6)",
			p->name);
	dns = json_object_get(p->obj, "dns");
	if (dns) {
		if (!json_is_array(dns))
			return agent_err_set(p->err, AGENT_E_BAD_FIELD,
					     "%s: 'dns' must be an array of IP addresses, not %s",
					     p->name, json_field_kind(dns));
		if (json_array_size(dns) > AGENT_DNS_MAX)
			return agent_err_set(p->err, AGENT_E_TOO_LARGE,
					     "%s: 'dns' has %zu servers; resolv.conf uses at most %d",
					     p->name, json_array_size(dns), AGENT_DNS_MAX);
		json_array_foreach(dns, i, v)
		{
			if (!json_is_string(v) ||
			    agent_parse_ip(json_string_value(v), &r->dns[i]) < 0)
				return agent_err_set(p->err, AGENT_E_BAD_FIELD,
						     "%s: 'dns[%zu]' must be an IPv4 or IPv6 address",
						     p->name, i);
		}
		r->has_dns = true;
		r->dns_n = json_array_size(dns);
	}
	if ((c = agent_field_u32(p, "mtu", false, 68, 65535, 0, &r->mtu)) ||
	    (c = get_trust_ca(p, &r->trust_ca)))
		return c;
	if (!r->hostname && !r->has_address && !r->has_gateway && !r->has_dns && !r->mtu &&
	    !r->trust_ca)
		return agent_err_set(
			p->err, AGENT_E_MISSING_FIELD,
			"%s: nothing to configure; give at least one of hostname, address, gateway, dns, mtu, trust_ca",
			p->name);
	if (r->iface && !r->has_address && !r->has_gateway && !r->mtu)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'interface' only applies with address, gateway or mtu",
				     p->name);
	if (!r->iface)
		r->iface = "eth0";
	return AGENT_OK;
}

/*
 * Only the guest's own loopback: the bridge exists to reach a server
 * without a guest network, and a host that could name any address would
 * turn the agent into a proxy onto whatever network the guest has.
 */
static enum agent_code parse_tcp(struct parse *p, struct agent_tcp_req *r)
{
	uint32_t port;
	enum agent_code c;

	if ((c = agent_field_u32(p, "port", true, 1, 65535, 0, &port)) ||
	    (c = agent_field_string(p, "address", false, "\"127.0.0.1\" or \"::1\"", &r->address)))
		return c;
	r->port = (uint16_t)port;
	if (!r->address || strcmp(r->address, "127.0.0.1") == 0) {
		r->address = "127.0.0.1";
		r->family = AF_INET;
	} else if (strcmp(r->address, "::1") == 0) {
		r->family = AF_INET6;
	} else {
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'address' must be \"127.0.0.1\" or \"::1\" (the guest's loopback), got '%.100s'",
			p->name, r->address);
	}
	return AGENT_OK;
}

static enum agent_code parse_watch(struct parse *p, struct agent_watch_req *r)
{
	enum agent_code c;

	if ((c = agent_field_path(p, "path", true, &r->path)) ||
	    (c = agent_field_bool(p, "recursive", false, &r->recursive)) ||
	    (c = agent_field_u32(p, "max_watches", false, 1, AGENT_WATCH_WATCHES_MAX,
				 AGENT_WATCH_WATCHES_DEFAULT, &r->max_watches)) ||
	    (c = agent_field_u32(p, "queue", false, AGENT_WATCH_QUEUE_MIN, AGENT_WATCH_QUEUE_MAX,
				 AGENT_WATCH_QUEUE_DEFAULT, &r->queue)))
		return c;
	return get_user(p, &r->user);
}

/* ---- bodies: one per message type, or per family of them ---- */

static enum agent_code body_exec(struct parse *p, struct agent_msg *m)
{
	return parse_proc(p, &m->u.proc, false);
}

static enum agent_code body_spawn(struct parse *p, struct agent_msg *m)
{
	return parse_proc(p, &m->u.proc, true);
}

static enum agent_code body_run(struct parse *p, struct agent_msg *m)
{
	enum agent_code c = parse_run(p, &m->u.proc, m->len);

	return c ? c : parse_proc(p, &m->u.proc, false);
}

static enum agent_code body_ctl(struct parse *p, struct agent_msg *m)
{
	return parse_ctl(p, m->type, &m->u.ctl);
}

static enum agent_code body_file(struct parse *p, struct agent_msg *m)
{
	return parse_file(p, m->type, &m->u.file);
}

static enum agent_code body_configure(struct parse *p, struct agent_msg *m)
{
	return parse_configure(p, &m->u.conf);
}

static enum agent_code body_sync_clock(struct parse *p, struct agent_msg *m)
{
	uint64_t v;
	enum agent_code c = agent_field_uint(p, "time_ns", true, AGENT_CLOCK_MIN_NS,
					     AGENT_CLOCK_MAX_NS, 0, &v);

	m->u.clock.time_ns = (int64_t)v;
	return c ? c : parse_entropy(p, &m->u.clock.entropy);
}

static enum agent_code body_shutdown(struct parse *p, struct agent_msg *m)
{
	return agent_field_u32(p, "grace_ms", false, 0, AGENT_GRACE_MAX_MS, AGENT_GRACE_DEFAULT_MS,
			       &m->u.grace_ms);
}

static enum agent_code body_tcp(struct parse *p, struct agent_msg *m)
{
	return parse_tcp(p, &m->u.tcp);
}

static enum agent_code body_watch(struct parse *p, struct agent_msg *m)
{
	return parse_watch(p, &m->u.watch);
}

/* ---- message table ---- */

#define CTX_REQ (1u << AGENT_CTX_REQUEST)
#define CTX_UPL (1u << AGENT_CTX_UPLOAD)
#define CTX_ATT (1u << AGENT_CTX_ATTACHED)

/* The one table of message types: the guest's dispatch follows it too
 * (agent_type_is_file). */
struct msg_spec {
	const char *name;
	unsigned ctx;
	bool payload;
	const char *const *fields; /* every field it may carry; NULL-terminated */
	/* reads the fields into the message; NULL: it has none to read */
	enum agent_code (*body)(struct parse *p, struct agent_msg *m);
};

/* "type" and "len" are every message's. */
#define FIELDS(...) ((const char *const[]){ "type", "len", __VA_ARGS__, NULL })
#define NO_FIELDS ((const char *const[]){ "type", "len", NULL })
/* How a process runs, for exec, spawn and run alike: an option added
 * here reaches all three (parse_proc reads them). */
#define PROC_RUN_FIELDS "env", "cwd", "user", "timeout_ms", "confine"
#define PROC_FIELDS "argv", "shell", PROC_RUN_FIELDS

static const struct msg_spec specs[AGENT_TYPE_COUNT] = {
	[AGENT_T_PING] = { "ping", CTX_REQ, false, NO_FIELDS, NULL },
	[AGENT_T_INFO] = { "info", CTX_REQ, false, NO_FIELDS, NULL },
	[AGENT_T_EXEC] = { "exec", CTX_REQ, true, FIELDS(PROC_FIELDS, "output_cap"), body_exec },
	[AGENT_T_SPAWN] = { "spawn", CTX_REQ, false,
			    FIELDS(PROC_FIELDS, "pty", "rows", "cols", "ring_bytes"), body_spawn },
	[AGENT_T_ATTACH] = { "attach", CTX_REQ, false, FIELDS("id", "from"), body_ctl },
	[AGENT_T_STDIN] = { "stdin", CTX_REQ | CTX_ATT, true, FIELDS("id", "close"), body_ctl },
	[AGENT_T_SIGNAL] = { "signal", CTX_REQ | CTX_ATT, false, FIELDS("id", "signal", "group"),
			     body_ctl },
	[AGENT_T_RESIZE] = { "resize", CTX_REQ | CTX_ATT, false, FIELDS("id", "rows", "cols"),
			     body_ctl },
	[AGENT_T_WAIT] = { "wait", CTX_REQ, false, FIELDS("id", "timeout_ms"), body_ctl },
	[AGENT_T_LIST_PROCESSES] = { "list_processes", CTX_REQ, false, NO_FIELDS, NULL },
	[AGENT_T_READ] = { "read", CTX_REQ, false, FIELDS("path", "offset", "length", "user"),
			   body_file },
	[AGENT_T_WRITE] = { "write", CTX_REQ, true,
			    FIELDS("path", "create", "exclusive", "append", "mode", "parents",
				   "user"),
			    body_file },
	[AGENT_T_STAT] = { "stat", CTX_REQ, false, FIELDS("path", "follow", "user"), body_file },
	[AGENT_T_EXISTS] = { "exists", CTX_REQ, false, FIELDS("path", "follow", "user"),
			     body_file },
	[AGENT_T_LIST_DIR] = { "list_dir", CTX_REQ, false, FIELDS("path", "depth", "limit", "user"),
			       body_file },
	[AGENT_T_MKDIR] = { "mkdir", CTX_REQ, false, FIELDS("path", "parents", "mode", "user"),
			    body_file },
	[AGENT_T_REMOVE] = { "remove", CTX_REQ, false, FIELDS("path", "recursive", "user"),
			     body_file },
	[AGENT_T_RENAME] = { "rename", CTX_REQ, false, FIELDS("from", "to", "overwrite", "user"),
			     body_file },
	[AGENT_T_TAR_UPLOAD] = { "tar_upload", CTX_REQ, true, FIELDS("path", "user"), body_file },
	[AGENT_T_TAR_DOWNLOAD] = { "tar_download", CTX_REQ, false, FIELDS("path", "user"),
				   body_file },
	[AGENT_T_CONFIGURE] = { "configure", CTX_REQ, false,
				FIELDS("hostname", "interface", "address", "gateway", "dns", "mtu",
				       "trust_ca"),
				body_configure },
	[AGENT_T_SYNC_CLOCK] = { "sync_clock", CTX_REQ, false, FIELDS("time_ns", "entropy"),
				 body_sync_clock },
	[AGENT_T_SHUTDOWN] = { "shutdown", CTX_REQ, false, FIELDS("grace_ms"), body_shutdown },
	[AGENT_T_TCP_CONNECT] = { "tcp_connect", CTX_REQ, false, FIELDS("port", "address"),
				  body_tcp },
	/* exec's fields less argv and shell: the agent builds the command. */
	[AGENT_T_RUN] = { "run", CTX_REQ, true,
			  FIELDS("language", "code_len", PROC_RUN_FIELDS, "output_cap"), body_run },
	[AGENT_T_WATCH] = { "watch", CTX_REQ, false,
			    FIELDS("path", "recursive", "max_watches", "queue", "user"),
			    body_watch },
	[AGENT_T_CTR_CREATE] = { "ctr_create", CTX_REQ, false,
				 FIELDS("cid", "rootfs", "mounts", "process", "hostname", "sysctl",
					"seccomp", "masked_paths", "readonly_paths", "pids_max"),
				 agent_ctr_create_body },
	[AGENT_T_CTR_STDIO] = { "ctr_stdio", CTX_REQ, false, FIELDS("cid", "exec", "stream"),
				agent_ctr_body },
	[AGENT_T_CTR_START] = { "ctr_start", CTX_REQ, false, FIELDS("cid", "exec"),
				agent_ctr_body },
	[AGENT_T_CTR_WAIT] = { "ctr_wait", CTX_REQ, false, FIELDS("cid", "exec", "timeout_ms"),
			       agent_ctr_body },
	[AGENT_T_CTR_SIGNAL] = { "ctr_signal", CTX_REQ, false,
				 FIELDS("cid", "exec", "signal", "all"), agent_ctr_body },
	[AGENT_T_CTR_RESIZE] = { "ctr_resize", CTX_REQ, false,
				 FIELDS("cid", "exec", "rows", "cols"), agent_ctr_body },
	[AGENT_T_CTR_DELETE] = { "ctr_delete", CTX_REQ, false, FIELDS("cid"), agent_ctr_body },
	[AGENT_T_CTR_UPDATE] = { "ctr_update", CTX_REQ, false, FIELDS("cid", "pids_max"),
				 agent_ctr_body },
	[AGENT_T_CTR_EXEC] = { "ctr_exec", CTX_REQ, false, FIELDS("cid", "exec", "process"),
			       agent_ctr_exec_body },
	[AGENT_T_DATA] = { "data", CTX_UPL, true, NO_FIELDS, NULL },
	[AGENT_T_END] = { "end", CTX_UPL, false, NO_FIELDS, NULL },
};

const char *agent_type_name(enum agent_type t)
{
	if ((unsigned)t >= AGENT_TYPE_COUNT)
		return NULL;
	return specs[t].name;
}

bool agent_type_is_file(enum agent_type t)
{
	return (unsigned)t < AGENT_TYPE_COUNT && specs[t].body == body_file;
}

static enum agent_code wrong_context(struct parse *p, enum agent_type t)
{
	const char *n = specs[t].name;

	switch (p->ctx) {
	case AGENT_CTX_REQUEST:
		return agent_err_set(
			p->err, AGENT_E_UNEXPECTED_TYPE,
			"'%s' is not valid as a request; it only follows write or tar_upload", n);
	case AGENT_CTX_UPLOAD:
		return agent_err_set(p->err, AGENT_E_UNEXPECTED_TYPE,
				     "'%s' is not valid during an upload; send data messages, then end",
				     n);
	default:
		return agent_err_set(
			p->err, AGENT_E_UNEXPECTED_TYPE,
			"'%s' is not valid on an attached stream; only stdin, signal and resize are",
			n);
	}
}

enum agent_code agent_msg_parse(json_t *hdr, enum agent_ctx ctx, struct agent_msg *msg,
				struct agent_err *err)
{
	struct parse p = { .obj = hdr, .ctx = ctx, .err = err };
	struct json_field_fail f;
	json_t *tv;
	const char *tname;
	const struct msg_spec *s;
	enum agent_code c;
	int t;

	memset(msg, 0, sizeof(*msg));
	err->code = AGENT_OK;
	err->msg[0] = '\0';
	if ((c = header_check(hdr, &msg->len, err)))
		return c;
	tv = json_object_get(hdr, "type");
	if (!tv)
		return agent_err_set(err, AGENT_E_MISSING_FIELD,
				     "missing field 'type'; every message names its type");
	if (!json_is_string(tv))
		return agent_err_set(err, AGENT_E_BAD_FIELD, "'type' must be a string, not %s",
				     json_field_kind(tv));
	tname = json_string_value(tv);
	for (t = 0; t < AGENT_TYPE_COUNT; t++)
		if (strcmp(specs[t].name, tname) == 0)
			break;
	if (t == AGENT_TYPE_COUNT)
		return agent_err_set(
			err, AGENT_E_UNKNOWN_TYPE,
			"unknown message type '%.100s'; see docs/agent-protocol.md for the list",
			tname);
	s = &specs[t];
	p.name = s->name;
	if (!(s->ctx & (1u << ctx)))
		return wrong_context(&p, (enum agent_type)t);
	if (json_field_only(hdr, s->fields, &f))
		return agent_field_refused(&p, &f, NULL);
	msg->type = (enum agent_type)t;
	if (msg->len && !s->payload)
		return agent_err_set(err, AGENT_E_BAD_FIELD,
				     "%s: carries no payload; 'len' must be absent or 0", s->name);
	c = s->body ? s->body(&p, msg) : AGENT_OK;
	if (c) {
		agent_msg_free(msg);
		return c;
	}
	msg->json = json_incref(hdr);
	return AGENT_OK;
}

void agent_msg_free(struct agent_msg *msg)
{
	if (msg->type == AGENT_T_EXEC || msg->type == AGENT_T_SPAWN || msg->type == AGENT_T_RUN) {
		free(msg->u.proc.argv);
		free(msg->u.proc.env);
	}
	if (msg->type == AGENT_T_CTR_CREATE)
		agent_ctr_create_free(&msg->u.ctr_create);
	if (msg->type == AGENT_T_CTR_EXEC)
		agent_ctr_process_free(&msg->u.ctr_exec.proc);
	json_decref(msg->json);
	memset(msg, 0, sizeof(*msg));
}

enum agent_code agent_msg_parse_line(const char *line, size_t n, enum agent_ctx ctx,
				     struct agent_msg *msg, struct agent_err *err)
{
	json_t *hdr;
	uint64_t len;
	enum agent_code c;

	memset(msg, 0, sizeof(*msg));
	c = agent_header_decode(line, n, &hdr, &len, err);
	if (c)
		return c;
	c = agent_msg_parse(hdr, ctx, msg, err);
	json_decref(hdr);
	return c;
}

/* ---- validators ---- */

static const struct {
	const char *name;
	int signo;
} signals[] = {
	{ "HUP", SIGHUP },   { "INT", SIGINT },       { "QUIT", SIGQUIT }, { "ILL", SIGILL },
	{ "TRAP", SIGTRAP }, { "ABRT", SIGABRT },     { "BUS", SIGBUS },   { "FPE", SIGFPE },
	{ "KILL", SIGKILL }, { "USR1", SIGUSR1 },     { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 },
	{ "PIPE", SIGPIPE }, { "ALRM", SIGALRM },     { "TERM", SIGTERM }, { "STKFLT", SIGSTKFLT },
	{ "CHLD", SIGCHLD }, { "CONT", SIGCONT },     { "STOP", SIGSTOP }, { "TSTP", SIGTSTP },
	{ "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },     { "URG", SIGURG },   { "XCPU", SIGXCPU },
	{ "XFSZ", SIGXFSZ }, { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF }, { "WINCH", SIGWINCH },
	{ "IO", SIGIO },     { "PWR", SIGPWR },       { "SYS", SIGSYS },
};

int agent_signal_by_name(const char *name)
{
	if (strncmp(name, "SIG", 3) == 0)
		name += 3;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (strcmp(signals[i].name, name) == 0)
			return signals[i].signo;
	return 0;
}

int agent_signal_number(const json_t *v)
{
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		/* Linux numbers signals 1..64 (_NSIG - 1); 0 only probes. */
		return x >= 1 && x <= 64 ? (int)x : 0;
	}
	if (json_is_string(v))
		return agent_signal_by_name(json_string_value(v));
	return 0;
}

int agent_parse_ip(const char *s, struct agent_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, out->bytes) == 1) {
		out->family = AF_INET;
		out->prefix = 32;
		return 0;
	}
	if (inet_pton(AF_INET6, s, out->bytes) == 1) {
		out->family = AF_INET6;
		out->prefix = 128;
		return 0;
	}
	return -EINVAL;
}

int agent_parse_cidr(const char *s, struct agent_addr *out)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t alen;
	unsigned prefix = 0;
	const char *d;

	if (!slash)
		return -EINVAL;
	alen = (size_t)(slash - s);
	if (alen == 0 || alen >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (agent_parse_ip(buf, out) < 0)
		return -EINVAL;
	d = slash + 1;
	if (!*d || strlen(d) > 3)
		return -EINVAL;
	for (; *d; d++) {
		if (*d < '0' || *d > '9')
			return -EINVAL;
		prefix = prefix * 10 + (unsigned)(*d - '0');
	}
	if (prefix > (out->family == AF_INET ? 32u : 128u))
		return -EINVAL;
	out->prefix = (uint8_t)prefix;
	return 0;
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* RFC 1123 labels: what sethostname accepts is looser, but other guests'
 * resolvers and shells are not. */
#define PEM_BEGIN "-----BEGIN CERTIFICATE-----"
#define PEM_END "-----END CERTIFICATE-----"

/*
 * The outer DER SEQUENCE must fill der exactly: base64 that is not a
 * certificate (a key, random text that happens to be base64) fails here
 * rather than in a TLS library of the guest, later, with a vaguer error.
 */
static bool der_one_sequence(const uint8_t *der, size_t n)
{
	size_t hdr = 2, len;

	if (n < 2 || der[0] != 0x30)
		return false;
	len = der[1];
	if (len & 0x80) {
		size_t k = len & 0x7f;

		/* Long form, minimal (DER): 1..2 length bytes cover 8 KiB. */
		if (k == 0 || k > 2 || n < 2 + k || der[2] == 0 || (k == 1 && der[2] < 0x80))
			return false;
		len = 0;
		for (size_t i = 0; i < k; i++)
			len = len << 8 | der[2 + i];
		hdr += k;
	}
	return len > 0 && hdr + len == n;
}

const char *agent_pem_cert_check(const char *s)
{
	char body[AGENT_TRUST_CA_MAX];
	uint8_t der[AGENT_TRUST_CA_MAX / 4 * 3];
	size_t n = strlen(s), bn = 0, dn;
	const char *p, *end;

	if (n > AGENT_TRUST_CA_MAX)
		return "longer than 8192 bytes";
	if (strncmp(s, PEM_BEGIN "\n", sizeof(PEM_BEGIN)) != 0)
		return "it must start with a '" PEM_BEGIN "' line";
	for (p = s + sizeof(PEM_BEGIN);; p = end + 1) {
		size_t len;

		end = strchrnul(p, '\n');
		len = (size_t)(end - p);
		if (*p == '-')
			break;
		if (!*end)
			return "the '" PEM_END "' line is missing";
		if (len == 0)
			return "an empty line inside the certificate";
		if (len > 76)
			return "a line of base64 longer than 76 characters";
		if (strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") <
		    len)
			return "a character that is not base64 inside the certificate (headers, CR line ends and spaces are refused)";
		memcpy(body + bn, p, len); /* bn + len < n <= sizeof(body) */
		bn += len;
	}
	if ((size_t)(end - p) != sizeof(PEM_END) - 1 || strncmp(p, PEM_END, sizeof(PEM_END) - 1))
		return "a line starting with '-' that is not '" PEM_END "'";
	if (*end && end[1])
		return "text after the '" PEM_END "' line (only one certificate is taken)";
	if (bn == 0)
		return "no base64 between the BEGIN and END lines";
	if (base64_decode(body, bn, der, &dn) < 0)
		return "the base64 does not decode (wrong length or misplaced '=')";
	if (!der_one_sequence(der, dn))
		return "the decoded bytes are not one DER certificate";
	return NULL;
}

bool agent_hostname_valid(const char *s)
{
	size_t n = strlen(s), label = 0;

	if (n == 0 || n > AGENT_HOSTNAME_MAX)
		return false;
	for (size_t i = 0; i <= n; i++) {
		char c = s[i];

		if (c == '.' || c == '\0') {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!is_alnum(c) && c != '-')
			return false;
		if (label == 0 && c == '-')
			return false;
		label++;
	}
	return true;
}

/* The kernel's dev_valid_name(): what it refuses, so should we. */
bool agent_ifname_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > AGENT_IFNAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' ||
		    *s == '\v' || *s == '\f')
			return false;
	return true;
}

bool agent_confine_cwd_ok(const char *cwd)
{
	size_t n = strlen(AGENT_WORKSPACE);
	const char *c;

	if (!cwd)
		return true;
	if (strncmp(cwd, AGENT_WORKSPACE, n) != 0 || (cwd[n] && cwd[n] != '/'))
		return false;
	/* A ".." component would climb out of it, lexically at least. */
	for (c = cwd + n; (c = strstr(c, "..")); c += 2)
		if (c[-1] == '/' && (c[2] == '/' || !c[2]))
			return false;
	return true;
}

bool agent_path_is_root(const char *path)
{
	size_t depth = 0;
	const char *p = path;

	while (*p) {
		const char *e;
		size_t len;

		while (*p == '/')
			p++;
		e = p;
		while (*e && *e != '/')
			e++;
		len = (size_t)(e - p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (depth)
				depth--;
		} else if (len && !(len == 1 && p[0] == '.'))
			depth++;
		p = e;
	}
	return depth == 0;
}

/* ---- reply lines ---- */

void agent_line_free(struct agent_line *l)
{
	free(l->data);
	l->data = NULL;
	l->len = 0;
}

int agent_line_json(struct agent_line *out, const json_t *obj)
{
	char *s;
	size_t n;

	out->data = NULL;
	out->len = 0;
	/* Compact and in insertion order: the documented lines byte for byte. */
	s = json_text(obj, JSON_COMPACT);
	if (!s)
		return -ENOMEM;
	n = strlen(s);
	if (n + 1 > AGENT_HEADER_MAX) {
		free(s);
		return -E2BIG;
	}
	out->data = malloc(n + 1);
	if (!out->data) {
		free(s);
		return -ENOMEM;
	}
	memcpy(out->data, s, n);
	out->data[n] = '\n';
	out->len = n + 1;
	free(s);
	return 0;
}

/* An object under construction; one failed allocation fails the line. */
struct jb {
	json_t *o;
	bool bad;
};

static void jb_set(struct jb *b, const char *k, json_t *v)
{
	if (!b->o) {
		json_decref(v);
		b->bad = true;
		return;
	}
	/* json_object_set_new() drops v itself when it fails. */
	if (!v || json_object_set_new(b->o, k, v) < 0)
		b->bad = true;
}

static void jb_int(struct jb *b, const char *k, uint64_t v)
{
	jb_set(b, k, json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v));
}

static void jb_sint(struct jb *b, const char *k, int64_t v)
{
	jb_set(b, k, json_integer((json_int_t)v));
}

static void jb_bool(struct jb *b, const char *k, bool v)
{
	jb_set(b, k, json_boolean(v));
}

/* Raw bytes as a JSON string, invalid UTF-8 replaced; sets *lossy. */
static json_t *lossy_string(const char *s, size_t n, bool *lossy)
{
	size_t cap = n * 3 + 1;
	char *buf = malloc(cap);
	json_t *v;

	if (!buf)
		return NULL;
	utf8_lossy(buf, cap, (const uint8_t *)s, n, 0, lossy);
	v = json_string(buf);
	free(buf);
	return v;
}

static struct jb jb_new(const char *type)
{
	struct jb b = { .o = json_object() };

	jb_set(&b, "type", json_string(type));
	return b;
}

static int jb_finish(struct jb *b, struct agent_line *out)
{
	int r = b->bad ? -ENOMEM : agent_line_json(out, b->o);

	json_decref(b->o);
	return r;
}

static int line_kv(struct agent_line *out, const char *type, const struct agent_kv *kv, size_t n)
{
	struct jb b = jb_new(type);

	for (size_t i = 0; i < n; i++) {
		if (kv[i].is_bool)
			jb_bool(&b, kv[i].key, kv[i].value != 0);
		else
			jb_sint(&b, kv[i].key, kv[i].value);
	}
	return jb_finish(&b, out);
}

int agent_line_error(struct agent_line *out, enum agent_code code, const char *fmt, ...)
{
	char raw[AGENT_ERR_MESSAGE_MAX];
	va_list ap;
	struct jb b;

	if (code == AGENT_OK || !agent_code_name(code))
		code = AGENT_E_IO_ERROR;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	b = jb_new("error");
	jb_set(&b, "code", json_string(agent_code_name(code)));
	{
		/* Messages quote paths and names from disk, which need not be
		 * UTF-8; the line must still be valid JSON. */
		char msg[AGENT_ERR_MESSAGE_MAX];

		utf8_lossy(msg, sizeof(msg), (const uint8_t *)raw, strlen(raw), 0, NULL);
		jb_set(&b, "message", json_string(msg));
	}
	return jb_finish(&b, out);
}

int agent_line_err(struct agent_line *out, const struct agent_err *err)
{
	return agent_line_error(out, err->code, "%s", err->msg);
}

int agent_line_ok(struct agent_line *out, const struct agent_kv *kv, size_t n)
{
	return line_kv(out, "ok", kv, n);
}

int agent_line_end(struct agent_line *out, const struct agent_kv *kv, size_t n)
{
	return line_kv(out, "end", kv, n);
}

int agent_line_pong(struct agent_line *out)
{
	const struct agent_kv kv = AGENT_INT("protocol", AGENT_PROTOCOL);

	return line_kv(out, "pong", &kv, 1);
}

int agent_line_info(struct agent_line *out, const struct agent_info *in)
{
	struct jb b = jb_new("info");
	const char *k = in->kernel ? in->kernel : "", *h = in->hostname ? in->hostname : "";

	jb_int(&b, "protocol", AGENT_PROTOCOL);
	jb_set(&b, "agent_version", json_string(KILN_VERSION));
	jb_set(&b, "kernel", lossy_string(k, strlen(k), NULL));
	jb_set(&b, "hostname", lossy_string(h, strlen(h), NULL));
	jb_int(&b, "cpus", in->cpus);
	jb_int(&b, "mem_total", in->mem_total);
	jb_int(&b, "mem_available", in->mem_available);
	jb_int(&b, "uptime_ms", in->uptime_ms);
	jb_sint(&b, "time_ns", in->time_ns);
	jb_int(&b, "processes", in->processes);
	return jb_finish(&b, out);
}

int agent_line_chunk(struct agent_line *out, enum agent_stream s, int64_t seq, uint64_t len)
{
	static const char *const names[] = { "stdout", "stderr", "data" };
	struct jb b;

	if ((unsigned)s > AGENT_DATA || len > AGENT_LEN_MAX)
		return -EINVAL;
	b = jb_new(names[s]);
	if (seq >= 0)
		jb_sint(&b, "seq", seq);
	jb_int(&b, "len", len);
	return jb_finish(&b, out);
}

int agent_line_gap(struct agent_line *out, uint64_t seq, uint64_t bytes)
{
	struct jb b = jb_new("gap");

	jb_int(&b, "seq", seq);
	jb_int(&b, "bytes", bytes);
	return jb_finish(&b, out);
}

int agent_line_spawned(struct agent_line *out, uint32_t id, int pid)
{
	struct jb b = jb_new("spawned");

	jb_int(&b, "id", id);
	jb_sint(&b, "pid", pid);
	return jb_finish(&b, out);
}

int agent_line_attached(struct agent_line *out, uint32_t id, int pid, bool pty, bool running,
			uint64_t seq)
{
	struct jb b = jb_new("attached");

	jb_int(&b, "id", id);
	jb_sint(&b, "pid", pid);
	jb_bool(&b, "pty", pty);
	jb_bool(&b, "running", running);
	jb_int(&b, "seq", seq);
	return jb_finish(&b, out);
}

int agent_line_file(struct agent_line *out, uint64_t size)
{
	struct jb b = jb_new("file");

	jb_int(&b, "size", size);
	return jb_finish(&b, out);
}

int agent_line_result(struct agent_line *out, uint64_t size, uint64_t len)
{
	struct jb b = jb_new("result");

	jb_int(&b, "size", size);
	jb_int(&b, "len", len);
	return jb_finish(&b, out);
}

static void jb_status(struct jb *b, int exit_code, int signo)
{
	jb_set(b, "exit_code", exit_code >= 0 ? json_integer(exit_code) : json_null());
	jb_set(b, "signal", signo > 0 ? json_integer(signo) : json_null());
}

int agent_line_exit(struct agent_line *out, const struct agent_exit *e)
{
	struct jb b = jb_new("exit");

	if (e->id)
		jb_int(&b, "id", e->id);
	jb_sint(&b, "pid", e->pid);
	jb_status(&b, e->exit_code, e->signo);
	jb_bool(&b, "timed_out", e->timed_out);
	jb_int(&b, "stdout_bytes", e->stdout_bytes);
	jb_int(&b, "stderr_bytes", e->stderr_bytes);
	if (e->is_exec) {
		jb_bool(&b, "stdout_truncated", e->stdout_truncated);
		jb_bool(&b, "stderr_truncated", e->stderr_truncated);
	}
	jb_int(&b, "wall_us", e->wall_us);
	jb_int(&b, "user_us", e->user_us);
	jb_int(&b, "sys_us", e->sys_us);
	return jb_finish(&b, out);
}

const char *agent_kind_name(uint32_t st_mode)
{
	/* S_IFMT values are fixed by POSIX's historical encoding. */
	switch (st_mode & 0170000) {
	case 0100000:
		return "file";
	case 0040000:
		return "dir";
	case 0120000:
		return "symlink";
	case 0010000:
		return "fifo";
	case 0140000:
		return "socket";
	case 0020000:
		return "char";
	case 0060000:
		return "block";
	default:
		return "unknown";
	}
}

int agent_line_stat(struct agent_line *out, const struct agent_stat *st, bool entry)
{
	struct jb b = jb_new(entry ? "entry" : "stat");
	bool lossy = false;
	json_t *path = lossy_string(st->path, st->path_len, &lossy);
	json_t *target = st->target ? lossy_string(st->target, st->target_len, &lossy) : NULL;

	jb_set(&b, "path", path);
	if (lossy)
		jb_bool(&b, "lossy", true);
	if (entry)
		jb_int(&b, "depth", st->depth);
	jb_set(&b, "kind", json_string(agent_kind_name(st->st_mode)));
	jb_int(&b, "size", st->size);
	jb_int(&b, "mode", st->st_mode & 07777);
	jb_int(&b, "uid", st->uid);
	jb_int(&b, "gid", st->gid);
	jb_int(&b, "nlink", st->nlink);
	jb_sint(&b, "mtime_ns", st->mtime_ns);
	if (st->target)
		jb_set(&b, "target", target);
	return jb_finish(&b, out);
}

int agent_line_exists(struct agent_line *out, bool exists, uint32_t st_mode)
{
	struct jb b = jb_new("exists");

	jb_bool(&b, "exists", exists);
	if (exists)
		jb_set(&b, "kind", json_string(agent_kind_name(st_mode)));
	return jb_finish(&b, out);
}

#define ARGV0_MAX 4096

static int process_line(struct agent_line *out, const struct agent_process_info *p, bool full)
{
	struct jb b = jb_new("process");
	const char *a0 = p->argc ? p->argv[0] : "";

	jb_int(&b, "id", p->id);
	jb_sint(&b, "pid", p->pid);
	if (full) {
		json_t *arr = json_array();

		for (size_t i = 0; arr && i < p->argc; i++)
			if (json_array_append_new(arr,
						  lossy_string(p->argv[i], strlen(p->argv[i]),
							       NULL)) < 0)
				b.bad = true;
		jb_set(&b, "argv", arr);
	} else {
		char cut[ARGV0_MAX + 1];

		utf8_lossy(cut, sizeof(cut), (const uint8_t *)a0, strlen(a0), 0, NULL);
		jb_set(&b, "argv0", json_string(cut));
		jb_bool(&b, "argv_truncated", true);
	}
	jb_bool(&b, "pty", p->pty);
	jb_bool(&b, "running", p->running);
	jb_status(&b, p->exit_code, p->signo);
	jb_bool(&b, "timed_out", p->timed_out);
	jb_int(&b, "seq", p->seq);
	jb_int(&b, "attached", p->attached);
	return jb_finish(&b, out);
}

int agent_line_process(struct agent_line *out, const struct agent_process_info *p)
{
	int r = process_line(out, p, true);

	/* argv came from a request line of up to 64 KiB, so with the other
	 * fields it may not fit one line: fall back to its first word. */
	if (r == -E2BIG)
		r = process_line(out, p, false);
	return r;
}

/* ---- watch ---- */

static const char *const fs_kinds[AGENT_FS_KIND_COUNT] = {
	[AGENT_FS_CREATE] = "create",     [AGENT_FS_MODIFY] = "modify",
	[AGENT_FS_DELETE] = "delete",     [AGENT_FS_RENAME] = "rename",
	[AGENT_FS_OVERFLOW] = "overflow",
};

const char *agent_name_at(const char *const *names, int n, int i)
{
	return i >= 0 && i < n ? names[i] : NULL;
}

int agent_name_index(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], name) == 0)
			return i;
	return -1;
}

const char *agent_fs_kind_name(enum agent_fs_kind k)
{
	return agent_name_at(fs_kinds, AGENT_FS_KIND_COUNT, (int)k);
}

int agent_fs_kind_parse(const char *name)
{
	return agent_name_index(fs_kinds, AGENT_FS_KIND_COUNT, name);
}

int agent_line_watching(struct agent_line *out, const char *path, bool recursive, uint32_t watches)
{
	struct jb b = jb_new("watching");

	jb_set(&b, "path", lossy_string(path, strlen(path), NULL));
	jb_bool(&b, "recursive", recursive);
	jb_int(&b, "watches", watches);
	return jb_finish(&b, out);
}

int agent_line_fs_event(struct agent_line *out, const struct agent_fs_event *ev)
{
	const char *kind = agent_fs_kind_name(ev->kind);
	struct jb b = jb_new("fs_event");
	bool lossy = false;

	if (!kind) {
		json_decref(b.o);
		return -EINVAL;
	}
	jb_int(&b, "seq", ev->seq);
	jb_set(&b, "event", json_string(kind));
	if (ev->kind == AGENT_FS_OVERFLOW) {
		jb_set(&b, "reason", json_string(ev->reason ? ev->reason : "queue"));
		jb_int(&b, "dropped", ev->dropped);
		return jb_finish(&b, out);
	}
	jb_set(&b, "path", lossy_string(ev->path, ev->path_len, &lossy));
	if (ev->kind == AGENT_FS_RENAME)
		jb_set(&b, "old_path", lossy_string(ev->old_path, ev->old_len, &lossy));
	jb_bool(&b, "is_dir", ev->is_dir);
	if (lossy)
		jb_bool(&b, "lossy", true);
	return jb_finish(&b, out);
}

int agent_line_watch_end(struct agent_line *out, uint64_t seq, const char *reason)
{
	struct jb b = jb_new("watch_end");

	jb_int(&b, "seq", seq);
	jb_set(&b, "reason", json_string(reason));
	return jb_finish(&b, out);
}
