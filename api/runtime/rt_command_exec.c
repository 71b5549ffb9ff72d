/* kiln-runtime exec: a further process in a running container, through
 * an exec shim (rt_shim.h); see rt_command.h. */
#include "api/runtime/rt_command.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_shim.h"
#include "api/runtime/rt_shim_proto.h"
#include "lib/base/fd_io.h"

#define EXEC_ENV_MAX (RT_CONFIG_LIST_MAX + RT_CLI_ENV_MAX)

/* exec --process FILE: checked as config.json's process. */
static int read_process_file(const char *path, struct rt_process *p, json_t **doc, struct err *e)
{
	char *buf;
	size_t n;
	int r = rt_file_read(AT_FDCWD, path, true, RT_CONFIG_FILE_MAX, "exec --process", &buf, &n,
			     e);

	*doc = NULL;
	memset(p, 0, sizeof(*p));
	if (r < 0)
		return r;
	r = rt_process_parse(buf, n, p, doc, e);
	free(buf);
	return r;
}

/* exec --cap NAME (runc's): added to the bounding, effective and
 * permitted sets (a container given no capabilities keeps the uid's:
 * --cap then changes nothing). */
static int add_caps(const struct rt_cmd *c, struct agent_ctr_privs *pv, struct err *e)
{
	for (size_t i = 0; i < c->ncaps; i++) {
		int cap = agent_cap_parse(c->caps[i]);

		if (cap < 0)
			return err_set(e, EINVAL,
				       "exec --cap %.40s: not a capability the guest kernel has "
				       "(CAP_CHOWN .. CAP_CHECKPOINT_RESTORE)",
				       c->caps[i]);
		if (pv->has_caps)
			for (int s = AGENT_CAP_BOUNDING; s <= AGENT_CAP_PERMITTED; s++)
				pv->caps[s] |= 1ull << cap;
	}
	return 0;
}

/* exec ID CMD... (runc's form): the container's own environment and
 * working directory, then the flags' (-e adds to the environment, --cwd,
 * -u, -g, -t replace). env[EXEC_ENV_MAX] holds the environment. */
static int process_from_flags(const struct rt_cmd *c, const struct rt_process *init,
			      struct rt_process *p, const char **env, struct err *e)
{
	size_t n = 0;

	if (!c->nargs)
		return err_set(e, EINVAL, "exec: no command: give one after the ID, or --process");
	memset(p, 0, sizeof(*p));
	p->args = (const char **)c->args;
	p->nargs = c->nargs;
	for (size_t i = 0; i < init->nenv; i++)
		env[n++] = init->env[i];
	for (size_t i = 0; i < c->nenv; i++)
		env[n++] = c->env[i];
	p->env = env;
	p->nenv = n;
	p->cwd = c->cwd ? c->cwd : init->cwd;
	if (p->cwd[0] != '/')
		return err_set(e, EINVAL, "exec --cwd %.200s: want an absolute path", p->cwd);
	p->uid = c->has_user ? c->uid : init->uid;
	p->gid = c->has_user ? c->gid : init->gid;
	p->gids = c->ngids ? (uint32_t *)c->gids : NULL;
	p->ngids = c->ngids;
	p->terminal = c->tty;
	/* runc's: the container's limits, capabilities and OOM score, --cap
	 * adding to them, --no-new-privs setting it. */
	p->privs = init->privs;
	p->privs.no_new_privileges |= c->no_new_privs;
	return add_caps(c, &p->privs, e);
}

/* The exec shim forked (the container's lock is released after it:
 * an exec may run for long) and its ready line. */
static int exec_fork(struct rt_held *h, struct rt_shim_args *a, pid_t *pid, struct err *e)
{
	static char dir[RT_PATH_MAX];
	int ready_r, r;

	a->dirfd = h->dirfd;
	r = rt_command_shim_fork(a, h->lockfd, h->rootfd, dir, pid, &ready_r, e);
	return r < 0
		? r
		: rt_command_shim_ready(ready_r, *pid,
					"exec: the exec's shim ended before the process ran", e);
}

/* exec without --detach: runc waits and exits as the process did. */
static void exec_wait(const struct rt_ctx *x, pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*x->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int rt_command_exec(const struct rt_ctx *x, struct err *e)
{
	static const char *env[EXEC_ENV_MAX];
	static struct rt_shim_args a;
	const struct rt_cmd *c = x->cmd;
	struct rt_process p = { 0 };
	struct rt_config cfg;
	bool have_cfg = false;
	json_t *doc = NULL;
	struct rt_held h;
	pid_t pid = -1;
	int r = rt_command_hold(c, &h, e);

	if (!r && h.st == RT_STATUS_STOPPED)
		r = err_set(e, EINVAL, "cannot exec in a stopped container");
	else if (!r && h.st == RT_STATUS_PAUSED)
		r = err_set(e, EINVAL, "cannot exec in a paused container");
	else if (!r && h.st != RT_STATUS_RUNNING)
		r = err_set(e, EINVAL, "cannot exec in a container that is not running: %s",
			    rt_status_name(h.st));
	if (!r && c->process) {
		r = read_process_file(c->process, &p, &doc, e);
	} else if (!r) {
		r = rt_command_read_config(h.rec.bundle, &cfg, e);
		have_cfg = !r;
		if (!r)
			r = process_from_flags(c, &cfg.process, &p, env, e);
	}
	if (!r && p.terminal && !c->console_socket)
		r = err_set(e, EINVAL, "exec: a terminal needs --console-socket");
	if (!r) {
		/* a restored container's guest ID is its checkpoint's */
		a = (struct rt_shim_args){ .cmd = c,
					   .proc = &p,
					   .log_fd = x->log_fd,
					   .exec_process = rt_plan_process(&p),
					   .restore_cid = h.rec.cid[0] ? h.rec.cid : NULL,
					   .sandbox = h.rec.sandbox[0] ? h.rec.sandbox : NULL };
		r = a.exec_process ? exec_fork(&h, &a, &pid, e)
				   : err_set(e, ENOMEM, "exec: out of memory");
	}
	json_decref(a.exec_process);
	rt_command_release(&h);
	if (!r && !c->detach)
		exec_wait(x, pid);
	if (c->process)
		rt_process_free(&p); /* from flags, p borrows c's and cfg's arrays */
	json_decref(doc);
	if (have_cfg)
		rt_config_free(&cfg);
	return r;
}
