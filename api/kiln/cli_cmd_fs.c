/*
 * kiln fs (ls, stat, mkdir, rm, mv, watch), kiln port (add, ls, rm) and kiln
 * preview (add, ls, rm): guest file metadata, port forwarding and preview
 * URLs (docs/api.md, .../files/..., .../ports and .../previews), one
 * request each (watch: a stream of events).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_format.h"
#include "api/kiln/cli_watch_out.h"

static int watch_sink(void *arg, const char *p, size_t n)
{
	/* A failed event or line stops the transfer; the reason is in fail. */
	return cli_watch_out_feed(arg, p, n) ? -ECANCELED : 0;
}

/*
 * kiln fs watch: one line per event until the watch ends (the directory
 * went away, the sandbox stopped) or Ctrl-C ends kiln. Each line is
 * flushed as it comes (cli_write_out writes the fd), so a pipe sees it at once.
 */
static int fs_watch(struct cli_ctx *c, int argc, char **argv)
{
	char path[CLI_QUERY_MAX + 128], what[160];
	struct err e;
	/* A hibernated sandbox wakes before the watch begins. */
	struct cli_req req = {
		.method = "GET", .path = path, .sink = watch_sink, .wait_s = CLI_WAIT_BOOT
	};
	struct cli_fs_req *r = malloc(sizeof(*r));
	struct cli_watch_out o;
	struct cli_resp resp;
	struct cli_fail f;
	int rc;

	if (!r)
		return CLI_EXIT_API;
	if (cli_fs_parse(argc, argv, &c->g, r, &e)) {
		free(r);
		return cli_usage_error(c, e.msg);
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/files/watch%s", r->id, r->query);
	snprintf(what, sizeof(what), "fs watch %s:%.80s", r->id, r->path);
	cli_watch_out_init(&o, c->g.json, cli_write_out, NULL);
	req.sink_arg = &o;
	rc = cli_call_quiet(c, &req, &resp, &f);
	if (o.failed)
		rc = cli_report(c, what, &o.fail);
	else if (rc)
		rc = cli_report(c, what, &f);
	else if (cli_watch_out_end(&o))
		rc = cli_report(c, what, &o.fail);
	if (!rc)
		free(resp.body);
	cli_watch_out_free(&o);
	free(r);
	return rc;
}

int cli_cmd_fs(struct cli_ctx *c, int argc, char **argv)
{
	static const char *const names[] = { "ls", "stat", "mkdir", "rm", "mv", "watch" };
	struct cli_fs_req *r;
	char path[CLI_QUERY_MAX + 128], what[160];
	struct err e;
	json_t *v = NULL;
	int rc;

	/* The subcommand's words: argv[0] is its name, as getopt wants. */
	argc--;
	argv++;
	if (argc >= 1 && !strcmp(argv[0], "watch"))
		return fs_watch(c, argc, argv);
	r = malloc(sizeof(*r)); /* its query holds a whole encoded path */
	if (!r)
		return CLI_EXIT_API;
	if (cli_fs_parse(argc, argv, &c->g, r, &e)) {
		free(r);
		return cli_usage_error(c, e.msg);
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s%s", r->id, r->endpoint,
		 r->body ? "" : r->query);
	snprintf(what, sizeof(what), "fs %s %s:%.80s", names[r->op], r->id, r->path);
	rc = cli_call_json(c, what, r->body ? "POST" : "GET", path, r->body, &v);
	if (!rc && r->op == CLI_FS_LS) {
		rc = cli_show(c, v, cli_format_fs_list);
		if (!rc && !c->g.json && json_is_true(json_object_get(v, "truncated")))
			fprintf(stderr,
				"kiln: %s: the listing stopped at --limit; more entries exist\n",
				what);
		if (!rc && !c->g.json && json_integer_value(json_object_get(v, "skipped")) > 0)
			fprintf(stderr,
				"kiln: %s: %lld unreadable directories or too long paths skipped\n",
				what, (long long)json_integer_value(json_object_get(v, "skipped")));
	} else if (!rc && r->op == CLI_FS_STAT) {
		rc = cli_show(c, v, cli_format_stat);
	} else if (!rc && c->g.json && v) {
		cli_print_json(v, false);
	}
	json_decref(v);
	json_decref(r->body);
	free(r);
	return rc;
}

/* A sandbox's sub-resource of add/ls/rm commands: port mappings, previews. */
struct sub_resource {
	const char *cmd;  /* "port" */
	const char *path; /* "ports": /v1/sandboxes/ID/<path> */
	int (*show_one)(FILE *, const json_t *);
	int (*show_list)(FILE *, const json_t *);
};

/* op: 0 add (POST body), 1 ls, 2 rm (DELETE .../<num>). */
static int sub_call(struct cli_ctx *c, const struct sub_resource *res, int op, const char *id,
		    json_t *body, unsigned num)
{
	char path[CLI_ID_MAX + 48], what[CLI_ID_MAX + 32];
	json_t *v = NULL;
	int rc;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s", id, res->path);
	if (op == 0) {
		snprintf(what, sizeof(what), "%s %s", res->cmd, id);
		rc = cli_call_show(c, what, "POST", path, body, res->show_one);
	} else if (op == 1) {
		snprintf(what, sizeof(what), "%s ls %s", res->cmd, id);
		rc = cli_call_show(c, what, "GET", path, NULL, res->show_list);
	} else {
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%u", num);
		snprintf(what, sizeof(what), "%s rm %s %u", res->cmd, id, num);
		rc = cli_call_json(c, what, "DELETE", path, NULL, &v);
	}
	json_decref(v);
	json_decref(body);
	return rc;
}

int cli_cmd_port(struct cli_ctx *c, int argc, char **argv)
{
	static const struct sub_resource ports = { "port", "ports", cli_format_port,
						   cli_format_ports };
	struct cli_port_req r;
	struct err e;

	if (cli_port_parse(argc, argv, &c->g, &r, &e))
		return cli_usage_error(c, e.msg);
	return sub_call(c, &ports,
			r.op == CLI_PORT_ADD          ? 0
				: r.op == CLI_PORT_LS ? 1
						      : 2,
			r.id, r.body, r.host_port);
}

int cli_cmd_preview(struct cli_ctx *c, int argc, char **argv)
{
	static const struct sub_resource previews = { "preview", "previews", cli_format_preview,
						      cli_format_previews };
	struct cli_preview_req r;
	struct err e;

	if (cli_preview_parse(argc, argv, &c->g, &r, &e))
		return cli_usage_error(c, e.msg);
	return sub_call(c, &previews,
			r.op == CLI_PREVIEW_ADD          ? 0
				: r.op == CLI_PREVIEW_LS ? 1
							 : 2,
			r.id, r.body, r.port);
}
