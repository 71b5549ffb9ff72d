/*
 * kiln secrets set|ls|rm (docs/api.md, "Secrets"): named secrets for the
 * egress proxy's header injection. A value is read from stdin or
 * --value-file, never from the command line: every user of the host can
 * read a process's argv in /proc/PID/cmdline (and shells keep history).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kiln/cli_cmds.h"

/* docs/api.md: a value is at most 16 KiB; one more byte says "too long"
 * and two more leave room for a trailing CRLF. */
#define SECRET_VALUE_MAX (16 * 1024)
#define SECRET_READ_MAX (SECRET_VALUE_MAX + 3)

enum { S_VALUE_FILE = CLI_OPT_LONG };

static const char usage[] = "usage: kiln secrets set NAME [--value-file FILE] | ls | rm NAME";

/* A name as kilnd takes one (it checks again): also what a path segment keeps. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* The value from fd into buf (SECRET_READ_MAX): its length, or -1 with f. */
static ssize_t value_read(int fd, const char *from, char *buf, struct cli_fail *f)
{
	ssize_t got = fd_io_read_full(fd, buf, SECRET_READ_MAX);
	size_t n;

	if (got < 0)
		return cli_fail_set(f, CLI_EXIT_LOCAL, NULL, "reading %s: %s", from,
				    strerror((int)-got));
	n = (size_t)got;
	/* one trailing newline, as echo and editors write: not the value's */
	if (n && buf[n - 1] == '\n')
		n--;
	if (n && buf[n - 1] == '\r')
		n--;
	if (n > SECRET_VALUE_MAX)
		return cli_fail_set(f, CLI_EXIT_USAGE, NULL,
				    "%s: more than %d bytes, the longest value kilnd keeps", from,
				    SECRET_VALUE_MAX);
	if (n == 0)
		return cli_fail_set(f, CLI_EXIT_USAGE, NULL, "%s: empty; give the value there",
				    from);
	if (memchr(buf, '\0', n))
		return cli_fail_set(f, CLI_EXIT_USAGE, NULL,
				    "%s: the value holds a NUL byte, which a header cannot", from);
	return (ssize_t)n;
}

static int secrets_set(struct cli_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "value-file", required_argument, NULL, S_VALUE_FILE }, CLI_GLOBAL_OPTIONS
	};
	const char *name = NULL, *file = NULL, *from = "stdin";
	char path[128], msg[ERR_MSG_MAX], *buf;
	json_t *body = NULL, *v = NULL;
	struct cli_getopt s;
	struct cli_fail f;
	struct err e;
	int opt, fd = 0, rc;
	ssize_t n;

	cli_getopt_init(&s, argc, argv, opts, &c->g, &e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return cli_usage_error(c, e.msg);
		if (opt == S_VALUE_FILE)
			file = s.value;
		else if (opt == CLI_GETOPT_WORD && !name)
			name = s.value;
		else {
			/* a second word is most likely the value itself: not echoed */
			return cli_usage_error(
				c,
				"give only the NAME: the value comes from stdin or --value-file, "
				"never the command line (any user can read it in /proc)");
		}
	}
	if (!name)
		return cli_usage_error(c, usage);
	if (!name_ok(name)) {
		snprintf(msg, sizeof(msg), "'%s': a name is 1..64 of a-z, 0-9, '_' and '-'",
			 CLI_ECHO(name));
		return cli_usage_error(c, msg);
	}
	if (file && strcmp(file, "-")) {
		from = file;
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "--value-file '%s': %s",
				     CLI_ECHO(file), strerror(errno));
			return cli_report(c, "secrets set", &f);
		}
	} else if (isatty(0)) {
		return cli_usage_error(
			c,
			"stdin is a terminal, which would show the value as it is typed: give "
			"--value-file FILE, or pipe it (read -rs T && printf %s \"$T\" | kiln "
			"secrets set NAME)");
	}
	if (!(buf = malloc(SECRET_READ_MAX))) {
		cli_fail_set(&f, CLI_EXIT_API, NULL, "out of memory");
		return cli_report(c, "secrets set", &f);
	}
	n = value_read(fd, from, buf, &f);
	if (fd > 0)
		close(fd);
	if (n >= 0 && !(body = json_pack("{s:s%}", "value", buf, (size_t)n)))
		cli_fail_set(&f, CLI_EXIT_USAGE, NULL, "%s: the value is not valid UTF-8", from);
	explicit_bzero(buf, SECRET_READ_MAX);
	free(buf);
	if (!body)
		return cli_report(c, "secrets set", &f);
	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	rc = cli_call_json(c, "secrets set", "PUT", path, body, &v);
	json_decref(body);
	if (!rc && c->g.json)
		cli_print_json(v, false);
	else if (!rc)
		puts(name);
	json_decref(v);
	return rc;
}

/* The list without --json: NAME OWNER UPDATED, one a line. */
static int show_secrets(FILE *out, const json_t *v)
{
	json_t *x;
	size_t i;

	if (!json_is_array(json_object_get(v, "secrets")))
		return -1;
	json_array_foreach(json_object_get(v, "secrets"), i, x)
	{
		const char *name = json_string_value(json_object_get(x, "name"));

		if (!name)
			return -1;
		fprintf(out, "%s\t%lld\t%s\n", name,
			json_integer_value(json_object_get(x, "owner")),
			json_string_value(json_object_get(x, "updated")) ?: "-");
	}
	return 0;
}

int cli_cmd_secrets(struct cli_ctx *c, int argc, char **argv)
{
	const char *name = NULL;
	char path[128];
	json_t *v = NULL;
	int rc;

	if (argc < 2)
		return cli_usage_error(c, usage);
	argc--;
	argv++;
	if (!strcmp(argv[0], "set"))
		return secrets_set(c, argc, argv);
	if (!strcmp(argv[0], "ls") || !strcmp(argv[0], "list")) {
		if ((rc = cli_no_args(c, argc, argv)))
			return rc;
		return cli_call_show(c, "secrets ls", "GET", "/v1/secrets", NULL, show_secrets);
	}
	if (!strcmp(argv[0], "rm")) {
		if ((rc = cli_one_word(c, argc, argv, "give one secret name", &name)))
			return rc;
		if (!name || !name_ok(name))
			return cli_usage_error(c,
					       "give one secret name (1..64 of a-z, 0-9, '_', '-')");
		snprintf(path, sizeof(path), "/v1/secrets/%s", name);
		rc = cli_call_json(c, "secrets rm", "DELETE", path, NULL, &v);
		if (!rc && !c->g.json)
			puts(name); /* 204, no body */
		json_decref(v);
		return rc;
	}
	return cli_usage_error(c, usage);
}
