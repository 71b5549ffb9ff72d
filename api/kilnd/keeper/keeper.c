/* One kiln-vmm's keeper; see keeper.h. */
#include "api/kilnd/keeper/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/kilnd/keeper/keeper_proto.h"
#include "lib/base/capped_log.h"
#include "lib/base/fd_io.h"
#include "lib/base/proc_stat.h"
#include "lib/base/mono.h"
#include "lib/base/num_parse.h"
#include "lib/base/sig_reset.h"

struct keeper_args {
	const char *dir;
	uint64_t grace_s;
	int ready_fd, cgroup_fd;
	bool pidns, park;
	bool parked_nice; /* --park-nice: parked at nice 19, given 0 back at the claim */
	int keep[KEEPER_MAX_KEEP];
	size_t nkeep;
	char **argv; /* kiln-vmm's */
};

struct keeper {
	struct keeper_args a;
	char claimed_dir[PATH_MAX]; /* --park: the directory the claim named */
	int dirfd, listen_fd, client, pidfd;
	struct capped_log log[2]; /* 0: console, 1: stderr */
	struct keeper_vmm_id id;
	int64_t alone_since, term_at; /* mono ms; term_at 0: no SIGTERM sent */
	mode_t umask_vmm;             /* kilnd's, given back to kiln-vmm */
	bool killed;
};

static int parse_fd(const char *s, int *fd)
{
	uint64_t v;

	if (num_parse_u64(s, 10, 3, INT_MAX, &v))
		return -1;
	*fd = (int)v;
	return 0;
}

/* kilnd wrote these; still, a malformed line is refused whole. */
static int parse_args(int argc, char **argv, struct keeper_args *a)
{
	int i;

	*a = (struct keeper_args){ .ready_fd = -1, .cgroup_fd = -1 };
	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(o, "--") == 0)
			break;
		if (strcmp(o, "--pidns") == 0) {
			a->pidns = true;
			continue;
		}
		if (strcmp(o, "--park") == 0) {
			a->park = true;
			continue;
		}
		if (strcmp(o, "--park-nice") == 0) {
			a->parked_nice = true;
			continue;
		}
		if (!v)
			return -1;
		i++;
		if (strcmp(o, "--dir") == 0)
			a->dir = v;
		else if (strcmp(o, "--grace") == 0
				 ? num_parse_u64(v, 10, 0, 86400 * 365, &a->grace_s)
				 : strcmp(o, "--ready-fd") == 0  ? parse_fd(v, &a->ready_fd)
				 : strcmp(o, "--cgroup-fd") == 0 ? parse_fd(v, &a->cgroup_fd)
				 : strcmp(o, "--keep") == 0      ? (a->nkeep == KEEPER_MAX_KEEP ||
                                                               parse_fd(v, &a->keep[a->nkeep++]))
								 : 1)
			return -1;
	}
	/* --park: the directory comes with the claim, never beside it. */
	if (i >= argc - 1 || a->ready_fd < 0 || (a->park ? a->dir != NULL : !a->dir) ||
	    (a->dir && a->dir[0] != '/') || (a->parked_nice && !a->park))
		return -1;
	a->argv = argv + i + 1;
	return 0;
}

/* A line of the keeper's own in vmm.log. */
static void __attribute__((format(printf, 2, 3))) note(struct keeper *k, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "kiln-keeper: ");

	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	capped_log_write(&k->log[1], line, (size_t)n);
}

static void ready_say(struct keeper *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ready_say(struct keeper *k, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && k->a.ready_fd >= 0)
		fd_io_write_all(k->a.ready_fd, line,
				(size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	if (k->a.ready_fd >= 0)
		close(k->a.ready_fd);
	k->a.ready_fd = -1;
}

static int open_logs(struct keeper *k)
{
	static const char *const names[2][2] = { { "console.log", "console.log.1" },
						 { "vmm.log", "vmm.log.1" } };

	/* Each boot starts its logs afresh: last_exit describes this boot. */
	for (int i = 0; i < 2; i++) {
		int pipe_r = k->log[i].pipe_r; /* a parked VMM's, already there */
		int r = capped_log_open(&k->log[i], k->dirfd, names[i][0], names[i][1],
					KEEPER_LOG_CAP);

		k->log[i].pipe_r = pipe_r;
		if (r < 0)
			return r;
	}
	return 0;
}

static int listen_sock(struct keeper *k)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", k->a.dir,
			     KEEPER_SOCK_NAME) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path);
	/* umask 077 (keeper_main): the socket is 0600 from its bind on. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	k->listen_fd = fd;
	return 0;
}

/* kiln-vmm's side of the fork: async-signal-safe calls only, as after any fork. */
static void __attribute__((noreturn))
vmm_child(struct keeper *k, int devnull, int cons_w, int err_w, int st_w)
{
	int e;

	/* Into the sandbox's cgroup before exec: all kiln-vmm allocates is charged there. */
	if (k->a.cgroup_fd >= 0 && write(k->a.cgroup_fd, "0", 1) != 1)
		goto fail;
	setsid();
	if (dup2(devnull, 0) < 0 || dup2(cons_w, 1) < 0 || dup2(err_w, 2) < 0)
		goto fail;
	sig_reset_all();
	/* The keeper's 077 is for its own files: kiln-vmm's jail builds its
	 * root's directories (which its uid must traverse) under kilnd's. */
	umask(k->umask_vmm);
	/* The keeper's own descriptors are close-on-exec; the --keep ones are not. */
	execv(k->a.argv[0], k->a.argv);
fail:
	e = errno;
	while (write(st_w, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(127);
}

/* Fork and exec kiln-vmm. 0, or an errno with *step. */
static int spawn_vmm(struct keeper *k, const char **step)
{
	int devnull, cons[2] = { -1, -1 }, errp[2] = { -1, -1 }, st[2] = { -1, -1 }, e = 0, status;
	pid_t pid;
	ssize_t n;

	*step = "pipe";
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || pipe2(cons, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(st, O_CLOEXEC) < 0)
		return errno;
	*step = "fork";
	/* clone as fork does, plus the namespace. */
	pid = k->a.pidns ? (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL)
			 : fork();
	if (pid == 0)
		vmm_child(k, devnull, cons[1], errp[1], st[1]);
	e = errno;
	close(devnull);
	close(cons[1]);
	close(errp[1]);
	close(st[1]);
	if (pid < 0)
		return e;
	*step = "exec";
	do
		n = read(st[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(st[0]);
	if (n == sizeof(e)) {
		close(cons[0]);
		close(errp[0]);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		return e ? e : EIO;
	}
	k->id.pid = pid;
	capped_log_attach(&k->log[0], cons[0]);
	capped_log_attach(&k->log[1], errp[0]);
	for (int i = 0; i < 2; i++)
		fcntl(k->log[i].pipe_r, F_SETFL, O_NONBLOCK);
	/* A zombie still has its stat: this works even if it already ended. */
	*step = "/proc/PID/stat";
	e = -proc_start_time(pid, &k->id.start);
	if (e) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		return e;
	}
	k->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

static void client_drop(struct keeper *k)
{
	if (k->client < 0)
		return;
	close(k->client);
	k->client = -1;
	k->alone_since = mono_ms();
}

static void client_accept(struct keeper *k)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char hello[KEEPER_LINE_MAX];
	int fd = accept4(k->listen_fd, NULL, NULL, SOCK_CLOEXEC), n;

	if (fd < 0)
		return;
	/* The socket is 0600 in kilnd's 0700 directory; the uid check says so twice. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid()) {
		close(fd);
		return;
	}
	/* The newest client is the kilnd that holds the state directory's lock. */
	client_drop(k);
	n = keeper_hello_format(hello, sizeof(hello), &k->id);
	if (n < 0 || fd_io_send_all(fd, hello, (size_t)n) < 0) {
		close(fd);
		return;
	}
	k->client = fd;
}

/* Stop the VMM: SIGTERM (kiln-vmm ends the guest), SIGKILL if it stays. */
static void stop_vmm(struct keeper *k, const char *why)
{
	int64_t now = mono_ms();

	if (!k->term_at) {
		note(k, "%s; stopping kiln-vmm pid %d", why, k->id.pid);
		kill(k->id.pid, SIGTERM);
		k->term_at = now;
	} else if (!k->killed && now - k->term_at >= KEEPER_KILL_AFTER_S * 1000) {
		note(k, "kiln-vmm pid %d still runs %d s after SIGTERM; SIGKILL", k->id.pid,
		     KEEPER_KILL_AFTER_S);
		kill(k->id.pid, SIGKILL);
		k->killed = true;
	}
}

/* The VMM's end: the status file, then the client. */
static void finish(struct keeper *k, const siginfo_t *si)
{
	struct keeper_exit x = { .id = k->id };
	char line[KEEPER_LINE_MAX], tmp[] = KEEPER_EXIT_NAME ".tmp";
	int n, fd;

	if (si->si_code == CLD_EXITED) {
		x.status = si->si_status & 0xff;
	} else {
		x.status = -1;
		x.signal = si->si_status;
	}
	/* What the pipes hold now; one kept open by another process is left. */
	for (int i = 0; i < 2; i++)
		if (k->log[i].pipe_r >= 0)
			capped_log_pump(&k->log[i]);
	n = keeper_exit_format(line, sizeof(line), &x);
	if (n < 0)
		return;
	fd = openat(k->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		if (fd_io_write_all(fd, line, (size_t)n) == 0 && fsync(fd) == 0 && close(fd) == 0)
			renameat(k->dirfd, tmp, k->dirfd, KEEPER_EXIT_NAME);
		else
			close(fd);
	}
	if (k->client >= 0)
		fd_io_send_all(k->client, line, (size_t)n);
}

static int run(struct keeper *k)
{
	siginfo_t si;
	struct stat st;

	k->alone_since = mono_ms();
	for (;;) {
		struct pollfd p[5];
		int np = 0, ip[2] = { -1, -1 }, il, ic = -1;

		for (int i = 0; i < 2; i++)
			if (k->log[i].pipe_r >= 0) {
				ip[i] = np;
				p[np++] = (struct pollfd){ .fd = k->log[i].pipe_r,
							   .events = POLLIN };
			}
		il = np;
		p[np++] = (struct pollfd){ .fd = k->listen_fd, .events = POLLIN };
		if (k->client >= 0) {
			ic = np;
			p[np++] = (struct pollfd){ .fd = k->client, .events = POLLIN };
		}
		/* Readable when the VMM ended: no second's wait for the next look. */
		if (k->pidfd >= 0) {
			p[np++] = (struct pollfd){ .fd = k->pidfd, .events = POLLIN };
		}
		if (poll(p, (nfds_t)np, 1000) < 0 && errno != EINTR)
			return 1;
		for (int i = 0; i < 2; i++)
			if (ip[i] >= 0 && (p[ip[i]].revents & (POLLIN | POLLHUP | POLLERR)))
				capped_log_pump(&k->log[i]);
		if (p[il].revents & POLLIN)
			client_accept(k);
		if (ic >= 0 && (p[ic].revents & (POLLIN | POLLHUP | POLLERR))) {
			char junk[64];
			ssize_t n = recv(p[ic].fd, junk, sizeof(junk), MSG_DONTWAIT);

			/* Only this client's own end is news; a newer one may have replaced it. */
			if (p[ic].fd == k->client &&
			    (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)))
				client_drop(k);
		}
		/* Reaped only here: until then the pid stays this VMM's, so the kills below are safe. */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)k->id.pid, &si, WEXITED | WNOHANG) == 0 &&
		    si.si_pid == k->id.pid) {
			finish(k, &si);
			return 0;
		}
		if (fstat(k->dirfd, &st) == 0 && st.st_nlink == 0)
			stop_vmm(k, "the sandbox's directory was removed");
		else if (k->term_at ||
			 (k->a.grace_s && k->client < 0 &&
			  mono_ms() - k->alone_since >= (int64_t)k->a.grace_s * 1000))
			stop_vmm(k, "no kilnd connected for --keeper-grace");
	}
}

/* The claim: its message and the directory's descriptor. 0, 1 at the
 * socket's end, or -errno. */
static int claim_receive(struct keeper *k, int *dirfd, int *cgfd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} c;
	char msg[PATH_MAX + 16];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof(c.b)
	};
	struct cmsghdr *h;
	struct stat a, b;
	ssize_t n;

	*dirfd = *cgfd = -1;
	do
		n = recvmsg(k->a.ready_fd, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* The directory's descriptor, then (optional) the cgroup.procs one. */
	h = CMSG_FIRSTHDR(&m);
	if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
	    (h->cmsg_len == CMSG_LEN(sizeof(int)) || h->cmsg_len == CMSG_LEN(2 * sizeof(int)))) {
		memcpy(dirfd, CMSG_DATA(h), sizeof(int));
		if (h->cmsg_len == CMSG_LEN(2 * sizeof(int)))
			memcpy(cgfd, CMSG_DATA(h) + sizeof(int), sizeof(int));
	}
	if (n == 0 && *dirfd < 0)
		return 1;
	/* The path is what keeper.sock is bound under: it must be the
	 * directory the descriptor is. */
	if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || *dirfd < 0 ||
	    keeper_claim_parse(msg, (size_t)n, k->claimed_dir, sizeof(k->claimed_dir)) ||
	    fstat(*dirfd, &a) < 0 || !S_ISDIR(a.st_mode) || lstat(k->claimed_dir, &b) < 0 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		if (*dirfd >= 0)
			close(*dirfd);
		if (*cgfd >= 0)
			close(*cgfd);
		*dirfd = *cgfd = -1;
		return -EINVAL;
	}
	return 0;
}

/*
 * The claimed VMM made the sandbox's: into its cgroup (cgfd, -1: none)
 * and back to the default priority it was parked without, itself and
 * the keeper. Done here, by the parent that has not reaped it, so the pid
 * is still the VMM's. 0 or -errno.
 */
static int claim_vmm(struct keeper *k, int cgfd)
{
	char pid[24];
	int n = snprintf(pid, sizeof(pid), "%d", k->id.pid), r = 0;

	if (cgfd >= 0 && write(cgfd, pid, (size_t)n) != n)
		r = -errno;
	if (cgfd >= 0)
		close(cgfd);
	if (r == 0 && k->a.parked_nice &&
	    (setpriority(PRIO_PROCESS, (id_t)k->id.pid, 0) < 0 ||
	     setpriority(PRIO_PROCESS, 0, 0) < 0))
		r = -errno;
	return r;
}

/*
 * --park: kiln-vmm waits for its command line from kilnd (a zygote); the
 * keeper says so with the hello on its ready socket and waits for the
 * claim that names the sandbox's directory. 0 when claimed (k->dirfd,
 * k->a.dir set); otherwise the VMM is ended and reaped: nothing of a
 * sandbox was ever made.
 */
static int park(struct keeper *k)
{
	char hello[KEEPER_LINE_MAX];
	int n = keeper_hello_format(hello, sizeof(hello), &k->id), r, cgfd;

	if (n < 0 || fd_io_send_all(k->a.ready_fd, hello, (size_t)n) < 0)
		goto gone;
	for (;;) {
		struct pollfd p[2] = { { .fd = k->a.ready_fd, .events = POLLIN },
				       { .fd = k->pidfd, .events = POLLIN } };

		if (poll(p, k->pidfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			goto gone;
		}
		if (p[1].revents)
			goto gone; /* the parked VMM ended: kilnd sees the socket close */
		if (!p[0].revents)
			continue;
		r = claim_receive(k, &k->dirfd, &cgfd);
		if (r == 0 && (r = claim_vmm(k, cgfd)) == 0) {
			k->a.dir = k->claimed_dir;
			return 0;
		}
		if (r > 0)
			goto gone; /* kilnd closed it: the zygote is not wanted */
		ready_say(k, "err %d %s\n", -r, k->dirfd < 0 ? "claim" : "the cgroup or priority");
		goto gone;
	}
gone:
	kill(k->id.pid, SIGKILL);
	while (waitpid(k->id.pid, NULL, 0) < 0 && errno == EINTR)
		;
	return -1;
}

int keeper_main(int argc, char **argv)
{
	struct keeper k = { .listen_fd = -1,
			    .client = -1,
			    .pidfd = -1,
			    .dirfd = -1,
			    .log = { { .fd = -1, .pipe_r = -1 }, { .fd = -1, .pipe_r = -1 } } };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	const char *step = "arguments";
	int e;

	if (parse_args(argc, argv, &k.a)) {
		/* Not run by kilnd: a person gets one line. */
		fprintf(stderr,
			"kilnd --keeper: internal mode of kilnd, run by kilnd itself; not for direct use\n");
		return 2;
	}
	/* Named so in ps and top: the file is kilnd's, run as /proc/self/exe. */
	prctl(PR_SET_NAME, "kiln-keeper");
	fcntl(k.a.ready_fd, F_SETFD, FD_CLOEXEC);
	if (k.a.cgroup_fd >= 0)
		fcntl(k.a.cgroup_fd, F_SETFD, FD_CLOEXEC);
	/* A client gone mid-send is EPIPE, not the keeper's (and its VM's) end. */
	sigaction(SIGPIPE, &ign, NULL);
	k.umask_vmm = umask(077);
	if (k.a.park) {
		/* Parked, the keeper and kiln-vmm (which inherits it) take the
		 * CPU only when nothing else wants it: a refill started just after
		 * a claim must not slow the claimed VMM's restore. */
		if (k.a.parked_nice && setpriority(PRIO_PROCESS, 0, 19) < 0) {
			e = errno;
			step = "nice 19";
			goto fail;
		}
		/* kiln-vmm first, the sandbox's files once it is claimed. */
		if ((e = spawn_vmm(&k, &step)))
			goto fail;
		for (size_t i = 0; i < k.a.nkeep; i++)
			close(k.a.keep[i]);
		k.a.nkeep = 0;
		if (park(&k))
			return 0;
	} else {
		k.dirfd = open(k.a.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	}
	step = "the sandbox directory";
	if (k.dirfd < 0) {
		e = errno;
		goto fail;
	}
	unlinkat(k.dirfd, KEEPER_EXIT_NAME, 0);
	step = "the logs";
	if ((e = -open_logs(&k)))
		goto fail;
	step = "keeper.sock";
	if ((e = -listen_sock(&k)))
		goto fail;
	if (!k.a.park && (e = spawn_vmm(&k, &step)))
		goto fail;
	for (size_t i = 0; i < k.a.nkeep; i++)
		close(k.a.keep[i]);
	if (k.a.cgroup_fd >= 0)
		close(k.a.cgroup_fd);
	ready_say(&k, "ok\n");
	return run(&k);
fail:
	ready_say(&k, "err %d %s\n", e, step);
	if (k.a.park && k.id.pid > 0) {
		kill(k.id.pid, SIGKILL);
		while (waitpid(k.id.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	return 1;
}
