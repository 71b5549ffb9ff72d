/* The kiln CLI's option scanner and argument parsers (cli_opts.h). */
#include "api/kiln/cli_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/text_clean.h"

enum { GOPT_SOCKET = 1, GOPT_TIMEOUT, GOPT_JSON, GOPT_HELP };

static const struct cli_optdef global_defs[] = {
	{ "socket", 0, true, GOPT_SOCKET },
	{ "request-timeout", 0, true, GOPT_TIMEOUT },
	{ "json", 0, false, GOPT_JSON },
	{ "help", 'h', false, GOPT_HELP },
	{ 0 },
};

int cli_timeout_parse(const char *v, const char *what, unsigned long *out, char *err, size_t errsz)
{
	uint64_t n;

	if (num_parse_u64(v, 10, 0, CLI_TIMEOUT_MAX, &n)) {
		snprintf(err, errsz, "%s '%s': expected whole seconds 0..%u (0: no limit)", what, CLI_ECHO(v),
			 CLI_TIMEOUT_MAX);
		return -1;
	}
	*out = (unsigned long)n;
	return 0;
}

long long cli_answer_ms(unsigned long timeout_s, long long wait_s)
{
	if (!timeout_s || wait_s < 0)
		return 0;
	return ((long long)timeout_s + wait_s) * 1000;
}

long long cli_wait_for_ms(unsigned long long timeout_ms, long long extra_s)
{
	if (!timeout_ms)
		return CLI_WAIT_UNBOUNDED;
	return (long long)((timeout_ms + 999) / 1000) + extra_s;
}

const char *cli_echo(char *buf, const char *s)
{
	size_t n = strlen(s);

	if (text_clean_term(buf, CLI_ECHO_MAX + 1, s, n) < n)
		strcat(buf, "...");
	return buf;
}

void cli_scan_init(struct cli_scan *s, int argc, char **argv, const struct cli_optdef *defs,
		   struct cli_globals *g)
{
	memset(s, 0, sizeof(*s));
	s->argc = argc;
	s->argv = argv;
	s->defs = defs;
	s->g = g;
}

static const struct cli_optdef *find_long(const struct cli_optdef *defs, const char *name, size_t n)
{
	for (; defs && defs->id; defs++)
		if (strlen(defs->name) == n && !strncmp(defs->name, name, n))
			return defs;
	return NULL;
}

static const struct cli_optdef *find_short(const struct cli_optdef *defs, char c)
{
	for (; defs && defs->id; defs++)
		if (defs->short_name && defs->short_name == c)
			return defs;
	return NULL;
}

static int apply_global(struct cli_scan *s, const struct cli_optdef *d)
{
	switch (d->id) {
	case GOPT_SOCKET:
		if (!*s->value) {
			snprintf(s->err, sizeof(s->err), "--socket: empty path");
			return -1;
		}
		s->g->socket = s->value;
		break;
	case GOPT_TIMEOUT:
		return cli_timeout_parse(s->value, "--request-timeout", &s->g->timeout_s, s->err, sizeof(s->err));
	case GOPT_JSON:
		s->g->json = true;
		break;
	case GOPT_HELP:
		/* Stops the scan like an error, so every command's usage path
		 * (cli_usage_error) prints the help instead of running. */
		s->g->help = true;
		s->err[0] = 0;
		return -1;
	}
	return 0;
}

int cli_scan_next(struct cli_scan *s)
{
	for (;;) {
		const struct cli_optdef *d;
		const char *arg, *eq = NULL;
		bool global = false;

		s->value = NULL;
		if (s->i >= s->argc)
			return CLI_SCAN_DONE;
		arg = s->argv[s->i++];
		if (!strcmp(arg, "--"))
			return CLI_SCAN_REST;
		if (arg[0] != '-' || !arg[1]) {
			s->value = arg;
			return CLI_SCAN_POSITIONAL;
		}
		if (arg[1] == '-') {
			const char *name = arg + 2;
			size_t n;

			eq = strchr(name, '=');
			n = eq ? (size_t)(eq - name) : strlen(name);
			d = find_long(s->defs, name, n);
			if (!d && (d = find_long(global_defs, name, n)))
				global = true;
		} else {
			/* Short options stand alone ("-i", "-p"): no bundling, so
			 * "-it" is an error rather than a guess. */
			d = arg[2] ? NULL : find_short(s->defs, arg[1]);
			if (!d && !arg[2] && (d = find_short(global_defs, arg[1])))
				global = true;
		}
		if (!d) {
			snprintf(s->err, sizeof(s->err), "unknown option '%s'", CLI_ECHO(arg));
			return CLI_SCAN_ERROR;
		}
		if (d->has_arg) {
			if (eq) {
				s->value = eq + 1;
			} else if (s->i < s->argc) {
				s->value = s->argv[s->i++];
			} else {
				snprintf(s->err, sizeof(s->err), "option '%s' needs a value", CLI_ECHO(arg));
				return CLI_SCAN_ERROR;
			}
		} else if (eq) {
			snprintf(s->err, sizeof(s->err), "option '--%s' takes no value", d->name);
			return CLI_SCAN_ERROR;
		}
		if (!global)
			return d->id;
		if (apply_global(s, d))
			return CLI_SCAN_ERROR;
	}
}

int cli_put_kv(json_t *obj, const char *arg, bool allow_unset, const char *what, char *err, size_t errsz)
{
	const char *eq = strchr(arg, '=');
	char *key;
	int rc;

	if (eq == arg || !*arg) {
		snprintf(err, errsz, "%s '%s': empty key (expected KEY=VALUE)", what, CLI_ECHO(arg));
		return -EINVAL;
	}
	if (!eq && !allow_unset) {
		snprintf(err, errsz, "%s '%s': expected KEY=VALUE", what, CLI_ECHO(arg));
		return -EINVAL;
	}
	key = strndup(arg, eq ? (size_t)(eq - arg) : strlen(arg));
	if (!key)
		return -ENOMEM;
	rc = json_object_set_new(obj, key, eq ? json_string(eq + 1) : json_null());
	if (rc)
		snprintf(err, errsz, "%s '%s': not valid UTF-8", what, CLI_ECHO(arg));
	free(key);
	return rc ? -EINVAL : 0;
}

int cli_put_share(json_t *arr, const char *arg, char *err, size_t errsz)
{
	const char *c1 = strchr(arg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	bool ro = false;
	json_t *share;
	char *host, *guest;

	if (!c1 || c1 == arg || !c1[1] || c2 == c1 + 1) {
		snprintf(err, errsz, "--share '%s': expected HOST:GUEST[:ro]", CLI_ECHO(arg));
		return -EINVAL;
	}
	if (c2) {
		if (!strcmp(c2 + 1, "ro")) {
			ro = true;
		} else if (strcmp(c2 + 1, "rw")) {
			snprintf(err, errsz, "--share '%s': the third part must be 'ro' or 'rw' (paths cannot hold ':')",
				 CLI_ECHO(arg));
			return -EINVAL;
		}
	}
	host = strndup(arg, (size_t)(c1 - arg));
	guest = c2 ? strndup(c1 + 1, (size_t)(c2 - c1 - 1)) : strdup(c1 + 1);
	share = json_pack("{s:s?, s:s?, s:b}", "host_path", host, "guest_path", guest, "read_only", ro);
	free(host);
	free(guest);
	if (!share || json_object_size(share) != 3) {
		json_decref(share);
		snprintf(err, errsz, "--share '%s': not valid UTF-8", CLI_ECHO(arg));
		return -EINVAL;
	}
	return json_array_append_new(arr, share) ? -ENOMEM : 0;
}
