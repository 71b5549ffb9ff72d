/* Command lines of the process commands into kilnd requests (cli_body.h). */
#include "api/kiln/cli_body.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { S_PTY = CLI_PO_END, S_ROWS, S_COLS, S_RING, S_STDIN };

#define SPAWN_USAGE "kiln spawn ID [options] -- PROGRAM [ARG...]"
#define SHELL_USAGE "kiln shell ID [options] [-- PROGRAM [ARG...]]"

/* spawn's own options; 1: not one of them. */
static int spawn_opt(void *arg, int opt, const char *v, char *err, size_t errsz)
{
	struct cli_spawn_req *req = arg;

	switch (opt) {
	case S_PTY:
		json_object_set_new(req->body, "pty", json_true());
		return 0;
	case S_ROWS:
		return cli_body_uint(req->body, "rows", "--rows", v, CLI_INT_MAX, err, errsz);
	case S_COLS:
		return cli_body_uint(req->body, "cols", "--cols", v, CLI_INT_MAX, err, errsz);
	case S_RING:
		return cli_body_uint(req->body, "ring_bytes", "--ring-bytes", v, CLI_INT_MAX, err, errsz);
	case S_STDIN:
		req->send_stdin = true;
		return 0;
	}
	return 1;
}

int cli_spawn_parse(int argc, char **argv, struct cli_globals *g, struct cli_spawn_req *req, char *err,
		    size_t errsz)
{
	static const struct cli_optdef defs[] = {
		CLI_PROC_OPTDEFS,
		{ "shell", 0, false, CLI_PO_SHELL },
		{ "pty", 't', false, S_PTY },
		{ "rows", 0, true, S_ROWS },
		{ "cols", 0, true, S_COLS },
		{ "ring-bytes", 0, true, S_RING },
		{ "stdin", 'i', false, S_STDIN },
		{ 0 },
	};
	struct cli_scan s;
	struct cli_prog_words w;
	int rest;

	memset(req, 0, sizeof(*req));
	req->body = json_object();
	w = (struct cli_prog_words){
		.body = req->body,
		.operand = cli_id_operand, .operand_arg = req->id,
		.opt = spawn_opt, .opt_arg = req,
		.missing = "missing sandbox id (" SPAWN_USAGE ")",
		.usage = SPAWN_USAGE,
	};
	cli_scan_init(&s, argc, argv, defs, g);
	if (cli_scan_program(&s, &w, &rest, err, errsz) || cli_body_argv(req->body, argc, argv, rest, err, errsz)) {
		json_decref(req->body);
		req->body = NULL;
		return -1;
	}
	return 0;
}

int cli_shell_parse(int argc, char **argv, struct cli_globals *g, struct cli_shell_req *req, char *err,
		    size_t errsz)
{
	static const struct cli_optdef defs[] = { CLI_PROC_OPTDEFS, { 0 } };
	struct cli_scan s;
	struct cli_prog_words w;
	int rc, rest;

	memset(req, 0, sizeof(*req));
	req->body = json_object();
	w = (struct cli_prog_words){
		.body = req->body,
		.operand = cli_id_operand, .operand_arg = req->id,
		.missing = "missing sandbox id (" SHELL_USAGE ")",
	};
	cli_scan_init(&s, argc, argv, defs, g);
	rc = cli_scan_program(&s, &w, &rest, err, errsz);
	if (!rc && rest < argc) {
		req->has_argv = true;
		json_object_set_new(req->body, "pty", json_true());
		rc = cli_body_argv(req->body, argc, argv, rest, err, errsz);
	}
	if (rc) {
		json_decref(req->body);
		req->body = NULL;
		return -1;
	}
	return 0;
}

enum { P_FOLLOW = 1, P_FROM, P_SIGNAL, P_GROUP, P_TIMEOUT_MS, P_CLOSE };

/* --from: a seq (decimal) or "now", as kilnd's output and tty take it. */
static int from_query(struct cli_proc_req *req, const char *v, const char *extra, char *err, size_t errsz)
{
	uint64_t seq;

	if (strcmp(v, "now") && num_parse_u64(v, 10, 0, UINT64_MAX, &seq)) {
		snprintf(err, errsz, "--from '%s': expected a byte offset (seq) or 'now'", CLI_ECHO(v));
		return -1;
	}
	snprintf(req->query, sizeof(req->query), "?%sfrom=%s", extra, v);
	return 0;
}

/* kill --signal: a number is sent as one, anything else as a name. */
static int signal_field(json_t *b, const char *v, char *err, size_t errsz)
{
	uint64_t n;

	if (!num_parse_u64(v, 10, 1, 64, &n)) {
		json_object_set_new(b, "signal", json_integer((json_int_t)n));
		return 0;
	}
	if (!*v || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-") != strlen(v) ||
	    strlen(v) > 16) {
		snprintf(err, errsz, "--signal '%s': expected a name (TERM, SIGKILL, ...) or a number 1..64", CLI_ECHO(v));
		return -1;
	}
	json_object_set_new(b, "signal", json_string(v));
	return 0;
}

int cli_proc_parse(const char *cmd, int argc, char **argv, struct cli_globals *g, struct cli_proc_req *req,
		   char *err, size_t errsz)
{
	static const struct cli_optdef logs_defs[] = {
		{ "follow", 'f', false, P_FOLLOW }, { "from", 0, true, P_FROM }, { 0 } };
	static const struct cli_optdef attach_defs[] = { { "from", 0, true, P_FROM }, { 0 } };
	static const struct cli_optdef kill_defs[] = {
		{ "signal", 's', true, P_SIGNAL }, { "group", 0, false, P_GROUP }, { 0 } };
	static const struct cli_optdef wait_defs[] = { { "timeout-ms", 0, true, P_TIMEOUT_MS }, { 0 } };
	static const struct cli_optdef stdin_defs[] = { { "close", 0, false, P_CLOSE }, { 0 } };
	const struct cli_optdef *defs;
	bool logs = !strcmp(cmd, "logs"), is_stdin = !strcmp(cmd, "stdin");
	const char *ops[3];
	int nops = 0, maxops = is_stdin ? 3 : 2, opt, rc = 0;
	uint64_t n;
	struct cli_scan s;

	memset(req, 0, sizeof(*req));
	/* A wait without --timeout-ms lasts as long as the process. */
	req->wait_s = !strcmp(cmd, "wait") ? -1 : 0;
	if (logs)
		defs = logs_defs;
	else if (!strcmp(cmd, "attach"))
		defs = attach_defs;
	else if (!strcmp(cmd, "kill"))
		defs = kill_defs;
	else if (!strcmp(cmd, "wait"))
		defs = wait_defs;
	else if (is_stdin)
		defs = stdin_defs;
	else {
		snprintf(err, errsz, "internal: no process command '%s'", cmd);
		return -1;
	}
	if (logs)
		snprintf(req->query, sizeof(req->query), "?encoding=base64");
	if (!strcmp(cmd, "kill"))
		req->body = json_pack("{s:s}", "signal", "TERM");
	cli_scan_init(&s, argc, argv, defs, g);
	while (!rc && (opt = cli_scan_next(&s)) != CLI_SCAN_DONE) {
		switch (opt) {
		case P_FOLLOW:
			req->follow = true;
			break;
		case P_FROM:
			rc = from_query(req, s.value, logs ? "encoding=base64&" : "", err, errsz);
			break;
		case P_SIGNAL:
			rc = signal_field(req->body, s.value, err, errsz);
			break;
		case P_GROUP:
			json_object_set_new(req->body, "group", json_true());
			break;
		case P_TIMEOUT_MS:
			if (num_parse_u64(s.value, 10, 0, CLI_INT_MAX, &n)) {
				snprintf(err, errsz, "--timeout-ms '%s': expected a whole number", CLI_ECHO(s.value));
				rc = -1;
			} else {
				snprintf(req->query, sizeof(req->query), "?timeout_ms=%llu", (unsigned long long)n);
				req->wait_s = n ? (long long)((n + 999) / 1000) : -1;
			}
			break;
		case P_CLOSE:
			req->close = true;
			break;
		case CLI_SCAN_ERROR:
			snprintf(err, errsz, "%s", s.err);
			rc = -1;
			break;
		case CLI_SCAN_REST:
			for (; !rc && s.i < s.argc; s.i++) {
				if (nops == maxops) {
					snprintf(err, errsz, "unexpected argument '%s'", CLI_ECHO(s.argv[s.i]));
					rc = -1;
				} else {
					ops[nops++] = s.argv[s.i];
				}
			}
			break;
		case CLI_SCAN_POSITIONAL:
			if (nops == maxops) {
				snprintf(err, errsz, "unexpected argument '%s'", CLI_ECHO(s.value));
				rc = -1;
			} else {
				ops[nops++] = s.value;
			}
			break;
		}
	}
	if (!rc && nops < 2) {
		snprintf(err, errsz, "expected a sandbox id and a process id (`kiln ps ID` lists them)");
		rc = -1;
	}
	if (!rc)
		rc = cli_check_id(ops[0], req->id, err, errsz);
	if (!rc && num_parse_u64(ops[1], 10, 1, 0xffffffffULL, &n)) {
		snprintf(err, errsz, "'%s' is not a process id (a number from `kiln ps ID` or `kiln spawn`)", CLI_ECHO(ops[1]));
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
