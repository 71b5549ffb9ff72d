/* kiln-runtime checkpoint and restore; see rt_command.h and rt_ckpt.h. */
#include "api/runtime/rt_command.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/runtime/rt_ckpt.h"
#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_pod.h"
#include "api/runtime/rt_shim_sock.h"

/* Without --leave-running the container ends as runc's does after its
 * dump: killed (the engine then has it stopped and checkpointed). */
static int stop_after(const struct rt_held *h, struct err *e)
{
	struct rt_shim_req req = { .op = RT_SHIM_KILL, .signo = SIGKILL, .all = true };

	return rt_shim_sock_call(h->dirfd, &req, RT_SHIM_CALL_MS, e);
}

/* Who writes the snapshot and how large its files may be: the VM's uid,
 * its RAM (the bundle's sizing) and a margin for the state. */
static int snapshot_source(const struct rt_state_rec *rec, struct rt_ckpt_src *from, struct err *e)
{
	struct rt_sizing size;
	struct rt_config cfg;
	int r = rt_command_read_config(rec->bundle, &cfg, e);

	if (!r)
		r = rt_plan_sizing(&cfg, &size, e);
	rt_config_free(&cfg);
	if (r < 0)
		return r;
	from->uid = rec->id_range;
	from->what = "checkpoint";
	from->max_bytes = (uint64_t)(size.mem_mib + RT_VMM_OVERHEAD_MIB) << 20;
	return 0;
}

int rt_command_checkpoint(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	char jail[RT_JAIL_PATH_MAX];
	struct rt_ckpt_src from;
	struct rt_held h;
	int workfd = -1, r = rt_command_hold(c, &h, e);

	if (!r && !c->image_path)
		r = err_set(e, EINVAL,
			    "checkpoint: --image-path DIR is required (where the "
			    "checkpoint goes)");
	if (!r && h.st != RT_STATUS_RUNNING && h.st != RT_STATUS_PAUSED)
		r = err_set(e, EINVAL, "container %s is not running: %s", c->id,
			    rt_status_name(h.st));
	if (!r)
		r = rt_command_own_vm(c, &h, e);
	if (!r && rt_pod_role(h.rec.annotations, h.rec.id) == RT_POD_SANDBOX)
		r = err_set(e, ENOSYS,
			    "checkpoint: container %s is a pod's sandbox: checkpointing a pod is "
			    "not supported (its containers' shims would not come back)",
			    c->id);
	if (!r)
		r = rt_command_jail(c, jail, e);
	if (!r)
		r = rt_ckpt_work_open(jail, h.rec.id_range, &workfd, e);
	if (!r)
		r = snapshot_source(&h.rec, &from, e);
	if (!r) {
		char what[RT_ID_MAX + 16];

		snprintf(what, sizeof(what), "checkpoint %s", c->id);
		r = rt_ckpt_snapshot(jail, what, e);
	}
	if (!r) {
		if (!h.rec.cid[0]) /* the guest's ID, which restore addresses */
			snprintf(h.rec.cid, sizeof(h.rec.cid), "%s", h.rec.id);
		r = rt_ckpt_export(workfd, c->image_path, &h.rec, &from, e);
	}
	if (workfd >= 0) {
		close(workfd);
		rt_ckpt_work_remove(jail);
	}
	if (!r && !c->leave_running)
		r = stop_after(&h, e);
	rt_command_release(&h);
	return r;
}

/* runc's restore without --detach: the container in the foreground,
 * its status restore's. */
static int wait_restored(const struct rt_ctx *x, struct err *e)
{
	struct rt_held h;
	int st, r = rt_command_hold(x->cmd, &h, e);
	pid_t pid = h.rec.shim.pid;

	rt_command_release(&h);
	if (r < 0)
		return r;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return err_set(e, errno, "restore: waiting for the container: %s",
				       strerror(errno));
	*x->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

int rt_command_restore(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	char image[RT_PATH_MAX];
	struct rt_state_rec saved;
	int r;

	if (!c->image_path)
		return err_set(e, EINVAL,
			       "restore: --image-path DIR is required (the "
			       "checkpoint to restore)");
	if (!realpath(c->image_path, image))
		return err_set(e, errno, "--image-path %.200s: %s", c->image_path, strerror(errno));
	if ((r = rt_ckpt_read(image, &saved, e)) < 0)
		return r;
	r = rt_command_make(x, image, &saved, e);
	rt_state_rec_free(&saved);
	return !r && !c->detach ? wait_restored(x, e) : r;
}
