/*
 * cli_cmds: the kiln CLI's commands and what they share.
 *
 * Contract:
 *  - One struct cli_ctx per run, built by main() and passed to each
 *    command; commands return the process's exit status and print their
 *    own failure line (cli_report), so main() only dispatches.
 *  - Adding a command for a new kilnd endpoint is one entry in
 *    cli_commands[] (kiln.c) plus its run function here.
 *  - Commands parse their words first and connect only then, so a usage
 *    error never waits on the socket.
 */
#ifndef KILN_CLI_CMDS_H
#define KILN_CLI_CMDS_H

#include <stdbool.h>

#include <jansson.h>

#include "cli_error.h"
#include "cli_http.h"
#include "cli_opts.h"

struct cli_ctx;

struct cli_cmd {
	const char *name;
	const char *args;    /* synopsis after the name */
	const char *summary; /* one line for kiln --help */
	int (*run)(struct cli_ctx *c, int argc, char **argv);
};

struct cli_ctx {
	struct cli_globals g;
	struct cli_http http;
	bool connected;
	const struct cli_cmd *cmd; /* the command running, for messages */
};

/* Print `kiln: <cmd>: <msg>` and the command's synopsis; returns 2. */
int cli_usage_error(struct cli_ctx *c, const char *msg);
/* Print f as `kiln: <what>: <message> (<code>)`; returns f->exit. */
int cli_report(struct cli_ctx *c, const char *what, const struct cli_fail *f);
/*
 * One request; on failure it is reported (what: NULL means the command's
 * name) and the exit status returned, else 0.
 */
int cli_call(struct cli_ctx *c, const char *what, const struct cli_req *req, struct cli_resp *resp);
/* cli_call that leaves reporting to the caller: 0, or -1 with f. */
int cli_call_quiet(struct cli_ctx *c, const struct cli_req *req, struct cli_resp *resp, struct cli_fail *f);
/* cli_call with a JSON answer parsed into *out (caller decrefs). */
int cli_call_json(struct cli_ctx *c, const char *what, const char *method, const char *path, const json_t *body,
		  json_t **out);
/* Print v as kilnd's JSON (compact with --json, indented otherwise). */
void cli_print_json(const json_t *v, bool pretty);
/* All of p to fd, through EINTR; 0 or -errno. */
int cli_write_all(int fd, const void *p, size_t n);

int cli_cmd_health(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_images(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_metrics(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_create(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_ls(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_inspect(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_start(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_stop(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_rm(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_exec(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_cp(struct cli_ctx *c, int argc, char **argv);

#endif
