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

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_error.h"
#include "api/kiln/cli_exec_out.h"
#include "api/kiln/cli_getopt.h"
#include "api/kiln/cli_http.h"
#include "lib/base/fd_io.h"

struct cli_ctx;

struct cli_cmd {
	const char *name;
	const char *args;    /* synopsis after the name */
	const char *summary; /* one line for kiln --help */
	/* argv[0] is the command's name (getopt's argv), its words follow. */
	int (*run)(struct cli_ctx *c, int argc, char **argv);
};

struct cli_ctx {
	struct cli_globals g;
	struct cli_http http;
	bool connected;
	const struct cli_cmd *cmd; /* the command running, for messages */
	/* kilnd's own time for the command's requests (cli_req.wait_s),
	 * for those that name none: set before a create's or a start's call. */
	long long wait_s;
};

/* Print `kiln: <cmd>: <msg>; see 'kiln <cmd> --help'` (one line); returns 2. */
int cli_usage_error(struct cli_ctx *c, const char *msg);
/* argv (argv[0] the command's name) holds global options only: 0, or the usage error reported and 2. */
int cli_no_args(struct cli_ctx *c, int argc, char **argv);
/* argv holds at most one word besides global options: 0 with *word
 * (NULL: none), or 2 with msg (more words) or getopt's reported. */
int cli_one_word(struct cli_ctx *c, int argc, char **argv, const char *msg, const char **word);
/* Print f as `kiln: <what>: <message> (<code>)`; returns f->exit. */
int cli_report(struct cli_ctx *c, const char *what, const struct cli_fail *f);
/*
 * One request; on failure it is reported (what: NULL means the command's
 * name) and the exit status returned, else 0.
 */
int cli_call(struct cli_ctx *c, const char *what, const struct cli_req *req, struct cli_resp *resp);
/* cli_call that leaves reporting to the caller: 0, or -1 with f. */
int cli_call_quiet(struct cli_ctx *c, const struct cli_req *req, struct cli_resp *resp,
		   struct cli_fail *f);
/* cli_call with a JSON answer parsed into *out (caller decrefs). */
int cli_call_json(struct cli_ctx *c, const char *what, const char *method, const char *path,
		  const json_t *body, json_t **out);
/* Print v as kilnd's JSON (compact with --json, indented otherwise). */
void cli_print_json(const json_t *v, bool pretty);
/* Print `what` as JSON with --json, else through fmt; a shape fmt refuses is reported. */
int cli_show(struct cli_ctx *c, json_t *v, int (*fmt)(FILE *, const json_t *));
/* cli_call_json, then its answer through cli_show: 0, or the failure reported. */
int cli_call_show(struct cli_ctx *c, const char *what, const char *method, const char *path,
		  const json_t *body, int (*fmt)(FILE *, const json_t *));
/* A cli_write_fn onto our stdout and stderr (arg unused). */
int cli_write_out(void *arg, int fd, const void *p, size_t n);

/*
 * An NDJSON stream of a process's output (exec's ?stream=1, logs) applied
 * to our stdout and stderr; with --json the events are copied to stdout
 * as they are and parsed only for the status.
 */
struct cli_stream {
	struct cli_ndjson nd; /* set nd.until and nd.until_seq to stop early (logs) */
	bool raw;             /* --json */
};

/* who names the command in the stream's warnings; cli_ndjson_free(&s->nd) when done. */
void cli_stream_init(struct cli_stream *s, struct cli_ctx *c, const char *who);
/*
 * Make req (its sink is set here) with the answer read through s. 0 when
 * the stream ended with its exit event (its status in s->nd.status) or
 * reached nd.until_seq; else the failure reported (what: NULL means the
 * command's name) and kiln's exit status, or CLI_EXIT_API unreported when
 * req->cancel stopped it (the caller says why).
 */
int cli_stream_call(struct cli_ctx *c, const char *what, struct cli_req *req, struct cli_stream *s);
/*
 * A create's or fork's answer sb: it must carry the new sandbox's id (a
 * valid one: it goes into the next requests' paths). Printed (the id, or
 * with --json the object) and 0, or reported (what: NULL means the
 * command's name) and kiln's exit status. *id, when id is not NULL, is the
 * id (owned by sb) or NULL.
 */
int cli_new_sandbox(struct cli_ctx *c, const char *what, const json_t *sb, const char **id);
/* POST /v1/sandboxes with body (freed), the new sandbox printed as
 * cli_new_sandbox does: kiln create and kiln fork. 0, or kiln's exit status. */
int cli_create_sandbox(struct cli_ctx *c, json_t *body);
/* Relative --share host paths made absolute (kilnd resolves them in its own cwd). */
int cli_absolute_shares(struct cli_ctx *c, json_t *create_body);
/* Our stdin, whole (at most 1 MiB), as body["stdin_base64"] (exec -i, spawn -i). */
int cli_body_stdin(struct cli_ctx *c, json_t *body);
/*
 * Run x (exec's parsed request) in sandbox x->id: its output becomes
 * ours; returns its exit status, or kiln's after reporting. cancel (may be
 * NULL) abandons a streamed exec (kiln run's Ctrl-C).
 */
int cli_exec_send(struct cli_ctx *c, const char *what, struct cli_exec_req *x,
		  volatile sig_atomic_t *cancel);
/* POST body to path (exec's or run's, buffered): its output becomes ours,
 * then after(result) when given (not with --json); the status is kiln's. */
int cli_exec_buffered(struct cli_ctx *c, const char *what, const char *path, json_t *body,
		      void (*after)(const json_t *result));
/* The same streamed (?stream=1); with after, run's stream: its `result`
 * event, the last, goes to after (not with --json). */
int cli_exec_stream(struct cli_ctx *c, const char *what, const char *path, json_t *body,
		    volatile sig_atomic_t *cancel, void (*after)(const json_t *result_event));

int cli_cmd_health(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_images(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_image(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_template(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_metrics(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_create(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_ls(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_exec(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_run_code(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_cp(struct cli_ctx *c, int argc, char **argv);
/* kiln inspect|start|stop|rm|pause|resume|hibernate|wake ID: one request
 * on the sandbox, by the command's name (c->cmd). */
int cli_cmd_sandbox_call(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_checkpoint(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_restore(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_fork(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_run(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_shell(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_attach(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_ps(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_spawn(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_logs(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_kill(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_wait(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_stdin(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_fs(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_port(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_preview(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_firewall(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_egress(struct cli_ctx *c, int argc, char **argv);
int cli_cmd_secrets(struct cli_ctx *c, int argc, char **argv);

#endif
