/*
 * ka_cmds: kiln-agent's commands and what they share (exit statuses,
 * option parsing, error lines, output helpers).
 *
 * Contract:
 *  - One struct cli per run, built by main() (kiln-agent.c) and passed to
 *    each command; a command returns the process's exit status and prints
 *    its own failure line (report, report_proc, usage_error), so main()
 *    only dispatches.
 *  - Adding a command is one entry in commands[] (kiln-agent.c) plus its
 *    function in the ka_cmd_<group>.c of its group.
 *  - Text that came from the guest (error messages, kernel and host
 *    names, paths, argv) reaches the terminal only through
 *    print_guest_text(): a hostile guest must not be able to send escape
 *    sequences to the user's terminal.
 */
#ifndef KILN_KA_CMDS_H
#define KILN_KA_CMDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <getopt.h>
#include <jansson.h>

#include "api/agent-client/agent_client.h"

/* Exit statuses (also in the usage text). */
enum {
	EXIT_FALSE = 1,       /* exists: the path does not exist */
	EXIT_USAGE = 2,       /* bad command line, or a request the agent would refuse */
	EXIT_AGENT = 3,       /* the agent answered with an error */
	EXIT_UNREACHABLE = 4, /* no kiln-vmm socket, no agent listening, connection lost */
	EXIT_TIMEOUT = 5,     /* no answer in time */
	EXIT_PROTOCOL = 6,    /* the agent broke the protocol or speaks another version */
	EXIT_HOST = 7,        /* a local failure (memory, stdin/stdout) */
	/* exec, wait, attach end with the process's own status, so their
	 * failures use the shell's conventions instead. */
	EXIT_PROC_TIMEOUT = 124,
	EXIT_PROC_FAILED = 125,
	EXIT_PROC_CANNOT_RUN = 126,
	EXIT_PROC_NOT_FOUND = 127,
};

struct cli {
	struct agent_client c;
	bool json;
};

/* Long options of the commands (getopt_long values past any char). */
enum {
	OPT_USER = 256,
	OPT_CWD,
	OPT_ENV,
	OPT_TIMEOUT_MS,
	OPT_OUTPUT_CAP,
	OPT_STDIN_FILE,
	OPT_SHELL,
	OPT_CONFINE,
	OPT_JSON,
	OPT_PTY,
	OPT_ROWS,
	OPT_COLS,
	OPT_RING,
	OPT_FROM,
	OPT_NO_STDIN,
	OPT_GROUP,
	OPT_CLOSE,
	OPT_OFFSET,
	OPT_LENGTH,
	OPT_MODE,
	OPT_APPEND,
	OPT_EXCLUSIVE,
	OPT_NO_CREATE,
	OPT_PARENTS,
	OPT_NO_FOLLOW,
	OPT_DEPTH,
	OPT_LIMIT,
	OPT_OVERWRITE,
	OPT_HOSTNAME,
	OPT_INTERFACE,
	OPT_ADDRESS,
	OPT_GATEWAY,
	OPT_DNS,
	OPT_NO_DNS,
	OPT_MTU,
	OPT_TRUST_CA,
	OPT_NO_TRUST_CA,
	OPT_GRACE,
};

/* ---- errors: one line on stderr, the exit status back ---- */

int __attribute__((format(printf, 1, 2))) usage_error(const char *fmt, ...);
int exit_for(const struct agent_client_err *e);
/* "kiln-agent: WHAT: CODE: MESSAGE", WHAT and MESSAGE scrubbed (either may hold guest text). */
int report(const char *what, const struct agent_client_err *e);
/* The same for commands whose status is a process's. */
int report_proc(const char *what, const struct agent_client_err *e);
int local_error(const char *what, int errnum);

/* ---- argument parsing ---- */

bool parse_u64(const char *s, uint64_t max, uint64_t *out);
bool parse_u32(const char *s, uint32_t max, uint32_t *out);
bool parse_mode(const char *s, uint32_t *out);
bool parse_user(const char *s, enum agent_user *u);
bool parse_signal(const char *s, int *signo);
bool parse_id(const char *s, uint32_t *id);
/* getopt_long over a command's own arguments (argv[0] is its name). */
int next_opt(int argc, char **argv, const char *shortopts, const struct option *longopts);
void opts_reset(void);

/* ---- input ---- */

/* Read all of a file (or stdin for "-"), at most AGENT_LEN_MAX bytes,
 * NUL-terminated, malloc'd. 0, -E2BIG (larger) or -errno. */
int slurp(const char *path, char **out, size_t *n);

/* ---- output ---- */

/* Print one JSON object as a line and drop it. */
void print_json(FILE *f, json_t *o);
/* Guest-supplied text s to f with every control character (C0, DEL, C1)
 * and invalid UTF-8 byte shown as '?' (lib/base/text_clean.h). */
void print_guest_text(FILE *f, const char *s);
json_t *status_json(const struct agent_client_exit *x);
/* A process status as the shell would give it. */
int proc_status(const struct agent_client_exit *x);
void describe_status(char *buf, size_t n, const struct agent_client_exit *x);

/* ---- the commands, by group ---- */

/* ka_cmd_guest.c: the agent and the guest as a whole */
int cmd_wait_ready(struct cli *cli, int argc, char **argv);
int cmd_ping(struct cli *cli, int argc, char **argv);
int cmd_info(struct cli *cli, int argc, char **argv);
int cmd_configure(struct cli *cli, int argc, char **argv);
int cmd_sync_clock(struct cli *cli, int argc, char **argv);
int cmd_shutdown(struct cli *cli, int argc, char **argv);
/* ka_cmd_exec.c: run a process */
int cmd_exec(struct cli *cli, int argc, char **argv);
int cmd_spawn(struct cli *cli, int argc, char **argv);
/* ka_cmd_proc.c: processes already running */
int cmd_attach(struct cli *cli, int argc, char **argv);
int cmd_signal(struct cli *cli, int argc, char **argv);
int cmd_stdin(struct cli *cli, int argc, char **argv);
int cmd_resize(struct cli *cli, int argc, char **argv);
int cmd_wait(struct cli *cli, int argc, char **argv);
int cmd_ps(struct cli *cli, int argc, char **argv);
/* ka_cmd_fs.c: files and directories */
int cmd_read(struct cli *cli, int argc, char **argv);
int cmd_write(struct cli *cli, int argc, char **argv);
int cmd_stat(struct cli *cli, int argc, char **argv);
int cmd_exists(struct cli *cli, int argc, char **argv);
int cmd_ls(struct cli *cli, int argc, char **argv);
int cmd_mkdir(struct cli *cli, int argc, char **argv);
int cmd_rm(struct cli *cli, int argc, char **argv);
int cmd_mv(struct cli *cli, int argc, char **argv);
int cmd_tar_up(struct cli *cli, int argc, char **argv);
int cmd_tar_down(struct cli *cli, int argc, char **argv);

#endif
