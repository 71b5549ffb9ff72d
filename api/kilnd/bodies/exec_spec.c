/* POST .../exec bodies; see exec_spec.h. */
#include "api/kilnd/bodies/exec_spec.h"

#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/core/names.h"
#include "lib/base/base64.h"

static int parse_argv(struct exec_spec *s, struct api_err *e)
{
	const char *what = s->what;
	json_t *a = json_object_get(s->body, "argv"), *v;
	size_t i;

	if (!a) {
		api_err_set(e, API_E_MISSING_FIELD,
			    "%s: 'argv' is required (argv[0] is the program)", what);
		return -1;
	}
	if (!json_is_array(a)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: 'argv' must be an array of strings", what);
		return -1;
	}
	if (json_array_size(a) == 0 || json_array_size(a) > AGENT_ARGV_MAX) {
		api_err_set(e, API_E_BAD_FIELD, "%s: 'argv' must have 1 to %d entries", what,
			    AGENT_ARGV_MAX);
		return -1;
	}
	s->argv = calloc(json_array_size(a) + 1, sizeof(*s->argv));
	if (!s->argv) {
		api_err_set(e, API_E_INTERNAL, "%s: out of memory", what);
		return -1;
	}
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v)) {
			api_err_set(e, API_E_BAD_FIELD, "%s: argv[%zu] must be a string", what, i);
			return -1;
		}
		s->argv[i] = json_string_value(v);
	}
	s->argc = i;
	if (!s->argv[0][0]) {
		api_err_set(e, API_E_BAD_FIELD, "%s: argv[0] must not be empty", what);
		return -1;
	}
	return 0;
}

static int parse_env(struct exec_spec *s, struct api_err *e)
{
	const char *what = s->what;
	json_t *o = json_object_get(s->body, "env"), *v;
	const char *k;

	if (!o)
		return 0;
	if (!json_is_object(o)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: 'env' must be an object of strings or null",
			    what);
		return -1;
	}
	if (json_object_size(o) > AGENT_ENV_MAX) {
		api_err_set(e, API_E_BAD_FIELD, "%s: 'env' has more than %d entries", what,
			    AGENT_ENV_MAX);
		return -1;
	}
	json_object_foreach(o, k, v)
	{
		if (!k[0] || strchr(k, '=')) {
			api_err_set(e, API_E_BAD_FIELD,
				    "%s: env key '%.80s' must be non-empty and without '='", what,
				    k);
			return -1;
		}
		if (!json_is_string(v) && !json_is_null(v)) {
			api_err_set(e, API_E_BAD_FIELD, "%s: env['%.80s'] must be a string or null",
				    what, k);
			return -1;
		}
	}
	s->env = o;
	return 0;
}

/* confine: true shows the process only /workspace, a private /tmp and the
 * image's programs; its cwd must then be visible there. */
static int parse_confine(struct exec_spec *s, struct api_err *e)
{
	if (json_fields_bool(s->body, "confine", false, &s->confine, s->what, e))
		return -1;
	if (s->confine && !agent_confine_cwd_ok(s->cwd)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: cwd '%.100s' is not visible to a confined process; give " AGENT_WORKSPACE
			    " or a directory below it (without '..'), or leave cwd out",
			    s->what, s->cwd);
		return -1;
	}
	return 0;
}

static int parse_stdin(struct exec_spec *s, struct api_err *e)
{
	const char *what = s->what;
	const char *text, *b64;

	if (json_fields_string(s->body, "stdin", false, AGENT_LEN_MAX, &text, what, e))
		return -1;
	/* base64 of AGENT_LEN_MAX bytes, with padding. */
	if (json_fields_string(s->body, "stdin_base64", false, (AGENT_LEN_MAX + 2) / 3 * 4, &b64,
			       what, e))
		return -1;
	if (text && b64) {
		api_err_set(e, API_E_BAD_FIELD, "%s: give 'stdin' or 'stdin_base64', not both",
			    what);
		return -1;
	}
	if (text) {
		size_t n = strlen(text);

		s->stdin_data = malloc(n ? n : 1);
		if (!s->stdin_data) {
			api_err_set(e, API_E_INTERNAL, "%s: out of memory", what);
			return -1;
		}
		memcpy(s->stdin_data, text, n);
		s->stdin_len = n;
	} else if (b64) {
		size_t n = strlen(b64);

		s->stdin_data = malloc(n / 4 * 3 + 1);
		if (!s->stdin_data) {
			api_err_set(e, API_E_INTERNAL, "%s: out of memory", what);
			return -1;
		}
		if (base64_decode(b64, n, s->stdin_data, &s->stdin_len)) {
			api_err_set(e, API_E_BAD_FIELD,
				    "%s: 'stdin_base64' is not canonical base64 (RFC 4648, padded)",
				    what);
			return -1;
		}
	}
	return 0;
}

int exec_spec_parse(json_t *body, bool streaming, struct exec_spec *s, struct api_err *e)
{
	return exec_spec_parse_as(body, streaming, "exec", s, e);
}

/* The fields exec and run share (parse_common reads them): an option added
 * here reaches both. */
#define SHARED_FIELDS                                                              \
	"env", "cwd", "user", "timeout_ms", "stdin", "stdin_base64", "output_cap", \
		"output_encoding", "confine"

/* The fields exec and run share, after what names the command. */
static int parse_common(struct exec_spec *s, bool streaming, struct api_err *e);

static int spec_begin(json_t *body, const char *what, const char *const *fields,
		      struct exec_spec *s, struct api_err *e)
{
	memset(s, 0, sizeof(*s));
	s->what = what;
	if (!json_is_object(body)) {
		api_err_set(e, API_E_BAD_JSON, "%s: the body must be a JSON object", what);
		return -1;
	}
	s->body = json_incref(body);
	return json_fields_only(body, fields, what, e);
}

int exec_spec_parse_as(json_t *body, bool streaming, const char *what, struct exec_spec *s,
		       struct api_err *e)
{
	static const char *const fields[] = { "argv", "shell", SHARED_FIELDS, NULL };

	if (spec_begin(body, what, fields, s, e) || parse_argv(s, e) ||
	    json_fields_bool(body, "shell", false, &s->shell, what, e))
		return -1;
	/* The agent counts the /bin/sh -c that shell adds into its limit. */
	if (s->shell && s->argc > AGENT_ARGV_MAX - 2) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: with shell, 'argv' may have at most %d entries", what,
			    AGENT_ARGV_MAX - 2);
		return -1;
	}
	return parse_common(s, streaming, e);
}

int run_spec_parse(json_t *body, bool streaming, struct exec_spec *s, struct api_err *e)
{
	static const char *const fields[] = { "language", "code", SHARED_FIELDS, NULL };
	const char *what = "run", *lang;
	json_t *code;

	if (spec_begin(body, what, fields, s, e) ||
	    json_fields_string(body, "language", true, 16, &lang, what, e))
		return -1;
	s->lang = agent_lang_by_name(lang);
	if (s->lang == AGENT_LANG_NONE) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: language must be \"python\", \"javascript\", \"typescript\" or \"bash\", not '%.40s'",
			    what, lang);
		return -1;
	}
	code = json_object_get(body, "code");
	if (!code) {
		api_err_set(e, API_E_MISSING_FIELD, "%s: 'code' is required (the program text)",
			    what);
		return -1;
	}
	if (!json_is_string(code)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: 'code' must be a string (the program text)",
			    what);
		return -1;
	}
	s->code = json_string_value(code);
	s->code_len = json_string_length(code);
	if (s->code_len > AGENT_LEN_MAX) {
		api_err_set(e, API_E_TOO_LARGE, "%s: 'code' is %zu bytes; at most %u", what,
			    s->code_len, AGENT_LEN_MAX);
		return -1;
	}
	if (parse_common(s, streaming, e))
		return -1;
	/* One agent message carries both. */
	if (s->stdin_len > AGENT_LEN_MAX - s->code_len) {
		api_err_set(e, API_E_TOO_LARGE,
			    "%s: code and stdin are %zu bytes together; at most %u", what,
			    s->code_len + s->stdin_len, AGENT_LEN_MAX);
		return -1;
	}
	return 0;
}

static int parse_common(struct exec_spec *s, bool streaming, struct api_err *e)
{
	const char *what = s->what, *user, *enc;
	json_t *body = s->body;
	uint64_t n;

	if (parse_env(s, e) ||
	    json_fields_string(body, "cwd", false, AGENT_PATH_MAX, &s->cwd, what, e))
		return -1;
	if (s->cwd && !guest_path_valid(s->cwd, AGENT_PATH_MAX)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: cwd '%.100s' must be an absolute path", what,
			    s->cwd);
		return -1;
	}
	if (json_fields_string(body, "user", false, 16, &user, what, e))
		return -1;
	s->user_given = user != NULL;
	if (!user || strcmp(user, "user") == 0) {
		s->user = AGENT_USER_USER;
	} else if (strcmp(user, "root") == 0) {
		s->user = AGENT_USER_ROOT;
	} else {
		api_err_set(e, API_E_BAD_FIELD, "%s: user must be \"user\" or \"root\"", what);
		return -1;
	}
	if (json_fields_uint(body, "timeout_ms", false, 0, AGENT_TIMEOUT_MAX_MS, 0, &n, what, e))
		return -1;
	s->timeout_ms = (uint32_t)n;
	if (parse_confine(s, e) || parse_stdin(s, e))
		return -1;
	if (json_fields_uint(body, "output_cap", false, 0,
			     streaming ? AGENT_OUTPUT_CAP_MAX : EXEC_OUTPUT_CAP_BUFFERED_MAX,
			     AGENT_OUTPUT_CAP_DEFAULT, &n, what, e))
		return -1;
	s->output_cap = (uint32_t)n;
	if (json_fields_string(body, "output_encoding", false, 16, &enc, what, e))
		return -1;
	if (enc && strcmp(enc, "base64") == 0) {
		s->base64_output = true;
	} else if (enc && strcmp(enc, "auto") != 0) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: output_encoding must be \"auto\" or \"base64\"", what);
		return -1;
	}
	return 0;
}

static void env_strings_free(struct exec_spec *s)
{
	for (size_t i = 0; s->envp && s->envp[i]; i++)
		free(s->envp[i]);
	free(s->envp);
	s->envp = NULL;
}

/* s->merged as libkiln's env: "NAME=VALUE" sets, "NAME" unsets (keys
 * hold no '=': parse_env and the sandbox spec refuse it). */
static int env_strings(struct exec_spec *s, struct api_err *e)
{
	if (!(s->envp = calloc(s->nmerged + 1, sizeof(*s->envp))))
		goto oom;
	for (size_t i = 0; i < s->nmerged; i++) {
		const struct agent_env *v = &s->merged[i];

		if ((v->value ? asprintf(&s->envp[i], "%s=%s", v->key, v->value)
			      : asprintf(&s->envp[i], "%s", v->key)) < 0) {
			s->envp[i] = NULL;
			goto oom;
		}
	}
	return 0;
oom:
	env_strings_free(s);
	api_err_set(e, API_E_INTERNAL, "%s: out of memory", s->what);
	return -1;
}

int exec_env_merge(struct exec_spec *s, const json_t *base, struct api_err *e)
{
	const char *what = s->what;
	size_t cap = json_object_size(base) + json_object_size(s->env), n = 0;
	const char *k;
	json_t *v;

	free(s->merged);
	s->merged = NULL;
	s->nmerged = 0;
	env_strings_free(s);
	if (cap == 0)
		return 0;
	s->merged = calloc(cap, sizeof(*s->merged));
	if (!s->merged) {
		api_err_set(e, API_E_INTERNAL, "%s: out of memory", what);
		return -1;
	}
	json_object_foreach((json_t *)base, k, v)
	{
		if (json_object_get(s->env, k))
			continue; /* the exec's own value (or null) wins */
		s->merged[n].key = k;
		s->merged[n++].value = json_string_value(v);
	}
	json_object_foreach((json_t *)s->env, k, v)
	{
		s->merged[n].key = k;
		s->merged[n++].value = json_is_null(v) ? NULL : json_string_value(v);
	}
	if (n > AGENT_ENV_MAX) {
		api_err_set(e, API_E_TOO_LARGE,
			    "%s: the sandbox's env and the exec's env have %zu variables together; at most %d",
			    what, n, AGENT_ENV_MAX);
		return -1;
	}
	s->nmerged = n;
	return env_strings(s, e);
}

void exec_spec_opts(const struct exec_spec *s, struct kiln_exec_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->argv = s->argv;
	o->env = (const char *const *)s->envp;
	o->cwd = s->cwd;
	o->flags = (s->shell ? KILN_AGENT_SHELL : 0) | (s->confine ? KILN_AGENT_CONFINE : 0) |
		(s->user == AGENT_USER_ROOT ? KILN_AGENT_AS_ROOT : 0);
	o->timeout_ms = s->timeout_ms;
	/* libkiln reads output_cap 0 as "the default"; 0 bytes kept is its
	 * KILN_AGENT_DISCARD. */
	o->output_cap = s->output_cap;
	if (s->output_cap == 0)
		o->flags |= KILN_AGENT_DISCARD;
	o->stdin_data = s->stdin_data;
	o->stdin_len = s->stdin_len;
	o->lang = agent_lang_name(s->lang);
	o->code = s->code;
	o->code_len = s->code_len;
}

void exec_spec_image_defaults(struct exec_spec *s, json_t *defaults)
{
	const char *cwd = json_string_value(json_object_get(defaults, "working_dir"));
	const char *user = json_string_value(json_object_get(defaults, "user"));

	if (!defaults)
		return;
	json_decref(s->image_defaults);
	s->image_defaults = json_incref(defaults);
	if (!s->cwd && cwd && guest_path_valid(cwd, AGENT_PATH_MAX) &&
	    (!s->confine || agent_confine_cwd_ok(cwd)))
		s->cwd = cwd;
	if (s->user_given || !user)
		return;
	if (strcmp(user, "root") == 0 || strcmp(user, "0") == 0 || strcmp(user, "0:0") == 0)
		s->user = AGENT_USER_ROOT;
	else if (strcmp(user, "user") == 0 || strcmp(user, "1000") == 0 ||
		 strcmp(user, "1000:1000") == 0)
		s->user = AGENT_USER_USER;
}

void exec_spec_free(struct exec_spec *s)
{
	json_decref(s->image_defaults);
	free(s->argv);
	free(s->stdin_data);
	free(s->merged);
	env_strings_free(s);
	json_decref(s->body);
	memset(s, 0, sizeof(*s));
}
