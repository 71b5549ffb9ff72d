/*
 * cli_opts: the kiln CLI's option scanner and argument parsers.
 *
 * Contract:
 *  - Pure: no I/O, no allocation beyond jansson values the caller owns, no
 *    global state (getopt keeps its position in globals; this scanner keeps
 *    it in a struct cli_scan, so a unit test can run it twice).
 *  - "--name VALUE", "--name=VALUE" and "-x VALUE" are accepted; "--" ends
 *    the options. A lone "-" is a positional argument (stdin/stdout in cp).
 *  - The global options (--socket, --request-timeout, --json) are accepted
 *    anywhere before "--", so `kiln ls --json` and `kiln --json ls` mean
 *    the same.
 *  - Every failure fills a one-line message for the user and returns -1
 *    (or -EINVAL); nothing prints or exits.
 */
#ifndef KILN_CLI_OPTS_H
#define KILN_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "lib/base/num_parse.h" /* the option values' number parser */

#define CLI_ERR_MAX 512
#define CLI_SOCKET_DEFAULT "/run/kiln/kiln.sock"
/*
 * How long kiln waits for kilnd, in seconds (--request-timeout,
 * KILN_REQUEST_TIMEOUT; 0: no limit): for the connection, and for the
 * answer beyond the time the request itself asks kilnd to take (a boot, a
 * process's --timeout-ms: cli_http.h). kilnd answers most requests at
 * once; 30 s also covers a stop (--stop-timeout 10) and a control-socket
 * round trip to kiln-vmm (kilnd waits 30 s for those).
 */
#define CLI_TIMEOUT_DEFAULT 30
#define CLI_TIMEOUT_MAX 604800 /* a week: kilnd's own longest limits */
/*
 * kilnd's own time for a request, beyond the base timeout (cli_req.wait_s):
 * its default --boot-timeout for what boots or wakes a sandbox (a create,
 * start, wake; an exec, spawn or shell may wake a hibernated one); its
 * 10 min snapshot limit plus a boot for checkpoints, hibernation,
 * restores and forks. A kilnd started with a longer --boot-timeout needs
 * a longer --request-timeout by as much.
 */
#define CLI_WAIT_BOOT 60
#define CLI_WAIT_SNAPSHOT (600 + CLI_WAIT_BOOT)
#define CLI_WAIT_UNBOUNDED (-1LL) /* an exec or wait without a timeout of its own */

/* Milliseconds an answer may take (base timeout_s plus wait_s); 0: no limit. */
long long cli_answer_ms(unsigned long timeout_s, long long wait_s);
/* The wait of a process with timeout_ms (0: none, so unbounded), rounded
 * up to seconds, plus extra_s. */
long long cli_wait_for_ms(unsigned long long timeout_ms, long long extra_s);

/* User input echoed in a message is cut to this many bytes, then "...". */
#define CLI_ECHO_MAX 80
#define CLI_ECHO_BUF (CLI_ECHO_MAX + 4)

struct cli_globals {
	const char *socket;
	unsigned long timeout_s; /* CLI_TIMEOUT_DEFAULT unless the user said */
	bool json;
	bool help;
};

struct cli_optdef {
	const char *name; /* long name without "--" */
	char short_name;  /* 0: none */
	bool has_arg;
	int id; /* > 0 */
};

/* Returned by cli_scan_next besides an option's id. */
enum {
	CLI_SCAN_ERROR = -1,
	CLI_SCAN_DONE = 0,	 /* no arguments left */
	CLI_SCAN_POSITIONAL = -2, /* s->value is the argument */
	CLI_SCAN_REST = -3,	 /* "--" seen: s->argv[s->i..] are the rest */
};

struct cli_scan {
	int argc;
	char **argv;
	int i;
	const struct cli_optdef *defs; /* terminated by a zero entry */
	struct cli_globals *g;
	const char *value; /* the option's value or the positional argument */
	char err[CLI_ERR_MAX];
};

/*
 * The seconds of --request-timeout or KILN_REQUEST_TIMEOUT (what names
 * it): 0..CLI_TIMEOUT_MAX. 0, or -1 with a one-line message in err.
 */
int cli_timeout_parse(const char *v, const char *what, unsigned long *out, char *err, size_t errsz);

/*
 * s as it may appear in a message: controls replaced (text_clean's term
 * rule) and cut to CLI_ECHO_MAX bytes at a character boundary, "..."
 * marking the cut. buf holds CLI_ECHO_BUF bytes; returns buf. A command
 * line word can be megabytes; the message must stay one readable line.
 */
const char *cli_echo(char *buf, const char *s);
/* cli_echo into a buffer that lives until the end of the enclosing block. */
#define CLI_ECHO(s) cli_echo((char[CLI_ECHO_BUF]){ 0 }, (s))

/* Scan argv[0..argc) (the words after the command's name). */
void cli_scan_init(struct cli_scan *s, int argc, char **argv, const struct cli_optdef *defs,
		   struct cli_globals *g);

/*
 * The next option's id (with s->value when it takes one), or one of the
 * CLI_SCAN_* values. Global options are consumed into s->g and never
 * returned, except --help/-h: it sets g->help and ends the scan as
 * CLI_SCAN_ERROR with an empty s->err.
 */
int cli_scan_next(struct cli_scan *s);

/*
 * "KEY=VALUE" into obj[KEY] = "VALUE". With allow_unset, a bare "KEY" is
 * obj[KEY] = null (exec's env: unset a variable of the sandbox's env).
 * what names the option in the message ("--env").
 */
int cli_put_kv(json_t *obj, const char *arg, bool allow_unset, const char *what, char *err, size_t errsz);

/*
 * "HOST:GUEST[:ro|:rw]" into {"host_path","guest_path","read_only"}
 * appended to arr. Neither path may hold ':' (kilnd refuses it in
 * kiln-vmm's option syntax anyway), so the split is unambiguous. The host
 * path is taken as written; the caller makes a relative one absolute,
 * because kilnd resolves it in its own working directory.
 */
int cli_put_share(json_t *arr, const char *arg, char *err, size_t errsz);

#endif
