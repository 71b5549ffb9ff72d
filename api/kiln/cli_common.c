/* What the kiln CLI's commands share (cli_cmds.h). */
#include "api/kiln/cli_cmds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/base/text_clean.h"

int cli_usage_error(struct cli_ctx *c, const char *msg)
{
	if (c->g.help) {
		printf("usage: kiln %s %s\n%s\n", c->cmd->name, c->cmd->args, c->cmd->summary);
		return CLI_EXIT_OK;
	}
	/* One line: what is wrong and where the synopsis is (some are
	 * longer than a terminal's width). */
	fprintf(stderr, "kiln: %s: ", c->cmd->name);
	text_clean_term_fput(stderr, msg);
	fprintf(stderr, "; see 'kiln %s --help'\n", c->cmd->name);
	return CLI_EXIT_USAGE;
}

int cli_no_args(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_getopt s;
	struct err e;
	int opt;

	cli_getopt_init(&s, argc, argv, cli_global_options, &c->g, &e);
	opt = cli_getopt_next(&s);
	if (opt == CLI_GETOPT_ERROR)
		return cli_usage_error(c, e.msg);
	if (opt != CLI_GETOPT_DONE) {
		err_set(&e, EINVAL, "unexpected argument '%s'", CLI_ECHO(s.value ? s.value : "--"));
		return cli_usage_error(c, e.msg);
	}
	return 0;
}

int cli_one_word(struct cli_ctx *c, int argc, char **argv, const char *msg, const char **word)
{
	struct cli_getopt s;
	struct err e;
	int opt;

	*word = NULL;
	cli_getopt_init(&s, argc, argv, cli_global_options, &c->g, &e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return cli_usage_error(c, e.msg);
		if (*word || opt != CLI_GETOPT_WORD)
			return cli_usage_error(c, msg);
		*word = s.value;
	}
	return 0;
}

int cli_report(struct cli_ctx *c, const char *what, const struct cli_fail *f)
{
	cli_fail_print(stderr, what ? what : c->cmd->name, f);
	return f->exit;
}

int cli_call_quiet(struct cli_ctx *c, const struct cli_req *req, struct cli_resp *resp,
		   struct cli_fail *f)
{
	struct cli_req r = *req;

	if (!c->connected) {
		if (cli_http_open(&c->http, c->g.socket, c->g.timeout_s))
			return cli_fail_set(f, CLI_EXIT_API, NULL, "cannot initialise libcurl");
		c->connected = true;
	}
	if (!r.wait_s)
		r.wait_s = c->wait_s;
	return cli_http_do(&c->http, &r, resp, f);
}

int cli_call(struct cli_ctx *c, const char *what, const struct cli_req *req, struct cli_resp *resp)
{
	struct cli_fail f;

	if (cli_call_quiet(c, req, resp, &f))
		return cli_report(c, what, &f);
	return 0;
}

int cli_new_sandbox(struct cli_ctx *c, const char *what, const json_t *sb, const char **id)
{
	char ok[CLI_ID_MAX + 1];
	struct err e;
	const char *s = json_string_value(json_object_get(sb, "id"));
	struct cli_fail f;

	if (id)
		*id = NULL;
	if (cli_answer_need(sb, "id", JSON_STRING, &f))
		return cli_report(c, what, &f);
	if (cli_check_id(s, ok, &e)) {
		cli_fail_set(&f, CLI_EXIT_API, NULL, "kilnd answered an invalid sandbox id: %s",
			     e.msg);
		return cli_report(c, what, &f);
	}
	if (id) {
		*id = s;
		return 0;
	}
	if (c->g.json)
		cli_print_json(sb, false);
	else
		puts(s);
	return 0;
}

int cli_create_sandbox(struct cli_ctx *c, json_t *body)
{
	json_t *sb = NULL;
	int rc = cli_call_json(c, NULL, "POST", "/v1/sandboxes", body, &sb);

	if (!rc)
		rc = cli_new_sandbox(c, NULL, sb, NULL);
	json_decref(body);
	json_decref(sb);
	return rc;
}

int cli_call_json(struct cli_ctx *c, const char *what, const char *method, const char *path,
		  const json_t *body, json_t **out)
{
	struct cli_req req = { .method = method, .path = path };
	struct cli_resp resp;
	struct cli_fail f;
	char *text = NULL;
	json_error_t je;
	int rc;

	if (body) {
		text = json_text(body, JSON_COMPACT);
		if (!text) {
			cli_fail_set(&f, CLI_EXIT_API, NULL, "out of memory");
			return cli_report(c, what, &f);
		}
		req.body = text;
	}
	rc = cli_call(c, what, &req, &resp);
	free(text);
	if (rc)
		return rc;
	*out = NULL;
	if (resp.len) {
		*out = json_strict_loadb(resp.body, resp.len, &je);
		if (!*out) {
			cli_fail_set(&f, CLI_EXIT_API, NULL, "kilnd's answer is not JSON (%s)",
				     je.text);
			free(resp.body);
			return cli_report(c, what, &f);
		}
	}
	free(resp.body);
	return 0;
}

int cli_call_show(struct cli_ctx *c, const char *what, const char *method, const char *path,
		  const json_t *body, int (*fmt)(FILE *, const json_t *))
{
	json_t *v = NULL;
	int rc = cli_call_json(c, what, method, path, body, &v);

	if (!rc)
		rc = cli_show(c, v, fmt);
	json_decref(v);
	return rc;
}

int cli_show(struct cli_ctx *c, json_t *v, int (*fmt)(FILE *, const json_t *))
{
	struct cli_fail f;

	if (c->g.json || !fmt) {
		cli_print_json(v, !c->g.json);
		return 0;
	}
	if (fmt(stdout, v)) {
		cli_fail_set(&f, CLI_EXIT_API, NULL,
			     "kilnd's answer does not have the documented shape (a kilnd of another version?); "
			     "--json shows it as it is");
		return cli_report(c, NULL, &f);
	}
	return 0;
}

void cli_print_json(const json_t *v, bool pretty)
{
	char *s = json_text(v, pretty ? JSON_INDENT(2) : JSON_COMPACT);

	if (s) {
		puts(s);
		free(s);
	}
}

int cli_write_out(void *arg, int fd, const void *p, size_t n)
{
	(void)arg;
	return fd_io_write_all(fd, p, n);
}

/* With --json the events go out as they are; they are parsed only for the status. */
static int write_none(void *arg, int fd, const void *p, size_t n)
{
	(void)arg;
	(void)fd;
	(void)p;
	(void)n;
	return 0;
}

void cli_stream_init(struct cli_stream *s, struct cli_ctx *c, const char *who)
{
	s->raw = c->g.json;
	cli_ndjson_init(&s->nd, s->raw ? write_none : cli_write_out, NULL);
	s->nd.who = who;
}

static int stream_write(void *arg, const char *p, size_t n)
{
	struct cli_stream *s = arg;
	int rc;

	if (s->raw && (rc = fd_io_write_all(1, p, n)))
		return rc;
	/* A failed event (an error event, a malformed line) stops the
	 * transfer; the reason is in nd.fail, reported after curl returns. */
	if (cli_ndjson_feed(&s->nd, p, n))
		return -ECANCELED;
	/* logs: everything there was when we asked; stop here, not at the exit. */
	return s->nd.reached ? -ECANCELED : 0;
}

int cli_stream_call(struct cli_ctx *c, const char *what, struct cli_req *req, struct cli_stream *s)
{
	struct cli_resp resp;
	struct cli_fail f;
	int rc;

	req->sink = stream_write;
	req->sink_arg = s;
	rc = cli_call_quiet(c, req, &resp, &f);
	if (s->nd.reached)
		return 0;
	/* The sink stopped curl: the stream's own reason (an error event, a
	 * broken line) says more than curl's write error. */
	if (s->nd.failed)
		return cli_report(c, what, &s->nd.fail);
	if (rc && req->cancel && !strcmp(f.code, "interrupted"))
		return CLI_EXIT_API; /* cancelled: the caller says why */
	if (rc)
		return cli_report(c, what, &f);
	free(resp.body);
	return cli_ndjson_end(&s->nd) ? cli_report(c, what, &s->nd.fail) : 0;
}
