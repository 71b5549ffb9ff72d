/* What kiln-runtime's commands share; see rt_command.h. */
#include "api/runtime/rt_command.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"
#include "api/runtime/rt_binds.h"
#include "api/runtime/rt_shim_proto.h"
#include "lib/base/fd_io.h"
#include "lib/base/text_clean.h"
#include "vmm/control/control_client.h"

/* graft and ungraft: kiln-vmm answers at once */
#define RT_GRAFT_MS 10000

void rt_command_log_open(struct rt_ctx *x)
{
	const struct rt_cmd *c = x->cmd;

	x->log_fd = -1;
	if (c->g.log)
		x->log_fd = open(c->g.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (c->g.log && x->log_fd < 0)
		fprintf(stderr, "kiln-runtime: --log %s: %s (logging to stderr only)\n", c->g.log,
			strerror(errno));
}

/* One --log line (and, for an error, the same text on stderr). */
void rt_command_report(const struct rt_ctx *x, enum rt_log_level l, const char *msg)
{
	const struct rt_cmd *c = x->cmd;
	char line[RT_LOG_LINE_MAX], t[RT_LOG_TIME_MAX];
	struct timespec now;
	int n;

	if (l == RT_LOG_ERROR) {
		fputs("kiln-runtime: ", stderr);
		text_clean_term_fput(stderr, msg);
		fputc('\n', stderr);
	}
	if (x->log_fd < 0 || (l == RT_LOG_DEBUG && !c->g.debug))
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	rt_log_time(t, &now, false);
	n = rt_log_line(line, sizeof(line), c->g.log_format, l, t, msg);
	if (n > 0)
		fd_io_write_all(x->log_fd, line, (size_t)n);
}

int rt_command_not_yet(const struct rt_cmd *c, struct err *e)
{
	return err_set(e, ENOSYS,
		       "%s: not supported yet: it needs the container's VM, which this kiln-runtime "
		       "does not boot yet",
		       c->verb_name);
}

/* The bundle's config.json, read whole and parsed. */
int rt_command_read_config(const char *bundle, struct rt_config *cfg, struct err *e)
{
	char what[RT_PATH_MAX + 16], *buf;
	size_t n;
	int r;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(what, sizeof(what), "%.4000s/config.json", bundle);
	r = rt_file_read_in(bundle, "--bundle", "config.json", true, RT_CONFIG_FILE_MAX, what, &buf,
			    &n, e);
	if (r < 0)
		return r;
	r = rt_config_parse(buf, n, cfg, e);
	free(buf);
	return r;
}

/* The container's directory and record (locked unless lockfd is NULL). */
int rt_command_open(const struct rt_cmd *c, int *rootfd, int *dirfd, int *lockfd,
		    struct rt_state_rec *rec, struct err *e)
{
	int r;

	memset(rec, 0, sizeof(*rec));
	*dirfd = -1;
	if (lockfd)
		*lockfd = -1;
	r = rt_dir_open_root(c->g.root, false, rootfd, e);
	if (r == -ENOENT)
		return err_set(e, ENOENT, "container \"%s\" does not exist", c->id);
	if (r < 0)
		return r;
	r = rt_dir_open(*rootfd, c->id, dirfd, e);
	if (!r && lockfd)
		r = rt_dir_lock(*dirfd, c->id, RT_LOCK_WAIT_MS, lockfd, e);
	if (!r)
		r = rt_dir_read_state(*dirfd, c->id, rec, e);
	return r;
}

void rt_command_close(int rootfd, int dirfd, int lockfd, struct rt_state_rec *rec)
{
	if (lockfd >= 0)
		close(lockfd);
	if (dirfd >= 0)
		close(dirfd);
	if (rootfd >= 0)
		close(rootfd);
	if (rec)
		rt_state_rec_free(rec);
}

int rt_command_print(char *s)
{
	fputs(s, stdout);
	free(s);
	return fflush(stdout) == 0 ? 0 : -EIO;
}

int rt_command_hold(const struct rt_cmd *c, struct rt_held *h, struct err *e)
{
	int pid, r = rt_command_open(c, &h->rootfd, &h->dirfd, &h->lockfd, &h->rec, e);

	h->st = r ? RT_STATUS_STOPPED : rt_dir_status(&h->rec, &pid);
	return r;
}

int rt_command_own_vm(const struct rt_cmd *c, const struct rt_held *h, struct err *e)
{
	if (!h->rec.sandbox[0])
		return 0;
	return err_set(e, ENOSYS,
		       "%s: container \"%s\" runs in the VM of its pod's sandbox \"%s\": %s the "
		       "sandbox, which is the whole pod",
		       c->verb_name, c->id, h->rec.sandbox, c->verb_name);
}

void rt_command_release(struct rt_held *h)
{
	rt_command_close(h->rootfd, h->dirfd, h->lockfd, &h->rec);
}

int rt_command_pid_file(const char *given, char *out, struct err *e)
{
	char cwd[RT_PATH_MAX];

	out[0] = '\0';
	if (!given)
		return 0;
	if (given[0] == '/') {
		if ((size_t)snprintf(out, RT_PATH_MAX, "%s", given) >= RT_PATH_MAX)
			return err_set(e, ENAMETOOLONG, "--pid-file: the path is too long");
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)) ||
	    (size_t)snprintf(out, RT_PATH_MAX, "%s/%s", cwd, given) >= RT_PATH_MAX)
		return err_set(e, ENAMETOOLONG, "--pid-file %.200s: the path is too long", given);
	return 0;
}

int rt_command_jail_of(const struct rt_cmd *c, const char *id, char *out, struct err *e)
{
	char root[RT_PATH_MAX], dir[RT_PATH_MAX + RT_ID_MAX + 2];

	if (!realpath(c->g.root, root))
		return err_set(e, errno, "--root %.200s: %s", c->g.root, strerror(errno));
	snprintf(dir, sizeof(dir), "%s/%s", root, id);
	rt_jail_path(dir, out);
	return 0;
}

int rt_command_jail(const struct rt_cmd *c, char *out, struct err *e)
{
	return rt_command_jail_of(c, c->id, out, e);
}

int rt_command_pod_forget(const struct rt_cmd *c, const char *sandbox, const char *cid)
{
	struct agent_client ac;
	struct agent_client_err ae;
	char jail[RT_JAIL_PATH_MAX], vsock[RT_JAIL_PATH_MAX + 8];
	struct err e;

	if (rt_command_jail_of(c, sandbox, jail, &e) < 0)
		return -EINVAL;
	snprintf(vsock, sizeof(vsock), "%s/vsock", jail);
	if (agent_client_init(&ac, vsock) < 0)
		return -ENAMETOOLONG;
	ac.timeout_ms = RT_GRAFT_MS;
	return agent_client_ctr_delete(&ac, cid, &ae);
}

int rt_command_pod_graft(const struct rt_cmd *c, const char *sandbox, int sbfd, const char *id,
			 bool graft, struct err *e)
{
	struct control_cmd cmd = { .op = graft ? CTL_GRAFT : CTL_UNGRAFT,
				   .tag = RT_SHARE_POD,
				   .name = id };
	char jail[RT_JAIL_PATH_MAX], path[RT_JAIL_PATH_MAX + 16];
	struct control_reply rep;
	int tree = -1, r = rt_command_jail_of(c, sandbox, jail, e);

	if (!r && graft)
		r = rt_binds_member_clone(sbfd, id, &tree, e);
	if (!r) {
		snprintf(path, sizeof(path), "%s/control", jail);
		r = control_client_run_fd(path, &cmd, tree, RT_GRAFT_MS, &rep, e);
	}
	if (tree >= 0)
		close(tree);
	/* ungraft: a VM gone (its socket with it) or a graft it no longer
	 * has is done; anything else fails, so the slot stays for a retry
	 * rather than pinned by a graft nobody can drop */
	if (r < 0 && !graft &&
	    (r == -ENOENT || r == -ECONNREFUSED ||
	     (r == -EPROTO && strstr(e->msg, "No such file"))))
		r = 0;
	if (r < 0) {
		char inner[ERR_MSG_MAX];

		memcpy(inner, e->msg, sizeof(inner));
		err_set(e, -r, "container \"%s\": %s its pod's VM: %s", id,
			graft ? "giving its files to" : "taking its files back from", inner);
	}
	return r;
}

int rt_command_shim_fork(struct rt_shim_args *a, int lockfd, int rootfd, char *dir, pid_t *pid,
			 int *ready_r, struct err *e)
{
	char rootreal[RT_PATH_MAX];
	int ready[2], r;

	if (rt_command_pid_file(a->cmd->pid_file, a->pid_file, e) < 0)
		return -EINVAL;
	if (!realpath(a->cmd->g.root, rootreal) ||
	    (size_t)snprintf(dir, RT_PATH_MAX, "%s/%s", rootreal, a->cmd->id) >= RT_PATH_MAX)
		return err_set(e, ENAMETOOLONG, "--root %.200s: %s", a->cmd->g.root,
			       strerror(errno));
	if (pipe2(ready, O_CLOEXEC) < 0)
		return err_set(e, errno, "%s: pipe: %s", a->cmd->verb_name, strerror(errno));
	a->dir = dir;
	if (a->sandbox) { /* the VM is the pod sandbox's */
		char sbdir[RT_PATH_MAX + RT_ID_MAX + 2];

		snprintf(sbdir, sizeof(sbdir), "%s/%s", rootreal, a->sandbox);
		rt_jail_path(sbdir, a->jail);
	} else {
		rt_jail_path(dir, a->jail);
	}
	a->ready_fd = ready[1];
	*pid = fork();
	if (*pid < 0) {
		r = err_set(e, errno, "%s: fork: %s", a->cmd->verb_name, strerror(errno));
		close(ready[0]);
		close(ready[1]);
		return r;
	}
	if (*pid == 0) {
		close(ready[0]);
		close(lockfd);
		close(rootfd);
		rt_shim_main(a);
	}
	close(ready[1]);
	*ready_r = ready[0];
	return 0;
}

int rt_command_shim_ready(int ready_r, pid_t pid, const char *died, struct err *e)
{
	char line[RT_SHIM_LINE_MAX];
	ssize_t n = fd_io_read_full(ready_r, line, sizeof(line));
	int r;

	close(ready_r);
	r = rt_shim_reply_decode(line, n > 0 ? (size_t)n : 0, e);
	if (r == -EINVAL)
		err_set(e, ECHILD, "%s", died);
	if (r < 0)
		waitpid(pid, NULL, 0); /* it exits once it said so: its VM is gone too */
	return r;
}
