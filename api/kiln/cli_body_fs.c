/* Command lines of kiln fs and kiln port into kilnd requests (cli_body.h). */
#include "api/kiln/cli_body.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum {
	F_LIMIT = CLI_OPT_LONG,
	F_NO_FOLLOW,
	F_WATCHES,
	F_QUEUE,
	F_USER = 'u',
	F_DEPTH = 'd',
	F_PARENTS = 'p',
	F_MODE = 'm',
	F_RECURSIVE = 'r',
	F_FORCE = 'f'
};

struct fs_sub {
	const char *name;
	enum cli_fs_op op;
	const char *endpoint;
	const struct option *opts;
};

#define USER_OPTION                                     \
	{                                               \
		"user", required_argument, NULL, F_USER \
	}
static const struct option ls_opts[] = { USER_OPTION,
					 { "depth", required_argument, NULL, F_DEPTH },
					 { "limit", required_argument, NULL, F_LIMIT },
					 CLI_GLOBAL_OPTIONS };
static const struct option stat_opts[] = { USER_OPTION,
					   { "no-follow", no_argument, NULL, F_NO_FOLLOW },
					   CLI_GLOBAL_OPTIONS };
static const struct option mkdir_opts[] = { USER_OPTION,
					    { "parents", no_argument, NULL, F_PARENTS },
					    { "mode", required_argument, NULL, F_MODE },
					    CLI_GLOBAL_OPTIONS };
static const struct option rm_opts[] = { USER_OPTION,
					 { "recursive", no_argument, NULL, F_RECURSIVE },
					 CLI_GLOBAL_OPTIONS };
static const struct option mv_opts[] = { USER_OPTION,
					 { "force", no_argument, NULL, F_FORCE },
					 CLI_GLOBAL_OPTIONS };
static const struct option watch_opts[] = { USER_OPTION,
					    { "recursive", no_argument, NULL, F_RECURSIVE },
					    { "max-watches", required_argument, NULL, F_WATCHES },
					    { "queue", required_argument, NULL, F_QUEUE },
					    CLI_GLOBAL_OPTIONS };

static const struct fs_sub fs_subs[] = {
	{ "ls", CLI_FS_LS, "files/list", ls_opts },
	{ "stat", CLI_FS_STAT, "files/stat", stat_opts },
	{ "mkdir", CLI_FS_MKDIR, "files/mkdir", mkdir_opts },
	{ "rm", CLI_FS_RM, "files/remove", rm_opts },
	{ "mv", CLI_FS_MV, "files/rename", mv_opts },
	{ "watch", CLI_FS_WATCH, "files/watch", watch_opts },
	{ 0 },
};

/* An octal permission mode, 0..07777 ("755", "0755"). */
static int parse_mode(const char *v, unsigned *mode)
{
	unsigned m = 0;

	if (!*v || strlen(v) > 5 || strspn(v, "01234567") != strlen(v))
		return -1;
	for (; *v; v++)
		m = m * 8 + (unsigned)(*v - '0');
	if (m > 07777)
		return -1;
	*mode = m;
	return 0;
}

/* The query of ls, stat and watch: "?path=..." and the options given (NULL: left out). */
static int fs_query(struct cli_fs_req *req, const char *const opts[][2], size_t n, struct err *e)
{
	char *q = req->query;
	size_t qsz = sizeof(req->query);

	q[0] = 0;
	if (cli_query_add(q, qsz, "path", req->path))
		goto long_path;
	for (size_t i = 0; i < n; i++)
		if (opts[i][1] && cli_query_add(q, qsz, opts[i][0], opts[i][1]))
			goto long_path;
	return 0;
long_path:
	err_set(e, EINVAL, "the guest path is too long");
	return -1;
}

static int add_operand(const char **ops, int *n, int want, const char *v, struct err *e)
{
	if (*n == want) {
		err_set(e, EINVAL, "unexpected argument '%s'", CLI_ECHO(v));
		return -1;
	}
	ops[(*n)++] = v;
	return 0;
}

int cli_fs_parse(int argc, char **argv, struct cli_globals *g, struct cli_fs_req *req,
		 struct err *e)
{
	const struct fs_sub *sub;
	const char *ops[2], *user = NULL, *depth = NULL, *limit = NULL, *to = NULL, *watches = NULL,
			    *queue = NULL;
	bool no_follow = false, parents = false, recursive = false, force = false,
	     have_mode = false;
	unsigned mode = 0;
	uint64_t n;
	int nops = 0, opt, want, k;
	struct cli_getopt s;

	memset(req, 0, sizeof(*req));
	if (argc < 1) {
		err_set(e, EINVAL, "missing subcommand: ls, stat, mkdir, rm, mv or watch");
		return -1;
	}
	for (sub = fs_subs; sub->name && strcmp(sub->name, argv[0]); sub++)
		;
	if (!sub->name) {
		err_set(e, EINVAL, "unknown subcommand '%s' (ls, stat, mkdir, rm, mv or watch)",
			CLI_ECHO(argv[0]));
		return -1;
	}
	req->op = sub->op;
	req->endpoint = sub->endpoint;
	/* watch also takes "ID /DIR" (kiln fs watch SANDBOX DIR). */
	want = sub->op == CLI_FS_MV || sub->op == CLI_FS_WATCH ? 2 : 1;
	cli_getopt_init(&s, argc, argv, sub->opts, g, e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		switch (opt) {
		case F_USER:
			user = s.value;
			break;
		case F_DEPTH:
		case F_LIMIT:
		case F_WATCHES:
		case F_QUEUE:
			if (num_parse_u64(s.value, 10, 1, CLI_INT_MAX, &n)) {
				err_set(e, EINVAL, "--%s '%s': expected a whole number",
					opt == F_DEPTH           ? "depth"
						: opt == F_LIMIT ? "limit"
						: opt == F_QUEUE ? "queue"
								 : "max-watches",
					CLI_ECHO(s.value));
				return -1;
			}
			*(opt == F_DEPTH           ? &depth
				  : opt == F_LIMIT ? &limit
				  : opt == F_QUEUE ? &queue
						   : &watches) = s.value;
			break;
		case F_NO_FOLLOW:
			no_follow = true;
			break;
		case F_PARENTS:
			parents = true;
			break;
		case F_MODE:
			if (parse_mode(s.value, &mode)) {
				err_set(e, EINVAL,
					"--mode '%s': expected octal permission bits (0755)",
					CLI_ECHO(s.value));
				return -1;
			}
			have_mode = true;
			break;
		case F_RECURSIVE:
			recursive = true;
			break;
		case F_FORCE:
			force = true;
			break;
		case CLI_GETOPT_ERROR:
			return -1;
		case CLI_GETOPT_REST:
			/* After "--" everything is an operand, even "-x". */
			for (int i = s.next; i < s.argc; i++)
				if (add_operand(ops, &nops, want, s.argv[i], e))
					return -1;
			break;
		case CLI_GETOPT_WORD:
			if (add_operand(ops, &nops, want, s.value, e))
				return -1;
			break;
		}
	}
	if (sub->op == CLI_FS_WATCH && nops == 2) {
		if (cli_check_id(ops[0], req->id, e))
			return -1;
		req->path = ops[1];
		if (req->path[0] != '/') {
			err_set(e, EINVAL, "'%s': the guest directory must be absolute",
				CLI_ECHO(req->path));
			return -1;
		}
		goto query;
	}
	if (nops < (sub->op == CLI_FS_WATCH ? 1 : want)) {
		err_set(e, EINVAL,
			sub->op == CLI_FS_WATCH
				? "expected ID:/DIR (or ID /DIR): the guest directory to watch"
				: want == 2 ? "expected ID:/FROM and ID:/TO (or /TO)"
					    : "expected ID:/PATH");
		return -1;
	}
	k = cli_guest_operand(ops[0], req->id, &req->path, e);
	if (k == 1)
		err_set(e, EINVAL, "'%s' is not ID:/PATH (a path in a sandbox)", CLI_ECHO(ops[0]));
	if (k)
		return -1;
	if (sub->op == CLI_FS_MV) {
		char id2[CLI_ID_MAX + 1];
		k = cli_guest_operand(ops[1], id2, &to, e);
		if (k < 0)
			return -1;
		if (k == 1) {
			to = ops[1];
			if (to[0] != '/') {
				err_set(e, EINVAL,
					"'%s': the destination must be absolute (/TO or ID:/TO)",
					CLI_ECHO(to));
				return -1;
			}
		} else if (strcmp(id2, req->id)) {
			err_set(e, EINVAL,
				"mv stays within one sandbox (%s and %s differ); use kiln cp",
				req->id, id2);
			return -1;
		}
	}
query:
	if (sub->op == CLI_FS_LS || sub->op == CLI_FS_STAT || sub->op == CLI_FS_WATCH) {
		const char *const opts[][2] = {
			{ "depth", depth },
			{ "limit", limit },
			{ "follow", no_follow ? "false" : NULL },
			{ "recursive", sub->op == CLI_FS_WATCH && recursive ? "true" : NULL },
			{ "max_watches", watches },
			{ "queue", queue },
			{ "user", user },
		};

		return fs_query(req, opts, sizeof(opts) / sizeof(opts[0]), e);
	}
	req->body = json_object();
	if (sub->op == CLI_FS_MV) {
		json_object_set_new(req->body, "from", json_string(req->path));
		json_object_set_new(req->body, "to", json_string(to));
		if (force)
			json_object_set_new(req->body, "overwrite", json_true());
	} else {
		json_object_set_new(req->body, "path", json_string(req->path));
		if (parents)
			json_object_set_new(req->body, "parents", json_true());
		if (have_mode)
			json_object_set_new(req->body, "mode", json_integer(mode));
		if (recursive)
			json_object_set_new(req->body, "recursive", json_true());
	}
	if (user && cli_body_str(req->body, "user", "--user", user, e)) {
		json_decref(req->body);
		req->body = NULL;
		return -1;
	}
	/* json_string(NULL) for a path that is not UTF-8 leaves the field out. */
	if (json_object_size(req->body) < (sub->op == CLI_FS_MV ? 2u : 1u) ||
	    (sub->op == CLI_FS_MV && !json_object_get(req->body, "to"))) {
		json_decref(req->body);
		req->body = NULL;
		err_set(e, EINVAL, "the guest path is not valid UTF-8");
		return -1;
	}
	return 0;
}

static int port_number(const char *v, unsigned long long min, const char *what, unsigned *out,
		       struct err *e)
{
	uint64_t n;

	if (num_parse_u64(v, 10, min, 65535, &n)) {
		err_set(e, EINVAL, "%s '%s': expected a port number %llu..65535", what, CLI_ECHO(v),
			min);
		return -1;
	}
	*out = (unsigned)n;
	return 0;
}

/* The verb of "[add] ID ...", "ls ID ..." or "rm ID ...": 0 add, 1 ls,
 * 2 rm; *first is where ID is. Sandbox ids are hex, so "ls", "rm" and
 * "add" cannot be ids. */
static int sub_verb(const char *const *ops, int nops, int *first)
{
	int verb = 0;

	if (nops && !strcmp(ops[0], "ls"))
		verb = 1;
	else if (nops && !strcmp(ops[0], "rm"))
		verb = 2;
	*first = nops && (verb || !strcmp(ops[0], "add"));
	return verb;
}

int cli_port_parse(int argc, char **argv, struct cli_globals *g, struct cli_port_req *req,
		   struct err *e)
{
	const char *ops[4];
	int nops = 0, opt, first, min, max, verb;
	unsigned guest, host = 0;
	struct cli_getopt s;

	memset(req, 0, sizeof(*req));
	cli_getopt_init(&s, argc, argv, cli_global_options, g, e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return -1;
		if (opt != CLI_GETOPT_WORD || nops == 4) {
			err_set(e, EINVAL, "unexpected argument '%s'",
				CLI_ECHO(s.value ? s.value : "--"));
			return -1;
		}
		ops[nops++] = s.value;
	}
	verb = sub_verb(ops, nops, &first);
	req->op = verb == 1 ? CLI_PORT_LS : verb == 2 ? CLI_PORT_RM : CLI_PORT_ADD;
	min = req->op == CLI_PORT_ADD ? 2 : req->op == CLI_PORT_LS ? 1 : 2;
	max = req->op == CLI_PORT_ADD ? 3 : min;
	if (nops - first < min || nops - first > max) {
		err_set(e, EINVAL,
			req->op == CLI_PORT_ADD          ? "expected ID GUEST_PORT [HOST_PORT]"
				: req->op == CLI_PORT_LS ? "expected: kiln port ls ID"
							 : "expected: kiln port rm ID HOST_PORT");
		return -1;
	}
	if (cli_check_id(ops[first], req->id, e))
		return -1;
	if (req->op == CLI_PORT_RM)
		return port_number(ops[first + 1], 1, "HOST_PORT", &req->host_port, e);
	if (req->op == CLI_PORT_LS)
		return 0;
	if (port_number(ops[first + 1], 1, "GUEST_PORT", &guest, e) ||
	    (nops - first == 3 && port_number(ops[first + 2], 0, "HOST_PORT", &host, e)))
		return -1;
	req->body = json_pack("{s:i}", "guest_port", (int)guest);
	if (nops - first == 3)
		json_object_set_new(req->body, "host_port", json_integer(host));
	return 0;
}

int cli_preview_parse(int argc, char **argv, struct cli_globals *g, struct cli_preview_req *req,
		      struct err *e)
{
	enum { O_PUBLIC = CLI_OPT_LONG };
	static const struct option opts[] = { { "public", no_argument, NULL, O_PUBLIC },
					      CLI_GLOBAL_OPTIONS };
	const char *ops[3];
	int nops = 0, opt, first, want, verb;
	bool pub = false;
	struct cli_getopt s;

	memset(req, 0, sizeof(*req));
	cli_getopt_init(&s, argc, argv, opts, g, e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return -1;
		if (opt == O_PUBLIC) {
			pub = true;
			continue;
		}
		if (opt != CLI_GETOPT_WORD || nops == 3) {
			err_set(e, EINVAL, "unexpected argument '%s'",
				CLI_ECHO(s.value ? s.value : "--"));
			return -1;
		}
		ops[nops++] = s.value;
	}
	verb = sub_verb(ops, nops, &first);
	req->op = verb == 1 ? CLI_PREVIEW_LS : verb == 2 ? CLI_PREVIEW_RM : CLI_PREVIEW_ADD;
	want = req->op == CLI_PREVIEW_LS ? 1 : 2;
	if (nops - first != want || (pub && req->op != CLI_PREVIEW_ADD)) {
		err_set(e, EINVAL,
			req->op == CLI_PREVIEW_ADD ? "expected: kiln preview ID PORT [--public]"
				: req->op == CLI_PREVIEW_LS ? "expected: kiln preview ls ID"
							    : "expected: kiln preview rm ID PORT");
		return -1;
	}
	if (cli_check_id(ops[first], req->id, e))
		return -1;
	if (req->op == CLI_PREVIEW_LS)
		return 0;
	if (port_number(ops[first + 1], 1, "PORT", &req->port, e))
		return -1;
	if (req->op == CLI_PREVIEW_ADD)
		req->body = json_pack("{s:i,s:b}", "port", (int)req->port, "public", pub);
	return 0;
}
