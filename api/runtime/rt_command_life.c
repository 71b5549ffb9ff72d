/* kiln-runtime delete, kill, start, update, pause and resume: what
 * changes a container; see rt_command.h. */
#include "api/runtime/rt_command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"
#include "api/runtime/rt_binds.h"
#include "api/runtime/rt_cgroup.h"
#include "api/runtime/rt_hooks.h"
#include "api/runtime/rt_net.h"
#include "lib/base/fd_io.h"
#include "api/runtime/rt_shim.h"
#include "api/runtime/rt_shim_sock.h"
#include "api/runtime/rt_trace.h"
#include "lib/cgroup/cgroup_file.h"
#include "vmm/control/control_client.h"

#define SHIM_KILL_WAIT_MS 2000 /* delete --force: the shim's end after SIGKILL */
#define RT_CONTROL_MS 10000    /* pause, resume: kiln-vmm answers at once */

/* SIGKILL a process of the record (its pidfd pins the process, the
 * start time checked after it is open) and wait for its end. */
static int kill_proc(const struct rt_proc_id *p, const char *id, const char *what, struct err *e)
{
	int fd = p->pid > 0 ? (int)syscall(SYS_pidfd_open, p->pid, 0) : -1;
	struct pollfd q;

	if (p->pid <= 0)
		return 0;
	if (fd < 0)
		return errno == ESRCH ? 0
				      : err_set(e, errno, "container \"%s\": its %s: %s", id, what,
						strerror(errno));
	if (!rt_proc_alive(p->pid, p->start)) {
		close(fd); /* another process took the pid: not ours to kill */
		return 0;
	}
	if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH) {
		close(fd);
		return err_set(e, errno, "container \"%s\": killing its %s: %s", id, what,
			       strerror(errno));
	}
	q = (struct pollfd){ .fd = fd, .events = POLLIN };
	poll(&q, 1, SHIM_KILL_WAIT_MS);
	close(fd);
	return 0;
}

/* The shim and its VM. kiln-vmm does not die with the shim: the jail's
 * change of uid clears its parent-death signal, so it is killed by its
 * own record too (a shim the OOM killer took leaves its VM running). */
static int kill_container(const struct rt_state_rec *rec, struct err *e)
{
	int r = kill_proc(&rec->shim, rec->id, "shim", e);

	return r ? r : kill_proc(&rec->vmm, rec->id, "kiln-vmm", e);
}

/* poststop hooks once the container is gone (runtime-spec: a failure
 * is logged as a warning, delete still succeeds). */
static void run_poststop(const struct rt_ctx *x, const struct rt_state_rec *rec)
{
	struct rt_state_view v = { rec, RT_STATUS_STOPPED, 0 };
	struct rt_config cfg;
	struct err e;
	char *state = NULL;

	if (!rec->bundle[0] || rt_command_read_config(rec->bundle, &cfg, &e) < 0) {
		if (rec->bundle[0])
			rt_command_report(x, RT_LOG_WARNING, e.msg);
		return;
	}
	if (cfg.poststop.n &&
	    (rt_state_render_hook(&v, &state, &e) < 0 ||
	     rt_hooks_run(&cfg.poststop, "poststop", state, -1, &e) < 0))
		rt_command_report(x, RT_LOG_WARNING, e.msg);
	free(state);
	rt_config_free(&cfg);
}

/* A pod's further container: its slot in its sandbox's directory (a
 * sandbox deleted already took it). */
static int member_release(const struct rt_cmd *c, int rootfd, const struct rt_state_rec *rec,
			  struct err *e)
{
	int sbfd, lockfd = -1, r = rt_dir_open(rootfd, rec->sandbox, &sbfd, e);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	/* the sandbox's lock: its own delete sweeps the slots too */
	r = rt_dir_lock(sbfd, rec->sandbox, RT_LOCK_WAIT_MS, &lockfd, e);
	if (!r) {
		rt_command_pod_forget(c, rec->sandbox, rec->cid[0] ? rec->cid : rec->id);
		r = rt_command_pod_graft(c, rec->sandbox, sbfd, rec->id, false, e);
	}
	if (!r)
		r = rt_binds_member_release(sbfd, rec->id, e);
	if (lockfd >= 0)
		close(lockfd);
	close(sbfd);
	return r;
}

int rt_command_delete(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	char jail[RT_JAIL_PATH_MAX];
	struct rt_state_rec rec;
	int rootfd, dirfd, lockfd, pid, r;
	enum rt_status st;

	r = rt_command_open(c, &rootfd, &dirfd, &lockfd, &rec, e);
	if (r == -ENOENT && dirfd >= 0)
		r = 0; /* a create that died before its record: remove what it left */
	st = r ? RT_STATUS_STOPPED : rt_dir_status(&rec, &pid);
	if (!r && (st == RT_STATUS_RUNNING || st == RT_STATUS_PAUSED) && !c->force)
		r = err_set(e, EBUSY,
			    "cannot delete container %s that is not stopped: %s (use --force)",
			    c->id, rt_status_name(st));
	if (!r)
		r = kill_container(&rec, e); /* a stopped one's VM may outlive its shim */
	rt_trace("delete: killed");
	if (!r && rec.tap[0])
		rt_net_sweep(rec.netns, rec.tap); /* a killed shim's TAP */
	if (!r)
		r = rt_cgroup_remove(&rec, e);
	if (!r)
		r = rt_binds_release(dirfd, e);
	if (!r)
		r = rt_binds_pod_release(dirfd, e); /* a sandbox's: its pod's slots */
	if (!r && rec.sandbox[0])
		r = member_release(c, rootfd, &rec, e);
	if (!r)
		r = rt_command_jail(c, jail, e);
	if (!r)
		r = rt_jail_remove(jail, e);
	if (!r)
		r = rt_dir_remove(rootfd, c->id, e);
	if (!r && rec.id_range)
		r = rt_ids_free(rootfd, rec.id_range, c->id, e);
	rt_trace("delete: removed");
	if (!r)
		run_poststop(x, &rec);
	rt_command_close(rootfd, dirfd, lockfd, &rec);
	return r;
}

/* poststart hooks (a failure is a warning, the container runs on). */
static void run_poststart(const struct rt_ctx *x, const struct rt_state_rec *rec)
{
	struct rt_state_view v = { rec, RT_STATUS_RUNNING, rec->shim.pid };
	struct rt_config cfg;
	struct err e;
	char *state = NULL;

	if (rt_command_read_config(rec->bundle, &cfg, &e) < 0) {
		rt_command_report(x, RT_LOG_WARNING, e.msg);
		return;
	}
	if (cfg.poststart.n &&
	    (rt_state_render_hook(&v, &state, &e) < 0 ||
	     rt_hooks_run(&cfg.poststart, "poststart", state, -1, &e) < 0))
		rt_command_report(x, RT_LOG_WARNING, e.msg);
	free(state);
	rt_config_free(&cfg);
}

int rt_command_kill(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	struct rt_shim_req req = { .op = RT_SHIM_KILL, .signo = c->signal, .all = c->all };
	struct rt_held h;
	int r = rt_command_hold(c, &h, e);

	if (!r && h.st == RT_STATUS_STOPPED)
		r = err_set(e, ESRCH, "container not running");
	if (!r) {
		r = rt_shim_sock_call(h.dirfd, &req, RT_SHIM_CALL_MS, e);
		/* KILL must work on a shim that does not answer (-EIO is its
		 * answer): the shim and its VM go, the container with them */
		if (r < 0 && r != -EIO && c->signal == SIGKILL && !kill_container(&h.rec, e))
			r = 0;
	}
	rt_command_release(&h);
	return r;
}

int rt_command_start(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	struct rt_shim_req req = { .op = RT_SHIM_START };
	struct rt_held h;
	int r = rt_command_hold(c, &h, e);

	if (!r && h.st == RT_STATUS_STOPPED)
		r = err_set(e, EINVAL, "cannot start a container that has stopped");
	else if (!r && h.st != RT_STATUS_CREATED)
		r = err_set(e, EINVAL, "cannot start an already running container");
	if (!r)
		r = rt_shim_sock_call(h.dirfd, &req, RT_SHIM_CALL_MS, e);
	if (!r) {
		h.rec.status = RT_STATUS_RUNNING;
		r = rt_dir_write_state(h.dirfd, &h.rec, e);
	}
	if (!r)
		run_poststart(x, &h.rec);
	rt_command_release(&h);
	return r;
}

/* update's --resources, a file or "-" (stdin, as containerd's shim
 * passes it). */
static int read_resources(const char *path, struct rt_resources *r, json_t **doc, struct err *e)
{
	char *buf = NULL;
	size_t n = 0;
	int dirfd = AT_FDCWD, ret;

	*doc = NULL;
	if (strcmp(path, "-") == 0) {
		buf = malloc(RT_CONFIG_FILE_MAX + 1);
		ssize_t k = buf ? fd_io_read_full(0, buf, RT_CONFIG_FILE_MAX + 1) : -ENOMEM;

		if (k < 0 || k > RT_CONFIG_FILE_MAX) {
			free(buf);
			return err_set(e, k < 0 ? (int)-k : EFBIG,
				       "update --resources -: stdin unreadable or over %u bytes",
				       RT_CONFIG_FILE_MAX);
		}
		n = (size_t)k;
	} else {
		ret = rt_file_read(dirfd, path, true, RT_CONFIG_FILE_MAX, "update --resources",
				   &buf, &n, e);
		if (ret < 0)
			return ret;
	}
	ret = rt_resources_parse(buf, n, r, doc, e);
	free(buf);
	return ret;
}

/* --resources (a file or stdin), then runc's per-field flags over it. */
static int update_resources(const struct rt_update *u, struct rt_resources *res, json_t **doc,
			    struct err *e)
{
	int r;

	*res = (struct rt_resources){ .memory_limit = -1, .cpu_quota = -1, .pids_limit = -1 };
	*doc = NULL;
	if (!u->resources && !u->has_memory && !u->has_cpu_quota && !u->has_cpu_period &&
	    !u->has_pids && !u->cpuset_cpus)
		return err_set(e, EINVAL,
			       "update: nothing to update: give --resources FILE (or -) or a "
			       "flag such as --cpu-quota");
	if (u->resources && (r = read_resources(u->resources, res, doc, e)) < 0)
		return r;
	if (u->has_memory)
		res->memory_limit = u->memory;
	if (u->has_cpu_quota) {
		res->cpu_quota = u->cpu_quota;
		res->cpu_quota_given = true;
	}
	if (u->has_cpu_period)
		res->cpu_period = u->cpu_period;
	if (u->has_pids)
		res->pids_limit = u->pids_limit;
	if (u->cpuset_cpus)
		res->cpuset_cpus = u->cpuset_cpus;
	return 0;
}

/* The new limits against the VM's boot sizing (its bundle's), into the
 * container's host cgroup. */
/* pids.limit: the container's guest cgroup (the agent's ctr_update). */
static int update_pids(const struct rt_cmd *c, const struct rt_held *h, int64_t limit,
		       struct err *e)
{
	char jail[RT_JAIL_PATH_MAX], vsock[RT_JAIL_PATH_MAX + 8];
	struct agent_client ac;
	struct agent_client_err ae;
	int r = rt_command_jail(c, jail, e);

	if (r < 0)
		return r;
	snprintf(vsock, sizeof(vsock), "%s/vsock", jail);
	if (agent_client_init(&ac, vsock) < 0)
		return err_set(e, ENAMETOOLONG, "update: the vsock socket's path is too long");
	ac.timeout_ms = RT_CONTROL_MS;
	if (agent_client_ctr_update(&ac, h->rec.cid[0] ? h->rec.cid : h->rec.id, (uint64_t)limit,
				    &ae) < 0)
		return err_set(e, ae.errnum ? ae.errnum : EIO, "update: pids.limit: %s", ae.msg);
	return 0;
}

static int update_apply(const struct rt_cmd *c, const struct rt_held *h,
			const struct rt_resources *res, struct err *e)
{
	char cpu_max[RT_CPU_MAX_LEN], now[RT_CPU_MAX_LEN];
	const char *cg = h->rec.cgroup;
	struct rt_sizing boot;
	struct rt_config cfg;
	int r = rt_command_read_config(h->rec.bundle, &cfg, e);

	if (!r)
		r = rt_plan_sizing(&cfg, &boot, e);
	rt_config_free(&cfg);
	if (!r)
		r = rt_plan_update(&boot, res,
				   cg[0] && !cgroup_file_read(cg, "cpu.max", now, sizeof(now))
					   ? now
					   : NULL,
				   cpu_max, e);
	if (r >= 0 && res->pids_limit > 0 && update_pids(c, h, res->pids_limit, e) < 0)
		return -EIO;
	if (r <= 0)
		return r;
	if (!cg[0])
		return err_set(e, EINVAL,
			       "update: container %s has no cgroup of kiln-runtime's "
			       "(--cgroup-manager disabled): its limits are the engine's",
			       h->rec.id);
	r = cgroup_file_write(cg, "cpu.max", cpu_max);
	return r < 0 ? err_set(e, -r, "update: %s/cpu.max: %s", cg, strerror(-r)) : 0;
}

int rt_command_update(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	struct rt_resources res;
	json_t *doc = NULL;
	struct rt_held h;
	int r = rt_command_hold(c, &h, e);

	if (!r && h.st == RT_STATUS_STOPPED)
		r = err_set(e, ESRCH, "container not running");
	if (!r)
		r = rt_command_own_vm(c, &h, e);
	if (!r)
		r = update_resources(&c->update, &res, &doc, e);
	if (!r)
		r = update_apply(c, &h, &res, e);
	json_decref(doc);
	rt_command_release(&h);
	return r;
}

/* pause and resume: every vCPU of the container's VM stops (or runs
 * again) through kiln-vmm's control socket; the record says paused. */
static int pause_resume(const struct rt_ctx *x, bool pause, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	struct control_cmd cmd = { .op = pause ? CTL_PAUSE : CTL_RESUME };
	struct control_reply rep;
	char jail[RT_JAIL_PATH_MAX], path[RT_JAIL_PATH_MAX + 16];
	struct rt_held h;
	int r = rt_command_hold(c, &h, e);

	if (!r && pause && h.st != RT_STATUS_RUNNING)
		r = err_set(e, EINVAL, "container %s is not running: %s", c->id,
			    rt_status_name(h.st));
	else if (!r && !pause && h.st != RT_STATUS_PAUSED)
		r = err_set(e, EINVAL, "container %s is not paused: %s", c->id,
			    rt_status_name(h.st));
	if (!r)
		r = rt_command_own_vm(c, &h, e);
	/* beneath the state directory's descriptor: a long --root never
	 * meets sun_path's limit */
	if (!r)
		r = rt_command_jail(c, jail, e);
	if (!r) {
		snprintf(path, sizeof(path), "%s/control", jail);
		r = control_client_run(path, &cmd, RT_CONTROL_MS, &rep, e);
	}
	if (!r) {
		h.rec.status = pause ? RT_STATUS_PAUSED : RT_STATUS_RUNNING;
		r = rt_dir_write_state(h.dirfd, &h.rec, e);
	}
	rt_command_release(&h);
	return r;
}

int rt_command_pause(const struct rt_ctx *x, struct err *e)
{
	return pause_resume(x, true, e);
}

int rt_command_resume(const struct rt_ctx *x, struct err *e)
{
	return pause_resume(x, false, e);
}
