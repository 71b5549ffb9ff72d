/*
 * kiln run: create a sandbox, run one command in it with its output
 * streamed, and delete the sandbox whatever happened (docs/api.md: POST
 * /v1/sandboxes, POST .../exec?stream=1, DELETE). kiln exits with the
 * command's status.
 *
 * Ctrl-C (SIGINT), SIGTERM and SIGHUP do not end kiln at once: they
 * abandon the exec (kilnd kills the process when the stream's client has
 * gone) and the delete still runs; kiln then exits 128+N. A signal during
 * the create lets the create finish, so there is an id to delete.
 * SIGPIPE is ignored for the same reason: a reader that went away (`kiln
 * run ... | head`) is a failed write, and the sandbox is still removed.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"

/* Set by the handler; read by curl's progress callback and below. */
static volatile sig_atomic_t run_signal;

static void on_signal(int sig)
{
	run_signal = sig;
}

int cli_cmd_run(struct cli_ctx *c, int argc, char **argv)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction sa = { .sa_handler = on_signal }, old[4];
	char what[128];
	struct err e;
	struct cli_run_req r;
	json_t *sb = NULL, *none = NULL;
	const char *id;
	int rc, drc;

	if (cli_run_parse(argc, argv, &c->g, &r, &e))
		return cli_usage_error(c, e.msg);
	rc = cli_absolute_shares(c, r.create);
	if (rc)
		goto out;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 4; i++) {
		struct sigaction ign = { .sa_handler = SIG_IGN };

		sigaction(sigs[i], sigs[i] == SIGPIPE ? &ign : &sa, &old[i]);
	}
	c->wait_s = CLI_WAIT_BOOT;
	rc = cli_call_json(c, "run: create", "POST", "/v1/sandboxes", r.create, &sb);
	c->wait_s = 0;
	if (!rc)
		rc = cli_new_sandbox(c, "run: create", sb, &id);
	else
		id = NULL;
	if (!rc && !run_signal) {
		snprintf(r.exec.id, sizeof(r.exec.id), "%s", id);
		snprintf(what, sizeof(what), "run %s", id);
		rc = cli_exec_send(c, what, &r.exec, &run_signal);
	}
	if (id) {
		char path[CLI_ID_MAX + 32];

		if (run_signal)
			fprintf(stderr, "kiln: run: interrupted; removing sandbox %s\n", id);
		snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
		snprintf(what, sizeof(what), "run: removing sandbox %s", id);
		drc = cli_call_json(c, what, "DELETE", path, NULL, &none);
		json_decref(none);
		/* The command's status stands; a failed removal (reported
		 * above) is the exit status only when the command succeeded. */
		if (drc && !rc)
			rc = drc;
	}
	if (run_signal && run_signal != SIGPIPE)
		rc = 128 + run_signal;
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
out:
	json_decref(sb);
	json_decref(r.create);
	json_decref(r.exec.body);
	return rc;
}
