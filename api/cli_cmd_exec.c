/*
 * kiln exec: run a process in a sandbox; its stdout and stderr become
 * ours and its exit status kiln's (docs/api.md, POST .../exec). --stream
 * reads the NDJSON stream, so output shows as it is written and is not
 * capped by output_cap.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_body.h"
#include "cli_cmds.h"
#include "cli_exec_out.h"
#include "text_codec.h"

/* docs/api.md: stdin_base64 carries at most 1 MiB. */
#define EXEC_STDIN_MAX (1u << 20)

static int write_fd(void *arg, int fd, const void *p, size_t n)
{
	(void)arg;
	return cli_write_all(fd, p, n);
}

/* In --json --stream mode the events go out as they are; this parses them only for the status. */
static int write_none(void *arg, int fd, const void *p, size_t n)
{
	(void)arg;
	(void)fd;
	(void)p;
	(void)n;
	return 0;
}

struct stream_sink {
	struct cli_ndjson nd;
	bool raw;
};

static int stream_write(void *arg, const char *p, size_t n)
{
	struct stream_sink *s = arg;

	if (s->raw) {
		int rc = cli_write_all(1, p, n);

		if (rc)
			return rc;
	}
	/* A failed event (an error event, a malformed line) stops the
	 * transfer; the reason is in nd.fail, reported after curl returns. */
	return cli_ndjson_feed(&s->nd, p, n) ? -ECANCELED : 0;
}

/* Our stdin, whole, as base64 into the body (-i). */
static int add_stdin(struct cli_ctx *c, json_t *body)
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

static int exec_buffered(struct cli_ctx *c, const char *what, const char *path, json_t *body)
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
		cli_fail_set(&f, CLI_EXIT_API, NULL, "kilnd's exec result has no exit_code or signal");
		return cli_report(c, what, &f);
	}
	rc = cli_exec_result(r, write_fd, NULL, &status, &f);
	json_decref(r);
	return rc ? cli_report(c, what, &f) : status;
}

static int exec_stream(struct cli_ctx *c, const char *what, const char *path, json_t *body)
{
	struct stream_sink s = { .raw = c->g.json };
	struct cli_req req = { .method = "POST", .path = path, .sink = stream_write, .sink_arg = &s };
	struct cli_resp resp;
	struct cli_fail f;
	int rc;

	cli_ndjson_init(&s.nd, s.raw ? write_none : write_fd, NULL);
	req.body = json_dumps(body, JSON_COMPACT);
	if (!req.body) {
		cli_ndjson_free(&s.nd);
		return CLI_EXIT_API;
	}
	rc = cli_call_quiet(c, &req, &resp, &f);
	free((char *)req.body);
	if (s.nd.failed) {
		/* The sink stopped curl: the stream's own reason (an error
		 * event, a broken line) says more than curl's write error. */
		rc = cli_report(c, what, &s.nd.fail);
	} else if (rc) {
		rc = cli_report(c, what, &f);
	} else {
		free(resp.body);
		rc = cli_ndjson_end(&s.nd) ? cli_report(c, what, &s.nd.fail) : s.nd.status;
	}
	cli_ndjson_free(&s.nd);
	return rc;
}

int cli_cmd_exec(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_exec_req x;
	char err[CLI_ERR_MAX], path[160], what[128];
	int rc;

	if (cli_exec_parse(argc, argv, &c->g, &x, err, sizeof(err)))
		return cli_usage_error(c, err);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec%s", x.id, x.stream ? "?stream=1" : "");
	snprintf(what, sizeof(what), "exec %s", x.id);
	rc = x.send_stdin ? add_stdin(c, x.body) : 0;
	if (!rc)
		rc = x.stream ? exec_stream(c, what, path, x.body) : exec_buffered(c, what, path, x.body);
	json_decref(x.body);
	return rc;
}
