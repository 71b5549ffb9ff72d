/* One kiln-vmm under its keeper, and the monitor thread that watches it; see supervise.h. */
#include "api/kilnd/supervision/supervise.h"
#include "lib/base/fd_io.h"
#include "lib/base/proc_stat.h"
#include "vmm/control/park_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/base/mono.h"
#include "lib/base/sig_reset.h"

struct vmm_proc {
	struct keeper_vmm_id id;
	pid_t keeper; /* our child (reaped by the monitor), or 0: a keeper of an earlier kilnd */
	int conn;     /* keeper.sock; -1: the keeper was gone already */
	int pidfd;    /* the VMM's, verified; -1: none */
	char dir[PATH_MAX];
	void (*on_exit)(void *arg, const struct vmm_exit_info *info);
	void *arg;
};

/* ---- the recorded end and the logs' tails ---- */

/* Up to cap bytes of name (beneath dir) into buf: the whole file when
 * small, else its end. Nothing is followed. The size read, or -1. */
static ssize_t read_end(const char *dir, const char *name, uint8_t *buf, size_t cap, uint64_t *size)
{
	char path[PATH_MAX + 32];
	struct stat st;
	ssize_t n = -1;
	uint64_t off;
	int fd;

	*size = 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		off = *size > cap ? *size - cap : 0;
		n = (ssize_t)(*size - off);
		if (fd_io_pread_all(fd, buf, (size_t)n, off) < 0)
			n = -1;
	}
	close(fd);
	return n;
}

/* The last cap bytes written to log `name` (its ".1" first when the
 * current file holds fewer). *whole: they are everything since the start. */
static size_t log_tail(const char *dir, const char *name, uint8_t *buf, size_t cap, bool *whole)
{
	char old[64];
	uint64_t size, old_size;
	ssize_t n = read_end(dir, name, buf, cap, &size), m;

	if (n < 0)
		n = 0;
	*whole = size <= cap;
	if ((size_t)n >= cap)
		return (size_t)n;
	snprintf(old, sizeof(old), "%s.1", name);
	/* The rotated part goes before: move what we have to the end first. */
	memmove(buf + (cap - (size_t)n), buf, (size_t)n);
	m = read_end(dir, old, buf, cap - (size_t)n, &old_size);
	if (m <= 0) {
		memmove(buf, buf + (cap - (size_t)n), (size_t)n);
		return (size_t)n;
	}
	*whole = false;
	memmove(buf + m, buf + (cap - (size_t)n), (size_t)n);
	return (size_t)(m + n);
}

int vmm_exit_load(const char *dir, const struct keeper_vmm_id *want, struct vmm_exit_info *info,
		  struct vmm_tails *t)
{
	char line[KEEPER_LINE_MAX + 1];
	struct keeper_exit x;
	uint64_t size;
	ssize_t n;

	*info = (struct vmm_exit_info){ .status = -1 };
	info->console = t->console;
	info->console_len = log_tail(dir, "console.log", t->console, sizeof(t->console),
				     &info->console_whole);
	info->err = t->err;
	info->err_len = log_tail(dir, "vmm.log", t->err, sizeof(t->err), &info->err_whole);
	/* One more byte than a line may have: a longer file is refused, not cut. */
	n = read_end(dir, KEEPER_EXIT_NAME, (uint8_t *)line, sizeof(line), &size);
	/* want pid 0: the spawn never heard the keeper's hello, whose VMM is the only one it ran. */
	if (n < 0 || size > KEEPER_LINE_MAX || keeper_exit_parse(line, (size_t)n, &x) ||
	    (want->pid && (x.id.pid != want->pid || x.id.start != want->start)))
		return -1;
	info->status = x.status;
	info->signal = x.signal;
	info->known = true;
	return 0;
}

/* ---- the keeper connection ---- */

/* Connect to dir's keeper and read its hello. 0 with *fd and *id;
 * -ESRCH: nobody listens; -EPROTO: not a hello this kilnd reads. */
static int keeper_connect(const char *dir, int *fd, struct keeper_vmm_id *id)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = VMM_KEEPER_HELLO_MS / 1000 };
	char line[KEEPER_LINE_MAX];
	size_t got = 0;
	int s, r;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, KEEPER_SOCK_NAME) >=
	    sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errno == ENOENT || errno == ECONNREFUSED ? -ESRCH : -errno;
		close(s);
		return r;
	}
	/* One byte at a time: nothing after the hello is ours to take here. */
	while (got < sizeof(line)) {
		ssize_t n = read(s, line + got, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (line[got++] == '\n')
			break;
	}
	if (got == 0) {
		/* Accepted by the kernel, then closed: the keeper was finishing. */
		close(s);
		return -ESRCH;
	}
	if (keeper_hello_parse(line, got, id)) {
		close(s);
		return -EPROTO;
	}
	tv.tv_sec = 0; /* from now on the monitor waits as long as the VMM runs */
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	*fd = s;
	return 0;
}

/* A pidfd for id, opened first and checked after: then it names that
 * process or none. -ESTALE: the pid is another process now. */
static int pidfd_verified(const struct keeper_vmm_id *id, int *pidfd)
{
	uint64_t start;
	int fd = (int)syscall(SYS_pidfd_open, id->pid, 0), r;

	if (fd < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	r = proc_start_time(id->pid, &start);
	if (r == 0 && start != id->start)
		r = -ESTALE;
	if (r) {
		close(fd);
		return r;
	}
	*pidfd = fd;
	return 0;
}

/* The last exit line the keeper sent on the connection, if any. */
static bool conn_drain(int fd, struct keeper_exit *x)
{
	char buf[KEEPER_LINE_MAX], line[KEEPER_LINE_MAX];
	size_t have = 0;
	bool got = false;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return got;
		have += (size_t)n;
		for (char *nl; (nl = memchr(buf, '\n', have));) {
			size_t len = (size_t)(nl - buf) + 1;

			memcpy(line, buf, len);
			got |= keeper_exit_parse(line, len, x) == 0;
			memmove(buf, buf + len, have - len);
			have -= len;
		}
		if (have == sizeof(buf))
			have = 0; /* a line too long for the protocol: skipped */
	}
}

static void *monitor(void *arg)
{
	struct vmm_proc *p = arg;
	struct vmm_tails t; /* 32 KiB of the thread's stack */
	struct keeper_exit x;
	struct vmm_exit_info info;
	bool sent = false;
	int status;

	if (p->conn >= 0)
		sent = conn_drain(p->conn, &x);
	if (p->keeper > 0)
		while (waitpid(p->keeper, &status, 0) < 0 && errno == EINTR)
			;
	if (vmm_exit_load(p->dir, &p->id, &info, &t) && sent && x.id.pid == p->id.pid &&
	    x.id.start == p->id.start) {
		/* vmm.exit could not be written (a full disk): the line said it. */
		info.status = x.status;
		info.signal = x.signal;
		info.known = true;
	}
	if (!info.known && p->pidfd >= 0) {
		/* The keeper died and the VMM may run on, orphaned: it must not
		 * run without anyone to report it. */
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

		if (syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0) == 0)
			poll(&pf, 1, 10000);
	}
	p->on_exit(p->arg, &info);
	if (p->conn >= 0)
		close(p->conn);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p);
	return NULL;
}

/* The monitor thread, detached: it frees p. 0 or -errno. */
static int start_monitor(struct vmm_proc *p)
{
	pthread_attr_t attr;
	pthread_t th;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&th, &attr, monitor, p);
	pthread_attr_destroy(&attr);
	return -r;
}

/* ---- spawn ---- */

#define KARGV_FIXED 16

struct keeper_argv {
	char **v;
	char nums[4 + KEEPER_MAX_KEEP][24];
};

/* The keeper's command line, built before fork (the child may not allocate). */
static int keeper_argv_build(const struct vmm_spawn_req *req, int ready_fd, struct keeper_argv *k)
{
	size_t nvmm = 0, i = 0, num = 0;

	while (req->argv[nvmm])
		nvmm++;
	if (req->nkeep > KEEPER_MAX_KEEP)
		return -E2BIG;
	k->v = calloc(KARGV_FIXED + 2 * req->nkeep + nvmm + 1, sizeof(*k->v));
	if (!k->v)
		return -ENOMEM;
	k->v[i++] = "kiln-keeper";
	k->v[i++] = "--keeper";
	if (req->park) {
		k->v[i++] = "--park";
	} else {
		k->v[i++] = "--dir";
		k->v[i++] = (char *)req->dir;
	}
	snprintf(k->nums[num], sizeof(k->nums[num]), "%u", req->grace_s);
	k->v[i++] = "--grace";
	k->v[i++] = k->nums[num++];
	snprintf(k->nums[num], sizeof(k->nums[num]), "%d", ready_fd);
	k->v[i++] = "--ready-fd";
	k->v[i++] = k->nums[num++];
	if (req->cgroup_fd >= 0) {
		snprintf(k->nums[num], sizeof(k->nums[num]), "%d", req->cgroup_fd);
		k->v[i++] = "--cgroup-fd";
		k->v[i++] = k->nums[num++];
	}
	if (req->new_pid_ns)
		k->v[i++] = "--pidns";
	if (req->park_nice)
		k->v[i++] = "--park-nice";
	for (size_t j = 0; j < req->nkeep; j++) {
		snprintf(k->nums[num], sizeof(k->nums[num]), "%d", req->keep_fds[j]);
		k->v[i++] = "--keep";
		k->v[i++] = k->nums[num++];
	}
	k->v[i++] = "--";
	for (size_t j = 0; j < nvmm; j++)
		k->v[i++] = req->argv[j];
	return 0;
}

/* Child side of fork(): only async-signal-safe calls until exec. */
static void __attribute__((noreturn))
keeper_child(const struct vmm_spawn_req *req, char **kargv, int devnull, int ready_w, int st_w)
{
	int e;

	/* Its own session: no signal for kilnd's process group or terminal reaches it. */
	setsid();
	if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
		goto fail;
	/* kilnd ignores SIGPIPE and blocks its shutdown signals; ignored
	 * dispositions and the mask survive exec. */
	sig_reset_all();
	/* Every other descriptor of kilnd's closes at exec (st_w already does). */
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	if (fcntl(ready_w, F_SETFD, 0) < 0 ||
	    (req->cgroup_fd >= 0 && fcntl(req->cgroup_fd, F_SETFD, 0) < 0))
		goto fail;
	for (size_t i = 0; i < req->nkeep; i++)
		if (fcntl(req->keep_fds[i], F_SETFD, 0) < 0)
			goto fail;
	execv(req->keeper, kargv);
fail:
	e = errno;
	while (write(st_w, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(127);
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

/* The keeper's first words on its ready descriptor: "ok\n" once kiln-vmm
 * runs, or "err <errno> <step>\n"; parked, the hello. 0, or -1 with e. */
static int keeper_verdict(const struct vmm_spawn_req *req, int ready, struct keeper_vmm_id *id,
			  struct api_err *e)
{
	char said[KEEPER_LINE_MAX];
	char step[64] = "?";
	struct timeval tv = { .tv_sec = VMM_KEEPER_HELLO_MS / 1000 };
	size_t got = 0;
	ssize_t n;
	int code = 0;

	if (req->park) {
		/* One message; a keeper that hangs must not hold the pool's thread. */
		setsockopt(ready, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		do
			n = recv(ready, said, sizeof(said) - 1, 0);
		while (n < 0 && errno == EINTR);
		got = n > 0 ? (size_t)n : 0;
		if (got && keeper_hello_parse(said, got, id) == 0)
			return 0;
	} else {
		while (got < sizeof(said) - 1) {
			n = read(ready, said + got, sizeof(said) - 1 - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			got += (size_t)n;
		}
	}
	said[got] = '\0';
	if (!req->park && strcmp(said, "ok\n") == 0)
		return 0;
	if (sscanf(said, "err %d %63[^\n]", &code, step) == 2 && code > 0)
		api_err_set(e, API_E_SPAWN_FAILED, "cannot run kiln-vmm '%s' (%s): %s",
			    req->argv[0], step, strerror(code));
	else
		api_err_set(e, API_E_SPAWN_FAILED,
			    "kiln-vmm's keeper ended before it started kiln-vmm");
	return -1;
}

/* Run the keeper and read its verdict on kiln-vmm's exec. 0 with *keeper
 * (and, parked, *ready: the socket to claim it on, and *id), or -1 with e. */
static int keeper_start(const struct vmm_spawn_req *req, pid_t *keeper, int *ready_out,
			struct keeper_vmm_id *id, struct api_err *e)
{
	int devnull, ready[2] = { -1, -1 }, st[2] = { -1, -1 }, err = 0, status;
	struct keeper_argv ka = { 0 };
	ssize_t n;
	pid_t pid;

	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 ||
	    (req->park ? socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ready)
		       : pipe2(ready, O_CLOEXEC)) < 0 ||
	    pipe2(st, O_CLOEXEC) < 0) {
		api_err_set(e, API_E_SPAWN_FAILED, "cannot start kiln-vmm's keeper: %s",
			    strerror(errno));
		goto fail;
	}
	if ((err = -keeper_argv_build(req, ready[1], &ka))) {
		api_err_set(e, API_E_SPAWN_FAILED, "cannot start kiln-vmm's keeper: %s",
			    strerror(err));
		goto fail;
	}
	pid = fork();
	if (pid == 0)
		keeper_child(req, ka.v, devnull, ready[1], st[1]);
	err = errno;
	close(ready[1]);
	close(st[1]);
	ready[1] = st[1] = -1;
	if (pid < 0) {
		api_err_set(e, API_E_SPAWN_FAILED, "cannot start kiln-vmm's keeper (fork): %s",
			    strerror(err));
		goto fail;
	}
	/* The exec status pipe closes at exec (success) or carries errno. */
	do
		n = read(st[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	if (n == sizeof(err)) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		api_err_set(e, API_E_SPAWN_FAILED, "cannot run kiln-vmm's keeper '%s --keeper': %s",
			    req->keeper, strerror(err));
		goto fail;
	}
	if (keeper_verdict(req, ready[0], id, e)) {
		/* Parked, a keeper that said nothing in time is ended here. */
		if (req->park)
			kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		goto fail;
	}
	free(ka.v);
	close(devnull);
	if (req->park) {
		*ready_out = ready[0];
		ready[0] = -1;
	}
	close_pair(ready);
	close_pair(st);
	*keeper = pid;
	return 0;
fail:
	free(ka.v);
	if (devnull >= 0)
		close(devnull);
	close_pair(ready);
	close_pair(st);
	return -1;
}

static int watch(struct vmm_proc *p, struct vmm_proc **proc, struct keeper_vmm_id *id,
		 struct api_err *e);

int vmm_spawn(const struct vmm_spawn_req *req, struct vmm_proc **proc, struct keeper_vmm_id *id,
	      struct api_err *e)
{
	struct vmm_proc *p = calloc(1, sizeof(*p));

	if (!p) {
		api_err_set(e, API_E_SPAWN_FAILED, "kiln-vmm: out of memory");
		return -1;
	}
	*p = (struct vmm_proc){ .conn = -1, .pidfd = -1, .on_exit = req->on_exit, .arg = req->arg };
	snprintf(p->dir, sizeof(p->dir), "%s", req->dir);
	if (keeper_start(req, &p->keeper, NULL, NULL, e)) {
		free(p);
		return -1;
	}
	return watch(p, proc, id, e);
}

/* The keeper of p runs (its "ok" read): connect, verify, and start the
 * monitor. 0 with *proc and *id, or -1 with e. */
static int watch(struct vmm_proc *p, struct vmm_proc **proc, struct keeper_vmm_id *id,
		 struct api_err *e)
{
	int r;

	/* kiln-vmm runs (or already ended: then the keeper has written
	 * vmm.exit and is gone, and the monitor reports that at once). */
	r = keeper_connect(p->dir, &p->conn, &p->id);
	if (r == 0 && pidfd_verified(&p->id, &p->pidfd) == -ESTALE) {
		/* Impossible while the keeper holds it unreaped; never signal it then. */
		p->pidfd = -1;
	}
	/* Read before the monitor starts: it frees p once the VMM ends,
	 * which may be at once. */
	*id = p->id;
	r = start_monitor(p);
	if (r) {
		/* Without a monitor nobody would report it: end it now. */
		if (p->pidfd >= 0)
			syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
		if (p->conn >= 0)
			close(p->conn);
		if (p->pidfd >= 0)
			close(p->pidfd);
		waitpid(p->keeper, NULL, 0);
		free(p);
		api_err_set(e, API_E_SPAWN_FAILED, "cannot start a monitor thread for kiln-vmm: %s",
			    strerror(-r));
		return -1;
	}
	*proc = p;
	return 0;
}

int vmm_reattach(const char *dir, const struct keeper_vmm_id *want,
		 void (*on_exit)(void *, const struct vmm_exit_info *), void *arg,
		 struct vmm_proc **proc)
{
	struct vmm_proc *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	*p = (struct vmm_proc){ .conn = -1, .pidfd = -1, .on_exit = on_exit, .arg = arg };
	snprintf(p->dir, sizeof(p->dir), "%s", dir);
	r = keeper_connect(dir, &p->conn, &p->id);
	if (r == 0 && (p->id.pid != want->pid || p->id.start != want->start))
		r = -ESTALE;
	if (r == 0)
		r = pidfd_verified(&p->id, &p->pidfd);
	if (r == 0)
		r = start_monitor(p);
	if (r) {
		if (p->conn >= 0)
			close(p->conn);
		if (p->pidfd >= 0)
			close(p->pidfd);
		free(p);
		return r;
	}
	*proc = p;
	return 0;
}

int vmm_keeper_end(const char *dir)
{
	struct keeper_vmm_id id;
	struct keeper_exit x;
	int conn, pidfd = -1, r;

	r = keeper_connect(dir, &conn, &id);
	if (r)
		return r;
	/* Only a VMM that is the one the keeper names gets the signal. */
	if (pidfd_verified(&id, &pidfd) == 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		close(pidfd);
	}
	/* The keeper closes the connection as it exits, its last file written. */
	{
		struct timeval tv = { .tv_sec = KEEPER_KILL_WAIT_S };

		setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	conn_drain(conn, &x);
	close(conn);
	return 0;
}

int vmm_signal(struct vmm_proc *p, int sig)
{
	if (p->pidfd < 0)
		return -ESRCH;
	return syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

/* ---- zygotes ---- */

int vmm_park(const char *keeper, const char *vmm, unsigned grace_s, bool new_pid_ns, bool nice,
	     struct vmm_zygote *z, struct api_err *e)
{
	char num[16];
	char *argv[] = { (char *)vmm, "--park", num, NULL };
	int pk[2];
	struct vmm_spawn_req req = { .argv = argv,
				     .keeper = keeper,
				     .grace_s = grace_s,
				     .new_pid_ns = new_pid_ns,
				     .keep_fds = &pk[1],
				     .nkeep = 1,
				     .cgroup_fd = -1,
				     .park = true,
				     .park_nice = nice };
	int r;

	*z = (struct vmm_zygote){ .ready = -1, .park = -1 };
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pk) < 0) {
		api_err_set(e, API_E_SPAWN_FAILED, "a zygote's socket: %s", strerror(errno));
		return -1;
	}
	snprintf(num, sizeof(num), "%d", pk[1]);
	r = keeper_start(&req, &z->keeper, &z->ready, &z->id, e);
	close(pk[1]);
	if (r) {
		close(pk[0]);
		return -1;
	}
	z->park = pk[0];
	return 0;
}

bool vmm_zygote_alive(const struct vmm_zygote *z)
{
	struct pollfd p = { .fd = z->ready, .events = POLLIN };

	return z->ready >= 0 && poll(&p, 1, 0) == 0;
}

void vmm_zygote_end(struct vmm_zygote *z)
{
	int pidfd;

	/* One that got its command line runs on without the sockets: killed
	 * through a pidfd checked against its start time (its keeper, alive
	 * or a zombie of ours, still holds the pid). */
	if (z->id.pid > 0 && pidfd_verified(&z->id, &pidfd) == 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		close(pidfd);
	}
	if (z->park >= 0)
		close(z->park);
	if (z->ready >= 0)
		close(z->ready);
	/* A parked keeper kills and reaps its VMM when the socket ends; one
	 * already claimed waits for its VMM, killed above. Either has
	 * KEEPER_KILL_WAIT_S; then it is killed (its pid is ours, unreaped). */
	if (z->keeper > 0) {
		int64_t until = mono_ms() + KEEPER_KILL_WAIT_S * 1000;
		pid_t r;

		while ((r = waitpid(z->keeper, NULL, WNOHANG)) == 0 && mono_ms() < until)
			usleep(10000);
		if (r == 0) {
			kill(z->keeper, SIGKILL);
			while (waitpid(z->keeper, NULL, 0) < 0 && errno == EINTR)
				;
		}
	}
	*z = (struct vmm_zygote){ .ready = -1, .park = -1 };
}

/* One SOCK_SEQPACKET message of len bytes with fds[n] beside it. */
static int send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t n)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * KEEPER_MAX_KEEP)];
	} c;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	if (n > KEEPER_MAX_KEEP)
		return -E2BIG;
	if (n) {
		memset(&c, 0, sizeof(c));
		m.msg_control = c.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		c.h.cmsg_level = SOL_SOCKET;
		c.h.cmsg_type = SCM_RIGHTS;
		c.h.cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(&c.h), fds, sizeof(int) * n);
	}
	do
		r = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : (size_t)r == len ? 0 : -EIO;
}

/* The keeper's answer to a claim: 0 on "ok", or -1 with e saying why not. */
static int claim_answer(struct vmm_zygote *z, struct api_err *e)
{
	struct timeval tv = { .tv_sec = VMM_KEEPER_HELLO_MS / 1000 };
	char said[KEEPER_LINE_MAX], step[64] = "?";
	ssize_t got;
	int code = 0;

	setsockopt(z->ready, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	do
		got = recv(z->ready, said, sizeof(said) - 1, 0);
	while (got < 0 && errno == EINTR);
	said[got > 0 ? got : 0] = '\0';
	if (strcmp(said, "ok\n") == 0)
		return 0;
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		api_err_set(e, API_E_SPAWN_FAILED,
			    "a zygote's keeper did not answer its claim within %d s",
			    VMM_KEEPER_HELLO_MS / 1000);
	else if (sscanf(said, "err %d %63[^\n]", &code, step) == 2 && code > 0)
		api_err_set(e, API_E_SPAWN_FAILED, "a zygote's keeper refused its claim (%s): %s",
			    step, strerror(code));
	else
		api_err_set(e, API_E_SPAWN_FAILED, "a zygote's keeper ended before its claim");
	return -1;
}

/* The claim: the keeper first (cgroup, priority, logs), then kiln-vmm's
 * command line. 0, or -1 with e. */
static int claim_send(struct vmm_zygote *z, const struct vmm_spawn_req *req, struct api_err *e)
{
	char line[PATH_MAX + 16];
	int n, r, fds[2] = { -1, req->cgroup_fd };
	size_t len = 0;
	struct err pe;
	char *packed;

	n = keeper_claim_format(line, sizeof(line), req->dir);
	fds[0] = n < 0 ? -1 : open(req->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = fds[0] < 0 ? -EINVAL
		       : send_with_fds(z->ready, line, (size_t)n, fds, req->cgroup_fd >= 0 ? 2 : 1);
	if (fds[0] >= 0)
		close(fds[0]);
	if (r) {
		api_err_set(e, API_E_SPAWN_FAILED, "a zygote's claim of %s: %s", req->dir,
			    strerror(-r));
		return -1;
	}
	if (claim_answer(z, e))
		return -1;
	if (req->nkeep > PARK_FDS_MAX) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "a zygote's command line: more than %d descriptors", PARK_FDS_MAX);
		return -1;
	}
	if (park_msg_pack(req->argv, &packed, &len, &pe)) {
		api_err_set(e, API_E_SPAWN_FAILED, "%s", pe.msg);
		return -1;
	}
	r = send_with_fds(z->park, packed, len, req->keep_fds, req->nkeep);
	free(packed);
	if (r) {
		api_err_set(e, API_E_SPAWN_FAILED, "a zygote's command line: %s", strerror(-r));
		return -1;
	}
	return 0;
}

int vmm_claim(struct vmm_zygote *z, const struct vmm_spawn_req *req, struct vmm_proc **proc,
	      struct keeper_vmm_id *id, struct api_err *e)
{
	struct vmm_proc *p = calloc(1, sizeof(*p));

	if (!p || claim_send(z, req, e)) {
		if (!p)
			api_err_set(e, API_E_SPAWN_FAILED, "kiln-vmm: out of memory");
		/* A VMM that got its command line ends with its keeper's socket. */
		vmm_zygote_end(z);
		free(p);
		return -1;
	}
	*p = (struct vmm_proc){ .keeper = z->keeper,
				.conn = -1,
				.pidfd = -1,
				.on_exit = req->on_exit,
				.arg = req->arg };
	snprintf(p->dir, sizeof(p->dir), "%s", req->dir);
	close(z->ready);
	close(z->park);
	*z = (struct vmm_zygote){ .ready = -1, .park = -1 };
	return watch(p, proc, id, e);
}
