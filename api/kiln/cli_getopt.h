/*
 * cli_getopt: the kiln CLI's command lines read with getopt_long(3), as
 * kilnd, kiln-vmm and the importer read theirs, plus the global options
 * every command takes and the echo of user input in messages.
 *
 * Contract:
 *  - Each command describes its options as getopt's struct option table,
 *    ending with CLI_GLOBAL_OPTIONS; the short options are taken from the
 *    table (an entry whose val is a letter is also -letter), so one table
 *    says everything. cli_getopt_next() runs getopt_long over it.
 *  - argv is getopt's: argv[0] is the command's (or subcommand's) name,
 *    the words start at argv[1].
 *  - getopt_long's own rules: "--name VALUE", "--name=VALUE", "-x VALUE",
 *    "-xVALUE", short flags bundled ("-it"), a long name abbreviated to
 *    any unambiguous prefix; "--" ends the options; a lone "-" is a word
 *    (stdin/stdout in cp). Options and words come back in the order they
 *    were written (getopt's "-" ordering: nothing is permuted), so a
 *    command decides where its words end (exec: the program's first word).
 *  - The global options (--socket, --request-timeout, --json, --help) are
 *    accepted anywhere before "--", so `kiln ls --json` and `kiln --json
 *    ls` mean the same.
 *  - getopt prints nothing (opterr = 0); every failure is a one-line
 *    message in the caller's struct err for it to print. getopt's position
 *    lives in globals (optind): cli_getopt_init() resets it, so a unit test
 *    may read many command lines, one at a time.
 */
#ifndef KILN_CLI_GETOPT_H
#define KILN_CLI_GETOPT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/base/err.h"

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

/* User input echoed in a message is cut to this many bytes, then "...". */
#define CLI_ECHO_MAX 80
#define CLI_ECHO_BUF (CLI_ECHO_MAX + 4)

struct cli_globals {
	const char *socket;
	unsigned long timeout_s; /* CLI_TIMEOUT_DEFAULT unless the user said */
	bool json;
	bool help;
};

/*
 * An option's val: its letter when it has a short form, else an id from
 * CLI_OPT_LONG up (above every character, so getopt never confuses the
 * two). The global options' ids are above any command's.
 */
#define CLI_OPT_LONG 256
enum { CLI_OPT_SOCKET = 0x1000, CLI_OPT_TIMEOUT, CLI_OPT_JSON, CLI_OPT_HELP = 'h' };

/* The end of every command's table: the global options, then getopt's terminator. */
#define CLI_GLOBAL_OPTIONS                                                       \
	{ "socket", required_argument, NULL, CLI_OPT_SOCKET },                   \
		{ "request-timeout", required_argument, NULL, CLI_OPT_TIMEOUT }, \
		{ "json", no_argument, NULL, CLI_OPT_JSON },                     \
		{ "help", no_argument, NULL, CLI_OPT_HELP },                     \
	{                                                                        \
		NULL, 0, NULL, 0                                                 \
	}

/* A table of the global options alone, for a command that has none of its own. */
extern const struct option cli_global_options[];

/* What cli_getopt_next returns besides an option's val. */
enum {
	CLI_GETOPT_ERROR = -1,
	CLI_GETOPT_DONE = 0,  /* no words left */
	CLI_GETOPT_WORD = -2, /* g->value is a word that is not an option */
	CLI_GETOPT_REST = -3, /* "--" seen: argv[next..argc) are the rest */
};

struct cli_getopt {
	int argc;
	char **argv; /* argv[0]: the command's name */
	const struct option *opts;
	struct cli_globals *g;
	char shortopts[64]; /* getopt's string, made from opts */
	struct err *e;      /* where a failure is told */
	const char *value;  /* the option's value (optarg) or the word */
	int next;           /* getopt's optind after the last call: the next word */
	bool ended;         /* getopt returned -1: no more calls to it */
};

/*
 * The seconds of --request-timeout or KILN_REQUEST_TIMEOUT (what names
 * it): 0..CLI_TIMEOUT_MAX. 0, or -1 with a one-line message in e.
 */
int cli_timeout_parse(const char *v, const char *what, unsigned long *out, struct err *e);

/*
 * s as it may appear in a message: controls replaced (text_clean's term
 * rule) and cut to CLI_ECHO_MAX bytes at a character boundary, "..."
 * marking the cut. buf holds CLI_ECHO_BUF bytes; returns buf. A command
 * line word can be megabytes; the message must stay one readable line.
 */
const char *cli_echo(char *buf, const char *s);
/* cli_echo into a buffer that lives until the end of the enclosing block. */
#define CLI_ECHO(s) cli_echo((char[CLI_ECHO_BUF]){ 0 }, (s))

/* Read argv[1..argc) with opts (ending with CLI_GLOBAL_OPTIONS), failures into e; resets getopt. */
void cli_getopt_init(struct cli_getopt *o, int argc, char **argv, const struct option *opts,
		     struct cli_globals *g, struct err *e);

/*
 * The next option's val (with o->value when it takes one), or one of the
 * CLI_GETOPT_* values. Global options are applied to o->g and never
 * returned, except --help/-h: it sets g->help and ends the reading as
 * CLI_GETOPT_ERROR with an empty message. A failure is CLI_GETOPT_ERROR
 * with its message in o->e. After CLI_GETOPT_REST or
 * CLI_GETOPT_DONE, CLI_GETOPT_DONE (the words after "--" are never read
 * as options).
 */
int cli_getopt_next(struct cli_getopt *o);

#endif
