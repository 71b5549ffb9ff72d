/* One kiln-vmm child and its monitor thread; see supervise.h. */
#include "api/kilnd/sandbox/supervise.h"
#include "lib/base/fd_io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The last VMM_TAIL_BYTES of a stream. */
struct tail {
	uint8_t buf[VMM_TAIL_BYTES];
	size_t len;
	uint64_t total;
};

/* One capped log file and its pipe. */
struct log_out {
	int pipe_r;
	int fd;
	uint64_t written;
	char path[PATH_MAX];
	struct tail tail;
};

struct vmm_proc {
	pid_t pid;
	char *const *argv; /* only until the spawn handshake */
	const int *keep_fds; /* likewise */
	size_t nkeep;
	int cgroup_fd;     /* likewise */
	struct log_out out[2]; /* 0: console, 1: stderr */
	void (*on_exit)(void *arg, const struct vmm_exit_info *info);
	void *arg;
	bool new_pid_ns;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool answered;
	int spawn_errno;
	const char *spawn_step;
};

static void tail_add(struct tail *t, const uint8_t *p, size_t n)
{
	t->total += n;
	if (n >= sizeof(t->buf)) {
		memcpy(t->buf, p + n - sizeof(t->buf), sizeof(t->buf));
		t->len = sizeof(t->buf);
		return;
	}
	if (t->len + n > sizeof(t->buf)) {
		size_t drop = t->len + n - sizeof(t->buf);

		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
}

/* Start the file over as PATH.1 once it holds VMM_LOG_CAP bytes. */
static void log_write(struct log_out *l, const uint8_t *p, size_t n)
{
	tail_add(&l->tail, p, n);
	if (l->fd < 0)
		return;
	if (l->written + n > VMM_LOG_CAP) {
		char old[PATH_MAX + 4];

		snprintf(old, sizeof(old), "%s.1", l->path);
		rename(l->path, old);
		close(l->fd);
		l->fd = open(l->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		l->written = 0;
		if (l->fd < 0)
			return;
	}
	if (fd_io_write_all(l->fd, p, n) < 0)
		return; /* a full disk costs the log, never the VM */
	l->written += n;
}

/* Child side of fork(): only async-signal-safe calls until exec. */
static void __attribute__((noreturn))
child(struct vmm_proc *p, pid_t parent, int devnull, int cons_w, int err_w, int status_w)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int e;

	/* kilnd is already gone? In a new pid namespace the parent is
	 * outside it and getppid() says 0: nothing to compare. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || (!p->new_pid_ns && getppid() != parent))
		_exit(127);
	/* Into the sandbox's cgroup before exec: all kiln-vmm allocates is charged there. */
	if (p->cgroup_fd >= 0 && write(p->cgroup_fd, "0", 1) != 1)
		goto fail;
	setsid();
	if (dup2(devnull, 0) < 0 || dup2(cons_w, 1) < 0 || dup2(err_w, 2) < 0)
		goto fail;
	/* kilnd ignores SIGPIPE and blocks its shutdown signals; ignored
	 * dispositions and the mask survive exec. */
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Every other descriptor of kilnd's closes at exec (status_w already does). */
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	for (size_t i = 0; i < p->nkeep; i++)
		if (fcntl(p->keep_fds[i], F_SETFD, 0) < 0)
			goto fail;
	execv(p->argv[0], p->argv);
fail:
	e = errno;
	while (write(status_w, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(127);
}

static void answer(struct vmm_proc *p, int err, const char *step)
{
	pthread_mutex_lock(&p->mu);
	p->answered = true;
	p->spawn_errno = err;
	p->spawn_step = step;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Copy both pipes to their logs until both reach EOF. */
static void pump(struct vmm_proc *p)
{
	uint8_t buf[16384];
	int open_pipes = 2;

	while (open_pipes) {
		struct pollfd fds[2];

		for (int i = 0; i < 2; i++)
			fds[i] = (struct pollfd){ .fd = p->out[i].pipe_r, .events = POLLIN };
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(fds[i].fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(p->out[i].pipe_r);
				p->out[i].pipe_r = -1;
				open_pipes--;
				continue;
			}
			log_write(&p->out[i], buf, (size_t)n);
		}
	}
}

static void *monitor(void *arg)
{
	struct vmm_proc *p = arg;
	int devnull, cons[2] = { -1, -1 }, err[2] = { -1, -1 }, st[2] = { -1, -1 }, e = 0, status;
	struct vmm_exit_info info;
	siginfo_t si;
	pid_t parent = getpid();
	ssize_t n;

	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0) {
		answer(p, errno, "open /dev/null");
		return NULL;
	}
	if (pipe2(cons, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0) {
		e = errno;
		close(devnull);
		for (int i = 0; i < 2; i++) {
			if (cons[i] >= 0)
				close(cons[i]);
			if (err[i] >= 0)
				close(err[i]);
		}
		answer(p, e, "pipe");
		return NULL;
	}
	/* clone as fork does, plus the namespace: the child runs only
	 * async-signal-safe code until exec, as after fork. */
	p->pid = p->new_pid_ns ? (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL) : fork();
	if (p->pid == 0)
		child(p, parent, devnull, cons[1], err[1], st[1]);
	e = errno;
	close(devnull);
	close(cons[1]);
	close(err[1]);
	close(st[1]);
	if (p->pid < 0) {
		close(cons[0]);
		close(err[0]);
		close(st[0]);
		answer(p, e, "fork");
		return NULL;
	}
	/* The exec status pipe closes at exec (success) or carries errno. */
	do
		n = read(st[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(st[0]);
	if (n == sizeof(e)) {
		close(cons[0]);
		close(err[0]);
		while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
			;
		answer(p, e, "exec");
		return NULL;
	}
	p->out[0].pipe_r = cons[0];
	p->out[1].pipe_r = err[0];
	answer(p, 0, NULL);
	/* From here on p belongs to this thread. */

	pump(p);
	/* WNOWAIT: the zombie keeps the pid reserved while on_exit runs. */
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	info = (struct vmm_exit_info){
		.status = si.si_code == CLD_EXITED ? si.si_status : -1,
		.signal = si.si_code == CLD_EXITED ? 0 : si.si_status,
		.console = p->out[0].tail.buf,
		.console_len = p->out[0].tail.len,
		.console_whole = p->out[0].tail.total == p->out[0].tail.len,
		.err = p->out[1].tail.buf,
		.err_len = p->out[1].tail.len,
		.err_whole = p->out[1].tail.total == p->out[1].tail.len,
	};
	p->on_exit(p->arg, &info);
	while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	for (int i = 0; i < 2; i++)
		if (p->out[i].fd >= 0)
			close(p->out[i].fd);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return NULL;
}

int vmm_spawn(const struct vmm_spawn_req *req, struct vmm_proc **proc, pid_t *pid, struct api_err *e)
{
	struct vmm_proc *p = calloc(1, sizeof(*p));
	const char *paths[2] = { req->console_log, req->vmm_log };
	pthread_attr_t attr;
	pthread_t th;
	int r;

	if (!p) {
		api_err_set(e, API_E_SPAWN_FAILED, "kiln-vmm: out of memory");
		return -1;
	}
	p->argv = req->argv;
	p->keep_fds = req->keep_fds;
	p->nkeep = req->nkeep;
	p->cgroup_fd = req->cgroup_fd;
	p->on_exit = req->on_exit;
	p->arg = req->arg;
	p->new_pid_ns = req->new_pid_ns;
	for (int i = 0; i < 2; i++) {
		snprintf(p->out[i].path, sizeof(p->out[i].path), "%s", paths[i]);
		p->out[i].pipe_r = -1;
		/* Each boot starts its logs afresh: last_exit describes this boot. */
		p->out[i].fd = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (p->out[i].fd < 0) {
			api_err_set(e, API_E_SPAWN_FAILED, "cannot open the log '%s': %s", paths[i], strerror(errno));
			if (i)
				close(p->out[0].fd);
			free(p);
			return -1;
		}
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&th, &attr, monitor, p);
	pthread_attr_destroy(&attr);
	if (r) {
		api_err_set(e, API_E_SPAWN_FAILED, "cannot start a monitor thread for kiln-vmm: %s", strerror(r));
		goto fail;
	}
	pthread_mutex_lock(&p->mu);
	while (!p->answered)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	if (p->spawn_errno) {
		api_err_set(e, API_E_SPAWN_FAILED, "cannot run kiln-vmm '%s' (%s): %s", req->argv[0], p->spawn_step,
			    strerror(p->spawn_errno));
		goto fail;
	}
	*proc = p;
	*pid = p->pid;
	return 0;
fail:
	for (int i = 0; i < 2; i++)
		close(p->out[i].fd);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return -1;
}

int vmm_signal(struct vmm_proc *p, int sig)
{
	return kill(p->pid, sig) < 0 ? -errno : 0;
}
