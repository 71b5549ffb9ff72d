/*
 * cli_body: the kiln CLI's command lines turned into kilnd requests
 * (docs/api.md): create, exec and run bodies, list filters, cp operands
 * (cli_body.c); processes, the shell and attach (cli_body_proc.c); guest
 * file metadata and ports (cli_body_fs.c).
 *
 * Contract:
 *  - Pure: no I/O, no state of its own. Each builder reads the command
 *    line with getopt_long (cli_getopt.h: argv[0] is the command's name,
 *    global options may sit among the words) and returns 0 with a new
 *    JSON body the caller frees, or -1 with a one-line usage message in
 *    e (struct err, lib/base/err.h).
 *  - Values are checked only as far as the CLI must (integers are
 *    integers, KEY=VALUE has a key); ranges are kilnd's to enforce, so the
 *    limits live in one place and its message names them.
 */
#ifndef KILN_CLI_BODY_H
#define KILN_CLI_BODY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/kiln/cli_getopt.h"
#include "lib/base/err.h"
#include "lib/base/num_parse.h" /* the option values' number parser */

/* kilnd's sandbox ids are short hex; anything longer is a typo. */
#define CLI_ID_MAX 64
/* Integers above this are refused by kilnd anyway; the cap keeps them exact in JSON. */
#define CLI_INT_MAX 0x7fffffffffffULL
/* A streamed exec's output_cap: the agent's largest (docs/api.md). */
#define CLI_STREAM_OUTPUT_CAP (256u << 20)
/* An encoded guest path is at most 3 bytes per byte (PATH_MAX 4096); the
 * rest of a query is a few short parameters. */
#define CLI_QUERY_MAX (3 * 4096 + 512)

/*
 * kilnd's own time for a request, beyond the base timeout (cli_req.wait_s):
 * its default --boot-timeout for what boots or wakes a sandbox (a create,
 * start, wake; an exec, spawn or shell may wake a hibernated one); its
 * 10 min snapshot limit plus a boot for checkpoints, hibernation,
 * restores and forks. A kilnd started with a longer --boot-timeout says
 * so in GET /v1/health (boot_timeout_s): a request with at least
 * CLI_WAIT_BOOT that runs past its limit asks, and waits by the
 * difference more (cli_http.c).
 */
#define CLI_WAIT_BOOT 60
#define CLI_WAIT_SNAPSHOT (600 + CLI_WAIT_BOOT)
#define CLI_WAIT_UNBOUNDED (-1LL) /* a buffered exec without a timeout of its own */
/*
 * A streamed exec's or run's head comes with the first event, or at most
 * 1 s after kilnd asked the agent (EXEC_HEAD_MS, api/kilnd/endpoints/exec.c),
 * a wake before that: so a quiet process is told from a silent socket.
 */
#define CLI_WAIT_STREAM_HEAD (5 + CLI_WAIT_BOOT)
/* kiln wait without --timeout-ms asks kilnd in waits this long, each
 * answered (504 timeout while the process runs), so none waits unbounded. */
#define CLI_WAIT_SLICE_S 10

/* Milliseconds an answer may take (base timeout_s plus wait_s); 0: no limit. */
long long cli_answer_ms(unsigned long timeout_s, long long wait_s);
/* The wait of a process with timeout_ms (0: none, so unbounded), rounded
 * up to seconds, plus extra_s. */
long long cli_wait_for_ms(unsigned long long timeout_ms, long long extra_s);
/* cli_req.wait_s of an exec or run with this body: streamed, its head's
 * (CLI_WAIT_STREAM_HEAD); buffered, its timeout_ms and a wake's. */
long long cli_exec_wait_s(const json_t *body, bool stream);

/* kiln create [options]: the POST /v1/sandboxes body. */
int cli_create_body(int argc, char **argv, struct cli_globals *g, json_t **body, struct err *e);

struct cli_exec_req {
	char id[CLI_ID_MAX + 1];
	json_t *body;    /* the POST .../exec body */
	bool stream;     /* ?stream=1 (NDJSON): the default; --buffered clears it */
	bool send_stdin; /* -i: send our stdin (the caller fills stdin_base64) */
};

/*
 * kiln exec ID [options] [--] ARGV...: the id and the exec body. Output is
 * streamed unless --buffered (then kilnd's single result object); a
 * streamed body asks for output_cap CLI_STREAM_OUTPUT_CAP.
 */
int cli_exec_parse(int argc, char **argv, struct cli_globals *g, struct cli_exec_req *req,
		   struct err *e);

struct cli_run_req {
	json_t *create;           /* the POST /v1/sandboxes body */
	struct cli_exec_req exec; /* its id is empty: the new sandbox's */
};

/*
 * kiln run [create options] [exec options] IMAGE [--] ARGV...: create's
 * options (--env is the sandbox's), exec's --user, --cwd, --timeout-ms,
 * --shell, -i, --buffered. 0 with both bodies (the caller frees them).
 */
int cli_run_parse(int argc, char **argv, struct cli_globals *g, struct cli_run_req *req,
		  struct err *e);

/*
 * kiln ls [--state S] [--label K=V]...: the query string ("" or
 * "?state=...&label=..."), percent-encoded, into q (qsz bytes).
 */
int cli_list_query(int argc, char **argv, struct cli_globals *g, char *q, size_t qsz,
		   struct err *e);

/* One "ID" operand (inspect, stop, start, rm): exactly one positional. */
int cli_one_id(int argc, char **argv, struct cli_globals *g, char *id, struct err *e);

struct cli_cp_req {
	bool upload; /* LOCAL -> ID:PATH */
	char id[CLI_ID_MAX + 1];
	const char *guest_path; /* points into argv */
	const char *local;      /* "-" is stdin / stdout */
	const char *user;       /* NULL: kilnd's default */
	bool parents;           /* upload: create missing directories */
};

/*
 * kiln cp [--user U] [--parents] SRC DST: exactly one of SRC and DST is
 * ID:PATH (PATH absolute); a local path holding ':' is written ./a:b.
 */
int cli_cp_parse(int argc, char **argv, struct cli_globals *g, struct cli_cp_req *req,
		 struct err *e);

/*
 * Percent-encode s (RFC 3986 unreserved kept, '/' kept) into out (osz
 * bytes). -ENAMETOOLONG when it does not fit.
 */
int cli_url_encode(const char *s, char *out, size_t osz);

/* ---- processes (cli_body_proc.c) ---- */

struct cli_spawn_req {
	char id[CLI_ID_MAX + 1];
	json_t *body;    /* the POST .../processes body */
	bool send_stdin; /* -i: our stdin as the process's (then closed) */
};

/*
 * kiln spawn ID [--user U] [--cwd D] [--env K=V|K]... [--timeout-ms N]
 * [--shell] [--pty [--rows R] [--cols C]] [--ring-bytes N] [-i] [--] ARGV...
 */
int cli_spawn_parse(int argc, char **argv, struct cli_globals *g, struct cli_spawn_req *req,
		    struct err *e);

struct cli_shell_req {
	char id[CLI_ID_MAX + 1];
	json_t *body;  /* POST .../shell, or .../processes with argv and pty */
	bool has_argv; /* a PROGRAM was given: .../processes */
};

/* kiln shell ID [--user U] [--cwd D] [--env K=V|K]... [--timeout-ms N] [--] [PROGRAM [ARG...]] */
int cli_shell_parse(int argc, char **argv, struct cli_globals *g, struct cli_shell_req *req,
		    struct err *e);

/* A process's commands: kiln logs|attach|kill|wait|stdin ID PROC [options]. */
struct cli_proc_req {
	char id[CLI_ID_MAX + 1];
	unsigned long proc; /* the process's id (1..2^32-1), not its guest pid */
	char query[64];     /* "" or "?..." for the request's path */
	json_t *body;       /* kill: {"signal", "group"}; else NULL */
	bool follow;        /* logs -f */
	bool close;         /* stdin --close */
	const char *file;   /* stdin: FILE operand (NULL or "-": our stdin) */
	long long wait_s;   /* wait: kilnd's own time (--timeout-ms), -1: unbounded */
};

/*
 * cmd is "logs" (--follow/-f, --from SEQ|now), "attach" (--from), "kill"
 * (--signal/-s NAME|N, default TERM; --group), "wait" (--timeout-ms N) or
 * "stdin" (--close, [FILE]). logs asks for base64 output, so byte counts
 * are exact and no UTF-8 character is held back at the end of the ring.
 */
int cli_proc_parse(const char *cmd, int argc, char **argv, struct cli_globals *g,
		   struct cli_proc_req *req, struct err *e);

/* ---- guest file metadata and ports (cli_body_fs.c) ---- */

enum cli_fs_op { CLI_FS_LS, CLI_FS_STAT, CLI_FS_MKDIR, CLI_FS_RM, CLI_FS_MV, CLI_FS_WATCH };

struct cli_fs_req {
	enum cli_fs_op op;
	char id[CLI_ID_MAX + 1];
	const char *path;          /* the guest path (points into argv) */
	char query[CLI_QUERY_MAX]; /* ls, stat, watch: "?path=...&..." */
	json_t *body;              /* mkdir, rm, mv: the POST body */
	const char *endpoint;      /* "files/list", "files/stat", "files/mkdir", ... */
};

/*
 * kiln fs SUBCOMMAND ...; argv[0] is the subcommand:
 *   ls [--depth N] [--limit N] ID:/DIR      stat [--no-follow] ID:/PATH
 *   mkdir [-p] [--mode OCTAL] ID:/DIR       rm [-r] ID:/PATH
 *   mv [-f] ID:/FROM ID:/TO|/TO
 *   watch [-r] [--max-watches N] [--queue N] ID:/DIR|ID /DIR
 * each with [--user user|root].
 */
int cli_fs_parse(int argc, char **argv, struct cli_globals *g, struct cli_fs_req *req,
		 struct err *e);

enum cli_port_op { CLI_PORT_ADD, CLI_PORT_LS, CLI_PORT_RM };

struct cli_port_req {
	enum cli_port_op op;
	char id[CLI_ID_MAX + 1];
	json_t *body;       /* add: {"guest_port", "host_port"} */
	unsigned host_port; /* rm */
};

/* kiln port [add] ID GUEST_PORT [HOST_PORT] | port ls ID | port rm ID HOST_PORT */
int cli_port_parse(int argc, char **argv, struct cli_globals *g, struct cli_port_req *req,
		   struct err *e);

enum cli_preview_op { CLI_PREVIEW_ADD, CLI_PREVIEW_LS, CLI_PREVIEW_RM };

struct cli_preview_req {
	enum cli_preview_op op;
	char id[CLI_ID_MAX + 1];
	json_t *body;  /* add: {"port", "public"} */
	unsigned port; /* rm */
};

/* kiln preview [add] ID PORT [--public] | preview ls ID | preview rm ID PORT */
int cli_preview_parse(int argc, char **argv, struct cli_globals *g, struct cli_preview_req *req,
		      struct err *e);

/* ---- checkpoints and forks (cli_body_snap.c) ---- */

#define CLI_CP_NAME_MAX 64
enum cli_snap_op { CLI_SNAP_ADD, CLI_SNAP_LS, CLI_SNAP_RM, CLI_SNAP_RESTORE };

struct cli_snap_req {
	enum cli_snap_op op;
	char id[CLI_ID_MAX + 1];
	char name[CLI_CP_NAME_MAX + 1]; /* empty for ls */
	bool compress;
};

/* kiln checkpoint [add] ID NAME [--compress] | checkpoint ls ID | checkpoint rm ID NAME */
int cli_checkpoint_parse(int argc, char **argv, struct cli_globals *g, struct cli_snap_req *req,
			 struct err *e);
/* kiln restore ID NAME */
int cli_restore_parse(int argc, char **argv, struct cli_globals *g, struct cli_snap_req *req,
		      struct err *e);
/* kiln fork ID/NAME [--hostname H] [--label K=V]... [--env K=V]...: the create body. */
int cli_fork_body(int argc, char **argv, struct cli_globals *g, json_t **out, struct err *e);

/* ---- helpers shared by the parsers of cli_body*.c ---- */

/*
 * "KEY=VALUE" into obj[KEY] = "VALUE". With allow_unset, a bare "KEY" is
 * obj[KEY] = null (exec's env: unset a variable of the sandbox's env).
 * what names the option in the message ("--env").
 */
int cli_put_kv(json_t *obj, const char *arg, bool allow_unset, const char *what, struct err *e);

/*
 * "HOST:GUEST[:ro|:rw]" into {"host_path","guest_path","read_only"}
 * appended to arr. Neither path may hold ':' (kilnd refuses it in
 * kiln-vmm's option syntax anyway), so the split is unambiguous. The host
 * path is taken as written; the caller makes a relative one absolute,
 * because kilnd resolves it in its own working directory.
 */
int cli_put_share(json_t *arr, const char *arg, struct err *e);

/* An id for the URL path: 1..CLI_ID_MAX bytes of [A-Za-z0-9_-]. */
int cli_check_id(const char *s, char *id, struct err *e);
/* "ID:/path": 0 with id and *path (into arg); 1 when arg is a local path; -1 with e. */
int cli_guest_operand(const char *arg, char *id, const char **path, struct err *e);
/* body[field] = v as an integer in 0..max, or a string; opt names it in e. */
int cli_body_uint(json_t *body, const char *field, const char *opt, const char *v,
		  unsigned long long max, struct err *e);
int cli_body_str(json_t *body, const char *field, const char *opt, const char *v, struct err *e);
/* body[field], an object or array created on first use. */
json_t *cli_body_sub(json_t *body, const char *field, bool array);
/* body["argv"] = argv[rest..argc) (each valid UTF-8). */
int cli_body_argv(json_t *body, int argc, char **argv, int rest, struct err *e);
/* Append "?name=value" or "&name=value" (value percent-encoded) to q. */
int cli_query_add(char *q, size_t qsz, const char *name, const char *value);

/*
 * The options of every command that starts a process (exec, spawn, shell,
 * run): getopt vals, a letter for those with a short form. The ids of
 * every other option of those commands start at CLI_PO_END.
 */
enum {
	CLI_PO_USER = 'u',
	CLI_PO_CWD = 'w',
	CLI_PO_ENV = 'e',
	CLI_PO_TIMEOUT_MS = CLI_OPT_LONG,
	CLI_PO_SHELL,
	CLI_PO_CONFINE,
	CLI_PO_END
};
#define CLI_PROC_OPTIONS                                                      \
	{ "user", required_argument, NULL, CLI_PO_USER },                     \
		{ "cwd", required_argument, NULL, CLI_PO_CWD },               \
		{ "env", required_argument, NULL, CLI_PO_ENV },               \
		{ "timeout-ms", required_argument, NULL, CLI_PO_TIMEOUT_MS }, \
	{                                                                     \
		"confine", no_argument, NULL, CLI_PO_CONFINE                  \
	}
/* One of them into body; 1 when opt is not one of them. */
int cli_proc_opt(json_t *body, int opt, const char *value, struct err *e);

/* The words of a command that runs a program (exec, run, spawn, shell). */
struct cli_prog_words {
	json_t **body; /* the process options (CLI_PROC_OPTIONS) and argv go here */
	/* The operand before the program (run's IMAGE): 0, or -1 with e.
	 * NULL: a sandbox id (cli_check_id) into operand_arg, CLI_ID_MAX + 1 bytes. */
	int (*operand)(void *arg, const char *v, struct err *e);
	void *operand_arg;
	/* The command's other options (may be NULL): 0, -1 with e, or 1: not
	 * one of them. Asked before cli_proc_opt, so run's -e is create's
	 * (the sandbox's env), not the process's. */
	int (*opt)(void *arg, int opt, const char *v, struct err *e);
	void *opt_arg;
	const char *usage;   /* the command's synopsis, for its messages */
	const char *missing; /* err when the operand is missing; NULL: "missing sandbox id (usage)" */
	bool optional;       /* the program may be left out (shell) */
};

/*
 * Options, the operand, then the program from the first word after the
 * operand (or after "--") into (*w->body)["argv"], so `kiln exec ID ls -l`
 * passes -l to ls. 1 with the program read, 0 when none was given (only
 * when w->optional), or -1 with e and *w->body freed and NULL.
 */
int cli_read_program(struct cli_getopt *o, const struct cli_prog_words *w, struct err *e);
/* A cli_prog_words operand: a sandbox id (cli_check_id) into id, CLI_ID_MAX + 1 bytes. */
int cli_id_operand(void *id, const char *v, struct err *e);

/* kiln firewall show ID | log ID | set ID FILE|- | allow ID RULE | deny ID RULE
 * (cli_body_firewall.c). RULE is CIDR|HOST[:PORTS][/PROTO]: 10.0.0.0/8,
 * example.com:443/tcp, *.example.com:80-443, [2001:db8::]:53/udp (an
 * IPv6 address takes brackets before ports); PORTS one port or LO-HI,
 * PROTO tcp|udp|icmp|icmpv6|any. kilnd checks the rest. */
enum cli_fw_op { CLI_FW_SHOW, CLI_FW_LOG, CLI_FW_SET, CLI_FW_ALLOW, CLI_FW_DENY };

struct cli_firewall_req {
	enum cli_fw_op op;
	const char *id;
	const char *file; /* set: a path or "-" */
	json_t *rule;     /* allow/deny: the rule object (caller decrefs) */
};

int cli_firewall_parse(int argc, char **argv, struct cli_globals *g, struct cli_firewall_req *r,
		       struct err *e);
/*
 * A rule set file (kiln create --firewall FILE, kiln firewall set FILE;
 * "-": stdin) into *out, at most 1 MiB. 0; -errno with "FILE: <strerror>"
 * when it cannot be read (no line number: there is no JSON yet); -EINVAL
 * with "FILE: not JSON: <why> (line N)" when its content is wrong.
 */
int cli_firewall_load(const char *file, json_t **out, struct err *e);
/* One RULE as a rule object, or NULL with e. */
json_t *cli_firewall_rule(const char *spec, struct err *e);
/* Append rule to rules' "allow" (CLI_FW_ALLOW) or "deny" list. 0, or -1 with e. */
int cli_firewall_add(json_t *rules, enum cli_fw_op op, const json_t *rule, struct err *e);

#endif
