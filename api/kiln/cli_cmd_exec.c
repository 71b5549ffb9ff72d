/*
 * kiln exec: run a process in a sandbox; its stdout and stderr become
 * ours and its exit status kiln's (docs/api.md, POST .../exec). Output is
 * read from the NDJSON stream, so it shows as it is written (up to the
 * agent's 256 MiB output_cap); --buffered asks for the single result
 * object instead (1 MiB per stream by default).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_exec_out.h"
#include "lib/base/base64.h"
#include "lib/base/json_text.h"

/* docs/api.md: stdin_base64 carries at most 1 MiB. */
#define EXEC_STDIN_MAX (1u << 20)

int cli_body_stdin(struct cli_ctx *c, json_t *body)
{
	size_t len = 0, cap = 65536;
	uint8_t *buf = malloc(cap);
	struct cli_fail f;
	char *b64;

	while (buf) {
		ssize_t got;

		if (len == cap) {
			uint8_t *nb = cap > EXEC_STDIN_MAX ? NULL : realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		got = read(0, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(buf);
			cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "reading stdin: %m");
			return cli_report(c, NULL, &f);
		}
		if (got == 0)
			break;
		len += (size_t)got;
		if (len > EXEC_STDIN_MAX) {
			free(buf);
			cli_fail_set(&f, CLI_EXIT_USAGE, NULL,
				     "stdin is over 1 MiB, exec's limit: upload it with `kiln cp - ID:/path` "
				     "and redirect from that file");
			return cli_report(c, NULL, &f);
		}
	}
	if (!buf) {
		cli_fail_set(&f, CLI_EXIT_API, NULL, "out of memory reading stdin");
		return cli_report(c, NULL, &f);
	}
	b64 = malloc(base64_encoded_size(len));
	if (b64) {
		base64_encode(buf, len, b64);
		json_object_set_new(body, "stdin_base64", json_string(b64));
	}
	free(b64);
	free(buf);
	if (!b64) {
		cli_fail_set(&f, CLI_EXIT_API, NULL, "out of memory encoding stdin");
		return cli_report(c, NULL, &f);
	}
	return 0;
}

int cli_exec_buffered(struct cli_ctx *c, const char *what, const char *path, json_t *body,
		      void (*after)(const json_t *result))
{
	json_t *r = NULL;
	struct cli_fail f;
	int rc, status;

	rc = cli_call_json(c, what, "POST", path, body, &r);
	if (rc)
		return rc;
	if (c->g.json) {
		cli_print_json(r, false);
		status = cli_exec_status(r);
		json_decref(r);
		if (status >= 0)
			return status;
		cli_fail_set(&f, CLI_EXIT_API, NULL,
			     "kilnd's exec result has no exit_code or signal");
		return cli_report(c, what, &f);
	}
	rc = cli_exec_result(r, cli_write_out, NULL, &status, &f);
	if (!rc && after)
		after(r);
	json_decref(r);
	return rc ? cli_report(c, what, &f) : status;
}

int cli_exec_stream(struct cli_ctx *c, const char *what, const char *path, json_t *body,
		    volatile sig_atomic_t *cancel, void (*after)(const json_t *result_event))
{
	struct cli_stream s;
	struct cli_req req = { .method = "POST", .path = path, .cancel = cancel };
	int rc;

	cli_stream_init(&s, c, after ? "run-code" : "exec");
	s.nd.want_result = after != NULL;
	req.body = json_text(body, JSON_COMPACT);
	if (!req.body) {
		cli_ndjson_free(&s.nd);
		return CLI_EXIT_API;
	}
	rc = cli_stream_call(c, what, &req, &s);
	free((char *)req.body);
	if (!rc && after && !s.raw)
		after(s.nd.result);
	if (!rc)
		rc = s.nd.status; /* the process's exit status is kiln's */
	cli_ndjson_free(&s.nd);
	return rc;
}

int cli_exec_send(struct cli_ctx *c, const char *what, struct cli_exec_req *x,
		  volatile sig_atomic_t *cancel)
{
	char path[160];
	long long saved = c->wait_s;
	int rc;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec%s", x->id,
		 x->stream ? "?stream=1" : "");
	rc = x->send_stdin ? cli_body_stdin(c, x->body) : 0;
	/* A buffered answer comes at the exit: the process's own time, plus a
	 * wake's. A stream's head comes within 250 ms of the start (older
	 * kilnds held it back until the first output), so this bound is kept
	 * for both. */
	c->wait_s = cli_wait_for_ms((unsigned long long)json_integer_value(
					    json_object_get(x->body, "timeout_ms")),
				    CLI_WAIT_BOOT);
	if (!rc)
		rc = x->stream ? cli_exec_stream(c, what, path, x->body, cancel, NULL)
			       : cli_exec_buffered(c, what, path, x->body, NULL);
	c->wait_s = saved;
	return rc;
}

int cli_cmd_exec(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_exec_req x;
	char what[128];
	struct err e;
	int rc;

	if (cli_exec_parse(argc, argv, &c->g, &x, &e))
		return cli_usage_error(c, e.msg);
	snprintf(what, sizeof(what), "exec %s", x.id);
	rc = cli_exec_send(c, what, &x, NULL);
	json_decref(x.body);
	return rc;
}
