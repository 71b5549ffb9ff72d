/*
 * kiln-runtime: an OCI runtime with runc's command line that runs each
 * container in a kiln microVM (docs/oci-runtime.md). This file is main:
 * the command table, version and help, exit statuses (0, or 1 on any
 * error, as runc). The commands are rt_command*.c; the decisions live in
 * the modules: rt_cli (argv), rt_config (config.json), rt_plan (the VM),
 * rt_state and rt_dir (the state directory), rt_log (--log lines).
 */
#include <stdio.h>

#include "api/runtime/rt_command.h"
#include "api/runtime/rt_trace.h"
#include "lib/base/version.h"

typedef int command_fn(const struct rt_ctx *x, struct err *e);

static const struct {
	enum rt_verb verb;
	command_fn *run;
} commands[] = {
	{ RT_CREATE, rt_command_create },
	{ RT_START, rt_command_start },
	{ RT_STATE, rt_command_state },
	{ RT_KILL, rt_command_kill },
	{ RT_DELETE, rt_command_delete },
	{ RT_LIST, rt_command_list },
	{ RT_FEATURES, rt_command_features },
	{ RT_SPEC, rt_command_spec },
	{ RT_PS, rt_command_ps },
	{ RT_UPDATE, rt_command_update },
	{ RT_EXEC, rt_command_exec },
	{ RT_PAUSE, rt_command_pause },
	{ RT_RESUME, rt_command_resume },
	{ RT_CHECKPOINT, rt_command_checkpoint },
	{ RT_RESTORE, rt_command_restore },
};

static int run(const struct rt_ctx *x, struct err *e)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].verb == x->cmd->verb)
			return commands[i].run(x, e);
	return rt_command_not_yet(x->cmd, e);
}

int main(int argc, char **argv)
{
	static struct rt_cmd c;
	int status = 0;
	struct rt_ctx x = { &c, -1, &status };
	struct err e = { { 0 } };

	if (rt_cli_parse(argc, argv, &c, &e) < 0) {
		rt_command_log_open(&x);
		rt_command_report(&x, RT_LOG_ERROR, e.msg);
		return 1;
	}
	if (c.g.version && c.verb == RT_NONE) {
		printf("kiln-runtime version %s\nspec: %s\n", KILN_VERSION, RT_OCI_VERSION);
		return 0;
	}
	if (c.g.help) {
		if (c.verb == RT_NONE)
			printf("%s\n", rt_cli_usage(c.verb));
		else
			printf("usage: kiln-runtime %s\n", rt_cli_usage(c.verb));
		return 0;
	}
	rt_command_log_open(&x);
	rt_trace("%s %s: begins", c.verb_name, c.id ? c.id : "");
	for (size_t i = 0; i < c.nignored; i++) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%s: --%s is accepted and ignored", c.verb_name,
			 c.ignored[i]);
		rt_command_report(&x, RT_LOG_DEBUG, msg);
	}
	if (run(&x, &e) < 0) {
		rt_command_report(&x, RT_LOG_ERROR, e.msg);
		rt_trace("%s: failed", c.verb_name);
		return 1;
	}
	rt_trace("%s: ends", c.verb_name);
	return status;
}
