/*
 * kiln: the command-line client of kilnd (docs/api.md), over its Unix
 * socket. main() builds the context, picks the command and exits with
 * what it returns; the commands are in cli_cmd_*.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli_cmds.h"

/* One entry per command: a new kilnd endpoint is one line here. */
static const struct cli_cmd commands[] = {
	{ "health", "", "is kilnd serving: status, version, uptime, sandbox count", cli_cmd_health },
	{ "images", "", "root images kilnd can boot, and its kernel", cli_cmd_images },
	{ "create",
	  "[--image NAME] [--cpus N] [--memory MIB] [--env K=V]... [--hostname H] [--label K=V]... "
	  "[--share HOST:GUEST[:ro]]... [--timeout S] [--no-console]",
	  "create and boot a sandbox (image 'minimal' by default); prints its id", cli_cmd_create },
	{ "ls", "[--state STATE] [--label K=V]...", "list sandboxes, oldest first", cli_cmd_ls },
	{ "inspect", "ID", "a sandbox's full record as JSON", cli_cmd_inspect },
	{ "stop", "ID", "shut a sandbox down; its disk stays", cli_cmd_stop },
	{ "start", "ID", "boot a stopped or crashed sandbox again", cli_cmd_start },
	{ "rm", "ID", "stop a sandbox if it runs and delete everything it owned", cli_cmd_rm },
	{ "exec",
	  "ID [--user user|root] [--cwd DIR] [--env K=V|K]... [--timeout-ms N] [--shell] [-i] [--stream] "
	  "[--] PROGRAM [ARG...]",
	  "run a process; its output is ours, its exit status kiln's", cli_cmd_exec },
	{ "cp", "[--user user|root] [--parents] LOCAL ID:/PATH | ID:/PATH LOCAL",
	  "copy one file in or out, streamed ('-' is stdin/stdout)", cli_cmd_cp },
	{ "metrics", "", "kilnd's Prometheus metrics", cli_cmd_metrics },
	{ 0 },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: kiln [--socket PATH] [--json] COMMAND [ARGS]\n\n"
		     "The client of kilnd, kiln's daemon (docs/api.md).\n\n"
		     "commands:\n");
	for (const struct cli_cmd *c = commands; c->name; c++)
		fprintf(out, "  %-8s %s\n", c->name, c->summary);
	fprintf(out, "\n");
	for (const struct cli_cmd *c = commands; c->name; c++)
		fprintf(out, "  kiln %s %s\n", c->name, c->args);
	fprintf(out,
		"\n"
		"options (before or after the command, not after exec's program):\n"
		"  --socket PATH  kilnd's socket (default $KILN_SOCKET, else " CLI_SOCKET_DEFAULT ")\n"
		"  --json         print kilnd's JSON as it is (exec: the result object or\n"
		"                 the NDJSON events; create: the sandbox object)\n"
		"  -h, --help     this text\n"
		"\n"
		"exit status:\n"
		"  0  done\n"
		"  1  kilnd refused the request or failed (the line says its code), or a\n"
		"     transfer broke off\n"
		"  2  usage: bad command line\n"
		"  3  cannot reach kilnd: no socket, connection refused, permission denied\n"
		"  4  not found: no such sandbox, image or guest file\n"
		"  5  a local file could not be read or written\n"
		"  exec exits with the process's status: 124 when --timeout-ms expired,\n"
		"  128+N when signal N ended it (kiln's own failures keep the codes above)\n");
}

int main(int argc, char **argv)
{
	struct cli_ctx c = { 0 };
	struct cli_scan s;
	int opt, rc;
	const char *env = getenv("KILN_SOCKET");

	c.g.socket = env && *env ? env : CLI_SOCKET_DEFAULT;
	/* Options before the command: only the global ones. */
	cli_scan_init(&s, argc - 1, argv + 1, NULL, &c.g);
	opt = cli_scan_next(&s);
	if (c.g.help) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (opt == CLI_SCAN_ERROR) {
		fprintf(stderr, "kiln: %s\n", s.err);
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (opt == CLI_SCAN_POSITIONAL && !strcmp(s.value, "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (opt != CLI_SCAN_POSITIONAL) {
		fprintf(stderr, "kiln: missing command\n");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	for (c.cmd = commands; c.cmd->name && strcmp(c.cmd->name, s.value); c.cmd++)
		;
	if (!c.cmd->name) {
		fprintf(stderr, "kiln: unknown command '%s' (kiln --help lists them)\n", s.value);
		return CLI_EXIT_USAGE;
	}
	/* SIGPIPE keeps its default: `kiln exec ID -- yes | head` ends kiln
	 * quietly as it ends any filter, and the closed connection makes
	 * kilnd kill the process. curl's own socket writes use MSG_NOSIGNAL,
	 * so kilnd going away is reported, not a silent death. */
	if (curl_global_init(CURL_GLOBAL_NOTHING)) {
		fprintf(stderr, "kiln: cannot initialise libcurl\n");
		return CLI_EXIT_API;
	}
	rc = c.cmd->run(&c, argc - 1 - s.i, argv + 1 + s.i);
	if (c.connected)
		cli_http_close(&c.http);
	curl_global_cleanup();
	return rc;
}
