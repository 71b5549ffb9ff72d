/* kiln-runtime create; see rt_command.h. */
#include "api/runtime/rt_command.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/runtime/rt_binds.h"
#include "api/runtime/rt_cgroup.h"
#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_pod.h"
#include "api/runtime/rt_rootfs.h"
#include "api/runtime/rt_shim.h"
#include "api/runtime/rt_shim_proto.h"
#include "api/runtime/rt_trace.h"
#include "lib/base/fd_io.h"
#include "lib/base/proc_stat.h"

/* root.path as an absolute directory (relative: to the bundle). */
static int rootfs_path(const char *bundle, const struct rt_config *cfg, char *out, struct err *e)
{
	char joined[RT_PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(joined, sizeof(joined), "%s/%s",
			     cfg->root_path[0] == '/' ? "" : bundle,
			     cfg->root_path) >= sizeof(joined))
		return err_set(e, ENAMETOOLONG, "root.path is too long");
	if (!realpath(joined, out) || stat(out, &st) < 0)
		return err_set(e, errno, "root.path %.200s: %s", joined, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return err_set(e, ENOTDIR, "root.path %.200s is not a directory", joined);
	return 0;
}

/* What create checks before it makes anything: runc's own refusals of
 * the flags against the config, then the config and its plan. */
static int create_checks(const struct rt_cmd *c, const struct rt_config *cfg, struct rt_plan *plan,
			 struct rt_pod *pod, struct err *e)
{
	struct rt_sizing size;
	char cg[RT_PATH_MAX];

	if (cfg->process.terminal && !c->console_socket)
		return err_set(e, EINVAL,
			       "process.terminal is true but no --console-socket is given: the "
			       "engine must pass one to receive the terminal");
	if (!cfg->process.terminal && c->console_socket)
		return err_set(e, EINVAL,
			       "--console-socket is given but process.terminal is false: there is "
			       "no terminal to send");
	if (rt_pod_decide(cfg->annotations, c->id, pod, e) < 0)
		return -EINVAL;
	if (pod->role == RT_POD_MEMBER && c->verb == RT_RESTORE)
		return err_set(e, EINVAL,
			       "restore: container \"%s\" is a pod's container: restore its "
			       "pod's sandbox instead (a pod is checkpointed whole, or not at all)",
			       c->id);
	if (rt_plan_sizing(cfg, &size, e) < 0 ||
	    (!c->g.cgroups_disabled &&
	     rt_plan_cgroup(cfg, c->id, c->g.systemd_cgroup, cg, sizeof(cg), e) < 0))
		return -EINVAL;
	return rt_plan_build(cfg, c->id, pod->role, plan, e);
}

/* A pod's further container: its sandbox's directory, open, once the
 * sandbox is a live pod sandbox whose VM can take it. */
static int pod_sandbox_open(int rootfd, const char *sid, const char *id, int *sbfd, int *sblock,
			    struct err *e)
{
	struct rt_state_rec sb;
	enum rt_status st;
	int pid, r;

	*sbfd = -1;
	r = rt_dir_open(rootfd, sid, sbfd, e);
	if (r == -ENOENT)
		return err_set(e, ENOENT,
			       "create: container \"%s\": its pod's sandbox \"%s\" does not exist: "
			       "create the sandbox container first",
			       id, sid);
	/* held until the member's files are in its VM: a delete of the
	 * sandbox meanwhile would sweep them from under it */
	if (!r)
		r = rt_dir_lock(*sbfd, sid, RT_LOCK_WAIT_MS, sblock, e);
	if (!r)
		r = rt_dir_read_state(*sbfd, sid, &sb, e);
	if (r < 0)
		return r;
	st = rt_dir_status(&sb, &pid);
	if (rt_pod_role(sb.annotations, sid) != RT_POD_SANDBOX)
		r = err_set(e, EINVAL,
			    "create: container \"%s\": \"%s\" is not a pod's sandbox (it was "
			    "created without the sandbox annotation), so it has no room for it",
			    id, sid);
	else if (st != RT_STATUS_CREATED && st != RT_STATUS_RUNNING)
		r = err_set(e, EINVAL,
			    "create: container \"%s\": its pod's sandbox \"%s\" is %s: its VM "
			    "must run",
			    id, sid, rt_status_name(st));
	rt_state_rec_free(&sb);
	return r;
}

/* The container's files on the host: its binds, and a pod's directory
 * (a sandbox) or slot in its sandbox's (a further container). */
static int files_prepare(const struct rt_cmd *c, int dirfd, int sbfd, const char *sandbox,
			 const char *rootfs, const struct rt_config *cfg,
			 const struct rt_plan *plan, struct err *e)
{
	int r;

	if (sbfd >= 0) {
		r = rt_binds_member(sbfd, c->id, rootfs, cfg->root_readonly, plan->binds,
				    plan->nbinds, e);
		if (!r && (r = rt_command_pod_graft(c, sandbox, sbfd, c->id, true, e)) < 0) {
			struct err ignored;

			rt_binds_member_release(sbfd, c->id, &ignored);
		}
	} else
		r = rt_binds_prepare(dirfd, plan->binds, plan->nbinds, e);
	if (!r && plan->pod_share)
		r = rt_binds_pod_dir(dirfd, e);
	return r ? r : rt_rootfs_mountpoints(rootfs, cfg, e);
}

/* The shim forked; the record names it at once (a delete while it boots
 * kills it rather than freeing what it uses under it); its ready line. */
static int shim_start(struct rt_shim_args *a, int rootfd, int lockfd, struct err *e)
{
	static char dir[RT_PATH_MAX];
	struct err ignored;
	int ready_r, r;
	pid_t pid;

	r = rt_command_shim_fork(a, lockfd, rootfd, dir, &pid, &ready_r, e);
	if (r < 0)
		return r;
	a->rec->shim.pid = pid;
	if (proc_start_time(pid, &a->rec->shim.start) == 0)
		rt_dir_write_state(a->dirfd, a->rec, &ignored);
	r = rt_command_shim_ready(ready_r, pid,
				  a->restore
					  ? "restore: the container's shim ended before the "
					    "container was restored (see vmm.log and the --log file)"
					  : "create: the container's shim ended before the container "
					    "was created (see vmm.log and the --log file)",
				  e);
	if (r < 0 && !a->sandbox) /* a pod's container's jail is its sandbox's */
		rt_jail_remove(a->jail, &ignored);
	return r;
}

static void record_init(struct rt_state_rec *r, const struct rt_cmd *c, const char *bundle,
			const char *rootfs, const struct rt_config *cfg)
{
	struct timespec now;

	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", c->id);
	snprintf(r->bundle, sizeof(r->bundle), "%s", bundle);
	snprintf(r->rootfs, sizeof(r->rootfs), "%s", rootfs);
	clock_gettime(CLOCK_REALTIME, &now);
	rt_log_time(r->created, &now, true);
	r->status = RT_STATUS_CREATING;
	r->annotations = cfg->annotations;
}

int rt_command_create(const struct rt_ctx *x, struct err *e)
{
	return rt_command_make(x, NULL, NULL, e);
}

int rt_command_make(const struct rt_ctx *x, const char *restore, const struct rt_state_rec *saved,
		    struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	char bundle[RT_PATH_MAX], rootfs[RT_PATH_MAX];
	struct rt_config cfg;
	struct rt_plan plan = { 0 };
	struct rt_state_rec rec = { .id_range = 0 };
	struct rt_pod pod = { RT_POD_NONE, "" };
	struct err ignored;
	int r, rootfd = -1, dirfd = -1, lockfd = -1, sbfd = -1, sblock = -1;

	if (geteuid() != 0)
		return err_set(e, EPERM,
			       "%s: kiln-runtime needs root (kiln-vmm's jail does): rootless "
			       "engines are not supported",
			       c->verb_name);
	if (!realpath(c->bundle, bundle))
		return err_set(e, errno, "--bundle %.200s: %s", c->bundle, strerror(errno));
	r = rt_command_read_config(bundle, &cfg, e);
	if (!r)
		r = create_checks(c, &cfg, &plan, &pod, e);
	if (!r)
		r = rootfs_path(bundle, &cfg, rootfs, e);
	if (!r)
		r = rt_dir_open_root(c->g.root, true, &rootfd, e);
	if (!r && pod.role == RT_POD_MEMBER)
		r = pod_sandbox_open(rootfd, pod.sandbox, c->id, &sbfd, &sblock, e);
	if (!r)
		r = rt_dir_make(rootfd, c->id, &dirfd, e);
	if (!r)
		r = rt_dir_lock(dirfd, c->id, RT_LOCK_WAIT_MS, &lockfd, e);
	if (!r) {
		record_init(&rec, c, bundle, rootfs, &cfg);
		if (sbfd >= 0) /* no VM of its own: no jail's ids */
			snprintf(rec.sandbox, sizeof(rec.sandbox), "%s", pod.sandbox);
		else
			r = rt_ids_take(rootfd, c->id, RT_IDS_SLOTS, &rec.id_range, e);
	}
	if (!r)
		r = rt_cgroup_make(c, &cfg, &rec, e);
	if (!r)
		r = rt_dir_write_state(dirfd, &rec, e);
	if (!r)
		r = files_prepare(c, dirfd, sbfd, pod.sandbox, rootfs, &cfg, &plan, e);
	rt_trace("create: prepared");
	if (!r) {
		static struct rt_shim_args a; /* pid_file: a path, too big for the stack */

		a = (struct rt_shim_args){ .cmd = c,
					   .cfg = &cfg,
					   .plan = &plan,
					   .proc = &cfg.process,
					   .rec = &rec,
					   .dirfd = dirfd,
					   .ready_fd = -1,
					   .log_fd = x->log_fd,
					   .restore = restore,
					   .restore_net = saved ? saved->net : NULL,
					   .restore_cid = !saved   ? NULL
						   : saved->cid[0] ? saved->cid
								   : saved->id,
					   .sandbox = sbfd >= 0 ? pod.sandbox : NULL };
		r = shim_start(&a, rootfd, lockfd, e);
	}
	/* A create that fails leaves nothing behind (runc's rule: the
	 * engine retries with the same ID): its binds first, which the
	 * directory's removal would not enter, and its cgroup. */
	if (r && dirfd >= 0) {
		rt_binds_release(dirfd, &ignored);
		rt_binds_pod_release(dirfd, &ignored);
		if (sbfd >= 0) {
			rt_command_pod_graft(c, pod.sandbox, sbfd, c->id, false, &ignored);
			rt_binds_member_release(sbfd, c->id, &ignored);
		}
		rt_cgroup_remove(&rec, &ignored);
		rt_dir_remove(rootfd, c->id, &ignored);
		if (rec.id_range)
			rt_ids_free(rootfd, rec.id_range, c->id, &ignored);
	}
	/* rec borrows cfg's annotations: only cfg frees them */
	if (sblock >= 0)
		close(sblock);
	if (sbfd >= 0)
		close(sbfd);
	rt_command_close(rootfd, dirfd, lockfd, NULL);
	rt_plan_free(&plan);
	rt_config_free(&cfg);
	return r;
}
