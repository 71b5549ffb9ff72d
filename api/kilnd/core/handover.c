/* Passing the API socket from a running kilnd to its successor; see handover.h. */
#include "api/kilnd/core/handover.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/kilnd/core/state_lock.h"

static int sock_path(const char *state_dir, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	return (size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", state_dir, HANDOVER_SOCK_NAME) >=
			       sizeof(sa->sun_path)
		       ? -1
		       : 0;
}

/* The pid the kernel says holds state_dir's lock, or 0. */
static pid_t lock_holder(const char *state_dir)
{
	char path[PATH_MAX];
	struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", state_dir, STATE_LOCK_FILE) >= sizeof(path))
		return 0;
	/* Opening and closing it drops no lock: this process holds none. */
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_GETLK, &q) < 0 || q.l_type == F_UNLCK)
		q.l_pid = 0;
	close(fd);
	return q.l_pid;
}

/* One descriptor from msg, which must carry exactly one. -1: none. */
static int take_fd(int conn)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int fd = -1, n = 0;

	if (recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) != 1 || (msg.msg_flags & MSG_CTRUNC))
		goto out;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n++ == 0)
				fd = got;
			else
				close(got);
		}
	}
out:
	if (n != 1 && fd >= 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A listening Unix stream socket? */
static int is_listener(int fd)
{
	int v = 0, type = 0;
	socklen_t len = sizeof(v), tlen = sizeof(type);
	struct sockaddr_un sa;
	socklen_t salen = sizeof(sa);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v &&
	       getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_STREAM &&
	       getsockname(fd, (struct sockaddr *)&sa, &salen) == 0 && sa.sun_family == AF_UNIX;
}

int handover_request(const char *state_dir, int *listen_fd, pid_t *old, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct pollfd p;
	int s, conn = -1, fd = -1;
	pid_t holder = lock_holder(state_dir);

	if (!holder) {
		snprintf(err, errlen, "--upgrade: no kilnd holds %s/%s: start kilnd without --upgrade", state_dir,
			 STATE_LOCK_FILE);
		return -1;
	}
	if (sock_path(state_dir, &sa)) {
		snprintf(err, errlen, "--upgrade: the state directory's path is too long for %s", HANDOVER_SOCK_NAME);
		return -1;
	}
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(sa.sun_path);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sa.sun_path, 0600) < 0 || listen(s, 1) < 0) {
		snprintf(err, errlen, "--upgrade: cannot listen on %s: %s", sa.sun_path, strerror(errno));
		goto out;
	}
	if (kill(holder, SIGUSR2) < 0) {
		snprintf(err, errlen, "--upgrade: cannot signal kilnd pid %d: %s", (int)holder, strerror(errno));
		goto out;
	}
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	if (poll(&p, 1, HANDOVER_ANSWER_MS) != 1 || (conn = accept4(s, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		snprintf(err, errlen, "--upgrade: kilnd pid %d did not hand over within %d s (a kilnd older than --upgrade ends on SIGUSR2 instead: then start kilnd without --upgrade)",
			 (int)holder, HANDOVER_ANSWER_MS / 1000);
		goto out;
	}
	/* Only the lock's holder hands over its socket. */
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid != holder) {
		snprintf(err, errlen, "--upgrade: %s was answered by pid %d, not by kilnd pid %d", sa.sun_path,
			 (int)cred.pid, (int)holder);
		goto out;
	}
	{
		struct timeval tv = { .tv_sec = HANDOVER_ANSWER_MS / 1000 };

		setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	fd = take_fd(conn);
	if (fd < 0 || !is_listener(fd)) {
		snprintf(err, errlen, "--upgrade: kilnd pid %d sent no listening socket", (int)holder);
		if (fd >= 0)
			close(fd);
		fd = -1;
		goto out;
	}
	*listen_fd = fd;
	*old = holder;
out:
	if (conn >= 0)
		close(conn);
	if (s >= 0)
		close(s);
	unlink(sa.sun_path);
	return fd >= 0 ? 0 : -1;
}

int handover_send(const char *state_dir, int listen_fd, char *err, size_t errlen)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte = 'k';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	struct sockaddr_un sa;
	int s, r = -1;

	if (sock_path(state_dir, &sa)) {
		snprintf(err, errlen, "the path of %s is too long", HANDOVER_SOCK_NAME);
		return -1;
	}
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &listen_fd, sizeof(int));
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || sendmsg(s, &msg, MSG_NOSIGNAL) != 1)
		snprintf(err, errlen, "SIGUSR2, but no new kilnd waits on %s: %s", sa.sun_path, strerror(errno));
	else
		r = 0;
	if (s >= 0)
		close(s);
	return r;
}
