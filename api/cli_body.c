/* kiln command lines into kilnd requests (cli_body.h). */
#include "cli_body.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/*
 * An id goes into the URL path: holding it to [A-Za-z0-9_-] means "../x"
 * or "a/stop" can never address another endpoint. kilnd answers 404 for
 * a well-formed id it does not know.
 */
static int check_id(const char *s, char *id, char *err, size_t errsz)
{
	size_t n = strlen(s);

	if (!n || n > CLI_ID_MAX || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n) {
		snprintf(err, errsz, "'%s' is not a sandbox id (see `kiln ls`)", s);
		return -1;
	}
	memcpy(id, s, n + 1);
	return 0;
}

static int int_field(json_t *body, const char *field, const char *opt, const char *v, unsigned long long max,
		     char *err, size_t errsz)
{
	unsigned long long n;

	if (cli_parse_uint(v, 0, max, &n)) {
		snprintf(err, errsz, "%s '%s': expected a whole number", opt, v);
		return -1;
	}
	json_object_set_new(body, field, json_integer((json_int_t)n));
	return 0;
}

static int str_field(json_t *body, const char *field, const char *opt, const char *v, char *err, size_t errsz)
{
	json_t *s = json_string(v);

	if (!s) {
		snprintf(err, errsz, "%s: not valid UTF-8", opt);
		return -1;
	}
	json_object_set_new(body, field, s);
	return 0;
}

/* Object or array field, created on first use. */
static json_t *sub(json_t *body, const char *field, bool array)
{
	json_t *v = json_object_get(body, field);

	if (!v) {
		v = array ? json_array() : json_object();
		json_object_set_new(body, field, v);
	}
	return v;
}

enum { C_IMAGE = 1, C_CPUS, C_MEMORY, C_ENV, C_HOSTNAME, C_LABEL, C_SHARE, C_TIMEOUT, C_NO_CONSOLE };

/* Integers above this are refused by kilnd anyway; the cap keeps them exact in JSON. */
#define CLI_INT_MAX 0x7fffffffffffULL

int cli_create_body(int argc, char **argv, struct cli_globals *g, json_t **body, char *err, size_t errsz)
{
	static const struct cli_optdef defs[] = {
		{ "image", 0, true, C_IMAGE },	   { "cpus", 0, true, C_CPUS },
		{ "memory", 0, true, C_MEMORY },   { "env", 'e', true, C_ENV },
		{ "hostname", 0, true, C_HOSTNAME }, { "label", 'l', true, C_LABEL },
		{ "share", 0, true, C_SHARE },	   { "timeout", 0, true, C_TIMEOUT },
		{ "no-console", 0, false, C_NO_CONSOLE }, { 0 },
	};
	struct cli_scan s;
	json_t *b = json_object();
	int rc = 0, opt;

	cli_scan_init(&s, argc, argv, defs, g);
	/* The default image: kilnd requires one and "minimal" is the image
	 * kiln builds (README), so `kiln create` alone does the obvious thing. */
	json_object_set_new(b, "image", json_string("minimal"));
	while (!rc && (opt = cli_scan_next(&s)) != CLI_SCAN_DONE) {
		switch (opt) {
		case C_IMAGE:
			rc = str_field(b, "image", "--image", s.value, err, errsz);
			break;
		case C_CPUS:
			rc = int_field(b, "cpus", "--cpus", s.value, CLI_INT_MAX, err, errsz);
			break;
		case C_MEMORY:
			rc = int_field(b, "memory_mib", "--memory", s.value, CLI_INT_MAX, err, errsz);
			break;
		case C_TIMEOUT:
			rc = int_field(b, "timeout_s", "--timeout", s.value, CLI_INT_MAX, err, errsz);
			break;
		case C_HOSTNAME:
			rc = str_field(b, "hostname", "--hostname", s.value, err, errsz);
			break;
		case C_ENV:
			rc = cli_put_kv(sub(b, "env", false), s.value, false, "--env", err, errsz);
			break;
		case C_LABEL:
			rc = cli_put_kv(sub(b, "labels", false), s.value, false, "--label", err, errsz);
			break;
		case C_SHARE:
			rc = cli_put_share(sub(b, "shares", true), s.value, err, errsz);
			break;
		case C_NO_CONSOLE:
			json_object_set_new(b, "console", json_false());
			break;
		case CLI_SCAN_ERROR:
			snprintf(err, errsz, "%s", s.err);
			rc = -1;
			break;
		case CLI_SCAN_POSITIONAL:
			snprintf(err, errsz, "unexpected argument '%s' (create takes only options)", s.value);
			rc = -1;
			break;
		case CLI_SCAN_REST:
			snprintf(err, errsz, "unexpected '--' (create takes only options)");
			rc = -1;
			break;
		}
	}
	if (rc) {
		json_decref(b);
		return -1;
	}
	*body = b;
	return 0;
}

enum { X_USER = 1, X_CWD, X_ENV, X_TIMEOUT_MS, X_STREAM, X_STDIN, X_SHELL };

int cli_exec_parse(int argc, char **argv, struct cli_globals *g, struct cli_exec_req *req, char *err, size_t errsz)
{
	static const struct cli_optdef defs[] = {
		{ "user", 'u', true, X_USER },	    { "cwd", 'w', true, X_CWD },
		{ "env", 'e', true, X_ENV },	    { "timeout-ms", 0, true, X_TIMEOUT_MS },
		{ "stream", 0, false, X_STREAM },   { "stdin", 'i', false, X_STDIN },
		{ "shell", 0, false, X_SHELL },	    { 0 },
	};
	struct cli_scan s;
	json_t *b = json_object(), *av = json_array();
	int rc = 0, opt, rest = -1;
	bool have_id = false;

	memset(req, 0, sizeof(*req));
	cli_scan_init(&s, argc, argv, defs, g);
	while (!rc && rest < 0 && (opt = cli_scan_next(&s)) != CLI_SCAN_DONE) {
		switch (opt) {
		case X_USER:
			rc = str_field(b, "user", "--user", s.value, err, errsz);
			break;
		case X_CWD:
			rc = str_field(b, "cwd", "--cwd", s.value, err, errsz);
			break;
		case X_ENV:
			rc = cli_put_kv(sub(b, "env", false), s.value, true, "--env", err, errsz);
			break;
		case X_TIMEOUT_MS:
			rc = int_field(b, "timeout_ms", "--timeout-ms", s.value, CLI_INT_MAX, err, errsz);
			break;
		case X_STREAM:
			req->stream = true;
			break;
		case X_STDIN:
			req->send_stdin = true;
			break;
		case X_SHELL:
			json_object_set_new(b, "shell", json_true());
			break;
		case CLI_SCAN_ERROR:
			snprintf(err, errsz, "%s", s.err);
			rc = -1;
			break;
		case CLI_SCAN_POSITIONAL:
			if (!have_id) {
				rc = check_id(s.value, req->id, err, errsz);
				have_id = true;
			} else {
				/* The program starts at the first word after the id,
				 * so `kiln exec ID ls -l` passes -l to ls. */
				rest = s.i - 1;
			}
			break;
		case CLI_SCAN_REST:
			rest = s.i;
			break;
		}
	}
	if (!rc && !have_id) {
		snprintf(err, errsz, "missing sandbox id (kiln exec ID [options] -- PROGRAM [ARG...])");
		rc = -1;
	}
	if (!rc && (rest < 0 || rest >= argc)) {
		snprintf(err, errsz, "missing the program to run (kiln exec ID [options] -- PROGRAM [ARG...])");
		rc = -1;
	}
	for (int i = rest; !rc && i < argc; i++) {
		json_t *a = json_string(argv[i]);

		if (!a) {
			snprintf(err, errsz, "argument %d is not valid UTF-8", i - rest + 1);
			rc = -1;
		} else {
			json_array_append_new(av, a);
		}
	}
	if (rc) {
		json_decref(b);
		json_decref(av);
		return -1;
	}
	json_object_set_new(b, "argv", av);
	req->body = b;
	return 0;
}

int cli_url_encode(const char *s, char *out, size_t osz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    strchr("-._~/", c);

		if (o + (keep ? 1 : 3) >= osz)
			return -ENAMETOOLONG;
		if (keep) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (o >= osz)
		return -ENAMETOOLONG;
	out[o] = 0;
	return 0;
}

/* Append "&name=" or "?name=" and value encoded to q. */
static int query_add(char *q, size_t qsz, const char *name, const char *value)
{
	size_t n = strlen(q);
	int w = snprintf(q + n, qsz - n, "%c%s=", n ? '&' : '?', name);

	if (w < 0 || (size_t)w >= qsz - n)
		return -ENAMETOOLONG;
	return cli_url_encode(value, q + n + w, qsz - n - (size_t)w);
}

enum { L_STATE = 1, L_LABEL };

int cli_list_query(int argc, char **argv, struct cli_globals *g, char *q, size_t qsz, char *err, size_t errsz)
{
	static const struct cli_optdef defs[] = {
		{ "state", 0, true, L_STATE },
		{ "label", 'l', true, L_LABEL },
		{ 0 },
	};
	struct cli_scan s;
	int opt;

	q[0] = 0;
	cli_scan_init(&s, argc, argv, defs, g);
	while ((opt = cli_scan_next(&s)) != CLI_SCAN_DONE) {
		switch (opt) {
		case L_STATE:
			if (query_add(q, qsz, "state", s.value))
				goto too_long;
			break;
		case L_LABEL:
			if (!strchr(s.value, '=') || s.value[0] == '=') {
				snprintf(err, errsz, "--label '%s': expected KEY=VALUE", s.value);
				return -1;
			}
			if (query_add(q, qsz, "label", s.value))
				goto too_long;
			break;
		case CLI_SCAN_ERROR:
			snprintf(err, errsz, "%s", s.err);
			return -1;
		default:
			snprintf(err, errsz, "unexpected argument '%s' (ls takes only options)",
				 s.value ? s.value : "--");
			return -1;
		}
	}
	return 0;
too_long:
	snprintf(err, errsz, "the filters are too long");
	return -1;
}

int cli_one_id(int argc, char **argv, struct cli_globals *g, char *id, char *err, size_t errsz)
{
	struct cli_scan s;
	bool have = false;
	int opt;

	cli_scan_init(&s, argc, argv, NULL, g);
	while ((opt = cli_scan_next(&s)) != CLI_SCAN_DONE) {
		if (opt == CLI_SCAN_ERROR) {
			snprintf(err, errsz, "%s", s.err);
			return -1;
		}
		if (opt != CLI_SCAN_POSITIONAL || have) {
			snprintf(err, errsz, "expected one sandbox id, got more ('%s')", s.value ? s.value : "--");
			return -1;
		}
		if (check_id(s.value, id, err, errsz))
			return -1;
		have = true;
	}
	if (!have) {
		snprintf(err, errsz, "missing sandbox id (see `kiln ls`)");
		return -1;
	}
	return 0;
}

/* "ID:/path" → id and path; 0 when arg is a guest operand, 1 when local. */
static int guest_operand(const char *arg, char *id, const char **path, char *err, size_t errsz)
{
	const char *colon = strchr(arg, ':');
	char idbuf[CLI_ID_MAX + 2];
	size_t n;

	/* A local path holding ':' must not start with an id-like word;
	 * "./a:b" and "/x:y" are local because '/' or '.' precede the colon. */
	if (!colon || colon == arg || memchr(arg, '/', (size_t)(colon - arg)))
		return 1;
	n = (size_t)(colon - arg);
	if (n > CLI_ID_MAX + 1)
		n = CLI_ID_MAX + 1;
	memcpy(idbuf, arg, n);
	idbuf[n] = 0;
	if (check_id(idbuf, id, err, errsz))
		return -1;
	if (colon[1] != '/') {
		snprintf(err, errsz, "'%s': the guest path must be absolute (ID:/path)", arg);
		return -1;
	}
	*path = colon + 1;
	return 0;
}

enum { P_USER = 1, P_PARENTS };

int cli_cp_parse(int argc, char **argv, struct cli_globals *g, struct cli_cp_req *req, char *err, size_t errsz)
{
	static const struct cli_optdef defs[] = {
		{ "user", 'u', true, P_USER },
		{ "parents", 'p', false, P_PARENTS },
		{ 0 },
	};
	const char *ops[2];
	int nops = 0, opt, k0, k1;
	struct cli_scan s;
	char id0[CLI_ID_MAX + 1], id1[CLI_ID_MAX + 1];
	const char *p0 = NULL, *p1 = NULL;

	memset(req, 0, sizeof(*req));
	cli_scan_init(&s, argc, argv, defs, g);
	while ((opt = cli_scan_next(&s)) != CLI_SCAN_DONE) {
		switch (opt) {
		case P_USER:
			req->user = s.value;
			break;
		case P_PARENTS:
			req->parents = true;
			break;
		case CLI_SCAN_ERROR:
			snprintf(err, errsz, "%s", s.err);
			return -1;
		case CLI_SCAN_REST:
			/* After "--" everything is an operand, even "-x". */
			for (; s.i < s.argc; s.i++) {
				if (nops == 2)
					goto count;
				ops[nops++] = s.argv[s.i];
			}
			break;
		case CLI_SCAN_POSITIONAL:
			if (nops == 2)
				goto count;
			ops[nops++] = s.value;
			break;
		}
	}
	if (nops != 2)
		goto count;
	k0 = guest_operand(ops[0], id0, &p0, err, errsz);
	if (k0 < 0)
		return -1;
	k1 = guest_operand(ops[1], id1, &p1, err, errsz);
	if (k1 < 0)
		return -1;
	if (k0 == k1) {
		snprintf(err, errsz, k0 ? "neither operand is ID:/path (one side must be the sandbox)"
					: "both operands are ID:/path (copy through a local file)");
		return -1;
	}
	req->upload = k1 == 0;
	memcpy(req->id, req->upload ? id1 : id0, sizeof(req->id));
	req->guest_path = req->upload ? p1 : p0;
	req->local = req->upload ? ops[0] : ops[1];
	if (!*req->local) {
		snprintf(err, errsz, "empty local path");
		return -1;
	}
	return 0;
count:
	snprintf(err, errsz, "expected two operands: kiln cp LOCAL ID:/path, or kiln cp ID:/path LOCAL");
	return -1;
}
