/*
 * The kiln CLI's checkpoint and fork command lines (pure; see cli_body.h):
 *
 *   kiln checkpoint [add] ID NAME [--compress]
 *   kiln checkpoint ls ID
 *   kiln checkpoint rm ID NAME
 *   kiln restore ID NAME
 *   kiln fork ID/NAME [--hostname H] [--label K=V]... [--env K=V]...
 */
#include <errno.h>
#include <string.h>

#include "api/kiln/cli_body.h"

enum { O_COMPRESS = CLI_OPT_LONG, O_HOSTNAME, O_LABEL = 'l', O_ENV = 'e' };

/* A checkpoint name as kilnd takes it (it validates the rest). */
static int check_name(const char *s, char *name, struct err *e)
{
	size_t n = strlen(s);

	if (n == 0 || n > CLI_CP_NAME_MAX ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != n) {
		err_set(e, EINVAL, "checkpoint name '%.80s': 1..%d of A-Z a-z 0-9 . _ -", s,
			CLI_CP_NAME_MAX);
		return -1;
	}
	memcpy(name, s, n + 1);
	return 0;
}

/*
 * The words of checkpoint and restore: at most max operands into pos
 * (*npos of them), --compress into req. 0, or -1 with e (`more` when a
 * word is one too many, "--" included).
 */
static int read_operands(struct cli_getopt *s, struct cli_snap_req *req, const char **pos, int max,
			 int *npos, const char *more, struct err *e)
{
	int opt;

	*npos = 0;
	while ((opt = cli_getopt_next(s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return -1;
		if (opt == O_COMPRESS) {
			req->compress = true;
		} else if (opt == CLI_GETOPT_WORD && *npos < max) {
			pos[(*npos)++] = s->value;
		} else {
			err_set(e, EINVAL, "%s", more);
			return -1;
		}
	}
	return 0;
}

/* pos[0] the sandbox id, and pos[1] (when named) the checkpoint's name. */
static int id_and_name(const char **pos, bool named, struct cli_snap_req *req, struct err *e)
{
	if (cli_check_id(pos[0], req->id, e))
		return -1;
	return named ? check_name(pos[1], req->name, e) : 0;
}

int cli_checkpoint_parse(int argc, char **argv, struct cli_globals *g, struct cli_snap_req *req,
			 struct err *e)
{
	static const struct option opts[] = { { "compress", no_argument, NULL, O_COMPRESS },
					      CLI_GLOBAL_OPTIONS };
	const char *pos[3];
	struct cli_getopt s;
	int npos;

	memset(req, 0, sizeof(*req));
	req->op = CLI_SNAP_ADD;
	cli_getopt_init(&s, argc, argv, opts, g, e);
	if (read_operands(&s, req, pos, 3, &npos, "too many arguments", e))
		return -1;
	if (npos && (!strcmp(pos[0], "ls") || !strcmp(pos[0], "rm") || !strcmp(pos[0], "add"))) {
		req->op = !strcmp(pos[0], "ls") ? CLI_SNAP_LS
			: !strcmp(pos[0], "rm") ? CLI_SNAP_RM
						: CLI_SNAP_ADD;
		memmove(pos, pos + 1, sizeof(pos[0]) * (size_t)--npos);
	}
	if (npos != (req->op == CLI_SNAP_LS ? 1 : 2)) {
		err_set(e, EINVAL,
			req->op == CLI_SNAP_LS ? "expected: checkpoint ls ID"
					       : "expected an ID and a checkpoint NAME");
		return -1;
	}
	if (req->compress && req->op != CLI_SNAP_ADD) {
		err_set(e, EINVAL, "--compress is for taking a checkpoint");
		return -1;
	}
	return id_and_name(pos, npos == 2, req, e);
}

int cli_restore_parse(int argc, char **argv, struct cli_globals *g, struct cli_snap_req *req,
		      struct err *e)
{
	static const char usage[] = "expected: restore ID NAME";
	const char *pos[2];
	struct cli_getopt s;
	int npos;

	memset(req, 0, sizeof(*req));
	req->op = CLI_SNAP_RESTORE;
	cli_getopt_init(&s, argc, argv, cli_global_options, g, e);
	if (read_operands(&s, req, pos, 2, &npos, usage, e))
		return -1;
	if (npos != 2) {
		err_set(e, EINVAL, "%s", usage);
		return -1;
	}
	return id_and_name(pos, true, req, e);
}

int cli_fork_body(int argc, char **argv, struct cli_globals *g, json_t **out, struct err *e)
{
	static const struct option opts[] = { { "hostname", required_argument, NULL, O_HOSTNAME },
					      { "label", required_argument, NULL, O_LABEL },
					      { "env", required_argument, NULL, O_ENV },
					      CLI_GLOBAL_OPTIONS };
	char id[CLI_ID_MAX + 1], name[CLI_CP_NAME_MAX + 1], ref[CLI_ID_MAX + CLI_CP_NAME_MAX + 2];
	const char *from = NULL, *slash;
	json_t *body = json_object();
	struct cli_getopt s;
	int opt;

	*out = NULL;
	if (!body) {
		err_set(e, EINVAL, "out of memory");
		return -1;
	}
	cli_getopt_init(&s, argc, argv, opts, g, e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		int r = 0;

		if (opt == CLI_GETOPT_ERROR) {
			r = -1;
		} else if (opt == O_HOSTNAME) {
			r = cli_body_str(body, "hostname", "--hostname", s.value, e);
		} else if (opt == O_LABEL) {
			r = cli_put_kv(cli_body_sub(body, "labels", false), s.value, false,
				       "--label", e);
		} else if (opt == O_ENV) {
			r = cli_put_kv(cli_body_sub(body, "env", false), s.value, false, "--env",
				       e);
		} else if (opt == CLI_GETOPT_WORD && !from) {
			from = s.value;
		} else {
			err_set(e, EINVAL, "expected one ID/NAME");
			r = -1;
		}
		if (r) {
			json_decref(body);
			return -1;
		}
	}
	slash = from ? strchr(from, '/') : NULL;
	if (!slash || (size_t)(slash - from) > CLI_ID_MAX) {
		err_set(e, EINVAL,
			"expected the checkpoint as ID/NAME, e.g. 3f9a1c2b7d4e/before-tests");
		json_decref(body);
		return -1;
	}
	memcpy(ref, from, (size_t)(slash - from));
	ref[slash - from] = 0;
	if (cli_check_id(ref, id, e) || check_name(slash + 1, name, e)) {
		json_decref(body);
		return -1;
	}
	snprintf(ref, sizeof(ref), "%s/%s", id, name);
	json_object_set_new(body, "from_checkpoint", json_string(ref));
	*out = body;
	return 0;
}
