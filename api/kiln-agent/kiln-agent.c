/*
 * kiln-agent: a command-line client of the guest agent, over
 * api/agent_client. For tests, scripts and humans poking at a running VM:
 *
 *   kiln-agent --vsock /run/vm1.vsock exec -- uname -a
 *
 * Only main() and the command functions print and pick exit statuses;
 * everything protocol-related lives in the library. This file holds the
 * usage, the global options and the command table; the commands are in
 * ka_cmd_<group>.c (guest, exec, proc, fs), what they share in
 * ka_common.c, declared in ka_cmds.h.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/kiln-agent/ka_cmds.h"

static const char usage_text[] =
	"usage: kiln-agent --vsock PATH [--timeout MS] [--json] COMMAND [ARGS]\n"
	"\n"
	"Talks to the kiln guest agent through kiln-vmm's --vsock socket PATH.\n"
	"--timeout MS: connect and reply timeout (default 10000); wait-ready waits this long.\n"
	"--json: machine-readable output (one JSON object per line).\n"
	"\n"
	"commands:\n"
	"  wait-ready                         wait until the agent answers\n"
	"  ping | info\n"
	"  exec [--user root|user] [--cwd DIR] [--env K=V|K]... [--timeout-ms N]\n"
	"       [--output-cap BYTES] [--stdin-file FILE|-] [--shell] [--confine] [--json] -- ARGV...\n"
	"                                     run to completion; its stdout/stderr go to ours\n"
	"  spawn [--pty] [--rows R --cols C] [--ring-bytes N] [--user U] [--cwd DIR]\n"
	"        [--env K=V]... [--timeout-ms N] [--shell] [--confine] -- ARGV...    print the new id\n"
	"  attach ID [--from SEQ|now] [--no-stdin]\n"
	"                                     stream output, forward stdin (EOF closes its stdin)\n"
	"  signal ID SIG [--group]            SIG: a number or a name (TERM, SIGKILL, ...)\n"
	"  stdin ID [--close]                 send our stdin to process ID\n"
	"  resize ID ROWS COLS\n"
	"  wait ID [--timeout-ms N]\n"
	"  ps\n"
	"  read PATH [--offset N] [--length N] [--user U]      file to stdout\n"
	"  write PATH [--mode OCTAL] [--append] [--exclusive] [--no-create] [--parents]\n"
	"        [--user U]                   stdin to file\n"
	"  stat PATH [--no-follow] [--user U]\n"
	"  exists PATH [--no-follow] [--user U]\n"
	"  ls PATH [--depth N] [--limit N] [--user U]\n"
	"  mkdir [-p] [--mode OCTAL] [--user U] PATH\n"
	"  rm [-r] [--user U] PATH\n"
	"  mv [--overwrite] [--user U] FROM TO\n"
	"  tar-up DIR [--user U]              extract a plain tar archive from stdin into DIR\n"
	"  tar-down PATH [--user U]           PATH as a tar archive on stdout\n"
	"  configure [--hostname H] [--interface IF] [--address A/PREFIX] [--gateway G]\n"
	"            [--dns IP]... [--no-dns] [--mtu N] [--trust-ca PEM-FILE | --no-trust-ca]\n"
	"  sync-clock [NS]                    set the guest clock (default: this host's)\n"
	"  shutdown [--grace-ms N]\n"
	"\n"
	"exit status: 0 done; 1 exists: no such path; 2 usage or invalid request;\n"
	"  3 the agent reported an error; 4 agent unreachable (no VM, agent not\n"
	"  listening, connection lost); 5 timed out; 6 protocol error or incompatible\n"
	"  agent; 7 local failure.\n"
	"  exec, wait and attach exit with the process's status instead: its exit\n"
	"  code, 124 if it timed out, 128+N if signal N killed it; 125 if kiln-agent\n"
	"  or the agent failed, 126 if it could not be started, 127 if not found.\n"
	"errors: one line 'kiln-agent: <what failed>: <code>: <message>' on stderr.\n";

static const struct {
	const char *name;
	int (*fn)(struct cli *cli, int argc, char **argv);
} commands[] = {
	{ "wait-ready", cmd_wait_ready },
	{ "ping", cmd_ping },
	{ "info", cmd_info },
	{ "exec", cmd_exec },
	{ "spawn", cmd_spawn },
	{ "attach", cmd_attach },
	{ "signal", cmd_signal },
	{ "stdin", cmd_stdin },
	{ "resize", cmd_resize },
	{ "wait", cmd_wait },
	{ "ps", cmd_ps },
	{ "read", cmd_read },
	{ "write", cmd_write },
	{ "stat", cmd_stat },
	{ "exists", cmd_exists },
	{ "ls", cmd_ls },
	{ "mkdir", cmd_mkdir },
	{ "rm", cmd_rm },
	{ "mv", cmd_mv },
	{ "tar-up", cmd_tar_up },
	{ "tar-down", cmd_tar_down },
	{ "configure", cmd_configure },
	{ "sync-clock", cmd_sync_clock },
	{ "shutdown", cmd_shutdown },
};

int main(int argc, char **argv)
{
	enum { G_VSOCK = 1, G_TIMEOUT, G_JSON, G_HELP };
	static const struct option opts[] = {
		{ "vsock", required_argument, 0, G_VSOCK },
		{ "timeout", required_argument, 0, G_TIMEOUT },
		{ "json", no_argument, 0, G_JSON },
		{ "help", no_argument, 0, G_HELP },
		{ 0, 0, 0, 0 },
	};
	struct cli cli = { 0 };
	const char *vsock = NULL;
	uint32_t timeout = AGENT_CLIENT_TIMEOUT_DEFAULT_MS;
	int c;

	/* "+": stop at the command; its own options come after it. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case G_VSOCK:
			vsock = optarg;
			break;
		case G_TIMEOUT:
			if (!parse_u32(optarg, INT32_MAX, &timeout) || timeout == 0)
				return usage_error("--timeout: '%s' is not a positive number of ms",
						   optarg);
			break;
		case G_JSON:
			cli.json = true;
			break;
		case 'h':
		case G_HELP:
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!vsock)
		return usage_error("--vsock PATH is required (kiln-vmm's --vsock socket)");
	if (agent_client_init(&cli.c, vsock) < 0)
		return usage_error("--vsock: '%s' is too long for a Unix socket path", vsock);
	cli.c.timeout_ms = (int)timeout;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, argv[optind]) == 0)
			return commands[i].fn(&cli, argc - optind, argv + optind);
	return usage_error("unknown command '%s'", argv[optind]);
}
