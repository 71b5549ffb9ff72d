/* The kiln CLI's command lines through getopt_long (cli_getopt.h). */
#include "api/kiln/cli_getopt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/num_parse.h"
#include "lib/base/text_clean.h"

const struct option cli_global_options[] = { CLI_GLOBAL_OPTIONS };

int cli_timeout_parse(const char *v, const char *what, unsigned long *out, struct err *e)
{
	uint64_t n;

	if (num_parse_u64(v, 10, 0, CLI_TIMEOUT_MAX, &n)) {
		err_set(e, EINVAL, "%s '%s': expected whole seconds 0..%u (0: no limit)", what,
			CLI_ECHO(v), CLI_TIMEOUT_MAX);
		return -1;
	}
	*out = (unsigned long)n;
	return 0;
}

const char *cli_echo(char *buf, const char *s)
{
	size_t n = strlen(s);

	if (text_clean_term(buf, CLI_ECHO_MAX + 1, s, n) < n)
		strcat(buf, "...");
	return buf;
}

static bool is_short(int val)
{
	return (val >= 'a' && val <= 'z') || (val >= 'A' && val <= 'Z') ||
		(val >= '0' && val <= '9');
}

void cli_getopt_init(struct cli_getopt *o, int argc, char **argv, const struct option *opts,
		     struct cli_globals *g, struct err *e)
{
	size_t n;

	memset(o, 0, sizeof(*o));
	o->argc = argc;
	o->argv = argv;
	o->opts = opts;
	o->g = g;
	o->e = e;
	o->next = 1;
	/* "-": words come back in order (as val 1), never permuted; ":": a
	 * missing value is told apart from an unknown option. */
	n = (size_t)snprintf(o->shortopts, sizeof(o->shortopts), "-:");
	for (const struct option *p = opts; p->name && n + 3 < sizeof(o->shortopts); p++) {
		if (!is_short(p->val))
			continue;
		o->shortopts[n++] = (char)p->val;
		if (p->has_arg == required_argument)
			o->shortopts[n++] = ':';
	}
	o->shortopts[n] = 0;
	/* 0, not 1: glibc then starts afresh (its ordering and position
	 * within a word), which a second command line in a test needs. */
	optind = 0;
	opterr = 0;
}

/* The written long name (without "--", up to '='), and its length. */
static size_t long_name(const char *word, const char **name)
{
	*name = word + 2;
	return strcspn(*name, "=");
}

/* An unknown or ambiguous long option (getopt says the same for both). */
static void long_unknown(struct cli_getopt *o, const char *word)
{
	char names[ERR_MSG_MAX / 2] = "";
	const char *name;
	size_t n = long_name(word, &name), len = 0;

	for (const struct option *p = o->opts; p->name; p++)
		if (!strncmp(p->name, name, n) && len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s--%s",
						len ? ", " : "", p->name);
	if (len)
		err_set(o->e, EINVAL, "ambiguous option '%s' (%s)", CLI_ECHO(word), names);
	else
		err_set(o->e, EINVAL, "unknown option '%s'", CLI_ECHO(word));
}

/* getopt's '?' (unknown, ambiguous, a value where none goes) or ':' (no value) as a message. */
static int getopt_error(struct cli_getopt *o, int c, const char *word)
{
	char opt[3] = { '-', (char)optopt, 0 };
	bool is_long = word && !strncmp(word, "--", 2);
	const char *name;
	size_t n;

	if (c == ':')
		err_set(o->e, EINVAL, "option '%s' needs a value", CLI_ECHO(is_long ? word : opt));
	else if (!is_long)
		err_set(o->e, EINVAL, "unknown option '%s'", CLI_ECHO(opt));
	else if (optopt) {
		n = long_name(word, &name);
		err_set(o->e, EINVAL, "option '--%.*s' takes no value", (int)n, name);
	} else
		long_unknown(o, word);
	return CLI_GETOPT_ERROR;
}

static int apply_global(struct cli_getopt *o, int c)
{
	switch (c) {
	case CLI_OPT_SOCKET:
		if (!*o->value)
			return err_set(o->e, EINVAL, "--socket: empty path");
		o->g->socket = o->value;
		return 0;
	case CLI_OPT_TIMEOUT:
		return cli_timeout_parse(o->value, "--request-timeout", &o->g->timeout_s, o->e);
	case CLI_OPT_JSON:
		o->g->json = true;
		return 0;
	}
	/* --help stops the reading like an error, so every command's usage
	 * path (cli_usage_error) prints the help instead of running. */
	o->g->help = true;
	if (o->e)
		o->e->msg[0] = 0;
	return -1;
}

int cli_getopt_next(struct cli_getopt *o)
{
	for (;;) {
		/* The word getopt reads now (optind is 0 before the first call). */
		int at = optind ? optind : 1, c;
		const char *word = at < o->argc ? o->argv[at] : NULL;

		if (o->ended)
			return CLI_GETOPT_DONE;
		c = getopt_long(o->argc, o->argv, o->shortopts, o->opts, NULL);
		o->next = optind;
		o->value = optarg;
		if (c == -1) {
			o->ended = true;
			if (!word || strcmp(word, "--"))
				return CLI_GETOPT_DONE;
			o->next = at + 1;
			return CLI_GETOPT_REST;
		}
		if (c == 1)
			return CLI_GETOPT_WORD;
		if (c == '?' || c == ':')
			return getopt_error(o, c, word);
		if (c != CLI_OPT_SOCKET && c != CLI_OPT_TIMEOUT && c != CLI_OPT_JSON &&
		    c != CLI_OPT_HELP)
			return c;
		if (apply_global(o, c))
			return CLI_GETOPT_ERROR;
	}
}
