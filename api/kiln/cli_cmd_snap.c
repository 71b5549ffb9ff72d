/* kiln checkpoint, restore and fork (docs/api.md, "Pause, checkpoints, forks, hibernation"). */
#include <stdio.h>
#include <string.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_format.h"

/* NAME SIZE_MIB SNAPSHOT_MS CREATED, one line per checkpoint. */
static int print_checkpoint(FILE *out, const json_t *cp)
{
	const char *name = json_string_value(json_object_get(cp, "name"));
	const char *at = json_string_value(json_object_get(cp, "created_at"));

	if (!name)
		return -1;
	fprintf(out, "%-24s %8.1f MiB %8.1f ms  %s\n", name,
		(double)json_integer_value(json_object_get(cp, "size_bytes")) / (1 << 20),
		json_number_value(json_object_get(cp, "snapshot_ms")), at ? at : "-");
	return 0;
}

static int format_list(FILE *out, const json_t *v)
{
	const json_t *cp;
	size_t i;

	if (!json_is_array(json_object_get(v, "checkpoints")))
		return -1;
	fprintf(out, "%-24s %12s %11s  %s\n", "NAME", "SIZE", "PAUSED", "CREATED");
	json_array_foreach(json_object_get(v, "checkpoints"), i,
			   cp) if (print_checkpoint(out, cp)) return -1;
	return 0;
}

int cli_cmd_checkpoint(struct cli_ctx *c, int argc, char **argv)
{
	char path[256], what[160];
	struct err e;
	struct cli_snap_req rq;
	json_t *body = NULL, *v = NULL;
	int rc;

	if (cli_checkpoint_parse(argc, argv, &c->g, &rq, &e))
		return cli_usage_error(c, e.msg);
	snprintf(what, sizeof(what), "checkpoint %s%s%s", rq.id, rq.name[0] ? " " : "", rq.name);
	if (rq.op == CLI_SNAP_LS) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/checkpoints", rq.id);
		rc = cli_call_show(c, what, "GET", path, NULL, format_list);
	} else if (rq.op == CLI_SNAP_RM) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/checkpoints/%s", rq.id, rq.name);
		rc = cli_call_json(c, what, "DELETE", path, NULL, &v);
		if (!rc && !c->g.json)
			puts(rq.name);
	} else {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/checkpoints", rq.id);
		body = json_pack("{s:s, s:b}", "name", rq.name, "compress", rq.compress);
		c->wait_s = CLI_WAIT_SNAPSHOT;
		rc = cli_call_show(c, what, "POST", path, body, print_checkpoint);
	}
	json_decref(body);
	json_decref(v);
	return rc;
}

int cli_cmd_restore(struct cli_ctx *c, int argc, char **argv)
{
	char path[256], what[160];
	struct err e;
	struct cli_snap_req rq;

	if (cli_restore_parse(argc, argv, &c->g, &rq, &e))
		return cli_usage_error(c, e.msg);
	snprintf(what, sizeof(what), "restore %s %s", rq.id, rq.name);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/checkpoints/%s/restore", rq.id, rq.name);
	c->wait_s = CLI_WAIT_SNAPSHOT;
	return cli_call_show(c, what, "POST", path, NULL, cli_format_state);
}

int cli_cmd_fork(struct cli_ctx *c, int argc, char **argv)
{
	struct err e;
	json_t *body;

	if (cli_fork_body(argc, argv, &c->g, &body, &e))
		return cli_usage_error(c, e.msg);
	c->wait_s = CLI_WAIT_SNAPSHOT;
	return cli_create_sandbox(c, body);
}
