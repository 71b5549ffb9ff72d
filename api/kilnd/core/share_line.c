/* Client share lines, checked and written anew; see share_line.h. */
#include "api/kilnd/core/share_line.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "lib/base/json_text.h"
#include "lib/base/utf8.h"

static const char *const op_names[] = {
	[SHARE_OP_STAT] = "stat",     [SHARE_OP_READDIR] = "readdir",
	[SHARE_OP_READ] = "read",     [SHARE_OP_WRITE] = "write",
	[SHARE_OP_CREATE] = "create", [SHARE_OP_MKDIR] = "mkdir",
	[SHARE_OP_UNLINK] = "unlink", [SHARE_OP_RMDIR] = "rmdir",
	[SHARE_OP_RENAME] = "rename", [SHARE_OP_TRUNCATE] = "truncate",
};
#define NOPS (sizeof(op_names) / sizeof(op_names[0]))

/* Each op's fields besides id, op and path (requests) and its ok reply's
 * besides id: NULL-terminated. */
static const char *const req_fields[NOPS][3] = {
	[SHARE_OP_READ] = { "offset", "size", NULL }, [SHARE_OP_WRITE] = { "offset", "data", NULL },
	[SHARE_OP_CREATE] = { "mode", NULL },         [SHARE_OP_MKDIR] = { "mode", NULL },
	[SHARE_OP_RENAME] = { "to", NULL },           [SHARE_OP_TRUNCATE] = { "size", NULL },
};
static const char *const reply_fields[NOPS][5] = {
	[SHARE_OP_STAT] = { "type", "size", "mode", "mtime", NULL },
	[SHARE_OP_READDIR] = { "entries", NULL },
	[SHARE_OP_READ] = { "data", NULL },
	[SHARE_OP_WRITE] = { "size", NULL },
};

#define MODE_MAX 07777
/* mtime: seconds, exact in a double. */
#define MTIME_ABS_MAX 9007199254740992.0

static int fail(char why[SHARE_WHY_MAX], const char *fmt, const char *arg)
{
	snprintf(why, SHARE_WHY_MAX, fmt, arg);
	return -1;
}

/* fail() quoting at most 40 bytes of s (valid UTF-8, a JSON string's),
 * cut between characters: why goes into the client's error line, JSON. */
static int fail_quoting(char why[SHARE_WHY_MAX], const char *fmt, const char *s)
{
	char q[41];
	size_t n = strlen(s) < 40 ? strlen(s) : 40;

	n = utf8_complete_prefix((const uint8_t *)s, n);
	memcpy(q, s, n);
	q[n] = '\0';
	return fail(why, fmt, q);
}

static bool listed(const char *const *names, const char *key)
{
	for (; *names; names++)
		if (strcmp(*names, key) == 0)
			return true;
	return false;
}

/* Every key of o is one of base or more. */
static int only(const json_t *o, const char *const *base, const char *const *more,
		char why[SHARE_WHY_MAX])
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)o, key, v)
	{
		if (!listed(base, key) && !listed(more, key))
			return fail_quoting(why, "unknown field '%s'", key);
	}
	return 0;
}

/* A non-negative integer field at most max into *out. */
static int get_uint(const json_t *o, const char *key, uint64_t min, uint64_t max, uint64_t *out,
		    char why[SHARE_WHY_MAX])
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		return fail(why, "'%s' must be an integer", key);
	if (json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < min ||
	    (uint64_t)json_integer_value(v) > max)
		return fail(why, "'%s' is out of range", key);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* One path component: 1..SHARE_NAME_MAX bytes, no '/', not . or .. */
static bool name_ok(const char *s, size_t n)
{
	return n >= 1 && n <= SHARE_NAME_MAX && !memchr(s, '/', n) && !memchr(s, '\0', n) &&
		!(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

static bool path_ok(const char *p, size_t n)
{
	size_t i = 1;

	if (n < 1 || n > SHARE_PATH_MAX || p[0] != '/' || memchr(p, '\0', n))
		return false;
	if (n == 1)
		return true; /* the share's root */
	while (i <= n) {
		const char *slash = memchr(p + i, '/', n - i);
		size_t len = slash ? (size_t)(slash - (p + i)) : n - i;

		if (!name_ok(p + i, len))
			return false;
		i += len + 1;
	}
	return true;
}

static int get_path(const json_t *o, const char *key, const char **out, char why[SHARE_WHY_MAX])
{
	json_t *v = json_object_get(o, key);

	if (!json_is_string(v))
		return fail(why, "'%s' must be a string", key);
	if (!path_ok(json_string_value(v), json_string_length(v)))
		return fail(why,
			    "'%s' is not an absolute path of components (1..255 bytes, not . or ..; at most 4096 bytes)",
			    key);
	*out = json_string_value(v);
	return 0;
}

/* The bytes canonical base64 text of length n decodes to; -1 when it is not. */
static long b64_len(const char *s, size_t n)
{
	size_t pad = 0;

	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			(c >= '0' && c <= '9') || c == '+' || c == '/';

		if (c == '=' && i >= n - 2) {
			pad++;
			continue;
		}
		if (!alpha || pad)
			return -1;
	}
	if (pad == 2 && s[n - 2] != '=')
		return -1;
	return (long)(n / 4 * 3 - pad);
}

/* data: base64 of at most max bytes; its length into *len. */
static int get_data(const json_t *o, uint64_t max, uint64_t *len, char why[SHARE_WHY_MAX])
{
	json_t *v = json_object_get(o, "data");
	long n;

	if (!json_is_string(v))
		return fail(why, "'%s' must be a base64 string", "data");
	/* Bounded before it is walked: 4 text bytes a 3 data bytes. */
	if (json_string_length(v) > (max + 2) / 3 * 4)
		return fail(why, "'%s' holds more bytes than allowed", "data");
	n = b64_len(json_string_value(v), json_string_length(v));
	if (n < 0)
		return fail(why, "'%s' is not padded standard base64", "data");
	if ((uint64_t)n > max)
		return fail(why, "'%s' holds more bytes than allowed", "data");
	*len = (uint64_t)n;
	return 0;
}

/* The line as a JSON object with a valid id. */
static json_t *load(const char *line, size_t n, uint32_t *id, char why[SHARE_WHY_MAX])
{
	json_t *o;
	uint64_t v;

	*id = 0;
	if (n >= SHARE_LINE_MAX) {
		fail(why, "the line is longer than %s bytes", "262143");
		return NULL;
	}
	o = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		fail(why, "%s", "not a JSON object");
		return NULL;
	}
	if (get_uint(o, "id", 1, UINT32_MAX, &v, why)) {
		json_decref(o);
		return NULL;
	}
	*id = (uint32_t)v;
	return o;
}

/* o compact, or -1 with why (out of memory). */
static int emit(json_t *o, char **canon, char why[SHARE_WHY_MAX])
{
	*canon = o ? json_text(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return *canon ? 0 : fail(why, "%s", "out of memory");
}

/* A check's end: the line's object dropped; ok: out written as *canon. */
static int finish(json_t *o, json_t *out, bool ok, char **canon, char why[SHARE_WHY_MAX])
{
	json_decref(o);
	if (!ok) {
		json_decref(out);
		return -1;
	}
	return emit(out, canon, why);
}

static int op_of(const json_t *o, enum share_op *op, char why[SHARE_WHY_MAX])
{
	json_t *v = json_object_get(o, "op");

	if (!json_is_string(v))
		return fail(why, "'%s' must be a string", "op");
	for (size_t i = 0; i < NOPS; i++) {
		if (strcmp(json_string_value(v), op_names[i]) == 0) {
			*op = (enum share_op)i;
			return 0;
		}
	}
	return fail_quoting(why, "op '%s' is not one of the protocol's", json_string_value(v));
}

/* The op's own fields, checked, onto out. */
static int request_fields(const json_t *o, struct share_req *req, json_t *out,
			  char why[SHARE_WHY_MAX])
{
	const char *to;
	uint64_t a, b;

	switch (req->op) {
	case SHARE_OP_READ:
		if (get_uint(o, "offset", 0, INT64_MAX, &a, why) ||
		    get_uint(o, "size", 1, SHARE_IO_MAX, &b, why))
			return -1;
		req->size = b;
		return json_object_set_new(out, "offset", json_integer((json_int_t)a)) ||
			json_object_set_new(out, "size", json_integer((json_int_t)b));
	case SHARE_OP_WRITE:
		if (get_uint(o, "offset", 0, INT64_MAX, &a, why) ||
		    get_data(o, SHARE_IO_MAX, &req->size, why))
			return -1;
		return json_object_set_new(out, "offset", json_integer((json_int_t)a)) ||
			json_object_set(out, "data", json_object_get(o, "data"));
	case SHARE_OP_CREATE:
	case SHARE_OP_MKDIR:
		if (get_uint(o, "mode", 0, MODE_MAX, &a, why))
			return -1;
		return !!json_object_set_new(out, "mode", json_integer((json_int_t)a));
	case SHARE_OP_RENAME:
		if (get_path(o, "to", &to, why))
			return -1;
		return !!json_object_set_new(out, "to", json_string(to));
	case SHARE_OP_TRUNCATE:
		if (get_uint(o, "size", 0, INT64_MAX, &a, why))
			return -1;
		return !!json_object_set_new(out, "size", json_integer((json_int_t)a));
	default:
		return 0;
	}
}

int share_request_check(const char *line, size_t n, struct share_req *req, char **canon,
			char why[SHARE_WHY_MAX])
{
	static const char *const base[] = { "id", "op", "path", NULL };
	json_t *o, *out = NULL;
	const char *path;

	memset(req, 0, sizeof(*req));
	*canon = NULL;
	o = load(line, n, &req->id, why);
	if (!o)
		return -1;
	if (op_of(o, &req->op, why) || only(o, base, req_fields[req->op], why) ||
	    get_path(o, "path", &path, why))
		goto bad;
	out = json_pack("{s:I,s:s,s:s}", "id", (json_int_t)req->id, "op", op_names[req->op], "path",
			path);
	if (!out) {
		fail(why, "%s", "out of memory");
		goto bad;
	}
	switch (request_fields(o, req, out, why)) {
	case 0:
		break;
	case -1:
		goto bad;
	default:
		fail(why, "%s", "out of memory");
		goto bad;
	}
	return finish(o, out, true, canon, why);
bad:
	return finish(o, out, false, canon, why);
}

static int get_type(const json_t *o, const char **type, char why[SHARE_WHY_MAX])
{
	json_t *v = json_object_get(o, "type");
	const char *s = json_string_value(v);

	if (!s || (strcmp(s, "file") != 0 && strcmp(s, "dir") != 0))
		return fail(why, "'%s' must be \"file\" or \"dir\"", "type");
	*type = s;
	return 0;
}

static int reply_stat(const json_t *o, json_t *out, char why[SHARE_WHY_MAX])
{
	json_t *mt = json_object_get(o, "mtime");
	const char *type;
	uint64_t size, mode;

	if (get_type(o, &type, why) || get_uint(o, "size", 0, INT64_MAX, &size, why))
		return -1;
	if (json_object_set_new(out, "type", json_string(type)) ||
	    json_object_set_new(out, "size", json_integer((json_int_t)size)))
		return fail(why, "%s", "out of memory");
	if (json_object_get(o, "mode")) {
		if (get_uint(o, "mode", 0, MODE_MAX, &mode, why))
			return -1;
		if (json_object_set_new(out, "mode", json_integer((json_int_t)mode)))
			return fail(why, "%s", "out of memory");
	}
	if (mt) {
		if (!json_is_number(mt) || json_number_value(mt) > MTIME_ABS_MAX ||
		    json_number_value(mt) < -MTIME_ABS_MAX)
			return fail(why, "'%s' must be a number of seconds", "mtime");
		if (json_object_set_new(out, "mtime",
					json_is_integer(mt) ? json_integer(json_integer_value(mt))
							    : json_real(json_real_value(mt))))
			return fail(why, "%s", "out of memory");
	}
	return 0;
}

static int reply_readdir(const json_t *o, json_t *out, char why[SHARE_WHY_MAX])
{
	static const char *const entry[] = { "name", "type", NULL }, *const none[] = { NULL };
	json_t *arr = json_object_get(o, "entries"), *copy, *v;
	const char *type;
	size_t i;

	if (!json_is_array(arr))
		return fail(why, "'%s' must be an array", "entries");
	if (json_array_size(arr) > SHARE_ENTRIES_MAX)
		return fail(why, "'%s' has more than 10000 items", "entries");
	copy = json_array();
	if (!copy || json_object_set_new(out, "entries", copy))
		return fail(why, "%s", "out of memory");
	json_array_foreach(arr, i, v)
	{
		json_t *name = json_object_get(v, "name");

		if (!json_is_object(v) || only(v, entry, none, why))
			return fail(why, "%s", "an entry must be {\"name\", \"type\"}");
		if (!json_is_string(name) ||
		    !name_ok(json_string_value(name), json_string_length(name)))
			return fail(
				why, "%s",
				"an entry's name must be one path component (1..255 bytes, no '/', not . or ..)");
		if (get_type(v, &type, why))
			return -1;
		if (json_array_append_new(copy, json_pack("{s:O,s:s}", "name", name, "type", type)))
			return fail(why, "%s", "out of memory");
	}
	return 0;
}

static int reply_ok(const json_t *o, const struct share_req *req, json_t *out,
		    char why[SHARE_WHY_MAX])
{
	uint64_t n;

	switch (req->op) {
	case SHARE_OP_STAT:
		return reply_stat(o, out, why);
	case SHARE_OP_READDIR:
		return reply_readdir(o, out, why);
	case SHARE_OP_READ:
		if (get_data(o, req->size, &n, why))
			return -1;
		return json_object_set(out, "data", json_object_get(o, "data"))
			? fail(why, "%s", "out of memory")
			: 0;
	case SHARE_OP_WRITE:
		if (get_uint(o, "size", 0, req->size, &n, why))
			return -1;
		return json_object_set_new(out, "size", json_integer((json_int_t)n))
			? fail(why, "%s", "out of memory")
			: 0;
	default:
		return 0;
	}
}

int share_reply_check(const char *line, size_t n, const struct share_req *req, char **canon,
		      char why[SHARE_WHY_MAX])
{
	static const char *const base[] = { "id", NULL }, *const err[] = { "error", NULL };
	static const char errors[] = SHARE_ERRORS;
	json_t *o, *out = NULL, *ev;
	uint32_t id;

	*canon = NULL;
	o = load(line, n, &id, why);
	if (!o)
		return -1;
	if (!req->id || id != req->id) {
		snprintf(why, SHARE_WHY_MAX, "id %u is not the request outstanding", id);
		json_decref(o);
		return -2;
	}
	out = json_pack("{s:I}", "id", (json_int_t)id);
	if (!out) {
		fail(why, "%s", "out of memory");
		goto bad;
	}
	ev = json_object_get(o, "error");
	if (ev) {
		const char *name = json_string_value(ev);
		const char *at = name && *name && !strchr(name, ' ') ? strstr(errors, name) : NULL;
		size_t len = name ? strlen(name) : 0;

		if (only(o, base, err, why))
			goto bad;
		/* A whole word of the list. */
		if (!at || (at != errors && at[-1] != ' ') || (at[len] != ' ' && at[len] != '\0')) {
			fail(why, "%s", "'error' must be one of " SHARE_ERRORS);
			goto bad;
		}
		if (json_object_set_new(out, "error", json_string(name))) {
			fail(why, "%s", "out of memory");
			goto bad;
		}
	} else if (only(o, base, reply_fields[req->op], why) || reply_ok(o, req, out, why)) {
		goto bad;
	}
	return finish(o, out, true, canon, why);
bad:
	return finish(o, out, false, canon, why);
}

char *share_reply_eio(uint32_t id)
{
	json_t *o = json_pack("{s:I,s:s}", "id", (json_int_t)id, "error", "EIO");
	char *s = o ? json_text(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}

char *share_client_error(const char *msg)
{
	json_t *o = json_pack("{s:s,s:s}", "kind", "error", "message", msg);
	char *s = o ? json_text(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}
