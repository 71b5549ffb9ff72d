/*
 * The agent's containers once created: ctr_start, ctr_wait, ctr_signal,
 * ctr_resize for any of their execs, ctr_delete (agent_ctr.h;
 * docs/agent-protocol.md, 7.9).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "guest-init/agent/agent.h"
#include "guest-init/agent/agent_ctr.h"
#include "guest-init/agent/agent_serve.h"
#include "guest-init/agent/oci_apply.h"
#include "lib/base/fd_io.h"
#include "lib/base/mono.h"

void agent_ctr_start(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	static const char *const names[] = { "running", "running", "stopped" };
	struct ctr_proc *p = ctr_get(t, c, "ctr_start", m->u.ctr.cid, m->u.ctr.exec);
	struct oci_report rep;
	struct agent_err err;
	enum ctr_state st;
	char name[AGENT_CID_MAX + 48];
	bool go;
	ssize_t n;

	if (!p)
		return;
	ctr_proc_name(p, name, sizeof(name));
	pthread_mutex_lock(&t->lock);
	st = p->state;
	go = st == CTR_CREATED && !p->starting;
	p->starting = true;
	pthread_mutex_unlock(&t->lock);
	if (!go) {
		/* A second ctr_start while the first is under way counts as running. */
		agent_reply_error(c, AGENT_E_INVALID_STATE,
				  "ctr_start: %s is not created (it is %s)", name, names[st]);
		ctr_put(p);
		return;
	}
	n = write(p->start_w, "S", 1);
	do
		n = n == 1 ? read(p->report_r, &rep, sizeof(rep)) : -1;
	while (n < 0 && errno == EINTR);
	if (n == 0) {
		/* The report pipe closed at the execve. */
		pthread_mutex_lock(&t->lock);
		if (p->state == CTR_CREATED)
			p->state = CTR_RUNNING;
		pthread_mutex_unlock(&t->lock);
		agent_reply_ok(c);
	} else if (n == (ssize_t)sizeof(rep)) {
		ctr_exec_error(&err, p->prog, rep.err);
		agent_conn_send_err(c, &err);
	} else {
		agent_reply_error(c, AGENT_E_IO_ERROR, "ctr_start: %s ended before it started",
				  name);
	}
	ctr_put(p);
}

static bool drained(const struct ctr_proc *p)
{
	for (int s = AGENT_CTR_STDOUT; s < AGENT_CTR_STREAMS; s++)
		if (p->io[s].connected && !p->io[s].done)
			return false;
	return true;
}

void agent_ctr_wait(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	const struct agent_ctr_req *r = &m->u.ctr;
	struct ctr_proc *p = ctr_get(t, c, "ctr_wait", r->cid, r->exec);
	int64_t deadline = r->timeout_ms ? mono_ms() + r->timeout_ms : 0;
	struct agent_ctr_exit e = { .cid = r->cid, .exec = r->exec, .exit_code = -1 };
	struct agent_line l;
	char name[AGENT_CID_MAX + 48];
	bool done, gone = false;

	if (!p)
		return;
	pthread_mutex_lock(&t->lock);
	while (!(done = p->state == CTR_STOPPED && drained(p)) && !gone) {
		struct timespec ts;
		int64_t left = deadline ? deadline - mono_ms() : 1000;

		if (left <= 0)
			break;
		/* In slices, to notice a host that went away meanwhile. */
		mono_deadline_in(&ts, left < 1000 ? left : 1000);
		pthread_cond_timedwait(&t->cond, &t->lock, &ts);
		gone = agent_conn_peer_gone(c);
	}
	e.pid = p->pid;
	if (WIFEXITED(p->status))
		e.exit_code = WEXITSTATUS(p->status);
	else
		e.signo = WTERMSIG(p->status);
	pthread_mutex_unlock(&t->lock);
	if (done) {
		/* Dirty pages of shared maps are the guest's until written
		 * back: the host may end the VM as soon as it has the exit. */
		syncfs(p->ctr->root);
		/* An exec's exit is its last word: it goes once unused, and
		 * before the host reads this, so it may reuse the number. */
		pthread_mutex_lock(&t->lock);
		ctr_proc_told(p);
		pthread_mutex_unlock(&t->lock);
		agent_conn_send_line(c, &l, agent_line_ctr_exit(&l, &e));
	} else if (!gone) {
		ctr_proc_name(p, name, sizeof(name));
		agent_reply_error(c, AGENT_E_TIMEOUT, "ctr_wait: %s still runs after %u ms", name,
				  r->timeout_ms);
	}
	ctr_put(p);
}

/* `all`: every process in k's cgroup. 0, or -errno (-ESRCH: none left). */
static int signal_cgroup(struct ctr *k, int signo)
{
	char buf[65536], *p, *end;
	int fd, sent = 0;
	ssize_t n;

	if (signo == SIGKILL) {
		fd = openat(k->cgroup, "cgroup.kill", O_WRONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : write(fd, "1", 1);
		if (fd >= 0)
			close(fd);
		if (n == 1)
			return 0;
	}
	fd = openat(k->cgroup, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = fd_io_read_full(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	for (p = buf; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0 && kill((pid_t)pid, signo) == 0)
			sent++;
	}
	return sent ? 0 : -ESRCH;
}

void agent_ctr_signal(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	const struct agent_ctr_req *r = &m->u.ctr;
	struct ctr_proc *p = ctr_get(t, c, "ctr_signal", r->cid, r->exec);
	char name[AGENT_CID_MAX + 48];
	int e = 0;

	if (!p)
		return;
	pthread_mutex_lock(&t->lock);
	/* Once the init ended, so did everything else of the container: the
	 * kernel kills a PID namespace with its init. */
	if (p->state == CTR_STOPPED)
		e = -ESRCH;
	else if (r->all)
		e = signal_cgroup(p->ctr, r->signo);
	else if (syscall(SYS_pidfd_send_signal, p->pidfd, r->signo, NULL, 0) < 0)
		e = -errno;
	pthread_mutex_unlock(&t->lock);
	ctr_proc_name(p, name, sizeof(name));
	if (e == -ESRCH)
		agent_reply_error(c, AGENT_E_INVALID_STATE, "ctr_signal: %s is not running", name);
	else if (e)
		agent_reply_error(c, agent_errno_code(-e), "ctr_signal: signalling %s: %s", name,
				  strerror(-e));
	else
		agent_reply_ok(c);
	ctr_put(p);
}

void agent_ctr_resize(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	const struct agent_ctr_req *r = &m->u.ctr;
	struct ctr_proc *p = ctr_get(t, c, "ctr_resize", r->cid, r->exec);
	struct winsize ws = { .ws_row = r->rows, .ws_col = r->cols };
	char name[AGENT_CID_MAX + 48];

	if (!p)
		return;
	ctr_proc_name(p, name, sizeof(name));
	if (!p->terminal || p->state == CTR_STOPPED)
		agent_reply_error(c, AGENT_E_INVALID_STATE, "ctr_resize: %s %s", name,
				  p->terminal ? "has ended"
					      : "has no terminal (\"terminal\": false)");
	else if (ioctl(p->master, TIOCSWINSZ, &ws) < 0)
		agent_reply_error(c, agent_errno_code(errno), "ctr_resize: %s", strerror(errno));
	else
		agent_reply_ok(c);
	ctr_put(p);
}

void agent_ctr_update(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctr_req *r = &m->u.ctr;
	struct ctr_proc *p = ctr_get(&a->ctrs, c, "ctr_update", r->cid, 0);

	if (!p)
		return;
	if (ctr_pids_max(p->ctr, r->pids_max) < 0)
		agent_reply_error(c, agent_errno_code(errno),
				  "ctr_update: writing the container's pids.max: %s",
				  strerror(errno));
	else
		agent_reply_ok(c);
	ctr_put(p);
}

void agent_ctr_delete(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	struct ctr *k = ctr_mark_deleting(t, m->u.ctr.cid);

	if (!k) {
		agent_reply_error(c, AGENT_E_NOT_FOUND,
				  "ctr_delete: container \"%s\" does not exist", m->u.ctr.cid);
		return;
	}
	ctr_teardown(t, k);
	agent_reply_ok(c);
}
