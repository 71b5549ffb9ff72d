/* buildfile: see buildfile.h. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/images/buildfile.h"
#include "api/kilnd/core/names.h"
#include "lib/base/json.h"
#include "lib/digest/digest.h"
#include "lib/base/json_text.h"
#include "lib/base/utf8.h"

static const char *const op_names[] = { "FROM", "RUN", "COPY", "ENV", "WORKDIR", "USER", "READY" };

/* Dockerfile instructions kiln does not take, and what to do instead. */
static const struct {
	const char *name, *instead;
} unsupported[] = {
	{ "ADD", "use COPY for files from the build context (no URLs or archive unpacking)" },
	{ "CMD", "a template has no default command: run it with POST .../exec or .../processes" },
	{ "ENTRYPOINT",
	  "a template has no entry point: run it with POST .../exec or .../processes" },
	{ "EXPOSE", "ports are opened per sandbox: POST .../ports or .../previews" },
	{ "ARG", "there are no build arguments: write the value into the build file" },
	{ "LABEL", "labels are given per sandbox at create" },
	{ "VOLUME", "shares are given per sandbox at create" },
	{ "HEALTHCHECK", "use READY COMMAND: it must succeed before the snapshot is taken" },
	{ "SHELL",
	  "RUN's shell form always runs /bin/sh -c; use the JSON exec form for another program" },
	{ "STOPSIGNAL", "sandboxes are stopped through the API" },
	{ "ONBUILD", "write the steps into the build file that uses the template" },
	{ "MAINTAINER", "remove it" },
};

const char *buildfile_op_name(enum bf_op op)
{
	return (unsigned)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

bool buildfile_step_writes(const struct bf_step *s)
{
	return s->op == BF_RUN || s->op == BF_COPY;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void step_free(struct bf_step *s)
{
	free(s->canon);
	free(s->text);
	free_strv(s->argv, s->argc);
	free_strv(s->src, s->nsrc);
	free(s->dest);
	free(s->arg);
	free_strv(s->env_keys, s->nenv);
	free_strv(s->env_vals, s->nenv);
}

void buildfile_free(struct buildfile *bf)
{
	for (size_t i = 0; i < bf->n; i++)
		step_free(&bf->steps[i]);
	free(bf->steps);
	json_decref(bf->env);
	memset(bf, 0, sizeof(*bf));
}

/* ---- words ---- */

struct words {
	char *v[BUILDFILE_ARGS_MAX];
	size_t n;
};

static void words_free(struct words *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i]);
	w->n = 0;
}

static int oom(struct api_err *e)
{
	api_err_set(e, API_E_INTERNAL, "build file: out of memory");
	return -1;
}

/*
 * Split s into words at unquoted blanks. Quotes ("..." and '...') group,
 * a backslash escapes the next character outside single quotes (as the
 * shell and Docker's ENV do). -1 with e for an open quote or too many words.
 */
static int split_words(const char *s, struct words *w, unsigned line, const char *op,
		       struct api_err *e)
{
	size_t len = strlen(s);

	w->n = 0;
	for (size_t i = 0; i < len;) {
		char *out;
		size_t o = 0;
		char q = 0;

		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i >= len)
			break;
		if (w->n == BUILDFILE_ARGS_MAX) {
			api_err_set(e, API_E_BAD_FIELD,
				    "build file line %u: %s has more than %d words", line, op,
				    BUILDFILE_ARGS_MAX);
			words_free(w);
			return -1;
		}
		out = malloc(len - i + 1);
		if (!out) {
			words_free(w);
			return oom(e);
		}
		for (; i < len; i++) {
			char c = s[i];

			if (!q && (c == ' ' || c == '\t'))
				break;
			if (q != '\'' && c == '\\' && i + 1 < len) {
				out[o++] = s[++i];
				continue;
			}
			if (!q && (c == '"' || c == '\'')) {
				q = c;
				continue;
			}
			if (q && c == q) {
				q = 0;
				continue;
			}
			out[o++] = c;
		}
		out[o] = '\0';
		w->v[w->n++] = out;
		if (q) {
			api_err_set(e, API_E_BAD_FIELD,
				    "build file line %u: %s: a %c quote is not closed", line, op,
				    q);
			words_free(w);
			return -1;
		}
	}
	return 0;
}

/* A JSON array of 1..BUILDFILE_ARGS_MAX strings (the exec form) into w.
 * 1: s is not one (not starting with '['), 0: parsed, -1 with e. */
static int json_words(const char *s, struct words *w, unsigned line, const char *op,
		      struct api_err *e)
{
	json_error_t je;
	json_t *a;
	size_t i;
	json_t *v;

	w->n = 0;
	if (s[0] != '[')
		return 1;
	a = json_strict_loads(s, &je);
	if (!json_is_array(a) || json_array_size(a) == 0 ||
	    json_array_size(a) > BUILDFILE_ARGS_MAX) {
		json_decref(a);
		api_err_set(e, API_E_BAD_FIELD,
			    "build file line %u: %s's exec form must be a JSON array of 1 to %d strings, like [\"ls\", \"-l\"]",
			    line, op, BUILDFILE_ARGS_MAX);
		return -1;
	}
	json_array_foreach(a, i, v)
	{
		const char *str = json_string_value(v);

		if (!str || strlen(str) != json_string_length(v)) {
			json_decref(a);
			words_free(w);
			api_err_set(e, API_E_BAD_FIELD,
				    "build file line %u: %s: element %zu of the exec form is not a string (or holds a NUL)",
				    line, op, i);
			return -1;
		}
		if (!(w->v[w->n] = strdup(str))) {
			json_decref(a);
			words_free(w);
			return oom(e);
		}
		w->n++;
	}
	json_decref(a);
	return 0;
}

/* Move w's words into a new vector (*v, *n). */
static int take_words(struct words *w, size_t from, char ***v, size_t *n, struct api_err *e)
{
	*n = 0;
	*v = calloc(w->n - from + 1, sizeof(char *));
	if (!*v)
		return oom(e);
	for (size_t i = from; i < w->n; i++) {
		(*v)[(*n)++] = w->v[i];
		w->v[i] = NULL;
	}
	return 0;
}

/* ---- instructions ---- */

struct parse {
	struct buildfile *bf;
	char workdir[BUILDFILE_PATH_MAX + 1];
	bool have_ready;
};

static int bad(struct api_err *e, unsigned line, const char *op, const char *fmt, const char *arg)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	api_err_set(e, API_E_BAD_FIELD, "build file line %u: %s: %s", line, op, msg);
	return -1;
}

/* "name" as a context member: normalised (no ".", empty or trailing
 * components), relative, no "..", no glob. Written into out (strlen+1). */
static int copy_source(const char *raw, char *out, unsigned line, struct api_err *e)
{
	size_t o = 0;
	const char *p = raw;

	if (raw[0] == '/')
		return bad(e, line, "COPY",
			   "source '%.200s' is absolute: sources are relative to the build context",
			   raw);
	if (strpbrk(raw, "*?["))
		return bad(e, line, "COPY",
			   "source '%.200s' is a pattern: globs are not supported, name the files or their directory",
			   raw);
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return bad(e, line, "COPY",
				   "source '%.200s' leaves the build context ('..')", raw);
		if (n && !(n == 1 && p[0] == '.')) {
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
		if (*p == '/')
			p++;
	}
	if (!o)
		out[o++] = '.';
	out[o] = '\0';
	return 0;
}

/* base joined to a relative path (or the absolute path), normalised
 * lexically (no empty, "." or ".." components; ".." stops at the root),
 * into out. -1 when it does not fit. */
static int resolve_path(const char *base, const char *path, char *out, size_t cap)
{
	char tmp[2 * BUILDFILE_PATH_MAX + 4];
	size_t o = 0;
	int n = path[0] == '/' ? snprintf(tmp, sizeof(tmp), "%s", path)
			       : snprintf(tmp, sizeof(tmp), "%s/%s", base, path);
	char *save = NULL;

	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -1;
	for (char *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		size_t cl = strlen(c);

		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			while (o && out[o - 1] != '/')
				o--;
			if (o)
				o--;
			continue;
		}
		if (o + 1 + cl + 1 > cap)
			return -1;
		out[o++] = '/';
		memcpy(out + o, c, cl);
		o += cl;
	}
	if (!o)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

static int canon_set(struct bf_step *s, json_t *o, struct api_err *e)
{
	if (!o || json_object_set_new(o, "op", json_string(buildfile_op_name(s->op))) ||
	    !(s->canon = json_text(o, JSON_COMPACT | JSON_SORT_KEYS))) {
		json_decref(o);
		return oom(e);
	}
	json_decref(o);
	return 0;
}

static json_t *strv_json(char **v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(v[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* RUN and READY: [--timeout=S] for READY, then the exec or shell form. */
static int parse_cmd(struct parse *P, struct bf_step *s, const char *rest, struct api_err *e)
{
	const char *op = buildfile_op_name(s->op);
	struct words w;
	int r;

	s->timeout_s = BUILDFILE_READY_TIMEOUT_DEFAULT;
	while (rest[0] == '-' && rest[1] == '-') {
		const char *end = rest + strcspn(rest, " \t");
		char flag[64];

		snprintf(flag, sizeof(flag), "%.*s",
			 (int)(end - rest) < 63 ? (int)(end - rest) : 63, rest);
		if (s->op == BF_READY && strncmp(flag, "--timeout=", 10) == 0) {
			char *num_end;
			unsigned long v = strtoul(flag + 10, &num_end, 10);

			if (!isdigit((unsigned char)flag[10]) || *num_end || v < 1 ||
			    v > BUILDFILE_READY_TIMEOUT_MAX)
				return bad(e, s->line, op,
					   "--timeout must be 1..3600 seconds, not '%.40s'",
					   flag + 10);
			s->timeout_s = (unsigned)v;
		} else {
			return bad(e, s->line, op,
				   s->op == BF_RUN
					   ? "option %.60s is not supported (no --mount, --network or --security)"
					   : "option %.60s is not supported (only --timeout=SECONDS)",
				   flag);
		}
		rest = end + strspn(end, " \t");
	}
	if (!rest[0])
		return bad(e, s->line, op, "%sgive the command to run", "");
	r = json_words(rest, &w, s->line, op, e);
	if (r < 0)
		return -1;
	if (r == 1) {
		/* Shell form: the command as written, for /bin/sh -c. */
		s->shell = true;
		s->argv = calloc(2, sizeof(char *));
		if (!s->argv || !(s->argv[0] = strdup(rest)))
			return oom(e);
		s->argc = 1;
	} else if (take_words(&w, 0, &s->argv, &s->argc, e)) {
		words_free(&w);
		return -1;
	}
	(void)P;
	return canon_set(s,
			 json_pack("{s:b,s:o,s:i}", "shell", s->shell, "argv",
				   strv_json(s->argv, s->argc), "timeout",
				   s->op == BF_READY ? (int)s->timeout_s : 0),
			 e);
}

static int parse_copy(struct parse *P, struct bf_step *s, const char *rest, struct api_err *e)
{
	char dest[BUILDFILE_PATH_MAX + 1];
	struct words w;
	size_t first = 0;
	int r;

	s->chown = -1;
	while (rest[0] == '-' && rest[1] == '-') {
		const char *end = rest + strcspn(rest, " \t");
		char flag[64];

		snprintf(flag, sizeof(flag), "%.*s",
			 (int)(end - rest) < 63 ? (int)(end - rest) : 63, rest);
		if (strncmp(flag, "--chown=", 8) == 0) {
			const char *u = flag + 8;

			if (!strcmp(u, "root") || !strcmp(u, "0") || !strcmp(u, "0:0") ||
			    !strcmp(u, "root:root"))
				s->chown = 0;
			else if (!strcmp(u, "user") || !strcmp(u, "1000") ||
				 !strcmp(u, "1000:1000") || !strcmp(u, "user:user"))
				s->chown = 1;
			else
				return bad(e, s->line, "COPY",
					   "--chown=%.40s: a kiln guest has two users, root and user (uid 1000)",
					   u);
		} else {
			return bad(e, s->line, "COPY",
				   "option %.60s is not supported (only --chown=root|user; no --from: there are no build stages)",
				   flag);
		}
		rest = end + strspn(end, " \t");
	}
	r = json_words(rest, &w, s->line, "COPY", e);
	if (r < 0)
		return -1;
	if (r == 1 && split_words(rest, &w, s->line, "COPY", e))
		return -1;
	if (w.n < 2) {
		words_free(&w);
		return bad(e, s->line, "COPY",
			   "give at least one source and the destination: COPY SRC... DEST%s", "");
	}
	for (size_t i = 0; i + 1 < w.n; i++) {
		char *norm = malloc(strlen(w.v[i]) + 2);

		if (!norm) {
			words_free(&w);
			return oom(e);
		}
		if (!w.v[i][0] || copy_source(w.v[i], norm, s->line, e)) {
			if (!w.v[i][0])
				bad(e, s->line, "COPY", "an empty source%s", "");
			free(norm);
			words_free(&w);
			return -1;
		}
		free(w.v[i]);
		w.v[i] = norm;
	}
	(void)first;
	{
		const char *d = w.v[w.n - 1];
		size_t dl = strlen(d);

		s->dest_dir = (dl && d[dl - 1] == '/') || w.n > 2;
		if (!dl || resolve_path(P->workdir, d, dest, sizeof(dest))) {
			words_free(&w);
			return bad(e, s->line, "COPY",
				   "the destination is empty or longer than %s bytes", "4096");
		}
		if (w.n > 2 && dl && d[dl - 1] != '/') {
			bad(e, s->line, "COPY",
			    "with several sources the destination must be a directory ending in '/': '%.200s'",
			    d);
			words_free(&w);
			return -1;
		}
	}
	if (!(s->dest = strdup(dest))) {
		words_free(&w);
		return oom(e);
	}
	free(w.v[w.n - 1]);
	w.n--;
	if (take_words(&w, 0, &s->src, &s->nsrc, e)) {
		words_free(&w);
		return -1;
	}
	return canon_set(s,
			 json_pack("{s:o,s:s,s:b,s:i}", "src", strv_json(s->src, s->nsrc), "dest",
				   s->dest, "dir", s->dest_dir, "chown", s->chown),
			 e);
}

static bool env_key_valid(const char *k)
{
	if (!(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return false;
	for (const char *p = k; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return strlen(k) <= 255;
}

static int env_add(struct parse *P, struct bf_step *s, const char *k, const char *v,
		   struct api_err *e)
{
	if (!env_key_valid(k))
		return bad(e, s->line, "ENV",
			   "'%.100s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at most 255)",
			   k);
	s->env_keys[s->nenv] = strdup(k);
	s->env_vals[s->nenv] = strdup(v);
	if (!s->env_keys[s->nenv] || !s->env_vals[s->nenv]) {
		free(s->env_keys[s->nenv]);
		free(s->env_vals[s->nenv]);
		return oom(e);
	}
	s->nenv++;
	if (json_object_set_new(P->bf->env, k, json_string(v)))
		return oom(e);
	return 0;
}

static int parse_env(struct parse *P, struct bf_step *s, const char *rest, struct api_err *e)
{
	struct words w;
	json_t *o;
	int r = 0;

	if (split_words(rest, &w, s->line, "ENV", e))
		return -1;
	if (w.n == 0)
		return bad(e, s->line, "ENV", "give NAME=VALUE (or the legacy NAME VALUE)%s", "");
	s->env_keys = calloc(w.n, sizeof(char *));
	s->env_vals = calloc(w.n, sizeof(char *));
	if (!s->env_keys || !s->env_vals) {
		words_free(&w);
		return oom(e);
	}
	if (!strchr(w.v[0], '=')) {
		/* Legacy form: the first word is the name, the rest of the line
		 * (as written, blanks inside kept) the value. */
		const char *v = rest + strcspn(rest, " \t");

		v += strspn(v, " \t");
		if (w.n < 2)
			r = bad(e, s->line, "ENV",
				"'%.100s' has no value: ENV NAME=VALUE or ENV NAME VALUE", w.v[0]);
		else
			r = env_add(P, s, w.v[0], v, e);
	} else {
		for (size_t i = 0; i < w.n && r == 0; i++) {
			char *eq = strchr(w.v[i], '=');

			if (!eq) {
				r = bad(e, s->line, "ENV",
					"'%.100s' is not NAME=VALUE (mixing the two forms?)",
					w.v[i]);
				break;
			}
			*eq = '\0';
			r = env_add(P, s, w.v[i], eq + 1, e);
		}
	}
	words_free(&w);
	if (r)
		return -1;
	o = json_object();
	for (size_t i = 0; o && i < s->nenv; i++)
		if (json_object_set_new(o, s->env_keys[i], json_string(s->env_vals[i]))) {
			json_decref(o);
			o = NULL;
		}
	return canon_set(s, json_pack("{s:o}", "env", o), e);
}

static int parse_simple(struct parse *P, struct bf_step *s, const char *rest, struct api_err *e)
{
	const char *op = buildfile_op_name(s->op);
	char path[BUILDFILE_PATH_MAX + 1];
	struct words w;

	if (split_words(rest, &w, s->line, op, e))
		return -1;
	if (w.n != 1) {
		size_t n = w.n;

		words_free(&w);
		if (s->op == BF_FROM && n == 3)
			return bad(e, s->line, op,
				   "'%.60s': build stages (FROM ... AS NAME) are not supported",
				   rest);
		return bad(e, s->line, op,
			   n ? "takes one argument, not '%.200s'" : "give its argument%s",
			   n ? rest : "");
	}
	switch (s->op) {
	case BF_FROM:
		if (w.v[0][0] == '-') {
			words_free(&w);
			return bad(e, s->line, op, "option %.60s is not supported (no --platform)",
				   rest);
		}
		if (!image_name_valid(w.v[0])) {
			words_free(&w);
			return bad(e, s->line, op,
				   "'%.100s' is not a kiln image or template name (1..64 of [A-Za-z0-9._-]; GET /v1/images and /v1/templates list them)",
				   rest);
		}
		s->arg = w.v[0];
		break;
	case BF_WORKDIR:
		if (resolve_path(P->workdir, w.v[0], path, sizeof(path))) {
			words_free(&w);
			return bad(e, s->line, op, "the directory is longer than %s bytes", "4096");
		}
		free(w.v[0]);
		if (!(s->arg = strdup(path)))
			return oom(e);
		snprintf(P->workdir, sizeof(P->workdir), "%s", path);
		P->bf->working_dir = s->arg;
		break;
	case BF_USER: {
		const char *u = w.v[0];

		if (!strcmp(u, "root") || !strcmp(u, "0") || !strcmp(u, "0:0") ||
		    !strcmp(u, "root:root"))
			s->arg = strdup("root");
		else if (!strcmp(u, "user") || !strcmp(u, "1000") || !strcmp(u, "1000:1000") ||
			 !strcmp(u, "user:user"))
			s->arg = strdup("user");
		else {
			bad(e, s->line, op,
			    "'%.60s': a kiln guest has two users, root and user (uid 1000)", u);
			words_free(&w);
			return -1;
		}
		words_free(&w);
		if (!s->arg)
			return oom(e);
		P->bf->user = s->arg;
		break;
	}
	default:
		words_free(&w);
		return -1;
	}
	return canon_set(s, json_pack("{s:s}", "arg", s->arg), e);
}

/* One logical line (its instruction starts on `line`). */
static int parse_instruction(struct parse *P, char *text, unsigned line, struct api_err *e)
{
	struct buildfile *bf = P->bf;
	char name[16];
	size_t nl = strcspn(text, " \t");
	char *rest = text + nl;
	struct bf_step *s;
	int op = -1;

	rest += strspn(rest, " \t");
	snprintf(name, sizeof(name), "%.*s", nl < 15 ? (int)nl : 15, text);
	for (char *p = name; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (nl == strlen(op_names[i]) && strcmp(name, op_names[i]) == 0)
			op = (int)i;
	if (op < 0) {
		for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
			if (nl == strlen(unsupported[i].name) &&
			    strcmp(name, unsupported[i].name) == 0) {
				api_err_set(e, API_E_BAD_FIELD,
					    "build file line %u: %s is not supported: %s", line,
					    unsupported[i].name, unsupported[i].instead);
				return -1;
			}
		api_err_set(e, API_E_BAD_FIELD,
			    "build file line %u: unknown instruction '%.*s' (kiln takes FROM, RUN, COPY, ENV, WORKDIR, USER and READY)",
			    line, nl < 40 ? (int)nl : 40, text);
		return -1;
	}
	if (bf->n == 0 && op != BF_FROM)
		return bad(e, line, name, "the build file must start with FROM%s", "");
	if (bf->n > 0 && op == BF_FROM)
		return bad(e, line, name, "only one FROM: build stages are not supported%s", "");
	if (P->have_ready)
		return bad(e, line, name, "READY must be the last instruction%s", "");
	if (bf->n == BUILDFILE_STEPS_MAX)
		return bad(e, line, name, "the build file has more than %s instructions", "128");
	s = &bf->steps[bf->n];
	memset(s, 0, sizeof(*s));
	s->op = (enum bf_op)op;
	s->line = line;
	s->chown = -1;
	bf->n++;
	if (!(s->text = strdup(text)))
		return oom(e);
	switch (s->op) {
	case BF_RUN:
		return parse_cmd(P, s, rest, e);
	case BF_READY:
		P->have_ready = true;
		return parse_cmd(P, s, rest, e);
	case BF_COPY:
		return parse_copy(P, s, rest, e);
	case BF_ENV:
		return parse_env(P, s, rest, e);
	default:
		return parse_simple(P, s, rest, e);
	}
}

static void rtrim(char *s, size_t *n)
{
	while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t' || s[*n - 1] == '\r'))
		(*n)--;
	s[*n] = '\0';
}

int buildfile_parse(const char *text, size_t len, struct buildfile *bf, struct api_err *e)
{
	return buildfile_parse_in(text, len, NULL, bf, e);
}

int buildfile_parse_in(const char *text, size_t len, const char *workdir, struct buildfile *bf,
		       struct api_err *e)
{
	struct parse P = { .bf = bf, .workdir = "/" };
	char *logical = NULL;
	size_t ll = 0;
	unsigned line = 0, start = 0;
	const char *p = text, *end = text + len;
	int r = 0;

	/* Relative paths resolve against the base's working directory, when
	 * it is an absolute path that fits; else against "/". */
	if (workdir && workdir[0] == '/' && strlen(workdir) <= BUILDFILE_PATH_MAX &&
	    resolve_path("/", workdir, P.workdir, sizeof(P.workdir)))
		snprintf(P.workdir, sizeof(P.workdir), "/");
	memset(bf, 0, sizeof(*bf));
	if (len > BUILDFILE_MAX) {
		api_err_set(e, API_E_BAD_FIELD, "build file: %zu bytes, more than %u", len,
			    BUILDFILE_MAX);
		return -1;
	}
	if (memchr(text, '\0', len) || !utf8_valid((const uint8_t *)text, len)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "build file: not UTF-8 text (a NUL byte or an invalid sequence)");
		return -1;
	}
	bf->steps = calloc(BUILDFILE_STEPS_MAX, sizeof(*bf->steps));
	bf->env = json_object();
	logical = malloc(len + 1);
	if (!bf->steps || !bf->env || !logical) {
		free(logical);
		buildfile_free(bf);
		return oom(e);
	}
	while (p < end && r == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *t = p;
		size_t tn;
		bool cont;

		line++;
		p = nl ? nl + 1 : end;
		while (n && (*t == ' ' || *t == '\t')) {
			t++;
			n--;
		}
		/* Comment and blank lines, also inside a continuation (as Docker). */
		if (n == 0 || *t == '#' || (n == 1 && *t == '\r'))
			continue;
		if (!ll)
			start = line;
		memcpy(logical + ll, t, n);
		tn = ll + n;
		rtrim(logical, &tn);
		cont = tn > ll && logical[tn - 1] == '\\';
		if (cont) {
			logical[tn - 1] = ' ';
			ll = tn;
			continue;
		}
		ll = 0;
		r = parse_instruction(&P, logical, start, e);
	}
	if (r == 0 && ll) {
		rtrim(logical, &ll);
		r = parse_instruction(&P, logical, start, e);
	}
	free(logical);
	if (r == 0 && bf->n == 0) {
		api_err_set(e, API_E_BAD_FIELD,
			    "build file: it is empty; start it with FROM IMAGE");
		r = -1;
	}
	if (r) {
		buildfile_free(bf);
		return -1;
	}
	return 0;
}

/* ---- cache keys ---- */

static void hash_field(struct sha256_ctx *h, const char *s)
{
	uint8_t len[8];
	uint64_t n = s ? strlen(s) : UINT64_MAX;

	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(n >> (8 * i));
	sha256_update(h, sizeof(len), len);
	if (s)
		sha256_update(h, strlen(s), (const uint8_t *)s);
}

void buildfile_from_input(const char *base, unsigned cpus, unsigned memory_mib, unsigned disk_mib,
			  char *out, size_t cap)
{
	snprintf(out, cap, "%s;cpus=%u;memory_mib=%u;disk_mib=%u", base, cpus, memory_mib,
		 disk_mib);
}

void buildfile_step_key(const char *parent, const char *canon, const char *extra,
			char out[BUILDFILE_KEY_LEN + 1])
{
	uint8_t d[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;

	sha256_init(&h);
	hash_field(&h, "kiln-template-step-1");
	hash_field(&h, parent ? parent : "");
	hash_field(&h, canon);
	hash_field(&h, extra);
	sha256_digest(&h, SHA256_DIGEST_SIZE, d);
	digest_hex(d, out);
}

bool buildfile_copy_match(const char *src, const char *name, const char **rel)
{
	size_t n = strlen(src);

	if (strcmp(src, ".") == 0) {
		*rel = name;
		return true;
	}
	if (strncmp(name, src, n) != 0)
		return false;
	if (name[n] == '\0') {
		const char *slash = strrchr(name, '/');

		*rel = slash ? slash + 1 : name;
		return true;
	}
	if (name[n] != '/')
		return false;
	*rel = name + n + 1;
	return true;
}
