/*
 * cli_opts: the kiln CLI's option scanner and argument parsers.
 *
 * Contract:
 *  - Pure: no I/O, no allocation beyond jansson values the caller owns, no
 *    global state (getopt keeps its position in globals; this scanner keeps
 *    it in a struct cli_scan, so a unit test can run it twice).
 *  - "--name VALUE", "--name=VALUE" and "-x VALUE" are accepted; "--" ends
 *    the options. A lone "-" is a positional argument (stdin/stdout in cp).
 *  - The global options (--socket, --json) are accepted anywhere before
 *    "--", so `kiln ls --json` and `kiln --json ls` mean the same.
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

struct cli_globals {
	const char *socket;
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
