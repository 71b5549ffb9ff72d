/* The agent's containers; see agent_ctr.h. */
#include "guest-init/agent/agent_ctr.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "guest-init/agent/agent.h"
#include "guest-init/agent/agent_serve.h"
#include "guest-init/agent/oci_apply.h"
#include "guest-init/agent/oci_plan.h"
#include "lib/base/fd_io.h"
#include "lib/base/mono.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

/* clone3's argument (include/uapi/linux/sched.h, version 2: with cgroup),
 * spelled here because linux/sched.h redefines glibc's CLONE_ macros. */
struct ctr_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

#define MOUNTINFO_MAX (4u << 20)

void agent_ctrs_init(struct agent_ctrs *t, struct reaper *r, const struct rlimit *nofile)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->reaper = r;
	t->nofile = nofile;
	t->mountinfo = "/proc/self/mountinfo";
	t->cgroup_root = CTR_CGROUP_ROOT;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- the table ---- */

static struct ctr **find_slot(struct agent_ctrs *t, const char *cid)
{
	for (int i = 0; i < AGENT_MAX_CONTAINERS; i++)
		if (t->slot[i] && strcmp(t->slot[i]->cid, cid) == 0)
			return &t->slot[i];
	return NULL;
}

struct ctr_proc *ctr_find_proc(struct ctr *k, uint32_t exec)
{
	if (!exec)
		return &k->init;
	/* One told of its end waits only for its last users: the number
	 * is free, and may be another exec's already. */
	for (int i = 0; i < AGENT_CTR_EXECS_MAX; i++)
		if (k->exec[i] && k->exec[i]->exec == exec && !k->exec[i]->waited)
			return k->exec[i];
	return NULL;
}

struct ctr_proc *ctr_get(struct agent_ctrs *t, struct agent_conn *c, const char *what,
			 const char *cid, uint32_t exec)
{
	struct ctr **s;
	struct ctr_proc *p = NULL;
	bool known;

	pthread_mutex_lock(&t->lock);
	s = find_slot(t, cid);
	known = s && (*s)->init.ready && !(*s)->deleting;
	if (known)
		p = ctr_find_proc(*s, exec);
	if (p && p->ready) {
		p->refs++;
		p->ctr->refs++;
	} else {
		p = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	if (!p && known && exec)
		agent_reply_error(c, AGENT_E_NOT_FOUND,
				  "%s: container \"%s\" has no exec %u (its exit was told already, "
				  "or ctr_exec never made it)",
				  what, cid, exec);
	else if (!p)
		agent_reply_error(c, AGENT_E_NOT_FOUND,
				  "%s: container \"%s\" does not exist; create it first", what,
				  cid);
	return p;
}

/* Wait out the reaper's last touch of p, close what it holds, free it. */
static void proc_free(struct agent_ctrs *t, struct ctr_proc *p)
{
	if (p->pid > 0)
		reaper_wait(t->reaper, &p->rc);
	ctr_proc_close(p);
	free(p);
}

/* Under the lock: drop exec p > 0 from its container's table. */
static void proc_unlink(struct ctr_proc *p)
{
	for (int i = 0; i < AGENT_CTR_EXECS_MAX; i++)
		if (p->ctr->exec[i] == p)
			p->ctr->exec[i] = NULL;
}

void ctr_put(struct ctr_proc *p)
{
	struct agent_ctrs *t = p->ctr->tab;
	bool gone;

	pthread_mutex_lock(&t->lock);
	p->refs--;
	/* The exec goes with its last user once its exit was told: the
	 * number is the host's to use again. */
	gone = p->exec && p->waited && !p->refs;
	if (gone)
		proc_unlink(p);
	p->ctr->refs--;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	if (gone)
		proc_free(t, p);
}

void ctr_proc_told(struct ctr_proc *p)
{
	ssize_t n;

	if (!p->exec || p->waited)
		return;
	p->waited = true;
	n = write(p->stop[1], "x", 1);
	(void)n; /* a pipe with room: it cannot fail */
}

void ctr_proc_name(const struct ctr_proc *p, char *buf, size_t n)
{
	if (p->exec)
		snprintf(buf, n, "exec %u of container \"%s\"", p->exec, p->ctr->cid);
	else
		snprintf(buf, n, "container \"%s\"", p->ctr->cid);
}

static void on_exit_hook(struct reaper_child *ch)
{
	struct ctr_proc *p = (struct ctr_proc *)((char *)ch - offsetof(struct ctr_proc, rc));

	/* The reaper holds its own lock here: nothing under t->lock ever
	 * calls into the reaper, so this cannot deadlock. */
	pthread_mutex_lock(&p->ctr->tab->lock);
	p->state = CTR_STOPPED;
	p->status = ch->status;
	pthread_cond_broadcast(&p->ctr->tab->cond);
	pthread_mutex_unlock(&p->ctr->tab->lock);
}

void ctr_proc_init(struct ctr_proc *p, struct ctr *k, uint32_t exec)
{
	memset(p, 0, sizeof(*p));
	p->ctr = k;
	p->exec = exec;
	p->pid = -1;
	p->pidfd = p->start_w = p->report_r = p->master = -1;
	p->stop[0] = p->stop[1] = -1;
	for (int i = 0; i < AGENT_CTR_STREAMS; i++)
		p->io[i].fd = -1;
	p->rc.on_exit = on_exit_hook;
}

void ctr_proc_close(struct ctr_proc *p)
{
	close_fd(&p->pidfd);
	close_fd(&p->start_w);
	close_fd(&p->report_r);
	close_fd(&p->master);
	close_fd(&p->stop[0]);
	close_fd(&p->stop[1]);
	for (int i = 0; i < AGENT_CTR_STREAMS; i++) {
		close_fd(&p->io[i].fd);
		free(p->io[i].held);
		p->io[i].held = NULL;
		p->io[i].held_len = 0;
	}
}

/* Reserve a slot for cid (not ready until ctr_created is sent). */
static struct ctr *reserve(struct agent_ctrs *t, struct agent_conn *c, const char *cid)
{
	struct ctr *k = calloc(1, sizeof(*k));
	int free_slot = -1;

	if (!k) {
		agent_reply_error(c, AGENT_E_BUSY, "ctr_create: out of memory; retry later");
		return NULL;
	}
	snprintf(k->cid, sizeof(k->cid), "%s", cid);
	k->tab = t;
	k->cgroup = k->root = -1;
	ctr_proc_init(&k->init, k, 0);
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < AGENT_MAX_CONTAINERS && free_slot < 0; i++)
		if (!t->slot[i])
			free_slot = i;
	if (find_slot(t, cid) || free_slot < 0) {
		bool dup = find_slot(t, cid) != NULL;

		pthread_mutex_unlock(&t->lock);
		free(k);
		if (dup)
			agent_reply_error(c, AGENT_E_EXISTS,
					  "ctr_create: container \"%s\" already exists; delete it first",
					  cid);
		else
			agent_reply_error(
				c, AGENT_E_BUSY,
				"ctr_create: %d containers exist, the most one guest runs; delete one first",
				AGENT_MAX_CONTAINERS);
		return NULL;
	}
	t->slot[free_slot] = k;
	pthread_mutex_unlock(&t->lock);
	return k;
}

/* rmdir the guest cgroup; its last processes may still be on their way
 * to the reaper (orphans of the container's dead init), so retry a while. */
static void cgroup_remove(const struct agent_ctrs *t, const char *cid)
{
	char path[AGENT_PATH_MAX + 1];

	snprintf(path, sizeof(path), "%s/ctr-%s", t->cgroup_root, cid);
	for (int i = 0; i < 40 && rmdir(path) < 0 && errno == EBUSY; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

/* The container's root, readable (for syncfs): beneath its share
 * without a link, as the init binds it (a pod's share itself is not
 * readable by the VMM's uid). */
static int root_open(const struct oci_step *root)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					RESOLVE_NO_MAGICLINKS };
	int share = open(root->share, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

	if (share < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, share, root->src, &how, sizeof(how));
	close(share);
	return fd;
}

/* A pod's container is gone: the guest forgets the dentries nothing
 * uses, so the VMM's FUSE server closes what it held of that container's
 * root (the host can then release its rootfs whole). Best effort. */
static void drop_dentries(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		(void)!write(fd, "2", 1);
		close(fd);
	}
}

/* Take k out of the table (no reference left) and free it, its execs
 * reaped first (KILLed: they may outlive an init that never started). */
static void ctr_free(struct agent_ctrs *t, struct ctr *k, bool cgroup_made)
{
	struct ctr **s;

	pthread_mutex_lock(&t->lock);
	while (k->refs)
		pthread_cond_wait(&t->cond, &t->lock);
	s = find_slot(t, k->cid);
	if (s && *s == k)
		*s = NULL;
	pthread_mutex_unlock(&t->lock);
	for (int i = 0; i < AGENT_CTR_EXECS_MAX; i++) {
		if (!k->exec[i])
			continue;
		if (k->exec[i]->pidfd >= 0)
			syscall(SYS_pidfd_send_signal, k->exec[i]->pidfd, SIGKILL, NULL, 0);
		proc_free(t, k->exec[i]);
		k->exec[i] = NULL;
	}
	ctr_proc_close(&k->init);
	close_fd(&k->cgroup);
	close_fd(&k->root);
	oci_seccomp_free(&k->seccomp);
	if (cgroup_made)
		cgroup_remove(t, k->cid);
	if (k->beneath)
		drop_dentries();
	free(k);
}

/* KILL everything of k: its cgroup (no process escapes by forking), and
 * the init through its pidfd should the cgroup refuse (its end ends the
 * PID namespace, execs included). */
static void kill_all(struct ctr *k)
{
	int fd = k->cgroup >= 0 ? openat(k->cgroup, "cgroup.kill", O_WRONLY | O_CLOEXEC) : -1;
	bool done = fd >= 0 && write(fd, "1", 1) == 1;

	if (fd >= 0)
		close(fd);
	if (!done && k->init.pidfd >= 0)
		syscall(SYS_pidfd_send_signal, k->init.pidfd, SIGKILL, NULL, 0);
}

static void stop_relays(struct ctr_proc *p)
{
	ssize_t n;

	if (p->stop[1] < 0)
		return;
	n = write(p->stop[1], "x", 1);
	(void)n; /* a pipe with room: it cannot fail */
}

/* Claim cid for deletion (once): no new user gets it, and every relay is
 * told to stop (its descriptors close, so waiters see it drained). NULL
 * when there is no such ready container or it is being deleted. */
struct ctr *ctr_mark_deleting(struct agent_ctrs *t, const char *cid)
{
	struct ctr **s, *k = NULL;

	pthread_mutex_lock(&t->lock);
	s = find_slot(t, cid);
	if (s && (*s)->init.ready && !(*s)->deleting) {
		k = *s;
		k->deleting = true;
		stop_relays(&k->init);
		for (int i = 0; i < AGENT_CTR_EXECS_MAX; i++)
			if (k->exec[i])
				stop_relays(k->exec[i]);
	}
	pthread_mutex_unlock(&t->lock);
	return k;
}

/* KILL what is left, wait for the init's reap (a pending ctr_wait gets
 * that exit), then free it once no connection uses it. */
void ctr_teardown(struct agent_ctrs *t, struct ctr *k)
{
	kill_all(k);
	reaper_wait(t->reaper, &k->init.rc);
	ctr_free(t, k, true);
}

/* ---- ctr_create ---- */

static char *read_mountinfo(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 65536;
	char *buf = fd < 0 ? NULL : malloc(cap);
	ssize_t n;

	if (!buf) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len - 1 == 0) {
			char *nb = cap < MOUNTINFO_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				free(buf);
				close(fd);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

int ctr_make_stdio(struct ctr_proc *p, const struct agent_ctr_process *r, int child[3], int *slave)
{
	struct winsize ws = { .ws_row = r->rows, .ws_col = r->cols };
	char name[64];

	if (!r->terminal) {
		for (int i = 0; i < 3; i++) {
			int fds[2];

			if (pipe2(fds, O_CLOEXEC) < 0)
				return -1;
			/* stdin: the process reads fds[0]; stdout, stderr: it writes fds[1]. */
			child[i] = i == 0 ? fds[0] : fds[1];
			p->io[i].fd = i == 0 ? fds[1] : fds[0];
		}
		return 0;
	}
	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p->master < 0 || grantpt(p->master) < 0 || unlockpt(p->master) < 0 ||
	    ptsname_r(p->master, name, sizeof(name)) != 0)
		return -1;
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0 || fchown(*slave, r->uid, (gid_t)-1) < 0 ||
	    ioctl(p->master, TIOCSWINSZ, &ws) < 0)
		return -1;
	p->io[AGENT_CTR_PTY].fd = fcntl(p->master, F_DUPFD_CLOEXEC, 3);
	if (p->io[AGENT_CTR_PTY].fd < 0)
		return -1;
	for (int i = 0; i < 3; i++)
		child[i] = *slave;
	p->terminal = true;
	return 0;
}

/* Go's words for an errno, as runc's messages carry them. */
static const char *go_words(int e)
{
	switch (e) {
	case ENOENT:
		return "no such file or directory";
	case EACCES:
		return "permission denied";
	case ENOEXEC:
		return "exec format error";
	case ENOTDIR:
		return "not a directory";
	default:
		return strerror(e);
	}
}

/* The program's failures in runc's words (engines match them: Podman's
 * exit codes 126 and 127). */
void ctr_exec_error(struct agent_err *err, const char *prog, int e)
{
	enum agent_code code = agent_errno_code(e);

	if (e == ENOENT && !strchr(prog, '/'))
		agent_err_set(err, code, "exec: \"%.200s\": executable file not found in $PATH",
			      prog);
	else if (e == ENOENT)
		agent_err_set(err, code, "exec: \"%.200s\": stat %.200s: %s", prog, prog,
			      go_words(e));
	else
		agent_err_set(err, code, "exec: \"%.200s\": %s", prog, go_words(e));
}

/* How many entries a stage's `step` indexes (the child's report is
 * checked like anything read). */
static size_t stage_entries(int stage, const struct agent_ctr_create *c,
			    const struct agent_ctr_process *proc)
{
	switch (stage) {
	case OCI_STAGE_RLIMIT:
		return proc->privs.nrlimits;
	case OCI_STAGE_SYSCTL:
		return c ? c->nsysctl : 0;
	case OCI_STAGE_READONLY:
		return c ? c->nreadonly : 0;
	case OCI_STAGE_MASK:
		return c ? c->nmasked : 0;
	default:
		return 1;
	}
}

/* The stages of oci_privs.h: the field that failed, by name. */
static void ctr_privs_error(const struct oci_report *r, const struct agent_ctr_create *c,
			    const struct agent_ctr_process *proc, struct agent_err *err)
{
	const char *what = c ? "ctr_create" : "ctr_exec";
	enum agent_code code = agent_errno_code(r->err);
	const char *why = strerror(r->err);
	const struct agent_rlimit *l;

	switch (r->step < stage_entries(r->stage, c, proc) ? r->stage : -1) {
	case OCI_STAGE_RLIMIT:
		l = &proc->privs.rlimits[r->step];
		agent_err_set(err, code, "%s: setting %s to soft %llu, hard %llu failed: %s", what,
			      agent_rlimit_name(l->resource), (unsigned long long)l->soft,
			      (unsigned long long)l->hard, why);
		break;
	case OCI_STAGE_OOM:
		agent_err_set(err, code, "%s: setting oom_score_adj to %d failed: %s", what,
			      proc->privs.oom_score_adj, why);
		break;
	case OCI_STAGE_SYSCTL:
		agent_err_set(err, code, "ctr_create: sysctl %s = \"%.100s\" failed: %s",
			      c->sysctl[r->step].key, c->sysctl[r->step].value,
			      r->err == ENOENT ? "the guest kernel has no such sysctl" : why);
		break;
	case OCI_STAGE_READONLY:
		agent_err_set(err, code, "ctr_create: making %.200s read-only failed: %s",
			      c->readonly[r->step], why);
		break;
	case OCI_STAGE_MASK:
		agent_err_set(err, code, "ctr_create: masking %.200s failed: %s",
			      c->masked[r->step], why);
		break;
	case OCI_STAGE_CAPS:
		agent_err_set(
			err, code,
			"%s: setting the %s failed: %s (effective and ambient must be within permitted, ambient within inheritable)",
			what, r->side ? "capability sets" : "bounding set", why);
		break;
	case OCI_STAGE_NNP:
		agent_err_set(err, code, "%s: setting no_new_privs failed: %s", what, why);
		break;
	case OCI_STAGE_SECCOMP:
		agent_err_set(err, code, "%s: installing the seccomp filter failed: %s", what, why);
		break;
	default:
		agent_err_set(err, code, "%s: setting up the process failed (stage %d): %s", what,
			      r->stage, why);
		break;
	}
}

void ctr_child_error(const struct oci_report *r, const struct oci_plan *plan,
		     const struct agent_ctr_create *c, const struct agent_ctr_process *proc,
		     struct agent_err *err)
{
	const char *what = c ? "ctr_create" : "ctr_exec";
	enum agent_code code = agent_errno_code(r->err);
	const char *why = strerror(r->err);
	char step[600];

	switch (r->stage) {
	case OCI_STAGE_PLAN:
		oci_step_describe(plan, c, r->step, step, sizeof(step));
		if (r->side == OCI_SIDE_SRC && (r->err == ELOOP || r->err == EXDEV))
			agent_err_set(
				err, AGENT_E_UNSAFE_PATH,
				"ctr_create: %s failed: the source has a symbolic link on its way or leaves its share; a bind follows no link",
				step);
		else
			agent_err_set(err, code, "ctr_create: %s failed: %s", step, why);
		break;
	case OCI_STAGE_JOIN:
		agent_err_set(err, code,
			      "ctr_exec: joining the container's %s namespace failed: %s",
			      oci_join_name(r->step), why);
		break;
	case OCI_STAGE_LOOKUP:
	case OCI_STAGE_EXEC:
		ctr_exec_error(err, proc->args[0], r->err);
		break;
	case OCI_STAGE_CWD:
		agent_err_set(err, code, "chdir to cwd (\"%.200s\") set in config.json failed: %s",
			      proc->cwd, go_words(r->err));
		break;
	case OCI_STAGE_USER:
		agent_err_set(err, code, "%s: switching to uid %u, gid %u failed: %s", what,
			      proc->uid, proc->gid, why);
		break;
	case OCI_STAGE_HOSTNAME:
		agent_err_set(err, code, "ctr_create: setting the hostname failed: %s", why);
		break;
	default:
		ctr_privs_error(r, c, proc, err);
		break;
	}
}

int ctr_setup_error(struct agent_err *err, const char *what, const char *step)
{
	agent_err_set(err, agent_errno_code(errno), "%s: %s failed: %s", what, step,
		      strerror(errno));
	return -1;
}

static int setup_error(struct agent_err *err, const char *step)
{
	return ctr_setup_error(err, "ctr_create", step);
}

/* The guest cgroup ctr-<cid>, made (an empty leftover is reused) and opened. */
static int cgroup_open(struct ctr *k, struct agent_err *err)
{
	char path[AGENT_PATH_MAX + 1];

	snprintf(path, sizeof(path), "%s/ctr-%s", k->tab->cgroup_root, k->cid);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return setup_error(err, "creating the container's cgroup");
	k->cgroup = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return k->cgroup < 0 ? setup_error(err, "opening the container's cgroup") : 0;
}

int ctr_pids_max(struct ctr *k, uint64_t max)
{
	char path[AGENT_PATH_MAX + 1], n[24];
	int fd, r, e;

	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", k->tab->cgroup_root);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "+pids", 5);
		close(fd);
	}
	fd = openat(k->cgroup, "pids.max", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (max)
		snprintf(n, sizeof(n), "%llu", (unsigned long long)max);
	else
		snprintf(n, sizeof(n), "max");
	r = fd_io_write_all(fd, n, strlen(n)) < 0 ? -1 : 0;
	e = errno;
	close(fd);
	errno = e;
	return r;
}

/* pids_max as the container's cgroup's pids.max, before its init is
 * cloned into it. */
static int pids_limit(struct ctr *k, uint64_t max, struct agent_err *err)
{
	return ctr_pids_max(k, max) < 0 ? setup_error(err,
						      "setting pids_max (the container's "
						      "pids.max in the guest)")
					: 0;
}

pid_t ctr_clone(struct agent_ctrs *t, struct ctr_proc *p, uint64_t ns_flags, int join_pid,
		const struct oci_child *ch)
{
	struct ctr_clone_args args = {
		.flags = ns_flags | CLONE_INTO_CGROUP | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&p->pidfd,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)p->ctr->cgroup,
	};
	pid_t pid = -1;
	int e, self = -1;

	reaper_fork_lock(t->reaper);
	/* Joining a PID namespace is for the children this thread forks:
	 * enter the init's for the one clone, then this agent's own again. */
	if (join_pid >= 0) {
		self = (int)syscall(SYS_pidfd_open, getpid(), 0);
		if (self < 0 || setns(join_pid, CLONE_NEWPID) < 0)
			goto out;
	}
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0)
		oci_child_run(ch);
	e = errno;
	/* Should this fail, only this connection's thread, which forks
	 * nothing more and ends with the request, stays pointed there. */
	if (join_pid >= 0)
		setns(self, CLONE_NEWPID);
	errno = e;
out:
	e = errno;
	if (pid > 0)
		reaper_add(t->reaper, &p->rc, pid);
	reaper_fork_unlock(t->reaper);
	if (self >= 0)
		close(self);
	errno = e;
	return pid;
}

int ctr_child_wait(struct agent_ctrs *t, struct ctr_proc *p, int report[2], int start[2],
		   struct oci_report *rep)
{
	ssize_t n;

	close_fd(&report[1]);
	close_fd(&start[0]);
	do
		n = read(report[0], rep, sizeof(*rep));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(*rep) && rep->stage == OCI_STAGE_READY) {
		p->report_r = report[0];
		p->start_w = start[1];
		report[0] = start[1] = -1;
		return 0;
	}
	syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
	reaper_wait(t->reaper, &p->rc);
	return n == (ssize_t)sizeof(*rep) ? 1 : -1;
}

/* The container's filter, once for its init and its execs. */
static int compile_seccomp(struct ctr *k, const struct agent_ctr_create *c, struct agent_err *err)
{
	char why[128];
	int r = c->seccomp ? oci_seccomp_compile(c->seccomp, &k->seccomp, why, sizeof(why)) : 0;

	if (r < 0)
		agent_err_set(err, r == -E2BIG ? AGENT_E_TOO_LARGE : AGENT_E_BUSY,
			      "ctr_create: seccomp: %s", why);
	return r;
}

/* Everything before the clone; the child's ends in child[], slave. */
static int prepare(struct ctr *k, const struct agent_ctr_create *c, struct oci_plan *plan,
		   int child[3], int *slave, int report[2], int start[2], struct agent_err *err)
{
	char *mi = read_mountinfo(k->tab->mountinfo);
	int r;

	if (!mi)
		return setup_error(err, "reading the mount table");
	r = oci_plan_build(plan, c, mi, err);
	free(mi);
	if (r < 0 || compile_seccomp(k, c, err) < 0)
		return -1;
	k->root = root_open(&plan->step[0]);
	k->beneath = c->root_source && c->root_source[0];
	if (k->root < 0)
		return setup_error(err, "opening the root share");
	if (cgroup_open(k, err) < 0 || (c->pids_max && pids_limit(k, c->pids_max, err) < 0))
		return -1;
	if (ctr_make_stdio(&k->init, &c->proc, child, slave) < 0)
		return setup_error(err, "making the init's stdio");
	if (pipe2(report, O_CLOEXEC) < 0 || pipe2(start, O_CLOEXEC) < 0 ||
	    pipe2(k->init.stop, O_CLOEXEC) < 0)
		return setup_error(err, "making a pipe");
	return 0;
}

void ctr_close_child_ends(int child[3], int *slave, int report[2], int start[2])
{
	for (int i = 0; i < 3; i++)
		if (child[i] != *slave)
			close_fd(&child[i]);
	close_fd(slave);
	close_fd(&report[0]);
	close_fd(&report[1]);
	close_fd(&start[0]);
	close_fd(&start[1]);
}

/* Clone the init and wait until it is set up. 0, or -1 with err set (the
 * child, if any, reaped). */
static int start_init(struct agent_ctrs *t, struct ctr *k, const struct agent_ctr_create *c,
		      struct agent_err *err)
{
	struct oci_plan plan = { 0 };
	struct oci_child ch = { .proc = &c->proc,
				.create = c,
				.hostname = c->hostname,
				.tty = -1,
				.join = -1,
				.nofile = t->nofile };
	int child[3] = { -1, -1, -1 }, slave = -1, report[2] = { -1, -1 }, start[2] = { -1, -1 };
	struct oci_report rep;
	int rc = -1, r;

	if (prepare(k, c, &plan, child, &slave, report, start, err) < 0)
		goto out;
	ch.plan = &plan;
	ch.seccomp = &k->seccomp;
	ch.path_var = oci_env_path(c->proc.env, c->proc.envc);
	ch.tty = slave;
	ch.report = report[1];
	ch.start = start[0];
	for (int i = 0; i < 3; i++)
		ch.fd[i] = child[i];
	k->init.pid = ctr_clone(t, &k->init, OCI_CTR_NAMESPACES, -1, &ch);
	if (k->init.pid < 0) {
		setup_error(err, "clone3 into the container's namespaces");
		goto out;
	}
	r = ctr_child_wait(t, &k->init, report, start, &rep);
	if (r == 0)
		rc = 0;
	else if (r > 0)
		ctr_child_error(&rep, &plan, c, &c->proc, err);
	else
		agent_err_set(err, AGENT_E_IO_ERROR,
			      "ctr_create: the container's init ended while being set up");
out:
	ctr_close_child_ends(child, &slave, report, start);
	oci_plan_free(&plan);
	return rc;
}

void agent_ctr_create(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	const struct agent_ctr_create *cr = &m->u.ctr_create;
	struct ctr *k = reserve(t, c, cr->cid);
	struct agent_line l;
	struct agent_err err;

	if (!k)
		return;
	snprintf(k->init.prog, sizeof(k->init.prog), "%s", cr->proc.args[0]);
	if (start_init(t, k, cr, &err) < 0) {
		/* gone before the host hears of it: a create it sends at once
		 * with the same cid must not find it "exists" */
		ctr_free(t, k, k->cgroup >= 0);
		agent_conn_send_err(c, &err);
		return;
	}
	pthread_mutex_lock(&t->lock);
	k->init.ready = true;
	pthread_mutex_unlock(&t->lock);
	/* The host left before it learnt of the container: nothing may stay
	 * behind that no one knows to delete. */
	if (agent_conn_send_line(c, &l, agent_line_ctr_created(&l, k->cid, 0, k->init.pid)) < 0 &&
	    ctr_mark_deleting(t, k->cid) == k)
		ctr_teardown(t, k);
}
