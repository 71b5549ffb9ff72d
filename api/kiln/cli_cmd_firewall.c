/*
 * kiln firewall show|log|set|allow|deny (docs/api.md, "Networking and
 * firewall"): GET and PUT /v1/sandboxes/{id}/firewall, GET .../firewall/log;
 * allow and deny read the current rules, append one and put them back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"
#include "lib/base/json_text.h"

/* PUT's answer: "applied, N flows cut" or "saved for the next boot". */
static int format_put(FILE *out, const json_t *v)
{
	if (!json_is_object(json_object_get(v, "rules")))
		return -1;
	if (json_is_true(json_object_get(v, "applied")))
		fprintf(out, "applied; %lld established flows cut\n",
			(long long)json_integer_value(json_object_get(v, "cut")));
	else
		fprintf(out, "saved; applies at the next boot\n");
	return 0;
}

/* GET's answer: the rules, then the verdict counters when running. */
static int format_get(FILE *out, const json_t *v)
{
	const json_t *rules = json_object_get(v, "rules"), *ctr = json_object_get(v, "counters");
	char *s;

	if (!json_is_object(rules))
		return -1;
	s = json_text(rules, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fprintf(out, "network: %s (%s)\nrules: %s\n",
		json_string_value(json_object_get(v, "network")),
		json_is_true(json_object_get(v, "running")) ? "running" : "not running",
		s ? s : "?");
	free(s);
	for (int d = 0; json_is_object(ctr) && d < 2; d++) {
		const char *dir = d ? "ingress" : "egress", *reason;
		json_t *c;

		json_object_foreach(json_object_get(ctr, dir), reason, c)
		{
			json_int_t n = json_integer_value(json_object_get(c, "packets"));

			if (n)
				fprintf(out, "%-8s %-20s %lld packets %lld bytes\n", dir, reason,
					(long long)n,
					(long long)json_integer_value(json_object_get(c, "bytes")));
		}
	}
	return 0;
}

/* The denied-flow log: one line each, oldest first. */
static int format_log(FILE *out, const json_t *v)
{
	const json_t *lines = json_object_get(v, "lines"), *l;
	size_t i;

	if (!json_is_array(lines))
		return -1;
	json_array_foreach(lines, i, l)
		fprintf(out, "%s\n", json_string_value(l) ? json_string_value(l) : "");
	return 0;
}

int cli_cmd_firewall(struct cli_ctx *c, int argc, char **argv)
{
	char path[256];
	struct err e;
	struct cli_firewall_req r;
	json_t *rules = NULL, *cur = NULL;
	int rc;

	if (cli_firewall_parse(argc, argv, &c->g, &r, &e))
		return cli_usage_error(c, e.msg);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/firewall", r.id);
	if (r.op == CLI_FW_SHOW)
		return cli_call_show(c, "firewall show", "GET", path, NULL, format_get);
	if (r.op == CLI_FW_LOG) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/firewall/log", r.id);
		return cli_call_show(c, "firewall log", "GET", path, NULL, format_log);
	}
	if (r.op == CLI_FW_SET) {
		rc = cli_firewall_load(r.file, &rules, &e);
		if (rc) {
			struct cli_fail f;

			cli_fail_set(&f, rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_LOCAL, NULL,
				     "%s", e.msg);
			return cli_report(c, "firewall set", &f);
		}
	} else {
		rc = cli_call_json(c, "firewall", "GET", path, NULL, &cur);
		if (rc)
			goto out;
		rules = json_incref(json_object_get(cur, "rules"));
		if (cli_firewall_add(rules, r.op, r.rule, &e)) {
			fprintf(stderr, "kiln: firewall: %s\n", e.msg);
			rc = 1;
			goto out;
		}
	}
	rc = cli_call_show(c, "firewall set", "PUT", path, rules, format_put);
out:
	json_decref(rules);
	json_decref(cur);
	json_decref(r.rule);
	return rc;
}
