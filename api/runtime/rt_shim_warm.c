/* A warm start's template VM, booted and snapshotted; see rt_shim_warm.h. */
#include "api/runtime/rt_shim_warm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/runtime/rt_ckpt.h"
#include "api/runtime/rt_dir.h"
#include "api/runtime/rt_shim.h"
#include "api/runtime/rt_trace.h"

#define NSHARES 4

/* The shape's shares, each an O_PATH descriptor of <root>/.warm/empty
 * (root's, 0755, empty: the template's guest sees nothing). */
static int empty_open(int warmfd, const struct rt_warm_shape *sh, int fds[NSHARES], struct err *e)
{
	const bool want[NSHARES] = { true, sh->bro, sh->brw, sh->pod };
	int dir;

	for (int i = 0; i < NSHARES; i++)
		fds[i] = -1;
	if (mkdirat(warmfd, RT_WARM_EMPTY, 0755) < 0 && errno != EEXIST)
		return err_set(e, errno, "--root/" RT_WARM_DIR "/" RT_WARM_EMPTY ": %s",
			       strerror(errno));
	dir = openat(warmfd, RT_WARM_EMPTY, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return err_set(e, errno, "--root/" RT_WARM_DIR "/" RT_WARM_EMPTY ": %s",
			       strerror(errno));
	for (int i = 0; i < NSHARES; i++)
		if (want[i] && (fds[i] = fcntl(dir, F_DUPFD_CLOEXEC, 3)) < 0) {
			close(dir);
			return err_set(e, errno, "dup: %s", strerror(errno));
		}
	close(dir);
	return 0;
}

static void fds_close(int fds[NSHARES])
{
	for (int i = 0; i < NSHARES; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/* kiln-vmm booting the template's VM in the jail; *pid. */
static int boot(const struct rt_warm_make *m, int *pid, struct err *e)
{
	char vsock[RT_PATH_MAX], control[RT_PATH_MAX], cmdline[RT_CMDLINE_MAX];
	struct rt_argv *argv = calloc(1, sizeof(*argv));
	int shares[NSHARES], r;

	if (!argv)
		return err_set(e, ENOMEM, "out of memory");
	snprintf(vsock, sizeof(vsock), "%s/vsock", m->jail);
	snprintf(control, sizeof(control), "%s/control", m->jail);
	r = empty_open(m->warmfd, m->shape, shares, e);
	if (!r)
		r = rt_plan_cmdline(m->shape, NULL, cmdline, sizeof(cmdline), e);
	if (!r) {
		struct rt_vmm_launch l = {
			.vmm = m->files->vmm,
			.kernel = m->files->kernel,
			.initrd = m->files->initrd,
			.vsock = vsock,
			.control = control,
			.jail_dir = m->jail,
			.jail_id = m->jail_id,
			.root_fd = shares[0],
			.bro_fd = shares[1],
			.brw_fd = shares[2],
			.pod_fd = shares[3],
			.root_readonly = m->shape->root_ro,
			.size = m->size,
			.cmdline = cmdline,
		};
		r = rt_plan_vmm_argv(&l, argv, e);
	}
	if (!r) {
		struct rt_vmm_spawn sp = { argv->argv, m->log_fd, shares, NSHARES };

		r = rt_vmm_spawn(&sp, pid, e);
	}
	fds_close(shares);
	free(argv);
	return r;
}

/* The snapshot, from the jail into <name>.tmp, then into place. */
static int keep(const struct rt_warm_make *m, const char *name, struct err *e)
{
	const struct rt_ckpt_src from = {
		.uid = m->jail_id,
		.max_bytes = (uint64_t)(m->size->mem_mib + RT_VMM_OVERHEAD_MIB) << 20,
		.what = "the warm template",
	};
	int workfd = -1, tmpfd = -1;
	int r = rt_ckpt_work_open(m->jail, m->jail_id, &workfd, e);

	if (!r)
		r = rt_ckpt_snapshot(m->jail, "the warm template", e);
	if (!r)
		r = rt_warm_tmp_make(m->warmfd, name, &tmpfd, e);
	if (!r)
		r = rt_ckpt_copy(workfd, tmpfd, &from, e);
	if (tmpfd >= 0)
		close(tmpfd);
	if (workfd >= 0)
		close(workfd);
	rt_ckpt_work_remove(m->jail);
	if (!r)
		r = rt_warm_install(m->warmfd, name, e);
	return r;
}

int rt_warm_make(const struct rt_warm_make *m, const char *name, struct err *e)
{
	char tmp[RT_WARM_NAME_MAX + 8];
	struct err ignored;
	int pid = -1;
	int r = boot(m, &pid, e);

	if (!r)
		r = rt_vmm_wait_agent(m->agent, pid, RT_BOOT_MS, m->log, e);
	if (!r)
		rt_trace("shim: warm template booted");
	if (!r)
		r = keep(m, name, e);
	if (pid > 0 && r != -ECHILD) { /* -ECHILD: reaped already, its pid maybe another's */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	capped_log_pump(m->log);
	if (r < 0) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", name);
		rt_dir_clear(m->warmfd, tmp);
	}
	/* its sockets go, the jail stays for the container's own VM */
	rt_jail_remove(m->jail, &ignored);
	if (rt_jail_make(m->jail, r ? &ignored : e) < 0 && !r)
		r = -EIO;
	return r;
}
