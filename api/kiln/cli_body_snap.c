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

#define RESTORE_USAGE "expected: restore ID NAME"

/*
 * The words of checkpoint (op CLI_SNAP_ADD: its verb is read after) and
 * restore (CLI_SNAP_RESTORE) into req, zeroed first: their operands into
 * pos (*npos of them; at most 3, restore's 2), checkpoint's --compress.
 * 0, or -1 with e (a word one too many, "--" included: "too many
 * arguments", restore's usage).
 */
static int read_operands(int argc, char **argv, struct cli_globals *g, enum cli_snap_op op,
			 struct cli_snap_req *req, const char **pos, int *npos, struct err *e)
{
	static const struct option opts[] = { { "compress", no_argument, NULL, O_COMPRESS },
					      CLI_GLOBAL_OPTIONS };
	bool restore = op == CLI_SNAP_RESTORE;
	struct cli_getopt s;
	int opt;

	memset(req, 0, sizeof(*req));
	req->op = op;
	*npos = 0;
	cli_getopt_init(&s, argc, argv, restore ? cli_global_options : opts, g, e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return -1;
		if (opt == O_COMPRESS) {
			req->compress = true;
		} else if (opt == CLI_GETOPT_WORD && *npos < (restore ? 2 : 3)) {
			pos[(*npos)++] = s.value;
		} else {
			err_set(e, EINVAL, "%s", restore ? RESTORE_USAGE : "too many arguments");
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
	const char *pos[3];
	int npos;

	if (read_operands(argc, argv, g, CLI_SNAP_ADD, req, pos, &npos, e))
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
	const char *pos[2];
	int npos;

	if (read_operands(argc, argv, g, CLI_SNAP_RESTORE, req, pos, &npos, e))
		return -1;
	if (npos != 2) {
		err_set(e, EINVAL, "%s", RESTORE_USAGE);
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
