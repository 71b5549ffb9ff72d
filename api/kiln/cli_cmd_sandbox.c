/*
 * kiln health, images, metrics, create, ls, inspect, start, stop, rm:
 * one request each (docs/api.md), the answer as text or, with --json, as
 * kilnd sent it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_format.h"

static int get_and_show(struct cli_ctx *c, int argc, char **argv, const char *path,
			int (*fmt)(FILE *, const json_t *))
{
	int rc = cli_no_args(c, argc, argv);

	return rc ? rc : cli_call_show(c, NULL, "GET", path, NULL, fmt);
}

int cli_cmd_health(struct cli_ctx *c, int argc, char **argv)
{
	return get_and_show(c, argc, argv, "/v1/health", cli_format_health);
}

int cli_cmd_images(struct cli_ctx *c, int argc, char **argv)
{
	return get_and_show(c, argc, argv, "/v1/images", cli_format_images);
}

int cli_cmd_metrics(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_req req = { .method = "GET", .path = "/metrics" };
	struct cli_resp resp;
	int rc = cli_no_args(c, argc, argv);

	if (!rc)
		rc = cli_call(c, NULL, &req, &resp);
	if (!rc) {
		/* Prometheus text as it is: --json has no other form of it. */
		fwrite(resp.body, 1, resp.len, stdout);
		free(resp.body);
	}
	return rc;
}

/*
 * kilnd resolves a share's host path in its own working directory, so
 * "./data" must become absolute here, where the user meant it.
 */
int cli_absolute_shares(struct cli_ctx *c, json_t *body)
{
	json_t *shares = json_object_get(body, "shares"), *sh;
	size_t i;

	json_array_foreach(shares, i, sh)
	{
		const char *host = json_string_value(json_object_get(sh, "host_path"));
		char *abs;

		if (host[0] == '/')
			continue;
		abs = realpath(host, NULL);
		if (!abs) {
			struct cli_fail f;

			cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "--share host directory '%s': %m",
				     host);
			return cli_report(c, NULL, &f);
		}
		json_object_set_new(sh, "host_path", json_string(abs));
		free(abs);
	}
	return 0;
}

int cli_cmd_create(struct cli_ctx *c, int argc, char **argv)
{
	struct err e;
	json_t *body;
	int rc;

	if (cli_create_body(argc, argv, &c->g, &body, &e))
		return cli_usage_error(c, e.msg);
	if ((rc = cli_absolute_shares(c, body))) {
		json_decref(body);
		return rc;
	}
	c->wait_s = CLI_WAIT_BOOT; /* kilnd answers once the guest's agent does */
	return cli_create_sandbox(c, body);
}

int cli_cmd_ls(struct cli_ctx *c, int argc, char **argv)
{
	char path[2048] = "/v1/sandboxes";
	struct err e;

	if (cli_list_query(argc, argv, &c->g, path + strlen(path), sizeof(path) - strlen(path), &e))
		return cli_usage_error(c, e.msg);
	return cli_call_show(c, NULL, "GET", path, NULL, cli_format_list);
}

/* One request on /v1/sandboxes/ID[suffix]; what names it in messages. */
static int on_one(struct cli_ctx *c, int argc, char **argv, const char *method, const char *suffix,
		  int (*fmt)(FILE *, const json_t *))
{
	char id[CLI_ID_MAX + 1], path[160], what[128];
	struct err e;
	json_t *v = NULL;
	int rc;

	if (cli_one_id(argc, argv, &c->g, id, &e))
		return cli_usage_error(c, e.msg);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s%s", id, suffix);
	snprintf(what, sizeof(what), "%s %s", c->cmd->name, id);
	rc = cli_call_json(c, what, method, path, NULL, &v);
	if (!rc && !v && strcmp(method, "DELETE")) {
		struct cli_fail f;

		/* Only DELETE answers 204 without a body; the rest answer the sandbox. */
		cli_answer_need(v, "state", JSON_STRING, &f);
		rc = cli_report(c, what, &f);
	} else if (!rc && v) {
		rc = cli_show(c, v, fmt);
	} else if (!rc && !c->g.json) {
		puts(id); /* DELETE: 204, no body */
	}
	json_decref(v);
	return rc;
}

/* The sandbox object as it is, once it is one. */
static int format_sandbox(FILE *out, const json_t *v)
{
	if (!json_is_string(json_object_get(v, "id")) ||
	    !json_is_string(json_object_get(v, "state")))
		return -1;
	cli_print_json(v, true);
	(void)out;
	return 0;
}

/* The commands that are one request on one sandbox (kiln NAME ID): the
 * request, kilnd's own time for it, and how its answer is shown. */
static const struct sandbox_call {
	const char *cmd, *method, *suffix;
	long long wait_s;
	int (*fmt)(FILE *, const json_t *);
} sandbox_calls[] = {
	{ "inspect", "GET", "", 0, format_sandbox },
	{ "start", "POST", "/start", CLI_WAIT_BOOT, cli_format_state },
	{ "stop", "POST", "/stop", 0, cli_format_state },
	{ "rm", "DELETE", "", 0, NULL },
	{ "pause", "POST", "/pause", 0, cli_format_state },
	{ "resume", "POST", "/resume", 0, cli_format_state },
	{ "hibernate", "POST", "/hibernate", CLI_WAIT_SNAPSHOT, cli_format_state },
	{ "wake", "POST", "/wake", CLI_WAIT_SNAPSHOT, cli_format_state },
};

int cli_cmd_sandbox_call(struct cli_ctx *c, int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(sandbox_calls) / sizeof(sandbox_calls[0]); i++) {
		const struct sandbox_call *sc = &sandbox_calls[i];

		if (strcmp(sc->cmd, c->cmd->name))
			continue;
		if (sc->wait_s)
			c->wait_s = sc->wait_s;
		return on_one(c, argc, argv, sc->method, sc->suffix, sc->fmt);
	}
	return cli_usage_error(c, "internal: not a sandbox command");
}
