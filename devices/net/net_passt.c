/*
 * The passt backend (net_backend.h): a passt child per VM on a socketpair,
 * and passt's qemu stream framing (a 4-byte big-endian length, then the
 * frame) in both directions, with bounded buffers:
 *  - in: at most two frames' worth; a length outside NET_MIN_FRAME ..
 *    NET_MAX_FRAME is not passt talking sense, and closes the backend with
 *    a message instead of being believed;
 *  - out: a frame that cannot be written whole waits in a bounded buffer,
 *    so the stream never carries half a frame; when that buffer is full,
 *    send() says -EAGAIN and takes nothing (virtio-net then holds the
 *    frame and waits for the socket to become writable).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "devices/net/net_passt.h"
#include "lib/base/fd_io.h"

#define PASST_HDR 4
#define PASST_IN_CAP (2 * (PASST_HDR + NET_MAX_FRAME))
#define PASST_OUT_CAP (4 * (PASST_HDR + NET_MAX_FRAME))
#define PASST_ARGS_MAX 40

struct passt {
	struct net_backend b;
	pid_t pid;
	size_t in_start, in_end;
	size_t out_start, out_end;
	uint8_t in[PASST_IN_CAP];
	uint8_t out[PASST_OUT_CAP];
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* passt's side of the socket closed: say how passt ended, when it did. */
static void passt_gone(struct passt *p)
{
	int st;

	if (p->pid > 0 && waitpid(p->pid, &st, WNOHANG) == p->pid) {
		p->pid = 0;
		if (WIFEXITED(st))
			snprintf(p->b.why, sizeof(p->b.why),
				 "passt exited with status %d (its message, if any, is above)",
				 WEXITSTATUS(st));
		else
			snprintf(p->b.why, sizeof(p->b.why), "passt was killed by signal %d",
				 WTERMSIG(st));
	} else if (!p->b.why[0]) {
		snprintf(p->b.why, sizeof(p->b.why), "passt closed its socket");
	}
}

static int passt_flush(struct net_backend *b)
{
	struct passt *p = (struct passt *)b;

	while (p->out_end > p->out_start) {
		ssize_t n = send(b->fd, p->out + p->out_start, p->out_end - p->out_start,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return -EAGAIN;
			if (errno == EPIPE || errno == ECONNRESET) {
				passt_gone(p);
				return -EPIPE;
			}
			return -errno;
		}
		p->out_start += (size_t)n;
	}
	p->out_start = p->out_end = 0;
	return 0;
}

static ssize_t passt_send(struct net_backend *b, const void *frame, size_t len)
{
	struct passt *p = (struct passt *)b;
	uint8_t hdr[PASST_HDR] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
				   (uint8_t)len };
	size_t done = 0, total = PASST_HDR + len;
	int r;

	if (len < NET_MIN_FRAME || len > NET_MAX_FRAME)
		return -EINVAL;
	r = passt_flush(b);
	if (r < 0 && r != -EAGAIN)
		return r;
	if (r == 0) {
		/* Nothing queued: write straight from the frame. */
		struct iovec iov[2] = { { hdr, PASST_HDR }, { (void *)frame, len } };
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
		ssize_t n;

		do
			n = sendmsg(b->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno != EAGAIN) {
			if (errno == EPIPE || errno == ECONNRESET) {
				passt_gone(p);
				return -EPIPE;
			}
			return -errno;
		}
		done = n < 0 ? 0 : (size_t)n;
		if (done == total)
			return (ssize_t)len;
	}
	/*
	 * Queue the rest, so the stream never holds half a frame. A partial
	 * write happened only into an empty buffer, which holds any frame; a
	 * full buffer takes nothing.
	 */
	if (p->out_end - p->out_start + (total - done) > PASST_OUT_CAP)
		return -EAGAIN;
	if (p->out_start && p->out_end + (total - done) > PASST_OUT_CAP) {
		memmove(p->out, p->out + p->out_start, p->out_end - p->out_start);
		p->out_end -= p->out_start;
		p->out_start = 0;
	}
	for (size_t i = done; i < total;) {
		size_t k;

		if (i < PASST_HDR) {
			k = PASST_HDR - i;
			memcpy(p->out + p->out_end, hdr + i, k);
		} else {
			k = total - i;
			memcpy(p->out + p->out_end, (const uint8_t *)frame + (i - PASST_HDR), k);
		}
		p->out_end += k;
		i += k;
	}
	return (ssize_t)len;
}

static ssize_t passt_recv(struct net_backend *b, void *buf, size_t cap)
{
	struct passt *p = (struct passt *)b;

	for (;;) {
		size_t have = p->in_end - p->in_start;
		ssize_t n;

		if (have >= PASST_HDR) {
			uint32_t len = be32(p->in + p->in_start);

			if (len < NET_MIN_FRAME || len > NET_MAX_FRAME) {
				snprintf(b->why, sizeof(b->why),
					 "passt sent a frame length of %u (a frame is %d to %d bytes): its stream is out of step, closing it",
					 len, NET_MIN_FRAME, NET_MAX_FRAME);
				return -EPROTO;
			}
			if (have >= PASST_HDR + len) {
				uint8_t *f = p->in + p->in_start + PASST_HDR;

				p->in_start += PASST_HDR + len;
				if (p->in_start == p->in_end)
					p->in_start = p->in_end = 0;
				if (len > cap)
					continue; /* the caller's buffer is NET_MAX_FRAME: not reached */
				memcpy(buf, f, len);
				return len;
			}
		}
		/* Need more: make room for at least one whole frame after what we have. */
		if (p->in_start && p->in_end + PASST_HDR + NET_MAX_FRAME > PASST_IN_CAP) {
			memmove(p->in, p->in + p->in_start, have);
			p->in_start = 0;
			p->in_end = have;
		}
		n = recv(b->fd, p->in + p->in_end, PASST_IN_CAP - p->in_end, MSG_DONTWAIT);
		if (n > 0) {
			p->in_end += (size_t)n;
			continue;
		}
		if (n == 0) {
			passt_gone(p);
			return -EPIPE;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;
		if (errno == ECONNRESET) {
			passt_gone(p);
			return -EPIPE;
		}
		return -errno;
	}
}

/* Stop passt (it also quits by itself once its socket closes) and reap it. */
static void passt_reap(pid_t pid)
{
	struct timespec ms10 = { 0, 10 * 1000 * 1000 };

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(pid, NULL, WNOHANG) != 0)
			return;
		nanosleep(&ms10, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void passt_close(struct net_backend *b)
{
	struct passt *p = (struct passt *)b;

	close(b->fd);
	passt_reap(p->pid);
	free(p);
}

int net_passt_attach(int fd, pid_t pid, struct net_backend **out, struct err *e)
{
	struct passt *p = calloc(1, sizeof(*p));

	if (!p) {
		close(fd);
		passt_reap(pid);
		return err_set(e, ENOMEM, "out of memory");
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	p->b.name = "passt";
	p->b.fd = fd;
	p->b.send = passt_send;
	p->b.recv = passt_recv;
	p->b.flush = passt_flush;
	p->b.close = passt_close;
	p->pid = pid;
	*out = &p->b;
	return 0;
}

/* Why the child could not become passt, through the pipe: the step and its errno. */
enum passt_step { STEP_EXEC, STEP_NAMESPACE, STEP_BIND, STEP_CGROUP };
struct child_fail {
	int step;
	int err;
};

/* In the child: report `step` failing with errno, then end. */
static void child_fail(int fd, int step)
{
	struct child_fail f = { step, errno };

	if (write(fd, &f, sizeof(f)) < 0) {
		/* the parent then sees an exit status instead */
	}
	_exit(127);
}

/* A one-line resolv.conf naming `resolver`, made before fork: its path in `path`. */
static int resolver_file(const char *resolver, char *path, size_t cap, struct err *e)
{
	const char *dir = getenv("TMPDIR");
	struct in_addr a;
	char line[40];
	int fd, n, err = 0;

	/* One address, nothing else: the line must not carry more lines. */
	if (inet_pton(AF_INET, resolver, &a) != 1)
		return err_set(e, EINVAL, "passt: resolver=%.60s: not an IPv4 address", resolver);
	dir = dir && *dir ? dir : "/tmp";
	snprintf(path, cap, "%s/kiln-passt-resolv.XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return err_set(
			e, errno,
			"passt: resolver=%s: cannot make a resolv.conf in %s: %s (set TMPDIR to a writable directory)",
			resolver, dir, strerror(errno));
	n = snprintf(line, sizeof(line), "nameserver %s\n", resolver);
	if (fd_io_write_all(fd, line, (size_t)n) < 0)
		err = errno;
	/* passt reads it once it may have dropped to nobody. */
	else if (fchmod(fd, 0644) < 0)
		err = errno;
	close(fd);
	if (err) {
		unlink(path);
		return err_set(e, err, "passt: resolver=%s: cannot write %s: %s", resolver, path,
			       strerror(err));
	}
	return 0;
}

int net_passt_open(const struct net_passt_cfg *cfg, struct net_backend **out, struct err *e)
{
	const char *prog = cfg->program ? cfg->program : "passt";
	char fdarg[16], prefix[8], rpath[4096] = "";
	const char *argv[PASST_ARGS_MAX];
	struct child_fail fail = { 0, 0 };
	int sv[2], errp[2], nullfd, n = 0;
	pid_t parent = getpid(), pid;
	ssize_t k;

	if (!cfg->address || !cfg->gateway || !cfg->dns || cfg->prefix < 1 || cfg->prefix > 30)
		return err_set(
			e, EINVAL,
			"passt: the guest's address, prefix (1-30), gateway and DNS address are needed");
	if (cfg->resolver && (k = resolver_file(cfg->resolver, rpath, sizeof(rpath), e)))
		return (int)k;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		int err = errno;

		if (rpath[0])
			unlink(rpath);
		return err_set(e, err, "passt: socketpair: %s", strerror(err));
	}
	if (pipe2(errp, O_CLOEXEC) < 0) {
		int err = errno;

		close(sv[0]);
		close(sv[1]);
		if (rpath[0])
			unlink(rpath);
		return err_set(e, err, "passt: pipe: %s", strerror(err));
	}
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
	snprintf(prefix, sizeof(prefix), "%u", cfg->prefix);
	argv[n++] = prog;
	argv[n++] = "--foreground"; /* so the child we reap is passt itself */
	argv[n++] = "--quiet";
	argv[n++] = "--fd";
	argv[n++] = fdarg;
	argv[n++] = "--ipv4-only";
	argv[n++] = "--address";
	argv[n++] = cfg->address;
	argv[n++] = "--netmask";
	argv[n++] = prefix;
	argv[n++] = "--gateway";
	argv[n++] = cfg->gateway;
	/* The gateway is a router, never a way into the host's loopback. */
	argv[n++] = "--no-map-gw";
	argv[n++] = "--dns-forward";
	argv[n++] = cfg->dns;
	argv[n++] = "--tcp-ports";
	argv[n++] = "none";
	argv[n++] = "--udp-ports";
	argv[n++] = "none";
	/* As root passt drops to nobody anyway; saying so keeps it from warning. */
	if (geteuid() == 0) {
		argv[n++] = "--runas";
		argv[n++] = "nobody";
	}
	argv[n] = NULL;

	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(sv[0]);
		close(sv[1]);
		close(errp[0]);
		close(errp[1]);
		if (nullfd >= 0)
			close(nullfd);
		if (rpath[0])
			unlink(rpath);
		return err_set(e, err, "passt: fork: %s", strerror(err));
	}
	if (pid == 0) {
		/* The child of a possibly multithreaded process: only
		 * async-signal-safe calls until exec. */
		sigset_t none;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (nullfd >= 0)
			dup2(nullfd, STDIN_FILENO);
		fcntl(sv[1], F_SETFD, 0); /* the one descriptor passt inherits */
		if (cfg->join_cgroup_fd > 0 && write(cfg->join_cgroup_fd, "0", 1) != 1)
			child_fail(errp[1], STEP_CGROUP);
		if (rpath[0]) {
			/* Its own /etc/resolv.conf, seen by passt alone. */
			if (unshare(CLONE_NEWNS) < 0 ||
			    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
				child_fail(errp[1], STEP_NAMESPACE);
			if (mount(rpath, "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0)
				child_fail(errp[1], STEP_BIND);
		}
		execvp(prog, (char *const *)argv);
		child_fail(errp[1], STEP_EXEC);
	}
	close(sv[1]);
	close(errp[1]);
	if (nullfd >= 0)
		close(nullfd);
	/* The pipe closes at exec (empty read) or carries exec's errno. */
	do
		k = read(errp[0], &fail, sizeof(fail));
	while (k < 0 && errno == EINTR);
	close(errp[0]);
	/* The bind mount holds the file now (or never will). */
	if (rpath[0])
		unlink(rpath);
	if (k == (ssize_t)sizeof(fail)) {
		close(sv[0]);
		waitpid(pid, NULL, 0);
		if (fail.step == STEP_NAMESPACE)
			return err_set(
				e, fail.err,
				"passt: resolver=%s: cannot give passt a mount namespace of its own: %s (run kiln-vmm as root, or leave out resolver=; kilnd: --dns-resolver)",
				cfg->resolver, strerror(fail.err));
		if (fail.step == STEP_CGROUP)
			return err_set(
				e, fail.err,
				"passt: cannot enter the cgroup made for it: %s (see docs/security.md, \"Network confinement\")",
				strerror(fail.err));
		if (fail.step == STEP_BIND)
			return err_set(
				e, fail.err,
				"passt: resolver=%s: cannot bind-mount a resolv.conf over /etc/resolv.conf: %s (the host needs an /etc/resolv.conf file to cover)",
				cfg->resolver, strerror(fail.err));
		return err_set(
			e, fail.err,
			"passt: cannot run '%s': %s (install Debian's passt package: scripts/install-deps)",
			prog, strerror(fail.err));
	}
	return net_passt_attach(sv[0], pid, out, e);
}
