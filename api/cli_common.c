/* What the kiln CLI's commands share (cli_cmds.h). */
#include "cli_cmds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int cli_usage_error(struct cli_ctx *c, const char *msg)
{
	if (c->g.help) {
		printf("usage: kiln %s %s\n%s\n", c->cmd->name, c->cmd->args, c->cmd->summary);
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "kiln: %s: %s\nusage: kiln %s %s\n", c->cmd->name, msg, c->cmd->name, c->cmd->args);
	return CLI_EXIT_USAGE;
}

int cli_report(struct cli_ctx *c, const char *what, const struct cli_fail *f)
{
	cli_fail_print(stderr, what ? what : c->cmd->name, f);
	return f->exit;
}

int cli_call_quiet(struct cli_ctx *c, const struct cli_req *req, struct cli_resp *resp, struct cli_fail *f)
{
	if (!c->connected) {
		if (cli_http_open(&c->http, c->g.socket))
			return cli_fail_set(f, CLI_EXIT_API, NULL, "cannot initialise libcurl");
		c->connected = true;
	}
	return cli_http_do(&c->http, req, resp, f);
}

int cli_call(struct cli_ctx *c, const char *what, const struct cli_req *req, struct cli_resp *resp)
{
	struct cli_fail f;

	if (cli_call_quiet(c, req, resp, &f))
		return cli_report(c, what, &f);
	return 0;
}

int cli_call_json(struct cli_ctx *c, const char *what, const char *method, const char *path, const json_t *body,
		  json_t **out)
{
	struct cli_req req = { .method = method, .path = path };
	struct cli_resp resp;
	struct cli_fail f;
	char *text = NULL;
	json_error_t je;
	int rc;

	if (body) {
		text = json_dumps(body, JSON_COMPACT);
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
		*out = json_loadb(resp.body, resp.len, 0, &je);
		if (!*out) {
			cli_fail_set(&f, CLI_EXIT_API, NULL, "kilnd's answer is not JSON (%s)", je.text);
			free(resp.body);
			return cli_report(c, what, &f);
		}
	}
	free(resp.body);
	return 0;
}

void cli_print_json(const json_t *v, bool pretty)
{
	char *s = json_dumps(v, pretty ? JSON_INDENT(2) : JSON_COMPACT);

	if (s) {
		puts(s);
		free(s);
	}
}

int cli_write_all(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}
