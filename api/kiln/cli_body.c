/* kiln command lines into kilnd requests (cli_body.h). */
#include "api/kiln/cli_body.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * An id goes into the URL path: holding it to [A-Za-z0-9_-] means "../x"
 * or "a/stop" can never address another endpoint. kilnd answers 404 for
 * a well-formed id it does not know.
 */
int cli_check_id(const char *s, char *id, struct err *e)
{
	size_t n = strlen(s);

	if (!n || n > CLI_ID_MAX ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n) {
		err_set(e, EINVAL, "'%s' is not a sandbox id (see `kiln ls`)", CLI_ECHO(s));
		return -1;
	}
	memcpy(id, s, n + 1);
	return 0;
}

int cli_body_uint(json_t *body, const char *field, const char *opt, const char *v,
		  unsigned long long max, struct err *e)
{
	uint64_t n;

	if (num_parse_u64(v, 10, 0, max, &n)) {
		err_set(e, EINVAL, "%s '%s': expected a whole number", opt, CLI_ECHO(v));
		return -1;
	}
	json_object_set_new(body, field, json_integer((json_int_t)n));
	return 0;
}

int cli_body_str(json_t *body, const char *field, const char *opt, const char *v, struct err *e)
{
	json_t *s = json_string(v);

	if (!s) {
		err_set(e, EINVAL, "%s: not valid UTF-8", opt);
		return -1;
	}
	json_object_set_new(body, field, s);
	return 0;
}

long long cli_answer_ms(unsigned long timeout_s, long long wait_s)
{
	if (!timeout_s || wait_s < 0)
		return 0;
	return ((long long)timeout_s + wait_s) * 1000;
}

long long cli_wait_for_ms(unsigned long long timeout_ms, long long extra_s)
{
	if (!timeout_ms)
		return CLI_WAIT_UNBOUNDED;
	return (long long)((timeout_ms + 999) / 1000) + extra_s;
}

long long cli_exec_wait_s(const json_t *body, bool stream)
{
	if (stream)
		return CLI_WAIT_STREAM_HEAD;
	/* The answer comes at the exit: the process's own time, plus a wake's. */
	return cli_wait_for_ms((unsigned long long)json_integer_value(
				       json_object_get(body, "timeout_ms")),
			       CLI_WAIT_BOOT);
}

int cli_put_kv(json_t *obj, const char *arg, bool allow_unset, const char *what, struct err *e)
{
	const char *eq = strchr(arg, '=');
	char *key;
	int rc;

	if (eq == arg || !*arg) {
		err_set(e, EINVAL, "%s '%s': empty key (expected KEY=VALUE)", what, CLI_ECHO(arg));
		return -EINVAL;
	}
	if (!eq && !allow_unset) {
		err_set(e, EINVAL, "%s '%s': expected KEY=VALUE", what, CLI_ECHO(arg));
		return -EINVAL;
	}
	key = strndup(arg, eq ? (size_t)(eq - arg) : strlen(arg));
	if (!key)
		return -ENOMEM;
	rc = json_object_set_new(obj, key, eq ? json_string(eq + 1) : json_null());
	if (rc)
		err_set(e, EINVAL, "%s '%s': not valid UTF-8", what, CLI_ECHO(arg));
	free(key);
	return rc ? -EINVAL : 0;
}

int cli_put_share(json_t *arr, const char *arg, struct err *e)
{
	const char *c1 = strchr(arg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	bool ro = false;
	json_t *share;
	char *host, *guest;

	if (!c1 || c1 == arg || !c1[1] || c2 == c1 + 1) {
		err_set(e, EINVAL, "--share '%s': expected HOST:GUEST[:ro]", CLI_ECHO(arg));
		return -EINVAL;
	}
	if (c2) {
		if (!strcmp(c2 + 1, "ro")) {
			ro = true;
		} else if (strcmp(c2 + 1, "rw")) {
			err_set(e, EINVAL,
				"--share '%s': the third part must be 'ro' or 'rw' (paths cannot hold ':')",
				CLI_ECHO(arg));
			return -EINVAL;
		}
	}
	host = strndup(arg, (size_t)(c1 - arg));
	guest = c2 ? strndup(c1 + 1, (size_t)(c2 - c1 - 1)) : strdup(c1 + 1);
	share = json_pack("{s:s?, s:s?, s:b}", "host_path", host, "guest_path", guest, "read_only",
			  ro);
	free(host);
	free(guest);
	if (!share || json_object_size(share) != 3) {
		json_decref(share);
		err_set(e, EINVAL, "--share '%s': not valid UTF-8", CLI_ECHO(arg));
		return -EINVAL;
	}
	return json_array_append_new(arr, share) ? -ENOMEM : 0;
}

json_t *cli_body_sub(json_t *body, const char *field, bool array)
{
	json_t *v = json_object_get(body, field);

	if (!v) {
		v = array ? json_array() : json_object();
		json_object_set_new(body, field, v);
	}
	return v;
}

/* Above exec's ids (CLI_PO_*, X_*): run takes create's options and exec's. */
enum {
	C_IMAGE = CLI_OPT_LONG + 64,
	C_CPUS,
	C_MEMORY,
	C_DISK,
	C_HOSTNAME,
	C_SHARE,
	C_TIMEOUT,
	C_NO_CONSOLE,
	C_NETWORK,
	C_FIREWALL,
	C_TEMPLATE,
	C_ENV = 'e',
	C_LABEL = 'l'
};

/* create's options but --image (run names the image as an operand). */
#define CREATE_OPTIONS                                               \
	{ "cpus", required_argument, NULL, C_CPUS },                 \
		{ "memory", required_argument, NULL, C_MEMORY },     \
		{ "disk", required_argument, NULL, C_DISK },         \
		{ "env", required_argument, NULL, C_ENV },           \
		{ "hostname", required_argument, NULL, C_HOSTNAME }, \
		{ "label", required_argument, NULL, C_LABEL },       \
		{ "share", required_argument, NULL, C_SHARE },       \
		{ "timeout", required_argument, NULL, C_TIMEOUT },   \
		{ "no-console", no_argument, NULL, C_NO_CONSOLE },   \
		{ "network", required_argument, NULL, C_NETWORK },   \
	{                                                            \
		"firewall", required_argument, NULL, C_FIREWALL      \
	}

/* One create option into the POST /v1/sandboxes body. 1: not one of them. */
static int create_opt(json_t *b, int opt, const char *v, struct err *e)
{
	switch (opt) {
	case C_IMAGE:
		return cli_body_str(b, "image", "--image", v, e);
	case C_CPUS:
		return cli_body_uint(b, "cpus", "--cpus", v, CLI_INT_MAX, e);
	case C_MEMORY:
		return cli_body_uint(b, "memory_mib", "--memory", v, CLI_INT_MAX, e);
	case C_DISK:
		return cli_body_uint(b, "disk_mib", "--disk", v, CLI_INT_MAX, e);
	case C_TIMEOUT:
		return cli_body_uint(b, "timeout_s", "--timeout", v, CLI_INT_MAX, e);
	case C_HOSTNAME:
		return cli_body_str(b, "hostname", "--hostname", v, e);
	case C_ENV:
		return cli_put_kv(cli_body_sub(b, "env", false), v, false, "--env", e);
	case C_LABEL:
		return cli_put_kv(cli_body_sub(b, "labels", false), v, false, "--label", e);
	case C_SHARE:
		return cli_put_share(cli_body_sub(b, "shares", true), v, e);
	case C_NO_CONSOLE:
		json_object_set_new(b, "console", json_false());
		return 0;
	case C_NETWORK:
		return cli_body_str(b, "network", "--network", v, e);
	case C_FIREWALL: {
		/* The rule set file, read here so create and run both send it. */
		json_t *r;
		struct err why;

		if (cli_firewall_load(v, &r, &why)) {
			err_set(e, EINVAL, "--firewall %s", why.msg);
			return -1;
		}
		json_object_set_new(b, "firewall", r);
		return 0;
	}
	}
	return 1;
}

int cli_create_body(int argc, char **argv, struct cli_globals *g, json_t **body, struct err *e)
{
	static const struct option opts[] = { { "image", required_argument, NULL, C_IMAGE },
					      { "template", required_argument, NULL, C_TEMPLATE },
					      CREATE_OPTIONS,
					      CLI_GLOBAL_OPTIONS };
	struct cli_getopt s;
	json_t *b = json_object();
	int rc = 0, opt;

	cli_getopt_init(&s, argc, argv, opts, g, e);
	/* The default image: kilnd requires one and "minimal" is the image
	 * kiln builds (docs/guest.md), so `kiln create` alone does the obvious thing. */
	json_object_set_new(b, "image", json_string("minimal"));
	while (!rc && (opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		switch (opt) {
		case CLI_GETOPT_ERROR:
			rc = -1;
			break;
		case CLI_GETOPT_WORD:
			err_set(e, EINVAL, "unexpected argument '%s' (create takes only options)",
				CLI_ECHO(s.value));
			rc = -1;
			break;
		case CLI_GETOPT_REST:
			err_set(e, EINVAL, "unexpected '--' (create takes only options)");
			rc = -1;
			break;
		case C_TEMPLATE:
			/* a template names its image */
			json_object_del(b, "image");
			rc = cli_body_str(b, "template", "--template", s.value, e);
			break;
		default:
			rc = create_opt(b, opt, s.value, e);
			break;
		}
	}
	if (!rc && json_object_get(b, "template") && json_object_get(b, "image")) {
		err_set(e, EINVAL,
			"--image and --template exclude each other (a template names its image)");
		rc = -1;
	}
	if (rc) {
		json_decref(b);
		return -1;
	}
	*body = b;
	return 0;
}

int cli_proc_opt(json_t *b, int opt, const char *v, struct err *e)
{
	switch (opt) {
	case CLI_PO_USER:
		return cli_body_str(b, "user", "--user", v, e);
	case CLI_PO_CWD:
		return cli_body_str(b, "cwd", "--cwd", v, e);
	case CLI_PO_ENV:
		return cli_put_kv(cli_body_sub(b, "env", false), v, true, "--env", e);
	case CLI_PO_TIMEOUT_MS:
		return cli_body_uint(b, "timeout_ms", "--timeout-ms", v, CLI_INT_MAX, e);
	case CLI_PO_SHELL:
		json_object_set_new(b, "shell", json_true());
		return 0;
	case CLI_PO_CONFINE:
		json_object_set_new(b, "confine", json_true());
		return 0;
	}
	return 1;
}

int cli_body_argv(json_t *b, int argc, char **argv, int rest, struct err *e)
{
	json_t *av = json_array();

	for (int i = rest; i < argc; i++) {
		json_t *a = json_string(argv[i]);

		if (!a) {
			err_set(e, EINVAL, "argument %d is not valid UTF-8", i - rest + 1);
			json_decref(av);
			return -1;
		}
		json_array_append_new(av, a);
	}
	json_object_set_new(b, "argv", av);
	return 0;
}

int cli_id_operand(void *id, const char *v, struct err *e)
{
	return cli_check_id(v, id, e);
}

/* cli_read_program's words: the program starts at argv[*rest] (argc: none). */
static int read_words(struct cli_getopt *o, const struct cli_prog_words *w, int *rest,
		      struct err *e)
{
	bool have_operand = false;
	int rc = 0, opt;

	*rest = -1;
	while (!rc && *rest < 0 && (opt = cli_getopt_next(o)) != CLI_GETOPT_DONE) {
		switch (opt) {
		case CLI_GETOPT_ERROR:
			rc = -1;
			break;
		case CLI_GETOPT_WORD:
			if (!have_operand) {
				/* Checked here, so the first bad word is the one reported. */
				rc = (w->operand ? w->operand : cli_id_operand)(w->operand_arg,
										o->value, e);
				have_operand = true;
			} else {
				/* The program starts at the first word after the
				 * operand, so `kiln exec ID ls -l` passes -l to ls. */
				*rest = o->next - 1;
			}
			break;
		case CLI_GETOPT_REST:
			*rest = o->next;
			break;
		default:
			rc = w->opt ? w->opt(w->opt_arg, opt, o->value, e) : 1;
			if (rc == 1)
				rc = cli_proc_opt(*w->body, opt, o->value, e);
			if (rc == 1) {
				err_set(e, EINVAL, "internal: option %d", opt);
				rc = -1;
			}
			break;
		}
	}
	if (*rest < 0)
		*rest = o->argc;
	if (!rc && !have_operand) {
		if (w->missing)
			err_set(e, EINVAL, "%s", w->missing);
		else
			err_set(e, EINVAL, "missing sandbox id (%s)", w->usage);
		rc = -1;
	}
	if (!rc && !w->optional && *rest >= o->argc) {
		err_set(e, EINVAL, "missing the program to run (%s)", w->usage);
		rc = -1;
	}
	return rc;
}

int cli_read_program(struct cli_getopt *o, const struct cli_prog_words *w, struct err *e)
{
	int rest, rc = read_words(o, w, &rest, e);

	if (!rc && rest < o->argc)
		rc = cli_body_argv(*w->body, o->argc, o->argv, rest, e) ? -1 : 1;
	if (rc < 0) {
		json_decref(*w->body);
		*w->body = NULL;
	}
	return rc;
}

enum { X_STREAM = CLI_PO_END, X_BUFFERED, X_STDIN = 'i' };

#define EXEC_USAGE "kiln exec ID [options] -- PROGRAM [ARG...]"
#define RUN_USAGE "kiln run [options] IMAGE -- PROGRAM [ARG...]"

/* exec's own options, after CLI_PROC_OPTDEFS (run takes them too). */
#define EXEC_OPTIONS                                                                           \
	{ "shell", no_argument, NULL, CLI_PO_SHELL }, { "stdin", no_argument, NULL, X_STDIN }, \
		{ "stream", no_argument, NULL, X_STREAM },                                     \
	{                                                                                      \
		"buffered", no_argument, NULL, X_BUFFERED                                      \
	}

/* One of exec's own options (run takes them too); 1: not one of them. */
static int exec_opt(void *arg, int opt, const char *v, struct err *e)
{
	struct cli_exec_req *x = arg;

	(void)v;
	(void)e;
	switch (opt) {
	case X_STREAM:
		x->stream = true;
		return 0;
	case X_BUFFERED:
		x->stream = false;
		return 0;
	case X_STDIN:
		x->send_stdin = true;
		return 0;
	}
	return 1;
}

/* Streamed output is not held by kilnd, so it may be as large as the agent
 * allows (docs/api.md, output_cap); the buffered default stays kilnd's. */
static void exec_stream_cap(struct cli_exec_req *req)
{
	if (req->stream && !json_object_get(req->body, "output_cap"))
		json_object_set_new(req->body, "output_cap", json_integer(CLI_STREAM_OUTPUT_CAP));
}

int cli_exec_parse(int argc, char **argv, struct cli_globals *g, struct cli_exec_req *req,
		   struct err *e)
{
	static const struct option opts[] = { CLI_PROC_OPTIONS, EXEC_OPTIONS, CLI_GLOBAL_OPTIONS };
	struct cli_getopt s;

	memset(req, 0, sizeof(*req));
	req->stream = true;
	req->body = json_object();
	cli_getopt_init(&s, argc, argv, opts, g, e);
	if (cli_read_program(&s,
			     &(struct cli_prog_words){ .body = &req->body,
						       .operand_arg = req->id,
						       .opt = exec_opt,
						       .opt_arg = req,
						       .usage = EXEC_USAGE },
			     e) < 0)
		return -1;
	exec_stream_cap(req);
	return 0;
}

/* run's options: create's into the sandbox's body, exec's into the command's. */
static int run_opt(void *arg, int opt, const char *v, struct err *e)
{
	struct cli_run_req *r = arg;
	int rc = create_opt(r->create, opt, v, e);

	return rc == 1 ? exec_opt(&r->exec, opt, v, e) : rc;
}

static int image_operand(void *create, const char *v, struct err *e)
{
	return cli_body_str(create, "image", "IMAGE", v, e);
}

int cli_run_parse(int argc, char **argv, struct cli_globals *g, struct cli_run_req *req,
		  struct err *e)
{
	/* --env is create's: the sandbox's environment, which the command
	 * inherits; the other process options are exec's. */
	static const struct option opts[] = {
		CREATE_OPTIONS,
		{ "user", required_argument, NULL, CLI_PO_USER },
		{ "cwd", required_argument, NULL, CLI_PO_CWD },
		{ "timeout-ms", required_argument, NULL, CLI_PO_TIMEOUT_MS },
		{ "confine", no_argument, NULL, CLI_PO_CONFINE },
		EXEC_OPTIONS,
		CLI_GLOBAL_OPTIONS,
	};
	struct cli_getopt s;

	memset(req, 0, sizeof(*req));
	req->create = json_object();
	req->exec.stream = true;
	req->exec.body = json_object();
	cli_getopt_init(&s, argc, argv, opts, g, e);
	if (cli_read_program(&s,
			     &(struct cli_prog_words){
				     .body = &req->exec.body,
				     .operand = image_operand,
				     .operand_arg = req->create,
				     .opt = run_opt,
				     .opt_arg = req,
				     .usage = RUN_USAGE,
				     .missing = "missing the image (" RUN_USAGE
						"; see `kiln images`)",
			     },
			     e) < 0) {
		json_decref(req->create);
		req->create = NULL;
		return -1;
	}
	exec_stream_cap(&req->exec);
	return 0;
}

int cli_url_encode(const char *s, char *out, size_t osz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || strchr("-._~/", c);

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

int cli_query_add(char *q, size_t qsz, const char *name, const char *value)
{
	size_t n = strlen(q);
	int w = snprintf(q + n, qsz - n, "%c%s=", n ? '&' : '?', name);

	if (w < 0 || (size_t)w >= qsz - n)
		return -ENAMETOOLONG;
	return cli_url_encode(value, q + n + w, qsz - n - (size_t)w);
}

enum { L_STATE = CLI_OPT_LONG, L_LABEL = 'l' };

int cli_list_query(int argc, char **argv, struct cli_globals *g, char *q, size_t qsz, struct err *e)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, L_STATE },
		{ "label", required_argument, NULL, L_LABEL },
		CLI_GLOBAL_OPTIONS,
	};
	struct cli_getopt s;
	int opt;

	q[0] = 0;
	cli_getopt_init(&s, argc, argv, opts, g, e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		switch (opt) {
		case L_STATE:
			if (cli_query_add(q, qsz, "state", s.value))
				goto too_long;
			break;
		case L_LABEL:
			if (!strchr(s.value, '=') || s.value[0] == '=') {
				err_set(e, EINVAL, "--label '%s': expected KEY=VALUE",
					CLI_ECHO(s.value));
				return -1;
			}
			if (cli_query_add(q, qsz, "label", s.value))
				goto too_long;
			break;
		case CLI_GETOPT_ERROR:
			return -1;
		default:
			err_set(e, EINVAL, "unexpected argument '%s' (ls takes only options)",
				CLI_ECHO(s.value ? s.value : "--"));
			return -1;
		}
	}
	return 0;
too_long:
	err_set(e, EINVAL, "the filters are too long");
	return -1;
}

int cli_one_id(int argc, char **argv, struct cli_globals *g, char *id, struct err *e)
{
	struct cli_getopt s;
	bool have = false;
	int opt;

	cli_getopt_init(&s, argc, argv, cli_global_options, g, e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return -1;
		if (opt != CLI_GETOPT_WORD || have) {
			err_set(e, EINVAL, "expected one sandbox id, got more ('%s')",
				CLI_ECHO(s.value ? s.value : "--"));
			return -1;
		}
		if (cli_check_id(s.value, id, e))
			return -1;
		have = true;
	}
	if (!have) {
		err_set(e, EINVAL, "missing sandbox id (see `kiln ls`)");
		return -1;
	}
	return 0;
}

int cli_guest_operand(const char *arg, char *id, const char **path, struct err *e)
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
	if (cli_check_id(idbuf, id, e))
		return -1;
	if (colon[1] != '/') {
		err_set(e, EINVAL, "'%s': the guest path must be absolute (ID:/path)",
			CLI_ECHO(arg));
		return -1;
	}
	*path = colon + 1;
	return 0;
}

enum { P_USER = 'u', P_PARENTS = 'p' };

int cli_cp_parse(int argc, char **argv, struct cli_globals *g, struct cli_cp_req *req,
		 struct err *e)
{
	static const struct option opts[] = {
		{ "user", required_argument, NULL, P_USER },
		{ "parents", no_argument, NULL, P_PARENTS },
		CLI_GLOBAL_OPTIONS,
	};
	const char *ops[2];
	int nops = 0, opt, k0, k1;
	struct cli_getopt s;
	char id0[CLI_ID_MAX + 1], id1[CLI_ID_MAX + 1];
	const char *p0 = NULL, *p1 = NULL;

	memset(req, 0, sizeof(*req));
	cli_getopt_init(&s, argc, argv, opts, g, e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		switch (opt) {
		case P_USER:
			req->user = s.value;
			break;
		case P_PARENTS:
			req->parents = true;
			break;
		case CLI_GETOPT_ERROR:
			return -1;
		case CLI_GETOPT_REST:
			/* After "--" everything is an operand, even "-x". */
			for (int i = s.next; i < s.argc; i++) {
				if (nops == 2)
					goto count;
				ops[nops++] = s.argv[i];
			}
			break;
		case CLI_GETOPT_WORD:
			if (nops == 2)
				goto count;
			ops[nops++] = s.value;
			break;
		}
	}
	if (nops != 2)
		goto count;
	k0 = cli_guest_operand(ops[0], id0, &p0, e);
	if (k0 < 0)
		return -1;
	k1 = cli_guest_operand(ops[1], id1, &p1, e);
	if (k1 < 0)
		return -1;
	if (k0 == k1) {
		err_set(e, EINVAL,
			k0 ? "neither operand is ID:/path (one side must be the sandbox)"
			   : "both operands are ID:/path (copy through a local file)");
		return -1;
	}
	req->upload = k1 == 0;
	memcpy(req->id, req->upload ? id1 : id0, sizeof(req->id));
	req->guest_path = req->upload ? p1 : p0;
	req->local = req->upload ? ops[0] : ops[1];
	if (!*req->local) {
		err_set(e, EINVAL, "empty local path");
		return -1;
	}
	return 0;
count:
	err_set(e, EINVAL,
		"expected two operands: kiln cp LOCAL ID:/path, or kiln cp ID:/path LOCAL");
	return -1;
}
