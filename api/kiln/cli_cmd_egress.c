/*
 * kiln egress log ID [--lines N] (docs/api.md, "GET
 * /v1/sandboxes/{id}/egress/log"): the egress proxy's last decisions.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_getopt.h"
#include "lib/base/num_parse.h"

enum { E_LINES = CLI_OPT_LONG };

/* A field of a decision, or "-". */
static const char *field(const json_t *l, const char *key)
{
	const char *s = json_string_value(json_object_get(l, key));

	return s && *s ? s : "-";
}

/* One line each, oldest first: when, verdict, who to where, and why. */
static int format_log(FILE *out, const json_t *v)
{
	const json_t *lines = json_object_get(v, "lines"), *l, *rule;
	size_t i;

	if (!json_is_array(lines))
		return -1;
	json_array_foreach(lines, i, l)
	{
		fprintf(out, "%s %s %s -> %s %s", field(l, "time"), field(l, "decision"),
			field(l, "src"), field(l, "dst"), field(l, "name"));
		if (json_is_string(json_object_get(l, "method")))
			fprintf(out, " %s %s", field(l, "method"), field(l, "path"));
		rule = json_object_get(l, "rule");
		if (json_is_integer(rule))
			fprintf(out, " rule http[%lld]", (long long)json_integer_value(rule));
		else if (json_is_string(rule))
			fprintf(out, " rule %s", json_string_value(rule));
		if (json_is_string(json_object_get(l, "reason")))
			fprintf(out, " (%s)", field(l, "reason"));
		fputc('\n', out);
	}
	return 0;
}

int cli_cmd_egress(struct cli_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = { { "lines", required_argument, NULL, E_LINES },
					      CLI_GLOBAL_OPTIONS };
	const char *words[2];
	char path[256], lines[32] = "";
	struct cli_getopt s;
	struct err e;
	uint64_t n;
	int nw = 0, opt;

	cli_getopt_init(&s, argc, argv, opts, &c->g, &e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return cli_usage_error(c, e.msg);
		if (opt == E_LINES) {
			if (num_parse_u64(s.value, 10, 1, 1000, &n))
				return cli_usage_error(c, "--lines: a number from 1 to 1000");
			snprintf(lines, sizeof(lines), "?lines=%llu", (unsigned long long)n);
			continue;
		}
		if (nw == 2)
			return cli_usage_error(c, "too many arguments: expected log ID");
		words[nw++] = s.value;
	}
	if (nw != 2 || strcmp(words[0], "log"))
		return cli_usage_error(c, "expected log ID [--lines N]");
	if (strlen(words[1]) > 64 || strchr(words[1], '/') || strchr(words[1], '?'))
		return cli_usage_error(c, "ID: a sandbox id");
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/egress/log%s", words[1], lines);
	return cli_call_show(c, "egress log", "GET", path, NULL, format_log);
}
