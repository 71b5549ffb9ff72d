/* Command lines of the process commands into kilnd requests (cli_body.h). */
#include "api/kiln/cli_body.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { S_ROWS = CLI_PO_END, S_COLS, S_RING, S_PTY = 't', S_STDIN = 'i' };

#define SPAWN_USAGE "kiln spawn ID [options] -- PROGRAM [ARG...]"
#define SHELL_USAGE "kiln shell ID [options] [-- PROGRAM [ARG...]]"

/* spawn's own options; 1: not one of them. */
static int spawn_opt(void *arg, int opt, const char *v, struct err *e)
{
	struct cli_spawn_req *req = arg;

	switch (opt) {
	case S_PTY:
		json_object_set_new(req->body, "pty", json_true());
		return 0;
	case S_ROWS:
		return cli_body_uint(req->body, "rows", "--rows", v, CLI_INT_MAX, e);
	case S_COLS:
		return cli_body_uint(req->body, "cols", "--cols", v, CLI_INT_MAX, e);
	case S_RING:
		return cli_body_uint(req->body, "ring_bytes", "--ring-bytes", v, CLI_INT_MAX, e);
	case S_STDIN:
		req->send_stdin = true;
		return 0;
	}
	return 1;
}

int cli_spawn_parse(int argc, char **argv, struct cli_globals *g, struct cli_spawn_req *req,
		    struct err *e)
{
	static const struct option opts[] = {
		CLI_PROC_OPTIONS,
		{ "shell", no_argument, NULL, CLI_PO_SHELL },
		{ "pty", no_argument, NULL, S_PTY },
		{ "rows", required_argument, NULL, S_ROWS },
		{ "cols", required_argument, NULL, S_COLS },
		{ "ring-bytes", required_argument, NULL, S_RING },
		{ "stdin", no_argument, NULL, S_STDIN },
		CLI_GLOBAL_OPTIONS,
	};
	struct cli_getopt s;

	memset(req, 0, sizeof(*req));
	req->body = json_object();
	cli_getopt_init(&s, argc, argv, opts, g, e);
	return cli_read_program(&s,
				&(struct cli_prog_words){ .body = &req->body,
							  .operand_arg = req->id,
							  .opt = spawn_opt,
							  .opt_arg = req,
							  .usage = SPAWN_USAGE },
				e) < 0
		? -1
		: 0;
}

int cli_shell_parse(int argc, char **argv, struct cli_globals *g, struct cli_shell_req *req,
		    struct err *e)
{
	static const struct option opts[] = { CLI_PROC_OPTIONS, CLI_GLOBAL_OPTIONS };
	struct cli_getopt s;
	int rc;

	memset(req, 0, sizeof(*req));
	req->body = json_object();
	cli_getopt_init(&s, argc, argv, opts, g, e);
	rc = cli_read_program(&s,
			      &(struct cli_prog_words){ .body = &req->body,
							.operand_arg = req->id,
							.usage = SHELL_USAGE,
							.optional = true },
			      e);
	if (rc < 0)
		return -1;
	/* A program: .../processes on a PTY. */
	req->has_argv = rc == 1;
	if (req->has_argv)
		json_object_set_new(req->body, "pty", json_true());
	return 0;
}

enum { P_FROM = CLI_OPT_LONG, P_GROUP, P_TIMEOUT_MS, P_CLOSE, P_FOLLOW = 'f', P_SIGNAL = 's' };

/* --from: a seq (decimal) or "now", as kilnd's output and tty take it. */
static int from_query(struct cli_proc_req *req, const char *v, const char *extra, struct err *e)
{
	uint64_t seq;

	if (strcmp(v, "now") && num_parse_u64(v, 10, 0, UINT64_MAX, &seq)) {
		err_set(e, EINVAL, "--from '%s': expected a byte offset (seq) or 'now'",
			CLI_ECHO(v));
		return -1;
	}
	snprintf(req->query, sizeof(req->query), "?%sfrom=%s", extra, v);
	return 0;
}

/* kill --signal: a number is sent as one, anything else as a name. */
static int signal_field(json_t *b, const char *v, struct err *e)
{
	uint64_t n;

	if (!num_parse_u64(v, 10, 1, 64, &n)) {
		json_object_set_new(b, "signal", json_integer((json_int_t)n));
		return 0;
	}
	if (!*v ||
	    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-") !=
		    strlen(v) ||
	    strlen(v) > 16) {
		err_set(e, EINVAL,
			"--signal '%s': expected a name (TERM, SIGKILL, ...) or a number 1..64",
			CLI_ECHO(v));
		return -1;
	}
	json_object_set_new(b, "signal", json_string(v));
	return 0;
}

int cli_proc_parse(const char *cmd, int argc, char **argv, struct cli_globals *g,
		   struct cli_proc_req *req, struct err *e)
{
	static const struct option logs_opts[] = { { "follow", no_argument, NULL, P_FOLLOW },
						   { "from", required_argument, NULL, P_FROM },
						   CLI_GLOBAL_OPTIONS };
	static const struct option attach_opts[] = { { "from", required_argument, NULL, P_FROM },
						     CLI_GLOBAL_OPTIONS };
	static const struct option kill_opts[] = { { "signal", required_argument, NULL, P_SIGNAL },
						   { "group", no_argument, NULL, P_GROUP },
						   CLI_GLOBAL_OPTIONS };
	static const struct option wait_opts[] = {
		{ "timeout-ms", required_argument, NULL, P_TIMEOUT_MS }, CLI_GLOBAL_OPTIONS
	};
	static const struct option stdin_opts[] = { { "close", no_argument, NULL, P_CLOSE },
						    CLI_GLOBAL_OPTIONS };
	const struct option *opts;
	bool logs = !strcmp(cmd, "logs"), is_stdin = !strcmp(cmd, "stdin");
	const char *ops[3];
	int nops = 0, maxops = is_stdin ? 3 : 2, opt, rc = 0;
	uint64_t n;
	struct cli_getopt s;

	memset(req, 0, sizeof(*req));
	/* A wait without --timeout-ms lasts as long as the process. */
	req->wait_s = !strcmp(cmd, "wait") ? -1 : 0;
	if (logs)
		opts = logs_opts;
	else if (!strcmp(cmd, "attach"))
		opts = attach_opts;
	else if (!strcmp(cmd, "kill"))
		opts = kill_opts;
	else if (!strcmp(cmd, "wait"))
		opts = wait_opts;
	else if (is_stdin)
		opts = stdin_opts;
	else {
		err_set(e, EINVAL, "internal: no process command '%s'", cmd);
		return -1;
	}
	if (logs)
		snprintf(req->query, sizeof(req->query), "?encoding=base64");
	if (!strcmp(cmd, "kill"))
		req->body = json_pack("{s:s}", "signal", "TERM");
	cli_getopt_init(&s, argc, argv, opts, g, e);
	while (!rc && (opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		switch (opt) {
		case P_FOLLOW:
			req->follow = true;
			break;
		case P_FROM:
			rc = from_query(req, s.value, logs ? "encoding=base64&" : "", e);
			break;
		case P_SIGNAL:
			rc = signal_field(req->body, s.value, e);
			break;
		case P_GROUP:
			json_object_set_new(req->body, "group", json_true());
			break;
		case P_TIMEOUT_MS:
			if (num_parse_u64(s.value, 10, 0, CLI_INT_MAX, &n)) {
				err_set(e, EINVAL, "--timeout-ms '%s': expected a whole number",
					CLI_ECHO(s.value));
				rc = -1;
			} else {
				snprintf(req->query, sizeof(req->query), "?timeout_ms=%llu",
					 (unsigned long long)n);
				req->wait_s = n ? (long long)((n + 999) / 1000) : -1;
			}
			break;
		case P_CLOSE:
			req->close = true;
			break;
		case CLI_GETOPT_ERROR:
			rc = -1;
			break;
		case CLI_GETOPT_REST:
			for (int i = s.next; !rc && i < s.argc; i++) {
				if (nops == maxops) {
					err_set(e, EINVAL, "unexpected argument '%s'",
						CLI_ECHO(s.argv[i]));
					rc = -1;
				} else {
					ops[nops++] = s.argv[i];
				}
			}
			break;
		case CLI_GETOPT_WORD:
			if (nops == maxops) {
				err_set(e, EINVAL, "unexpected argument '%s'", CLI_ECHO(s.value));
				rc = -1;
			} else {
				ops[nops++] = s.value;
			}
			break;
		}
	}
	if (!rc && nops < 2) {
		err_set(e, EINVAL,
			"expected a sandbox id and a process id (`kiln ps ID` lists them)");
		rc = -1;
	}
	if (!rc)
		rc = cli_check_id(ops[0], req->id, e);
	if (!rc && num_parse_u64(ops[1], 10, 1, 0xffffffffULL, &n)) {
		err_set(e, EINVAL,
			"'%s' is not a process id (a number from `kiln ps ID` or `kiln spawn`)",
			CLI_ECHO(ops[1]));
		rc = -1;
	}
	if (rc) {
		json_decref(req->body);
		req->body = NULL;
		return -1;
	}
	req->proc = (unsigned long)n;
	req->file = nops == 3 ? ops[2] : NULL;
	return 0;
}
