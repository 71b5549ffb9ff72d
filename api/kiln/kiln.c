/*
 * kiln: the command-line client of kilnd (docs/api.md), over its Unix
 * socket. main() builds the context, picks the command and exits with
 * what it returns; the commands are in cli_cmd_*.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "api/kiln/cli_cmds.h"

/* One entry per command: a new kilnd endpoint is one line here. */
static const struct cli_cmd commands[] = {
	{ "health", "", "is kilnd serving: status, version, uptime, sandbox count",
	  cli_cmd_health },
	{ "images", "", "root images kilnd can boot, and its kernel", cli_cmd_images },
	{ "image", "import FILE --name NAME [--ref TAG] [--devices] | ls | inspect NAME | rm NAME",
	  "import an OCI image-layout or docker save tarball as a bootable image (Env, WorkingDir and User become "
	  "its sandboxes' defaults); list; one image's record; delete one no sandbox uses",
	  cli_cmd_image },
	{ "template", "build [-f FILE] [--name NAME] DIR | ls | inspect NAME | rm NAME",
	  "build a template from DIR's Kilnfile or Dockerfile (FROM, RUN, COPY, ENV, WORKDIR, USER, READY), its log "
	  "streamed, steps cached; list; one template's record and build file; delete one no sandbox uses",
	  cli_cmd_template },
	{ "create",
	  "[--image NAME | --template NAME] [--cpus N] [--memory MIB] [--disk MIB] [--env K=V]... [--hostname H] [--label K=V]... "
	  "[--share HOST:GUEST[:ro]]... [--timeout S] [--no-console] [--network none|passt] [--firewall FILE]",
	  "create and boot a sandbox (image 'minimal' by default; a template's start from its ready snapshot); prints its id",
	  cli_cmd_create },
	{ "run",
	  "[create options] [--user U] [--cwd DIR] [--timeout-ms N] [--confine] [--shell] [-i] [--buffered] IMAGE "
	  "[--] PROGRAM [ARG...]",
	  "create a sandbox, run one command, delete it (also on Ctrl-C)", cli_cmd_run },
	{ "ls", "[--state STATE] [--label K=V]...", "list sandboxes, oldest first", cli_cmd_ls },
	{ "inspect", "ID", "a sandbox's full record as JSON", cli_cmd_sandbox_call },
	{ "stop", "ID", "shut a sandbox down; its disk stays", cli_cmd_sandbox_call },
	{ "start", "ID", "boot a stopped or crashed sandbox again", cli_cmd_sandbox_call },
	{ "rm", "ID", "stop a sandbox if it runs and delete everything it owned",
	  cli_cmd_sandbox_call },
	{ "exec",
	  "ID [--user user|root] [--cwd DIR] [--env K=V|K]... [--timeout-ms N] [--confine] [--shell] [-i] [--buffered] "
	  "[--] PROGRAM [ARG...]",
	  "run a process, its output streamed; its exit status is kiln's", cli_cmd_exec },
	{ "run-code",
	  "ID --language python|javascript|typescript|bash (-c CODE | --file FILE | -) [--user U] [--cwd DIR] "
	  "[--env K=V|K]... [--timeout-ms N] [-i] [--stream]",
	  "run a snippet; prints its output, then what it passed to result.set as JSON",
	  cli_cmd_run_code },
	{ "shell",
	  "ID [--user user|root] [--cwd DIR] [--env K=V|K]... [--timeout-ms N] [--confine] [-- PROGRAM [ARG...]]",
	  "a terminal: sh (or PROGRAM) on a PTY, attached to ours", cli_cmd_shell },
	{ "spawn",
	  "ID [--user U] [--cwd DIR] [--env K=V|K]... [--timeout-ms N] [--confine] [--shell] [--pty [--rows R] [--cols C]] "
	  "[--ring-bytes N] [-i] [--] PROGRAM [ARG...]",
	  "start a background process; prints its process id", cli_cmd_spawn },
	{ "ps", "ID", "a sandbox's background processes, running and exited", cli_cmd_ps },
	{ "logs", "ID PROC [-f|--follow] [--from SEQ|now]",
	  "a process's output so far (-f: until it exits)", cli_cmd_logs },
	{ "attach", "ID PROC [--from SEQ|now]",
	  "a process's terminal (or output and stdin), as shell", cli_cmd_attach },
	{ "stdin", "ID PROC [--close] [FILE|-]", "send FILE (or our stdin) to a process's stdin",
	  cli_cmd_stdin },
	{ "kill", "ID PROC [-s|--signal NAME|N] [--group]", "signal a process (TERM by default)",
	  cli_cmd_kill },
	{ "wait", "ID PROC [--timeout-ms N]", "wait for a process to exit; its status is kiln's",
	  cli_cmd_wait },
	{ "cp", "[--user user|root] [--parents] SRC DST  (one of them ID:/PATH)",
	  "copy a file or a directory in or out, streamed ('-': stdin/stdout)", cli_cmd_cp },
	{ "fs",
	  "ls [-d|--depth N] [--limit N] ID:/DIR | stat [--no-follow] ID:/PATH | mkdir [-p] [-m|--mode OCTAL] "
	  "ID:/DIR | rm [-r] ID:/PATH | mv [-f] ID:/FROM [ID:]/TO | watch [-r|--recursive] [--max-watches N] "
	  "[--queue N] ID:/DIR|ID /DIR  (each: [--user user|root])",
	  "guest files: list, stat, mkdir, remove, rename; watch prints create/modify/delete/rename events "
	  "until Ctrl-C or the watch ends",
	  cli_cmd_fs },
	{ "port", "[add] ID GUEST_PORT [HOST_PORT] | ls ID | rm ID HOST_PORT",
	  "forward 127.0.0.1:HOST_PORT to the guest's GUEST_PORT; list; remove", cli_cmd_port },
	{ "preview", "[add] ID PORT [--public] | ls ID | rm ID PORT",
	  "a URL for the guest's web server on PORT (kilnd --preview-listen); list; remove",
	  cli_cmd_preview },
	{ "pause", "ID", "stop a sandbox's vCPUs; its memory stays", cli_cmd_sandbox_call },
	{ "resume", "ID", "run a paused sandbox again", cli_cmd_sandbox_call },
	{ "checkpoint", "[add] ID NAME [--compress] | ls ID | rm ID NAME",
	  "snapshot a sandbox (memory, processes, disk); list; remove", cli_cmd_checkpoint },
	{ "restore", "ID NAME", "put a sandbox back to a checkpoint, discarding what came after",
	  cli_cmd_restore },
	{ "fork", "ID/NAME [--hostname H] [--label K=V]... [--env K=V]...",
	  "a new sandbox from a checkpoint, running where it stopped; prints its id",
	  cli_cmd_fork },
	{ "hibernate", "ID", "snapshot a sandbox and free its CPU and memory",
	  cli_cmd_sandbox_call },
	{ "wake", "ID", "resume a hibernated sandbox (any exec or file request does too)",
	  cli_cmd_sandbox_call },
	{ "metrics", "", "kilnd's Prometheus metrics", cli_cmd_metrics },
	{ "firewall",
	  "show ID | log ID | set ID FILE|- | allow ID RULE | deny ID RULE  (RULE: CIDR|HOST[:PORTS][/PROTO])",
	  "a networked sandbox's packet filter: rules, counters, denied flows, changes at runtime",
	  cli_cmd_firewall },
	{ "egress", "log ID [--lines N]",
	  "the egress proxy's last decisions (sandboxes whose rules have http entries)",
	  cli_cmd_egress },
	{ "secrets", "set NAME [--value-file FILE] | ls | rm NAME",
	  "named secrets the egress proxy injects into HTTP requests (a firewall http rule's inject); set reads "
	  "the value from --value-file or stdin (a pipe or file, not a terminal), never from the command line, "
	  "where any user of the host reads it (/proc/PID/cmdline): `read -rs T && printf %s \"$T\" | kiln "
	  "secrets set github`; one trailing newline is dropped; ls shows names and times, never values",
	  cli_cmd_secrets },
	{ 0 },
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: kiln [--socket PATH] [--request-timeout SECONDS] [--json] COMMAND [ARGS]\n\n"
		"The client of kilnd, kiln's daemon (docs/api.md).\n\n"
		"commands:\n");
	for (const struct cli_cmd *c = commands; c->name; c++)
		fprintf(out, "  %-8s %s\n", c->name, c->summary);
	fprintf(out, "\n");
	for (const struct cli_cmd *c = commands; c->name; c++)
		fprintf(out, "  kiln %s %s\n", c->name, c->args);
	fprintf(out,
		"\n"
		"options (before or after the command, not after the program of exec, run,\n"
		"spawn or shell):\n"
		"  --socket PATH  kilnd's socket (default $KILN_SOCKET, else " CLI_SOCKET_DEFAULT
		")\n"
		"  --request-timeout SECONDS\n"
		"                 how long to wait for kilnd (default $KILN_REQUEST_TIMEOUT,\n"
		"                 else 30; 0: no limit): for the connection, and for the\n"
		"                 answer beyond what the request itself takes: create,\n"
		"                 start, spawn and shell add kilnd's default boot time\n"
		"                 (60 s); checkpoint, hibernate, wake, restore and fork\n"
		"                 10 min and a boot; exec and run their --timeout-ms and a\n"
		"                 boot, wait its --timeout-ms (without one they wait as long\n"
		"                 as the process runs). A stream (exec, logs, a download, a\n"
		"                 terminal) may be quiet as long as it likes once it began\n"
		"  --json         print kilnd's JSON as it is (exec, run, logs: the NDJSON\n"
		"                 events, or with --buffered the result object; create: the\n"
		"                 sandbox object; run-code: run's result object, or with\n"
		"                 --stream its events; shell, attach, wait: the exit object;\n"
		"                 cp: kilnd's answer, or for downloads {path, bytes} or the\n"
		"                 counts of what was extracted)\n"
		"  -h, --help     this text\n"
		"\n"
		"--confine (exec, run, spawn, shell): the process runs in its own mount\n"
		"  namespace in the guest and sees only /workspace (read-write, its cwd and\n"
		"  HOME), a private /tmp and the image's programs and libraries, read-only:\n"
		"  no /home, no /root, no /etc/passwd (docs/api.md, \"Confinement\"). A\n"
		"  convenience inside the VM; the VM is the security boundary\n"
		"\n"
		"exit status:\n"
		"  0  done\n"
		"  1  kilnd refused the request or failed (the line says its code), a\n"
		"     transfer broke off, or kilnd's answer lacks a field kiln needs\n"
		"  2  usage: bad command line\n"
		"  3  cannot reach kilnd: no socket, connection refused, permission denied,\n"
		"     a socket path too long for a Unix socket, or no connection within\n"
		"     --request-timeout\n"
		"  4  not found: no such sandbox, image or guest file\n"
		"  5  a local file could not be read or written\n"
		"  6  kilnd did not answer within --request-timeout (the request may still\n"
		"     take effect there)\n"
		"  exec, run, run-code, shell, attach and wait exit with the process's\n"
		"  status: 124 when --timeout-ms expired, 128+N when signal N ended it\n"
		"  (kiln's own failures keep the codes above); run, shell and attach exit\n"
		"  128+N when signal N stopped kiln itself\n");
}

int main(int argc, char **argv)
{
	struct cli_ctx c = { 0 };
	struct cli_getopt s;
	struct err e;
	int opt, rc, cmd;
	const char *env = getenv("KILN_SOCKET"), *tenv = getenv("KILN_REQUEST_TIMEOUT");

	c.g.socket = env && *env ? env : CLI_SOCKET_DEFAULT;
	c.g.timeout_s = CLI_TIMEOUT_DEFAULT;
	if (tenv && *tenv && cli_timeout_parse(tenv, "KILN_REQUEST_TIMEOUT", &c.g.timeout_s, &e)) {
		fprintf(stderr, "kiln: %s; see 'kiln --help'\n", e.msg);
		return CLI_EXIT_USAGE;
	}
	/* Options before the command: only the global ones. */
	cli_getopt_init(&s, argc, argv, cli_global_options, &c.g, &e);
	opt = cli_getopt_next(&s);
	if (c.g.help) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	/* A usage error is one line: the 90 lines of help would bury it. */
	if (opt == CLI_GETOPT_ERROR) {
		fprintf(stderr, "kiln: %s; see 'kiln --help'\n", e.msg);
		return CLI_EXIT_USAGE;
	}
	if (opt == CLI_GETOPT_WORD && !strcmp(s.value, "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (opt != CLI_GETOPT_WORD) {
		fprintf(stderr, "kiln: missing command; see 'kiln --help'\n");
		return CLI_EXIT_USAGE;
	}
	for (c.cmd = commands; c.cmd->name && strcmp(c.cmd->name, s.value); c.cmd++)
		;
	if (!c.cmd->name) {
		fprintf(stderr, "kiln: unknown command '%s'; see 'kiln --help'\n",
			CLI_ECHO(s.value));
		return CLI_EXIT_USAGE;
	}
	/* The command's words, its name first as getopt wants. */
	cmd = s.next - 1;
	/* `kiln CMD --help` for every command, also those whose first word is
	 * a subcommand (image, template) and never reach getopt. */
	if (argc - cmd >= 2 && (!strcmp(argv[cmd + 1], "--help") || !strcmp(argv[cmd + 1], "-h"))) {
		printf("usage: kiln %s %s\n%s\n", c.cmd->name, c.cmd->args, c.cmd->summary);
		return CLI_EXIT_OK;
	}
	/* SIGPIPE keeps its default: `kiln exec ID -- yes | head` ends kiln
	 * quietly as it ends any filter, and the closed connection makes
	 * kilnd kill the process. curl's own socket writes use MSG_NOSIGNAL,
	 * so kilnd going away is reported, not a silent death. */
	if (curl_global_init(CURL_GLOBAL_NOTHING)) {
		fprintf(stderr, "kiln: cannot initialise libcurl\n");
		return CLI_EXIT_API;
	}
	rc = c.cmd->run(&c, argc - cmd, argv + cmd);
	if (c.connected)
		cli_http_close(&c.http);
	curl_global_cleanup();
	return rc;
}
