/*
 * fuzz_rt_cli: kiln-runtime's command line (api/runtime/rt_cli.c), as
 * any engine or user may type it.
 *
 * Input: the arguments after argv[0], separated by NUL bytes (at most 64).
 * Invariants: no crash; a failure is -EINVAL with a message; what is
 * accepted is in bounds: every string the command holds points into argv
 * (nothing allocated, nothing past the arguments), a command that names
 * a container holds a valid ID, the signal is 0..64, lists within their
 * bounds, every --env entry has NAME=, exec's and ps's arguments are the
 * tail of argv.
 */
#include <errno.h>

#include "api/runtime/rt_cli.h"
#include "api/runtime/rt_state.h"
#include "fuzz.h"

#define ARGS_MAX 64

static char *argv_[ARGS_MAX + 1];
static int argc_;

static bool in_argv(const char *s)
{
	for (int i = 0; i < argc_; i++)
		if (s >= argv_[i] && s <= argv_[i] + strlen(argv_[i]))
			return true;
	return false;
}

static void check(const struct rt_cmd *c)
{
	const char *const strs[] = {
		c->bundle, c->pid_file,         c->console_socket,    c->process,
		c->cwd,    c->image_path,       c->work_path,         c->id,
		c->g.log,  c->update.resources, c->update.cpuset_cpus
	};

	FUZZ_ASSERT(c->g.root && (in_argv(c->g.root) || !strcmp(c->g.root, RT_ROOT_DEFAULT)));
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		FUZZ_ASSERT(!strs[i] || in_argv(strs[i]) || strs[i] == c->bundle);
	FUZZ_ASSERT(in_argv(c->bundle) || !strcmp(c->bundle, "."));
	FUZZ_ASSERT(c->signal >= 0 && c->signal <= 64);
	FUZZ_ASSERT(c->nenv <= RT_CLI_ENV_MAX && c->ncaps <= RT_CLI_CAPS_MAX &&
		    c->ngids <= RT_CLI_GIDS_MAX && c->nignored <= RT_CLI_IGNORED_MAX);
	for (size_t i = 0; i < c->nenv; i++)
		FUZZ_ASSERT(in_argv(c->env[i]) && strchr(c->env[i], '=') && c->env[i][0] != '=');
	if (c->id)
		FUZZ_ASSERT(rt_id_check(c->id, NULL) == 0);
	if (c->nargs)
		FUZZ_ASSERT(c->args + c->nargs == (char *const *)argv_ + argc_);
	if (!c->help &&
	    (c->verb == RT_CREATE || c->verb == RT_KILL || c->verb == RT_EXEC ||
	     c->verb == RT_STATE || c->verb == RT_DELETE))
		FUZZ_ASSERT(c->id);
	if (c->verb == RT_EXEC && !c->help)
		FUZZ_ASSERT(!c->process != !c->nargs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rt_cmd c;
	struct err e = { { 0 } };
	char *buf = malloc(size + 1), *p = buf;
	int r;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv_[0] = "kiln-runtime";
	argc_ = 1;
	while (argc_ < ARGS_MAX && p <= buf + size) {
		argv_[argc_++] = p;
		p += strlen(p) + 1;
	}
	argv_[argc_] = NULL;
	r = rt_cli_parse(argc_, argv_, &c, &e);
	if (r == 0)
		check(&c);
	else
		FUZZ_ASSERT(r == -EINVAL && e.msg[0]);
	free(buf);
	return 0;
}
